//! `kill -9` of a process running an embedded cluster: the next start leaves no sandbox of
//! the dead run alive and removes its temporary state.
//!
//! The test re-executes its own binary (filtered to this test, with an environment variable
//! set) as the process to kill: that child starts a cluster with a long-running pod, prints
//! its state directory and sandbox PIDs, and waits to be killed.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

const CHILD_ENV: &str = "REHEARSAL_EMBEDDED_CRASH_CHILD";
const TEST_NAME: &str = "kill_9_of_the_cluster_process_leaves_no_sandbox_after_the_next_start";

/// Kills the child on every exit path of the test, also on panic.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Dead or a zombie (an orphan whose reaper has not collected it yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Live (non-zombie) processes whose command line carries `state_dir` as the sandbox marker:
/// the outer `bwrap`, its PID-namespace init (same command line) of every sandbox.
fn marked_processes(state_dir: &std::path::Path) -> Vec<u32> {
    let needle = state_dir.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| !gone(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == needle))
        })
        .collect()
}

async fn run_child() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "long"},
        "spec": {"containers": [
            {"name": "a", "image": "busybox:1.36", "command": ["sleep", "3600"]},
            {"name": "b", "image": "busybox:1.36", "command": ["sh", "-c", "exec sleep 3600"]}
        ]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    common::wait_for(&pods, "long", "pod Ready", common::pod_ready()).await;
    let pids: Vec<String> = cluster.sandbox_pids().iter().map(u32::to_string).collect();
    println!(
        "\nREADY {} {}",
        cluster.state_dir().display(),
        pids.join(",")
    );
    // Wait to be killed; never returns normally.
    std::future::pending::<()>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_cluster_process_leaves_no_sandbox_after_the_next_start() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return run_child().await;
    }
    let exe = std::env::current_exe().unwrap();
    let child = Command::new(exe)
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("re-execute the test binary");
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints "test NAME ... " before the child's own output on that line.
            if let Some((_, report)) = line.split_once("READY ") {
                let _ = tx.send(report.to_string());
                return;
            }
        }
    });
    let line = rx
        .recv_timeout(common::WAIT)
        .expect("the child cluster reports READY with its sandboxes");
    let mut parts = line.split_whitespace();
    let state_dir = std::path::PathBuf::from(parts.next().unwrap());
    let pids: Vec<u32> = parts
        .next()
        .unwrap_or_default()
        .split(',')
        .filter_map(|p| p.parse().ok())
        .collect();
    assert_eq!(pids.len(), 2, "two containers, two sandboxes: {line}");
    // A container reported running may still have `bwrap` setting its namespace init up.
    let settle = std::time::Instant::now() + common::WAIT;
    let mut marked_before = marked_processes(&state_dir);
    while marked_before.len() < 4 && std::time::Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(20)).await;
        marked_before = marked_processes(&state_dir);
    }
    assert!(
        marked_before.len() >= 4,
        "each sandbox is an outer bwrap and a namespace init: {marked_before:?}"
    );
    for pid in &pids {
        assert!(!gone(*pid), "sandbox {pid} is not running before the kill");
        assert!(state_dir.join("sandboxes").join(pid.to_string()).exists());
    }

    // kill -9 the process running the cluster.
    child.0.kill().unwrap();
    child.0.wait().unwrap();

    // A new start cleans up what the dead run left.
    let cluster = common::start().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !marked_processes(&state_dir).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let survivors = marked_processes(&state_dir);
    assert!(
        survivors.is_empty(),
        "sandbox processes of the killed run survive: {survivors:?} (before the kill: {marked_before:?})"
    );
    assert!(
        !state_dir.exists(),
        "the killed run's temporary state {} was not removed",
        state_dir.display()
    );
    cluster.shutdown().await;
}
