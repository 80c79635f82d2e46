//! `bundle.json`'s derivation from the journal: for any run, every case appears with the
//! verdict its receipts prove; for any killed journal (any prefix of a run), every started case
//! appears, `interrupted` exactly when it has no verdict of its own.

mod support;

use proptest::prelude::*;
use rehearsal_evidence::bundle::{KillMatrix, Verdict};
use rehearsal_evidence::observation::{FileRef, Observation, RunFinished, RunStarted};
use rehearsal_evidence::receipts::{Journal, VerifiedJournal, kind, sha256_hex, verify};
use rehearsal_evidence::summary::{
    KILLED_REASON, SummaryError, kill_matrix_addendum, summarize, summarize_killed,
};
use support::{CaseSpec, finished, started};

/// A generated run's journal, verified, and its raw lines.
fn run(cases: &[CaseSpec], matrix: Option<&KillMatrix>) -> (VerifiedJournal, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    support::write_bundle(dir.path(), support::meta("run-1", "amd64"), cases, matrix);
    let path = dir.path().join("receipts.jsonl");
    let verified = verify(&path).unwrap();
    let lines = support::lines(&path);
    (verified, lines)
}

/// The verified journal of its first `k` entries (what a process killed after `k` writes left).
fn prefix(journal: &VerifiedJournal, lines: &[Vec<u8>], k: usize) -> VerifiedJournal {
    VerifiedJournal {
        path: journal.path.clone(),
        receipts: journal.receipts[..k].to_vec(),
        head: sha256_hex(&lines[k - 1]),
    }
}

fn line_of(journal: &VerifiedJournal, case: &str, kind: &str) -> Option<usize> {
    journal
        .receipts
        .iter()
        .position(|r| r.case.as_deref() == Some(case) && r.kind == kind)
        .map(|i| i + 1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn a_finished_run_summarizes_every_case_as_its_receipts_prove(cases in support::runs(6)) {
        let (journal, lines) = run(&cases, None);
        let summary = summarize(&journal).unwrap();
        prop_assert!(!summary.interrupted);
        prop_assert_eq!(summary.cases.len(), cases.len());
        let finished_line = journal.receipts.len();
        prop_assert_eq!(summary.journal.entries, finished_line as u64);
        prop_assert_eq!(&summary.journal.head_sha256, &sha256_hex(&lines[finished_line - 1]));
        prop_assert_eq!(summary.started, journal.receipts[0].time);
        prop_assert_eq!(summary.finished, journal.receipts[finished_line - 1].time);
        prop_assert_eq!(summary.kill_matrix, None);
        for spec in &cases {
            let c = summary.cases.iter().find(|c| c.name == spec.name).unwrap();
            prop_assert_eq!(c.verdict, spec.verdict);
            prop_assert_eq!(&c.bucket, &spec.bucket);
            prop_assert_eq!(&c.failed_checks, &spec.failed_checks);
            prop_assert_eq!(c.reason.is_some(), spec.verdict != Verdict::Passed);
            prop_assert_eq!(&c.evidence_used, &vec!["pod UID".to_string()]);
            let start = line_of(&journal, &spec.name, kind::CASE_STARTED).unwrap();
            let end = line_of(&journal, &spec.name, kind::CASE_FINISHED).unwrap();
            prop_assert_eq!(c.lines, (start, end));
            let took = journal.receipts[end - 1].time.duration_since(journal.receipts[start - 1].time);
            prop_assert_eq!(c.duration_ms, took.as_millis() as u64);
        }
        // In the order they finished.
        let order: Vec<usize> = summary.cases.iter().map(|c| c.lines.1).collect();
        prop_assert!(order.windows(2).all(|w| w[0] < w[1]));
        // A finished run is not a killed one.
        let not_killed = matches!(
            summarize_killed(&journal),
            Err(SummaryError::FinishedNotKilled { line }) if line == finished_line
        );
        prop_assert!(not_killed);
    }

    #[test]
    fn a_killed_journal_reports_every_started_case(
        cases in support::runs(5), cut in any::<prop::sample::Index>()
    ) {
        let (journal, lines) = run(&cases, None);
        // Any point before run-finished: 1 ..= entries - 1.
        let k = 1 + cut.index(journal.receipts.len() - 1);
        let killed = prefix(&journal, &lines, k);
        let summary = summarize_killed(&killed).unwrap();
        prop_assert!(summary.interrupted);
        prop_assert_eq!(summary.journal.entries, k as u64);
        prop_assert_eq!(&summary.journal.head_sha256, &sha256_hex(&lines[k - 1]));
        prop_assert_eq!(summary.finished, journal.receipts[k - 1].time);
        let started: Vec<&CaseSpec> = cases
            .iter()
            .filter(|s| line_of(&killed, &s.name, kind::CASE_STARTED).is_some())
            .collect();
        prop_assert_eq!(summary.cases.len(), started.len());
        let mut open_seen = false;
        for c in &summary.cases {
            let spec = cases.iter().find(|s| s.name == c.name).unwrap();
            let start = line_of(&killed, &c.name, kind::CASE_STARTED).unwrap();
            match line_of(&killed, &c.name, kind::CASE_FINISHED) {
                Some(end) => {
                    // Finished cases come first, in finish order.
                    prop_assert!(!open_seen);
                    prop_assert_eq!(c.verdict, spec.verdict);
                    prop_assert_eq!(c.lines, (start, end));
                }
                None => {
                    open_seen = true;
                    prop_assert_eq!(c.verdict, Verdict::Interrupted);
                    let last = killed
                        .receipts
                        .iter()
                        .rposition(|r| r.case.as_deref() == Some(c.name.as_str()))
                        .unwrap() + 1;
                    prop_assert_eq!(c.lines, (start, last));
                    let reason = c.reason.as_deref().unwrap();
                    prop_assert!(reason.starts_with(KILLED_REASON), "{}", reason);
                    let step_named = format!("its last receipt is line {last} (step `{}`)",
                        killed.receipts[last - 1].step);
                    prop_assert!(reason.contains(&step_named), "{}", reason);
                    prop_assert!(c.evidence_used.is_empty());
                    prop_assert!(c.failed_checks.is_empty());
                    let took = killed.receipts[last - 1].time
                        .duration_since(killed.receipts[start - 1].time);
                    prop_assert_eq!(c.duration_ms, took.as_millis() as u64);
                }
            }
        }
        // Open cases in the order they started.
        let open: Vec<usize> = summary.cases.iter()
            .filter(|c| c.verdict == Verdict::Interrupted && c.reason.as_deref().is_some_and(|r| r.starts_with(KILLED_REASON)))
            .map(|c| c.lines.0).collect();
        prop_assert!(open.windows(2).all(|w| w[0] < w[1]));
        // The same prefix is never a finished run.
        let any_open = summary.cases.iter().any(|c| c.reason.as_deref().is_some_and(|r| r.starts_with(KILLED_REASON)));
        match summarize(&killed) {
            Err(SummaryError::CaseNotFinished { line, .. }) => {
                prop_assert!(any_open);
                let first_open = summary.cases.iter()
                    .filter(|c| c.reason.as_deref().is_some_and(|r| r.starts_with(KILLED_REASON)))
                    .map(|c| c.lines.0).min().unwrap();
                prop_assert_eq!(line, first_open);
            }
            Err(SummaryError::NotFinalized { line }) => {
                prop_assert!(!any_open);
                prop_assert_eq!(line, k);
            }
            other => prop_assert!(false, "{:?}", other.map(|s| s.cases.len())),
        }
    }
}

/// A journal written receipt by receipt, for the malformed runs a writer never produces.
struct Raw {
    _dir: tempfile::TempDir,
    journal: Journal,
}

impl Raw {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::create_with_clock(
            dir.path().join("receipts.jsonl"),
            "run-1",
            "amd64",
            support::clock(10),
        )
        .unwrap();
        Self { _dir: dir, journal }
    }

    fn started_run() -> Self {
        let raw = Self::new();
        raw.put(
            None,
            Observation::RunStarted(RunStarted::new(&support::meta("run-1", "amd64"))),
        );
        raw
    }

    fn put(&self, case: Option<&str>, o: Observation) -> &Self {
        let step = o.kind();
        self.journal.record(case, step, o).unwrap();
        self
    }

    fn verified(&self) -> VerifiedJournal {
        verify(self.journal.path()).unwrap()
    }
}

fn run_finished() -> Observation {
    Observation::RunFinished(RunFinished { interrupted: false })
}

fn kill_matrix_ref() -> Observation {
    Observation::KillMatrix(FileRef {
        path: "kill-matrix.json".into(),
        sha256: "ab".repeat(32),
    })
}

#[test]
fn a_journal_that_is_not_a_run_is_refused() {
    let raw = Raw::new();
    raw.put(Some("a"), started("backup"));
    let e = summarize(&raw.verified()).unwrap_err();
    assert!(matches!(e, SummaryError::NoRunStarted), "{e}");
    assert!(e.to_string().contains("line 1"), "{e}");
    let empty = Raw::new();
    assert!(matches!(
        summarize_killed(&empty.verified()),
        Err(SummaryError::NoRunStarted)
    ));
}

#[test]
fn a_case_started_twice_is_refused_at_the_second_start() {
    let raw = Raw::started_run();
    raw.put(Some("a"), started("backup"))
        .put(Some("a"), started("backup"));
    let e = summarize_killed(&raw.verified()).unwrap_err();
    assert!(
        matches!(
            e,
            SummaryError::CaseTwice {
                line: 3,
                seq: 2,
                ..
            }
        ),
        "{e}"
    );
    // Also once it finished.
    let raw = Raw::started_run();
    raw.put(Some("a"), started("backup"))
        .put(Some("a"), finished(Verdict::Passed, None, &[]))
        .put(Some("a"), started("backup"));
    let e = summarize_killed(&raw.verified()).unwrap_err();
    assert!(matches!(e, SummaryError::CaseTwice { line: 4, .. }), "{e}");
}

#[test]
fn a_case_finished_twice_or_never_started_is_refused() {
    let raw = Raw::started_run();
    raw.put(Some("a"), started("backup"))
        .put(Some("a"), finished(Verdict::Passed, None, &[]))
        .put(Some("a"), finished(Verdict::Failed, Some("x"), &[]));
    let e = summarize_killed(&raw.verified()).unwrap_err();
    assert!(matches!(e, SummaryError::CaseTwice { line: 4, .. }), "{e}");
    let raw = Raw::started_run();
    raw.put(Some("b"), finished(Verdict::Passed, None, &[]));
    let e = summarize_killed(&raw.verified()).unwrap_err();
    assert!(
        matches!(
            e,
            SummaryError::CaseNotStarted {
                line: 2,
                seq: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("\"b\" was never started"), "{e}");
}

#[test]
fn a_case_receipt_without_a_case_is_malformed() {
    let raw = Raw::started_run();
    raw.put(None, started("backup"));
    let e = summarize_killed(&raw.verified()).unwrap_err();
    assert!(
        matches!(&e, SummaryError::Malformed { line: 2, kind, .. } if kind == "case-started"),
        "{e}"
    );
    let raw = Raw::started_run();
    raw.put(None, finished(Verdict::Passed, None, &[]));
    let e = summarize_killed(&raw.verified()).unwrap_err();
    assert!(matches!(&e, SummaryError::Malformed { line: 2, .. }), "{e}");
}

#[test]
fn only_a_kill_matrix_may_follow_run_finished() {
    let raw = Raw::started_run();
    raw.put(Some("a"), started("backup"))
        .put(Some("a"), finished(Verdict::Passed, None, &[]))
        .put(None, run_finished())
        .put(None, kill_matrix_ref());
    let journal = raw.verified();
    let summary = summarize(&journal).unwrap();
    // The anchor is run-finished, not the addendum.
    assert_eq!(summary.journal.entries, 4);
    assert_eq!(summary.journal.head_sha256, journal.receipts[4].prev);
    assert_eq!(summary.kill_matrix, None);
    let (line, file) = kill_matrix_addendum(&journal).unwrap().unwrap();
    assert_eq!(line, 5);
    assert_eq!(file.path, "kill-matrix.json");

    raw.put(Some("a"), Observation::Step(serde_json::json!({})));
    let journal = raw.verified();
    let e = summarize(&journal).unwrap_err();
    assert!(
        matches!(&e, SummaryError::AfterFinish { line: 6, kind, .. } if kind == "step"),
        "{e}"
    );
    let e = kill_matrix_addendum(&journal).unwrap_err();
    assert!(
        matches!(&e, SummaryError::AfterFinish { line: 6, .. }),
        "{e}"
    );
}

#[test]
fn a_kill_matrix_before_run_finished_is_the_runs_own() {
    let raw = Raw::started_run();
    raw.put(None, kill_matrix_ref()).put(None, run_finished());
    let journal = raw.verified();
    let summary = summarize(&journal).unwrap();
    assert_eq!(summary.kill_matrix.unwrap().path, "kill-matrix.json");
    assert_eq!(kill_matrix_addendum(&journal).unwrap(), None);
    // No run-finished at all: no addendum.
    let raw = Raw::started_run();
    raw.put(None, kill_matrix_ref());
    assert_eq!(kill_matrix_addendum(&raw.verified()).unwrap(), None);
    assert!(
        summarize_killed(&raw.verified())
            .unwrap()
            .kill_matrix
            .is_some()
    );
}

#[test]
fn an_interrupted_run_says_so() {
    let raw = Raw::started_run();
    raw.put(
        None,
        Observation::RunFinished(RunFinished { interrupted: true }),
    );
    assert!(summarize(&raw.verified()).unwrap().interrupted);
}

#[test]
fn a_receipt_of_an_unknown_kind_refuses_the_journal_at_its_line() {
    let raw = Raw::started_run();
    raw.journal
        .append(Some("a"), "x", "no-such-kind", serde_json::json!({}))
        .unwrap();
    let e = summarize_killed(&raw.verified()).unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
}

#[test]
fn a_malformed_addendum_is_refused_at_its_line() {
    let raw = Raw::started_run();
    raw.put(None, run_finished());
    raw.put(None, kill_matrix_ref());
    raw.journal
        .append(
            None,
            "kill-matrix",
            "kill-matrix",
            serde_json::json!({"path": 1}),
        )
        .unwrap();
    let e = kill_matrix_addendum(&raw.verified()).unwrap_err();
    assert!(
        matches!(&e, SummaryError::Observation(_)) && e.to_string().contains("line 4 (seq 3)"),
        "{e}"
    );
}
