//! The ReplicaSet and ReplicationController controller: keeps `spec.replicas` active pods
//! (not terminating, not ended) from the template, creating the missing ones and deleting the
//! surplus (unscheduled, then pending, then not ready, then the newest first), and reports
//! `replicas`, `readyReplicas` and `availableReplicas` (Ready for `minReadySeconds`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodTemplateSpec, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::sync::Notify;

use super::{benign, controlled_by, controller_ref, reflect, run_loop};
use crate::events::{EventType, Recorder, reference};

/// Whether `labels` satisfy `selector` (matchLabels and matchExpressions); an empty selector
/// selects nothing, as for workload controllers.
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let match_labels = selector.match_labels.clone().unwrap_or_default();
    let expressions = selector.match_expressions.clone().unwrap_or_default();
    if match_labels.is_empty() && expressions.is_empty() {
        return false;
    }
    match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        && expressions.iter().all(|e| {
            let values = e.values.clone().unwrap_or_default();
            match e.operator.as_str() {
                "In" => labels.get(&e.key).is_some_and(|v| values.contains(v)),
                "NotIn" => labels.get(&e.key).is_none_or(|v| !values.contains(v)),
                "Exists" => labels.contains_key(&e.key),
                "DoesNotExist" => !labels.contains_key(&e.key),
                _ => false,
            }
        })
}

/// Whether a pod counts toward replicas: not terminating and not ended.
pub fn is_active(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && !matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded") | Some("Failed")
        )
}

/// Whether the pod's Ready condition is True.
pub fn is_ready(pod: &Pod) -> bool {
    ready_since(pod).is_some()
}

fn ready_since(pod: &Pod) -> Option<jiff::Timestamp> {
    let c = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?;
    Some(
        c.last_transition_time
            .as_ref()
            .map(|t| t.0)
            .unwrap_or_else(jiff::Timestamp::now),
    )
}

/// Whether the pod has been Ready for `min_ready` seconds; otherwise when it will be (for a
/// re-check), if it is Ready at all.
pub fn available(pod: &Pod, min_ready: i32, now: jiff::Timestamp) -> (bool, Option<Duration>) {
    let Some(since) = ready_since(pod).filter(|_| is_active(pod)) else {
        return (false, None);
    };
    if min_ready <= 0 {
        return (true, None);
    }
    let due = since + jiff::SignedDuration::from_secs(i64::from(min_ready));
    if now >= due {
        (true, None)
    } else {
        let wait = now.duration_until(due);
        (
            false,
            Some(Duration::try_from(wait).unwrap_or(Duration::from_secs(1))),
        )
    }
}

/// The parts of an RS or RC this controller works from.
pub struct Replicated {
    /// `ReplicaSet` or `ReplicationController`.
    pub kind: &'static str,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The object's UID (its pods' owner reference points at it).
    pub uid: String,
    /// `spec.replicas`, 1 when unset.
    pub replicas: i32,
    /// The pods it owns (an RC's map selector as `matchLabels`).
    pub selector: LabelSelector,
    /// The pod template new pods are made from.
    pub template: PodTemplateSpec,
    /// How long a pod must be ready before it counts as available.
    pub min_ready_seconds: i32,
    /// `metadata.generation`, reported back as `status.observedGeneration`.
    pub generation: Option<i64>,
    /// The controller owner reference its pods get.
    pub owner: OwnerReference,
    /// The current status, to skip a patch that would change nothing.
    pub status: serde_json::Value,
}

impl Replicated {
    fn from_rs(rs: &ReplicaSet) -> Option<Self> {
        let spec = rs.spec.clone();
        Some(Replicated {
            kind: "ReplicaSet",
            namespace: rs.namespace().unwrap_or_default(),
            name: rs.name_any(),
            uid: rs.uid().unwrap_or_default(),
            replicas: spec.replicas.unwrap_or(1).max(0),
            selector: spec.selector,
            template: spec.template.unwrap_or_default(),
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            generation: rs.metadata.generation,
            owner: controller_ref(rs),
            status: serde_json::to_value(&rs.status).unwrap_or_default(),
        })
    }

    fn from_rc(rc: &ReplicationController) -> Option<Self> {
        let spec = rc.spec.clone()?;
        let template = spec.template.unwrap_or_default();
        let selector = spec.selector.clone().unwrap_or_else(|| {
            template
                .metadata
                .as_ref()
                .and_then(|m| m.labels.clone())
                .unwrap_or_default()
        });
        Some(Replicated {
            kind: "ReplicationController",
            namespace: rc.namespace().unwrap_or_default(),
            name: rc.name_any(),
            uid: rc.uid().unwrap_or_default(),
            replicas: spec.replicas.unwrap_or(1).max(0),
            selector: LabelSelector {
                match_labels: Some(selector),
                match_expressions: None,
            },
            template,
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            generation: rc.metadata.generation,
            owner: controller_ref(rc),
            status: serde_json::to_value(&rc.status).unwrap_or_default(),
        })
    }
}

/// Runs the controller for ReplicaSets and ReplicationControllers until aborted.
pub async fn run(client: Client) {
    let wake = Arc::new(Notify::new());
    let (sets, _s) = reflect(Api::<ReplicaSet>::all(client.clone()), wake.clone());
    let (rcs, _r) = reflect(
        Api::<ReplicationController>::all(client.clone()),
        wake.clone(),
    );
    let (pods, _p) = reflect(Api::<Pod>::all(client.clone()), wake.clone());
    let _ = sets.wait_until_ready().await;
    let _ = rcs.wait_until_ready().await;
    let _ = pods.wait_until_ready().await;
    let events = Recorder::new(client.clone(), "replicaset-controller");
    run_loop(wake, || async {
        let mut retry: Option<Duration> = None;
        let all_pods = pods.state();
        let mut work: Vec<(Replicated, ObjectReference)> = Vec::new();
        for rs in sets.state() {
            if rs.metadata.deletion_timestamp.is_none()
                && let Some(r) = Replicated::from_rs(&rs)
            {
                work.push((r, reference(rs.as_ref(), None)));
            }
        }
        for rc in rcs.state() {
            if rc.metadata.deletion_timestamp.is_none()
                && let Some(r) = Replicated::from_rc(&rc)
            {
                work.push((r, reference(rc.as_ref(), None)));
            }
        }
        for (set, object) in work {
            match reconcile(&client, &events, &set, object, &all_pods).await {
                Ok(Some(d)) => retry = Some(retry.map_or(d, |r| r.min(d))),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, set = %set.name, "replica reconcile failed; retrying");
                    retry = Some(Duration::from_millis(500));
                }
            }
        }
        retry
    })
    .await;
}

/// Deletion order: unscheduled, pending, not ready, then the most recently created first.
fn deletion_rank(pod: &Pod) -> (u8, u8, u8, std::cmp::Reverse<Option<jiff::Timestamp>>) {
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some();
    let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    (
        u8::from(scheduled),
        u8::from(running),
        u8::from(is_ready(pod)),
        std::cmp::Reverse(pod.metadata.creation_timestamp.as_ref().map(|t| t.0)),
    )
}

fn new_pod(set: &Replicated) -> Pod {
    let meta = set.template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", set.name)),
            namespace: Some(set.namespace.clone()),
            labels: meta.labels,
            annotations: meta.annotations,
            owner_references: Some(vec![set.owner.clone()]),
            ..Default::default()
        },
        spec: set.template.spec.clone(),
        status: None,
    }
}

/// The status counts of the active pods, and when a pod becomes available
/// (`minReadySeconds`) so the status is looked at again.
fn observed_status(set: &Replicated, owned: &[&Arc<Pod>]) -> (serde_json::Value, Option<Duration>) {
    let now = jiff::Timestamp::now();
    let active: Vec<&Arc<Pod>> = owned.iter().copied().filter(|p| is_active(p)).collect();
    let template_labels = set
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let fully_labeled = active
        .iter()
        .filter(|p| {
            template_labels
                .iter()
                .all(|(k, v)| p.labels().get(k) == Some(v))
        })
        .count();
    let ready = active.iter().filter(|p| is_ready(p)).count();
    let mut recheck: Option<Duration> = None;
    let mut available_count = 0;
    for pod in &active {
        let (ok, wait) = available(pod, set.min_ready_seconds, now);
        available_count += usize::from(ok);
        if let Some(w) = wait {
            recheck = Some(recheck.map_or(w, |r| r.min(w)));
        }
    }
    let status = json!({
        "replicas": active.len(),
        "fullyLabeledReplicas": fully_labeled,
        "readyReplicas": ready,
        "availableReplicas": available_count,
        "observedGeneration": set.generation,
    });
    (status, recheck)
}

async fn reconcile(
    client: &Client,
    events: &Recorder,
    set: &Replicated,
    object: ObjectReference,
    pods: &[Arc<Pod>],
) -> Result<Option<Duration>, kube::Error> {
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), &set.namespace);
    let owned: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| {
            p.namespace().as_deref() == Some(set.namespace.as_str())
                && controlled_by(p.as_ref(), &set.uid)
        })
        .collect();
    let mut active: Vec<&Arc<Pod>> = owned.iter().copied().filter(|p| is_active(p)).collect();
    let diff = active.len() as i64 - i64::from(set.replicas);
    if diff < 0 {
        for _ in 0..(-diff) {
            match pod_api.create(&PostParams::default(), &new_pod(set)).await {
                Ok(pod) => events.emit(
                    object.clone(),
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created pod: {}", pod.name_any()),
                ),
                Err(e) if benign(&e) => {}
                Err(e) => return Err(e),
            }
        }
    } else if diff > 0 {
        active.sort_by_key(|p| deletion_rank(p));
        for pod in active.iter().take(diff as usize) {
            match pod_api
                .delete(&pod.name_any(), &DeleteParams::default())
                .await
            {
                Ok(_) => events.emit(
                    object.clone(),
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted pod: {}", pod.name_any()),
                ),
                Err(e) if benign(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }

    let (status, recheck) = observed_status(set, &owned);
    let unchanged = [
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    ]
    .iter()
    .all(|k| {
        set.status.get(*k).cloned().unwrap_or(json!(0))
            == status.get(*k).cloned().unwrap_or(json!(0))
    });
    if !unchanged {
        let patch = Patch::Merge(json!({ "status": status }));
        let result = match set.kind {
            "ReplicaSet" => Api::<ReplicaSet>::namespaced(client.clone(), &set.namespace)
                .patch_status(&set.name, &PatchParams::default(), &patch)
                .await
                .map(drop),
            _ => Api::<ReplicationController>::namespaced(client.clone(), &set.namespace)
                .patch_status(&set.name, &PatchParams::default(), &patch)
                .await
                .map(drop),
        };
        match result {
            Ok(()) => {}
            Err(e) if benign(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(recheck)
}
