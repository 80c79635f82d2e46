//! The kubelet: runs the pods bound to this node as sandboxed processes and reports their
//! status through the API server, like the real kubelet (watch → sync → status subresource).
//!
//! One task per pod (`pod_worker`) owns that pod's containers; this module watches pods,
//! starts and feeds workers, and offers the node's fault operation (restart a container).

mod container_spec;
mod fields;
pub mod logs;
mod pod_worker;
mod probes;
mod status;
pub mod streams;
mod termination;
mod volumes;

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::runtime::watcher::ExponentialBackoff;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::images::ImageCatalogue;
use crate::node::Backoff;
use crate::pod_ips::PodIps;
use crate::sandbox::Sandboxes;
pub use logs::{LogIndex, LogLookupError, LogQuery};
pub use status::now as status_now;

/// The back-off between retries of a failed API call (a status patch, a delete): 200 ms
/// doubling to `max`, kube-runtime's exponential back-off (reset it after a success).
pub(crate) fn api_retry_backoff(max: Duration, jitter: bool) -> ExponentialBackoff {
    let builder = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(max)
        .without_max_times();
    if jitter {
        builder.with_jitter().into()
    } else {
        builder.into()
    }
}

/// The node's fixed settings.
#[derive(Clone, Debug)]
pub struct NodeSettings {
    /// The Node name pods are bound to.
    pub name: String,
    /// The cluster's state directory (pods live in `<state>/pods/<uid>`).
    pub state_dir: PathBuf,
    /// The image catalogue.
    pub images: ImageCatalogue,
    /// First pod IP.
    pub first_pod_ip: Ipv4Addr,
    /// Back-off between failed image pulls (`ImagePullBackOff`).
    pub image_pull_backoff: Backoff,
    /// Back-off between container restarts (`CrashLoopBackOff`).
    pub crash_loop_backoff: Backoff,
    /// The cluster DNS server pods with `dnsPolicy: ClusterFirst` resolve through.
    pub cluster_dns: Option<Ipv4Addr>,
    /// The `kubernetes` Service (cluster IP, port) every container gets
    /// `KUBERNETES_SERVICE_HOST`/`_PORT` for.
    pub master_service: Option<std::net::SocketAddrV4>,
}

/// The result of an in-place container restart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestartedContainer {
    /// The container ID that was stopped.
    pub old_id: String,
    /// The container ID of the new start.
    pub new_id: String,
    /// `restartCount` after the restart.
    pub restart_count: i32,
}

/// Why an in-place restart failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestartError {
    /// No such pod on this node.
    #[error("pod {namespace}/{pod} is not running on node {node}")]
    NoSuchPod {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        pod: String,
        /// This node's name.
        node: String,
    },
    /// The pod has no running container of that name.
    #[error("container {container:?} of pod {namespace}/{pod} is not running ({state})")]
    NotRunning {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        pod: String,
        /// The container asked for.
        container: String,
        /// The container's state, as the pod status reports it.
        state: String,
    },
    /// The restart policy kept it stopped.
    #[error(
        "container {container:?} of pod {namespace}/{pod} stopped and was not restarted (restartPolicy {policy}, {state})"
    )]
    NotRestarted {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        pod: String,
        /// The container that stopped.
        container: String,
        /// The pod's `restartPolicy`.
        policy: String,
        /// The container's state, as the pod status reports it.
        state: String,
    },
    /// The pod ended while restarting.
    #[error("pod {namespace}/{pod} went away during the restart")]
    PodGone {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        pod: String,
    },
}

pub(crate) enum PodCommand {
    Restart {
        container: String,
        reply: oneshot::Sender<Result<RestartedContainer, RestartError>>,
    },
    /// Hold one container down (stopped, not started again, shown in `CrashLoopBackOff`) or,
    /// with `down: false`, let it start again at once.
    Hold {
        container: String,
        down: bool,
        reply: oneshot::Sender<Result<(), RestartError>>,
    },
    /// The running instance of a container (exec, attach).
    Locate {
        container: String,
        reply: oneshot::Sender<Result<RunningContainer, String>>,
    },
    /// The pod's IP (port-forward).
    Address { reply: oneshot::Sender<String> },
    /// End every container now with this grace (cluster shutdown) and stop the worker.
    Shutdown {
        grace: Duration,
        done: oneshot::Sender<()>,
    },
}

/// A running container as exec and attach need it.
#[derive(Clone, Debug)]
pub(crate) struct RunningContainer {
    pub handle: crate::sandbox::SandboxHandle,
    pub spec: crate::sandbox::SandboxSpec,
}

struct PodEntry {
    namespace: String,
    name: String,
    updates: watch::Sender<Option<Pod>>,
    commands: mpsc::UnboundedSender<PodCommand>,
    task: tokio::task::JoinHandle<()>,
}

/// Shared state of the node.
pub(crate) struct Node {
    pub client: Client,
    pub events: crate::events::Recorder,
    pub settings: NodeSettings,
    pub sandboxes: Sandboxes,
    pub ips: PodIps,
    pub logs: LogIndex,
    pods: Mutex<HashMap<String, PodEntry>>,
    /// Pods this node terminated and deleted; later events for them (finalizers still
    /// pending) must not start them again.
    finished: Mutex<std::collections::HashSet<String>>,
    /// Every PersistentVolumeClaim change, as the claim's (namespace, name), or `None` when
    /// any may have changed (the watch relisted): a pod worker waiting for its claims to bind
    /// wakes on a change of one of *its* claims instead of polling, and never on others' (a
    /// hundred pods waking on every claim of the fleet made O(pods × claims) API reads).
    pub claims_changed: broadcast::Sender<Option<ClaimKey>>,
}

impl Node {
    pub(crate) fn mark_finished(&self, uid: &str) {
        self.finished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uid.to_string());
    }
}

/// A PersistentVolumeClaim by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimKey {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// The kubelet of the embedded node.
#[derive(Clone)]
pub struct Kubelet {
    node: Arc<Node>,
}

impl Kubelet {
    /// The pod IP allocator for `settings`: the configured first address when it was changed
    /// from the default, otherwise a host-wide reserved block so concurrent clusters never
    /// share an address.
    pub fn pod_ips(settings_first_pod_ip: Ipv4Addr) -> PodIps {
        if settings_first_pod_ip == Ipv4Addr::new(127, 0, 10, 1) {
            PodIps::reserve(&std::env::temp_dir().join("rehearsal-embedded").join("ip-blocks"))
                .unwrap_or_else(|e| {
                    tracing::warn!(%e, "cannot reserve a pod IP block; falling back to the configured first address");
                    PodIps::new(settings_first_pod_ip)
                })
        } else {
            PodIps::new(settings_first_pod_ip)
        }
    }

    /// A kubelet for `settings` that talks to the API server through `client` and gives pods
    /// addresses from `ips`.
    pub fn new(client: Client, settings: NodeSettings, sandboxes: Sandboxes, ips: PodIps) -> Self {
        Self {
            node: Arc::new(Node {
                events: crate::events::Recorder::new(client.clone(), "kubelet"),
                client,
                settings,
                sandboxes,
                ips,
                logs: LogIndex::default(),
                pods: Mutex::new(HashMap::new()),
                finished: Mutex::default(),
                claims_changed: broadcast::Sender::new(1024),
            }),
        }
    }

    /// The container log index (backs `pods/log`).
    pub fn logs(&self) -> LogIndex {
        self.node.logs.clone()
    }

    /// Watches pods and runs those bound to this node until the task is aborted.
    pub async fn run(self) {
        tokio::join!(self.clone().watch_claims(), self.watch_pods());
    }

    /// Wakes the pod workers that wait for claims on every claim change (a bind, a new claim).
    async fn watch_claims(self) {
        let api: Api<PersistentVolumeClaim> = Api::all(self.node.client.clone());
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = events.next().await {
            let changed = match event {
                Ok(
                    watcher::Event::Apply(pvc)
                    | watcher::Event::Delete(pvc)
                    | watcher::Event::InitApply(pvc),
                ) => Some(ClaimKey {
                    namespace: pvc.metadata.namespace.unwrap_or_default(),
                    name: pvc.metadata.name.unwrap_or_default(),
                }),
                Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
                Err(error) => {
                    tracing::warn!(%error, "kubelet claim watch failed; retrying");
                    continue;
                }
            };
            // No worker waiting is not an error.
            let _ = self.node.claims_changed.send(changed);
        }
    }

    async fn watch_pods(self) {
        let api: Api<Pod> = Api::all(self.node.client.clone());
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut seen_in_init: Option<std::collections::HashSet<String>> = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(pod)) => self.observe(pod),
                Ok(watcher::Event::Delete(pod)) => {
                    if let Some(uid) = pod.metadata.uid.as_deref() {
                        self.forget(uid);
                    }
                }
                Ok(watcher::Event::Init) => seen_in_init = Some(Default::default()),
                Ok(watcher::Event::InitApply(pod)) => {
                    if let (Some(seen), Some(uid)) =
                        (seen_in_init.as_mut(), pod.metadata.uid.as_ref())
                    {
                        seen.insert(uid.clone());
                    }
                    self.observe(pod);
                }
                Ok(watcher::Event::InitDone) => {
                    // Pods that vanished while the watch was re-listing are gone.
                    if let Some(seen) = seen_in_init.take() {
                        let gone: Vec<String> = self
                            .lock()
                            .keys()
                            .filter(|uid| !seen.contains(*uid))
                            .cloned()
                            .collect();
                        for uid in gone {
                            self.forget(&uid);
                        }
                    }
                }
                Err(error) => {
                    // The stream waits out kube-runtime's watcher back-off before retrying.
                    tracing::warn!(%error, "kubelet pod watch failed; retrying");
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PodEntry>> {
        self.node.pods.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn observe(&self, pod: Pod) {
        let on_node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
            == Some(self.node.settings.name.as_str());
        let Some(uid) = pod.metadata.uid.clone() else {
            return;
        };
        if !on_node
            || self
                .node
                .finished
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&uid)
        {
            return;
        }
        let mut pods = self.lock();
        if let Some(entry) = pods.get(&uid) {
            let _ = entry.updates.send(Some(pod));
            return;
        }
        // A pod that already finished before this kubelet saw it is left alone.
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded") | Some("Failed"))
            && pod.metadata.deletion_timestamp.is_none()
        {
            return;
        }
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let (updates, updates_rx) = watch::channel(Some(pod.clone()));
        let (commands, commands_rx) = mpsc::unbounded_channel();
        let node = self.node.clone();
        let task_uid = uid.clone();
        let task = tokio::spawn(async move {
            pod_worker::run(node.clone(), pod, updates_rx, commands_rx).await;
            node.pods
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&task_uid);
        });
        pods.insert(
            uid,
            PodEntry {
                namespace,
                name,
                updates,
                commands,
                task,
            },
        );
    }

    fn forget(&self, uid: &str) {
        if let Some(entry) = self.lock().get(uid) {
            let _ = entry.updates.send(None);
        }
    }

    /// The command channel of a pod this node runs (matching `uid` when one is given).
    fn commands_for(
        &self,
        namespace: &str,
        pod: &str,
        uid: Option<&str>,
    ) -> Option<mpsc::UnboundedSender<PodCommand>> {
        self.lock()
            .iter()
            .find(|(u, e)| {
                e.namespace == namespace
                    && e.name == pod
                    && uid.is_none_or(|want| want == u.as_str())
            })
            .map(|(_, e)| e.commands.clone())
    }

    /// Sends the command `make` builds to the worker of `namespace/pod` on this node and awaits
    /// its answer.
    async fn ask_pod<T>(
        &self,
        namespace: &str,
        pod: &str,
        make: impl FnOnce(oneshot::Sender<Result<T, RestartError>>) -> PodCommand,
    ) -> Result<T, RestartError> {
        let gone = || RestartError::PodGone {
            namespace: namespace.to_string(),
            pod: pod.to_string(),
        };
        let Some(sender) = self.commands_for(namespace, pod, None) else {
            return Err(RestartError::NoSuchPod {
                namespace: namespace.to_string(),
                pod: pod.to_string(),
                node: self.node.settings.name.clone(),
            });
        };
        let (reply, answer) = oneshot::channel();
        sender.send(make(reply)).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// Restarts one container of a running pod in place (`crictl stop` on a Kind node).
    pub async fn restart_container(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Result<RestartedContainer, RestartError> {
        self.ask_pod(namespace, pod, |reply| PodCommand::Restart {
            container: container.to_string(),
            reply,
        })
        .await
    }

    /// Holds one container of a running pod down (`down`: stopped like `crictl stop` and not
    /// started again, its status waiting in `CrashLoopBackOff`, however long that takes) or
    /// lets a held one start again at once. Returns once the pod's worker took the command;
    /// the container's status shows the rest.
    pub async fn hold_container(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        down: bool,
    ) -> Result<(), RestartError> {
        self.ask_pod(namespace, pod, |reply| PodCommand::Hold {
            container: container.to_string(),
            down,
            reply,
        })
        .await
    }

    /// Ends every pod's containers (SIGTERM, up to `grace`, SIGKILL) and stops the workers.
    pub async fn shutdown(&self, grace: Duration) {
        let entries: Vec<(mpsc::UnboundedSender<PodCommand>, tokio::task::AbortHandle)> = self
            .lock()
            .values()
            .map(|e| (e.commands.clone(), e.task.abort_handle()))
            .collect();
        let waits = entries.into_iter().map(|(sender, abort)| async move {
            let (done, finished) = oneshot::channel();
            if sender.send(PodCommand::Shutdown { grace, done }).is_ok() {
                let _ = tokio::time::timeout(grace + Duration::from_secs(5), finished).await;
            }
            abort.abort();
        });
        futures::future::join_all(waits).await;
    }

    /// Aborts every pod worker (their sandboxes are killed by the caller).
    pub fn abort(&self) {
        for entry in self.lock().values() {
            entry.task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kube::runtime::utils::Backoff as _;

    use super::api_retry_backoff;

    #[test]
    fn api_retries_back_off_from_200ms_to_the_cap_and_reset() {
        let ms = Duration::from_millis;
        let mut backoff = api_retry_backoff(Duration::from_secs(1), false);
        // backon multiplies in floating point: compare whole milliseconds.
        let first: Vec<u128> = backoff.by_ref().take(5).map(|d| d.as_millis()).collect();
        assert_eq!(first, [200, 400, 800, 1000, 1000]);
        backoff.reset();
        assert_eq!(backoff.next(), Some(ms(200)), "a success starts over");
        let mut jittered = api_retry_backoff(Duration::from_secs(5), true);
        let delay = jittered.next().expect("no retry limit");
        assert!(
            delay >= ms(200) && delay <= ms(400),
            "jitter adds at most one delay: {delay:?}"
        );
    }
}
