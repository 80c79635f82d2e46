//! `rehearse explore --rejudge BUNDLE`: an exploration judged again offline, from what its
//! bundle kept, by today's invariants.
//!
//! Every schedule of a backup or a restore stored the whole trace it was judged on
//! (`artifacts/trace.json`) and where its fault landed (`artifacts/placement.json`: whether its
//! point came, and the points its run learned); a qualification schedule stored its record
//! (`artifacts/qualification.json`) and what its judgement read besides
//! (`artifacts/judgement-inputs.json`). Each is loaded from the bundle — which is verified
//! first: every artifact against the SHA-256 its receipt recorded — and judged again; the
//! matrix and closing line are drawn from those verdicts with the same renderer as the run's.
//! A schedule that kept nothing to judge again (the qualification's signal schedules, judged
//! from a fresh read of a cluster that is gone) keeps its recorded standing, and is counted as
//! such.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::evidence::bundle::Verdict;
use crate::evidence::invariants::restore::RestoreTrace;
use crate::evidence::invariants::{BackupTrace, Judged};
use crate::evidence::report::matrix::{self, Matrix, Schedule};

pub use crate::evidence::place::{PLACEMENT, Placement};
/// Artifact: a backup's or a restore's trace.
pub const TRACE: &str = "trace.json";
/// Artifact: what a qualification schedule's judgement read besides its record.
pub const JUDGEMENT_INPUTS: &str = "judgement-inputs.json";

/// A qualification schedule's judgement inputs besides its `qualification.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QualifyInputs {
    /// The error the procedure stopped on, if it did.
    pub stopped: Option<String>,
    /// What was done to the run.
    pub perturbation: crate::evidence::invariants::outcome::Perturbation,
    /// The Restore after a halt: `None` when none was run, else its last phase.
    pub restored: Option<Option<String>>,
    /// The invariants that apply.
    pub invariants: Vec<String>,
}

/// The qualification schedule's verdicts from its record and inputs, as the run judged them.
pub fn judge_qualification(
    q: &crate::evidence::qualification::Qualification,
    inputs: &QualifyInputs,
) -> Vec<Judged> {
    use crate::evidence::invariants::{self, LIVENESS, qualification};
    let mut violations =
        qualification::judge(q, inputs.stopped.as_deref(), Some(&inputs.perturbation));
    if let Some(phase) = &inputs.restored {
        violations.extend(qualification::restore_after_halt(phase.as_deref()));
    }
    let ids: Vec<&str> = inputs.invariants.iter().map(String::as_str).collect();
    invariants::judge_each(&ids, &violations, |id| {
        (id == LIVENESS && inputs.restored.is_none()).then(|| {
            format!(
                "no Restore of the source was run after the qualification: it did not halt ({})",
                inputs.stopped.clone().unwrap_or_else(|| q.outcome.line())
            )
        })
    })
}

/// An exploration judged again.
#[derive(Debug)]
pub struct Rejudged {
    /// Each schedule as judged again (or as recorded, when it kept nothing to judge).
    pub schedules: Vec<Schedule>,
    /// The schedules that kept nothing to judge again, by id.
    pub as_recorded: Vec<String>,
    /// Each operation's point labels, from its reference run.
    pub labels: BTreeMap<String, Vec<String>>,
}

impl Rejudged {
    /// The matrices, drawn as the run drew them.
    pub fn matrices(&self) -> Vec<Matrix> {
        matrix::matrices(self.schedules.clone(), &self.labels)
    }

    /// The closing line.
    pub fn closing_line(&self) -> String {
        matrix::closing_line("schedules", self.schedules.iter().map(Schedule::standing))
    }
}

/// A schedule standing as `judged` says, its fault placed unless `not_placed`.
pub fn schedule_of(id: &str, judged: &[Judged], not_placed: Option<&str>) -> Schedule {
    let violated = crate::evidence::invariants::violated(judged);
    let unknown = crate::evidence::invariants::unknown_reasons(judged);
    let (verdict, reason) = if !violated.is_empty() {
        (
            Verdict::Failed,
            Some(format!("violated: {}", violated.join(", "))),
        )
    } else if !unknown.is_empty() {
        (
            Verdict::Failed,
            Some(format!("evidence absent: {}", unknown.join("; "))),
        )
    } else if let Some(why) = not_placed {
        (Verdict::Failed, Some(format!("not placed: {why}")))
    } else {
        (Verdict::Passed, None)
    };
    Schedule {
        id: id.to_string(),
        verdict,
        reason,
        failed_checks: violated,
    }
}

/// Judges the exploration in `bundle` again; the error names what could not be read.
pub fn rejudge(bundle: &Path) -> Result<Rejudged, String> {
    let loaded = crate::evidence::report::load::load(bundle).map_err(|e| {
        format!(
            "{}: not a bundle that verifies ({e}); give the directory an exploration wrote (reports/<run-id>)",
            bundle.display()
        )
    })?;
    let mut out = Rejudged {
        schedules: Vec::new(),
        as_recorded: Vec::new(),
        labels: BTreeMap::new(),
    };
    let explore: Vec<_> = loaded
        .cases
        .iter()
        .filter(|c| c.summary.bucket == super::BUCKET)
        .collect();
    if explore.is_empty() {
        return Err(format!(
            "{}: the bundle holds no exploration schedule (no case of bucket {}); rejudge a bundle `rehearse explore` wrote",
            bundle.display(),
            super::BUCKET
        ));
    }
    for case in explore {
        let name = &case.summary.name;
        let read = |artifact: &str| -> Result<Option<Vec<u8>>, String> {
            let Some(a) = case
                .artifacts
                .iter()
                .find(|a| a.path.ends_with(&format!("/{artifact}")))
            else {
                return Ok(None);
            };
            std::fs::read(bundle.join(&a.path))
                .map(Some)
                .map_err(|e| format!("{}: {e}", a.path))
        };
        let parse = |bytes: &[u8], what: &str| -> Result<serde_json::Value, String> {
            serde_json::from_slice(bytes).map_err(|e| format!("{name}: {what} is not JSON: {e}"))
        };
        let placement: Placement = match read(PLACEMENT)? {
            Some(b) => serde_json::from_value(parse(&b, PLACEMENT)?)
                .map_err(|e| format!("{name}: {PLACEMENT}: {e}"))?,
            None => Placement::default(),
        };
        if let Some((op, _)) = name.rsplit_once("-reference") {
            out.labels.insert(op.to_string(), placement.points.clone());
            continue;
        }
        let judged = if let Some(b) = read(TRACE)? {
            let v = parse(&b, TRACE)?;
            if v.get("backup").is_some() {
                let t: BackupTrace = serde_json::from_value(v)
                    .map_err(|e| format!("{name}: {TRACE} is no backup trace: {e}"))?;
                Some(t.judge())
            } else {
                let t: RestoreTrace = serde_json::from_value(v)
                    .map_err(|e| format!("{name}: {TRACE} is no restore trace: {e}"))?;
                Some(t.judge())
            }
        } else if let (Some(q), Some(i)) = (read("qualification.json")?, read(JUDGEMENT_INPUTS)?) {
            let q = serde_json::from_value(parse(&q, "qualification.json")?)
                .map_err(|e| format!("{name}: qualification.json: {e}"))?;
            let i: QualifyInputs = serde_json::from_value(parse(&i, JUDGEMENT_INPUTS)?)
                .map_err(|e| format!("{name}: {JUDGEMENT_INPUTS}: {e}"))?;
            Some(judge_qualification(&q, &i))
        } else {
            None
        };
        match judged {
            // A schedule that did not finish recorded no judgement: it stands as it ended.
            Some(judged) if case.summary.verdict != Verdict::Interrupted => {
                out.schedules
                    .push(schedule_of(name, &judged, placement.not_placed.as_deref()));
            }
            _ => {
                out.as_recorded.push(name.clone());
                out.schedules.push(Schedule {
                    id: name.clone(),
                    verdict: case.summary.verdict,
                    reason: case.summary.reason.clone(),
                    failed_checks: case.summary.failed_checks.clone(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::invariants::{Judgement, Violation};

    fn judged(pairs: &[(&str, Judgement)]) -> Vec<Judged> {
        pairs
            .iter()
            .map(|(i, j)| Judged {
                invariant: (*i).to_string(),
                judgement: j.clone(),
            })
            .collect()
    }

    #[test]
    fn a_schedule_stands_as_its_verdicts_say() {
        let held = judged(&[("drain", Judgement::Held)]);
        assert_eq!(
            schedule_of("backup-p01-game-restart", &held, None).standing(),
            matrix::Standing::Ok
        );
        assert_eq!(
            schedule_of(
                "backup-p01-game-restart",
                &held,
                Some("the operation ended")
            )
            .standing(),
            matrix::Standing::NotPlaced
        );
        let unknown = judged(&[
            ("drain", Judgement::Held),
            (
                "cleanup",
                Judgement::Unknown {
                    why: "unread log".into(),
                },
            ),
        ]);
        let s = schedule_of("backup-p01-game-restart", &unknown, Some("x"));
        assert_eq!(
            s.standing(),
            matrix::Standing::Unknown,
            "unknown before not placed"
        );
        let violated = judged(&[
            (
                "cleanup",
                Judgement::Unknown {
                    why: "unread log".into(),
                },
            ),
            (
                "drain",
                Judgement::Violated {
                    violations: vec![Violation {
                        invariant: "drain".into(),
                        evidence: "e".into(),
                        found: "f".into(),
                    }],
                },
            ),
        ]);
        let s = schedule_of("backup-p01-game-restart", &violated, None);
        assert_eq!(s.standing(), matrix::Standing::Violated);
        assert_eq!(s.failed_checks, ["drain"]);
    }
}
