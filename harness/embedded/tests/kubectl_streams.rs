//! Real `kubectl` 1.37 `exec` and `attach` (WebSocket, v5.channel.k8s.io) against pods on the
//! embedded node: output, exit code, stdin with `-i`, the errors kubectl prints, and `cp` both
//! ways (it rides on exec and the container's tar).

mod common;

use common::{kubectl, kubectl_binary, rehearsal_apiserver_context};

use std::process::Stdio;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use rehearsal_embedded::EmbeddedCluster;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

async fn shell_pod(cluster: &EmbeddedCluster, name: &str) {
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 2,
            "containers": [{"name": "main", "image": "busybox:1.36",
                "command": ["sh", "-c", "echo inside > /tmp/marker && exec sleep 3600"],
                "readinessProbe": {"exec": {"command": ["test", "-e", "/tmp/marker"]}, "periodSeconds": 1}}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    common::wait_for(&pods, name, "pod Ready", common::pod_ready()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_prints_output_and_returns_the_exit_code() {
    let cluster = common::start().await;
    shell_pod(&cluster, "sh").await;
    let ran = kubectl(
        &cluster,
        &[
            "exec",
            "sh",
            "--",
            "sh",
            "-c",
            "cat /tmp/marker; echo to-stderr >&2; exit 7",
        ],
        None,
    )
    .await;
    assert_eq!(ran.code, 7, "{ran:?}");
    assert_eq!(ran.stdout, "inside\n", "{ran:?}");
    assert!(
        ran.stderr.starts_with("to-stderr\n")
            && ran.stderr.contains("command terminated with exit code 7"),
        "{ran:?}"
    );

    let ok = kubectl(&cluster, &["exec", "sh", "-c", "main", "--", "true"], None).await;
    assert_eq!(
        (ok.code, ok.stdout.as_str(), ok.stderr.as_str()),
        (0, "", ""),
        "{ok:?}"
    );

    // kubectl checks the container against the pod it read first (client side).
    let bad = kubectl(&cluster, &["exec", "sh", "-c", "nope", "--", "true"], None).await;
    assert_eq!(bad.code, 1, "{bad:?}");
    assert_eq!(
        bad.stderr.trim_end(),
        "error: container nope is not valid for pod sh out of: main",
        "{bad:?}"
    );

    let missing = kubectl(&cluster, &["exec", "ghost", "--", "true"], None).await;
    assert_eq!(missing.code, 1, "{missing:?}");
    assert_eq!(
        missing.stderr.trim_end(),
        "Error from server (NotFound): pods \"ghost\" not found",
        "{missing:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_i_feeds_stdin_to_the_command() {
    let cluster = common::start().await;
    shell_pod(&cluster, "cat").await;
    let ran = kubectl(
        &cluster,
        &[
            "exec",
            "-i",
            "cat",
            "--",
            "sh",
            "-c",
            "tr a-z A-Z; echo end",
        ],
        Some(b"piped through\nkubectl\n"),
    )
    .await;
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(ran.stdout, "PIPED THROUGH\nKUBECTL\nend\n", "{ran:?}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_attach_streams_the_container_output_until_it_ends() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    // Echoes each line written to its FIFO (held open read-write, so a writer's close is
    // never an end of file); "end" ends it.
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "talker"},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "main", "image": "busybox:1.36",
                "command": ["sh", "-c", "mkfifo /tmp/go && exec 3<>/tmp/go && while read line <&3; do echo attached-$line; [ \"$line\" = end ] && exit 0; done"],
                "readinessProbe": {"exec": {"command": ["test", "-p", "/tmp/go"]}, "periodSeconds": 1}}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    common::wait_for(
        &pods,
        "talker",
        "pod Ready (its FIFO exists)",
        common::pod_ready(),
    )
    .await;
    let home = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(kubectl_binary())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .args(["--context", rehearsal_apiserver_context()])
        .args(["attach", "talker", "-c", "main"])
        .env_remove("KUBECONFIG")
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl runs");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // Lines written before kubectl is attached are not shown to it (as on any cluster):
    // write until one shows, each wait bounded, the whole bounded by WAIT.
    let attached = tokio::time::timeout(common::WAIT, async {
        loop {
            let wrote = kubectl(
                &cluster,
                &["exec", "talker", "--", "sh", "-c", "echo ping > /tmp/go"],
                None,
            )
            .await;
            assert_eq!(wrote.code, 0, "{wrote:?}");
            if let Ok(line) =
                tokio::time::timeout(std::time::Duration::from_millis(500), lines.next_line()).await
            {
                return line.unwrap();
            }
        }
    })
    .await
    .expect("kubectl attach shows what the container writes");
    assert_eq!(attached.as_deref(), Some("attached-ping"));
    let ended = kubectl(
        &cluster,
        &["exec", "talker", "--", "sh", "-c", "echo end > /tmp/go"],
        None,
    )
    .await;
    // The container ends on "end", and its end kills what still runs in its PID namespace:
    // the writer may be caught before it exits (137), as in any container.
    assert!(matches!(ended.code, 0 | 137), "{ended:?}");
    let mut rest = Vec::new();
    while let Some(line) = tokio::time::timeout(common::WAIT, lines.next_line())
        .await
        .expect("kubectl attach ends when the container does")
        .unwrap()
    {
        rest.push(line);
    }
    assert_eq!(
        rest.last().map(String::as_str),
        Some("attached-end"),
        "{rest:?}"
    );
    let status = tokio::time::timeout(common::WAIT, child.wait())
        .await
        .expect("kubectl attach exits")
        .unwrap();
    assert!(status.success(), "kubectl attach exited {status}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_cp_copies_files_both_ways_through_exec_and_tar() {
    let cluster = common::start().await;
    shell_pod(&cluster, "files").await;
    let local = tempfile::tempdir().unwrap();
    // Into the pod: a file whose bytes must arrive unchanged (binary, not only text).
    let payload: Vec<u8> = (0..=255u8).cycle().take(64 * 1024 + 7).collect();
    let up = local.path().join("up.bin");
    std::fs::write(&up, &payload).unwrap();
    let sent = kubectl(
        &cluster,
        &[
            "cp",
            up.to_str().unwrap(),
            "files:/tmp/up.bin",
            "-c",
            "main",
        ],
        None,
    )
    .await;
    assert_eq!(sent.code, 0, "kubectl cp into the pod: {sent:?}");
    let size = kubectl(
        &cluster,
        &["exec", "files", "--", "sh", "-c", "wc -c < /tmp/up.bin"],
        None,
    )
    .await;
    assert_eq!(size.stdout.trim(), payload.len().to_string(), "{size:?}");

    // Out of the pod: the file copied in, and one the container wrote itself.
    let back = local.path().join("back.bin");
    let got = kubectl(
        &cluster,
        &["cp", "files:/tmp/up.bin", back.to_str().unwrap()],
        None,
    )
    .await;
    assert_eq!(got.code, 0, "kubectl cp out of the pod: {got:?}");
    assert!(
        std::fs::read(&back).unwrap() == payload,
        "the round trip changed the bytes"
    );
    let marker = local.path().join("marker");
    let got = kubectl(
        &cluster,
        &["cp", "files:/tmp/marker", marker.to_str().unwrap()],
        None,
    )
    .await;
    assert_eq!(got.code, 0, "{got:?}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "inside\n");

    // A path that does not exist in the pod: nothing is written. kubectl 1.37 may show the
    // container's tar error (on its stdout, where it sends the exec's stderr) — but it stops
    // reading once its untar sees the end of the (empty) archive, so whether the error text
    // arrives first, and the exit code, race as on any cluster. What it shows, if anything,
    // is tar's error.
    let missing = kubectl(
        &cluster,
        &[
            "cp",
            "files:/tmp/no-such-file",
            local.path().join("x").to_str().unwrap(),
        ],
        None,
    )
    .await;
    let shown = format!("{}{}", missing.stdout, missing.stderr);
    assert!(
        shown.trim().is_empty() || shown.contains("/tmp/no-such-file"),
        "{missing:?}"
    );
    assert!(!local.path().join("x").exists(), "{missing:?}");
    cluster.shutdown().await;
}
