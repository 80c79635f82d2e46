//! What every reconciler shares: the client, the agent client and the settings.

use kube::Client;

use crate::agent::AgentClient;
use crate::mutant::Mutant;
use crate::settings::Settings;

/// Shared reconciler state.
pub struct Ctx {
    /// The cluster.
    pub client: Client,
    /// Agents, by their Service's DNS name.
    pub agent: AgentClient,
    /// Images, deadlines, mutant.
    pub settings: Settings,
    /// The objects (by UID) a reconcile has already seen since this process started.
    seen: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The objects (by UID) whose own write this process waits to see in its cache (the
    /// `source-event-awaited` mutant's expectations).
    expected: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Ctx {
    /// Builds the context.
    pub fn new(client: Client, settings: Settings) -> Self {
        Ctx {
            client,
            agent: AgentClient::new(settings.agent_timeout, settings.cluster_dns),
            settings,
            seen: Default::default(),
            expected: Default::default(),
        }
    }

    /// Whether this is the first reconcile of the object with `uid` since this process
    /// started (it then counts as seen).
    pub fn first_sight(&self, uid: &str) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(uid.to_string())
    }

    /// Expects the object with `uid` to show this process's own write in the cache before it is
    /// reconciled again (`true`), or no longer (`false`).
    pub fn expect_own_write(&self, uid: &str, expected: bool) {
        let mut set = self.expected.lock().unwrap_or_else(|e| e.into_inner());
        if expected {
            set.insert(uid.to_string());
        } else {
            set.remove(uid);
        }
    }

    /// Whether the object with `uid` waits for its own write's watch event.
    pub fn expects_own_write(&self, uid: &str) -> bool {
        self.expected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(uid)
    }

    /// Whether this operator re-creates `mutant`.
    pub fn mutant(&self, mutant: Mutant) -> bool {
        self.settings.mutant.is(mutant)
    }
}
