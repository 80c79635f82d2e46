//! The cases' restic repositories live on a REST server the backend runs, so the same
//! repository Secret (`repo: rest:http://HOST:PORT/<name>`, `password`) works for the reference
//! operator and for Gameplane, whose copy Job mounts no host path.
//!
//! Defect (issue 13, item 6): the repository was a hostPath on the node, which Gameplane's
//! backup Job never mounts. Here a pod with no volumes at all writes a snapshot into the
//! embedded backend's repository and reads it back, the repository is removed, the cluster's
//! path on the server goes with the backend, and the server ends with the process' last use.
//!
//! Issue 16: one server per process serves every embedded cluster the process starts (rclone's
//! start-up was the longest leg of an embedded cluster's start); two clusters on it keep
//! same-named repositories apart.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::PostParams;
use rehearsal::backend::Backend;
use rehearsal::backend::embedded::{Embedded, EmbeddedOptions};
use rehearsal::wait::{await_object, conditions};
use rehearsal_embedded::EmbeddedConfig;
use serde_json::json;

const BOUND: Duration = Duration::from_secs(60);

async fn cluster() -> Embedded {
    Embedded::up(EmbeddedOptions {
        cluster: EmbeddedConfig {
            shutdown_grace: Duration::from_secs(2),
            ..EmbeddedConfig::default()
        },
        ..Default::default()
    })
    .await
    .expect("embedded backend starts")
}

/// A restic pod with the repository URL and password from the environment and no volume.
fn restic_pod(name: &str, url: &str, script: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "restic", "image": "restic/restic:0.14.0",
                "command": ["/bin/sh", "-c", script],
                "env": [
                    {"name": "RESTIC_REPOSITORY", "value": url},
                    {"name": "RESTIC_PASSWORD", "value": "test-only"},
                    {"name": "RESTIC_CACHE_DIR", "value": "/tmp/restic-cache"},
                ]}]
        }
    }))
    .unwrap()
}

async fn run_pod(pods: &Api<Pod>, pod: Pod) -> String {
    let name = pod.metadata.name.clone().unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    await_object(pods, &name, conditions::pod_succeeded(), BOUND)
        .await
        .unwrap_or_else(|e| panic!("pod {name}: {e}"));
    pods.logs(&name, &Default::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_without_volumes_backs_up_into_the_backends_rest_repository() {
    let backend = cluster().await;
    let rest = backend.rest_server();
    let pid = rest.pid().expect("rclone runs");
    let root = rest.root().to_path_buf();
    assert!(rest.addr().ip().is_loopback(), "{}", rest.addr());

    let name = format!("rh-rest-{}", std::process::id());
    let url = backend.repository_url(&name).unwrap();
    assert_eq!(url, format!("{}/{name}", rest.base()));
    assert!(
        rest.base()
            .starts_with(&format!("rest:http://{}/", rest.gate().addr())),
        "{}",
        rest.base()
    );
    for bad in ["", "a/b", "..", "Upper"] {
        assert!(backend.repository_url(bad).is_err(), "{bad:?}");
    }

    let ns = "rest-repo";
    let namespaces: Api<Namespace> = Api::all(backend.client());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(backend.client(), ns);
    let out = run_pod(
        &pods,
        restic_pod(
            "write",
            &url,
            "set -e; mkdir -p /tmp/w; echo marker-r7 > /tmp/w/world; restic init; restic backup --json /tmp/w | grep '\"message_type\":\"summary\"'",
        ),
    )
    .await;
    assert!(out.contains("snapshot_id"), "{out}");
    // The repository is a directory of the server's root, not anything the pod mounted.
    assert!(root.join(&name).join("config").is_file(), "{out}");
    let out = run_pod(
        &pods,
        restic_pod("read", &url, "set -e; restic dump latest /tmp/w/world"),
    )
    .await;
    assert_eq!(out.trim(), "marker-r7");

    backend.remove_repository(&name).await.unwrap();
    assert!(!root.join(&name).exists());
    // Removing it again (a case cleaned up twice) is fine; a name that is a path is refused.
    backend.remove_repository(&name).await.unwrap();
    assert!(backend.remove_repository("../x").await.is_err());
    assert!(root.is_dir(), "the root of other repositories stays");

    // A repository the backend still has when it goes is no longer served (its path is
    // detached from the server) and goes with the cluster's state directory.
    backend.create_repository("rh-left").await.unwrap();
    let config = format!("{}/rh-left/config", path_of(&rest.base()));
    assert_eq!(http_status(rest.addr(), &config), 200, "{config}");
    let addr = rest.addr();
    Box::new(backend).teardown(false).await.unwrap();
    assert_eq!(http_status(addr, &config), 404, "{config} after teardown");
    assert!(!root.exists(), "{} outlived the backend", root.display());
    assert!(
        alive(pid),
        "the shared server serves the process' next cluster"
    );
    rehearsal::backend::rest_server::stop_shared().await;
    assert!(!alive(pid), "rclone {pid} outlived the process' last use");
}

/// Two clusters of one process share one rclone, each under its own path: a repository of the
/// same name in each is two repositories.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_of_one_process_share_the_server_and_keep_their_repositories_apart() {
    let (a, b) = tokio::join!(cluster(), cluster());
    let (ra, rb) = (a.rest_server(), b.rest_server());
    assert_eq!(ra.pid(), rb.pid(), "one server");
    assert_eq!(ra.addr(), rb.addr());
    assert_ne!(ra.base(), rb.base());
    assert_ne!(ra.root(), rb.root());
    for backend in [&a, &b] {
        backend.create_repository("rh-same").await.unwrap();
    }
    std::fs::write(ra.root().join("rh-same/locks/a-only"), b"a").unwrap();
    let lock = |base: &str| format!("{}/rh-same/locks/a-only", path_of(base));
    assert_eq!(http_status(ra.addr(), &lock(&ra.base())), 200);
    assert_eq!(http_status(rb.addr(), &lock(&rb.base())), 404);

    let pid = ra.pid().unwrap();
    Box::new(a).teardown(false).await.unwrap();
    // The other cluster's repositories are still served.
    let config = format!("{}/rh-same/config", path_of(&b.rest_server().base()));
    assert_eq!(http_status(b.rest_server().addr(), &config), 200);
    // A stop while a cluster still uses the server leaves it running for that cluster.
    rehearsal::backend::rest_server::stop_shared().await;
    assert!(alive(pid));
    assert_eq!(http_status(b.rest_server().addr(), &config), 200);
    Box::new(b).teardown(false).await.unwrap();
    assert!(!alive(pid), "rclone {pid} outlived its last cluster");
}

fn alive(pid: u32) -> bool {
    // A zombie (exited, not yet reaped) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'))
    })
}

/// The HTTP path of a repository base URL (`rest:http://ADDR/<tenant>` → `/<tenant>`).
fn path_of(base: &str) -> String {
    let rest = base.trim_start_matches("rest:http://");
    rest[rest.find('/').expect("a tenant path")..].to_string()
}

/// The status of `GET path` on the server (plain HTTP/1.0 over loopback).
fn http_status(addr: std::net::SocketAddr, path: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("the server listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    String::from_utf8_lossy(&response)
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {:?}", String::from_utf8_lossy(&response)))
}

/// Each case's repository starts as the template (`fixtures/restic-repository`): real restic
/// opens it with the cases' password (and a backup into it works), refuses a wrong password, and
/// writing the template over an existing repository leaves it alone.
#[test]
fn the_template_repository_opens_with_the_case_password_only() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("rh-template");
    rehearsal::backend::rest_server::write_template(&repo).unwrap();
    let restic = |password: &str, args: &[&str]| {
        std::process::Command::new("restic")
            .arg("-r")
            .arg(&repo)
            .args(args)
            .env("RESTIC_PASSWORD", password)
            .env("RESTIC_CACHE_DIR", dir.path().join("cache"))
            .output()
            .expect("restic runs (scripts/setup.sh installs it)")
    };
    let data = dir.path().join("world");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("level.dat"), b"marker-t1").unwrap();
    let out = restic(
        rehearsal::fixture::RESTIC_PASSWORD,
        &["backup", "--json", data.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wrong = restic("not-the-password", &["snapshots"]);
    assert!(!wrong.status.success());
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("wrong password"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
    rehearsal::backend::rest_server::write_template(&repo).unwrap();
    let out = restic(
        rehearsal::fixture::RESTIC_PASSWORD,
        &["snapshots", "--json"],
    );
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"short_id\""),
        "the existing snapshot survives: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
