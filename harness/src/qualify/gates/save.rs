//! The save gate: the game answers `save-all flush` over RCON with "Saved the game".

use crate::context::CaseContext;
use crate::evidence::qualification::{Gate, GateEvidence, Observed, SaveEvidence};
use crate::qualify::access::{Access, rcon};
use crate::qualify::gates::{gate, gate_error};

/// The save gate: the game answers a save over RCON with "Saved the game".
pub(in crate::qualify) async fn save_gate(
    ctx: &CaseContext<'_>,
    access: &Access,
    server: &str,
) -> Gate {
    let saved = rcon(ctx, access, server, &["save-all flush"]).await;
    ctx.uses("RCON reply to save-all");
    let (passed, reason, evidence) = match saved {
        Ok(replies) => {
            let decision = crate::evidence::judge::gates::save(&replies);
            (
                decision.passed,
                Some(decision.reason),
                Observed::Read(SaveEvidence { replies }),
            )
        }
        Err(e) => (false, Some(e.to_string()), gate_error(&e)),
    };
    gate(server, GateEvidence::Save(evidence), passed, reason)
}
