//! The DaemonSet controller: one pod on the node when the template's `nodeSelector` matches
//! the node's labels, replaced when it fails, and rolled to a new template by the
//! `RollingUpdate` strategy (the old pod deleted, then the new one created; with `maxSurge`
//! the new one first) or left alone with `OnDelete`. Pods carry `controller-revision-hash`.
//! Status carries the counts `kubectl rollout status daemonset/…` reads.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use super::replicaset::{available, is_active, is_ready};
use super::{NODE_NAME, benign, controlled_by, controller_ref, reflect, run_loop};
use crate::events::{EventType, Recorder, reference};

const REVISION_LABEL: &str = "controller-revision-hash";

/// Runs the controller until aborted.
pub async fn run(client: Client) {
    let wake = Arc::new(Notify::new());
    let (sets, _s) = reflect(Api::<DaemonSet>::all(client.clone()), wake.clone());
    let (pods, _p) = reflect(Api::<Pod>::all(client.clone()), wake.clone());
    let (nodes, _n) = reflect(Api::<Node>::all(client.clone()), wake.clone());
    let _ = sets.wait_until_ready().await;
    let _ = pods.wait_until_ready().await;
    let _ = nodes.wait_until_ready().await;
    let events = Recorder::new(client.clone(), "daemonset-controller");
    run_loop(wake, || async {
        let mut retry: Option<Duration> = None;
        let all_pods = pods.state();
        let node = nodes.state().into_iter().find(|n| n.name_any() == NODE_NAME);
        for ds in sets.state() {
            match reconcile(&client, &events, &ds, node.as_deref(), &all_pods).await {
                Ok(Some(wait)) => retry = Some(retry.map_or(wait, |r| r.min(wait))),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, daemonset = %ds.name_any(), "reconcile failed; retrying");
                    retry = Some(Duration::from_millis(500));
                }
            }
        }
        retry
    })
    .await;
}

fn revision(ds: &DaemonSet) -> String {
    let template = serde_json::to_string(&ds.spec.template).unwrap_or_default();
    hex::encode(Sha256::digest(template.as_bytes()))[..10].to_string()
}

fn should_run(ds: &DaemonSet, node: Option<&Node>) -> bool {
    let Some(node) = node else {
        return false;
    };
    let labels = node.labels();
    ds.spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.node_selector.as_ref())
        .is_none_or(|sel| sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

#[expect(
    clippy::too_many_lines,
    reason = "one reconcile pass (delete misplaced, replace failed, create missing, roll, status) over the same pod lists"
)]
async fn reconcile(
    client: &Client,
    events: &Recorder,
    ds: &DaemonSet,
    node: Option<&Node>,
    pods: &[Arc<Pod>],
) -> Result<Option<Duration>, kube::Error> {
    if ds.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let ns = ds.namespace().unwrap_or_default();
    let name = ds.name_any();
    let uid = ds.uid().unwrap_or_default();
    let hash = revision(ds);
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let owned: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| {
            p.namespace().as_deref() == Some(ns.as_str()) && controlled_by(p.as_ref(), &uid)
        })
        .collect();
    let wanted = should_run(ds, node);
    let strategy = ds.spec.update_strategy.as_ref();
    let on_delete = strategy.and_then(|s| s.type_.as_deref()) == Some("OnDelete");
    let surge = strategy
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.max_surge.as_ref())
        .is_some_and(|s| {
            !matches!(s, IntOrString::Int(0)) && !matches!(s, IntOrString::String(p) if p == "0%")
        });
    let delete = |pod: &Pod| {
        let api = pod_api.clone();
        let name = pod.name_any();
        async move {
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => Ok(()),
                Err(e) if benign(&e) => Ok(()),
                Err(e) => Err(e),
            }
        }
    };

    // Failed pods are deleted and replaced.
    for pod in &owned {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Failed") | Some("Succeeded"))
            && pod.metadata.deletion_timestamp.is_none()
        {
            delete(pod).await?;
        }
    }
    let active: Vec<&Arc<Pod>> = owned.iter().copied().filter(|p| is_active(p)).collect();
    let current = |p: &&Arc<Pod>| p.labels().get(REVISION_LABEL) == Some(&hash);
    let has_current = active.iter().any(current);
    let terminating = owned
        .iter()
        .any(|p| p.metadata.deletion_timestamp.is_some());
    if !wanted {
        for pod in &active {
            delete(pod).await?;
        }
    } else {
        let old: Vec<&&Arc<Pod>> = active.iter().filter(|p| !current(p)).collect();
        let create = if active.is_empty() {
            // Wait for a terminating pod to go first (one pod per node).
            !terminating
        } else {
            !on_delete && surge && !has_current
        };
        if create {
            let meta = ds.spec.template.metadata.clone().unwrap_or_default();
            let mut labels = meta.labels.unwrap_or_default();
            labels.insert(REVISION_LABEL.into(), hash.clone());
            let mut spec = ds.spec.template.spec.clone().unwrap_or_default();
            spec.node_name = Some(NODE_NAME.into());
            let pod = Pod {
                metadata: ObjectMeta {
                    generate_name: Some(format!("{name}-")),
                    namespace: Some(ns.clone()),
                    labels: Some(labels),
                    annotations: meta.annotations,
                    owner_references: Some(vec![controller_ref(ds)]),
                    ..Default::default()
                },
                spec: Some(spec),
                status: None,
            };
            match pod_api.create(&PostParams::default(), &pod).await {
                Ok(created) => events.emit(
                    reference(ds, None),
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created pod: {}", created.name_any()),
                ),
                Err(e) if benign(&e) => {}
                Err(e) => return Err(e),
            }
        } else if !on_delete {
            // Without surge the old pod goes first; with it, once the new one is ready.
            let new_ready = active.iter().filter(|p| current(p)).any(|p| is_ready(p));
            for pod in old {
                if !surge || new_ready {
                    delete(pod).await?;
                    events.emit(
                        reference(ds, None),
                        EventType::Normal,
                        "SuccessfulDelete",
                        format!("Deleted pod: {}", pod.name_any()),
                    );
                }
            }
        }
    }

    // Status.
    let min_ready = ds.spec.min_ready_seconds.unwrap_or(0);
    let now = jiff::Timestamp::now();
    let desired = i32::from(wanted);
    let scheduled = i32::from(!active.is_empty() && wanted);
    let ready = active.iter().filter(|p| is_ready(p)).count() as i32;
    let mut recheck = None;
    let mut available_count = 0;
    for pod in &active {
        let (ok, wait) = available(pod, min_ready, now);
        available_count += i32::from(ok);
        recheck = recheck.or(wait);
    }
    let updated = active.iter().filter(|p| current(p)).count() as i32;
    let status = json!({
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": scheduled,
        "numberMisscheduled": i32::from(!active.is_empty() && !wanted),
        "numberReady": ready,
        "updatedNumberScheduled": updated,
        "numberAvailable": available_count,
        "numberUnavailable": (desired - available_count).max(0),
        "observedGeneration": ds.metadata.generation,
    });
    let old = serde_json::to_value(&ds.status).unwrap_or_default();
    let unchanged = status
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| old.get(k).cloned().unwrap_or(json!(0)) == *v);
    if !unchanged {
        let api: Api<DaemonSet> = Api::namespaced(client.clone(), &ns);
        super::merge_status(&api, &name, &status).await?;
    }
    Ok(recheck)
}
