//! The invariant of a qualification (contract D6), over the record one qualification wrote
//! ([`Qualification`]: its plan, every gate in order, the fleet before and after, its outcome):
//!
//! - no member is promoted unless every gate before its batch passed: a failed gate ends the
//!   qualification `Halted`, with fewer batches promoted than the failed gate's batch (a
//!   member's gate is its batch's; the preflight's and the canary's come before batch 1);
//! - every member of a promoted batch runs the candidate; every member of the batch that failed
//!   is back on the version it ran (unless the plan keeps a failed batch); every member outside
//!   the promoted and the failed batches has the version, pod, claims and world digests it had
//!   before;
//! - each promoted batch wrote its promotion receipt.
//!
//! Beside it the [`OUTCOME`] oracle: unperturbed (or after a fault that changes neither a game,
//! the repository nor the qualification's objects) a good candidate (with its module bundle
//! served as pinned) is promoted in every batch, an unpullable one halts at the canary's image
//! gate with the clone's GameServer `Failed`, `ImagePullFailed`, and one whose bundle's tag was
//! moved halts at the module bundle gate with the operator's Module `Failed`, `DigestMismatch`.

use std::collections::BTreeMap;

use super::outcome::{OUTCOME, Perturbation};
use super::{LIVENESS, Violation};
use crate::catalogue::{Allowed, Ends};
use crate::qualification::{Gate, MemberBaseline, Outcome, Qualification};

/// Invariant `qualification`: promotion only behind passed gates, and a halted fleet as it was.
pub const QUALIFICATION: &str = "qualification";

/// Every invariant a qualification schedule is judged by, in report order.
pub const QUALIFY_INVARIANTS: &[&str] = &[QUALIFICATION, OUTCOME];

/// A qualification followed by a Restore of its source (after a halt) is judged by liveness
/// too.
pub const QUALIFY_RESTORE_INVARIANTS: &[&str] = &[QUALIFICATION, LIVENESS, OUTCOME];

/// A Restore of the source after a halted qualification, whose last phase was `phase`: the halt
/// holds no lock on any server, so the Restore runs to its end ([`LIVENESS`]) and, nothing being
/// wrong with the source or its backup, succeeds ([`OUTCOME`]).
pub fn restore_after_halt(phase: Option<&str>) -> Vec<Violation> {
    let evidence = "the Restore of the source after the halt: its status.phase";
    match phase {
        Some("Succeeded") => Vec::new(),
        Some("Failed") => vec![Violation::new(
            OUTCOME,
            evidence,
            "the Restore of the source after the halt Failed (the contract allows only Succeeded)"
                .into(),
        )],
        other => vec![Violation::new(
            LIVENESS,
            evidence,
            format!(
                "the Restore of the source after the halt did not end within its bound; last phase {}",
                other.unwrap_or("none")
            ),
        )],
    }
}

/// The gates' evidence, as the violations name it.
const GATES: &str = "the qualification's gates, in order, and its outcome";
/// The fleet's evidence, as the violations name it.
const FLEET: &str = "each member's version, pod UID, PVC UIDs and world digests, before and after";

/// The batch a gate belongs to: a fleet member's gate is its member's batch; every other gate
/// (the preflight's, the module's, the canary clone's) comes before promotion: batch 0.
fn gate_batch(q: &Qualification, gate: &Gate) -> usize {
    member_batches(q)
        .get(gate.server.as_str())
        .copied()
        .unwrap_or(0)
}

/// Each member's batch (1-based), by the plan's order and batch size.
fn member_batches(q: &Qualification) -> BTreeMap<&str, usize> {
    let size = q.plan.batch_size.max(1);
    q.plan
        .fleet
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i / size + 1))
        .collect()
}

/// Batches the qualification says it promoted.
fn promoted(q: &Qualification) -> usize {
    match &q.outcome {
        Outcome::Promoted { batches } => *batches,
        Outcome::Halted {
            batches_promoted, ..
        } => *batches_promoted,
    }
}

/// Invariant [`QUALIFICATION`] and the [`OUTCOME`] oracle over `q`, judged after
/// `perturbation`; `stopped` is the error the procedure stopped on, if it did (judged as a
/// halt in the batch under way: what it recorded must hold as for one).
pub fn judge(
    q: &Qualification,
    stopped: Option<&str>,
    perturbation: Option<&Perturbation>,
) -> Vec<Violation> {
    let mut out = gates_before_promotion(q);
    out.extend(fleet_as_promised(q, stopped.is_some()));
    out.extend(expected_outcome(q, stopped, perturbation));
    out
}

/// A failed gate halts, and nothing at or after its batch was promoted.
fn gates_before_promotion(q: &Qualification) -> Vec<Violation> {
    let mut out = Vec::new();
    let promoted = promoted(q);
    let first_failed = q.gates.iter().find(|g| !g.passed);
    match (first_failed, &q.outcome) {
        (Some(g), Outcome::Promoted { .. }) => out.push(Violation::new(
            QUALIFICATION,
            GATES,
            format!(
                "gate {:?} on {} failed, yet the qualification reports {}",
                g.name,
                g.server,
                q.outcome.line()
            ),
        )),
        (Some(g), Outcome::Halted { .. }) if promoted >= gate_batch(q, g).max(1) => {
            out.push(Violation::new(
                QUALIFICATION,
                GATES,
                format!(
                    "gate {:?} on {} failed, yet {promoted} batch(es) were promoted (only batches before {} may be)",
                    g.name,
                    g.server,
                    gate_batch(q, g).max(1)
                ),
            ));
        }
        (None, Outcome::Halted { gate, .. }) => out.push(Violation::new(
            QUALIFICATION,
            GATES,
            format!("halted at gate {gate:?}, but every recorded gate passed"),
        )),
        _ => {}
    }
    if q.promotion_receipts < promoted {
        out.push(Violation::new(
            QUALIFICATION,
            "the promotion receipts",
            format!(
                "{promoted} batch(es) promoted, {} promotion receipt(s) written",
                q.promotion_receipts
            ),
        ));
    }
    out
}

/// Promoted batches run the candidate, the failed batch is put back, every other member is
/// untouched.
fn fleet_as_promised(q: &Qualification, stopped: bool) -> Vec<Violation> {
    let mut out = Vec::new();
    let promoted = promoted(q);
    let failed_batch = match q.outcome {
        Outcome::Halted { .. } => Some(promoted + 1),
        Outcome::Promoted { .. } => stopped.then_some(promoted + 1),
    };
    let find = |list: &'_ [MemberBaseline], m: &str| -> Option<MemberBaseline> {
        list.iter().find(|b| b.server == m).cloned()
    };
    for (member, batch) in member_batches(q) {
        let (Some(before), after) = (find(&q.baseline, member), find(&q.after, member)) else {
            continue;
        };
        let Some(after) = after else {
            out.push(Violation::new(
                QUALIFICATION,
                FLEET,
                format!("member {member} was not found after the qualification"),
            ));
            continue;
        };
        let broken = if batch <= promoted {
            (after.version.as_deref() != Some(q.plan.candidate.as_str())).then(|| {
                format!(
                    "member {member} of promoted batch {batch} runs {:?}, not the candidate {}",
                    after.version, q.plan.candidate
                )
            })
        } else if Some(batch) == failed_batch {
            (!q.plan.keep_failed_batch && after.version != before.version).then(|| {
                format!(
                    "member {member} of failed batch {batch} runs {:?}, not the version it ran before ({:?})",
                    after.version, before.version
                )
            })
        } else {
            untouched(&before, &after).map(|what| {
                format!("member {member} (batch {batch}, never promoted) changed: {what}")
            })
        };
        if let Some(found) = broken {
            out.push(Violation::new(QUALIFICATION, FLEET, found));
        }
    }
    out
}

/// What changed of a member that must be as it was (world digests compared when both were
/// read).
fn untouched(before: &MemberBaseline, after: &MemberBaseline) -> Option<String> {
    let mut changed = Vec::new();
    if before.version != after.version {
        changed.push(format!(
            "version {:?} → {:?}",
            before.version, after.version
        ));
    }
    if before.pod_uid != after.pod_uid {
        changed.push(format!("pod {:?} → {:?}", before.pod_uid, after.pod_uid));
    }
    if before.pvcs != after.pvcs {
        changed.push(format!("claims {:?} → {:?}", before.pvcs, after.pvcs));
    }
    let read = !before.digests.is_empty() && !after.digests.is_empty();
    if read && before.digests != after.digests {
        changed.push(format!(
            "world digests {:?} → {:?}",
            before.digests, after.digests
        ));
    }
    (!changed.is_empty()).then(|| changed.join("; "))
}

/// Why `q` did not end as `want` (`None`: it did).
fn missed(q: &Qualification, want: &Ends) -> Option<String> {
    use crate::qualification::gates;
    match want {
        Ends::Promoted => {
            let batches = q.plan.fleet.len().div_ceil(q.plan.batch_size.max(1));
            (q.outcome != Outcome::Promoted { batches })
                .then(|| format!("promoted in {batches} batch(es)"))
        }
        // Not a qualification's ending (filtered out by the caller).
        Ends::Succeeded(_) | Ends::Refused(_) => None,
        Ends::HaltedOnClone(gate) => {
            let want = format!("halted at gate {gate:?} on the canary {}", q.clone);
            let Outcome::Halted {
                gate: at,
                batches_promoted: 0,
                ..
            } = &q.outcome
            else {
                return Some(want);
            };
            let failed = q.gates.iter().find(|g| {
                !g.passed && g.name == *at && (g.server == q.clone || g.server.is_empty())
            });
            if at != gate || failed.is_none() {
                return Some(want);
            }
            // The operator's own verdict, as the gate read it: the clone's GameServer for the
            // image, the canary Module for the bundle.
            let (what, reported, wanted) = if *gate == gates::IMAGE {
                let e = failed.and_then(|g| g.evidence.image());
                (
                    "its GameServer",
                    e.map(|e| {
                        (
                            e.gameserver_phase.clone(),
                            e.gameserver_ready_reason.clone(),
                        )
                    }),
                    "ImagePullFailed",
                )
            } else {
                let e = failed.and_then(|g| g.evidence.module());
                (
                    "the operator's canary Module",
                    e.map(|e| (e.phase.clone(), e.ready_reason.clone())),
                    "DigestMismatch",
                )
            };
            let failed_for = |(phase, reason): &(Option<String>, Option<String>)| {
                phase.as_deref() == Some("Failed") && reason.as_deref() == Some(wanted)
            };
            (!reported.as_ref().is_some_and(failed_for)).then(|| {
                format!("{want}, {what} Failed with reason {wanted} (it reported {reported:?})")
            })
        }
    }
}

/// Unperturbed, after a transparent fault, or after one that decides the ending
/// ([`crate::catalogue::Fault::decides`]), the qualification ends as the catalogue states.
fn expected_outcome(
    q: &Qualification,
    stopped: Option<&str>,
    perturbation: Option<&Perturbation>,
) -> Vec<Violation> {
    // The catalogue states how a qualification ends unperturbed or after a transparent fault.
    let Some((p, Some(Allowed::Only(want)))) =
        perturbation.map(|p| (p, p.operation.allowed(p.fault)))
    else {
        return Vec::new();
    };
    if !matches!(want, Ends::Promoted | Ends::HaltedOnClone(_)) {
        return Vec::new();
    }
    let allowed = match (stopped, missed(q, &want)) {
        (None, None) => return Vec::new(),
        (_, Some(allowed)) => allowed,
        (Some(_), None) => format!("{want:?}"),
    };
    let ended = match stopped {
        Some(e) => format!("stopped on an error ({e})"),
        None => q.outcome.line(),
    };
    vec![Violation::new(
        OUTCOME,
        "the qualification's outcome",
        format!(
            "{} the qualification ended {} (the contract allows only {allowed})",
            match &p.fault {
                Some(f) if f.decides().is_some() => {
                    format!("after fault {f}, whose one ending the catalogue states,")
                }
                Some(f) => format!(
                    "after fault {f}, which changes neither a game, the repository nor the qualification's objects,"
                ),
                None => "unperturbed,".to_string(),
            },
            ended,
        ),
    )]
}
