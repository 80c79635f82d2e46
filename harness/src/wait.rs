//! Watch-based waits: a [`Condition`] plus one bounded entry, [`await_condition`].
//!
//! Like `kube::runtime::wait`, a wait watches exactly one object (field selector on its name)
//! and wakes on the change that satisfies it — no polling. Unlike a bare await, a condition can
//! also declare a state *terminal* (a pod in `ImagePullBackOff` will not become Ready, a Backup
//! that `Failed` will not succeed) so the wait fails at once, and every failure names the
//! object, what was expected and the last observed state (phase, conditions, container states).
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), rehearsal::wait::WaitError> {
//! use k8s_openapi::api::core::v1::Pod;
//! use rehearsal::wait::{await_condition, conditions};
//! use std::time::Duration;
//! let pods: kube::Api<Pod> = kube::Api::namespaced(client, "rh-case-1234");
//! let pod = await_condition(&pods, "mc-0", conditions::pod_ready(), Duration::from_secs(60)).await?;
//! # Ok(()) }
//! ```

use std::cell::RefCell;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// How far a wait's condition is, judged on the latest observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Satisfied: the wait returns.
    Met,
    /// Not yet: keep watching.
    Pending,
    /// Can no longer be satisfied: the wait fails now, with this reason.
    Terminal(String),
}

type Check<K> = Box<dyn Fn(Option<&K>) -> Progress + Send + Sync>;

/// An expectation about one object (`None` = the object does not exist).
pub struct Condition<K> {
    expected: String,
    check: Check<K>,
}

impl<K> Condition<K> {
    /// A condition described as `expected` (used in messages: "expected {expected}").
    pub fn new(
        expected: impl Into<String>,
        check: impl Fn(Option<&K>) -> Progress + Send + Sync + 'static,
    ) -> Self {
        Self {
            expected: expected.into(),
            check: Box::new(check),
        }
    }

    /// What the condition expects, in words.
    pub fn expected(&self) -> &str {
        &self.expected
    }

    /// Evaluates the condition on an observation.
    pub fn check(&self, obj: Option<&K>) -> Progress {
        (self.check)(obj)
    }
}

/// Why a wait ended without its condition.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error(
        "{object}: expected {expected} within {bound:?}, but it did not happen; last observed: {last_observed}"
    )]
    /// The bound passed while the condition was still pending.
    TimedOut {
        /// `"<resource> <namespace>/<name>"`.
        object: String,
        /// The condition in words.
        expected: String,
        /// The bound that passed.
        bound: Duration,
        /// The object's last observed state (or that the first list never completed).
        last_observed: String,
    },
    /// The condition turned terminal: what it waits for can no longer happen.
    #[error("{object}: expected {expected}, but {reason}; last observed: {last_observed}")]
    Terminal {
        /// `"<resource> <namespace>/<name>"`.
        object: String,
        /// The condition in words.
        expected: String,
        /// Why it cannot be met, as the condition says it.
        reason: String,
        /// The object's last observed state.
        last_observed: String,
    },
    #[error(
        "{object}: the watch ended while waiting for {expected}; last observed: {last_observed}"
    )]
    /// The watch stream ended before the condition was met or turned terminal.
    WatchEnded {
        /// `"<resource> <namespace>/<name>"`.
        object: String,
        /// The condition in words.
        expected: String,
        /// The object's last observed state.
        last_observed: String,
    },
}

impl WaitError {
    /// The last observed state the error reports.
    pub fn last_observed(&self) -> &str {
        match self {
            WaitError::TimedOut { last_observed, .. }
            | WaitError::Terminal { last_observed, .. }
            | WaitError::WatchEnded { last_observed, .. } => last_observed,
        }
    }
}

/// One wait as the case's profile sees it (how long it took and what ended it): the typed
/// payload of the step's `wait` receipt.
pub use crate::evidence::observation::{StateChange, WaitObserved as WaitRecord, WaitOutcome};

/// The most state changes a [`WaitRecord`] keeps.
pub const MAX_TRANSITIONS: usize = 12;

tokio::task_local! {
    static WAIT_LOG: RefCell<(Instant, Vec<WaitRecord>)>;
}

/// Runs `unit` with a wait log: returns its output and every [`await_condition`] it ran in its
/// own task, in the order they ended (the critical path `rehearse bench` prints).
pub async fn logged<T>(unit: impl Future<Output = T>) -> (T, Vec<WaitRecord>) {
    WAIT_LOG
        .scope(RefCell::new((Instant::now(), Vec::new())), async move {
            let out = unit.await;
            let log = WAIT_LOG.with(|l| std::mem::take(&mut l.borrow_mut().1));
            (out, log)
        })
        .await
}

fn log_wait(started: Instant, mut record: WaitRecord) {
    let _ = WAIT_LOG.try_with(|l| {
        let mut l = l.borrow_mut();
        record.started_ms = started.saturating_duration_since(l.0).as_millis() as u64;
        l.1.push(record);
    });
}

/// Watches `name` through `api` until `condition` is met (returns the object, `None` if the
/// condition was about its absence), it turns terminal, or `bound` passes.
#[expect(
    clippy::too_many_lines,
    reason = "one watch loop and the one record of how it ended: the loop's state (last object, first-list flag, transitions) feeds both the wait record and the error"
)]
pub async fn await_condition<K>(
    api: &Api<K>,
    name: &str,
    condition: Condition<K>,
    bound: Duration,
) -> Result<Option<K>, WaitError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
{
    let object = object_label(api, name);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    // Backoff between re-lists so an unreachable API server is not hammered until the bound.
    let mut stream = Box::pin(watcher::watcher(api.clone(), config).default_backoff());
    let mut last: Option<K> = None;
    // Before the first list completes nothing has been observed (not even absence).
    let mut observed = false;
    let mut init_buffer: Option<K> = None;
    let mut watch_error: Option<String> = None;
    let started = Instant::now();
    let mut events: u32 = 0;
    let mut transitions: Vec<StateChange> = Vec::new();
    let mut last_state = String::new();

    let outcome = tokio::time::timeout(bound, async {
        while let Some(event) = stream.next().await {
            events += 1;
            match event {
                Ok(Event::Init) => init_buffer = None,
                Ok(Event::InitApply(obj)) => init_buffer = Some(obj),
                Ok(Event::InitDone) => {
                    last = init_buffer.take();
                    observed = true;
                }
                Ok(Event::Apply(obj)) => {
                    last = Some(obj);
                    observed = true;
                }
                Ok(Event::Delete(_)) => {
                    last = None;
                    observed = true;
                }
                Err(e) => {
                    // The watcher re-lists by itself; remember why for the message.
                    watch_error = Some(e.to_string());
                    continue;
                }
            }
            if !observed {
                continue;
            }
            let state = describe(last.as_ref());
            if state != last_state && transitions.len() < MAX_TRANSITIONS {
                transitions.push(StateChange {
                    at_ms: started.elapsed().as_millis() as u64,
                    state: state.clone(),
                });
            }
            last_state = state;
            match condition.check(last.as_ref()) {
                Progress::Met => return Ok(last.clone()),
                Progress::Pending => {}
                Progress::Terminal(reason) => return Err(reason),
            }
        }
        Err(String::new())
    })
    .await;

    let describe = |last: &Option<K>| {
        let mut s = if observed {
            describe(last.as_ref())
        } else {
            "nothing (the first list did not complete)".to_string()
        };
        if let Some(e) = &watch_error {
            s.push_str(&format!("; last watch error: {e}"));
        }
        s
    };
    log_wait(
        started,
        WaitRecord {
            object: object.clone(),
            expected: condition.expected.clone(),
            started_ms: 0,
            elapsed_ms: started.elapsed().as_millis() as u64,
            events,
            outcome: match &outcome {
                Ok(Ok(_)) => WaitOutcome::Met,
                Ok(Err(reason)) if !reason.is_empty() => WaitOutcome::Terminal,
                Ok(Err(_)) => WaitOutcome::WatchEnded,
                Err(_) => WaitOutcome::TimedOut,
            },
            woken_by: describe(&last),
            transitions,
        },
    );
    match outcome {
        Ok(Ok(obj)) => Ok(obj),
        Ok(Err(reason)) if !reason.is_empty() => Err(WaitError::Terminal {
            object,
            expected: condition.expected,
            reason,
            last_observed: describe(&last),
        }),
        Ok(Err(_)) => Err(WaitError::WatchEnded {
            object,
            expected: condition.expected,
            last_observed: describe(&last),
        }),
        Err(_) => Err(WaitError::TimedOut {
            object,
            expected: condition.expected,
            bound,
            last_observed: describe(&last),
        }),
    }
}

/// Like [`await_condition`] for conditions that are met only by an existing object.
pub async fn await_object<K>(
    api: &Api<K>,
    name: &str,
    condition: Condition<K>,
    bound: Duration,
) -> Result<K, WaitError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
{
    let object = object_label(api, name);
    let expected = condition.expected.clone();
    await_condition(api, name, condition, bound)
        .await?
        .ok_or(WaitError::Terminal {
            object,
            expected,
            reason: "the condition was met by absence".into(),
            last_observed: "absent".into(),
        })
}

/// `"<resource> <namespace>/<name>"` from the Api's URL (e.g. `pods rh-x/mc-0`).
fn object_label<K: Resource>(api: &Api<K>, name: &str) -> String {
    let url = api.resource_url();
    let mut parts = url.trim_matches('/').split('/').collect::<Vec<_>>();
    let resource = parts.pop().unwrap_or("object");
    let namespace = parts
        .iter()
        .position(|p| *p == "namespaces")
        .and_then(|i| parts.get(i + 1));
    match namespace {
        Some(ns) => format!("{resource} {ns}/{name}"),
        None => format!("{resource} {name}"),
    }
}

/// One line describing an object's state: uid, deletion, phase, message, conditions and, for
/// pods, each container's state and restart count.
pub fn describe<K: Serialize>(obj: Option<&K>) -> String {
    let Some(obj) = obj else {
        return "absent".into();
    };
    let Ok(v) = serde_json::to_value(obj) else {
        return "(unserialisable object)".into();
    };
    describe_value(&v)
}

/// [`describe`] on JSON.
pub fn describe_value(v: &Value) -> String {
    let mut parts = Vec::new();
    let meta = &v["metadata"];
    if let Some(uid) = meta["uid"].as_str() {
        parts.push(format!("uid={uid}"));
    }
    if meta["deletionTimestamp"].is_string() {
        parts.push("deleting".into());
    }
    let status = &v["status"];
    if let Some(phase) = status["phase"].as_str() {
        parts.push(format!("phase={phase}"));
    }
    if let Some(msg) = status["message"].as_str().filter(|m| !m.is_empty()) {
        parts.push(format!("message={msg:?}"));
    }
    if let Some(conds) = status["conditions"].as_array().filter(|c| !c.is_empty()) {
        let c: Vec<String> = conds
            .iter()
            .map(|c| {
                let mut s = format!(
                    "{}={}",
                    c["type"].as_str().unwrap_or("?"),
                    c["status"].as_str().unwrap_or("?")
                );
                if let Some(r) = c["reason"].as_str().filter(|r| !r.is_empty()) {
                    s.push_str(&format!("({r})"));
                }
                s
            })
            .collect();
        parts.push(format!("conditions=[{}]", c.join(" ")));
    }
    for key in ["initContainerStatuses", "containerStatuses"] {
        if let Some(cs) = status[key].as_array().filter(|c| !c.is_empty()) {
            let c: Vec<String> = cs.iter().map(describe_container).collect();
            parts.push(format!("containers=[{}]", c.join(" ")));
        }
    }
    if let Some(replicas) = status["readyReplicas"].as_i64() {
        parts.push(format!("readyReplicas={replicas}"));
    }
    if parts.is_empty() {
        "present, no status yet".into()
    } else {
        parts.join(" ")
    }
}

fn describe_container(c: &Value) -> String {
    let name = c["name"].as_str().unwrap_or("?");
    let state = &c["state"];
    let s = if let Some(w) = state.get("waiting").filter(|w| w.is_object()) {
        format!("waiting:{}", w["reason"].as_str().unwrap_or(""))
    } else if let Some(t) = state.get("terminated").filter(|t| t.is_object()) {
        format!(
            "terminated:{}(exit {})",
            t["reason"].as_str().unwrap_or(""),
            t["exitCode"].as_i64().unwrap_or(-1)
        )
    } else if state.get("running").is_some_and(|r| r.is_object()) {
        "running".into()
    } else {
        "unknown".into()
    };
    let ready = if c["ready"].as_bool() == Some(true) {
        ",ready"
    } else {
        ""
    };
    format!(
        "{name}:{s}{ready},restarts={}",
        c["restartCount"].as_i64().unwrap_or(0)
    )
}

/// Ready-made conditions for the objects the harness waits on.
pub mod conditions {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
    use serde::Serialize;

    use super::{Condition, Progress};

    /// Container waiting reasons after which a pod will not become Ready on its own.
    pub const IMAGE_PULL_FAILURES: &[&str] = &[
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "ErrImageNeverPull",
    ];

    fn statuses(pod: &Pod) -> Vec<&ContainerStatus> {
        pod.status
            .iter()
            .flat_map(|s| {
                s.init_container_statuses
                    .iter()
                    .flatten()
                    .chain(s.container_statuses.iter().flatten())
            })
            .collect()
    }

    fn image_pull_failure(pod: &Pod) -> Option<String> {
        statuses(pod).into_iter().find_map(|c| {
            let reason = c.state.as_ref()?.waiting.as_ref()?.reason.as_deref()?;
            IMAGE_PULL_FAILURES
                .contains(&reason)
                .then(|| format!("container `{}` is {reason} ({})", c.name, c.image))
        })
    }

    /// The pod's Ready condition is True. Terminal: image pull failure, pod phase Failed or
    /// Succeeded, or the pod deleted after having been seen.
    pub fn pod_ready() -> Condition<Pod> {
        Condition::new("pod Ready", |pod: Option<&Pod>| {
            let Some(pod) = pod else {
                return Progress::Pending;
            };
            if let Some(reason) = image_pull_failure(pod) {
                return Progress::Terminal(reason);
            }
            let status = pod.status.as_ref();
            if let Some(p @ ("Failed" | "Succeeded")) = status.and_then(|s| s.phase.as_deref()) {
                return Progress::Terminal(format!("the pod is {p}"));
            }
            let ready = status
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            if ready && pod.metadata.deletion_timestamp.is_none() {
                Progress::Met
            } else {
                Progress::Pending
            }
        })
    }

    /// A container of the pod reports an image pull failure (what an unpullable candidate must
    /// produce). Terminal: the pod becomes Ready (the image was pulled after all).
    pub fn pod_image_pull_failed() -> Condition<Pod> {
        Condition::new(
            "an image pull failure (ErrImagePull/ImagePullBackOff)",
            |pod: Option<&Pod>| {
                let Some(pod) = pod else {
                    return Progress::Pending;
                };
                if image_pull_failure(pod).is_some() {
                    return Progress::Met;
                }
                let running = statuses(pod)
                    .iter()
                    .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
                if running {
                    Progress::Terminal("a container is running: the image was pulled".into())
                } else {
                    Progress::Pending
                }
            },
        )
    }

    /// The pod phase is `Succeeded`. Terminal: `Failed`, image pull failure.
    pub fn pod_succeeded() -> Condition<Pod> {
        Condition::new("pod phase Succeeded", |pod: Option<&Pod>| {
            let Some(pod) = pod else {
                return Progress::Pending;
            };
            if let Some(reason) = image_pull_failure(pod) {
                return Progress::Terminal(reason);
            }
            match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
                Some("Succeeded") => Progress::Met,
                Some("Failed") => Progress::Terminal("the pod Failed".into()),
                _ => Progress::Pending,
            }
        })
    }

    /// Container `container` of the pod has started at least once — it runs, or it (or its
    /// previous instance) terminated — so its log exists and can be read. Pending while it
    /// waits to start for the first time (`ContainerCreating`, `PodInitializing`): what a
    /// slow machine shows, never the operator's doing. Terminal: an image pull failure.
    pub fn container_started(container: impl Into<String>) -> Condition<Pod> {
        let container = container.into();
        Condition::new(
            format!("container `{container}` started (running or terminated)"),
            move |pod: Option<&Pod>| {
                let Some(pod) = pod else {
                    return Progress::Pending;
                };
                // Only this container's pull failure: another container of the pod may be
                // meant never to start (a case's unpullable game beside a running agent).
                let pull_failure = statuses(pod).into_iter().find_map(|c| {
                    let reason = c.state.as_ref()?.waiting.as_ref()?.reason.as_deref()?;
                    (c.name == container && IMAGE_PULL_FAILURES.contains(&reason))
                        .then(|| format!("container `{}` is {reason} ({})", c.name, c.image))
                });
                if let Some(reason) = pull_failure {
                    return Progress::Terminal(reason);
                }
                let started = statuses(pod).into_iter().any(|c| {
                    c.name == container
                        && (c
                            .state
                            .as_ref()
                            .is_some_and(|s| s.running.is_some() || s.terminated.is_some())
                            || c.last_state
                                .as_ref()
                                .is_some_and(|s| s.terminated.is_some()))
                });
                if started {
                    Progress::Met
                } else {
                    Progress::Pending
                }
            },
        )
    }

    /// A pod of this name exists with a UID other than `old_uid` (the StatefulSet recreated it).
    pub fn pod_replaced(old_uid: impl Into<String>) -> Condition<Pod> {
        let old_uid = old_uid.into();
        Condition::new(
            format!("a replacement pod (UID other than {old_uid})"),
            move |pod: Option<&Pod>| match pod.and_then(|p| p.metadata.uid.as_deref()) {
                Some(uid) if uid != old_uid => Progress::Met,
                _ => Progress::Pending,
            },
        )
    }

    /// Container `container` of the same pod (`pod_uid`) runs with a container ID other than
    /// `old_id`. Terminal: the pod was replaced (different UID) — that is not an in-place restart.
    pub fn container_restarted(
        pod_uid: impl Into<String>,
        container: impl Into<String>,
        old_id: impl Into<String>,
    ) -> Condition<Pod> {
        let (pod_uid, container, old_id) = (pod_uid.into(), container.into(), old_id.into());
        Condition::new(
            format!(
                "container `{container}` running again in place with an ID other than {old_id}"
            ),
            move |pod: Option<&Pod>| {
                let Some(pod) = pod else {
                    return Progress::Pending;
                };
                if pod.metadata.uid.as_deref() != Some(pod_uid.as_str()) {
                    return Progress::Terminal(format!(
                        "the pod was replaced (UID {} instead of {pod_uid})",
                        pod.metadata.uid.as_deref().unwrap_or("none")
                    ));
                }
                let restarted = statuses(pod).into_iter().any(|c| {
                    c.name == container
                        && c.container_id.as_deref().is_some_and(|id| id != old_id)
                        && c.state.as_ref().is_some_and(|s| s.running.is_some())
                });
                if restarted {
                    Progress::Met
                } else {
                    Progress::Pending
                }
            },
        )
    }

    /// The Job completed. Terminal: the Job's `Failed` condition is True.
    pub fn job_complete() -> Condition<Job> {
        Condition::new("job Complete", |job: Option<&Job>| {
            let conds = job
                .and_then(|j| j.status.as_ref())
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default();
            if let Some(c) = conds
                .iter()
                .find(|c| c.type_ == "Failed" && c.status == "True")
            {
                return Progress::Terminal(format!(
                    "the job Failed ({})",
                    c.reason.clone().unwrap_or_default()
                ));
            }
            if conds
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
            {
                Progress::Met
            } else {
                Progress::Pending
            }
        })
    }

    /// The Deployment's `Available` condition is True.
    pub fn deployment_available() -> Condition<Deployment> {
        Condition::new("deployment Available", |d: Option<&Deployment>| {
            let available = d
                .and_then(|d| d.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.type_.as_deref() == Some("Available")
                            && c.status.as_deref() == Some("True")
                    })
                });
            if available {
                Progress::Met
            } else {
                Progress::Pending
            }
        })
    }

    /// The object does not exist (deleted, or never created).
    pub fn deleted<K>() -> Condition<K> {
        Condition::new("the object gone", |obj: Option<&K>| {
            if obj.is_none() {
                Progress::Met
            } else {
                Progress::Pending
            }
        })
    }

    /// The object exists.
    pub fn exists<K>() -> Condition<K> {
        Condition::new("the object to exist", |obj: Option<&K>| {
            if obj.is_some() {
                Progress::Met
            } else {
                Progress::Pending
            }
        })
    }

    fn phase_of<K: Serialize>(obj: &K) -> Option<String> {
        serde_json::to_value(obj).ok()?["status"]["phase"]
            .as_str()
            .map(str::to_string)
    }

    /// `status.phase` equals `expected`. Terminal: it reaches one of `terminal` (e.g. a Backup
    /// `Failed` while waiting for `Succeeded`). Works on any kind with a phase (GameServer,
    /// Backup, Restore, Pod, or a `DynamicObject`).
    pub fn phase<K: Serialize>(expected: &str, terminal: &[&str]) -> Condition<K> {
        let expected = expected.to_string();
        let terminal: Vec<String> = terminal
            .iter()
            .filter(|t| **t != expected)
            .map(|t| t.to_string())
            .collect();
        Condition::new(format!("phase {expected}"), move |obj: Option<&K>| {
            let Some(obj) = obj else {
                return Progress::Pending;
            };
            match phase_of(obj) {
                Some(p) if p == expected => Progress::Met,
                Some(p) if terminal.contains(&p) => {
                    Progress::Terminal(format!("it reached phase {p}"))
                }
                _ => Progress::Pending,
            }
        })
    }

    /// GameServer phase `expected`; `Failed` is terminal unless expected.
    pub fn gameserver_phase<K: Serialize>(expected: &str) -> Condition<K> {
        phase(expected, &["Failed"])
    }

    /// Backup (or Restore) phase `Succeeded`; `Failed` is terminal.
    pub fn succeeded<K: Serialize>() -> Condition<K> {
        phase("Succeeded", &["Failed"])
    }

    /// A status condition `type_` has status `status` (e.g. a Backup's `Completed=False`).
    pub fn status_condition<K: Serialize>(type_: &str, status: &str) -> Condition<K> {
        let (t, s) = (type_.to_string(), status.to_string());
        Condition::new(format!("condition {t}={s}"), move |obj: Option<&K>| {
            let Some(v) = obj.and_then(|o| serde_json::to_value(o).ok()) else {
                return Progress::Pending;
            };
            let hit = v["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"].as_str() == Some(&t) && c["status"].as_str() == Some(&s))
            });
            if hit {
                Progress::Met
            } else {
                Progress::Pending
            }
        })
    }
}

#[cfg(test)]
mod condition_tests {
    use super::{Progress, conditions};
    use k8s_openapi::api::core::v1::Pod;

    fn pod(agent: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "mc-0", "uid": "u1"},
            "status": {"containerStatuses": [
                {"name": "game", "image": "g", "imageID": "", "ready": true, "restartCount": 0,
                 "state": {"running": {"startedAt": "2026-12-04T10:00:00Z"}}},
                agent
            ]}
        }))
        .unwrap()
    }

    fn agent(state: serde_json::Value, last: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"name": "agent", "image": "a", "imageID": "", "ready": false,
            "restartCount": 0, "state": state, "lastState": last})
    }

    #[test]
    fn a_container_is_readable_once_it_started_never_while_it_is_created() {
        let c = conditions::container_started("agent");
        let creating = pod(agent(
            serde_json::json!({"waiting": {"reason": "ContainerCreating"}}),
            serde_json::json!({}),
        ));
        assert!(matches!(c.check(Some(&creating)), Progress::Pending));
        assert!(matches!(c.check(None), Progress::Pending));
        let running = pod(agent(
            serde_json::json!({"running": {"startedAt": "2026-12-04T10:00:01Z"}}),
            serde_json::json!({}),
        ));
        assert!(matches!(c.check(Some(&running)), Progress::Met));
        // A crash-looping agent between restarts: its previous instance left a log.
        let backing_off = pod(agent(
            serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            serde_json::json!({"terminated": {"exitCode": 1}}),
        ));
        assert!(matches!(c.check(Some(&backing_off)), Progress::Met));
        let exited = pod(agent(
            serde_json::json!({"terminated": {"exitCode": 0}}),
            serde_json::json!({}),
        ));
        assert!(matches!(c.check(Some(&exited)), Progress::Met));
        // Another container running does not make this one readable.
        assert!(matches!(
            conditions::container_started("sidecar").check(Some(&running)),
            Progress::Pending
        ));
        let unpullable = pod(agent(
            serde_json::json!({"waiting": {"reason": "ImagePullBackOff"}}),
            serde_json::json!({}),
        ));
        assert!(matches!(c.check(Some(&unpullable)), Progress::Terminal(_)));
        // The game's image cannot be pulled (a case that keeps it from ever running) while the
        // agent runs: the agent's log is readable.
        let game_unpullable: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "mc-0", "uid": "u1"},
            "status": {"containerStatuses": [
                {"name": "game", "image": "g", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "ImagePullBackOff"}}},
                agent(serde_json::json!({"running": {}}), serde_json::json!({}))
            ]}
        }))
        .unwrap();
        assert!(matches!(c.check(Some(&game_unpullable)), Progress::Met));
    }
}
