//! `rehearse run`, `rehearse selftest` and `rehearse bench`: local rehearsals.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::CliError;
use crate::cases::{self, CASES, Case};
use crate::deploy::reference_operator::KindInstall;
use crate::evidence::bundle::{KillMatrix, Verdict};
use crate::run::{self, Cluster, RunConfig, RunOutcome};

pub use super::output::EMBEDDED_PARALLEL;
pub(crate) use super::output::{print_report, run_error};
/// Cases at once on a shared (Kind or existing) cluster unless `--parallel` says otherwise.
pub const SHARED_PARALLEL: usize = 2;

/// How many cases run at once: an option of the commands that run cases (`run`, `selftest`,
/// `bench`), not of `qualify`, which runs one procedure.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Parallel {
    /// Cases run at once (default: 4 on the embedded cluster — each case has its own cluster
    /// and spends its time waiting, measured fastest on 2 cores with no failed case; 2 on Kind
    /// and existing clusters, where every case shares one node).
    #[arg(long, value_parser = parse_parallel)]
    pub parallel: Option<usize>,
}

impl Parallel {
    /// Cases run at once on `target`: `--parallel`, else the cluster's default.
    pub fn slots(&self, target: &Target) -> usize {
        let default = match target.cluster {
            ClusterArg::Embedded => EMBEDDED_PARALLEL,
            ClusterArg::Kind | ClusterArg::Existing => SHARED_PARALLEL,
        };
        self.parallel.unwrap_or(default).max(1)
    }
}

/// Which cluster `--cluster` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClusterArg {
    /// An embedded cluster per case: needs only bubblewrap, restic and docker-registry.
    Embedded,
    /// A Kind cluster (created or reused) through the `kind` CLI and Docker.
    Kind,
    /// An existing cluster: --kubeconfig and --context are required.
    Existing,
}

/// Where to run and where bundles go (shared by run, selftest, bench and qualify).
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
    /// The operator the cluster is expected to run: `reference` or `gameplane`. The profile
    /// and version are read from the cluster; a different operator there is an error. An
    /// operator that runs outside the cluster (no Deployment to read) is taken as named here.
    #[arg(long, env = "REHEARSAL_OPERATOR")]
    pub operator_profile: Option<crate::deploy::profile::OperatorProfile>,
    /// Your operator on the embedded cluster.
    #[command(flatten)]
    pub operator: super::operator::OperatorArgs,
}

/// `rehearse run`: which cases, and what to keep.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The cluster and where the bundle goes.
    #[command(flatten)]
    pub target: Target,
    /// How many cases at once.
    #[command(flatten)]
    pub parallel: Parallel,
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

/// `rehearse selftest`: which mutants to check.
#[derive(Debug, clap::Args)]
pub struct SelftestArgs {
    /// The cluster and where the bundles go.
    #[command(flatten)]
    pub target: Target,
    /// How many cases at once.
    #[command(flatten)]
    pub parallel: Parallel,
    /// Check only these mutants (repeatable); default: every mutant a case targets.
    #[arg(long = "mutant")]
    pub mutants: Vec<String>,
    /// Instead of the cases, check what `rehearse explore` catches: each operator mutant an
    /// `[[invariant]]` of docs/contract.toml names is explored (the operations that invariant
    /// judges) and must break that invariant in some schedule.
    #[arg(long)]
    pub explore: bool,
}

/// `rehearse bench`: how many full rehearsals to time.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The cluster and where the bundles go.
    #[command(flatten)]
    pub target: Target,
    /// How many cases at once.
    #[command(flatten)]
    pub parallel: Parallel,
    /// Consecutive full rehearsals to run (the flake check wants 20).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Run the rehearsals on a busy machine: N CPU-burning processes (busy shell loops) and,
    /// with them, one I/O mixer (writes, fsyncs, reads and removes 64 MiB in a loop, as
    /// `stress-ng --iomix` does), started before the first run and ended after the last, so
    /// what a loaded CI runner does to the verdicts is measured (the target is still 0 runs with
    /// a failed case).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub load: usize,
    /// Instead of rehearsals, qualify fleets of these sizes (e.g. `10,50,100`), each on its own
    /// embedded cluster, and print the qualification's wall time, time per member, peak memory
    /// and API requests.
    #[arg(long, value_delimiter = ',', value_name = "SIZES", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub fleet: Vec<u16>,
    /// Instead of rehearsals, run the whole exploration (`rehearse explore`: every point of
    /// every operation × every applicable fault, against the reference operator) `--runs`
    /// times and print its wall time, schedules, violations and peak memory.
    #[arg(long, conflicts_with = "fleet")]
    pub explore: bool,
    /// Instead of rehearsals, run the whole signal exploration of the qualification
    /// (`rehearse explore --qualify-signals`: every receipt of four qualifications × four
    /// signal patterns) `--runs` times and print its wall time, schedules and failures.
    #[arg(long, conflicts_with_all = ["fleet", "explore"])]
    pub qualify_signals: bool,
    /// Members per promotion batch for --fleet.
    #[arg(long, default_value_t = 10, requires = "fleet")]
    pub batch_size: usize,
    /// Members of a batch gated at once for --fleet.
    #[arg(long, default_value_t = 4, requires = "fleet")]
    pub gate_concurrency: usize,
}

/// The load `--load N` puts on the machine: N CPU burners and one I/O mixer, all ended when it
/// drops.
struct Load {
    burners: Vec<crate::process::ChildGuard>,
    mixer: Option<IoMixer>,
}

/// Writes, fsyncs, reads and removes a 64 MiB file in the temporary directory in a loop on its
/// own thread (as `stress-ng --iomix` does), until dropped; the file goes with it.
struct IoMixer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl IoMixer {
    fn start() -> Result<Self, CliError> {
        use std::io::{Read, Write};
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let file = std::env::temp_dir().join(format!("rehearsal-iomix-{}", std::process::id()));
        let running = stop.clone();
        let thread = std::thread::Builder::new()
            .name("io-mixer".into())
            .spawn(move || {
                let block = vec![0x5a_u8; 1 << 20];
                let mut back = vec![0_u8; 1 << 20];
                while !running.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(mut f) = std::fs::File::create(&file) else {
                        return;
                    };
                    for _ in 0..64 {
                        if f.write_all(&block).is_err() {
                            break;
                        }
                    }
                    let _ = f.sync_all();
                    if let Ok(mut f) = std::fs::File::open(&file) {
                        while matches!(f.read(&mut back), Ok(n) if n > 0) {}
                    }
                    let _ = std::fs::remove_file(&file);
                }
            })
            .map_err(|e| CliError::usage(format!("cannot start the I/O mixer for --load: {e}")))?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for IoMixer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `n` CPU-burning processes (`sh -c 'while :; do :; done'`, each ended when the load drops,
/// and with the harness, by `PR_SET_PDEATHSIG`) and, when `n` > 0, one [`IoMixer`].
fn cpu_burners(n: usize) -> Result<Load, CliError> {
    let log = crate::process::ProcessLog::default();
    let burners = (0..n)
        .map(|_| {
            crate::process::Cmd::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn(std::path::Path::new("/dev/null"), &log)
                .map_err(|e| CliError::usage(format!("cannot start a CPU burner for --load: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let mixer = if n > 0 { Some(IoMixer::start()?) } else { None };
    Ok(Load { burners, mixer })
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
    target
        .operator
        .apply(matches!(target.cluster, ClusterArg::Embedded))?;
    match target.cluster {
        ClusterArg::Embedded => {
            // docker-registry serves the module bundles of `candidate_module_digest_mismatch` and
            // `candidate_module_layer_other_bytes`.
            let registry = std::env::var("REHEARSAL_DOCKER_REGISTRY")
                .unwrap_or_else(|_| "docker-registry".into());
            for (program, package) in [
                ("bwrap", "bubblewrap"),
                ("restic", "restic"),
                (registry.as_str(), "docker-registry"),
            ] {
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
            options.deploy = crate::deploy::kind::KindDeploy::ReferenceOperator(install).shared();
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
    slots: usize,
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
        parallel: slots,
        mutant,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        case_bound: run::CASE_BOUND,
        operator_profile: target.operator_profile,
    })
}

fn print_outcome(outcome: &RunOutcome) {
    let count = |v: Verdict| outcome.results.iter().filter(|r| r.verdict == v).count();
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
    let mut closing = format!(
        "{} passed, {} failed",
        count(Verdict::Passed),
        count(Verdict::Failed)
    );
    for (v, word) in [
        (Verdict::NotApplicable, "not applicable"),
        (Verdict::Skipped, "skipped"),
    ] {
        if count(v) > 0 {
            closing.push_str(&format!(", {} {word}", count(v)));
        }
    }
    if outcome.interrupted {
        closing.push_str(", interrupted before every case ended");
    }
    println!("{closing}");
}

/// `--parallel N`: at least one case at a time (0 would run nothing and wait forever).
fn parse_parallel(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(0) => Err("0 cases at a time would run nothing: use 1 or more".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs the selected cases (or lists them) and prints one line per case; a failed case exits 1.
pub async fn run(args: RunArgs) -> Result<(), CliError> {
    if args.list {
        for c in CASES {
            println!("{:<8} {:<50} {}", c.bucket, c.name, c.proves);
        }
        return Ok(());
    }
    let cases = select(&args.buckets, &args.cases)?;
    let slots = args.parallel.slots(&args.target);
    let cfg = config(
        &args.target,
        slots,
        cases,
        args.keep,
        None,
        run::new_run_id(),
    )?;
    super::operator::preflight_operator().await?;
    let outcome = run::run(cfg).await.map_err(run_error)?;
    print_outcome(&outcome);
    print_report(&outcome.bundle_dir);
    if outcome.interrupted {
        return Err(CliError::interrupted(format!(
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

/// Mutant → the cases that must catch it, each with its targeted check.
pub type KillList = Vec<(String, Vec<(&'static Case, String)>)>;

/// Every mutant the manifest lists, with the cases that must catch it and the check each must
/// catch it on (`scenarios/buckets.toml`, as compiled in).
pub fn kill_list() -> Result<KillList, CliError> {
    let manifest =
        crate::buckets::Manifest::builtin().map_err(|e| CliError::usage(e.to_string()))?;
    let mut out: KillList = Vec::new();
    for (_, entry) in manifest.cases() {
        let Some(case) = crate::cases::find(&entry.test) else {
            return Err(CliError::usage(format!(
                "scenarios/buckets.toml names case {} which this rehearse does not have: rebuild rehearse",
                entry.test
            )));
        };
        for m in &entry.mutants {
            match out.iter_mut().find(|(name, _)| *name == m.name) {
                Some((_, cases)) => cases.push((case, m.check.clone())),
                None => out.push((m.name.clone(), vec![(case, m.check.clone())])),
            }
        }
    }
    Ok(out)
}

/// Judges one (mutant, case) pair: caught only when the case failed on the targeted check,
/// never on a timeout, a setup error or another check alone.
/// (The rule itself is [`KillCell::judge`](crate::evidence::bundle::KillCell::judge), tested
/// in the evidence crate.)
pub fn judge(result: &crate::cases::CaseResult, check: &str) -> crate::evidence::bundle::KillCell {
    crate::evidence::bundle::KillCell::judge(
        check,
        result.verdict,
        &result.failed_checks,
        result.reason.as_deref(),
    )
}

/// The kill list (mutant → the cases that must catch it, each on its check), narrowed to
/// `mutants` when any are named; an unknown name is a usage error listing the known ones.
fn selected_mutants(mutants: &[String]) -> Result<KillList, CliError> {
    let mut list = kill_list()?;
    for m in mutants {
        if !list.iter().any(|(name, _)| name == m) {
            let known: Vec<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
            return Err(CliError::usage(format!(
                "unknown mutant {m:?}; known: {}",
                known.join(", ")
            )));
        }
    }
    if !mutants.is_empty() {
        list.retain(|(name, _)| mutants.iter().any(|m| m == name));
    }
    Ok(list)
}

/// Runs every (mutant, case) pair of `list` against its mutant and judges whether the case
/// caught it on its targeted check.
async fn kill_matrix(
    target: &Target,
    slots: usize,
    run_id: &str,
    list: &KillList,
) -> Result<KillMatrix, CliError> {
    // Every (mutant, case) pair is its own run (one embedded cluster, one bundle), so pairs of
    // different mutants share the machine's `--parallel` slots instead of waiting in turn.
    let mut pairs: Vec<(String, &'static Case, String)> = list
        .iter()
        .flat_map(|(m, cases)| {
            cases
                .iter()
                .map(move |(c, check)| (m.clone(), *c, check.clone()))
        })
        .collect();
    // Longest cases first, so the last slot to finish is not a long case started last.
    pairs.sort_by_key(|(_, case, _)| std::cmp::Reverse(run::case_cost(case.name)));
    let runs = pairs.iter().map(|(mutant, case, check)| {
        let config = config(
            target,
            1,
            vec![*case],
            false,
            Some(mutant.clone()),
            format!("{run_id}-mutant-{mutant}-{}", case.name),
        );
        async move {
            let outcome = run::run(config?).await.map_err(run_error)?;
            let cell = match outcome.results.iter().find(|r| r.case == case.name) {
                Some(r) => judge(r, check),
                None => crate::evidence::bundle::KillCell {
                    caught: false,
                    check: check.clone(),
                    failed_checks: Vec::new(),
                    reason: Some("the case did not run".into()),
                },
            };
            println!(
                "mutant {mutant:<36} case {:<50} {}",
                case.name,
                if cell.caught {
                    cell.describe()
                } else {
                    format!("SURVIVED: {}", cell.describe())
                }
            );
            Ok::<_, CliError>((mutant.clone(), case.name, cell))
        }
    });
    let cells: Vec<Result<_, CliError>> = futures::stream::iter(runs)
        .buffer_unordered(slots)
        .collect()
        .await;
    let mut matrix = KillMatrix::default();
    for cell in cells {
        let (mutant, case, cell) = cell?;
        matrix.record_cell(&mutant, case, cell);
    }
    Ok(matrix)
}

/// Runs every case against each mutant it targets and writes the kill matrix; a mutant that
/// survives its targeted check exits 1.
pub async fn selftest(args: SelftestArgs) -> Result<(), CliError> {
    if args.explore {
        return super::explore::selftest(&args.target.reports, &args.mutants).await;
    }
    let list = selected_mutants(&args.mutants)?;
    // The catching cases must pass against the correct operator, or a "catch" proves nothing.
    let mut needed: Vec<&'static Case> = Vec::new();
    for (_, cases) in &list {
        for (c, _) in cases {
            if !needed.contains(c) {
                needed.push(c);
            }
        }
    }
    let run_id = run::new_run_id();
    let slots = args.parallel.slots(&args.target);
    let baseline = run::run(config(
        &args.target,
        slots,
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
    let matrix = kill_matrix(&args.target, slots, &run_id, &list).await?;
    let survivors = matrix.survivors();
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
            "mutant(s) not caught on their targeted check by every case listed for them: {}",
            survivors.join(", ")
        )));
    }
    Ok(())
}

/// The embedded cluster's start-up with the reference operator, five times: median and max.
async fn bench_startup(cluster: &Cluster) -> Result<(), CliError> {
    let mut ups = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let backend = run::start_backend(cluster, None)
            .await
            .map_err(|e| CliError::usage(e.to_string()))?;
        ups.push(t.elapsed());
        let _ = backend.teardown(false).await;
    }
    // The first start also starts the process' shared REST server (as a run's first case
    // does); the others attach to it, as every later case of a run does.
    let first = ups[0];
    ups.sort();
    println!(
        "embedded cluster + reference operator up: median {:.0} ms, max {:.0} ms over {} starts; the first (which starts the shared REST server) {:.0} ms (target ≤ 100 ms median)",
        ups[ups.len() / 2].as_secs_f64() * 1000.0,
        ups[ups.len() - 1].as_secs_f64() * 1000.0,
        ups.len(),
        first.as_secs_f64() * 1000.0
    );
    Ok(())
}

/// `bench --fleet`: the fleet-scale qualification benchmark ([`super::fleet_bench`]).
async fn bench_fleet(args: &BenchArgs, cluster: &Cluster) -> Result<(), CliError> {
    if !matches!(cluster, Cluster::Embedded) {
        return Err(CliError::usage(
            "bench --fleet runs on the embedded cluster only (it starts one per size); drop --cluster",
        ));
    }
    let sizes: Vec<usize> = args.fleet.iter().map(|&n| usize::from(n)).collect();
    let _burners = cpu_burners(args.load)?;
    super::fleet_bench::bench_fleet(
        &args.target.reports,
        &sizes,
        args.batch_size.max(1),
        args.gate_concurrency.max(1),
        Duration::from_secs(1200),
    )
    .await
}

/// `bench --explore`: the whole exploration, `--runs` times (goal: ≤ 10 minutes on 2 cores).
async fn bench_explore(args: &BenchArgs) -> Result<(), CliError> {
    use crate::explore::{self, ExploreConfig, Operation};
    let _burners = cpu_burners(args.load)?;
    let mut walls = Vec::new();
    let mut violating_runs = 0;
    for i in 0..args.runs.max(1) {
        let sampler = super::fleet_bench::MemorySampler::start();
        let t = Instant::now();
        let outcome = explore::run(ExploreConfig {
            operations: Operation::ALL.to_vec(),
            faults: Vec::new(),
            limit: None,
            replay: Vec::new(),
            regressions: Vec::new(),
            reports: args.target.reports.clone(),
            run_id: format!("bench-explore-{}-{i}", run::new_run_id()),
            parallel: args.parallel.slots(&args.target),
            mutant: None,
            case_bound: run::CASE_BOUND,
            shard: None,
        })
        .await
        .map_err(run_error)?;
        let wall = t.elapsed();
        let (own_kib, descendants_kib) = sampler.stop().await;
        walls.push(wall);
        let schedules = outcome
            .results
            .iter()
            .filter(|r| r.schedule.is_some())
            .count();
        let failed = outcome
            .results
            .iter()
            .filter(|r| r.ended.verdict != Verdict::Passed)
            .count();
        if failed > 0 {
            violating_runs += 1;
        }
        println!(
            "exploration {}/{}: {:.1} s wall, {schedules} schedules after {} reference runs, {failed} violated or did not finish; peak memory {} MiB (harness) + {} MiB (clusters' processes)",
            i + 1,
            args.runs.max(1),
            wall.as_secs_f64(),
            outcome.results.len() - schedules,
            own_kib / 1024,
            descendants_kib / 1024
        );
    }
    walls.sort();
    println!(
        "exploration wall time over {} run(s): median {:.1} s, max {:.1} s (goal ≤ 600 s on 2 cores)",
        walls.len(),
        walls[walls.len() / 2].as_secs_f64(),
        walls[walls.len() - 1].as_secs_f64()
    );
    println!(
        "explorations with a violation against the reference operator: {violating_runs} of {} (target 0)",
        walls.len()
    );
    if violating_runs > 0 {
        return Err(CliError::failed(
            "the exploration found violations against the reference operator",
        ));
    }
    Ok(())
}

/// `bench --qualify-signals`: the whole signal exploration of the qualification, `--runs` times.
async fn bench_signals(args: &BenchArgs) -> Result<(), CliError> {
    use crate::explore::signals::{self, SignalsConfig};
    let _burners = cpu_burners(args.load)?;
    let rehearse = std::env::current_exe()
        .map_err(|e| CliError::usage(format!("cannot find the rehearse binary: {e}")))?;
    let mut failing_runs = 0;
    let mut walls = Vec::new();
    for i in 0..args.runs.max(1) {
        let t = Instant::now();
        let outcome = signals::run(SignalsConfig {
            variants: Vec::new(),
            patterns: Vec::new(),
            limit: None,
            replay: Vec::new(),
            regressions: Vec::new(),
            reports: args.target.reports.clone(),
            run_id: format!("bench-signals-{}-{i}", run::new_run_id()),
            case_bound: run::CASE_BOUND,
            rehearse: rehearse.clone(),
            shard: None,
        })
        .await
        .map_err(run_error)?;
        let wall = t.elapsed();
        walls.push(wall);
        let failed = outcome
            .results
            .iter()
            .filter(|r| r.ended.verdict != Verdict::Passed)
            .count();
        if failed > 0 {
            failing_runs += 1;
        }
        println!(
            "signal exploration {}/{}: {:.1} s wall; {} (after {} reference runs)",
            i + 1,
            args.runs.max(1),
            wall.as_secs_f64(),
            outcome.closing_line(),
            outcome.points.len()
        );
    }
    walls.sort();
    println!(
        "signal exploration wall time over {} run(s): median {:.1} s, max {:.1} s; runs with a schedule not ok: {failing_runs} (target 0)",
        walls.len(),
        walls[walls.len() / 2].as_secs_f64(),
        walls[walls.len() - 1].as_secs_f64()
    );
    if failing_runs > 0 {
        return Err(CliError::failed(
            "the signal exploration found schedules that are not ok",
        ));
    }
    Ok(())
}

/// The benchmarks that are not rehearsals (`--fleet`, `--explore`, `--qualify-signals`), when
/// one is asked for.
async fn other_bench(args: &BenchArgs, cluster: &Cluster) -> Option<Result<(), CliError>> {
    if !args.fleet.is_empty() {
        return Some(bench_fleet(args, cluster).await);
    }
    if args.explore {
        return Some(bench_explore(args).await);
    }
    if args.qualify_signals {
        return Some(bench_signals(args).await);
    }
    None
}

/// Runs the rehearsal `--runs` times and prints start-up, per-case and total times, the step
/// profile, and how many runs had a failed case (any exits 1); `--load N` runs them beside N CPU burners.
pub async fn bench(args: BenchArgs) -> Result<(), CliError> {
    if (args.explore || args.qualify_signals)
        && !matches!(args.target.cluster, ClusterArg::Embedded)
    {
        return Err(CliError::usage(
            "bench --explore and --qualify-signals run on the embedded cluster only (explore holds the operator's requests in its API server; each schedule starts its own); drop --cluster",
        ));
    }
    let cluster = cluster(&args.target)?;
    check_reports_dir(&args.target.reports)?;
    if let Some(other) = other_bench(&args, &cluster).await {
        return other;
    }
    if matches!(cluster, Cluster::Embedded) {
        bench_startup(&cluster).await?;
    }
    let burners = cpu_burners(args.load)?;
    if burners.mixer.is_some() {
        println!(
            "under load: {} CPU-burning process(es) and an I/O mixer on {} core(s), until the last run ends",
            burners.burners.len(),
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
    }
    let mut flakes = 0;
    let mut profile = super::profile::Profile::default();
    let mut walls = Vec::new();
    for i in 0..args.runs.max(1) {
        let t = Instant::now();
        let outcome = run::run(config(
            &args.target,
            args.parallel.slots(&args.target),
            CASES.iter().collect(),
            false,
            None,
            format!("bench-{}-{i}", run::new_run_id()),
        )?)
        .await
        .map_err(run_error)?;
        let total = t.elapsed();
        walls.push(total);
        if let Err(e) = profile.add_bundle(&outcome.bundle_dir) {
            eprintln!("rehearse bench: step profile skips a bundle: {e}");
        }
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
            "full rehearsal {}/{}: {:.1} s wall, {} of {} cases passed (target ≤ 15 s median, ≤ 20 s max)",
            i + 1,
            args.runs.max(1),
            total.as_secs_f64(),
            outcome.results.len() - failed,
            outcome.results.len()
        );
    }
    walls.sort();
    println!(
        "full rehearsal wall time over {} run(s) at --parallel {}: median {:.1} s, max {:.1} s",
        walls.len(),
        args.parallel.slots(&args.target),
        walls[walls.len() / 2].as_secs_f64(),
        walls[walls.len() - 1].as_secs_f64()
    );
    print!("{}", profile.render());
    drop(burners);
    println!(
        "runs with a failed case: {flakes} of {}{} (target 0)",
        args.runs.max(1),
        if args.load > 0 {
            format!(" under --load {}", args.load)
        } else {
            String::new()
        }
    );
    if flakes > 0 {
        return Err(CliError::failed(format!(
            "{flakes} run(s) had a failing case"
        )));
    }
    Ok(())
}
