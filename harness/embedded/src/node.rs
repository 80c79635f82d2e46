//! The single node's identity, clock and back-off schedule, shared by the kubelet, the
//! controllers and the event recorder (a leaf: it imports none of them).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The name of the single node.
pub const NODE_NAME: &str = "rehearsal-node";
/// The provisioner of the default StorageClass.
pub const PROVISIONER: &str = "rehearsal.local/local-path";

/// Now, as an API timestamp truncated to seconds (what the API serialises).
pub fn now() -> Time {
    let ts = jiff::Timestamp::now();
    Time(jiff::Timestamp::from_second(ts.as_second()).unwrap_or(ts))
}

/// An exponential back-off: `initial`, doubling, capped at `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// First delay.
    pub initial: Duration,
    /// Cap.
    pub max: Duration,
}

impl Backoff {
    /// Kubernetes' schedule: 10 s doubling to 300 s.
    pub const KUBERNETES: Backoff = Backoff {
        initial: Duration::from_secs(10),
        max: Duration::from_secs(300),
    };

    /// The delay after `previous` (none: `initial`).
    pub fn next(&self, previous: Option<Duration>) -> Duration {
        match previous {
            None => self.initial,
            Some(d) => (d * 2).min(self.max),
        }
    }
}
