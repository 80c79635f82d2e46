//! Reaching a pod's port from the host through the API server (`pods/portforward` over
//! WebSocket), for Kind and existing clusters where pod IPs are not routable from the harness.
//!
//! A local listener on 127.0.0.1 accepts connections; each one opens its own port-forward
//! stream, so concurrent probes do not share a tunnel. Dropping [`PortForward`] closes it.

use std::net::SocketAddr;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::BackendError;

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
