//! Evidence a reviewer can trust: hash-chained receipts, PVC UID tables, run bundles, and the
//! reports rendered from them.
//!
//! This crate knows nothing about clusters: it depends on neither kube nor the harness's
//! backends. The `rehearsal` harness writes what it observed through it, and `rehearse report`
//! (and `rehearse bench`'s profile) read bundles back through it.
//!
//! Data flows one way: a scenario observes the cluster, writes what it saw as [`receipts`]
//! through a [`bundle::CaseRecorder`], and the report later renders only what the bundle holds.
//!
//! - [`receipts`]: the append-only, fsynced, SHA-256-chained journal and its verifier.
//! - [`observation`]: what each receipt kind carries, one typed definition for writer and reader.
//! - [`redact`]: the rule that keeps secrets out of receipts.
//! - [`pvc_table`]: PVC UID tables (before/after) derived from receipts, not from the cluster.
//! - [`summary`] and [`kill_matrix`]: what a bundle's `bundle.json` and `kill-matrix.json` hold.
//! - [`bundle`]: the per-run directory (`reports/<run-id>/`) and the writer API scenarios use.
//! - [`qualification`]: what a rollout qualification records (its gates and outcome).
//! - [`catalogue`]: the exploration's operations and faults, one table the rest reads.
//! - [`invariants`]: the contract's invariants as functions over one operation's observations.
//! - [`judge`]: verdicts, the audit log's proof and the qualification's gate decisions, pure.
//! - [`report`]: reports (Markdown, HTML, JUnit, JSON) rendered from bundles only.
//!
//! ```no_run
//! use rehearsal_evidence::bundle::{Bundle, BundleMeta, Verdict};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let meta = BundleMeta::new("run-1", "0123abcd", "reference-operator", "0.1.0", "amd64");
//! let bundle = Bundle::create("reports/run-1", meta)?;
//! let case = bundle.case("live-backup-agent-restart", "backups")?;
//! case.step("backup-succeeded", serde_json::json!({"phase": "Succeeded"}))?;
//! case.finish(Verdict::Passed)?;
//! bundle.finalize(false)?;
//! # Ok(()) }
//! ```

pub mod bundle;
pub mod canonical;
pub mod catalogue;
pub mod invariants;
pub mod judge;
pub mod kill_matrix;
pub mod observation;
pub mod place;
pub mod pvc_table;
pub mod qualification;
pub mod receipts;
pub mod redact;
pub mod report;
pub mod summary;
