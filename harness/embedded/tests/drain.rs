//! kubectl 1.37 `drain` against the embedded node: it cordons the node, evicts through
//! `pods/eviction` and is held to a PodDisruptionBudget; the replacement of an evicted pod stays
//! Pending on the cordoned node until `kubectl uncordon`.

mod common;

use common::kubectl;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::ListParams;

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: main
          image: busybox:1.36
          command: ["sh", "-c", "touch /tmp/up && exec sleep 3600"]
          readinessProbe:
            exec: {command: ["test", "-e", "/tmp/up"]}
            periodSeconds: 1
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
"#;

async fn web_pods(pods: &Api<Pod>) -> Vec<Pod> {
    pods.list(&ListParams::default().labels("app=web"))
        .await
        .unwrap()
        .items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drain_cordons_evicts_and_is_held_to_the_disruption_budget() {
    let cluster = common::start().await;
    let applied = kubectl(&cluster, &["apply", "-f", "-"], Some(DEPLOYMENT.as_bytes())).await;
    assert_eq!(applied.code, 0, "{applied:?}");
    let rolled = kubectl(
        &cluster,
        &["rollout", "status", "deployment/web", "--timeout=40s"],
        None,
    )
    .await;
    assert_eq!(rolled.code, 0, "{rolled:?}");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let before: Vec<String> = web_pods(&pods)
        .await
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(before.len(), 2, "{before:?}");

    // Two Ready pods and minAvailable 1: one eviction is allowed; its replacement cannot be
    // scheduled on the cordoned node, so the second eviction is refused until the timeout.
    let node = "rehearsal-node";
    let drained = kubectl(
        &cluster,
        &[
            "drain",
            node,
            "--pod-selector=app=web",
            "--timeout=8s",
            "--delete-emptydir-data",
        ],
        None,
    )
    .await;
    assert_ne!(drained.code, 0, "drain cannot finish: {drained:?}");
    let output = format!("{}{}", drained.stdout, drained.stderr);
    assert!(
        output.contains(&format!("node/{node} cordoned")),
        "{drained:?}"
    );
    assert!(
        output.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{drained:?}"
    );
    let cordoned = Api::<Node>::all(cluster.client()).get(node).await.unwrap();
    assert_eq!(cordoned.spec.unwrap().unschedulable, Some(true));

    // One original pod was evicted; its replacement waits, Unschedulable.
    let now = web_pods(&pods).await;
    let live: Vec<&Pod> = now
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let survivors = live
        .iter()
        .filter(|p| before.contains(p.metadata.name.as_ref().unwrap()))
        .count();
    assert_eq!(survivors, 1, "exactly one pod evicted: {now:#?}");
    let replacement = live
        .iter()
        .find(|p| !before.contains(p.metadata.name.as_ref().unwrap()))
        .unwrap_or_else(|| panic!("the ReplicaSet replaced the evicted pod: {now:#?}"));
    let replacement_name = replacement.metadata.name.clone().unwrap();
    let pending = common::wait_for(
        &pods,
        &replacement_name,
        "Unschedulable",
        |p: Option<&Pod>| {
            p.and_then(|p| p.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter().any(|c| {
                        c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable")
                    })
                })
        },
    )
    .await;
    assert!(pending.spec.unwrap().node_name.is_none());

    // Uncordoned, the replacement is scheduled and becomes Ready.
    let uncordoned = kubectl(&cluster, &["uncordon", node], None).await;
    assert_eq!(uncordoned.code, 0, "{uncordoned:?}");
    common::wait_for(
        &pods,
        &replacement_name,
        "replacement Ready after uncordon",
        common::pod_ready(),
    )
    .await;
    cluster.shutdown().await;
}
