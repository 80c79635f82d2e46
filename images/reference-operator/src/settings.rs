//! What the operator runs with besides the cluster: images, deadlines, the mutant.

use std::time::Duration;

use crate::mutant::ActiveMutant;

/// Settings every controller reads.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The defect this operator re-creates, if any.
    pub mutant: ActiveMutant,
    /// The agent image when a template names none.
    pub agent_image: String,
    /// The image of backup and restore Jobs (restic plus a POSIX `sh`).
    pub restic_image: String,
    /// How long a live backup may wait for the game's incarnation to become observable.
    pub preparation_deadline: Duration,
    /// Bound of one agent HTTP exchange.
    pub agent_timeout: Duration,
    /// How often a non-terminal Backup or Restore is re-checked without an event (incarnation
    /// checks "during the copy" also run on every pod event; this is the backstop).
    pub recheck_interval: Duration,
    /// Where `*.cluster.local` names are resolved when the operator runs outside a pod;
    /// `None`: the system resolver (in a pod, the cluster DNS).
    pub cluster_dns: Option<std::net::Ipv4Addr>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mutant: ActiveMutant::default(),
            agent_image: "rehearsal.local/fixture-agent:1.0".to_string(),
            restic_image: "restic/restic:0.14.0".to_string(),
            preparation_deadline: Duration::from_secs(60),
            agent_timeout: Duration::from_secs(10),
            recheck_interval: Duration::from_millis(500),
            cluster_dns: None,
        }
    }
}
