//! The qualification as an exploration schedule: a fleet of two members on the stable version
//! and a candidate qualified on the source's canary clone, promoted in batches of one, with
//! (unless it is the reference run) one fault placed before one of the operator's writes while
//! the procedure runs. Four variants ([`Variant`]): a good candidate, an unpullable one (then a
//! Restore of the source after the halt), and a good one whose module bundle is served as
//! pinned or whose bundle's tag was moved. The schedule ends by judging the qualification's own
//! record with the qualification invariant and the outcome oracle
//! ([`crate::evidence::invariants::qualification`]).

use std::sync::Arc;

use serde_json::json;

use super::Fault;
use super::observer::{Observer, ReleaseOnDrop};
use crate::context::{CaseContext, CaseError};
use crate::evidence::invariants::schedule::{QualifyInputs, Trace};
use crate::evidence::qualification::{ModulePin, Plan, Rollback};
use crate::fixture;
use crate::fixture::fleet::{self as rollout, FleetSpec};

/// The operator's writes that are a qualification's points: the fleet's and the clone's
/// GameServers and StatefulSets, the Backups, Restores and Jobs that seed the clone, and its
/// verdict on the canary Module of a pinned bundle (outside any namespace, named after the run).
pub const POINT_RESOURCES: &[&str] = &[
    "gameservers",
    "statefulsets",
    "backups",
    "restores",
    "jobs",
    "modules",
];

/// No worker pod's lifecycle is a point of a qualification (its copies are the backup and
/// restore operations' own matter): a prefix no pod name has.
const NO_WORKERS: &str = "\u{0}";

pub use crate::evidence::catalogue::Variant;

/// The fleet running and the plan of `variant` (its bundle published and pinned, and moved,
/// for the module variants).
async fn set_up(ctx: &CaseContext<'_>, variant: Variant) -> Result<Plan, CaseError> {
    let members = [rollout::SOURCE, rollout::OTHER];
    let candidate = match variant {
        Variant::Unpullable => fixture::VERSION_UNPULLABLE,
        _ => fixture::VERSION_COMPAT,
    };
    let pinned: &[&str] = match variant {
        Variant::Unpullable => &[],
        _ => &[fixture::VERSION_COMPAT],
    };
    rollout::fleet(
        ctx,
        &FleetSpec {
            candidates: pinned,
            members: &members,
            ..Default::default()
        },
    )
    .await?;
    let mut plan = rollout::plan(ctx, &members, candidate, Rollback::Compatible);
    if matches!(variant, Variant::Module | Variant::ModuleMoved) {
        let (source, digest, _) = ctx
            .step(
                "publish the module bundle",
                crate::fixture::module::publish(ctx),
            )
            .await?;
        if variant == Variant::ModuleMoved {
            ctx.step("move the bundle's tag to other content", async {
                crate::fixture::module::move_tag(ctx)
                    .await
                    .map(|d| json!({"serves": d}))
            })
            .await?;
        }
        plan.module = Some(ModulePin {
            source,
            module: crate::fixture::module::MODULE.into(),
            version: crate::fixture::module::BUNDLE_VERSION.into(),
            digest,
        });
    }
    Ok(plan)
}

/// After a halt: a Restore of the source from the qualification's own backup, awaited to its
/// end (at most the settle bound); its last phase.
async fn restore_after_halt(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> Result<Option<String>, CaseError> {
    const NAME: &str = "after-halt";
    ctx.step("restore the source after the halt", async {
        fixture::create_restore(ctx, NAME, &plan.backup_name(), rollout::SOURCE).await?;
        let api: kube::Api<gameplane_api::restore::Restore> =
            kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let terminal = crate::fixture::backup::restore_terminal();
        let r = match crate::wait::await_object(&api, NAME, terminal, ctx.bounds.settle).await {
            Ok(r) => Some(r),
            // Liveness judges a Restore that never ends.
            Err(crate::wait::WaitError::TimedOut { .. }) => api.get_opt(NAME).await.ok().flatten(),
            Err(e) => return Err(e.into()),
        };
        Ok(r.and_then(|r| r.status)
            .and_then(|s| s.phase)
            .map(|p| format!("{p:?}")))
    })
    .await
}

/// Runs one qualification schedule of `variant`; `hold` is the point and fault, `None` for the
/// reference run. The observer must be the cluster's request hook.
pub(crate) async fn schedule(
    ctx: &CaseContext<'_>,
    observer: Arc<Observer>,
    operation: super::Operation,
    variant: Variant,
    hold: Option<&(super::Place, Fault)>,
) -> Result<super::Ran, CaseError> {
    observer.watch(&ctx.namespace);
    let plan = set_up(ctx, variant).await?;
    let reached = observer.begin(
        POINT_RESOURCES,
        NO_WORKERS,
        hold.map(|(place, _)| place.clone()),
    );
    let _release = ReleaseOnDrop(observer.clone());
    let (over_tx, over_rx) = tokio::sync::oneshot::channel::<()>();
    let run = async {
        let recorded = crate::qualify::qualify_recorded(ctx, &plan).await;
        let restored = match variant {
            Variant::Unpullable if recorded.1.is_none() => {
                Some(restore_after_halt(ctx, &plan).await)
            }
            _ => None,
        };
        let _ = over_tx.send(());
        (recorded, restored)
    };
    let over = async {
        let _ = over_rx.await;
        Ok::<(), crate::wait::WaitError>(())
    };
    // The fault lands on the source member (its game, its agent) or the operator.
    let place = super::place_fault(
        ctx,
        &observer,
        operation,
        reached,
        hold,
        over,
        crate::fixture::inject::Target {
            server: rollout::SOURCE,
            resource: "",
            object: "",
            stale_as_of: None,
            resources: POINT_RESOURCES,
        },
    );
    let (((q, error), restored), placed) = tokio::join!(run, place);
    observer.freeze();
    let (placed, _) = placed?;
    let restored = restored.transpose()?;
    // A procedure that stopped on an error (e.g. the source's backup invalidated by the fault)
    // is judged on what it recorded, as a halt: the fleet as it was, nothing promoted.
    let stopped = error.map(|e| e.to_string());
    let ids = crate::evidence::invariants::judged_by(operation.row().judges);
    let schedule = placed.perturbation(operation, hold);
    // What the judgement reads besides the record, kept so `--rejudge` judges it again the
    // same way (one judge for both).
    let inputs = QualifyInputs {
        stopped,
        perturbation: schedule.clone(),
        restored,
        invariants: ids.iter().map(|i| i.to_string()).collect(),
    };
    let history = json!({"placed": placed, "outcome": q.outcome, "line": q.outcome.line(),
        "stopped": inputs.stopped, "restore_after_halt": inputs.restored,
        "points": observer.points()});
    Ok(super::Ran {
        schedule,
        placement: placed.placement(hold, &observer.points()),
        object: format!("qualification {}/{}", ctx.namespace, plan.run_id),
        history,
        trace: Trace::Qualification {
            record: Box::new(q),
            inputs,
        },
    })
}
