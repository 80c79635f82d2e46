//! Node containers driven through the container engine's API (bollard, `DOCKER_HOST` or the
//! default socket): Kind nodes are containers, and what kube cannot do portably happens inside
//! them — detect the node's architecture, import an image archive into its containerd, stop one
//! container with `crictl` so the kubelet restarts it in place.
//!
//! The same operations are exercised in CI against a real podman (see `scripts/start-podman.sh`).

use std::collections::HashMap;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::query_parameters::{ListContainersOptions, UploadToContainerOptionsBuilder};
use bytes::Bytes;
use futures::StreamExt;

use super::Arch;

/// Why an engine operation failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(
        "cannot reach the container engine at {host}: {reason}; start Docker or run scripts/start-podman.sh and export DOCKER_HOST"
    )]
    /// The engine did not answer a ping.
    Unreachable {
        /// `DOCKER_HOST`, or the default socket.
        host: String,
        /// bollard's error.
        reason: String,
    },
    /// An engine API call failed.
    #[error("container engine call failed ({what}): {source}")]
    Api {
        /// The call, e.g. `create exec in <container>`.
        what: String,
        /// bollard's error.
        #[source]
        source: bollard::errors::Error,
    },
    /// A command run inside a node container exited non-zero.
    #[error("`{command}` in container {container} exited with {exit_code:?}: {stderr}")]
    ExecFailed {
        /// The node container.
        container: String,
        /// The command line.
        command: String,
        /// Its exit code (`None` when the engine did not report one).
        exit_code: Option<i64>,
        /// What it printed on stderr.
        stderr: String,
    },
    #[error(
        "image {image} is built for {image_arch} but node {node} is {node_arch}; build it with --platform linux/{node_arch}"
    )]
    /// An image built for another architecture than the node that should run it.
    ArchMismatch {
        /// The image reference.
        image: String,
        /// The architecture the image declares.
        image_arch: String,
        /// The node container.
        node: String,
        /// The node's architecture.
        node_arch: Arch,
    },
    /// A tar archive (to copy files or load images into a node) could not be built.
    #[error("cannot build an archive for {what}: {source}")]
    Archive {
        /// What was being archived.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

fn api(what: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> EngineError {
    let what = what.into();
    move |source| EngineError::Api { what, source }
}

/// What a command run inside a container printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExecOutput {
    /// The container the command ran in.
    pub container: String,
    /// The command as run.
    pub argv: Vec<String>,
    /// Its exit code (`None` when the engine did not report one).
    pub exit_code: Option<i64>,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// Everything it printed on stderr.
    pub stderr: String,
}

/// A connection to the container engine that hosts the nodes.
#[derive(Debug, Clone)]
pub struct NodeEngine {
    docker: Docker,
    host: String,
}

impl NodeEngine {
    /// Connects via `DOCKER_HOST` (or the default socket) and checks that the engine answers.
    pub async fn connect() -> Result<Self, EngineError> {
        let host = std::env::var("DOCKER_HOST")
            .unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string());
        let unreachable = |reason: String| EngineError::Unreachable {
            host: host.clone(),
            reason,
        };
        let docker = Docker::connect_with_defaults().map_err(|e| unreachable(e.to_string()))?;
        docker
            .ping()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        Ok(Self { docker, host })
    }

    /// The underlying bollard client.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// The engine address in use.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Names of the running containers carrying `label=value` (Kind: `io.x-k8s.kind.cluster`).
    pub async fn containers_with_label(
        &self,
        label: &str,
        value: &str,
    ) -> Result<Vec<String>, EngineError> {
        let filters = HashMap::from([("label".to_string(), vec![format!("{label}={value}")])]);
        let list = self
            .docker
            .list_containers(Some(ListContainersOptions {
                all: false,
                filters: Some(filters),
                ..Default::default()
            }))
            .await
            .map_err(api(format!("list containers with {label}={value}")))?;
        let mut names: Vec<String> = list
            .into_iter()
            .filter_map(|c| c.names?.into_iter().next())
            .map(|n| n.trim_start_matches('/').to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Runs `argv` inside `container` and collects its output and exit code.
    pub async fn exec(&self, container: &str, argv: &[&str]) -> Result<ExecOutput, EngineError> {
        let created = self
            .docker
            .create_exec(
                container,
                CreateExecOptions {
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    cmd: Some(argv.to_vec()),
                    ..Default::default()
                },
            )
            .await
            .map_err(api(format!("create exec in {container}")))?;
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        match self
            .docker
            .start_exec(&created.id, None)
            .await
            .map_err(api(format!("start exec in {container}")))?
        {
            StartExecResults::Attached { mut output, .. } => {
                while let Some(chunk) = output.next().await {
                    match chunk.map_err(api(format!("read exec output in {container}")))? {
                        bollard::container::LogOutput::StdErr { message } => {
                            stderr.extend_from_slice(&message)
                        }
                        other => stdout.extend_from_slice(&other.into_bytes()),
                    }
                }
            }
            StartExecResults::Detached => {}
        }
        let inspect = self
            .docker
            .inspect_exec(&created.id)
            .await
            .map_err(api(format!("inspect exec in {container}")))?;
        Ok(ExecOutput {
            container: container.to_string(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            exit_code: inspect.exit_code,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    /// Like [`NodeEngine::exec`] but a non-zero exit is an error.
    pub async fn exec_checked(
        &self,
        container: &str,
        argv: &[&str],
    ) -> Result<ExecOutput, EngineError> {
        let out = self.exec(container, argv).await?;
        if out.exit_code == Some(0) {
            Ok(out)
        } else {
            Err(EngineError::ExecFailed {
                container: container.to_string(),
                command: argv.join(" "),
                exit_code: out.exit_code,
                stderr: out.stderr.trim().to_string(),
            })
        }
    }

    /// The node container's architecture, as its kernel reports it (`uname -m`).
    pub async fn node_arch(&self, container: &str) -> Result<Arch, EngineError> {
        let out = self.exec_checked(container, &["uname", "-m"]).await?;
        Ok(Arch::normalize(&out.stdout))
    }

    /// Writes one file into the container (parent directory must exist).
    pub async fn write_file(
        &self,
        container: &str,
        dir: &str,
        name: &str,
        contents: Bytes,
        mode: u32,
    ) -> Result<(), EngineError> {
        let archive =
            single_file_tar(name, &contents, mode).map_err(|source| EngineError::Archive {
                what: format!("{dir}/{name}"),
                source,
            })?;
        self.docker
            .upload_to_container(
                container,
                Some(UploadToContainerOptionsBuilder::new().path(dir).build()),
                bollard::body_full(Bytes::from(archive)),
            )
            .await
            .map_err(api(format!("copy {name} into {container}:{dir}")))
    }

    /// Saves `image` from the engine as a `docker save` archive, refusing an image whose
    /// platform differs from `arch` (a multi-platform save is what breaks `kind load`).
    pub async fn save_image(
        &self,
        image: &str,
        node: &str,
        arch: &Arch,
    ) -> Result<Bytes, EngineError> {
        let inspect = self
            .docker
            .inspect_image(image)
            .await
            .map_err(api(format!("inspect image {image}")))?;
        let image_arch = Arch::normalize(inspect.architecture.as_deref().unwrap_or(""));
        if &image_arch != arch {
            return Err(EngineError::ArchMismatch {
                image: image.to_string(),
                image_arch: image_arch.0,
                node: node.to_string(),
                node_arch: arch.clone(),
            });
        }
        let mut stream = self.docker.export_image(image);
        let mut archive = Vec::new();
        while let Some(chunk) = stream.next().await {
            archive.extend_from_slice(&chunk.map_err(api(format!("save image {image}")))?);
        }
        Ok(Bytes::from(archive))
    }

    /// Imports a single-platform image archive into the node's containerd (`k8s.io` namespace,
    /// the one the kubelet uses), then removes the archive from the node.
    pub async fn import_into_node(
        &self,
        node: &str,
        archive_name: &str,
        archive: Bytes,
        arch: &Arch,
    ) -> Result<ExecOutput, EngineError> {
        self.exec_checked(node, &["mkdir", "-p", NODE_IMAGE_DIR])
            .await?;
        self.write_file(node, NODE_IMAGE_DIR, archive_name, archive, 0o644)
            .await?;
        let path = format!("{NODE_IMAGE_DIR}/{archive_name}");
        let platform = format!("linux/{arch}");
        let argv = ctr_import_argv(&platform, &path);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let result = self.exec_checked(node, &argv).await;
        let _ = self.exec(node, &["rm", "-f", &path]).await;
        result
    }

    /// Connects `container` to `network` (the registry container to the Kind network, so the
    /// nodes reach it by name); already connected is fine.
    pub async fn connect_network(&self, network: &str, container: &str) -> Result<(), EngineError> {
        let inspect = self
            .docker
            .inspect_container(container, None)
            .await
            .map_err(api(format!("inspect container {container}")))?;
        let joined = inspect
            .network_settings
            .and_then(|n| n.networks)
            .is_some_and(|n| n.contains_key(network));
        if joined {
            return Ok(());
        }
        self.docker
            .connect_network(
                network,
                bollard::models::NetworkConnectRequest {
                    container: container.to_string(),
                    ..Default::default()
                },
            )
            .await
            .map_err(api(format!("connect {container} to network {network}")))
    }

    /// The networks `container` is connected to, sorted.
    pub async fn container_networks(&self, container: &str) -> Result<Vec<String>, EngineError> {
        let inspect = self
            .docker
            .inspect_container(container, None)
            .await
            .map_err(api(format!("inspect container {container}")))?;
        let mut names: Vec<String> = inspect
            .network_settings
            .and_then(|n| n.networks)
            .map(|n| n.into_keys().collect())
            .unwrap_or_default();
        names.sort();
        Ok(names)
    }

    /// Stops one CRI container inside the node; the kubelet then restarts it in the same pod.
    pub async fn crictl_stop(
        &self,
        node: &str,
        container_id: &str,
    ) -> Result<ExecOutput, EngineError> {
        self.exec_checked(node, &["crictl", "stop", container_id])
            .await
    }
}

/// Where archives are staged inside a node before import.
pub const NODE_IMAGE_DIR: &str = "/tmp/rehearsal-images";

/// `ctr` argv that imports one platform of an archive into the kubelet's containerd namespace.
pub fn ctr_import_argv(platform: &str, path: &str) -> Vec<String> {
    [
        "ctr",
        "--namespace=k8s.io",
        "images",
        "import",
        "--platform",
        platform,
        "--digests",
        "--snapshotter=overlayfs",
        path,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A CRI container ID from a pod status `containerID` (`containerd://abc…` → `abc…`).
pub fn cri_container_id(status_id: &str) -> &str {
    status_id
        .split_once("://")
        .map(|(_, id)| id)
        .unwrap_or(status_id)
}

fn single_file_tar(name: &str, contents: &[u8], mode: u32) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(contents.len() as u64);
    header.set_mode(mode);
    header.set_mtime(0);
    header.set_cksum();
    builder.append_data(&mut header, name, contents)?;
    builder.into_inner()
}
