//! The read-back gate (on the clone): with saves off, every world claim reads back, holds files
//! where it did before the candidate, and is not torn.

use std::collections::BTreeMap;

use serde_json::json;

use crate::context::CaseContext;
use crate::evidence::qualification::{
    ClaimReadBack, Gate, GateEvidence, Observed, Plan, ReadBackEvidence,
};
use crate::probe::readback::Readback;
use crate::qualify::access::{Access, read_claims, with_saves_off};
use crate::qualify::gates::{Timer, finish, gate, gate_error};

/// The read-back gate (on the clone): with saves off, every world claim reads back, holds files
/// where it held them before the candidate, and is not torn; the evidence has each claim's
/// digest and file count before (`restored`) and now.
pub(in crate::qualify) async fn read_back_gate(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    access: &Access,
    server: &str,
    restored: &Readback,
    claims: &[String],
) -> Gate {
    let timer = Timer::start();
    let readback = with_saves_off(
        ctx,
        access,
        server,
        read_claims(ctx, plan, &format!("{server}-gate-read"), claims),
    )
    .await;
    ctx.uses("world read back from the volumes");
    let (passed, reason, evidence) = match readback {
        Ok(r) => {
            let mut bad = Vec::new();
            let mut rows = BTreeMap::new();
            for claim in claims {
                let was = restored.claims.get(claim);
                let Some(now) = r.claims.get(claim) else {
                    bad.push(format!("{claim} was not read"));
                    continue;
                };
                if now.files == 0 && was.is_some_and(|w| w.files > 0) {
                    bad.push(format!(
                        "{claim} holds no files under the candidate ({} before)",
                        was.map(|w| w.files).unwrap_or(0)
                    ));
                }
                if now.torn {
                    bad.push(format!(
                        "{claim} is torn: {}",
                        now.problem.as_deref().unwrap_or("the save is inconsistent")
                    ));
                }
                rows.insert(
                    claim.clone(),
                    ClaimReadBack {
                        digest_before: was.map(|w| w.digest.clone()),
                        files_before: was.map(|w| w.files as u64),
                        digest: now.digest.clone(),
                        files: now.files as u64,
                        changed: was.map(|w| w.digest != now.digest),
                        // What the read-back tool recognised, when it knows the data's format.
                        kind: json!(now.kind),
                        format: now.format,
                        candidate_marker: now.candidate_marker,
                    },
                );
            }
            (
                bad.is_empty() && !r.claims.is_empty(),
                Some(format!(
                    "world claims did not read back: {}",
                    bad.join("; ")
                )),
                Observed::Read(ReadBackEvidence { claims: rows }),
            )
        }
        Err(e) => (false, Some(e.to_string()), gate_error(&e)),
    };
    finish(
        timer,
        gate(server, GateEvidence::ReadBack(evidence), passed, reason),
    )
}
