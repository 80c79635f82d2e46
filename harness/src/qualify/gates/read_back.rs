//! The read-back gate (on the clone): with saves off, every world claim reads back, holds files
//! where it did before the candidate, and is not torn.

use crate::context::CaseContext;
use crate::evidence::judge::gates as judge;
use crate::evidence::qualification::{Gate, GateEvidence, Observed, Plan, ReadBackEvidence};
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
            let (decision, rows) =
                judge::read_back(claims, &restored.claim_reads(), &r.claim_reads());
            (
                decision.passed,
                Some(decision.reason),
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
