//! What a rollout qualification records: its plan, each gate's result, the fleet before and
//! after, and how it ended. Plain data, written by the harness's `qualify` procedure into the
//! bundle (`qualification.json`) and rendered by [`crate::report::qualification`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::pvc_table::PvcObservation;
/// How the candidate must be rolled back on the clone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rollback {
    /// Re-pin the previous version; the save must be readable directly.
    Compatible,
    /// Restore the pre-candidate snapshot, then re-pin; the world claims must hold exactly the
    /// snapshot again (the same digests as before the candidate ran).
    RestoreRequired,
}

/// What to qualify.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// The GameTemplate holding the candidate version.
    pub template: String,
    /// The fleet member whose backup seeds the canary clone.
    pub source: String,
    /// Fleet members, promoted in this order.
    pub fleet: Vec<String>,
    /// Members per promotion batch (at least 1).
    pub batch_size: usize,
    /// The candidate version id (its image must be pinned by digest).
    pub candidate: String,
    /// How the clone is rolled back after the candidate ran on it.
    pub rollback: Rollback,
    /// Labels every object the run creates (the harness's run label); a valid label value.
    pub run_id: String,
    /// The Secret naming the restic repository the source's backup goes to (key `repo`).
    pub repo_secret: String,
}

impl Plan {
    /// The Backup of the source that seeds the clone.
    pub fn backup_name(&self) -> String {
        format!("qualify-{}", self.source)
    }
    /// The Restore that seeds the clone, and the one that rolls it back.
    pub fn restore_names(&self) -> [String; 2] {
        [
            format!("qualify-{}-clone", self.source),
            format!("qualify-{}-rollback", self.source),
        ]
    }
    /// The servers whose pods, claims and world digests are observed before and after: the
    /// fleet, then the source when it is not a member (its baseline is what the snapshot must
    /// seed).
    pub fn observed(&self) -> Vec<String> {
        let mut servers = self.fleet.clone();
        if !servers.contains(&self.source) {
            servers.push(self.source.clone());
        }
        servers
    }
    /// The promotion batches, in order.
    pub fn batches(&self) -> Vec<Vec<String>> {
        self.fleet
            .chunks(self.batch_size.max(1))
            .map(<[String]>::to_vec)
            .collect()
    }
}

/// The gates, by name (CONTRACT C.2, C.4, C.5).
pub mod gates {
    /// The plan can be carried out (fleet, template, a digest-pinned candidate, what the gates
    /// need), checked before anything is changed.
    pub const PREFLIGHT: &str = "preflight";
    /// The server's pod runs the candidate image by its pinned digest.
    pub const IMAGE: &str = "pod runs the pinned image";
    /// A real Minecraft client joins and reaches the play state.
    pub const JOIN: &str = "real Minecraft join reaches play";
    /// The game answers a save over RCON with "Saved the game".
    pub const SAVE: &str = "a save succeeds";
    /// The world claims' content digests read back, before and after the candidate ran.
    pub const READ_BACK: &str = "world data reads back (digests before and after)";
    /// The clone returns to the previous version (and, if required, its snapshot).
    pub const ROLLBACK: &str = "rollback";
}

/// One gate's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gate {
    /// One of [`gates`].
    pub name: String,
    /// The server it was judged on (the clone or a fleet member).
    pub server: String,
    /// Whether the gate held.
    pub passed: bool,
    /// One line: what was observed that failed it.
    pub reason: Option<String>,
    /// What the gate observed (the report shows it beside the verdict); its fields depend on
    /// the gate.
    pub evidence: Value,
    /// When the gate started (Unix milliseconds).
    #[serde(default)]
    pub started_unix_ms: u64,
    /// How long the gate took, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
}

/// How a qualification ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Every gate passed and every batch was promoted.
    Promoted {
        /// How many batches were promoted.
        batches: usize,
    },
    /// A gate failed: nothing (more) was promoted.
    Halted {
        /// One of [`gates`], or `promotion batch N: <gate>`.
        gate: String,
        /// The server the gate failed on (none for the preflight).
        server: Option<String>,
        /// What was observed, in one line.
        reason: String,
        /// Batches fully promoted before the halt.
        batches_promoted: usize,
    },
}

impl Outcome {
    /// `promoted in N batch(es)` or `halted at gate "<gate>" on <server> …: <reason>`.
    pub fn line(&self) -> String {
        match self {
            Outcome::Promoted { batches } => format!("promoted in {batches} batch(es)"),
            Outcome::Halted {
                gate,
                server,
                reason,
                batches_promoted,
            } => format!(
                "halted at gate {gate:?}{} after {batches_promoted} promoted batch(es): {reason}",
                server
                    .as_ref()
                    .map(|s| format!(" on {s}"))
                    .unwrap_or_default()
            ),
        }
    }

    /// The decision an approver reads: `promote N batches` or `halted at <gate> on <member>:
    /// <reason>`.
    pub fn decision(&self) -> String {
        match self {
            Outcome::Promoted { batches } => format!(
                "promote {batches} batch{}",
                if *batches == 1 { "" } else { "es" }
            ),
            Outcome::Halted {
                gate,
                server,
                reason,
                ..
            } => format!(
                "halted at {gate}{}: {reason}",
                server
                    .as_ref()
                    .map(|s| format!(" on {s}"))
                    .unwrap_or_default()
            ),
        }
    }
}

/// The whole record of a qualification.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Qualification {
    /// What was asked for.
    pub plan: Plan,
    /// The canary clone of the source the candidate ran on ([`clone_name`]).
    pub clone: String,
    /// The candidate's image as the template pins it (`repo@sha256:…`), once the preflight read
    /// it.
    #[serde(default)]
    pub candidate_image: Option<String>,
    /// The version the source (and so the clone) ran before the candidate.
    #[serde(default)]
    pub previous: Option<String>,
    /// Fleet members when the qualification began.
    pub baseline: Vec<MemberBaseline>,
    /// Fleet members and the clone when the qualification ended.
    #[serde(default)]
    pub after: Vec<MemberBaseline>,
    /// The restic snapshot of the source's backup that seeded the clone, once taken.
    pub snapshot: Option<String>,
    /// Every gate judged, in order; the last one failed if the qualification halted.
    pub gates: Vec<Gate>,
    /// The clone's claims before the candidate ran.
    pub clone_pvcs_before: Vec<PvcObservation>,
    /// The clone's claims after the candidate (and any rollback).
    pub clone_pvcs_after: Vec<PvcObservation>,
    /// Promotion receipts written (one per batch promoted or attempted).
    pub promotion_receipts: usize,
    /// How it ended.
    pub outcome: Outcome,
}

/// One server at the start (or the end) of a qualification.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MemberBaseline {
    /// The GameServer's name.
    pub server: String,
    /// The version it ran, if it reported one.
    pub version: Option<String>,
    /// Its pod's UID, if it had a pod (a new UID means the pod was recreated).
    pub pod_uid: Option<String>,
    /// Claim → PVC UID.
    pub pvcs: BTreeMap<String, String>,
    /// World claim → content digest (empty when not read).
    pub digests: BTreeMap<String, String>,
}

/// The clone of `source` the candidate is rehearsed on.
pub fn clone_name(source: &str) -> String {
    format!("{source}-canary")
}
