//! Bundles that cannot be trusted are refused, naming the entry, and nothing is rendered.

mod report_support;

use std::path::{Path, PathBuf};

use rehearsal::evidence::observation::RECEIPT_FORMAT;
use rehearsal::evidence::receipts::{self, Journal, VerifyError, kind};
use rehearsal::report::{self, LoadError};
use report_support::{AMD64, write_sample};
use serde_json::json;

fn fresh() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bundle");
    write_sample(&dir, &AMD64);
    (root, dir)
}

fn journal_error(err: &LoadError) -> Option<&VerifyError> {
    match err {
        LoadError::Journal { source, .. } => Some(source),
        _ => None,
    }
}

fn edit_lines(dir: &Path, f: impl FnOnce(&mut Vec<String>)) {
    let path = dir.join("receipts.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    f(&mut lines);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn the_untouched_sample_loads() {
    let (_r, dir) = fresh();
    let b = report::load(&dir).unwrap();
    assert_eq!(b.cases.len(), 4);
}

#[test]
fn a_tampered_receipt_is_refused_naming_its_line() {
    let (_r, dir) = fresh();
    // Turn the failed backup into a success: exactly what a reviewer must never be shown.
    edit_lines(&dir, |l| {
        let i = l.iter().position(|x| x.contains("SourceChanged")).unwrap();
        l[i] = l[i].replace("phase=Failed", "phase=Succeeded");
    });
    let err = report::load(&dir).unwrap_err();
    assert!(
        matches!(journal_error(&err), Some(VerifyError::Tampered { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("tampered"), "{err}");
}

#[test]
fn a_truncated_journal_is_refused() {
    let (_r, dir) = fresh();
    let path = dir.join("receipts.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    let err = report::load(&dir).unwrap_err();
    assert!(
        matches!(journal_error(&err), Some(VerifyError::TruncatedTail { .. })),
        "{err}"
    );
}

#[test]
fn whole_entries_cut_from_the_end_are_refused() {
    let (_r, dir) = fresh();
    edit_lines(&dir, |l| {
        l.pop();
    });
    let err = report::load(&dir).unwrap_err();
    assert!(matches!(err, LoadError::Incomplete { .. }), "{err}");
    assert!(err.to_string().contains("not finalized"), "{err}");
}

#[test]
fn reordered_receipts_are_refused() {
    let (_r, dir) = fresh();
    edit_lines(&dir, |l| l.swap(4, 5));
    let err = report::load(&dir).unwrap_err();
    match journal_error(&err) {
        Some(VerifyError::Reordered { line, .. }) => assert_eq!(*line, 5),
        _ => panic!("expected Reordered at line 5, got {err}"),
    }
}

#[test]
fn a_case_without_its_final_receipt_is_refused_naming_the_case() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bundle");
    std::fs::create_dir_all(&dir).unwrap();
    let j = Journal::create(dir.join("receipts.jsonl"), "run-x", "amd64").unwrap();
    j.append(
        None,
        "run-started",
        kind::RUN_STARTED,
        json!({"receipt_format": RECEIPT_FORMAT, "run_id": "run-x", "commit": "c", "operator": {"name": "o", "version": "1"}, "arch": "amd64"}),
    )
    .unwrap();
    j.append(
        Some("never-finished"),
        "case-started",
        kind::CASE_STARTED,
        json!({"bucket": "b"}),
    )
    .unwrap();
    j.append(Some("never-finished"), "step", kind::STEP, json!({}))
        .unwrap();
    j.append(
        None,
        "run-finished",
        kind::RUN_FINISHED,
        json!({"interrupted": false}),
    )
    .unwrap();
    // A summary that claims the case passed.
    let (_r2, good) = fresh();
    std::fs::copy(good.join("bundle.json"), dir.join("bundle.json")).unwrap();
    let err = report::load(&dir).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LoadError::Incomplete { .. }), "{msg}");
    assert!(
        msg.contains("\"never-finished\"") && msg.contains("line 2"),
        "{msg}"
    );
}

#[test]
fn an_edited_summary_is_refused_naming_the_case() {
    let (_r, dir) = fresh();
    let path = dir.join("bundle.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["cases"][1]["verdict"] = json!("failed");
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(
        msg.contains("cases[1] (live-backup-same-pod-game-restart)"),
        "{msg}"
    );
}

#[test]
fn a_changed_artifact_is_refused() {
    let (_r, dir) = fresh();
    let art = dir.join("cases/live-backup-same-pod-game-restart/artifacts/rcon-audit.log");
    std::fs::write(&art, "save-on\n").unwrap();
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(
        msg.contains("rcon-audit.log") && msg.contains("changed after its receipt"),
        "{msg}"
    );
}

#[test]
fn a_changed_pvc_table_is_refused() {
    let (_r, dir) = fresh();
    let path = dir.join("cases/format-change-restore-rollback/pvc-table.json");
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "\"unchanged\": true",
        "\"unchanged\": false",
        1,
    );
    std::fs::write(&path, text).unwrap();
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(msg.contains("pvc-table.json differs"), "{msg}");
}

/// A run that finished has its summary; without it the journal's anchor is gone (whole
/// entries could have been cut), so it is refused. A run killed before it finished is
/// reported from its journal instead (report_ci_bundles.rs).
#[test]
fn a_finished_run_without_its_summary_is_refused() {
    let (_r, dir) = fresh();
    std::fs::remove_file(dir.join("bundle.json")).unwrap();
    let err = report::load(&dir).unwrap_err();
    assert!(matches!(err, LoadError::Incomplete { .. }), "{err}");
    assert!(err.to_string().contains("bundle.json is missing"), "{err}");
}

/// The command line: refusal exits non-zero and writes no report; a good bundle renders.
#[test]
fn rehearse_report_renders_nothing_from_a_refused_bundle() {
    let (_r, good) = fresh();
    let root = tempfile::tempdir().unwrap();
    let bad = root.path().join("bad");
    write_sample(&bad, &report_support::ARM64);
    edit_lines(&bad, |l| l.swap(2, 3));
    let out = root.path().join("out");
    let run = |bundles: &[&Path]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
            .arg("report")
            .args(bundles)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };
    let refused = run(&[&good, &bad]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("reordered") && stderr.contains("line 3"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one-line error: {stderr}");
    assert!(
        !out.exists(),
        "nothing may be rendered from a refused bundle"
    );

    let ok = run(&[&good]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    for f in ["report.md", "report.html", "junit.xml", "summary.json"] {
        assert!(out.join(f).is_file(), "{f} not written");
    }
}

#[test]
fn rehearse_receipts_verify_names_the_first_bad_entry() {
    let (_r, dir) = fresh();
    let verify = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
            .args(["receipts", "verify"])
            .arg(&dir)
            .output()
            .unwrap()
    };
    let ok = verify();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("entries verify"));
    // Whole entries cut from the end keep a valid chain; bundle.json's anchor catches it.
    edit_lines(&dir, |l| {
        l.truncate(l.len() - 2);
    });
    let cut = verify();
    assert!(!cut.status.success());
    let stderr = String::from_utf8_lossy(&cut.stderr);
    assert!(stderr.contains("cut from its end"), "{stderr}");
    edit_lines(&dir, |l| {
        l.remove(6);
    });
    let bad = verify();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("line 7") && stderr.contains("missing"),
        "{stderr}"
    );
}

/// `receipts verify` checks bundle.json against the journal too: an edited verdict in an
/// otherwise intact bundle is refused, naming the field, exactly as `report` refuses it.
#[test]
fn rehearse_receipts_verify_refuses_an_edited_summary() {
    let (_r, dir) = fresh();
    let path = dir.join("bundle.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let flipped = if v["cases"][1]["verdict"] == "passed" {
        "failed"
    } else {
        "passed"
    };
    v["cases"][1]["verdict"] = json!(flipped);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(["receipts", "verify"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bundle.json field `cases[1]") && stderr.contains("do not trust"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one-line error: {stderr}");
}

#[test]
fn a_step_appended_after_the_run_finished_is_refused() {
    let (_r, dir) = fresh();
    let j = Journal::open_existing(dir.join("receipts.jsonl")).unwrap();
    j.append(
        Some("http-only-candidate"),
        "late-step",
        kind::STEP,
        json!({}),
    )
    .unwrap();
    drop(j);
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(
        msg.contains("after run-finished") && msg.contains("line 37"),
        "{msg}"
    );
}

#[test]
fn an_unknown_format_is_a_one_line_usage_error() {
    let (_r, dir) = fresh();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .arg("report")
        .arg(&dir)
        .args(["--format", "md,pdf", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().count() == 1
            && stderr.contains("'pdf'")
            && stderr.contains("md, html, junit, json"),
        "{stderr}"
    );
    assert!(!dir.join("out").exists());
}

/// Rewrites the journal of `dir` with `edit` applied to each entry's observation, re-chaining
/// every hash and keeping every time, so the chain verifies and only the payload differs.
fn rewrite_payloads(dir: &Path, edit: impl Fn(&receipts::Receipt) -> serde_json::Value) {
    let path = dir.join("receipts.jsonl");
    let old = receipts::verify(&path).unwrap().receipts;
    std::fs::remove_file(&path).unwrap();
    let times = std::sync::Mutex::new(old.iter().map(|r| r.time).collect::<Vec<_>>());
    let clock: receipts::Clock = std::sync::Arc::new(move || times.lock().unwrap().remove(0));
    let j = Journal::create_with_clock(&path, &old[0].run_id, &old[0].arch, clock).unwrap();
    for r in &old {
        j.append(r.case.as_deref(), &r.step, &r.kind, edit(r))
            .unwrap();
    }
}

#[test]
fn a_renamed_field_is_refused_naming_its_line_even_when_the_chain_verifies() {
    let (_r, dir) = fresh();
    let target = receipts::verify(dir.join("receipts.jsonl"))
        .unwrap()
        .receipts
        .iter()
        .position(|r| r.kind == kind::RESTIC_SNAPSHOT)
        .expect("the sample records a snapshot")
        + 1;
    rewrite_payloads(&dir, |r| {
        let mut observed = r.observed.clone();
        if r.kind == kind::RESTIC_SNAPSHOT
            && let Some(id) = observed.as_object_mut().unwrap().remove("snapshot_id")
        {
            observed["snapshotID"] = id;
        }
        observed
    });
    receipts::verify(dir.join("receipts.jsonl")).expect("the re-chained journal verifies");
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(
        msg.contains(&format!("line {target} ")) && msg.contains("malformed restic-snapshot"),
        "{msg}"
    );
    assert!(msg.contains("snapshot"), "names the field: {msg}");
}

#[test]
fn a_bundle_of_an_older_receipt_format_is_named_as_such() {
    let (_r, dir) = fresh();
    rewrite_payloads(&dir, |r| {
        let mut observed = r.observed.clone();
        if r.kind == kind::RUN_STARTED {
            observed.as_object_mut().unwrap().remove("receipt_format");
        }
        observed
    });
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(
        msg.contains("receipt format 1")
            && msg.contains("older Rehearsal")
            && msg.contains("line 1"),
        "{msg}"
    );
}

#[test]
fn a_renamed_wait_field_is_refused_naming_its_line_even_when_the_chain_verifies() {
    let (_r, dir) = fresh();
    let target = receipts::verify(dir.join("receipts.jsonl"))
        .unwrap()
        .receipts
        .iter()
        .position(|r| r.kind == kind::WAIT)
        .expect("the sample records a wait")
        + 1;
    rewrite_payloads(&dir, |r| {
        let mut observed = r.observed.clone();
        if r.kind == kind::WAIT
            && let Some(ms) = observed.as_object_mut().unwrap().remove("elapsed_ms")
        {
            observed["elapsedMs"] = ms;
        }
        observed
    });
    receipts::verify(dir.join("receipts.jsonl")).expect("the re-chained journal verifies");
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(
        msg.contains(&format!("line {target} ")) && msg.contains("malformed wait"),
        "{msg}"
    );
    assert!(msg.contains("elapsedMs"), "names the field: {msg}");
}

#[test]
fn a_format_2_bundle_with_free_form_waits_is_named_as_older() {
    let (_r, dir) = fresh();
    rewrite_payloads(&dir, |r| {
        let mut observed = r.observed.clone();
        if r.kind == kind::RUN_STARTED {
            observed["receipt_format"] = json!(2);
        }
        if r.kind == kind::WAIT {
            observed = json!({"phase": "Running"});
        }
        observed
    });
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(
        msg.contains("receipt format 2")
            && msg.contains("older Rehearsal")
            && msg.contains(&format!("format {RECEIPT_FORMAT}"))
            && msg.contains("line 1"),
        "{msg}"
    );
}
