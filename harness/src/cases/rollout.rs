//! The rollout bucket: candidates rehearsed through the qualification procedure (CONTRACT C)
//! on a canary clone restored from a real backup, with a fleet of two pinned servers.

use std::collections::BTreeMap;

use gameplane_api::names;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube::api::{Api, ObjectMeta, PostParams};
use serde_json::json;

use super::context::{CaseContext, CaseError, expect, expect_eq};
use super::fixture::{self, FixtureOptions};
use crate::qualify::{self, Outcome, Plan, Qualification, Rollback};
use crate::wait::{await_object, conditions};

const SOURCE: &str = "mc-a";
const OTHER: &str = "mc-b";

/// Resolves the fixture game's tags to digest-pinned references by running them once and
/// reading the `imageID` the node reports: the same on every backend, and exactly what the
/// "pod runs the pinned image" gate later compares against.
async fn pin_by_digest(
    ctx: &CaseContext<'_>,
    versions: &[&str],
) -> Result<BTreeMap<String, String>, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = "resolve-digests";
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            containers: versions
                .iter()
                .enumerate()
                .map(|(i, v)| Container {
                    name: format!("v{i}"),
                    image: Some(format!("{}:{v}", fixture::GAME_IMAGE_REPO)),
                    args: Some(vec!["--help".into()]),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    pods.create(&PostParams::default(), &pod)
        .await
        .map_err(CaseError::kube(
            "create Pod",
            format!("{}/{name}", ctx.namespace),
        ))?;
    let done = await_object(&pods, name, conditions::pod_succeeded(), ctx.bounds.settle).await;
    let _ = pods.delete(name, &Default::default()).await;
    let done = done?;
    let statuses = done
        .status
        .and_then(|s| s.container_statuses)
        .unwrap_or_default();
    let mut pinned = BTreeMap::new();
    for (i, v) in versions.iter().enumerate() {
        let id = statuses
            .iter()
            .find(|c| c.name == format!("v{i}"))
            .map(|c| c.image_id.clone())
            .unwrap_or_default();
        let digest = id
            .rsplit_once('@')
            .map(|(_, d)| d.to_string())
            .ok_or_else(|| {
                CaseError::assertion(
                    format!("pod {}/{name} container v{i}", ctx.namespace),
                    "imageID",
                    "repo@sha256:…",
                    &id,
                )
            })?;
        pinned.insert(
            v.to_string(),
            format!("{}@{digest}", fixture::GAME_IMAGE_REPO),
        );
    }
    Ok(pinned)
}

/// Fixture with two pinned, running fleet members; returns their pod UIDs.
async fn fleet(
    ctx: &CaseContext<'_>,
    candidates: &[&str],
) -> Result<BTreeMap<String, Option<String>>, CaseError> {
    let pinned = if candidates.is_empty() {
        BTreeMap::new()
    } else {
        ctx.step("pin candidates by digest", pin_by_digest(ctx, candidates))
            .await?
    };
    let options = FixtureOptions {
        pinned,
        ..Default::default()
    };
    let fx = ctx
        .step("install fixture", fixture::install(ctx, &options))
        .await?;
    ctx.step("create fleet", async {
        for s in [SOURCE, OTHER] {
            fixture::create_server(ctx, &fx, s, fixture::VERSION_STABLE, false).await?;
        }
        for s in [SOURCE, OTHER] {
            fixture::await_server_phase(ctx, s, "Running").await?;
            fixture::await_server_pod_ready(ctx, s).await?;
        }
        Ok(json!({"fleet": [SOURCE, OTHER], "version": fixture::VERSION_STABLE}))
    })
    .await?;
    fleet_pod_uids(ctx).await
}

async fn fleet_pod_uids(
    ctx: &CaseContext<'_>,
) -> Result<BTreeMap<String, Option<String>>, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut uids = BTreeMap::new();
    for s in [SOURCE, OTHER] {
        let name = names::pod(s);
        let uid = pods
            .get_opt(&name)
            .await
            .map_err(CaseError::kube(
                "get Pod",
                format!("{}/{name}", ctx.namespace),
            ))?
            .and_then(|p| p.metadata.uid);
        uids.insert(s.to_string(), uid);
    }
    Ok(uids)
}

fn plan(ctx: &CaseContext<'_>, candidate: &str, rollback: Rollback) -> Plan {
    Plan {
        template: ctx.namespace.clone(),
        source: SOURCE.into(),
        fleet: vec![SOURCE.into(), OTHER.into()],
        batch_size: 1,
        candidate: candidate.into(),
        rollback,
    }
}

async fn run(ctx: &CaseContext<'_>, plan: &Plan) -> Result<Qualification, CaseError> {
    let q = qualify::qualify(ctx, plan).await?;
    ctx.recorder.step(
        "qualification outcome",
        json!({"outcome": q.outcome, "gates": q.gates}),
    )?;
    Ok(q)
}

/// Asserts a halted qualification left the fleet untouched.
async fn assert_halted_untouched(
    ctx: &CaseContext<'_>,
    q: &Qualification,
    before: &BTreeMap<String, Option<String>>,
    gate_fragment: &str,
) -> Result<(), CaseError> {
    let after = fleet_pod_uids(ctx).await?;
    ctx.step("assess", async {
        let o = format!("qualification in {}", ctx.namespace);
        match &q.outcome {
            Outcome::Halted { gate, .. } => expect(
                gate.contains(gate_fragment),
                &o,
                "failed gate",
                gate_fragment,
                gate,
            )?,
            other => {
                return Err(CaseError::assertion(
                    &o,
                    "outcome",
                    "halted",
                    format!("{other:?}"),
                ));
            }
        }
        expect_eq(&o, "fleet pod UIDs (untouched)", before, &after)?;
        let servers: Api<gameplane_api::gameserver::GameServer> =
            Api::namespaced(ctx.client.clone(), &ctx.namespace);
        for s in [SOURCE, OTHER] {
            let gs = servers.get(s).await.map_err(CaseError::kube(
                "get GameServer",
                format!("{}/{s}", ctx.namespace),
            ))?;
            expect_eq(
                &format!("gameserver {}/{s}", ctx.namespace),
                "spec.version",
                Some(fixture::VERSION_STABLE.to_string()),
                gs.spec.version,
            )?;
        }
        Ok(json!({"fleet_pod_uids": after, "outcome": q.outcome}))
    })
    .await?;
    Ok(())
}

/// Unpullable candidate: the clone fails ImagePull within a bounded time; the batch halts; fleet
/// pod UIDs are unchanged.
pub async fn unpullable_candidate(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let before = fleet(ctx, &[]).await?;
    let q = run(
        ctx,
        &plan(ctx, fixture::VERSION_UNPULLABLE, Rollback::Compatible),
    )
    .await?;
    ctx.uses("pod image pull state");
    assert_halted_untouched(ctx, &q, &before, "pinned image").await
}

/// HTTP-only candidate: serves the world marker over HTTP but fails the real Minecraft
/// handshake; the journal keeps only the baseline receipt; promotion is blocked.
pub async fn http_only_candidate(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let before = fleet(ctx, &[fixture::VERSION_HTTP_ONLY]).await?;
    let q = run(
        ctx,
        &plan(ctx, fixture::VERSION_HTTP_ONLY, Rollback::Compatible),
    )
    .await?;
    assert_halted_untouched(ctx, &q, &before, "Minecraft join").await
}

/// Format-changing update, compatible rollback: PVC UIDs unchanged; the save is readable
/// directly after re-pinning.
pub async fn format_change_compatible_rollback(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    fleet(ctx, &[fixture::VERSION_COMPAT]).await?;
    let q = run(
        ctx,
        &plan(ctx, fixture::VERSION_COMPAT, Rollback::Compatible),
    )
    .await?;
    assert_promoted(ctx, &q).await
}

/// Format-changing update, restore-required rollback: restore from the pre-candidate snapshot;
/// the candidate-only marker is gone; primary and extra world values are back; mods keep the
/// clone's value; PVC UIDs unchanged.
pub async fn format_change_restore_required_rollback(
    ctx: &CaseContext<'_>,
) -> Result<(), CaseError> {
    fleet(ctx, &[fixture::VERSION_FORMAT]).await?;
    let q = run(
        ctx,
        &plan(ctx, fixture::VERSION_FORMAT, Rollback::RestoreRequired),
    )
    .await?;
    // The candidate really changed the format on the clone: otherwise the restore proves nothing.
    let migrated = q.gates.iter().any(|g| {
        g.evidence["claims"].as_object().is_some_and(|cs| {
            cs.values()
                .any(|c| c["format"] == json!(2) && c["candidate_marker"] == json!(true))
        })
    });
    expect(
        migrated,
        &format!("gameserver {}/{}", ctx.namespace, q.clone),
        "world format under the candidate",
        "format 2 with the candidate-only marker",
        &q.gates,
    )?;
    assert_promoted(ctx, &q).await
}

async fn assert_promoted(ctx: &CaseContext<'_>, q: &Qualification) -> Result<(), CaseError> {
    ctx.step("assess", async {
        let o = format!("qualification in {}", ctx.namespace);
        expect(
            matches!(q.outcome, Outcome::Promoted { batches: 2 }),
            &o,
            "outcome",
            "promoted in 2 batches",
            &q.outcome,
        )?;
        expect(!q.clone_pvcs_before.is_empty(), &o, "clone PVCs observed", "some", &q.clone_pvcs_before)?;
        Ok(json!({"outcome": q.outcome, "clone_pvcs_before": q.clone_pvcs_before, "clone_pvcs_after": q.clone_pvcs_after}))
    })
    .await?;
    Ok(())
}
