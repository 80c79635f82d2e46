//! Qualification in batches (CONTRACT C): format-changing candidates and their compatible and
//! restore-required rollbacks, a batch gated together, a failed batch put back (from its
//! Backups when the format changed), a halt in a later batch, and the preflight's refusals.
use std::collections::BTreeMap;

use gameplane_api::names;
use kube::api::Api;
use serde_json::json;

use super::rollout::*;
use crate::context::{CaseContext, CaseError, Checks};
use crate::fixture::fleet::{
    FleetSpec, OTHER, SOURCE, fleet, fleet_pod_uids, plan, qualified, run,
};
use crate::fixture::{self};
use crate::qualify::{self, Outcome, Qualification, Rollback, gates};

/// Format-changing update, compatible rollback: PVC UIDs unchanged; the save is readable
/// directly after re-pinning.
pub async fn format_change_compatible_rollback(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let (_, q) = qualified(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_COMPAT],
            ..Default::default()
        },
        Rollback::Compatible,
    )
    .await?;
    let mut checks = Checks::new();
    let observed = check_promoted(ctx, &mut checks, &q, 2);
    ctx.assess(checks, observed)
}

/// Format-changing update, restore-required rollback: restore from the pre-candidate snapshot;
/// the candidate-only marker is gone; primary and extra world values are back; mods keep the
/// clone's value; PVC UIDs unchanged.
pub async fn format_change_restore_required_rollback(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    let (_, q) = qualified(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_FORMAT],
            ..Default::default()
        },
        Rollback::RestoreRequired,
    )
    .await?;
    let mut checks = Checks::new();
    // The candidate really changed the format on the clone: otherwise the restore proves nothing.
    let read = q
        .gates
        .iter()
        .find(|g| g.name == gates::READ_BACK && g.server == q.clone);
    checks.check(
        "candidate-migrated",
        read.is_some_and(|g| {
            g.evidence.read_back().is_some_and(|e| {
                e.claims
                    .values()
                    .any(|c| c.format == Some(2) && c.candidate_marker)
            })
        }),
        &format!("gameserver {}/{}", ctx.namespace, q.clone),
        "world format under the candidate",
        "format 2 with the candidate-only marker",
        read.map(|g| &g.evidence),
    );
    let observed = check_promoted(ctx, &mut checks, &q, 2);
    ctx.assess(checks, observed)
}

/// An extra world declared only on the template: the members declare none, so the operator
/// gives each the template's (`<gs>-extra-nether`). A format-changing candidate then needs every
/// one of those claims in the backup that seeds the clone, in the read-back and in the rollback
/// comparison: the qualification baselines each member's extra world, the clone's read-back
/// covers its own, the restore-required rollback returns every claim, and the fleet is promoted.
pub async fn extra_world_declared_on_template(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    let (_, q) = qualified(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_FORMAT],
            extra_on_template: true,
            ..Default::default()
        },
        Rollback::RestoreRequired,
    )
    .await?;
    let mut checks = Checks::new();
    let extra = |server: &str| names::extra_pvc(server, fixture::EXTRA_WORLD);
    let baselined: BTreeMap<&str, bool> = members
        .iter()
        .map(|m| {
            (
                *m,
                q.baseline
                    .iter()
                    .any(|b| b.server == *m && b.digests.contains_key(&extra(m))),
            )
        })
        .collect();
    let read = q
        .gates
        .iter()
        .find(|g| g.name == gates::READ_BACK && g.server == q.clone);
    let clone_read = read
        .and_then(|g| g.evidence.read_back())
        .is_some_and(|e| e.claims.contains_key(&extra(&q.clone)));
    checks.eq(
        "template-extra-world-covered",
        &qualification_object(ctx),
        "each member's baseline and the clone's read-back hold the extra world the template declares",
        (members.iter().map(|m| (*m, true)).collect(), true),
        (baselined, clone_read),
    );
    let observed = check_promoted(ctx, &mut checks, &q, 2);
    ctx.assess(checks, observed)
}

/// Member tracking the default version: the preflight refuses the rollout before any backup or
/// clone, naming the member; nothing is touched.
pub async fn member_tracking_default_version(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    let (before, q) = qualified(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_COMPAT],
            tracking_default: &[OTHER],
            ..Default::default()
        },
        Rollback::Compatible,
    )
    .await?;
    let after = fleet_pod_uids(ctx, &members).await?;
    let clone_exists = {
        let servers: Api<gameplane_api::gameserver::GameServer> =
            Api::namespaced(ctx.client.clone(), &ctx.namespace);
        servers
            .get_opt(&q.clone)
            .await
            .map_err(CaseError::kube(
                "get GameServer",
                format!("{}/{}", ctx.namespace, q.clone),
            ))?
            .is_some()
    };
    let backups = {
        let api: Api<gameplane_api::backup::Backup> =
            Api::namespaced(ctx.client.clone(), &ctx.namespace);
        api.list(&Default::default())
            .await
            .map_err(CaseError::kube("list Backups", ctx.namespace.clone()))?
            .items
            .len()
    };
    ctx.uses("GameServer spec.version");
    let mut checks = Checks::new();
    let o = qualification_object(ctx);
    checks.check(
        "preflight-refused",
        matches!(halted_at(&q), Some((g, None, reason, 0)) if g == gates::PREFLIGHT && reason.contains(OTHER)),
        &o,
        "outcome",
        format!("halted at the preflight, naming {OTHER}"),
        &q.outcome,
    );
    checks.eq(
        "nothing-created",
        &o,
        "Backups and the clone",
        (0, false),
        (backups, clone_exists),
    );
    checks.eq(
        "fleet-untouched",
        &o,
        "fleet pod UIDs",
        before,
        after.clone(),
    );
    checks.eq(
        "no-promotion-receipt",
        &o,
        "promotion receipts in the journal",
        0,
        q.promotion_receipts,
    );
    ctx.assess(
        checks,
        json!({"outcome": q.outcome, "fleet_pod_uids": after}),
    )
}

/// Halt at a later batch: the canary and batch 1 pass; an administrator overrides the batch-2
/// member's image after the preflight, just before the qualification moves it (the API server
/// holds the qualification's patch of that member until the override is stored), so it keeps
/// running that image, its image gate fails and it is put back on its version; batch 1 stays
/// promoted, the batch-3 member is untouched, and the journal records the failing member's
/// evidence and 1 batch promoted.
pub async fn halt_at_later_batch(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER, THIRD];
    let before = fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_COMPAT],
            members: &members,
            ..Default::default()
        },
    )
    .await?;
    let p = plan(ctx, &members, fixture::VERSION_COMPAT, Rollback::Compatible);
    let q = run_with_override_before_move(ctx, &p, OTHER).await?;
    let after = fleet_pod_uids(ctx, &members).await?;
    let versions = fleet_versions(ctx, &members).await?;
    let mut checks = Checks::new();
    let o = qualification_object(ctx);
    check_halted_in_batch_two(&mut checks, &o, &q);
    let g = failed_gate(&q, gates::IMAGE, OTHER);
    checks.check(
        "failing-member-evidence",
        g.is_some_and(|g| g.evidence.image().is_some_and(|e| !e.image_id.is_empty())),
        &format!("gameserver {}/{OTHER}", ctx.namespace),
        "the failed gate's evidence",
        "the imageID the member runs",
        g.map(|g| &g.evidence),
    );
    checks.eq(
        "promotion-receipts",
        &o,
        "promotion receipts in the journal (batch 1 passed, batch 2 failed)",
        2,
        q.promotion_receipts,
    );
    checks.eq(
        "batch-one-promoted",
        &format!("gameserver {}/{SOURCE}", ctx.namespace),
        "spec.version",
        Some(fixture::VERSION_COMPAT.to_string()),
        versions.get(SOURCE).cloned().flatten(),
    );
    // The failed batch is put back whole: its member runs its own version again, and the
    // qualification records it as put back.
    let put_back = put_back_records(&q);
    checks.eq(
        "failed-batch-put-back",
        &format!("gameserver {}/{OTHER}", ctx.namespace),
        "spec.version, and the put-back record (batch, member, error)",
        (
            Some(fixture::VERSION_STABLE.to_string()),
            vec![(2, OTHER.to_string(), None)],
        ),
        (versions.get(OTHER).cloned().flatten(), put_back),
    );
    check_third_untouched(&mut checks, ctx, &before, &after, &versions);
    ctx.assess(
        checks,
        json!({"outcome": q.outcome, "fleet_pod_uids": after, "fleet_versions": versions}),
    )
}

/// A format-changing candidate whose first batch fails: the canary passes; batch 1 moves two
/// members, the first migrates its world to the new format, the second cannot read its own
/// world under the candidate (its game refuses to start on it, writing nothing), so its image
/// gate fails. The batch is put back whole, each member suspended,
/// restored from the backup taken of it before the batch moved and re-pinned: both run their
/// own version again (the migrated one could not, re-pinned alone) and nothing is kept as a
/// way back, since nothing was promoted.
pub async fn failed_format_batch_restored_from_its_backups(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_FORMAT],
            members: &members,
            unreadable_world_under: &[(OTHER, FORMAT_GAME_VERSION)],
            ..Default::default()
        },
    )
    .await?;
    let (q, versions) = one_batch_format_run(ctx, &members).await?;
    let mut checks = Checks::new();
    let o = qualification_object(ctx);
    check_halted_in_batch_one(&mut checks, &o, &q, gates::IMAGE);
    check_batch_put_back(
        &mut checks,
        &o,
        "batch-restored-and-put-back",
        &members,
        &versions,
        &q,
    );
    check_worlds_as_before(&mut checks, &o, &members, &q);
    checks.eq(
        "no-way-back-kept",
        &o,
        "pre-promotion backups kept as a way back (nothing was promoted)",
        0,
        q.way_back.len(),
    );
    ctx.assess(
        checks,
        json!({"outcome": q.outcome, "put_back": q.put_back, "fleet_versions": versions}),
    )
}

/// A format-changing candidate in batches of one whose batch-2 member cannot read its own
/// world under it: the canary and batch 1 pass, and batch 1 keeps its pre-promotion backup as
/// its way back; the batch-2 member's game refuses to start on its world, so its image gate
/// fails (the container crash-loops); it is restored from its own backup (every world digest as
/// read while it was stopped for that backup) and runs its version again; the batch-3 member is
/// untouched. Every moved member's backup had succeeded before its first gate began.
pub async fn format_batch_two_member_cannot_read_its_world(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER, THIRD];
    let before = fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_FORMAT],
            members: &members,
            unreadable_world_under: &[(OTHER, FORMAT_GAME_VERSION)],
            ..Default::default()
        },
    )
    .await?;
    let p = plan(
        ctx,
        &members,
        fixture::VERSION_FORMAT,
        Rollback::RestoreRequired,
    );
    let q = run(ctx, &p).await?;
    let after = fleet_pod_uids(ctx, &members).await?;
    let versions = fleet_versions(ctx, &members).await?;
    let mut checks = Checks::new();
    let o = qualification_object(ctx);
    check_halted_in_batch_two(&mut checks, &o, &q);
    checks.eq(
        "batch-one-kept-with-way-back",
        &o,
        "batch 1's member's spec.version, and the members whose backup is kept as a way back",
        (
            Some(fixture::VERSION_FORMAT.to_string()),
            vec![SOURCE.to_string()],
        ),
        (
            versions.get(SOURCE).cloned().flatten(),
            q.way_back
                .iter()
                .map(|w| w.server.clone())
                .collect::<Vec<_>>(),
        ),
    );
    checks.eq(
        "member-restored-and-put-back",
        &format!("gameserver {}/{OTHER}", ctx.namespace),
        "spec.version, and the put-back record (batch, member, error)",
        (
            Some(fixture::VERSION_STABLE.to_string()),
            vec![(2, OTHER.to_string(), None)],
        ),
        (versions.get(OTHER).cloned().flatten(), put_back_records(&q)),
    );
    check_worlds_as_before(&mut checks, &o, &[OTHER], &q);
    check_third_untouched(&mut checks, ctx, &before, &after, &versions);
    let backed_up_first = |m: &str| backed_up_before_gated(&q, m);
    checks.eq(
        "backed-up-before-gated",
        &o,
        "each moved member: its pre-promotion backup seen succeeded before its first gate started",
        vec![(SOURCE, true), (OTHER, true)],
        vec![
            (SOURCE, backed_up_first(SOURCE)),
            (OTHER, backed_up_first(OTHER)),
        ],
    );
    ctx.assess(
        checks,
        json!({"outcome": q.outcome, "put_back": q.put_back, "backed_up": q.backed_up,
               "way_back": q.way_back, "fleet_pod_uids": after, "fleet_versions": versions}),
    )
}

/// `halted-at-gate`: halted at promotion batch 2's image gate on [`OTHER`], after 1 batch.
fn check_halted_in_batch_two(checks: &mut Checks, o: &str, q: &Qualification) {
    checks.check(
        "halted-at-gate",
        matches!(halted_at(q), Some((g, Some(s), _, 1)) if g == format!("promotion batch 2: {}", gates::IMAGE) && s == OTHER),
        o,
        "outcome",
        format!("halted at promotion batch 2 ({}) on {OTHER} after 1 batch", gates::IMAGE),
        &q.outcome,
    );
}

/// `later-members-untouched`: [`THIRD`] keeps its pod (UID `before` and `after` the run) and
/// its version.
fn check_third_untouched(
    checks: &mut Checks,
    ctx: &CaseContext<'_>,
    before: &BTreeMap<String, Option<String>>,
    after: &BTreeMap<String, Option<String>>,
    versions: &BTreeMap<String, Option<String>>,
) {
    checks.eq(
        "later-members-untouched",
        &format!("gameserver {}/{THIRD}", ctx.namespace),
        "pod UID and spec.version",
        (
            before.get(THIRD).cloned().flatten(),
            Some(fixture::VERSION_STABLE.to_string()),
        ),
        (
            after.get(THIRD).cloned().flatten(),
            versions.get(THIRD).cloned().flatten(),
        ),
    );
}

/// Whether `member`'s pre-promotion backup was seen succeeded before its first gate on the
/// candidate began.
fn backed_up_before_gated(q: &Qualification, member: &str) -> bool {
    let succeeded = q
        .backed_up
        .iter()
        .find(|w| w.server == member)
        .and_then(|w| w.succeeded_unix_ms);
    let first_gate = q
        .gates
        .iter()
        .filter(|g| g.server == member)
        .map(|g| g.started_unix_ms)
        .min();
    matches!((succeeded, first_gate), (Some(s), Some(g)) if s <= g)
}

/// Qualifies the format-changing candidate on `members` as one batch; returns the
/// qualification and each member's `spec.version` afterwards.
async fn one_batch_format_run(
    ctx: &CaseContext<'_>,
    members: &[&str],
) -> Result<(Qualification, BTreeMap<String, Option<String>>), CaseError> {
    let mut p = plan(
        ctx,
        members,
        fixture::VERSION_FORMAT,
        Rollback::RestoreRequired,
    );
    p.batch_size = members.len();
    let q = run(ctx, &p).await?;
    let versions = fleet_versions(ctx, members).await?;
    Ok((q, versions))
}

/// `halted-at-gate`: halted at promotion batch 1's `gate` on [`OTHER`], nothing promoted.
fn check_halted_in_batch_one(checks: &mut Checks, o: &str, q: &Qualification, gate: &str) {
    checks.check(
        "halted-at-gate",
        matches!(halted_at(q), Some((g, Some(s), _, 0)) if g == format!("promotion batch 1: {gate}") && s == OTHER),
        o,
        "outcome",
        format!("halted at promotion batch 1 ({gate}) on {OTHER}, nothing promoted"),
        &q.outcome,
    );
}

/// Check `id`: every member of batch 1 runs its own version again and is recorded as put back
/// without an error, in the batch's order.
fn check_batch_put_back(
    checks: &mut Checks,
    o: &str,
    id: &'static str,
    members: &[&str],
    versions: &BTreeMap<String, Option<String>>,
    q: &Qualification,
) {
    checks.eq(
        id,
        o,
        "each member's spec.version, and the put-back records (batch, member, error)",
        (
            members
                .iter()
                .map(|m| (m.to_string(), Some(fixture::VERSION_STABLE.to_string())))
                .collect::<BTreeMap<_, _>>(),
            members
                .iter()
                .map(|m| (1, m.to_string(), None))
                .collect::<Vec<_>>(),
        ),
        (versions.clone(), put_back_records(q)),
    );
}

/// Check `worlds-as-before`: every member put back from its pre-promotion backup holds exactly
/// the world it had before its batch moved (every world claim's digest, read while it was
/// stopped for its backup and again right after the restore) on the same PVCs.
fn check_worlds_as_before(checks: &mut Checks, o: &str, members: &[&str], q: &Qualification) {
    checks.eq(
        "worlds-as-before",
        o,
        "each put-back member: its world claims' digests and PVC UIDs after the put-back as before the batch",
        members
            .iter()
            .map(|m| (m.to_string(), Ok(())))
            .collect::<Vec<_>>(),
        q.put_back
            .iter()
            .map(|p| {
                (
                    p.server.clone(),
                    crate::evidence::judge::gates::world_put_back(p),
                )
            })
            .collect::<Vec<_>>(),
    );
}

/// A batch of three gated together: a compatible candidate, the whole fleet in one batch; the
/// three members' gates run at once (each member's image gate starts before any member's save
/// gate ends), every member passes image, join and save on its own server, and the batch is
/// promoted.
pub async fn batch_of_three_gated_together(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER, THIRD];
    fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_COMPAT],
            members: &members,
            ..Default::default()
        },
    )
    .await?;
    let mut p = plan(ctx, &members, fixture::VERSION_COMPAT, Rollback::Compatible);
    p.batch_size = 3;
    let q = run(ctx, &p).await?;
    let versions = fleet_versions(ctx, &members).await?;
    let mut checks = Checks::new();
    let o = qualification_object(ctx);
    checks.check(
        "promoted",
        matches!(q.outcome, Outcome::Promoted { batches: 1 }),
        &o,
        "outcome",
        "promoted in 1 batch",
        &q.outcome,
    );
    let member_gates = |m: &str| -> Vec<(&str, bool)> {
        q.gates
            .iter()
            .filter(|g| g.server == m)
            .map(|g| (g.name.as_str(), g.passed))
            .collect()
    };
    checks.eq(
        "every-member-gated",
        &o,
        "each member's gates (name, passed) and spec.version",
        members
            .iter()
            .map(|m| {
                (
                    m.to_string(),
                    vec![
                        (gates::IMAGE, true),
                        (gates::JOIN, true),
                        (gates::SAVE, true),
                    ],
                    Some(fixture::VERSION_COMPAT.to_string()),
                )
            })
            .collect::<Vec<_>>(),
        members
            .iter()
            .map(|m| {
                (
                    m.to_string(),
                    member_gates(m),
                    versions.get(*m).cloned().flatten(),
                )
            })
            .collect(),
    );
    // Gated together: the last image gate to start started before the first save gate to end
    // ended (one at a time, a member's image gate starts only after the previous member's save).
    let of = |name: &str| -> Vec<&qualify::Gate> {
        q.gates
            .iter()
            .filter(|g| g.name == name && members.contains(&g.server.as_str()))
            .collect()
    };
    let last_image_start = of(gates::IMAGE).iter().map(|g| g.started_unix_ms).max();
    let first_save_end = of(gates::SAVE)
        .iter()
        .map(|g| g.started_unix_ms + g.duration_ms)
        .min();
    checks.check(
        "gated-together",
        matches!((last_image_start, first_save_end), (Some(i), Some(e)) if i < e),
        &o,
        "the last member image gate's start and the first member save gate's end (Unix ms)",
        "the start before the end",
        (last_image_start, first_save_end),
    );
    ctx.assess(
        checks,
        json!({"outcome": q.outcome, "gates": q.gates, "fleet_versions": versions}),
    )
}

/// A format-changing candidate, the whole fleet of three in one batch: the canary passes; the
/// batch's second member cannot take a login under the candidate (an incompatibility of that
/// server alone), so its join gate fails. The batch stops its remaining gates and is put back
/// whole: every member suspended, restored from the backup taken of it before the batch moved,
/// re-pinned, and running its previous version again (which refuses a migrated world).
pub async fn batch_member_join_failure_put_back(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER, THIRD];
    fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_FORMAT],
            members: &members,
            refuse_login_under: &[(OTHER, FORMAT_GAME_VERSION)],
            ..Default::default()
        },
    )
    .await?;
    let (q, versions) = one_batch_format_run(ctx, &members).await?;
    let mut checks = Checks::new();
    let o = qualification_object(ctx);
    check_halted_in_batch_one(&mut checks, &o, &q, gates::JOIN);
    check_batch_put_back(&mut checks, &o, "batch-put-back", &members, &versions, &q);
    check_worlds_as_before(&mut checks, &o, &members, &q);
    ctx.assess(
        checks,
        json!({"outcome": q.outcome, "put_back": q.put_back, "fleet_versions": versions}),
    )
}
