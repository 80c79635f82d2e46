//! The restore operation as an exploration schedule: one server, asleep (idle), backed up, its
//! claims changed after the backup and backed up again, then one Restore from the *first*
//! Backup — and (unless it is the reference run) one fault placed before one of the operator's
//! writes to the Restore or its Job. Whatever happens, the schedule ends by judging the run with
//! the restore invariants ([`crate::evidence::invariants::restore`]).
//!
//! The server sleeps throughout (no pod; `spec.suspend` unset, which a restore sets while it
//! works and must unset again), so nothing but the restore writes its claims: what they hold is
//! compared path by path — hidden files, nested directories and symlinks included — with the
//! snapshot and with what they held before. The second, newer Backup is there so a restore
//! that takes the server's latest snapshot instead of the one it was asked for is seen.

use std::collections::BTreeMap;
use std::sync::Arc;

use gameplane_api::backup::BackupPhase;
use gameplane_api::names;
use gameplane_api::restore::Restore;
use kube::Api;
use serde_json::{Value, json};

use super::Fault;
use super::observer::{Observer, Recorded, ReleaseOnDrop};
use crate::context::{CaseContext, CaseError};
use crate::evidence::invariants::restore::{
    self as inv, ClaimState, Contents, RestoreCommitted, RestoreTrace,
};
use crate::evidence::pvc_table::Role;
use crate::fixture::backup;
use crate::fixture::{self, FixtureOptions};
use crate::wait::{Condition, Progress, WaitError, await_condition};

/// The server every restore schedule restores.
const SERVER: &str = "mc";
/// The Backup it restores from.
const BACKUP: &str = "saved";
/// A newer Backup of the same server, taken after the claims changed.
const LATER: &str = "later";
/// The Restore every restore schedule creates.
pub const RESTORE: &str = "back";
/// The operator's writes that are a restore's points: the Restore (annotations, status) and
/// its Job.
pub const POINT_RESOURCES: &[&str] = &["restores", "jobs"];

/// Files the schedule writes into every claim before the backup: a nested file, a hidden file
/// and a symlink (the game's own files are there too).
fn plant_before(claims: &[String]) -> String {
    let mut s = String::from("set -e\n");
    for c in claims {
        s.push_str(&format!(
            "mkdir -p /v/{c}/nested/deeper\necho before-{c} > /v/{c}/nested/deeper/value.txt\necho hidden > /v/{c}/.hidden-before\nln -sfn nested/deeper/value.txt /v/{c}/link-before\n"
        ));
    }
    s.push_str("echo planted\n");
    s
}

/// What changes after the backup: a value rewritten, a hidden file and a link removed, new
/// files (hidden, nested) made.
fn plant_after(claims: &[String]) -> String {
    let mut s = String::from("set -e\n");
    for c in claims {
        s.push_str(&format!(
            "echo after-{c} > /v/{c}/nested/deeper/value.txt\nrm -f /v/{c}/.hidden-before /v/{c}/link-before\nmkdir -p /v/{c}/made-after/x\necho later > /v/{c}/made-after/x/.later\necho later > /v/{c}/.hidden-after\n"
        ));
    }
    s.push_str("echo planted\n");
    s
}

/// Lists every path of every claim as [`inv::parse_listing`] reads it.
fn listing_script(claims: &[String]) -> String {
    let mut s = String::new();
    for c in claims {
        s.push_str(&format!(
            "cd /v/{c} || exit 3\nfind . -mindepth 1 | sort | while IFS= read -r p; do\n  if [ -L \"$p\" ]; then printf '%s\\tlink\\t%s\\t%s\\n' {c} \"$p\" \"$(readlink \"$p\")\"\n  elif [ -d \"$p\" ]; then printf '%s\\tdir\\t%s\\n' {c} \"$p\"\n  else printf '%s\\tfile\\t%s\\t%s\\n' {c} \"$p\" \"$(sha256sum \"$p\" | cut -d' ' -f1)\"\n  fi\ndone\nprintf '%s\\tend\\n' {c}\n"
        ));
    }
    s
}

/// The server's claims: (world claims, mods claims), by Gameplane's naming.
pub(super) async fn claims(ctx: &CaseContext<'_>) -> Result<(Vec<String>, Vec<String>), CaseError> {
    let pvcs = fixture::server_pvcs(ctx, SERVER).await?;
    let of = |roles: &[Role]| -> Vec<String> {
        pvcs.iter()
            .filter(|p| roles.contains(&p.role))
            .map(|p| p.claim.clone())
            .collect()
    };
    Ok((
        of(&[Role::PrimaryWorld, Role::ExtraWorld]),
        of(&[Role::RebuildableMods]),
    ))
}

/// Reads every path of `claims` (a probe pod), with each claim's UID.
async fn read_claims(
    ctx: &CaseContext<'_>,
    pod: &str,
    claims: &[String],
) -> Result<BTreeMap<String, ClaimState>, CaseError> {
    let text = fixture::volume_script(ctx, pod, claims, &listing_script(claims)).await?;
    let mut contents = inv::parse_listing(&text, claims)
        .map_err(|e| CaseError::Setup(format!("read the claims ({pod}): {e}")))?;
    let uids: BTreeMap<String, String> = fixture::server_pvcs(ctx, SERVER)
        .await?
        .into_iter()
        .map(|p| (p.claim, p.uid))
        .collect();
    Ok(claims
        .iter()
        .map(|c| {
            (
                c.clone(),
                ClaimState {
                    uid: uids.get(c).cloned().unwrap_or_default(),
                    contents: contents.remove(c).unwrap_or_default(),
                },
            )
        })
        .collect())
}

/// The server's run state: `suspend=<true|false|absent> asleep=<true|false>`.
pub(super) async fn run_state(ctx: &CaseContext<'_>) -> Result<String, CaseError> {
    let api: Api<gameplane_api::gameserver::GameServer> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let gs = api.get(SERVER).await.map_err(CaseError::kube(
        "get GameServer",
        format!("{}/{SERVER}", ctx.namespace),
    ))?;
    let suspend = match gs.spec.suspend {
        Some(true) => "true",
        Some(false) => "false",
        None => "absent",
    };
    Ok(format!("suspend={suspend} asleep={}", gs.idle_asleep()))
}

/// Puts the server to sleep (idle) and waits until its pod is gone.
pub(super) async fn put_to_sleep(ctx: &CaseContext<'_>) -> Result<Value, CaseError> {
    crate::faults::set_idle_asleep(&ctx.client, &ctx.namespace, SERVER).await?;
    fixture::await_server_phase(ctx, SERVER, "Stopped").await?;
    let pods: Api<k8s_openapi::api::core::v1::Pod> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    await_condition(
        &pods,
        &names::pod(SERVER),
        crate::wait::conditions::deleted(),
        ctx.bounds.settle,
    )
    .await?;
    Ok(json!({"server": SERVER, "phase": "Stopped", "pod": "absent"}))
}

/// Creates Backup `name` of the server and waits for it to succeed; its snapshot id.
async fn backed_up(ctx: &CaseContext<'_>, name: &str) -> Result<String, CaseError> {
    fixture::create_backup(ctx, name, SERVER, true).await?;
    let (b, _) = backup::await_backup(ctx, name).await?;
    let phase = b.status.as_ref().and_then(|s| s.phase);
    let snapshot = b.status.as_ref().and_then(|s| s.snapshot_id.clone());
    match (phase, snapshot) {
        (Some(BackupPhase::Succeeded), Some(id)) => {
            ctx.recorder.restic_snapshot(
                &format!("back up ({name})"),
                &id,
                json!({"backup": name}),
            )?;
            Ok(id)
        }
        (phase, _) => Err(CaseError::Setup(format!(
            "Backup {name} ended {} ({}): nothing to restore, so the restore cannot be explored",
            phase.map_or_else(|| "without a phase".to_string(), |p| format!("{p:?}")),
            b.status
                .as_ref()
                .and_then(|s| s.message.clone())
                .unwrap_or_default()
        ))),
    }
}

/// The operation is over: the Restore is terminal and nobody asked to delete it, or it is gone.
fn operation_over() -> Condition<Restore> {
    Condition::new(
        "Restore terminal (not being deleted), or gone",
        |r: Option<&Restore>| match r {
            None => Progress::Met,
            Some(r) => {
                let terminal = r
                    .status
                    .as_ref()
                    .and_then(|s| s.phase)
                    .is_some_and(|p| p.is_terminal());
                if terminal && r.metadata.deletion_timestamp.is_none() {
                    Progress::Met
                } else {
                    Progress::Pending
                }
            }
        },
    )
}

/// What a restore schedule set up before its Restore.
struct Prepared {
    /// Every claim of the server (world claims first), and the mods claims among them.
    all: Vec<String>,
    mods: Vec<String>,
    /// The world claims as the first Backup holds them.
    snapshot: BTreeMap<String, Contents>,
    /// The two Backups' snapshot ids (the one restored, the newer one).
    saved: String,
    later: String,
    /// Every claim, and the server's run state, just before the Restore.
    before: BTreeMap<String, ClaimState>,
    run_state_before: String,
}

/// A sleeping server with files planted, backed up, changed and backed up again.
async fn prepare(ctx: &CaseContext<'_>) -> Result<Prepared, CaseError> {
    backup::running_server(ctx, FixtureOptions::default()).await?;
    ctx.step("put the server to sleep (idle)", put_to_sleep(ctx))
        .await?;
    let (world, mods) = ctx.step("find claims", claims(ctx)).await?;
    let all: Vec<String> = world.iter().chain(&mods).cloned().collect();
    ctx.step("plant files before the backup", async {
        fixture::volume_script(ctx, "plant-before", &all, &plant_before(&all)).await
    })
    .await?;
    let snapshot = ctx
        .step("read the claims as backed up", async {
            let read = read_claims(ctx, "read-backed-up", &world).await?;
            Ok(read
                .into_iter()
                .map(|(c, s)| (c, s.contents))
                .collect::<BTreeMap<String, Contents>>())
        })
        .await?;
    let saved = ctx.step("back up", backed_up(ctx, BACKUP)).await?;
    ctx.step("change the claims after the backup", async {
        fixture::volume_script(ctx, "plant-after", &all, &plant_after(&all)).await
    })
    .await?;
    let later = ctx
        .step("back up again (newer snapshot)", backed_up(ctx, LATER))
        .await?;
    let before = ctx
        .step("read the claims before the restore", async {
            read_claims(ctx, "read-before", &all).await
        })
        .await?;
    let run_state_before = run_state(ctx).await?;
    Ok(Prepared {
        all,
        mods,
        snapshot,
        saved,
        later,
        before,
        run_state_before,
    })
}

/// Runs one restore schedule; `hold` is the write (its label and occurrence) and
/// fault, `None` for the reference run. The observer must be the cluster's request hook.
pub(crate) async fn schedule(
    ctx: &CaseContext<'_>,
    observer: Arc<Observer>,
    hold: Option<&(super::Place, Fault)>,
) -> Result<super::Ran, CaseError> {
    observer.watch(&ctx.namespace);
    let Prepared {
        all,
        mods,
        snapshot,
        saved,
        later,
        before,
        run_state_before,
    } = prepare(ctx).await?;
    let reached = observer.begin(
        POINT_RESOURCES,
        &names::restore_job(RESTORE),
        hold.map(|(place, _)| place.clone()),
    );
    let _release = ReleaseOnDrop(observer.clone());
    ctx.step(
        "create restore",
        fixture::create_restore(ctx, RESTORE, BACKUP, SERVER),
    )
    .await?;
    let restores: Api<Restore> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let (placed, faults_stopped_at) = super::place_fault(
        ctx,
        &observer,
        super::Operation::Restore,
        reached,
        hold,
        await_condition(&restores, RESTORE, operation_over(), ctx.bounds.settle),
        crate::fixture::inject::Target {
            server: SERVER,
            resource: "restores",
            object: RESTORE,
            stale_as_of: None,
            resources: POINT_RESOURCES,
        },
    )
    .await?;
    let settled = ctx
        .step("await restore over", async {
            match await_condition(&restores, RESTORE, operation_over(), ctx.bounds.settle).await {
                Ok(_) => Ok(json!({"over": true})),
                // Liveness judges a Restore that never ends; the claims are read either way.
                Err(e @ WaitError::TimedOut { .. }) => {
                    Ok(json!({"over": false, "wait": e.to_string()}))
                }
                Err(e) => Err(e.into()),
            }
        })
        .await?;
    observer.freeze();
    let after = ctx
        .step("read the claims after the restore", async {
            Ok(read_claims(ctx, "read-after", &all).await.ok())
        })
        .await?;
    let run_state_after = run_state(ctx).await.ok();
    let trace = RestoreTrace {
        restore: RESTORE.to_string(),
        changes: trace_of(&observer.changes()),
        snapshot,
        before,
        after,
        mods,
        run_state_before,
        run_state_after,
        faults_stopped_at,
        bound_ms: ctx.bounds.settle.as_millis() as u64,
        observed_until: jiff::Timestamp::now(),
        perturbation: None,
        reference_end: None,
    };
    Ok(super::Ran {
        schedule: placed.perturbation(super::Operation::Restore, hold),
        placement: placed.placement(hold, &observer.points()),
        object: format!("restore {}/{RESTORE}", ctx.namespace),
        history: json!({"placed": placed, "settled": settled, "snapshot": saved,
                        "newer_snapshot": later, "points": observer.points()}),
        trace: crate::evidence::invariants::schedule::Trace::Restore(Box::new(trace)),
    })
}

/// The invariants' view of the Restore's and its worker pods' committed states.
fn trace_of(changes: &[Recorded]) -> Vec<RestoreCommitted> {
    crate::evidence::invariants::history::restore_changes(
        changes,
        RESTORE,
        &names::restore_job(RESTORE),
    )
}
