//! `rehearse run`, `rehearse selftest` and `rehearse bench`: local rehearsals.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::CliError;
use crate::cases::{self, CASES, Case};
use crate::deploy::reference_operator::KindInstall;
use crate::evidence::bundle::{KillMatrix, Verdict};
use crate::run::{self, Cluster, RunConfig, RunOutcome};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClusterArg {
    /// An embedded cluster per case: needs only bubblewrap and restic.
    Embedded,
    /// A Kind cluster (created or reused) through the `kind` CLI and Docker.
    Kind,
    /// An existing cluster: --kubeconfig and --context are required.
    Existing,
}

/// Where and how to run (shared by run, selftest and bench).
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// Which cluster to rehearse on.
    #[arg(long, value_enum, default_value = "embedded")]
    pub cluster: ClusterArg,
    /// Kubeconfig for --cluster existing.
    #[arg(long, env = "REHEARSAL_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// The context to use with --cluster existing (no other context is ever touched).
    #[arg(long, env = "REHEARSAL_CONTEXT")]
    pub context: Option<String>,
    /// Kind cluster name for --cluster kind.
    #[arg(long, default_value = "rehearsal")]
    pub kind_name: String,
    /// Where bundles are written (a bundle per run: <reports>/<run-id>/).
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// Cases run at once.
    #[arg(long, default_value_t = 2)]
    pub parallel: usize,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: Target,
    /// Run only these buckets (repeatable): backup, rollout.
    #[arg(long = "bucket")]
    pub buckets: Vec<String>,
    /// Run only these cases (repeatable), e.g. to rerun one.
    #[arg(long = "case")]
    pub cases: Vec<String>,
    /// Keep a failed case's namespace (and its embedded cluster) for inspection.
    #[arg(long)]
    pub keep: bool,
    /// List the cases and buckets and exit.
    #[arg(long)]
    pub list: bool,
}

#[derive(Debug, clap::Args)]
pub struct SelftestArgs {
    #[command(flatten)]
    pub target: Target,
    /// Check only these mutants (repeatable); default: every mutant a case targets.
    #[arg(long = "mutant")]
    pub mutants: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub target: Target,
    /// Consecutive full rehearsals to run (the flake check wants 20).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
}

/// Picks the cases named by buckets and cases (all when neither is given).
pub fn select(buckets: &[String], names: &[String]) -> Result<Vec<&'static Case>, CliError> {
    let known_buckets: Vec<&str> = {
        let mut b: Vec<&str> = CASES.iter().map(|c| c.bucket).collect();
        b.dedup();
        b
    };
    for b in buckets {
        if !known_buckets.contains(&b.as_str()) {
            return Err(CliError::usage(format!(
                "unknown bucket {b:?}; known buckets: {}",
                known_buckets.join(", ")
            )));
        }
    }
    let mut selected = Vec::new();
    for n in names {
        let case = cases::find(n).ok_or_else(|| {
            CliError::usage(format!(
                "unknown case {n:?}; `rehearse run --list` shows the {} cases",
                CASES.len()
            ))
        })?;
        selected.push(case);
    }
    for case in CASES {
        if buckets.iter().any(|b| b == case.bucket) && !selected.contains(&case) {
            selected.push(case);
        }
    }
    if buckets.is_empty() && names.is_empty() {
        selected = CASES.iter().collect();
    }
    Ok(selected)
}

/// Checks the environment a cluster choice needs and builds it.
pub fn cluster(target: &Target) -> Result<Cluster, CliError> {
    match target.cluster {
        ClusterArg::Embedded => {
            for (program, package) in [("bwrap", "bubblewrap"), ("restic", "restic")] {
                if crate::process::find_program(program).is_err() {
                    return Err(CliError::usage(format!(
                        "`{program}` is not installed but the embedded cluster needs it; run scripts/setup.sh (or apt-get install {package})"
                    )));
                }
            }
            Ok(Cluster::Embedded)
        }
        ClusterArg::Kind => {
            let mut options = crate::backend::kind::KindOptions::new(
                &target.kind_name,
                target.reports.join(".kind"),
            );
            // The nodes are reached through the engine API (DOCKER_HOST), not a `docker` CLI.
            if crate::process::find_program(&options.kind_program).is_err() {
                return Err(CliError::usage(format!(
                    "`{}` is not installed but --cluster kind needs it; {}",
                    options.kind_program,
                    crate::process::install_hint("kind")
                )));
            }
            // One run loads every image the cases use, installs the CRDs and the reference
            // operator, then runs the cases.
            let install = KindInstall::for_cases(Path::new(""));
            for dir in [&install.crds, &install.manifests] {
                if !dir.is_dir() {
                    return Err(CliError::usage(format!(
                        "{} not found: run `rehearse run --cluster kind` from the repository root (it installs the CRDs from fixtures/crds and the reference operator from images/reference-operator/deploy)",
                        dir.display()
                    )));
                }
            }
            *options.deploy = crate::backend::kind::KindDeploy::ReferenceOperator(install);
            Ok(Cluster::Kind(options))
        }
        ClusterArg::Existing => {
            let kubeconfig = target.kubeconfig.clone().ok_or_else(|| {
                CliError::usage(
                    "--cluster existing needs --kubeconfig PATH (or REHEARSAL_KUBECONFIG)",
                )
            })?;
            if !kubeconfig.is_file() {
                return Err(CliError::usage(format!(
                    "kubeconfig {} does not exist; pass the path of an existing kubeconfig with --kubeconfig",
                    kubeconfig.display()
                )));
            }
            let context = target.context.clone().ok_or_else(|| {
                CliError::usage(
                    "--cluster existing needs --context NAME: the harness never acts on a context it was not told to use",
                )
            })?;
            Ok(Cluster::Existing {
                kubeconfig,
                context,
            })
        }
    }
}

/// Makes sure bundles can be written under `reports` before anything starts.
pub fn check_reports_dir(reports: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(reports).map_err(|e| {
        CliError::usage(format!(
            "cannot create the reports directory {}: {e}; pass a writable directory with --reports",
            reports.display()
        ))
    })?;
    let probe = reports.join(format!(".write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| {
        CliError::usage(format!(
            "the reports directory {} is not writable: {e}; pass a writable directory with --reports",
            reports.display()
        ))
    })?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

fn config(
    target: &Target,
    cases: Vec<&'static Case>,
    keep: bool,
    mutant: Option<String>,
    run_id: String,
) -> Result<RunConfig, CliError> {
    check_reports_dir(&target.reports)?;
    Ok(RunConfig {
        cluster: cluster(target)?,
        cases,
        reports: target.reports.clone(),
        run_id,
        keep_on_failure: keep,
        parallel: target.parallel.max(1),
        mutant,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        case_bound: run::CASE_BOUND,
    })
}

fn run_error(e: run::RunError) -> CliError {
    CliError::usage(format!("the rehearsal could not run: {e}"))
}

/// Renders report.md and report.html into the bundle directory.
fn render_report(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let loaded = crate::report::load(dir).map_err(|e| e.to_string())?;
    let report = crate::report::Report::merge(vec![loaded], dir).map_err(|e| e.to_string())?;
    crate::report::write(
        &report,
        &[crate::report::Format::Markdown, crate::report::Format::Html],
        dir,
    )
    .map_err(|e| e.to_string())
}

fn print_outcome(outcome: &RunOutcome) {
    for r in &outcome.results {
        let why = r
            .reason
            .as_deref()
            .map(|w| format!(" — {w}"))
            .unwrap_or_default();
        println!(
            "{:<12} {:<50} {:>6.1}s{why}",
            r.verdict.as_str(),
            r.case,
            r.duration.as_secs_f64()
        );
    }
}

pub async fn run(args: RunArgs) -> Result<(), CliError> {
    if args.list {
        for c in CASES {
            println!("{:<8} {:<50} {}", c.bucket, c.name, c.proves);
        }
        return Ok(());
    }
    let cases = select(&args.buckets, &args.cases)?;
    let cfg = config(&args.target, cases, args.keep, None, run::new_run_id())?;
    let outcome = run::run(cfg).await.map_err(run_error)?;
    print_outcome(&outcome);
    match render_report(&outcome.bundle_dir) {
        Ok(files) => {
            for f in files {
                println!("report: {}", f.display());
            }
        }
        Err(e) => {
            eprintln!("rehearse: the bundle was written but the report could not be rendered: {e}")
        }
    }
    println!("bundle: {}", outcome.bundle_dir.display());
    if outcome.interrupted {
        return Err(CliError::failed(format!(
            "interrupted; the bundle at {} records what ran and says it was interrupted",
            outcome.bundle_dir.display()
        )));
    }
    if !outcome.passed() {
        let failed: Vec<&str> = outcome
            .results
            .iter()
            .filter(|r| r.verdict != Verdict::Passed)
            .map(|r| r.case)
            .collect();
        return Err(CliError::failed(format!(
            "{} case(s) failed: {}; rerun one with `rehearse run --case NAME --keep`",
            failed.len(),
            failed.join(", ")
        )));
    }
    Ok(())
}

/// Every mutant a case targets, with the cases that must catch it.
pub fn kill_list() -> Vec<(&'static str, Vec<&'static Case>)> {
    let mut out: Vec<(&'static str, Vec<&'static Case>)> = Vec::new();
    for case in CASES {
        for m in case.catches {
            match out.iter_mut().find(|(name, _)| name == m) {
                Some((_, cases)) => cases.push(case),
                None => out.push((m, vec![case])),
            }
        }
    }
    out
}

pub async fn selftest(args: SelftestArgs) -> Result<(), CliError> {
    let mut list = kill_list();
    for m in &args.mutants {
        if !list.iter().any(|(name, _)| name == m) {
            let known: Vec<&str> = list.iter().map(|(n, _)| *n).collect();
            return Err(CliError::usage(format!(
                "unknown mutant {m:?}; known: {}",
                known.join(", ")
            )));
        }
    }
    if !args.mutants.is_empty() {
        list.retain(|(name, _)| args.mutants.iter().any(|m| m == name));
    }
    // The catching cases must pass against the correct operator, or a "catch" proves nothing.
    let mut needed: Vec<&'static Case> = Vec::new();
    for (_, cases) in &list {
        for c in cases {
            if !needed.contains(c) {
                needed.push(c);
            }
        }
    }
    let run_id = run::new_run_id();
    let baseline = run::run(config(
        &args.target,
        needed.clone(),
        false,
        None,
        run_id.clone(),
    )?)
    .await
    .map_err(run_error)?;
    print_outcome(&baseline);
    if !baseline.passed() {
        return Err(CliError::failed(format!(
            "the cases do not all pass against the correct operator, so the self-test cannot judge the mutants; see {}",
            baseline.bundle_dir.display()
        )));
    }
    let mut matrix = KillMatrix::default();
    let mut survivors = Vec::new();
    for (mutant, cases) in &list {
        let outcome = run::run(config(
            &args.target,
            cases.clone(),
            false,
            Some(mutant.to_string()),
            format!("{run_id}-mutant-{mutant}"),
        )?)
        .await
        .map_err(run_error)?;
        let mut caught_any = false;
        for r in &outcome.results {
            let caught = r.verdict == Verdict::Failed;
            caught_any |= caught;
            matrix.record(mutant, r.case, caught);
            println!(
                "mutant {mutant:<28} case {:<50} {}",
                r.case,
                if caught { "caught" } else { "SURVIVED" }
            );
        }
        if !caught_any {
            survivors.push(*mutant);
        }
    }
    if let Err(e) = crate::evidence::bundle::Bundle::add_kill_matrix(&baseline.bundle_dir, &matrix)
    {
        return Err(CliError::usage(format!(
            "could not write the kill matrix into {}: {e}",
            baseline.bundle_dir.display()
        )));
    }
    println!(
        "kill matrix: {}",
        baseline.bundle_dir.join("kill-matrix.json").display()
    );
    if !survivors.is_empty() {
        return Err(CliError::failed(format!(
            "mutant(s) not caught by their case: {}",
            survivors.join(", ")
        )));
    }
    Ok(())
}

pub async fn bench(args: BenchArgs) -> Result<(), CliError> {
    let cluster = cluster(&args.target)?;
    check_reports_dir(&args.target.reports)?;
    if matches!(cluster, Cluster::Embedded) {
        let mut ups = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let backend = run::start_backend(&cluster, None)
                .await
                .map_err(|e| CliError::usage(e.to_string()))?;
            ups.push(t.elapsed());
            let _ = backend.teardown(false).await;
        }
        ups.sort();
        println!(
            "embedded cluster + reference operator up: median {:.0} ms, max {:.0} ms (target < 1000 ms)",
            ups[ups.len() / 2].as_secs_f64() * 1000.0,
            ups[ups.len() - 1].as_secs_f64() * 1000.0
        );
    }
    let mut flakes = 0;
    for i in 0..args.runs.max(1) {
        let t = Instant::now();
        let outcome = run::run(config(
            &args.target,
            CASES.iter().collect(),
            false,
            None,
            format!("bench-{}-{i}", run::new_run_id()),
        )?)
        .await
        .map_err(run_error)?;
        let total = t.elapsed();
        if i == 0 {
            for r in &outcome.results {
                println!(
                    "case {:<50} {:>7.2} s {}",
                    r.case,
                    r.duration.as_secs_f64(),
                    r.verdict
                );
            }
        }
        let failed = outcome
            .results
            .iter()
            .filter(|r| r.verdict != Verdict::Passed)
            .count();
        if failed > 0 {
            flakes += 1;
        }
        println!(
            "full rehearsal {}/{}: {:.1} s wall, {} of {} cases passed (target < 60 s)",
            i + 1,
            args.runs.max(1),
            total.as_secs_f64(),
            outcome.results.len() - failed,
            outcome.results.len()
        );
    }
    println!(
        "runs with a failed case: {flakes} of {} (target 0)",
        args.runs.max(1)
    );
    if flakes > 0 {
        return Err(CliError::failed(format!(
            "{flakes} run(s) had a failing case"
        )));
    }
    Ok(())
}
