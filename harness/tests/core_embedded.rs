//! Backend-independent code paths on the embedded cluster: CRD install, node architecture,
//! per-case namespaces and the sweep, watch-based waits (fail fast, last observed state),
//! reaching a pod, HTTP marker probe, in-place container restart, pod replacement and
//! GameServer spec faults.

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{DynamicObject, ListParams, PostParams};
use rehearsal::backend::embedded::{Embedded, EmbeddedOptions, ReachMode};
use rehearsal::backend::{Arch, Backend};
use rehearsal::deploy::embedded::EmbeddedDeploy;
use rehearsal::faults;
use rehearsal::namespaces::{self, Owner};
use rehearsal::wait::{WaitError, await_condition, await_object, conditions};
use rehearsal_embedded::{Backoff, EmbeddedConfig};
use serde_json::json;

const BOUND: Duration = Duration::from_secs(60);

/// One cluster per test process, with pod IPs in this process's own /24.
async fn cluster() -> Embedded {
    let options = EmbeddedOptions {
        cluster: EmbeddedConfig {
            image_pull_backoff: Backoff {
                initial: Duration::from_millis(200),
                max: Duration::from_secs(2),
            },
            crash_loop_backoff: Backoff {
                initial: Duration::from_millis(200),
                max: Duration::from_secs(2),
            },
            shutdown_grace: Duration::from_secs(2),
            ..EmbeddedConfig::default()
        },
        ..Default::default()
    };
    Embedded::up(options)
        .await
        .expect("embedded backend starts")
}

fn web_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "web", "image": "busybox:1.36",
                "command": ["sh", "-c", "mkdir -p /tmp/www && echo world-marker=alpha-7 > /tmp/www/marker && exec httpd -f -p $(POD_IP):8080 -h /tmp/www"],
                "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/marker", "port": "http"}, "periodSeconds": 1}}]
        }
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crds_installed_and_node_arch_reported() {
    let backend = cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(backend.client());
    let mut names: Vec<String> = crds
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "backups.gameplane.local",
            "gameservers.gameplane.local",
            "gametemplates.gameplane.local",
            "modules.gameplane.local",
            "modulesources.gameplane.local",
            "restores.gameplane.local"
        ]
    );
    assert_eq!(backend.arch().await.unwrap(), Arch::host());
    assert_eq!(
        backend.kubeconfig().1,
        rehearsal::backend::embedded::CONTEXT
    );
    Box::new(backend).teardown(false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_namespaces_and_the_sweep_of_crashed_runs() {
    let backend = cluster().await;
    let client = backend.client();
    let mine = namespaces::create(&client, "live-backup", &Owner::current("run-mine-1"))
        .await
        .unwrap();
    let labels = mine.metadata.labels.clone().unwrap();
    assert_eq!(labels[namespaces::RUN_ID_LABEL], "run-mine-1");
    assert_eq!(
        labels[namespaces::OWNER_PID_LABEL],
        std::process::id().to_string()
    );

    // A run whose process is gone: a reaped child's pid on this host.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let dead = Owner {
        run_id: "run-dead-2".into(),
        host: namespaces::this_host(),
        pid: dead_pid,
    };
    let crashed = namespaces::create(&client, "live-backup", &dead)
        .await
        .unwrap();
    // A live run on this host (pid 1 always exists).
    let live = Owner {
        run_id: "run-live-3".into(),
        host: namespaces::this_host(),
        pid: 1,
    };
    let other = namespaces::create(&client, "live-backup", &live)
        .await
        .unwrap();

    let report = namespaces::sweep(&client, Duration::from_secs(3600))
        .await
        .unwrap();
    let deleted: Vec<&str> = report.deleted.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(deleted, [crashed.metadata.name.as_deref().unwrap()]);
    assert!(report.kept.contains(mine.metadata.name.as_ref().unwrap()));
    assert!(report.kept.contains(other.metadata.name.as_ref().unwrap()));
    let nss: Api<Namespace> = Api::all(client.clone());
    let gone = nss
        .get_opt(crashed.metadata.name.as_deref().unwrap())
        .await
        .unwrap();
    assert!(gone.is_none_or(|n| n.metadata.deletion_timestamp.is_some()));
    Box::new(backend).teardown(false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_fail_fast_on_image_pull_and_report_the_last_observed_state() {
    let backend = cluster().await;
    let pods: Api<Pod> = Api::namespaced(backend.client(), "default");
    let mut pod = web_pod("candidate");
    pod.spec.as_mut().unwrap().containers[0].image = Some(faults::UNPULLABLE_IMAGE.into());
    pods.create(&PostParams::default(), &pod).await.unwrap();
    // The bound is long; failing fast means the terminal state ends the wait, not the bound.
    let started = std::time::Instant::now();
    let err = await_condition(
        &pods,
        "candidate",
        conditions::pod_ready(),
        Duration::from_secs(120),
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(120));
    let WaitError::Terminal { .. } = &err else {
        panic!("expected a terminal failure: {err}")
    };
    let msg = err.to_string();
    assert!(msg.contains("pods default/candidate"), "{msg}");
    assert!(msg.contains("expected pod Ready"), "{msg}");
    assert!(
        msg.contains("ErrImagePull") || msg.contains("ImagePullBackOff"),
        "{msg}"
    );
    assert!(msg.contains("last observed: uid="), "{msg}");
    // What the unpullable-candidate case waits for instead.
    await_object(
        &pods,
        "candidate",
        conditions::pod_image_pull_failed(),
        BOUND,
    )
    .await
    .unwrap();

    // A timeout names the object, the expectation and what was (not) there.
    let err = await_condition(
        &pods,
        "never-created",
        conditions::pod_ready(),
        Duration::from_millis(300),
    )
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, WaitError::TimedOut { .. }), "{msg}");
    assert!(
        msg.contains("pods default/never-created") && msg.contains("last observed: absent"),
        "{msg}"
    );
    assert!(!msg.contains("timed out waiting for the condition"));
    Box::new(backend).teardown(false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reach_probe_and_restart_a_container_in_place() {
    let backend = cluster().await;
    let pods: Api<Pod> = Api::namespaced(backend.client(), "default");
    pods.create(&PostParams::default(), &web_pod("web"))
        .await
        .unwrap();
    await_object(&pods, "web", conditions::pod_ready(), BOUND)
        .await
        .unwrap();

    let reach = backend.reach("default", "web", 8080).await.unwrap();
    assert_eq!(
        reach.forward.is_some(),
        backend.reach_mode() == ReachMode::PortForward,
        "the embedded backend reaches pods by IP unless port-forward is selected"
    );
    assert!(reach.addr.ip().is_loopback());
    let seen = rehearsal::probe::http_marker::probe(
        reach.addr,
        "/marker",
        "world-marker=alpha-7",
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert!(seen.ok, "{seen:?}");

    let obs = faults::restart_container_in_place(&backend, "default", "web", "web", BOUND)
        .await
        .unwrap();
    assert!(obs.is_in_place(), "{obs:?}");
    assert_eq!(obs.after.restart_count, 1);

    let err = backend
        .restart_container("default", "web", "nope")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    Box::new(backend).teardown(false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_pod_and_gameserver_spec_faults() {
    let backend = cluster().await;
    let client = backend.client();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "mc"},
        "spec": {"replicas": 1, "serviceName": "mc", "selector": {"matchLabels": {"app": "mc"}},
            "template": {"metadata": {"labels": {"app": "mc"}}, "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "game", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}}
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    await_object(&pods, "mc-0", conditions::pod_ready(), BOUND)
        .await
        .unwrap();
    let obs = faults::replace_pod(&client, "default", "mc", BOUND)
        .await
        .unwrap();
    assert_ne!(obs.old_uid, obs.new_uid);
    assert!(!obs.old_uid.is_empty() && !obs.new_uid.is_empty());

    // GameServer spec faults (no operator here: the object itself is what changes).
    let servers: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &faults::gameserver_resource());
    let gs: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "GameServer",
        "metadata": {"name": "mc"},
        "spec": {"templateRef": {"name": "minecraft"}, "version": "1.0"}
    }))
    .unwrap();
    servers.create(&PostParams::default(), &gs).await.unwrap();
    let suspended = faults::set_suspended(&client, "default", "mc", true)
        .await
        .unwrap();
    assert_eq!(
        suspended.pod_uid_before.as_deref(),
        Some(obs.new_uid.as_str())
    );
    let unpullable = faults::point_at_unpullable(&client, "default", "mc", None)
        .await
        .unwrap();
    let now = servers.get("mc").await.unwrap();
    assert_eq!(now.data["spec"]["suspend"], json!(true));
    assert_eq!(now.data["spec"]["image"], json!(faults::UNPULLABLE_IMAGE));
    assert!(unpullable.generation_after > suspended.generation_after);
    Box::new(backend).teardown(false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn world_read_back_by_an_inspect_pod() {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use rehearsal::probe::readback::{self, VolumeKind};
    let backend = cluster().await;
    let client = backend.client();
    assert!(
        backend
            .load_images(&[readback::INSPECT_IMAGE.to_string()])
            .await
            .is_ok(),
        "the fixture-game binary is not built: run `cargo build -p fixture-game`"
    );
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "mc-data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap();
    pvcs.create(&PostParams::default(), &pvc).await.unwrap();
    // The game writes its world into the claim, then stops (saving on SIGTERM).
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let game: Pod = serde_json::from_value(json!({
        "metadata": {"name": "game"},
        "spec": {
            "terminationGracePeriodSeconds": 10,
            "containers": [{"name": "game", "image": readback::INSPECT_IMAGE,
                "env": [
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "RCON_PASSWORD", "value": "test-only"},
                    {"name": "FIXTURE_WORLD_MARKER", "value": "alpha-7"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "readinessProbe": {"tcpSocket": {"port": 25565}, "periodSeconds": 1}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "mc-data"}}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &game).await.unwrap();
    await_object(&pods, "game", conditions::pod_ready(), BOUND)
        .await
        .unwrap();
    pods.delete("game", &Default::default()).await.unwrap();
    await_condition(&pods, "game", conditions::deleted(), BOUND)
        .await
        .unwrap();

    let result = readback::read_back(
        &client,
        "default",
        "readback-1",
        &["mc-data".to_string()],
        BOUND,
    )
    .await
    .expect("read-back");
    let world = &result.claims["mc-data"];
    assert_eq!(world.kind, VolumeKind::World, "{world:?}");
    assert_eq!(world.marker.as_deref(), Some("alpha-7"), "{world:?}");
    assert!(!world.torn, "{world:?}");
    assert_eq!(world.digest.len(), 64);
    // The read-back pod is gone afterwards.
    await_condition(&pods, "readback-1", conditions::deleted(), BOUND)
        .await
        .unwrap();

    // A claim that does not exist: the pod never runs; the error names it and the pod is removed.
    let err = readback::read_back(
        &client,
        "default",
        "readback-2",
        &["missing".to_string()],
        Duration::from_secs(3),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("readback-2"), "{err}");
    Box::new(backend).teardown(false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_operator_is_deployed_ready_and_stopped_with_the_cluster() {
    let options = EmbeddedOptions {
        cluster: EmbeddedConfig {
            shutdown_grace: Duration::from_secs(2),
            ..EmbeddedConfig::default()
        },
        deploy: EmbeddedDeploy::reference_operator(Some("ignore-incarnation".into())).shared(),
        ..Default::default()
    };
    let backend = Embedded::up(options).await.unwrap_or_else(|e| {
        panic!("{e} (build the operator with `cargo build -p reference-operator`)")
    });
    let operator_pid = backend.operator_pid().expect("operator runs");
    let started = backend.process_records();
    let argv = &started
        .iter()
        .find(|r| r.argv.iter().any(|a| a.ends_with("reference-operator")))
        .unwrap_or_else(|| panic!("the operator among the started processes: {started:?}"))
        .argv;
    // In its sandbox: bwrap, then the operator after `--`.
    assert_eq!(argv[0], "bwrap", "{argv:?}");
    let program = argv.iter().position(|a| a == "--").map(|i| &argv[i + 1]);
    assert!(
        program.is_some_and(|p| p.ends_with("reference-operator")),
        "{argv:?}"
    );
    let pinned = argv
        .windows(2)
        .any(|w| w[0] == "--context" && w[1] == "rehearsal-embedded");
    let mutant = argv
        .windows(2)
        .any(|w| w[0] == "--mutant" && w[1] == "ignore-incarnation");
    assert!(pinned && mutant, "{argv:?}");

    let logs = tempfile::tempdir().unwrap();
    backend.export_logs(logs.path()).await.unwrap();
    assert!(logs.path().join("reference-operator.log").exists());
    assert!(logs.path().join("processes.json").exists());

    Box::new(backend).teardown(false).await.unwrap();
    // Stopped and reaped: no such process any more (a zombie would still have /proc/PID).
    assert!(!std::path::Path::new(&format!("/proc/{operator_pid}")).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_is_killed_restarted_stopped_and_started_through_the_backend() {
    let options = EmbeddedOptions {
        cluster: EmbeddedConfig {
            shutdown_grace: Duration::from_secs(2),
            ..EmbeddedConfig::default()
        },
        deploy: EmbeddedDeploy::reference_operator(None).shared(),
        ..Default::default()
    };
    let backend = Embedded::up(options).await.unwrap_or_else(|e| {
        panic!("{e} (build the operator with `cargo build -p reference-operator`)")
    });
    let first = backend.operator_pid().expect("operator runs");
    // A leader-election Lease the operator holds (as controller-runtime's would), and a node's.
    let lease = |ns: &str, holder: &str| {
        serde_json::from_value::<k8s_openapi::api::coordination::v1::Lease>(json!({
            "metadata": {"name": "gameplane-leader", "namespace": ns},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}
        }))
        .unwrap()
    };
    for (ns, holder) in [("default", "manager-7f9c_1"), ("kube-node-lease", "node-0")] {
        kube::Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(backend.client(), ns)
            .create(&kube::api::PostParams::default(), &lease(ns, holder))
            .await
            .unwrap();
    }
    let restart = backend.restart_operator().await.unwrap();
    let second = backend.operator_pid().expect("a new operator runs");
    // The killed operator's Lease is released (its successor need not wait it out); the
    // node's is not touched.
    let held = |ns: &'static str| {
        let client = backend.client();
        async move {
            kube::Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(client, ns)
                .get_opt("gameplane-leader")
                .await
                .unwrap()
        }
    };
    assert!(held("default").await.is_none(), "released on the kill");
    assert!(
        held("kube-node-lease").await.is_some(),
        "a node's Lease stays"
    );
    assert_ne!(first, second, "{restart}");
    assert_eq!(restart["killed_pid"], json!(first), "{restart}");
    assert_eq!(restart["started_pid"], json!(second), "{restart}");
    // Killed and reaped: no such process any more (a zombie would still have /proc/PID).
    assert!(!std::path::Path::new(&format!("/proc/{first}")).exists());

    backend.stop_operator().await.unwrap();
    assert_eq!(backend.operator_pid(), None);
    let err = backend.stop_operator().await.unwrap_err().to_string();
    assert!(err.contains("stopped already"), "{err}");
    backend.start_operator().await.unwrap();
    let third = backend.operator_pid().expect("the operator runs again");
    let err = backend.start_operator().await.unwrap_err().to_string();
    assert!(err.contains("already runs"), "{err}");

    Box::new(backend).teardown(false).await.unwrap();
    assert!(!std::path::Path::new(&format!("/proc/{third}")).exists());
}

/// `--image REF=EXECUTABLE`: an image your operator puts in pods (an agent of its own) runs as
/// the executable it is mapped to; before the mapping the node cannot pull it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_mapped_to_an_executable_runs_where_the_node_could_not_pull_it() {
    use rehearsal::backend::images::{ImageMapping, set_image_mappings};
    const AGENT: &str = "ghcr.io/example/gameplane-agent:v0.9.1";
    let pod = |name: &str| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "agent", "image": AGENT,
                    "command": ["/usr/bin/busybox", "sleep", "600"]}]
            }
        }))
        .unwrap()
    };
    let unmapped = cluster().await;
    let pods: Api<Pod> = Api::namespaced(unmapped.client(), "default");
    pods.create(&PostParams::default(), &pod("unmapped"))
        .await
        .unwrap();
    await_object(
        &pods,
        "unmapped",
        conditions::pod_image_pull_failed(),
        BOUND,
    )
    .await
    .unwrap();
    Box::new(unmapped).teardown(false).await.unwrap();

    set_image_mappings(vec![
        ImageMapping::parse(&format!("{AGENT}=/usr/bin/busybox")).unwrap(),
    ]);
    let mapped = cluster().await;
    set_image_mappings(vec![]);
    let pods: Api<Pod> = Api::namespaced(mapped.client(), "default");
    pods.create(&PostParams::default(), &pod("mapped"))
        .await
        .unwrap();
    await_condition(&pods, "mapped", conditions::pod_ready(), BOUND)
        .await
        .unwrap();
    Box::new(mapped).teardown(false).await.unwrap();

    for (bad, says) in [
        ("no-equals-sign", "is not REF=EXECUTABLE"),
        ("=/usr/bin/busybox", "is not REF=EXECUTABLE"),
        ("x:1=/no/such/agent", "is not a file"),
    ] {
        let e = ImageMapping::parse(bad).unwrap_err();
        assert!(e.contains(says), "{e}");
    }
    let file = ImageMapping::parse_file(
        "# your images\n\nghcr.io/a:1=/usr/bin/busybox\n  ghcr.io/b:*=/usr/bin/busybox  \n",
    )
    .unwrap();
    assert_eq!(file.len(), 2);
    assert_eq!(file[1].reference, "ghcr.io/b:*");
}
