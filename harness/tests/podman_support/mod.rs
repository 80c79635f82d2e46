//! Host-side services outside the cluster (an OCI registry, a restic REST server, …), started
//! through testcontainers against `DOCKER_HOST`. Only the tests start them, so testcontainers is
//! a dev-dependency: the binaries do not compile it (nor the bollard `buildkit` features and
//! the gRPC stack it turns on).
//!
//! Services use host networking and listen on 127.0.0.1 (the only addresses traffic may go to
//! here); a service is ready when it prints its ready line. Dropping [`HostService`] removes
//! the container.

use std::net::SocketAddr;

use testcontainers::core::WaitFor;
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

/// What to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostServiceSpec {
    /// Image repository (a locally present image; nothing is pulled in rehearsals).
    pub repository: String,
    /// Image tag.
    pub tag: String,
    /// Command line (the service must bind 127.0.0.1:`port`).
    pub cmd: Vec<String>,
    /// A line the service prints on stdout once it serves.
    pub ready_line: String,
    /// The port it listens on.
    pub port: u16,
}

/// Why a host service could not start.
#[derive(Debug, thiserror::Error)]
pub enum HostServiceError {
    #[error(
        "DOCKER_HOST is not set: host services need a container engine; run scripts/start-podman.sh and export the DOCKER_HOST it prints"
    )]
    /// No container engine is configured (`DOCKER_HOST` unset).
    NoEngine,
    #[error("cannot start host service {image}: {reason}")]
    /// The engine could not pull, start or wait for the service's container.
    Start {
        /// The service's image.
        image: String,
        /// testcontainers' error.
        reason: String,
    },
}

/// A running host service.
pub struct HostService {
    container: ContainerAsync<GenericImage>,
    addr: SocketAddr,
}

impl std::fmt::Debug for HostService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostService")
            .field("id", &self.container.id())
            .field("addr", &self.addr)
            .finish()
    }
}

impl HostService {
    /// Starts `spec` with host networking and waits for its ready line.
    pub async fn start(spec: &HostServiceSpec) -> Result<Self, HostServiceError> {
        if std::env::var_os("DOCKER_HOST").is_none() {
            return Err(HostServiceError::NoEngine);
        }
        let image = format!("{}:{}", spec.repository, spec.tag);
        let container = GenericImage::new(spec.repository.as_str(), spec.tag.as_str())
            .with_wait_for(WaitFor::message_on_stdout(spec.ready_line.as_str()))
            .with_cmd(spec.cmd.iter().map(String::as_str))
            // Set directly: testcontainers would try to create a network named "host" on podman.
            .with_host_config_modifier(|hc| hc.network_mode = Some("host".into()))
            .start()
            .await
            .map_err(|e| HostServiceError::Start {
                image: image.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            container,
            addr: SocketAddr::from(([127, 0, 0, 1], spec.port)),
        })
    }

    /// Where the service listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The container's ID.
    pub fn id(&self) -> &str {
        self.container.id()
    }

    /// Stops and removes the container now (dropping does the same in the background).
    pub async fn remove(self) -> Result<(), HostServiceError> {
        let id = self.container.id().to_string();
        self.container
            .rm()
            .await
            .map_err(|e| HostServiceError::Start {
                image: id,
                reason: format!("removal failed: {e}"),
            })
    }
}
