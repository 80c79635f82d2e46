//! `rehearse explore` on the embedded cluster against the real reference operator: every
//! point × every fault of a backup, of a stopped server's backup and of a restore holds every
//! invariant (no false alarm), and a violation a mutant produces is reproduced by replaying its
//! schedule id.

use std::path::Path;

use rehearsal::evidence::bundle::Verdict;
use rehearsal::explore::{self, ExploreConfig, ExploreOutcome, Fault, Operation, Schedule};

fn config(reports: &Path) -> ExploreConfig {
    ExploreConfig {
        operations: Operation::ALL.to_vec(),
        faults: Vec::new(),
        limit: None,
        replay: Vec::new(),
        regressions: Vec::new(),
        reports: reports.to_path_buf(),
        run_id: rehearsal::run::new_run_id(),
        parallel: 4,
        mutant: None,
        case_bound: rehearsal::run::CASE_BOUND,
        shard: None,
    }
}

fn failures(outcome: &ExploreOutcome) -> Vec<(String, Verdict, Vec<String>, Option<String>)> {
    outcome
        .results
        .iter()
        .filter(|r| r.ended.verdict != Verdict::Passed)
        .map(|r| {
            (
                r.id.clone(),
                r.ended.verdict,
                r.ended.failed_checks.clone(),
                r.ended.reason.clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_operator_holds_every_invariant_at_every_point() {
    let reports = tempfile::tempdir().unwrap();
    let outcome = explore::run(config(reports.path())).await.unwrap();
    let mut expected = 0;
    for (operation, points) in &outcome.points {
        // A qualification halted by the module gate ends before the operator writes anything;
        // a Backup refused (older agent) or ended (an older operator's) writes a few; every
        // other operation runs a copy or restore Job, whose creation is a point.
        let (fewest, job) = match operation {
            Operation::QualifyModuleMoved => (0, false),
            Operation::OldAgentBackup | Operation::LegacyBackup => (2, false),
            _ => (6, true),
        };
        assert!(
            points.len() >= fewest,
            "{operation:?}: the operator's writes were not all learned: {points:?}"
        );
        assert!(
            !job || points.iter().any(|p| p.label == "create jobs"),
            "{operation:?}: the Job's creation is not a point: {points:?}"
        );
        let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        expected += 1
            + (0..points.len())
                .map(|i| {
                    let faults = operation.faults().iter();
                    faults.filter(|f| f.placeable_at(&labels, i)).count()
                })
                .sum::<usize>();
        let matrix = outcome.matrix_markdown(*operation);
        for p in points {
            assert!(
                matrix.contains(&format!("| p{:02} | `{}", p.index, p.label)),
                "{matrix}"
            );
        }
    }
    assert_eq!(outcome.points.len(), Operation::ALL.len());
    assert_eq!(
        outcome.results.len(),
        expected,
        "one reference run per operation and one schedule per point and applicable fault"
    );
    // A schedule whose point never came is not placed, never ok; it is explained by the
    // reference run when this run's operator made fewer writes than the reference's (a last
    // status it does not make every run). Every other schedule holds every invariant.
    let (not_placed, others): (Vec<_>, Vec<_>) = failures(&outcome)
        .into_iter()
        .partition(|(_, _, _, why)| why.as_deref().is_some_and(|w| w.starts_with("not placed")));
    assert_eq!(others, Vec::new(), "false alarms");
    for (id, _, _, why) in &not_placed {
        let why = why.as_deref().unwrap_or_default();
        assert!(
            why.contains("write(s), the reference run's at least"),
            "{id}: not placed without an explanation by its reference run: {why}"
        );
    }
    let n = expected - outcome.points.len();
    assert_eq!(
        outcome.closing_line(),
        format!(
            "{n} schedules: {} ok, 0 violated, 0 unknown, {} not placed",
            n - not_placed.len(),
            not_placed.len()
        )
    );
    rehearsal::evidence::receipts::verify(outcome.bundle_dir.join("receipts.jsonl"))
        .expect("the exploration's journal verifies");
}

/// A schedule whose point never comes (the operation ends before the operator makes that
/// write) is `not placed`: every invariant held, but nothing was perturbed — never `ok`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_point_that_never_comes_is_not_placed() {
    let reports = tempfile::tempdir().unwrap();
    let outcome = explore::run(ExploreConfig {
        replay: vec![Schedule {
            operation: Operation::Backup,
            place: explore::Place {
                label: "create jobs".into(),
                occurrence: 999,
            },
            fault: Fault::GameRestart,
        }],
        ..config(reports.path())
    })
    .await
    .unwrap();
    let r = &outcome.results[0];
    assert_eq!(r.ended.verdict, Verdict::Failed, "{r:?}");
    assert!(r.ended.failed_checks.is_empty(), "{r:?}");
    let reason = r.ended.reason.clone().unwrap_or_default();
    assert!(
        reason.starts_with(
            "not placed: the operation ended before the operator made the 999th `create jobs`"
        ),
        "{reason}"
    );
    assert_eq!(
        outcome.closing_line(),
        "1 schedules: 0 ok, 0 violated, 0 unknown, 1 not placed"
    );
    assert!(
        outcome
            .matrix_markdown(Operation::Backup)
            .contains("| not placed |"),
        "{}",
        outcome.matrix_markdown(Operation::Backup)
    );
}

/// Each schedule that did not pass: its id, verdict and failed checks.
fn failed_checks(outcome: &explore::ExploreOutcome) -> Vec<(String, Verdict, Vec<String>)> {
    failures(outcome)
        .into_iter()
        .map(|(id, verdict, checks, _)| (id, verdict, checks))
        .collect()
}

/// Explores `operation` under `mutant` with one fault, then replays its first violating
/// schedule twice: each replay violates the same invariants.
async fn replay_reproduces(mutant: &str, operation: Operation, fault: Fault) {
    let reports = tempfile::tempdir().unwrap();
    let mut cfg = config(reports.path());
    cfg.mutant = Some(mutant.to_string());
    cfg.operations = vec![operation];
    cfg.faults = vec![fault];
    let outcome = explore::run(cfg.clone()).await.unwrap();
    let (id, _, violated, _) = failures(&outcome)
        .into_iter()
        .find(|(_, verdict, checks, _)| *verdict == Verdict::Failed && !checks.is_empty())
        .unwrap_or_else(|| panic!("mutant {mutant} broke no invariant under {fault}"));
    for invariant in &violated {
        assert!(
            rehearsal::evidence::invariants::ALL.contains(&invariant.as_str()),
            "{id} failed on {invariant}, not an invariant"
        );
    }
    // Saved as a regression file and replayed from it: the same write, the same violation.
    let schedule = Schedule::parse(&id).unwrap();
    let saved = explore::saved::SavedSchedule::of(&schedule, violated.clone(), mutant);
    let (saved_write, saved_occurrence) = (saved.write.clone(), saved.occurrence);
    let mut from_file = cfg.clone();
    from_file.run_id = rehearsal::run::new_run_id();
    from_file.regressions = vec![saved];
    let again = explore::run(from_file).await.unwrap();
    assert_eq!(
        failed_checks(&again),
        vec![(id.clone(), Verdict::Failed, violated.clone())],
        "{id} under mutant {mutant}, replayed from its saved form"
    );
    // Replayed from the exploration's bundle (`--replay ID --from BUNDLE`): placed by the same
    // write's label and occurrence after a fresh reference run, the same violation.
    let from_bundle = explore::saved::from_bundle(&outcome.bundle_dir, &id).unwrap();
    assert_eq!(
        (from_bundle.write.as_str(), from_bundle.occurrence),
        (saved_write.as_str(), saved_occurrence)
    );
    let mut from_run = cfg.clone();
    from_run.run_id = rehearsal::run::new_run_id();
    from_run.regressions = vec![from_bundle];
    let again = explore::run(from_run).await.unwrap();
    assert_eq!(
        failed_checks(&again),
        vec![(id.clone(), Verdict::Failed, violated.clone())],
        "{id} under mutant {mutant}, replayed from its bundle"
    );
    for attempt in 1..=2 {
        let mut again = cfg.clone();
        again.run_id = rehearsal::run::new_run_id();
        again.replay = vec![Schedule::parse(&id).unwrap()];
        let replayed = explore::run(again).await.unwrap();
        assert!(replayed.points.is_empty(), "a replay runs no reference");
        assert_eq!(
            failed_checks(&replayed),
            vec![(id.clone(), Verdict::Failed, violated.clone())],
            "replay {attempt} of {id} under mutant {mutant}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_consistency_violation_reproduces() {
    replay_reproduces("ignore-incarnation", Operation::Backup, Fault::GameRestart).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_drain_violation_reproduces() {
    replay_reproduces(
        "invalidated-without-draining",
        Operation::Backup,
        Fault::GameRestart,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_cleanup_violation_reproduces() {
    replay_reproduces(
        "no-unquiesce-after-failure",
        Operation::Backup,
        Fault::BackupDeleted,
    )
    .await;
}

/// A restore whose failure empties the claims first: an unreachable repository leaves the world
/// claims neither as they were nor restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_data_violation_reproduces() {
    replay_reproduces(
        "restore-failure-wipes-claims",
        Operation::Restore,
        Fault::RepositoryUnreachable,
    )
    .await;
}

/// Every schedule saved in `tests/explore-regressions/` (each once broke an invariant of the
/// reference operator, since fixed) holds every invariant now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_saved_regressions_hold() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/explore-regressions");
    let saved: Vec<_> = explore::saved::load_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert!(!saved.is_empty(), "no saved schedule in {}", dir.display());
    let reports = tempfile::tempdir().unwrap();
    let mut cfg = config(reports.path());
    cfg.regressions = saved.clone();
    let outcome = explore::run(cfg).await.unwrap();
    let schedules = outcome
        .results
        .iter()
        .filter(|r| r.schedule.is_some())
        .count();
    assert_eq!(schedules, saved.len(), "one schedule per saved file");
    assert_eq!(
        failures(&outcome),
        Vec::new(),
        "a saved regression broke again"
    );
}

fn signals_config(reports: &Path) -> rehearsal::explore::signals::SignalsConfig {
    rehearsal::explore::signals::SignalsConfig {
        variants: Vec::new(),
        patterns: Vec::new(),
        limit: None,
        replay: Vec::new(),
        regressions: Vec::new(),
        reports: reports.to_path_buf(),
        run_id: rehearsal::run::new_run_id(),
        case_bound: rehearsal::run::CASE_BOUND,
        rehearse: env!("CARGO_BIN_EXE_rehearse").into(),
        shard: None,
    }
}

/// The qualification procedure itself, stopped by every signal pattern at points spread over
/// all four qualifications (a bounded share of `rehearse explore --qualify-signals`; the whole
/// runs in `rehearse bench` and weekly): every schedule holds way-back, truth and D6 judged
/// from a fresh read of the cluster, and the reference runs learned their receipts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_qualification_holds_its_own_invariants_under_signals() {
    use rehearsal::explore::signals::{self, Pattern, Variant};
    let reports = tempfile::tempdir().unwrap();
    let outcome = signals::run(signals::SignalsConfig {
        limit: Some(24),
        ..signals_config(reports.path())
    })
    .await
    .unwrap();
    assert_eq!(outcome.points.len(), Variant::ALL.len());
    for (variant, receipts) in &outcome.points {
        assert!(
            receipts.len() >= 30 && receipts.iter().any(|r| r.starts_with("promotion batch")),
            "{variant:?}: {receipts:?}"
        );
    }
    let schedules: Vec<_> = outcome
        .results
        .iter()
        .filter_map(|r| r.schedule.clone())
        .collect();
    assert_eq!(schedules.len(), 24);
    for &pattern in Pattern::ALL {
        assert!(
            schedules.iter().any(|s| s.pattern == pattern),
            "{pattern:?}"
        );
    }
    let failed: Vec<_> = outcome
        .results
        .iter()
        .filter(|r| r.ended.verdict != Verdict::Passed)
        .map(|r| {
            (
                r.id.clone(),
                r.ended.failed_checks.clone(),
                r.ended.reason.clone(),
            )
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(
        outcome.closing_line(),
        "24 signal schedules: 24 ok, 0 violated, 0 unknown, 0 not placed"
    );
    for variant in Variant::ALL {
        let matrix = outcome.matrix_markdown(*variant);
        assert!(
            matrix.contains("| ok |") || matrix.contains("| ok"),
            "{matrix}"
        );
    }
}

/// A point the qualification never reaches is a failure that says so, never a pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_point_that_never_comes_is_not_placed_and_fails() {
    use rehearsal::explore::signals::{self, Pattern, SignalSchedule, Variant};
    let reports = tempfile::tempdir().unwrap();
    let outcome = signals::run(signals::SignalsConfig {
        replay: vec![SignalSchedule {
            variant: Variant::CompatibleB1,
            place: explore::Place {
                label: "promotion batch 1".into(),
                occurrence: 999,
            },
            pattern: Pattern::Sigint,
        }],
        ..signals_config(reports.path())
    })
    .await
    .unwrap();
    let r = &outcome.results[0];
    assert_eq!(r.ended.verdict, Verdict::Failed, "{r:?}");
    let reason = r.ended.reason.clone().unwrap_or_default();
    assert!(reason.contains("not placed"), "{reason}");
    assert_eq!(
        outcome.closing_line(),
        "1 signal schedules: 0 ok, 0 violated, 0 unknown, 1 not placed"
    );
    assert!(
        outcome
            .matrix_markdown(Variant::CompatibleB1)
            .contains("| not placed |")
    );
}

/// Every signal schedule saved in `tests/explore-regressions/` (each once broke an invariant of
/// the qualification procedure, since fixed) holds way-back, truth and D6 now, placed after the
/// receipt it names by a reference run of its qualification.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_saved_signal_regressions_hold() {
    use rehearsal::explore::signals;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/explore-regressions");
    let saved: Vec<_> = explore::saved::load_signal_dir(&dir)
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert!(
        !saved.is_empty(),
        "no saved signal schedule in {}",
        dir.display()
    );
    let reports = tempfile::tempdir().unwrap();
    let outcome = signals::run(signals::SignalsConfig {
        regressions: saved.clone(),
        ..signals_config(reports.path())
    })
    .await
    .unwrap();
    let schedules: Vec<_> = outcome
        .results
        .iter()
        .filter_map(|r| r.schedule.clone())
        .collect();
    assert_eq!(schedules.len(), saved.len(), "one schedule per saved file");
    for (s, file) in schedules.iter().zip(&saved) {
        let (_, steps) = outcome
            .points
            .iter()
            .find(|(v, _)| *v == s.variant)
            .unwrap();
        assert_eq!(s.place.label, file.receipt, "placed after its receipt");
        assert_eq!(s.place.occurrence, file.occurrence);
        assert!(
            s.place.index_in(steps).is_some(),
            "its reference run wrote that receipt"
        );
    }
    let failed: Vec<_> = outcome
        .results
        .iter()
        .filter(|r| r.ended.verdict != Verdict::Passed)
        .map(|r| {
            (
                r.id.clone(),
                r.ended.failed_checks.clone(),
                r.ended.reason.clone(),
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "a saved signal regression broke again: {failed:#?}"
    );
}

/// `rehearse explore --rejudge BUNDLE` judges a saved exploration again offline, from the
/// traces and placements its bundle kept, and draws the same matrix and closing line as the
/// run; a bundle whose kept trace was changed does not verify, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejudged_exploration_draws_the_same_matrix() {
    let reports = tempfile::tempdir().unwrap();
    let outcome = explore::run(ExploreConfig {
        operations: vec![Operation::Restore, Operation::Qualify],
        limit: Some(6),
        ..config(reports.path())
    })
    .await
    .unwrap();
    let again = explore::rejudge::rejudge(&outcome.bundle_dir).unwrap();
    assert_eq!(
        again.as_recorded,
        Vec::<String>::new(),
        "every schedule judged again"
    );
    assert_eq!(again.closing_line(), outcome.closing_line());
    let drawn: Vec<(String, String)> = again
        .matrices()
        .iter()
        .map(|m| {
            (
                m.operation.clone(),
                m.markdown(rehearsal::evidence::report::matrix::LABEL_HEADER, false),
            )
        })
        .collect();
    let run: Vec<(String, String)> = [Operation::Qualify, Operation::Restore]
        .iter()
        .map(|op| (op.as_str().to_string(), outcome.matrix_markdown(*op)))
        .collect();
    assert_eq!(drawn, run);
    // A kept trace changed after the run: the bundle no longer verifies.
    let trace = std::fs::read_dir(outcome.bundle_dir.join("cases"))
        .unwrap()
        .map(|e| e.unwrap().path().join("artifacts/trace.json"))
        .find(|p| p.exists())
        .unwrap();
    std::fs::write(&trace, b"{}").unwrap();
    let e = explore::rejudge::rejudge(&outcome.bundle_dir).unwrap_err();
    assert!(e.contains("not a bundle that verifies"), "{e}");
}

/// An exploration run in two shards (`--shard 1/2`, `--shard 2/2`), each with its own
/// reference run: together they run every schedule of the operation exactly once, and their
/// bundles merge into one report whose matrix counts every schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_run_the_whole_exploration_once_and_merge_into_one_report() {
    use rehearsal::evidence::place::Shard;
    use rehearsal::evidence::report::{Format, Report, load::load, render};
    let reports = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    let mut bundles = Vec::new();
    let mut learned = Vec::new();
    for k in 1..=2 {
        let outcome = explore::run(ExploreConfig {
            operations: vec![Operation::LegacyBackup],
            shard: Some(Shard { k, n: 2 }),
            ..config(reports.path())
        })
        .await
        .unwrap();
        assert_eq!(
            outcome.results[0].id,
            format!("legacy-backup-reference-shard{k}of2")
        );
        learned.push(outcome.points[0].1.len());
        ids.extend(
            outcome
                .results
                .iter()
                .filter(|r| r.schedule.is_some())
                .map(|r| r.id.clone()),
        );
        bundles.push(load(&outcome.bundle_dir).unwrap());
    }
    // Both reference runs learned the same writes (the operation is deterministic), so the
    // two shards' schedules are the whole list: every write × every fault that applies.
    assert_eq!(learned[0], learned[1], "the reference runs disagree");
    let whole = learned[0] * Operation::LegacyBackup.faults().len();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((ids.len(), unique.len()), (whole, whole), "{ids:#?}");
    let report = Report::merge(bundles, reports.path()).unwrap();
    let md = render(&report, Format::Markdown);
    assert!(md.starts_with("# Exploration report"), "{md}");
    assert!(
        md.contains(&format!("**{whole} schedules: {whole} ok, 0 violated")),
        "{md}"
    );
}
