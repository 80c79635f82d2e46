//! Invariant `data` (contract D4) of a backup: what its snapshot holds.
//!
//! Before the Backup is created, the schedule plants one marker file of a distinct name in every
//! claim of the server (the primary and extra world claims, and the rebuildable mods claim);
//! once the Backup ended, it lists the snapshot the Backup names with `restic ls`. A Backup
//! that ends Succeeded must have been copied (one of its copy's worker pods succeeded) into a
//! snapshot that exists and holds every world claim's marker and no mods claim's: a copy that
//! skipped an extra world, took the mods along or failed and was reported Succeeded is a
//! violation, wherever the fault was placed.

use serde::{Deserialize, Serialize};

use super::{BackupTrace, Subject, Violation, restore::DATA};

/// A claim of the backed-up server and the marker file planted in it before the backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkedClaim {
    /// The PersistentVolumeClaim's name.
    pub claim: String,
    /// A world claim (primary or extra), which every snapshot must hold; otherwise the mods
    /// claim, which no snapshot may hold.
    pub world: bool,
    /// The marker file's name (unique to the claim), at the claim's root.
    pub marker: String,
}

/// The snapshot the Backup named, as read once it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRead {
    /// The snapshot id (`status.snapshotID`).
    pub id: String,
    /// Every path `restic ls` printed; `None` when it could not list the snapshot.
    pub files: Option<Vec<String>>,
    /// Why it could not, when it could not.
    pub error: Option<String>,
}

/// The evidence the invariant reads.
const EVIDENCE: &str =
    "Backup status.snapshotID, the copy's worker pods and `restic ls` of the snapshot";

impl BackupTrace {
    /// Invariant [`DATA`] of a backup; judged when the Backup ended Succeeded and the schedule
    /// planted markers (a trace without them judges only the copy's outcome).
    pub fn data(&self) -> Vec<Violation> {
        let mut out = self.run_state_kept();
        let Some(fin) = self.final_state() else {
            return out;
        };
        if fin.phase.as_deref() != Some("Succeeded") {
            return out;
        }
        let violation = |found: String| Violation::new(DATA, EVIDENCE, found);
        let copy_phases = self.copy_phases();
        if !copy_phases.contains(&"Succeeded") {
            out.push(violation(if copy_phases.is_empty() {
                "the Backup ended Succeeded, but no copy worker pod was ever created".to_string()
            } else {
                format!(
                    "the Backup ended Succeeded, but no copy worker pod succeeded (phases seen: {})",
                    dedup(&copy_phases).join(", ")
                )
            }));
        }
        let id = fin.snapshot_id.as_deref().unwrap_or_default();
        if id.is_empty() {
            out.push(violation(
                "the Backup ended Succeeded without a snapshot id".to_string(),
            ));
            return out;
        }
        // A Backup a user removed may take its snapshot with it: only its copy is judged.
        let removed = self.changes.iter().rev().find_map(|c| match &c.subject {
            Subject::Backup(b) => Some(b.gone),
            _ => None,
        });
        if self.claims.is_empty() || removed == Some(true) {
            return out;
        }
        let Some(read) = self.snapshot.as_ref().filter(|s| s.id == id) else {
            out.push(violation(format!(
                "the Backup ended Succeeded with snapshot {id}, which was not read"
            )));
            return out;
        };
        let Some(files) = &read.files else {
            out.push(violation(format!(
                "the Backup ended Succeeded with snapshot {id}, which cannot be listed: {}",
                read.error.as_deref().unwrap_or("no reason given")
            )));
            return out;
        };
        let holds = |marker: &str| files.iter().any(|f| f.ends_with(&format!("/{marker}")));
        for c in &self.claims {
            match (c.world, holds(&c.marker)) {
                (true, false) => out.push(violation(format!(
                    "snapshot {id} does not hold world claim {} (its marker {} is not listed)",
                    c.claim, c.marker
                ))),
                (false, true) => out.push(violation(format!(
                    "snapshot {id} holds the mods claim {} (its marker {} is listed): mods are rebuilt, never backed up",
                    c.claim, c.marker
                ))),
                _ => {}
            }
        }
        out
    }
}

impl BackupTrace {
    /// A backup never changes the server's run state (`spec.suspend`, idle intent and sleep):
    /// what it was before the Backup it is after, unless the schedule's own fault started it
    /// (`server-started`, or a stopped server's copy held at its end).
    fn run_state_kept(&self) -> Vec<Violation> {
        let started = self.perturbation.as_ref().is_some_and(|p| {
            p.fault.map(|f| p.operation.effect(f)) == Some(crate::catalogue::Fault::ServerStarted)
        });
        match (&self.run_state_before, &self.run_state_after) {
            (Some(before), Some(after)) if before != after && !started => vec![Violation::new(
                DATA,
                "the GameServer's spec.suspend and status.idle.asleep",
                format!("the backup changed the server's run state from {before} to {after}"),
            )],
            _ => Vec::new(),
        }
    }
}

fn dedup<'a>(v: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in v {
        if !out.contains(s) {
            out.push(s);
        }
    }
    out
}
