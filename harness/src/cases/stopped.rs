//! Backups of stopped servers (CONTRACT B2): a suspended or idle-asleep server is backed up
//! and restored without a pod or an agent call, its run state unchanged; a server started
//! mid-copy invalidates the copy.

use gameplane_api::backup::Backup;
use gameplane_api::conditions::reasons;
use gameplane_api::names;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::{Value, json};

use super::checks::*;
use crate::context::{CaseContext, CaseError, Checks};
use crate::evidence::catalogue::Fault;
use crate::evidence::pvc_table::PvcPhase;
use crate::faults::{self};
use crate::fixture::backup::*;
use crate::fixture::observe::{self, AuditLog, backup_field, backup_phase};
use crate::fixture::{self, FixtureOptions};

/// Files of the world claims as `path sha256` lines, excluding the game's own logs.
async fn world_listing(ctx: &CaseContext<'_>, pod: &str) -> Result<String, CaseError> {
    let claims = vec![
        names::data_pvc(SERVER),
        names::extra_pvc(SERVER, fixture::EXTRA_WORLD),
    ];
    fixture::volume_script(
        ctx,
        pod,
        &claims,
        "cd /v && find . -type f ! -path '*/logs/*' | sort | while read f; do echo \"$f $(sha256sum < \"$f\" | cut -d' ' -f1)\"; done",
    )
    .await
}

async fn pod_now(ctx: &CaseContext<'_>) -> Result<Option<String>, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    Ok(pods
        .get_opt(&names::pod(SERVER))
        .await
        .map_err(CaseError::kube(
            "get Pod",
            object(ctx, "pod", &names::pod(SERVER)),
        ))?
        .and_then(|p| p.metadata.uid))
}

/// Restores each `(restore, backup, expected world listing, listing pod)` in turn, stopped, and
/// checks the world files equal the state its backup was taken in; a backup that did not
/// succeed is a failed check and is not restored. Returns the listings read after each restore.
async fn restore_in_turn(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    data: &str,
    backups: [(&str, &Backup, &String, &str); 2],
) -> Result<Vec<String>, CaseError> {
    let mut restored = Vec::new();
    for (name, b, expected, pod) in backups {
        let backup = b.metadata.name.as_deref().unwrap_or_default();
        if backup_phase(b) != "Succeeded" {
            // Nothing to restore from: the data cannot come back (the backup's own checks say
            // why it failed).
            checks.check(
                "restored-contents",
                false,
                &object(ctx, "pvc", data),
                &format!("world files after {name} (from {backup})"),
                "the backup's state",
                format!("not restored: backup {backup} ended {}", backup_phase(b)),
            );
            continue;
        }
        let listing = ctx
            .step(&format!("{name} from {backup} while stopped"), async {
                restore(ctx, name, backup).await?;
                world_listing(ctx, pod).await
            })
            .await?;
        checks.eq(
            "restored-contents",
            &object(ctx, "pvc", data),
            &format!("world files after {name} (from {backup})"),
            expected.clone(),
            listing.clone(),
        );
        restored.push(listing);
    }
    Ok(restored)
}

/// Two backups taken and restored while the server stays stopped (suspended or idle-asleep):
/// returns the checks so far and what was observed.
async fn stopped_round_trips(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
) -> Result<(Value, AuditLog), CaseError> {
    let pvcs_before = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::Before, &pvcs_before)?;
    let state_one = ctx
        .step("read world (state one)", world_listing(ctx, "list-1"))
        .await?;
    let (first, first_job) = backup_to_end(ctx, "backup one while stopped", "stopped-1").await?;
    if let Some(id) = first.status.as_ref().and_then(|s| s.snapshot_id.clone()) {
        ctx.recorder.restic_snapshot(
            "backup one while stopped",
            &id,
            backup_observation(&first),
        )?;
    }
    let data = names::data_pvc(SERVER);
    ctx.step("change world while stopped", async {
        fixture::volume_script(
            ctx,
            "plant-2",
            std::slice::from_ref(&data),
            &format!("echo second > /v/{data}/world/rehearsal-note.txt"),
        )
        .await
    })
    .await?;
    let state_two = ctx
        .step("read world (state two)", world_listing(ctx, "list-2"))
        .await?;
    let (second, _) = backup_to_end(ctx, "backup two while stopped", "stopped-2").await?;
    if let Some(id) = second.status.as_ref().and_then(|s| s.snapshot_id.clone()) {
        ctx.recorder.restic_snapshot(
            "backup two while stopped",
            &id,
            backup_observation(&second),
        )?;
    }
    // Read before any restore: a restore rolls the world claim, and the audit log on it, back.
    let audit = read_audit(ctx, "audit-after").await?;
    // Restore the older backup first: a restore that picks any snapshot but the Backup's own
    // (e.g. the newest) returns state two here.
    let restored = restore_in_turn(
        ctx,
        checks,
        &data,
        [
            ("restore-1", &first, &state_one, "list-r1"),
            ("restore-2", &second, &state_two, "list-r2"),
        ],
    )
    .await?;
    let pvcs_after = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::After, &pvcs_after)?;
    for b in [&first, &second] {
        check_succeeded(ctx, checks, b, "Stopped");
        checks.eq(
            "source-stopped",
            &object(
                ctx,
                "backup",
                b.metadata.name.as_deref().unwrap_or_default(),
            ),
            "status.source.state",
            Some("Stopped".to_string()),
            backup_field(b, "/status/source/state"),
        );
    }
    checks.check(
        "states-differ",
        state_one != state_two,
        &object(ctx, "pvc", &data),
        "world files between the backups",
        "different (a note was planted)",
        &state_two,
    );
    let comparison =
        observe::check_pvcs(ctx, checks, "pvc-uids-kept", &pvcs_before, &pvcs_after, &[]);
    Ok((
        json!({"backups": [backup_observation(&first), backup_observation(&second)], "first_copy_job": first_job,
               "state_one": state_one, "state_two": state_two, "restored": restored, "pvcs": comparison}),
        audit,
    ))
}

/// The audit log shows no game incarnation started after `before` (the last incarnation seen
/// while the server ran): nothing ran, so no agent or game could have been called.
fn check_nothing_started(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    audit: &AuditLog,
    before: &str,
    pod: &Option<String>,
) {
    let starts = audit.starts();
    checks.check(
        "server-stayed-stopped",
        starts.last().map(String::as_str) == Some(before) && pod.is_none(),
        &object(ctx, "gameserver", SERVER),
        "game incarnations started since the stop (audit log) and the pod now",
        format!("none after {before}; no pod"),
        (&starts, pod),
    );
}

/// Stopped-server backups: two backups and restores while the pod is absent; no agent call;
/// consistency Stopped; suspend unchanged; data returned.
pub async fn stopped_server_backups(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    ctx.step("stop server", stop_server(ctx)).await?;
    let audit_before = read_audit(ctx, "audit-stopped").await?;
    let last_running = audit_before.nth_newest(0, "the game before it stopped")?;
    let mut checks = Checks::new();
    let (observed, audit) = stopped_round_trips(ctx, &mut checks).await?;
    let gs = gameserver(ctx).await?;
    let pod = pod_now(ctx).await?;
    ctx.uses("Backup status (phase, source, consistency, Completed)");
    ctx.uses("spec.suspend");
    ctx.uses("world files and digests read from the volumes");
    ctx.uses("PVC UIDs");
    ctx.uses("RCON audit log");
    checks.eq(
        "suspend-unchanged",
        &object(ctx, "gameserver", SERVER),
        "spec.suspend",
        Some(true),
        gs.spec.suspend,
    );
    check_nothing_started(ctx, &mut checks, &audit, &last_running, &pod);
    ctx.assess(checks, observed)
}

/// Idle-asleep stopped-server backup: an idle-asleep server (no pod, idle intent kept) is
/// backed up like a suspended one: consistency Stopped, no agent call, idle intent unchanged,
/// data returned.
pub async fn idle_asleep_stopped_server_backup(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    ctx.step("put the server to sleep (idle)", async {
        faults::set_idle_asleep(&ctx.client, &ctx.namespace, SERVER).await?;
        fixture::await_server_phase(ctx, SERVER, "Stopped").await?;
        await_pod_gone(ctx).await?;
        Ok(json!({"server": SERVER, "phase": "Stopped", "pod": "absent"}))
    })
    .await?;
    let audit_before = read_audit(ctx, "audit-asleep").await?;
    let last_running = audit_before.nth_newest(0, "the game before it slept")?;
    let mut checks = Checks::new();
    let (observed, audit) = stopped_round_trips(ctx, &mut checks).await?;
    let gs = gameserver(ctx).await?;
    let pod = pod_now(ctx).await?;
    ctx.uses("Backup status (phase, source, consistency, Completed)");
    ctx.uses("status.idle and spec.suspend");
    ctx.uses("world files and digests read from the volumes");
    ctx.uses("PVC UIDs");
    ctx.uses("RCON audit log");
    let gso = object(ctx, "gameserver", SERVER);
    checks.eq(
        "idle-intent-unchanged",
        &gso,
        "status.idle.asleep, spec.idle.enabled, spec.suspend",
        (true, Some(true), None),
        (
            gs.idle_asleep(),
            gs.spec.idle.as_ref().and_then(|i| i.enabled),
            gs.spec.suspend.filter(|s| *s),
        ),
    );
    check_nothing_started(ctx, &mut checks, &audit, &last_running, &pod);
    ctx.assess(checks, observed)
}

/// Stopped-server backup, server started mid-copy: the copy is invalidated (Failed,
/// SourceStarted), not reported consistent, and its Job is drained.
pub async fn stopped_server_backup_started_mid_copy(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    ctx.step("stop server", stop_server(ctx)).await?;
    let schedule = Schedule {
        backup: "stopped",
        at: HoldAt::SnapshotSave,
        fault: Fault::ServerStarted,
    };
    let run = place(ctx, schedule).await?;
    let start = run.observed;
    let (backup, job) = backup_finished(ctx, "stopped").await?;
    ctx.uses("Backup status (phase, Completed reason, consistency)");
    ctx.uses("copy Job");
    let mut checks = Checks::new();
    let b = object(ctx, "backup", "stopped");
    checks.check(
        "started-mid-copy-invalidated",
        backup_phase(&backup) != "Succeeded"
            && backup_field(&backup, "/status/consistency").as_deref() != Some("Stopped"),
        &b,
        "status (phase, consistency)",
        "not Succeeded, not consistency Stopped (the source started during the copy)",
        (
            backup_phase(&backup),
            backup_field(&backup, "/status/consistency"),
        ),
    );
    check_failed_for(ctx, &mut checks, &backup, reasons::SOURCE_STARTED);
    check_drained(ctx, &mut checks, &job);
    ctx.assess(
        checks,
        json!({"start": start, "backup": backup_observation(&backup), "copy_job": job}),
    )
}
