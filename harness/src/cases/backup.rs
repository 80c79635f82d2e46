//! The backup bucket: live backups bound to the game's incarnation (CONTRACT B1), backups of
//! stopped servers (B2), and what a backup covers and a restore returns (B3).

use gameplane_api::backup::Backup;
use gameplane_api::names;
use k8s_openapi::api::batch::v1::Job;
use kube::api::Api;
use serde_json::{Value, json};

use super::context::{CaseContext, CaseError, expect, expect_eq};
use super::fixture::{self, AgentKind, FixtureOptions, GameIncarnation, Markers};
use crate::evidence::pvc_table::PvcPhase;
use crate::faults;
use crate::wait::{Condition, Verdict, await_object, conditions};

/// The server every backup case runs.
const SERVER: &str = "mc";

fn backup_value(b: &Backup) -> Value {
    serde_json::to_value(b).unwrap_or(Value::Null)
}

fn status_str(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// A Backup reaching a terminal phase (either one): the verdict is the case's to judge.
fn terminal_phase() -> Condition<Backup> {
    Condition::new("phase Succeeded or Failed", |b: Option<&Backup>| {
        match b.and_then(|b| b.status.as_ref()).and_then(|s| s.phase) {
            Some(p) if p.is_terminal() => Verdict::Met,
            _ => Verdict::Pending,
        }
    })
}

/// The operator has quiesced the source (annotation `quiesced-at`).
fn quiesced() -> Condition<Backup> {
    Condition::new(
        "annotation backup.gameplane.local/quiesced-at",
        |b: Option<&Backup>| {
            let Some(b) = b else { return Verdict::Pending };
            let annotated = b
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("backup.gameplane.local/quiesced-at"));
            if annotated {
                return Verdict::Met;
            }
            match b.status.as_ref().and_then(|s| s.phase) {
                Some(p) if p.is_terminal() => Verdict::Terminal(format!(
                    "the Backup finished ({p:?}) before the source was quiesced"
                )),
                _ => Verdict::Pending,
            }
        },
    )
}

fn condition_reason(b: &Backup, type_: &str) -> Option<String> {
    b.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .map(|c| format!("{}/{}", c.status, c.reason))
}

/// Backup summary written into receipts.
fn backup_observation(b: &Backup) -> Value {
    let v = backup_value(b);
    json!({
        "name": b.metadata.name,
        "phase": status_str(&v, "/status/phase"),
        "consistency": status_str(&v, "/status/consistency"),
        "source": v.pointer("/status/source").cloned(),
        "snapshotID": status_str(&v, "/status/snapshotID"),
        "message": status_str(&v, "/status/message"),
        "conditions": v.pointer("/status/conditions").cloned(),
        "annotations": v.pointer("/metadata/annotations").cloned(),
    })
}

/// The step "await backup finished": waits for Backup `name` to end either way; the receipt
/// holds the whole object.
async fn backup_finished(ctx: &CaseContext<'_>, name: &str) -> Result<Backup, CaseError> {
    ctx.step("await backup finished", await_backup(ctx, name))
        .await
}

async fn await_backup(ctx: &CaseContext<'_>, name: &str) -> Result<Backup, CaseError> {
    let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    Ok(await_object(&api, name, terminal_phase(), ctx.bounds.settle).await?)
}

/// Steps "create backup" (quiesced) and "await copy started": returns once the copy Job of
/// Backup `name` exists, the moment the cases inject their faults.
async fn copy_under_way(ctx: &CaseContext<'_>, name: &str) -> Result<(), CaseError> {
    ctx.step(
        "create backup",
        fixture::create_backup(ctx, name, SERVER, true),
    )
    .await?;
    ctx.step("await copy started", await_copy_started(ctx, name))
        .await?;
    Ok(())
}

/// Waits until the backup's copy Job exists: the copy is under way.
async fn await_copy_started(ctx: &CaseContext<'_>, backup: &str) -> Result<Value, CaseError> {
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let job = await_object(
        &jobs,
        &names::backup_job(backup),
        conditions::exists(),
        ctx.bounds.settle,
    )
    .await?;
    Ok(json!({"job": job.metadata.name, "uid": job.metadata.uid}))
}

/// Sets up the fixture and one running server; returns its first observed incarnation.
async fn running_server(
    ctx: &CaseContext<'_>,
    options: FixtureOptions,
) -> Result<(fixture::Fixture, GameIncarnation), CaseError> {
    let fx = ctx
        .step("install fixture", fixture::install(ctx, &options))
        .await?;
    ctx.step("create server", async {
        fixture::create_server(ctx, &fx, SERVER, fixture::VERSION_STABLE, false).await?;
        fixture::await_server_phase(ctx, SERVER, "Running").await?;
        fixture::await_server_pod_ready(ctx, SERVER).await?;
        Ok(json!({"server": SERVER, "phase": "Running"}))
    })
    .await?;
    let inc = ctx
        .step(
            "observe game incarnation",
            fixture::game_incarnation(ctx, SERVER),
        )
        .await?;
    Ok((fx, inc))
}

/// Reads the RCON audit log from the server's world volume.
async fn audit_log(
    ctx: &CaseContext<'_>,
    pod_name: &str,
) -> Result<Vec<fixture_game::audit::AuditLine>, CaseError> {
    let claim = names::data_pvc(SERVER);
    let out = fixture::volume_script(
        ctx,
        pod_name,
        std::slice::from_ref(&claim),
        &format!("cat /v/{claim}/logs/rcon-audit.jsonl 2>/dev/null || true"),
    )
    .await?;
    let mut lines = Vec::new();
    for (i, line) in out.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str(line).map_err(|e| {
            CaseError::assertion(
                format!("{claim} logs/rcon-audit.jsonl line {}", i + 1),
                "format",
                "one JSON object per line",
                format!("{e}: {line}"),
            )
        })?;
        lines.push(parsed);
    }
    Ok(lines)
}

fn commands_of(lines: &[fixture_game::audit::AuditLine], incarnation: Option<&str>) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.event == "command")
        .filter(|l| incarnation.is_none_or(|i| l.incarnation == i))
        .filter_map(|l| l.command.clone())
        .collect()
}

fn phase_of(b: &Backup) -> String {
    b.status
        .as_ref()
        .and_then(|s| s.phase)
        .map(|p| format!("{p:?}"))
        .unwrap_or_else(|| "none".into())
}

fn consistency_of(b: &Backup) -> Option<String> {
    status_str(&backup_value(b), "/status/consistency")
}

fn object(ctx: &CaseContext<'_>, kind: &str, name: &str) -> String {
    format!("{kind} {}/{name}", ctx.namespace)
}

/// Live backup, same-pod game restart: pod UID same, game containerID changed and
/// restartCount +1; the Backup is not a consistent success; no save-on reached the new incarnation.
pub async fn live_backup_same_pod_game_restart(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let (_fx, _before) = running_server(ctx, FixtureOptions::default()).await?;
    copy_under_way(ctx, "live").await?;
    let restart = ctx
        .step("restart game container in place", async {
            Ok(faults::restart_game_container(
                ctx.backend,
                &ctx.namespace,
                SERVER,
                ctx.bounds.settle,
            )
            .await?)
        })
        .await?;
    let backup = backup_finished(ctx, "live").await?;
    let audit = ctx
        .step("read RCON audit log", audit_log(ctx, "audit-read"))
        .await?;
    ctx.step("assess", async {
        ctx.uses("pod UID");
        ctx.uses("game containerID and restartCount");
        ctx.uses("Backup status");
        ctx.uses("RCON audit log");
        let o = object(ctx, "pod", &names::pod(SERVER));
        expect_eq(&o, "metadata.uid (same pod)", &restart.before.pod_uid, &restart.after.pod_uid)?;
        expect(
            restart.before.container_id != restart.after.container_id,
            &o,
            "game containerID",
            "a new containerID after the restart",
            &restart.after.container_id,
        )?;
        expect_eq(&o, "game restartCount", restart.before.restart_count + 1, restart.after.restart_count)?;
        let b = object(ctx, "backup", "live");
        let consistent_success =
            phase_of(&backup) == "Succeeded" && consistency_of(&backup).as_deref() == Some("Quiesced");
        expect(
            !consistent_success,
            &b,
            "status (phase, consistency)",
            "not Succeeded with consistency Quiesced",
            (phase_of(&backup), consistency_of(&backup)),
        )?;
        expect_eq(&b, "status.phase", "Failed".to_string(), phase_of(&backup))?;
        let new_incarnation_cmds = commands_of(&audit, Some(&fixture_incarnation_after(&audit)));
        expect(
            !new_incarnation_cmds.iter().any(|c| c == "save-on"),
            &o,
            "RCON commands received by the new game incarnation",
            "no save-on",
            &new_incarnation_cmds,
        )?;
        Ok(json!({"restart": restart, "backup": backup_observation(&backup), "new_incarnation_commands": new_incarnation_cmds}))
    })
    .await?;
    Ok(())
}

/// The incarnation of the last `start` line in the audit log (the newest process).
fn fixture_incarnation_after(lines: &[fixture_game::audit::AuditLine]) -> String {
    lines
        .iter()
        .rev()
        .find(|l| l.event == "start")
        .map(|l| l.incarnation.clone())
        .unwrap_or_default()
}

/// Live backup, agent restart: the game incarnation is unchanged; the Backup Succeeds with
/// consistency Quiesced.
pub async fn live_backup_agent_restart(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let (_fx, before) = running_server(ctx, FixtureOptions::default()).await?;
    copy_under_way(ctx, "live").await?;
    let restart = ctx
        .step("restart agent container in place", async {
            Ok(faults::restart_agent_container(
                ctx.backend,
                &ctx.namespace,
                SERVER,
                ctx.bounds.settle,
            )
            .await?)
        })
        .await?;
    let backup = backup_finished(ctx, "live").await?;
    let after = ctx
        .step(
            "observe game incarnation",
            fixture::game_incarnation(ctx, SERVER),
        )
        .await?;
    ctx.step("assess", async {
        ctx.uses("game containerID and restartCount");
        ctx.uses("agent containerID and restartCount");
        ctx.uses("Backup status");
        let o = object(ctx, "pod", &names::pod(SERVER));
        expect_eq(&o, "game incarnation", &before, &after)?;
        expect(
            restart.before.container_id != restart.after.container_id,
            &o,
            "agent containerID",
            "a new agent containerID",
            &restart.after.container_id,
        )?;
        let b = object(ctx, "backup", "live");
        expect_eq(
            &b,
            "status.phase",
            "Succeeded".to_string(),
            phase_of(&backup),
        )?;
        expect_eq(
            &b,
            "status.consistency",
            Some("Quiesced".to_string()),
            consistency_of(&backup),
        )?;
        Ok(json!({"restart": restart, "game": after, "backup": backup_observation(&backup)}))
    })
    .await?;
    Ok(())
}

/// Live backup, pod replaced during preparation: the Backup fails; cleanup never reaches the
/// successor pod.
pub async fn live_backup_pod_replaced_during_preparation(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    let (_fx, _before) = running_server(ctx, FixtureOptions::default()).await?;
    ctx.step(
        "create backup",
        fixture::create_backup(ctx, "live", SERVER, true),
    )
    .await?;
    // Replace the pod once the original game has been quiesced: from then on cleanup
    // (save-on) is owed to the original process, and must never reach its successor.
    ctx.step("await quiesce of the original", async {
        let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let b = await_object(&api, "live", quiesced(), ctx.bounds.settle).await?;
        Ok(backup_observation(&b))
    })
    .await?;
    let replaced = ctx
        .step("replace pod", async {
            Ok(faults::replace_pod(&ctx.client, &ctx.namespace, SERVER, ctx.bounds.settle).await?)
        })
        .await?;
    let backup = backup_finished(ctx, "live").await?;
    // The successor must be running before its audit log can speak for it.
    ctx.step("await successor ready", async {
        fixture::await_server_pod_ready(ctx, SERVER).await?;
        fixture::game_incarnation(ctx, SERVER).await
    })
    .await?;
    let audit = ctx
        .step("read RCON audit log", audit_log(ctx, "audit-read"))
        .await?;
    ctx.step("assess", async {
        ctx.uses("pod UID");
        ctx.uses("Backup status");
        ctx.uses("RCON audit log");
        let b = object(ctx, "backup", "live");
        expect_eq(&b, "status.phase", "Failed".to_string(), phase_of(&backup))?;
        expect_eq(
            &b,
            "condition Unquiesced (status/reason)",
            Some("True/OriginalProcessExited".to_string()),
            condition_reason(&backup, "Unquiesced"),
        )?;
        let successor = fixture_incarnation_after(&audit);
        let cmds = commands_of(&audit, Some(&successor));
        expect(
            !cmds.iter().any(|c| c == "save-on" || c == "save-off" || c.starts_with("save-all")),
            &object(ctx, "pod", &names::pod(SERVER)),
            format!("RCON commands received by the successor (pod UID {})", replaced.new_uid).as_str(),
            "no backup cleanup (save-on) or quiesce command",
            &cmds,
        )?;
        Ok(json!({"replaced": replaced, "backup": backup_observation(&backup), "successor_commands": cmds}))
    })
    .await?;
    Ok(())
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
    let backup = backup_finished(ctx, "early").await?;
    let inc = ctx
        .step(
            "observe game incarnation",
            fixture::game_incarnation(ctx, SERVER),
        )
        .await?;
    ctx.step("assess", async {
        ctx.uses("Backup status.source");
        ctx.uses("game containerID and restartCount");
        let b = object(ctx, "backup", "early");
        expect_eq(
            &b,
            "status.phase",
            "Succeeded".to_string(),
            phase_of(&backup),
        )?;
        expect_eq(
            &b,
            "status.consistency",
            Some("Quiesced".to_string()),
            consistency_of(&backup),
        )?;
        let v = backup_value(&backup);
        expect_eq(
            &b,
            "status.source.state",
            Some("Live".to_string()),
            status_str(&v, "/status/source/state"),
        )?;
        expect_eq(
            &b,
            "status.source.podUID",
            Some(inc.pod_uid.clone()),
            status_str(&v, "/status/source/podUID"),
        )?;
        expect_eq(
            &b,
            "status.source.gameContainerID",
            Some(inc.container_id.clone()),
            status_str(&v, "/status/source/gameContainerID"),
        )?;
        Ok(json!({"backup": backup_observation(&backup), "game": inc}))
    })
    .await?;
    Ok(())
}

/// Live backup, older agent without the identity route: fails at the preflight; the game's RCON
/// audit log shows no save-off.
pub async fn live_backup_older_agent_without_identity_route(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    let options = FixtureOptions {
        agent: AgentKind::Legacy,
        ..Default::default()
    };
    let (_fx, _inc) = running_server(ctx, options).await?;
    ctx.step(
        "create backup",
        fixture::create_backup(ctx, "live", SERVER, true),
    )
    .await?;
    let backup = backup_finished(ctx, "live").await?;
    let audit = ctx
        .step("read RCON audit log", audit_log(ctx, "audit-read"))
        .await?;
    ctx.step("assess", async {
        ctx.uses("Backup status");
        ctx.uses("RCON audit log");
        let b = object(ctx, "backup", "live");
        expect_eq(&b, "status.phase", "Failed".to_string(), phase_of(&backup))?;
        let cmds = commands_of(&audit, None);
        expect(
            !cmds.iter().any(|c| c == "save-off"),
            &object(ctx, "pod", &names::pod(SERVER)),
            "RCON commands received by the game",
            "no save-off",
            &cmds,
        )?;
        Ok(json!({"backup": backup_observation(&backup), "commands": cmds}))
    })
    .await?;
    Ok(())
}

/// Suspends the server and waits until it is stopped with no pod.
async fn stop_server(ctx: &CaseContext<'_>) -> Result<Value, CaseError> {
    faults::set_suspended(&ctx.client, &ctx.namespace, SERVER, true).await?;
    fixture::await_server_phase(ctx, SERVER, "Suspended").await?;
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    await_condition_absent(&pods, &names::pod(SERVER), ctx).await?;
    Ok(json!({"server": SERVER, "phase": "Suspended", "pod": "absent"}))
}

async fn await_condition_absent(
    pods: &Api<k8s_openapi::api::core::v1::Pod>,
    name: &str,
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    crate::wait::await_condition(pods, name, conditions::deleted(), ctx.bounds.settle).await?;
    Ok(())
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

async fn spec_suspend(ctx: &CaseContext<'_>) -> Result<Option<bool>, CaseError> {
    let api: Api<gameplane_api::gameserver::GameServer> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let gs = api.get(SERVER).await.map_err(CaseError::kube(
        "get GameServer",
        object(ctx, "gameserver", SERVER),
    ))?;
    Ok(gs.spec.suspend)
}

/// Stopped-server backups: two backups and restores while the pod is absent; no agent call;
/// suspend unchanged; data returned.
pub async fn stopped_server_backups(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let (_fx, _inc) = running_server(ctx, FixtureOptions::default()).await?;
    ctx.step("stop server", stop_server(ctx)).await?;
    let pvcs_before = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::Before, &pvcs_before)?;
    let state_one = ctx
        .step("read world (state one)", world_listing(ctx, "list-1"))
        .await?;
    let first = ctx
        .step("backup one while stopped", async {
            fixture::create_backup(ctx, "stopped-1", SERVER, true).await?;
            let b = await_backup(ctx, "stopped-1").await?;
            Ok((backup_observation(&b), b))
        })
        .await?
        .1;
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
    let second = ctx
        .step("backup two while stopped", async {
            fixture::create_backup(ctx, "stopped-2", SERVER, true).await?;
            let b = await_backup(ctx, "stopped-2").await?;
            Ok((backup_observation(&b), b))
        })
        .await?
        .1;
    if let Some(id) = second.status.as_ref().and_then(|s| s.snapshot_id.clone()) {
        ctx.recorder.restic_snapshot(
            "backup two while stopped",
            &id,
            backup_observation(&second),
        )?;
    }
    let mut restored = Vec::new();
    for (restore, backup, expected, pod) in [
        ("restore-1", "stopped-1", &state_one, "list-r1"),
        ("restore-2", "stopped-2", &state_two, "list-r2"),
    ] {
        let listing = ctx
            .step(&format!("{restore} from {backup} while stopped"), async {
                fixture::create_restore(ctx, restore, backup, SERVER).await?;
                let api: Api<gameplane_api::restore::Restore> =
                    Api::namespaced(ctx.client.clone(), &ctx.namespace);
                let r =
                    await_object(&api, restore, conditions::succeeded(), ctx.bounds.settle).await?;
                let snapshot = r
                    .status
                    .as_ref()
                    .and_then(|s| s.snapshot_id.clone())
                    .unwrap_or_default();
                ctx.recorder.restic_restore(
                    restore,
                    restore,
                    &snapshot,
                    json!({"backup": backup}),
                )?;
                world_listing(ctx, pod).await
            })
            .await?;
        expect_eq(
            &object(ctx, "pvc", &data),
            &format!("contents after {restore} (from {backup})"),
            expected.clone(),
            listing.clone(),
        )?;
        restored.push(listing);
    }
    let pvcs_after = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::After, &pvcs_after)?;
    let suspend = spec_suspend(ctx).await?;
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod_now = pods
        .get_opt(&names::pod(SERVER))
        .await
        .map_err(CaseError::kube(
            "get Pod",
            object(ctx, "pod", &names::pod(SERVER)),
        ))?;
    ctx.step("assess", async {
        ctx.uses("Backup status.source and consistency");
        ctx.uses("spec.suspend");
        ctx.uses("data digests read from the volumes");
        ctx.uses("PVC UIDs");
        ctx.uses("restic snapshots");
        for b in [&first, &second] {
            let name = b.metadata.name.clone().unwrap_or_default();
            let o = object(ctx, "backup", &name);
            let v = backup_value(b);
            expect_eq(&o, "status.phase", "Succeeded".to_string(), phase_of(b))?;
            expect_eq(
                &o,
                "status.source.state",
                Some("Stopped".to_string()),
                status_str(&v, "/status/source/state"),
            )?;
            expect_eq(
                &o,
                "status.consistency",
                Some("Stopped".to_string()),
                consistency_of(b),
            )?;
        }
        expect(
            state_one != state_two,
            &object(ctx, "pvc", &data),
            "contents between the backups",
            "different (the note was planted)",
            &state_two,
        )?;
        let gs = object(ctx, "gameserver", SERVER);
        expect_eq(&gs, "spec.suspend", Some(true), suspend)?;
        expect(
            pod_now.is_none(),
            &object(ctx, "pod", &names::pod(SERVER)),
            "existence",
            "absent (the server stays stopped)",
            pod_now.as_ref().map(|p| p.metadata.uid.clone()),
        )?;
        for (b, a) in pvcs_before.iter().zip(&pvcs_after) {
            expect_eq(
                &object(ctx, "pvc", &b.claim),
                "metadata.uid",
                &b.uid,
                &a.uid,
            )?;
        }
        Ok(json!({"state_one": state_one, "state_two": state_two, "restored": restored}))
    })
    .await?;
    Ok(())
}

/// Stopped-server backup, server started mid-copy: the copy is invalidated, not reported consistent.
pub async fn stopped_server_backup_started_mid_copy(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    let (_fx, _inc) = running_server(ctx, FixtureOptions::default()).await?;
    ctx.step("stop server", stop_server(ctx)).await?;
    copy_under_way(ctx, "stopped").await?;
    ctx.step("start server mid-copy", async {
        Ok(faults::set_suspended(&ctx.client, &ctx.namespace, SERVER, false).await?)
    })
    .await?;
    let backup = backup_finished(ctx, "stopped").await?;
    ctx.step("assess", async {
        ctx.uses("Backup status");
        let b = object(ctx, "backup", "stopped");
        let consistent = phase_of(&backup) == "Succeeded";
        expect(
            !consistent,
            &b,
            "status.phase",
            "not Succeeded (the source started during the copy)",
            (phase_of(&backup), consistency_of(&backup)),
        )?;
        expect_eq(&b, "status.phase", "Failed".to_string(), phase_of(&backup))?;
        Ok(backup_observation(&backup))
    })
    .await?;
    Ok(())
}

/// A plain live backup and restore round trip: the backup succeeds quiesced, a file created
/// after it does not survive the restore, the markers come back, and every PVC keeps its UID.
pub async fn live_backup_restore_round_trip(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let (fx, _inc) = running_server(ctx, FixtureOptions::default()).await?;
    let pvcs_before = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::Before, &pvcs_before)?;
    let backup = ctx
        .step("live backup", async {
            fixture::create_backup(ctx, "live", SERVER, true).await?;
            let b = await_backup(ctx, "live").await?;
            Ok((backup_observation(&b), b))
        })
        .await?
        .1;
    let b = object(ctx, "backup", "live");
    expect_eq(
        &b,
        "status.phase",
        "Succeeded".to_string(),
        phase_of(&backup),
    )?;
    let snapshot = backup
        .status
        .as_ref()
        .and_then(|s| s.snapshot_id.clone())
        .unwrap_or_default();
    expect(
        !snapshot.is_empty(),
        &b,
        "status.snapshotID",
        "a restic snapshot id",
        &snapshot,
    )?;
    ctx.recorder
        .restic_snapshot("live backup", &snapshot, backup_observation(&backup))?;
    // A copy that cannot be written (the repository's password is wrong) must fail, never
    // report success without a snapshot.
    let bad = ctx
        .step("backup into an unusable repository", async {
            fixture::install_bad_repo_secret(ctx).await?;
            let bad = Backup::new(
                "unusable-repo",
                gameplane_api::backup::BackupSpec {
                    server_ref: gameplane_api::backup::ServerRef {
                        name: SERVER.into(),
                    },
                    repo_ref: Some(gameplane_api::backup::RepoRef {
                        name: fixture::BAD_REPO_SECRET.into(),
                        key: "repo".into(),
                    }),
                    strategy: None,
                    quiesce: Some(true),
                    tags: vec![],
                },
            );
            let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            api.create(&Default::default(), &bad)
                .await
                .map_err(CaseError::kube(
                    "create Backup",
                    object(ctx, "backup", "unusable-repo"),
                ))?;
            let b = await_backup(ctx, "unusable-repo").await?;
            Ok((backup_observation(&b), b))
        })
        .await?
        .1;
    let o = object(ctx, "backup", "unusable-repo");
    expect_eq(&o, "status.phase", "Failed".to_string(), phase_of(&bad))?;
    let bad_snapshot = bad.status.as_ref().and_then(|s| s.snapshot_id.clone());
    expect(
        bad_snapshot.as_deref().is_none_or(str::is_empty),
        &o,
        "status.snapshotID",
        "none (nothing was written)",
        &bad_snapshot,
    )?;
    let data = names::data_pvc(SERVER);
    ctx.step("plant a file after the backup", async {
        fixture::volume_script(
            ctx,
            "plant",
            std::slice::from_ref(&data),
            &format!("echo after-backup > /v/{data}/world/after-backup.txt && ls /v/{data}/world"),
        )
        .await
    })
    .await?;
    ctx.step("restore", async {
        fixture::create_restore(ctx, "back", "live", SERVER).await?;
        let api: Api<gameplane_api::restore::Restore> =
            Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let r = await_object(&api, "back", conditions::succeeded(), ctx.bounds.settle).await?;
        let id = r
            .status
            .as_ref()
            .and_then(|s| s.snapshot_id.clone())
            .unwrap_or_default();
        ctx.recorder
            .restic_restore("restore", "back", &id, json!({"backup": "live"}))?;
        fixture::await_server_phase(ctx, SERVER, "Running").await?;
        Ok(json!({"restore": "back", "snapshot": id}))
    })
    .await?;
    let claims = vec![data.clone(), names::extra_pvc(SERVER, fixture::EXTRA_WORLD)];
    let readback = ctx
        .step("read back world", async {
            Ok(crate::probe::readback::read_back(
                &ctx.client,
                &ctx.namespace,
                "readback",
                &claims,
                ctx.bounds.settle,
            )
            .await?)
        })
        .await?;
    let planted = ctx
        .step("look for the planted file", async {
            fixture::volume_script(
                ctx,
                "look",
                std::slice::from_ref(&data),
                &format!("test -e /v/{data}/world/after-backup.txt && echo present || echo absent"),
            )
            .await
        })
        .await?;
    let pvcs_after = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::After, &pvcs_after)?;
    ctx.step("assess", async {
        ctx.uses("restic snapshot");
        ctx.uses("data read back from the volumes");
        ctx.uses("PVC UIDs");
        let markers = Markers::for_server(&fx.namespace, SERVER);
        expect_eq(
            &object(ctx, "pvc", &data),
            "planted file after restore",
            "absent",
            planted.trim(),
        )?;
        let primary = readback.claims.get(&data).and_then(|i| i.marker.clone());
        expect_eq(
            &object(ctx, "pvc", &data),
            "world marker",
            Some(markers.primary.clone()),
            primary,
        )?;
        for (b, a) in pvcs_before.iter().zip(&pvcs_after) {
            expect_eq(
                &object(ctx, "pvc", &b.claim),
                "metadata.uid",
                &b.uid,
                &a.uid,
            )?;
        }
        Ok(json!({"snapshot": snapshot, "readback": readback}))
    })
    .await?;
    Ok(())
}
