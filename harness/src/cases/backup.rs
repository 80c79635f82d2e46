//! The backup bucket: live backups bound to the game's incarnation (CONTRACT B1), backups of
//! stopped servers (B2), and what a backup covers and a restore returns (B3).
//!
//! Every verdict rests on what the operator, the game and the cluster produced: the Backup's
//! phase *with* its Completed reason, consistency and Unquiesced condition; whether the copy Job
//! was drained; the game's own RCON audit log (required to exist and to cover the incarnation in
//! question); the files inside the restic snapshot; values read back from the volumes; PVC UIDs
//! compared claim by claim. Each check has a stable id (see `docs/contract.md`), which the
//! self-test matches against the check a mutant must trip.

use gameplane_api::backup::Backup;
use gameplane_api::conditions::{reasons, types};
use gameplane_api::names;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::{Value, json};

use crate::context::{CaseContext, CaseError, Checks};
use crate::evidence::catalogue::Fault;
use crate::evidence::pvc_table::PvcPhase;
use crate::faults::{self, ReplaceObservation, RestartObservation};
use crate::fixture::backup::*;
use crate::fixture::observe::{self, AuditLog, backup_condition, backup_field, backup_phase};
use crate::fixture::{self, AgentKind, FixtureOptions};
use crate::wait::{await_object, conditions};

/// Checks `backup-failed` (phase Failed) and `completed-reason` (Completed False/`reason`).
pub(super) fn check_failed_for(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    b: &Backup,
    reason: &str,
) {
    let o = object(
        ctx,
        "backup",
        b.metadata.name.as_deref().unwrap_or_default(),
    );
    checks.eq(
        "backup-failed",
        &o,
        "status.phase",
        "Failed".to_string(),
        backup_phase(b),
    );
    checks.eq(
        "completed-reason",
        &o,
        "condition Completed (status/reason)",
        Some(format!("False/{reason}")),
        backup_condition(b, types::COMPLETED),
    );
}

/// Checks `copy-job-drained`: the copy Job of an invalidated or failed capture is gone.
pub(super) fn check_drained(ctx: &CaseContext<'_>, checks: &mut Checks, job: &observe::JobState) {
    checks.check(
        "copy-job-drained",
        job.drained(),
        &object(ctx, "job", &job.name),
        "existence when the Backup ended",
        "gone (copy workers drained)",
        job,
    );
}

/// Checks `backup-succeeded` (phase) and `consistency` (status.consistency = `consistency`)
/// and that the Completed condition agrees.
pub(super) fn check_succeeded(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    b: &Backup,
    consistency: &str,
) {
    let o = object(
        ctx,
        "backup",
        b.metadata.name.as_deref().unwrap_or_default(),
    );
    checks.eq(
        "backup-succeeded",
        &o,
        "status.phase",
        "Succeeded".to_string(),
        backup_phase(b),
    );
    checks.eq(
        "consistency",
        &o,
        "status.consistency",
        Some(consistency.to_string()),
        backup_field(b, "/status/consistency"),
    );
    checks.check(
        "completed-condition",
        backup_condition(b, types::COMPLETED).is_some_and(|c| c.starts_with("True/")),
        &o,
        "condition Completed",
        "True",
        backup_condition(b, types::COMPLETED),
    );
}

/// The schedule of a live case: Backup `live`, `fault` placed where `at` holds it.
fn live(at: HoldAt, fault: Fault) -> Schedule {
    Schedule {
        backup: "live",
        at,
        fault,
    }
}

/// Live backup, same-pod game restart: pod UID same, game containerID changed and
/// restartCount +1; the Backup is not a consistent success (Failed, SourceChanged), its copy
/// Job is drained, and no save-on reached the new incarnation (the exit of the original is
/// reported as such).
pub async fn live_backup_same_pod_game_restart(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let run = place(ctx, live(HoldAt::SnapshotSave, Fault::GameRestart)).await?;
    let restart = run.observed::<RestartObservation>()?;
    let (backup, job) = backup_finished(ctx, "live").await?;
    let audit = read_audit(ctx, "audit-read").await?;
    let original = audit.nth_newest(1, "the original and the restarted game")?;
    let new = audit.nth_newest(0, "the restarted game")?;
    ctx.uses("pod UID");
    ctx.uses("game containerID and restartCount");
    ctx.uses("Backup status (phase, Completed reason, consistency, Unquiesced)");
    ctx.uses("copy Job");
    ctx.uses("RCON audit log");
    let mut checks = Checks::new();
    let o = object(ctx, "pod", &names::pod(SERVER));
    checks.eq(
        "fault-in-place",
        &o,
        "game container (same pod UID, new containerID, restartCount +1)",
        true,
        restart.is_in_place(),
    );
    let b = object(ctx, "backup", "live");
    let consistent_success = backup_phase(&backup) == "Succeeded"
        && backup_field(&backup, "/status/consistency").as_deref() == Some("Quiesced");
    checks.check(
        "not-consistent-success",
        !consistent_success,
        &b,
        "status (phase, consistency)",
        "not Succeeded with consistency Quiesced",
        (
            backup_phase(&backup),
            backup_field(&backup, "/status/consistency"),
        ),
    );
    check_failed_for(ctx, &mut checks, &backup, reasons::SOURCE_CHANGED);
    check_drained(ctx, &mut checks, &job);
    checks.eq(
        "unquiesced-reason",
        &b,
        "condition Unquiesced (status/reason)",
        Some(format!("True/{}", reasons::ORIGINAL_PROCESS_EXITED)),
        backup_condition(&backup, types::UNQUIESCED),
    );
    let new_cmds = audit.commands_of(&new);
    checks.check(
        "no-save-on-to-new-incarnation",
        original != new && !new_cmds.iter().any(|c| c == "save-on"),
        &o,
        &format!("RCON commands received by the new game incarnation {new}"),
        "no save-on",
        &new_cmds,
    );
    ctx.assess(
        checks,
        json!({"restart": restart, "backup": backup_observation(&backup), "copy_job": job,
               "original_incarnation": original, "original_commands": audit.commands_of(&original),
               "new_incarnation": new, "new_incarnation_commands": new_cmds}),
    )
}

/// Live backup, agent restart: the agent restarts while the copy runs; the game incarnation is
/// unchanged; the Backup Succeeds with consistency Quiesced and save-on reaches the original game
/// through the restarted agent.
pub async fn live_backup_agent_restart(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    ctx.uses("agent containerID and restartCount");
    agent_fault_kept_the_game(ctx, Fault::AgentRestart, |checks, restart, backup| {
        let in_place = serde_json::from_value::<RestartObservation>(restart.clone())
            .is_ok_and(|r| r.is_in_place());
        checks.eq(
            "fault-in-place",
            &object(ctx, "pod", &names::pod(SERVER)),
            "agent container (same pod UID, new containerID, restartCount +1)",
            true,
            in_place,
        );
        check_succeeded(ctx, checks, backup, "Quiesced");
    })
    .await
}

/// Live backup, agent down: while the copy is held at its snapshot save the agent is held down
/// until it sits in `CrashLoopBackOff` (the `agent-down` fault), then let up as the copy goes
/// on; the game never changes. The Backup still Succeeds with consistency Quiesced, and save-on
/// reaches the original game once the agent is back, after the copy ended.
pub async fn live_backup_agent_down(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    ctx.uses("agent container state (CrashLoopBackOff)");
    agent_fault_kept_the_game(ctx, Fault::AgentDown, |checks, down, backup| {
        let b = object(ctx, "backup", "live");
        checks.check(
            "agent-was-down",
            down["agent"]["waiting"]["reason"] == "CrashLoopBackOff",
            &object(ctx, "pod", &names::pod(SERVER)),
            "agent container state, held down while the copy was held",
            "waiting CrashLoopBackOff",
            &down["agent"],
        );
        checks.eq(
            "backup-succeeded",
            &b,
            "status.phase",
            "Succeeded".to_string(),
            backup_phase(backup),
        );
        checks.eq(
            "consistency",
            &b,
            "status.consistency",
            Some("Quiesced".to_string()),
            backup_field(backup, "/status/consistency"),
        );
    })
    .await
}

/// A fault of the agent alone (`fault`, placed while the copy is held) is transparent to the
/// game: its incarnation unchanged, save-on reaching the original after the copy ended; what
/// the fault itself must show and how the Backup ends are the case's (`checks_of`).
async fn agent_fault_kept_the_game(
    ctx: &CaseContext<'_>,
    fault: Fault,
    checks_of: impl FnOnce(&mut Checks, &Value, &Backup),
) -> Result<(), CaseError> {
    let (_fx, before) = running_server(ctx, FixtureOptions::default()).await?;
    let observed = place(ctx, live(HoldAt::SnapshotSave, fault))
        .await?
        .observed;
    let (backup, job) = backup_finished(ctx, "live").await?;
    let after = ctx
        .step(
            "observe game incarnation",
            fixture::game_incarnation(ctx, SERVER),
        )
        .await?;
    let audit = read_audit(ctx, "audit-read").await?;
    let original = audit.nth_newest(0, "the game that was backed up")?;
    ctx.uses("game containerID and restartCount");
    ctx.uses("Backup status (phase, consistency, Completed)");
    ctx.uses("RCON audit log");
    let mut checks = Checks::new();
    checks_of(&mut checks, &observed, &backup);
    let o = object(ctx, "pod", &names::pod(SERVER));
    checks.eq(
        "game-incarnation-unchanged",
        &o,
        "game incarnation",
        &before,
        &after,
    );
    let cmds = audit.commands_of(&original);
    checks.check(
        "save-on-reached-original",
        audit.starts().len() == 1 && observe::save_on_after_each_save_off(&cmds),
        &o,
        &format!("RCON commands received by the original game incarnation {original}"),
        "save-off, then save-on after it (and no other incarnation)",
        (&audit.starts(), &cmds),
    );
    let copy_end =
        check_save_on_after_copy_end(ctx, &mut checks, &audit, &original, &backup, 0).await?;
    ctx.assess(
        checks,
        json!({"fault": observed, "game": after, "backup": backup_observation(&backup),
               "copy_job": job, "original_commands": cmds, "copy_end": copy_end}),
    )
}

/// Live backup, pod replaced during preparation: the Backup fails (SourceChanged); the exit of
/// the original is reported (Unquiesced, OriginalProcessExited); cleanup never reaches the
/// successor pod.
pub async fn live_backup_pod_replaced_during_preparation(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    // Replace the pod once the original game has been quiesced, before its copy starts: the
    // operator's creation of the copy Job (which follows the quiesce) is held until the pod is
    // replaced. From then on cleanup (save-on) is owed to the original process, and must never
    // reach its successor.
    let run = place(
        ctx,
        live(HoldAt::OperatorCreate("jobs"), Fault::PodReplaced),
    )
    .await?;
    let replaced = run.observed::<ReplaceObservation>()?;
    let (backup, job) = backup_finished(ctx, "live").await?;
    // The successor must be running before its audit log can speak for it.
    let successor_inc = ctx
        .step("await successor ready", async {
            fixture::await_server_pod_ready(ctx, SERVER).await?;
            fixture::game_incarnation(ctx, SERVER).await
        })
        .await?;
    let audit = read_audit(ctx, "audit-read").await?;
    let original = audit.nth_newest(1, "the original and the successor")?;
    let successor = audit.nth_newest(0, "the successor")?;
    ctx.uses("pod UID");
    ctx.uses("Backup status (phase, Completed reason, Unquiesced reason)");
    ctx.uses("RCON audit log");
    let mut checks = Checks::new();
    let b = object(ctx, "backup", "live");
    checks.check(
        "fault-replaced-pod",
        replaced.old_uid != replaced.new_uid && successor_inc.pod_uid == replaced.new_uid,
        &object(ctx, "pod", &names::pod(SERVER)),
        "metadata.uid",
        "a new pod UID",
        &replaced,
    );
    check_failed_for(ctx, &mut checks, &backup, reasons::SOURCE_CHANGED);
    check_drained(ctx, &mut checks, &job);
    checks.eq(
        "unquiesced-reason",
        &b,
        "condition Unquiesced (status/reason)",
        Some(format!("True/{}", reasons::ORIGINAL_PROCESS_EXITED)),
        backup_condition(&backup, types::UNQUIESCED),
    );
    let original_cmds = audit.commands_of(&original);
    checks.check(
        "original-was-quiesced",
        observe::save_offs(&original_cmds) >= 1,
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("RCON commands received by the original incarnation {original}"),
        "save-off (the fault came after quiesce)",
        &original_cmds,
    );
    let cmds = audit.commands_of(&successor);
    checks.check(
        "no-cleanup-on-successor",
        !cmds
            .iter()
            .any(|c| c == "save-on" || c == "save-off" || c.starts_with("save-all")),
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!(
            "RCON commands received by the successor (pod UID {}, incarnation {successor})",
            replaced.new_uid
        ),
        "no backup cleanup (save-on) or quiesce command",
        &cmds,
    );
    ctx.assess(
        checks,
        json!({"replaced": replaced, "backup": backup_observation(&backup), "copy_job": job,
               "original_commands": original_cmds, "successor_commands": cmds}),
    )
}

/// Live backup, the copy Job's creation refused by a conflict: the operator's create is
/// answered `409 Conflict` (as if another writer had just got there; nothing was created), so
/// it must not take the Job for existing: it creates it again, and the Backup Succeeds with
/// consistency Quiesced. Held and refused by the cluster, so the refusal lands on that write
/// every time.
pub async fn live_backup_job_create_conflicted(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let run = place(
        ctx,
        live(HoldAt::OperatorCreate("jobs"), Fault::WriteConflict),
    )
    .await?;
    let held = run.held;
    let (backup, job) = backup_finished(ctx, "live").await?;
    ctx.uses("Backup status (phase, consistency, Completed)");
    ctx.uses("copy Job");
    let mut checks = Checks::new();
    checks.check(
        "create-refused",
        held["held"].is_string(),
        &object(ctx, "job", &job.name),
        "the operator's create of the copy Job, held by the API server",
        "held, then answered 409 Conflict",
        &held,
    );
    check_succeeded(ctx, &mut checks, &backup, "Quiesced");
    checks.check(
        "copy-job-ran",
        job.succeeded >= 1,
        &object(ctx, "job", &job.name),
        "status.succeeded",
        ">= 1 (the Job was created again and copied)",
        job.succeeded,
    );
    ctx.assess(
        checks,
        json!({"held": held, "backup": backup_observation(&backup), "copy_job": job}),
    )
}

/// Live backup, game not running yet: preparation waits within its deadline, then records the
/// running incarnation and succeeds.
pub async fn live_backup_game_not_running_yet(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let fx = ctx
        .step(
            "install fixture",
            fixture::install(ctx, &FixtureOptions::default()),
        )
        .await?;
    ctx.step("create server and backup together", async {
        fixture::create_server(ctx, &fx, SERVER, fixture::VERSION_STABLE, false).await?;
        fixture::create_backup(ctx, "early", SERVER, true).await?;
        Ok(json!({"server": SERVER, "backup": "early"}))
    })
    .await?;
    let (backup, job) = backup_finished(ctx, "early").await?;
    let inc = ctx
        .step("observe game incarnation", async {
            // The game may still be starting when a (wrongly) impatient Backup has ended.
            fixture::await_server_pod_ready(ctx, SERVER).await?;
            fixture::game_incarnation(ctx, SERVER).await
        })
        .await?;
    let started_at = ctx
        .step("read game container start", async {
            let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let pod = pods
                .get(&names::pod(SERVER))
                .await
                .map_err(CaseError::kube(
                    "get Pod",
                    object(ctx, "pod", &names::pod(SERVER)),
                ))?;
            Ok(pod
                .status
                .and_then(|s| s.container_statuses)
                .and_then(|cs| cs.into_iter().find(|c| c.name == names::containers::GAME))
                .and_then(|c| c.state?.running?.started_at)
                .map(|t| t.0))
        })
        .await?;
    ctx.uses("Backup status.source");
    ctx.uses("game containerID and restartCount");
    ctx.uses("game container start time");
    let mut checks = Checks::new();
    let b = object(ctx, "backup", "early");
    let created = backup.metadata.creation_timestamp.as_ref().map(|t| t.0);
    checks.check(
        "backup-before-game",
        matches!((created, started_at), (Some(c), Some(s)) if c <= s),
        &b,
        "metadata.creationTimestamp vs the game container's startedAt",
        "the Backup existed before the game ran (preparation had to wait)",
        (
            created.map(|t| t.to_string()),
            started_at.map(|t| t.to_string()),
        ),
    );
    check_succeeded(ctx, &mut checks, &backup, "Quiesced");
    checks.eq(
        "source-live",
        &b,
        "status.source.state",
        Some("Live".to_string()),
        backup_field(&backup, "/status/source/state"),
    );
    checks.eq(
        "source-recorded",
        &b,
        "status.source (podUID, gameContainerID)",
        (Some(inc.pod_uid.clone()), Some(inc.container_id.clone())),
        (
            backup_field(&backup, "/status/source/podUID"),
            backup_field(&backup, "/status/source/gameContainerID"),
        ),
    );
    ctx.assess(
        checks,
        json!({"backup": backup_observation(&backup), "copy_job": job, "game": inc}),
    )
}

/// Live backup, older agent without the identity route: fails at the preflight
/// (IdentityPreflightFailed); the game's RCON audit log, which covers the running game, shows no
/// save-off.
pub async fn live_backup_older_agent_without_identity_route(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    let options = FixtureOptions {
        agent: AgentKind::Legacy,
        ..Default::default()
    };
    running_server(ctx, options).await?;
    let (backup, job) = backup_to_end(ctx, "create backup", "live").await?;
    let audit = read_audit(ctx, "audit-read").await?;
    let running = audit.nth_newest(0, "the running game")?;
    ctx.uses("Backup status (phase, Completed reason)");
    ctx.uses("RCON audit log");
    let mut checks = Checks::new();
    check_failed_for(
        ctx,
        &mut checks,
        &backup,
        reasons::IDENTITY_PREFLIGHT_FAILED,
    );
    check_drained(ctx, &mut checks, &job);
    let cmds = audit.all_commands();
    checks.check(
        "no-save-off",
        audit.starts().len() == 1 && !cmds.iter().any(|c| c == "save-off"),
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("RCON commands received by the game (incarnation {running}, the only one)"),
        "no save-off",
        &cmds,
    );
    ctx.assess(
        checks,
        json!({"backup": backup_observation(&backup), "copy_job": job, "commands": cmds}),
    )
}

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

async fn gameserver(
    ctx: &CaseContext<'_>,
) -> Result<gameplane_api::gameserver::GameServer, CaseError> {
    let api: Api<gameplane_api::gameserver::GameServer> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    api.get(SERVER).await.map_err(CaseError::kube(
        "get GameServer",
        object(ctx, "gameserver", SERVER),
    ))
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

/// Restores Backup `backup` into the server with Restore `restore` and waits for Succeeded.
async fn restore(ctx: &CaseContext<'_>, restore: &str, backup: &str) -> Result<String, CaseError> {
    fixture::create_restore(ctx, restore, backup, SERVER).await?;
    let api: Api<gameplane_api::restore::Restore> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let r = await_object(&api, restore, conditions::succeeded(), ctx.bounds.settle).await?;
    let snapshot = r
        .status
        .as_ref()
        .and_then(|s| s.snapshot_id.clone())
        .unwrap_or_default();
    ctx.recorder
        .restic_restore(restore, restore, &snapshot, json!({"backup": backup}))?;
    Ok(snapshot)
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

/// Sentinel files the round trip plants in each claim before the backup: distinct names per
/// claim (so a snapshot listing shows which claims it covers) and values distinct from
/// anything the game writes.
struct Sentinels {
    primary: String,
    extra: String,
    mods: String,
    value: String,
}

impl Sentinels {
    fn new(ctx: &CaseContext<'_>) -> Self {
        Self {
            primary: names::data_pvc(SERVER),
            extra: names::extra_pvc(SERVER, fixture::EXTRA_WORLD),
            mods: names::mods_pvc(SERVER, fixture::VERSION_STABLE),
            value: format!("rehearsal-before-backup-{}", ctx.namespace),
        }
    }

    fn file(claim: &str) -> String {
        format!("rehearsal-sentinel-{claim}.txt")
    }

    fn claims(&self) -> Vec<String> {
        vec![self.primary.clone(), self.extra.clone(), self.mods.clone()]
    }

    /// Writes `value` into each claim's sentinel and `extra_file` next to it when given.
    fn script(&self, value: &str, extra_file: Option<&str>) -> String {
        let mut s = String::new();
        for c in self.claims() {
            s.push_str(&format!("echo {value} > /v/{c}/{} && ", Self::file(&c)));
            if let Some(f) = extra_file {
                s.push_str(&format!("echo {value} > /v/{c}/{f} && "));
            }
        }
        s.push_str("echo planted");
        s
    }

    /// Prints `<claim> <sentinel value or MISSING> <after-file present|absent>` per claim.
    fn read_script(&self) -> String {
        let mut s = String::new();
        for c in self.claims() {
            s.push_str(&format!(
                "printf '%s %s %s\\n' {c} \"$(cat /v/{c}/{} 2>/dev/null || echo MISSING)\" \"$(test -e /v/{c}/after-backup.txt && echo present || echo absent)\"; ",
                Self::file(&c)
            ));
        }
        s
    }
}

/// The live backup's snapshot id (recorded as a restic snapshot receipt) and its files as
/// `restic ls` lists them; both empty when the backup produced no snapshot.
async fn live_snapshot(
    ctx: &CaseContext<'_>,
    backup: &Backup,
) -> Result<(String, Vec<String>), CaseError> {
    let snapshot = backup_field(backup, "/status/snapshotID").unwrap_or_default();
    if !snapshot.is_empty() {
        ctx.recorder
            .restic_snapshot("live backup", &snapshot, backup_observation(backup))?;
    }
    let files = if snapshot.is_empty() {
        Vec::new()
    } else {
        ctx.step(
            "list the snapshot's files",
            observe::snapshot_files(ctx, "snapshot-ls", &snapshot),
        )
        .await?
    };
    Ok((snapshot, files))
}

/// A backup into a repository whose password is wrong, awaited to its end, with its copy Job.
async fn backup_into_unusable_repo(
    ctx: &CaseContext<'_>,
) -> Result<(Backup, observe::JobState), CaseError> {
    ctx.step("backup into an unusable repository", async {
        fixture::install_bad_repo_secret(ctx).await?;
        fixture::create_backup_into(ctx, "unusable-repo", SERVER, fixture::BAD_REPO_SECRET).await?;
        let (b, job) = await_backup(ctx, "unusable-repo").await?;
        Ok((backup_observation(&b), b, job))
    })
    .await
    .map(|(_, b, job)| (b, job))
}

/// The live backup's snapshot: it has an id, and `files` (its `restic ls`) hold the primary and
/// extra world claims' sentinel files but not the mods claim's.
fn check_snapshot(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    snapshot: &str,
    files: &[String],
    sentinels: &Sentinels,
) {
    let b = object(ctx, "backup", "live");
    checks.check(
        "snapshot-id",
        !snapshot.is_empty(),
        &b,
        "status.snapshotID",
        "a restic snapshot id",
        snapshot,
    );
    let holds = |claim: &str| {
        files
            .iter()
            .any(|f| f.ends_with(&format!("/{}", Sentinels::file(claim))))
    };
    checks.eq(
        "snapshot-covers-claims",
        &format!("restic snapshot {snapshot}"),
        "sentinel files of the primary and extra world claims",
        (true, true),
        (holds(&sentinels.primary), holds(&sentinels.extra)),
    );
    checks.eq(
        "snapshot-excludes-mods",
        &format!("restic snapshot {snapshot}"),
        "sentinel file of the mods claim (rebuildable, not backed up)",
        false,
        holds(&sentinels.mods),
    );
}

/// The backup into an unusable repository failed without a snapshot, for the copy-failed reason.
fn check_unusable_repo(ctx: &CaseContext<'_>, checks: &mut Checks, bad: &Backup) {
    let o = object(ctx, "backup", "unusable-repo");
    checks.check(
        "unusable-repo-fails",
        backup_phase(bad) == "Failed"
            && backup_field(bad, "/status/snapshotID").is_none_or(|s| s.is_empty()),
        &o,
        "status (phase, snapshotID)",
        "Failed without a snapshot id",
        (backup_phase(bad), backup_field(bad, "/status/snapshotID")),
    );
    checks.eq(
        "unusable-repo-reason",
        &o,
        "condition Completed (status/reason)",
        Some(format!("False/{}", reasons::COPY_FAILED)),
        backup_condition(bad, types::COMPLETED),
    );
}

/// The game ran one incarnation through both backups: the live one's save-on, then the failed
/// one's, must both have reached it. Returns that incarnation's RCON commands (the evidence).
fn check_save_on_reached(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    audit: &AuditLog,
) -> Result<Vec<String>, CaseError> {
    let starts = audit.starts();
    let game = audit.nth_newest(0, "the game that was backed up")?;
    let cmds = audit.commands_of(&game);
    let pairs: Vec<&[String]> = cmds.split(|c| c == "save-off").skip(1).collect();
    checks.check(
        "save-on-reached-original",
        !starts.is_empty() && !pairs.is_empty() && pairs[0].iter().any(|c| c == "save-on"),
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("RCON commands of incarnation {game} after the live backup's save-off"),
        "save-on",
        &cmds,
    );
    checks.check(
        "save-on-after-failed-backup",
        pairs.len() >= 2 && pairs[1].iter().any(|c| c == "save-on"),
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("RCON commands of incarnation {game} after the failed backup's save-off"),
        "save-on (cleanup after a failed quiesced backup)",
        &cmds,
    );
    Ok(cmds)
}

/// In the primary and extra world claims the restore brought back the sentinel value from
/// before the backup and removed the file made after it (`readback`: one `<claim> <value>
/// present|absent` line per claim).
fn check_sentinels_restored(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    sentinels: &Sentinels,
    readback: &str,
) {
    let row = |claim: &str| -> (String, String) {
        readback
            .lines()
            .find_map(|l| {
                let mut parts = l.split_whitespace();
                (parts.next() == Some(claim)).then(|| {
                    (
                        parts.next().unwrap_or("MISSING").to_string(),
                        parts.next().unwrap_or("unknown").to_string(),
                    )
                })
            })
            .unwrap_or_else(|| ("MISSING".into(), "unknown".into()))
    };
    for (claim, id_value, id_gone) in [
        (
            &sentinels.primary,
            "pre-backup-value-back",
            "post-backup-file-gone",
        ),
        (
            &sentinels.extra,
            "extra-value-back",
            "extra-post-backup-file-gone",
        ),
    ] {
        let (value, after_file) = row(claim);
        let o = object(ctx, "pvc", claim);
        checks.eq(
            id_value,
            &o,
            "sentinel value after the restore",
            sentinels.value.clone(),
            value,
        );
        checks.eq(
            id_gone,
            &o,
            "file created after the backup",
            "absent".to_string(),
            after_file,
        );
    }
}

/// A plain live backup and restore round trip: the backup succeeds quiesced and its snapshot
/// holds the primary world and every extra claim but not the mods; save-on returns to the game
/// after it and after a failed copy into an unusable repository; a restore brings back the
/// values from before the backup and removes files made after it, in every world claim; every
/// PVC keeps its UID.
pub async fn live_backup_restore_round_trip(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let sentinels = Sentinels::new(ctx);
    let pvcs_before = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::Before, &pvcs_before)?;
    ctx.step("plant sentinels before the backup", async {
        fixture::volume_script(
            ctx,
            "plant-before",
            &sentinels.claims(),
            &sentinels.script(&sentinels.value, None),
        )
        .await
    })
    .await?;
    let (backup, _) = backup_to_end(ctx, "live backup", "live").await?;
    let (snapshot, files) = live_snapshot(ctx, &backup).await?;
    // A copy that cannot be written (the repository's password is wrong) must fail, never
    // report success without a snapshot; the game still gets its save-on.
    let (bad, bad_job) = backup_into_unusable_repo(ctx).await?;
    // Read before the restore: it rolls the world claim, and the audit log on it, back.
    let audit = read_audit(ctx, "audit-read").await?;
    ctx.step(
        "overwrite sentinels and plant files after the backup",
        async {
            fixture::volume_script(
                ctx,
                "plant-after",
                &sentinels.claims(),
                &sentinels.script("rehearsal-after-backup", Some("after-backup.txt")),
            )
            .await
        },
    )
    .await?;
    if backup_phase(&backup) != "Succeeded" {
        // No snapshot to restore: judge what there is (the backup's checks fail and say why).
        let mut checks = Checks::new();
        check_succeeded(ctx, &mut checks, &backup, "Quiesced");
        return ctx.assess(checks, json!({"backup": backup_observation(&backup)}));
    }
    let restored_id = ctx
        .step("restore", async {
            let id = restore(ctx, "back", "live").await?;
            fixture::await_server_phase(ctx, SERVER, "Running").await?;
            Ok(id)
        })
        .await?;
    let readback = ctx
        .step("read sentinels after the restore", async {
            fixture::volume_script(ctx, "look", &sentinels.claims(), &sentinels.read_script()).await
        })
        .await?;
    let pvcs_after = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::After, &pvcs_after)?;

    ctx.uses("Backup status (phase, consistency, snapshotID, Completed reason)");
    if !files.is_empty() {
        ctx.uses("restic snapshot contents (restic ls)");
    }
    ctx.uses("values read back from the volumes");
    ctx.uses("RCON audit log");
    ctx.uses("PVC UIDs");
    let mut checks = Checks::new();
    check_succeeded(ctx, &mut checks, &backup, "Quiesced");
    check_snapshot(ctx, &mut checks, &snapshot, &files, &sentinels);
    check_unusable_repo(ctx, &mut checks, &bad);
    let cmds = check_save_on_reached(ctx, &mut checks, &audit)?;
    let game = audit.nth_newest(0, "the game that was backed up")?;
    let copy_end =
        check_save_on_after_copy_end(ctx, &mut checks, &audit, &game, &backup, 0).await?;
    checks.check(
        "failed-copy-drained",
        bad_job.drained(),
        &object(ctx, "job", &bad_job.name),
        "existence when the Backup ended",
        "gone",
        &bad_job,
    );
    check_sentinels_restored(ctx, &mut checks, &sentinels, &readback);
    checks.eq(
        "restored-own-snapshot",
        &object(ctx, "restore", "back"),
        "status.snapshotID",
        snapshot.clone(),
        restored_id.clone(),
    );
    let comparison = observe::check_pvcs(
        ctx,
        &mut checks,
        "pvc-uids-kept",
        &pvcs_before,
        &pvcs_after,
        &[],
    );
    ctx.assess(
        checks,
        json!({"backup": backup_observation(&backup), "snapshot_files": files,
               "unusable_repo": backup_observation(&bad), "readback": readback,
               "commands": cmds, "pvcs": comparison, "copy_end": copy_end}),
    )
}

/// When restic wrote Backup `b`'s snapshot, as the REST server's storage recorded it (the end of
/// the copy); `None` where the backend cannot read that storage.
async fn copy_end(
    ctx: &CaseContext<'_>,
    b: &Backup,
) -> Result<Option<(String, Option<jiff::Timestamp>)>, CaseError> {
    let snapshot = backup_field(b, "/status/snapshotID").unwrap_or_default();
    let times = ctx
        .backend
        .snapshot_write_times(fixture::repository_name(&ctx.namespace))
        .await
        .map_err(|e| CaseError::Setup(format!("read the repository's snapshot files: {e}")))?;
    let Some(times) = times else {
        return Ok(None);
    };
    let written = times
        .iter()
        .find(|(id, _)| !snapshot.is_empty() && id.starts_with(&snapshot))
        .and_then(|(_, t)| jiff::Timestamp::try_from(*t).ok());
    Ok(Some((snapshot, written)))
}

/// Checks `save-on-after-copy-end`: the first `save-on` incarnation `game` received after its
/// `nth` `save-off` came after restic wrote the Backup's snapshot (the game was not saving
/// while restic read its claims). The moment comes from the REST server's storage; a backend
/// that cannot read it leaves the check out and says so in the returned observation.
pub(super) async fn check_save_on_after_copy_end(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    audit: &AuditLog,
    game: &str,
    b: &Backup,
    nth: usize,
) -> Result<Value, CaseError> {
    let Some((snapshot, written)) = copy_end(ctx, b).await? else {
        return Ok(json!({"assessed": false,
            "why": "this backend cannot read the REST server's storage, so the copy's end is not observable"}));
    };
    ctx.uses("snapshot write time (REST server storage)");
    let save_on = audit.save_on_after(game, nth);
    let passed = matches!((written, save_on), (Some(w), Some(on)) if on > w);
    checks.check(
        "save-on-after-copy-end",
        passed,
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("time of the first save-on to {game} after save-off #{} vs when snapshot {snapshot} was written", nth + 1),
        "save-on after the snapshot was written",
        (
            save_on.map(|t| t.to_string()),
            written.map(|t| t.to_string()),
        ),
    );
    Ok(json!({"assessed": true, "snapshot": snapshot,
              "snapshot_written": written.map(|t| t.to_string()),
              "save_on": save_on.map(|t| t.to_string())}))
}

/// The failed restore's checks: the post-backup state was planted (`planted`, read before the
/// restore), the Restore failed with CopyFailed, and the claims still hold it (`readback`).
fn check_failed_restore(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    sentinels: &Sentinels,
    after: &str,
    (planted, readback): (&str, &str),
    restore: &Value,
) {
    let world = [sentinels.primary.clone(), sentinels.extra.clone()];
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| {
                world
                    .iter()
                    .any(|c| l.split_whitespace().next() == Some(c.as_str()))
            })
            .map(str::to_string)
            .collect()
    };
    let expected: Vec<String> = world
        .iter()
        .map(|c| format!("{c} {after} present"))
        .collect();
    checks.eq(
        "post-backup-value-planted",
        &object(ctx, "pvc", &sentinels.primary),
        "world and extra claims before the restore (sentinel value, post-backup file)",
        expected.clone(),
        rows(planted),
    );
    let completed = restore["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == types::COMPLETED))
        .map(|c| {
            format!(
                "{}/{}",
                c["status"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or("")
            )
        });
    checks.eq(
        "restore-failed",
        &object(ctx, "restore", "back"),
        "status.phase and condition Completed (status/reason)",
        (
            Some("Failed".to_string()),
            Some(format!("False/{}", reasons::COPY_FAILED)),
        ),
        (
            restore["status"]["phase"].as_str().map(str::to_string),
            completed,
        ),
    );
    checks.eq(
        "claims-untouched",
        &object(ctx, "pvc", &sentinels.primary),
        "world and extra claims after the failed restore (sentinel value, post-backup file)",
        expected,
        rows(readback),
    );
}

/// Restore fails on a broken repository: a running server is backed up, its world and extra
/// claims are written after the backup, and the repository is then made unreachable (its
/// Secret names a repository that does not exist). The Restore ends Failed (CopyFailed), the
/// claims keep what they held (the post-backup values and files), every PVC keeps its UID,
/// and the server gets back the run state it had (`spec.suspend` unset again, its pod runs).
pub async fn restore_fails_on_broken_repository(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let sentinels = Sentinels::new(ctx);
    let pvcs_before = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::Before, &pvcs_before)?;
    let suspend_before = gameserver(ctx).await?.spec.suspend;
    let (backup, _) = backup_to_end(ctx, "live backup", "live").await?;
    if backup_phase(&backup) != "Succeeded" {
        return Err(CaseError::Setup(format!(
            "the backup to restore from ended {} ({}): nothing to restore, so the failed restore cannot be judged",
            backup_phase(&backup),
            backup_field(&backup, "/status/message").unwrap_or_default()
        )));
    }
    let after = "rehearsal-after-backup";
    let planted = ctx
        .step("write the claims after the backup", async {
            fixture::volume_script(
                ctx,
                "plant-after",
                &sentinels.claims(),
                &sentinels.script(after, Some("after-backup.txt")),
            )
            .await?;
            fixture::volume_script(
                ctx,
                "look-before",
                &sentinels.claims(),
                &sentinels.read_script(),
            )
            .await
        })
        .await?;
    let broken = ctx
        .step("break the repository", break_repository(ctx))
        .await?;
    let restore = ctx
        .step(
            "restore from the broken repository",
            restore_to_end(ctx, "back", "live", SERVER),
        )
        .await?;
    let server = gameserver(ctx).await?;
    let resumed = server.spec.suspend == suspend_before;
    if resumed {
        // It was running: once the run state is back, its pod runs again.
        ctx.step("server running again", async {
            fixture::await_server_phase(ctx, SERVER, "Running").await?;
            Ok(json!({"server": SERVER, "phase": "Running"}))
        })
        .await?;
    }
    let readback = ctx
        .step("read the claims after the failed restore", async {
            fixture::volume_script(ctx, "look", &sentinels.claims(), &sentinels.read_script()).await
        })
        .await?;
    let pvcs_after = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::After, &pvcs_after)?;
    ctx.uses("Restore status (phase, Completed reason)");
    ctx.uses("values read back from the volumes");
    ctx.uses("GameServer spec.suspend");
    ctx.uses("PVC UIDs");
    let mut checks = Checks::new();
    check_failed_restore(
        ctx,
        &mut checks,
        &sentinels,
        after,
        (&planted, &readback),
        &restore,
    );
    let comparison = observe::check_pvcs(
        ctx,
        &mut checks,
        "pvc-uids-kept",
        &pvcs_before,
        &pvcs_after,
        &[],
    );
    checks.eq(
        "server-state-returned",
        &object(ctx, "gameserver", SERVER),
        "spec.suspend after the failed restore",
        suspend_before,
        server.spec.suspend,
    );
    ctx.assess(
        checks,
        json!({"backup": backup_observation(&backup), "broken": broken, "restore": restore["status"],
               "planted": planted, "readback": readback, "pvcs": comparison}),
    )
}
