//! The rollout qualification procedure (CONTRACT part C): rehearse a candidate template version
//! on a canary clone restored from a real backup, prove its rollback, and only then promote the
//! fleet in gated batches — or halt without touching any fleet member.
//!
//! Fleet progress lives in the harness's journal (receipts), never in a server's lifecycle
//! owner, so a failed canary cannot block a restore. A halted qualification leaves the baseline
//! receipt and the failed gate's evidence, and no `promotion` receipt.

use std::collections::BTreeMap;
use std::time::Duration;

use gameplane_api::gameserver::GameServer;
use gameplane_api::gametemplate::GameTemplate;
use gameplane_api::names;
use gameplane_api::restore::Restore;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cases::context::{CaseContext, CaseError, expect, expect_eq};
use crate::cases::fixture::{self, Markers};
use crate::evidence::pvc_table::{PvcObservation, PvcPhase};
use crate::probe::minecraft::{self, Depth};
use crate::wait::{Condition, Verdict, await_condition, await_object, conditions};

/// How the candidate must be rolled back on the clone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rollback {
    /// Re-pin the previous version; the save must be readable directly.
    Compatible,
    /// Restore the pre-candidate snapshot, then re-pin; the candidate-only marker must be gone.
    RestoreRequired,
}

/// What to qualify.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The GameTemplate holding the candidate version.
    pub template: String,
    /// The fleet member whose backup seeds the canary clone.
    pub source: String,
    /// Fleet members, promoted in this order.
    pub fleet: Vec<String>,
    /// Members per promotion batch (at least 1).
    pub batch_size: usize,
    /// The candidate version id (its image must be pinned by digest).
    pub candidate: String,
    pub rollback: Rollback,
}

/// One gate's result.
#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    pub name: String,
    pub passed: bool,
    pub evidence: Value,
}

/// How a qualification ended.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Every gate passed and every batch was promoted.
    Promoted { batches: usize },
    /// A gate failed: nothing (more) was promoted.
    Halted { gate: String, reason: String },
}

/// The whole record of a qualification.
#[derive(Debug, Clone, Serialize)]
pub struct Qualification {
    pub plan: Plan,
    pub clone: String,
    pub baseline: Vec<MemberBaseline>,
    pub snapshot: Option<String>,
    pub gates: Vec<Gate>,
    pub clone_pvcs_before: Vec<PvcObservation>,
    pub clone_pvcs_after: Vec<PvcObservation>,
    pub outcome: Outcome,
}

/// One fleet member at the start.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MemberBaseline {
    pub server: String,
    pub version: Option<String>,
    pub pod_uid: Option<String>,
    pub pvcs: BTreeMap<String, String>,
    pub digests: BTreeMap<String, String>,
}

/// The clone of `source` the candidate is rehearsed on.
pub fn clone_name(source: &str) -> String {
    format!("{source}-canary")
}

const GAME_PORT: u16 = 25565;
const RCON_PORT: u16 = 25575;

fn gs_api(ctx: &CaseContext<'_>) -> Api<GameServer> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

async fn get_server(ctx: &CaseContext<'_>, name: &str) -> Result<GameServer, CaseError> {
    gs_api(ctx).get(name).await.map_err(CaseError::kube(
        "get GameServer",
        format!("{}/{name}", ctx.namespace),
    ))
}

async fn patch_server(ctx: &CaseContext<'_>, name: &str, patch: Value) -> Result<(), CaseError> {
    gs_api(ctx)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(CaseError::kube(
            "patch GameServer",
            format!("{}/{name}", ctx.namespace),
        ))?;
    Ok(())
}

async fn pod_uid(ctx: &CaseContext<'_>, server: &str) -> Result<Option<String>, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = names::pod(server);
    Ok(pods
        .get_opt(&name)
        .await
        .map_err(CaseError::kube(
            "get Pod",
            format!("{}/{name}", ctx.namespace),
        ))?
        .and_then(|p| p.metadata.uid))
}

fn world_claims(server: &str) -> Vec<String> {
    vec![
        names::data_pvc(server),
        names::extra_pvc(server, fixture::EXTRA_WORLD),
    ]
}

/// Quiesces the game over RCON, runs `unit`, and re-enables saving whatever happened, so a
/// read-back sees a whole save rather than one torn by autosave.
async fn with_saves_off<T>(
    ctx: &CaseContext<'_>,
    server: &str,
    unit: impl std::future::Future<Output = Result<T, CaseError>>,
) -> Result<T, CaseError> {
    rcon(ctx, server, &["save-off", "save-all flush"]).await?;
    let out = unit.await;
    let _ = rcon(ctx, server, &["save-on"]).await;
    out
}

/// Sends RCON `commands` to a server's game, returning the replies.
pub async fn rcon(
    ctx: &CaseContext<'_>,
    server: &str,
    commands: &[&str],
) -> Result<Vec<String>, CaseError> {
    let pod = names::pod(server);
    let reach = ctx
        .backend
        .reach(&ctx.namespace, &pod, RCON_PORT)
        .await
        .map_err(|e| {
            CaseError::Setup(format!(
                "cannot reach RCON of pod {}/{pod}: {e}",
                ctx.namespace
            ))
        })?;
    let object = format!("RCON of pod {}/{pod} at {}", ctx.namespace, reach.addr);
    let mut client = fixture_game::rcon::RconClient::connect_with_timeout(
        reach.addr,
        fixture::RCON_PASSWORD,
        ctx.bounds.probe,
    )
    .await
    .map_err(|e| CaseError::assertion(&object, "login", "accepted", e))?;
    let mut replies = Vec::new();
    for c in commands {
        let reply = client
            .command(c)
            .await
            .map_err(|e| CaseError::assertion(&object, format!("reply to {c}"), "a reply", e))?;
        replies.push(reply);
    }
    Ok(replies)
}

/// Joins the server's game with the real Minecraft protocol up to `depth`.
pub async fn join(
    ctx: &CaseContext<'_>,
    server: &str,
    depth: Depth,
) -> Result<minecraft::MinecraftVerdict, CaseError> {
    let pod = names::pod(server);
    let reach = ctx
        .backend
        .reach(&ctx.namespace, &pod, GAME_PORT)
        .await
        .map_err(|e| {
            CaseError::Setup(format!(
                "cannot reach the game port of pod {}/{pod}: {e}",
                ctx.namespace
            ))
        })?;
    Ok(minecraft::probe(reach.addr, depth, ctx.bounds.probe).await)
}

async fn baseline(ctx: &CaseContext<'_>, plan: &Plan) -> Result<Vec<MemberBaseline>, CaseError> {
    let mut members = Vec::new();
    for (i, member) in plan.fleet.iter().enumerate() {
        let gs = get_server(ctx, member).await?;
        let pvcs = fixture::server_pvcs(ctx, member).await?;
        let claims = world_claims(member);
        let readback = crate::probe::readback::read_back(
            &ctx.client,
            &ctx.namespace,
            &format!("baseline-{i}"),
            &claims,
            ctx.bounds.settle,
        )
        .await?;
        members.push(MemberBaseline {
            server: member.clone(),
            version: gs.spec.version.clone(),
            pod_uid: pod_uid(ctx, member).await?,
            pvcs: pvcs.into_iter().map(|p| (p.claim, p.uid)).collect(),
            digests: readback
                .claims
                .into_iter()
                .map(|(c, i)| (c, i.digest))
                .collect(),
        });
    }
    Ok(members)
}

/// Refuses members that track the template default (they would adopt automatically) and a
/// candidate whose image is not pinned by digest.
async fn preflight(ctx: &CaseContext<'_>, plan: &Plan) -> Result<Value, String> {
    let mut floating = Vec::new();
    for member in &plan.fleet {
        let gs = get_server(ctx, member).await.map_err(|e| e.to_string())?;
        if gs.spec.version.as_deref().unwrap_or("").is_empty() {
            floating.push(member.clone());
        }
    }
    if !floating.is_empty() {
        return Err(format!(
            "fleet members {floating:?} track the template default and would adopt the candidate automatically; pin spec.version on each"
        ));
    }
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    let t = templates
        .get(&plan.template)
        .await
        .map_err(|e| format!("cannot read GameTemplate {}: {e}", plan.template))?;
    let version = t
        .spec
        .versions
        .iter()
        .find(|v| v.id == plan.candidate)
        .ok_or_else(|| {
            format!(
                "GameTemplate {} has no version {:?}",
                plan.template, plan.candidate
            )
        })?;
    if !version.image.contains("@sha256:") {
        return Err(format!(
            "candidate {} image {} is not pinned by digest; reference it as repo@sha256:…",
            plan.candidate, version.image
        ));
    }
    Ok(json!({"candidate": plan.candidate, "image": version.image, "fleet_pinned": plan.fleet}))
}

fn candidate_digest(image: &str) -> &str {
    image.rsplit_once('@').map(|(_, d)| d).unwrap_or(image)
}

/// Runs the qualification. Gate failures are an [`Outcome::Halted`], not an error: an error
/// means the procedure itself could not run.
pub async fn qualify(ctx: &CaseContext<'_>, plan: &Plan) -> Result<Qualification, CaseError> {
    let clone = clone_name(&plan.source);
    let mut q = Qualification {
        plan: plan.clone(),
        clone: clone.clone(),
        baseline: vec![],
        snapshot: None,
        gates: vec![],
        clone_pvcs_before: vec![],
        clone_pvcs_after: vec![],
        outcome: Outcome::Promoted { batches: 0 },
    };
    ctx.uses("fleet pod UIDs");
    ctx.uses("PVC UIDs");
    q.baseline = ctx.step("baseline receipt", baseline(ctx, plan)).await?;

    let pre = preflight(ctx, plan).await;
    let pre_ok = pre.is_ok();
    let evidence = match pre {
        Ok(v) => v,
        Err(reason) => json!({"reason": reason}),
    };
    ctx.step("gate: preflight", async { Ok(evidence.clone()) })
        .await?;
    if !pre_ok {
        return Ok(halt(q, "preflight", &evidence, None));
    }
    let source = get_server(ctx, &plan.source).await?;
    let previous = source.spec.version.clone().unwrap_or_default();

    // 3. Back up the source, clone it, restore the backup into the clone.
    let backup_name = format!("qualify-{}", plan.source);
    let snapshot = ctx
        .step("back up the source", async {
            fixture::create_backup(ctx, &backup_name, &plan.source, true).await?;
            let api: Api<gameplane_api::backup::Backup> =
                Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let b = await_object(
                &api,
                &backup_name,
                conditions::succeeded(),
                ctx.bounds.settle,
            )
            .await?;
            Ok(b.status.and_then(|s| s.snapshot_id).unwrap_or_default())
        })
        .await?;
    ctx.recorder.restic_snapshot(
        "back up the source",
        &snapshot,
        json!({"backup": backup_name, "server": plan.source}),
    )?;
    ctx.uses("restic snapshots");
    q.snapshot = Some(snapshot.clone());
    ctx.step("create the clone", async {
        let markers = Markers {
            mods: format!("mods-{clone}-{}", ctx.namespace),
            ..Markers::for_server(&ctx.namespace, &clone)
        };
        let mut gs = fixture::server(&clone, &plan.template, &previous, &markers, true);
        gs.metadata.labels = Some(BTreeMap::from([(
            "rehearsal.local/canary-of".into(),
            plan.source.clone(),
        )]));
        gs_api(ctx)
            .create(&Default::default(), &gs)
            .await
            .map_err(CaseError::kube(
                "create GameServer",
                format!("{}/{clone}", ctx.namespace),
            ))?;
        fixture::await_server_phase(ctx, &clone, "Suspended").await?;
        Ok(json!({"clone": clone, "version": previous, "suspended": true}))
    })
    .await?;
    restore_into(
        ctx,
        "restore the backup into the clone",
        "qualify-clone",
        &backup_name,
        &clone,
    )
    .await?;
    q.clone_pvcs_before = fixture::server_pvcs(ctx, &clone).await?;
    ctx.observe_pvcs(PvcPhase::Before, &q.clone_pvcs_before)?;

    // 4. The candidate on the clone only, behind gates.
    let template: Api<GameTemplate> = Api::all(ctx.client.clone());
    let candidate_image = template
        .get(&plan.template)
        .await
        .map_err(CaseError::kube("get GameTemplate", plan.template.clone()))?
        .spec
        .versions
        .into_iter()
        .find(|v| v.id == plan.candidate)
        .map(|v| v.image)
        .unwrap_or_default();
    ctx.step("apply the candidate to the clone", async {
        patch_server(
            ctx,
            &clone,
            json!({"spec": {"version": plan.candidate, "suspend": false}}),
        )
        .await?;
        Ok(json!({"clone": clone, "version": plan.candidate, "image": candidate_image}))
    })
    .await?;
    let gates = candidate_gates(ctx, &clone, &candidate_image).await?;
    let failed = gates.iter().find(|g| !g.passed).cloned();
    q.gates.extend(gates);
    if let Some(gate) = failed {
        return Ok(halt(q, &gate.name, &gate.evidence, None));
    }

    // 5. Rollback evidence on the clone.
    let rollback = ctx
        .step(
            "rollback on the clone",
            rollback_clone(ctx, plan, &clone, &previous, &backup_name),
        )
        .await?;
    q.gates.push(Gate {
        name: "rollback".into(),
        passed: true,
        evidence: rollback,
    });
    q.clone_pvcs_after = fixture::server_pvcs(ctx, &clone).await?;
    ctx.observe_pvcs(PvcPhase::After, &q.clone_pvcs_after)?;
    for before in &q.clone_pvcs_before {
        let after = q.clone_pvcs_after.iter().find(|a| a.claim == before.claim);
        expect_eq(
            &format!("pvc {}/{}", ctx.namespace, before.claim),
            "metadata.uid (before candidate / after candidate and rollback)",
            Some(before.uid.clone()),
            after.map(|a| a.uid.clone()),
        )?;
    }

    // 6. Promote in gated batches.
    let mut batches = 0;
    for (i, batch) in plan.fleet.chunks(plan.batch_size.max(1)).enumerate() {
        let name = format!("promotion batch {}", i + 1);
        let result = ctx
            .step(&name, async {
                let mut promoted = Vec::new();
                for member in batch {
                    patch_server(ctx, member, json!({"spec": {"version": plan.candidate}})).await?;
                }
                for member in batch {
                    let gates = member_gates(ctx, member, &candidate_image).await?;
                    promoted.push(json!({"server": member, "gates": gates}));
                }
                Ok(promoted)
            })
            .await?;
        let all_passed = result.iter().all(|m| {
            m["gates"]
                .as_array()
                .is_some_and(|gs| gs.iter().all(|g| g["passed"] == json!(true)))
        });
        ctx.recorder.step(
            &name,
            json!({"kind": "promotion", "batch": i + 1, "members": batch, "passed": all_passed}),
        )?;
        batches += 1;
        if !all_passed {
            return Ok(halt(q, &name, &json!(result), Some(batches)));
        }
    }
    q.outcome = Outcome::Promoted { batches };
    Ok(q)
}

fn halt(
    mut q: Qualification,
    gate: &str,
    evidence: &Value,
    _batches: Option<usize>,
) -> Qualification {
    q.outcome = Outcome::Halted {
        gate: gate.to_string(),
        reason: evidence.to_string(),
    };
    q
}

async fn restore_into(
    ctx: &CaseContext<'_>,
    step: &str,
    restore: &str,
    backup: &str,
    server: &str,
) -> Result<String, CaseError> {
    let id = ctx
        .step(step, async {
            fixture::create_restore(ctx, restore, backup, server).await?;
            let api: Api<Restore> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let r = await_object(&api, restore, conditions::succeeded(), ctx.bounds.settle).await?;
            Ok(r.status.and_then(|s| s.snapshot_id).unwrap_or_default())
        })
        .await?;
    ctx.recorder.restic_restore(
        step,
        restore,
        &id,
        json!({"backup": backup, "server": server}),
    )?;
    Ok(id)
}

/// The clone's gates: pinned image runs, a real join reaches play, a save succeeds, the world
/// reads back, and its format marker is recorded. Each writes a receipt; the first failure
/// stops the rest (they would only repeat it).
async fn candidate_gates(
    ctx: &CaseContext<'_>,
    clone: &str,
    image: &str,
) -> Result<Vec<Gate>, CaseError> {
    member_gates_inner(ctx, clone, image, true).await
}

async fn member_gates(
    ctx: &CaseContext<'_>,
    member: &str,
    image: &str,
) -> Result<Vec<Gate>, CaseError> {
    member_gates_inner(ctx, member, image, false).await
}

async fn member_gates_inner(
    ctx: &CaseContext<'_>,
    server: &str,
    image: &str,
    read_back: bool,
) -> Result<Vec<Gate>, CaseError> {
    let mut gates = Vec::new();
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod_name = names::pod(server);
    let pulled = await_pod_running_image(ctx, &pods, &pod_name, image).await;
    let (passed, evidence) = match &pulled {
        Ok(pod) => {
            let image_id = pod
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.name == names::containers::GAME))
                .map(|c| c.image_id.clone())
                .unwrap_or_default();
            let digest = candidate_digest(image);
            (
                image_id.ends_with(digest),
                json!({"pod_uid": pod.metadata.uid, "imageID": image_id, "pinned": image}),
            )
        }
        Err(e) => (false, json!({"error": e.to_string()})),
    };
    ctx.uses("container imageID");
    let gate = record_gate(ctx, server, "pod runs the pinned image", passed, evidence).await?;
    gates.push(gate);
    if !passed {
        return Ok(gates);
    }

    let verdict = join(ctx, server, Depth::Play).await?;
    ctx.uses("Minecraft join (play state)");
    let gate = record_gate(
        ctx,
        server,
        "real Minecraft join reaches play",
        verdict.ok,
        json!({"verdict": verdict.line(), "detail": verdict}),
    )
    .await?;
    gates.push(gate);
    if !verdict.ok {
        // Say what the port does serve, if anything: the HTTP-only candidate's tell.
        if let Ok(reach) = ctx
            .backend
            .reach(&ctx.namespace, &pod_name, GAME_PORT)
            .await
            && let Ok(http) =
                crate::probe::http_marker::probe(reach.addr, "/", "", ctx.bounds.probe).await
        {
            ctx.recorder.step(
                &format!("{server}: what the game port serves"),
                json!({"http": http}),
            )?;
        }
        return Ok(gates);
    }

    let saved = rcon(ctx, server, &["save-all flush"]).await;
    let (passed, evidence) = match saved {
        Ok(replies) => (
            replies.iter().any(|r| r.contains("Saved the game")),
            json!({"replies": replies}),
        ),
        Err(e) => (false, json!({"error": e.to_string()})),
    };
    let gate = record_gate(ctx, server, "a save succeeds", passed, evidence).await?;
    gates.push(gate);
    if !passed || !read_back {
        return Ok(gates);
    }

    let claims = world_claims(server);
    let readback = with_saves_off(ctx, server, async {
        Ok(crate::probe::readback::read_back(
            &ctx.client,
            &ctx.namespace,
            &format!("{server}-gate-read"),
            &claims,
            ctx.bounds.settle,
        )
        .await?)
    })
    .await;
    ctx.uses("world read back from the volumes");
    let (passed, evidence) = match readback {
        Ok(r) => {
            let ok = r.claims.values().all(|i| !i.torn && i.marker.is_some());
            let formats: BTreeMap<_, _> = r
                .claims
                .iter()
                .map(|(c, i)| (c.clone(), json!({"format": i.format, "candidate_marker": i.candidate_marker, "marker": i.marker})))
                .collect();
            (ok, json!({"claims": formats}))
        }
        Err(e) => (false, json!({"error": e.to_string()})),
    };
    let gate = record_gate(
        ctx,
        server,
        "world data reads back (format marker recorded)",
        passed,
        evidence,
    )
    .await?;
    gates.push(gate);
    Ok(gates)
}

/// Waits until the server's pod runs `image` in its game container and is Ready. The operator
/// first has to roll the StatefulSet, so an old Ready pod does not count; a pull failure is
/// terminal and surfaces within the pull-failure bound.
async fn await_pod_running_image(
    ctx: &CaseContext<'_>,
    pods: &Api<Pod>,
    pod_name: &str,
    image: &str,
) -> Result<Pod, CaseError> {
    let ready = conditions::pod_ready();
    let wanted = image.to_string();
    let condition = Condition::new(
        format!("game container image {wanted} and Ready"),
        move |pod: Option<&Pod>| {
            let image = pod
                .and_then(|p| p.spec.as_ref())
                .and_then(|s| {
                    s.containers
                        .iter()
                        .find(|c| c.name == names::containers::GAME)
                })
                .and_then(|c| c.image.clone());
            if image.as_deref() != Some(wanted.as_str()) {
                return Verdict::Pending;
            }
            ready.check(pod)
        },
    );
    let bound = ctx.bounds.pull_failure.max(Duration::from_secs(1));
    Ok(await_object(pods, pod_name, condition, bound).await?)
}

/// The image a template version runs.
async fn version_image(
    ctx: &CaseContext<'_>,
    template: &str,
    version: &str,
) -> Result<String, CaseError> {
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    let t = templates
        .get(template)
        .await
        .map_err(CaseError::kube("get GameTemplate", template.to_string()))?;
    t.spec
        .versions
        .iter()
        .find(|v| v.id == version)
        .map(|v| v.image.clone())
        .ok_or_else(|| {
            CaseError::assertion(
                format!("gametemplate {template}"),
                "versions[].id",
                version,
                "absent",
            )
        })
}

async fn record_gate(
    ctx: &CaseContext<'_>,
    server: &str,
    name: &str,
    passed: bool,
    evidence: Value,
) -> Result<Gate, CaseError> {
    let step = format!("gate: {name} ({server})");
    ctx.recorder.step(
        &step,
        json!({"gate": name, "server": server, "passed": passed, "evidence": evidence}),
    )?;
    Ok(Gate {
        name: format!("{name} ({server})"),
        passed,
        evidence,
    })
}

async fn rollback_clone(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    clone: &str,
    previous: &str,
    backup: &str,
) -> Result<Value, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod_name = names::pod(clone);
    match plan.rollback {
        Rollback::Compatible => {
            patch_server(ctx, clone, json!({"spec": {"version": previous}})).await?;
        }
        Rollback::RestoreRequired => {
            patch_server(
                ctx,
                clone,
                json!({"spec": {"version": previous, "suspend": true}}),
            )
            .await?;
            fixture::await_server_phase(ctx, clone, "Suspended").await?;
            await_condition(&pods, &pod_name, conditions::deleted(), ctx.bounds.settle).await?;
            restore_into(
                ctx,
                "restore the pre-candidate snapshot",
                "qualify-rollback",
                backup,
                clone,
            )
            .await?;
            patch_server(ctx, clone, json!({"spec": {"suspend": false}})).await?;
        }
    }
    // The clone ran the candidate until now: wait for the pod of the previous version, not
    // the candidate's pod that is still Ready while the StatefulSet rolls.
    let previous_image = version_image(ctx, &plan.template, previous).await?;
    let pod = await_pod_running_image(ctx, &pods, &pod_name, &previous_image).await?;
    fixture::await_server_phase(ctx, clone, "Running").await?;
    let verdict = join(ctx, clone, Depth::Play).await?;
    expect(
        verdict.ok,
        &format!("gameserver {}/{clone}", ctx.namespace),
        "join after rollback",
        "play state",
        verdict.line(),
    )?;
    let mut claims = world_claims(clone);
    let mods_claim = names::mods_pvc(clone, previous);
    claims.push(mods_claim.clone());
    let readback = with_saves_off(ctx, clone, async {
        Ok(crate::probe::readback::read_back(
            &ctx.client,
            &ctx.namespace,
            "rollback-read",
            &claims,
            ctx.bounds.settle,
        )
        .await?)
    })
    .await?;
    let source_markers = Markers::for_server(&ctx.namespace, &plan.source);
    let clone_mods = format!("mods-{clone}-{}", ctx.namespace);
    let data = names::data_pvc(clone);
    let extra = names::extra_pvc(clone, fixture::EXTRA_WORLD);
    let get = |c: &str| readback.claims.get(c).cloned();
    let o = |c: &str| format!("pvc {}/{c}", ctx.namespace);
    let primary = get(&data);
    expect_eq(
        &o(&data),
        "format (readable by the previous version)",
        Some(1),
        primary.as_ref().and_then(|i| i.format),
    )?;
    expect_eq(
        &o(&data),
        "candidate-only marker",
        false,
        primary.as_ref().is_some_and(|i| i.candidate_marker),
    )?;
    expect_eq(
        &o(&data),
        "world marker",
        Some(source_markers.primary.clone()),
        primary.as_ref().and_then(|i| i.marker.clone()),
    )?;
    expect_eq(
        &o(&extra),
        "extra world marker",
        Some(source_markers.extra.clone()),
        get(&extra).and_then(|i| i.marker),
    )?;
    expect_eq(
        &o(&mods_claim),
        "mods marker (the clone's own: mods are not backed up)",
        Some(clone_mods),
        get(&mods_claim).and_then(|i| i.marker),
    )?;
    Ok(json!({
        "rollback": plan.rollback,
        "pod_uid": pod.metadata.uid,
        "join": verdict.line(),
        "readback": readback,
    }))
}
