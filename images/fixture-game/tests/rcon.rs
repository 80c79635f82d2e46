//! RCON against the real server: vanilla replies, fragmentation, passwords, the audit log
//! across incarnations, `stop` and SIGTERM.

mod support;

use std::time::Duration;

use fixture_game::audit::read_audit;
use fixture_game::commands::blob;
use fixture_game::rcon::{RconClient, RconError};

#[tokio::test]
async fn vanilla_commands_answer_like_vanilla() {
    let dir = tempfile::tempdir().unwrap();
    let game = support::serve(dir.path(), &[], &[]);
    let mut rcon = RconClient::connect(game.rcon, support::PASSWORD)
        .await
        .unwrap();
    assert_eq!(
        rcon.command("save-off").await.unwrap(),
        "Automatic saving is now disabled"
    );
    assert_eq!(
        rcon.command("save-off").await.unwrap(),
        "Saving is already turned off"
    );
    assert_eq!(
        rcon.command("save-all flush").await.unwrap(),
        "Saving the game (this may take a moment!)\nSaved the game"
    );
    assert_eq!(
        rcon.command("save-on").await.unwrap(),
        "Automatic saving is now enabled"
    );
    assert_eq!(
        rcon.command("list").await.unwrap(),
        "There are 0 of a max of 20 players online: "
    );
    assert_eq!(
        rcon.command("fixture-incarnation").await.unwrap(),
        game.incarnation
    );
    let unknown = rcon.command("op everyone").await.unwrap();
    assert!(
        unknown.starts_with("Unknown or incomplete command"),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn long_replies_are_fragmented_and_reassembled() {
    let dir = tempfile::tempdir().unwrap();
    let game = support::serve(dir.path(), &[], &[]);
    let mut rcon = RconClient::connect(game.rcon, support::PASSWORD)
        .await
        .unwrap();
    for n in [0usize, 11, 4095, 4096, 4097, 10_000, 100_000] {
        let reply = rcon.command(&format!("fixture-blob {n}")).await.unwrap();
        assert_eq!(reply.len(), n, "length of a {n}-byte reply");
        assert_eq!(reply, blob(n), "content of a {n}-byte reply");
    }
    // The session is still in step after the long replies.
    assert_eq!(
        rcon.command("fixture-incarnation").await.unwrap(),
        game.incarnation
    );
}

#[tokio::test]
async fn wrong_password_is_refused_and_nothing_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let game = support::serve(dir.path(), &[], &[]);
    let err = RconClient::connect(game.rcon, "not-the-password")
        .await
        .expect_err("a wrong password is refused");
    assert!(matches!(err, RconError::BadPassword { .. }), "{err}");
    let lines = read_audit(&dir.path().join("logs/rcon-audit.jsonl")).unwrap();
    assert_eq!(lines.len(), 1, "only the start line: {lines:?}");
    assert_eq!(lines[0].event, "start");
}

#[tokio::test]
async fn audit_log_spans_incarnations_and_names_each() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("logs/rcon-audit.jsonl");

    let mut first = support::serve(dir.path(), &[], &[]);
    let mut rcon = RconClient::connect(first.rcon, support::PASSWORD)
        .await
        .unwrap();
    rcon.command("save-off").await.unwrap();
    assert_eq!(rcon.command("stop").await.unwrap(), "Stopping the server");
    let status = first.proc.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "stop exits 0, got {status:?}");

    let second = support::serve(dir.path(), &[], &[]);
    assert_ne!(
        first.incarnation, second.incarnation,
        "a fresh incarnation per start"
    );
    let mut rcon = RconClient::connect(second.rcon, support::PASSWORD)
        .await
        .unwrap();
    rcon.command("save-off").await.unwrap();
    rcon.command("save-on").await.unwrap();
    let on_disk = std::fs::read_to_string(dir.path().join("logs/incarnation")).unwrap();
    assert_eq!(on_disk.trim(), second.incarnation);

    let lines = read_audit(&audit).unwrap();
    let summary: Vec<(String, String, Option<String>)> = lines
        .iter()
        .map(|l| (l.event.clone(), l.incarnation.clone(), l.command.clone()))
        .collect();
    let (a, b) = (first.incarnation.clone(), second.incarnation.clone());
    assert_eq!(
        summary,
        vec![
            ("start".into(), a.clone(), None),
            ("command".into(), a.clone(), Some("save-off".into())),
            ("command".into(), a, Some("stop".into())),
            ("start".into(), b.clone(), None),
            ("command".into(), b.clone(), Some("save-off".into())),
            ("command".into(), b, Some("save-on".into())),
        ]
    );
    let save_on = &lines[5];
    assert_eq!(
        save_on.reply.as_deref(),
        Some("Automatic saving is now enabled")
    );
    assert!(save_on.remote.as_deref().unwrap().starts_with("127.0.0.1:"));
}

#[tokio::test]
async fn sigterm_saves_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = support::serve(dir.path(), &["--log-saves"], &[]);
    game.proc.signal(libc::SIGTERM);
    let status = game.proc.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "SIGTERM exits 0, got {status:?}");
    assert!(
        game.proc
            .seen
            .iter()
            .any(|l| l.contains("\"save\":\"full\"") && l.contains("\"step\":\"manifest\"")),
        "a full save on SIGTERM; stdout: {:?}",
        game.proc.seen
    );
    let report = &support::inspect(&[dir.path()])[0];
    assert!(!report.torn, "{report:?}");
}

#[tokio::test]
async fn sigterm_while_saving_is_off_leaves_the_flushed_world_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let mut game = support::serve(dir.path(), &["--autosave-interval-ms", "10"], &[]);
    let mut rcon = RconClient::connect(game.rcon, support::PASSWORD)
        .await
        .unwrap();
    rcon.command("save-off").await.unwrap();
    rcon.command("save-all flush").await.unwrap();
    let flushed = support::inspect(&[dir.path()]).remove(0);
    game.proc.signal(libc::SIGTERM);
    let status = game.proc.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "SIGTERM exits 0, got {status:?}");
    let after = support::inspect(&[dir.path()]).remove(0);
    assert_eq!(
        after.digest, flushed.digest,
        "no write after the flush: {after:?}"
    );
    assert!(
        game.proc.stderr().contains("saving was off"),
        "{}",
        game.proc.stderr()
    );
}
