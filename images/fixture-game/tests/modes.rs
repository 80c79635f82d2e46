//! The version modes: format refusal, format migration, compatible upgrade, HTTP-only, crash.

mod support;

use std::path::Path;
use std::time::Duration;

use fixture_game::client::{Depth, probe};
use fixture_game::inspect::Kind;
use fixture_game::rcon::RconClient;

const EXIT: Duration = Duration::from_secs(20);
const REFUSAL: &str = "world format 2 is newer than this server (format 1); restore a backup taken before the upgrade";

/// Start a version on `data`, then stop it over RCON (stop saves and exits 0).
async fn run_version(data: &Path, args: &[&str]) {
    let mut game = support::serve(data, args, &[]);
    let mut rcon = RconClient::connect(game.rcon, support::PASSWORD)
        .await
        .unwrap();
    rcon.command("stop").await.unwrap();
    let status = game.proc.wait_exit(EXIT);
    assert!(status.success(), "{args:?} stopped with {status:?}");
}

/// Run a version that must exit on its own; returns (exit code, stderr).
fn run_to_exit(data: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = support::serve_command(data, args, &[]);
    cmd.env("RCON_PASSWORD", support::PASSWORD);
    let mut proc = support::Proc::spawn(cmd);
    let status = proc.wait_exit(EXIT);
    (status.code(), proc.stderr())
}

#[tokio::test]
async fn format_version_migrates_and_older_versions_refuse_it() {
    let data = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    let extra_arg = format!("nether={}", extra.path().display());
    let world_args = [
        "--extra-world",
        &extra_arg,
        "--world-marker",
        "w-1",
        "--extra-marker",
        "x-1",
    ];
    run_version(
        data.path(),
        &[&world_args[..], &["--game-version", "1.0"]].concat(),
    )
    .await;
    let before = support::inspect(&[data.path(), extra.path()]);
    for report in &before {
        assert_eq!(
            (report.format, report.candidate_marker),
            (Some(1), false),
            "{report:?}"
        );
    }

    run_version(
        data.path(),
        &[
            &world_args[..],
            &["--game-version", "2.0", "--mode", "format"],
        ]
        .concat(),
    )
    .await;
    let after = support::inspect(&[data.path(), extra.path()]);
    for (report, marker) in after.iter().zip(["w-1", "x-1"]) {
        assert_eq!(report.kind, Kind::World);
        assert_eq!(report.format, Some(2), "{report:?}");
        assert!(report.candidate_marker, "{report:?}");
        assert!(!report.torn, "{report:?}");
        assert_eq!(
            report.marker.as_deref(),
            Some(marker),
            "values survive migration"
        );
        assert_eq!(report.written_by.as_deref(), Some("2.0"));
    }

    for mode in ["normal", "compat"] {
        let (code, stderr) = run_to_exit(
            data.path(),
            &[&world_args[..], &["--game-version", "1.0", "--mode", mode]].concat(),
        );
        assert_eq!(code, Some(3), "{mode} refuses format 2; stderr: {stderr}");
        assert!(stderr.contains(REFUSAL), "{mode} says why: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
    // The refusal did not touch the world.
    let untouched = support::inspect(&[data.path()]);
    assert_eq!(untouched[0].digest, after[0].digest);
}

/// A world one server has that a version cannot read: that version refuses to start on it
/// (exit 2, one line naming the world and the version), touches nothing, and the version
/// that wrote it still loads it.
#[tokio::test]
async fn a_version_that_cannot_read_this_world_refuses_it_untouched() {
    let data = tempfile::tempdir().unwrap();
    let unreadable = ["--unreadable-world-under", "2.0,3.0"];
    run_version(
        data.path(),
        &[&unreadable[..], &["--game-version", "1.0"]].concat(),
    )
    .await;
    let before = support::inspect(&[data.path()]);
    let (code, stderr) = run_to_exit(
        data.path(),
        &[
            &unreadable[..],
            &["--game-version", "2.0", "--mode", "format"],
        ]
        .concat(),
    );
    assert_eq!(code, Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains("this world cannot be read by game version 2.0"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert_eq!(support::inspect(&[data.path()])[0].digest, before[0].digest);
    run_version(
        data.path(),
        &[&unreadable[..], &["--game-version", "1.0"]].concat(),
    )
    .await;
}

#[tokio::test]
async fn compatible_upgrade_keeps_format_1() {
    let data = tempfile::tempdir().unwrap();
    run_version(data.path(), &["--game-version", "1.0"]).await;
    run_version(data.path(), &["--game-version", "1.1", "--mode", "compat"]).await;
    let report = &support::inspect(&[data.path()])[0];
    assert_eq!(report.format, Some(1), "{report:?}");
    assert!(!report.candidate_marker);
    assert_eq!(report.written_by.as_deref(), Some("1.1"));
    // And the old version reads what the compatible one wrote.
    run_version(data.path(), &["--game-version", "1.0"]).await;
}

#[tokio::test]
async fn http_only_serves_the_marker_but_no_minecraft() {
    let data = tempfile::tempdir().unwrap();
    let game = support::serve(
        data.path(),
        &["--mode", "http-only", "--world-marker", "marker-http-7"],
        &[],
    );
    for path in ["/", "/marker"] {
        let (status, body) = support::http(game.game, "GET", path).await;
        assert_eq!((status, body.trim()), (200, "marker-http-7"), "GET {path}");
    }
    let err = probe(game.game, Depth::Play, 775, Duration::from_secs(10))
        .await
        .expect_err("a Minecraft probe of an HTTP-only server fails");
    let text = err.to_string();
    assert!(
        text.contains("status"),
        "fails at the first Minecraft exchange: {text}"
    );
}

#[test]
fn crash_mode_exits_non_zero_with_a_message() {
    let data = tempfile::tempdir().unwrap();
    let (code, stderr) = run_to_exit(data.path(), &["--mode", "crash"]);
    assert_eq!(code, Some(1), "stderr: {stderr}");
    assert!(stderr.contains("crash mode"), "{stderr}");
}

#[test]
fn missing_password_is_a_one_line_configuration_error() {
    let data = tempfile::tempdir().unwrap();
    let mut proc = support::Proc::spawn(support::serve_command(data.path(), &[], &[]));
    let status = proc.wait_exit(EXIT);
    assert_eq!(status.code(), Some(2));
    assert!(
        proc.stderr().contains("set RCON_PASSWORD"),
        "{}",
        proc.stderr()
    );
}
