//! The embedded cluster's node: controllers and a kubelet that runs pods as bubblewrap sandboxes.

pub mod images;
pub mod owners;
pub mod pod_ips;
pub mod sandbox;
