//! The RCON audit log's judgement: what each game process received, whether every save-off was
//! answered, and that a log which cannot speak is absent evidence — never an empty log that
//! would pass a "no such command" check.

use proptest::prelude::*;
use rehearsal_evidence::judge::audit::{
    AuditLine, AuditLog, MISSING_MARKER, save_offs, save_on_after_each_save_off,
};

/// An audit log as the fixture game writes it: two incarnations, a backup's quiesce and
/// cleanup reaching the first, a second quiesce never undone on the second.
const LOG: &str = r#"{"event":"start","time":"2026-12-04T10:00:00Z","incarnation":"bwrap://g-1","game_version":"1.0","mode":"survival"}
{"event":"command","time":"2026-12-04T10:00:01Z","incarnation":"bwrap://g-1","remote":"10.0.0.7:5000","command":"save-off","reply":"ok"}
{"event":"command","time":"2026-12-04T10:00:02Z","incarnation":"bwrap://g-1","remote":"10.0.0.7:5000","command":"save-all flush","reply":"ok"}
{"event":"command","time":"2026-12-04T10:00:05Z","incarnation":"bwrap://g-1","remote":"10.0.0.7:5000","command":"save-on","reply":"ok"}

{"event":"start","time":"2026-12-04T10:01:00Z","incarnation":"bwrap://g-2","game_version":"1.0","mode":"survival"}
{"event":"command","time":"2026-12-04T10:01:01Z","incarnation":"bwrap://g-2","remote":"10.0.0.7:5000","command":"save-off","reply":"ok"}
"#;

fn log() -> AuditLog {
    AuditLog::parse("ns", "mc-data".into(), LOG).unwrap()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_recorded_audit_log_reads_per_incarnation() {
    let log = log();
    assert_eq!(log.claim, "mc-data");
    assert_eq!(
        log.lines.len(),
        6,
        "the blank line is skipped, no line is lost"
    );
    assert_eq!(log.starts(), strings(&["bwrap://g-1", "bwrap://g-2"]));
    assert_eq!(
        log.commands_of("bwrap://g-1"),
        strings(&["save-off", "save-all flush", "save-on"])
    );
    assert_eq!(log.commands_of("bwrap://g-2"), strings(&["save-off"]));
    assert_eq!(log.commands_of("bwrap://g-3"), Vec::<String>::new());
    assert_eq!(
        log.all_commands(),
        strings(&["save-off", "save-all flush", "save-on", "save-off"])
    );
    assert_eq!(
        log.save_on_after("bwrap://g-1", 0),
        Some("2026-12-04T10:00:05Z".parse().unwrap())
    );
    // No second save-off on the first incarnation; no save-on at all on the second.
    assert_eq!(log.save_on_after("bwrap://g-1", 1), None);
    assert_eq!(log.save_on_after("bwrap://g-2", 0), None);
    assert_eq!(log.nth_newest(0, "x").unwrap(), "bwrap://g-2");
    assert_eq!(log.nth_newest(1, "x").unwrap(), "bwrap://g-1");
    let e = log.nth_newest(2, "the original").unwrap_err();
    assert_eq!(e.what, "mc-data logs/rcon-audit.jsonl");
    assert_eq!(
        e.why,
        "the original: 2 incarnation(s) wrote a start line, 3 needed"
    );
    assert!(e.to_string().starts_with("evidence absent: mc-data"), "{e}");
}

#[test]
fn a_save_on_counts_only_after_the_save_off_it_answers() {
    let log = AuditLog::parse(
        "ns",
        "c".into(),
        r#"{"event":"start","time":"t","incarnation":"a"}
{"event":"command","time":"2026-12-04T10:00:00Z","incarnation":"a","command":"save-on"}
{"event":"command","time":"2026-12-04T10:00:01Z","incarnation":"a","command":"save-off"}
{"event":"command","time":"2026-12-04T10:00:02Z","incarnation":"b","command":"save-on"}
{"event":"start","time":"2026-12-04T10:00:02Z","incarnation":"a","command":"save-on"}
{"event":"command","time":"2026-12-04T10:00:03Z","incarnation":"a","command":"save-off"}
{"event":"command","time":"2026-12-04T10:00:04Z","incarnation":"a","command":"save-on"}
{"event":"command","time":"2026-12-04T10:00:05Z","incarnation":"a","command":"save-on"}
"#,
    )
    .unwrap();
    // The save-on before the first save-off, the other incarnation's, and a start line that
    // carries a command do not answer it; the one after the second save-off answers the second
    // (the first of them), not the first.
    assert_eq!(log.save_on_after("a", 0), None);
    assert_eq!(
        log.save_on_after("a", 1),
        Some("2026-12-04T10:00:04Z".parse().unwrap())
    );
    assert_eq!(log.save_on_after("a", 2), None);
    // A start line is not a command, whatever it carries.
    assert_eq!(
        log.commands_of("a"),
        strings(&["save-on", "save-off", "save-off", "save-on", "save-on"])
    );
    assert_eq!(log.all_commands().len(), 6);
    assert_eq!(log.starts(), strings(&["a", "a"]));
}

#[test]
fn a_save_on_with_an_unreadable_time_proves_nothing() {
    let log = AuditLog::parse(
        "ns",
        "c".into(),
        r#"{"event":"start","time":"t","incarnation":"a"}
{"event":"command","time":"t","incarnation":"a","command":"save-off"}
{"event":"command","time":"yesterday","incarnation":"a","command":"save-on"}
"#,
    )
    .unwrap();
    assert_eq!(log.save_on_after("a", 0), None);
}

#[test]
fn cleanup_after_every_quiesce() {
    let yes = |c: &[&str]| save_on_after_each_save_off(&strings(c));
    assert!(yes(&["save-off", "save-all", "save-on"]));
    assert!(yes(&["save-off", "save-on", "save-off", "save-on"]));
    assert!(!yes(&["save-off", "save-on", "save-off"]));
    assert!(!yes(&["save-off"]));
    assert!(!yes(&["save-off", "save-all"]));
    // No quiesce at all is not "cleaned up after it".
    assert!(!yes(&[]));
    assert!(!yes(&["save-on"]));
    assert_eq!(
        save_offs(&strings(&["save-off", "x", "save-off", "save-on"])),
        2
    );
    assert_eq!(save_offs(&[]), 0);
    assert_eq!(save_offs(&strings(&["save-off", "save-off", "save-on"])), 2);
    assert_eq!(save_offs(&strings(&["save-on", "list", "save-all"])), 0);
}

#[test]
fn an_audit_log_that_cannot_speak_is_absent_never_empty() {
    for (out, says, line) in [
        (format!("{MISSING_MARKER}\n"), "does not exist", None),
        (format!("  {MISSING_MARKER}  "), "does not exist", None),
        (String::new(), "no start line", None),
        ("\n\n".into(), "no start line", None),
        (
            r#"{"event":"command","time":"t","incarnation":"a","command":"save-off"}"#.into(),
            "no start line",
            None,
        ),
        (
            "{\"event\":\"start\"\nnot json\n".into(),
            "not one JSON object",
            Some(1),
        ),
        (
            "{\"event\":\"start\",\"time\":\"t\",\"incarnation\":\"a\"}\n\nbroken\n".into(),
            "broken",
            Some(3),
        ),
    ] {
        let e = AuditLog::parse("ns", "mc-data".into(), &out).unwrap_err();
        assert!(e.why.contains(says), "{out:?}: {e}");
        let what = match line {
            Some(n) => format!("pvc ns/mc-data logs/rcon-audit.jsonl line {n}"),
            None => "pvc ns/mc-data logs/rcon-audit.jsonl".into(),
        };
        assert_eq!(e.what, what, "{out:?}");
    }
}

fn line(event: &str, incarnation: &str, command: Option<&str>, second: u32) -> AuditLine {
    AuditLine {
        event: event.into(),
        time: format!("2026-12-04T10:00:{:02}Z", second % 60),
        incarnation: incarnation.into(),
        remote: None,
        command: command.map(str::to_owned),
        reply: None,
        game_version: None,
        mode: None,
    }
}

fn entries() -> impl Strategy<Value = Vec<(bool, usize, usize)>> {
    // (is a start line, incarnation index, command index)
    prop::collection::vec((prop::bool::weighted(0.2), 0..3usize, 0..4usize), 0..24)
}

const INCARNATIONS: [&str; 3] = ["a", "b", "c"];
const COMMANDS: [&str; 4] = ["save-off", "save-on", "save-all flush", "list"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// For any log the game could write, parsing it back loses no line, and each reading agrees
    /// with a direct count over the lines.
    #[test]
    fn any_written_log_reads_back_line_for_line(spec in entries()) {
        let lines: Vec<AuditLine> = spec
            .iter()
            .enumerate()
            .map(|(i, (start, inc, cmd))| {
                if *start {
                    line("start", INCARNATIONS[*inc], None, i as u32)
                } else {
                    line("command", INCARNATIONS[*inc], Some(COMMANDS[*cmd]), i as u32)
                }
            })
            .collect();
        let text: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect();
        let parsed = AuditLog::parse("ns", "c".into(), &text);
        let has_start = spec.iter().any(|(s, _, _)| *s);
        prop_assert_eq!(parsed.is_ok(), has_start);
        let Ok(log) = parsed else { return Ok(()) };
        prop_assert_eq!(&log.lines, &lines);
        let starts: Vec<String> = spec
            .iter()
            .filter(|(s, _, _)| *s)
            .map(|(_, i, _)| INCARNATIONS[*i].to_string())
            .collect();
        prop_assert_eq!(log.starts(), starts.clone());
        prop_assert_eq!(log.nth_newest(0, "x").unwrap(), starts.last().unwrap().clone());
        prop_assert!(log.nth_newest(starts.len(), "x").is_err());
        prop_assert_eq!(log.nth_newest(starts.len() - 1, "x").unwrap(), starts[0].clone());
        for inc in INCARNATIONS {
            let commands: Vec<String> = spec
                .iter()
                .filter(|(s, i, _)| !*s && INCARNATIONS[*i] == inc)
                .map(|(_, _, c)| COMMANDS[*c].to_string())
                .collect();
            prop_assert_eq!(log.commands_of(inc), commands.clone());
            // The n-th save-off is answered exactly when a save-on follows it before the next.
            let offs = save_offs(&commands);
            for nth in 0..=offs {
                let mut seen = 0;
                let mut answered = false;
                let mut armed = false;
                for c in &commands {
                    if c == "save-off" {
                        armed = seen == nth;
                        seen += 1;
                    } else if c == "save-on" && armed {
                        answered = true;
                        break;
                    }
                }
                prop_assert_eq!(log.save_on_after(inc, nth).is_some(), answered, "{} {}", inc, nth);
            }
            let last_off = commands.iter().rposition(|c| c == "save-off");
            let last_on = commands.iter().rposition(|c| c == "save-on");
            let cleaned = match (last_off, last_on) {
                (Some(off), Some(on)) => on > off,
                _ => false,
            };
            prop_assert_eq!(save_on_after_each_save_off(&commands), cleaned);
        }
        prop_assert_eq!(
            log.all_commands().len(),
            spec.iter().filter(|(s, _, _)| !*s).count()
        );
    }
}
