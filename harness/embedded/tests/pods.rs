//! Pods on the embedded node: environment, volumes, logs, in-place restarts, image pulls.

mod common;

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::Api;
use kube::api::{LogParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn env_volumes_and_logs_reach_the_container() {
    let cluster = common::start().await;
    let client = cluster.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([("motd".into(), "be nice".into())])),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("creds".into()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([(
                    "password".into(),
                    ByteString(b"hunter2".to_vec()),
                )])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "env", "labels": {"app": "env"}},
        "spec": {
            "restartPolicy": "Never",
            "initContainers": [{"name": "prepare", "image": "busybox:1.36",
                "command": ["sh", "-c", "echo prepared > /scratch/init"],
                "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}],
            "containers": [{"name": "main", "image": "busybox:1.36",
                "workingDir": "/scratch",
                "command": ["sh", "-c"],
                "args": ["echo name=$(POD_NAME) ns=$POD_NS ip=$POD_IP node=$NODE pw=$PW motd=$MOTD greeting=$(GREETING) host=$(hostname) home=$HOME; cat init; cat /config/motd; echo; cat /secret/password; echo; cat /info/labels; ls /data; pwd"],
                "env": [
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                    {"name": "NAME_COPY", "value": "x"},
                    {"name": "GREETING", "value": "hi-$(NAME_COPY)"}
                ],
                "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CM_"}],
                "volumeMounts": [
                    {"name": "scratch", "mountPath": "/scratch"},
                    {"name": "config", "mountPath": "/config", "readOnly": true},
                    {"name": "secret", "mountPath": "/secret", "readOnly": true},
                    {"name": "info", "mountPath": "/info"},
                    {"name": "host", "mountPath": "/data", "subPath": "sub"}
                ]}],
            "volumes": [
                {"name": "scratch", "emptyDir": {}},
                {"name": "config", "configMap": {"name": "settings"}},
                {"name": "secret", "secret": {"secretName": "creds"}},
                {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "host", "hostPath": {"path": cluster.state_dir().join("hostpath-test").to_string_lossy(), "type": "DirectoryOrCreate"}}
            ]
        }
    }));
    // MOTD comes through envFrom with a prefix, so $MOTD is empty and $CM_motd is set.
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let done = common::wait_for(&pods, "env", "pod Succeeded", |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref()?.phase.clone()).as_deref() == Some("Succeeded")
    })
    .await;
    let status = done.status.unwrap();
    let ip = status.pod_ip.clone().unwrap();
    let logs = pods.logs("env", &LogParams::default()).await.unwrap();
    let expected_first = format!(
        "name=env ns=default ip={ip} node=rehearsal-node pw=hunter2 motd= greeting=hi-x host=env home=/root"
    );
    assert!(
        logs.starts_with(&expected_first),
        "first log line: expected {expected_first:?}, got {logs:?}"
    );
    assert!(
        logs.contains("prepared\nbe nice\nhunter2\napp=\"env\"\n"),
        "logs: {logs:?}"
    );
    assert!(logs.ends_with("/scratch\n"), "working directory: {logs:?}");
    assert!(cluster.state_dir().join("hostpath-test/sub").is_dir());
    let init = &status.init_container_statuses.unwrap()[0];
    assert_eq!(
        init.state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap()
            .reason
            .as_deref(),
        Some("Completed")
    );
    let main = &status.container_statuses.unwrap()[0];
    assert_eq!(
        main.state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap()
            .exit_code,
        0
    );
    // tailLines through kube-rs.
    let tail = pods
        .logs(
            "env",
            &LogParams {
                tail_lines: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(tail, "/scratch\n");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn in_place_restart_keeps_the_pod_and_counts_the_restart() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "terminationGracePeriodSeconds": 5,
            "containers": [{"name": "httpd", "image": "busybox:1.36",
                "command": ["sh", "-c", "mkdir -p /tmp/www && echo ok > /tmp/www/index.html && echo incarnation-$(cat /proc/sys/kernel/random/uuid) && exec httpd -f -p $(POD_IP):8080 -h /tmp/www"],
                "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/index.html", "port": "http"}, "periodSeconds": 1}}]
        }
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let before = common::wait_for(&pods, "web", "pod Ready", common::pod_ready()).await;
    let uid = before.metadata.uid.clone().unwrap();
    let first_log = common::wait_for_log(&pods, "web", &LogParams::default(), "incarnation-").await;

    // Record every status the API server publishes while the restart happens.
    let rv = before.metadata.resource_version.clone().unwrap();
    let mut watch = pods
        .watch(&WatchParams::default().fields("metadata.name=web"), &rv)
        .await
        .unwrap()
        .boxed();
    let restarted = cluster
        .restart_container("default", "web", "httpd")
        .await
        .unwrap();
    let old_id = before
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0]
        .container_id
        .clone()
        .unwrap();
    assert_eq!(restarted.old_id, old_id);
    assert_ne!(restarted.new_id, old_id);
    assert_eq!(restarted.restart_count, 1);

    let mut saw_not_ready = false;
    let after = tokio::time::timeout(common::WAIT, async {
        while let Some(event) = watch.next().await {
            if let Ok(WatchEvent::Modified(pod)) = event {
                let status = &pod
                    .status
                    .as_ref()
                    .unwrap()
                    .container_statuses
                    .as_ref()
                    .unwrap()[0];
                if !status.ready {
                    saw_not_ready = true;
                }
                if status.ready && status.restart_count == 1 {
                    return pod;
                }
            }
        }
        panic!("watch of pod web ended before it was Ready again");
    })
    .await
    .expect("pod web Ready again after the in-place restart");
    assert!(
        saw_not_ready,
        "the readiness of pod web never dropped while its container was down"
    );
    assert_eq!(
        after.metadata.uid.as_deref(),
        Some(uid.as_str()),
        "pod UID changed"
    );
    let status = &after
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0];
    assert_eq!(
        status.container_id.as_deref(),
        Some(restarted.new_id.as_str())
    );
    let last = status
        .last_state
        .as_ref()
        .unwrap()
        .terminated
        .as_ref()
        .unwrap();
    assert_eq!(last.container_id.as_deref(), Some(old_id.as_str()));
    assert_eq!(last.exit_code, 143, "httpd ends on SIGTERM");

    // `previous` is the first incarnation's log; the current one is new.
    let previous = pods
        .logs(
            "web",
            &LogParams {
                previous: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(previous, first_log);
    let current = common::wait_for_log(&pods, "web", &LogParams::default(), "incarnation-").await;
    assert_ne!(current, first_log);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_image_is_err_image_pull_then_back_off_and_starts_nothing() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "nope"},
        "spec": {"containers": [{"name": "main", "image": "registry.invalid/nothing:1.0"}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let reason = |p: &Pod| -> Option<String> {
        p.status.as_ref()?.container_statuses.as_ref()?[0]
            .state
            .as_ref()?
            .waiting
            .as_ref()?
            .reason
            .clone()
    };
    let pulled = common::wait_for(&pods, "nope", "ErrImagePull", |p: Option<&Pod>| {
        p.and_then(reason).as_deref() == Some("ErrImagePull")
    })
    .await;
    assert_eq!(
        pulled.status.as_ref().unwrap().phase.as_deref(),
        Some("Pending")
    );
    let backoff = common::wait_for(&pods, "nope", "ImagePullBackOff", |p: Option<&Pod>| {
        p.and_then(reason).as_deref() == Some("ImagePullBackOff")
    })
    .await;
    let status = backoff.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let container = &status.container_statuses.unwrap()[0];
    assert_eq!(container.container_id, None);
    assert_eq!(container.image_id, "");
    assert!(!container.ready);
    assert!(
        cluster.sandbox_pids().is_empty(),
        "sandboxes running: {:?}",
        cluster.sandbox_pids()
    );
    // A log request explains why there is nothing.
    let err = pods.logs("nope", &LogParams::default()).await.unwrap_err();
    assert!(err.to_string().contains("waiting to start"), "{err}");
    // As on a real node, the failure is also an Event on the pod.
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(cluster.client(), "default");
    let deadline = tokio::time::Instant::now() + common::WAIT;
    let reasons = loop {
        let reasons: Vec<(String, String)> = events
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.involved_object.name.as_deref() == Some("nope"))
            .map(|e| (e.reason.unwrap_or_default(), e.type_.unwrap_or_default()))
            .collect();
        if reasons.iter().any(|(r, _)| r == "Failed") || tokio::time::Instant::now() > deadline {
            break reasons;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(
        reasons.contains(&("Scheduled".into(), "Normal".into())),
        "events: {reasons:?}"
    );
    assert!(
        reasons.contains(&("Failed".into(), "Warning".into())),
        "events: {reasons:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_is_graceful_and_the_kubelet_removes_the_pod() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "polite"},
        "spec": {"terminationGracePeriodSeconds": 30,
            "containers": [{"name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c", "trap 'echo got TERM; exit 0' TERM; echo up; while true; do sleep 0.2; done"]}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    common::wait_for(&pods, "polite", "pod Ready", common::pod_ready()).await;
    common::wait_for_log(&pods, "polite", &LogParams::default(), "up").await;
    let pids = cluster.sandbox_pids();
    assert_eq!(pids.len(), 1);
    let started = std::time::Instant::now();
    pods.delete("polite", &Default::default()).await.unwrap();
    common::wait_deleted(&pods, "polite", "pod removed").await;
    // Handled SIGTERM: gone well within the 30 s grace period.
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    assert!(
        !common::alive(pids[0]),
        "sandbox {} survived the pod",
        pids[0]
    );
    cluster.shutdown().await;
}

fn container_status(p: &Pod) -> Option<k8s_openapi::api::core::v1::ContainerStatus> {
    p.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashing_container_goes_into_crash_loop_back_off() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "crasher"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c", "echo crashing; exit 7"]}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let looping = common::wait_for(
        &pods,
        "crasher",
        "CrashLoopBackOff after restarts",
        |p: Option<&Pod>| {
            p.and_then(container_status).is_some_and(|c| {
                c.restart_count >= 2
                    && c.state
                        .as_ref()
                        .and_then(|s| s.waiting.as_ref())
                        .and_then(|w| w.reason.as_deref())
                        == Some("CrashLoopBackOff")
            })
        },
    )
    .await;
    let c = container_status(&looping).unwrap();
    let last = c.last_state.unwrap().terminated.unwrap();
    assert_eq!((last.exit_code, last.reason.as_deref()), (7, Some("Error")));
    assert!(!c.ready);
    assert_eq!(looping.status.unwrap().phase.as_deref(), Some("Running"));
    let previous = pods
        .logs(
            "crasher",
            &LogParams {
                previous: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(previous, "crashing\n");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_liveness_probe_restarts_the_container() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    // Listens on its pod IP for a while, then stops listening but keeps running: only the
    // tcpSocket liveness probe can tell.
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "zombie"},
        "spec": {"terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c", "timeout 2 httpd -f -p $(POD_IP):7000 -h /tmp; echo stopped listening; exec sleep 3600"],
            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "livenessProbe": {"tcpSocket": {"port": 7000}, "periodSeconds": 1, "failureThreshold": 2},
            "startupProbe": {"tcpSocket": {"port": 7000}, "periodSeconds": 1, "failureThreshold": 30}}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let started = common::wait_for(&pods, "zombie", "started", |p: Option<&Pod>| {
        p.and_then(container_status)
            .is_some_and(|c| c.started == Some(true))
    })
    .await;
    let first_id = container_status(&started).unwrap().container_id.unwrap();
    let restarted = common::wait_for(
        &pods,
        "zombie",
        "restarted by liveness",
        |p: Option<&Pod>| {
            p.and_then(container_status)
                .is_some_and(|c| c.restart_count >= 1)
        },
    )
    .await;
    let c = container_status(&restarted).unwrap();
    assert_ne!(c.container_id.as_deref(), Some(first_id.as_str()));
    assert_eq!(
        c.last_state
            .unwrap()
            .terminated
            .unwrap()
            .container_id
            .as_deref(),
        Some(first_id.as_str())
    );
    let previous = pods
        .logs(
            "zombie",
            &LogParams {
                previous: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(previous.contains("stopped listening"), "{previous:?}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_streams_until_the_container_ends() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "ticker"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c", "for i in 1 2 3 4 5; do echo tick $i; sleep 0.2; done"]}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    common::wait_for_log(&pods, "ticker", &LogParams::default(), "tick 1").await;
    let params = LogParams {
        follow: true,
        ..Default::default()
    };
    let stream = pods.log_stream("ticker", &params).await.unwrap();
    let text = tokio::time::timeout(common::WAIT, async move {
        use futures::AsyncReadExt;
        let mut text = String::new();
        let mut stream = stream;
        stream.read_to_string(&mut text).await.map(|_| text)
    })
    .await
    .expect("the followed log ends when the container ends")
    .unwrap();
    assert_eq!(text, "tick 1\ntick 2\ntick 3\ntick 4\ntick 5\n");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_init_container_fails_a_never_restarting_pod_without_starting_the_rest() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "badinit"},
        "spec": {"restartPolicy": "Never",
            "initContainers": [
                {"name": "ok", "image": "busybox:1.36", "command": ["true"]},
                {"name": "broken", "image": "busybox:1.36", "command": ["sh", "-c", "echo no; exit 4"]}
            ],
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let failed = common::wait_for(&pods, "badinit", "pod Failed", |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref()?.phase.clone()).as_deref() == Some("Failed")
    })
    .await;
    let status = failed.status.unwrap();
    let inits = status.init_container_statuses.unwrap();
    let exit = |i: usize| {
        inits[i]
            .state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap()
            .exit_code
    };
    assert_eq!((exit(0), exit(1)), (0, 4));
    let main = &status.container_statuses.unwrap()[0];
    assert_eq!(
        main.container_id, None,
        "main started after a failed init container"
    );
    assert_eq!(main.restart_count, 0);
    let initialized = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Initialized")
        .unwrap();
    assert_eq!(initialized.status, "False");
    assert!(cluster.sandbox_pids().is_empty());
    let log = pods
        .logs(
            "badinit",
            &LogParams {
                container: Some("broken".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(log, "no\n");
    cluster.shutdown().await;
}

/// A real kubelet publishes app container statuses sorted by name (init containers in spec
/// order): an operator that reads the game's status by position would look right only on a
/// node that kept spec order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_statuses_are_sorted_by_name_as_a_real_kubelet_publishes_them() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "order"},
        "spec": {"restartPolicy": "Never",
            "initContainers": [
                {"name": "zz-first", "image": "busybox:1.36", "command": ["true"]},
                {"name": "aa-second", "image": "busybox:1.36", "command": ["true"]}
            ],
            "containers": [
                {"name": "game", "image": "busybox:1.36", "command": ["sleep", "3600"]},
                {"name": "agent", "image": "busybox:1.36", "command": ["sleep", "3600"]},
                {"name": "sidecar", "image": "busybox:1.36", "command": ["sleep", "3600"]}
            ]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let ready = common::wait_for(&pods, "order", "pod Ready", common::pod_ready()).await;
    let status = ready.status.unwrap();
    let names = |s: Option<Vec<k8s_openapi::api::core::v1::ContainerStatus>>| -> Vec<String> {
        s.unwrap().into_iter().map(|c| c.name).collect()
    };
    assert_eq!(
        names(status.container_statuses),
        vec!["agent", "game", "sidecar"]
    );
    assert_eq!(
        names(status.init_container_statuses),
        vec!["zz-first", "aa-second"]
    );
    pods.delete("order", &Default::default()).await.unwrap();
    common::wait_deleted(&pods, "order", "pod deleted").await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_container_stays_down_in_back_off_until_let_up() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "held"},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [
                {"name": "agent", "image": "busybox:1.36", "command": ["sleep", "3600"]},
                {"name": "game", "image": "busybox:1.36", "command": ["sleep", "3600"]}
            ]
        }
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let status_of = |p: &Pod, name: &str| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.name == name).cloned())
    };
    let running = |name: &'static str, restarts: i32| {
        move |p: Option<&Pod>| {
            p.and_then(|p| {
                p.status
                    .as_ref()?
                    .container_statuses
                    .as_ref()?
                    .iter()
                    .find(|c| c.name == name)
                    .cloned()
            })
            .is_some_and(|c| {
                c.restart_count == restarts && c.state.as_ref().is_some_and(|s| s.running.is_some())
            })
        }
    };
    let before = common::wait_for(&pods, "held", "agent running", running("agent", 0)).await;
    let game_before = status_of(&before, "game").unwrap().container_id;

    cluster
        .hold_container("default", "held", "agent", true)
        .await
        .unwrap();
    let down = common::wait_for(
        &pods,
        "held",
        "agent held in back-off",
        |p: Option<&Pod>| {
            p.and_then(|p| {
                p.status
                    .as_ref()?
                    .container_statuses
                    .as_ref()?
                    .iter()
                    .find(|c| c.name == "agent")
                    .cloned()
            })
            .is_some_and(|c| {
                c.state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.as_deref())
                    == Some("CrashLoopBackOff")
            })
        },
    )
    .await;
    let agent = status_of(&down, "agent").unwrap();
    assert_eq!(agent.restart_count, 0, "held, not restarted");
    assert!(
        agent
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.message.as_deref())
            .is_some_and(|m| m.contains("held down")),
        "{agent:?}"
    );
    assert!(agent.last_state.and_then(|s| s.terminated).is_some());
    // The other container is untouched.
    assert_eq!(status_of(&down, "game").unwrap().container_id, game_before);

    cluster
        .hold_container("default", "held", "agent", false)
        .await
        .unwrap();
    let up = common::wait_for(&pods, "held", "agent running again", running("agent", 1)).await;
    assert_ne!(
        status_of(&up, "agent").unwrap().container_id,
        status_of(&before, "agent").unwrap().container_id
    );
    assert_eq!(status_of(&up, "game").unwrap().container_id, game_before);
    let missing = cluster
        .hold_container("default", "held", "nope", true)
        .await;
    assert!(missing.is_err(), "{missing:?}");
    cluster.shutdown().await;
}
