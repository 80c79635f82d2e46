//! From history to trace: the committed objects a schedule's API server recorded, as the
//! invariants read them.
//!
//! The exploration's request hook keeps every committed change of the objects an operation
//! touches (raw JSON, in commit order: [`Recorded`]). This module picks the ones the
//! invariants read and reads each into its typed state — one conversion for the run and for
//! every test, inside the oracle's mutation set. Names of the objects and the contract's
//! annotation keys come in through [`BackupNames`], so nothing here is kept in step with the
//! operator's API by hand.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::restore::{RestoreCommitted, RestoreState, RestoreSubject};
use super::{BackupState, Committed, CopyJobState, CopyPodState, GamePodState, Subject};

/// A committed change of a pod, a Job, a Backup or a Restore in a schedule's namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// Its resourceVersion.
    pub rv: u64,
    /// When it was committed.
    pub at: jiff::Timestamp,
    /// `pods`, `jobs`, `backups` or `restores`.
    pub resource: String,
    /// It removed the object.
    pub gone: bool,
    /// The object as committed.
    pub object: Value,
}

/// What a backup's history is read by: the objects' names and the contract's keys.
#[derive(Debug, Clone, Copy)]
pub struct BackupNames<'a> {
    /// The Backup.
    pub backup: &'a str,
    /// The game server's pod.
    pub game_pod: &'a str,
    /// The game's container in it.
    pub game_container: &'a str,
    /// The copy's Job (its worker pods carry label `job-name` with this value).
    pub copy_job: &'a str,
    /// The annotation recording that quiesce was attempted.
    pub quiesce_attempted: &'a str,
    /// The annotation holding the persisted preparation deadline.
    pub preparation_deadline: &'a str,
}

fn str_at(o: &Value, pointer: &str) -> Option<String> {
    o.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// `metadata.finalizers` of a committed object.
pub fn finalizers(o: &Value) -> Vec<String> {
    o.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Annotation `key` of a committed object.
pub fn annotation(o: &Value, key: &str) -> Option<String> {
    o.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The reason of a committed object's condition `kind`.
pub fn condition_reason(o: &Value, kind: &str) -> Option<String> {
    o.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .and_then(|c| c["reason"].as_str())
        .map(str::to_string)
}

fn deleting(o: &Value) -> bool {
    o.pointer("/metadata/deletionTimestamp").is_some()
}

/// A committed state of the Backup, as the invariants read it.
pub fn backup_state(o: &Value, gone: bool, names: &BackupNames<'_>) -> BackupState {
    BackupState {
        phase: str_at(o, "/status/phase"),
        consistency: str_at(o, "/status/consistency"),
        source_pod_uid: str_at(o, "/status/source/podUID"),
        source_container: str_at(o, "/status/source/gameContainerID"),
        completed_reason: condition_reason(o, "Completed"),
        unquiesced_reason: condition_reason(o, "Unquiesced"),
        snapshot_id: str_at(o, "/status/snapshotID"),
        deleting: deleting(o),
        quiesce_attempted: annotation(o, names.quiesce_attempted),
        preparation_deadline: annotation(o, names.preparation_deadline),
        finalizers: finalizers(o),
        gone,
    }
}

/// A worker pod of Job `job` (by its `job-name` label), as the invariants read it.
fn worker_pod(c: &Recorded, job: &str) -> Option<CopyPodState> {
    let o = &c.object;
    (c.resource == "pods" && str_at(o, "/metadata/labels/job-name").as_deref() == Some(job)).then(
        || CopyPodState {
            name: str_at(o, "/metadata/name").unwrap_or_default(),
            phase: str_at(o, "/status/phase"),
            gone: c.gone,
        },
    )
}

/// The changes a backup's invariants read, in commit order: the Backup's, the game pod's, the
/// copy Job's and its worker pods'; everything else in the history is left out.
pub fn backup_changes(history: &[Recorded], names: &BackupNames<'_>) -> Vec<Committed> {
    history
        .iter()
        .filter_map(|c| {
            let o = &c.object;
            let name = str_at(o, "/metadata/name").unwrap_or_default();
            let subject = match c.resource.as_str() {
                "backups" if name == names.backup => {
                    Subject::Backup(backup_state(o, c.gone, names))
                }
                "pods" if name == names.game_pod => {
                    let game = o
                        .pointer("/status/containerStatuses")
                        .and_then(Value::as_array)
                        .and_then(|cs| cs.iter().find(|s| s["name"] == names.game_container));
                    Subject::GamePod(GamePodState {
                        uid: str_at(o, "/metadata/uid").unwrap_or_default(),
                        game_container: game
                            .and_then(|g| g["containerID"].as_str())
                            .map(str::to_string),
                        game_running: game.is_some_and(|g| g.pointer("/state/running").is_some()),
                        gone: c.gone,
                    })
                }
                "jobs" if name == names.copy_job => Subject::CopyJob(CopyJobState {
                    deleting: deleting(o),
                    gone: c.gone,
                }),
                _ => Subject::CopyPod(worker_pod(c, names.copy_job)?),
            };
            Some(Committed {
                rv: c.rv,
                at: c.at,
                subject,
            })
        })
        .collect()
}

/// The changes a restore's invariants read, in commit order: Restore `restore`'s and the
/// worker pods of its Job `job`.
pub fn restore_changes(history: &[Recorded], restore: &str, job: &str) -> Vec<RestoreCommitted> {
    history
        .iter()
        .filter_map(|c| {
            let o = &c.object;
            let subject = if c.resource == "restores"
                && str_at(o, "/metadata/name").as_deref() == Some(restore)
            {
                RestoreSubject::Restore(RestoreState {
                    phase: str_at(o, "/status/phase"),
                    completed_reason: condition_reason(o, "Completed"),
                    finalizers: finalizers(o),
                    deleting: deleting(o),
                    gone: c.gone,
                })
            } else {
                RestoreSubject::WorkerPod(worker_pod(c, job)?)
            };
            Some(RestoreCommitted {
                rv: c.rv,
                at: c.at,
                subject,
            })
        })
        .collect()
}
