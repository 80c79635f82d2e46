//! The bundle writer: layout, no overwrite, verdicts always recorded, resume, PVC tables.

use rehearsal::evidence::bundle::{
    ARTIFACTS_DIR, Bundle, BundleError, BundleMeta, BundleSummary, Verdict,
};
use rehearsal::evidence::observation::{WaitObserved, WaitOutcome};
use rehearsal::evidence::pvc_table::{PvcObservation, PvcPhase, Role};
use rehearsal::evidence::receipts::{self, kind};
use serde_json::json;

fn meta(run: &str) -> BundleMeta {
    BundleMeta::new(run, "abc123", "reference-operator", "0.3.0", "amd64")
}

fn summary(dir: &std::path::Path) -> BundleSummary {
    serde_json::from_slice(&std::fs::read(dir.join("bundle.json")).unwrap()).unwrap()
}

#[test]
fn a_run_writes_the_documented_layout() {
    let root = tempfile::tempdir().unwrap();
    let dir = Bundle::dir_for(root.path(), "run-1");
    let bundle = Bundle::create(&dir, meta("run-1")).unwrap();
    let case = bundle.case("restore-keeps-pvcs", "backups").unwrap();
    let pvc = |uid: &str| {
        vec![
            PvcObservation::classify("gs", "gs-data", uid, Some("pvc-1")),
            PvcObservation::classify("gs", "gs-mods-1-0", "mods-uid", Some("pvc-2")),
        ]
    };
    case.observe_pvcs(PvcPhase::Before, &pvc("uid-1")).unwrap();
    case.step("restore", json!({"phase": "Succeeded"})).unwrap();
    case.observe_pvcs(PvcPhase::After, &pvc("uid-1")).unwrap();
    let art = case.artifact("logs/game.log", b"[server] Done\n").unwrap();
    assert!(art.ends_with("cases/restore-keeps-pvcs/artifacts/logs/game.log"));
    case.uses_evidence("PVC UIDs");
    case.finish(Verdict::Passed).unwrap();
    let s = bundle.finalize(false).unwrap();

    for f in [
        "bundle.json",
        "receipts.jsonl",
        "junit.xml",
        "cases/restore-keeps-pvcs/pvc-table.json",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    assert_eq!(s, summary(&dir));
    assert_eq!(s.cases.len(), 1);
    assert_eq!(s.cases[0].verdict, Verdict::Passed);
    assert_eq!(s.cases[0].evidence_used, vec!["PVC UIDs".to_string()]);
    assert!(!s.interrupted);
    let journal = receipts::verify(dir.join("receipts.jsonl")).unwrap();
    assert_eq!(journal.receipts.len() as u64, s.journal.entries);
    assert_eq!(journal.head, s.journal.head_sha256);
    let last_case = journal
        .receipts
        .iter()
        .rfind(|r| r.case.as_deref() == Some("restore-keeps-pvcs"))
        .unwrap();
    assert_eq!(last_case.kind, kind::CASE_FINISHED);
    assert_eq!(last_case.observed["verdict"], "passed");
    let table: rehearsal::evidence::pvc_table::PvcTable = serde_json::from_slice(
        &std::fs::read(dir.join("cases/restore-keeps-pvcs/pvc-table.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(table.rows.len(), 2);
    assert_eq!(table.rows[0].role, Role::PrimaryWorld);
    assert!(table.all_unchanged());
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<testcase name=\"restore-keeps-pvcs\" classname=\"backups.amd64\""),
        "{junit}"
    );
}

#[test]
fn a_directory_with_receipts_is_never_reused_without_resume() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run-2");
    let bundle = Bundle::create(&dir, meta("run-2")).unwrap();
    drop(bundle);
    assert!(matches!(
        Bundle::create(&dir, meta("run-2")).unwrap_err(),
        BundleError::AlreadyExists { .. }
    ));
}

#[test]
fn artifacts_are_never_overwritten_and_names_stay_inside_the_case() {
    let root = tempfile::tempdir().unwrap();
    let bundle = Bundle::create(root.path().join("r"), meta("r")).unwrap();
    let case = bundle.case("c", "b").unwrap();
    case.artifact("events.json", b"[]").unwrap();
    assert!(matches!(
        case.artifact("events.json", b"[1]").unwrap_err(),
        BundleError::FileExists { .. }
    ));
    for bad in ["../escape", "/abs", "a/../../b", ""] {
        assert!(
            matches!(
                case.artifact(bad, b"x").unwrap_err(),
                BundleError::InvalidName { .. }
            ),
            "{bad:?} accepted"
        );
    }
    let stored = std::fs::read(
        root.path()
            .join("r/cases/c")
            .join(ARTIFACTS_DIR)
            .join("events.json"),
    )
    .unwrap();
    assert_eq!(stored, b"[]");
    case.finish(Verdict::Passed).unwrap();
}

#[test]
fn case_names_are_unique_per_run() {
    let root = tempfile::tempdir().unwrap();
    let bundle = Bundle::create(root.path().join("r"), meta("r")).unwrap();
    bundle
        .case("c", "b")
        .unwrap()
        .finish(Verdict::Passed)
        .unwrap();
    assert!(matches!(
        bundle.case("c", "b").unwrap_err(),
        BundleError::CaseExists { .. }
    ));
    assert!(matches!(
        bundle.case("a/b", "b").unwrap_err(),
        BundleError::InvalidName { .. }
    ));
}

#[test]
fn a_case_dropped_without_a_verdict_is_recorded_not_lost() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("r");
    let bundle = Bundle::create(&dir, meta("r")).unwrap();
    {
        let case = bundle.case("early-return", "b").unwrap();
        case.step("only-step", json!({})).unwrap();
    }
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _case = bundle.case("panics", "b").unwrap();
        panic!("assertion failed in the case");
    }));
    assert!(panicked.is_err());
    let s = bundle.finalize(false).unwrap();
    let verdicts: Vec<(&str, Verdict)> = s
        .cases
        .iter()
        .map(|c| (c.name.as_str(), c.verdict))
        .collect();
    assert_eq!(
        verdicts,
        vec![
            ("early-return", Verdict::Interrupted),
            ("panics", Verdict::Failed)
        ]
    );
    assert!(s.cases[1].reason.as_deref().unwrap().contains("panicked"));
}

#[test]
fn an_interrupted_run_marks_open_cases_and_says_so() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("r");
    let bundle = Bundle::create(&dir, meta("r")).unwrap();
    let case = bundle.case("still-running", "b").unwrap();
    std::mem::forget(case);
    let s = bundle.finalize(true).unwrap();
    assert!(s.interrupted);
    assert_eq!(s.cases[0].verdict, Verdict::Interrupted);
}

#[test]
fn resume_continues_the_same_journal_and_refuses_a_finalized_run() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("r");
    {
        let bundle = Bundle::create(&dir, meta("r")).unwrap();
        bundle
            .case("before-restart", "b")
            .unwrap()
            .finish(Verdict::Passed)
            .unwrap();
        // The harness process stops here without finalizing.
    }
    let bundle = Bundle::resume(&dir).unwrap();
    bundle
        .case("after-restart", "b")
        .unwrap()
        .finish(Verdict::Failed)
        .unwrap();
    assert!(matches!(
        bundle.case("before-restart", "b").unwrap_err(),
        BundleError::CaseExists { .. }
    ));
    let s = bundle.finalize(false).unwrap();
    assert_eq!(s.meta.run_id, "r");
    assert_eq!(s.cases.len(), 2);
    assert!(matches!(
        Bundle::resume(&dir).unwrap_err(),
        BundleError::AlreadyFinalized { .. }
    ));
}

#[test]
fn restic_ids_and_waits_are_receipts_of_their_own_kind() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("r");
    let bundle = Bundle::create(&dir, meta("r")).unwrap();
    let case = bundle.case("c", "b").unwrap();
    case.restic_snapshot("backup", "5c2f9e1d", json!({}))
        .unwrap();
    case.restic_restore("restore", "restore-1", "5c2f9e1d", json!({}))
        .unwrap();
    case.wait(
        "await",
        WaitObserved {
            object: "pods ns/mc-0".into(),
            expected: "pod Ready".into(),
            started_ms: 0,
            elapsed_ms: 40,
            events: 1,
            outcome: WaitOutcome::Met,
            woken_by: "phase=Running".into(),
            transitions: Vec::new(),
        },
    )
    .unwrap();
    case.finish(Verdict::Passed).unwrap();
    bundle.finalize(false).unwrap();
    let kinds: Vec<String> = receipts::verify(dir.join("receipts.jsonl"))
        .unwrap()
        .receipts
        .into_iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(
        kinds,
        vec![
            kind::RUN_STARTED,
            kind::CASE_STARTED,
            kind::RESTIC_SNAPSHOT,
            kind::RESTIC_RESTORE,
            kind::WAIT,
            kind::CASE_FINISHED,
            kind::RUN_FINISHED
        ]
    );
}

#[test]
fn a_kill_matrix_can_be_added_to_a_finished_run_once() {
    use rehearsal::evidence::bundle::KillMatrix;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("r");
    let mut matrix = KillMatrix::default();
    matrix.record("skip-incarnation-check", "c", true);
    {
        let bundle = Bundle::create(&dir, meta("r")).unwrap();
        bundle
            .case("c", "b")
            .unwrap()
            .finish(Verdict::Passed)
            .unwrap();
        // Not finalized yet: the matrix belongs in the run itself.
        assert!(matches!(
            Bundle::add_kill_matrix(&dir, &matrix).unwrap_err(),
            BundleError::NotFinalized { .. }
        ));
        bundle.finalize(false).unwrap();
    }
    let summary_before = std::fs::read(dir.join("bundle.json")).unwrap();
    Bundle::add_kill_matrix(&dir, &matrix).unwrap();
    assert_eq!(
        std::fs::read(dir.join("bundle.json")).unwrap(),
        summary_before
    );
    assert!(matches!(
        Bundle::add_kill_matrix(&dir, &matrix).unwrap_err(),
        BundleError::FileExists { .. }
    ));
    let loaded = rehearsal::report::load(&dir).unwrap();
    assert_eq!(loaded.kill_matrix, Some(matrix));
    let journal = receipts::verify(dir.join("receipts.jsonl")).unwrap();
    assert_eq!(journal.receipts.last().unwrap().kind, kind::KILL_MATRIX);
    // The command line accepts the addendum after the anchored run.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(["receipts", "verify"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each verdict becomes its JUnit element (quick-junit writes the XML): a failure, an
/// interrupted case as an error of type `interrupted`, and skipped and not-applicable cases as
/// `<skipped>`, the not-applicable one saying so.
#[test]
fn junit_maps_each_verdict_to_its_element() {
    let root = tempfile::tempdir().unwrap();
    let dir = Bundle::dir_for(root.path(), "run-junit");
    let bundle = Bundle::create(&dir, meta("run-junit")).unwrap();
    for (name, verdict, reason) in [
        ("passes", Verdict::Passed, None),
        ("fails", Verdict::Failed, Some("backup <never> succeeded")),
        ("skips", Verdict::Skipped, Some("no restic")),
        (
            "cannot",
            Verdict::NotApplicable,
            Some("no container restarts"),
        ),
    ] {
        let case = bundle.case(name, "backups").unwrap();
        case.finish_with_reason(verdict, reason).unwrap();
    }
    bundle.case("never-ends", "backups").unwrap();
    bundle.finalize(true).unwrap();
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let element = |case: &str| {
        let start = junit
            .find(&format!("<testcase name=\"{case}\""))
            .unwrap_or_else(|| panic!("no testcase {case}: {junit}"));
        let rest = &junit[start..];
        match rest.find("/>\n") {
            Some(end) if !rest[..end].contains('>') => String::new(),
            _ => rest[rest.find('>').unwrap() + 1..rest.find("</testcase>").unwrap()]
                .trim()
                .to_string(),
        }
    };
    assert_eq!(element("passes"), "");
    assert_eq!(
        element("fails"),
        "<failure message=\"backup &lt;never&gt; succeeded\"/>"
    );
    assert_eq!(element("skips"), "<skipped message=\"no restic\"/>");
    assert_eq!(
        element("cannot"),
        "<skipped message=\"not applicable on this cluster: no container restarts\"/>"
    );
    let interrupted = element("never-ends");
    assert!(
        interrupted.starts_with("<error ") && interrupted.contains("type=\"interrupted\""),
        "{junit}"
    );
    let suites = junit.lines().find(|l| l.contains("<testsuites ")).unwrap();
    for attr in [
        "tests=\"5\"",
        "failures=\"1\"",
        "errors=\"1\"",
        "skipped=\"2\"",
    ] {
        assert!(suites.contains(attr), "{attr}: {junit}");
    }
}
