//! CONTRACT A: a GameServer's children, phases and suspend, on the embedded cluster.

mod common;

use common::{NS, Rig, dump};
use gameplane_api::conditions::{self, types};
use gameplane_api::{GameServer, names};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service};
use kube::ResourceExt;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_phases_and_suspend_follow_the_contract() {
    let rig = Rig::start(None).await;
    let gs = rig.create_server("alpha", "mc", false).await;
    let pod = rig.await_running_pod("alpha").await;
    let containers: Vec<_> = pod
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(containers, ["game", "agent"], "pod {NS}/alpha-0 containers");

    // PVCs are found by owner UID, never by labels.
    let owner_uid = rig
        .api::<GameServer>()
        .get("alpha")
        .await
        .unwrap()
        .uid()
        .unwrap();
    assert_eq!(gs.uid().unwrap(), owner_uid);
    let claims = rig
        .api::<PersistentVolumeClaim>()
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut owned: Vec<_> = claims
        .items
        .iter()
        .filter(|c| {
            c.owner_references()
                .iter()
                .any(|o| o.uid == owner_uid && o.controller == Some(true))
        })
        .map(|c| c.name_any())
        .collect();
    owned.sort();
    assert_eq!(
        owned,
        ["alpha-data", "alpha-extra-nether", "alpha-mods-1-0"],
        "claims owned by alpha"
    );
    let sts = rig.api::<StatefulSet>().get("alpha").await.unwrap();
    assert_eq!(sts.spec.replicas, Some(1));
    for svc in [names::game_service("alpha"), names::agent_service("alpha")] {
        rig.api::<Service>()
            .get(&svc)
            .await
            .unwrap_or_else(|e| panic!("service {svc}: {e}"));
    }
    let (_, data_uid) = rig.volume("alpha-data").await;

    // Suspend: no replica, data kept (same claim).
    rig.set_suspend("alpha", true).await;
    let suspended = rig.await_server_phase("alpha", "Suspended").await;
    rig.await_no_pod("alpha").await;
    let ready =
        conditions::find(&suspended.status.as_ref().unwrap().conditions, types::READY).cloned();
    assert_eq!(
        ready.as_ref().map(|c| c.reason.as_str()),
        Some("Suspended"),
        "{}",
        dump(&suspended)
    );
    let (_, data_uid_after) = rig.volume("alpha-data").await;
    assert_eq!(data_uid, data_uid_after, "suspend keeps the world claim");

    // Resume.
    rig.set_suspend("alpha", false).await;
    rig.await_running_pod("alpha").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unpullable_image_fails_the_server() {
    let rig = Rig::start(None).await;
    rig.create_server("beta", "mc", false).await;
    rig.api::<GameServer>()
        .patch(
            "beta",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "rehearsal.local/no-such-game:9"}})),
        )
        .await
        .unwrap();
    let failed = rig.await_server_phase("beta", "Failed").await;
    let ready = conditions::find(&failed.status.as_ref().unwrap().conditions, types::READY)
        .cloned()
        .unwrap();
    assert_eq!(ready.reason, "ImagePullFailed", "{}", dump(&failed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_change_rolls_the_pod_and_keeps_the_world_claim() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    let before = rig.await_running_pod("alpha").await;
    let (_, data_uid) = rig.volume("alpha-data").await;
    rig.api::<GameServer>()
        .patch(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"version": "1.1"}})),
        )
        .await
        .unwrap();
    let after = common::wait_for(
        &rig.api::<k8s_openapi::api::core::v1::Pod>(),
        "alpha-0",
        "running 1.1",
        |p: Option<&k8s_openapi::api::core::v1::Pod>| {
            let image = p.and_then(|p| p.spec.as_ref()?.containers.first()?.image.clone());
            image.as_deref() == Some("rehearsal.local/fixture-game:1.1-compat")
                && matches!(
                    reference_operator::incarnation::observe(p),
                    reference_operator::incarnation::Observation::Running(_)
                )
        },
    )
    .await;
    assert_ne!(after.uid(), before.uid(), "a new pod runs the new version");
    assert_eq!(
        rig.volume("alpha-data").await.1,
        data_uid,
        "same world claim"
    );
    rig.volume("alpha-mods-1-1").await;
}

/// The agent is reached as Gameplane reaches it: through `<gs>-agent.<ns>.svc.cluster.local`.
/// From the host that name resolves at the cluster's DNS server (what `--cluster-dns` gives the
/// operator); the connection then goes through the Service's cluster IP to the pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_answers_through_its_service_name() {
    use reference_operator::agent::{AgentClient, service_host};
    use std::time::Duration;

    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    let pod = rig.await_running_pod("alpha").await;
    let uid = pod.metadata.uid.clone().unwrap();
    let svc = rig
        .api::<Service>()
        .get(&names::agent_service("alpha"))
        .await
        .unwrap();
    let spec = svc.spec.unwrap();
    assert_eq!(spec.publish_not_ready_addresses, Some(true));
    let cluster_ip = spec.cluster_ip.unwrap();
    assert!(
        rig.cluster
            .service_range()
            .contains(cluster_ip.parse().unwrap()),
        "{cluster_ip}"
    );

    let host = service_host("alpha", NS);
    let agent = AgentClient::new(Duration::from_secs(5), Some(rig.cluster.dns_address()));
    // The agent may still be starting: bounded retries on "not reachable yet".
    let deadline = tokio::time::Instant::now() + common::WAIT;
    let identity = loop {
        match agent.identity(&host, &uid).await {
            Ok(id) => break id,
            Err(e) if e.is_unreachable() && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("agent by Service name: {e}"),
        }
    };
    assert_eq!(identity.pod_uid, uid);
}
