//! The scheduler: places every unscheduled pod on the single node.
//!
//! A pod whose claims do not exist stays Pending with `PodScheduled=False` (`Unschedulable`),
//! as on a real cluster; so does one that does not tolerate the node being cordoned
//! (`spec.unschedulable`, `kubectl cordon` / `drain`). For `WaitForFirstConsumer` claims it marks the claim with the
//! selected node, which is what makes the provisioner create the volume.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod, PodSpec};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::sync::Notify;

use super::{NODE_NAME, benign, reflect, run_loop};
use crate::events::{EventType, Recorder, reference};
use crate::node::now as status_now;

const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";

/// Runs the scheduler until aborted.
pub async fn run(client: Client) {
    let wake = Arc::new(Notify::new());
    let (pods, _p) = reflect(Api::<Pod>::all(client.clone()), wake.clone());
    let (claims, _c) = reflect(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        wake.clone(),
    );
    let (classes, _s) = reflect(Api::<StorageClass>::all(client.clone()), wake.clone());
    let (nodes, _n) = reflect(Api::<Node>::all(client.clone()), wake.clone());
    let _ = pods.wait_until_ready().await;
    let _ = nodes.wait_until_ready().await;
    let events = Recorder::new(client.clone(), "default-scheduler");
    run_loop(wake, || {
        let cordoned = nodes
            .get(&ObjectRef::new(NODE_NAME))
            .and_then(|n| n.spec.as_ref().and_then(|s| s.unschedulable))
            .unwrap_or(false);
        reconcile(&client, &events, &pods, &claims, &classes, cordoned)
    })
    .await;
}

/// Whether the pod tolerates `node.kubernetes.io/unschedulable:NoSchedule` (the taint of a
/// cordoned node; DaemonSet pods carry the toleration).
fn tolerates_cordon(spec: &PodSpec) -> bool {
    spec.tolerations.iter().flatten().any(|t| {
        let key_matches = match t.key.as_deref() {
            None | Some("") => t.operator.as_deref() == Some("Exists"),
            Some(key) => key == "node.kubernetes.io/unschedulable",
        };
        key_matches
            && t.effect
                .as_deref()
                .is_none_or(|e| e.is_empty() || e == "NoSchedule")
    })
}

fn class_of(
    claim: &PersistentVolumeClaim,
    classes: &Store<StorageClass>,
) -> Option<Arc<StorageClass>> {
    match claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
    {
        Some(name) => classes.get(&ObjectRef::new(name)),
        None => classes.state().into_iter().find(|c| {
            c.annotations()
                .get("storageclass.kubernetes.io/is-default-class")
                .is_some_and(|v| v == "true")
        }),
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one scheduling pass per pod: volume binding, then the fresh read and the bind patch, in order"
)]
async fn reconcile(
    client: &Client,
    events: &Recorder,
    pods: &Store<Pod>,
    claims: &Store<PersistentVolumeClaim>,
    classes: &Store<StorageClass>,
    cordoned: bool,
) -> Option<Duration> {
    let mut retry = None;
    for pod in pods.state() {
        let spec = pod.spec.clone().unwrap_or_default();
        if spec.node_name.is_some() || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if spec
            .scheduler_name
            .as_deref()
            .is_some_and(|s| s != "default-scheduler")
        {
            continue;
        }
        let ns = pod.namespace().unwrap_or_default();
        let name = pod.name_any();
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let mut unschedulable = (cordoned && !tolerates_cordon(&spec))
            .then(|| "1 node(s) were unschedulable".to_string());
        let mut to_select = Vec::new();
        for volume in spec
            .volumes
            .iter()
            .flatten()
            .filter(|_| unschedulable.is_none())
        {
            let Some(source) = &volume.persistent_volume_claim else {
                continue;
            };
            match claims.get(&ObjectRef::new(&source.claim_name).within(&ns)) {
                None => {
                    unschedulable = Some(format!(
                        "persistentvolumeclaim \"{}\" not found",
                        source.claim_name
                    ));
                    break;
                }
                Some(claim) => {
                    let bound = claim
                        .spec
                        .as_ref()
                        .and_then(|s| s.volume_name.as_ref())
                        .is_some();
                    let wffc = class_of(&claim, classes).is_some_and(|c| {
                        c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer")
                    });
                    if !bound && wffc && !claim.annotations().contains_key(SELECTED_NODE) {
                        to_select.push(source.claim_name.clone());
                    }
                }
            }
        }
        if let Some(message) = unschedulable {
            let current = pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled").cloned());
            if current.as_ref().and_then(|c| c.message.as_deref()) != Some(message.as_str()) {
                events.emit(
                    reference(pod.as_ref(), None),
                    EventType::Warning,
                    "FailedScheduling",
                    format!("0/1 nodes are available: {message}."),
                );
                let patch = json!({"status": {"phase": "Pending", "conditions": [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": message, "lastTransitionTime": status_now(),
                }]}});
                if let Err(error) = api
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    && !benign(&error)
                {
                    tracing::warn!(%error, pod = %name, "cannot mark pod unschedulable");
                }
            }
            retry = Some(Duration::from_secs(1));
            continue;
        }
        let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
        for claim in to_select {
            let patch = json!({"metadata": {"annotations": {SELECTED_NODE: NODE_NAME}}});
            if let Err(error) = claims_api
                .patch(&claim, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::warn!(%error, %claim, "cannot mark claim with its selected node");
            }
        }
        // The store may lag behind a bind this loop made already: scheduling such a pod again
        // would replace the conditions the kubelet has published since. Read it fresh and
        // patch with its resourceVersion as a precondition.
        let fresh = match api.get_opt(&name).await {
            Ok(Some(fresh)) => fresh,
            Ok(None) => continue,
            Err(error) => {
                tracing::warn!(%error, pod = %name, "cannot read pod before binding");
                retry = Some(Duration::from_millis(500));
                continue;
            }
        };
        if fresh
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_some()
            || fresh.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        // PodScheduled first: once nodeName is set the kubelet owns the status.
        let scheduled = json!({
        "metadata": {"resourceVersion": fresh.metadata.resource_version},
        "status": {"conditions": [{
            "type": "PodScheduled", "status": "True", "lastTransitionTime": status_now(),
        }]}});
        if let Err(error) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&scheduled))
            .await
        {
            if !benign(&error) {
                tracing::warn!(%error, pod = %name, "cannot set PodScheduled");
                retry = Some(Duration::from_millis(500));
            }
            continue;
        }
        let bind = json!({"spec": {"nodeName": NODE_NAME}});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&bind))
            .await
        {
            Ok(_) => events.emit(
                reference(pod.as_ref(), None),
                EventType::Normal,
                "Scheduled",
                format!("Successfully assigned {ns}/{name} to {NODE_NAME}"),
            ),
            Err(error) if benign(&error) => {}
            Err(error) => {
                tracing::warn!(%error, pod = %name, "cannot bind pod to the node");
                retry = Some(Duration::from_millis(500));
            }
        }
    }
    retry
}
