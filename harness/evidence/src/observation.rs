//! Typed observations: the one definition of what each receipt kind carries.
//!
//! A receipt's `kind` and `observed` fields are one [`Observation`] (serde's adjacent tagging:
//! `{"kind": "restic-snapshot", "observed": {"snapshot_id": …, "details": …}}`), so what a case
//! records and what the report reads are the same Rust type. The writer ([`super::bundle`])
//! builds observations; the readers ([`super::bundle::summary`], `report::load`) parse every
//! receipt with [`Observation::read`], which refuses an unknown kind, a missing field or an
//! unknown field and names the receipt's line — a renamed field can never silently empty a
//! report column.
//!
//! `step` receipts carry what the case saw as free-form JSON: the report shows their timing and
//! never reads fields out of them. Everything a reader *does* read (snapshots, restores,
//! artifacts, PVC tables, verdicts, the `wait` receipts `rehearse bench` profiles, and a
//! qualification's `gate` receipts, their evidence typed by gate) has its
//! own variant.
//!
//! The journal format carries a version ([`RECEIPT_FORMAT`], in the `run-started` receipt), so
//! a bundle written by an older Rehearsal is named as such instead of failing on a field. The
//! hashing (canonical JSON of each entry) does not depend on it: any journal, old or new, still
//! verifies with `rehearse receipts verify`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::pvc_table::{self, PvcObserved, PvcTable};
use super::qualification::Gate;
use super::receipts::{Journal, JournalError, Receipt, kind};

/// The receipt format this build writes and reads. Format 1 (no `receipt_format` in
/// `run-started`) predates typed observations; format 2 wrote `wait` receipts as free-form JSON
/// (format 3 types them as [`WaitObserved`]); format 3 wrote a qualification's gates as free-form
/// `step` receipts (format 4 types them as [`Gate`]s, their evidence by gate).
pub const RECEIPT_FORMAT: u32 = 4;

/// What one receipt observed, by kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "observed", rename_all = "kebab-case")]
pub enum Observation {
    /// The run began.
    RunStarted(RunStarted),
    /// The run ended.
    RunFinished(RunFinished),
    /// A case began.
    CaseStarted(CaseStarted),
    /// A named unit of a case completed; what it saw (free-form, never read by the report).
    Step(Value),
    /// One watch wait inside a step ended: what it waited for, how long, and what ended it.
    Wait(WaitObserved),
    /// A qualification gate was judged: its verdict and its evidence, typed by gate.
    Gate(Gate),
    /// The case's PVCs at a phase; feeds the PVC UID table.
    PvcObservation(PvcObserved),
    /// A file stored under the case's `artifacts/`.
    Artifact(ArtifactStored),
    /// A restic snapshot the case took or used.
    ResticSnapshot(ResticSnapshot),
    /// A restore of a snapshot.
    ResticRestore(ResticRestore),
    /// The mutant kill matrix was written.
    KillMatrix(FileRef),
    /// A case ended with a verdict.
    CaseFinished(FinishObserved),
}

/// The `run-started` payload: what the run is, and the receipt format it was written in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStarted {
    /// The receipt format the journal is written in ([`RECEIPT_FORMAT`] for this build).
    pub receipt_format: u32,
    /// The run's id, also its bundle directory's name (`reports/<run-id>`).
    pub run_id: String,
    /// The commit of the operator (or harness) being qualified.
    pub commit: String,
    /// The operator the run qualified.
    pub operator: Operator,
    /// The architecture the run's cluster ran on (`amd64`, `arm64`).
    pub arch: String,
}

impl RunStarted {
    /// The payload for `meta`, in the current format.
    pub fn new(meta: &BundleMeta) -> Self {
        Self {
            receipt_format: RECEIPT_FORMAT,
            run_id: meta.run_id.clone(),
            commit: meta.commit.clone(),
            operator: meta.operator.clone(),
            arch: meta.arch.clone(),
        }
    }

    /// The bundle metadata it carries.
    pub fn meta(&self) -> BundleMeta {
        BundleMeta {
            run_id: self.run_id.clone(),
            commit: self.commit.clone(),
            operator: self.operator.clone(),
            arch: self.arch.clone(),
        }
    }
}

/// The `run-finished` payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFinished {
    /// The run was interrupted (a signal) rather than completed.
    pub interrupted: bool,
}

/// The `case-started` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseStarted {
    /// The bucket (scenario group) the case belongs to, e.g. `backup` or `rollout`.
    pub bucket: String,
}

/// The `artifact` payload: a file of the bundle and its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactStored {
    /// Relative to the bundle directory.
    pub path: String,
    /// The file's size when it was stored.
    pub bytes: u64,
    /// The SHA-256 (hex) of its contents; the report refuses a file that no longer matches.
    pub sha256: String,
}

/// The `restic-snapshot` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResticSnapshot {
    /// The restic snapshot id (as the operator reported it, e.g. a Backup's `status.snapshotID`).
    pub snapshot_id: String,
    /// Where the id was read (e.g. the Backup's status).
    pub details: Value,
}

/// The `restic-restore` payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResticRestore {
    /// What names the restore (e.g. the Restore object).
    pub restore_id: String,
    /// The restic snapshot it restored.
    pub snapshot_id: String,
    /// What the case saw of the restore (e.g. its status), as written.
    pub details: Value,
}

/// The timing the harness's step runner writes beside what a `step` saw (`rehearse bench`
/// reads it). A step written by hand carries none: both fields are then `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct StepTiming {
    /// How long the step took, in milliseconds.
    #[serde(default)]
    pub elapsed_ms: Option<u64>,
    /// When the step ended, in milliseconds from the start of its case.
    #[serde(default)]
    pub at_ms: Option<u64>,
}

impl StepTiming {
    /// Reads the timing out of a `step` receipt's payload (at 1-based `line` of its journal);
    /// a timing field of the wrong type is refused naming the line, never read as absent.
    pub fn read(line: usize, r: &Receipt) -> Result<Self, ObservationError> {
        if !r.observed.is_object() {
            return Ok(Self::default());
        }
        serde_json::from_value(r.observed.clone()).map_err(|e| ObservationError::Malformed {
            line,
            seq: r.seq,
            kind: r.kind.clone(),
            reason: e.to_string(),
        })
    }
}

/// The `wait` payload: one wait for an observable condition inside a step (what `rehearse
/// bench` attributes the step's time to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitObserved {
    /// The object waited on, `"<resource> <namespace>/<name>"` (e.g. `pods rh-x-1234/mc-0`).
    pub object: String,
    /// The condition waited for, as the wait's error message would name it (`pod Ready`).
    pub expected: String,
    /// When the wait began, in milliseconds from the start of its step.
    pub started_ms: u64,
    /// How long the wait took, in milliseconds.
    pub elapsed_ms: u64,
    /// Watch events the wait saw, list items included.
    pub events: u32,
    /// How the wait ended.
    pub outcome: WaitOutcome,
    /// The observation that ended the wait (the change that woke it), one line.
    pub woken_by: String,
    /// Each change of the observed state while waiting, in order (capped by the writer): where
    /// inside the wait the time went.
    pub transitions: Vec<StateChange>,
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitOutcome {
    /// The condition was met.
    Met,
    /// The object reached a state from which the condition can no longer be met.
    Terminal,
    /// The wait's bound passed first.
    TimedOut,
    /// The watch stream ended before the condition was met.
    WatchEnded,
}

impl WaitOutcome {
    /// The outcome as the receipt spells it (`met`, `terminal`, `timed-out`, `watch-ended`).
    pub fn as_str(self) -> &'static str {
        match self {
            WaitOutcome::Met => "met",
            WaitOutcome::Terminal => "terminal",
            WaitOutcome::TimedOut => "timed-out",
            WaitOutcome::WatchEnded => "watch-ended",
        }
    }
}

impl std::fmt::Display for WaitOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change of a waited-on object's observed state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateChange {
    /// Milliseconds from the start of the wait.
    pub at_ms: u64,
    /// The state from then on, one line (phase, conditions, container states, …).
    pub state: String,
}

impl std::fmt::Display for StateChange {
    /// `+<ms> <state>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "+{} {}", self.at_ms, self.state)
    }
}

/// Why a receipt is not a typed observation of this format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObservationError {
    /// The receipt's kind is unknown, or its payload lacks a field, has an unknown one, or one
    /// of the wrong type.
    #[error("line {line} (seq {seq}): malformed {kind} receipt: {reason}")]
    Malformed {
        /// 1-based line of the receipt in its journal.
        line: usize,
        /// The receipt's sequence number.
        seq: u64,
        /// The receipt's kind as written.
        kind: String,
        /// What serde found wrong, naming the field.
        reason: String,
    },
    /// The journal is of an older receipt format than this build reads.
    #[error(
        "line {line}: the journal was written in receipt format {found} by an older Rehearsal; this build reads format {RECEIPT_FORMAT}: render it with the Rehearsal that wrote it, or re-run the rehearsal (its receipts still verify with `rehearse receipts verify`)"
    )]
    Older {
        /// 1-based line of the `run-started` receipt.
        line: usize,
        /// The format the journal was written in.
        found: u32,
    },
    /// The journal is of a newer receipt format than this build reads.
    #[error(
        "line {line}: the journal was written in receipt format {found}, newer than this build's {RECEIPT_FORMAT}: use a newer rehearse"
    )]
    Newer {
        /// 1-based line of the `run-started` receipt.
        line: usize,
        /// The format the journal was written in.
        found: u32,
    },
}

impl Observation {
    /// The receipt kind (`step`, `restic-snapshot`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Observation::RunStarted(_) => "run-started",
            Observation::RunFinished(_) => "run-finished",
            Observation::CaseStarted(_) => "case-started",
            Observation::Step(_) => "step",
            Observation::Wait(_) => "wait",
            Observation::Gate(_) => "gate",
            Observation::PvcObservation(_) => "pvc-observation",
            Observation::Artifact(_) => "artifact",
            Observation::ResticSnapshot(_) => "restic-snapshot",
            Observation::ResticRestore(_) => "restic-restore",
            Observation::KillMatrix(_) => "kill-matrix",
            Observation::CaseFinished(_) => "case-finished",
        }
    }

    /// The receipt's `kind` and `observed` fields.
    pub fn into_parts(self) -> (&'static str, Value) {
        let kind = self.kind();
        let mut value = serde_json::to_value(self).expect("an observation serializes");
        let observed = value
            .get_mut("observed")
            .map(Value::take)
            .unwrap_or(Value::Null);
        (kind, observed)
    }

    /// Parses receipt `r` (at 1-based `line` of its journal) as an observation of the current
    /// format. A `run-started` receipt is checked for its format first.
    pub fn read(line: usize, r: &Receipt) -> Result<Self, ObservationError> {
        if r.kind == "run-started" {
            let found = match r.observed.get("receipt_format") {
                None => 1,
                Some(v) => v.as_u64().map_or(0, |n| n as u32),
            };
            if found != 0 && found < RECEIPT_FORMAT {
                return Err(ObservationError::Older { line, found });
            }
            if found > RECEIPT_FORMAT {
                return Err(ObservationError::Newer { line, found });
            }
        }
        let tagged = serde_json::json!({"kind": r.kind, "observed": r.observed});
        serde_json::from_value(tagged).map_err(|e| ObservationError::Malformed {
            line,
            seq: r.seq,
            kind: r.kind.clone(),
            reason: e.to_string(),
        })
    }
}

/// A case's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every check of the case held.
    Passed,
    /// A check failed, or the case could not reach its checks (the reason says which).
    Failed,
    /// The case was recorded as not run; reports list it apart from passes and failures.
    Skipped,
    /// The run ended (a signal, a killed process) before the case reached a verdict.
    Interrupted,
    /// The case needs a fault this cluster cannot inject (e.g. an in-place container restart
    /// where the harness cannot reach the nodes): neither passed nor failed — the operator is
    /// not blamed for a harness limit.
    #[serde(rename = "not-applicable")]
    NotApplicable,
}

impl Verdict {
    /// The verdict as bundles and reports spell it (`passed`, `not-applicable`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
            Verdict::Skipped => "skipped",
            Verdict::Interrupted => "interrupted",
            Verdict::NotApplicable => "not-applicable",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The operator under qualification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operator {
    /// Its name, e.g. `reference-operator` or `gameplane`.
    pub name: String,
    /// Its version as the deployment reports it.
    pub version: String,
}

/// What a run is: written as the `run-started` receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleMeta {
    /// The run's id, also its bundle directory's name.
    pub run_id: String,
    /// The commit of the operator (or harness) being qualified.
    pub commit: String,
    /// The operator the run qualified.
    pub operator: Operator,
    /// `amd64`, `arm64`, …
    pub arch: String,
}

impl BundleMeta {
    /// The metadata of run `run_id` of `commit`, qualifying `operator_name` at
    /// `operator_version` on `arch`.
    pub fn new(
        run_id: &str,
        commit: &str,
        operator_name: &str,
        operator_version: &str,
        arch: &str,
    ) -> Self {
        Self {
            run_id: run_id.into(),
            commit: commit.into(),
            operator: Operator {
                name: operator_name.into(),
                version: operator_version.into(),
            },
            arch: arch.into(),
        }
    }
}

/// A file of the bundle and the SHA-256 its receipt recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    /// Relative to the bundle directory.
    pub path: String,
    /// The SHA-256 (hex) its receipt recorded; the file must still match it.
    pub sha256: String,
}

/// The payload of a `case-finished` receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishObserved {
    /// How the case ended.
    pub verdict: Verdict,
    /// The kinds of evidence the verdict rests on ("pod UID", "RCON audit log", …), in
    /// first-use order.
    pub evidence_used: Vec<String>,
    /// Why, when the case did not pass.
    pub reason: Option<String>,
    /// The named checks that failed, when the verdict rests on failed checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_checks: Vec<String>,
}

impl Journal {
    /// Appends one typed [`Observation`] (its kind and payload), as [`Journal::append`] does.
    pub fn record(
        &self,
        case: Option<&str>,
        step: &str,
        observation: Observation,
    ) -> Result<Receipt, JournalError> {
        let (kind, observed) = observation.into_parts();
        self.append(case, step, kind, observed)
    }
}

/// A `pvc-observation` receipt that is not a typed observation of this format (its line in
/// the journal is `seq + 1`).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct PvcTableError(#[from] pub ObservationError);

/// Builds a case's PVC table from its receipts (other kinds are ignored): each
/// `pvc-observation` receipt is read as a typed observation, then [`pvc_table::build`] pairs them.
pub fn pvc_table_from_receipts<'a>(
    receipts: impl IntoIterator<Item = &'a Receipt>,
) -> Result<PvcTable, PvcTableError> {
    let mut observed = Vec::new();
    for receipt in receipts {
        if receipt.kind != kind::PVC_OBSERVATION {
            continue;
        }
        // A journal's entry `seq` is on line `seq + 1` (the verifier checks it).
        let Observation::PvcObservation(o) = Observation::read(receipt.seq as usize + 1, receipt)?
        else {
            unreachable!("a pvc-observation receipt reads as one");
        };
        observed.push(o);
    }
    Ok(pvc_table::build(observed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn receipt(kind: &str, observed: Value) -> Receipt {
        Receipt {
            seq: 4,
            time: jiff::Timestamp::UNIX_EPOCH,
            run_id: "r".into(),
            case: Some("c".into()),
            step: "s".into(),
            arch: "amd64".into(),
            kind: kind.into(),
            observed,
            prev: String::new(),
            sha256: String::new(),
        }
    }

    #[test]
    fn parts_round_trip_through_read() {
        let all = [
            Observation::CaseStarted(CaseStarted {
                bucket: "backup".into(),
            }),
            Observation::Step(json!({"pods": 1})),
            Observation::ResticSnapshot(ResticSnapshot {
                snapshot_id: "abc".into(),
                details: json!({"backup": "b"}),
            }),
            Observation::Artifact(ArtifactStored {
                path: "cases/c/artifacts/x".into(),
                bytes: 3,
                sha256: "00".into(),
            }),
        ];
        for o in all {
            let (kind, observed) = o.clone().into_parts();
            assert_eq!(Observation::read(5, &receipt(kind, observed)).unwrap(), o);
        }
    }

    #[test]
    fn renamed_field_is_refused_with_its_line() {
        let r = receipt(
            "restic-snapshot",
            json!({"snapshotID": "abc", "details": {}}),
        );
        let e = Observation::read(12, &r).unwrap_err().to_string();
        assert!(
            e.starts_with("line 12 (seq 4): malformed restic-snapshot"),
            "{e}"
        );
        assert!(e.contains("snapshotID") || e.contains("snapshot_id"), "{e}");
    }

    #[test]
    fn unknown_kind_is_refused() {
        let e = Observation::read(3, &receipt("gate-ish", json!({})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("gate-ish"), "{e}");
    }

    #[test]
    fn format_one_is_named_as_older() {
        let r = receipt(
            "run-started",
            json!({"run_id": "r", "commit": "c", "operator": {"name": "o", "version": "1"}, "arch": "amd64"}),
        );
        assert_eq!(
            Observation::read(1, &r).unwrap_err(),
            ObservationError::Older { line: 1, found: 1 }
        );
    }

    #[test]
    fn a_malformed_observation_is_refused_naming_its_line() {
        let r = Receipt {
            seq: 5,
            time: jiff::Timestamp::UNIX_EPOCH,
            run_id: "r".into(),
            case: Some("c".into()),
            step: "pvcs-before".into(),
            arch: "amd64".into(),
            kind: kind::PVC_OBSERVATION.into(),
            observed: serde_json::json!({"phase": "before", "claim": []}),
            prev: String::new(),
            sha256: String::new(),
        };
        let e = pvc_table_from_receipts([&r]).unwrap_err().to_string();
        assert!(
            e.starts_with("line 6 (seq 5): malformed pvc-observation receipt"),
            "{e}"
        );
    }
}
