//! [`ApiServer`]: binds the listener, serves HTTP/1.1 over TLS (a CA of its own, see
//! [`crate::tls`]), writes kubeconfigs and shuts down gracefully (ending every watch) when
//! asked or dropped.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use base64::Engine as _;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::logs::PodLogSource;
pub use crate::shared::ApiServerConfig;
use crate::shared::{Shared, stopped};
use crate::state::{Settings, State};
use crate::streams::PodStreams;

/// The kubeconfig cluster, context and user name [`ApiServer::write_kubeconfig`] uses.
pub const DEFAULT_CONTEXT: &str = "rehearsal-embedded";

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}; pick another address or port 0 for a free one")]
    /// The listen address could not be bound.
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    #[error("cannot read the address the API server listens on: {0}")]
    /// The bound socket has no readable local address.
    LocalAddr(std::io::Error),
    /// The server's CA or serving certificate could not be made.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
}

/// An in-process Kubernetes API server on HTTPS.
pub struct ApiServer {
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl ApiServer {
    /// Binds and starts serving; must run inside a tokio runtime.
    pub async fn start(config: ApiServerConfig) -> Result<ApiServer, StartError> {
        let listener = tokio::net::TcpListener::bind(config.bind)
            .await
            .map_err(|source| StartError::Bind {
                addr: config.bind,
                source,
            })?;
        let addr = listener.local_addr().map_err(StartError::LocalAddr)?;
        // The certificate names the `kubernetes` Service's cluster IP too (in-cluster clients
        // dial it), and the listening address when it is not loopback.
        let mut ips = vec![crate::services::kubernetes_service_ip(config.service_range)];
        if let std::net::IpAddr::V4(ip) = addr.ip()
            && !ip.is_unspecified()
        {
            ips.push(ip);
        }
        let tls = crate::tls::ServerTls::generate(&ips)?;
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let state = State::new(Settings {
            history: config.watch_history,
            graceful_pod_deletion: config.graceful_pod_deletion,
            service_range: config.service_range,
            root_ca_pem: Some(tls.ca_pem().to_string()),
            api_address: Some(addr),
        });
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            keys: crate::auth::Keys::generate(),
            tls,
            logs: RwLock::new(None),
            streams: RwLock::new(None),
            hook: RwLock::new(None),
            requests: std::sync::atomic::AtomicU64::new(0),
            dropped: std::sync::Mutex::default(),
            to_drop: tokio::sync::watch::Sender::new(0),
            stale: tokio::sync::watch::Sender::new(None),
            stale_lists: tokio::sync::watch::Sender::new(0),
            stale_ended_by: std::sync::Mutex::new(None),
            watches: watch::Sender::new(Default::default()),
            shutdown: shutdown_rx,
            config,
            addr,
        });
        let task = tokio::spawn(serve(listener, shared.clone()));
        Ok(ApiServer {
            shared,
            shutdown: shutdown_tx,
            task: Some(task),
        })
    }

    /// The address the server listens on (with the port the OS picked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// How many HTTP requests the server has received since it started (every verb, watches
    /// and streams included): what a workload costs the API server, for benchmarks.
    pub fn requests(&self) -> u64 {
        self.shared
            .requests
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.shared.addr)
    }

    /// The PEM of the CA that signed the serving certificate (clients trust it:
    /// `certificate-authority-data`, a pod's `ca.crt`).
    pub fn ca_pem(&self) -> &str {
        self.shared.tls.ca_pem()
    }

    /// The bearer token of the admin identity (`kubernetes-admin` in `system:masters`).
    pub fn admin_token(&self) -> &str {
        self.shared.keys.admin_token()
    }

    /// The CA certificate in DER (`kube::Config::root_cert`).
    pub fn ca_der(&self) -> Vec<u8> {
        self.shared.tls.ca_der().to_vec()
    }

    /// A kubeconfig whose cluster, context and user are all named `context_name`, with the
    /// server's CA and the admin identity's token.
    pub fn kubeconfig_yaml(&self, context_name: &str) -> String {
        self.kubeconfig_with_token(context_name, self.admin_token())
    }

    /// A kubeconfig like [`Self::kubeconfig_yaml`] that authenticates with `token` (e.g. a
    /// ServiceAccount token from a TokenRequest).
    pub fn kubeconfig_with_token(&self, context_name: &str, token: &str) -> String {
        let n = context_name;
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [{"name": n, "cluster": {
                "server": self.url(),
                "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(self.ca_pem()),
            }}],
            "contexts": [{"name": n, "context": {"cluster": n, "user": n, "namespace": "default"}}],
            "current-context": n,
            "users": [{"name": n, "user": {"token": token}}],
        });
        // Serialised, not formatted: a name or token with YAML syntax in it stays a string.
        serde_yaml::to_string(&config).expect("a JSON value serialises to YAML")
    }

    /// Writes [`Self::kubeconfig_yaml`] with the [`DEFAULT_CONTEXT`] name to `path`.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), KubeconfigError> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| KubeconfigError {
                path: path.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(path, self.kubeconfig_yaml(DEFAULT_CONTEXT)).map_err(|source| {
            KubeconfigError {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    /// Attaches the source `GET …/pods/NAME/log` reads from (the kubelet).
    pub fn set_pod_logs(&self, source: Arc<dyn PodLogSource>) {
        *self.shared.logs.write().unwrap_or_else(|p| p.into_inner()) = Some(source);
    }

    /// Attaches the node that serves `pods/exec`, `pods/attach` and `pods/portforward`.
    pub fn set_pod_streams(&self, streams: Arc<dyn PodStreams>) {
        *self
            .shared
            .streams
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(streams);
    }

    /// Attaches the exploration hook ([`crate::RequestHook`]): every mutating request passes
    /// through it before it is applied, and every committed change is reported to it. `None`
    /// detaches it (held requests already waiting stay held until their futures resolve).
    pub fn set_hook(&self, hook: Option<Arc<dyn crate::RequestHook>>) {
        self.shared.state().set_observer(hook.clone());
        *self.shared.hook.write().unwrap_or_else(|p| p.into_inner()) = hook;
    }

    /// Withholds the next watch event `drop` names from its client ([`crate::DropNextEvent`]).
    pub fn drop_next_event(&self, drop: crate::DropNextEvent) {
        let mut dropped = self
            .shared
            .dropped
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        dropped.armed.push(drop);
        self.shared.to_drop.send_replace(dropped.armed.len());
    }

    /// Waits at most `bound` until every event armed with [`Self::drop_next_event`] was
    /// withheld; whether they all were.
    pub async fn await_events_dropped(&self, bound: std::time::Duration) -> bool {
        let mut to_drop = self.shared.to_drop.subscribe();
        tokio::time::timeout(bound, to_drop.wait_for(|n| *n == 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Serves `view`'s client the cluster as it was ([`crate::StaleView`]), replacing any
    /// view armed before; `None` ends it (its client's watches catch up).
    pub fn serve_stale_view(&self, view: Option<crate::StaleView>) {
        self.shared.stale_lists.send_replace(0);
        if view.is_some() {
            *self
                .shared
                .stale_ended_by
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = None;
        }
        self.shared.stale.send_replace(view);
    }

    /// Waits at most `bound` until the stale view ended; the write of its client that ended
    /// it (`patch backups/status live`), `None` when none did (the bound passed, or the view
    /// was ended by [`Self::serve_stale_view`]).
    pub async fn await_stale_view_ended(&self, bound: std::time::Duration) -> Option<String> {
        let mut view = self.shared.stale.subscribe();
        let _ = tokio::time::timeout(bound, view.wait_for(Option::is_none)).await;
        self.shared
            .stale_ended_by
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits at most `bound` until a list was answered from the stale view armed last; whether
    /// one was.
    pub async fn await_stale_list(&self, bound: std::time::Duration) -> bool {
        let mut served = self.shared.stale_lists.subscribe();
        tokio::time::timeout(bound, served.wait_for(|n| *n > 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Watches of `plural` opened since the server started by users whose name starts with
    /// `user_prefix`.
    pub fn watches_opened(&self, user_prefix: &str, plural: &str) -> u64 {
        opened(&self.shared.watches.borrow(), user_prefix, plural)
    }

    /// Waits at most `bound` until, for each `(plural, before)` of `wanted`, more than `before`
    /// watches of `plural` were opened by users whose name starts with `user_prefix` (an
    /// informer's watch follows its first list: its cache is filled); whether they were.
    pub async fn await_watches_opened(
        &self,
        user_prefix: &str,
        wanted: &[(String, u64)],
        bound: std::time::Duration,
    ) -> bool {
        let mut watches = self.shared.watches.subscribe();
        let all = |m: &std::collections::BTreeMap<(String, String), u64>| {
            wanted
                .iter()
                .all(|(plural, before)| opened(m, user_prefix, plural) > *before)
        };
        tokio::time::timeout(bound, watches.wait_for(all))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Withheld events still to come: armed with [`Self::drop_next_event`], not yet matched.
    pub fn events_to_drop(&self) -> usize {
        self.shared
            .dropped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .armed
            .len()
    }

    /// Stops accepting, ends every watch and waits (bounded) for open requests to finish.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Writing the kubeconfig failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the kubeconfig {path}: {source}; check that the directory is writable")]
pub struct KubeconfigError {
    /// The kubeconfig file that could not be written.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}

async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let shutdown = shared.shutdown.clone();
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                connections.spawn(serve_connection(stream, shared.clone()));
            }
            _ = stopped(shutdown.clone()) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(6), drain)
        .await
        .is_err()
    {
        connections.abort_all();
    }
}

/// One HTTP/1.1 connection over TLS, closed gracefully (after its current request) at
/// shutdown.
async fn serve_connection(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    // Watch events are small writes; Nagle would hold them back.
    let _ = stream.set_nodelay(true);
    let shutdown = shared.shutdown.clone();
    // A client that never completes its handshake is dropped, as one that never sends headers.
    let handshake = shared.tls.acceptor().accept(stream);
    let stream = tokio::select! {
        accepted = tokio::time::timeout(Duration::from_secs(30), handshake) => match accepted {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => {
                tracing::debug!(%error, "TLS handshake failed");
                return;
            }
            Err(_) => return,
        },
        _ = stopped(shutdown.clone()) => return,
    };
    let service = service_fn(move |req| {
        let shared = shared.clone();
        shared
            .requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::trace!(target: "rehearsal_apiserver::requests", method = %req.method(), uri = %req.uri(), agent = ?req.headers().get(http::header::USER_AGENT));
        async move { Ok::<_, Infallible>(crate::handler::handle(shared, req).await) }
    });
    let conn = http1::Builder::new()
        // A timer bounds how long a client may take to send its headers.
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .keep_alive(true)
        // A client that shuts down its write side still gets its answer.
        .half_close(true)
        .serve_connection(TokioIo::new(stream), service)
        // exec, attach and port-forward switch the connection to WebSocket.
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stopped(shutdown) => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
}

/// Watches of `plural` in `m` opened by users whose name starts with `user_prefix`.
fn opened(
    m: &std::collections::BTreeMap<(String, String), u64>,
    user_prefix: &str,
    plural: &str,
) -> u64 {
    m.iter()
        .filter(|((user, p), _)| p == plural && user.starts_with(user_prefix))
        .map(|(_, n)| n)
        .sum()
}
