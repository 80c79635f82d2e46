//! What outlives one operator process and the Backup object (CONTRACT B4, B6): the persisted
//! preparation deadline, the cleanup finalizer, and the conservative end of a legacy
//! preparation that an older operator left without incarnation fields.
//!
//! Each of these is persisted on the Backup (an annotation, a finalizer) before the operator
//! relies on it, so a restart resumes from the object, never from memory. The mutants that
//! keep them in memory instead (`deadline-in-memory`, `cleanup-lost-on-restart`) use the
//! process-wide maps below.

use std::collections::{BTreeMap, HashMap};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use gameplane_api::conditions::reasons;
use gameplane_api::names::{self, annotations as ann, finalizers};
use gameplane_api::{BackupPhase, Consistency, GameServer, GameTemplate};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::{Ending, Run};
use crate::error::Result;
use crate::incarnation::{self, Observation};
use crate::kubeutil;
use crate::mutant::Mutant;

/// The annotations that make up the cleanup obligation (what was quiesced, whether save-on
/// was confirmed): the `cleanup-lost-on-restart` mutant keeps them in memory only.
const OBLIGATION: [&str; 4] = [
    ann::QUIESCE_ATTEMPTED,
    ann::QUIESCED_AT,
    ann::UNQUIESCED_AT,
    ann::GAME_INCARNATION,
];

/// `(Backup UID, annotation)` → value.
type Memory = HashMap<(String, String), Option<String>>;

/// Where the in-memory mutants keep what must be persisted.
static MEMORY: LazyLock<Mutex<Memory>> = LazyLock::new(Default::default);

impl Run<'_> {
    fn uid(&self) -> String {
        self.backup.metadata.uid.clone().unwrap_or_default()
    }

    /// Whether `key` lives in this process's memory instead of on the Backup (a mutant's defect).
    pub(super) fn in_memory(&self, key: &str) -> bool {
        self.ctx.mutant(Mutant::CleanupLostOnRestart) && OBLIGATION.contains(&key)
    }

    /// `key` as this process remembers it (`in_memory` keys only).
    pub(super) fn remembered(&self, key: &str) -> Option<String> {
        let memory = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
        memory
            .get(&(self.uid(), key.to_string()))
            .cloned()
            .flatten()
    }

    /// Keeps the `in_memory` entries of `values` in memory and returns the rest.
    pub(super) fn remember<'k>(
        &self,
        values: BTreeMap<&'k str, Option<String>>,
    ) -> BTreeMap<&'k str, Option<String>> {
        let mut memory = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
        let uid = self.uid();
        values
            .into_iter()
            .filter(|(k, v)| {
                if self.in_memory(k) {
                    memory.insert((uid.clone(), k.to_string()), v.clone());
                    false
                } else {
                    true
                }
            })
            .collect()
    }

    /// Whether a live source is quiesced: `spec.quiesce` asks for it and the server's template
    /// runs an agent (a disabled agent makes every backup of it a raw copy, CONTRACT B5). A
    /// server that is gone is judged by `spec.quiesce` alone.
    pub(super) async fn quiesces(&self, server: Option<&GameServer>) -> Result<bool> {
        if !self.backup.wants_quiesce() {
            return Ok(false);
        }
        let Some(server) = server else {
            return Ok(true);
        };
        let templates: Api<GameTemplate> = Api::all(self.ctx.client.clone());
        let template = kubeutil::get_opt(&templates, "", &server.spec.template_ref.name).await?;
        Ok(!template.is_some_and(|t| t.agent_disabled()))
    }

    /// How long preparation may wait: the Backup's `preparation-timeout-seconds`, else the
    /// operator's setting.
    fn preparation_timeout(&self) -> Duration {
        self.annotation(ann::PREPARATION_TIMEOUT_SECONDS)
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Duration::from_secs)
            .unwrap_or(self.ctx.settings.preparation_deadline)
    }

    /// Persists the preparation deadline when the Backup is accepted (once: an existing one is
    /// kept, so a restart between this write and the status write does not move it).
    ///
    /// Written on condition of a fresh read (its resourceVersion): a process killed with this
    /// write in flight may have it committed after its successor read the Backup, and an
    /// unconditional write of the successor's own deadline would then move it. The successor's
    /// write is refused instead (409), and its retry reads the deadline that was kept.
    pub(super) async fn persist_deadline(&self) -> Result<()> {
        if self.annotation(ann::PREPARATION_DEADLINE).is_some() {
            return Ok(());
        }
        let Some(fresh) = kubeutil::get_opt(&self.backups, &self.ns, &self.name).await? else {
            return Ok(());
        };
        if fresh.annotations().contains_key(ann::PREPARATION_DEADLINE) {
            return Ok(());
        }
        let deadline = (Timestamp::now() + self.preparation_timeout()).to_string();
        let patch = json!({ "metadata": {
            "annotations": { ann::PREPARATION_DEADLINE: deadline },
            "resourceVersion": fresh.metadata.resource_version,
        }});
        kubeutil::merge_patch(&self.backups, &self.ns, &self.name, patch).await?;
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ann::PREPARATION_DEADLINE.to_string(), Some(deadline));
        Ok(())
    }

    /// The preparation deadline: the persisted one; for a Backup accepted by an operator that
    /// wrote none, its start time plus the timeout.
    pub(super) async fn deadline(&self) -> Result<Timestamp> {
        if self.ctx.mutant(Mutant::DeadlineInMemory) {
            // The defect: the deadline counts from when this process first saw the Backup, and
            // what it shows on the Backup is that memory.
            let key = (self.uid(), ann::PREPARATION_DEADLINE.to_string());
            let deadline = {
                let mut memory = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
                memory
                    .entry(key)
                    .or_insert_with(|| {
                        Some((Timestamp::now() + self.preparation_timeout()).to_string())
                    })
                    .clone()
                    .unwrap_or_default()
            };
            if self.annotation(ann::PREPARATION_DEADLINE).as_deref() != Some(deadline.as_str()) {
                self.annotate(BTreeMap::from([(
                    ann::PREPARATION_DEADLINE,
                    Some(deadline.clone()),
                )]))
                .await?;
            }
            return Ok(deadline.parse().unwrap_or_else(|_| Timestamp::now()));
        }
        if let Some(at) = self
            .annotation(ann::PREPARATION_DEADLINE)
            .and_then(|s| s.parse::<Timestamp>().ok())
        {
            return Ok(at);
        }
        let start = self
            .status
            .start_time
            .as_ref()
            .map_or_else(Timestamp::now, |t| t.0);
        Ok(start + self.preparation_timeout())
    }

    /// Whether the preparation deadline has passed.
    pub(super) async fn past_deadline(&self) -> Result<bool> {
        Ok(Timestamp::now() > self.deadline().await?)
    }

    fn has_finalizer(&self) -> bool {
        self.backup
            .finalizers()
            .iter()
            .any(|f| f == finalizers::BACKUP_CLEANUP)
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
        kubeutil::merge_patch(&self.backups, &self.ns, &self.name, patch).await
    }

    /// Adds the cleanup finalizer before anything is owed (a Backup that is not finished).
    pub(super) async fn ensure_finalizer(&self) -> Result<()> {
        if self.has_finalizer() {
            return Ok(());
        }
        let mut list = self.backup.finalizers().to_vec();
        list.push(finalizers::BACKUP_CLEANUP.to_string());
        self.set_finalizers(list, self.backup.metadata.resource_version.clone())
            .await
    }

    /// A deleted Backup: pays what it owes (drain the copy, then save-on to the original or
    /// report its exit) and only then removes the finalizer, so the object goes last.
    pub(super) async fn finalize(&self) -> Result<Action> {
        if !self.has_finalizer() {
            return Ok(Action::await_change());
        }
        let finished = self.backup.phase().is_some_and(BackupPhase::is_terminal);
        if !finished && !self.ctx.mutant(Mutant::FinalizerRemovedBeforeCleanup) {
            let job = names::backup_job(&self.name);
            if self.drain_copy(&job).await? {
                return Ok(self.recheck());
            }
            let Some((_, reason, message)) = self.unquiesce(Ending::Failed).await? else {
                return Ok(self.recheck());
            };
            tracing::info!(backup = %self.name, namespace = %self.ns, reason, %message,
                "deleted Backup: copy drained, cleanup paid");
        }
        // `finalizer-removed-before-cleanup` defect: the branch above is skipped.
        // Cleanup wrote to the object (annotations, the Job's deletion): read it again.
        let Some(now) = kubeutil::get_opt(&self.backups, &self.ns, &self.name).await? else {
            return Ok(Action::await_change());
        };
        let rest = now
            .finalizers()
            .iter()
            .filter(|f| *f != finalizers::BACKUP_CLEANUP)
            .cloned()
            .collect();
        self.set_finalizers(rest, now.metadata.resource_version.clone())
            .await?;
        Ok(Action::await_change())
    }

    /// Whether this Backup was left mid-preparation by an older operator: it has begun (a
    /// quiesce was attempted, or its copy runs) but carries no incarnation fields.
    pub(super) fn is_legacy_preparation(&self) -> bool {
        self.status.source.is_none()
            && (self.annotation(ann::QUIESCE_ATTEMPTED).is_some()
                || self.backup.phase() == Some(BackupPhase::Running))
            && !self.ctx.mutant(Mutant::LegacyTreatedLiveBound)
    }

    /// Ends a legacy preparation Failed (never a consistent success): nothing proves which game
    /// process the copy would be bound to.
    pub(super) async fn fail_legacy(&self) -> Result<Action> {
        let msg = format!(
            "Backup {}/{} was left mid-preparation by an older operator without incarnation fields (status.source): the capture cannot be proven bound to one game process; create a new Backup",
            self.ns, self.name
        );
        self.fail(
            reasons::LEGACY_PREPARATION,
            msg,
            Some(Consistency::Invalidated),
        )
        .await
    }

    /// Cleanup of a legacy record: save-on is owed to the game process that was quiesced, which
    /// the record names only by time: the pod and its game container must both predate the
    /// quiesce attempt. A later one is a successor (it started with saving on): nothing is sent.
    pub(super) async fn unquiesce_legacy(&self) -> Result<Option<(bool, &'static str, String)>> {
        let attempted = self
            .annotation(ann::QUIESCE_ATTEMPTED)
            .and_then(|s| s.parse::<Timestamp>().ok());
        let pod = self.game_pod().await?;
        let Observation::Running(live) = incarnation::observe(pod.as_ref()) else {
            let msg = "no game process of the legacy capture runs any more; nothing was sent";
            return Ok(Some(self.original_exited(msg.into())));
        };
        let pod_created = pod
            .as_ref()
            .and_then(|p| p.metadata.creation_timestamp.as_ref())
            .map(|t| t.0);
        let game_started = pod
            .as_ref()
            .and_then(|p| p.status.as_ref()?.container_statuses.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.name == names::containers::GAME))
            .and_then(|c| c.state.as_ref()?.running.as_ref()?.started_at.as_ref())
            .map(|t| t.0);
        let predates =
            |t: Option<Timestamp>| matches!((t, attempted), (Some(t), Some(a)) if t <= a);
        if !(predates(pod_created) && predates(game_started)) {
            let msg = format!(
                "pod {} (created {pod_created:?}, game started {game_started:?}) is not the process quiesced at {attempted:?}; save-on was not sent to it",
                live.pod_uid
            );
            return Ok(Some(self.original_exited(msg)));
        }
        match self
            .ctx
            .agent
            .unquiesce_bound(
                &live.agent_host,
                &live.pod_uid,
                None,
                self.backup.metadata.uid.as_deref(),
            )
            .await
        {
            Ok(()) => {
                self.annotate(BTreeMap::from([(
                    ann::UNQUIESCED_AT,
                    Some(kubeutil::now_rfc3339()),
                )]))
                .await?;
                let msg = format!("save-on confirmed by the agent of pod {}", live.pod_uid);
                Ok(Some((true, reasons::UNQUIESCE_SUCCEEDED, msg)))
            }
            Err(e) if self.elapsed() < 2 * self.ctx.settings.preparation_deadline => {
                tracing::info!(backup = %self.name, error = %e, "legacy unquiesce not confirmed yet; retrying");
                Ok(None)
            }
            Err(e) => Ok(Some((false, reasons::UNQUIESCE_FAILED, e.to_string()))),
        }
    }
}
