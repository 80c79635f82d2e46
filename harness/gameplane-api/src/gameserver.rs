//! `GameServer`: one running game server instance (CONTRACT A).

use k8s_openapi::api::core::v1::EnvVar;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a single game server instance.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[kube(
    group = "gameplane.local",
    version = "v1alpha1",
    kind = "GameServer",
    namespaced,
    status = "GameServerStatus",
    shortname = "gs",
    category = "gameplane",
    doc = "GameServer is a single running game server instance.",
    printcolumn(
        name = "Template",
        type_ = "string",
        json_path = ".spec.templateRef.name"
    ),
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.version"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Suspend",
        type_ = "boolean",
        json_path = ".spec.suspend",
        priority = "1"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct GameServerSpec {
    /// The cluster-scoped GameTemplate this server runs.
    pub template_ref: TemplateRef,
    /// An id from the template's `versions[]`; empty means the entry with `default: true`, else
    /// the first entry (else the template's top-level image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = crate::VERSION_ID_PATTERN, "maxLength" = 40))]
    pub version: Option<String>,
    /// Overrides the game image of the selected version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Scales the server to zero and keeps its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// World and extra volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageSpec>,
    /// Extra environment for the game container (after the template's and the version's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Idle sleep settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleSpec>,
}

/// Reference to a GameTemplate.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
pub struct TemplateRef {
    /// The GameTemplate's name.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// Storage of a game server (or the defaults of a template).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageSpec {
    /// Size of the world claim `<gs>-data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = crate::QUANTITY_PATTERN))]
    pub size: Option<Quantity>,
    /// StorageClass of every claim; empty uses the cluster default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// Where the world claim is mounted in the game container (default `/data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_path: Option<String>,
    /// Extra world claims `<gs>-extra-<name>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<ExtraVolume>,
}

/// One extra world claim.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtraVolume {
    /// Suffix of the claim name `<gs>-extra-<name>`.
    #[schemars(extend("pattern" = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength" = 40))]
    pub name: String,
    /// Mount path in the game container.
    #[schemars(extend("pattern" = "^/.*", "maxLength" = 255))]
    pub mount_path: String,
    /// Claim size.
    #[schemars(extend("pattern" = crate::QUANTITY_PATTERN))]
    pub size: Quantity,
}

/// Idle sleep intent.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdleSpec {
    /// Whether the server may sleep when idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Minutes without players before sleeping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 5, "maximum" = 1440))]
    pub after_minutes: Option<i32>,
    /// Wake the server when a client connects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_on_connect: Option<bool>,
}

/// Observed state of a game server.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GameServerStatus {
    /// The lifecycle phase, derived by [`GameServerPhase`]'s rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<GameServerPhase>,
    /// `Ready`, `Progressing`, `Healthy`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// When the current game container started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// Completion time of the last successful Backup of this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_backup_time: Option<Time>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Idle sleep state; `asleep: true` scales the server to zero like `suspend`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleStatus>,
}

/// Idle sleep state.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdleStatus {
    /// The server sleeps (no replica) because it was idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asleep: Option<bool>,
    /// Since when it sleeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asleep_since: Option<Time>,
    /// Why it sleeps or woke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 256))]
    pub reason: Option<String>,
}

/// GameServer lifecycle phase.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
pub enum GameServerPhase {
    /// Accepted, children not yet created.
    Pending,
    /// No ready replica yet.
    Starting,
    /// A replica is ready.
    Running,
    /// Scaling down.
    Stopping,
    /// Idle-asleep with no replica.
    Stopped,
    /// Suspended with no ready replica.
    Suspended,
    /// Image pull failure, crash loop, or the game exited non-zero while starting.
    Failed,
}

impl GameServerPhase {
    /// The phase as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Starting => "Starting",
            Self::Running => "Running",
            Self::Stopping => "Stopping",
            Self::Stopped => "Stopped",
            Self::Suspended => "Suspended",
            Self::Failed => "Failed",
        }
    }
}

impl GameServer {
    /// `spec.suspend`, false when absent.
    pub fn suspended(&self) -> bool {
        self.spec.suspend.unwrap_or(false)
    }

    /// Whether the server is asleep because it was idle (`status.idle.asleep`).
    pub fn idle_asleep(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.idle.as_ref())
            .and_then(|i| i.asleep)
            .unwrap_or(false)
    }

    /// Whether the server is meant to have no replica (suspended or idle-asleep).
    pub fn wants_stopped(&self) -> bool {
        self.suspended() || self.idle_asleep()
    }

    /// The names of the extra world volumes.
    pub fn extra_names(&self) -> Vec<String> {
        self.spec
            .storage
            .as_ref()
            .map(|s| s.extra.iter().map(|e| e.name.clone()).collect())
            .unwrap_or_default()
    }
}
