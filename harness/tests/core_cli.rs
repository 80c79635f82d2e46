//! The `rehearse cluster` and `rehearse probe` commands, run as the real binary against real
//! servers: the fixture game (Minecraft 26.1) and the embedded cluster.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const REHEARSE: &str = env!("CARGO_BIN_EXE_rehearse");
const BOUND: Duration = Duration::from_secs(60);

fn fixture_game() -> PathBuf {
    rehearsal_embedded::locate_workspace_binary("fixture-game").expect(
        "the fixture-game binary is not built: run `cargo build -p fixture-game` (or set REHEARSAL_BIN_DIR)",
    )
}

type Lines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// Reads stdout lines of `child` until one contains `needle` (bounded); returns that line and
/// the reader (kept open so the child's later output has somewhere to go).
async fn line_containing(child: &mut Child, needle: &str) -> (String, Lines) {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let found = tokio::time::timeout(BOUND, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains(needle) {
                return Some(line);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(line)) => (line, lines),
        Ok(None) => panic!("stdout ended without a line containing {needle:?}"),
        Err(_) => panic!("no line containing {needle:?} within {BOUND:?}"),
    }
}

/// Starts `fixture-game serve` on ephemeral ports; returns the child and its game address.
async fn start_game(data: &std::path::Path, mode: &str) -> (Child, String, Lines) {
    let mut child = Command::new(fixture_game())
        .args(["serve", "--data-dir"])
        .arg(data)
        .args([
            "--bind",
            "127.0.0.1",
            "--game-port",
            "0",
            "--rcon-port",
            "0",
        ])
        .args(["--rcon-password", "test-only", "--mode", mode])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (line, lines) = line_containing(&mut child, "\"listening\"").await;
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    (child, v["game"].as_str().unwrap().to_string(), lines)
}

async fn rehearse(args: &[&str]) -> std::process::Output {
    Command::new(REHEARSE)
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn probe_minecraft_exits_zero_only_at_the_asked_depth() {
    let data = tempfile::tempdir().unwrap();
    let (_game, addr, _out) = start_game(data.path(), "normal").await;
    for depth in ["query", "login", "play"] {
        let out = rehearse(&["probe", "minecraft", "--addr", &addr, "--depth", depth]).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{depth}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.starts_with(&format!("VERDICT depth={depth} wanted={depth} ok=true")),
            "{stdout}"
        );
        assert!(stdout.contains("protocol=775"), "{stdout}");
    }
}

#[tokio::test]
async fn probe_minecraft_fails_against_an_http_only_candidate() {
    let data = tempfile::tempdir().unwrap();
    let (_game, addr, _out) = start_game(data.path(), "http-only").await;
    let out = rehearse(&[
        "probe",
        "minecraft",
        "--addr",
        &addr,
        "--depth",
        "play",
        "--timeout",
        "5s",
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("VERDICT depth=none wanted=play ok=false"),
        "{stdout}"
    );
}

#[tokio::test]
async fn probe_minecraft_names_the_stage_a_negative_candidate_stops_in() {
    for (mode, prefix, stage) in [
        (
            "refuse-login",
            "VERDICT depth=query wanted=play ok=false",
            "failed_in=login",
        ),
        (
            "stall-configuration",
            "VERDICT depth=login wanted=play ok=false",
            "failed_in=configuration",
        ),
    ] {
        let data = tempfile::tempdir().unwrap();
        let (_game, addr, _out) = start_game(data.path(), mode).await;
        let out = rehearse(&[
            "probe",
            "minecraft",
            "--addr",
            &addr,
            "--depth",
            "play",
            "--timeout",
            "3s",
        ])
        .await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{mode}: {stdout}");
        assert!(
            stdout.starts_with(prefix) && stdout.contains(stage) && stdout.contains("protocol=775"),
            "{mode}: {stdout}"
        );
    }
}

#[tokio::test]
async fn probe_minecraft_with_nothing_listening_and_bad_input() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = rehearse(&["probe", "minecraft", "--addr", &format!("127.0.0.1:{port}")]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains("ok=false") && stdout.contains("cannot connect"),
        "{stdout}"
    );

    let out = rehearse(&["probe", "minecraft", "--addr", "no-port-here"]).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("HOST:PORT") && stderr.lines().count() == 1,
        "{stderr}"
    );

    let out = rehearse(&[
        "probe",
        "minecraft",
        "--addr",
        "127.0.0.1:1",
        "--timeout",
        "ten",
    ])
    .await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn cluster_up_embedded_serves_until_sigterm_then_removes_its_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let state = dir.path().join("state");
    let mut child = Command::new(REHEARSE)
        .args([
            "cluster",
            "up",
            "--embedded",
            "--no-operator",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .arg("--state-dir")
        .arg(&state)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (line, mut rest) = line_containing(&mut child, "embedded cluster up").await;
    assert!(line.contains("context rehearsal-embedded"), "{line}");

    // kubectl 1.37 works against it with the written kubeconfig.
    let kubectl = rehearsal::process::kubectl_path().expect("kubectl 1.37 (REHEARSAL_KUBECTL)");
    let out = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--context",
            "rehearsal-embedded",
            "get",
            "crd",
            "-o",
            "name",
        ])
        .output()
        .await
        .unwrap();
    let crds = String::from_utf8_lossy(&out.stdout);
    assert!(
        crds.contains("gameservers.gameplane.local"),
        "{crds} {}",
        String::from_utf8_lossy(&out.stderr)
    );

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id().unwrap() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let last = rest.next_line().await.unwrap().unwrap_or_default();
    assert!(last.contains("embedded cluster stopped"), "{last}");
    assert!(
        !kubeconfig.exists(),
        "the kubeconfig of a stopped cluster must be removed"
    );
    assert!(state.exists(), "a named state directory is kept");
}

#[tokio::test]
async fn cluster_up_needs_a_backend_and_embedded_needs_a_kubeconfig() {
    let out = rehearse(&["cluster", "up"]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = rehearse(&["cluster", "up", "--embedded"]).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--kubeconfig PATH"), "{stderr}");
}

#[tokio::test]
async fn cluster_kind_without_kind_names_what_to_install_and_down_runs_kind_delete() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("kind");
    let out = Command::new(REHEARSE)
        .args(["cluster", "up", "--kind", "--state-dir"])
        .arg(dir.path().join("state"))
        .env("REHEARSAL_KIND", &missing)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("install kind") && stderr.trim().lines().count() == 1,
        "{stderr}"
    );

    // A recording `kind`: `cluster down` runs exactly `kind delete cluster` for the name.
    let log = dir.path().join("argv.log");
    std::fs::write(
        &missing,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&missing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(REHEARSE)
        .args([
            "cluster",
            "down",
            "--kind",
            "--name",
            "rh-test",
            "--state-dir",
        ])
        .arg(dir.path().join("state"))
        .env("REHEARSAL_KIND", &missing)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let argv = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        argv.trim(),
        format!(
            "delete cluster --name rh-test --kubeconfig {}",
            dir.path().join("state/kubeconfig").display()
        )
    );
}
