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
}

impl Ctx {
    /// Builds the context.
    pub fn new(client: Client, settings: Settings) -> Self {
        Ctx {
            client,
            agent: AgentClient::new(settings.agent_timeout, settings.cluster_dns),
            settings,
            seen: Default::default(),
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

    /// Whether this operator re-creates `mutant`.
    pub fn mutant(&self, mutant: Mutant) -> bool {
        self.settings.mutant.is(mutant)
    }
}
