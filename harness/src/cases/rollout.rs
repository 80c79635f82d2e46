//! The rollout bucket: candidates rehearsed through the qualification procedure (CONTRACT C)
//! on a canary clone restored from a real backup, with a fleet of pinned servers.
//!
//! A negative case passes only when the qualification halted at the gate it targets *for the
//! reason it targets* (the pod's waiting reason, the join depth reached), with the fleet
//! untouched and no promotion receipt; a positive case only when every gate passed, the
//! rollback gate was computed from what was read back, and the clone's PVCs kept their UIDs.
//!
//! This file holds what the rollout cases share (a qualification run, how it halted, the
//! fleet untouched or promoted); the cases are in [`super::candidate`] (candidates that cannot
//! serve), [`super::batches`] (batches, format changes, rollbacks, the preflight) and
//! [`super::module_bundle`] (the module bundle gate).

use std::collections::BTreeMap;

use gameplane_api::names;
use kube::api::Api;
use serde_json::{Value, json};

use crate::context::{CaseContext, CaseError, Checks};
use crate::fixture;
use crate::fixture::fleet::{fleet_pod_uids, run};
use crate::fixture::observe;
use crate::qualify::{self, Outcome, Plan, Qualification, gates};

pub(super) const THIRD: &str = "mc-c";
/// The fixture game's own version in the format-changing candidate's image (what
/// `FIXTURE_REFUSE_LOGIN_UNDER` names).
pub(super) const FORMAT_GAME_VERSION: &str = "2.0";

pub(super) async fn fleet_versions(
    ctx: &CaseContext<'_>,
    members: &[&str],
) -> Result<BTreeMap<String, Option<String>>, CaseError> {
    let servers: Api<gameplane_api::gameserver::GameServer> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut out = BTreeMap::new();
    for s in members {
        let gs = servers.get(s).await.map_err(CaseError::kube(
            "get GameServer",
            format!("{}/{s}", ctx.namespace),
        ))?;
        out.insert(s.to_string(), gs.spec.version);
    }
    Ok(out)
}

/// Runs the qualification while an administrator overrides `member`'s image (`spec.image`,
/// its running version's image) exactly before the qualification moves it: the API server holds
/// the qualification's first patch of `member`, the override is stored, then the patch goes on.
/// The preflight has passed by then (it refuses an overriding member), so only the gates can
/// catch it. The moment comes from the qualification's own write, never from timing: a
/// qualification that never moves `member` fails the case with that reason.
pub(super) async fn run_with_override_before_move(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    member: &str,
) -> Result<Qualification, CaseError> {
    use crate::backend::hold::WriteMatch;
    let mut hold = ctx
        .backend
        .hold_write(
            &ctx.namespace,
            WriteMatch {
                verb: "patch",
                resource: "gameservers",
                subresource: None,
                name: Some(member.to_string()),
                by_operator: false,
                occurrence: 1,
            },
        )
        .map_err(|e| CaseError::from(crate::faults::FaultError::from(e)))?;
    let label = hold.label().to_string();
    let qualification = run(ctx, plan);
    tokio::pin!(qualification);
    tokio::select! {
        reached = hold.reached() => {
            if reached.is_none() {
                return Err(CaseError::Setup(format!("the cluster went away before the write {label}")));
            }
            let image = format!("{}:{}", fixture::GAME_IMAGE_REPO, fixture::VERSION_STABLE);
            let edited = ctx
                .step("override the member's image before it moves", async {
                    servers(ctx)
                        .patch(
                            member,
                            &kube::api::PatchParams::default(),
                            &kube::api::Patch::Merge(json!({"spec": {"image": image}})),
                        )
                        .await
                        .map_err(CaseError::kube("patch GameServer", format!("{}/{member}", ctx.namespace)))?;
                    Ok(json!({"held": label, "spec.image": image}))
                })
                .await;
            hold.release();
            edited?;
            qualification.await
        }
        q = &mut qualification => {
            let q = q?;
            Err(CaseError::assertion(
                qualification_object(ctx),
                format!("the write {label}"),
                format!("the qualification moves {member}"),
                format!("it ended without that write: {}", q.outcome.line()),
            ))
        }
    }
}

pub(super) fn servers(ctx: &CaseContext<'_>) -> Api<gameplane_api::gameserver::GameServer> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

pub(super) fn qualification_object(ctx: &CaseContext<'_>) -> String {
    format!("qualification in {}", ctx.namespace)
}

/// The gate a halt names, its server and reason, or `None` when it was not a halt.
pub(super) fn halted_at(q: &Qualification) -> Option<(&str, Option<&str>, &str, usize)> {
    match &q.outcome {
        Outcome::Halted {
            gate,
            server,
            reason,
            batches_promoted,
        } => Some((
            gate.as_str(),
            server.as_deref(),
            reason.as_str(),
            *batches_promoted,
        )),
        Outcome::Promoted { .. } => None,
    }
}

/// Each member the qualification put back, as (batch, member, why putting it back failed).
pub(super) fn put_back_records(q: &Qualification) -> Vec<(usize, String, Option<String>)> {
    q.put_back
        .iter()
        .map(|p| (p.batch, p.server.clone(), p.error.clone()))
        .collect()
}

/// The failed gate `name` on `server`, if the qualification recorded one.
pub(super) fn failed_gate<'q>(
    q: &'q Qualification,
    name: &str,
    server: &str,
) -> Option<&'q qualify::Gate> {
    q.gates
        .iter()
        .find(|g| g.name == name && g.server == server && !g.passed)
}

/// Checks that a qualification halted at `gate` on the canary clone before any promotion and
/// left every fleet member as it was (pod UIDs and versions), with no promotion receipt.
pub(super) async fn check_halted_untouched(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    q: &Qualification,
    members: &[&str],
    before: &BTreeMap<String, Option<String>>,
    gate: &str,
) -> Result<Value, CaseError> {
    let after = fleet_pod_uids(ctx, members).await?;
    let versions = fleet_versions(ctx, members).await?;
    let o = qualification_object(ctx);
    let halted = halted_at(q);
    checks.check(
        "halted-at-gate",
        matches!(halted, Some((g, Some(s), _, 0)) if g == gate && s == q.clone),
        &o,
        "outcome",
        format!(
            "halted at gate {gate:?} on the clone {}, before any batch",
            q.clone
        ),
        &q.outcome,
    );
    checks.eq(
        "no-promotion-receipt",
        &o,
        "promotion receipts in the journal",
        0,
        q.promotion_receipts,
    );
    checks.check(
        "baseline-recorded",
        q.baseline.len() == members.len(),
        &o,
        "baseline receipt",
        format!("every member of {members:?}"),
        &q.baseline,
    );
    checks.eq(
        "fleet-untouched",
        &o,
        "fleet pod UIDs",
        before.clone(),
        after.clone(),
    );
    let pinned: BTreeMap<String, Option<String>> = members
        .iter()
        .map(|m| (m.to_string(), Some(fixture::VERSION_STABLE.to_string())))
        .collect();
    checks.eq(
        "fleet-versions-unchanged",
        &o,
        "fleet spec.version",
        pinned,
        versions.clone(),
    );
    Ok(json!({"fleet_pod_uids": after, "fleet_versions": versions, "outcome": q.outcome}))
}

/// Checks a promoted qualification: every gate passed, every batch promoted, the rollback gate
/// passed, and the clone's claims kept their UIDs (the candidate's mods claim is new, not
/// changed).
pub(super) fn check_promoted(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    q: &Qualification,
    batches: usize,
) -> Value {
    let o = qualification_object(ctx);
    checks.check(
        "promoted",
        matches!(q.outcome, Outcome::Promoted { batches: b } if b == batches),
        &o,
        "outcome",
        format!("promoted in {batches} batches"),
        &q.outcome,
    );
    let rollback = q.gates.iter().find(|g| g.name == gates::ROLLBACK);
    checks.check(
        "rollback-gate",
        rollback.is_some_and(|g| g.passed),
        &o,
        "gate rollback",
        "passed (computed from what was read back)",
        rollback.map(|g| (&g.passed, &g.reason)),
    );
    let candidate_mods = names::mods_pvc(&q.clone, &q.plan.candidate);
    let comparison = observe::check_pvcs(
        ctx,
        checks,
        "clone-pvcs",
        &q.clone_pvcs_before,
        &q.clone_pvcs_after,
        &[candidate_mods],
    );
    json!({"outcome": q.outcome, "clone_pvcs": comparison})
}
