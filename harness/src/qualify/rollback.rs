//! Step 5: the clone rolled back (re-pinned, or restored from the pre-candidate snapshot and
//! re-pinned) and judged from what is read back, never from what a fixture wrote.

use gameplane_api::names;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::json;

use crate::context::{CaseContext, CaseError};
use crate::evidence::judge::gates as judge;
use crate::evidence::qualification::{
    Gate, GateEvidence, MemberBaseline, Plan, Rollback, RollbackEvidence,
};
use crate::probe::minecraft::Depth;
use crate::probe::readback::Readback;
use crate::qualify::access::{
    Access, await_server_phase, digests_of, join, patch_server, read_claims, version_image,
    with_saves_off,
};
use crate::qualify::gates::gate;
use crate::qualify::gates::pods::await_pod_running_image;
use crate::qualify::gates::save::save_gate;
use crate::qualify::seed::restore_into;
use crate::wait::{await_condition, conditions};

/// What the rollback works on.
pub(super) struct Rolling<'a> {
    pub(super) clone: &'a str,
    pub(super) previous: &'a str,
    pub(super) backup: &'a str,
    pub(super) restore: &'a str,
    /// The world claims the backup covers.
    pub(super) claims: &'a [String],
    /// What the clone's claims held right after the seeding restore (the snapshot).
    pub(super) restored: &'a Readback,
    /// The source's baseline (its claims' digests), to see that the snapshot seeded them.
    pub(super) source_baseline: Option<&'a MemberBaseline>,
}

/// Rolls the clone back (re-pin, or restore the pre-candidate snapshot and re-pin) and judges
/// it from what is read back: a restore-required rollback must leave every world claim with
/// exactly the snapshot's digest (read while the clone is still suspended, before the game
/// writes anything); the seeding restore must not have left empty a claim that holds data on
/// the source; then the previous version runs, a real join reaches play, a save succeeds and
/// the claims read back whole.
pub(super) async fn rollback_clone(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    access: &Access,
    r: &Rolling<'_>,
) -> Result<Gate, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let clone = r.clone;
    let pod_name = names::pod(clone);
    let mut problems: Vec<String> = Vec::new();
    let mut evidence = RollbackEvidence::new(plan.rollback, digests_of(r.restored));
    unseeded_claims(plan, r, &mut problems);
    match plan.rollback {
        Rollback::Compatible => {
            patch_server(ctx, clone, json!({"spec": {"version": r.previous}})).await?;
        }
        Rollback::RestoreRequired => {
            patch_server(
                ctx,
                clone,
                json!({"spec": {"version": r.previous, "suspend": true}}),
            )
            .await?;
            await_server_phase(ctx, clone, "Suspended").await?;
            await_condition(&pods, &pod_name, conditions::deleted(), ctx.bounds.settle).await?;
            let id = restore_into(
                ctx,
                plan,
                "restore the pre-candidate snapshot",
                r.restore,
                r.backup,
                clone,
            )
            .await?;
            evidence.restored_snapshot = Some(id);
            // Read while still suspended: nothing but the restore has written the claims.
            let back = read_claims(ctx, plan, "rollback-restored-read", r.claims).await?;
            problems.extend(judge::restore_mismatches(
                r.claims,
                &r.restored.claim_reads(),
                &back.claim_reads(),
            ));
            evidence.digests_after_restore = Some(digests_of(&back));
            patch_server(ctx, clone, json!({"spec": {"suspend": false}})).await?;
        }
    }
    // The clone ran the candidate until now: wait for the pod of the previous version, not
    // the candidate's pod that is still Ready while the StatefulSet rolls.
    let previous_image = version_image(ctx, &plan.template, r.previous).await?;
    let pod = match await_pod_running_image(ctx, &pods, &pod_name, &previous_image).await {
        Ok(pod) => pod,
        Err(e) => {
            problems.push(format!("the previous version did not come back: {e}"));
            evidence.error = Some(problems.join("; "));
            return Ok(gate(
                clone,
                GateEvidence::Rollback(Box::new(evidence)),
                false,
                Some(problems.join("; ")),
            ));
        }
    };
    await_server_phase(ctx, clone, "Running").await?;
    let verdict = join(ctx, access, clone, Depth::Play).await?;
    if !verdict.ok {
        problems.push(format!("join after rollback: {}", verdict.line()));
    }
    let saved = save_gate(ctx, access, clone).await;
    if !saved.passed {
        problems.push(format!(
            "save after rollback: {}",
            saved.reason.clone().unwrap_or_default()
        ));
    }
    let readback = with_saves_off(
        ctx,
        access,
        clone,
        read_claims(ctx, plan, "rollback-read", r.claims),
    )
    .await?;
    ctx.uses("world read back after the rollback");
    unsound_after_rollback(r, &readback, &mut problems);
    evidence.pod_uid = pod.metadata.uid.clone();
    evidence.join = Some(verdict.line());
    evidence.save = match saved.evidence {
        GateEvidence::Save(save) => Some(save),
        _ => None,
    };
    evidence.digests_after_rollback = Some(digests_of(&readback));
    evidence.readback = Some(json!(readback));
    let passed = problems.is_empty();
    Ok(gate(
        clone,
        GateEvidence::Rollback(Box::new(evidence)),
        passed,
        Some(problems.join("; ")),
    ))
}

/// The snapshot seeded every world claim the source holds data in: a clone claim the seeding
/// restore left empty while the source's claim of the same suffix holds data is a problem.
pub(super) fn unseeded_claims(plan: &Plan, r: &Rolling<'_>, problems: &mut Vec<String>) {
    problems.extend(judge::unseeded_claims(
        r.claims,
        r.clone,
        &plan.source,
        r.source_baseline.map(|b| &b.digests),
        &r.restored.claim_reads(),
    ));
}

/// After the rollback every world claim reads back, is not torn, and holds files where the
/// snapshot did.
pub(super) fn unsound_after_rollback(
    r: &Rolling<'_>,
    readback: &Readback,
    problems: &mut Vec<String>,
) {
    problems.extend(judge::unsound_after_rollback(
        r.claims,
        &r.restored.claim_reads(),
        &readback.claim_reads(),
    ));
}
