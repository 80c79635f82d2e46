//! Autosave tears an unquiesced copy; `save-off` + `save-all flush` makes a clean one.

mod support;

use std::time::Duration;

use fixture_game::inspect::Kind;
use fixture_game::rcon::RconClient;

const STEP: Duration = Duration::from_secs(20);

fn step_line(save: &str, step: &str, world: &str) -> impl Fn(&str) -> bool {
    let want = [
        "\"event\":\"save-step\"".to_owned(),
        format!("\"save\":\"{save}\""),
        format!("\"step\":\"{step}\""),
        format!("\"world\":\"{world}\""),
    ];
    move |line: &str| want.iter().all(|w| line.contains(w.as_str()))
}

fn generation(line: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["generation"].as_u64().unwrap()
}

#[tokio::test]
async fn copy_taken_between_autosave_steps_is_torn() {
    let data = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    let extra_arg = format!("nether={}", extra.path().display());
    // A long gap holds the autosave between its steps while we copy.
    let mut game = support::serve(
        data.path(),
        &[
            "--log-saves",
            "--extra-world",
            &extra_arg,
            "--autosave-interval-ms",
            "50",
            "--autosave-gap-ms",
            "600000",
        ],
        &[],
    );
    let region = game.proc.wait_line(
        "autosave step 1 of the extra world",
        STEP,
        step_line("autosave", "region", "nether"),
    );
    let copy = tempfile::tempdir().unwrap();
    support::copy_tree(data.path(), &copy.path().join("data"));
    support::copy_tree(extra.path(), &copy.path().join("nether"));

    let reports = support::inspect(&[&copy.path().join("data"), &copy.path().join("nether")]);
    for report in &reports {
        assert_eq!(report.kind, Kind::World, "{report:?}");
        assert!(report.torn, "a mid-autosave copy must be torn: {report:?}");
        assert_eq!(
            report.generation,
            Some(generation(&region) - 1),
            "the manifest still names the previous save: {report:?}"
        );
    }

    // Quiescing now does not wait out the autosave's ten-minute gap: the flush finishes it.
    let mut rcon = RconClient::connect(game.rcon, support::PASSWORD)
        .await
        .unwrap();
    rcon.command("save-off").await.unwrap();
    rcon.command("save-all flush").await.unwrap();
    for live in support::inspect(&[data.path(), extra.path()]) {
        assert!(!live.torn, "flushed world is clean: {live:?}");
        assert!(live.generation.unwrap() > generation(&region), "{live:?}");
    }
}

#[tokio::test]
async fn copy_after_save_off_and_flush_is_clean_until_save_on() {
    let data = tempfile::tempdir().unwrap();
    let mut game = support::serve(
        data.path(),
        &[
            "--log-saves",
            "--autosave-interval-ms",
            "20",
            "--autosave-gap-ms",
            "15",
        ],
        &[],
    );
    // Autosave is running before we quiesce.
    game.proc.wait_line(
        "a first autosave",
        STEP,
        step_line("autosave", "manifest", "world"),
    );

    let mut rcon = RconClient::connect(game.rcon, support::PASSWORD)
        .await
        .unwrap();
    rcon.command("save-off").await.unwrap();
    rcon.command("save-all flush").await.unwrap();
    let copy = tempfile::tempdir().unwrap();
    support::copy_tree(data.path(), copy.path());
    let live_before = fixture_game::inspect::inspect(data.path()).unwrap();
    rcon.command("save-on").await.unwrap();

    let report = &support::inspect(&[copy.path()])[0];
    assert_eq!(report.kind, Kind::World);
    assert!(!report.torn, "a quiesced copy must be clean: {report:?}");
    assert_eq!(
        report.digest, live_before.digest,
        "nothing was written after the flush"
    );
    let flushed = report.generation.unwrap();

    // Between the flush reply and save-on, the log shows no autosave step; afterwards it resumes.
    game.proc.wait_line("the save-on audit line", STEP, |l| {
        l.contains("\"command\":\"save-on\"")
    });
    let flush_at = game
        .proc
        .seen
        .iter()
        .position(|l| l.contains("\"command\":\"save-all flush\""))
        .expect("flush audited");
    let quiet = &game.proc.seen[flush_at..];
    assert!(
        !quiet.iter().any(|l| l.contains("\"save\":\"autosave\"")),
        "autosave ran while saving was off: {quiet:?}"
    );
    let resumed = game.proc.wait_line(
        "an autosave after save-on",
        STEP,
        step_line("autosave", "manifest", "world"),
    );
    assert!(
        generation(&resumed) > flushed,
        "{resumed} after generation {flushed}"
    );
}
