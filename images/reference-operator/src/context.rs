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
}

impl Ctx {
    /// Builds the context.
    pub fn new(client: Client, settings: Settings) -> Self {
        Ctx {
            client,
            agent: AgentClient::new(settings.agent_timeout, settings.cluster_dns),
            settings,
        }
    }

    /// Whether this operator re-creates `mutant`.
    pub fn mutant(&self, mutant: Mutant) -> bool {
        self.settings.mutant.is(mutant)
    }
}
