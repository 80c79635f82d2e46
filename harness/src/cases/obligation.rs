//! Backup promises that outlive one operator process or the Backup object, and raw copies
//! (CONTRACT B4–B6): an operator restarted mid-copy, a Backup deleted mid-copy, a copy without
//! quiesce, the persisted preparation deadline, and a legacy preparation.
//!
//! Restarting the operator goes through the backend ([`crate::backend::Backend::restart_operator`]):
//! the embedded cluster kills its process and starts a new one, Kind and existing clusters delete
//! its pod. The verdicts rest, as in [`super::backup`], on the Backup's status with its reason,
//! the copy Job, the game's RCON audit log and the agent's own log of calls.

use gameplane_api::backup::Backup;
use gameplane_api::conditions::{reasons, types};
use gameplane_api::names::{self, annotations as ann};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams, PostParams};
use serde_json::{Value, json};

use super::checks::*;
use crate::context::{CaseContext, CaseError, Checks};
use crate::fixture::backup::*;
use crate::fixture::observe::{self, AuditLog, backup_condition, backup_field, backup_phase};
use crate::fixture::{self, FixtureOptions};
use crate::wait::{Condition, Progress, await_condition, await_object, conditions};

/// The preparation deadline the deadline case asks for (seconds after the Backup's start):
/// long enough that the operator restart lands inside it, short enough for the bench.
const PREPARATION_TIMEOUT_SECONDS: u64 = 4;

/// How late after its persisted deadline a Backup may fail (the operator re-checks every
/// 500 ms; status times are whole seconds).
const DEADLINE_SLACK: std::time::Duration = std::time::Duration::from_secs(2);

/// The calls the agent of the server's pod logged (`{"event":"call",…}` lines of its current
/// container), or evidence absent when its log does not show it listening (the log would not
/// cover the moment in question).
async fn agent_calls(ctx: &CaseContext<'_>) -> Result<Vec<Value>, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod = names::pod(SERVER);
    // A log can be read only once its container started; on a busy machine the agent may
    // still be ContainerCreating here, which is the machine's speed, not the operator's doing.
    crate::wait::await_object(
        &pods,
        &pod,
        crate::wait::conditions::container_started(names::containers::AGENT),
        ctx.bounds.settle,
    )
    .await?;
    let params = LogParams {
        container: Some(names::containers::AGENT.into()),
        ..Default::default()
    };
    let log = pods
        .logs(&pod, &params)
        .await
        .map_err(CaseError::kube("read agent log", object(ctx, "pod", &pod)))?;
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    if !lines.iter().any(|l| l["event"] == "listening") {
        return Err(CaseError::evidence_absent(
            format!("{} container agent log", object(ctx, "pod", &pod)),
            "the agent's log has no `listening` line: it does not cover the agent's life",
        ));
    }
    Ok(lines.into_iter().filter(|l| l["event"] == "call").collect())
}

/// The `game` container's status of the server's pod.
async fn game_container(
    ctx: &CaseContext<'_>,
) -> Result<Option<k8s_openapi::api::core::v1::ContainerStatus>, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod = names::pod(SERVER);
    let p = pods
        .get_opt(&pod)
        .await
        .map_err(CaseError::kube("get Pod", object(ctx, "pod", &pod)))?;
    Ok(p.and_then(|p| p.status?.container_statuses)
        .and_then(|cs| cs.into_iter().find(|c| c.name == names::containers::GAME)))
}

/// Commands a backup sends over RCON (quiesce and unquiesce).
fn backup_commands(commands: &[String]) -> Vec<String> {
    commands
        .iter()
        .filter(|c| *c == "save-off" || *c == "save-on" || c.starts_with("save-all"))
        .cloned()
        .collect()
}

/// The server of the raw case's second half, whose template runs no agent.
const AGENTLESS: &str = "mc-noagent";

/// The second half of the raw case: a server whose template disables the agent is backed up
/// with `spec.quiesce` left true. Checks as the first half (the same ids): Succeeded, never
/// `Quiesced`, no agent to call (the pod has no agent container), no RCON command from the
/// backup in that game's audit log.
async fn agentless_raw_copy(
    ctx: &CaseContext<'_>,
    fx: &fixture::Fixture,
    checks: &mut Checks,
) -> Result<Value, CaseError> {
    let containers = ctx
        .step("create server whose agent is disabled", async {
            let template = fixture::install_agentless_template(ctx).await?;
            let fx = fixture::Fixture {
                template,
                ..fx.clone()
            };
            fixture::create_server(ctx, &fx, AGENTLESS, fixture::VERSION_STABLE, false).await?;
            fixture::await_server_phase(ctx, AGENTLESS, "Running").await?;
            let pod = fixture::await_server_pod_ready(ctx, AGENTLESS).await?;
            let names: Vec<String> = pod
                .spec
                .map(|s| s.containers.into_iter().map(|c| c.name).collect())
                .unwrap_or_default();
            Ok(names)
        })
        .await?;
    let (backup, _) = ctx
        .step("create backup of it (spec.quiesce true)", async {
            fixture::create_backup(ctx, "raw-noagent", AGENTLESS, true).await?;
            let (b, job) = await_backup(ctx, "raw-noagent").await?;
            Ok((backup_observation(&b), b, job))
        })
        .await
        .map(|(_, b, job)| (b, job))?;
    let audit = ctx
        .step(
            "read RCON audit log of the agentless server",
            observe::audit_log(ctx, AGENTLESS, "audit-read-noagent"),
        )
        .await?;
    let game = audit.nth_newest(0, "the agentless game that was copied")?;
    let b = object(ctx, "backup", "raw-noagent");
    let o = object(ctx, "pod", &names::pod(AGENTLESS));
    checks.eq(
        "backup-succeeded",
        &b,
        "status.phase",
        "Succeeded".to_string(),
        backup_phase(&backup),
    );
    let consistency = backup_field(&backup, "/status/consistency");
    checks.check(
        "consistency-not-quiesced",
        consistency.as_deref().is_some_and(|c| c != "Quiesced"),
        &b,
        "status.consistency",
        "reported, and not Quiesced (the agent is disabled)",
        &consistency,
    );
    checks.check(
        "no-agent-call",
        !containers.iter().any(|c| c == names::containers::AGENT),
        &o,
        "containers of the pod",
        "no agent container (nothing to call)",
        &containers,
    );
    let cmds = backup_commands(&audit.commands_of(&game));
    checks.check(
        "no-rcon-from-backup",
        audit.starts().len() == 1 && cmds.is_empty(),
        &o,
        &format!("save-off / save-all / save-on received by the game incarnation {game}"),
        "none (and no other incarnation)",
        (&audit.starts(), &cmds),
    );
    Ok(
        json!({"backup": backup_observation(&backup), "containers": containers,
              "backup_commands": cmds}),
    )
}

/// Raw copy: `spec.quiesce: false` on a live server, then a server whose agent is disabled.
/// Each Backup Succeeds with a consistency that is never `Quiesced`; no agent is called (the
/// agent logs no call; the agentless pod has none) and the game's audit log has no command from
/// the backup.
pub async fn raw_copy_without_quiesce(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let (fx, before) = running_server(ctx, FixtureOptions::default()).await?;
    let (backup, job) = ctx
        .step("create raw backup (spec.quiesce false)", async {
            fixture::create_backup(ctx, "raw", SERVER, false).await?;
            let (b, job) = await_backup(ctx, "raw").await?;
            Ok((backup_observation(&b), b, job))
        })
        .await
        .map(|(_, b, job)| (b, job))?;
    if let Some(id) = backup_field(&backup, "/status/snapshotID").filter(|id| !id.is_empty()) {
        ctx.recorder.restic_snapshot(
            "create raw backup (spec.quiesce false)",
            &id,
            json!({"backup": "raw"}),
        )?;
    }
    let after = ctx
        .step(
            "observe game incarnation",
            fixture::game_incarnation(ctx, SERVER),
        )
        .await?;
    let calls = ctx.step("read agent log", agent_calls(ctx)).await?;
    let audit = read_audit(ctx, "audit-read").await?;
    let game = audit.nth_newest(0, "the game that was copied")?;
    ctx.uses("Backup status (phase, consistency, Completed)");
    ctx.uses("agent container log");
    ctx.uses("RCON audit log");
    let mut checks = Checks::new();
    let b = object(ctx, "backup", "raw");
    let o = object(ctx, "pod", &names::pod(SERVER));
    checks.eq(
        "game-incarnation-unchanged",
        &o,
        "game incarnation",
        &before,
        &after,
    );
    checks.eq(
        "backup-succeeded",
        &b,
        "status.phase",
        "Succeeded".to_string(),
        backup_phase(&backup),
    );
    checks.check(
        "completed-condition",
        backup_condition(&backup, types::COMPLETED).is_some_and(|c| c.starts_with("True/")),
        &b,
        "condition Completed",
        "True",
        backup_condition(&backup, types::COMPLETED),
    );
    let consistency = backup_field(&backup, "/status/consistency");
    checks.check(
        "consistency-not-quiesced",
        consistency.as_deref().is_some_and(|c| c != "Quiesced"),
        &b,
        "status.consistency",
        "reported, and not Quiesced (a raw copy)",
        &consistency,
    );
    checks.check(
        "no-agent-call",
        calls.is_empty() && after.restart_count == before.restart_count,
        &o,
        "calls in the agent container's log",
        "none",
        &calls,
    );
    let cmds = backup_commands(&audit.commands_of(&game));
    checks.check(
        "no-rcon-from-backup",
        audit.starts().len() == 1 && cmds.is_empty(),
        &o,
        &format!("save-off / save-all / save-on received by the game incarnation {game}"),
        "none (and no other incarnation)",
        (&audit.starts(), &cmds),
    );
    let agentless = agentless_raw_copy(ctx, &fx, &mut checks).await?;
    ctx.assess(
        checks,
        json!({"backup": backup_observation(&backup), "copy_job": job, "agent_calls": calls,
               "backup_commands": cmds, "agent_disabled": agentless}),
    )
}

/// The Backup carries annotation `key`.
fn annotated(key: &'static str) -> Condition<Backup> {
    Condition::new(format!("annotation {key}"), move |b: Option<&Backup>| {
        let Some(b) = b else { return Progress::Pending };
        if b.metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(key))
        {
            return Progress::Met;
        }
        match b.status.as_ref().and_then(|s| s.phase) {
            Some(p) if p.is_terminal() => {
                Progress::Terminal(format!("the Backup finished ({p:?}) without {key}"))
            }
            _ => Progress::Pending,
        }
    })
}

fn annotation(b: &Backup, key: &str) -> Option<String> {
    b.metadata.annotations.as_ref()?.get(key).cloned()
}

/// Creates Backup `name` (quiesced) that asks for a preparation deadline of `seconds`.
async fn create_backup_with_deadline(
    ctx: &CaseContext<'_>,
    name: &str,
    seconds: u64,
) -> Result<Backup, CaseError> {
    let mut b = fixture::backup(name, SERVER, fixture::REPO_SECRET, true);
    b.metadata.annotations = Some(
        [(
            ann::PREPARATION_TIMEOUT_SECONDS.to_string(),
            seconds.to_string(),
        )]
        .into(),
    );
    backups(ctx)
        .create(&PostParams::default(), &b)
        .await
        .map_err(CaseError::kube(
            "create Backup",
            object(ctx, "backup", name),
        ))
}

/// Step "restart the operator": through the backend; returns what it observed and when the
/// old operator was killed.
async fn restart_operator(ctx: &CaseContext<'_>) -> Result<(Value, jiff::Timestamp), CaseError> {
    let killed_at = jiff::Timestamp::now();
    let observed = ctx
        .backend
        .restart_operator()
        .await
        .map_err(|e| CaseError::Setup(format!("restart the operator: {e}")))?;
    Ok((
        json!({"restart": observed, "killed_at": killed_at.to_string()}),
        killed_at,
    ))
}

/// Preparation deadline: the game never runs (its image cannot be pulled). The deadline the
/// operator persisted when it accepted the Backup holds across an operator restart during the
/// wait: the Backup fails at it with reason `PreparationTimeout`, and nothing was quiesced.
pub async fn preparation_deadline_expires(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let fx = ctx
        .step(
            "install fixture",
            fixture::install(ctx, &FixtureOptions::default()),
        )
        .await?;
    ctx.step("create server whose game never runs", async {
        fixture::create_server(ctx, &fx, SERVER, fixture::VERSION_UNPULLABLE, false).await?;
        Ok(json!({"server": SERVER, "version": fixture::VERSION_UNPULLABLE}))
    })
    .await?;
    let persisted = ctx
        .step("create backup and await its persisted deadline", async {
            create_backup_with_deadline(ctx, "early", PREPARATION_TIMEOUT_SECONDS).await?;
            let b = await_object(
                &backups(ctx),
                "early",
                annotated(ann::PREPARATION_DEADLINE),
                ctx.bounds.settle,
            )
            .await?;
            Ok(annotation(&b, ann::PREPARATION_DEADLINE))
        })
        .await?;
    let (restart, killed_at) = ctx
        .step("restart the operator during the wait", async {
            let (observed, at) = restart_operator(ctx).await?;
            Ok((observed, at))
        })
        .await?;
    let (backup, job) = backup_finished(ctx, "early").await?;
    let game = ctx.step("read game container", game_container(ctx)).await?;
    // The agent runs beside the game that never does; its log shows whether it was called.
    let calls = ctx.step("read agent log", agent_calls(ctx)).await?;
    ctx.uses("Backup annotation preparation-deadline");
    ctx.uses("Backup status (phase, Completed reason, completionTime)");
    ctx.uses("game container status");
    ctx.uses("agent container log");
    judge_deadline(
        ctx,
        DeadlineEvidence {
            backup,
            job,
            persisted,
            killed_at,
            restart,
            game,
            calls,
        },
    )
}

/// What the deadline case read, for its assessment.
struct DeadlineEvidence {
    /// The Backup when it ended.
    backup: Backup,
    /// Its copy Job then.
    job: observe::JobState,
    /// The `preparation-deadline` annotation before the restart.
    persisted: Option<String>,
    /// When the old operator was killed.
    killed_at: jiff::Timestamp,
    /// What the restart step observed.
    restart: Value,
    /// The game container's status at the end.
    game: Option<k8s_openapi::api::core::v1::ContainerStatus>,
    /// The calls the agent logged.
    calls: Vec<Value>,
}

fn judge_deadline(ctx: &CaseContext<'_>, evidence: DeadlineEvidence) -> Result<(), CaseError> {
    let DeadlineEvidence {
        backup,
        job,
        persisted,
        killed_at,
        restart,
        game,
        calls,
    } = evidence;
    let (backup, job, restart, calls) = (&backup, &job, &restart, &calls);
    let mut checks = Checks::new();
    let b = object(ctx, "backup", "early");
    let deadline = persisted
        .as_deref()
        .and_then(|d| d.parse::<jiff::Timestamp>().ok());
    checks.check(
        "restart-before-deadline",
        deadline.is_some_and(|d| killed_at < d),
        &b,
        "operator killed at vs the persisted preparation deadline",
        "killed before the deadline",
        (killed_at.to_string(), &persisted),
    );
    check_failed_for(ctx, &mut checks, backup, reasons::PREPARATION_TIMEOUT);
    let at_end = annotation(backup, ann::PREPARATION_DEADLINE);
    checks.check(
        "deadline-kept-across-restart",
        persisted.is_some() && at_end == persisted,
        &b,
        &format!(
            "annotation {} before the restart and at the end",
            ann::PREPARATION_DEADLINE
        ),
        "present before the restart and unchanged by it",
        (&persisted, &at_end),
    );
    let completed = backup
        .status
        .as_ref()
        .and_then(|s| s.completion_time.as_ref())
        .map(|t| t.0);
    let slack = jiff::SignedDuration::try_from(DEADLINE_SLACK).unwrap_or_default();
    let second = jiff::SignedDuration::from_secs(1);
    checks.check(
        "failed-at-deadline",
        matches!((completed, deadline), (Some(c), Some(d)) if c + second >= d && c <= d + slack),
        &b,
        "status.completionTime vs the deadline persisted before the restart",
        format!("at the deadline (within {DEADLINE_SLACK:?} after it)"),
        (completed.map(|t| t.to_string()), &persisted),
    );
    let never_ran = game.as_ref().is_some_and(|g| {
        g.restart_count == 0
            && g.container_id.as_deref().is_none_or(str::is_empty)
            && g.state.as_ref().is_none_or(|s| s.running.is_none())
            && g.last_state.as_ref().is_none_or(|s| s.terminated.is_none())
    });
    let quiesce_calls: Vec<&Value> = calls
        .iter()
        .filter(|c| c["path"].as_str().is_some_and(|p| p.ends_with("quiesce")))
        .collect();
    checks.check(
        "no-save-off",
        never_ran && quiesce_calls.is_empty(),
        &object(ctx, "pod", &names::pod(SERVER)),
        "game container (never ran) and quiesce calls in the agent's log",
        "the game never ran and the agent was never asked to quiesce",
        (
            &game.as_ref().map(|g| (&g.state, g.restart_count)),
            &quiesce_calls,
        ),
    );
    ctx.assess(
        checks,
        json!({"backup": backup_observation(backup), "copy_job": job, "persisted_deadline": persisted,
               "deadline_at_end": at_end, "restart": restart, "agent_calls": calls}),
    )
}

/// Checks `save-on-once-after-copy`: the original incarnation (the only one) received
/// exactly one `save-off` and exactly one `save-on`, after it.
fn check_save_on_once(ctx: &CaseContext<'_>, checks: &mut Checks, audit: &AuditLog, game: &str) {
    let cmds = backup_commands(&audit.commands_of(game));
    let offs = cmds.iter().filter(|c| *c == "save-off").count();
    let ons = cmds.iter().filter(|c| *c == "save-on").count();
    let ordered =
        cmds.iter().position(|c| c == "save-off") < cmds.iter().position(|c| c == "save-on");
    checks.check(
        "save-on-once-after-copy",
        audit.starts().len() == 1 && offs == 1 && ons == 1 && ordered,
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("backup commands received by the original game incarnation {game}"),
        "one save-off, then exactly one save-on (and no other incarnation)",
        (&audit.starts(), &cmds),
    );
}

/// Live backup, operator restart mid-copy: the operator is killed after quiesce (the copy Job
/// exists) while the copy runs, and restarted. The Backup ends — Succeeded with consistency
/// Quiesced, or Failed with a reason, never left running; the copy is finished or drained;
/// save-on reaches the original game exactly once, after the copy.
pub async fn live_backup_operator_restart(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let schedule = Schedule {
        backup: "live",
        at: HoldAt::SnapshotSave,
        fault: crate::evidence::catalogue::Fault::OperatorRestart,
    };
    let run = place(ctx, schedule).await?;
    let restart = run.observed;
    let (backup, job) = backup_finished(ctx, "live").await?;
    let audit = read_audit(ctx, "audit-read").await?;
    let game = audit.nth_newest(0, "the game that was backed up")?;
    ctx.uses("Backup status (phase, consistency, Completed reason)");
    ctx.uses("copy Job");
    ctx.uses("RCON audit log");
    let mut checks = Checks::new();
    let b = object(ctx, "backup", "live");
    let completed = backup_condition(&backup, types::COMPLETED);
    let consistency = backup_field(&backup, "/status/consistency");
    let ended = match backup_phase(&backup).as_str() {
        "Succeeded" => consistency.as_deref() == Some("Quiesced"),
        "Failed" => completed
            .as_deref()
            .is_some_and(|c| c.starts_with("False/") && c.len() > "False/".len()),
        _ => false,
    };
    checks.check(
        "backup-ended",
        ended,
        &b,
        "status (phase, consistency, Completed)",
        "Succeeded with consistency Quiesced, or Failed with a reason",
        (backup_phase(&backup), &consistency, &completed),
    );
    checks.check(
        "copy-finished-or-drained",
        !job.present || job.active == 0,
        &object(ctx, "job", &job.name),
        "copy Job when the Backup ended",
        "gone, or no worker running",
        &job,
    );
    check_save_on_once(ctx, &mut checks, &audit, &game);
    let copy_end = if backup_phase(&backup) == "Succeeded" {
        check_save_on_after_copy_end(ctx, &mut checks, &audit, &game, &backup, 0).await?
    } else {
        json!({"assessed": false, "why": "the Backup failed: no snapshot marks the copy's end"})
    };
    ctx.assess(
        checks,
        json!({"restart": restart, "backup": backup_observation(&backup), "copy_job": job,
               "commands": audit.commands_of(&game), "copy_end": copy_end}),
    )
}

/// Live backup deleted mid-copy: the Backup is deleted while its quiesced copy runs. The object
/// goes only after the copy is drained and save-on reached the original game; no copy Job and
/// no saving-off state is left.
pub async fn live_backup_deleted_mid_copy(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let schedule = Schedule {
        backup: "live",
        at: HoldAt::SnapshotSave,
        fault: crate::evidence::catalogue::Fault::BackupDeleted,
    };
    let deleted = place(ctx, schedule).await?.observed;
    let (gone_at, job, job_pods) = ctx
        .step("await the backup gone", async {
            await_condition(
                &backups(ctx),
                "live",
                conditions::deleted(),
                ctx.bounds.settle,
            )
            .await?;
            let gone_at = jiff::Timestamp::now();
            // Read at once: what the Backup left behind when it went.
            let job = observe::job_state(ctx, &names::backup_job("live")).await?;
            let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let lp =
                kube::api::ListParams::default().labels(&format!("{}=live", names::labels::BACKUP));
            let running: Vec<String> = pods
                .list(&lp)
                .await
                .map_err(CaseError::kube(
                    "list copy pods",
                    object(ctx, "job", "live"),
                ))?
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter_map(|p| p.metadata.name)
                .collect();
            Ok((gone_at.to_string(), job, running))
        })
        .await?;
    let audit = read_audit(ctx, "audit-read").await?;
    let game = audit.nth_newest(0, "the game that was backed up")?;
    ctx.uses("Backup deletion (watched)");
    ctx.uses("copy Job and its pods");
    ctx.uses("RCON audit log");
    let mut checks = Checks::new();
    let o = object(ctx, "pod", &names::pod(SERVER));
    checks.check(
        "copy-drained-before-gone",
        job.drained() && job_pods.is_empty(),
        &object(ctx, "job", &job.name),
        "copy Job and its pods when the Backup was gone",
        "gone",
        (&job, &job_pods),
    );
    let gone: Option<jiff::Timestamp> = gone_at.parse().ok();
    let save_on = audit.save_on_after(&game, 0);
    checks.check(
        "save-on-before-gone",
        matches!((save_on, gone), (Some(on), Some(g)) if on <= g),
        &o,
        &format!("first save-on to {game} after its save-off vs when the Backup was gone"),
        "save-on before the Backup object went",
        (save_on.map(|t| t.to_string()), &gone_at),
    );
    let cmds = backup_commands(&audit.commands_of(&game));
    checks.check(
        "game-not-left-saving-off",
        audit.starts().len() == 1
            && cmds.first().map(String::as_str) == Some("save-off")
            && cmds.last().map(String::as_str) == Some("save-on"),
        &o,
        &format!("backup commands received by the original game incarnation {game}"),
        "save-off first, save-on last (saving is on again)",
        (&audit.starts(), &cmds),
    );
    ctx.assess(
        checks,
        json!({"deleted": deleted, "gone_at": gone_at, "copy_job": job, "copy_pods": job_pods,
               "commands": cmds}),
    )
}

/// Legacy preparation: a Backup an older operator left mid-preparation (it had quiesced the
/// game, the record holds no incarnation fields), then the new operator starts. The Backup ends
/// Failed — never a consistent success — and still pays its cleanup: save-on reaches the game.
pub async fn legacy_preparation_fails_conservatively(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let (stopped, quiesced, legacy) = leave_legacy_backup(ctx, "legacy").await?;
    let started = ctx.step("start the operator", start_operator(ctx)).await?;
    let (backup, job) = backup_finished(ctx, "legacy").await?;
    let audit = read_audit(ctx, "audit-read").await?;
    let game = audit.nth_newest(0, "the game the older operator quiesced")?;
    ctx.uses("Backup status (phase, consistency, Completed reason)");
    ctx.uses("copy Job");
    ctx.uses("RCON audit log");
    let mut checks = Checks::new();
    let b = object(ctx, "backup", "legacy");
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
    check_failed_for(ctx, &mut checks, &backup, reasons::LEGACY_PREPARATION);
    check_drained(ctx, &mut checks, &job);
    let cmds = backup_commands(&audit.commands_of(&game));
    checks.check(
        "legacy-cleanup-paid",
        audit.starts().len() == 1 && observe::save_on_after_each_save_off(&cmds),
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("backup commands received by the game incarnation {game}"),
        "the older operator's save-off, then save-on (cleanup paid)",
        (&audit.starts(), &cmds),
    );
    ctx.assess(
        checks,
        json!({"stopped": stopped, "quiesced": quiesced, "legacy": legacy, "started": started,
               "backup": backup_observation(&backup), "copy_job": job, "commands": cmds}),
    )
}
