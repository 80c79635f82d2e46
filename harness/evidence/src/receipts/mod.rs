//! Receipts: one JSON object per line in `receipts.jsonl`, each bound to its predecessor by
//! SHA-256, written and fsynced one at a time and never rewritten.
//!
//! An entry is `{seq, time, run_id, case, step, arch, kind, observed, prev, sha256}` where
//! - `seq` counts from 0 with no gaps,
//! - `prev` is the SHA-256 (hex) of the previous entry's full line (without its newline), or 64
//!   zeros for the first entry, so removing, reordering or editing any entry breaks the chain,
//! - `sha256` is the SHA-256 (hex) of the entry without its own `sha256` field in
//!   [canonical](super::canonical) form; the line itself is the canonical form of the full entry.
//!
//! `observed` is [redacted](super::redact) before it is hashed. [`Journal`] writes, [`verify`]
//! and [`verify_prefix`] check.
//!
//! ```no_run
//! use rehearsal_evidence::receipts::{self, Journal};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let journal = Journal::create("receipts.jsonl", "run-1", "amd64")?;
//! journal.append(Some("case-a"), "baseline", receipts::kind::STEP, serde_json::json!({"pods": 1}))?;
//! let verified = receipts::verify("receipts.jsonl")?;
//! assert_eq!(verified.receipts.len(), 1);
//! # Ok(()) }
//! ```

mod journal;
mod verify;

pub use journal::{Clock, HOLD_ENV, Journal, JournalError};
pub use verify::{
    PrefixVerified, TruncatedTail, VerifiedJournal, VerifyError, verify, verify_prefix,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The file name of a journal inside a bundle.
pub const FILE_NAME: &str = "receipts.jsonl";

/// `prev` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The receipt kinds the harness writes. A kind says how the report reads `observed`.
pub mod kind {
    /// The run began; `observed` is the bundle metadata.
    pub const RUN_STARTED: &str = "run-started";
    /// The run ended; `observed` says whether it was interrupted.
    pub const RUN_FINISHED: &str = "run-finished";
    /// A case began; `observed.bucket` names its bucket.
    pub const CASE_STARTED: &str = "case-started";
    /// A named unit of a case completed; `observed` is what it saw.
    pub const STEP: &str = "step";
    /// One wait for an observable condition inside a step ended; `observed` is a
    /// [`WaitObserved`](crate::observation::WaitObserved).
    pub const WAIT: &str = "wait";
    /// PVCs observed at a phase (`before`/`after`); feeds the PVC UID table.
    pub const PVC_OBSERVATION: &str = "pvc-observation";
    /// A qualification gate was judged ([`crate::qualification::Gate`]).
    pub const GATE: &str = "gate";
    /// A file stored under the case's `artifacts/`; `observed` has its path, size and SHA-256.
    pub const ARTIFACT: &str = "artifact";
    /// A restic snapshot was taken; `observed.snapshot_id`.
    pub const RESTIC_SNAPSHOT: &str = "restic-snapshot";
    /// A restore ran; `observed.restore_id` and the snapshot it restored.
    pub const RESTIC_RESTORE: &str = "restic-restore";
    /// The mutant kill matrix was written; `observed` has its SHA-256.
    pub const KILL_MATRIX: &str = "kill-matrix";
    /// A case ended; `observed` carries the verdict, duration and evidence used.
    pub const CASE_FINISHED: &str = "case-finished";
}

/// One verified or freshly written journal entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// Its position in the journal, counting from 0 with no gaps.
    pub seq: u64,
    /// When it was written.
    pub time: jiff::Timestamp,
    /// The run it belongs to (the same on every entry of a journal).
    pub run_id: String,
    /// `None` for run-level receipts.
    pub case: Option<String>,
    /// The named unit of the case (or run) that wrote it, e.g. `create-backup`.
    pub step: String,
    /// The run's architecture (the same on every entry of a journal).
    pub arch: String,
    /// What it records ([`kind`]); says how to read `observed`.
    pub kind: String,
    /// What was observed, redacted; its shape is the payload of the kind's
    /// [`Observation`](crate::observation::Observation).
    pub observed: Value,
    /// The SHA-256 of the previous entry's line ([`GENESIS`] for the first).
    pub prev: String,
    /// The SHA-256 of this entry's canonical form without this field.
    pub sha256: String,
}

/// SHA-256 (hex) of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The entry hash: SHA-256 of the canonical form of `entry` without its `sha256` field.
pub(crate) fn entry_hash(entry: &serde_json::Map<String, Value>) -> String {
    let mut without = entry.clone();
    without.remove("sha256");
    sha256_hex(super::canonical::to_string(&Value::Object(without)).as_bytes())
}
