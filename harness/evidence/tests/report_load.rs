//! Loading a bundle for the report: every file a receipt names is hashed and checked, and
//! `bundle.json` may claim nothing the journal does not prove. Any change to any of them is
//! refused, naming the file or field; a killed run loads with its open cases interrupted.

mod support;

use std::path::Path;

use proptest::prelude::*;
use rehearsal_evidence::bundle::{KillCell, KillMatrix, Verdict};
use rehearsal_evidence::observation::{ArtifactStored, Observation, RunStarted};
use rehearsal_evidence::receipts::{Journal, kind, sha256_hex};
use rehearsal_evidence::report::{LoadError, load};
use serde_json::Value;
use support::CaseSpec;

fn matrix() -> KillMatrix {
    let mut m = KillMatrix::default();
    m.record_cell(
        "agent-never-resumes",
        "case-0",
        KillCell::judge("save-on", Verdict::Failed, &["save-on".into()], None),
    );
    m
}

fn bundle(cases: &[CaseSpec], with_matrix: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let m = matrix();
    support::write_bundle(
        dir.path(),
        support::meta("run-1", "amd64"),
        cases,
        with_matrix.then_some(&m),
    );
    dir
}

/// Every file a receipt of the bundle names, relative to it.
fn named_files(dir: &Path, cases: &[CaseSpec], with_matrix: bool) -> Vec<String> {
    let mut files = Vec::new();
    for c in cases {
        if c.pvcs {
            files.push(format!("cases/{}/pvc-table.json", c.name));
        }
        if c.artifact {
            files.push(format!("cases/{}/artifacts/events.txt", c.name));
        }
    }
    if with_matrix {
        files.push("kill-matrix.json".into());
    }
    for f in &files {
        assert!(dir.join(f).is_file(), "{f}");
    }
    files
}

fn refused(dir: &Path) -> LoadError {
    let e = load(dir).expect_err("the bundle must be refused");
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    e
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn an_untouched_bundle_loads_as_its_receipts_prove(
        cases in support::runs(4), with_matrix in any::<bool>()
    ) {
        let dir = bundle(&cases, with_matrix);
        let loaded = load(dir.path()).unwrap();
        prop_assert!(!loaded.killed);
        prop_assert_eq!(loaded.cases.len(), cases.len());
        for spec in &cases {
            let c = loaded.cases.iter().find(|c| c.summary.name == spec.name).unwrap();
            prop_assert_eq!(c.summary.verdict, spec.verdict);
            prop_assert_eq!(c.pvc_table.rows.len(), usize::from(spec.pvcs));
            prop_assert_eq!(c.artifacts.len(), usize::from(spec.artifact));
            for a in &c.artifacts {
                let bytes = std::fs::read(dir.path().join(&a.path)).unwrap();
                prop_assert_eq!(&a.sha256, &sha256_hex(&bytes));
                prop_assert_eq!(a.bytes, bytes.len() as u64);
            }
            // Steps: every receipt of the case after case-started, in order, timed.
            let expected_steps = spec.steps + 2 * usize::from(spec.pvcs) + usize::from(spec.artifact) + 1;
            prop_assert_eq!(c.steps.len(), expected_steps);
            prop_assert_eq!(c.steps.last().unwrap().kind.as_str(), kind::CASE_FINISHED);
            prop_assert!(c.steps.windows(2).all(|w| w[0].line < w[1].line && w[0].at_ms <= w[1].at_ms));
            let sum: u64 = c.steps.iter().map(|s| s.took_ms).sum();
            prop_assert_eq!(sum, c.steps.last().unwrap().at_ms);
        }
        prop_assert_eq!(loaded.kill_matrix.is_some(), with_matrix);
        if with_matrix {
            prop_assert_eq!(loaded.kill_matrix.unwrap(), matrix());
        }
    }

    #[test]
    fn any_changed_or_missing_file_a_receipt_names_is_refused_by_name(
        cases in support::runs(4),
        with_matrix in any::<bool>(),
        pick in any::<prop::sample::Index>(),
        remove in any::<bool>(),
    ) {
        let dir = bundle(&cases, with_matrix);
        let files = named_files(dir.path(), &cases, with_matrix);
        prop_assume!(!files.is_empty());
        let file = &files[pick.index(files.len())];
        let path = dir.path().join(file);
        if remove {
            std::fs::remove_file(&path).unwrap();
        } else {
            let mut bytes = std::fs::read(&path).unwrap();
            bytes.insert(0, b' ');
            std::fs::write(&path, bytes).unwrap();
        }
        match refused(dir.path()) {
            LoadError::FileMismatch { path, .. } => prop_assert_eq!(&path, file),
            other => prop_assert!(false, "{}", other),
        }
    }

    #[test]
    fn any_field_of_bundle_json_that_differs_from_the_journal_is_named(
        cases in support::runs(3), which in 0..8usize
    ) {
        let dir = bundle(&cases, false);
        let path = dir.path().join("bundle.json");
        let mut s: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let field = match which {
            0 => { s["interrupted"] = Value::Bool(true); "interrupted".to_string() }
            1 => { s["commit"] = "deadbeef".into(); "commit".into() }
            2 => { s["arch"] = "arm64".into(); "arch".into() }
            3 => { s["finished"] = "2031-01-01T00:00:00Z".into(); "finished".into() }
            4 => { s["journal"]["entries"] = Value::from(1); "journal".into() }
            5 => { s["operator"]["version"] = "9.9.9".into(); "operator".into() }
            6 => {
                let v = if s["cases"][0]["verdict"] == "passed" { "failed" } else { "passed" };
                s["cases"][0]["verdict"] = v.into();
                format!("cases[0] ({})", s["cases"][0]["name"].as_str().unwrap())
            }
            _ => {
                let extra = s["cases"][0].clone();
                s["cases"].as_array_mut().unwrap().push(extra);
                let n = cases.len();
                format!("cases[{n}] ({})", s["cases"][0]["name"].as_str().unwrap())
            }
        };
        std::fs::write(&path, serde_json::to_vec_pretty(&s).unwrap()).unwrap();
        match refused(dir.path()) {
            LoadError::SummaryMismatch { field: named, .. } => prop_assert_eq!(named, field),
            other => prop_assert!(false, "{}", other),
        }
    }

    #[test]
    fn a_killed_run_loads_with_its_open_cases_interrupted(
        cases in support::runs(4), cut in any::<prop::sample::Index>()
    ) {
        let dir = bundle(&cases, false);
        let lines = support::lines(&dir.path().join("receipts.jsonl"));
        // Killed after k entries, before run-finished: no bundle.json, no junit.xml, and the
        // PVC tables of the cases that had not finished were never written.
        let k = 1 + cut.index(lines.len() - 1);
        support::write_lines(&dir.path().join("receipts.jsonl"), &lines[..k]);
        std::fs::remove_file(dir.path().join("bundle.json")).unwrap();
        std::fs::remove_file(dir.path().join("junit.xml")).unwrap();
        let kept: Vec<Value> = lines[..k].iter().map(|l| serde_json::from_slice(l).unwrap()).collect();
        let finished = |c: &str| kept.iter().any(|r| r["case"] == c && r["kind"] == kind::CASE_FINISHED);
        let started = |c: &str| kept.iter().any(|r| r["case"] == c && r["kind"] == kind::CASE_STARTED);
        for c in &cases {
            if !finished(&c.name) {
                let _ = std::fs::remove_file(dir.path().join(format!("cases/{}/pvc-table.json", c.name)));
            }
        }
        let loaded = load(dir.path()).unwrap();
        prop_assert!(loaded.killed);
        prop_assert!(loaded.summary.interrupted);
        prop_assert_eq!(loaded.summary.journal.entries, k as u64);
        let expected = cases.iter().filter(|c| started(&c.name)).count();
        prop_assert_eq!(loaded.cases.len(), expected);
        for c in &loaded.cases {
            let spec = cases.iter().find(|s| s.name == c.summary.name).unwrap();
            let v = if finished(&spec.name) { spec.verdict } else { Verdict::Interrupted };
            prop_assert_eq!(c.summary.verdict, v);
        }
        // A partial last line (killed mid-write) changes nothing.
        let mut bytes = std::fs::read(dir.path().join("receipts.jsonl")).unwrap();
        bytes.extend_from_slice(b"{\"seq\":");
        std::fs::write(dir.path().join("receipts.jsonl"), bytes).unwrap();
        prop_assert_eq!(load(dir.path()).unwrap().cases.len(), expected);
    }
}

#[test]
fn a_pvc_table_no_receipt_proves_is_refused() {
    let dir = bundle(&[CaseSpec::passed("case-0")], false);
    std::fs::write(
        dir.path().join("cases/case-0/pvc-table.json"),
        "{\"rows\":[]}\n",
    )
    .unwrap();
    match refused(dir.path()) {
        LoadError::FileMismatch { path, problem, .. } => {
            assert_eq!(path, "cases/case-0/pvc-table.json");
            assert!(problem.contains("no PVC observation"), "{problem}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_pvc_table_edited_to_other_valid_content_is_refused() {
    let mut spec = CaseSpec::passed("case-0");
    spec.pvcs = true;
    let dir = bundle(&[spec], false);
    let path = dir.path().join("cases/case-0/pvc-table.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("uid-case-0", "uid-other");
    std::fs::write(&path, text).unwrap();
    match refused(dir.path()) {
        LoadError::FileMismatch { problem, .. } => {
            assert!(
                problem.contains("differs from the table the receipts prove"),
                "{problem}"
            )
        }
        other => panic!("{other}"),
    }
}

/// A journal in `dir` holding only its `run-started` receipt (no bundle.json: read as killed).
fn started_journal(dir: &Path) -> Journal {
    let journal = Journal::create_with_clock(
        dir.join("receipts.jsonl"),
        "run-1",
        "amd64",
        support::clock(1),
    )
    .unwrap();
    journal
        .record(
            None,
            "run-started",
            Observation::RunStarted(RunStarted::new(&support::meta("run-1", "amd64"))),
        )
        .unwrap();
    journal
}

#[test]
fn a_kill_matrix_that_is_not_one_is_refused() {
    // A kill matrix whose receipt hashes its (wrong) content: the hash holds, the shape does not.
    let dir2 = tempfile::tempdir().unwrap();
    let journal = started_journal(dir2.path());
    std::fs::write(dir2.path().join("kill-matrix.json"), b"[]").unwrap();
    journal
        .record(
            None,
            "kill-matrix",
            Observation::KillMatrix(rehearsal_evidence::observation::FileRef {
                path: "kill-matrix.json".into(),
                sha256: sha256_hex(b"[]"),
            }),
        )
        .unwrap();
    match refused(dir2.path()) {
        LoadError::FileMismatch { path, problem, .. } => {
            assert_eq!(path, "kill-matrix.json");
            assert!(problem.contains("is not a kill matrix"), "{problem}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn an_artifact_outside_the_bundle_is_refused() {
    for bad in ["../outside.txt", "cases//x", "cases/../../x"] {
        let dir = tempfile::tempdir().unwrap();
        let journal = started_journal(dir.path());
        journal
            .record(Some("c"), "case-started", support::started("backup"))
            .unwrap();
        journal
            .record(
                Some("c"),
                "artifact x",
                Observation::Artifact(ArtifactStored {
                    path: bad.into(),
                    bytes: 0,
                    sha256: sha256_hex(b""),
                }),
            )
            .unwrap();
        match refused(dir.path()) {
            LoadError::FileMismatch { path, problem, .. } => {
                assert_eq!(path, bad);
                assert!(
                    problem.contains("not a path inside the bundle"),
                    "{problem}"
                );
            }
            other => panic!("{bad}: {other}"),
        }
    }
}

#[test]
fn what_is_not_a_bundle_is_named() {
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        refused(empty.path()),
        LoadError::NotABundle { .. }
    ));

    let dir = bundle(&[CaseSpec::passed("case-0")], false);
    std::fs::write(dir.path().join("bundle.json"), "{").unwrap();
    assert!(matches!(refused(dir.path()), LoadError::BadSummary { .. }));

    // A finished run whose bundle.json was lost is not read as a killed one.
    let dir = bundle(&[CaseSpec::passed("case-0")], false);
    std::fs::remove_file(dir.path().join("bundle.json")).unwrap();
    let e = refused(dir.path());
    assert!(e.to_string().contains("bundle.json is missing"), "{e}");

    // Its journal edited: refused as the verifier names it.
    let dir = bundle(&[CaseSpec::passed("case-0")], false);
    let path = dir.path().join("receipts.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replacen("step-0", "step-X", 1);
    std::fs::write(&path, text).unwrap();
    let e = refused(dir.path());
    assert!(matches!(e, LoadError::Journal { .. }), "{e}");
    assert!(e.to_string().contains("tampered"), "{e}");
}

#[test]
fn entries_cut_from_or_added_to_a_finished_journal_are_refused() {
    // The last entry (run-finished) cut: the journal alone still verifies; the summary refuses.
    let dir = bundle(&[CaseSpec::passed("case-0")], false);
    let path = dir.path().join("receipts.jsonl");
    let lines = support::lines(&path);
    support::write_lines(&path, &lines[..lines.len() - 1]);
    let e = refused(dir.path());
    assert!(matches!(e, LoadError::Incomplete { .. }), "{e}");
    assert!(e.to_string().contains("not finalized"), "{e}");

    // A well-chained step added after run-finished.
    let dir = bundle(&[CaseSpec::passed("case-0")], false);
    let journal = Journal::open_existing(dir.path().join("receipts.jsonl")).unwrap();
    journal
        .record(
            Some("case-0"),
            "late",
            Observation::Step(serde_json::json!({})),
        )
        .unwrap();
    drop(journal);
    let e = refused(dir.path());
    assert!(e.to_string().contains("after run-finished"), "{e}");
}

#[test]
fn snapshots_and_restores_are_read_in_first_seen_order() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = rehearsal_evidence::bundle::Bundle::create_with_clock(
        dir.path(),
        support::meta("run-1", "amd64"),
        support::clock(2),
    )
    .unwrap();
    let quiet = bundle.case("quiet", "backup").unwrap();
    let case = bundle.case("restores", "backup").unwrap();
    let details = serde_json::json!({});
    case.restic_snapshot("backup", "s1", details.clone())
        .unwrap();
    // An empty id (a Backup that never reported one) is no snapshot.
    case.restic_snapshot("backup without id", "", details.clone())
        .unwrap();
    case.restic_snapshot("backup again", "s1", details.clone())
        .unwrap();
    let r1 = case
        .restic_restore("restore", "r1", "s2", details.clone())
        .unwrap();
    let r2 = case
        .restic_restore("restore back", "r2", "s1", details)
        .unwrap();
    quiet.finish(Verdict::Passed).unwrap();
    case.finish(Verdict::Passed).unwrap();
    bundle.finalize(false).unwrap();
    let loaded = load(dir.path()).unwrap();
    let c = loaded
        .cases
        .iter()
        .find(|c| c.summary.name == "restores")
        .unwrap();
    assert_eq!(c.snapshots, vec!["s1".to_string(), "s2".to_string()]);
    let restores: Vec<(&str, &str, usize)> = c
        .restores
        .iter()
        .map(|r| (r.restore_id.as_str(), r.snapshot_id.as_str(), r.line))
        .collect();
    assert_eq!(
        restores,
        vec![
            ("r1", "s2", r1.seq as usize + 1),
            ("r2", "s1", r2.seq as usize + 1)
        ]
    );
    let q = loaded
        .cases
        .iter()
        .find(|c| c.summary.name == "quiet")
        .unwrap();
    assert!(q.snapshots.is_empty() && q.restores.is_empty());
}
