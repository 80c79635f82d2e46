//! Step 3: back up the source, create its clone (suspended, at the previous version, labelled
//! with the run id) and restore the backup into it; [`restore_into`] is also the rollback's
//! restore.

use gameplane_api::backup::{Backup, BackupSpec, RepoRef, ServerRef};
use gameplane_api::gameserver::GameServer;
use gameplane_api::restore::{BackupRef, Restore, RestoreSpec};
use kube::api::{Api, ObjectMeta};
use serde_json::json;

use super::tidy;
use crate::context::{CaseContext, CaseError};
use crate::evidence::pvc_table::PvcPhase;
use crate::evidence::qualification::{Plan, Qualification};
use crate::probe::readback::Readback;
use crate::qualify::access::{await_server_phase, gs_api, read_claims, server_pvcs};
use crate::wait::{await_object, conditions};

/// The clone of `source`: its own spec (template, storage, env, …) at `version`, suspended so
/// the restore finds no running game, labelled with the run id and the server it clones.
pub(super) fn clone_of(
    source: &GameServer,
    clone: &str,
    version: &str,
    run_id: &str,
) -> GameServer {
    let mut spec = source.spec.clone();
    spec.version = Some(version.to_string());
    spec.suspend = Some(true);
    let mut labels = tidy::labels(run_id);
    labels.insert(
        "rehearsal.local/canary-of".into(),
        source.metadata.name.clone().unwrap_or_default(),
    );
    GameServer {
        metadata: ObjectMeta {
            name: Some(clone.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

/// Step 3 of the procedure: backs up the source, creates its clone (suspended, at the previous
/// version), restores the backup into it, and reads what the snapshot put in the clone's world
/// `claims` before the candidate runs: the digests the read-back gate and a restore-required
/// rollback compare against.
pub(super) async fn seed_clone(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
    source: &GameServer,
    previous: &str,
    claims: &[String],
) -> Result<Readback, CaseError> {
    let clone = q.clone.clone();
    let backup_name = plan.backup_name();
    let [clone_restore, _] = plan.restore_names();
    let snapshot = ctx
        .step(
            "back up the source",
            back_up(
                ctx,
                plan,
                &backup_name,
                &plan.source,
                tidy::snapshot_tags(&plan.run_id),
                None,
            ),
        )
        .await?;
    ctx.recorder.restic_snapshot(
        "back up the source",
        &snapshot,
        json!({"backup": backup_name, "server": plan.source}),
    )?;
    ctx.uses("Backup status.snapshotID");
    q.snapshot = Some(snapshot.clone());
    ctx.step("create the clone", async {
        let gs = clone_of(source, &clone, previous, &plan.run_id);
        gs_api(ctx)
            .create(&Default::default(), &gs)
            .await
            .map_err(CaseError::kube(
                "create GameServer",
                format!("{}/{clone}", ctx.namespace),
            ))?;
        await_server_phase(ctx, &clone, "Suspended").await?;
        Ok(json!({"clone": clone, "copied_from": plan.source, "version": previous, "suspended": true}))
    })
    .await?;
    restore_into(
        ctx,
        plan,
        "restore the backup into the clone",
        &clone_restore,
        &backup_name,
        &clone,
    )
    .await?;
    q.clone_pvcs_before = server_pvcs(ctx, &clone).await?;
    ctx.observe_pvcs(PvcPhase::Before, &q.clone_pvcs_before)?;
    // What the snapshot holds, read from the clone's claims before the candidate runs: the
    // digests the read-back gate and a restore-required rollback compare against.
    let restored = ctx
        .step(
            "read the restored world (before the candidate)",
            read_claims(ctx, plan, "restored-read", claims),
        )
        .await?;
    ctx.uses("world digests before and after");
    Ok(restored)
}

pub(super) async fn restore_into(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    step: &str,
    restore_name: &str,
    backup: &str,
    server: &str,
) -> Result<String, CaseError> {
    let id = ctx
        .step(step, restore(ctx, plan, restore_name, backup, server))
        .await?;
    ctx.recorder.restic_restore(
        step,
        restore_name,
        &id,
        json!({"backup": backup, "server": server}),
    )?;
    Ok(id)
}

/// Creates Backup `name` of `server` (quiesced, into the plan's repository, its snapshot
/// tagged `tags`, labelled with the run; with `way_back_of`, a pre-promotion Backup annotated
/// with the version its member ran before) and waits until it succeeded; returns its snapshot.
pub(super) async fn back_up(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    name: &str,
    server: &str,
    tags: Vec<String>,
    way_back_of: Option<&Option<String>>,
) -> Result<String, CaseError> {
    create_backup(ctx, plan, name, server, tags, way_back_of).await?;
    await_backup(ctx, name).await
}

/// Creates Backup `name` of `server` (see [`back_up`]) without waiting for it.
pub(super) async fn create_backup(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    name: &str,
    server: &str,
    tags: Vec<String>,
    way_back_of: Option<&Option<String>>,
) -> Result<(), CaseError> {
    let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut backup = Backup::new(
        name,
        BackupSpec {
            server_ref: ServerRef {
                name: server.to_string(),
            },
            repo_ref: Some(RepoRef {
                name: plan.repo_secret.clone(),
                key: "repo".into(),
            }),
            strategy: None,
            quiesce: Some(true),
            tags,
        },
    );
    backup.metadata.labels = Some(tidy::labels(&plan.run_id));
    if let Some(previous) = way_back_of {
        // A pre-promotion Backup: the clean-up keeps it until its member is back on this version.
        backup.metadata.annotations = Some(std::collections::BTreeMap::from([(
            crate::evidence::invariants::way_back::PREVIOUS_VERSION_ANNOTATION.to_string(),
            previous.clone().unwrap_or_default(),
        )]));
    }
    api.create(&Default::default(), &backup)
        .await
        .map_err(CaseError::kube(
            "create Backup",
            format!("{}/{name}", ctx.namespace),
        ))?;
    Ok(())
}

/// Waits until Backup `name` succeeded; returns its snapshot.
pub(super) async fn await_backup(ctx: &CaseContext<'_>, name: &str) -> Result<String, CaseError> {
    let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let b = await_object(&api, name, conditions::succeeded(), ctx.bounds.settle).await?;
    Ok(b.status.and_then(|s| s.snapshot_id).unwrap_or_default())
}

/// Creates Restore `name` of Backup `backup` into `server` (labelled with the run) and waits
/// until it succeeded; returns the snapshot it restored.
pub(super) async fn restore(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    name: &str,
    backup: &str,
    server: &str,
) -> Result<String, CaseError> {
    let api: Api<Restore> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut r = Restore::new(
        name,
        RestoreSpec {
            backup_ref: BackupRef {
                name: backup.into(),
            },
            server_ref: ServerRef {
                name: server.into(),
            },
        },
    );
    r.metadata.labels = Some(tidy::labels(&plan.run_id));
    api.create(&Default::default(), &r)
        .await
        .map_err(CaseError::kube(
            "create Restore",
            format!("{}/{name}", ctx.namespace),
        ))?;
    let r = await_object(&api, name, conditions::succeeded(), ctx.bounds.settle).await?;
    Ok(r.status.and_then(|s| s.snapshot_id).unwrap_or_default())
}
