//! `rehearse explore`: every point of an operation × every fault the cluster can inject,
//! judged by the contract's invariants rather than by a case's hand-picked checks.
//!
//! 1. **Points are learned, never listed.** A reference run of the operation (no fault) records
//!    every write the operator makes in the schedule's namespace, in order, through the embedded
//!    API server's request hook ([`observer`]). Each write is a point: "the fault lands after the
//!    operator's writes before it committed, and before it is applied". A new write in the
//!    operator becomes a new point by itself.
//! 2. **Faults are placed deterministically.** A schedule (operation, point, fault) runs the
//!    operation on its own embedded cluster with the hook holding the operator's write at that
//!    point; the fault is injected and observed while the operator waits; then the write goes.
//! 3. **The oracle is the invariants** ([`crate::evidence::invariants`]) over everything the run
//!    committed and the game logged; each schedule is a case of the bundle (bucket `explore`)
//!    whose checks are the invariants, so the report, JUnit and `receipts verify` treat it like
//!    any case. A violation names the invariant, the evidence and the schedule's id, which
//!    `rehearse explore --replay ID` runs again.

pub mod backup;
pub mod observer;
pub mod qualify;
pub mod rejudge;
pub mod restore;
pub mod saved;
pub mod signals;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};

use crate::backend::Backend;
use crate::cases::{BodyEnded, RunOptions, run_body};
use crate::context::{CaseContext, CaseError};
use crate::evidence::bundle::{Bundle, BundleMeta, BundleSummary, Verdict};
use crate::fixture::inject::{HeldMoment, Landed, Target, at_held};
use crate::run::{Cluster, RunError, current_commit, start_backend};
use observer::{Observer, Point};

/// The bucket every schedule is recorded under.
pub const BUCKET: &str = "explore";

pub use crate::evidence::catalogue::{Fault, Operation, Setup};
pub use crate::evidence::place::Place;

/// What a schedule did, written into its `assess` receipt.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct Placed {
    /// The point the fault was placed before, as reached in this run.
    pub point: Option<observer::Point>,
    /// The point the schedule asked for was never reached (the operation ended first).
    pub point_not_reached: bool,
    /// What the fault observed when it landed.
    pub fault: Value,
    /// The point came, but the fault could not land there (its target went away meanwhile):
    /// why.
    pub missed: Option<String>,
}

impl Placed {
    /// What the bundle keeps of where the fault landed: why it did not (if it did not) and
    /// the points the run learned.
    pub(crate) fn placement(
        &self,
        hold: Option<&(Place, Fault)>,
        points: &[observer::Point],
    ) -> rejudge::Placement {
        rejudge::Placement {
            not_placed: self.not_placed(hold).map(|why| match hold {
                // Explained by the reference run: this run's operator made fewer such writes
                // (its last ones are not made every run: a status it sometimes coalesces).
                Some((place, _)) if self.missed.is_none() => format!(
                    "{why}; this run's operator made {} `{}` write(s), the reference run's at least {}",
                    points.iter().filter(|p| p.label == place.label).count(),
                    place.label,
                    place.occurrence
                ),
                _ => why,
            }),
            points: points.iter().map(|p| p.label.clone()).collect(),
        }
    }

    /// Why the schedule's fault never landed, when it did not: the operation ended (and
    /// settled) before the operator made the write the fault waits for, or the fault's target
    /// went away as it was injected.
    pub(crate) fn not_placed(&self, hold: Option<&(Place, Fault)>) -> Option<String> {
        let (place, fault) = hold?;
        if let Some(why) = &self.missed {
            return Some(format!(
                "fault {fault} could not land before {place}: {why}"
            ));
        }
        self.point_not_reached.then(|| {
            format!(
                "the operation ended before the operator made {place}, so fault {fault} never landed"
            )
        })
    }

    /// What was done to the run, for the `outcome` oracle: the fault when it landed (a point
    /// never reached leaves the run unperturbed).
    pub(crate) fn perturbation(
        &self,
        operation: Operation,
        hold: Option<&(Place, Fault)>,
    ) -> crate::evidence::invariants::outcome::Perturbation {
        crate::evidence::invariants::outcome::Perturbation {
            operation,
            fault: hold.filter(|_| self.point.is_some()).map(|(_, f)| *f),
        }
    }
}

/// Steps "await the Nth `WRITE`" and "inject FAULT": waits until the operator's held write `hold`
/// arrives (`reached`) or the operation is `over` first, injects the fault while the write is
/// held, then lets it go. Returns what was placed and when the fault had landed; with no
/// `hold` (the reference run), nothing.
pub(crate) async fn place_fault<T>(
    ctx: &CaseContext<'_>,
    observer: &observer::Observer,
    operation: Operation,
    reached: tokio::sync::oneshot::Receiver<observer::Point>,
    hold: Option<&(Place, Fault)>,
    over: impl std::future::Future<Output = Result<T, crate::wait::WaitError>>,
    target: Target<'_>,
) -> Result<(Placed, Option<jiff::Timestamp>), CaseError> {
    let mut placed = Placed::default();
    let mut faults_stopped_at = None;
    let Some((place, fault)) = hold else {
        return Ok((placed, None));
    };
    let fault = *fault;
    let mut reached = reached;
    let over = over.fuse();
    futures::pin_mut!(over);
    let arrived = ctx
        .step(&format!("await {place}"), async {
            tokio::select! {
                point = &mut reached => Ok(point.ok()),
                done = &mut over => {
                    done?;
                    // The reference run learned its points until the operation settled, so a
                    // write made after the operation's end (a last status, a finalizer
                    // removed) is a point too: it is waited for within the settle bound.
                    Ok(tokio::time::timeout(ctx.bounds.settle, &mut reached)
                        .await
                        .ok()
                        .and_then(Result::ok))
                }
            }
        })
        .await?;
    match arrived {
        Some(point) if fault == Fault::CopyHeldAtEnd => {
            let then = operation.while_copy_held().ok_or_else(|| {
                CaseError::Setup(format!("{operation} has no copy whose end can be held"))
            })?;
            placed.fault = copy_held_at_end(ctx, observer, place, then, over, target)
                .await?
                .unwrap_or_else(|why| {
                    let v = json!({ "missed": why });
                    placed.missed = Some(why);
                    v
                });
            placed.point = Some(point);
            faults_stopped_at = Some(jiff::Timestamp::now());
        }
        Some(point) => {
            let mut held = ObserverHold(observer);
            let target = Target {
                stale_as_of: Some(observer.as_of_operation_start()),
                ..target
            };
            placed.fault = match at_held(ctx, &mut held, fault, target).await? {
                Landed::Landed(v) => v,
                Landed::Missed(why) => {
                    let v = json!({"missed": why});
                    placed.missed = Some(why);
                    v
                }
            };
            if fault == Fault::DroppedEvent {
                // Landed once an event was withheld: the held write's own, or the next one
                // about the object after it.
                let withheld = ctx
                    .step("await the withheld event", async {
                        Ok(ctx.backend.await_events_dropped(ctx.bounds.settle).await)
                    })
                    .await?;
                if !withheld {
                    placed.missed = Some(format!(
                        "no event about {} {} reached the operator's watches after it",
                        target.resource, target.object
                    ));
                }
            }
            if fault == Fault::WriteConflict {
                placed.fault["write"] = json!(point.label);
            }
            placed.point = Some(point);
            faults_stopped_at = Some(jiff::Timestamp::now());
        }
        None => placed.point_not_reached = true,
    }
    observer.release();
    Ok((placed, faults_stopped_at))
}

/// Fault `copy-held-at-end`, its write held at `place`: holds the copy's snapshot save at the
/// repository's gate, lets the write go, and once the save is held places `then` (the game's
/// restart, the server's start) and lets the save go; what the cluster showed, or why it could
/// not land (the operation ended, or the bound passed, before the copy saved its snapshot).
async fn copy_held_at_end<T>(
    ctx: &CaseContext<'_>,
    observer: &observer::Observer,
    place: &Place,
    then: Fault,
    over: impl std::future::Future<Output = Result<T, crate::wait::WaitError>> + Unpin,
    target: Target<'_>,
) -> Result<Result<Value, String>, CaseError> {
    let mut save = ctx
        .backend
        .hold_repository_request(crate::backend::rest_gate::RepoRequest {
            method: "POST",
            repository: crate::fixture::repository_name(&ctx.namespace).to_string(),
            kind: "snapshots",
        })
        .map_err(|e| CaseError::Setup(e.to_string()))?;
    observer.release();
    let label = save.label().to_string();
    let saved = ctx
        .step(&format!("await {label}"), async {
            // `over` is fused: when the operation was already over it never resolves again.
            let mut over = over;
            let waited = async {
                tokio::select! {
                    path = save.reached() => path,
                    _ = &mut over => None,
                }
            };
            Ok(tokio::time::timeout(ctx.bounds.settle, waited)
                .await
                .ok()
                .flatten())
        })
        .await?;
    if saved.is_none() {
        return Ok(Err(format!(
            "the copy's snapshot save never came after {place} (the operation ended first, or \
             the bound passed)"
        )));
    }
    Ok(match at_held(ctx, &mut save, then, target).await? {
        Landed::Landed(v) => Ok(json!({ "held": label, "then": then, "landed": v })),
        Landed::Missed(why) => Err(why),
    })
}

/// The exploration's held write, as the placement step holds it.
struct ObserverHold<'a>(&'a observer::Observer);

impl HeldMoment for ObserverHold<'_> {
    fn release(&mut self) {
        self.0.release();
    }
    fn refuse_with_conflict(&mut self) {
        self.0.refuse_with_conflict();
    }
    fn applied(&mut self, bound: Duration) -> futures::future::BoxFuture<'_, bool> {
        Box::pin(self.0.await_applied(bound))
    }
}

/// One schedule: an operation with one fault before one of the operator's writes, named by
/// that write's label and occurrence ([`Place`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Schedule {
    /// The operation.
    pub operation: Operation,
    /// The operator's write the fault lands before.
    pub place: Place,
    /// The fault.
    pub fault: Fault,
}

impl Schedule {
    /// Its id, also its case name in the bundle:
    /// `backup.patch_backups~status_live.2.game-restart` ([`crate::evidence::place`]).
    pub fn id(&self) -> String {
        crate::evidence::place::id(self.operation.as_str(), &self.place, self.fault.as_str())
    }

    /// Parses an id written by [`Self::id`]; the error names the expected shape.
    pub fn parse(id: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "schedule id {id:?} is not {}; operations: {}; faults: {}",
                crate::evidence::place::SHAPE,
                Operation::ALL
                    .iter()
                    .map(|o| o.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                Fault::ALL
                    .iter()
                    .map(|f| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let (operation, place, fault) = crate::evidence::place::parse(id).ok_or_else(bad)?;
        Ok(Self {
            operation: Operation::parse(operation).ok_or_else(bad)?,
            place,
            fault: Fault::parse(fault).ok_or_else(bad)?,
        })
    }

    /// Its position among the writes `learned` (a reference run's), for the matrix order;
    /// `usize::MAX` for a write it did not make.
    fn position(&self, learned: &[Point]) -> usize {
        let labels: Vec<&str> = learned.iter().map(|p| p.label.as_str()).collect();
        self.place.index_in(&labels).unwrap_or(usize::MAX)
    }
}

/// What to explore.
#[derive(Debug, Clone)]
pub struct ExploreConfig {
    /// The operations to explore.
    pub operations: Vec<Operation>,
    /// The faults to place (all when empty).
    pub faults: Vec<Fault>,
    /// At most this many schedules (after the reference run), spread over every fault.
    pub limit: Option<usize>,
    /// Run exactly these schedules (no reference run).
    pub replay: Vec<Schedule>,
    /// Run exactly these saved schedules, each placed by a reference run of its operation
    /// (the operations above are then those the files name).
    pub regressions: Vec<saved::SavedSchedule>,
    /// `reports/`.
    pub reports: PathBuf,
    /// The run's id.
    pub run_id: String,
    /// Schedules run at once (each on its own embedded cluster).
    pub parallel: usize,
    /// Deploy the reference operator with this mutant.
    pub mutant: Option<String>,
    /// Each schedule's ceiling.
    pub case_bound: Duration,
    /// Run only this shard's share of the schedules (every reference run still runs).
    pub shard: Option<crate::evidence::place::Shard>,
}

/// How one schedule ended.
#[derive(Debug, Clone)]
pub struct ScheduleResult {
    /// Its id (`reference` rows use `<operation>-reference`).
    pub id: String,
    /// The schedule, `None` for a reference run.
    pub schedule: Option<Schedule>,
    /// How its case ended.
    pub ended: BodyEnded,
}

/// What an exploration produced.
#[derive(Debug)]
pub struct ExploreOutcome {
    /// The finalized bundle.
    pub bundle_dir: PathBuf,
    /// Its summary.
    pub summary: BundleSummary,
    /// The points each reference run learned, by operation.
    pub points: Vec<(Operation, Vec<Point>)>,
    /// Every schedule's result, references first, then in matrix order.
    pub results: Vec<ScheduleResult>,
}

impl ExploreOutcome {
    /// No schedule violated an invariant or failed to run.
    pub fn passed(&self) -> bool {
        self.results
            .iter()
            .all(|r| matches!(r.ended.verdict, Verdict::Passed | Verdict::NotApplicable))
    }

    /// The closing line: how many schedules, how many ok, violated, unknown and not placed.
    pub fn closing_line(&self) -> String {
        matrix::closing_line(
            "schedules",
            self.results
                .iter()
                .filter(|r| r.schedule.is_some())
                .map(|r| standing(&r.ended)),
        )
    }

    /// The point × fault matrix of `operation` as Markdown: one row per point, one column per
    /// fault; a cell is `ok`, the violated invariants, or the verdict.
    pub fn matrix_markdown(&self, operation: Operation) -> String {
        let labels = self
            .points
            .iter()
            .find(|(op, _)| *op == operation)
            .map(|(_, p)| p.iter().map(|p| p.label.clone()).collect())
            .unwrap_or_default();
        matrix_markdown_of(
            operation.as_str(),
            self.results
                .iter()
                .filter(|r| {
                    r.schedule
                        .as_ref()
                        .is_some_and(|s| s.operation == operation)
                })
                .map(|r| (r.id.as_str(), &r.ended)),
            labels,
            crate::evidence::report::matrix::LABEL_HEADER,
        )
    }
}

use crate::evidence::invariants::outcome::EndState;
use crate::evidence::invariants::schedule::Trace;
pub use crate::evidence::report::matrix::Standing;
use crate::evidence::report::matrix::{self, Matrix};

/// A schedule that ended as `ended`, as the matrix reads it.
pub(crate) fn matrix_schedule(id: &str, ended: &BodyEnded) -> matrix::Schedule {
    matrix::Schedule {
        id: id.to_string(),
        verdict: ended.verdict,
        reason: ended.reason.clone(),
        failed_checks: ended.failed_checks.clone(),
    }
}

/// Where a schedule that ended as `ended` stands.
pub fn standing(ended: &BodyEnded) -> Standing {
    Standing::of(ended.verdict, ended.reason.as_deref(), &ended.failed_checks)
}

/// The matrix of `operation` (as schedule ids name it) over `schedules` (id, how it ended),
/// its points named by `labels`, drawn as Markdown with `label_header` over the labels: the
/// renderer report.md and report.html use too.
pub(crate) fn matrix_markdown_of<'a>(
    operation: &str,
    schedules: impl Iterator<Item = (&'a str, &'a BodyEnded)>,
    labels: Vec<String>,
    label_header: &str,
) -> String {
    let labels = std::collections::BTreeMap::from([(operation.to_string(), labels)]);
    let all = matrix::matrices(schedules.map(|(id, e)| matrix_schedule(id, e)), &labels);
    all.iter().find(|m| m.operation == operation).map_or_else(
        || {
            Matrix {
                operation: operation.to_string(),
                columns: Vec::new(),
                rows: Vec::new(),
            }
            .markdown(label_header, false)
        },
        |m| m.markdown(label_header, false),
    )
}

/// What a schedule's driver returns once the operation is over: the typed trace the invariants
/// read, where its fault landed, and what the run did as observed.
pub(crate) struct Ran {
    /// What was done to the run: the operation, and the fault when it landed.
    pub schedule: crate::evidence::invariants::outcome::Perturbation,
    /// The run's trace.
    pub trace: Trace,
    /// Where the fault landed (or why it did not) and the writes the run made.
    pub placement: rejudge::Placement,
    /// The operation's object, as the checks name it (`backup <ns>/live`).
    pub object: String,
    /// What the run did, as observed (the `assess` receipt's record).
    pub history: Value,
}

/// Judges what a schedule's run left ([`crate::evidence::invariants::schedule::judge`], the
/// same judge `--rejudge` uses) against the operation's `reference` end state, keeps the trace
/// as the case's artifacts and records a check per invariant; returns the run's end state (what
/// a reference run gives the schedules after it).
fn judge_ran(
    ctx: &CaseContext<'_>,
    mut ran: Ran,
    reference: Option<&EndState>,
) -> Result<Option<EndState>, CaseError> {
    let judged = crate::evidence::invariants::schedule::judge(
        Some(&ran.schedule),
        &mut ran.trace,
        reference,
    );
    for (name, bytes) in ran.trace.artifacts() {
        ctx.recorder.artifact(name, &bytes)?;
    }
    for evidence in ran.trace.reads() {
        ctx.uses(evidence);
    }
    let end = ran.trace.end_state();
    assess_judged(
        ctx,
        &ran.object,
        ran.trace.judged_over(),
        &judged,
        ran.placement,
        ran.history,
    )?;
    Ok(end)
}

/// Records a schedule's judgement: one check per invariant from its verdict (held passes;
/// violated fails with the violations; unknown fails with why), then its standing: violated
/// when one was broken; otherwise evidence absent (`unknown`) when one could not be judged;
/// otherwise `not placed` when the fault never landed (`not_placed` says why); else ok.
///
/// Where the fault landed is kept beside the trace (`placement.json`), so `rehearse explore
/// --rejudge` can judge the schedule again from the bundle alone.
pub(crate) fn assess_judged(
    ctx: &CaseContext<'_>,
    object: &str,
    over: &str,
    judged: &[crate::evidence::invariants::Judged],
    placement: rejudge::Placement,
    mut observed: Value,
) -> Result<(), CaseError> {
    use crate::evidence::invariants::Judgement;
    ctx.recorder.artifact(
        rejudge::PLACEMENT,
        &serde_json::to_vec_pretty(&placement).unwrap_or_default(),
    )?;
    let not_placed = placement.not_placed;
    let mut checks = crate::context::Checks::new();
    for j in judged {
        let (passed, found) = match &j.judgement {
            Judgement::Held => (true, json!("holds")),
            Judgement::Violated { violations } => (false, json!(violations)),
            Judgement::Unknown { why } => (false, json!(format!("unknown: {why}"))),
        };
        // Every invariant's id is one of the catalogue's (`invariants::ALL`).
        let id = crate::evidence::invariants::ALL
            .iter()
            .copied()
            .find(|i| *i == j.invariant)
            .unwrap_or("unnamed-invariant");
        checks.check(
            id,
            passed,
            object,
            &format!("invariant {} over {over}", j.invariant),
            "holds",
            found,
        );
    }
    observed["judged"] = json!(judged);
    observed["not_placed"] = json!(not_placed);
    let assessed = ctx.assess_invariants(checks, observed);
    let violated = !crate::evidence::invariants::violated(judged).is_empty();
    let unknown = crate::evidence::invariants::unknown_reasons(judged);
    match assessed {
        Err(CaseError::Checks(_)) if !violated && !unknown.is_empty() => {
            Err(CaseError::evidence_absent(
                format!(
                    "what invariant(s) {} read",
                    judged
                        .iter()
                        .filter(|j| matches!(j.judgement, Judgement::Unknown { .. }))
                        .map(|j| j.invariant.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                unknown.join("; "),
            ))
        }
        Ok(()) => match not_placed {
            Some(why) => Err(CaseError::NotPlaced { why }),
            None => Ok(()),
        },
        other => other,
    }
}

/// Runs `body` on a fresh embedded cluster whose request hook is a new [`Observer`].
async fn on_own_cluster(
    bundle: &Bundle,
    name: &str,
    options: &RunOptions,
    mutant: Option<&str>,
    operation: Operation,
    hold: Option<(Place, Fault)>,
    reference: Option<EndState>,
) -> Result<(BodyEnded, Vec<Point>, Option<EndState>), RunError> {
    let backend: Box<dyn Backend> = start_backend(&Cluster::Embedded, mutant).await?;
    let observer = Arc::new(Observer::default());
    backend.set_request_hook(Some(observer.clone()))?;
    backend.set_registry_hook(Some(observer.clone()))?;
    let end = Arc::new(std::sync::Mutex::new(None));
    let ended = run_body(backend.as_ref(), bundle, name, BUCKET, options, |ctx| {
        let observer = observer.clone();
        let reference = reference.clone();
        let hold = hold.clone();
        let end = end.clone();
        Box::pin(async move {
            let hold = hold.as_ref();
            let ran = match operation.setup() {
                Setup::Backup(source) => {
                    backup::schedule(ctx, observer, operation, source, hold).await?
                }
                Setup::Qualify(variant) => {
                    qualify::schedule(ctx, observer, operation, variant, hold).await?
                }
                Setup::Restore => restore::schedule(ctx, observer, hold).await?,
            };
            *end.lock().unwrap_or_else(|p| p.into_inner()) =
                judge_ran(ctx, ran, reference.as_ref())?;
            Ok(())
        })
    })
    .await;
    let _ = backend.set_request_hook(None);
    let _ = backend.set_registry_hook(None);
    let points = observer.points();
    let _ = backend.teardown(false).await;
    let end = end.lock().unwrap_or_else(|p| p.into_inner()).take();
    Ok((ended?, points, end))
}

/// The schedules of `operation` once its reference run learned `learned`: every point × every
/// applicable fault of `faults`, or, when there are saved schedules, exactly those of this
/// operation (one that cannot be placed is said in `unplaced`).
fn schedules_of(
    operation: Operation,
    learned: &[Point],
    faults: &[Fault],
    regressions: &[saved::SavedSchedule],
    unplaced: &mut Vec<String>,
) -> Vec<Schedule> {
    let mut out = Vec::new();
    if regressions.is_empty() {
        let labels: Vec<&str> = learned.iter().map(|p| p.label.as_str()).collect();
        for (index, place) in Place::all(&labels).into_iter().enumerate() {
            for &fault in faults
                .iter()
                .filter(|f| operation.faults().contains(f) && f.placeable_at(&labels, index))
            {
                out.push(Schedule {
                    operation,
                    place: place.clone(),
                    fault,
                });
            }
        }
    }
    for saved in regressions
        .iter()
        .filter(|s| s.operation() == Ok(operation))
    {
        match saved.resolve(learned) {
            Ok(s) => out.push(s),
            Err(e) => unplaced.push(format!(
                "saved schedule {} {} before {} #{}: {e}",
                saved.operation, saved.fault, saved.write, saved.occurrence
            )),
        }
    }
    out
}

/// The exploration's bundle at `dir`, naming the operator it explores (and its mutant).
async fn create_bundle(dir: &std::path::Path, config: &ExploreConfig) -> Result<Bundle, RunError> {
    let operator = match crate::deploy::profile::detect_embedded().await {
        Ok(found) => crate::evidence::bundle::Operator {
            name: found.name,
            version: found.version,
        },
        Err(e) => crate::deploy::profile::unread(&e.to_string()),
    };
    let version = match &config.mutant {
        Some(m) => format!("{} (mutant {m})", operator.version),
        None => operator.version.clone(),
    };
    Ok(Bundle::create(
        dir,
        BundleMeta::new(
            &config.run_id,
            &current_commit(),
            &operator.name,
            &version,
            crate::backend::Arch::host().as_str(),
        ),
    )?)
}

/// Explores `config`: per operation a reference run, then every (point, fault) schedule, each
/// given its reference run's end state (the differential oracle).
pub async fn run(config: ExploreConfig) -> Result<ExploreOutcome, RunError> {
    let dir = Bundle::dir_for(&config.reports, &config.run_id);
    let bundle = create_bundle(&dir, &config).await?;
    let options = RunOptions {
        run_id: config.run_id.clone(),
        keep_on_failure: false,
        case_bound: config.case_bound,
        harness_mutant: None,
        expected_operator: None,
    };
    let mutant = config.mutant.as_deref();
    let faults = if config.faults.is_empty() {
        Fault::ALL.to_vec()
    } else {
        config.faults.clone()
    };
    let mut results = Vec::new();
    let mut points = Vec::new();
    let mut schedules = config.replay.clone();
    let mut unplaced = Vec::new();
    let operations: Vec<Operation> = if config.regressions.is_empty() {
        config.operations.clone()
    } else {
        let mut ops: Vec<Operation> = config
            .regressions
            .iter()
            .filter_map(|s| s.operation().ok())
            .collect();
        ops.sort();
        ops.dedup();
        ops
    };
    let mut references = std::collections::BTreeMap::new();
    if schedules.is_empty() {
        for &operation in &operations {
            let id = format!(
                "{}-reference{}",
                operation.as_str(),
                config.shard.map(|s| s.suffix()).unwrap_or_default()
            );
            let (ended, learned, end) =
                on_own_cluster(&bundle, &id, &options, mutant, operation, None, None).await?;
            if let Some(end) = end {
                references.insert(operation, end);
            }
            println!(
                "[reference] {:<10} {id}: {} operator writes · {:.1}s",
                ended.verdict.as_str(),
                learned.len(),
                ended.duration.as_secs_f64()
            );
            schedules.extend(schedules_of(
                operation,
                &learned,
                &faults,
                &config.regressions,
                &mut unplaced,
            ));
            results.push(ScheduleResult {
                id,
                schedule: None,
                ended,
            });
            points.push((operation, learned));
        }
        if let Some(limit) = config.limit {
            schedules = spread(schedules, limit, &points);
        }
        sort(&mut schedules, &points);
        schedules.dedup();
    }
    if let Some(shard) = config.shard {
        schedules.retain(|s| shard.holds(&s.id()));
    }
    let done = run_schedules(
        &bundle,
        &options,
        mutant,
        schedules,
        config.parallel,
        (&references, &points),
    )
    .await;
    results.extend(done.0);
    let summary = bundle.finalize(false)?;
    if let Some(e) = done.1 {
        return Err(e);
    }
    if !unplaced.is_empty() {
        return Err(RunError::Schedule(unplaced.join("; ")));
    }
    Ok(ExploreOutcome {
        bundle_dir: dir,
        summary,
        points,
        results,
    })
}

/// Runs `schedules`, `parallel` at once, each on its own cluster; a line per schedule as it
/// ends. Returns the results in matrix order and the first error that stopped one.
async fn run_schedules(
    bundle: &Bundle,
    options: &RunOptions,
    mutant: Option<&str>,
    schedules: Vec<Schedule>,
    parallel: usize,
    (references, learned): (&References, &[Learned]),
) -> (Vec<ScheduleResult>, Option<RunError>) {
    let total = schedules.len();
    let bundle_ref = bundle;
    let options_ref = options;
    let mut stream = futures::stream::iter(schedules.into_iter().map(|s| async move {
        let id = s.id();
        let r = on_own_cluster(
            bundle_ref,
            &id,
            options_ref,
            mutant,
            s.operation,
            Some((s.place.clone(), s.fault)),
            references.get(&s.operation).cloned(),
        )
        .await;
        r.map(|(ended, _, _)| ScheduleResult {
            id,
            schedule: Some(s),
            ended,
        })
    }))
    .buffer_unordered(parallel.max(1));
    let mut done = Vec::new();
    let mut first_error = None;
    while let Some(r) = stream.next().await {
        match r {
            Ok(r) => {
                println!(
                    "[{}/{total}] {:<10} {} {:.1}s{}",
                    done.len() + 1,
                    r.ended.verdict.as_str(),
                    r.id,
                    r.ended.duration.as_secs_f64(),
                    if r.ended.failed_checks.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " · violated: {} · replay: rehearse explore --replay {} --from {}",
                            r.ended.failed_checks.join(", "),
                            r.id,
                            bundle_ref.dir().display()
                        )
                    }
                );
                done.push(r);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    drop(stream);
    done.sort_by_key(|r| {
        r.schedule.as_ref().map(|s| {
            (
                s.operation,
                s.position(learned_of(learned, s.operation)),
                s.clone(),
            )
        })
    });
    (done, first_error)
}

/// Each operation's reference end state.
type References = std::collections::BTreeMap<Operation, EndState>;
/// An operation and the writes its reference run made.
type Learned = (Operation, Vec<Point>);

/// The writes the reference run of `operation` made (none when it had no reference run).
fn learned_of(learned: &[(Operation, Vec<Point>)], operation: Operation) -> &[Point] {
    learned
        .iter()
        .find(|(op, _)| *op == operation)
        .map_or(&[][..], |(_, p)| p.as_slice())
}

/// Sorts `schedules` into matrix order: by operation, then by where its reference run made
/// the write (`learned`), then by fault.
fn sort(schedules: &mut [Schedule], learned: &[(Operation, Vec<Point>)]) {
    schedules.sort_by_key(|s| {
        (
            s.operation,
            s.position(learned_of(learned, s.operation)),
            s.clone(),
        )
    });
}

/// At most `limit` of `schedules`, spread so every fault keeps an equal share (the first
/// faults one more when it does not divide) and each share is taken evenly over the points.
pub fn spread(
    schedules: Vec<Schedule>,
    limit: usize,
    learned: &[(Operation, Vec<Point>)],
) -> Vec<Schedule> {
    if limit >= schedules.len() {
        return schedules;
    }
    let mut faults: Vec<Fault> = schedules.iter().map(|s| s.fault).collect();
    faults.sort();
    faults.dedup();
    let of_fault: Vec<Vec<&Schedule>> = faults
        .iter()
        .map(|f| schedules.iter().filter(|s| s.fault == *f).collect())
        .collect();
    // An even share per fault; what a fault with fewer schedules leaves goes to the others
    // (from the last fault back).
    let mut take = vec![0; faults.len()];
    let mut left = limit;
    loop {
        let open: Vec<usize> = (0..faults.len())
            .rev()
            .filter(|&i| take[i] < of_fault[i].len())
            .collect();
        if left == 0 || open.is_empty() {
            break;
        }
        let each = (left / open.len()).max(1);
        for i in open {
            let add = each.min(of_fault[i].len() - take[i]).min(left);
            take[i] += add;
            left -= add;
        }
    }
    let mut picked = Vec::new();
    for (of_fault, take) in of_fault.iter().zip(take) {
        let n = of_fault.len();
        picked.extend((0..take).map(|k| of_fault[(2 * k + 1) * n / (2 * take)].clone()));
    }
    sort(&mut picked, learned);
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schedule's case ending stands as the matrix module says (the harness's wording of
    /// unknown and not placed is what it reads).
    #[test]
    fn a_case_ending_stands_as_the_matrix_reads_it() {
        let ended = |verdict, reason: Option<String>, failed: Vec<String>| BodyEnded {
            verdict,
            reason,
            failed_checks: failed,
            duration: Duration::from_secs(1),
        };
        let absent = CaseError::evidence_absent("what invariant(s) cleanup read", "unread log");
        let not_placed = CaseError::NotPlaced {
            why: "the operation ended first".into(),
        };
        assert_eq!(
            standing(&ended(Verdict::Failed, Some(absent.to_string()), vec![])),
            Standing::Unknown
        );
        assert_eq!(
            standing(&ended(
                Verdict::Failed,
                Some(not_placed.to_string()),
                vec![]
            )),
            Standing::NotPlaced
        );
        assert_eq!(
            standing(&ended(Verdict::Failed, None, vec!["drain".into()])),
            Standing::Violated
        );
    }

    /// `n` writes: `create jobs` at every third, `patch backups/status live` otherwise.
    fn learned(n: usize) -> Vec<Learned> {
        let points = (0..n)
            .map(|index| Point {
                index,
                label: if index % 3 == 0 {
                    "create jobs".into()
                } else {
                    "patch backups/status live".into()
                },
            })
            .collect();
        vec![(Operation::Backup, points)]
    }

    fn all(points: usize) -> Vec<Schedule> {
        let learned = learned(points);
        schedules_of(
            Operation::Backup,
            &learned[0].1,
            Fault::ALL,
            &[],
            &mut Vec::new(),
        )
    }

    #[test]
    fn schedule_ids_round_trip_and_bad_ones_name_the_shape() {
        for s in all(12) {
            assert_eq!(Schedule::parse(&s.id()).unwrap(), s);
        }
        let stopped = Schedule {
            operation: Operation::StoppedBackup,
            place: Place {
                label: "patch pods/status mc-copy-*".into(),
                occurrence: 3,
            },
            fault: Fault::ServerStarted,
        };
        assert_eq!(
            stopped.id(),
            "stopped-backup.patch_pods~status_mc-copy-+.3.server-started"
        );
        assert_eq!(Schedule::parse(&stopped.id()).unwrap(), stopped);
        let faults = Operation::Backup.faults().len();
        assert_eq!(
            all(4)[faults].id(),
            format!(
                "backup.patch_backups~status_live.1.{}",
                Operation::Backup.faults()[0]
            )
        );
        for bad in [
            "",
            "backup",
            "backup-p01-game-restart",
            "rollout.create_jobs.1.game-restart",
            "backup.create_jobs.1.fire",
        ] {
            let e = Schedule::parse(bad).unwrap_err();
            assert!(
                e.contains("<operation>.<write>.<occurrence>.<fault>"),
                "{e}"
            );
        }
    }

    /// `--shard 1/4 … 4/4` share every schedule of the exploration (every operation, every
    /// write, every fault that applies) between them: each exactly once.
    #[test]
    fn four_shards_cover_the_whole_schedule_list_none_twice() {
        use crate::evidence::place::Shard;
        let points = learned(14).remove(0).1;
        let whole: Vec<Schedule> = Operation::ALL
            .iter()
            .flat_map(|&op| schedules_of(op, &points, Fault::ALL, &[], &mut Vec::new()))
            .collect();
        assert!(whole.len() > 400, "{}", whole.len());
        let shards: Vec<Vec<Schedule>> = (1..=4)
            .map(|k| {
                let shard = Shard { k, n: 4 };
                whole
                    .iter()
                    .filter(|s| shard.holds(&s.id()))
                    .cloned()
                    .collect()
            })
            .collect();
        let mut together: Vec<Schedule> = shards.iter().flatten().cloned().collect();
        assert_eq!(together.len(), whole.len(), "a schedule in two shards");
        together.sort();
        let mut sorted = whole.clone();
        sorted.sort();
        assert_eq!(together, sorted);
        for shard in &shards {
            assert!(shard.len() > whole.len() / 8, "{}", shard.len());
        }
    }

    #[test]
    fn schedules_sort_in_the_order_their_reference_run_made_the_writes() {
        let learned = learned(6);
        let mut schedules = all(6);
        schedules.reverse();
        sort(&mut schedules, &learned);
        assert_eq!(schedules, all(6));
        let labels: Vec<&str> = learned[0].1.iter().map(|p| p.label.as_str()).collect();
        let positions: Vec<usize> = schedules
            .iter()
            .map(|s| s.place.index_in(&labels).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] <= w[1]), "{positions:?}");
    }

    #[test]
    fn the_signal_schedules_are_judged_by_their_own_invariants() {
        use crate::evidence::invariants::by_operation;
        assert!(
            by_operation()
                .iter()
                .any(|(name, ids)| *name == signals::OPERATION && *ids == signals::INVARIANTS)
        );
        assert_eq!(by_operation().len(), Operation::ALL.len() + 1);
    }

    #[test]
    fn a_limit_keeps_every_fault_and_spreads_over_the_points() {
        let schedules = all(11);
        let learned = learned(11);
        assert_eq!(
            spread(schedules.clone(), schedules.len(), &learned),
            schedules
        );
        for limit in 1..schedules.len() {
            let picked = spread(schedules.clone(), limit, &learned);
            assert_eq!(picked.len(), limit, "limit {limit}");
            let mut faults: Vec<Fault> = picked.iter().map(|s| s.fault).collect();
            faults.sort();
            faults.dedup();
            assert_eq!(
                faults.len(),
                limit.min(Operation::Backup.faults().len()),
                "limit {limit}"
            );
            let mut unique = picked.clone();
            unique.dedup();
            assert_eq!(
                unique.len(),
                picked.len(),
                "limit {limit}: a schedule twice"
            );
        }
        // Two per fault out of eleven points: neither both at the start nor both at the end.
        let ten = spread(schedules, 2 * Operation::Backup.faults().len(), &learned);
        let labels: Vec<&str> = learned[0].1.iter().map(|p| p.label.as_str()).collect();
        let points: Vec<usize> = ten
            .iter()
            .filter(|s| s.fault == Fault::GameRestart)
            .map(|s| s.place.index_in(&labels).unwrap())
            .collect();
        assert_eq!(points, [2, 8]);
    }
}
