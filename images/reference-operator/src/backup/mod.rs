//! The Backup controller: prepare the source, copy with restic, judge the copy (CONTRACT A
//! "Backup", B1–B6).
//!
//! Every step persists what it learned before acting on it (status `source`, the quiesce
//! annotations, the preparation deadline, the Job itself), so a restarted operator resumes
//! where the last one stopped: it neither quiesces twice nor starts a second copy, and still
//! pays the cleanup it owes. What outlives the process and the object is in `lifecycle`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gameplane_api::conditions::{self, reasons, types};
use gameplane_api::names::{self, annotations as ann, containers, labels};
use gameplane_api::{
    Backup, BackupPhase, BackupStatus, Consistency, GameServer, GameTemplate, SourceRecord,
    SourceState,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PropagationPolicy};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::agent::AgentError;
use crate::context::Ctx;
use crate::error::{Error, KubeContext, Result};
use crate::gameserver::children::extra_names;
use crate::incarnation::{self, Continuity, Observation};
use crate::kubeutil::{self, get_opt, now, now_rfc3339};
use crate::mutant::Mutant;
use crate::restic::{self, JobOutcome, Repo, Summary};

mod lifecycle;

/// Written by the `agent-restart-invalidates` mutant: every container of the source pod as
/// `name=containerID#restartCount`, comma-separated.
const POD_CONTAINERS: &str = "backup.gameplane.local/pod-containers";

/// How the Backup ends, for the cleanup that follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Succeeded,
    Failed,
}

/// Reconciles one Backup.
pub async fn reconcile(cached: Arc<Backup>, ctx: Arc<Ctx>) -> Result<Action> {
    let ns = kubeutil::namespace_of(cached.as_ref())?;
    let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ns);
    let first_pass = cached
        .metadata
        .uid
        .as_deref()
        .is_some_and(|uid| ctx.first_sight(uid));
    if ctx.mutant(Mutant::SourceEventAwaited)
        && let Some(uid) = cached.metadata.uid.as_deref()
        && ctx.expects_own_write(uid)
    {
        // The defect (an expectation with no expiry): until the cache shows the source this
        // process recorded, every pass waits; a watch that never delivers it leaves the Backup
        // where it is.
        if cached.status.as_ref().is_none_or(|s| s.source.is_none()) {
            return Ok(Action::await_change());
        }
        ctx.expect_own_write(uid, false);
    }
    let Some(backup) = kubeutil::latest(&api, cached.as_ref()).await? else {
        return Ok(Action::await_change());
    };
    let mut run = Run::new(&backup, &ctx)?;
    run.first_pass = first_pass;
    if backup.metadata.deletion_timestamp.is_some() {
        return run.finalize().await;
    }
    if !backup.phase().is_some_and(BackupPhase::is_terminal) {
        // Before anything can be owed: the object then outlives its cleanup (CONTRACT B4).
        run.ensure_finalizer().await?;
    }
    if matches!(
        backup.phase(),
        Some(BackupPhase::Pending | BackupPhase::Running)
    ) && run.is_legacy_preparation()
    {
        return run.fail_legacy().await;
    }
    match backup.phase() {
        Some(phase) if phase.is_terminal() => Ok(Action::await_change()),
        None => {
            run.persist_deadline().await?;
            let status = BackupStatus {
                phase: Some(BackupPhase::Pending),
                start_time: Some(now()),
                observed_generation: backup.metadata.generation,
                message: Some("preparing the source".into()),
                ..Default::default()
            };
            run.patch_status(&status).await?;
            Ok(Action::requeue(Duration::ZERO))
        }
        Some(BackupPhase::Pending) => run.prepare().await,
        Some(BackupPhase::Running) => run.watch_copy().await,
        Some(_) => Ok(Action::await_change()),
    }
}

/// One reconcile pass over one Backup.
struct Run<'a> {
    ctx: &'a Ctx,
    backup: &'a Backup,
    ns: String,
    name: String,
    server: String,
    status: BackupStatus,
    backups: Api<Backup>,
    pods: Api<Pod>,
    jobs: Api<Job>,
    /// Annotations written during this pass (the `backup` object predates them).
    written: std::sync::Mutex<BTreeMap<String, Option<String>>>,
    /// This is the first pass over the Backup since this process started.
    first_pass: bool,
}

impl<'a> Run<'a> {
    fn new(backup: &'a Backup, ctx: &'a Ctx) -> Result<Self> {
        let ns = kubeutil::namespace_of(backup)?;
        let client = ctx.client.clone();
        Ok(Run {
            ctx,
            backup,
            name: backup.name_any(),
            server: backup.spec.server_ref.name.clone(),
            status: backup.status.clone().unwrap_or_default(),
            backups: Api::namespaced(client.clone(), &ns),
            pods: Api::namespaced(client.clone(), &ns),
            jobs: Api::namespaced(client, &ns),
            written: Default::default(),
            first_pass: false,
            ns,
        })
    }

    /// An annotation, including those written earlier in this pass.
    fn annotation(&self, key: &str) -> Option<String> {
        if self.in_memory(key) {
            // `cleanup-lost-on-restart` defect: the obligation is this process's memory.
            return self.remembered(key);
        }
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        match written.get(key) {
            Some(value) => value.clone(),
            None => self.backup.annotations().get(key).cloned(),
        }
    }

    async fn patch_status(&self, status: &BackupStatus) -> Result<()> {
        kubeutil::patch_status(&self.backups, &self.ns, &self.name, status).await
    }

    async fn annotate(&self, values: BTreeMap<&str, Option<String>>) -> Result<()> {
        let values = self.remember(values);
        if values.is_empty() {
            return Ok(());
        }
        kubeutil::annotate(&self.backups, &self.ns, &self.name, values.clone()).await?;
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        for (k, v) in values {
            written.insert(k.to_string(), v);
        }
        Ok(())
    }

    /// Time since the Backup started (zero before it has a start time).
    fn elapsed(&self) -> Duration {
        self.status
            .start_time
            .as_ref()
            .map(|t| k8s_openapi::jiff::Timestamp::now().duration_since(t.0))
            .and_then(|d| d.try_into().ok())
            .unwrap_or(Duration::ZERO)
    }

    fn recheck(&self) -> Action {
        Action::requeue(self.ctx.settings.recheck_interval)
    }

    async fn game_pod(&self) -> Result<Option<Pod>> {
        get_opt(&self.pods, &self.ns, &names::pod(&self.server)).await
    }

    /// Why the recorded live source is no longer the one being copied, if it is not.
    fn source_changed(&self, source: &SourceRecord, pod: Option<&Pod>) -> Option<String> {
        if self.ctx.mutant(Mutant::IgnoreIncarnation)
            && pod.and_then(|p| p.metadata.uid.as_deref()) == source.pod_uid.as_deref()
        {
            // The defect: the same pod is taken for the same game process.
            return None;
        }
        if self.ctx.mutant(Mutant::ReplacedPodIgnored)
            && self.annotation(ann::QUIESCED_AT).is_some()
        {
            // The defect: once quiesced, the pod is no longer compared with the source.
            return None;
        }
        if self.ctx.mutant(Mutant::AgentDownInvalidates)
            && let Some(why) = agent_not_running(pod)
        {
            // The defect: an agent that is down is taken for a changed source.
            return Some(why);
        }
        match incarnation::compare(source, &incarnation::observe(pod), false) {
            Continuity::Same(_) if self.ctx.mutant(Mutant::AgentRestartInvalidates) => {
                // The defect: every container of the pod is taken for the game process.
                let recorded = self.annotation(POD_CONTAINERS)?;
                let now = pod.map(pod_containers).unwrap_or_default();
                (recorded != now).then(|| {
                    format!(
                        "a container of pod {} restarted: containers {recorded} became {now}",
                        source.pod_uid.as_deref().unwrap_or_default()
                    )
                })
            }
            Continuity::Same(_) => None,
            other => Some(other.describe(source)),
        }
    }

    /// Pending: record the source, preflight and quiesce a live one, start the copy.
    async fn prepare(&self) -> Result<Action> {
        let client = self.ctx.client.clone();
        let servers: Api<GameServer> = Api::namespaced(client.clone(), &self.ns);
        let Some(server) = get_opt(&servers, &self.ns, &self.server).await? else {
            let msg = format!(
                "GameServer {}/{} not found: create it or fix spec.serverRef.name",
                self.ns, self.server
            );
            return self.fail(reasons::INVALID_REFERENCE, msg, None).await;
        };
        let repo = match self.repo().await? {
            Ok(repo) => repo,
            Err(msg) => return self.fail(reasons::INVALID_REFERENCE, msg, None).await,
        };
        let pod = self.game_pod().await?;
        let Some(source) = self.status.source.clone() else {
            return self.record_source(&server, pod.as_ref()).await;
        };
        match source.state {
            SourceState::Stopped => {
                if pod.is_some() || !server.wants_stopped() {
                    let msg = format!("GameServer {} started before its copy began", self.server);
                    return self
                        .fail(reasons::SOURCE_STARTED, msg, Some(Consistency::Invalidated))
                        .await;
                }
                if self.ctx.mutant(Mutant::BackupWakesIdleServer) && server.idle_asleep() {
                    // The defect: the backup clears the idle intent to reach the game.
                    let patch =
                        json!({ "idle": { "asleep": false, "reason": "woken for backup" } });
                    kubeutil::patch_status(&servers, &self.ns, &self.server, patch).await?;
                }
            }
            SourceState::Live => {
                if let Some(why) = self.source_changed(&source, pod.as_ref()) {
                    return self
                        .fail(reasons::SOURCE_CHANGED, why, Some(Consistency::Invalidated))
                        .await;
                }
                if self.quiesces(Some(&server)).await?
                    && self.annotation(ann::QUIESCED_AT).is_none()
                {
                    let Observation::Running(live) = incarnation::observe(pod.as_ref()) else {
                        return Ok(self.recheck());
                    };
                    if let Some(action) = self.quiesce(&live).await? {
                        return Ok(action);
                    }
                    // Re-check after quiesce: the process we quiesced must still be the source.
                    let pod = self.game_pod().await?;
                    if let Some(why) = self.source_changed(&source, pod.as_ref()) {
                        return self
                            .fail(reasons::SOURCE_CHANGED, why, Some(Consistency::Invalidated))
                            .await;
                    }
                }
            }
        }
        self.start_copy(&server, &repo).await?;
        let mut status = self.status.clone();
        status.phase = Some(BackupPhase::Running);
        status.message = Some(format!("copy Job {} runs", names::backup_job(&self.name)));
        self.patch_status(&status).await?;
        Ok(self.recheck())
    }

    /// Records the source (Live incarnation or Stopped), or waits for it within the deadline.
    async fn record_source(&self, server: &GameServer, pod: Option<&Pod>) -> Result<Action> {
        let observation = incarnation::observe(pod);
        let source = match (&observation, server.wants_stopped()) {
            (Observation::NoPod, true) => {
                if self.ctx.mutant(Mutant::IdleAsleepTreatedLive)
                    && server.idle_asleep()
                    && !server.suspended()
                {
                    // The defect: idle sleep is not taken for a stopped server.
                    let msg = format!(
                        "cannot quiesce GameServer {}: no agent pod answers",
                        self.server
                    );
                    return self.fail(reasons::QUIESCE_FAILED, msg, None).await;
                }
                if self.ctx.mutant(Mutant::StoppedSourceNeedsAgent) && self.backup.wants_quiesce() {
                    // The defect: a stopped server is treated like a live one.
                    let msg = format!(
                        "cannot quiesce GameServer {}: no agent pod answers (the server is stopped)",
                        self.server
                    );
                    return self.fail(reasons::QUIESCE_FAILED, msg, None).await;
                }
                SourceRecord {
                    state: SourceState::Stopped,
                    ..Default::default()
                }
            }
            (Observation::Running(live), false) => {
                if self.ctx.mutant(Mutant::AgentRestartInvalidates) {
                    let containers = pod.map(pod_containers);
                    self.annotate(BTreeMap::from([(POD_CONTAINERS, containers)]))
                        .await?;
                }
                let mut source = live.to_source();
                if self.ctx.mutant(Mutant::SourceContainerUnrecorded) {
                    // The defect: the source is bound to the pod only.
                    source.game_container_id = None;
                }
                source
            }
            (waiting, _) => {
                // `no-preparation-wait` defect: missing evidence fails at once.
                if self.ctx.mutant(Mutant::NoPreparationWait) || self.past_deadline().await? {
                    let msg = format!(
                        "no running game incarnation of {} by the preparation deadline {}; last observed: {waiting:?}",
                        self.server,
                        self.deadline().await?
                    );
                    return self.fail(reasons::PREPARATION_TIMEOUT, msg, None).await;
                }
                return Ok(self.recheck());
            }
        };
        let mut status = self.status.clone();
        status.message = Some(match source.state {
            SourceState::Live => format!(
                "bound to pod {} game container {}",
                source.pod_uid.as_deref().unwrap_or_default(),
                source.game_container_id.as_deref().unwrap_or_default()
            ),
            SourceState::Stopped => "the server is stopped: copying without a pod".into(),
        });
        status.source = Some(source);
        self.patch_status(&status).await?;
        if self.ctx.mutant(Mutant::SourceEventAwaited)
            && let Some(uid) = self.backup.metadata.uid.as_deref()
        {
            // The defect: the next passes wait until the cache shows this very write.
            self.ctx.expect_own_write(uid, true);
        }
        Ok(Action::requeue(Duration::ZERO))
    }

    /// Identity preflight and quiesce of the recorded pod. `Some(action)` ends the pass.
    async fn quiesce(&self, live: &incarnation::Incarnation) -> Result<Option<Action>> {
        let agent = &self.ctx.agent;
        if self.ctx.mutant(Mutant::PreflightSkippedPending) {
            // The defect: no preflight; the unbound route quiesces, and the Backup never moves on.
            if self.annotation(ann::QUIESCE_ATTEMPTED).is_none() {
                self.annotate(BTreeMap::from([(
                    ann::QUIESCE_ATTEMPTED,
                    Some(now_rfc3339()),
                )]))
                .await?;
                if let Err(e) = agent.quiesce_unbound(&live.agent_host).await {
                    tracing::debug!(backup = %self.name, error = %e, "unbound quiesce failed");
                }
            }
            return Ok(Some(self.recheck()));
        }
        let mut incarnation = None;
        if !self.ctx.mutant(Mutant::NoIdentityPreflight) {
            let identity = agent.identity(&live.agent_host, &live.pod_uid).await;
            let past_deadline = self.past_deadline().await?;
            match identity {
                Ok(id) if id.pod_uid == live.pod_uid => incarnation = Some(id.game_incarnation),
                Ok(id) => {
                    let msg = format!(
                        "identity preflight: the agent at {} serves pod {}, not {}; nothing was quiesced",
                        live.agent_host, id.pod_uid, live.pod_uid
                    );
                    return self
                        .fail(reasons::IDENTITY_PREFLIGHT_FAILED, msg, None)
                        .await
                        .map(Some);
                }
                Err(e) if (e.is_unreachable() || e.is_game_unavailable()) && !past_deadline => {
                    // The agent is not listening yet: missing evidence waits within the deadline.
                    tracing::debug!(backup = %self.name, error = %e, "agent not reachable yet");
                    return Ok(Some(self.recheck()));
                }
                Err(e) => {
                    let hint = if e.is_missing_route() {
                        " (the agent is too old for pod-bound routes: upgrade it)"
                    } else {
                        ""
                    };
                    let msg = format!("identity preflight failed: {e}{hint}; nothing was quiesced");
                    return self
                        .fail(reasons::IDENTITY_PREFLIGHT_FAILED, msg, None)
                        .await
                        .map(Some);
                }
            }
        }
        // Persist the intent before the call: a restart then knows cleanup may be owed.
        self.annotate(BTreeMap::from([
            (ann::QUIESCE_ATTEMPTED, Some(now_rfc3339())),
            (ann::GAME_INCARNATION, incarnation.clone()),
        ]))
        .await?;
        let mut result = agent
            .quiesce_bound(&live.agent_host, &live.pod_uid, incarnation.as_deref())
            .await;
        if self.ctx.mutant(Mutant::NoIdentityPreflight)
            && result.as_ref().is_err_and(AgentError::is_missing_route)
        {
            // The defect: fall back to the route that cannot prove which pod it serves.
            result = agent.quiesce_unbound(&live.agent_host).await;
        }
        match result {
            // No answer at all (the agent restarted between the preflight and the call, say):
            // missing evidence, waited for within the deadline like the preflight's. The
            // intent is persisted, so whatever the call may have done is paid for; the next
            // pass proves the pod again and quiesces again (a second save-off to the same game
            // is paid by the same save-on).
            Err(e) if e.is_unreachable() && !self.past_deadline().await? => {
                tracing::debug!(backup = %self.name, error = %e, "agent unreachable at quiesce");
                return Ok(Some(self.recheck()));
            }
            Err(e) => {
                let msg = format!("quiesce of pod {} failed: {e}", live.pod_uid);
                return self
                    .fail(reasons::QUIESCE_FAILED, msg, None)
                    .await
                    .map(Some);
            }
            Ok(_) => {}
        }
        self.annotate(BTreeMap::from([(ann::QUIESCED_AT, Some(now_rfc3339()))]))
            .await?;
        Ok(None)
    }

    /// The repository Secret, or the one-line reason it is unusable.
    async fn repo(&self) -> Result<Result<Repo, String>> {
        let Some(repo_ref) = &self.backup.spec.repo_ref else {
            return Ok(Err(
                "spec.repoRef is empty: name the Secret with keys repo and password".into(),
            ));
        };
        let secrets: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        repo_from_secret(&secrets, &self.ns, &repo_ref.name, &repo_ref.key).await
    }

    async fn start_copy(&self, server: &GameServer, repo: &Repo) -> Result<()> {
        let templates: Api<GameTemplate> = Api::all(self.ctx.client.clone());
        let template = get_opt(&templates, "", &server.spec.template_ref.name).await?;
        let extras = if self.ctx.mutant(Mutant::BackupExtrasFromServerOnly) {
            // The defect: the template's `storage.extra` fallback is forgotten.
            server.extra_names()
        } else {
            extra_names(server, template.as_ref())
        };
        let mut claims = restic::claims(
            &self.server,
            &extras,
            !self.ctx.mutant(Mutant::BackupSkipsExtras),
        );
        if self.ctx.mutant(Mutant::BackupIncludesMods) {
            // The defect: the rebuildable mods claims are copied too.
            claims.extend(self.mods_claims(server).await?);
        }
        let paths: Vec<String> = claims.iter().map(|c| c.path.clone()).collect();
        let mut tags = vec![
            "gameplane".to_string(),
            format!("server={}", self.server),
            format!("backup={}", self.name),
        ];
        tags.extend(self.backup.spec.tags.iter().cloned());
        let owner = self
            .backup
            .controller_owner_ref(&())
            .ok_or_else(|| Error::MissingField {
                kind: "Backup",
                name: self.name.clone(),
                field: "metadata.uid",
            })?;
        let job = restic::job(restic::JobRequest {
            name: names::backup_job(&self.name),
            namespace: &self.ns,
            owner,
            labels: BTreeMap::from([
                (labels::BACKUP.to_string(), self.name.clone()),
                (labels::COMPONENT.to_string(), "backup".to_string()),
            ]),
            image: &self.ctx.settings.restic_image,
            repo,
            claims,
            read_only: true,
            script: restic::backup_script(&paths, &tags),
        });
        if self.ctx.mutant(Mutant::ConflictTakenForExists) {
            return kubeutil::create_taking_any_conflict_for_exists(&self.jobs, &job).await;
        }
        kubeutil::create_if_absent(&self.jobs, &job).await
    }

    /// Running: keep checking the source, then judge the finished copy.
    async fn watch_copy(&self) -> Result<Action> {
        let servers: Api<GameServer> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let server = get_opt(&servers, &self.ns, &self.server).await?;
        let pod = self.game_pod().await?;
        let source = self.status.source.clone().unwrap_or_default();
        match source.state {
            SourceState::Stopped => {
                let started = pod.is_some() || server.as_ref().is_none_or(|s| !s.wants_stopped());
                // `mid-copy-start-ignored` defect: a start during the copy goes unnoticed.
                if started && !self.ctx.mutant(Mutant::MidCopyStartIgnored) {
                    let msg = format!("GameServer {} started while its copy ran", self.server);
                    // `mid-copy-start-misreported` defect: a start reported as a changed source.
                    let reason = if self.ctx.mutant(Mutant::MidCopyStartMisreported) {
                        reasons::SOURCE_CHANGED
                    } else {
                        reasons::SOURCE_STARTED
                    };
                    return self.fail(reason, msg, Some(Consistency::Invalidated)).await;
                }
            }
            SourceState::Live => {
                if let Some(why) = self.source_changed(&source, pod.as_ref()) {
                    return self
                        .fail(reasons::SOURCE_CHANGED, why, Some(Consistency::Invalidated))
                        .await;
                }
            }
        }
        let job_name = names::backup_job(&self.name);
        let job = if self.first_pass && self.ctx.mutant(Mutant::FirstListTrusted) {
            // The defect: the first pass after a start takes the copy Job from the cache (a
            // list at `resourceVersion=0`, as a cached client reads) instead of reading it: a
            // list a lagging cache answers lacks a Job created since, taken for one deleted.
            let lp = ListParams::default()
                .labels(&format!("{}={}", labels::BACKUP, self.name))
                .match_any();
            let listed = self
                .jobs
                .list(&lp)
                .await
                .ctx("list", "Job", &self.ns, &job_name)?;
            listed.items.into_iter().find(|j| j.name_any() == job_name)
        } else {
            get_opt(&self.jobs, &self.ns, &job_name).await?
        };
        let Some(job) = job else {
            let msg = format!("copy Job {job_name} disappeared before it finished");
            return self.fail(reasons::COPY_FAILED, msg, None).await;
        };
        match restic::outcome(&job) {
            JobOutcome::Running
                if self.ctx.mutant(Mutant::EarlySaveOn)
                    && source.state == SourceState::Live
                    && self.annotation(ann::UNQUIESCED_AT).is_none()
                    && self.copy_pod_running().await? =>
            {
                // The defect: save-on as soon as the copy's pod runs, while restic still reads.
                self.unquiesce(Ending::Succeeded).await?;
                Ok(self.recheck())
            }
            JobOutcome::Running => Ok(self.recheck()),
            JobOutcome::Failed if !self.ctx.mutant(Mutant::SucceedOnFailedCopy) => {
                let tail = self.job_log_tail().await;
                let msg = format!("copy Job {job_name} failed: {tail}");
                // `copy-failure-misreported` defect: a failed copy named a quiesce failure.
                let reason = if self.ctx.mutant(Mutant::CopyFailureMisreported) {
                    reasons::QUIESCE_FAILED
                } else {
                    reasons::COPY_FAILED
                };
                self.fail(reason, msg, None).await
            }
            outcome => {
                let summary = if outcome == JobOutcome::Succeeded {
                    match self.read_summary().await? {
                        Some(s) => Some(s),
                        None => {
                            let msg = format!(
                                "copy Job {job_name} succeeded but printed no restic summary"
                            );
                            return self.fail(reasons::COPY_FAILED, msg, None).await;
                        }
                    }
                } else {
                    None
                };
                self.succeed(&source, summary, server.as_ref()).await
            }
        }
    }

    async fn succeed(
        &self,
        source: &SourceRecord,
        summary: Option<Summary>,
        server: Option<&GameServer>,
    ) -> Result<Action> {
        let Some((u_ok, u_reason, u_msg)) = self.unquiesce(Ending::Succeeded).await? else {
            return Ok(self.recheck());
        };
        let quiesced = self.quiesces(server).await?;
        let mut status = self.status.clone();
        let t = now();
        let generation = self.backup.metadata.generation;
        status.phase = Some(BackupPhase::Succeeded);
        status.completion_time = Some(t.clone());
        status.consistency = Some(match source.state {
            // The defect: a copy without a running game is labelled quiesced.
            SourceState::Stopped if self.ctx.mutant(Mutant::StoppedLabelledQuiesced) => {
                Consistency::Quiesced
            }
            SourceState::Stopped => Consistency::Stopped,
            SourceState::Live if quiesced => Consistency::Quiesced,
            // The defect: a raw copy is labelled quiesced.
            SourceState::Live if self.ctx.mutant(Mutant::RawCopyLabelledQuiesced) => {
                Consistency::Quiesced
            }
            SourceState::Live => Consistency::Unquiesced,
        });
        if let Some(s) = &summary {
            status.snapshot_id = Some(s.snapshot_id.clone());
            status.size = Some(Quantity(s.data_added.to_string()));
        }
        status.message = Some(match &summary {
            Some(s) => format!("snapshot {} of {}", s.snapshot_id, self.server),
            None => "copy finished".into(),
        });
        // `success-without-completed` defect: the phase says Succeeded, no condition does.
        if !self.ctx.mutant(Mutant::SuccessWithoutCompleted) {
            conditions::set(
                &mut status.conditions,
                types::COMPLETED,
                true,
                reasons::SUCCEEDED,
                "",
                generation,
                t.clone(),
            );
        }
        conditions::set(
            &mut status.conditions,
            types::UNQUIESCED,
            u_ok,
            u_reason,
            &u_msg,
            generation,
            t.clone(),
        );
        self.patch_status(&status).await?;
        if let Some(server) = server {
            let servers: Api<GameServer> = Api::namespaced(self.ctx.client.clone(), &self.ns);
            let patch = json!({ "lastBackupTime": t });
            kubeutil::patch_status(&servers, &self.ns, &server.name_any(), patch).await?;
        }
        Ok(Action::await_change())
    }

    /// Ends the Backup Failed: drains the copy, returns the original process to save-on.
    ///
    /// An invalidated capture ends only once its copy Job is gone: the Job is deleted in the
    /// foreground, so "gone" also means its pods are gone (CONTRACT B2).
    async fn fail(
        &self,
        reason: &str,
        message: String,
        consistency: Option<Consistency>,
    ) -> Result<Action> {
        let reason =
            if self.ctx.mutant(Mutant::WrongFailureReason) && reason == reasons::SOURCE_CHANGED {
                // The defect: an invalidated capture is reported as a failed copy.
                reasons::COPY_FAILED
            } else {
                reason
            };
        let reason = if self.ctx.mutant(Mutant::PreflightFailureMisreported)
            && reason == reasons::IDENTITY_PREFLIGHT_FAILED
        {
            // The defect: a refused preflight is reported as a failed quiesce.
            reasons::QUIESCE_FAILED
        } else {
            reason
        };
        tracing::info!(backup = %self.name, namespace = %self.ns, reason, %message, "backup failed");
        let job_name = names::backup_job(&self.name);
        let invalidated = consistency == Some(Consistency::Invalidated);
        if !invalidated && self.ctx.mutant(Mutant::FailedCopyLeftRunning) {
            // The defect: a failed (not invalidated) copy's Job is left behind.
            tracing::debug!(backup = %self.name, job = %job_name, "leaving the failed copy Job");
        } else if !invalidated {
            kubeutil::delete_background(&self.jobs, &self.ns, &job_name).await?;
        } else if self.ctx.mutant(Mutant::InvalidatedWithoutDraining) {
            // The defect: the copy of an invalidated capture is left to run.
            tracing::debug!(backup = %self.name, job = %job_name, "leaving the copy Job running");
        } else if self.drain_copy(&job_name).await? {
            return Ok(self.recheck());
        }
        let Some((u_ok, u_reason, u_msg)) = self.unquiesce(Ending::Failed).await? else {
            return Ok(self.recheck());
        };
        let mut status = self.status.clone();
        let t = now();
        let generation = self.backup.metadata.generation;
        status.phase = Some(BackupPhase::Failed);
        status.completion_time = Some(t.clone());
        status.message = Some(message.clone());
        status.consistency = consistency;
        if status.start_time.is_none() {
            status.start_time = Some(t.clone());
        }
        conditions::set(
            &mut status.conditions,
            types::COMPLETED,
            false,
            reason,
            &message,
            generation,
            t.clone(),
        );
        conditions::set(
            &mut status.conditions,
            types::UNQUIESCED,
            u_ok,
            u_reason,
            &u_msg,
            generation,
            t,
        );
        self.patch_status(&status).await?;
        Ok(Action::await_change())
    }

    /// Returns the original game process to save-on, if it was quiesced and still runs.
    /// Never sends save-on to another pod or another game process. `None`: try again later
    /// (the original's agent did not answer yet, bounded by twice the preparation deadline).
    #[expect(
        clippy::too_many_lines,
        reason = "one decision in order: nothing owed, already paid, legacy, the mutants' defects, the original gone (or the quiesced process still there), then save-on with its retries"
    )]
    async fn unquiesce(&self, ending: Ending) -> Result<Option<(bool, &'static str, String)>> {
        if self.annotation(ann::QUIESCE_ATTEMPTED).is_none() {
            return Ok(Some((
                true,
                reasons::NOT_QUIESCED,
                "nothing was quiesced".into(),
            )));
        }
        if let Some(at) = self.annotation(ann::UNQUIESCED_AT) {
            let msg = format!("save-on confirmed at {at}");
            return Ok(Some((true, reasons::UNQUIESCE_SUCCEEDED, msg)));
        }
        if self.status.source.is_none() {
            // A legacy record: its quiesced process is named only by time.
            return self.unquiesce_legacy().await;
        }
        let pod = self.game_pod().await?;
        let observed = incarnation::observe(pod.as_ref());
        let agent = &self.ctx.agent;
        if self.ctx.mutant(Mutant::UnquiesceAnyPod) {
            // The defect: whatever pod serves the server now gets save-on, and cleanup waits
            // until one answers.
            let Observation::Running(now) = observed else {
                return Ok(None);
            };
            return match agent
                .unquiesce_bound(&now.agent_host, &now.pod_uid, None, None)
                .await
            {
                Ok(()) => {
                    self.annotate(BTreeMap::from([(ann::UNQUIESCED_AT, Some(now_rfc3339()))]))
                        .await?;
                    let msg = format!("save-on sent to pod {}", now.pod_uid);
                    Ok(Some((true, reasons::UNQUIESCE_SUCCEEDED, msg)))
                }
                Err(_) if self.elapsed() < 2 * self.ctx.settings.preparation_deadline => Ok(None),
                Err(e) => Ok(Some((false, reasons::UNQUIESCE_FAILED, e.to_string()))),
            };
        }
        let source = self.status.source.clone().unwrap_or_default();
        let live = match incarnation::compare(&source, &observed, false) {
            Continuity::Same(live) => live,
            other => {
                if let Some(paid) = self.unquiesce_quiesced_process(&source, &observed).await? {
                    return Ok(paid);
                }
                let msg = format!(
                    "{}; save-on was not sent to any successor",
                    other.describe(&source)
                );
                return Ok(Some(self.original_exited(msg)));
            }
        };
        if ending == Ending::Succeeded && self.ctx.mutant(Mutant::NoUnquiesceAfterSuccess) {
            // The defect: success is reported without sending save-on.
            self.annotate(BTreeMap::from([(ann::UNQUIESCED_AT, Some(now_rfc3339()))]))
                .await?;
            let msg = format!("save-on confirmed by the agent of pod {}", live.pod_uid);
            return Ok(Some((true, reasons::UNQUIESCE_SUCCEEDED, msg)));
        }
        if ending == Ending::Failed && self.ctx.mutant(Mutant::NoUnquiesceAfterFailure) {
            // The defect: a failed Backup forgets that it quiesced the game.
            return Ok(Some((
                true,
                reasons::NOT_QUIESCED,
                "nothing was quiesced".into(),
            )));
        }
        let inc = self.annotation(ann::GAME_INCARNATION);
        let mut result = agent
            .unquiesce_bound(
                &live.agent_host,
                &live.pod_uid,
                inc.as_deref(),
                self.backup.metadata.uid.as_deref(),
            )
            .await;
        if self.ctx.mutant(Mutant::NoIdentityPreflight)
            && result.as_ref().is_err_and(AgentError::is_missing_route)
        {
            result = agent.unquiesce_unbound(&live.agent_host).await;
        }
        if let Err(e) = &result
            && !matches!(e, AgentError::Status { status: 409, .. })
            && self.elapsed() < 2 * self.ctx.settings.preparation_deadline
        {
            // The original process still runs (checked above): its agent may be restarting.
            tracing::info!(backup = %self.name, error = %e, "unquiesce not confirmed yet; retrying");
            return Ok(None);
        }
        Ok(Some(match result {
            Ok(()) => {
                self.annotate(BTreeMap::from([(ann::UNQUIESCED_AT, Some(now_rfc3339()))]))
                    .await?;
                (
                    true,
                    reasons::UNQUIESCE_SUCCEEDED,
                    format!("save-on confirmed by the agent of pod {}", live.pod_uid),
                )
            }
            Err(AgentError::Status {
                status: 409, body, ..
            }) => self.original_exited(format!(
                "the agent of pod {} refused: {body}; nothing was sent",
                live.pod_uid
            )),
            Err(e) => (false, reasons::UNQUIESCE_FAILED, e.to_string()),
        }))
    }

    /// Whether a pod of the copy Job runs (the `early-save-on` defect's moment).
    async fn copy_pod_running(&self) -> Result<bool> {
        Ok(self
            .job_pods()
            .await?
            .iter()
            .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")))
    }

    /// The `Unquiesced` condition when the quiesced process is gone: nothing to send.
    /// The pod recorded as the source runs a game container other than the recorded one: the
    /// process the agent quiesced may still be the one running. A game that restarted just
    /// before quiesce is quiesced (the agent named it) while the pod status still showed the
    /// old container (the kubelet had not reported the restart yet); it must get its
    /// `save-on`. The agent refuses (409) unless the game still runs the quiesced incarnation, so
    /// this reaches only the process that received `save-off`, never a successor. `None`: it
    /// does not run (or nothing was recorded): the original exited.
    async fn unquiesce_quiesced_process(
        &self,
        source: &SourceRecord,
        observed: &Observation,
    ) -> Result<Option<Option<(bool, &'static str, String)>>> {
        let (Observation::Running(now), Some(quiesced)) =
            (observed, self.annotation(ann::GAME_INCARNATION))
        else {
            return Ok(None);
        };
        if Some(now.pod_uid.as_str()) != source.pod_uid.as_deref() {
            // A successor pod receives nothing.
            return Ok(None);
        }
        let result = self
            .ctx
            .agent
            .unquiesce_bound(
                &now.agent_host,
                &now.pod_uid,
                Some(&quiesced),
                self.backup.metadata.uid.as_deref(),
            )
            .await;
        match result {
            Ok(()) => {
                self.annotate(BTreeMap::from([(ann::UNQUIESCED_AT, Some(now_rfc3339()))]))
                    .await?;
                let msg = format!(
                    "save-on confirmed by the agent of pod {} for game process {quiesced}, the one quiesced",
                    now.pod_uid
                );
                Ok(Some(Some((true, reasons::UNQUIESCE_SUCCEEDED, msg))))
            }
            // Another process runs now: the quiesced one exited.
            Err(AgentError::Status { status: 409, .. }) => Ok(None),
            // Its agent may be restarting: ask again.
            Err(_) if self.elapsed() < 2 * self.ctx.settings.preparation_deadline => Ok(Some(None)),
            Err(_) => Ok(None),
        }
    }

    fn original_exited(&self, message: String) -> (bool, &'static str, String) {
        if self.ctx.mutant(Mutant::ExitReportedAsUnquiesced) {
            // The defect: the exit is reported as a confirmed save-on.
            return (true, reasons::UNQUIESCE_SUCCEEDED, message);
        }
        (true, reasons::ORIGINAL_PROCESS_EXITED, message)
    }

    /// Deletes the copy Job in the foreground; `true` while it (or one of its pods) exists.
    async fn drain_copy(&self, job_name: &str) -> Result<bool> {
        let Some(job) = get_opt(&self.jobs, &self.ns, job_name).await? else {
            return Ok(false);
        };
        if job.metadata.deletion_timestamp.is_none() {
            let params = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Foreground),
                ..Default::default()
            };
            match self.jobs.delete(job_name, &params).await {
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(false),
                other => other.map(drop).ctx("delete", "Job", &self.ns, job_name)?,
            }
        }
        // A pod the Job controller created after the delete is not part of the cascade: delete
        // the Job's pods directly too, so the foreground deletion can finish.
        for pod in self.job_pods().await? {
            if pod.metadata.deletion_timestamp.is_none() {
                kubeutil::delete_background(&self.pods, &self.ns, &pod.name_any()).await?;
            }
        }
        tracing::info!(backup = %self.name, job = job_name, "draining the copy of an invalidated capture");
        Ok(true)
    }

    /// The mods claims of `server` (owned by it, named `<gs>-mods-<version>`), as restic Job
    /// claims under `/mods/<version>`. Only the `backup-includes-mods` mutant copies them.
    async fn mods_claims(&self, server: &GameServer) -> Result<Vec<restic::Claim>> {
        let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let prefix = format!("{}-mods-", self.server);
        let uid = server.metadata.uid.clone();
        let list = pvcs.list(&ListParams::default()).await.ctx(
            "list claims of",
            "GameServer",
            &self.ns,
            &self.server,
        )?;
        Ok(list
            .items
            .into_iter()
            .filter(|p| {
                p.owner_references()
                    .iter()
                    .any(|o| Some(&o.uid) == uid.as_ref())
            })
            .filter_map(|p| {
                let name = p.name_any();
                let version = name.strip_prefix(&prefix)?.to_string();
                Some(restic::Claim {
                    path: format!("/mods/{version}"),
                    pvc: name,
                })
            })
            .collect())
    }

    async fn job_pods(&self) -> Result<Vec<Pod>> {
        let lp = ListParams::default().labels(&format!("{}={}", labels::BACKUP, self.name));
        self.pods
            .list(&lp)
            .await
            .map(|l| l.items)
            .map_err(|source| Error::Kube {
                action: "list pods of",
                kind: "Job",
                namespace: self.ns.clone(),
                name: self.name.clone(),
                source: Box::new(source),
            })
    }

    /// The restic summary: termination message first, then the pod log.
    async fn read_summary(&self) -> Result<Option<Summary>> {
        for pod in self.job_pods().await? {
            let message = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.name == containers::RESTIC))
                .and_then(|c| c.state.as_ref()?.terminated.as_ref()?.message.clone());
            if let Some(summary) = message.as_deref().and_then(restic::parse_summary) {
                return Ok(Some(summary));
            }
            let params = LogParams {
                container: Some(containers::RESTIC.into()),
                ..Default::default()
            };
            if let Ok(log) = self.pods.logs(&pod.name_any(), &params).await
                && let Some(summary) = restic::parse_summary(&log)
            {
                return Ok(Some(summary));
            }
        }
        Ok(None)
    }

    async fn job_log_tail(&self) -> String {
        let Ok(pods) = self.job_pods().await else {
            return "no pod log".into();
        };
        for pod in pods {
            let params = LogParams {
                container: Some(containers::RESTIC.into()),
                tail_lines: Some(5),
                ..Default::default()
            };
            if let Ok(log) = self.pods.logs(&pod.name_any(), &params).await {
                return log.lines().collect::<Vec<_>>().join(" | ");
            }
        }
        "no pod log".into()
    }
}

/// Reads the repository Secret: `Ok(Err(msg))` when it is missing or lacks a key.
pub async fn repo_from_secret(
    secrets: &Api<Secret>,
    ns: &str,
    name: &str,
    key: &str,
) -> Result<Result<Repo, String>> {
    let Some(secret) = get_opt(secrets, ns, name).await? else {
        return Ok(Err(format!(
            "repository Secret {ns}/{name} not found: create it with keys {key} and password"
        )));
    };
    let value = |k: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(k))
            .map(|b| String::from_utf8_lossy(&b.0).trim().to_string())
            .or_else(|| secret.string_data.as_ref().and_then(|d| d.get(k)).cloned())
    };
    let Some(url) = value(key) else {
        return Ok(Err(format!(
            "repository Secret {ns}/{name} has no key {key:?}: add the repository URL"
        )));
    };
    if value(restic::PASSWORD_KEY).is_none() {
        return Ok(Err(format!(
            "repository Secret {ns}/{name} has no key \"password\": add the repository password"
        )));
    }
    Ok(Ok(Repo {
        secret: name.to_string(),
        key: key.to_string(),
        local_path: url.starts_with('/').then_some(url),
    }))
}

/// Every container of `pod` that has an ID, as `name=containerID#restartCount` (sorted by
/// name, comma-separated): what the `agent-restart-invalidates` mutant binds a capture to.
/// Why the pod's agent container does not run, if it does not (`agent-down-invalidates`).
fn agent_not_running(pod: Option<&Pod>) -> Option<String> {
    let status = pod?
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == names::containers::AGENT)?;
    let running = status.state.as_ref().is_some_and(|s| s.running.is_some());
    (!running).then(|| {
        format!(
            "the agent container of pod {} is not running: {:?}",
            pod.and_then(|p| p.metadata.uid.as_deref())
                .unwrap_or_default(),
            status.state
        )
    })
}

fn pod_containers(pod: &Pod) -> String {
    let mut items: Vec<String> = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let id = c.container_id.as_deref().filter(|id| !id.is_empty())?;
            Some(format!("{}={id}#{}", c.name, c.restart_count))
        })
        .collect();
    items.sort();
    items.join(",")
}
