//! What the server's parts share: its configuration, the state every request handler and
//! watch reads ([`Shared`]), and the shutdown signal. Below the server, the handlers and the
//! watches, so none of them imports another for it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::watch;

use crate::hook::RequestHook;
use crate::logs::PodLogSource;
use crate::state::State;
use crate::streams::PodStreams;

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ApiServerConfig {
    /// Where to listen; port 0 picks a free port.
    pub bind: SocketAddr,
    /// Events retained for watches resuming from a resourceVersion (older ones get 410), and
    /// how far a live watcher may fall behind. Each retained event keeps its object (and the
    /// previous version of a modified one) alive.
    pub watch_history: usize,
    /// Request bodies above this get 413 (etcd's own limit is 1.5 MiB).
    pub max_body_bytes: usize,
    /// How often a watch that allows bookmarks receives one.
    pub bookmark_interval: Duration,
    /// Pods bound to a node are deleted gracefully (deletionTimestamp, then removal when
    /// deleted again with gracePeriodSeconds=0, as a kubelet does); off = immediate removal.
    pub graceful_pod_deletion: bool,
    /// The range Service cluster IPs are allocated from (`--service-cluster-ip-range`).
    pub service_range: crate::services::ServiceRange,
}

impl Default for ApiServerConfig {
    fn default() -> Self {
        ApiServerConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            watch_history: 4096,
            max_body_bytes: 3 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(60),
            graceful_pod_deletion: true,
            service_range: crate::services::ServiceRange::default(),
        }
    }
}

/// The watch events withheld from clients ([`crate::DropNextEvent`]).
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    /// Drops armed, not yet matched by an event.
    pub armed: Vec<crate::DropNextEvent>,
    /// Events matched (by resourceVersion), withheld from every watch of the user prefix.
    pub withheld: Vec<(String, u64)>,
}

/// What request handlers share.
pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// The admin token and the ServiceAccount token signing key.
    pub keys: crate::auth::Keys,
    /// The CA and serving certificate.
    pub tls: crate::tls::ServerTls,
    pub logs: RwLock<Option<Arc<dyn PodLogSource>>>,
    pub streams: RwLock<Option<Arc<dyn PodStreams>>>,
    /// The exploration hook ([`crate::hook`]), when a harness attached one.
    pub hook: RwLock<Option<Arc<dyn RequestHook>>>,
    /// HTTP requests received since the server started (every verb, watches and streams too).
    pub requests: std::sync::atomic::AtomicU64,
    /// Watch events to withhold ([`crate::DropNextEvent`]).
    pub dropped: Mutex<Dropped>,
    /// How many of them are still to come, for those who await them.
    pub to_drop: watch::Sender<usize>,
    /// The stale view served to one client while it lasts ([`crate::StaleView`]).
    pub stale: watch::Sender<Option<crate::StaleView>>,
    /// Lists answered from the stale view since it was armed.
    pub stale_lists: watch::Sender<usize>,
    /// The write that ended the last stale view, when one did.
    pub stale_ended_by: Mutex<Option<String>>,
    /// Watches opened since the server started, by user and resource (plural).
    pub watches: watch::Sender<std::collections::BTreeMap<(String, String), u64>>,
    pub shutdown: watch::Receiver<bool>,
    pub config: ApiServerConfig,
    pub addr: SocketAddr,
}

impl Shared {
    /// The resourceVersion `user`'s lists and watches are answered as of, while a stale view
    /// of that user lasts.
    pub fn stale_as_of(&self, user: &str) -> Option<u64> {
        let view = self.stale.borrow();
        let view = view.as_ref()?;
        user.starts_with(&view.user_prefix).then_some(view.as_of)
    }

    /// `user` wrote to `resource` (`write`, e.g. `patch backups/status live`): its stale view,
    /// if it has one that such a write ends, ends (its watches catch up), and `write` is kept as
    /// what ended it.
    pub fn wrote(&self, user: &str, resource: &str, write: impl FnOnce() -> String) {
        let ends = self.stale.borrow().as_ref().is_some_and(|v| {
            user.starts_with(&v.user_prefix)
                && (v.ends_on.is_empty() || v.ends_on.iter().any(|r| r == resource))
        });
        if ends {
            // Kept first: whoever sees the view end reads what ended it.
            *self
                .stale_ended_by
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(write());
            self.stale.send_replace(None);
        }
    }

    /// The store, also after a handler panicked while holding it (panics are answered with
    /// a 500 and must not take the server down).
    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The exploration hook, when one is attached.
    pub fn hook(&self) -> Option<Arc<dyn RequestHook>> {
        self.hook.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Resolves once shutdown was requested.
pub(crate) async fn stopped(mut shutdown: watch::Receiver<bool>) {
    let stop = shutdown.wait_for(|stop| *stop).await.is_ok();
    // A dropped sender means the server is gone: stop too.
    let _ = stop;
}
