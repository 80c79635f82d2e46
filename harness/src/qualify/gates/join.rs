//! The join gate: a real Minecraft join reaches play; when no Minecraft stage answered, the
//! evidence says what the game port serves instead (the HTTP-only candidate's tell).

use gameplane_api::names;
use serde_json::json;

use crate::context::{CaseContext, CaseError, HarnessMutant};
use crate::evidence::qualification::{Gate, GateEvidence, HttpAnswer, JoinEvidence};
use crate::probe::minecraft::Depth;
use crate::qualify::access::{Access, join};
use crate::qualify::gates::{Timer, finish, gate};

/// The depth the join gate asks for: play, unless a harness mutant weakened it.
pub(in crate::qualify) fn join_gate_depth(ctx: &CaseContext<'_>) -> Depth {
    if ctx.harness_mutant(HarnessMutant::JoinStatusOnly) {
        Depth::Query
    } else if ctx.harness_mutant(HarnessMutant::JoinLoginOnly) {
        Depth::Login
    } else {
        Depth::Play
    }
}

/// The join gate: a real Minecraft join reaches the depth the backend allows; when no
/// Minecraft stage answered, the evidence says what the game port serves instead (the
/// HTTP-only candidate's tell).
pub(in crate::qualify) async fn join_gate(
    ctx: &CaseContext<'_>,
    access: &Access,
    server: &str,
) -> Result<Gate, CaseError> {
    let timer = Timer::start();
    let depth = join_gate_depth(ctx);
    let verdict = join(ctx, access, server, depth).await?;
    ctx.uses("Minecraft join (depth reached)");
    let mut evidence = JoinEvidence {
        verdict: verdict.line(),
        detail: json!(verdict),
        http: None,
    };
    if !verdict.ok && verdict.reached.is_none() {
        // No Minecraft stage answered: say what the port does serve, if anything (the
        // HTTP-only candidate's tell). A port that spoke Minecraft at all is not asked.
        let pod_name = names::pod(server);
        if let Ok(reach) = ctx
            .backend
            .reach(&ctx.namespace, &pod_name, access.game_port)
            .await
            && let Ok(http) =
                crate::probe::http_marker::probe(reach.addr, "/", "", ctx.bounds.probe).await
        {
            ctx.uses("HTTP response on the game port");
            evidence.http = Some(HttpAnswer {
                url: http.url,
                status: http.status,
                body: http.body,
                marker: http.marker,
                ok: http.ok,
            });
        }
    }
    // `harness-join-port-open`: any answer on the port passes the gate.
    let passed =
        verdict.ok || (ctx.harness_mutant(HarnessMutant::JoinPortOpen) && evidence.http.is_some());
    Ok(finish(
        timer,
        gate(
            server,
            GateEvidence::Join(evidence),
            passed,
            Some(verdict.line()),
        ),
    ))
}
