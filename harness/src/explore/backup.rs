//! The backup operation as an exploration schedule: one running server, one quiesced Backup,
//! and (unless it is the reference run) one fault placed before one of the operator's writes.
//! Whatever happens, the schedule ends by judging the run's trace with the backup invariants
//! ([`crate::evidence::invariants`]).

use std::sync::Arc;

use gameplane_api::backup::{Backup, BackupPhase};
use gameplane_api::names;
use kube::Api;
use serde_json::{Value, json};

use super::Fault;
use super::observer::{Observer, Recorded, ReleaseOnDrop};
use crate::context::{CaseContext, CaseError};
use crate::evidence::invariants::capture::{MarkedClaim, SnapshotRead};
use crate::evidence::invariants::schedule::Trace;
use crate::evidence::invariants::{AuditEntry, BackupTrace};
use crate::fixture::{self, FixtureOptions};
use crate::fixture::{backup, observe};
use crate::wait::{Condition, Progress, WaitError, await_condition};

/// The server every backup schedule backs up.
const SERVER: &str = "mc";
/// The Backup every backup schedule creates.
pub const BACKUP: &str = "live";
/// The operator's writes that are a backup's points: the Backup (finalizers, annotations,
/// status) and its copy Job.
pub const POINT_RESOURCES: &[&str] = &["backups", "jobs"];

/// The operation is over: the Backup is terminal and nobody asked to delete it, or it is gone.
fn operation_over() -> Condition<Backup> {
    Condition::new(
        "Backup terminal (not being deleted), or gone",
        |b: Option<&Backup>| match b {
            None => Progress::Met,
            Some(b) => {
                let terminal = b
                    .status
                    .as_ref()
                    .and_then(|s| s.phase)
                    .is_some_and(|p| p.is_terminal());
                if terminal && b.metadata.deletion_timestamp.is_none() {
                    Progress::Met
                } else {
                    Progress::Pending
                }
            }
        },
    )
}

pub use crate::evidence::catalogue::Source;

/// Runs one backup schedule of a server in state `source`; `hold` is the write (its label and occurrence) and fault, `None` for the
/// reference run. The observer must be the cluster's request hook.
pub(crate) async fn schedule(
    ctx: &CaseContext<'_>,
    observer: Arc<Observer>,
    operation: super::Operation,
    source: Source,
    hold: Option<&(super::Place, Fault)>,
) -> Result<super::Ran, CaseError> {
    let stopped = matches!(source, Source::Suspended | Source::IdleAsleep);
    let quiesce = source != Source::RunningRaw;
    observer.watch(&ctx.namespace);
    let (run_state_before, marked, fx) = set_up(ctx, source).await?;
    let reached = observer.begin(
        POINT_RESOURCES,
        &names::backup_job(BACKUP),
        hold.map(|(place, _)| place.clone()),
    );
    let _release = ReleaseOnDrop(observer.clone());
    start(ctx, source, fx.as_ref(), quiesce).await?;
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let (placed, faults_stopped_at) = super::place_fault(
        ctx,
        &observer,
        operation,
        reached,
        hold,
        await_condition(&backups, BACKUP, operation_over(), ctx.bounds.settle),
        crate::fixture::inject::Target {
            server: SERVER,
            resource: "backups",
            object: BACKUP,
            stale_as_of: None,
            resources: POINT_RESOURCES,
        },
    )
    .await?;
    let settled = ctx
        .step("await backup over", async {
            match await_condition(&backups, BACKUP, operation_over(), ctx.bounds.settle).await {
                Ok(_) => Ok(json!({"over": true})),
                // Liveness judges a Backup that never ends; the trace is read either way.
                Err(e @ WaitError::TimedOut { .. }) => {
                    Ok(json!({"over": false, "wait": e.to_string()}))
                }
                Err(e) => Err(e.into()),
            }
        })
        .await?;
    // Writes after this are the server's own upkeep, not the operation's: not points.
    observer.freeze();
    // The audit log is read with the server settled (its game running and ready), so the
    // newest process in the log is the one that runs: what cleanup owes is judged against it.
    // A stopped server nobody started stays stopped: nothing to wait for.
    let expect_running = !stopped || hold.is_some_and(|(_, f)| *f == Fault::ServerStarted);
    let ready = ctx
        .step("await server ready", async {
            if !expect_running {
                return Ok(json!({"ready": false, "why": "the server is stopped"}));
            }
            Ok(match fixture::await_server_pod_ready(ctx, SERVER).await {
                Ok(_) => json!({"ready": true}),
                Err(e) => json!({"ready": false, "why": e.to_string()}),
            })
        })
        .await?;
    let audit = ctx
        .step("read RCON audit log", async {
            Ok(observe::audit_log(ctx, SERVER, "audit-read")
                .await
                .map_err(|e| e.to_string()))
        })
        .await?;
    let snapshot = ctx
        .step("list the Backup's snapshot", read_snapshot(ctx, &backups))
        .await?;
    let mut trace = trace_of(
        &observer.changes(),
        audit.as_ref().ok(),
        faults_stopped_at,
        ctx,
    );
    trace.audit_error = audit.as_ref().err().cloned();
    trace.quiesce = quiesce;
    trace.claims = marked;
    trace.snapshot = snapshot;
    trace.run_state_before = run_state_before;
    if source == Source::NotYetRunning {
        trace.data_scope = Some(
            "the Backup is created together with its server, before any claim exists: no marker can be planted and there is no run state before it, so data judges the copy and the snapshot id only".into(),
        );
    }
    trace.run_state_after = super::restore::run_state(ctx).await.ok();
    Ok(super::Ran {
        schedule: placed.perturbation(operation, hold),
        placement: placed.placement(hold, &observer.points()),
        object: format!("backup {}/{BACKUP}", ctx.namespace),
        history: json!({"placed": placed, "settled": settled, "ready": ready, "points": observer.points()}),
        trace: Trace::Backup(Box::new(trace)),
    })
}

/// Everything before the operation's points: the server in the state `source` names, with
/// its run state and markers (none for a server not created yet: its fixture is returned), and
/// an older operator's Backup for a legacy preparation.
async fn set_up(
    ctx: &CaseContext<'_>,
    source: Source,
) -> Result<(Option<String>, Vec<MarkedClaim>, Option<fixture::Fixture>), CaseError> {
    if source == Source::NotYetRunning {
        let fx = ctx
            .step(
                "install fixture",
                fixture::install(ctx, &FixtureOptions::default()),
            )
            .await?;
        return Ok((None, Vec::new(), Some(fx)));
    }
    let (state, marked) = prepare(ctx, source).await?;
    if source == Source::LegacyPreparation {
        crate::fixture::backup::leave_legacy_backup(ctx, BACKUP).await?;
    }
    Ok((Some(state), marked, None))
}

/// The operation's first step: the Backup created (with its server, when `fx` is given), or
/// the operator started onto an older operator's Backup.
async fn start(
    ctx: &CaseContext<'_>,
    source: Source,
    fx: Option<&fixture::Fixture>,
    quiesce: bool,
) -> Result<Value, CaseError> {
    if source == Source::LegacyPreparation {
        // The older operator's Backup is there: this operator meets it when it starts.
        return ctx
            .step(
                "start the operator",
                crate::fixture::backup::start_operator(ctx),
            )
            .await;
    }
    ctx.step("create backup", async {
        if let Some(fx) = fx {
            // Together with its server, as a user applying both at once: the game is not
            // running yet when the operator first sees the Backup.
            fixture::create_server(ctx, fx, SERVER, fixture::VERSION_STABLE, false).await?;
        }
        let created = fixture::create_backup(ctx, BACKUP, SERVER, quiesce).await?;
        Ok(json!({"created": created.metadata.name}))
    })
    .await
}

/// Brings the server into the state `source` names, with markers planted in its claims: its
/// run state then, and the markers.
async fn prepare(
    ctx: &CaseContext<'_>,
    source: Source,
) -> Result<(String, Vec<MarkedClaim>), CaseError> {
    if source == Source::Suspended {
        // Its extra world declared on its template only: a backup copies every claim the
        // server mounts, wherever the claim was declared.
        running_server_extra_on_template(ctx).await?;
    } else {
        let options = FixtureOptions {
            agent: if source == Source::OldAgent {
                fixture::AgentKind::Legacy
            } else {
                fixture::AgentKind::Current
            },
            ..FixtureOptions::default()
        };
        backup::running_server(ctx, options).await?;
    }
    match source {
        Source::Running
        | Source::RunningRaw
        | Source::NotYetRunning
        | Source::OldAgent
        | Source::LegacyPreparation => {}
        Source::Suspended => {
            ctx.step("stop server", backup::stop_server(ctx)).await?;
        }
        Source::IdleAsleep => {
            ctx.step(
                "put the server to sleep (idle)",
                super::restore::put_to_sleep(ctx),
            )
            .await?;
        }
    }
    let run_state = super::restore::run_state(ctx).await?;
    let marked = ctx.step("plant claim markers", plant_markers(ctx)).await?;
    Ok((run_state, marked))
}

/// Steps "install fixture" and "create server": the server running, with no extra world of its
/// own and the template's (`storage.extra` on the template).
async fn running_server_extra_on_template(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let options = FixtureOptions {
        extra_on_template: true,
        ..FixtureOptions::default()
    };
    let fx = ctx
        .step("install fixture", fixture::install(ctx, &options))
        .await?;
    ctx.step("create server", async {
        let markers = fixture::Markers::for_server(&fx.namespace, SERVER);
        let mut gs = fixture::server(
            SERVER,
            &fx.template,
            fixture::VERSION_STABLE,
            &markers,
            false,
        );
        if let Some(storage) = &mut gs.spec.storage {
            storage.extra.clear();
        }
        let api: Api<gameplane_api::gameserver::GameServer> =
            Api::namespaced(ctx.client.clone(), &ctx.namespace);
        api.create(&kube::api::PostParams::default(), &gs)
            .await
            .map_err(CaseError::kube(
                "create GameServer",
                format!("{}/{SERVER}", ctx.namespace),
            ))?;
        fixture::await_server_phase(ctx, SERVER, "Running").await?;
        fixture::await_server_pod_ready(ctx, SERVER).await?;
        Ok(json!({"server": SERVER, "extra": "declared on the template"}))
    })
    .await?;
    Ok(())
}

/// Plants a marker file of its own name at the root of every claim of the server (world and
/// mods), which the `data` invariant looks for in the snapshot.
async fn plant_markers(ctx: &CaseContext<'_>) -> Result<Vec<MarkedClaim>, CaseError> {
    let (world, mods) = super::restore::claims(ctx).await?;
    let marked: Vec<MarkedClaim> = world
        .iter()
        .map(|c| (c, true))
        .chain(mods.iter().map(|c| (c, false)))
        .map(|(claim, world)| MarkedClaim {
            claim: claim.clone(),
            world,
            marker: format!(".rehearsal-marker-{claim}"),
        })
        .collect();
    let mut script = String::from("set -e\n");
    for m in &marked {
        script.push_str(&format!("echo {} > /v/{}/{}\n", m.claim, m.claim, m.marker));
    }
    script.push_str("echo planted\n");
    let claims: Vec<String> = marked.iter().map(|m| m.claim.clone()).collect();
    fixture::volume_script(ctx, "plant-markers", &claims, &script).await?;
    Ok(marked)
}

/// The snapshot a Succeeded Backup names, listed with `restic ls` through the repository
/// Secret; `None` when the Backup did not succeed.
async fn read_snapshot(
    ctx: &CaseContext<'_>,
    backups: &Api<Backup>,
) -> Result<Option<SnapshotRead>, CaseError> {
    let backup = backups.get_opt(BACKUP).await.map_err(CaseError::kube(
        "get Backup",
        format!("{}/{BACKUP}", ctx.namespace),
    ))?;
    let status = backup.and_then(|b| b.status);
    let succeeded = status.as_ref().and_then(|s| s.phase) == Some(BackupPhase::Succeeded);
    let Some(id) = status
        .and_then(|s| s.snapshot_id)
        .filter(|id| succeeded && !id.is_empty())
    else {
        return Ok(None);
    };
    // The repository the Secret names now: the one the copy wrote to when a
    // `repository-unreachable` fault landed before the copy (restic creates a repository that
    // is not there); the case's own one otherwise, once the Secret is pointed back at it.
    let first = observe::snapshot_files(ctx, "snapshot-ls", &id).await;
    let read = match first {
        Ok(files) if !files.is_empty() => Ok(files),
        _ => {
            heal_repository(ctx).await?;
            observe::snapshot_files(ctx, "snapshot-ls-case-repo", &id).await
        }
    };
    Ok(Some(match read {
        Ok(files) => SnapshotRead {
            id,
            files: Some(files),
            error: None,
        },
        Err(e) => SnapshotRead {
            id,
            files: None,
            error: Some(e.to_string()),
        },
    }))
}

/// Points the repository Secret back at the case's repository, with its password.
async fn heal_repository(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let url = fixture::repository_url(ctx)?;
    crate::fixture::inject::set_repository_secret(ctx, Some(&url), Some(fixture::RESTIC_PASSWORD))
        .await?;
    Ok(())
}

/// The invariants' view of what the schedule's cluster committed and the game logged.
fn trace_of(
    changes: &[Recorded],
    audit: Option<&observe::AuditLog>,
    faults_stopped_at: Option<jiff::Timestamp>,
    ctx: &CaseContext<'_>,
) -> BackupTrace {
    let game_pod = names::pod(SERVER);
    let copy_job = names::backup_job(BACKUP);
    let changes = crate::evidence::invariants::history::backup_changes(
        changes,
        &crate::evidence::invariants::history::BackupNames {
            backup: BACKUP,
            game_pod: &game_pod,
            game_container: names::containers::GAME,
            copy_job: &copy_job,
            quiesce_attempted: names::annotations::QUIESCE_ATTEMPTED,
            preparation_deadline: names::annotations::PREPARATION_DEADLINE,
        },
    );
    let audit_entries = audit
        .map(|log| {
            log.lines
                .iter()
                .filter_map(|l| {
                    Some(AuditEntry {
                        at: l.time.parse().ok()?,
                        incarnation: l.incarnation.clone(),
                        event: l.event.clone(),
                        command: l.command.clone(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    BackupTrace {
        backup: BACKUP.to_string(),
        quiesce: true,
        changes,
        audit: audit_entries,
        audit_read: audit.is_some(),
        faults_stopped_at,
        bound_ms: ctx.bounds.settle.as_millis() as u64,
        observed_until: jiff::Timestamp::now(),
        claims: Vec::new(),
        snapshot: None,
        perturbation: None,
        run_state_before: None,
        run_state_after: None,
        audit_error: None,
        data_scope: None,
        reference_end: None,
    }
}
