//! The Restore controller: stop the target, make its world and extra claims hold exactly the
//! snapshot, return it to the run state it had (CONTRACT A "Restore", B2, B3).
//!
//! The claims are never deleted: the restore Job empties and refills them in place, so the PVC
//! UIDs before and after are the same. The target's prior `spec.suspend` is written to an
//! annotation before the target is touched, so a restarted operator still returns it.
//!
//! A Restore that has not ended carries a cleanup finalizer: deleted mid-way, its Job and the
//! Job's pods are stopped and the server gets its run state back before the object goes (found
//! by `rehearse explore`: without it, a Restore deleted while its Job ran was removed at once,
//! its worker pod went on writing the claims, and a running server stayed suspended).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gameplane_api::conditions::{self, reasons, types};
use gameplane_api::names::{self, annotations as ann, finalizers, labels};
use gameplane_api::{
    Backup, BackupPhase, GameServer, GameTemplate, Restore, RestorePhase, RestoreStatus,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use kube::api::{Api, DeleteParams, ListParams, PropagationPolicy};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::backup::repo_from_secret;
use crate::context::Ctx;
use crate::error::{Error, KubeContext, Result};
use crate::gameserver::children::extra_names;
use crate::kubeutil::{self, get_opt, now};
use crate::mutant::Mutant;
use crate::restic::{self, JobOutcome};

/// Set once the Job finished: `succeeded` or the failure message.
const OUTCOME: &str = "restore.gameplane.local/outcome";
/// Set by the `restore-recreates-pvc` mutant after it deleted the claims.
const PVCS_DELETED: &str = "restore.gameplane.local/pvcs-deleted";

/// Reconciles one Restore.
pub async fn reconcile(cached: Arc<Restore>, ctx: Arc<Ctx>) -> Result<Action> {
    let ns = kubeutil::namespace_of(cached.as_ref())?;
    let api: Api<Restore> = Api::namespaced(ctx.client.clone(), &ns);
    let Some(restore) = kubeutil::latest(&api, cached.as_ref()).await? else {
        return Ok(Action::await_change());
    };
    let run = Run::new(&restore, &ctx)?;
    if restore.metadata.deletion_timestamp.is_some() {
        return run.finalize().await;
    }
    let phase = restore.status.as_ref().and_then(|s| s.phase);
    match phase {
        // Ended (an operator restarted between the end and the finalizer's removal): nothing
        // is owed any more.
        Some(p) if p.is_terminal() => {
            run.remove_finalizer().await?;
            Ok(Action::await_change())
        }
        _ if !run.has_finalizer() => {
            run.add_finalizer().await?;
            Ok(Action::requeue(Duration::ZERO))
        }
        None => {
            let status = RestoreStatus {
                phase: Some(RestorePhase::Pending),
                start_time: Some(now()),
                observed_generation: restore.metadata.generation,
                ..Default::default()
            };
            run.patch_status(&status).await?;
            Ok(Action::requeue(Duration::ZERO))
        }
        Some(RestorePhase::Pending) => run.pending().await,
        Some(RestorePhase::Suspending) => run.suspending().await,
        Some(RestorePhase::Running) => run.running().await,
        Some(RestorePhase::Resuming) => run.resuming().await,
        Some(_) => Ok(Action::await_change()),
    }
}

struct Run<'a> {
    ctx: &'a Ctx,
    restore: &'a Restore,
    ns: String,
    name: String,
    server: String,
    status: RestoreStatus,
    restores: Api<Restore>,
    servers: Api<GameServer>,
}

impl<'a> Run<'a> {
    fn new(restore: &'a Restore, ctx: &'a Ctx) -> Result<Self> {
        let ns = kubeutil::namespace_of(restore)?;
        let client = ctx.client.clone();
        Ok(Run {
            ctx,
            restore,
            name: restore.name_any(),
            server: restore.spec.server_ref.name.clone(),
            status: restore.status.clone().unwrap_or_default(),
            restores: Api::namespaced(client.clone(), &ns),
            servers: Api::namespaced(client, &ns),
            ns,
        })
    }

    fn recheck(&self) -> Action {
        Action::requeue(self.ctx.settings.recheck_interval)
    }

    fn has_finalizer(&self) -> bool {
        self.restore
            .finalizers()
            .iter()
            .any(|f| f == finalizers::RESTORE_CLEANUP)
    }

    /// Writes the finalizer list, on condition that the object is still at `resource_version`
    /// (a list changed meanwhile is retried).
    async fn set_finalizers(
        &self,
        list: Vec<String>,
        resource_version: Option<String>,
    ) -> Result<()> {
        let patch = json!({ "metadata": {
            "finalizers": list,
            "resourceVersion": resource_version,
        }});
        kubeutil::merge_patch(&self.restores, &self.ns, &self.name, patch).await
    }

    /// Adds the cleanup finalizer before the Restore touches anything.
    async fn add_finalizer(&self) -> Result<()> {
        let mut list = self.restore.finalizers().to_vec();
        list.push(finalizers::RESTORE_CLEANUP.to_string());
        self.set_finalizers(list, self.restore.metadata.resource_version.clone())
            .await
    }

    /// Removes the cleanup finalizer (read again: the caller may have written to the object).
    async fn remove_finalizer(&self) -> Result<()> {
        let Some(now) = get_opt(&self.restores, &self.ns, &self.name).await? else {
            return Ok(());
        };
        if !now
            .finalizers()
            .iter()
            .any(|f| f == finalizers::RESTORE_CLEANUP)
        {
            return Ok(());
        }
        let rest = now
            .finalizers()
            .iter()
            .filter(|f| *f != finalizers::RESTORE_CLEANUP)
            .cloned()
            .collect();
        self.set_finalizers(rest, now.metadata.resource_version.clone())
            .await
    }

    /// A deleted Restore: stops its Job and every pod of it, gives the server back its run
    /// state, and only then lets the object go.
    async fn finalize(&self) -> Result<Action> {
        if !self.has_finalizer() {
            return Ok(Action::await_change());
        }
        let ended = self.status.phase.is_some_and(|p| p.is_terminal());
        if !ended {
            if self.stop_job().await? {
                return Ok(self.recheck());
            }
            self.return_run_state().await?;
            tracing::info!(restore = %self.name, namespace = %self.ns,
                "deleted Restore: its Job stopped, the server's run state returned");
        }
        self.remove_finalizer().await?;
        Ok(Action::await_change())
    }

    /// Deletes the restore Job in the foreground and any pod of it; `true` while the Job or one
    /// of its pods exists.
    async fn stop_job(&self) -> Result<bool> {
        let jobs: Api<Job> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let pods: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let job_name = names::restore_job(&self.name);
        let job = get_opt(&jobs, &self.ns, &job_name).await?;
        if let Some(job) = &job
            && job.metadata.deletion_timestamp.is_none()
        {
            let params = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Foreground),
                ..Default::default()
            };
            match jobs.delete(&job_name, &params).await {
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                other => other.map(drop).ctx("delete", "Job", &self.ns, &job_name)?,
            }
        }
        // A pod the Job controller created after the delete is not part of the cascade.
        let lp = ListParams::default().labels(&format!("{}={}", labels::RESTORE, self.name));
        let left = pods
            .list(&lp)
            .await
            .ctx("list pods of", "Job", &self.ns, &job_name)?
            .items;
        for pod in &left {
            if pod.metadata.deletion_timestamp.is_none() {
                kubeutil::delete_background(&pods, &self.ns, &pod.name_any()).await?;
            }
        }
        Ok(job.is_some() || !left.is_empty())
    }

    /// Gives the server back the `spec.suspend` it had before the Restore touched it (when it
    /// was touched and still exists).
    async fn return_run_state(&self) -> Result<()> {
        if let Some(prior) = self.restore.annotations().get(ann::RESTORE_PRIOR_SUSPEND)
            && get_opt(&self.servers, &self.ns, &self.server)
                .await?
                .is_some()
        {
            let value = match prior.as_str() {
                "true" => json!(true),
                "false" => json!(false),
                _ => serde_json::Value::Null,
            };
            let patch = json!({ "spec": { "suspend": value } });
            kubeutil::merge_patch(&self.servers, &self.ns, &self.server, patch).await?;
        }
        Ok(())
    }

    async fn patch_status(&self, status: &RestoreStatus) -> Result<()> {
        kubeutil::patch_status(&self.restores, &self.ns, &self.name, status).await
    }

    async fn set_phase(&self, phase: RestorePhase, message: String) -> Result<Action> {
        let mut status = self.status.clone();
        status.phase = Some(phase);
        status.message = Some(message);
        self.patch_status(&status).await?;
        Ok(Action::requeue(Duration::ZERO))
    }

    async fn backup(&self) -> Result<Option<Backup>> {
        let backups: Api<Backup> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        get_opt(&backups, &self.ns, &self.restore.spec.backup_ref.name).await
    }

    /// Pending: check the Backup and the target, remember the target's run state.
    async fn pending(&self) -> Result<Action> {
        let backup_name = &self.restore.spec.backup_ref.name;
        let Some(backup) = self.backup().await? else {
            let msg = format!(
                "Backup {}/{backup_name} not found: fix spec.backupRef.name",
                self.ns
            );
            return self.finish(false, reasons::INVALID_REFERENCE, msg).await;
        };
        let snapshot = backup.status.as_ref().and_then(|s| s.snapshot_id.clone());
        match (backup.phase(), snapshot) {
            (Some(BackupPhase::Succeeded), Some(snapshot)) => {
                let Some(server) = get_opt(&self.servers, &self.ns, &self.server).await? else {
                    let msg = format!(
                        "GameServer {}/{} not found: a restic restore overwrites an existing server",
                        self.ns, self.server
                    );
                    return self.finish(false, reasons::INVALID_REFERENCE, msg).await;
                };
                if self.ctx.mutant(Mutant::CanaryBlocksRestore)
                    && let Some(holder) = self.rollout_lock_holder(&server).await?
                {
                    // The defect: a halted rollout's canary holds the template's lock for ever.
                    let mut status = self.status.clone();
                    status.message = Some(format!(
                        "waiting for the rollout of template {} to finish (GameServer {holder})",
                        server.spec.template_ref.name
                    ));
                    if status != self.status {
                        self.patch_status(&status).await?;
                    }
                    return Ok(self.recheck());
                }
                if !self
                    .restore
                    .annotations()
                    .contains_key(ann::RESTORE_PRIOR_SUSPEND)
                {
                    let prior = match server.spec.suspend {
                        Some(true) => "true",
                        Some(false) => "false",
                        None => "absent",
                    };
                    kubeutil::annotate(
                        &self.restores,
                        &self.ns,
                        &self.name,
                        BTreeMap::from([(ann::RESTORE_PRIOR_SUSPEND, Some(prior.to_string()))]),
                    )
                    .await?;
                }
                let mut status = self.status.clone();
                status.phase = Some(RestorePhase::Suspending);
                status.snapshot_id = Some(snapshot);
                status.message = Some(format!("stopping GameServer {}", self.server));
                self.patch_status(&status).await?;
                Ok(Action::requeue(Duration::ZERO))
            }
            (Some(BackupPhase::Failed), _) | (Some(BackupPhase::Succeeded), None) => {
                let msg =
                    format!("Backup {backup_name} has no usable snapshot: restore another Backup");
                self.finish(false, reasons::INVALID_REFERENCE, msg).await
            }
            _ => Ok(self.recheck()),
        }
    }

    /// The `canary-blocks-restore` defect's lock: another server of `target`'s template that is
    /// Failed on a version other than `target`'s (what a halted canary looks like).
    async fn rollout_lock_holder(&self, target: &GameServer) -> Result<Option<String>> {
        let servers =
            self.servers
                .list(&Default::default())
                .await
                .ctx("list", "GameServer", &self.ns, "")?;
        Ok(servers
            .items
            .into_iter()
            .find(|s| {
                s.metadata.name != target.metadata.name
                    && s.spec.template_ref.name == target.spec.template_ref.name
                    && s.spec.version != target.spec.version
                    && s.status
                        .as_ref()
                        .and_then(|st| st.phase)
                        .map(|p| p.as_str())
                        == Some("Failed")
            })
            .and_then(|s| s.metadata.name))
    }

    /// Suspending: stop the target and wait until its pod is gone, then start the Job.
    async fn suspending(&self) -> Result<Action> {
        let Some(server) = get_opt(&self.servers, &self.ns, &self.server).await? else {
            let msg = format!(
                "GameServer {}/{} disappeared during the restore",
                self.ns, self.server
            );
            return self.finish(false, reasons::INVALID_REFERENCE, msg).await;
        };
        if !server.suspended() {
            let patch = json!({ "spec": { "suspend": true } });
            kubeutil::merge_patch(&self.servers, &self.ns, &self.server, patch).await?;
        }
        let pods: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        if get_opt(&pods, &self.ns, &names::pod(&self.server))
            .await?
            .is_some()
        {
            return Ok(self.recheck());
        }
        let templates: Api<GameTemplate> = Api::all(self.ctx.client.clone());
        let template = get_opt(&templates, "", &server.spec.template_ref.name).await?;
        let extras = extra_names(&server, template.as_ref());
        // `restore-skips-extras` defect: only the world claim is restored.
        let claims = restic::claims(
            &self.server,
            &extras,
            !self.ctx.mutant(Mutant::RestoreSkipsExtras),
        );
        if self.ctx.mutant(Mutant::RestoreRecreatesPvc) && !self.recreate_claims(&claims).await? {
            return Ok(self.recheck());
        }
        let Some(backup) = self.backup().await? else {
            let msg = format!(
                "Backup {} disappeared during the restore",
                self.restore.spec.backup_ref.name
            );
            return self.finish(false, reasons::INVALID_REFERENCE, msg).await;
        };
        let Some(repo_ref) = backup.spec.repo_ref.clone() else {
            return self
                .finish(
                    false,
                    reasons::INVALID_REFERENCE,
                    "the Backup names no repoRef".into(),
                )
                .await;
        };
        let secrets: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let repo = match repo_from_secret(&secrets, &self.ns, &repo_ref.name, &repo_ref.key).await?
        {
            Ok(repo) => repo,
            Err(msg) => return self.finish(false, reasons::INVALID_REFERENCE, msg).await,
        };
        let snapshot = self.status.snapshot_id.clone().unwrap_or_default();
        let paths: Vec<String> = claims.iter().map(|c| c.path.clone()).collect();
        let owner = self
            .restore
            .controller_owner_ref(&())
            .ok_or_else(|| Error::MissingField {
                kind: "Restore",
                name: self.name.clone(),
                field: "metadata.uid",
            })?;
        let job = restic::job(restic::JobRequest {
            name: names::restore_job(&self.name),
            namespace: &self.ns,
            owner,
            labels: BTreeMap::from([
                (labels::RESTORE.to_string(), self.name.clone()),
                (labels::COMPONENT.to_string(), "restore".to_string()),
            ]),
            image: &self.ctx.settings.restic_image,
            repo: &repo,
            claims,
            read_only: false,
            script: restic::restore_script(
                // `restore-latest-snapshot` defect: the server's newest snapshot, whichever
                // Backup made it.
                if self.ctx.mutant(Mutant::RestoreLatestSnapshot) {
                    restic::Selection::LatestOfServer(&self.server)
                } else {
                    restic::Selection::Id(&snapshot)
                },
                &paths,
                !self.ctx.mutant(Mutant::RestoreOverlays),
                self.ctx.mutant(Mutant::RestoreFailureWipesClaims),
            ),
        });
        let jobs: Api<Job> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        kubeutil::create_if_absent(&jobs, &job).await?;
        self.set_phase(
            RestorePhase::Running,
            format!("restore Job {} runs", names::restore_job(&self.name)),
        )
        .await
    }

    /// The `restore-recreates-pvc` defect: delete the claims, wait for the server controller to
    /// create new ones. Returns whether new claims exist.
    async fn recreate_claims(&self, claims: &[restic::Claim]) -> Result<bool> {
        let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        if !self.restore.annotations().contains_key(PVCS_DELETED) {
            for claim in claims {
                kubeutil::delete_background(&pvcs, &self.ns, &claim.pvc).await?;
            }
            kubeutil::annotate(
                &self.restores,
                &self.ns,
                &self.name,
                BTreeMap::from([(PVCS_DELETED, Some("true".into()))]),
            )
            .await?;
            return Ok(false);
        }
        for claim in claims {
            match get_opt(&pvcs, &self.ns, &claim.pvc).await? {
                Some(p) if p.metadata.deletion_timestamp.is_none() => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Running: wait for the Job.
    async fn running(&self) -> Result<Action> {
        let jobs: Api<Job> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let job_name = names::restore_job(&self.name);
        let outcome = match get_opt(&jobs, &self.ns, &job_name).await? {
            None => Some(format!(
                "restore Job {job_name} disappeared before it finished"
            )),
            Some(job) => match restic::outcome(&job) {
                JobOutcome::Running => return Ok(self.recheck()),
                JobOutcome::Succeeded => None,
                // `restore-failure-reported-succeeded` defect: a failed Job counts as done.
                JobOutcome::Failed if self.ctx.mutant(Mutant::RestoreFailureReportedSucceeded) => {
                    None
                }
                JobOutcome::Failed => Some(format!("restore Job {job_name} failed")),
            },
        };
        let value = outcome.clone().unwrap_or_else(|| "succeeded".into());
        kubeutil::annotate(
            &self.restores,
            &self.ns,
            &self.name,
            BTreeMap::from([(OUTCOME, Some(value))]),
        )
        .await?;
        let message = outcome
            .unwrap_or_else(|| "claims restored; returning the server to its prior state".into());
        self.set_phase(RestorePhase::Resuming, message).await
    }

    /// Resuming: give the server back its prior `spec.suspend`.
    async fn resuming(&self) -> Result<Action> {
        let outcome = self
            .restore
            .annotations()
            .get(OUTCOME)
            .cloned()
            .unwrap_or_default();
        if outcome == "succeeded" {
            self.finish(
                true,
                reasons::SUCCEEDED,
                format!(
                    "restored snapshot {} into {}",
                    self.status.snapshot_id.as_deref().unwrap_or_default(),
                    self.server
                ),
            )
            .await
        } else {
            self.finish(false, reasons::COPY_FAILED, outcome).await
        }
    }

    /// Returns the server to its prior run state (if it was touched) and ends the Restore.
    async fn finish(&self, ok: bool, reason: &str, message: String) -> Result<Action> {
        // `restore-failure-keeps-suspended` defect: a failed restore leaves the server stopped.
        let keep_stopped = !ok && self.ctx.mutant(Mutant::RestoreFailureKeepsSuspended);
        if !keep_stopped {
            self.return_run_state().await?;
        }
        let mut status = self.status.clone();
        let t = now();
        status.phase = Some(if ok {
            RestorePhase::Succeeded
        } else {
            RestorePhase::Failed
        });
        status.completion_time = Some(t.clone());
        status.message = Some(message.clone());
        conditions::set(
            &mut status.conditions,
            types::COMPLETED,
            ok,
            reason,
            &message,
            self.restore.metadata.generation,
            t,
        );
        self.patch_status(&status).await?;
        // Ended: its Job finished, nothing is owed any more.
        self.remove_finalizer().await?;
        Ok(Action::await_change())
    }
}
