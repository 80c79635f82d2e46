//! Candidates that cannot serve (CONTRACT C): an unpullable image, an HTTP-only server, one
//! that refuses every login or stalls in configuration — each halted at the gate and for the
//! reason it targets, the fleet untouched — and a restore of the source after such a halt.

use gameplane_api::names;
use serde_json::{Value, json};

use super::rollout::*;
use crate::context::{CaseContext, CaseError, Checks};
use crate::fixture::fleet::{FleetSpec, OTHER, SOURCE, fleet, plan, qualified, run};
use crate::fixture::observe;
use crate::fixture::{self};
use crate::qualify::{Outcome, Qualification, Rollback, gates};

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
    let (before, q) = qualified(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_HTTP_ONLY],
            ..Default::default()
        },
        Rollback::Compatible,
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
