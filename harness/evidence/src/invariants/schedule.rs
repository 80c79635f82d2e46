//! One judge for every schedule: [`judge`] takes what was done to the run (the schedule: its
//! operation and the fault that landed, if one did), the run's typed [`Trace`] and the end
//! state of the operation's reference run, and returns a verdict per invariant that applies.
//! The exploration's runner calls it once per schedule; `rehearse explore --rejudge` calls it
//! again on the traces a bundle kept, so a saved exploration is judged by the same code.
//!
//! A trace is kept in the schedule's case as artifacts: [`TRACE`] for a backup or a restore,
//! [`RECORD`] and [`JUDGEMENT_INPUTS`] for a qualification ([`Trace::artifacts`]).

use serde::{Deserialize, Serialize};

use super::outcome::{EndState, Perturbation};
use super::restore::RestoreTrace;
use super::{BackupTrace, Judged, LIVENESS, judge_each, qualification};
use crate::qualification::Qualification;

/// Artifact: a backup's or a restore's trace.
pub const TRACE: &str = "trace.json";
/// Artifact: a qualification schedule's record.
pub const RECORD: &str = "qualification.json";
/// Artifact: what a qualification schedule's judgement read besides its record.
pub const JUDGEMENT_INPUTS: &str = "judgement-inputs.json";

/// What a qualification schedule's judgement reads besides its record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QualifyInputs {
    /// The error the procedure stopped on, if it did.
    pub stopped: Option<String>,
    /// What was done to the run.
    pub perturbation: Perturbation,
    /// The Restore after a halt: `None` when none was run, else its last phase.
    pub restored: Option<Option<String>>,
    /// The invariants that apply.
    pub invariants: Vec<String>,
}

/// What one schedule's run left for the invariants to read.
#[derive(Debug, Clone)]
pub enum Trace {
    /// A backup: every committed state of the Backup, the game's pod and the copy's worker
    /// pods, the game's audit log, the snapshot.
    Backup(Box<BackupTrace>),
    /// A restore: every committed state of the Restore and its worker pods, the claims before
    /// and after.
    Restore(Box<RestoreTrace>),
    /// A qualification: its record, and what else its judgement reads.
    Qualification {
        /// The qualification's record.
        record: Box<Qualification>,
        /// The rest.
        inputs: QualifyInputs,
    },
}

impl Trace {
    /// The end state the differential oracle compares (`None` for a qualification, judged by
    /// its stated endings).
    pub fn end_state(&self) -> Option<EndState> {
        match self {
            Self::Backup(t) => Some(t.end_state()),
            Self::Restore(t) => Some(t.end_state()),
            Self::Qualification { .. } => None,
        }
    }

    /// What the invariants read from it, as the schedule's receipts name the evidence used.
    pub fn reads(&self) -> &'static [&'static str] {
        match self {
            Self::Backup(_) => &[
                "every committed state of the Backup, the game pod and the copy's worker pods (API server commit order)",
                "RCON audit log",
            ],
            Self::Restore(_) => &[
                "every committed state of the Restore and its worker pods (API server commit order)",
                "every path of the server's claims (digests) as backed up, before and after the restore",
                "PVC UIDs",
                "GameServer spec.suspend and status.idle",
            ],
            Self::Qualification { .. } => &[
                "the qualification's record: its plan, gates, outcome and the fleet before and after",
            ],
        }
    }

    /// What the invariants judge it as, for the checks' wording.
    pub fn judged_over(&self) -> &'static str {
        match self {
            Self::Backup(_) | Self::Restore(_) => "the schedule's trace",
            Self::Qualification { .. } => "the qualification's record",
        }
    }

    /// The artifacts that keep it: (name, bytes).
    pub fn artifacts(&self) -> Vec<(&'static str, Vec<u8>)> {
        match self {
            Self::Backup(t) => vec![(TRACE, json(t.as_ref()))],
            Self::Restore(t) => vec![(TRACE, json(t.as_ref()))],
            Self::Qualification { record, inputs } => vec![
                (RECORD, json(record.as_ref())),
                (JUDGEMENT_INPUTS, json(inputs)),
            ],
        }
    }

    /// The trace its artifacts keep, read by `read` (the artifact's bytes, `None` when the
    /// case kept no such artifact); `Ok(None)` when the case kept none (a schedule judged from
    /// a fresh read of a cluster that is gone). The error names the artifact that is not one.
    pub fn from_artifacts(
        read: impl Fn(&str) -> Result<Option<Vec<u8>>, String>,
    ) -> Result<Option<Self>, String> {
        if let Some(bytes) = read(TRACE)? {
            let v: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|e| format!("{TRACE} is not JSON: {e}"))?;
            return if v.get("backup").is_some() {
                serde_json::from_value(v)
                    .map(|t| Some(Self::Backup(Box::new(t))))
                    .map_err(|e| format!("{TRACE} is no backup trace: {e}"))
            } else {
                serde_json::from_value(v)
                    .map(|t| Some(Self::Restore(Box::new(t))))
                    .map_err(|e| format!("{TRACE} is no restore trace: {e}"))
            };
        }
        let (Some(record), Some(inputs)) = (read(RECORD)?, read(JUDGEMENT_INPUTS)?) else {
            return Ok(None);
        };
        Ok(Some(Self::Qualification {
            record: Box::new(
                serde_json::from_slice(&record).map_err(|e| format!("{RECORD}: {e}"))?,
            ),
            inputs: serde_json::from_slice(&inputs)
                .map_err(|e| format!("{JUDGEMENT_INPUTS}: {e}"))?,
        }))
    }

    /// What was done to the run and the reference end state it was judged against, as the
    /// trace keeps them (what `--rejudge` judges it with again).
    pub fn judged_with(&self) -> (Option<Perturbation>, Option<EndState>) {
        match self {
            Self::Backup(t) => (t.perturbation.clone(), t.reference_end.clone()),
            Self::Restore(t) => (t.perturbation.clone(), t.reference_end.clone()),
            Self::Qualification { inputs, .. } => (Some(inputs.perturbation.clone()), None),
        }
    }
}

/// A kept artifact's bytes: pretty JSON (these types always serialize).
fn json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap_or_default()
}

/// The verdict of every invariant that applies to `trace`, a run to which `schedule` was done
/// (its operation, and its fault when it landed; `None` when that was never recorded, which
/// leaves `outcome` unknown), its end state compared with `reference`'s (the operation's
/// reference run; `None` when there was none). The trace is completed with both, so what is
/// kept of it judges the same again.
pub fn judge(
    schedule: Option<&Perturbation>,
    trace: &mut Trace,
    reference: Option<&EndState>,
) -> Vec<Judged> {
    match trace {
        Trace::Backup(t) => {
            t.perturbation = schedule.cloned();
            t.reference_end = reference.cloned();
            t.judge()
        }
        Trace::Restore(t) => {
            t.perturbation = schedule.cloned();
            t.reference_end = reference.cloned();
            t.judge()
        }
        Trace::Qualification { record, inputs } => {
            if let Some(s) = schedule {
                inputs.perturbation = s.clone();
            }
            judge_qualification(record, inputs)
        }
    }
}

/// The qualification schedule's verdicts from its record and inputs.
fn judge_qualification(q: &Qualification, inputs: &QualifyInputs) -> Vec<Judged> {
    let mut violations =
        qualification::judge(q, inputs.stopped.as_deref(), Some(&inputs.perturbation));
    if let Some(phase) = &inputs.restored {
        violations.extend(qualification::restore_after_halt(phase.as_deref()));
    }
    let ids: Vec<&str> = inputs.invariants.iter().map(String::as_str).collect();
    judge_each(&ids, &violations, |id| {
        (id == LIVENESS && inputs.restored.is_none()).then(|| {
            format!(
                "no Restore of the source was run after the qualification: it did not halt ({})",
                inputs.stopped.clone().unwrap_or_else(|| q.outcome.line())
            )
        })
    })
}
