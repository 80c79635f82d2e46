//! Names, labels and annotations of the objects Gameplane derives from a GameServer.
//!
//! CONTRACT A fixes these names; the harness finds children by them (and PVCs by owner UID),
//! so both sides must compute them from one place.

/// The StatefulSet, the game Service and the headless service name are the GameServer's name.
pub fn statefulset(gs: &str) -> String {
    gs.to_string()
}

/// The single pod of the StatefulSet.
pub fn pod(gs: &str) -> String {
    format!("{gs}-0")
}

/// The primary world claim `<gs>-data`.
pub fn data_pvc(gs: &str) -> String {
    format!("{gs}-data")
}

/// An extra world claim `<gs>-extra-<name>`.
pub fn extra_pvc(gs: &str, extra: &str) -> String {
    format!("{gs}-extra-{extra}")
}

/// The rebuildable mods claim `<gs>-mods-<versionId>`; dots in the version id become dashes so
/// the name stays a valid DNS label.
pub fn mods_pvc(gs: &str, version_id: &str) -> String {
    format!("{gs}-mods-{}", version_id.replace('.', "-"))
}

/// The game Service `<gs>`.
pub fn game_service(gs: &str) -> String {
    gs.to_string()
}

/// The agent Service `<gs>-agent`.
pub fn agent_service(gs: &str) -> String {
    format!("{gs}-agent")
}

/// The copy Job of a Backup is named like the Backup.
pub fn backup_job(backup: &str) -> String {
    backup.to_string()
}

/// The Job of a Restore is `restore-<restore>`.
pub fn restore_job(restore: &str) -> String {
    format!("restore-{restore}")
}

/// Container names in the game pod (index 0 and 1).
pub mod containers {
    /// The game process; its incarnation is what a live backup is bound to.
    pub const GAME: &str = "game";
    /// The Gameplane agent sidecar.
    pub const AGENT: &str = "agent";
    /// The restic container of backup and restore Jobs.
    pub const RESTIC: &str = "restic";
}

/// Where the rebuildable mods claim is mounted in the game container.
pub const MODS_MOUNT_PATH: &str = "/mods";
/// Default mount path of the world claim.
pub const DEFAULT_DATA_MOUNT_PATH: &str = "/data";

/// Well-known ports.
pub mod ports {
    /// The agent sidecar's HTTP port.
    pub const AGENT: u16 = 8090;
}

/// Labels Gameplane puts on its children (never on the world PVC).
pub mod labels {
    /// The GameServer a pod or Job belongs to.
    pub const SERVER: &str = "gameplane.local/server";
    /// The Backup a copy Job belongs to.
    pub const BACKUP: &str = "gameplane.local/backup";
    /// The Restore a restore Job belongs to.
    pub const RESTORE: &str = "gameplane.local/restore";
    /// The component: `game`, `backup`, `restore`.
    pub const COMPONENT: &str = "app.kubernetes.io/component";
    /// `app.kubernetes.io/managed-by` value of everything Gameplane creates.
    pub const MANAGED_BY_KEY: &str = "app.kubernetes.io/managed-by";
    /// The manager name.
    pub const MANAGED_BY: &str = "gameplane";
}

/// Annotations on Backups (CONTRACT A) and on objects the operator tracks progress with.
pub mod annotations {
    /// Set when the operator is about to call the agent's quiesce route (RFC 3339 time).
    pub const QUIESCE_ATTEMPTED: &str = "backup.gameplane.local/quiesce-attempted";
    /// Set when the agent confirmed the quiesce (RFC 3339 time).
    pub const QUIESCED_AT: &str = "backup.gameplane.local/quiesced-at";
    /// Set when the agent confirmed the unquiesce (RFC 3339 time).
    pub const UNQUIESCED_AT: &str = "backup.gameplane.local/unquiesced-at";
    /// The game incarnation the agent's identity preflight reported; pod-bound quiesce and
    /// unquiesce calls name it, so an agent now serving another game process refuses.
    pub const GAME_INCARNATION: &str = "backup.gameplane.local/game-incarnation";
    /// The restic snapshot id a finished copy Job reported (written by the operator when it has
    /// read the Job's termination message, so a restart does not need the pod again).
    pub const SNAPSHOT_ID: &str = "backup.gameplane.local/snapshot-id";
    /// On a Restore: the target's `spec.suspend` before the restore stopped it (`true`, `false`
    /// or `absent`), written before the target is touched so the end state survives a restart.
    pub const RESTORE_PRIOR_SUSPEND: &str = "restore.gameplane.local/prior-suspend";
    /// When the preparation of a live Backup gives up waiting for a running game incarnation
    /// (RFC 3339 time), written once when the Backup is accepted: a restarted operator keeps it.
    pub const PREPARATION_DEADLINE: &str = "backup.gameplane.local/preparation-deadline";
    /// Asked by whoever creates the Backup: the preparation deadline in whole seconds after its
    /// start (the operator's default when absent or unparsable).
    pub const PREPARATION_TIMEOUT_SECONDS: &str =
        "backup.gameplane.local/preparation-timeout-seconds";
}

/// Finalizers the operator sets.
pub mod finalizers {
    /// On a Backup: the cleanup it may owe (drain the copy, save-on to the original game) is
    /// paid before the object goes; the operator removes it after cleanup.
    pub const BACKUP_CLEANUP: &str = "backup.gameplane.local/cleanup";
    /// On a Restore that has not ended: a deleted Restore stops its Job (no worker pod goes on
    /// writing the claims) and gives the server back its run state before the object goes;
    /// removed once the Restore ended.
    pub const RESTORE_CLEANUP: &str = "restore.gameplane.local/cleanup";
}
