//! The embedded cluster's node: controllers and a kubelet that runs pods as bubblewrap
//! sandboxes, started together with the embedded API server by [`EmbeddedCluster`].
//!
//! - [`images`]: image references → local executables with stable digests.
//! - [`sandbox`]: the only module that spawns processes (`bwrap`).
//! - [`kubelet`]: runs the node's pods and reports their status; serves their logs.
//! - [`controllers`]: scheduler, Deployment, ReplicaSet, DaemonSet, StatefulSet, Job,
//!   EndpointSlice and volume provisioning.
//! - [`events`]: the Events they record.
//! - [`owners`]: which process owns which cluster, for the clean-up after a crash.
//! - [`pod_ips`]: one loopback address per pod, and the cluster's Service range.
//! - [`network`]: Service proxy, cluster DNS and the pods' `resolv.conf`.
//! - [`watch`]: the reflector stores and reconcile loop the controllers and the network share.
//! - [`node`]: the node's name, clock and back-off schedule, shared by all of the above.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::Pod;
//! use rehearsal_embedded::{EmbeddedCluster, EmbeddedConfig};
//!
//! let cluster = EmbeddedCluster::start(EmbeddedConfig::default()).await?;
//! let pods: kube::Api<Pod> = kube::Api::namespaced(cluster.client(), "default");
//! // … create a StatefulSet, wait for its pod, then fault it in place:
//! let restarted = cluster.restart_container("default", "game-0", "game").await?;
//! assert_eq!(restarted.restart_count, 1);
//! # let _ = pods;
//! cluster.shutdown().await;
//! # Ok(()) }
//! ```

pub mod cluster;
pub mod controllers;
pub mod events;
pub mod images;
pub mod kubelet;
pub mod network;
pub mod node;
pub mod owners;
pub mod pod_ips;
pub mod sandbox;
pub mod watch;

pub use cluster::{EmbeddedCluster, EmbeddedConfig, EmbeddedError, client_for};
pub use images::{Image, ImageCatalogue, ResolvedImage, locate_workspace_binary};
pub use kubelet::{RestartError, RestartedContainer};
pub use node::Backoff;
pub use rehearsal_apiserver::{
    Answer, ApiServerConfig, Change, DropNextEvent, RequestHook, StaleView, WriteRequest,
};
