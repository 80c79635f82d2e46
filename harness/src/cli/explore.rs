//! `rehearse explore`: every point of an operation × every fault, judged by the invariants
//! ([`crate::explore`]).

use super::CliError;
use super::run::{EMBEDDED_PARALLEL, print_report, run_error};
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
    /// Run exactly this schedule again (repeatable), e.g. `backup-p03-game-restart`, as a
    /// violation's line names it; no reference run.
    #[arg(long = "replay")]
    pub replay: Vec<String>,
    /// Schedules run at once (each on its own embedded cluster).
    #[arg(long, default_value_t = EMBEDDED_PARALLEL)]
    pub parallel: usize,
    /// Explore the reference operator with this mutant deployed (what the exploration catches).
    #[arg(long)]
    pub mutant: Option<String>,
    /// Where the bundle is written (<reports>/<run-id>/).
    #[arg(long, default_value = "reports")]
    pub reports: std::path::PathBuf,
}

/// Runs `rehearse explore`.
pub async fn run(args: ExploreArgs) -> Result<(), CliError> {
    let replay = args
        .replay
        .iter()
        .map(|id| Schedule::parse(id))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::usage)?;
    if args.limit == Some(0) {
        return Err(CliError::usage(
            "--limit 0 explores nothing: give at least 1, or leave it out for every schedule",
        ));
    }
    let operations = if args.operations.is_empty() {
        Operation::ALL.to_vec()
    } else {
        args.operations.clone()
    };
    let config = ExploreConfig {
        operations: operations.clone(),
        faults: args.faults.clone(),
        limit: args.limit,
        replay,
        reports: args.reports.clone(),
        run_id: crate::run::new_run_id(),
        parallel: args.parallel.max(1),
        mutant: args.mutant.clone(),
        case_bound: crate::run::CASE_BOUND,
    };
    let outcome = explore::run(config).await.map_err(run_error)?;
    for operation in operations {
        println!("\n{operation:?}: point × fault\n");
        println!("{}", outcome.matrix_markdown(operation));
    }
    print_report(&outcome.bundle_dir);
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
            "{} schedule(s) violated an invariant or did not finish: {}; replay one with `rehearse explore --replay ID`",
            failed.len(),
            failed.join(", ")
        )));
    }
    Ok(())
}
