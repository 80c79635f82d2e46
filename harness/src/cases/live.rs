//! Live backups bound to the game's incarnation (CONTRACT B1). Each fault case is a named
//! schedule ([`crate::fixture::backup::Schedule`]): the operation held at a moment the cluster
//! marks, a fault of the catalogue placed there, then the case's checks.
//!
//! The backup bucket is this file, [`super::stopped`] (B2), [`super::restore`] (B3) and
//! [`super::obligation`] (what a backup owes), with [`super::checks`] shared. Every verdict rests on what the operator, the game and the cluster produced: the Backup's
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

use super::checks::*;
use crate::context::{CaseContext, CaseError, Checks};
use crate::evidence::catalogue::Fault;
use crate::faults::{ReplaceObservation, RestartObservation};
use crate::fixture::backup::*;
use crate::fixture::observe::{self, backup_condition, backup_field, backup_phase};
use crate::fixture::{self, AgentKind, FixtureOptions};

/// Before the operator creates the copy Job (after it quiesced the game): its first `create
/// jobs` in the case's namespace.
const COPY_JOB_CREATED: HoldAt = HoldAt::Write {
    label: "create jobs",
    occurrence: 1,
};

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
            down["down"]["agent"]["waiting"]["reason"] == "CrashLoopBackOff",
            &object(ctx, "pod", &names::pod(SERVER)),
            "agent container state, held down while the copy was held",
            "waiting CrashLoopBackOff",
            &down["down"]["agent"],
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
    let run = place(ctx, live(COPY_JOB_CREATED, Fault::PodReplaced)).await?;
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
    let run = place(ctx, live(COPY_JOB_CREATED, Fault::WriteConflict)).await?;
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

/// The operator's write that records the save-on paid after the copy (the 5th `patch backups
/// live`): the copy is over, the Backup not yet ended.
const SAVE_ON_RECORDED: HoldAt = HoldAt::Write {
    label: "patch backups live",
    occurrence: 5,
};

/// Live backup, operator restarted onto a stale view: while the copy's end is being recorded,
/// the operator is killed and started again onto a cache that lags (its informers' lists are
/// answered as the cluster was when the Backup was created, its watches send nothing until it
/// writes the Backup or its Job). It must read what it acts on: the Backup still Succeeds with
/// consistency Quiesced, from the Job that ran.
pub async fn live_backup_operator_restarted_onto_stale_view(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let run = place(ctx, live(SAVE_ON_RECORDED, Fault::StaleView)).await?;
    let (backup, job) = backup_finished(ctx, "live").await?;
    ctx.uses("Backup status (phase, consistency, Completed)");
    ctx.uses("copy Job");
    let mut checks = Checks::new();
    checks.check(
        "stale-view-read",
        run.observed["view_ended_by"].is_string()
            && run.observed["lists_as_of_resource_version"].is_u64(),
        &object(ctx, "backup", "live"),
        "the restarted operator's lists from its cache",
        "answered as of the Backup's creation, until the operator wrote the Backup or its Job",
        &run.observed,
    );
    succeeded_from_its_copy(ctx, &mut checks, &backup, &job);
    ctx.assess(
        checks,
        json!({"held": run.held, "stale_view": run.observed, "backup": backup_observation(&backup), "copy_job": job}),
    )
}

/// Checks that the Backup Succeeded with consistency Quiesced (`check_succeeded`) from the copy
/// its Job made (`copy-job-ran`).
fn succeeded_from_its_copy(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    backup: &Backup,
    job: &observe::JobState,
) {
    check_succeeded(ctx, checks, backup, "Quiesced");
    checks.check(
        "copy-job-ran",
        job.succeeded >= 1,
        &object(ctx, "job", &job.name),
        "status.succeeded",
        ">= 1",
        job.succeeded,
    );
}

/// The operator's status write that records the Backup's source (the 2nd `patch
/// backups/status live`, after `Pending`).
const SOURCE_RECORDED: HoldAt = HoldAt::Write {
    label: "patch backups/status live",
    occurrence: 2,
};

/// Live backup, the watch event of the recorded source withheld: the API server never delivers
/// to the operator's watches the event of its own status write that records the source (its
/// watch goes on). The operator must not need it: it requeues its own next pass, and the Backup
/// Succeeds with consistency Quiesced.
pub async fn live_backup_source_event_withheld(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let run = place(ctx, live(SOURCE_RECORDED, Fault::DroppedEvent)).await?;
    let withheld = ctx
        .step("await the withheld event", async {
            Ok(ctx.backend.await_events_dropped(ctx.bounds.settle).await)
        })
        .await?;
    let (backup, job) = backup_finished(ctx, "live").await?;
    ctx.uses("Backup status (phase, consistency, Completed)");
    ctx.uses("copy Job");
    let mut checks = Checks::new();
    checks.check(
        "event-withheld",
        withheld,
        &object(ctx, "backup", "live"),
        "the next watch event about the Backup to the operator's watches, after its source-recording write",
        "withheld from them (their watches went on)",
        json!({"withheld": withheld, "armed": run.observed}),
    );
    succeeded_from_its_copy(ctx, &mut checks, &backup, &job);
    ctx.assess(
        checks,
        json!({"held": run.held, "withheld": withheld, "backup": backup_observation(&backup), "copy_job": job}),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::catalogue::Operation;
    use crate::evidence::place;

    /// The cases that hold an operator write name it as the exploration does: their schedule
    /// is one of the backup operation's, by the id `rehearse explore --replay` takes.
    #[test]
    fn the_write_held_cases_are_schedules_of_the_exploration() {
        for fault in [Fault::PodReplaced, Fault::WriteConflict] {
            let id = live(COPY_JOB_CREATED, fault).name();
            assert_eq!(id, format!("backup.create_jobs.1.{fault}"));
            let (operation, at, column) = place::parse(&id).unwrap();
            assert_eq!(operation, Operation::Backup.to_string());
            assert_eq!((at.label.as_str(), at.occurrence), ("create jobs", 1));
            assert_eq!(column, fault.to_string());
            assert!(Operation::Backup.faults().contains(&fault), "{fault}");
        }
        assert_eq!(
            live(HoldAt::SnapshotSave, Fault::GameRestart).name(),
            "game-restart at the copy's snapshot save"
        );
    }
}
