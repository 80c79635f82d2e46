//! Issue 13, defects 2 and 10: the workspace's images are built here, pushed to a real OCI
//! registry (Debian's `docker-registry`), and pulled and run **by manifest digest** with podman.
//!
//! At e184aa6 the Dockerfiles started from base images that cannot be pulled here, so the
//! images had never been built or run. Now `scripts/build-images.sh` (the script the workflow
//! runs) assembles a root filesystem from the workspace's own binaries and builds the
//! Dockerfiles FROM scratch. This test runs that script as the workflow does
//! (`--start-registry`: the registry image built from Debian's `docker-registry`, run as a
//! container published on 127.0.0.1, every image pushed there), with podman instead of docker;
//! checks that the harness's registry client reads the same manifest digest as skopeo (and that
//! it is not the image id), then pulls by that digest and runs: the operator with
//! `--network none` (entrypoint, user), the fixture game on the host's loopback where the
//! project's own Minecraft probe joins it. An image pinned by its image id fails to pull, as on
//! a Kind node.
//!
//! With `CI=true` a missing podman, docker-registry or skopeo fails the test; elsewhere the
//! test says what is missing and passes without running.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use rehearsal::probe::minecraft::{self, Depth};
use rehearsal::registry;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The tools this test needs; `false` (skip) only outside CI.
fn tools_present() -> bool {
    let missing: Vec<&str> = ["podman", "docker-registry", "skopeo"]
        .into_iter()
        .filter(|p| rehearsal::process::find_program(p).is_err())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!(
        "{} not installed: run scripts/setup.sh --tests",
        missing.join(", ")
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{msg} (CI=true: this test must run)");
    }
    eprintln!("SKIPPED: {msg}");
    false
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn checked(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Removes the containers and the registry-named images this test made, also on panic.
#[derive(Default)]
struct Cleanup {
    containers: Vec<String>,
    images: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = run("podman", &["rm", "-f", "-v", c]);
        }
        for i in &self.images {
            let _ = run("podman", &["rmi", "-f", i]);
        }
    }
}

fn skopeo_digest(reference: &str) -> String {
    checked(
        "skopeo",
        &[
            "inspect",
            "--tls-verify=false",
            "--format",
            "{{.Digest}}",
            &format!("docker://{reference}"),
        ],
    )
}

fn config_of(reference: &str) -> serde_json::Value {
    serde_json::from_str(&checked(
        "podman",
        &[
            "image",
            "inspect",
            "--format",
            "{{json .Config}}",
            reference,
        ],
    ))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one scenario: build, push, pull and run share the registry and read in order"
)]
async fn images_built_here_are_pulled_and_run_by_their_registry_manifest_digest() {
    if !tools_present() {
        return;
    }
    let game_bin = rehearsal_embedded::locate_workspace_binary("fixture-game")
        .expect("the fixture-game binary is not built: cargo build -p fixture-game");
    let bin_dir = game_bin.parent().unwrap().to_path_buf();
    assert!(
        bin_dir.join("reference-operator").is_file(),
        "reference-operator is not built next to {}: cargo build --workspace --bins",
        game_bin.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let registry_name = format!("rh-registry-{}", std::process::id());
    let mut cleanup = Cleanup {
        containers: vec![registry_name.clone()],
        images: Vec::new(),
    };

    // The workflow's own step, with podman: build, start the registry container, push.
    let out = Command::new(workspace().join("scripts/build-images.sh"))
        .args(["--engine", "podman", "--registry-name", &registry_name])
        .args(["--start-registry", &port.to_string()])
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg("--work")
        .arg(dir.path().join("work"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "build-images.sh: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l == format!("registry {registry_name} {addr}")),
        "{stdout}"
    );
    let pushed: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with(&format!("{addr}/")))
        .map(str::to_string)
        .collect();
    cleanup.images.extend(pushed.iter().cloned());
    // Every image the cases use on Kind was pushed, under its rehearsal.local name's path.
    for image in rehearsal::deploy::images::for_cases() {
        let remote = format!("{addr}/{}", image.strip_prefix("rehearsal.local/").unwrap());
        assert!(pushed.contains(&remote), "{remote} not pushed: {stdout}");
    }

    // The harness reads the digest skopeo reads, and it is not the image id.
    let mut digests = std::collections::BTreeMap::new();
    for remote in &pushed {
        let local = format!(
            "rehearsal.local/{}",
            remote.strip_prefix(&format!("{addr}/")).unwrap()
        );
        let ours = registry::image_digest(&addr, &local)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{local} not in the registry"));
        assert_eq!(ours, skopeo_digest(remote), "{remote}");
        let id = checked(
            "podman",
            &["image", "inspect", "--format", "{{.Id}}", remote],
        );
        assert_ne!(ours, format!("sha256:{id}"), "{remote}");
        digests.insert(local, (ours, id));
    }
    // Only the registry holds them from here on: every pull below is a real pull.
    for remote in &pushed {
        checked("podman", &["rmi", "-f", remote]);
    }

    // The operator: pulled by digest, run without a network; entrypoint and user as built.
    let (op_digest, _) = &digests["rehearsal.local/reference-operator:dev"];
    let op = format!("{addr}/reference-operator@{op_digest}");
    cleanup.images.push(op.clone());
    let help = checked(
        "podman",
        &[
            "run",
            "--rm",
            "--network",
            "none",
            "--tls-verify=false",
            &op,
            "--help",
        ],
    );
    assert!(help.contains("Usage"), "{help}");
    let config = config_of(&op);
    assert_eq!(config["User"], "65532:65532", "{config}");
    assert_eq!(
        config["Entrypoint"],
        serde_json::json!(["/usr/local/bin/reference-operator"]),
        "{config}"
    );

    // Pinned by the image id instead: the registry has no such manifest, the pull fails.
    let (game_digest, game_id) = &digests["rehearsal.local/fixture-game:1.0"];
    let wrong = run(
        "podman",
        &[
            "pull",
            "--tls-verify=false",
            &format!("{addr}/fixture-game@sha256:{game_id}"),
        ],
    );
    assert!(!wrong.status.success(), "a pull by the image id succeeded");

    // The fixture game by digest: a real Minecraft join (status, login, play) on its port.
    // Host networking: with --network none nothing could reach the port.
    let game = format!("{addr}/fixture-game@{game_digest}");
    cleanup.images.push(game.clone());
    let config = config_of_after_pull(&game);
    assert_eq!(
        config["Entrypoint"],
        serde_json::json!(["/usr/local/bin/fixture-game"])
    );
    assert_eq!(config["Cmd"], serde_json::json!(["serve"]));
    assert_eq!(config["User"], "0:0", "{config}");
    let name = format!("rh-image-test-{}", std::process::id());
    let (game_port, rcon) = (free_port(), free_port());
    cleanup.containers.push(name.clone());
    checked(
        "podman",
        &[
            "run",
            "-d",
            "--name",
            &name,
            "--network",
            "host",
            "--tls-verify=false",
            "-e",
            "RCON_PASSWORD=test-only",
            "-e",
            &format!("FIXTURE_GAME_PORT={game_port}"),
            "-e",
            &format!("FIXTURE_RCON_PORT={rcon}"),
            &game,
        ],
    );
    let target = std::net::SocketAddr::from(([127, 0, 0, 1], game_port));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    // Paced polling of the observable condition (the port answering a join), bounded.
    let mut pace = tokio::time::interval(Duration::from_millis(100));
    let verdict = loop {
        pace.tick().await;
        let verdict = minecraft::probe(target, Depth::Play, Duration::from_secs(5)).await;
        if verdict.ok || tokio::time::Instant::now() > deadline {
            break verdict;
        }
        // Not listening yet: the container must still be running for a next attempt.
        let state = checked(
            "podman",
            &["inspect", "--format", "{{.State.Status}}", &name],
        );
        assert_eq!(
            state,
            "running",
            "the game container stopped: {}",
            String::from_utf8_lossy(&run("podman", &["logs", &name]).stderr)
        );
    };
    assert!(verdict.ok, "{}", verdict.line());
    // The process runs as the image's user, its entrypoint with the image's CMD.
    let top = checked("podman", &["top", &name, "user", "args"]);
    assert!(
        top.lines()
            .any(|l| l.starts_with("root") && l.contains("/usr/local/bin/fixture-game serve")),
        "{top}"
    );
    let outcome = verdict.outcome.unwrap();
    assert_eq!(outcome.protocol, minecraft::PROTOCOL_26_1, "{outcome:?}");

    drop(cleanup);
}

/// `podman image inspect` of a reference, pulling it first (by digest).
fn config_of_after_pull(reference: &str) -> serde_json::Value {
    checked("podman", &["pull", "-q", "--tls-verify=false", reference]);
    config_of(reference)
}

/// Issue 13: the workflow built, tagged and pushed Gameplane's images with inline docker lines.
/// `scripts/build-gameplane-images.sh` now does it; here it runs with podman against a stand-in
/// Gameplane checkout (three FROM-scratch Dockerfiles, each copying a file from the checkout's
/// root, so a wrong build context fails) and a real `docker-registry`, and the registry must
/// hold each component under the name the chart values give it, with a distinct manifest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gameplane_images_are_built_from_its_checkout_and_pushed_under_the_chart_names() {
    if !tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("gameplane");
    let components = ["operator", "agent", "api"];
    for component in components {
        std::fs::create_dir_all(src.join(component)).unwrap();
        std::fs::write(src.join(component).join("marker"), component).unwrap();
        std::fs::write(
            src.join(component).join("Dockerfile"),
            format!(
                "FROM scratch\nARG VERSION\nLABEL org.opencontainers.image.version=$VERSION\nCOPY {component}/marker /{component}\n"
            ),
        )
        .unwrap();
    }
    let reg = registry::LocalRegistry::start(
        &dir.path().join("registry"),
        &rehearsal::process::ProcessLog::default(),
    )
    .await
    .expect("docker-registry starts");
    let addr = reg.addr().to_string();
    let tag = format!("rehearsal-{}", uuid::Uuid::new_v4().simple());
    let mut cleanup = Cleanup::default();
    for component in components {
        cleanup
            .images
            .push(format!("gameplane-test/{component}:{tag}"));
        cleanup
            .images
            .push(format!("{addr}/gameplane-test/{component}:{tag}"));
    }
    let script = workspace().join("scripts/build-gameplane-images.sh");
    let out = run(
        script.to_str().unwrap(),
        &[
            "--engine",
            "podman",
            "--src",
            src.to_str().unwrap(),
            "--tag",
            &tag,
            "--push",
            &addr,
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stdout}{stderr}");
    let expected: Vec<String> = components
        .iter()
        .map(|c| format!("{addr}/gameplane-test/{c}:{tag}"))
        .collect();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected, "{stderr}");
    let mut digests = Vec::new();
    for component in components {
        // The name the node pulls: rehearsal.local/gameplane-test/<component>:<tag>.
        let image = format!(
            "{}/gameplane-test/{component}:{tag}",
            registry::MIRRORED_HOST
        );
        let digest = registry::image_digest(&addr, &image)
            .await
            .expect("the registry answers")
            .unwrap_or_else(|| panic!("{image} was not pushed to {addr}"));
        assert!(digest.starts_with("sha256:"), "{digest}");
        digests.push(digest);
    }
    digests.sort();
    digests.dedup();
    assert_eq!(digests.len(), 3, "each component is its own image");
    // The tag is also the VERSION build argument, as Gameplane's e2e passes it.
    let config = config_of(&format!("gameplane-test/{}:{tag}", components[0]));
    assert_eq!(
        config["Labels"]["org.opencontainers.image.version"], tag,
        "{config}"
    );

    // A checkout without a component's Dockerfile is refused in one line naming it.
    std::fs::remove_file(src.join("api").join("Dockerfile")).unwrap();
    let out = run(
        script.to_str().unwrap(),
        &[
            "--engine",
            "podman",
            "--src",
            src.to_str().unwrap(),
            "--tag",
            &tag,
            "--push",
            &addr,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("api/Dockerfile not found") && stderr.trim().lines().count() == 1,
        "{stderr}"
    );
    reg.stop().await;
}
