//! One pod's life on the node: volumes, init containers in order, then the containers, with
//! restarts per `restartPolicy`, back-off, probes, graceful termination and status reports.
//!
//! The worker is a single task that owns all of the pod's runtime state and reacts to four
//! things: a new version of the pod, a container process ending, a command (in-place restart,
//! shutdown) and its next timer (back-off expiry, probe period).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, HostIP, Pod, PodIP, PodStatus, Probe,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::utils::Backoff as _;
use kube::runtime::watcher::ExponentialBackoff;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use super::container_spec::{self, ConfigError};
use super::probes::{self, ProbeResult};
use super::status::{Conditions, now, qos_class};
use super::termination::{self, MessageFile};
use super::volumes::{self, VolumeError};
use super::{Node, PodCommand, RestartError, RestartedContainer};
use crate::events::{EventType, reference};
use crate::images::ResolvedImage;
use crate::sandbox::{SandboxHandle, SandboxSpec};

/// How long `ErrImagePull` shows before `ImagePullBackOff` while the retry waits.
const ERR_IMAGE_PULL_SHOWN: Duration = Duration::from_millis(500);
/// A container that ran this long without failing starts its crash back-off afresh.
const BACKOFF_RESET_FACTOR: u32 = 2;

#[derive(Default)]
struct Track {
    next: Option<Instant>,
    successes: i32,
    failures: i32,
}

struct Instance {
    handle: SandboxHandle,
    id: String,
    started_at: Time,
    since: Instant,
    spec: SandboxSpec,
    /// This start's log file.
    log: PathBuf,
    /// This start's termination message file, when the container has a path for one.
    message: Option<MessageFile>,
    readiness: Track,
    liveness: Track,
    startup: Track,
    stopping: bool,
}

impl Instance {
    /// The termination message the kubelet reports for this instance's exit.
    fn termination_message(&self, exit_code: i32, limit: usize) -> Option<String> {
        let file = self.message.as_ref()?;
        termination::read(file, &self.log, exit_code, limit)
    }
}

struct Ctr {
    spec: Container,
    init: bool,
    resolved: Option<ResolvedImage>,
    restart_count: i32,
    starts: u32,
    run: Option<Instance>,
    state: ContainerState,
    last_state: Option<ContainerState>,
    last_terminated: Option<ContainerState>,
    next_start: Option<Instant>,
    crash_backoff: Option<Duration>,
    pull_backoff: Option<Duration>,
    show_pull_backoff_at: Option<Instant>,
    ready: bool,
    started: bool,
    ever_started: bool,
    last_exit: Option<i32>,
    /// Will not be started again (completed, or the restart policy says no).
    done: bool,
    /// Held down by the harness: not started again until released.
    held: bool,
}

fn waiting(reason: &str, message: Option<String>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.to_string()),
            message,
        }),
        ..Default::default()
    }
}

impl Ctr {
    /// A container the harness holds down reads as a real kubelet's would in back-off.
    fn show_held(&mut self, pod_ref: &str) {
        if waiting_reason(&self.state) == Some("CrashLoopBackOff") {
            return;
        }
        if self.last_terminated.is_some() {
            self.last_state.clone_from(&self.last_terminated);
        }
        self.state = waiting(
            "CrashLoopBackOff",
            Some(format!(
                "back-off restarting failed container={} pod={pod_ref} (held down)",
                self.spec.name
            )),
        );
    }
}

fn waiting_reason(state: &ContainerState) -> Option<&str> {
    state.waiting.as_ref().and_then(|w| w.reason.as_deref())
}

impl Ctr {
    fn new(spec: Container, init: bool) -> Self {
        Self {
            spec,
            init,
            resolved: None,
            restart_count: 0,
            starts: 0,
            run: None,
            state: waiting("ContainerCreating", None),
            last_state: None,
            last_terminated: None,
            next_start: None,
            crash_backoff: None,
            pull_backoff: None,
            show_pull_backoff_at: None,
            ready: false,
            started: false,
            ever_started: false,
            last_exit: None,
            done: false,
            held: false,
        }
    }

    fn describe(&self) -> String {
        if self.run.is_some() {
            "running".into()
        } else if let Some(reason) = waiting_reason(&self.state) {
            format!("waiting: {reason}")
        } else if let Some(code) = self.last_exit {
            format!("exited with code {code}")
        } else {
            "not started".into()
        }
    }

    fn status(&self) -> ContainerStatus {
        ContainerStatus {
            name: self.spec.name.clone(),
            image: self.spec.image.clone().unwrap_or_default(),
            image_id: self
                .resolved
                .as_ref()
                .filter(|_| self.ever_started)
                .map(|r| r.image_id.clone())
                .unwrap_or_default(),
            container_id: self.run.as_ref().map(|r| r.id.clone()).or_else(|| {
                self.state
                    .terminated
                    .as_ref()
                    .and_then(|t| t.container_id.clone())
            }),
            ready: self.ready,
            started: Some(self.run.is_some() && self.started),
            restart_count: self.restart_count,
            state: Some(self.state.clone()),
            last_state: Some(self.last_state.clone().unwrap_or_default()),
            ..Default::default()
        }
    }
}

/// What one container start runs with: its sandbox, its log and its termination message file.
struct StartFiles {
    spec: SandboxSpec,
    log: PathBuf,
    message: Option<MessageFile>,
}

struct Exit {
    init: bool,
    index: usize,
    id: String,
    code: i32,
}

struct PendingRestart {
    index: usize,
    old_id: String,
    reply: oneshot::Sender<Result<RestartedContainer, RestartError>>,
}

struct Worker {
    node: Arc<Node>,
    pod: Pod,
    uid: String,
    namespace: String,
    name: String,
    ip: String,
    dir: PathBuf,
    /// The pod's resolv.conf (cluster DNS), bound into every container.
    resolv_conf: Option<PathBuf>,
    start_time: Time,
    volumes: Option<HashMap<String, PathBuf>>,
    volume_message: Option<String>,
    volume_retry: Option<Instant>,
    init: Vec<Ctr>,
    apps: Vec<Ctr>,
    init_done: bool,
    terminal: Option<&'static str>,
    conditions: Conditions,
    last_published: Option<serde_json::Value>,
    publish_retry: Option<Instant>,
    /// Spaces retries of a failed status patch; reset by a success.
    publish_backoff: ExponentialBackoff,
    exits: mpsc::UnboundedSender<Exit>,
    pending_restarts: Vec<PendingRestart>,
}

fn restart_policy(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.clone())
        .unwrap_or_else(|| "Always".into())
}

fn termination_grace(pod: &Pod) -> Duration {
    let secs = pod
        .metadata
        .deletion_grace_period_seconds
        .or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
        })
        .unwrap_or(30);
    Duration::from_secs(secs.max(0) as u64)
}

fn new_container_id() -> String {
    format!(
        "rehearsal://{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Runs the pod until it is deleted (then deletes it from the API) or the node shuts down.
#[expect(
    clippy::too_many_lines,
    reason = "the pod worker's event loop: one select over the pod's updates, its containers and shutdown"
)]
pub(super) async fn run(
    node: Arc<Node>,
    pod: Pod,
    mut updates: watch::Receiver<Option<Pod>>,
    mut commands: mpsc::UnboundedReceiver<PodCommand>,
) {
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let dir = node.settings.state_dir.join("pods").join(&uid);
    let spec = pod.spec.clone().unwrap_or_default();
    let init: Vec<Ctr> = spec
        .init_containers
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|c| Ctr::new(c, true))
        .collect();
    let apps: Vec<Ctr> = spec
        .containers
        .clone()
        .into_iter()
        .map(|c| Ctr::new(c, false))
        .collect();
    node.logs.add_pod(
        &namespace,
        &name,
        &uid,
        dir.clone(),
        init.iter().map(|c| c.spec.name.clone()).collect(),
        apps.iter().map(|c| c.spec.name.clone()).collect(),
    );
    let ip = node.ips.allocate().to_string();
    let resolv_conf = node.settings.cluster_dns.and_then(|dns| {
        crate::network::resolv_conf(&pod, dns, &dir)
            .inspect_err(|e| tracing::warn!(%e, pod = %name, "cannot write the pod's resolv.conf"))
            .ok()
            .flatten()
    });
    let (exits, mut exits_rx) = mpsc::unbounded_channel();
    let mut claims = node.claims_changed.subscribe();
    let mut claims_closed = false;
    let mut worker = Worker {
        conditions: Conditions::seed(&pod),
        start_time: pod
            .status
            .as_ref()
            .and_then(|s| s.start_time.clone())
            .unwrap_or_else(now),
        node,
        pod,
        uid,
        namespace,
        name,
        ip,
        dir,
        resolv_conf,
        volumes: None,
        volume_message: None,
        volume_retry: None,
        init_done: init.is_empty(),
        init,
        apps,
        terminal: None,
        last_published: None,
        publish_retry: None,
        publish_backoff: super::api_retry_backoff(Duration::from_secs(5), true),
        exits,
        pending_restarts: Vec::new(),
    };
    tracing::debug!(pod = %worker.name, namespace = %worker.namespace, ip = %worker.ip, "pod worker started");
    loop {
        if worker.pod.metadata.deletion_timestamp.is_some() {
            let grace = termination_grace(&worker.pod);
            worker.terminate(grace).await;
            worker.publish().await;
            worker.delete().await;
            break;
        }
        worker.sync().await;
        worker.probe().await;
        worker.publish().await;
        let deadline = worker.next_deadline();
        tokio::select! {
            changed = updates.changed() => {
                let latest = if changed.is_ok() { updates.borrow_and_update().clone() } else { None };
                match latest {
                    Some(pod) => worker.pod = pod,
                    None => {
                        // Removed from the API without us (force delete): end it quickly.
                        worker.terminate(Duration::from_secs(1)).await;
                        break;
                    }
                }
            }
            Some(exit) = exits_rx.recv() => worker.on_exit(exit),
            // One of this pod's claims changed (bound, created) while its volumes wait for
            // it: retry now. Other pods' claims are not this worker's business; a missed
            // change (lagged) or a relist retries to be safe.
            changed = claims.recv(), if worker.volumes.is_none() && !claims_closed => {
                match changed {
                    Ok(Some(key)) if !worker.waits_for(&key) => {}
                    Err(broadcast::error::RecvError::Closed) => claims_closed = true,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => worker.volume_retry = None,
                }
            }
            command = commands.recv() => match command {
                Some(PodCommand::Restart { container, reply }) => worker.restart(&container, reply),
                Some(PodCommand::Hold { container, down, reply }) => {
                    let _ = reply.send(worker.hold(&container, down));
                }
                Some(PodCommand::Locate { container, reply }) => {
                    let _ = reply.send(worker.locate(&container));
                }
                Some(PodCommand::Address { reply }) => {
                    let _ = reply.send(worker.ip.clone());
                }
                Some(PodCommand::Shutdown { grace, done }) => {
                    worker.terminate(grace).await;
                    let _ = done.send(());
                    break;
                }
                None => {
                    worker.terminate(Duration::from_secs(1)).await;
                    break;
                }
            },
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
    worker
        .node
        .logs
        .remove_pod(&worker.namespace, &worker.name, &worker.uid);
    tracing::debug!(pod = %worker.name, namespace = %worker.namespace, "pod worker ended");
}

impl Worker {
    /// Records an Event about one of the pod's containers.
    fn event(&self, container: &str, init: bool, type_: EventType, reason: &str, message: String) {
        let list = if init { "initContainers" } else { "containers" };
        let object = reference(&self.pod, Some(format!("spec.{list}{{{container}}}")));
        self.node.events.emit(object, type_, reason, message);
    }

    /// Each container's share of the pod's termination message budget.
    fn message_limit(&self) -> usize {
        termination::limit(self.init.len() + self.apps.len())
    }

    fn ctr(&mut self, init: bool, index: usize) -> &mut Ctr {
        if init {
            &mut self.init[index]
        } else {
            &mut self.apps[index]
        }
    }

    async fn sync(&mut self) {
        if self.terminal.is_some() {
            return;
        }
        if self.volumes.is_none() {
            if self.volume_retry.is_some_and(|t| Instant::now() < t) {
                return;
            }
            match volumes::prepare(&self.node.client, &self.pod, &self.ip, &self.dir).await {
                Ok(v) => {
                    self.volumes = Some(v);
                    self.volume_message = None;
                    self.volume_retry = None;
                }
                Err(e) => {
                    let retry = match e {
                        VolumeError::Waiting(_) => Duration::from_millis(200),
                        VolumeError::Invalid(_) => Duration::from_secs(2),
                    };
                    self.volume_message = Some(e.to_string());
                    self.volume_retry = Some(Instant::now() + retry);
                    return;
                }
            }
        }
        if !self.init_done {
            for i in 0..self.init.len() {
                let c = &self.init[i];
                if c.done {
                    continue;
                }
                if c.run.is_some() {
                    return;
                }
                self.try_start(true, i).await;
                return;
            }
            self.init_done = true;
        }
        for i in 0..self.apps.len() {
            if self.apps[i].run.is_none() && !self.apps[i].done {
                self.try_start(false, i).await;
            }
        }
        let policy = restart_policy(&self.pod);
        if policy != "Always" && self.apps.iter().all(|c| c.done) {
            let ok = self.apps.iter().all(|c| c.last_exit == Some(0));
            self.terminal = Some(if ok { "Succeeded" } else { "Failed" });
        }
    }

    /// The container may not start yet: held down by the harness, or its back-off runs.
    fn waits_to_start(&mut self, init: bool, index: usize, now_i: Instant, pod_ref: &str) -> bool {
        let c = self.ctr(init, index);
        if c.held {
            c.show_held(pod_ref);
            return true;
        }
        if let Some(at) = c.next_start
            && now_i < at
        {
            self.show_pull_backoff(init, index, now_i);
            return true;
        }
        false
    }

    async fn try_start(&mut self, init: bool, index: usize) {
        let now_i = Instant::now();
        let pod_ref = format!("{}_{}({})", self.name, self.namespace, self.uid);
        if self.waits_to_start(init, index, now_i, &pod_ref) {
            return;
        }
        let image_ref = self.ctr(init, index).spec.image.clone().unwrap_or_default();
        let Some(resolved) = self.node.settings.images.resolve(&image_ref) else {
            self.image_not_found(init, index, now_i, &image_ref);
            return;
        };
        let container = self.ctr(init, index).spec.clone();
        {
            let c = self.ctr(init, index);
            c.pull_backoff = None;
            c.show_pull_backoff_at = None;
            c.resolved = Some(resolved.clone());
        }
        let Some(mut spec) = self
            .sandbox_spec(init, index, now_i, &container, &resolved)
            .await
        else {
            return;
        };
        let starts = self.ctr(init, index).starts;
        let log = self.dir.join(&container.name).join(format!("{starts}.log"));
        // Each start gets an empty termination message file, bound last so it lands on top
        // of any volume that holds its path.
        let message = match termination::prepare(&self.dir, &container, starts) {
            Ok(Some((file, bind))) => {
                spec.binds.push(bind);
                Some(file)
            }
            Ok(None) => None,
            Err(e) => {
                let c = self.ctr(init, index);
                c.state = waiting(
                    "CreateContainerError",
                    Some(format!("cannot create the termination message file: {e}")),
                );
                c.next_start = Some(now_i + Duration::from_secs(1));
                return;
            }
        };
        let handle = match self.node.sandboxes.spawn(&spec, &log) {
            Ok(h) => h,
            Err(e) => {
                let backoff = self.node.settings.crash_loop_backoff;
                let c = self.ctr(init, index);
                let delay = backoff.next(c.crash_backoff);
                c.crash_backoff = Some(delay);
                c.next_start = Some(now_i + delay);
                c.state = waiting("RunContainerError", Some(e.to_string()));
                return;
            }
        };
        for (reason, message) in [
            (
                "Pulled",
                format!("Container image \"{image_ref}\" already present on machine"),
            ),
            ("Created", format!("Created container: {}", container.name)),
            ("Started", format!("Started container {}", container.name)),
        ] {
            self.event(&container.name, init, EventType::Normal, reason, message);
        }
        self.node.logs.started(
            &self.namespace,
            &self.name,
            &container.name,
            &self.dir,
            starts,
        );
        let id = new_container_id();
        let started_at = now();
        let exits = self.exits.clone();
        let watch_handle = handle.clone();
        let watch_id = id.clone();
        tokio::spawn(async move {
            let code = watch_handle.wait().await;
            let _ = exits.send(Exit {
                init,
                index,
                id: watch_id,
                code,
            });
        });
        let files = StartFiles { spec, log, message };
        let restart_count =
            self.record_start(init, index, now_i, handle, id.clone(), started_at, files);
        tracing::debug!(pod = %pod_ref, container = %container.name, %id, restart_count, "container started");
        if !init {
            self.answer_restarts(index, &id, restart_count);
        }
    }

    /// While an image pull backs off: after a moment `ErrImagePull` reads `ImagePullBackOff`.
    fn show_pull_backoff(&mut self, init: bool, index: usize, now_i: Instant) {
        let c = self.ctr(init, index);
        if c.show_pull_backoff_at.is_some_and(|t| now_i >= t) {
            c.show_pull_backoff_at = None;
            let image = c.spec.image.clone().unwrap_or_default();
            let message = format!("Back-off pulling image \"{image}\"");
            c.state = waiting("ImagePullBackOff", Some(message.clone()));
            let name = c.spec.name.clone();
            self.event(&name, init, EventType::Normal, "BackOff", message);
        }
    }

    /// The image is not in the catalogue: `ErrImagePull`, retried after the pull back-off.
    fn image_not_found(&mut self, init: bool, index: usize, now_i: Instant, image_ref: &str) {
        let previous = self.ctr(init, index).pull_backoff;
        let delay = self.node.settings.image_pull_backoff.next(previous);
        let c = self.ctr(init, index);
        c.pull_backoff = Some(delay);
        c.next_start = Some(now_i + delay);
        c.show_pull_backoff_at = Some(now_i + ERR_IMAGE_PULL_SHOWN.min(delay / 2));
        c.state = waiting(
            "ErrImagePull",
            Some(format!(
                "Failed to pull image \"{image_ref}\": reference not found in the embedded node's image catalogue (add it with ImageCatalogue::insert)"
            )),
        );
        let cname = c.spec.name.clone();
        self.node
            .logs
            .waiting(&self.namespace, &self.name, &cname, "ErrImagePull");
        self.event(
            &cname,
            init,
            EventType::Warning,
            "Failed",
            format!(
                "Failed to pull image \"{image_ref}\": not in the embedded node's image catalogue"
            ),
        );
    }

    /// The container's sandbox: environment, mounts, a fresh `/tmp`, resolv.conf and hostname;
    /// `None` (the container waits with the reason) when it cannot be built.
    async fn sandbox_spec(
        &mut self,
        init: bool,
        index: usize,
        now_i: Instant,
        container: &Container,
        resolved: &ResolvedImage,
    ) -> Option<SandboxSpec> {
        let built: Result<SandboxSpec, ConfigError> = async {
            let env = container_spec::environment(
                &self.node.client,
                &self.pod,
                &self.ip,
                container,
                resolved,
                self.node.settings.master_service,
            )
            .await?;
            let volumes = self.volumes.clone().unwrap_or_default();
            container_spec::sandbox_spec(container, resolved, env, &volumes)
        }
        .await;
        let mut spec = match built {
            Ok(spec) => spec,
            Err(e) => {
                let c = self.ctr(init, index);
                c.state = waiting("CreateContainerConfigError", Some(e.0));
                c.next_start = Some(now_i + Duration::from_secs(1));
                return None;
            }
        };
        // A fresh /tmp per start, like a container's fresh writable layer.
        let tmp = self.dir.join("tmp").join(&container.name);
        let _ = std::fs::remove_dir_all(&tmp);
        if let Err(e) = std::fs::create_dir_all(&tmp) {
            let c = self.ctr(init, index);
            c.state = waiting(
                "CreateContainerError",
                Some(format!("{}: {e}", tmp.display())),
            );
            c.next_start = Some(now_i + Duration::from_secs(1));
            return None;
        }
        spec.tmp_dir = Some(tmp);
        spec.resolv_conf = self.resolv_conf.clone();
        spec.hostname = Some(
            self.pod
                .spec
                .as_ref()
                .and_then(|s| s.hostname.clone())
                .unwrap_or_else(|| self.name.chars().take(63).collect()),
        );
        Some(spec)
    }

    /// Marks the container running with its new instance; returns its restart count.
    #[expect(
        clippy::too_many_arguments,
        reason = "the parts of one started instance, moved out of try_start as they were"
    )]
    fn record_start(
        &mut self,
        init: bool,
        index: usize,
        now_i: Instant,
        handle: SandboxHandle,
        id: String,
        started_at: Time,
        files: StartFiles,
    ) -> i32 {
        let track = |probe: &Option<Probe>| Track {
            next: probe
                .as_ref()
                .map(|p| now_i + probes::timing(p).initial_delay),
            ..Default::default()
        };
        let c = self.ctr(init, index);
        if c.ever_started {
            c.restart_count += 1;
            c.last_state = c.last_terminated.clone();
        }
        c.ever_started = true;
        c.starts += 1;
        c.next_start = None;
        c.ready = false;
        c.started = c.spec.startup_probe.is_none();
        c.state = ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(started_at.clone()),
            }),
            ..Default::default()
        };
        c.run = Some(Instance {
            readiness: track(&c.spec.readiness_probe),
            liveness: track(&c.spec.liveness_probe),
            startup: track(&c.spec.startup_probe),
            handle,
            id,
            started_at,
            since: now_i,
            spec: files.spec,
            log: files.log,
            message: files.message,
            stopping: false,
        });
        c.restart_count
    }

    /// Answers the in-place restarts of main container `index` that were waiting for it.
    fn answer_restarts(&mut self, index: usize, id: &str, restart_count: i32) {
        let (done, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_restarts)
            .into_iter()
            .partition(|p| p.index == index);
        self.pending_restarts = keep;
        for p in done {
            let _ = p.reply.send(Ok(RestartedContainer {
                old_id: p.old_id,
                new_id: id.to_owned(),
                restart_count,
            }));
        }
    }

    fn on_exit(&mut self, exit: Exit) {
        let policy = restart_policy(&self.pod);
        let backoff = self.node.settings.crash_loop_backoff;
        let pod_ref = format!("{}_{}({})", self.name, self.namespace, self.uid);
        let now_i = Instant::now();
        let limit = self.message_limit();
        let c = self.ctr(exit.init, exit.index);
        let Some(instance) = c.run.take_if(|r| r.id == exit.id) else {
            return;
        };
        let terminated = ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: exit.code,
                reason: Some(if exit.code == 0 { "Completed" } else { "Error" }.to_string()),
                started_at: Some(instance.started_at.clone()),
                finished_at: Some(now()),
                container_id: Some(instance.id.clone()),
                signal: (exit.code > 128).then_some(exit.code - 128),
                message: instance.termination_message(exit.code, limit),
            }),
            ..Default::default()
        };
        c.last_exit = Some(exit.code);
        c.ready = false;
        c.started = false;
        c.last_terminated = Some(terminated.clone());
        let restart = if c.init {
            exit.code != 0 && policy != "Never"
        } else {
            match policy.as_str() {
                "Never" => false,
                "OnFailure" => exit.code != 0,
                _ => true,
            }
        };
        let name = c.spec.name.clone();
        self.node.logs.exited(&self.namespace, &self.name, &name);
        let c = self.ctr(exit.init, exit.index);
        if !restart {
            c.done = true;
            c.state = terminated;
            let failed_init = c.init && exit.code != 0;
            let state = c.describe();
            if failed_init {
                self.terminal = Some("Failed");
            }
            let (gone, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_restarts)
                .into_iter()
                .partition(|p| !exit.init && p.index == exit.index);
            self.pending_restarts = keep;
            for p in gone {
                let _ = p.reply.send(Err(RestartError::NotRestarted {
                    namespace: self.namespace.clone(),
                    pod: self.name.clone(),
                    container: name.clone(),
                    policy: policy.clone(),
                    state: state.clone(),
                }));
            }
            return;
        }
        if now_i.duration_since(instance.since) >= backoff.max * BACKOFF_RESET_FACTOR {
            c.crash_backoff = None;
        }
        match c.crash_backoff {
            None => {
                c.next_start = None;
                c.crash_backoff = Some(backoff.initial);
                c.state = terminated;
            }
            Some(delay) => {
                c.next_start = Some(now_i + delay);
                c.crash_backoff = Some(backoff.next(Some(delay)));
                c.last_state = Some(terminated);
                c.state = waiting(
                    "CrashLoopBackOff",
                    Some(format!(
                        "back-off {}s restarting failed container={name} pod={pod_ref}",
                        delay.as_secs()
                    )),
                );
                self.event(
                    &name,
                    exit.init,
                    EventType::Warning,
                    "BackOff",
                    format!("Back-off restarting failed container {name} in pod {pod_ref}"),
                );
            }
        }
    }

    /// The running instance of `container`, as the kubelet's `findContainer` finds it: a
    /// container that is not running is "not found".
    fn locate(&self, container: &str) -> Result<super::RunningContainer, String> {
        self.apps
            .iter()
            .chain(self.init.iter())
            .find(|c| c.spec.name == container)
            .and_then(|c| {
                let run = c.run.as_ref().filter(|r| !r.stopping)?;
                Some(super::RunningContainer {
                    handle: run.handle.clone(),
                    spec: run.spec.clone(),
                })
            })
            .ok_or_else(|| format!("container not found ({container:?})"))
    }

    /// Holds app container `container` down (stopping it when it runs) or releases it.
    fn hold(&mut self, container: &str, down: bool) -> Result<(), RestartError> {
        let Some(index) = self.apps.iter().position(|c| c.spec.name == container) else {
            return Err(RestartError::NotRunning {
                namespace: self.namespace.clone(),
                pod: self.name.clone(),
                container: container.to_string(),
                state: "no such container in the pod spec".into(),
            });
        };
        let grace = termination_grace(&self.pod);
        let c = &mut self.apps[index];
        c.held = down;
        if !down {
            c.next_start = None;
            return Ok(());
        }
        self.stop_app(index, grace);
        Ok(())
    }

    /// Stops app container `index` when it runs (SIGTERM, `grace`, SIGKILL), once; its exit
    /// comes back through `on_exit`.
    fn stop_app(&mut self, index: usize, grace: Duration) {
        let c = &mut self.apps[index];
        let name = c.spec.name.clone();
        let Some(run) = c.run.as_mut().filter(|r| !r.stopping) else {
            return;
        };
        run.stopping = true;
        let handle = run.handle.clone();
        tokio::spawn(async move {
            handle.stop(grace).await;
        });
        self.event(
            &name,
            false,
            EventType::Normal,
            "Killing",
            format!("Stopping container {name}"),
        );
    }

    fn restart(
        &mut self,
        container: &str,
        reply: oneshot::Sender<Result<RestartedContainer, RestartError>>,
    ) {
        let Some(index) = self.apps.iter().position(|c| c.spec.name == container) else {
            let _ = reply.send(Err(RestartError::NotRunning {
                namespace: self.namespace.clone(),
                pod: self.name.clone(),
                container: container.to_string(),
                state: "no such container in the pod spec".into(),
            }));
            return;
        };
        let grace = termination_grace(&self.pod);
        let c = &mut self.apps[index];
        let Some(run) = c.run.as_mut() else {
            let state = c.describe();
            let _ = reply.send(Err(RestartError::NotRunning {
                namespace: self.namespace.clone(),
                pod: self.name.clone(),
                container: container.to_string(),
                state,
            }));
            return;
        };
        self.pending_restarts.push(PendingRestart {
            index,
            old_id: run.id.clone(),
            reply,
        });
        self.stop_app(index, grace);
    }

    #[expect(
        clippy::too_many_lines,
        reason = "startup, liveness and readiness probes in that order over the same container state"
    )]
    async fn probe(&mut self) {
        let grace = termination_grace(&self.pod);
        for i in 0..self.apps.len() {
            let now_i = Instant::now();
            let c = &mut self.apps[i];
            let Some(run) = c.run.as_mut() else {
                continue;
            };
            if run.stopping {
                continue;
            }
            let container = c.spec.clone();
            if !c.started {
                let Some(probe) = &container.startup_probe else {
                    c.started = true;
                    continue;
                };
                if run.startup.next.is_some_and(|t| now_i >= t) {
                    let t = probes::timing(probe);
                    let result =
                        probes::run(probe, &container, &self.ip, &self.node.sandboxes, &run.spec)
                            .await;
                    run.startup.next = Some(Instant::now() + t.period);
                    match result {
                        ProbeResult::Success => {
                            c.started = true;
                            let n = Instant::now();
                            run.readiness.next = run.readiness.next.map(|_| n);
                            run.liveness.next = run.liveness.next.map(|_| n);
                        }
                        ProbeResult::Failure(why) => {
                            run.startup.failures += 1;
                            let kill_now = run.startup.failures >= t.failure_threshold;
                            if kill_now {
                                tracing::info!(container = %container.name, pod = %self.name, %why, "startup probe failed; restarting container");
                                kill(run, probe_grace(probe, grace));
                            }
                            probe_failed(
                                &self.node,
                                &self.pod,
                                &container.name,
                                "Startup",
                                &why,
                                kill_now,
                            );
                        }
                    }
                }
                continue;
            }
            if let Some(probe) = &container.liveness_probe
                && run.liveness.next.is_some_and(|t| now_i >= t)
            {
                let t = probes::timing(probe);
                let result =
                    probes::run(probe, &container, &self.ip, &self.node.sandboxes, &run.spec).await;
                run.liveness.next = Some(Instant::now() + t.period);
                match result {
                    ProbeResult::Success => run.liveness.failures = 0,
                    ProbeResult::Failure(why) => {
                        run.liveness.failures += 1;
                        if run.liveness.failures >= t.failure_threshold {
                            tracing::info!(container = %container.name, pod = %self.name, %why, "liveness probe failed; restarting container");
                            kill(run, probe_grace(probe, grace));
                            probe_failed(
                                &self.node,
                                &self.pod,
                                &container.name,
                                "Liveness",
                                &why,
                                true,
                            );
                            continue;
                        }
                        probe_failed(
                            &self.node,
                            &self.pod,
                            &container.name,
                            "Liveness",
                            &why,
                            false,
                        );
                    }
                }
            }
            match &container.readiness_probe {
                None => c.ready = true,
                Some(probe) if run.readiness.next.is_some_and(|t| now_i >= t) => {
                    let t = probes::timing(probe);
                    let result =
                        probes::run(probe, &container, &self.ip, &self.node.sandboxes, &run.spec)
                            .await;
                    run.readiness.next = Some(Instant::now() + t.period);
                    match result {
                        ProbeResult::Success => {
                            run.readiness.failures = 0;
                            run.readiness.successes += 1;
                            if run.readiness.successes >= t.success_threshold {
                                c.ready = true;
                            }
                        }
                        ProbeResult::Failure(why) => {
                            run.readiness.successes = 0;
                            run.readiness.failures += 1;
                            tracing::trace!(container = %container.name, pod = %self.name, %why, "readiness probe failed");
                            // Before the first success a container is simply not ready yet.
                            let was_ready = c.ready;
                            if run.readiness.failures >= t.failure_threshold || !c.ready {
                                c.ready = false;
                            }
                            if was_ready {
                                probe_failed(
                                    &self.node,
                                    &self.pod,
                                    &container.name,
                                    "Readiness",
                                    &why,
                                    false,
                                );
                            }
                        }
                    }
                }
                Some(_) => {}
            }
        }
    }

    /// Whether `claim` is one of the claims this pod's volumes mount.
    fn waits_for(&self, claim: &super::ClaimKey) -> bool {
        claim.namespace == self.namespace
            && self
                .pod
                .spec
                .iter()
                .flat_map(|s| s.volumes.iter().flatten())
                .filter_map(|v| v.persistent_volume_claim.as_ref())
                .any(|c| c.claim_name == claim.name)
    }

    fn next_deadline(&self) -> Instant {
        let mut next = Instant::now() + Duration::from_secs(3600);
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t
                && t < next
            {
                next = t;
            }
        };
        consider(self.publish_retry);
        if self.terminal.is_some() {
            return next;
        }
        if self.volumes.is_none() {
            consider(self.volume_retry);
        }
        for c in self.init.iter().chain(self.apps.iter()) {
            match &c.run {
                Some(run) if !run.stopping => {
                    consider(run.startup.next.filter(|_| !c.started));
                    consider(run.liveness.next.filter(|_| c.started));
                    consider(run.readiness.next.filter(|_| c.started));
                }
                Some(_) => {}
                None if !c.done && !c.held => {
                    consider(c.show_pull_backoff_at);
                    consider(c.next_start);
                }
                None => {}
            }
        }
        next
    }

    fn phase(&self) -> &'static str {
        if let Some(t) = self.terminal {
            return t;
        }
        if !self.init_done || self.apps.iter().any(|c| !c.ever_started) {
            return "Pending";
        }
        "Running"
    }

    fn build_status(&mut self) -> PodStatus {
        let phase = self.phase();
        let volumes_ready = self.volumes.is_some();
        if !volumes_ready {
            let message = self.volume_message.clone();
            for c in self.init.iter_mut().chain(self.apps.iter_mut()) {
                if !c.ever_started {
                    c.state = waiting("ContainerCreating", None);
                }
            }
            if let Some(m) = message {
                tracing::trace!(pod = %self.name, message = %m, "volumes not ready");
            }
        } else if !self.init_done {
            for c in self.apps.iter_mut() {
                if !c.ever_started {
                    c.state = waiting("PodInitializing", None);
                }
            }
        }
        let unready: Vec<String> = self
            .apps
            .iter()
            .filter(|c| !c.ready)
            .map(|c| c.spec.name.clone())
            .collect();
        let uninitialized: Vec<String> = self
            .init
            .iter()
            .filter(|c| !c.done || c.last_exit != Some(0))
            .map(|c| c.spec.name.clone())
            .collect();
        let completed = self.terminal == Some("Succeeded");
        let ready = unready.is_empty() && self.terminal.is_none();
        let (ready_reason, ready_message) = if ready {
            (None, None)
        } else if completed {
            (Some("PodCompleted"), None)
        } else {
            (
                Some("ContainersNotReady"),
                Some(format!(
                    "containers with unready status: [{}]",
                    unready.join(" ")
                )),
            )
        };
        let conditions = vec![
            self.conditions
                .condition("PodReadyToStartContainers", volumes_ready, None, None),
            if self.init_done {
                self.conditions.condition(
                    "Initialized",
                    true,
                    completed.then_some("PodCompleted"),
                    None,
                )
            } else {
                self.conditions.condition(
                    "Initialized",
                    false,
                    Some("ContainersNotInitialized"),
                    Some(format!(
                        "containers with incomplete status: [{}]",
                        uninitialized.join(" ")
                    )),
                )
            },
            self.conditions
                .condition("Ready", ready, ready_reason, ready_message.clone()),
            self.conditions
                .condition("ContainersReady", ready, ready_reason, ready_message),
            self.conditions.condition("PodScheduled", true, None, None),
        ];
        PodStatus {
            phase: Some(phase.to_string()),
            conditions: Some(conditions),
            host_ip: Some("127.0.0.1".into()),
            host_ips: Some(vec![HostIP {
                ip: "127.0.0.1".into(),
            }]),
            pod_ip: Some(self.ip.clone()),
            pod_ips: Some(vec![PodIP {
                ip: self.ip.clone(),
            }]),
            start_time: Some(self.start_time.clone()),
            qos_class: Some(qos_class(&self.pod)),
            init_container_statuses: (!self.init.is_empty())
                .then(|| self.init.iter().map(Ctr::status).collect()),
            container_statuses: Some(sorted_by_name(self.apps.iter().map(Ctr::status).collect())),
            ..Default::default()
        }
    }

    async fn publish(&mut self) {
        let status = self.build_status();
        let value = serde_json::to_value(&status).unwrap_or_default();
        if self.last_published.as_ref() == Some(&value) {
            return;
        }
        let api: Api<Pod> = Api::namespaced(self.node.client.clone(), &self.namespace);
        let patch = serde_json::json!({ "status": value });
        match api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                self.last_published = Some(value);
                self.publish_retry = None;
                self.publish_backoff.reset();
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {
                self.last_published = Some(value);
            }
            Err(error) => {
                tracing::warn!(pod = %self.name, namespace = %self.namespace, %error, "pod status update failed; retrying");
                let delay = self
                    .publish_backoff
                    .next()
                    .unwrap_or(Duration::from_secs(5));
                self.publish_retry = Some(Instant::now() + delay);
            }
        }
    }

    /// Ends every running container: SIGTERM, up to `grace`, SIGKILL; statuses become
    /// terminated and the pod gets its terminal phase.
    async fn terminate(&mut self, grace: Duration) {
        let running: Vec<(bool, usize, SandboxHandle, String)> = self
            .init
            .iter()
            .enumerate()
            .chain(self.apps.iter().enumerate())
            .filter_map(|(i, c)| {
                c.run
                    .as_ref()
                    .map(|r| (c.init, i, r.handle.clone(), r.id.clone()))
            })
            .collect();
        let stops = running
            .into_iter()
            .map(|(init, index, handle, id)| async move {
                let code = handle.stop(grace).await;
                Exit {
                    init,
                    index,
                    id,
                    code,
                }
            });
        let exits = futures::future::join_all(stops).await;
        let limit = self.message_limit();
        for exit in exits {
            let c = self.ctr(exit.init, exit.index);
            // Terminal: no restarts after a termination.
            c.done = true;
            if let Some(instance) = c.run.take() {
                c.last_exit = Some(exit.code);
                c.ready = false;
                let message = instance.termination_message(exit.code, limit);
                c.state = ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code: exit.code,
                        reason: Some(if exit.code == 0 { "Completed" } else { "Error" }.into()),
                        started_at: Some(instance.started_at),
                        finished_at: Some(now()),
                        container_id: Some(instance.id),
                        signal: (exit.code > 128).then_some(exit.code - 128),
                        message,
                    }),
                    ..Default::default()
                };
            }
            let name = c.spec.name.clone();
            self.node.logs.exited(&self.namespace, &self.name, &name);
        }
        for c in self.init.iter_mut().chain(self.apps.iter_mut()) {
            c.done = true;
            c.ready = false;
        }
        if self.terminal.is_none() {
            let ok = self.apps.iter().all(|c| c.last_exit == Some(0));
            self.terminal = Some(if ok { "Succeeded" } else { "Failed" });
        }
        self.pending_restarts.clear();
    }

    async fn delete(&mut self) {
        let api: Api<Pod> = Api::namespaced(self.node.client.clone(), &self.namespace);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(self.uid.clone()),
                resource_version: None,
            }),
            ..Default::default()
        };
        // About the old budget of 20 tries 200 ms apart, with growing gaps.
        let mut backoff = super::api_retry_backoff(Duration::from_secs(1), false);
        for attempt in 0..8 {
            match api.delete(&self.name, &params).await {
                Ok(_) => break,
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => break,
                Err(error) => {
                    tracing::warn!(pod = %self.name, namespace = %self.namespace, %error, attempt, "pod delete failed; retrying");
                    let delay = backoff.next().unwrap_or(Duration::from_secs(1));
                    tokio::time::sleep(delay).await;
                }
            }
        }
        self.node.mark_finished(&self.uid);
    }
}

fn probe_failed(node: &Node, pod: &Pod, container: &str, kind: &str, why: &str, restarting: bool) {
    let object = || reference(pod, Some(format!("spec.containers{{{container}}}")));
    node.events.emit(
        object(),
        EventType::Warning,
        "Unhealthy",
        format!("{kind} probe failed: {why}"),
    );
    if restarting {
        node.events.emit(
            object(),
            EventType::Normal,
            "Killing",
            format!(
                "Container {container} failed {} probe, will be restarted",
                kind.to_lowercase()
            ),
        );
    }
}

fn probe_grace(probe: &Probe, pod_grace: Duration) -> Duration {
    probe
        .termination_grace_period_seconds
        .map(|s| Duration::from_secs(s.max(0) as u64))
        .unwrap_or(pod_grace)
}

fn kill(run: &mut Instance, grace: Duration) {
    run.stopping = true;
    let handle = run.handle.clone();
    tokio::spawn(async move {
        handle.stop(grace).await;
    });
}

/// App container statuses as a real kubelet publishes them: sorted by container name, not in
/// spec order (init container statuses keep spec order). An operator that finds a container's
/// status by position instead of by name is wrong on a real cluster, so it is wrong here too.
fn sorted_by_name(mut statuses: Vec<ContainerStatus>) -> Vec<ContainerStatus> {
    statuses.sort_by(|a, b| a.name.cmp(&b.name));
    statuses
}
