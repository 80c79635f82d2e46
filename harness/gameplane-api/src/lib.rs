//! Typed Gameplane `v1alpha1` API as `CONTRACT.md` (parts A and B) states it.
//!
//! The harness drives and observes Gameplane through these types, and the reference operator
//! serves them. Field names follow the real Gameplane CRDs (camelCase) where the two overlap;
//! the Part B additions (`Backup.status.source`, `Backup.status.consistency`, the
//! `Unquiesced` condition and its reasons) are the behaviour the rehearsal cases prove.
//!
//! ```
//! use gameplane_api::{names, GameServer};
//! use kube::Resource;
//! assert_eq!(GameServer::plural(&()), "gameservers");
//! assert_eq!(names::mods_pvc("lobby", "1.21.4"), "lobby-mods-1-21-4");
//! ```

// `#[kube(printcolumn(...))]` repeats `type_ = "string"` by design; clippy reads that as a
// duplicated attribute.
#![allow(clippy::duplicated_attributes)]

pub mod backup;
pub mod conditions;
pub mod crds;
pub mod gameserver;
pub mod gametemplate;
pub mod module;
pub mod names;
pub mod restore;

pub use backup::{
    Backup, BackupPhase, BackupSpec, BackupStatus, Consistency, RepoRef, ServerRef, SourceRecord,
    SourceState,
};
pub use gameserver::{
    ExtraVolume, GameServer, GameServerPhase, GameServerSpec, GameServerStatus, IdleSpec,
    IdleStatus, StorageSpec, TemplateRef,
};
pub use gametemplate::{
    AgentSpec, GamePort, GameTemplate, GameTemplateSpec, GameVersion, QuiesceCapability, RconSpec,
    SecretKeyRef, TemplateCapabilities, TemplateProbes, TemplateStorage,
};
pub use module::{
    BundleDocument, Module, ModulePhase, ModuleSource, ModuleSourceSpec, ModuleSpec, ModuleStatus,
    OciSource,
};
pub use restore::{BackupRef, Restore, RestorePhase, RestoreSpec, RestoreStatus};

/// The API group of every Gameplane kind.
pub const GROUP: &str = "gameplane.local";
/// The only served version.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` as it appears in manifests.
pub const API_VERSION: &str = "gameplane.local/v1alpha1";

/// A resource quantity's pattern, as Gameplane's CRDs (controller-gen) validate `1Gi`, `500M`….
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
/// A template version id (`versions[].id`, a GameServer's `spec.version`): lower-case letters,
/// digits, `.` and `-`, starting and ending alphanumeric, at most 40 characters.
pub const VERSION_ID_PATTERN: &str = "^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$";
/// `GameTemplate.spec.rcon.protocol` values (Minecraft's RCON is the Source protocol: `source`).
pub const RCON_PROTOCOLS: [&str; 8] = [
    "source",
    "telnet",
    "websocket",
    "battleye",
    "satisfactory",
    "palworld",
    "nuclearoption",
    "none",
];
