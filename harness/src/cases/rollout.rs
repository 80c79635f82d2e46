//! The rollout bucket: candidates rehearsed through the qualification procedure (CONTRACT C)
//! on a canary clone restored from a real backup, with a fleet of pinned servers.
//!
//! A negative case passes only when the qualification halted at the gate it targets *for the
//! reason it targets* (the pod's waiting reason, the join depth reached), with the fleet
//! untouched and no promotion receipt; a positive case only when every gate passed, the
//! rollback gate was computed from what was read back, and the clone's PVCs kept their UIDs.

use std::collections::BTreeMap;

use gameplane_api::names;
use kube::api::Api;
use serde_json::{Value, json};

use crate::context::{CaseContext, CaseError, Checks};
use crate::fixture::fleet::{FleetSpec, OTHER, SOURCE, fleet, fleet_pod_uids, plan, run};
use crate::fixture::observe;
use crate::fixture::{self};
use crate::qualify::{self, Outcome, Plan, Qualification, Rollback, gates};

const THIRD: &str = "mc-c";
/// The fixture game's own version in the format-changing candidate's image (what
/// `FIXTURE_REFUSE_LOGIN_UNDER` names).
const FORMAT_GAME_VERSION: &str = "2.0";

async fn fleet_versions(
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
async fn run_with_override_before_move(
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

fn servers(ctx: &CaseContext<'_>) -> Api<gameplane_api::gameserver::GameServer> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

fn qualification_object(ctx: &CaseContext<'_>) -> String {
    format!("qualification in {}", ctx.namespace)
}

/// The gate a halt names, its server and reason, or `None` when it was not a halt.
fn halted_at(q: &Qualification) -> Option<(&str, Option<&str>, &str, usize)> {
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
fn put_back_records(q: &Qualification) -> Vec<(usize, String, Option<String>)> {
    q.put_back
        .iter()
        .map(|p| (p.batch, p.server.clone(), p.error.clone()))
        .collect()
}

/// The failed gate `name` on `server`, if the qualification recorded one.
fn failed_gate<'q>(q: &'q Qualification, name: &str, server: &str) -> Option<&'q qualify::Gate> {
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

/// Unpullable candidate: the clone fails ImagePull within a bounded time (the pod's waiting
/// reason and the GameServer's phase say so); the batch halts; fleet pod UIDs are unchanged.
pub async fn unpullable_candidate(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    let before = fleet(ctx, &FleetSpec::default()).await?;
    let q = run(
        ctx,
        &plan(
            ctx,
            &members,
            fixture::VERSION_UNPULLABLE,
            Rollback::Compatible,
        ),
    )
    .await?;
    ctx.uses("pod waiting reason");
    ctx.uses("GameServer phase and Ready reason");
    let mut checks = Checks::new();
    let observed =
        check_halted_untouched(ctx, &mut checks, &q, &members, &before, gates::IMAGE).await?;
    let g = failed_gate(&q, gates::IMAGE, &q.clone);
    let image = g.and_then(|g| g.evidence.image());
    let waiting = image.and_then(|e| e.waiting_reason.clone());
    checks.check(
        "pull-failure-observed",
        matches!(
            waiting.as_deref(),
            Some("ErrImagePull" | "ImagePullBackOff")
        ),
        &format!("pod {}/{}", ctx.namespace, names::pod(&q.clone)),
        "game container waiting reason",
        "ErrImagePull or ImagePullBackOff",
        &waiting,
    );
    let phase = image.map(|e| {
        (
            e.gameserver_phase.clone(),
            e.gameserver_ready_reason.clone(),
        )
    });
    checks.check(
        "gameserver-image-pull-failed",
        phase.as_ref().is_some_and(|(p, r)| {
            p.as_deref() == Some("Failed") && r.as_deref() == Some("ImagePullFailed")
        }),
        &format!("gameserver {}/{}", ctx.namespace, q.clone),
        "status.phase and Ready reason",
        "Failed, ImagePullFailed",
        &phase,
    );
    ctx.assess(checks, observed)
}

/// HTTP-only candidate: serves the world marker over HTTP but fails the real Minecraft
/// handshake; the journal keeps only the baseline receipt; promotion is blocked.
pub async fn http_only_candidate(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    let before = fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_HTTP_ONLY],
            ..Default::default()
        },
    )
    .await?;
    let q = run(
        ctx,
        &plan(
            ctx,
            &members,
            fixture::VERSION_HTTP_ONLY,
            Rollback::Compatible,
        ),
    )
    .await?;
    let mut checks = Checks::new();
    let observed =
        check_halted_untouched(ctx, &mut checks, &q, &members, &before, gates::JOIN).await?;
    let g = failed_gate(&q, gates::JOIN, &q.clone);
    let join = g.and_then(|g| g.evidence.join());
    // The join probe's own verdict (its type lives with the probe, not in the evidence crate).
    let reached = join.map(|j| j.detail["reached"].clone());
    checks.check(
        "join-failed-at-status",
        reached.as_ref().is_some_and(Value::is_null),
        &format!("pod {}/{}", ctx.namespace, names::pod(&q.clone)),
        "Minecraft join depth reached",
        "none (not even the status ping)",
        &reached,
    );
    // The port serves the world over HTTP: the restored source's world marker.
    let source_marker = fixture::Markers::for_server(&ctx.namespace, SOURCE).primary;
    let http = join.and_then(|j| j.http.clone());
    checks.check(
        "http-world-marker",
        http.as_ref()
            .is_some_and(|h| h.body.contains(&source_marker)),
        &format!("pod {}/{} game port", ctx.namespace, names::pod(&q.clone)),
        "HTTP response",
        format!("a body with the restored world marker {source_marker:?}"),
        &http,
    );
    ctx.assess(checks, observed)
}

/// Checks a promoted qualification: every gate passed, every batch promoted, the rollback gate
/// passed, and the clone's claims kept their UIDs (the candidate's mods claim is new, not
/// changed).
fn check_promoted(
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

/// Format-changing update, compatible rollback: PVC UIDs unchanged; the save is readable
/// directly after re-pinning.
pub async fn format_change_compatible_rollback(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_COMPAT],
            ..Default::default()
        },
    )
    .await?;
    let q = run(
        ctx,
        &plan(ctx, &members, fixture::VERSION_COMPAT, Rollback::Compatible),
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
    let members = [SOURCE, OTHER];
    fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_FORMAT],
            ..Default::default()
        },
    )
    .await?;
    let q = run(
        ctx,
        &plan(
            ctx,
            &members,
            fixture::VERSION_FORMAT,
            Rollback::RestoreRequired,
        ),
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
    fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_FORMAT],
            extra_on_template: true,
            ..Default::default()
        },
    )
    .await?;
    let q = run(
        ctx,
        &plan(
            ctx,
            &members,
            fixture::VERSION_FORMAT,
            Rollback::RestoreRequired,
        ),
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
    let before = fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_COMPAT],
            tracking_default: &[OTHER],
            ..Default::default()
        },
    )
    .await?;
    let q = run(
        ctx,
        &plan(ctx, &members, fixture::VERSION_COMPAT, Rollback::Compatible),
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

/// A candidate whose join must fail at `stage` having reached `reached`.
async fn join_depth_candidate(
    ctx: &CaseContext<'_>,
    version: &str,
    reached: &str,
    stage: &str,
) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    let before = fleet(
        ctx,
        &FleetSpec {
            candidates: &[version],
            ..Default::default()
        },
    )
    .await?;
    let q = run(ctx, &plan(ctx, &members, version, Rollback::Compatible)).await?;
    ctx.uses("Minecraft join (depth reached and stage failed)");
    let mut checks = Checks::new();
    let observed =
        check_halted_untouched(ctx, &mut checks, &q, &members, &before, gates::JOIN).await?;
    let g = failed_gate(&q, gates::JOIN, &q.clone);
    // The join probe's own verdict (its type lives with the probe, not in the evidence crate).
    let detail = g.and_then(|g| g.evidence.join()).map(|j| {
        (
            j.detail["reached"].clone(),
            j.detail["failed_stage"].clone(),
        )
    });
    checks.eq(
        "join-depth",
        &format!("pod {}/{}", ctx.namespace, names::pod(&q.clone)),
        "join depth reached and the stage it failed in",
        Some((json!(reached), json!(stage))),
        detail,
    );
    ctx.assess(checks, observed)
}

/// Candidate that answers status but refuses login: the join gate fails at login, not at
/// status; halted, no promotion receipt.
pub async fn candidate_refuses_login(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    join_depth_candidate(ctx, fixture::VERSION_REFUSE_LOGIN, "query", "login").await
}

/// Candidate that logs in but never finishes configuration: the join gate fails in the
/// configuration phase, not earlier; halted, no promotion receipt.
pub async fn candidate_stalls_configuration(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    join_depth_candidate(ctx, fixture::VERSION_STALL_CONFIG, "login", "configuration").await
}

/// The world claims of the source the restore-after-halt case plants values in.
fn source_world_claims() -> Vec<String> {
    vec![
        names::data_pvc(SOURCE),
        names::extra_pvc(SOURCE, fixture::EXTRA_WORLD),
    ]
}

/// Writes `value` into a sentinel file of each claim, and `extra_file` next to it when given.
fn plant_script(claims: &[String], value: &str, extra_file: Option<&str>) -> String {
    let mut s = String::new();
    for c in claims {
        s.push_str(&format!("echo {value} > /v/{c}/rehearsal-sentinel.txt && "));
        if let Some(f) = extra_file {
            s.push_str(&format!("echo {value} > /v/{c}/{f} && "));
        }
    }
    s.push_str("echo planted");
    s
}

/// Prints `<claim> <sentinel value or MISSING> <after-halt.txt present|absent>` per claim.
fn sentinel_read_script(claims: &[String]) -> String {
    claims
        .iter()
        .map(|c| {
            format!(
                "printf '%s %s %s\\n' {c} \"$(cat /v/{c}/rehearsal-sentinel.txt 2>/dev/null || echo MISSING)\" \"$(test -e /v/{c}/after-halt.txt && echo present || echo absent)\"; "
            )
        })
        .collect()
}

/// A halted qualification never blocks the fleet's own operations (CONTRACT C.7): an unpullable
/// candidate halts at the image gate and leaves its canary Failed; then a Restore of the source
/// from the qualification's own backup runs to Succeeded and returns what the source held when
/// it was backed up (a value planted before, a file made after the halt gone); the qualification
/// still reads as halted, with no promotion receipt.
pub async fn restore_after_halted_canary(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    let before = fleet(ctx, &FleetSpec::default()).await?;
    let claims = source_world_claims();
    let value = format!("rehearsal-before-qualify-{}", ctx.namespace);
    ctx.step(
        "plant values in the source before the qualification",
        async {
            fixture::volume_script(
                ctx,
                "plant-before",
                &claims,
                &plant_script(&claims, &value, None),
            )
            .await
        },
    )
    .await?;
    let plan = plan(
        ctx,
        &members,
        fixture::VERSION_UNPULLABLE,
        Rollback::Compatible,
    );
    let q = run(ctx, &plan).await?;
    let mut checks = Checks::new();
    let halted =
        check_halted_untouched(ctx, &mut checks, &q, &members, &before, gates::IMAGE).await?;
    ctx.step("change the source after the halt", async {
        fixture::volume_script(
            ctx,
            "plant-after",
            &claims,
            &plant_script(&claims, "rehearsal-after-halt", Some("after-halt.txt")),
        )
        .await
    })
    .await?;
    let pvcs_before = fixture::server_pvcs(ctx, SOURCE).await?;
    ctx.observe_pvcs(crate::evidence::pvc_table::PvcPhase::Before, &pvcs_before)?;
    let restore = ctx
        .step(
            "restore the source after the halt",
            crate::fixture::backup::restore_to_end(ctx, "after-halt", &plan.backup_name(), SOURCE),
        )
        .await?;
    let phase = restore.pointer("/status/phase").and_then(Value::as_str);
    let readback = if phase == Some("Succeeded") {
        fixture::await_server_phase(ctx, SOURCE, "Running").await?;
        ctx.step("read the source after the restore", async {
            fixture::volume_script(ctx, "look", &claims, &sentinel_read_script(&claims)).await
        })
        .await?
    } else {
        String::new()
    };
    let pvcs_after = fixture::server_pvcs(ctx, SOURCE).await?;
    ctx.observe_pvcs(crate::evidence::pvc_table::PvcPhase::After, &pvcs_after)?;
    ctx.uses("Restore status (phase, snapshotID)");
    ctx.uses("values read back from the volumes");
    check_restored_after_halt(ctx, &mut checks, &q, &restore, &claims, &value, &readback);
    let pvcs = observe::check_pvcs(
        ctx,
        &mut checks,
        "source-pvc-uids-kept",
        &pvcs_before,
        &pvcs_after,
        &[],
    );
    ctx.assess(
        checks,
        json!({"halt": halted, "restore": restore, "readback": readback, "pvcs": pvcs}),
    )
}

/// The restore after the halt: Succeeded, from the qualification's own snapshot, every planted
/// value back and the file made after the halt gone, and the halt still what the qualification
/// recorded (its failed gate ended before the Restore was created).
fn check_restored_after_halt(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    q: &Qualification,
    restore: &Value,
    claims: &[String],
    value: &str,
    readback: &str,
) {
    let o = format!("restore {}/after-halt", ctx.namespace);
    let phase = restore.pointer("/status/phase").and_then(Value::as_str);
    checks.check(
        "restore-after-halt-succeeded",
        phase == Some("Succeeded"),
        &o,
        "status.phase (and message)",
        "Succeeded",
        json!({"phase": phase, "message": restore.pointer("/status/message")}),
    );
    checks.eq(
        "restored-qualification-snapshot",
        &o,
        "status.snapshotID",
        q.snapshot.clone(),
        restore
            .pointer("/status/snapshotID")
            .and_then(Value::as_str)
            .map(str::to_string),
    );
    for claim in claims {
        let row = readback
            .lines()
            .find(|l| l.split_whitespace().next() == Some(claim.as_str()));
        let mut parts = row.unwrap_or_default().split_whitespace().skip(1);
        let (got, after) = (
            parts.next().unwrap_or("MISSING"),
            parts.next().unwrap_or("unknown"),
        );
        let pvc = format!("pvc {}/{claim}", ctx.namespace);
        checks.eq(
            "source-data-back",
            &pvc,
            "sentinel value after the restore",
            value.to_string(),
            got.to_string(),
        );
        checks.eq(
            "post-halt-file-gone",
            &pvc,
            "file created after the halt",
            "absent".to_string(),
            after.to_string(),
        );
    }
    let halt_end = q
        .gates
        .iter()
        .rfind(|g| !g.passed)
        .map(|g| g.started_unix_ms + g.duration_ms);
    let created = restore
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_millisecond() as u64);
    checks.check(
        "halt-recorded-before-restore",
        matches!(q.outcome, Outcome::Halted { .. })
            && q.promotion_receipts == 0
            && halt_end.zip(created).is_some_and(|(h, c)| h <= c + 1000),
        &qualification_object(ctx),
        "the halt (failed gate end) and the Restore's creation",
        "halted, no promotion receipt, the failed gate ended before the Restore was created",
        json!({"outcome": q.outcome, "promotion_receipts": q.promotion_receipts,
               "failed_gate_end_unix_ms": halt_end, "restore_created_unix_ms": created}),
    );
}
