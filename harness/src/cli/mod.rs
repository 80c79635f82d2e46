//! The `rehearse` command line: parsing and dispatch. Each subcommand lives in its own file
//! and returns a [`CliError`] whose one-line message names the cause and the fix.

use clap::{Parser, Subcommand};

pub mod buckets;
pub mod cluster;
pub mod contract;
pub mod explore;
pub mod fleet_bench;
pub mod operator;
pub mod output;
pub mod probe;
pub mod profile;
pub mod qualify;
pub mod receipts;
pub mod report;
pub mod run;

/// An error the user can act on: printed as one line, exit code non-zero.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CliError {
    /// The one line printed on stderr: what went wrong and what to do.
    pub message: String,
    /// Process exit code (2 = bad input or environment, 1 = a rehearsal verdict failed).
    pub code: i32,
}

impl CliError {
    /// Bad input or environment: the message names the cause and the fix.
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 2,
        }
    }
    /// The command ran and its verdict is negative.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 1,
        }
    }
    /// SIGINT or SIGTERM stopped the command (exit 130, as a shell reports an interrupt).
    pub fn interrupted(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: 130,
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "rehearse",
    version,
    about = "Rehearse a game-server operator's riskiest operations and prove the outcome"
)]
/// The `rehearse` command line.
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The `rehearse` subcommands; each runs through its module's `run`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start or manage a cluster (`cluster up --embedded`).
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Probe a game server (`probe minecraft --addr HOST:PORT`).
    #[command(subcommand)]
    Probe(probe::ProbeCommand),
    /// Verify receipt journals (`receipts verify BUNDLE`).
    #[command(subcommand)]
    Receipts(receipts::ReceiptsCommand),
    /// Render a qualification report from one or more bundles.
    Report(report::ReportArgs),
    /// Check the bucket manifest against `cargo nextest list`.
    #[command(subcommand)]
    Buckets(buckets::BucketsCommand),
    /// Check the clause matrix (docs/contract.toml) and render docs/contract.md from it.
    #[command(subcommand)]
    Contract(contract::ContractCommand),
    /// Run a local rehearsal (all cases on the embedded cluster by default).
    Run(run::RunArgs),
    /// Place every fault before every write the operator makes during an operation, each on
    /// its own embedded cluster, and judge each schedule by the contract's invariants.
    Explore(explore::ExploreArgs),
    /// Prove each case catches the reference-operator mutant it exists to catch.
    Selftest(run::SelftestArgs),
    /// Rehearse a candidate version and promote a fleet in gated batches (what each gate proves:
    /// docs/contract.md).
    Qualify(qualify::QualifyArgs),
    /// Measure start-up time, per-case and total wall time, and repeated-run flakes.
    Bench(run::BenchArgs),
}

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    // Case bounds come from the environment: a bad value stops every command up front.
    crate::context::Bounds::from_env().map_err(CliError::usage)?;
    match cli.command {
        Command::Cluster(c) => cluster::run(c).await,
        Command::Probe(c) => probe::run(c).await,
        Command::Receipts(c) => receipts::run(c).await,
        Command::Report(a) => report::run(a).await,
        Command::Buckets(c) => buckets::run(c).await,
        Command::Contract(c) => contract::run(c).await,
        Command::Run(a) => run::run(a).await,
        Command::Explore(a) => explore::run(a).await,
        Command::Selftest(a) => run::selftest(a).await,
        Command::Qualify(a) => qualify::run(a).await,
        Command::Bench(a) => run::bench(a).await,
    }
}

/// A command line clap rejected, as the one line `rehearse` prints (without the `rehearse: `
/// prefix): clap's first line names the cause; the arguments it lists on later lines (the
/// missing required ones, the valid values of a fixed set) are folded into the same line.
pub fn usage_error_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let strings = |kind| match e.get(kind) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => Some(values.join(", ")),
        Some(ContextValue::String(value)) => Some(value.clone()),
        _ => None,
    };
    let rendered = e.render().to_string();
    let first = rendered
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ")
        .trim_end_matches(':')
        .to_string();
    let mut line = first;
    if e.kind() == ErrorKind::MissingRequiredArgument
        && let Some(missing) = strings(ContextKind::InvalidArg)
    {
        line = format!("{line}: {missing}");
    }
    if let Some(valid) = strings(ContextKind::ValidValue) {
        line = format!("{line}; use one of {valid}");
    }
    format!("{line}; run `rehearse --help` for usage")
}
