//! The fleet as a fresh read of the cluster shows it once a qualification ended — what its
//! report states and what its own invariants (way back, truth: [`crate::evidence::invariants::way_back`])
//! are judged against, never the procedure's memory.

use gameplane_api::backup::Backup;
use kube::api::{Api, ListParams};

use crate::context::{CaseContext, CaseError};
use crate::evidence::invariants::way_back::{BackupNow, FleetRead, ServerNow, TakenBackup};
use crate::evidence::qualification::{MemberBaseline, Plan, Qualification};
use crate::qualify::access::{get_server_opt, members};
use crate::qualify::tidy;

/// Each observed server (the fleet and the source) and the clone, re-read into `q.after`
/// (versions, pod UIDs, PVC UIDs; no world digests). Plain reads: it runs after an interrupt
/// too, and after a second signal dropped the procedure.
pub async fn read_after(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
) -> Result<(), CaseError> {
    let mut servers = plan.observed();
    servers.push(q.clone.clone());
    q.after = members(ctx, plan, &servers, false).await?;
    Ok(())
}

/// The observed servers of `read` as `q.after` records them (versions, pod UIDs, PVC UIDs; a
/// server the read did not find, with none); the clone's entry is left as it was.
pub fn into_after(q: &mut Qualification, plan: &Plan, read: &FleetRead) {
    for server in plan.observed() {
        let now = read.server(&server);
        let entry = MemberBaseline {
            server: server.clone(),
            version: now.and_then(|s| s.version.clone()),
            pod_uid: now.and_then(|s| s.pod_uid.clone()),
            pvcs: now.map(|s| s.pvcs.clone()).unwrap_or_default(),
            digests: std::collections::BTreeMap::new(),
        };
        match q.after.iter_mut().find(|m| m.server == server) {
            Some(m) => *m = entry,
            None => q.after.push(entry),
        }
    }
}

/// A fresh read of the fleet, every Backup in the namespace and (when the run took any
/// pre-promotion Backup, `taken`) the repository's snapshots of them.
pub async fn read(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    taken: &[TakenBackup],
) -> Result<FleetRead, CaseError> {
    let observed = plan.observed();
    let seen = members(ctx, plan, &observed, false).await?;
    let mut servers = Vec::new();
    for m in seen {
        let Some(gs) = get_server_opt(ctx, &m.server).await? else {
            continue;
        };
        servers.push(ServerNow {
            pod_uid: m.pod_uid,
            pvcs: m.pvcs,
            ..tidy::server_now(&gs)
        });
    }
    let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let backups = api
        .list(&ListParams::default())
        .await
        .map_err(CaseError::kube("list Backups", ctx.namespace.clone()))?
        .items
        .into_iter()
        .map(|b| BackupNow {
            name: kube::ResourceExt::name_any(&b),
            server: b.spec.server_ref.name.clone(),
            phase: b
                .status
                .as_ref()
                .and_then(|s| s.phase)
                .map(|p| format!("{p:?}")),
            snapshot: b.status.and_then(|s| s.snapshot_id),
        })
        .collect();
    // Listed whenever a way back may be needed: the run took a pre-promotion Backup, or a
    // member runs a version it did not run before (a killed run's).
    let moved = taken.len()
        + servers
            .iter()
            .filter(|s| s.version.as_deref() == Some(plan.candidate.as_str()))
            .count();
    // (Not listed when no way back can be needed: nothing then looks a snapshot up.)
    let snapshots = if moved == 0 {
        None
    } else {
        repository_snapshots(ctx, plan).await
    };
    Ok(FleetRead {
        servers,
        backups,
        snapshots,
    })
}

/// Every snapshot id the plan's repository lists (`None`: it could not be listed — the way back
/// is then unknown, never assumed). All of them, not only the run's: a member a killed run left
/// on the candidate has its way back in an earlier run's snapshot, and a user's own Backup
/// restores as well.
async fn repository_snapshots(ctx: &CaseContext<'_>, plan: &Plan) -> Option<Vec<String>> {
    use crate::probe::restic;
    let pod = restic::pod(
        &format!(
            "rehearsal-way-back-{}",
            plan.run_id.to_lowercase().replace(['_', '.'], "-")
        ),
        &plan.repo_secret,
        &restic::snapshots_script(&[], false),
        &tidy::labels(&plan.run_id),
    );
    let output = restic::run(&ctx.client, &ctx.namespace, &pod, ctx.bounds.settle)
        .await
        .ok()?;
    restic::parse_snapshots(&output, false).ok()
}
