//! The embedded backend: the in-process cluster ([`EmbeddedCluster`]) with the project's CRDs
//! installed, the operator under test running as a child process (started by the
//! [`EmbeddedDeployment`] the caller hands over; the backend knows nothing of how it is
//! deployed), and its place ([`RestTenant`]) on the process' restic REST server, which holds the
//! cases' repositories.
//!
//! Pods get a loopback pod IP (127.x.y.z), so [`Backend::reach`] can connect to it directly;
//! that shortcut is the default, and [`ReachMode::PortForward`] (or
//! `REHEARSAL_EMBEDDED_REACH=port-forward`) takes the path Kind and existing clusters take,
//! `pods/portforward` through the API server. An in-place container restart is the embedded
//! kubelet's own (`crictl stop` semantics).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::PostParams;
use rehearsal_embedded::{EmbeddedCluster, EmbeddedConfig};

use super::rest_server::RestTenant;
use super::{Backend, BackendError, BackendKind, BoxFuture, Reach};
use crate::process::{ChildGuard, ProcessLog, ProcessRecord};
use crate::wait::{await_condition, conditions};

/// Whose requests are the operator under test's: it authenticates as a ServiceAccount (the
/// reference operator and Gameplane's alike), for the faults that act on its view.
const OPERATOR_USERS: &str = "system:serviceaccount:";

/// The kube context the embedded API server writes into its kubeconfig.
pub const CONTEXT: &str = rehearsal_apiserver::DEFAULT_CONTEXT;

/// The project's CRDs, as committed under `fixtures/crds/` (kept equal to the gameplane-api
/// types by that crate's test), in install order.
pub const CRD_FIXTURES: &[(&str, &str)] = &[
    (
        "gametemplates.yaml",
        include_str!("../../../fixtures/crds/gametemplates.yaml"),
    ),
    (
        "gameservers.yaml",
        include_str!("../../../fixtures/crds/gameservers.yaml"),
    ),
    (
        "backups.yaml",
        include_str!("../../../fixtures/crds/backups.yaml"),
    ),
    (
        "restores.yaml",
        include_str!("../../../fixtures/crds/restores.yaml"),
    ),
    (
        "modulesources.yaml",
        include_str!("../../../fixtures/crds/modulesources.yaml"),
    ),
    (
        "modules.yaml",
        include_str!("../../../fixtures/crds/modules.yaml"),
    ),
];

/// The environment variable that selects [`ReachMode`] when the options leave it unset:
/// `pod-ip` (the default) or `port-forward`.
pub const REACH_ENV: &str = "REHEARSAL_EMBEDDED_REACH";

/// How [`Backend::reach`] gets to a pod's port on the embedded cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReachMode {
    /// Connect to the pod's loopback IP directly (an optimisation only the embedded node allows).
    PodIp,
    /// Through `pods/portforward` on the API server, as on Kind and existing clusters.
    PortForward,
}

impl ReachMode {
    /// The mode named by [`REACH_ENV`] (unset or empty: [`ReachMode::PodIp`]).
    pub fn from_env() -> Result<Self, BackendError> {
        match std::env::var(REACH_ENV).as_deref() {
            Err(_) | Ok("") | Ok("pod-ip") => Ok(ReachMode::PodIp),
            Ok("port-forward") => Ok(ReachMode::PortForward),
            Ok(other) => Err(BackendError::Setup(format!(
                "{REACH_ENV}={other:?} is not a reach mode; set it to `pod-ip` or `port-forward`"
            ))),
        }
    }
}

/// How to start the embedded backend.
#[derive(Debug, Clone, Default)]
pub struct EmbeddedOptions {
    /// The cluster's settings; its `state_dir`, when set, is kept after teardown (default: a
    /// temporary directory removed at teardown).
    pub cluster: EmbeddedConfig,
    /// What to start once the cluster is up (the operator under test); `None` (the default):
    /// nothing, for tests of the cluster alone.
    pub deploy: Option<Arc<dyn EmbeddedDeployment>>,
    /// How pods are reached; `None`: from [`REACH_ENV`].
    pub reach: Option<ReachMode>,
}

/// What to start on the embedded cluster once it is up: the operator under test, as a host
/// process the backend holds, stops at teardown and whose log it exports. The deployment layer
/// implements it (`deploy::embedded::EmbeddedDeploy`: the reference operator) and the `run`
/// layer hands it over in [`EmbeddedOptions::deploy`]: a backend brings a cluster up and never
/// depends on how an operator is deployed.
pub trait EmbeddedDeployment: std::fmt::Debug + Send + Sync {
    /// Starts the operator against `cluster` (its processes recorded in `log`) and returns its
    /// process once it is ready.
    fn deploy<'a>(
        &'a self,
        cluster: &'a EmbeddedCluster,
        log: &'a ProcessLog,
    ) -> BoxFuture<'a, Result<ChildGuard, BackendError>>;
}

/// The embedded cluster with the operator under test (when deployed) and its place on the
/// restic REST server the cases' repositories live on.
pub struct Embedded {
    cluster: EmbeddedCluster,
    /// The operator's process; `None` while [`Backend::stop_operator`] has it stopped.
    operator: std::sync::Mutex<Option<ChildGuard>>,
    /// What started it, to start it again after a stop.
    deploy: Option<Arc<dyn EmbeddedDeployment>>,
    rest: RestTenant,
    name: String,
    kubeconfig: PathBuf,
    log: ProcessLog,
    reach: ReachMode,
    /// The module bundle registry, started the first time a case asks for it.
    bundles: tokio::sync::OnceCell<(
        crate::registry::LocalRegistry,
        super::registry_gate::RegistryGate,
    )>,
    /// The API server's request hook: the exploration's, and the writes cases hold.
    holds: Arc<super::hold::Holds>,
    /// The bundle registry gate's hook: the exploration's observer, while one is attached.
    registry_hook: super::registry_gate::HookSlot,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedded")
            .field("name", &self.name)
            .field("kubeconfig", &self.kubeconfig)
            .field("operator", &self.operator_pid())
            .field("rest_server", &self.rest.addr())
            .field("reach", &self.reach)
            .finish()
    }
}

/// Parses the CRD fixtures (once per process: every embedded cluster a run starts installs
/// them, and the YAML is ~80 KB).
pub fn crds() -> Result<Vec<CustomResourceDefinition>, BackendError> {
    static PARSED: std::sync::OnceLock<Result<Vec<CustomResourceDefinition>, String>> =
        std::sync::OnceLock::new();
    PARSED
        .get_or_init(|| {
            CRD_FIXTURES
                .iter()
                .map(|(file, text)| {
                    serde_yaml::from_str(text).map_err(|e| {
                        format!("CRD fixture fixtures/crds/{file} does not parse: {e}")
                    })
                })
                .collect()
        })
        .clone()
        .map_err(BackendError::Setup)
}

/// Creates every CRD (an existing one is left as is) and waits until each is Established, all
/// at once (start-up is on every embedded case's critical path).
pub async fn install_crds(client: &kube::Client, bound: Duration) -> Result<(), BackendError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let installs = crds()?.into_iter().map(|crd| {
        let api = api.clone();
        async move {
            let name = crd.metadata.name.clone().unwrap_or_default();
            match api.create(&PostParams::default(), &crd).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(BackendError::kube(format!("create CRD {name}"), e)),
            }
            await_condition(
                &api,
                &name,
                conditions::status_condition("Established", "True"),
                bound,
            )
            .await
            .map_err(|e| BackendError::Setup(e.to_string()))
        }
    });
    futures::future::try_join_all(installs).await.map(drop)
}

impl Embedded {
    /// Starts the cluster, installs the CRDs and starts the operator under test when
    /// [`EmbeddedOptions::deploy`] names one.
    pub async fn up(options: EmbeddedOptions) -> Result<Self, BackendError> {
        let reach = match options.reach {
            Some(mode) => mode,
            None => ReachMode::from_env()?,
        };
        let started = std::time::Instant::now();
        let cluster = EmbeddedCluster::start(options.cluster.clone())
            .await
            .map_err(|e| BackendError::Setup(format!("embedded cluster: {e}")))?;
        // Your operator's images (`--image REF=EXECUTABLE`), before anything pulls them.
        super::images::map_images(&cluster)?;
        let cluster_up = started.elapsed();
        let kubeconfig = cluster.kubeconfig_path().to_path_buf();
        let name = cluster
            .state_dir()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "embedded".into());
        let log = ProcessLog::default();
        // The REST server needs nothing from the API server: the process' shared one is
        // attached (started, for the process' first cluster) while the CRDs are installed and
        // the operator deployed (cluster + operator up is on every embedded case's critical
        // path). Pods share the host's loopback: a REST server on 127.0.0.1 is reachable from
        // every copy Job, as a Service is on Kind.
        let repos = cluster.state_dir().join("restic-repos");
        let rest = async {
            let rest = RestTenant::attach(&repos, Duration::from_secs(10), &log).await?;
            Ok::<_, BackendError>((rest, started.elapsed()))
        };
        let client = cluster.client();
        let operator = async {
            install_crds(&client, Duration::from_secs(10)).await?;
            let crds = started.elapsed();
            let operator = match &options.deploy {
                Some(deployment) => Some(deployment.deploy(&cluster, &log).await?),
                None => None,
            };
            Ok::<_, BackendError>((operator, crds, started.elapsed()))
        };
        let ((rest, rest_up), (operator, crds_up, operator_up)) = tokio::try_join!(rest, operator)?;
        // Where start-up goes (each figure since the start): `rehearse bench` reports the total.
        tracing::debug!(
            cluster_ms = cluster_up.as_millis() as u64,
            crds_ms = crds_up.as_millis() as u64,
            operator_ms = operator_up.as_millis() as u64,
            rest_server_ms = rest_up.as_millis() as u64,
            "embedded backend up"
        );
        let holds = Arc::new(super::hold::Holds::default());
        cluster.set_request_hook(Some(holds.clone()));
        Ok(Self {
            cluster,
            operator: std::sync::Mutex::new(operator),
            deploy: options.deploy.clone(),
            rest,
            name,
            kubeconfig,
            log,
            reach,
            bundles: tokio::sync::OnceCell::new(),
            registry_hook: Default::default(),
            holds,
        })
    }

    /// How [`Backend::reach`] gets to pods on this cluster.
    pub fn reach_mode(&self) -> ReachMode {
        self.reach
    }

    /// The underlying cluster (image catalogue, sandbox PIDs, API URL).
    pub fn cluster(&self) -> &EmbeddedCluster {
        &self.cluster
    }

    /// This cluster's place on the restic REST server on the host.
    pub fn rest_server(&self) -> &RestTenant {
        &self.rest
    }

    /// The operator's process id, while it runs.
    pub fn operator_pid(&self) -> Option<u32> {
        self.operator_guard().as_ref().and_then(ChildGuard::pid)
    }

    fn operator_guard(&self) -> std::sync::MutexGuard<'_, Option<ChildGuard>> {
        self.operator.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Kills the operator's process (SIGKILL, no grace); returns its pid.
    async fn kill_operator(&self) -> Result<Option<u32>, BackendError> {
        let guard = self.operator_guard().take();
        let Some(guard) = guard else {
            return Err(BackendError::Setup(
                "the embedded cluster runs no operator process to stop (none was deployed, or it is stopped already)".into(),
            ));
        };
        let pid = guard.pid();
        guard.kill().await;
        self.release_operator_leases().await?;
        Ok(pid)
    }

    /// Releases the leader-election Leases a killed operator held (every held Lease outside
    /// `kube-node-lease`: only the operator elects a leader here), as a graceful stop's
    /// release would: its successor acquires at once instead of waiting out the lease
    /// duration (client-go measures it from when it first saw the record, not from the
    /// record's own renew time, so no value written there could shorten it).
    async fn release_operator_leases(&self) -> Result<(), BackendError> {
        use k8s_openapi::api::coordination::v1::Lease;
        let all: kube::Api<Lease> = kube::Api::all(self.cluster.client());
        let leases = all
            .list(&kube::api::ListParams::default())
            .await
            .map_err(|e| BackendError::kube("list Leases", e))?;
        for lease in leases.items {
            let held = lease
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_deref())
                .is_some_and(|h| !h.is_empty());
            let ns = lease.metadata.namespace.clone().unwrap_or_default();
            if !held || ns == "kube-node-lease" {
                continue;
            }
            let name = lease.metadata.name.clone().unwrap_or_default();
            let api: kube::Api<Lease> = kube::Api::namespaced(self.cluster.client(), &ns);
            match api.delete(&name, &kube::api::DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(BackendError::kube(
                        format!("release the killed operator's Lease {ns}/{name}"),
                        e,
                    ));
                }
            }
        }
        Ok(())
    }

    /// Starts the operator's process again with the deployment that started it first.
    async fn respawn_operator(&self) -> Result<Option<u32>, BackendError> {
        let Some(deploy) = &self.deploy else {
            return Err(BackendError::Setup(
                "the embedded cluster was started without an operator deployment; nothing to start"
                    .into(),
            ));
        };
        if self.operator_guard().is_some() {
            return Err(BackendError::Setup(
                "the embedded operator already runs; stop it first".into(),
            ));
        }
        let guard = deploy.deploy(&self.cluster, &self.log).await?;
        let pid = guard.pid();
        *self.operator_guard() = Some(guard);
        Ok(pid)
    }
}

impl Backend for Embedded {
    fn kind(&self) -> BackendKind {
        BackendKind::Embedded
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn client(&self) -> kube::Client {
        self.cluster.client()
    }

    fn set_request_hook(
        &self,
        hook: Option<std::sync::Arc<dyn rehearsal_embedded::RequestHook>>,
    ) -> Result<(), BackendError> {
        self.holds.set_exploration(hook);
        Ok(())
    }

    fn set_registry_hook(
        &self,
        hook: Option<Arc<dyn super::registry_gate::RegistryHook>>,
    ) -> Result<(), BackendError> {
        *self
            .registry_hook
            .write()
            .unwrap_or_else(|p| p.into_inner()) = hook;
        Ok(())
    }

    fn hold_repository_request(
        &self,
        matches: super::rest_gate::RepoRequest,
    ) -> Result<super::rest_gate::RequestHold, BackendError> {
        Ok(self.rest.gate().hold(matches))
    }

    fn drop_next_watch_event(
        &self,
        namespace: &str,
        resource: &str,
        name: &str,
    ) -> Result<(), BackendError> {
        self.cluster
            .drop_next_event(rehearsal_embedded::DropNextEvent {
                user_prefix: OPERATOR_USERS.into(),
                resource: resource.into(),
                namespace: namespace.into(),
                name: name.into(),
            });
        Ok(())
    }

    fn await_events_dropped(&self, bound: Duration) -> BoxFuture<'_, bool> {
        Box::pin(self.cluster.await_events_dropped(bound))
    }

    fn hold_write(
        &self,
        namespace: &str,
        matches: super::hold::WriteMatch,
    ) -> Result<super::hold::WriteHold, BackendError> {
        Ok(self.holds.hold(namespace, matches))
    }

    fn kubeconfig(&self) -> (&Path, &str) {
        (&self.kubeconfig, CONTEXT)
    }

    fn api_requests(&self) -> Option<u64> {
        self.cluster.api_requests()
    }

    fn restart_container<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        container: &'a str,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            self.cluster
                .restart_container(namespace, pod, container)
                .await
                .map_err(|e| {
                    BackendError::Setup(format!(
                        "restart {container} in pod {namespace}/{pod}: {e}"
                    ))
                })?;
            Ok(())
        })
    }

    fn hold_container<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        container: &'a str,
        down: bool,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            self.cluster
                .hold_container(namespace, pod, container, down)
                .await
                .map_err(|e| {
                    BackendError::Setup(format!(
                        "hold {container} in pod {namespace}/{pod} {}: {e}",
                        if down { "down" } else { "no longer" }
                    ))
                })
        })
    }

    fn reach<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Reach, BackendError>> {
        if self.reach == ReachMode::PortForward {
            return Box::pin(super::port_forward::reach(
                self.client(),
                namespace,
                pod,
                port,
            ));
        }
        Box::pin(async move {
            let pods: Api<Pod> = Api::namespaced(self.client(), namespace);
            let p = pods
                .get(pod)
                .await
                .map_err(|e| BackendError::kube(format!("get pod {namespace}/{pod}"), e))?;
            let ip: IpAddr = p
                .status
                .and_then(|s| s.pod_ip)
                .and_then(|ip| ip.parse().ok())
                .ok_or_else(|| BackendError::PodState {
                    namespace: namespace.into(),
                    pod: pod.into(),
                    what: "pod IP".into(),
                })?;
            Ok(Reach {
                addr: SocketAddr::new(ip, port),
                forward: None,
            })
        })
    }

    fn image_digest<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BackendError>> {
        // The catalogue is the embedded node's registry: the manifest digest it serves for the
        // reference (never the image id, which a digest-pinned pull does not resolve), whatever
        // the kubelet later reports.
        Box::pin(async move {
            Ok(self
                .cluster
                .images()
                .resolve(reference)
                .map(|r| r.manifest_digest))
        })
    }

    fn bundle_registry(&self) -> BoxFuture<'_, Result<super::BundleRegistry, BackendError>> {
        Box::pin(async move {
            let registry = self
                .bundles
                .get_or_try_init(|| async {
                    let dir = self.cluster.state_dir().join("bundle-registry");
                    let registry = crate::registry::LocalRegistry::start(&dir, &self.log)
                        .await
                        .map_err(|e| BackendError::Setup(format!("module bundle registry: {e}")))?;
                    let gate = super::registry_gate::RegistryGate::start(
                        registry.addr(),
                        self.registry_hook.clone(),
                    )
                    .await
                    .map_err(|e| {
                        BackendError::Setup(format!("module bundle registry's gate: {e}"))
                    })?;
                    Ok::<_, BackendError>((registry, gate))
                })
                .await?;
            // The operator runs on this host: it reaches the registry through its gate (which
            // passes everything through unless a fault armed it); the harness reads the
            // registry itself.
            Ok(super::BundleRegistry {
                pull_host: registry.1.addr().to_string(),
                addr: registry.0.addr().to_string(),
            })
        })
    }

    fn serve_other_layer_bytes<'a>(
        &'a self,
        repository: &'a str,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            self.bundle_registry().await?;
            let (_, gate) = self.bundles.get().ok_or_else(|| {
                BackendError::Setup("the module bundle registry did not start".into())
            })?;
            gate.serve_other_bytes(Some(super::registry_gate::OtherBytes {
                repository: repository.to_string(),
                bytes: bytes.into(),
            }));
            Ok(())
        })
    }

    fn other_layer_bytes_served(&self) -> usize {
        self.bundles
            .get()
            .map_or(0, |(_, gate)| gate.other_bytes_served())
    }

    fn stop_operator(&self) -> BoxFuture<'_, Result<serde_json::Value, BackendError>> {
        Box::pin(async move {
            let pid = self.kill_operator().await?;
            Ok(serde_json::json!({"killed_pid": pid, "signal": "SIGKILL"}))
        })
    }

    fn start_operator(&self) -> BoxFuture<'_, Result<serde_json::Value, BackendError>> {
        Box::pin(async move {
            let pid = self.respawn_operator().await?;
            Ok(serde_json::json!({"started_pid": pid}))
        })
    }

    fn restart_operator(&self) -> BoxFuture<'_, Result<serde_json::Value, BackendError>> {
        Box::pin(async move {
            let old = self.kill_operator().await?;
            let new = self.respawn_operator().await?;
            Ok(serde_json::json!({"killed_pid": old, "signal": "SIGKILL", "started_pid": new}))
        })
    }

    fn restart_operator_onto_stale_view<'a>(
        &'a self,
        as_of: u64,
        ends_on: &'a [&'a str],
    ) -> BoxFuture<'a, Result<serde_json::Value, BackendError>> {
        Box::pin(async move {
            let old = self.kill_operator().await?;
            // Armed between the two processes: only the new one's lists are stale.
            self.cluster
                .serve_stale_view(Some(rehearsal_embedded::StaleView {
                    user_prefix: OPERATOR_USERS.into(),
                    as_of,
                    ends_on: ends_on.iter().map(|r| r.to_string()).collect(),
                }));
            let new = self.respawn_operator().await?;
            Ok(serde_json::json!({
                "killed_pid": old,
                "signal": "SIGKILL",
                "started_pid": new,
                "lists_as_of_resource_version": as_of,
                "until_its_first_write_of": ends_on,
            }))
        })
    }

    fn await_stale_list(&self, bound: Duration) -> BoxFuture<'_, bool> {
        Box::pin(self.cluster.await_stale_list(bound))
    }

    fn end_stale_view(&self, bound: Duration) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let ended_by = self.cluster.await_stale_view_ended(bound).await;
            if ended_by.is_none() {
                self.cluster.serve_stale_view(None);
            }
            ended_by
        })
    }

    fn load_images<'a>(&'a self, images: &'a [String]) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            // The embedded node runs local executables: an image is "loaded" when the catalogue
            // resolves it; anything else would fail as ErrImagePull later, so say so now.
            let missing: Vec<&str> = images
                .iter()
                .filter(|i| self.cluster.images().resolve(i).is_none())
                .map(String::as_str)
                .collect();
            if missing.is_empty() {
                Ok(())
            } else {
                Err(BackendError::Setup(format!(
                    "the embedded image catalogue has no {}; build the workspace binaries (`cargo build --workspace --bins`) or set REHEARSAL_BIN_DIR",
                    missing.join(", ")
                )))
            }
        })
    }

    fn repository_url(&self, name: &str) -> Result<String, BackendError> {
        super::rest_server::repository_url(&self.rest.base(), name)
    }

    fn create_repository<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move { self.rest.create_repository(name) })
    }

    fn remove_repository<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move { self.rest.remove_repository(name) })
    }

    fn snapshot_write_times<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<super::SnapshotTimes>, BackendError>> {
        Box::pin(async move { self.rest.snapshot_write_times(name).map(Some) })
    }

    fn export_logs<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            std::fs::create_dir_all(dir).map_err(|e| BackendError::io("create", dir, e))?;
            let rest_log = dir.join("rest-server.log");
            let _ = std::fs::copy(self.rest.log_file(), &rest_log);
            let log_file = self
                .operator_guard()
                .as_ref()
                .map(|op| op.log_file().to_path_buf());
            if let Some(log_file) = log_file {
                // Under the name the deployment gave it (`reference-operator.log`).
                let to = dir.join(log_file.file_name().unwrap_or("operator.log".as_ref()));
                std::fs::copy(&log_file, &to)
                    .map_err(|e| BackendError::io("copy the operator log", &log_file, e))?;
            }
            let processes = serde_json::to_vec_pretty(&self.log.records())
                .map_err(|e| BackendError::Setup(e.to_string()))?;
            let to = dir.join("processes.json");
            std::fs::write(&to, processes).map_err(|e| BackendError::io("write", &to, e))
        })
    }

    fn process_records(&self) -> Vec<ProcessRecord> {
        self.log.records()
    }

    fn teardown(self: Box<Self>, _keep: bool) -> BoxFuture<'static, Result<(), BackendError>> {
        // The embedded cluster lives in this process and cannot outlive it; `keep` is honoured
        // by the state directory: one the user named is never removed.
        Box::pin(async move {
            let Embedded {
                cluster,
                operator,
                rest,
                bundles,
                ..
            } = *self;
            if let Some((registry, gate)) = bundles.into_inner() {
                drop(gate);
                registry.stop().await;
            }
            let operator = operator.into_inner().unwrap_or_else(|e| e.into_inner());
            if let Some(op) = operator {
                op.stop(Duration::from_secs(5)).await;
            }
            // Detaches this cluster's path; the server serves the process' other clusters.
            rest.release().await;
            cluster.shutdown().await;
            Ok(())
        })
    }
}
