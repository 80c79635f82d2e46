//! `Restore`: overwrite a GameServer's world and extra claims from a Backup (CONTRACT A).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backup::ServerRef;

/// A request to restore a Backup into a GameServer.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[kube(
    group = "gameplane.local",
    version = "v1alpha1",
    kind = "Restore",
    namespaced,
    status = "RestoreStatus",
    // `rs` (the real CRD's short name) would shadow ReplicaSets in kubectl.
    shortname = "rst",
    category = "gameplane",
    doc = "Restore replaces a GameServer's world and extra claims with a Backup's snapshot.",
    printcolumn(name = "Backup", type_ = "string", json_path = ".spec.backupRef.name"),
    printcolumn(name = "Server", type_ = "string", json_path = ".spec.serverRef.name"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Snapshot", type_ = "string", json_path = ".status.snapshotID"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct RestoreSpec {
    /// The Backup whose snapshot is restored (same namespace).
    pub backup_ref: BackupRef,
    /// The target GameServer; it must exist and is overwritten.
    pub server_ref: ServerRef,
}

/// Reference to a Backup in the same namespace.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
pub struct BackupRef {
    /// The Backup's name.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// Observed state of a Restore.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreStatus {
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RestorePhase>,
    /// The snapshot being restored.
    #[serde(
        default,
        rename = "snapshotID",
        skip_serializing_if = "Option::is_none"
    )]
    pub snapshot_id: Option<String>,
    /// One line for humans: what happened last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the operator started working on the Restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the Restore reached Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// `Completed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Restore phase.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
pub enum RestorePhase {
    /// Accepted.
    Pending,
    /// Stopping the target and waiting for its pod to go away.
    Suspending,
    /// The restore Job runs.
    Running,
    /// Returning the target to its prior run state.
    Resuming,
    /// The claims hold exactly the snapshot's contents.
    Succeeded,
    /// See `status.message`.
    Failed,
}

impl RestorePhase {
    /// Whether the Restore will not change any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}
