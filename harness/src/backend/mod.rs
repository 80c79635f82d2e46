//! Cluster backends behind one trait: [`embedded::Embedded`] (the in-process cluster with the
//! reference operator), [`kind::Kind`] (the `kind` CLI plus bollard for node containers) and
//! [`existing::Existing`] (a kubeconfig and an explicitly named context).
//!
//! Everything above this layer talks to the cluster only through the [`kube::Client`] a backend
//! hands out, so one rehearsal case runs unchanged on all three. The few things kube cannot do
//! portably (restart one container of a pod in place, reach a pod's port from the host, load
//! images, export node logs) are the trait's methods.
//!
//! The trait is object-safe (methods return boxed futures) so callers hold a `Box<dyn Backend>`.
//!
//! Beside the backends: [`kubeconfig`] (context pinning), [`node_engine`] (node containers via
//! bollard) and [`port_forward`] (reaching pods through the API server).

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

pub mod embedded;
pub mod existing;
pub mod hold;
pub mod images;
pub mod kind;
pub mod kubeconfig;
pub mod node_engine;
pub mod operator_pod;
pub mod port_forward;
pub mod registry_gate;
pub mod rest_gate;
pub mod rest_server;

pub use port_forward::PortForward;

/// A boxed, sendable future: what the [`Backend`] methods return (keeps the trait object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which backend a cluster comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The in-process cluster (embedded API server and node) with the reference operator.
    Embedded,
    /// A Kind cluster the harness created or reuses through the `kind` CLI.
    Kind,
    /// A cluster the user already has, reached through their kubeconfig and a named context.
    Existing,
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendKind::Embedded => "embedded",
            BackendKind::Kind => "kind",
            BackendKind::Existing => "existing",
        })
    }
}

/// A node architecture in Kubernetes' spelling (`amd64`, `arm64`, …).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Arch(pub String);

impl Arch {
    /// Normalises kernel (`uname -m`) and Rust spellings to Kubernetes' (`x86_64` → `amd64`).
    pub fn normalize(raw: &str) -> Self {
        let raw = raw.trim();
        Arch(
            match raw {
                "x86_64" | "amd64" => "amd64",
                "aarch64" | "arm64" => "arm64",
                "armv7l" | "arm" => "arm",
                "s390x" => "s390x",
                "ppc64le" | "powerpc64le" => "ppc64le",
                other => other,
            }
            .to_string(),
        )
    }

    /// The architecture of the machine the harness runs on.
    pub fn host() -> Self {
        Self::normalize(std::env::consts::ARCH)
    }

    /// The name as Kubernetes spells it (`kubernetes.io/arch`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a backend operation failed; each variant names the object or tool and what to do.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// Running a host tool (`kind`, `kubectl`, `helm`, …) failed.
    #[error(transparent)]
    Process(#[from] crate::process::ProcessError),
    /// The kubeconfig or its context could not be used.
    #[error(transparent)]
    Kubeconfig(#[from] kubeconfig::KubeconfigError),
    /// The node containers' engine (podman or docker) refused or failed.
    #[error(transparent)]
    Engine(#[from] node_engine::EngineError),
    #[error(
        "Kubernetes API call failed ({what}): {}",
        crate::kube_error::line(source)
    )]
    /// A Kubernetes API call failed.
    Kube {
        /// The call, e.g. `list nodes`.
        what: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// A pod's status lacks what the operation needs (not scheduled or not running yet).
    #[error("pod {namespace}/{pod} has no {what}; is it scheduled and running?")]
    PodState {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// What was missing, e.g. `pod IP`, `node name`, `container ID`.
        what: String,
    },
    /// The pod has no container of the requested name.
    #[error("pod {namespace}/{pod} has no container named `{container}` (it has: {available})")]
    NoSuchContainer {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The container asked for.
        container: String,
        /// The pod's containers, comma-separated.
        available: String,
    },
    /// This backend cannot do the operation at all; cases record it as not applicable.
    #[error("{backend} backend cannot {operation}: {why}")]
    Unsupported {
        /// The backend asked.
        backend: BackendKind,
        /// The operation, e.g. `restart a container in place`.
        operation: String,
        /// Why, and what would make it possible.
        why: String,
    },
    /// A local file operation failed.
    #[error("cannot {what} at {path}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The file or directory involved.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A cluster could not be brought up, reached or prepared; the message names the cause and fix.
    #[error("{0}")]
    Setup(String),
}

impl BackendError {
    pub(crate) fn kube(what: impl Into<String>, source: kube::Error) -> Self {
        BackendError::Kube {
            what: what.into(),
            source,
        }
    }
    pub(crate) fn io(what: impl Into<String>, path: &Path, source: std::io::Error) -> Self {
        BackendError::Io {
            what: what.into(),
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Where a pod's port can be reached from the harness. Keep it alive while connecting:
/// on Kind and existing clusters it owns the port-forward listener.
#[derive(Debug)]
pub struct Reach {
    /// Connect here.
    pub addr: SocketAddr,
    /// The port-forward, when one was needed (dropped → listener closed).
    pub forward: Option<PortForward>,
}

/// One cluster the harness rehearses on.
pub trait Backend: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;
    /// The cluster's name (Kind cluster name, kube context, or the embedded state dir's name).
    fn name(&self) -> &str;
    /// A client pinned to this cluster's context.
    fn client(&self) -> kube::Client;
    /// The kubeconfig file that `kubectl`/`helm` should use, and the context to pin.
    fn kubeconfig(&self) -> (&Path, &str);

    /// How many HTTP requests the cluster's API server has received, where the harness owns
    /// it (the embedded cluster); `None` elsewhere. For benchmarks.
    fn api_requests(&self) -> Option<u64> {
        None
    }
    /// The nodes' architecture (from the Node object, else the host's).
    fn arch(&self) -> BoxFuture<'_, Result<Arch, BackendError>> {
        let client = self.client();
        Box::pin(async move { node_arch(&client).await })
    }
    /// Restarts one container of a pod in place (same pod UID, new container ID, restartCount+1).
    fn restart_container<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        container: &'a str,
    ) -> BoxFuture<'a, Result<(), BackendError>>;
    /// Holds one container of a pod down (stopped, not started again, its status waiting in
    /// `CrashLoopBackOff`) or, with `down: false`, lets it start again at once. Only the
    /// embedded cluster's kubelet is the harness's own; elsewhere a kubelet's back-off ends
    /// when it will, and this is [`BackendError::Unsupported`].
    fn hold_container<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        container: &'a str,
        down: bool,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        let _ = (namespace, pod, container, down);
        let backend = self.kind();
        Box::pin(async move {
            Err(BackendError::Unsupported {
                backend,
                operation: "hold a container down".into(),
                why: "a kubelet the harness does not own restarts a container when its back-off ends; explore on the embedded cluster".into(),
            })
        })
    }
    /// An address on which the harness can connect to `port` of a pod.
    fn reach<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Reach, BackendError>>;
    /// The content digest (`sha256:…`) of image `reference` as the source the nodes pull from
    /// holds it (the embedded image catalogue, a registry), read without running it on a node,
    /// so a gate that compares a container's `imageID` with it is not comparing the node's
    /// report with itself. `Ok(None)`: this backend cannot tell.
    fn image_digest<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BackendError>> {
        let _ = reference;
        Box::pin(async { Ok(None) })
    }
    /// Kills the operator under test without grace, as a crash would, and returns once it no
    /// longer runs: the embedded cluster kills its process; Kind and existing clusters scale
    /// its Deployment to zero and delete its pods with no grace period.
    fn stop_operator(&self) -> BoxFuture<'_, Result<serde_json::Value, BackendError>> {
        Box::pin(operator_pod::stop(self.client()))
    }
    /// Starts the operator stopped by [`Backend::stop_operator`] again and returns once it is
    /// ready (the embedded cluster's ready file, the Deployment available).
    fn start_operator(&self) -> BoxFuture<'_, Result<serde_json::Value, BackendError>> {
        Box::pin(operator_pod::start(self.client()))
    }
    /// Restarts the operator under test: the embedded cluster kills its process and starts a
    /// new one; Kind and existing clusters delete its pod and the Deployment brings a new one.
    /// Returns what was observed (old and new process or pod) once the new one is ready.
    fn restart_operator(&self) -> BoxFuture<'_, Result<serde_json::Value, BackendError>> {
        Box::pin(operator_pod::restart(self.client()))
    }
    /// The OCI registry module bundles are pushed to and the operator pulls them from
    /// (CONTRACT C.8): the embedded cluster starts Debian's `docker-registry` on 127.0.0.1 the
    /// first time a case asks; Kind uses its local registry (`REHEARSAL_REGISTRY`). Elsewhere
    /// (the default) there is none the harness can push to.
    fn bundle_registry(&self) -> BoxFuture<'_, Result<BundleRegistry, BackendError>> {
        let backend = self.kind();
        Box::pin(async move {
            Err(BackendError::Unsupported {
                backend,
                operation: "serve module bundles".into(),
                why: "it has no OCI registry the harness can push to and the operator can pull from; rehearse module bundles on the embedded cluster, or on Kind with REHEARSAL_REGISTRY set".into(),
            })
        })
    }
    /// From now on the operator is served other bytes for every blob of the bundle registry's
    /// `repository` (`<namespace>/<module>`), its manifests still served honestly: the
    /// `registry-other-bytes` fault, through the gate in front of the embedded cluster's
    /// registry ([`registry_gate`]). Elsewhere the operator pulls from a registry the harness
    /// does not stand in front of: [`BackendError::Unsupported`].
    fn serve_other_layer_bytes<'a>(
        &'a self,
        repository: &'a str,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        let _ = bytes;
        let backend = self.kind();
        Box::pin(async move {
            Err(BackendError::Unsupported {
                backend,
                operation: format!("serve other bytes for the layers of {repository}"),
                why: "only the embedded cluster's bundle registry is reached through the harness's gate; rehearse it on the embedded cluster".into(),
            })
        })
    }
    /// Blob requests answered with other bytes since the bundle registry started (0 where no
    /// gate stands in front of it).
    fn other_layer_bytes_served(&self) -> usize {
        0
    }
    /// Attaches the exploration hook to the cluster's API server: every mutating request
    /// passes through it (and may be held) and every committed change is reported to it
    /// (`rehearse explore`). Only the embedded cluster owns its API server; elsewhere this is
    /// [`BackendError::Unsupported`], and an exploration there is not applicable.
    fn set_request_hook(
        &self,
        hook: Option<std::sync::Arc<dyn rehearsal_embedded::RequestHook>>,
    ) -> Result<(), BackendError> {
        let _ = hook;
        Err(BackendError::Unsupported {
            backend: self.kind(),
            operation: "hold the operator's requests and record every committed change".into(),
            why: "only the embedded cluster's API server is the harness's own; explore on the embedded cluster".into(),
        })
    }
    /// Attaches the exploration's hook to the gate in front of the module bundle registry:
    /// every manifest read of the operator is told to it before it goes on (and may be held),
    /// so pulling a bundle is a point of the schedule. Only the embedded cluster's registry is
    /// reached through the harness's gate; elsewhere this is [`BackendError::Unsupported`].
    fn set_registry_hook(
        &self,
        hook: Option<std::sync::Arc<dyn registry_gate::RegistryHook>>,
    ) -> Result<(), BackendError> {
        let _ = hook;
        Err(BackendError::Unsupported {
            backend: self.kind(),
            operation: "hold the operator's reads of the module bundle registry".into(),
            why: "only the embedded cluster's bundle registry is reached through the harness's gate; explore on the embedded cluster".into(),
        })
    }
    /// Holds the next write in `namespace` that `matches` until the returned hold is released
    /// or dropped, so a case places its fault exactly before it. Only the embedded cluster owns
    /// its API server; elsewhere this is [`BackendError::Unsupported`].
    fn hold_write(
        &self,
        namespace: &str,
        matches: hold::WriteMatch,
    ) -> Result<hold::WriteHold, BackendError> {
        Err(BackendError::Unsupported {
            backend: self.kind(),
            operation: format!("hold the write {} in {namespace}", matches.label()),
            why: "only the embedded cluster's API server is the harness's own; run this case on the embedded cluster".into(),
        })
    }
    /// Holds the next request of a Job's restic to the repository that `matches` until the
    /// returned hold is released or dropped, so a case places its fault while the copy is under
    /// way. Only the embedded cluster's pods reach the repository through the harness's own
    /// gate; elsewhere this is [`BackendError::Unsupported`].
    fn hold_repository_request(
        &self,
        matches: rest_gate::RepoRequest,
    ) -> Result<rest_gate::RequestHold, BackendError> {
        Err(BackendError::Unsupported {
            backend: self.kind(),
            operation: format!("hold the repository request {}", matches.label()),
            why: "only the embedded cluster's pods reach the repository through the harness's own gate; run this case on the embedded cluster".into(),
        })
    }
    /// Withholds from the operator's watches the next event about object `name` of `resource`
    /// in `namespace` (the `dropped-event` fault): no watch of the operator receives it, they go
    /// on, and everyone else sees the event. Only the embedded cluster's API server is the harness's own; elsewhere this is
    /// [`BackendError::Unsupported`].
    fn drop_next_watch_event(
        &self,
        namespace: &str,
        resource: &str,
        name: &str,
    ) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            backend: self.kind(),
            operation: format!("withhold the next watch event about {resource} {namespace}/{name}"),
            why: "only the embedded cluster's API server is the harness's own; explore on the embedded cluster".into(),
        })
    }
    /// Waits at most `bound` until every event [`Backend::drop_next_watch_event`] armed was
    /// withheld; whether they all were (`false` where nothing can be withheld).
    fn await_events_dropped(&self, bound: std::time::Duration) -> BoxFuture<'_, bool> {
        let _ = bound;
        Box::pin(async { false })
    }
    /// Kills the operator without grace and starts it again onto a stale view (the
    /// `stale-view` fault, [`rehearsal_embedded::StaleView`]): until its first write of one of
    /// `ends_on` (the operation's resources), its lists from the cache are answered as the
    /// cluster was at resourceVersion `as_of` and its watches send nothing, as an API server
    /// whose watch cache lags behind storage; everyone else sees the present. Only the embedded cluster's API
    /// server is the harness's own; elsewhere this is [`BackendError::Unsupported`].
    fn restart_operator_onto_stale_view<'a>(
        &'a self,
        as_of: u64,
        ends_on: &'a [&'a str],
    ) -> BoxFuture<'a, Result<serde_json::Value, BackendError>> {
        let _ = ends_on;
        let backend = self.kind();
        Box::pin(async move {
            Err(BackendError::Unsupported {
                backend,
                operation: format!("serve the operator the cluster as of resourceVersion {as_of}"),
                why: "only the embedded cluster's API server is the harness's own; explore on the embedded cluster".into(),
            })
        })
    }
    /// Waits at most `bound` until a list was answered from the stale view; whether one was
    /// (`false` where none can be).
    fn await_stale_list(&self, bound: std::time::Duration) -> BoxFuture<'_, bool> {
        let _ = bound;
        Box::pin(async { false })
    }
    /// Waits at most `bound` until the operator's first write ended its stale view: that
    /// write (`patch backups/status live`); when none did, ends the view (its watches catch
    /// up) and says `None`.
    fn end_stale_view(&self, bound: std::time::Duration) -> BoxFuture<'_, Option<String>> {
        let _ = bound;
        Box::pin(async { None })
    }
    /// Makes locally built images available to the cluster's nodes.
    fn load_images<'a>(&'a self, images: &'a [String]) -> BoxFuture<'a, Result<(), BackendError>>;
    /// Writes node/cluster logs into `dir` (part of a failure bundle).
    fn export_logs<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<(), BackendError>>;
    /// Processes this backend ran (argv, exit code, output) for the evidence bundle.
    fn process_records(&self) -> Vec<crate::process::ProcessRecord>;
    /// Tears the cluster down; with `keep` it is left running for inspection.
    fn teardown(self: Box<Self>, keep: bool) -> BoxFuture<'static, Result<(), BackendError>>;
    /// The restic repository URL for repository `name` (a DNS label: the case's namespace or
    /// run-unique id) as the cluster's pods reach it: `rest:http://HOST:PORT/<name>` on the
    /// backend's restic REST server ([`rest_server`]). The repository Secret of every case holds
    /// it, for the reference operator and Gameplane alike.
    fn repository_url(&self, name: &str) -> Result<String, BackendError>;
    /// Creates repository `name` before a case uses it, where the backend can write its
    /// storage (embedded: the template repository, [`rest_server::write_template`]); elsewhere
    /// the copy Jobs' own `restic init` creates it on the first backup.
    fn create_repository<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), BackendError>> {
        let _ = name;
        Box::pin(async { Ok(()) })
    }
    /// Removes repository `name` from the backend's REST server storage (a missing one is fine).
    fn remove_repository<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), BackendError>>;
    /// When restic wrote each snapshot of repository `name`: the modification time of each
    /// file under its `snapshots/` (named by the snapshot's full id) in the REST server's
    /// storage — the end of the copy, recorded by the file system, not by the operator.
    /// `None` where the backend cannot read that storage (the default).
    fn snapshot_write_times<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<SnapshotTimes>, BackendError>> {
        let _ = name;
        Box::pin(async { Ok(None) })
    }
}

/// Where module bundles live ([`Backend::bundle_registry`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BundleRegistry {
    /// The registry's address as the harness reaches it (`127.0.0.1:PORT`): pushes and the
    /// module gate's own reads go here.
    pub addr: String,
    /// The registry host as the operator reaches it: a ModuleSource's `oci.url` starts with it.
    pub pull_host: String,
}

/// Each snapshot file of a repository (its name, the snapshot's full id) with the time it was
/// written ([`Backend::snapshot_write_times`]).
pub type SnapshotTimes = Vec<(String, std::time::SystemTime)>;

/// The architecture of the cluster's first node (`status.nodeInfo.architecture`); the host's
/// when the cluster reports no node.
pub async fn node_arch(client: &kube::Client) -> Result<Arch, BackendError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes
        .list(&ListParams::default())
        .await
        .map_err(|e| BackendError::kube("list nodes", e))?;
    Ok(list
        .items
        .iter()
        .filter_map(|n| n.status.as_ref()?.node_info.as_ref())
        .map(|info| Arch::normalize(&info.architecture))
        .next()
        .unwrap_or_else(Arch::host))
}

/// A kube client for `context` of the kubeconfig at `path`, never the file's current-context.
pub async fn pinned_client(path: &Path, context: &str) -> Result<kube::Client, BackendError> {
    let kubeconfig = Kubeconfig::read_from(path)
        .map_err(|e| kubeconfig::KubeconfigError::Read(path.to_path_buf(), e.to_string()))?;
    kubeconfig::require_context(&kubeconfig, path, context)?;
    let options = KubeConfigOptions {
        context: Some(context.to_string()),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| kubeconfig::KubeconfigError::Load(path.to_path_buf(), e.to_string()))?;
    kube::Client::try_from(config)
        .map_err(|e| BackendError::kube(format!("build a client for context {context}"), e))
}
