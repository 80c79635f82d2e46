//! The image gate: once the operator observed the version change and the server's pod runs
//! its StatefulSet's update revision, the game container's `imageID` carries the pinned digest.

use gameplane_api::gameserver::GameServer;
use gameplane_api::names;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use crate::context::{CaseContext, CaseError, HarnessMutant};
use crate::evidence::judge::gates as judge;
use crate::evidence::qualification::{Gate, GateEvidence, ImageEvidence, Observed};
use crate::qualify::access::{get_server, gs_api};
use crate::qualify::gates::pods::await_pod_of_revision;
use crate::qualify::gates::{gate, gate_error};
use crate::wait::{Condition, Progress, await_object, conditions};

/// The image gate: once the operator has observed the version change (GameServer
/// observedGeneration) and the server's pod runs what its StatefulSet now asks for, the game
/// container's `imageID` must carry the digest the candidate was pinned to. A pull failure
/// ends it at once with the pod's waiting reason and the GameServer's phase as the reason.
pub(in crate::qualify) async fn image_gate(
    ctx: &CaseContext<'_>,
    server: &str,
    pinned: &str,
    generation: Option<i64>,
) -> Result<Gate, CaseError> {
    ctx.uses("container imageID");
    let started = std::time::Instant::now();
    let observed = await_generation_observed(ctx, server, generation).await;
    if let Err(e) = observed {
        return Ok(gate(
            server,
            GateEvidence::Image(gate_error(&e)),
            false,
            Some(e.to_string()),
        ));
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod_name = names::pod(server);
    let (wanted, revision) = statefulset_revision(ctx, server).await?;
    let waited = await_pod_of_revision(ctx, &pods, &pod_name, &revision).await;
    let crashed = matches!(&waited, Err(e) if e.to_string().contains("CrashLoopBackOff"));
    if waited.is_err() && !crashed {
        // A pull failure shows on the pod first; the operator then reports the GameServer
        // Failed (ImagePullFailed). Give it the pull-failure bound to say so.
        let _ = await_object(
            &gs_api(ctx),
            server,
            conditions::gameserver_phase("Failed"),
            ctx.bounds.pull_failure,
        )
        .await;
    }
    let pod = pods.get_opt(&pod_name).await.map_err(CaseError::kube(
        "get Pod",
        format!("{}/{pod_name}", ctx.namespace),
    ))?;
    let gs = get_server(ctx, server).await?;
    let game_status = pod
        .as_ref()
        .and_then(|p| p.status.as_ref()?.container_statuses.clone())
        .and_then(|cs| cs.into_iter().find(|c| c.name == names::containers::GAME));
    let image_id = game_status
        .as_ref()
        .map(|c| c.image_id.clone())
        .unwrap_or_default();
    let waiting = game_status
        .as_ref()
        .and_then(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone());
    let gs_phase = gs
        .status
        .as_ref()
        .and_then(|s| s.phase)
        .map(|p| p.as_str().to_string());
    let gs_reason = gs
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.reason.clone());
    let evidence = ImageEvidence {
        pod_uid: pod.as_ref().and_then(|p| p.metadata.uid.clone()),
        image_id,
        pinned: pinned.to_string(),
        spec_image: wanted,
        waiting_reason: waiting,
        gameserver_phase: gs_phase,
        gameserver_ready_reason: gs_reason,
    };
    // The pod's wait names its own bound; the gate's other waits (the StatefulSet, the
    // GameServer's Failed) add to it, so the reason says how long the gate waited in all.
    let did_not_run = waited.as_ref().err().map(|e| {
        judge::did_not_run(
            &e.to_string(),
            started.elapsed(),
            ctx.bounds.pull_failure,
            ctx.bounds.pull_failure,
        )
    });
    let decision = judge::image(&evidence, did_not_run.as_deref().map_or(Ok(()), Err));
    // `harness-digest-check-skipped`: a running container passes whatever image it runs.
    let skip_digest = ctx.harness_mutant(HarnessMutant::DigestCheckSkipped);
    let passed = decision.passed || (skip_digest && waited.is_ok());
    Ok(gate(
        server,
        GateEvidence::Image(Observed::Read(evidence)),
        passed,
        Some(decision.reason),
    ))
}

/// Waits until the operator has observed GameServer `server` at `generation`.
pub(in crate::qualify) async fn await_generation_observed(
    ctx: &CaseContext<'_>,
    server: &str,
    generation: Option<i64>,
) -> Result<GameServer, CaseError> {
    let wanted = generation.unwrap_or(0);
    let condition = Condition::new(
        format!("status.observedGeneration >= {wanted}"),
        move |gs: Option<&GameServer>| match gs
            .and_then(|g| g.status.as_ref())
            .and_then(|s| s.observed_generation)
        {
            Some(g) if g >= wanted => Progress::Met,
            _ => Progress::Pending,
        },
    );
    Ok(await_object(&gs_api(ctx), server, condition, ctx.bounds.settle).await?)
}

/// The game image the server's StatefulSet asks for and its update revision, once the
/// StatefulSet controller has observed its latest template.
pub(in crate::qualify) async fn statefulset_revision(
    ctx: &CaseContext<'_>,
    server: &str,
) -> Result<(String, String), CaseError> {
    use k8s_openapi::api::apps::v1::StatefulSet;
    let api: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = names::statefulset(server);
    let condition = Condition::new(
        "status.observedGeneration >= metadata.generation with an updateRevision",
        |sts: Option<&StatefulSet>| {
            let Some(sts) = sts else {
                return Progress::Pending;
            };
            let observed = sts.status.as_ref().and_then(|s| s.observed_generation);
            let revision = sts.status.as_ref().and_then(|s| s.update_revision.as_ref());
            if observed >= sts.metadata.generation && revision.is_some() {
                Progress::Met
            } else {
                Progress::Pending
            }
        },
    );
    let sts = await_object(&api, &name, condition, ctx.bounds.settle).await?;
    let image = sts
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| {
            p.containers
                .iter()
                .find(|c| c.name == names::containers::GAME)
        })
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let revision = sts
        .status
        .and_then(|s| s.update_revision)
        .unwrap_or_default();
    Ok((image, revision))
}
