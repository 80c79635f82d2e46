//! Termination messages through kube-rs: the kubelet reads each container's
//! `terminationMessagePath` when it exits (its last bytes, within the pod's shared budget),
//! falls back to the log's tail under `FallbackToLogsOnError` when a failed container left the
//! file empty, and keeps the message in `lastState` across a restart.

mod common;

use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

fn terminated(pod: &Pod, container: &str) -> ContainerStateTerminated {
    let status = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| c.name == container))
        .unwrap_or_else(|| panic!("no status for container {container}: {pod:?}"));
    status
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .unwrap_or_else(|| panic!("{container} is not terminated: {status:?}"))
}

fn phase_is(phase: &'static str) -> impl kube::runtime::wait::Condition<Pod> {
    move |pod: Option<&Pod>| {
        pod.and_then(|p| p.status.as_ref())
            .and_then(|s| s.phase.as_deref())
            == Some(phase)
    }
}

/// Four containers share the pod's 12 KiB, so each may report at most 3072 bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exited_containers_report_their_file_or_log_tail() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "messages"},
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": "file", "image": "busybox:1.36",
                "command": ["sh", "-c", "echo not-the-message; printf 'snapshot 1a2b3c saved' > /dev/termination-log"]},
            {"name": "fallback", "image": "busybox:1.36", "terminationMessagePolicy": "FallbackToLogsOnError",
                "command": ["sh", "-c", "i=0; while [ $i -lt 100 ]; do echo log line $i; i=$((i+1)); done; echo failing >&2; exit 2"]},
            {"name": "quiet", "image": "busybox:1.36", "terminationMessagePolicy": "FallbackToLogsOnError",
                "command": ["sh", "-c", "echo succeeded without a message"]},
            {"name": "big", "image": "busybox:1.36", "terminationMessagePath": "/tmp/result",
                "command": ["sh", "-c", "i=0; while [ $i -lt 500 ]; do printf '%09d\\n' $i; i=$((i+1)); done > /tmp/result"]}
        ]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let pod = common::wait_for(&pods, "messages", "pod Failed", phase_is("Failed")).await;

    let file = terminated(&pod, "file");
    assert_eq!(file.exit_code, 0);
    assert_eq!(file.message.as_deref(), Some("snapshot 1a2b3c saved"));

    let fallback = terminated(&pod, "fallback");
    assert_eq!(fallback.exit_code, 2);
    let expected: String = (21..100)
        .map(|i| format!("log line {i}\n"))
        .chain(std::iter::once("failing\n".to_string()))
        .collect();
    assert_eq!(
        fallback.message.as_deref(),
        Some(expected.as_str()),
        "the last 80 lines of the log"
    );

    let quiet = terminated(&pod, "quiet");
    assert_eq!(quiet.exit_code, 0);
    assert_eq!(quiet.message, None, "a success never reads the log");

    let big = terminated(&pod, "big");
    let written: String = (0..500).map(|i| format!("{i:09}\n")).collect();
    assert_eq!(
        big.message.as_deref(),
        Some(&written[written.len() - 3072..]),
        "the last 3072 bytes (12 KiB shared by four containers)"
    );
}

/// A restarted container's previous message stays in `lastState.terminated`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_container_keeps_its_last_message() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "crasher"},
        "spec": {"restartPolicy": "OnFailure", "containers": [
            {"name": "main", "image": "busybox:1.36",
                "command": ["sh", "-c", "if [ -e /data/ran ]; then exec sleep 3600; fi; touch /data/ran; echo -n first run failed > /dev/termination-log; exit 7"],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}
        ], "volumes": [{"name": "data", "emptyDir": {}}], "terminationGracePeriodSeconds": 1}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let restarted = |pod: Option<&Pod>| {
        pod.and_then(|p| p.status.as_ref())
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .is_some_and(|c| {
                c.restart_count >= 1 && c.state.as_ref().is_some_and(|s| s.running.is_some())
            })
    };
    let pod = common::wait_for(&pods, "crasher", "restarted and running", restarted).await;
    let status = &pod.status.unwrap().container_statuses.unwrap()[0];
    let last = status
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .unwrap_or_else(|| panic!("no lastState.terminated: {status:?}"));
    assert_eq!(last.exit_code, 7);
    assert_eq!(last.message.as_deref(), Some("first run failed"));
}
