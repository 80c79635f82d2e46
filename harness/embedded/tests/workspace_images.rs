//! The workspace's own images run on the node: the fixture game serves on its pod IP with
//! its world on a provisioned volume.

mod common;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::PostParams;
use rehearsal_embedded::locate_workspace_binary;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_game_serves_on_its_pod_ip_with_its_world_on_the_claim() {
    assert!(
        locate_workspace_binary("fixture-game").is_some(),
        "the fixture-game binary is not built: run `cargo build -p fixture-game` (or set REHEARSAL_BIN_DIR)"
    );
    let cluster = common::start().await;
    let client = cluster.client();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let set: StatefulSet = common::json(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "mc"},
        "spec": {
            "replicas": 1, "serviceName": "mc",
            "selector": {"matchLabels": {"app": "mc"}},
            "template": {"metadata": {"labels": {"app": "mc"}}, "spec": {
                "terminationGracePeriodSeconds": 10,
                "containers": [{"name": "game", "image": "rehearsal.local/fixture-game:1.0",
                    "env": [
                        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "RCON_PASSWORD", "value": "test-only"}
                    ],
                    "ports": [{"name": "minecraft", "containerPort": 25565}],
                    "readinessProbe": {"tcpSocket": {"port": "minecraft"}, "periodSeconds": 1},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]
            }},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    }));
    sets.create(&PostParams::default(), &set).await.unwrap();
    let pod = common::wait_for(&pods, "mc-0", "fixture game Ready", common::pod_ready()).await;
    let status = pod.status.unwrap();
    let ip = status.pod_ip.unwrap();
    let game = &status.container_statuses.unwrap()[0];
    assert!(
        game.image_id
            .starts_with("rehearsal.local/fixture-game@sha256:"),
        "imageID {}",
        game.image_id
    );
    tokio::net::TcpStream::connect((ip.as_str(), 25565))
        .await
        .unwrap_or_else(|e| panic!("the game does not listen on its pod IP {ip}:25565: {e}"));
    let claim = Api::<PersistentVolumeClaim>::namespaced(client.clone(), "default")
        .get("data-mc-0")
        .await
        .unwrap();
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get(claim.spec.unwrap().volume_name.as_deref().unwrap())
        .await
        .unwrap();
    let dir = std::path::PathBuf::from(pv.spec.unwrap().host_path.unwrap().path);
    assert!(
        dir.join("world").is_dir(),
        "the game's world is not on the claim's volume {}",
        dir.display()
    );
    cluster.shutdown().await;
}
