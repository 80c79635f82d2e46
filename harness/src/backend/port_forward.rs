//! Reaching a pod's port from the host through the API server (`pods/portforward` over
//! WebSocket), for Kind and existing clusters where pod IPs are not routable from the harness.
//!
//! A local listener on 127.0.0.1 accepts connections; each one opens its own port-forward
//! stream, so concurrent probes do not share a tunnel. Dropping [`PortForward`] closes it.
//! [`reach`] is what every backend's `Backend::reach` runs on this path (the embedded one
//! too, when selected), so the code Kind and existing clusters depend on is the code tested.

use std::net::SocketAddr;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::{BackendError, Reach};

/// Reaches `port` of a pod through the API server: checks that the pod is running (a clear
/// error now rather than a reset connection later), then starts a [`PortForward`].
pub async fn reach(
    client: kube::Client,
    namespace: &str,
    pod: &str,
    port: u16,
) -> Result<Reach, BackendError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let found = pods
        .get(pod)
        .await
        .map_err(|e| BackendError::kube(format!("get pod {namespace}/{pod} to port-forward"), e))?;
    let phase = found
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Unknown".into());
    if phase != "Running" {
        return Err(BackendError::PodState {
            namespace: namespace.into(),
            pod: pod.into(),
            what: format!("running container to port-forward to (phase {phase})"),
        });
    }
    let forward = PortForward::start(client, namespace, pod, port).await?;
    Ok(Reach {
        addr: forward.addr(),
        forward: Some(forward),
    })
}

/// A running local listener that forwards to one pod port.
#[derive(Debug)]
pub struct PortForward {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl PortForward {
    /// Starts listening on 127.0.0.1 (ephemeral port) and forwarding to `pod:port`.
    pub async fn start(
        client: kube::Client,
        namespace: &str,
        pod: &str,
        port: u16,
    ) -> Result<Self, BackendError> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| {
            BackendError::io(
                "listen for a port-forward",
                std::path::Path::new("127.0.0.1:0"),
                e,
            )
        })?;
        let addr = listener.local_addr().map_err(|e| {
            BackendError::io(
                "read the port-forward address",
                std::path::Path::new("127.0.0.1:0"),
                e,
            )
        })?;
        let pods: Api<Pod> = Api::namespaced(client, namespace);
        let pod = pod.to_string();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let pods = pods.clone();
                let pod = pod.clone();
                tokio::spawn(async move {
                    let mut forwarder = match pods.portforward(&pod, &[port]).await {
                        Ok(f) => f,
                        Err(e) => {
                            tracing::warn!(%pod, port, error = %e, "port-forward failed");
                            return;
                        }
                    };
                    if let Some(mut upstream) = forwarder.take_stream(port) {
                        let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
                    }
                    drop(forwarder);
                });
            }
        });
        Ok(Self { addr, task })
    }

    /// Where to connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        self.task.abort();
    }
}
