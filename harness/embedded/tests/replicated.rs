//! Deployments, ReplicaSets, ReplicationControllers and DaemonSets on the embedded node,
//! driven by real `kubectl` 1.37 (`create deployment`, `apply`, `rollout status`, `set image`,
//! `rollout history`, `rollout undo`, `expose`, `scale`) and read back with kube-rs; `expose`
//! gives a Service a pod reaches by name.

mod common;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController, Service};
use kube::Api;
use kube::api::{ListParams, LogParams, PostParams};
use rehearsal_embedded::EmbeddedCluster;
use serde_json::json;

use common::{Ran, kubectl};

fn ok(ran: &Ran, what: &str) {
    assert_eq!(ran.code, 0, "{what}: {ran:?}");
}

/// Applies `manifest` with `kubectl apply -f -`.
async fn apply(cluster: &EmbeddedCluster, manifest: serde_json::Value) -> Ran {
    let text = serde_json::to_vec(&manifest).unwrap();
    kubectl(cluster, &["apply", "-f", "-"], Some(&text)).await
}

fn web_deployment() -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "web", "image": "busybox:1.36",
                        "command": ["sh", "-c", "mkdir -p /tmp/www && echo served-by-$HOSTNAME > /tmp/www/index.html && exec httpd -f -p $(POD_IP):8080 -h /tmp/www"],
                        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "readinessProbe": {"httpGet": {"path": "/index.html", "port": "http"}, "periodSeconds": 1}}]
                }
            }
        }
    })
}

async fn pods_with(cluster: &EmbeddedCluster, selector: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    pods.list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn kubectl_rolls_out_a_deployment_and_exposes_it() {
    let cluster = common::start().await;
    let client = cluster.client();

    // `kubectl create deployment` with a command, then `rollout status` to completion.
    let created = kubectl(
        &cluster,
        &[
            "create",
            "deployment",
            "sleeper",
            "--image=busybox:1.36",
            "--replicas=2",
            "--",
            "sleep",
            "3600",
        ],
        None,
    )
    .await;
    ok(&created, "create deployment");
    let status = kubectl(
        &cluster,
        &["rollout", "status", "deployment/sleeper", "--timeout=30s"],
        None,
    )
    .await;
    if status.code != 0 {
        let dump = kubectl(&cluster, &["get", "deploy,rs,pods", "-o", "yaml"], None).await;
        panic!("rollout status sleeper: {status:?}\n{}", dump.stdout);
    }
    assert!(
        status.stdout.contains("successfully rolled out"),
        "{status:?}"
    );
    assert_eq!(pods_with(&cluster, "app=sleeper").await.len(), 2);

    // A rolling update with maxSurge 1 / maxUnavailable 0 driven by `set image`.
    ok(&apply(&cluster, web_deployment()).await, "apply web");
    ok(
        &kubectl(
            &cluster,
            &["rollout", "status", "deployment/web", "--timeout=30s"],
            None,
        )
        .await,
        "rollout status web",
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let first = deployments.get("web").await.unwrap();
    assert_eq!(
        first
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision"))
            .map(String::as_str),
        Some("1")
    );
    let old_pods: Vec<String> = pods_with(&cluster, "app=web")
        .await
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    ok(
        &kubectl(
            &cluster,
            &["set", "image", "deployment/web", "web=busybox:1.37"],
            None,
        )
        .await,
        "set image",
    );
    let rolled = kubectl(
        &cluster,
        &["rollout", "status", "deployment/web", "--timeout=30s"],
        None,
    )
    .await;
    ok(&rolled, "rollout status after set image");
    assert!(
        rolled.stdout.contains("successfully rolled out"),
        "{rolled:?}"
    );
    let now = pods_with(&cluster, "app=web").await;
    let live: Vec<&Pod> = now
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    assert_eq!(live.len(), 2, "{now:?}");
    for pod in &live {
        assert!(
            !old_pods.contains(pod.metadata.name.as_ref().unwrap()),
            "an old pod survived the rollout: {old_pods:?}"
        );
        assert_eq!(
            pod.spec.as_ref().unwrap().containers[0].image.as_deref(),
            Some("busybox:1.37")
        );
    }
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let mut by_revision: Vec<(String, i32)> = sets
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|rs| {
            (
                rs.metadata.annotations.unwrap_or_default()["deployment.kubernetes.io/revision"]
                    .clone(),
                rs.spec.replicas.unwrap_or(0),
            )
        })
        .collect();
    by_revision.sort();
    assert_eq!(
        by_revision,
        vec![("1".to_string(), 0), ("2".to_string(), 2)]
    );
    let history = kubectl(&cluster, &["rollout", "history", "deployment/web"], None).await;
    ok(&history, "rollout history");
    assert!(
        history.stdout.contains('1') && history.stdout.contains('2'),
        "{history:?}"
    );
    let web = deployments.get("web").await.unwrap();
    let conditions = web.status.unwrap().conditions.unwrap();
    let progressing = conditions
        .iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .unwrap();
    assert_eq!(
        progressing.reason.as_deref(),
        Some("NewReplicaSetAvailable")
    );

    // `rollout undo` brings revision 1's template back as revision 3.
    ok(
        &kubectl(&cluster, &["rollout", "undo", "deployment/web"], None).await,
        "rollout undo",
    );
    ok(
        &kubectl(
            &cluster,
            &["rollout", "status", "deployment/web", "--timeout=30s"],
            None,
        )
        .await,
        "rollout status after undo",
    );
    let undone = deployments.get("web").await.unwrap();
    assert_eq!(
        undone.spec.template.spec.unwrap().containers[0]
            .image
            .as_deref(),
        Some("busybox:1.36")
    );
    assert_eq!(
        undone
            .metadata
            .annotations
            .unwrap_or_default()
            .get("deployment.kubernetes.io/revision")
            .map(String::as_str),
        Some("3")
    );

    // `kubectl expose` → a Service; a pod reaches it by name.
    ok(
        &kubectl(
            &cluster,
            &[
                "expose",
                "deployment/web",
                "--port=80",
                "--target-port=http",
            ],
            None,
        )
        .await,
        "expose",
    );
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc = services.get("web").await.unwrap();
    assert_eq!(
        svc.spec.as_ref().unwrap().selector.as_ref().unwrap()["app"],
        "web"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let probe: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "probe"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c", "echo got=$(wget -q -O - http://web/index.html); echo probe-done"]}]}
    }));
    pods.create(&PostParams::default(), &probe).await.unwrap();
    let log = common::wait_for_log(&pods, "probe", &LogParams::default(), "probe-done").await;
    assert!(log.contains("got=served-by-web-"), "{log}");

    // `kubectl get` prints the new kinds with the built-in columns.
    let listed = kubectl(&cluster, &["get", "deployments,replicasets"], None).await;
    ok(&listed, "get deployments,replicasets");
    assert!(listed.stdout.contains("deployment.apps/web"), "{listed:?}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn daemonsets_and_replication_controllers_run_their_pods() {
    let cluster = common::start().await;
    let client = cluster.client();
    let pod_spec = json!({
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c", "echo version=$VERSION; touch /tmp/ready; exec sleep 3600"],
            "env": [{"name": "VERSION", "value": "one"}],
            "readinessProbe": {"exec": {"command": ["test", "-e", "/tmp/ready"]}, "periodSeconds": 1}}]
    });
    ok(
        &apply(
            &cluster,
            json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "agent"},
                "spec": {"selector": {"matchLabels": {"app": "agent"}},
                         "template": {"metadata": {"labels": {"app": "agent"}}, "spec": pod_spec}}
            }),
        )
        .await,
        "apply daemonset",
    );
    let status = kubectl(
        &cluster,
        &["rollout", "status", "daemonset/agent", "--timeout=30s"],
        None,
    )
    .await;
    ok(&status, "rollout status daemonset");
    assert!(
        status.stdout.contains("successfully rolled out"),
        "{status:?}"
    );
    let first = pods_with(&cluster, "app=agent").await;
    assert_eq!(first.len(), 1);
    assert_eq!(
        first[0].spec.as_ref().unwrap().node_name.as_deref(),
        Some("rehearsal-node")
    );
    // A template change rolls the one pod.
    ok(
        &kubectl(
            &cluster,
            &["set", "env", "daemonset/agent", "VERSION=two"],
            None,
        )
        .await,
        "set env daemonset",
    );
    ok(
        &kubectl(
            &cluster,
            &["rollout", "status", "daemonset/agent", "--timeout=30s"],
            None,
        )
        .await,
        "rollout status daemonset after set env",
    );
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let ds = sets.get("agent").await.unwrap();
    let ds_status = ds.status.unwrap();
    assert_eq!(
        (
            ds_status.desired_number_scheduled,
            ds_status.number_ready,
            ds_status.updated_number_scheduled
        ),
        (1, 1, Some(1))
    );
    let live: Vec<Pod> = pods_with(&cluster, "app=agent")
        .await
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    assert_eq!(live.len(), 1);
    assert_ne!(live[0].metadata.uid, first[0].metadata.uid);

    // A ReplicationController keeps its count and follows `kubectl scale`.
    ok(
        &apply(
            &cluster,
            json!({
                "apiVersion": "v1", "kind": "ReplicationController",
                "metadata": {"name": "legacy"},
                "spec": {"replicas": 3, "selector": {"app": "legacy"},
                         "template": {"metadata": {"labels": {"app": "legacy"}}, "spec": pod_spec}}
            }),
        )
        .await,
        "apply rc",
    );
    let rcs: Api<ReplicationController> = Api::namespaced(client.clone(), "default");
    common::wait_for(
        &rcs,
        "legacy",
        "3 ready replicas",
        |rc: Option<&ReplicationController>| {
            rc.and_then(|r| r.status.as_ref())
                .is_some_and(|s| s.ready_replicas == Some(3))
        },
    )
    .await;
    ok(
        &kubectl(&cluster, &["scale", "rc/legacy", "--replicas=1"], None).await,
        "scale rc",
    );
    common::wait_for(
        &rcs,
        "legacy",
        "1 replica",
        |rc: Option<&ReplicationController>| {
            rc.and_then(|r| r.status.as_ref())
                .is_some_and(|s| s.replicas == 1 && s.ready_replicas == Some(1))
        },
    )
    .await;
    cluster.shutdown().await;
}
