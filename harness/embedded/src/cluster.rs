//! [`EmbeddedCluster`]: the API server plus this crate's controllers and kubelet, started
//! in-process, with a kubeconfig in its state directory.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Namespace, Node, NodeSpec};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use rehearsal_apiserver::{
    ApiServer, ApiServerConfig, DEFAULT_CONTEXT, LogError, LogRequest, LogStream, PodLogSource,
};
use serde_json::json;

use crate::controllers::{self, NODE_NAME, PROVISIONER};
use crate::images::ImageCatalogue;
use crate::kubelet::{
    Kubelet, LogIndex, LogLookupError, LogQuery, NodeSettings, RestartError, RestartedContainer,
    status_now,
};
use crate::node::Backoff;
use crate::owners::{self, OwnerRecord};
use crate::sandbox::Sandboxes;

/// How to start an [`EmbeddedCluster`].
#[derive(Clone, Debug)]
pub struct EmbeddedConfig {
    /// Where the kubeconfig, volumes, pod directories and logs live; default: a fresh
    /// directory under `$TMPDIR/rehearsal-embedded/`, removed at shutdown.
    pub state_dir: Option<PathBuf>,
    /// Image references the node can run.
    pub images: ImageCatalogue,
    /// The API server's settings.
    pub api: ApiServerConfig,
    /// The first pod IP (each pod gets the next unused 127.x.y.z).
    pub first_pod_ip: Ipv4Addr,
    /// Back-off between image pulls that failed (Kubernetes: 10 s doubling to 300 s).
    pub image_pull_backoff: Backoff,
    /// Back-off between container restarts and Job pod replacements (Kubernetes: 10 s to 300 s).
    pub crash_loop_backoff: Backoff,
    /// At most this grace period for each pod at [`EmbeddedCluster::shutdown`].
    pub shutdown_grace: Duration,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        Self {
            state_dir: None,
            images: ImageCatalogue::with_defaults(),
            api: ApiServerConfig::default(),
            first_pod_ip: Ipv4Addr::new(127, 0, 10, 1),
            image_pull_backoff: Backoff {
                initial: Duration::from_secs(1),
                max: Duration::from_secs(20),
            },
            crash_loop_backoff: Backoff {
                initial: Duration::from_secs(1),
                max: Duration::from_secs(30),
            },
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// Why the embedded cluster could not start or act.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// bubblewrap is not installed.
    #[error("`bwrap` was not found on PATH: install the Debian package `bubblewrap`")]
    BwrapMissing,
    /// The state directory could not be prepared.
    #[error("cannot prepare state directory {path}: {source}")]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The API server did not start.
    #[error("embedded API server failed to start: {0}")]
    ApiServer(#[from] rehearsal_apiserver::StartError),
    /// The kubeconfig could not be written or read back.
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A call to the API server failed while bootstrapping.
    #[error("bootstrapping {what} failed: {source}")]
    Bootstrap {
        /// The object being created.
        what: String,
        /// The API error.
        source: kube::Error,
    },
    /// An in-place container restart failed.
    #[error(transparent)]
    Restart(#[from] RestartError),
}

/// A running embedded cluster: API server, scheduler, StatefulSet, Job and volume
/// controllers, and a kubelet running pods as bubblewrap sandboxes.
pub struct EmbeddedCluster {
    api: Option<ApiServer>,
    client: Client,
    kubeconfig: PathBuf,
    state_dir: PathBuf,
    remove_state: bool,
    images: ImageCatalogue,
    sandboxes: Sandboxes,
    kubelet: Kubelet,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    owner: Option<OwnerRecord>,
    shutdown_grace: Duration,
    service_range: rehearsal_apiserver::ServiceRange,
}

struct KubeletLogs(LogIndex);

impl PodLogSource for KubeletLogs {
    fn logs(&self, request: LogRequest) -> BoxFuture<'static, Result<LogStream, LogError>> {
        let result = self.0.stream(LogQuery {
            namespace: request.namespace,
            pod: request.pod,
            container: request.container,
            previous: request.previous,
            tail_lines: request.tail_lines,
            follow: request.follow,
        });
        async move {
            result.map_err(|e| match e {
                LogLookupError::NotFound(m) => LogError::NotFound(m),
                LogLookupError::BadRequest(m) => LogError::BadRequest(m),
            })
        }
        .boxed()
    }
}

fn bwrap_on_path() -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("bwrap").is_file()))
        .unwrap_or(false)
}

async fn create_ignoring_conflict<K>(api: &Api<K>, obj: &K, what: &str) -> Result<(), EmbeddedError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(source) => Err(EmbeddedError::Bootstrap {
            what: what.to_string(),
            source,
        }),
    }
}

impl EmbeddedCluster {
    /// Starts the cluster; must run inside a tokio runtime. Ends sandboxes a crashed
    /// earlier run left behind first.
    pub async fn start(config: EmbeddedConfig) -> Result<Self, EmbeddedError> {
        if !bwrap_on_path() {
            return Err(EmbeddedError::BwrapMissing);
        }
        let reaped = owners::reap_dead_owners();
        if !reaped.killed.is_empty() || !reaped.removed.is_empty() {
            tracing::warn!(?reaped, "cleaned up after a crashed embedded cluster");
        }
        let (state_dir, remove_state) = match &config.state_dir {
            Some(dir) => (dir.clone(), false),
            None => (
                owners::root_dir().join(format!(
                    "cluster-{}-{}",
                    std::process::id(),
                    &uuid::Uuid::new_v4().simple().to_string()[..8]
                )),
                true,
            ),
        };
        let state_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| EmbeddedError::StateDir { path, source }
        };
        std::fs::create_dir_all(&state_dir).map_err(state_err(&state_dir))?;
        let owner =
            OwnerRecord::register(&state_dir, remove_state).map_err(state_err(&state_dir))?;
        let sandboxes = Sandboxes::new(&state_dir).map_err(state_err(&state_dir))?;

        let ips = Kubelet::pod_ips(config.first_pod_ip);
        let service_range = ips.service_range();
        let mut api_config = config.api.clone();
        api_config.service_range = service_range;
        let api = ApiServer::start(api_config).await?;
        let kubeconfig = state_dir.join("kubeconfig");
        let kubeconfig_err = |message: String| EmbeddedError::Kubeconfig {
            path: kubeconfig.clone(),
            message,
        };
        api.write_kubeconfig(&kubeconfig)
            .map_err(|e| kubeconfig_err(e.to_string()))?;
        let client = client_for(&kubeconfig)
            .await
            .map_err(|e| kubeconfig_err(e.to_string()))?;

        bootstrap(&client).await?;

        let kubelet = Kubelet::new(
            client.clone(),
            NodeSettings {
                name: NODE_NAME.to_string(),
                state_dir: state_dir.clone(),
                images: config.images.clone(),
                first_pod_ip: config.first_pod_ip,
                image_pull_backoff: config.image_pull_backoff,
                crash_loop_backoff: config.crash_loop_backoff,
                cluster_dns: Some(crate::network::dns_address(service_range)),
                master_service: Some(std::net::SocketAddrV4::new(
                    rehearsal_apiserver::kubernetes_service_ip(service_range),
                    443,
                )),
            },
            sandboxes.clone(),
            ips,
        );
        let records = Arc::new(crate::network::Records::default());
        let dns_tasks = crate::network::start_dns(service_range, records.clone()).await;
        api.set_pod_logs(Arc::new(KubeletLogs(kubelet.logs())));
        api.set_pod_streams(Arc::new(crate::kubelet::streams::KubeletStreams(
            kubelet.clone(),
        )));
        let mut tasks = dns_tasks;
        tasks.extend([
            tokio::spawn(controllers::scheduler::run(client.clone())),
            tokio::spawn(controllers::endpointslice::run(client.clone())),
            tokio::spawn(controllers::deployment::run(client.clone())),
            tokio::spawn(controllers::replicaset::run(client.clone())),
            tokio::spawn(controllers::daemonset::run(client.clone())),
            tokio::spawn(crate::network::run(client.clone(), records)),
            tokio::spawn(controllers::volumes::run(client.clone(), state_dir.clone())),
            tokio::spawn(controllers::statefulset::run(client.clone())),
            tokio::spawn(controllers::job::run(
                client.clone(),
                config.crash_loop_backoff,
            )),
            tokio::spawn(kubelet.clone().run()),
        ]);
        tracing::info!(url = %api.url(), state = %state_dir.display(), "embedded cluster up");
        Ok(Self {
            api: Some(api),
            client,
            kubeconfig,
            state_dir,
            remove_state,
            images: config.images,
            sandboxes,
            kubelet,
            tasks,
            owner: Some(owner),
            shutdown_grace: config.shutdown_grace,
            service_range,
        })
    }

    /// The kubeconfig (context `rehearsal-embedded`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// A client built from the kubeconfig, its context pinned.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The API server's URL (`https://127.0.0.1:PORT`).
    pub fn api_url(&self) -> String {
        self.api.as_ref().map(ApiServer::url).unwrap_or_default()
    }

    /// The PEM of the cluster's CA (the kubeconfig's `certificate-authority-data`, a pod's
    /// `ca.crt`).
    pub fn ca_pem(&self) -> String {
        self.api
            .as_ref()
            .map(|a| a.ca_pem().to_string())
            .unwrap_or_default()
    }

    /// The cluster's CA in DER, as `kube::Config::root_cert` takes it.
    pub fn ca_der(&self) -> Vec<u8> {
        self.api.as_ref().map(ApiServer::ca_der).unwrap_or_default()
    }

    /// The range Service cluster IPs come from (a slice of the cluster's loopback block).
    pub fn service_range(&self) -> rehearsal_apiserver::ServiceRange {
        self.service_range
    }

    /// Where the cluster DNS server listens (UDP and TCP port 53), as pods' resolv.conf names it.
    pub fn dns_address(&self) -> Ipv4Addr {
        crate::network::dns_address(self.service_range)
    }

    /// The image catalogue; images inserted now are pullable from then on.
    pub fn images(&self) -> &ImageCatalogue {
        &self.images
    }

    /// How many HTTP requests the cluster's API server has received since it started
    /// (`None` without one).
    pub fn api_requests(&self) -> Option<u64> {
        self.api.as_ref().map(|a| a.requests())
    }

    /// Withholds the next watch event `drop` names from its client (the `dropped-event`
    /// fault; [`rehearsal_apiserver::DropNextEvent`]).
    pub fn drop_next_event(&self, drop: rehearsal_apiserver::DropNextEvent) {
        if let Some(api) = &self.api {
            api.drop_next_event(drop);
        }
    }

    /// Waits at most `bound` until every armed event was withheld; whether they all were.
    pub async fn await_events_dropped(&self, bound: std::time::Duration) -> bool {
        match &self.api {
            Some(api) => api.await_events_dropped(bound).await,
            None => false,
        }
    }

    /// Watches of `plural` opened so far by users whose name starts with `user_prefix`
    /// ([`rehearsal_apiserver::ApiServer::watches_opened`]).
    pub fn watches_opened(&self, user_prefix: &str, plural: &str) -> u64 {
        self.api
            .as_ref()
            .map_or(0, |api| api.watches_opened(user_prefix, plural))
    }

    /// Waits at most `bound` until more watches of each plural of `wanted` than its count
    /// were opened by `user_prefix`'s users; whether they were
    /// ([`rehearsal_apiserver::ApiServer::await_watches_opened`]).
    pub async fn await_watches_opened(
        &self,
        user_prefix: &str,
        wanted: &[(String, u64)],
        bound: std::time::Duration,
    ) -> bool {
        match &self.api {
            Some(api) => api.await_watches_opened(user_prefix, wanted, bound).await,
            None => false,
        }
    }

    /// Serves a client the cluster as it was (the `stale-view` fault;
    /// [`rehearsal_apiserver::StaleView`]); `None` ends it.
    pub fn serve_stale_view(&self, view: Option<rehearsal_apiserver::StaleView>) {
        if let Some(api) = &self.api {
            api.serve_stale_view(view);
        }
    }

    /// Waits at most `bound` until a list was answered from the stale view; whether one was.
    pub async fn await_stale_list(&self, bound: std::time::Duration) -> bool {
        match &self.api {
            Some(api) => api.await_stale_list(bound).await,
            None => false,
        }
    }

    /// Waits at most `bound` until the stale view ended; the write of its client that ended
    /// it, if one did.
    pub async fn await_stale_view_ended(&self, bound: std::time::Duration) -> Option<String> {
        match &self.api {
            Some(api) => api.await_stale_view_ended(bound).await,
            None => None,
        }
    }

    /// Attaches the API server's exploration hook ([`rehearsal_apiserver::RequestHook`]): every
    /// mutating request passes through it, every committed change is reported to it. `None`
    /// detaches it.
    pub fn set_request_hook(
        &self,
        hook: Option<std::sync::Arc<dyn rehearsal_apiserver::RequestHook>>,
    ) {
        if let Some(api) = &self.api {
            api.set_hook(hook);
        }
    }

    /// PIDs of the outer `bwrap` of every running sandbox.
    pub fn sandbox_pids(&self) -> Vec<u32> {
        self.sandboxes.live_pids()
    }

    /// Stops one container of a running pod like `crictl stop` (SIGTERM, the pod's grace
    /// period, SIGKILL); the kubelet starts it again per `restartPolicy` with a new
    /// container ID. Returns once the new container runs.
    pub async fn restart_container(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
    ) -> Result<RestartedContainer, EmbeddedError> {
        Ok(self
            .kubelet
            .restart_container(namespace, pod, container)
            .await?)
    }

    /// Holds one container of a running pod down — stopped, and not started again while held,
    /// its status waiting in `CrashLoopBackOff` — or, with `down: false`, lets it start again
    /// at once. A real kubelet's back-off ends on its own within seconds; a hold ends when the
    /// harness says, so a fault can keep a container down across exactly the moment it needs.
    pub async fn hold_container(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        down: bool,
    ) -> Result<(), EmbeddedError> {
        Ok(self
            .kubelet
            .hold_container(namespace, pod, container, down)
            .await?)
    }

    /// Ends every sandbox (SIGTERM, up to the configured grace, SIGKILL), stops the
    /// controllers and the API server, and removes a temporary state directory.
    pub async fn shutdown(mut self) {
        self.kubelet.shutdown(self.shutdown_grace).await;
        self.stop_tasks();
        if let Some(api) = self.api.take() {
            api.shutdown().await;
        }
        self.release();
    }

    fn stop_tasks(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        self.kubelet.abort();
    }

    fn release(&mut self) {
        self.sandboxes.kill_all();
        if let Some(owner) = self.owner.take() {
            // A state directory that cannot be removed now (a killed sandbox still writing
            // into it) keeps its owner record: the next start after this process ends reaps it.
            let gone = || match std::fs::remove_dir_all(&self.state_dir) {
                Ok(()) => true,
                Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            };
            if !self.remove_state || gone() {
                owner.remove();
            }
        }
    }
}

impl Drop for EmbeddedCluster {
    fn drop(&mut self) {
        self.stop_tasks();
        self.api.take();
        self.release();
    }
}

/// A client for `kubeconfig` with the embedded context pinned.
pub async fn client_for(
    kubeconfig: &Path,
) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let file = Kubeconfig::read_from(kubeconfig)?;
    let options = KubeConfigOptions {
        context: Some(DEFAULT_CONTEXT.to_string()),
        cluster: None,
        user: None,
    };
    let config = Config::from_custom_kubeconfig(file, &options).await?;
    Ok(Client::try_from(config)?)
}

async fn bootstrap(client: &Client) -> Result<(), EmbeddedError> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        create_ignoring_conflict(&namespaces, &ns, &format!("namespace {name}")).await?;
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let labels = BTreeMap::from([
        ("kubernetes.io/hostname".to_string(), NODE_NAME.to_string()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("kubernetes.io/arch".to_string(), go_arch().to_string()),
        (
            "node-role.kubernetes.io/control-plane".to_string(),
            String::new(),
        ),
    ]);
    let node = Node {
        metadata: ObjectMeta {
            name: Some(NODE_NAME.into()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: None,
    };
    create_ignoring_conflict(&nodes, &node, "node").await?;
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|kib| format!("{kib}Ki")))
        })
        .unwrap_or_else(|| "0".into());
    let now = status_now();
    let status = json!({"status": {
        "capacity": {"cpu": cpus.to_string(), "pods": "110", "memory": memory},
        "allocatable": {"cpu": cpus.to_string(), "pods": "110", "memory": memory},
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": NODE_NAME}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "nodeInfo": {"kubeletVersion": "v1.37.0", "kubeProxyVersion": "", "containerRuntimeVersion": "rehearsal://0.1.0",
            "operatingSystem": "linux", "architecture": go_arch(), "osImage": "rehearsal embedded node",
            "kernelVersion": "", "machineID": "", "systemUUID": "", "bootID": ""},
    }});
    nodes
        .patch_status(NODE_NAME, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(|source| EmbeddedError::Bootstrap {
            what: "node status".into(),
            source,
        })?;
    let classes: Api<StorageClass> = Api::all(client.clone());
    let class = StorageClass {
        metadata: ObjectMeta {
            name: Some("standard".into()),
            annotations: Some(BTreeMap::from([(
                "storageclass.kubernetes.io/is-default-class".to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        provisioner: PROVISIONER.into(),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("WaitForFirstConsumer".into()),
        ..Default::default()
    };
    create_ignoring_conflict(&classes, &class, "storageclass standard").await?;
    Ok(())
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}
