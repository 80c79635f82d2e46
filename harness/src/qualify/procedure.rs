//! The procedure, step by step (CONTRACT part C): baseline receipt, preflight, seed the clone,
//! the candidate on the clone behind its gates, rollback evidence, then promotion in gated
//! batches. The entry points [`qualify`], [`qualify_recorded`] and [`qualify_into`] live here.

use serde_json::json;

use crate::context::{CaseContext, CaseError, HarnessMutant};
use crate::evidence::pvc_table::PvcPhase;
use crate::evidence::qualification::{
    Gate, GateEvidence, MemberBaseline, Outcome, Plan, Qualification, clone_name,
};
use crate::qualify::access::{get_server, members, patch_server, server_pvcs, world_claims_of};
use crate::qualify::gates::module::module_gate;
use crate::qualify::gates::{Timer, finish, halt, record, server_gates};
use crate::qualify::preflight::preflight;
use crate::qualify::promotion::{premature_promotion_receipt, promote};
use crate::qualify::rollback::{Rolling, rollback_clone};
use crate::qualify::seed::{clone_of, seed_clone};

/// Runs the qualification. Gate failures are an [`Outcome::Halted`], not an error: an error
/// means the procedure itself could not run.
pub async fn qualify(ctx: &CaseContext<'_>, plan: &Plan) -> Result<Qualification, CaseError> {
    match qualify_recorded(ctx, plan).await {
        (q, None) => Ok(q),
        (_, Some(e)) => Err(e),
    }
}

/// Runs the qualification and returns what it recorded, with the error that ended it early
/// when the procedure could not complete (for a report that shows how far it got).
pub async fn qualify_recorded(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> (Qualification, Option<CaseError>) {
    let mut q = start(plan);
    let error = qualify_into(ctx, plan, &mut q).await;
    (q, error)
}

/// A qualification of `plan` that has recorded nothing yet.
pub fn start(plan: &Plan) -> Qualification {
    Qualification {
        plan: plan.clone(),
        clone: clone_name(&plan.source),
        candidate_image: None,
        previous: None,
        baseline: vec![],
        after: vec![],
        snapshot: None,
        gates: vec![],
        clone_pvcs_before: vec![],
        clone_pvcs_after: vec![],
        promotion_receipts: 0,
        put_back: vec![],
        way_back: vec![],
        backed_up: vec![],
        outcome: Outcome::Promoted { batches: 0 },
        interrupted: None,
    }
}

/// Runs the qualification, recording into `q` as it goes (so a caller that stops it early —
/// an interrupt — still holds what was recorded), and returns the error that ended it early.
pub async fn qualify_into(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
) -> Option<CaseError> {
    let error = procedure(ctx, plan, q).await.err();
    // Read after an interrupt too (plain reads, no step an interrupt refuses): the report shows
    // the fleet as it is, never "gone" for objects that exist.
    match crate::qualify::fleet::read_after(ctx, plan, q).await {
        Ok(()) => error,
        Err(e) => error.or(Some(e)),
    }
}

pub(super) async fn procedure(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
) -> Result<(), CaseError> {
    let clone = q.clone.clone();
    ctx.uses("fleet pod UIDs");
    ctx.uses("PVC UIDs");
    q.baseline = baseline(ctx, plan).await?;

    // 2. Preflight: a refusal is a failed gate (a gate receipt that did not pass).
    let timer = Timer::start();
    let pre = preflight(ctx, plan).await?;
    let gate = finish(
        timer,
        Gate::new(
            "",
            GateEvidence::Preflight(pre.as_ref().ok().map(|(e, _, _)| e.clone())),
            pre.is_ok(),
            pre.as_ref().err().map(|r| r.0.clone()),
        ),
    );
    record(ctx, &gate)?;
    q.gates.push(gate.clone());
    let Ok((_, access, candidate_image)) = pre else {
        halt(q, &gate, 0);
        return Ok(());
    };
    q.candidate_image = Some(candidate_image.clone());

    // The module bundle the candidate carries (CONTRACT C.8): verified before anything is
    // seeded, so a bundle that is not the pinned one halts before any join.
    if !module_bundle(ctx, plan, q).await? {
        return Ok(());
    }
    let source = get_server(ctx, &plan.source).await?;
    let previous = source.spec.version.clone().unwrap_or_default();
    q.previous = Some(previous.clone());
    let claims = world_claims_of(ctx, &clone_of(&source, &clone, &previous, &plan.run_id)).await?;

    // 3. Back up the source, clone it, restore the backup into the clone.
    let restored = seed_clone(ctx, plan, q, &source, &previous, &claims).await?;
    let backup_name = plan.backup_name();
    let [_, rollback_restore] = plan.restore_names();

    // 4. The candidate on the clone only, behind gates.
    let generation = ctx
        .step("apply the candidate to the clone", async {
            // `harness-candidate-on-source` defect: the patch names the source, not its clone.
            let on_source = ctx.harness_mutant(HarnessMutant::CandidateOnSource);
            let generation = patch_server(
                ctx,
                if on_source { &plan.source } else { &clone },
                json!({"spec": {"version": plan.candidate, "suspend": false}}),
            )
            .await?;
            Ok((
                json!({"clone": clone, "version": plan.candidate, "image": candidate_image, "generation": generation}),
                generation,
            ))
        })
        .await?
        .1;
    let before = Some((&restored, claims.as_slice()));
    let gates = server_gates(
        ctx,
        plan,
        &access,
        &clone,
        &candidate_image,
        generation,
        before,
        None,
    )
    .await?;
    let failed = gates.iter().find(|g| !g.passed).cloned();
    q.gates.extend(gates);
    if let Some(gate) = failed {
        premature_promotion_receipt(ctx, plan, q)?;
        halt(q, &gate, 0);
        return Ok(());
    }

    // 5. Rollback evidence on the clone: a gate computed from what was read back.
    crate::context::boundary(&format!("gate: rollback ({clone})"))?;
    let timer = Timer::start();
    let rollback = rollback_clone(
        ctx,
        plan,
        &access,
        &Rolling {
            clone: &clone,
            previous: &previous,
            backup: &backup_name,
            restore: &rollback_restore,
            claims: &claims,
            restored: &restored,
            source_baseline: q.baseline.iter().find(|b| b.server == plan.source),
        },
    )
    .await?;
    let rollback = finish(timer, rollback);
    record(ctx, &rollback)?;
    q.gates.push(rollback.clone());
    q.clone_pvcs_after = server_pvcs(ctx, &clone).await?;
    ctx.observe_pvcs(PvcPhase::After, &q.clone_pvcs_after)?;
    if !rollback.passed {
        halt(q, &rollback, 0);
        return Ok(());
    }

    // 6. Promote in gated batches.
    promote(ctx, plan, q, &access, &candidate_image).await
}

/// The module bundle gate, when the candidate carries a bundle; `false` when it halted the
/// qualification.
async fn module_bundle(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
) -> Result<bool, CaseError> {
    let Some(pin) = &plan.module else {
        return Ok(true);
    };
    crate::context::boundary(&format!("gate: module bundle ({})", q.clone))?;
    let timer = Timer::start();
    let g = finish(timer, module_gate(ctx, &plan.run_id, pin, &q.clone).await?);
    record(ctx, &g)?;
    q.gates.push(g.clone());
    if !g.passed {
        halt(q, &g, 0);
    }
    Ok(g.passed)
}

/// Step 1: the baseline receipt, the fleet as it was (pod UIDs, versions, claims' digests).
/// The `harness-baseline-skipped` defect never records it.
pub(super) async fn baseline(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> Result<Vec<MemberBaseline>, CaseError> {
    if ctx.harness_mutant(HarnessMutant::BaselineSkipped) {
        return Ok(vec![]);
    }
    ctx.step(
        "baseline receipt",
        members(ctx, plan, &plan.observed(), true),
    )
    .await
}
