//! `rehearse explore --qualify-signals`: the exploration turned on Rehearsal itself. The
//! qualification procedure (`rehearse qualify`, the real binary, in its own process against an
//! embedded cluster) is stopped at every step by every way a release manager stops it, and each
//! ending is judged from a fresh read of the cluster by the qualification's own invariants
//! (`way-back`, `truth`, and `qualification`, contract D6; [`crate::evidence::invariants::way_back`]).
//!
//! 1. **Points are learned**: a reference run of each variant (a compatible or a
//!    restore-required candidate, batches of one or two members, a fleet of two) records its
//!    receipts; each receipt is a point ("the signal arrives right after this receipt").
//! 2. **Signals are placed exactly**: the schedule's `rehearse qualify` holds itself after
//!    receipt `k` ([`crate::evidence::receipts::HOLD_ENV`]: it waits in a named pipe), the
//!    signal is sent while it waits, then it goes on. Four patterns ([`Pattern`]): SIGINT,
//!    SIGINT then a second SIGINT as soon as the first is acknowledged, SIGTERM, and SIGKILL
//!    followed by the same command again.
//! 3. **The oracle is the cluster**: once the process (and, after a SIGKILL, its rerun) ended,
//!    the fleet, every Backup and the repository's snapshots are read afresh; who a batch
//!    promoted comes from the runs' promotion receipts, the pre-promotion Backups they created
//!    from their journals, what the report says from its `qualification.json`. A point the run
//!    never reached is a failed check (`placed`), never a pass.

use crate::evidence::place::Place;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncBufReadExt;

use crate::backend::Backend;
use crate::cases::{BodyEnded, RunOptions, run_body};
use crate::context::{CaseContext, CaseError, Checks};
use crate::evidence::bundle::{Bundle, BundleMeta, BundleSummary};
use crate::evidence::invariants::Violation;
use crate::evidence::invariants::way_back::{self, FleetRead, TRUTH, TakenBackup};
use crate::evidence::qualification::{Outcome, Plan, Qualification, Rollback};
use crate::evidence::report::qualification::QualificationReport;
use crate::fixture;
use crate::fixture::fleet::{self as rollout, FleetSpec};
use crate::run::{Cluster, RunError, current_commit, start_backend};

/// The bucket (and operation name) every signal schedule is recorded under.
pub const OPERATION: &str = crate::evidence::invariants::QUALIFY_SIGNALS;

/// The invariants every signal schedule is judged by, in report order.
pub const INVARIANTS: &[&str] = way_back::SIGNAL_INVARIANTS;

/// How the procedure is stopped at a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Pattern {
    /// One SIGINT (Ctrl-C).
    Sigint,
    /// SIGINT, then a second SIGINT as soon as the first one's line is out.
    SigintTwice,
    /// One SIGTERM.
    Sigterm,
    /// SIGKILL, then the same command again to its end.
    SigkillRerun,
}

impl Pattern {
    /// Every pattern, in matrix order.
    pub const ALL: &[Pattern] = &[
        Pattern::Sigint,
        Pattern::SigintTwice,
        Pattern::Sigterm,
        Pattern::SigkillRerun,
    ];

    /// Its name in schedule ids and the matrix.
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Sigint => "sigint",
            Pattern::SigintTwice => "sigint-twice",
            Pattern::Sigterm => "sigterm",
            Pattern::SigkillRerun => "sigkill-rerun",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|p| p.as_str() == name)
    }

    /// Whether the procedure is stopped at once (nothing put back by it).
    fn at_once(self) -> bool {
        matches!(self, Pattern::SigintTwice | Pattern::SigkillRerun)
    }
}

/// Which qualification a schedule stops: its rollback and its batch size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Variant {
    /// A compatible candidate, batches of one.
    CompatibleB1,
    /// A compatible candidate, one batch of two.
    CompatibleB2,
    /// A format-changing candidate (restore-required), batches of one.
    RestoreRequiredB1,
    /// A format-changing candidate (restore-required), one batch of two.
    RestoreRequiredB2,
}

impl Variant {
    /// Every variant, in matrix order.
    pub const ALL: &[Variant] = &[
        Variant::CompatibleB1,
        Variant::CompatibleB2,
        Variant::RestoreRequiredB1,
        Variant::RestoreRequiredB2,
    ];

    /// Its name in schedule ids.
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::CompatibleB1 => "compatible-b1",
            Variant::CompatibleB2 => "compatible-b2",
            Variant::RestoreRequiredB1 => "restore-required-b1",
            Variant::RestoreRequiredB2 => "restore-required-b2",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == name)
    }

    fn rollback(self) -> Rollback {
        match self {
            Variant::CompatibleB1 | Variant::CompatibleB2 => Rollback::Compatible,
            _ => Rollback::RestoreRequired,
        }
    }

    fn candidate(self) -> &'static str {
        match self.rollback() {
            Rollback::Compatible => fixture::VERSION_COMPAT,
            Rollback::RestoreRequired => fixture::VERSION_FORMAT,
        }
    }

    fn batch_size(self) -> usize {
        match self {
            Variant::CompatibleB1 | Variant::RestoreRequiredB1 => 1,
            _ => 2,
        }
    }
}

/// One schedule: a variant stopped by a pattern right after one receipt of its run, named by
/// that receipt's step and occurrence ([`Place`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SignalSchedule {
    /// The qualification.
    pub variant: Variant,
    /// The receipt the signal follows.
    pub place: Place,
    /// How it is stopped.
    pub pattern: Pattern,
}

impl SignalSchedule {
    /// Its id, also its case name:
    /// `qualify-signals-restore-required-b2.back_up_batch_2.1.sigint-twice`.
    pub fn id(&self) -> String {
        crate::evidence::place::id(
            &format!("{OPERATION}-{}", self.variant.as_str()),
            &self.place,
            self.pattern.as_str(),
        )
    }

    /// Parses an id written by [`Self::id`]; the error names the expected shape.
    pub fn parse(id: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "signal schedule id {id:?} is not {OPERATION}-<variant>.<receipt>.<occurrence>.<pattern> (the receipt's step with _ for a space, e.g. {OPERATION}-compatible-b1.back_up_batch_1.1.sigint); variants: {}; patterns: {}",
                Variant::ALL
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                Pattern::ALL
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let (operation, place, pattern) = crate::evidence::place::parse(id).ok_or_else(bad)?;
        let variant = operation
            .strip_prefix(OPERATION)
            .and_then(|r| r.strip_prefix('-'))
            .and_then(Variant::parse)
            .ok_or_else(bad)?;
        Ok(Self {
            variant,
            place,
            pattern: Pattern::parse(pattern).ok_or_else(bad)?,
        })
    }
}

/// What to explore.
#[derive(Debug, Clone)]
pub struct SignalsConfig {
    /// The variants (all when empty).
    pub variants: Vec<Variant>,
    /// The patterns (all when empty).
    pub patterns: Vec<Pattern>,
    /// At most this many schedules, spread evenly over each variant's points and patterns.
    pub limit: Option<usize>,
    /// Run exactly these schedules (no reference runs).
    pub replay: Vec<SignalSchedule>,
    /// Run exactly these saved schedules, each placed by a reference run of its variant (the
    /// variants above are then those the files name).
    pub regressions: Vec<super::saved::SavedSignalSchedule>,
    /// `reports/`.
    pub reports: PathBuf,
    /// The run's id.
    pub run_id: String,
    /// Each schedule's ceiling.
    pub case_bound: Duration,
    /// The `rehearse` binary each schedule runs `qualify` with.
    pub rehearse: PathBuf,
    /// Run only this shard's share of the schedules (every reference run still runs).
    pub shard: Option<crate::evidence::place::Shard>,
}

/// How one schedule (or reference run) ended.
#[derive(Debug, Clone)]
pub struct SignalResult {
    /// Its id (`<operation>-<variant>-reference` for a reference run).
    pub id: String,
    /// The schedule, `None` for a reference run.
    pub schedule: Option<SignalSchedule>,
    /// How its case ended.
    pub ended: BodyEnded,
}

/// What a signal exploration produced.
#[derive(Debug)]
pub struct SignalsOutcome {
    /// The finalized bundle.
    pub bundle_dir: PathBuf,
    /// Its summary.
    pub summary: BundleSummary,
    /// Each variant's points: the step of every receipt its reference run wrote.
    pub points: Vec<(Variant, Vec<String>)>,
    /// Every result, references first, then in matrix order.
    pub results: Vec<SignalResult>,
}

impl SignalsOutcome {
    /// The point × pattern matrix of `variant` as Markdown: a row per receipt, a column per
    /// pattern; a cell is `ok`, the invariants broken, or the verdict.
    pub fn matrix_markdown(&self, variant: Variant) -> String {
        let labels = self
            .points
            .iter()
            .find(|(v, _)| *v == variant)
            .map(|(_, p)| p.clone())
            .unwrap_or_default();
        super::matrix_markdown_of(
            &format!("{OPERATION}-{}", variant.as_str()),
            self.results
                .iter()
                .filter(|r| r.schedule.as_ref().is_some_and(|s| s.variant == variant))
                .map(|r| (r.id.as_str(), &r.ended)),
            labels,
            "after receipt",
        )
    }

    /// The closing line: how many schedules, how many ok, violated, unknown and not placed.
    pub fn closing_line(&self) -> String {
        crate::evidence::report::matrix::closing_line(
            "signal schedules",
            self.results
                .iter()
                .filter(|r| r.schedule.is_some())
                .map(|r| super::standing(&r.ended)),
        )
    }
}

/// At most `limit` of `schedules`: each pattern keeps an equal share (the first patterns one
/// more when it does not divide), each share taken evenly over that pattern's schedules (so
/// over every variant and point).
pub fn spread(schedules: Vec<SignalSchedule>, limit: usize) -> Vec<SignalSchedule> {
    if limit >= schedules.len() {
        return schedules;
    }
    let mut patterns: Vec<Pattern> = schedules.iter().map(|s| s.pattern).collect();
    patterns.sort();
    patterns.dedup();
    let mut picked = Vec::new();
    for (i, pattern) in patterns.iter().enumerate() {
        let share = limit / patterns.len() + usize::from(i < limit % patterns.len());
        let of: Vec<&SignalSchedule> = schedules.iter().filter(|s| s.pattern == *pattern).collect();
        let n = of.len();
        picked.extend((0..share.min(n)).map(|j| of[j * n / share.min(n).max(1)].clone()));
    }
    picked.sort();
    picked
}

/// Explores `config`: a reference run per variant, then every (point, pattern) schedule, one at
/// a time, each on its own embedded cluster.
pub async fn run(config: SignalsConfig) -> Result<SignalsOutcome, RunError> {
    let dir = Bundle::dir_for(&config.reports, &config.run_id);
    let bundle = Bundle::create(
        &dir,
        BundleMeta::new(
            &config.run_id,
            &current_commit(),
            "reference-operator",
            env!("CARGO_PKG_VERSION"),
            crate::backend::Arch::host().as_str(),
        ),
    )?;
    let options = RunOptions {
        run_id: config.run_id.clone(),
        keep_on_failure: false,
        case_bound: config.case_bound,
        harness_mutant: None,
        expected_operator: None,
    };
    let variants = variants_of(&config);
    let patterns = if config.patterns.is_empty() {
        Pattern::ALL.to_vec()
    } else {
        config.patterns.clone()
    };
    let mut results = Vec::new();
    let mut points = Vec::new();
    let mut schedules = config.replay.clone();
    let mut unplaced = Vec::new();
    if schedules.is_empty() {
        for &variant in &variants {
            let id = reference_id(variant, config.shard);
            let (ended, learned) =
                on_own_cluster(&bundle, &id, &options, &config, variant, None).await?;
            println!(
                "[reference] {:<10} {id}: {} receipts · {:.1}s",
                ended.verdict.as_str(),
                learned.len(),
                ended.duration.as_secs_f64()
            );
            schedules.extend(schedules_of(
                variant,
                &learned,
                &patterns,
                &config.regressions,
                &mut unplaced,
            ));
            results.push(SignalResult {
                id,
                schedule: None,
                ended,
            });
            points.push((variant, learned));
        }
        if let Some(limit) = config.limit {
            schedules = spread(schedules, limit);
        }
    }
    if let Some(shard) = config.shard {
        schedules.retain(|s| shard.holds(&s.id()));
    }
    let total = schedules.len();
    for (i, s) in schedules.into_iter().enumerate() {
        let id = s.id();
        let (ended, _) =
            on_own_cluster(&bundle, &id, &options, &config, s.variant, Some(s.clone())).await?;
        println!(
            "[{}/{total}] {:<10} {id} {:.1}s{}",
            i + 1,
            ended.verdict.as_str(),
            ended.duration.as_secs_f64(),
            if ended.failed_checks.is_empty() {
                String::new()
            } else {
                format!(
                    " · violated: {} · replay: rehearse explore --replay {id}",
                    ended.failed_checks.join(", ")
                )
            }
        );
        results.push(SignalResult {
            id,
            schedule: Some(s),
            ended,
        });
    }
    let summary = bundle.finalize(false)?;
    if !unplaced.is_empty() {
        return Err(RunError::Schedule(unplaced.join("; ")));
    }
    Ok(SignalsOutcome {
        bundle_dir: dir,
        summary,
        points,
        results,
    })
}

/// The case name of `variant`'s reference run (in `shard`, with its suffix).
fn reference_id(variant: Variant, shard: Option<crate::evidence::place::Shard>) -> String {
    format!(
        "{OPERATION}-{}-reference{}",
        variant.as_str(),
        shard.map(|s| s.suffix()).unwrap_or_default()
    )
}

/// The variants a run explores: those the saved regressions name, or those asked for (all
/// when none).
fn variants_of(config: &SignalsConfig) -> Vec<Variant> {
    if !config.regressions.is_empty() {
        let mut of_files: Vec<Variant> = config
            .regressions
            .iter()
            .filter_map(|s| s.variant().ok())
            .collect();
        of_files.sort();
        of_files.dedup();
        of_files
    } else if config.variants.is_empty() {
        Variant::ALL.to_vec()
    } else {
        config.variants.clone()
    }
}

/// The schedules of `variant` whose reference run wrote receipts with `steps`: every receipt
/// after the run's first (the signal handlers are installed before it) × every pattern, or,
/// with `regressions`, exactly those saved for it (one that no longer resolves is added to
/// `unplaced`, naming it).
fn schedules_of(
    variant: Variant,
    steps: &[String],
    patterns: &[Pattern],
    regressions: &[super::saved::SavedSignalSchedule],
    unplaced: &mut Vec<String>,
) -> Vec<SignalSchedule> {
    if regressions.is_empty() {
        return Place::all(steps)
            .into_iter()
            .skip(1)
            .flat_map(|place| {
                patterns.iter().map(move |&pattern| SignalSchedule {
                    variant,
                    place: place.clone(),
                    pattern,
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for saved in regressions.iter().filter(|s| s.variant() == Ok(variant)) {
        match saved.resolve(steps) {
            Ok(s) => out.push(s),
            Err(e) => unplaced.push(format!(
                "saved signal schedule {} {} after {:?} #{}: {e}",
                saved.variant, saved.signal, saved.receipt, saved.occurrence
            )),
        }
    }
    out
}

/// Runs one schedule (or, with `schedule` `None`, the reference run of `variant`) as a case on
/// a fresh embedded cluster; returns how it ended and the steps of the receipts its (first)
/// qualification wrote.
async fn on_own_cluster(
    bundle: &Bundle,
    name: &str,
    options: &RunOptions,
    config: &SignalsConfig,
    variant: Variant,
    schedule: Option<SignalSchedule>,
) -> Result<(BodyEnded, Vec<String>), RunError> {
    let backend: Box<dyn Backend> = start_backend(&Cluster::Embedded, None).await?;
    let learned = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = learned.clone();
    let config = config.clone();
    let ended = run_body(backend.as_ref(), bundle, name, OPERATION, options, |ctx| {
        Box::pin(async move {
            let steps = body(ctx, &config, variant, schedule).await?;
            *into
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = steps;
            Ok(())
        })
    })
    .await;
    let _ = backend.teardown(false).await;
    let learned = learned
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    Ok((ended?, learned))
}

/// The schedule's body: the fleet, the qualification stopped as the schedule says (run to its
/// end for the reference run), then the judgement from a fresh read.
async fn body(
    ctx: &CaseContext<'_>,
    config: &SignalsConfig,
    variant: Variant,
    schedule: Option<SignalSchedule>,
) -> Result<Vec<String>, CaseError> {
    let members = [rollout::SOURCE, rollout::OTHER];
    let candidate = variant.candidate();
    rollout::fleet(
        ctx,
        &FleetSpec {
            candidates: &[candidate],
            members: &members,
            ..Default::default()
        },
    )
    .await?;
    let mut plan = rollout::plan(ctx, &members, candidate, variant.rollback());
    plan.batch_size = variant.batch_size();
    let before = crate::qualify::fleet::read(ctx, &plan, &[]).await?;
    let reports = ctx.recorder.dir().join("qualify");
    // Short run ids (a run id labels objects: at most 63 characters), unique per namespace.
    let tail = &ctx.namespace[ctx.namespace.len().saturating_sub(8)..];
    let first = format!("signals-{tail}-q");
    let hold = schedule.as_ref().map(|s| (s.place.clone(), s.pattern));
    let mut runs = vec![qualify_process(ctx, config, &plan, &reports, &first, hold).await?];
    if schedule
        .as_ref()
        .is_some_and(|s| s.pattern == Pattern::SigkillRerun)
        && runs[0].placed
    {
        let again = format!("signals-{tail}-r");
        runs.push(qualify_process(ctx, config, &plan, &reports, &again, None).await?);
    }
    let steps = runs[0].steps.clone();
    if schedule.is_none() && steps.len() < 2 {
        // A reference run that learned no points would explore nothing and pass.
        return Err(CaseError::evidence_absent(
            format!(
                "the receipts of the reference qualification {}",
                runs[0].run_id
            ),
            format!(
                "{} receipt(s) read from {} (exit {:?})",
                steps.len(),
                runs[0].bundle.display(),
                runs[0].exit
            ),
        ));
    }
    ctx.recorder.step(
        "qualify runs",
        json!({"runs": runs.iter().map(|r| json!({
            "run": r.run_id, "exit": r.exit, "placed": r.placed, "receipts": r.steps.len(),
        })).collect::<Vec<_>>()}),
    )?;
    judge(ctx, &plan, &before, &runs, schedule).await?;
    Ok(steps)
}

/// One `rehearse qualify` process as a schedule ran it.
struct QualifyRun {
    run_id: String,
    bundle: PathBuf,
    exit: Option<i32>,
    /// The signal landed where the schedule said (always, for a run without one).
    placed: bool,
    /// The step of each receipt it wrote, in order.
    steps: Vec<String>,
}

/// Runs `rehearse qualify` of `plan` against the schedule's cluster as run `run_id`, held after
/// receipt `hold.0` and stopped by `hold.1` (to its end without one). The process is killed if
/// it outlives the settle bound's ceiling, and always ended before this returns.
async fn qualify_process(
    ctx: &CaseContext<'_>,
    config: &SignalsConfig,
    plan: &Plan,
    reports: &Path,
    run_id: &str,
    hold: Option<(Place, Pattern)>,
) -> Result<QualifyRun, CaseError> {
    let (kubeconfig, context) = ctx.backend.kubeconfig();
    let fifo = reports.join(format!("{run_id}.hold"));
    std::fs::create_dir_all(reports)
        .map_err(|e| CaseError::Setup(format!("create {}: {e}", reports.display())))?;
    // Its standard error is kept beside its bundle, for a schedule that did not go as planned.
    let stderr = std::fs::File::create(reports.join(format!("{run_id}.stderr")))
        .map_err(|e| CaseError::Setup(format!("create {}: {e}", reports.display())))?;
    let mut cmd = tokio::process::Command::new(&config.rehearse);
    cmd.args(["qualify", "--cluster", "existing", "--kubeconfig"])
        .arg(kubeconfig)
        .args(["--context", context, "--namespace", &ctx.namespace])
        .args(["--template", &plan.template, "--source", &plan.source])
        .args(["--fleet", &plan.fleet.join(",")])
        .args(["--candidate", &plan.candidate])
        .args(["--batch-size", &plan.batch_size.to_string()])
        .args([
            "--rollback",
            match plan.rollback {
                Rollback::Compatible => "compatible",
                Rollback::RestoreRequired => "restore-required",
            },
        ])
        .args(["--repo-secret", &plan.repo_secret, "--run-id", run_id])
        .args(["--operator", "reference-operator@explore"])
        .arg("--reports")
        .arg(reports)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true);
    // Ended with the explorer, also when it is killed.
    crate::process::set_parent_death_signal(&mut cmd);
    if let Some((place, _)) = &hold {
        nix::unistd::mkfifo(
            &fifo,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .map_err(|e| CaseError::Setup(format!("mkfifo {}: {e}", fifo.display())))?;
        cmd.env(
            crate::evidence::receipts::HOLD_ENV,
            format!("{}:{}", place.encode(), fifo.display()),
        );
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| CaseError::Setup(format!("start {}: {e}", config.rehearse.display())))?;
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap_or(0) as i32);
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("piped")).lines();
    let bound = ctx.bounds.settle * 6;
    let mut placed = hold.is_none();
    if let Some((_, pattern)) = hold {
        placed = hold_and_signal(&mut child, &mut lines, &fifo, pid, pattern, bound).await;
    }
    // The rest of its output is read (so it never blocks on a full pipe) until it exits.
    let drained = async { while let Ok(Some(_)) = lines.next_line().await {} };
    let exit = match tokio::time::timeout(bound, async {
        drained.await;
        child.wait().await
    })
    .await
    {
        Ok(Ok(status)) => status.code(),
        _ => {
            let _ = child.kill().await;
            None
        }
    };
    let bundle = reports.join(run_id);
    let steps = crate::evidence::receipts::verify_prefix(bundle.join("receipts.jsonl"))
        .map(|p| p.journal.receipts.into_iter().map(|r| r.step).collect())
        .unwrap_or_default();
    Ok(QualifyRun {
        run_id: run_id.to_string(),
        bundle,
        exit,
        placed,
        steps,
    })
}

/// Waits (within `bound`) for the process to hold in `fifo`, stops it by `pattern` and lets it
/// go on; `false` when it ended (or the bound passed) before it held: the point never came.
async fn hold_and_signal(
    child: &mut tokio::process::Child,
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    fifo: &Path,
    pid: nix::unistd::Pid,
    pattern: Pattern,
    bound: Duration,
) -> bool {
    use nix::sys::signal::{Signal, kill};
    // Opening the pipe for writing returns once the process opened it to wait.
    let path = fifo.to_path_buf();
    let opened =
        tokio::task::spawn_blocking(move || std::fs::OpenOptions::new().write(true).open(path));
    let writer = tokio::select! {
        w = opened => w.ok().and_then(Result::ok),
        _ = child.wait() => None,
        () = tokio::time::sleep(bound) => None,
    };
    let Some(writer) = writer else {
        // Unblock the opener that is still waiting, so its thread ends.
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(fifo);
        return false;
    };
    let first = match pattern {
        Pattern::Sigterm => Signal::SIGTERM,
        Pattern::SigkillRerun => Signal::SIGKILL,
        Pattern::Sigint | Pattern::SigintTwice => Signal::SIGINT,
    };
    let _ = kill(pid, first);
    drop(writer);
    if pattern == Pattern::SigintTwice {
        // The second signal as soon as the first is acknowledged (or not at all, when the
        // procedure had already ended and the run finishes on its own).
        let acknowledged = async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.starts_with("SIGINT: stopping") {
                    return true;
                }
            }
            false
        };
        if tokio::time::timeout(bound, acknowledged).await == Ok(true) {
            let _ = kill(pid, Signal::SIGINT);
        }
    }
    true
}

/// The violations of `way-back`, `truth` and the qualification invariant (D6) in `read`, over
/// who the runs promoted (their promotion receipts), the pre-promotion Backups they created
/// (their journals) and the last run's report.
fn judge_runs(
    plan: &Plan,
    before: &FleetRead,
    runs: &[QualifyRun],
    read: &FleetRead,
    schedule: Option<SignalSchedule>,
) -> (Vec<Violation>, Vec<TakenBackup>) {
    let mut taken = Vec::new();
    let mut promoted = 0;
    for r in runs {
        let receipts = crate::evidence::receipts::verify_prefix(r.bundle.join("receipts.jsonl"))
            .map(|p| p.journal.receipts)
            .unwrap_or_default();
        taken.extend(way_back::taken_from_receipts(&receipts));
        let passed = receipts
            .iter()
            .filter(|x| x.kind == "step" && x.observed["kind"] == "promotion")
            .filter(|x| x.observed["passed"] == true)
            .count();
        promoted = promoted.max(passed);
    }
    let mut q: Qualification = crate::qualify::start(plan);
    q.baseline = before
        .servers
        .iter()
        .map(|s| crate::evidence::qualification::MemberBaseline {
            server: s.server.clone(),
            version: s.version.clone(),
            pod_uid: s.pod_uid.clone(),
            pvcs: s.pvcs.clone(),
            digests: Default::default(),
        })
        .collect();
    crate::qualify::fleet::into_after(&mut q, plan, read);
    q.outcome = Outcome::Promoted { batches: promoted };
    q.promotion_receipts = promoted;
    let mut out = way_back::way_back(&q, &taken, read);
    let last = runs.last().map(|r| r.bundle.join("qualification.json"));
    let report = last
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<QualificationReport>(&t).ok());
    match &report {
        Some(report) => out.extend(way_back::truth(&q, report, read)),
        None => out.push(Violation {
            invariant: TRUTH.into(),
            evidence: "the last run's qualification.json".into(),
            found: format!(
                "the run wrote no readable report ({})",
                last.map_or("none".into(), |p| p.display().to_string())
            ),
        }),
    }
    // The batch under way when the procedure was stopped at once is judged as one kept for
    // inspection (way-back and truth judge what became of it); otherwise an unfinished batch
    // must be back on the version it ran.
    let every = crate::evidence::judge::gates::batches(&plan.fleet, plan.batch_size).len();
    let stopped = (promoted < every).then_some("stopped by a signal");
    q.plan.keep_failed_batch = schedule.is_some_and(|s| s.pattern.at_once());
    out.extend(crate::evidence::invariants::qualification::judge(
        &q, stopped, None,
    ));
    (out, taken)
}

/// Judges the schedule once its runs ended: a fresh read of the fleet, its Backups and the
/// repository's snapshots of the pre-promotion Backups the runs created; a check per invariant.
/// A point the run never reached fails the schedule, naming it.
async fn judge(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    before: &FleetRead,
    runs: &[QualifyRun],
    schedule: Option<SignalSchedule>,
) -> Result<(), CaseError> {
    if let Some(s) = &schedule
        && !runs[0].placed
    {
        return Err(CaseError::NotPlaced {
            why: format!(
                "the qualification ended (or did not reach it within its bound) before it wrote {} receipt, so no {} landed there",
                s.place,
                s.pattern.as_str()
            ),
        });
    }
    // Every run's journal is evidence (who was promoted, which way backs existed): one that
    // cannot be read leaves the schedule unknown, never a pass.
    for r in runs {
        if let Err(e) = crate::evidence::receipts::verify_prefix(r.bundle.join("receipts.jsonl")) {
            return Err(CaseError::evidence_absent(
                format!("the journal of qualify run {}", r.run_id),
                e.to_string(),
            ));
        }
    }
    let taken: Vec<TakenBackup> = runs
        .iter()
        .flat_map(|r| {
            crate::evidence::receipts::verify_prefix(r.bundle.join("receipts.jsonl"))
                .map(|p| way_back::taken_from_receipts(&p.journal.receipts))
                .unwrap_or_default()
        })
        .collect();
    let read = crate::qualify::fleet::read(ctx, plan, &taken).await?;
    let (violations, _) = judge_runs(plan, before, runs, &read, schedule.clone());
    ctx.uses("a fresh read of the fleet, its Backups and the repository after the runs ended");
    let mut checks = Checks::new();
    let object = format!("qualification of {} in {}", plan.candidate, ctx.namespace);
    for id in INVARIANTS {
        let broken: Vec<_> = violations.iter().filter(|v| v.invariant == *id).collect();
        checks.check(
            id,
            broken.is_empty(),
            &object,
            &format!("invariant {id} over a fresh read after the qualification ended"),
            "holds",
            &broken,
        );
    }
    ctx.assess_invariants(
        checks,
        json!({"schedule": schedule.map(|s| s.id()), "read": read, "taken": taken,
               "violations": violations}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<SignalSchedule> {
        let mut out = Vec::new();
        for &variant in Variant::ALL {
            for point in 1..40 {
                for &pattern in Pattern::ALL {
                    out.push(SignalSchedule {
                        variant,
                        place: Place {
                            label: format!("promotion batch {}", point % 3),
                            occurrence: point / 3 + 1,
                        },
                        pattern,
                    });
                }
            }
        }
        out
    }

    #[test]
    fn a_schedule_id_names_it_and_parses_back() {
        for s in all() {
            assert_eq!(SignalSchedule::parse(&s.id()), Ok(s));
        }
        assert_eq!(
            SignalSchedule {
                variant: Variant::RestoreRequiredB2,
                place: Place {
                    label: "back up batch 2".into(),
                    occurrence: 1
                },
                pattern: Pattern::SigintTwice
            }
            .id(),
            "qualify-signals-restore-required-b2.back_up_batch_2.1.sigint-twice"
        );
        for bad in [
            "qualify-signals",
            "qualify-signals-compatible-b3.back_up_batch_1.1.sigint",
            "qualify-signals-compatible-b1.back_up_batch_1.x.sigint",
            "qualify-signals-compatible-b1.back_up_batch_1.1.sighup",
            "backup.create_jobs.1.game-restart",
        ] {
            let e = SignalSchedule::parse(bad).unwrap_err();
            assert!(
                e.contains("<variant>.<receipt>.<occurrence>.<pattern>"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_limit_keeps_every_pattern_and_reaches_every_variant() {
        let every = all();
        assert_eq!(spread(every.clone(), every.len()), every);
        let picked = spread(every, 16);
        assert_eq!(picked.len(), 16);
        for &pattern in Pattern::ALL {
            assert_eq!(picked.iter().filter(|s| s.pattern == pattern).count(), 4);
        }
        for &variant in Variant::ALL {
            assert!(picked.iter().any(|s| s.variant == variant), "{variant:?}");
        }
    }

    #[test]
    fn only_a_second_signal_or_a_kill_stops_the_procedure_at_once() {
        assert!(Pattern::SigintTwice.at_once());
        assert!(Pattern::SigkillRerun.at_once());
        assert!(!Pattern::Sigint.at_once());
        assert!(!Pattern::Sigterm.at_once());
    }
}
