//! `Backup`: one restic copy of a server's world and extra claims (CONTRACT A, with the Part B
//! source record and consistency verdict).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn default_true() -> Option<bool> {
    Some(true)
}

fn default_strategy() -> Option<String> {
    Some(STRATEGY_RESTIC.to_string())
}

/// The restic strategy (the only one the reference operator implements).
pub const STRATEGY_RESTIC: &str = "restic-snapshot";

/// A request to back up one GameServer.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq, JsonSchema)]
#[kube(
    group = "gameplane.local",
    version = "v1alpha1",
    kind = "Backup",
    namespaced,
    status = "BackupStatus",
    shortname = "bk",
    category = "gameplane",
    doc = "Backup is a restic copy of a GameServer's world and extra claims.",
    printcolumn(name = "Server", type_ = "string", json_path = ".spec.serverRef.name"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Consistency",
        type_ = "string",
        json_path = ".status.consistency"
    ),
    printcolumn(name = "Snapshot", type_ = "string", json_path = ".status.snapshotID"),
    printcolumn(
        name = "Size",
        type_ = "string",
        json_path = ".status.size",
        priority = "1"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// The GameServer to back up (same namespace).
    pub server_ref: ServerRef,
    /// The Secret with keys `repo` and `password`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_ref: Option<RepoRef>,
    /// `restic-snapshot` (default).
    #[serde(default = "default_strategy", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["restic-snapshot", "volume-snapshot"]))]
    pub strategy: Option<String>,
    /// Quiesce a live source through the agent (default true).
    #[serde(default = "default_true", skip_serializing_if = "Option::is_none")]
    pub quiesce: Option<bool>,
    /// Extra restic tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Reference to a GameServer in the same namespace.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
pub struct ServerRef {
    /// The GameServer's name.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// Reference to the restic repository Secret.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
pub struct RepoRef {
    /// Secret name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Key of the repository URL in the Secret (conventionally `repo`; the password is always
    /// under `password`).
    #[schemars(length(min = 1))]
    pub key: String,
}

/// Observed state of a Backup.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupStatus {
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupPhase>,
    /// The restic snapshot id (short id from restic 0.14's summary).
    #[serde(
        default,
        rename = "snapshotID",
        skip_serializing_if = "Option::is_none"
    )]
    pub snapshot_id: Option<String>,
    /// When the operator started working on the Backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the Backup reached Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Bytes added by the snapshot, as restic reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = crate::QUANTITY_PATTERN))]
    pub size: Option<Quantity>,
    /// One line for humans: what happened last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `Completed` and `Unquiesced`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// What was copied from: the incarnation a live capture is bound to (Part B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceRecord>,
    /// How consistent the copy is (Part B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

/// Backup phase.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
pub enum BackupPhase {
    /// Accepted, preparing the source.
    Pending,
    /// The copy Job runs.
    Running,
    /// The snapshot exists and is consistent as `status.consistency` says.
    Succeeded,
    /// No usable snapshot; `status.message` and `Completed` say why.
    Failed,
}

impl BackupPhase {
    /// Whether the Backup will not change any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

/// The source a Backup was bound to when it was prepared.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceRecord {
    /// `Live` (a running game pod) or `Stopped` (no pod).
    pub state: SourceState,
    /// The pod's name, for a live source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// The pod's UID, for a live source.
    #[serde(default, rename = "podUID", skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// The `game` container's `containerID`, for a live source.
    #[serde(
        default,
        rename = "gameContainerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub game_container_id: Option<String>,
    /// The `game` container's `restartCount`, for a live source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game_restart_count: Option<i32>,
}

/// Whether the source had a running pod.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, JsonSchema)]
pub enum SourceState {
    /// A running game pod; the copy is bound to its incarnation.
    #[default]
    Live,
    /// Suspended or idle-asleep with no pod.
    Stopped,
}

/// The consistency of a copy.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
pub enum Consistency {
    /// Copied from the recorded incarnation while it was quiesced, which stayed unchanged.
    Quiesced,
    /// Copied while no pod existed.
    Stopped,
    /// Copied from a live game without quiesce (`spec.quiesce: false`): crash-consistent only.
    Unquiesced,
    /// The capture was invalidated (source changed or started); not a usable consistent copy.
    Invalidated,
}

impl Backup {
    /// `spec.quiesce`, true when absent.
    pub fn wants_quiesce(&self) -> bool {
        self.spec.quiesce.unwrap_or(true)
    }

    /// The status phase, if any.
    pub fn phase(&self) -> Option<BackupPhase> {
        self.status.as_ref().and_then(|s| s.phase)
    }
}
