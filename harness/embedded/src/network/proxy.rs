//! The node's Service proxy (kube-proxy's userspace mode): a TCP listener on each
//! `ClusterIP:port`, each accepted connection joined to one ready endpoint of the Service,
//! round robin. Endpoints change under running listeners; a Service with no ready endpoint
//! resets the connection, as a real node's REJECT rule refuses it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use tokio::net::{TcpListener, TcpStream};

/// One listening Service port.
struct Listener {
    endpoints: Arc<RwLock<Vec<SocketAddr>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The listeners of every Service port, keyed by `ClusterIP:port`.
#[derive(Default)]
pub struct Proxy {
    listeners: HashMap<SocketAddr, Listener>,
}

impl Proxy {
    /// Makes the listeners match `table` (Service address → ready endpoints): new ones bound,
    /// gone ones closed, the endpoints of the others replaced.
    pub fn sync(&mut self, table: HashMap<SocketAddr, Vec<SocketAddr>>) {
        self.listeners.retain(|addr, _| table.contains_key(addr));
        for (addr, endpoints) in table {
            if let Some(listener) = self.listeners.get(&addr) {
                *listener
                    .endpoints
                    .write()
                    .unwrap_or_else(|e| e.into_inner()) = endpoints;
                continue;
            }
            let std_listener = match std::net::TcpListener::bind(addr) {
                Ok(l) => l,
                Err(error) => {
                    tracing::warn!(%addr, %error, "cannot listen on a Service address");
                    continue;
                }
            };
            let _ = std_listener.set_nonblocking(true);
            let Ok(listener) = TcpListener::from_std(std_listener) else {
                continue;
            };
            let shared = Arc::new(RwLock::new(endpoints));
            let task = tokio::spawn(accept_loop(listener, shared.clone()));
            self.listeners.insert(
                addr,
                Listener {
                    endpoints: shared,
                    task,
                },
            );
        }
    }
}

async fn accept_loop(listener: TcpListener, endpoints: Arc<RwLock<Vec<SocketAddr>>>) {
    let next = Arc::new(AtomicUsize::new(0));
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let candidates = endpoints.read().unwrap_or_else(|e| e.into_inner()).clone();
        let start = next.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let mut upstream = None;
            for i in 0..candidates.len() {
                let target = candidates[(start + i) % candidates.len()];
                if let Ok(stream) = TcpStream::connect(target).await {
                    upstream = Some(stream);
                    break;
                }
            }
            match upstream {
                Some(mut upstream) => {
                    let mut client = client;
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
                None => {
                    // No endpoint answers: refuse with a reset, not an orderly close. A zero
                    // linger does not block on drop (the warning is about a non-zero one).
                    #[allow(deprecated)]
                    let _ = client.set_linger(Some(std::time::Duration::ZERO));
                    drop(client);
                }
            }
        });
    }
}
