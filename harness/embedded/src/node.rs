//! The single node's identity and clock, shared by the kubelet, the controllers and the event
//! recorder (a leaf: it imports none of them).

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
