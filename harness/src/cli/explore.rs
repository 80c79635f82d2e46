//! `rehearse explore`: every point of an operation × every fault, judged by the invariants
//! ([`crate::explore`]).

use super::CliError;
use super::output::{EMBEDDED_PARALLEL, print_report, run_error};
use crate::explore::{self, ExploreConfig, Fault, Operation, Schedule};

/// `rehearse explore`: what to explore.
#[derive(Debug, clap::Args)]
pub struct ExploreArgs {
    /// The operations to explore (repeatable; default: all).
    #[arg(long = "operation", value_enum)]
    pub operations: Vec<Operation>,
    /// The faults to place (repeatable; default: all).
    #[arg(long = "fault", value_enum)]
    pub faults: Vec<Fault>,
    /// At most this many schedules after the reference run, spread over every fault and point.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Run exactly this schedule again (repeatable), e.g.
    /// `backup.patch_backups~status_live.2.game-restart` (the fault before the 2nd `patch
    /// backups/status live`), as a violation's line names it; with no reference run unless
    /// `--from` is given.
    #[arg(long = "replay")]
    pub replay: Vec<String>,
    /// The bundle of the exploration the `--replay` ids come from (reports/<run-id>): each is
    /// checked against that run's reference run (a write it never made is refused by name),
    /// then run after a fresh reference run and judged beside it (the differential oracle
    /// too); a write the operator no longer makes is refused by name.
    #[arg(long, value_name = "BUNDLE", requires = "replay")]
    pub from: Option<std::path::PathBuf>,
    /// Replay every schedule saved in this directory (`*.json`, written by
    /// `--save-violations`), each placed by a reference run: each must hold every invariant.
    #[arg(long, conflicts_with_all = ["replay", "limit", "operations", "faults"])]
    pub regressions: Option<std::path::PathBuf>,
    /// Save each schedule that violated an invariant into this directory as a regression file
    /// (commit it; CI replays the directory with `--regressions`).
    #[arg(long, conflicts_with = "replay")]
    pub save_violations: Option<std::path::PathBuf>,
    /// Schedules run at once (each on its own embedded cluster).
    #[arg(long, default_value_t = EMBEDDED_PARALLEL)]
    pub parallel: usize,
    /// Explore the reference operator with this mutant deployed (what the exploration catches).
    #[arg(long)]
    pub mutant: Option<String>,
    /// Where the bundle is written (<reports>/<run-id>/).
    #[arg(long, default_value = "reports")]
    pub reports: std::path::PathBuf,
    /// Explore the qualification procedure itself: `rehearse qualify` stopped right after each
    /// of its receipts by SIGINT, two SIGINTs, SIGTERM, or SIGKILL and a rerun, each ending
    /// judged from a fresh read of the cluster (way-back, truth, qualification).
    /// With `--regressions DIR`, replays the signal schedules saved there (files whose
    /// operation is `qualify-signals`); with `--save-violations DIR`, saves each that is not ok.
    #[arg(long, conflicts_with_all = ["operations", "faults", "mutant"])]
    pub qualify_signals: bool,
    /// Judge the exploration in this bundle again, offline, by today's invariants: every
    /// schedule's kept trace and placement, verified against the journal first; prints the
    /// matrix and closing line as the run did, and exits 1 unless every schedule is ok.
    #[arg(long, value_name = "BUNDLE", conflicts_with_all = ["operations", "faults", "replay", "regressions", "save_violations", "mutant", "limit", "qualify_signals"])]
    pub rejudge: Option<std::path::PathBuf>,
    /// The qualifications the signal exploration stops (repeatable; default: all four).
    #[arg(long = "variant", value_enum, requires = "qualify_signals")]
    pub variants: Vec<explore::signals::Variant>,
    /// The signal patterns it places (repeatable; default: all four).
    #[arg(long = "signal", value_enum, requires = "qualify_signals")]
    pub signals: Vec<explore::signals::Pattern>,
    /// Run only shard K of N (`--shard 2/4`): every reference run, then the schedules whose
    /// ids hash to this shard, so `1/N … N/N` cover every schedule exactly once; `rehearse
    /// report` merges the shards' bundles into one matrix.
    #[arg(long, value_name = "K/N", value_parser = crate::evidence::place::Shard::parse)]
    pub shard: Option<crate::evidence::place::Shard>,
    /// Your operator instead of the reference operator.
    #[command(flatten)]
    pub operator: super::operator::OperatorArgs,
}

/// Runs `rehearse explore`.
pub async fn run(args: ExploreArgs) -> Result<(), CliError> {
    if let (Some(m), Some(_)) = (&args.mutant, &args.operator.operator_command) {
        return Err(CliError::usage(format!(
            "--mutant {m} is a flag of the reference operator: with --operator-command, pass your operator's own arguments in the command"
        )));
    }
    args.operator.apply(true)?;
    super::operator::preflight_operator().await?;
    if let Some(bundle) = &args.rejudge {
        return rejudge(bundle);
    }
    let signal_ids = args
        .replay
        .iter()
        .any(|id| id.starts_with(explore::signals::OPERATION));
    if args.qualify_signals || signal_ids {
        if args.from.is_some() {
            return Err(CliError::usage(
                "--from places an operation's schedule by its write; a qualify-signals schedule is replayed by its id alone: leave out --from",
            ));
        }
        return run_signals(args).await;
    }
    if args.limit == Some(0) {
        return Err(CliError::usage(
            "--limit 0 explores nothing: give at least 1, or leave it out for every schedule",
        ));
    }
    let (replay, regressions) = replays_and_saved(&args)?;
    let operations = if !regressions.is_empty() {
        let mut ops: Vec<Operation> = regressions
            .iter()
            .filter_map(|s| s.operation().ok())
            .collect();
        ops.sort();
        ops.dedup();
        ops
    } else if args.operations.is_empty() {
        Operation::ALL.to_vec()
    } else {
        args.operations.clone()
    };
    let config = ExploreConfig {
        operations: operations.clone(),
        faults: args.faults.clone(),
        limit: args.limit,
        replay,
        regressions,
        reports: args.reports.clone(),
        run_id: crate::run::new_run_id(),
        parallel: args.parallel.max(1),
        mutant: args.mutant.clone(),
        case_bound: crate::run::CASE_BOUND,
        shard: args.shard,
    };
    let outcome = explore::run(config).await.map_err(run_error)?;
    for operation in operations {
        println!("\n{operation:?}: point × fault\n");
        println!("{}", outcome.matrix_markdown(operation));
    }
    print_report(&outcome.bundle_dir);
    println!("{}", outcome.closing_line());
    if let Some(dir) = &args.save_violations {
        save_violations(dir, &outcome)?;
    }
    let failed: Vec<&str> = outcome
        .results
        .iter()
        .filter(|r| {
            !matches!(
                r.ended.verdict,
                crate::evidence::bundle::Verdict::Passed
                    | crate::evidence::bundle::Verdict::NotApplicable
            )
        })
        .map(|r| r.id.as_str())
        .collect();
    if !failed.is_empty() {
        return Err(CliError::failed(format!(
            "{} schedule(s) not ok (violated, unknown, not placed or did not finish): {}; replay one with `rehearse explore --replay ID --from {}`",
            failed.len(),
            failed.join(", "),
            outcome.bundle_dir.display()
        )));
    }
    Ok(())
}

/// The schedules to replay by index (`--replay ID`) and those placed by their write
/// (`--regressions DIR`, or `--replay ID --from BUNDLE`).
fn replays_and_saved(
    args: &ExploreArgs,
) -> Result<(Vec<Schedule>, Vec<explore::saved::SavedSchedule>), CliError> {
    if let Some(bundle) = &args.from {
        // Replays from a bundle are placed by their write's label and occurrence, as saved ones.
        let saved = args
            .replay
            .iter()
            .map(|id| explore::saved::from_bundle(bundle, id))
            .collect::<Result<Vec<_>, _>>()
            .map_err(CliError::usage)?;
        return Ok((Vec::new(), saved));
    }
    let replay = args
        .replay
        .iter()
        .map(|id| Schedule::parse(id))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::usage)?;
    let Some(dir) = &args.regressions else {
        return Ok((replay, Vec::new()));
    };
    let saved: Vec<_> = explore::saved::load_dir(dir)
        .map_err(CliError::usage)?
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    if saved.is_empty() {
        return Err(CliError::usage(format!(
            "{} holds no saved schedule (*.json): save some with --save-violations DIR",
            dir.display()
        )));
    }
    Ok((replay, saved))
}

/// `rehearse explore --rejudge BUNDLE`: the bundle's exploration judged again offline
/// ([`explore::rejudge`]); the matrix per operation and the closing line, exit 1 unless every
/// schedule is ok.
fn rejudge(bundle: &std::path::Path) -> Result<(), CliError> {
    use crate::evidence::report::matrix::Standing;
    let rejudged = explore::rejudge::rejudge(bundle).map_err(CliError::usage)?;
    for m in rejudged.matrices() {
        println!("\n{}: point × fault\n", m.operation);
        println!(
            "{}",
            m.markdown(crate::evidence::report::matrix::LABEL_HEADER, false)
        );
    }
    if !rejudged.as_recorded.is_empty() {
        println!(
            "as recorded (nothing kept to judge again): {}",
            rejudged.as_recorded.join(", ")
        );
    }
    println!("{}", rejudged.closing_line());
    let not_ok: Vec<&str> = rejudged
        .schedules
        .iter()
        .filter(|s| !matches!(s.standing(), Standing::Ok | Standing::NotApplicable))
        .map(|s| s.id.as_str())
        .collect();
    if !not_ok.is_empty() {
        return Err(CliError::failed(format!(
            "{} schedule(s) not ok when judged again: {}",
            not_ok.len(),
            not_ok.join(", ")
        )));
    }
    Ok(())
}

/// `rehearse explore --qualify-signals`: the qualification procedure stopped by signals at
/// each of its receipts ([`explore::signals`]); prints a point × pattern matrix per variant and
/// the closing line, and exits 1 when any schedule is not `ok`.
async fn run_signals(args: ExploreArgs) -> Result<(), CliError> {
    use explore::signals::{self, SignalSchedule, SignalsConfig};
    if args.limit == Some(0) {
        return Err(CliError::usage(
            "--limit 0 explores nothing: give at least 1, or leave it out for every schedule",
        ));
    }
    let replay = args
        .replay
        .iter()
        .map(|id| SignalSchedule::parse(id))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::usage)?;
    let regressions: Vec<explore::saved::SavedSignalSchedule> = match &args.regressions {
        Some(dir) => {
            let saved = explore::saved::load_signal_dir(dir).map_err(CliError::usage)?;
            if saved.is_empty() {
                return Err(CliError::usage(format!(
                    "{} holds no saved signal schedule (*.json whose operation is {}): save some with --qualify-signals --save-violations DIR",
                    dir.display(),
                    signals::OPERATION
                )));
            }
            saved.into_iter().map(|(_, s)| s).collect()
        }
        None => Vec::new(),
    };
    let rehearse = std::env::current_exe().map_err(|e| {
        CliError::usage(format!(
            "cannot find the rehearse binary to run qualify with: {e}"
        ))
    })?;
    let config = SignalsConfig {
        variants: args.variants.clone(),
        patterns: args.signals.clone(),
        limit: args.limit,
        replay,
        regressions,
        reports: args.reports.clone(),
        run_id: crate::run::new_run_id(),
        case_bound: crate::run::CASE_BOUND,
        rehearse,
        shard: args.shard,
    };
    let outcome = signals::run(config).await.map_err(run_error)?;
    for (variant, _) in &outcome.points {
        println!("\n{}: receipt × signal\n", variant.as_str());
        println!("{}", outcome.matrix_markdown(*variant));
    }
    print_report(&outcome.bundle_dir);
    println!("{}", outcome.closing_line());
    if let Some(dir) = &args.save_violations {
        save_signal_violations(dir, &outcome)?;
    }
    let failed: Vec<&str> = outcome
        .results
        .iter()
        .filter(|r| r.ended.verdict != crate::evidence::bundle::Verdict::Passed)
        .map(|r| r.id.as_str())
        .collect();
    if !failed.is_empty() {
        return Err(CliError::failed(format!(
            "{} signal schedule(s) not ok: {}; replay one with `rehearse explore --replay ID`",
            failed.len(),
            failed.join(", ")
        )));
    }
    Ok(())
}

/// Writes each signal schedule of `outcome` that is not ok into `dir` as a regression file.
fn save_signal_violations(
    dir: &std::path::Path,
    outcome: &explore::signals::SignalsOutcome,
) -> Result<(), CliError> {
    let harness = format!(
        "rehearse {} {}",
        env!("CARGO_PKG_VERSION"),
        outcome.summary.meta.commit
    );
    for r in &outcome.results {
        let Some(schedule) = &r.schedule else {
            continue;
        };
        if r.ended.verdict == crate::evidence::bundle::Verdict::Passed {
            continue;
        }
        let mut found = r.ended.failed_checks.clone();
        found.extend(r.ended.reason.clone());
        let saved = explore::saved::SavedSignalSchedule::of(schedule, found, &harness);
        let path = explore::saved::save_signal(dir, &saved).map_err(CliError::usage)?;
        println!("saved: {} ({})", path.display(), r.id);
    }
    Ok(())
}

/// Writes each violating schedule of `outcome` into `dir` as a regression file.
fn save_violations(
    dir: &std::path::Path,
    outcome: &explore::ExploreOutcome,
) -> Result<(), CliError> {
    let operator = format!(
        "{} {}",
        outcome.summary.meta.operator.name, outcome.summary.meta.operator.version
    );
    for r in &outcome.results {
        let Some(schedule) = &r.schedule else {
            continue;
        };
        if r.ended.verdict != crate::evidence::bundle::Verdict::Failed
            || r.ended.failed_checks.is_empty()
        {
            continue;
        }
        let mut found = r.ended.failed_checks.clone();
        found.extend(r.ended.reason.clone());
        let saved = explore::saved::SavedSchedule::of(schedule, found, &operator);
        let path = explore::saved::save(dir, &saved).map_err(CliError::usage)?;
        println!("saved: {} ({})", path.display(), r.id);
    }
    Ok(())
}

/// One mutant of `rehearse selftest --explore`: the invariants the contract says explore
/// catches it on, and what it broke.
#[derive(Debug, serde::Serialize)]
struct ExploreKill {
    /// The invariants its `[[invariant]]` rows name it under.
    expected: Vec<String>,
    /// The operations explored.
    operations: Vec<String>,
    /// The invariants some schedule (or reference run) broke.
    caught_on: Vec<String>,
    /// Schedules run, and how many of them broke an invariant.
    schedules: usize,
    violating: usize,
    /// Caught on one of the expected invariants.
    caught: bool,
    /// The explorations' bundles, one per operation explored.
    bundles: Vec<std::path::PathBuf>,
}

/// Mutant → (the invariants whose `[[invariant]]` rows name it, the operations they judge).
type Wanted = std::collections::BTreeMap<String, (Vec<String>, Vec<Operation>)>;

fn mutants_of_invariants() -> Result<Wanted, CliError> {
    let contract =
        crate::contract::Contract::builtin().map_err(|e| CliError::usage(e.to_string()))?;
    let mut wanted = Wanted::new();
    for row in &contract.invariants {
        for m in &row.mutants {
            let entry = wanted.entry(m.clone()).or_default();
            entry.0.push(row.id.clone());
            entry
                .1
                .extend(row.operations.iter().filter_map(|o| Operation::parse(o)));
        }
    }
    Ok(wanted)
}

/// Explores `mutant` over `operations`: their reference runs first, then one operation at a time
/// in matrix order, and stops after the first run in which it broke an `expected` invariant (a mutant is caught once;
/// exploring the rest would only take time).
async fn explore_mutant(
    reports: &std::path::Path,
    mutant: &str,
    expected: Vec<String>,
    operations: &[Operation],
) -> Result<ExploreKill, CliError> {
    let mut kill = ExploreKill {
        expected,
        operations: Vec::new(),
        caught_on: Vec::new(),
        schedules: 0,
        violating: 0,
        caught: false,
        bundles: Vec::new(),
    };
    // First the reference runs alone (no schedule): a mutant that breaks an operation's
    // unperturbed run is caught there in seconds, without exploring every operation before it.
    let references = mutant_config(reports, mutant, operations.to_vec(), Some(0));
    let outcome = explore::run(references).await.map_err(run_error)?;
    record_kill(&mut kill, "references", &outcome);
    if kill.caught {
        return Ok(kill);
    }
    for &operation in operations {
        let config = mutant_config(reports, mutant, vec![operation], None);
        let outcome = explore::run(config).await.map_err(run_error)?;
        record_kill(&mut kill, operation.as_str(), &outcome);
        if kill.caught {
            break;
        }
    }
    Ok(kill)
}

/// Orders `operations` so those whose names share the most words with `mutant`'s go first
/// (`restore-overlays`: `restore`; `stopped-labelled-quiesced`: `stopped-backup`), the rest in
/// matrix order: a mutant is caught once, so its likeliest operation saves exploring the others.
fn likeliest_first(operations: &mut [Operation], mutant: &str) {
    let words: Vec<&str> = mutant.split('-').collect();
    operations.sort_by_key(|op| {
        std::cmp::Reverse(op.as_str().split('-').filter(|w| words.contains(w)).count())
    });
}

/// An exploration of `operations` against `mutant` (at most `limit` schedules) into `reports`.
fn mutant_config(
    reports: &std::path::Path,
    mutant: &str,
    operations: Vec<Operation>,
    limit: Option<usize>,
) -> ExploreConfig {
    ExploreConfig {
        operations,
        faults: Vec::new(),
        limit,
        replay: Vec::new(),
        regressions: Vec::new(),
        reports: reports.to_path_buf(),
        run_id: crate::run::new_run_id(),
        parallel: EMBEDDED_PARALLEL,
        mutant: Some(mutant.to_string()),
        case_bound: crate::run::CASE_BOUND,
        shard: None,
    }
}

/// Adds what `outcome` (an exploration of `what`) broke to `kill`.
fn record_kill(kill: &mut ExploreKill, what: &str, outcome: &explore::ExploreOutcome) {
    kill.operations.push(what.to_string());
    kill.caught_on.extend(
        outcome
            .results
            .iter()
            .flat_map(|r| r.ended.failed_checks.clone()),
    );
    kill.caught_on.sort();
    kill.caught_on.dedup();
    kill.schedules += outcome.results.len();
    kill.violating += outcome
        .results
        .iter()
        .filter(|r| !r.ended.failed_checks.is_empty())
        .count();
    kill.bundles.push(outcome.bundle_dir.clone());
    kill.caught = kill.expected.iter().any(|e| kill.caught_on.contains(e));
}

/// `rehearse selftest --explore`: every operator mutant the contract's invariants name (or only
/// `only`) explored over its invariants' operations; each must break one of them. Writes
/// `explore-kill-matrix.json` under `reports`.
pub async fn selftest(reports: &std::path::Path, only: &[String]) -> Result<(), CliError> {
    use std::collections::BTreeMap;
    let wanted = mutants_of_invariants()?;
    if let Some(unknown) = only.iter().find(|m| !wanted.contains_key(*m)) {
        return Err(CliError::usage(format!(
            "mutant {unknown} is named by no [[invariant]] of docs/contract.toml; known: {}",
            wanted.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let mut matrix: BTreeMap<String, ExploreKill> = BTreeMap::new();
    for (mutant, (expected, mut operations)) in wanted {
        if !only.is_empty() && !only.contains(&mutant) {
            continue;
        }
        operations.sort();
        operations.dedup();
        likeliest_first(&mut operations, &mutant);
        let kill = explore_mutant(reports, &mutant, expected, &operations).await?;
        let caught = kill.caught;
        println!(
            "mutant {mutant:<36} expected {:<24} {} (broke {} in {} of {} runs)",
            kill.expected.join(", "),
            if caught { "caught" } else { "NOT CAUGHT" },
            if kill.caught_on.is_empty() {
                "nothing".to_string()
            } else {
                kill.caught_on.join(", ")
            },
            kill.violating,
            kill.schedules
        );
        matrix.insert(mutant, kill);
    }
    let path = reports.join("explore-kill-matrix.json");
    std::fs::create_dir_all(reports)
        .and_then(|()| {
            std::fs::write(
                &path,
                serde_json::to_vec_pretty(&matrix).unwrap_or_default(),
            )
        })
        .map_err(|e| CliError::usage(format!("cannot write {}: {e}", path.display())))?;
    println!("explore kill matrix: {}", path.display());
    let missed: Vec<&String> = matrix
        .iter()
        .filter(|(_, k)| !k.caught)
        .map(|(m, _)| m)
        .collect();
    if !missed.is_empty() {
        return Err(CliError::failed(format!(
            "{} mutant(s) not caught by the exploration on the invariant the contract names: {}",
            missed.len(),
            missed
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutant_explores_the_operations_named_like_it_first() {
        let mut ops = vec![
            Operation::Backup,
            Operation::StoppedBackup,
            Operation::Restore,
        ];
        likeliest_first(&mut ops, "restore-overlays");
        assert_eq!(
            ops,
            [
                Operation::Restore,
                Operation::Backup,
                Operation::StoppedBackup
            ]
        );
        likeliest_first(&mut ops, "stopped-labelled-quiesced");
        assert_eq!(ops[0], Operation::StoppedBackup);
        let mut ops = vec![Operation::Backup, Operation::Restore];
        likeliest_first(&mut ops, "ignore-incarnation");
        assert_eq!(
            ops,
            [Operation::Backup, Operation::Restore],
            "else matrix order"
        );
    }
}
