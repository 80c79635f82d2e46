//! The qualification as an exploration schedule: a fleet of two members on the stable version,
//! a good candidate (the compatible one) qualified on the source's canary clone and promoted in
//! batches of one, with (unless it is the reference run) one fault placed before one of the
//! operator's writes while the procedure runs. The schedule ends by judging the
//! qualification's own record with the qualification invariant and the outcome oracle
//! ([`crate::evidence::invariants::qualification`]).

use std::sync::Arc;

use serde_json::json;

use super::Fault;
use super::observer::{Observer, ReleaseOnDrop};
use crate::cases::fixture;
use crate::cases::rollout::{self, FleetSpec};
use crate::context::{CaseContext, CaseError, Checks};
use crate::evidence::invariants::qualification::{self, QUALIFY_INVARIANTS};
use crate::evidence::qualification::Rollback;

/// The operator's writes that are a qualification's points: the fleet's and the clone's
/// GameServers and StatefulSets, and the Backups, Restores and Jobs that seed the clone.
pub const POINT_RESOURCES: &[&str] =
    &["gameservers", "statefulsets", "backups", "restores", "jobs"];

/// No worker pod's lifecycle is a point of a qualification (its copies are the backup and
/// restore operations' own matter): a prefix no pod name has.
const NO_WORKERS: &str = "\u{0}";

/// Runs one qualification schedule; `hold` is the point and fault, `None` for the reference
/// run. The observer must be the cluster's request hook.
pub async fn schedule(
    ctx: &CaseContext<'_>,
    observer: Arc<Observer>,
    hold: Option<(usize, Fault)>,
) -> Result<(), CaseError> {
    observer.watch(&ctx.namespace);
    let members = [rollout::SOURCE, rollout::OTHER];
    rollout::fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_COMPAT],
            members: &members,
            ..Default::default()
        },
    )
    .await?;
    let plan = rollout::plan(ctx, &members, fixture::VERSION_COMPAT, Rollback::Compatible);
    let reached = observer.begin(POINT_RESOURCES, NO_WORKERS, hold.map(|(point, _)| point));
    let _release = ReleaseOnDrop(observer.clone());
    let (over_tx, over_rx) = tokio::sync::oneshot::channel::<()>();
    let run = async {
        let recorded = crate::qualify::qualify_recorded(ctx, &plan).await;
        let _ = over_tx.send(());
        recorded
    };
    let over = async {
        let _ = over_rx.await;
        Ok::<(), crate::wait::WaitError>(())
    };
    // The fault lands on the source member (its game, its agent) or the operator.
    let place = super::place_fault(ctx, &observer, reached, hold, over, (rollout::SOURCE, ""));
    let ((q, error), placed) = tokio::join!(run, place);
    observer.freeze();
    let (placed, _) = placed?;
    let perturbation = placed.perturbation(super::Operation::Qualify, hold);
    ctx.recorder.artifact(
        "qualification.json",
        &serde_json::to_vec_pretty(&q).unwrap_or_default(),
    )?;
    // A procedure that stopped on an error (e.g. the source's backup invalidated by the fault)
    // is judged on what it recorded, as a halt: the fleet as it was, nothing promoted.
    let stopped = error.map(|e| e.to_string());
    let violations = qualification::judge(&q, stopped.as_deref(), Some(&perturbation));
    ctx.uses("the qualification's record: its plan, gates, outcome and the fleet before and after");
    let mut checks = Checks::new();
    let object = format!("qualification {}/{}", ctx.namespace, plan.run_id);
    for id in QUALIFY_INVARIANTS {
        let broken: Vec<_> = violations.iter().filter(|v| v.invariant == *id).collect();
        checks.check(
            id,
            broken.is_empty(),
            &object,
            &format!("invariant {id} over the qualification's record"),
            "holds",
            &broken,
        );
    }
    ctx.assess_invariants(
        checks,
        json!({"placed": placed, "outcome": q.outcome, "line": q.outcome.line(),
               "stopped": stopped, "points": observer.points(), "violations": violations}),
    )
}
