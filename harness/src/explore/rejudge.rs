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

use crate::evidence::bundle::Verdict;
use crate::evidence::invariants::Judged;
use crate::evidence::invariants::schedule::{Trace, judge};
use crate::evidence::report::matrix::{self, Matrix, Schedule};

pub use crate::evidence::invariants::schedule::{JUDGEMENT_INPUTS, QualifyInputs, TRACE};
pub use crate::evidence::place::{PLACEMENT, Placement};

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
        if let Some(op) = crate::evidence::place::reference_of(name) {
            out.labels.insert(op.to_string(), placement.points.clone());
            continue;
        }
        let trace = Trace::from_artifacts(read).map_err(|e| format!("{name}: {e}"))?;
        // Judged again with what it was judged with: what was done to the run and the
        // reference end state its trace keeps.
        let judged = trace.map(|mut trace| {
            let (schedule, reference) = trace.judged_with();
            judge(schedule.as_ref(), &mut trace, reference.as_ref())
        });
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
