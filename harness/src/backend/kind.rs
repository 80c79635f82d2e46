//! The Kind backend: a cluster made with the `kind` CLI from a config the harness writes, its
//! node containers driven through the container engine ([`super::node_engine`]).
//!
//! - The node image is pinned by digest ([`NodeImage::for_arch`]).
//! - An existing cluster of the same name is reused (CI creates it once per job).
//! - The test processes of a nextest bucket run only attach ([`Kind::attach`]) through the
//!   kubeconfig the setup script exported once; they never run `kind`.
//! - On a failed create the nodes are kept when `keep_on_failure` is set (`--retain`).
//! - Images come from a local OCI registry when one is configured ([`KindRegistry`], from
//!   `REHEARSAL_REGISTRY`): the nodes pull `rehearsal.local/…` through a containerd mirror
//!   (`config_path` + `hosts.toml`, kind's local-registry pattern), the registry container is
//!   connected to the Kind network, and digest-pinned candidates name the registry's manifest
//!   digest ([`Backend::image_digest`]). Without a registry, images are imported per node as
//!   single-platform archives with `ctr` — enough for tag references, but containerd then knows
//!   no repository digest, so digest-pinned candidates cannot be pulled (kind #2394), and Docker
//!   29's containerd image store breaks `docker save` (kind #3795).
//! - A container restart in place is `crictl stop` inside the pod's node.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use serde::Serialize;

use super::node_engine::{NodeEngine, cri_container_id};
use super::{Arch, Backend, BackendError, BackendKind, BoxFuture, Reach};
use crate::process::{Cmd, ProcessLog, ProcessRecord};

/// The Kind release whose node image the harness pins (Kubernetes 1.33.1).
pub const KIND_RELEASE: &str = "v0.29.0";

/// Label Kind puts on every node container of a cluster.
pub const CLUSTER_LABEL: &str = "io.x-k8s.kind.cluster";

/// Where the cases' restic repositories live inside the node: the storage of the restic REST
/// server ([`super::rest_server::kind_manifests`] mounts it with hostPath); a `--backup-repo`
/// host directory is mounted here, so the repositories land in it.
pub const NODE_BACKUP_REPO: &str = "/var/tmp/rehearsal-repos";

/// The local registry the nodes pull the workspace's images from (kind's local-registry
/// pattern). [`KindRegistry::from_env`] reads it from `REHEARSAL_REGISTRY` (its host address),
/// `REHEARSAL_REGISTRY_CONTAINER` and `REHEARSAL_REGISTRY_ENDPOINT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindRegistry {
    /// Where the harness reads manifest digests: `127.0.0.1:5001`.
    pub host_addr: String,
    /// The registry's container, connected to the Kind network so the nodes reach it by name
    /// (`None`: it is reachable already).
    pub container: Option<String>,
    /// How the nodes reach it: `http://rehearsal-registry:5000`.
    pub node_endpoint: String,
    /// The engine network Kind puts its nodes on (`KIND_EXPERIMENTAL_DOCKER_NETWORK`, default
    /// `kind`), which the registry container joins.
    pub network: String,
}

/// The registry container's default name (the workflow starts it under this name).
pub const REGISTRY_CONTAINER: &str = "rehearsal-registry";

impl KindRegistry {
    /// The registry named by the environment, or `None` when `REHEARSAL_REGISTRY` is unset.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let host_addr = lookup("REHEARSAL_REGISTRY").filter(|a| !a.is_empty())?;
        let container = match lookup("REHEARSAL_REGISTRY_CONTAINER") {
            Some(c) if c.is_empty() => None,
            Some(c) => Some(c),
            None => Some(REGISTRY_CONTAINER.to_string()),
        };
        let node_endpoint = lookup("REHEARSAL_REGISTRY_ENDPOINT").unwrap_or_else(|| {
            format!(
                "http://{}:5000",
                container.as_deref().unwrap_or(REGISTRY_CONTAINER)
            )
        });
        let network = lookup("KIND_EXPERIMENTAL_DOCKER_NETWORK")
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "kind".into());
        Some(Self {
            host_addr,
            container,
            node_endpoint,
            network,
        })
    }
}

/// A node image reference pinned by digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeImage {
    /// `kindest/node:<version>@sha256:<index digest>`, as `kind create cluster --image` takes it.
    pub reference: String,
}

impl NodeImage {
    /// The pinned `kindest/node` image for a node architecture.
    ///
    /// Kind publishes one multi-platform index per release; pinning that index digest fixes the
    /// content for every architecture (the engine picks the entry for the node's platform), so the
    /// table below maps each supported architecture to the digest kind v0.29.0 released for
    /// Kubernetes 1.33.1. Unknown architectures are refused rather than guessed.
    pub fn for_arch(arch: &Arch) -> Result<Self, BackendError> {
        const V1_33_1: &str = "kindest/node:v1.33.1@sha256:050072256b9a903bd914c0b2866828150cb229cea0efe5892e2b644d5dd3b34f";
        match arch.as_str() {
            "amd64" | "arm64" => Ok(Self {
                reference: V1_33_1.to_string(),
            }),
            other => Err(BackendError::Setup(format!(
                "no pinned kindest/node image for architecture {other}; run on amd64 or arm64, or use --embedded"
            ))),
        }
    }
}

/// What the harness needs from a Kind cluster.
#[derive(Debug, Clone)]
pub struct KindOptions {
    /// Cluster name (`kind create cluster --name`).
    pub cluster_name: String,
    /// Where the config, kubeconfig and logs go.
    pub state_dir: PathBuf,
    /// Node architecture (decides the node image); the host's by default.
    pub arch: Arch,
    /// A host directory mounted into the node for the backup repository.
    pub backup_repo_dir: Option<PathBuf>,
    /// Keep nodes of a failed create (`--retain`) and do not delete on teardown failure paths.
    pub keep_on_failure: bool,
    /// How long `kind create` may wait for the control plane.
    pub wait: Duration,
    /// The `kind` program (name on PATH or a path; `REHEARSAL_KIND` overrides the default).
    pub kind_program: String,
    /// What to install once the cluster is up (nothing: the caller deploys, or the cluster is
    /// reused with an operator already in it).
    pub deploy: Option<std::sync::Arc<dyn KindDeployment>>,
    /// The kubeconfig another process exported once for this cluster (the nextest setup
    /// script's `REHEARSAL_KUBECONFIG`): set, the harness attaches through it ([`Kind::attach`])
    /// and never runs `kind`.
    pub exported_kubeconfig: Option<PathBuf>,
    /// The local registry the nodes pull the workspace's images from (`REHEARSAL_REGISTRY`).
    pub registry: Option<Box<KindRegistry>>,
}

/// What to install on a Kind cluster once it is up (the operator under test). The deployment
/// layer implements it (`deploy::kind::KindDeploy`: the reference operator or a Helm chart) and
/// the `run` layer hands it over in [`KindOptions::deploy`]: a backend brings a cluster up and
/// never depends on how an operator is deployed.
pub trait KindDeployment: std::fmt::Debug + Send + Sync {
    /// Installs onto `kind`, which is up and reachable.
    fn deploy<'a>(&'a self, kind: &'a Kind) -> BoxFuture<'a, Result<(), BackendError>>;
}

impl KindOptions {
    /// Options for cluster `cluster_name` with its files under `state_dir`: the host's
    /// architecture, a 300 s control-plane wait, `kind` from `REHEARSAL_KIND` or PATH, nothing to
    /// deploy, and the registry `REHEARSAL_REGISTRY` names (if any).
    pub fn new(cluster_name: impl Into<String>, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            cluster_name: cluster_name.into(),
            state_dir: state_dir.into(),
            arch: Arch::host(),
            backup_repo_dir: None,
            keep_on_failure: false,
            wait: Duration::from_secs(300),
            kind_program: std::env::var("REHEARSAL_KIND").unwrap_or_else(|_| "kind".into()),
            deploy: None,
            exported_kubeconfig: None,
            registry: KindRegistry::from_env(|k| std::env::var(k).ok()).map(Box::new),
        }
    }

    /// The kube context Kind names for this cluster.
    pub fn context(&self) -> String {
        format!("kind-{}", self.cluster_name)
    }

    /// Where the harness writes the Kind cluster config (`<state_dir>/kind-config.yaml`).
    pub fn config_path(&self) -> PathBuf {
        self.state_dir.join("kind-config.yaml")
    }

    /// Where the cluster's kubeconfig goes (`<state_dir>/kubeconfig`); the harness never writes
    /// the user's own kubeconfig.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.state_dir.join("kubeconfig")
    }

    /// The Kind cluster config as YAML.
    pub fn render_config(&self) -> Result<String, BackendError> {
        let image = NodeImage::for_arch(&self.arch)?;
        let config = ClusterConfig {
            kind: "Cluster",
            api_version: "kind.x-k8s.io/v1alpha4",
            name: &self.cluster_name,
            networking: Networking {
                api_server_address: "127.0.0.1",
            },
            containerd_config_patches: self
                .registry
                .iter()
                .map(|_| crate::registry::CONTAINERD_PATCH.to_string())
                .collect(),
            nodes: vec![NodeConfig {
                role: "control-plane",
                image: image.reference,
                extra_mounts: self
                    .backup_repo_dir
                    .iter()
                    .map(|dir| Mount {
                        host_path: dir.display().to_string(),
                        container_path: NODE_BACKUP_REPO.to_string(),
                    })
                    .collect(),
            }],
        };
        serde_yaml::to_string(&config)
            .map_err(|e| BackendError::Setup(format!("cannot render the kind config: {e}")))
    }

    /// `kind create cluster` argv.
    pub fn create_argv(&self) -> Vec<String> {
        let mut argv = vec![
            self.kind_program.clone(),
            "create".into(),
            "cluster".into(),
            "--name".into(),
            self.cluster_name.clone(),
            "--config".into(),
            self.config_path().display().to_string(),
            "--kubeconfig".into(),
            self.kubeconfig_path().display().to_string(),
            "--wait".into(),
            format!("{}s", self.wait.as_secs()),
        ];
        if self.keep_on_failure {
            argv.push("--retain".into());
        }
        argv
    }

    /// `kind export kubeconfig` argv (reusing a cluster made earlier).
    pub fn export_kubeconfig_argv(&self) -> Vec<String> {
        vec![
            self.kind_program.clone(),
            "export".into(),
            "kubeconfig".into(),
            "--name".into(),
            self.cluster_name.clone(),
            "--kubeconfig".into(),
            self.kubeconfig_path().display().to_string(),
        ]
    }

    /// `kind delete cluster` argv.
    pub fn delete_argv(&self) -> Vec<String> {
        vec![
            self.kind_program.clone(),
            "delete".into(),
            "cluster".into(),
            "--name".into(),
            self.cluster_name.clone(),
            "--kubeconfig".into(),
            self.kubeconfig_path().display().to_string(),
        ]
    }

    /// `kind export logs` argv.
    pub fn export_logs_argv(&self, dir: &Path) -> Vec<String> {
        vec![
            self.kind_program.clone(),
            "export".into(),
            "logs".into(),
            dir.display().to_string(),
            "--name".into(),
            self.cluster_name.clone(),
        ]
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClusterConfig<'a> {
    kind: &'a str,
    api_version: &'a str,
    name: &'a str,
    networking: Networking<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    containerd_config_patches: Vec<String>,
    nodes: Vec<NodeConfig<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Networking<'a> {
    api_server_address: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeConfig<'a> {
    role: &'a str,
    image: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    extra_mounts: Vec<Mount>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Mount {
    host_path: String,
    container_path: String,
}

fn cmd(argv: &[String]) -> Cmd {
    Cmd::new(argv[0].clone()).args(argv[1..].iter().cloned())
}

/// How the cluster came to be (recorded; decides what teardown deletes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// This process ran `kind create cluster`.
    Created,
    /// A cluster of that name already existed and was reused as it is.
    Reused,
    /// Reached through a kubeconfig another process exported; `kind` was not run and teardown
    /// never deletes the cluster.
    Attached,
}

/// A Kind cluster the harness created or reused.
pub struct Kind {
    options: KindOptions,
    kubeconfig_path: PathBuf,
    context: String,
    client: kube::Client,
    engine: NodeEngine,
    log: ProcessLog,
    provenance: Provenance,
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kind")
            .field("cluster", &self.options.cluster_name)
            .field("context", &self.context)
            .field("provenance", &self.provenance)
            .finish()
    }
}

impl Kind {
    /// Creates the cluster (or reuses one of the same name) and connects to it.
    pub async fn up(options: KindOptions) -> Result<Self, BackendError> {
        let log = ProcessLog::default();
        crate::process::find_program(&options.kind_program)?;
        let engine = NodeEngine::connect().await?;
        std::fs::create_dir_all(&options.state_dir)
            .map_err(|e| BackendError::io("create the state directory", &options.state_dir, e))?;

        let clusters = Cmd::new(options.kind_program.clone())
            .args(["get", "clusters"])
            .run_checked(&log)
            .await?;
        let exists = clusters
            .stdout
            .lines()
            .any(|l| l.trim() == options.cluster_name);
        let provenance = if exists {
            cmd(&options.export_kubeconfig_argv())
                .run_checked(&log)
                .await?;
            Provenance::Reused
        } else {
            let config = options.render_config()?;
            let path = options.config_path();
            std::fs::write(&path, config)
                .map_err(|e| BackendError::io("write the kind config", &path, e))?;
            if let Err(e) = cmd(&options.create_argv()).run_checked(&log).await {
                if !options.keep_on_failure {
                    let _ = cmd(&options.delete_argv()).run(&log).await;
                }
                return Err(e.into());
            }
            Provenance::Created
        };
        let context = options.context();
        let client = super::pinned_client(&options.kubeconfig_path(), &context).await?;
        let kind = Self {
            kubeconfig_path: options.kubeconfig_path(),
            options,
            context,
            client,
            engine,
            log,
            provenance,
        };
        kind.connect_registry().await?;
        if let Some(deployment) = kind.options.deploy.clone() {
            deployment.deploy(&kind).await?;
        }
        Ok(kind)
    }

    /// Connects to the cluster through [`KindOptions::exported_kubeconfig`], which the process
    /// that brought the cluster up exported once (the nextest setup script `kind-cluster`).
    ///
    /// Never runs `kind`: every scenario test process attaches at the same time, and concurrent
    /// `kind export kubeconfig` calls into one file fail (kind's lock file is create-exclusive
    /// and only `kind create cluster` retries). Nothing is deployed; the setup did that.
    pub async fn attach(options: KindOptions) -> Result<Self, BackendError> {
        let Some(kubeconfig) = options.exported_kubeconfig.clone() else {
            return Err(BackendError::Setup(format!(
                "no exported kubeconfig for Kind cluster {}; set REHEARSAL_KUBECONFIG (the nextest setup script `kind-cluster` exports it)",
                options.cluster_name
            )));
        };
        if !kubeconfig.is_file() {
            return Err(BackendError::Setup(format!(
                "the exported kubeconfig {} does not exist; run the cases with a bucket profile and REHEARSAL_CLUSTER=kind, whose setup script `kind-cluster` writes it",
                kubeconfig.display()
            )));
        }
        let engine = NodeEngine::connect().await?;
        let context = options.context();
        let client = super::pinned_client(&kubeconfig, &context).await?;
        Ok(Self {
            kubeconfig_path: kubeconfig,
            options,
            context,
            client,
            engine,
            log: ProcessLog::default(),
            provenance: Provenance::Attached,
        })
    }

    /// Makes the registry reachable from every node (kind's local-registry pattern): the
    /// registry container joins the Kind network, and each node gets the `hosts.toml` that
    /// sends pulls of `rehearsal.local/…` to it (containerd reads it at each pull; the
    /// cluster config set `config_path`). Idempotent, so a reused cluster is configured too.
    async fn connect_registry(&self) -> Result<(), BackendError> {
        let Some(registry) = &self.options.registry else {
            return Ok(());
        };
        if let Some(container) = &registry.container {
            self.engine
                .connect_network(&registry.network, container)
                .await?;
        }
        let dir = format!(
            "{}/{}",
            crate::registry::CERTS_DIR,
            crate::registry::MIRRORED_HOST
        );
        let hosts = crate::registry::hosts_toml(&registry.node_endpoint);
        for node in self.nodes().await? {
            self.engine
                .exec_checked(&node, &["mkdir", "-p", &dir])
                .await?;
            self.engine
                .write_file(
                    &node,
                    &dir,
                    "hosts.toml",
                    bytes::Bytes::from(hosts.clone()),
                    0o644,
                )
                .await?;
        }
        Ok(())
    }

    /// How this cluster came to be.
    pub fn provenance(&self) -> Provenance {
        self.provenance
    }

    /// The options it was brought up with.
    pub fn options(&self) -> &KindOptions {
        &self.options
    }

    /// The log of every command run against this cluster.
    pub fn process_log(&self) -> &ProcessLog {
        &self.log
    }

    /// Node container names of this cluster.
    pub async fn nodes(&self) -> Result<Vec<String>, BackendError> {
        Ok(self
            .engine
            .containers_with_label(CLUSTER_LABEL, &self.options.cluster_name)
            .await?)
    }
}

/// The one-line error for images the registry does not hold.
fn not_pushed(images: &str, addr: &str) -> String {
    format!(
        "the registry at {addr} does not hold {images}; build and push the images with `scripts/build-images.sh --push {addr}`"
    )
}

/// Finds the node and CRI container ID of `container` in a pod.
pub async fn locate_container(
    client: &kube::Client,
    namespace: &str,
    pod: &str,
    container: &str,
) -> Result<(String, String), BackendError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let p = pods
        .get(pod)
        .await
        .map_err(|e| BackendError::kube(format!("get pod {namespace}/{pod}"), e))?;
    let state = |what: &str| BackendError::PodState {
        namespace: namespace.into(),
        pod: pod.into(),
        what: what.into(),
    };
    let node = p
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .ok_or_else(|| state("node (spec.nodeName)"))?;
    let statuses = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.clone())
        .unwrap_or_default();
    let status = statuses
        .iter()
        .find(|c| c.name == container)
        .ok_or_else(|| BackendError::NoSuchContainer {
            namespace: namespace.into(),
            pod: pod.into(),
            container: container.into(),
            available: statuses
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let id = status
        .container_id
        .as_deref()
        .ok_or_else(|| state(&format!("container ID for `{container}`")))?;
    Ok((node, cri_container_id(id).to_string()))
}

impl Backend for Kind {
    fn kind(&self) -> BackendKind {
        BackendKind::Kind
    }

    fn name(&self) -> &str {
        &self.options.cluster_name
    }

    fn client(&self) -> kube::Client {
        self.client.clone()
    }

    fn kubeconfig(&self) -> (&Path, &str) {
        (&self.kubeconfig_path, &self.context)
    }

    fn restart_container<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        container: &'a str,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let (node, id) = locate_container(&self.client, namespace, pod, container).await?;
            self.engine.crictl_stop(&node, &id).await?;
            Ok(())
        })
    }

    fn reach<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Reach, BackendError>> {
        Box::pin(super::port_forward::reach(
            self.client.clone(),
            namespace,
            pod,
            port,
        ))
    }

    /// With a registry: the registry's manifest digest of the image (what a node pulling the
    /// image reports as its `imageID`). Without one: `None` (the node's report is the only
    /// source, and a digest-pinned candidate cannot be pulled).
    fn image_digest<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BackendError>> {
        Box::pin(async move {
            let Some(registry) = &self.options.registry else {
                return Ok(None);
            };
            match crate::registry::image_digest(&registry.host_addr, reference).await {
                Ok(Some(digest)) => Ok(Some(digest)),
                Ok(None) => Err(BackendError::Setup(not_pushed(
                    reference,
                    &registry.host_addr,
                ))),
                Err(e) => Err(BackendError::Setup(e.to_string())),
            }
        })
    }

    /// The local registry serves module bundles too: the harness pushes to its host address,
    /// the operator's pod pulls from the name the nodes reach it by (the Kind network's DNS).
    fn bundle_registry(&self) -> BoxFuture<'_, Result<super::BundleRegistry, BackendError>> {
        Box::pin(async move {
            let Some(registry) = &self.options.registry else {
                return Err(BackendError::Unsupported {
                    backend: BackendKind::Kind,
                    operation: "serve module bundles".into(),
                    why: "no local registry is configured; set REHEARSAL_REGISTRY (see scripts/build-images.sh --push)".into(),
                });
            };
            Ok(super::BundleRegistry {
                addr: registry.host_addr.clone(),
                pull_host: registry
                    .node_endpoint
                    .trim_start_matches("http://")
                    .trim_start_matches("https://")
                    .to_string(),
            })
        })
    }

    /// With a registry the images are not loaded but pulled: each must be in the registry
    /// (pushed by `scripts/build-images.sh --push`), checked here so a missing one is named
    /// now rather than as an ErrImagePull later. Without one, each is imported into every node.
    fn load_images<'a>(&'a self, images: &'a [String]) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            if let Some(registry) = &self.options.registry {
                let mut missing = Vec::new();
                for image in images {
                    match crate::registry::image_digest(&registry.host_addr, image).await {
                        Ok(Some(_)) => {}
                        Ok(None) => missing.push(image.as_str()),
                        Err(e) => return Err(BackendError::Setup(e.to_string())),
                    }
                }
                return if missing.is_empty() {
                    Ok(())
                } else {
                    Err(BackendError::Setup(not_pushed(
                        &missing.join(", "),
                        &registry.host_addr,
                    )))
                };
            }
            for node in self.nodes().await? {
                let arch = self.engine.node_arch(&node).await?;
                for (i, image) in images.iter().enumerate() {
                    let archive = self.engine.save_image(image, &node, &arch).await?;
                    self.engine
                        .import_into_node(&node, &format!("image-{i}.tar"), archive, &arch)
                        .await?;
                }
            }
            Ok(())
        })
    }

    /// The REST server [`super::rest_server::kind_manifests`] deploys, through cluster DNS.
    fn repository_url(&self, name: &str) -> Result<String, BackendError> {
        super::rest_server::repository_url(&super::rest_server::kind_base(), name)
    }

    /// Inside every node: the REST server stores repositories in the node's
    /// [`NODE_BACKUP_REPO`] (or, with `--backup-repo`, the host directory mounted there), never
    /// in a directory of the machine running the harness.
    fn remove_repository<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let path = format!(
                "{NODE_BACKUP_REPO}/{}",
                super::rest_server::repository_name(name)?
            );
            for node in self.nodes().await? {
                self.engine
                    .exec_checked(&node, &["rm", "-rf", &path])
                    .await?;
            }
            Ok(())
        })
    }

    fn export_logs<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            cmd(&self.options.export_logs_argv(dir))
                .run_checked(&self.log)
                .await?;
            Ok(())
        })
    }

    fn process_records(&self) -> Vec<ProcessRecord> {
        self.log.records()
    }

    fn teardown(self: Box<Self>, keep: bool) -> BoxFuture<'static, Result<(), BackendError>> {
        Box::pin(async move {
            // An attached cluster belongs to the process that brought it up.
            if !keep && self.provenance != Provenance::Attached {
                cmd(&self.options.delete_argv())
                    .run_checked(&self.log)
                    .await?;
            }
            Ok(())
        })
    }
}
