//! The Job controller: runs pods until `completions` succeed or `backoffLimit` is exceeded,
//! with the status counts and conditions of Kubernetes 1.37 (`SuccessCriteriaMet` then
//! `Complete`; `FailureTarget` then `Failed` with reason `BackoffLimitExceeded`).
//!
//! Failed pods are replaced after an exponential back-off (the node's crash-loop schedule).
//! Pods of a deleted Job go by ownerReference garbage collection in the API server.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobSpec, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::runtime::reflector::Store;
use kube::{Api, Client, ResourceExt};
use tokio::sync::Notify;

use super::{benign, controlled_by, controller_ref, reflect, run_loop};
use crate::events::{EventType, Recorder, reference};
use crate::node::{Backoff, now as status_now};

/// Runs the Job controller until aborted; `backoff` spaces replacements of failed pods.
pub async fn run(client: Client, backoff: Backoff) {
    let wake = Arc::new(Notify::new());
    let (jobs, _j) = reflect(Api::<Job>::all(client.clone()), wake.clone());
    let (pods, _p) = reflect(Api::<Pod>::all(client.clone()), wake.clone());
    let _ = jobs.wait_until_ready().await;
    let _ = pods.wait_until_ready().await;
    let events = Recorder::new(client.clone(), "job-controller");
    run_loop(wake, || async {
        let mut retry: Option<Duration> = None;
        for job in jobs.state() {
            match reconcile(&client, &events, &job, &pods, backoff).await {
                Ok(Some(after)) => retry = Some(retry.map_or(after, |r| r.min(after))),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, job = %job.name_any(), "reconcile failed; retrying");
                    retry = Some(Duration::from_millis(500));
                }
            }
        }
        retry
    })
    .await;
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.phase.as_deref())
}

fn finished_at(pod: &Pod) -> Option<jiff::Timestamp> {
    pod.status
        .as_ref()?
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max()
}

fn condition(type_: &str, reason: Option<&str>, message: Option<&str>, now: &Time) -> JobCondition {
    JobCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: reason.map(str::to_string),
        message: message.map(str::to_string),
        last_probe_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    }
}

async fn reconcile(
    client: &Client,
    events: &Recorder,
    job: &Job,
    pods: &Store<Pod>,
    backoff: Backoff,
) -> Result<Option<Duration>, kube::Error> {
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let ns = job.namespace().unwrap_or_default();
    let name = job.name_any();
    let uid = job.uid().unwrap_or_default();
    let spec = job.spec.clone().unwrap_or_default();
    let old = job.status.clone().unwrap_or_default();
    let finished = old
        .conditions
        .iter()
        .flatten()
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True");
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let owned: Vec<Arc<Pod>> = pods
        .state()
        .into_iter()
        .filter(|p| {
            p.namespace().as_deref() == Some(ns.as_str()) && controlled_by(p.as_ref(), &uid)
        })
        .collect();
    let active: Vec<&Arc<Pod>> = owned
        .iter()
        .filter(|p| {
            !matches!(phase(p), Some("Succeeded") | Some("Failed"))
                && p.metadata.deletion_timestamp.is_none()
        })
        .collect();
    if finished {
        delete_pods(&pod_api, &active).await;
        return Ok(None);
    }
    let succeeded = owned
        .iter()
        .filter(|p| phase(p) == Some("Succeeded"))
        .count() as i32;
    let failed_pods: Vec<&Arc<Pod>> = owned
        .iter()
        .filter(|p| phase(p) == Some("Failed"))
        .collect();
    let restarts = in_place_restarts(&spec, &active);
    let failed = failed_pods.len() as i32;
    let completions = spec.completions.unwrap_or(1);
    let parallelism = spec.parallelism.unwrap_or(1);
    let backoff_limit = spec.backoff_limit.unwrap_or(6);
    let now = status_now();
    let mut status = counted_status(&old, &active, succeeded, failed, &now);
    let mut requeue = None;
    if succeeded >= completions {
        delete_pods(&pod_api, &active).await;
        complete(events, job, &mut status, &now);
    } else if failed + restarts > backoff_limit {
        delete_pods(&pod_api, &active).await;
        fail(events, job, &mut status, &now);
    } else if spec.suspend != Some(true) {
        let wanted = parallelism.min(completions - succeeded) - active.len() as i32;
        if wanted > 0 {
            requeue =
                start_pods(&pod_api, events, job, &owned, &failed_pods, wanted, backoff).await?;
        }
    }
    if status_changed(&status, &old) {
        let api: Api<Job> = Api::namespaced(client.clone(), &ns);
        super::merge_status(&api, &name, &status).await?;
    }
    Ok(requeue)
}

/// Deletes the Job's remaining pods (best effort: a failure is retried by the next pass).
async fn delete_pods(pod_api: &Api<Pod>, active: &[&Arc<Pod>]) {
    for pod in active {
        let _ = pod_api
            .delete(&pod.name_any(), &DeleteParams::default())
            .await;
    }
}

/// With OnFailure the kubelet restarts in place; those restarts count against the limit.
fn in_place_restarts(spec: &JobSpec, active: &[&Arc<Pod>]) -> i32 {
    let on_failure = spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        == Some("OnFailure");
    if on_failure {
        active
            .iter()
            .flat_map(|p| {
                p.status
                    .iter()
                    .flat_map(|s| s.container_statuses.iter().flatten())
            })
            .map(|c| c.restart_count)
            .sum()
    } else {
        0
    }
}

/// The status with this pass's pod counts; conditions and completion time carried over.
fn counted_status(
    old: &JobStatus,
    active: &[&Arc<Pod>],
    succeeded: i32,
    failed: i32,
    now: &Time,
) -> JobStatus {
    JobStatus {
        start_time: old.start_time.clone().or_else(|| Some(now.clone())),
        active: Some(active.len() as i32),
        succeeded: Some(succeeded),
        failed: Some(failed),
        ready: Some(
            active
                .iter()
                .filter(|p| {
                    p.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
                })
                .count() as i32,
        ),
        terminating: Some(0),
        uncounted_terminated_pods: Some(Default::default()),
        conditions: old.conditions.clone(),
        completion_time: old.completion_time.clone(),
        ..Default::default()
    }
}

/// `completions` pods succeeded: `SuccessCriteriaMet` then `Complete`.
fn complete(events: &Recorder, job: &Job, status: &mut JobStatus, now: &Time) {
    status.active = Some(0);
    status.completion_time = Some(now.clone());
    events.emit(
        reference(job, None),
        EventType::Normal,
        "Completed",
        "Job completed".into(),
    );
    status.conditions = Some(vec![
        condition(
            "SuccessCriteriaMet",
            Some("CompletionsReached"),
            Some("Reached expected number of succeeded pods"),
            now,
        ),
        condition(
            "Complete",
            Some("CompletionsReached"),
            Some("Reached expected number of succeeded pods"),
            now,
        ),
    ]);
}

/// Failures exceeded `backoffLimit`: `FailureTarget` then `Failed`.
fn fail(events: &Recorder, job: &Job, status: &mut JobStatus, now: &Time) {
    status.active = Some(0);
    let message = "Job has reached the specified backoff limit";
    events.emit(
        reference(job, None),
        EventType::Warning,
        "BackoffLimitExceeded",
        message.into(),
    );
    status.conditions = Some(vec![
        condition(
            "FailureTarget",
            Some("BackoffLimitExceeded"),
            Some(message),
            now,
        ),
        condition("Failed", Some("BackoffLimitExceeded"), Some(message), now),
    ]);
}

/// Creates `wanted` pods, or returns how long the back-off still holds them back.
async fn start_pods(
    pod_api: &Api<Pod>,
    events: &Recorder,
    job: &Job,
    owned: &[Arc<Pod>],
    failed_pods: &[&Arc<Pod>],
    wanted: i32,
    backoff: Backoff,
) -> Result<Option<Duration>, kube::Error> {
    let failed = failed_pods.len() as i32;
    // Replacements of failed pods wait out an exponential back-off.
    let mut delay = None;
    for _ in 0..failed {
        delay = Some(backoff.next(delay));
    }
    let last_failure = failed_pods.iter().filter_map(|p| finished_at(p)).max();
    let wait = match (delay, last_failure) {
        (Some(d), Some(at)) => {
            let elapsed = jiff::Timestamp::now().duration_since(at).unsigned_abs();
            d.checked_sub(elapsed)
        }
        _ => None,
    };
    match wait {
        Some(w) if !w.is_zero() => return Ok(Some(w)),
        _ => {
            // Pod names derive from the attempt number, so a reconcile that runs on a
            // store not yet showing the pod it just created asks for the same name and
            // gets AlreadyExists instead of starting a duplicate copy of the work.
            for i in 0..wanted {
                let pod = new_pod(job, owned.len() + i as usize);
                match pod_api.create(&PostParams::default(), &pod).await {
                    Ok(_) => events.emit(
                        reference(job, None),
                        EventType::Normal,
                        "SuccessfulCreate",
                        format!(
                            "Created pod: {}",
                            pod.metadata.name.clone().unwrap_or_default()
                        ),
                    ),
                    Err(e) if benign(&e) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(None)
}

/// Whether `status` differs from `old` beyond condition and completion timestamps.
fn status_changed(status: &JobStatus, old: &JobStatus) -> bool {
    let mut a = serde_json::to_value(status).unwrap_or_default();
    let mut b = serde_json::to_value(old).unwrap_or_default();
    // Transition/probe times of unchanged conditions are not a change.
    for v in [&mut a, &mut b] {
        if let Some(conditions) = v.get_mut("conditions").and_then(|c| c.as_array_mut()) {
            for c in conditions {
                if let Some(obj) = c.as_object_mut() {
                    obj.remove("lastProbeTime");
                    obj.remove("lastTransitionTime");
                }
            }
        }
        if let Some(obj) = v.as_object_mut() {
            obj.remove("completionTime");
        }
    }
    a != b
}

/// Five lowercase alphanumerics derived from the Job's UID and the attempt number: looks like
/// the random suffix Kubernetes uses, but the same attempt always gets the same name.
fn attempt_suffix(uid: &str, attempt: usize) -> String {
    use sha2::{Digest, Sha256};
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let digest = Sha256::digest(format!("{uid}/{attempt}").as_bytes());
    digest
        .iter()
        .take(5)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

fn new_pod(job: &Job, attempt: usize) -> Pod {
    let name = job.name_any();
    let uid = job.uid().unwrap_or_default();
    let suffix = attempt_suffix(&uid, attempt);
    let spec = job.spec.clone().unwrap_or_default();
    let template_meta = spec.template.metadata.clone().unwrap_or_default();
    let mut labels = template_meta.labels.clone().unwrap_or_default();
    labels.insert("job-name".into(), name.clone());
    labels.insert("batch.kubernetes.io/job-name".into(), name.clone());
    labels.insert("controller-uid".into(), uid.clone());
    labels.insert("batch.kubernetes.io/controller-uid".into(), uid);
    let mut pod_spec = spec.template.spec.clone().unwrap_or_default();
    if pod_spec.restart_policy.is_none() {
        pod_spec.restart_policy = Some("Never".into());
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{name}-{suffix}")),
            namespace: job.namespace(),
            labels: Some(labels),
            annotations: template_meta.annotations,
            owner_references: Some(vec![controller_ref(job)]),
            ..Default::default()
        },
        spec: Some(pod_spec),
        status: None,
    }
}
