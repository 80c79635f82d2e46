//! The rollout qualification procedure (CONTRACT part C): rehearse a candidate template version
//! on a canary clone restored from a real backup, prove its rollback, and only then promote the
//! fleet in gated batches — or halt without touching any fleet member.
//!
//! Fleet progress lives in the harness's journal (receipts), never in a server's lifecycle
//! owner, so a failed canary cannot block a restore. A halted qualification leaves the baseline
//! receipt and the failed gate's evidence, and no `promotion` receipt.

pub mod identity;
pub mod tidy;

use std::collections::BTreeMap;
use std::time::Duration;

use gameplane_api::backup::{Backup, BackupSpec, RepoRef, ServerRef};
use gameplane_api::gameserver::GameServer;
use gameplane_api::gametemplate::GameTemplate;
use gameplane_api::names;
use gameplane_api::restore::{BackupRef, Restore, RestoreSpec};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cases::context::{CaseContext, CaseError, HarnessMutant};
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
    /// Labels every object the run creates ([`tidy::RUN_LABEL`]); a valid label value.
    pub run_id: String,
    /// The Secret naming the restic repository the source's backup goes to (key `repo`).
    pub repo_secret: String,
}

impl Plan {
    /// The Backup of the source that seeds the clone.
    pub fn backup_name(&self) -> String {
        format!("qualify-{}", self.source)
    }
    /// The Restore that seeds the clone, and the one that rolls it back.
    pub fn restore_names(&self) -> [String; 2] {
        [
            format!("qualify-{}-clone", self.source),
            format!("qualify-{}-rollback", self.source),
        ]
    }
}

/// The gates, by name (CONTRACT C.2, C.4, C.5).
pub mod gates {
    pub const PREFLIGHT: &str = "preflight";
    pub const IMAGE: &str = "pod runs the pinned image";
    pub const JOIN: &str = "real Minecraft join reaches play";
    pub const SAVE: &str = "a save succeeds";
    pub const READ_BACK: &str = "world data reads back (format marker recorded)";
    pub const ROLLBACK: &str = "rollback";
}

/// One gate's result.
#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    /// One of [`gates`].
    pub name: String,
    /// The server it was judged on (the clone or a fleet member).
    pub server: String,
    pub passed: bool,
    /// One line: what was observed that failed it.
    pub reason: Option<String>,
    pub evidence: Value,
}

/// How a qualification ended.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Every gate passed and every batch was promoted.
    Promoted { batches: usize },
    /// A gate failed: nothing (more) was promoted.
    Halted {
        /// One of [`gates`], or `promotion batch N`.
        gate: String,
        /// The server the gate failed on (none for the preflight).
        server: Option<String>,
        /// What was observed, in one line.
        reason: String,
        /// Batches fully promoted before the halt.
        batches_promoted: usize,
    },
}

impl Outcome {
    /// `promote N batches` or `halted at <gate> (<server>): <reason>`.
    pub fn line(&self) -> String {
        match self {
            Outcome::Promoted { batches } => format!("promoted in {batches} batch(es)"),
            Outcome::Halted {
                gate,
                server,
                reason,
                batches_promoted,
            } => format!(
                "halted at gate {gate:?}{} after {batches_promoted} promoted batch(es): {reason}",
                server
                    .as_ref()
                    .map(|s| format!(" on {s}"))
                    .unwrap_or_default()
            ),
        }
    }
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
    /// Promotion receipts written (one per batch promoted or attempted).
    pub promotion_receipts: usize,
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

/// Patches GameServer `name`; returns its generation after the patch.
async fn patch_server(
    ctx: &CaseContext<'_>,
    name: &str,
    patch: Value,
) -> Result<Option<i64>, CaseError> {
    let gs = gs_api(ctx)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(CaseError::kube(
            "patch GameServer",
            format!("{}/{name}", ctx.namespace),
        ))?;
    Ok(gs.metadata.generation)
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

/// The depth the join gate asks for: play, unless a harness mutant weakened it.
fn join_gate_depth(ctx: &CaseContext<'_>) -> Depth {
    if ctx.harness_mutant(HarnessMutant::JoinStatusOnly) {
        Depth::Query
    } else if ctx.harness_mutant(HarnessMutant::JoinLoginOnly) {
        Depth::Login
    } else {
        Depth::Play
    }
}

async fn baseline(ctx: &CaseContext<'_>, plan: &Plan) -> Result<Vec<MemberBaseline>, CaseError> {
    let mut members = Vec::new();
    for (i, member) in plan.fleet.iter().enumerate() {
        let gs = get_server(ctx, member).await?;
        let pvcs = fixture::server_pvcs(ctx, member).await?;
        let claims = world_claims(member);
        let readback = crate::probe::readback::read_back_labelled(
            &ctx.client,
            &ctx.namespace,
            &format!("baseline-{i}"),
            &claims,
            ctx.bounds.settle,
            &tidy::labels(&plan.run_id),
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

/// Why the preflight refuses, as one line.
#[derive(Debug, Clone)]
struct Refusal(String);

/// Refuses members that track the template default (they would adopt automatically) and a
/// candidate whose image is not pinned by digest.
async fn preflight(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> Result<Result<Value, Refusal>, CaseError> {
    let mut floating = Vec::new();
    for member in &plan.fleet {
        let gs = get_server(ctx, member).await?;
        if gs.spec.version.as_deref().unwrap_or("").is_empty() {
            floating.push(member.clone());
        }
    }
    if !floating.is_empty() && !ctx.harness_mutant(HarnessMutant::DefaultTrackingAllowed) {
        return Ok(Err(Refusal(format!(
            "fleet member(s) {} track the template's default version and would adopt the candidate automatically; pin spec.version on each",
            floating.join(", ")
        ))));
    }
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    let Some(t) = templates
        .get_opt(&plan.template)
        .await
        .map_err(CaseError::kube("get GameTemplate", plan.template.clone()))?
    else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} does not exist; name the template that holds the candidate",
            plan.template
        ))));
    };
    let Some(version) = t.spec.versions.iter().find(|v| v.id == plan.candidate) else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} has no version {:?}; add it to spec.versions",
            plan.template, plan.candidate
        ))));
    };
    if !version.image.contains("@sha256:") {
        return Ok(Err(Refusal(format!(
            "candidate {} image {} is not pinned by digest; reference it as repo@sha256:…",
            plan.candidate, version.image
        ))));
    }
    Ok(Ok(json!({
        "candidate": plan.candidate,
        "image": version.image,
        "fleet_pinned": plan.fleet,
        "tracking_default": floating,
    })))
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
        promotion_receipts: 0,
        outcome: Outcome::Promoted { batches: 0 },
    };
    ctx.uses("fleet pod UIDs");
    ctx.uses("PVC UIDs");
    q.baseline = ctx.step("baseline receipt", baseline(ctx, plan)).await?;

    // 2. Preflight: a refusal is a failed gate (and a failed step), never an `ok` one.
    let pre = preflight(ctx, plan).await?;
    let gate = Gate {
        name: gates::PREFLIGHT.into(),
        server: String::new(),
        passed: pre.is_ok(),
        reason: pre.as_ref().err().map(|r| r.0.clone()),
        evidence: pre.as_ref().ok().cloned().unwrap_or(Value::Null),
    };
    record(ctx, &gate)?;
    q.gates.push(gate.clone());
    if !gate.passed {
        return Ok(halt(q, &gate, 0));
    }
    let source = get_server(ctx, &plan.source).await?;
    let previous = source.spec.version.clone().unwrap_or_default();

    // 3. Back up the source, clone it, restore the backup into the clone.
    let backup_name = plan.backup_name();
    let [clone_restore, rollback_restore] = plan.restore_names();
    let snapshot = ctx
        .step("back up the source", async {
            let api: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let mut backup = Backup::new(
                &backup_name,
                BackupSpec {
                    server_ref: ServerRef {
                        name: plan.source.clone(),
                    },
                    repo_ref: Some(RepoRef {
                        name: plan.repo_secret.clone(),
                        key: "repo".into(),
                    }),
                    strategy: None,
                    quiesce: Some(true),
                    tags: vec!["rehearsal".into(), "qualify".into()],
                },
            );
            backup.metadata.labels = Some(tidy::labels(&plan.run_id));
            api.create(&Default::default(), &backup)
                .await
                .map_err(CaseError::kube(
                    "create Backup",
                    format!("{}/{backup_name}", ctx.namespace),
                ))?;
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
    ctx.uses("Backup status.snapshotID");
    q.snapshot = Some(snapshot.clone());
    ctx.step("create the clone", async {
        let markers = Markers {
            mods: format!("mods-{clone}-{}", ctx.namespace),
            ..Markers::for_server(&ctx.namespace, &clone)
        };
        let mut gs = fixture::server(&clone, &plan.template, &previous, &markers, true);
        let mut labels = tidy::labels(&plan.run_id);
        labels.insert("rehearsal.local/canary-of".into(), plan.source.clone());
        gs.metadata.labels = Some(labels);
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
        plan,
        "restore the backup into the clone",
        &clone_restore,
        &backup_name,
        &clone,
    )
    .await?;
    q.clone_pvcs_before = fixture::server_pvcs(ctx, &clone).await?;
    ctx.observe_pvcs(PvcPhase::Before, &q.clone_pvcs_before)?;

    // 4. The candidate on the clone only, behind gates.
    let candidate_image = version_image(ctx, &plan.template, &plan.candidate).await?;
    let generation = ctx
        .step("apply the candidate to the clone", async {
            let generation = patch_server(
                ctx,
                &clone,
                json!({"spec": {"version": plan.candidate, "suspend": false}}),
            )
            .await?;
            Ok((
                json!({"clone": clone, "version": plan.candidate, "image": candidate_image, "generation": generation}),
                generation,
            ))
        })
        .await?
        .1;
    let gates = server_gates(ctx, plan, &clone, &candidate_image, generation, true).await?;
    let failed = gates.iter().find(|g| !g.passed).cloned();
    q.gates.extend(gates);
    if let Some(gate) = failed {
        return Ok(halt(q, &gate, 0));
    }

    // 5. Rollback evidence on the clone: a gate computed from what was read back.
    let rollback = rollback_clone(
        ctx,
        plan,
        &clone,
        &previous,
        &backup_name,
        &rollback_restore,
    )
    .await?;
    record(ctx, &rollback)?;
    q.gates.push(rollback.clone());
    q.clone_pvcs_after = fixture::server_pvcs(ctx, &clone).await?;
    ctx.observe_pvcs(PvcPhase::After, &q.clone_pvcs_after)?;
    if !rollback.passed {
        return Ok(halt(q, &rollback, 0));
    }

    // 6. Promote in gated batches.
    let mut promoted = 0;
    for (i, batch) in plan.fleet.chunks(plan.batch_size.max(1)).enumerate() {
        let name = format!("promotion batch {}", i + 1);
        let member_gates = ctx
            .step(&name, async {
                let mut generations = Vec::new();
                for member in batch {
                    generations.push(
                        patch_server(ctx, member, json!({"spec": {"version": plan.candidate}}))
                            .await?,
                    );
                }
                let mut all = Vec::new();
                for (member, generation) in batch.iter().zip(generations) {
                    all.extend(
                        server_gates(ctx, plan, member, &candidate_image, generation, false)
                            .await?,
                    );
                }
                Ok(all)
            })
            .await?;
        let failed = member_gates.iter().find(|g| !g.passed).cloned();
        ctx.recorder.step(
            &name,
            json!({"kind": "promotion", "batch": i + 1, "members": batch, "passed": failed.is_none()}),
        )?;
        q.promotion_receipts += 1;
        q.gates.extend(member_gates);
        match failed {
            None => promoted += 1,
            Some(_) if ctx.harness_mutant(HarnessMutant::BatchHaltIgnored) => {
                // The defect: a failed batch does not stop the rollout.
                promoted += 1;
            }
            Some(gate) => {
                let mut halted = halt(q, &gate, promoted);
                if let Outcome::Halted { gate: g, .. } = &mut halted.outcome {
                    *g = format!("{name}: {}", gate.name);
                }
                return Ok(halted);
            }
        }
    }
    q.outcome = Outcome::Promoted { batches: promoted };
    Ok(q)
}

/// Ends the qualification at `gate`, recording how many batches were promoted before it.
fn halt(mut q: Qualification, gate: &Gate, batches_promoted: usize) -> Qualification {
    q.outcome = Outcome::Halted {
        gate: gate.name.clone(),
        server: (!gate.server.is_empty()).then(|| gate.server.clone()),
        reason: gate
            .reason
            .clone()
            .unwrap_or_else(|| "the gate failed".into()),
        batches_promoted,
    };
    q
}

async fn restore_into(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    step: &str,
    restore: &str,
    backup: &str,
    server: &str,
) -> Result<String, CaseError> {
    let id = ctx
        .step(step, async {
            let api: Api<Restore> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            let mut r = Restore::new(
                restore,
                RestoreSpec {
                    backup_ref: BackupRef {
                        name: backup.into(),
                    },
                    server_ref: ServerRef {
                        name: server.into(),
                    },
                },
            );
            r.metadata.labels = Some(tidy::labels(&plan.run_id));
            api.create(&Default::default(), &r)
                .await
                .map_err(CaseError::kube(
                    "create Restore",
                    format!("{}/{restore}", ctx.namespace),
                ))?;
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

/// Writes a gate's receipt (`gate: <name> (<server>)`, `ok` = passed).
fn record(ctx: &CaseContext<'_>, gate: &Gate) -> Result<(), CaseError> {
    let step = if gate.server.is_empty() {
        format!("gate: {}", gate.name)
    } else {
        format!("gate: {} ({})", gate.name, gate.server)
    };
    ctx.recorder.step(
        &step,
        json!({"ok": gate.passed, "gate": gate.name, "server": gate.server, "passed": gate.passed,
               "reason": gate.reason, "evidence": gate.evidence}),
    )?;
    Ok(())
}

fn gate(server: &str, name: &str, passed: bool, reason: Option<String>, evidence: Value) -> Gate {
    Gate {
        name: name.into(),
        server: server.into(),
        passed,
        reason: if passed { None } else { reason },
        evidence,
    }
}

/// A server's gates after it was moved to the candidate: the pinned image runs, a real join
/// reaches play, a save succeeds, and (on the clone) the world reads back with its format
/// marker recorded. Each writes a receipt; the first failure stops the rest (they would only
/// repeat it).
async fn server_gates(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    server: &str,
    image: &str,
    generation: Option<i64>,
    read_back: bool,
) -> Result<Vec<Gate>, CaseError> {
    let mut out = Vec::new();
    let g = image_gate(ctx, server, image, generation).await?;
    record(ctx, &g)?;
    let passed = g.passed;
    out.push(g);
    if !passed {
        return Ok(out);
    }

    let depth = join_gate_depth(ctx);
    let verdict = join(ctx, server, depth).await?;
    ctx.uses("Minecraft join (depth reached)");
    let mut evidence = json!({"verdict": verdict.line(), "detail": verdict});
    if !verdict.ok && verdict.reached.is_none() {
        // No Minecraft stage answered: say what the port does serve, if anything (the
        // HTTP-only candidate's tell). A port that spoke Minecraft at all is not asked.
        let pod_name = names::pod(server);
        if let Ok(reach) = ctx
            .backend
            .reach(&ctx.namespace, &pod_name, GAME_PORT)
            .await
            && let Ok(http) =
                crate::probe::http_marker::probe(reach.addr, "/", "", ctx.bounds.probe).await
        {
            ctx.uses("HTTP response on the game port");
            evidence["http"] = json!(http);
        }
    }
    let g = gate(
        server,
        gates::JOIN,
        verdict.ok,
        Some(verdict.line()),
        evidence,
    );
    record(ctx, &g)?;
    out.push(g);
    if !verdict.ok {
        return Ok(out);
    }

    let saved = rcon(ctx, server, &["save-all flush"]).await;
    let (passed, reason, evidence) = match saved {
        Ok(replies) => (
            replies.iter().any(|r| r.contains("Saved the game")),
            Some(format!(
                "the game replied {replies:?}, not \"Saved the game\""
            )),
            json!({"replies": replies}),
        ),
        Err(e) => (false, Some(e.to_string()), json!({"error": e.to_string()})),
    };
    ctx.uses("RCON reply to save-all");
    let g = gate(server, gates::SAVE, passed, reason, evidence);
    record(ctx, &g)?;
    out.push(g);
    if !passed || !read_back {
        return Ok(out);
    }

    let claims = world_claims(server);
    let readback = with_saves_off(ctx, server, async {
        Ok(crate::probe::readback::read_back_labelled(
            &ctx.client,
            &ctx.namespace,
            &format!("{server}-gate-read"),
            &claims,
            ctx.bounds.settle,
            &tidy::labels(&plan.run_id),
        )
        .await?)
    })
    .await;
    ctx.uses("world read back from the volumes");
    let (passed, reason, evidence) = match readback {
        Ok(r) => {
            let bad: Vec<String> = r
                .claims
                .iter()
                .filter(|(_, i)| i.torn || i.marker.is_none())
                .map(|(c, i)| format!("{c} (torn: {}, marker: {:?})", i.torn, i.marker))
                .collect();
            let formats: BTreeMap<_, _> = r
                .claims
                .iter()
                .map(|(c, i)| (c.clone(), json!({"format": i.format, "candidate_marker": i.candidate_marker, "marker": i.marker, "digest": i.digest})))
                .collect();
            (
                bad.is_empty() && !r.claims.is_empty(),
                Some(format!("unreadable world claims: {}", bad.join(", "))),
                json!({"claims": formats}),
            )
        }
        Err(e) => (false, Some(e.to_string()), json!({"error": e.to_string()})),
    };
    let g = gate(server, gates::READ_BACK, passed, reason, evidence);
    record(ctx, &g)?;
    out.push(g);
    Ok(out)
}

/// The image gate: once the operator has observed the version change (GameServer
/// observedGeneration) and the server's pod runs what its StatefulSet now asks for, the game
/// container's `imageID` must carry the digest the candidate was pinned to. A pull failure
/// ends it at once with the pod's waiting reason and the GameServer's phase as the reason.
async fn image_gate(
    ctx: &CaseContext<'_>,
    server: &str,
    pinned: &str,
    generation: Option<i64>,
) -> Result<Gate, CaseError> {
    ctx.uses("container imageID");
    let observed = await_generation_observed(ctx, server, generation).await;
    if let Err(e) = observed {
        return Ok(gate(
            server,
            gates::IMAGE,
            false,
            Some(e.to_string()),
            json!({"error": e.to_string()}),
        ));
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod_name = names::pod(server);
    let (wanted, revision) = statefulset_revision(ctx, server).await?;
    let waited = await_pod_of_revision(ctx, &pods, &pod_name, &revision).await;
    if waited.is_err() {
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
    let digest = candidate_digest(pinned);
    let matches = !image_id.is_empty() && image_id.ends_with(digest);
    let skip_digest = ctx.harness_mutant(HarnessMutant::DigestCheckSkipped);
    let passed = waited.is_ok() && (matches || skip_digest);
    let reason = match &waited {
        Err(e) => format!(
            "the game container did not run: waiting reason {}; GameServer phase {} ({}); {e}",
            waiting.as_deref().unwrap_or("none"),
            gs_phase.as_deref().unwrap_or("none"),
            gs_reason.as_deref().unwrap_or("no Ready reason"),
        ),
        Ok(_) => format!(
            "the game container runs imageID {image_id:?}, not the pinned digest {digest} (pod spec image {wanted})"
        ),
    };
    Ok(gate(
        server,
        gates::IMAGE,
        passed,
        Some(reason),
        json!({
            "pod_uid": pod.as_ref().and_then(|p| p.metadata.uid.clone()),
            "imageID": image_id,
            "pinned": pinned,
            "spec_image": wanted,
            "waiting_reason": waiting,
            "gameserver_phase": gs_phase,
            "gameserver_ready_reason": gs_reason,
        }),
    ))
}

/// Waits until the operator has observed GameServer `server` at `generation`.
async fn await_generation_observed(
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
            Some(g) if g >= wanted => Verdict::Met,
            _ => Verdict::Pending,
        },
    );
    Ok(await_object(&gs_api(ctx), server, condition, ctx.bounds.settle).await?)
}

/// The game image the server's StatefulSet asks for and its update revision, once the
/// StatefulSet controller has observed its latest template.
async fn statefulset_revision(
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
                return Verdict::Pending;
            };
            let observed = sts.status.as_ref().and_then(|s| s.observed_generation);
            let revision = sts.status.as_ref().and_then(|s| s.update_revision.as_ref());
            if observed >= sts.metadata.generation && revision.is_some() {
                Verdict::Met
            } else {
                Verdict::Pending
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

/// Waits until the server's pod belongs to StatefulSet revision `revision` and is Ready (a
/// pull failure is terminal and surfaces within the pull-failure bound).
async fn await_pod_of_revision(
    ctx: &CaseContext<'_>,
    pods: &Api<Pod>,
    pod_name: &str,
    revision: &str,
) -> Result<Pod, CaseError> {
    let ready = conditions::pod_ready();
    let wanted = revision.to_string();
    let condition = Condition::new(
        format!("pod of revision {wanted} and Ready"),
        move |pod: Option<&Pod>| {
            let of_revision = pod
                .and_then(|p| p.metadata.labels.as_ref())
                .and_then(|l| l.get("controller-revision-hash"))
                .is_some_and(|r| *r == wanted);
            if !of_revision {
                return Verdict::Pending;
            }
            ready.check(pod)
        },
    );
    let bound = ctx.bounds.pull_failure.max(Duration::from_secs(1));
    Ok(await_object(pods, pod_name, condition, bound).await?)
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

/// Rolls the clone back (re-pin, or restore the pre-candidate snapshot and re-pin) and judges
/// it: the previous version runs and joins to play, the save reads as format 1 without the
/// candidate-only marker, the primary and extra world values are the source's, and the mods
/// keep the clone's own value.
async fn rollback_clone(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    clone: &str,
    previous: &str,
    backup: &str,
    restore: &str,
) -> Result<Gate, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod_name = names::pod(clone);
    let mut problems: Vec<String> = Vec::new();
    let mut evidence = json!({"rollback": plan.rollback});
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
            let id = restore_into(
                ctx,
                plan,
                "restore the pre-candidate snapshot",
                restore,
                backup,
                clone,
            )
            .await?;
            evidence["restored_snapshot"] = json!(id);
            patch_server(ctx, clone, json!({"spec": {"suspend": false}})).await?;
        }
    }
    // The clone ran the candidate until now: wait for the pod of the previous version, not
    // the candidate's pod that is still Ready while the StatefulSet rolls.
    let previous_image = version_image(ctx, &plan.template, previous).await?;
    let pod = match await_pod_running_image(ctx, &pods, &pod_name, &previous_image).await {
        Ok(pod) => pod,
        Err(e) => {
            let reason = format!("the previous version did not come back: {e}");
            evidence["error"] = json!(reason);
            return Ok(gate(clone, gates::ROLLBACK, false, Some(reason), evidence));
        }
    };
    fixture::await_server_phase(ctx, clone, "Running").await?;
    let verdict = join(ctx, clone, Depth::Play).await?;
    if !verdict.ok {
        problems.push(format!("join after rollback: {}", verdict.line()));
    }
    let mut claims = world_claims(clone);
    let mods_claim = names::mods_pvc(clone, previous);
    claims.push(mods_claim.clone());
    let readback = with_saves_off(ctx, clone, async {
        Ok(crate::probe::readback::read_back_labelled(
            &ctx.client,
            &ctx.namespace,
            "rollback-read",
            &claims,
            ctx.bounds.settle,
            &tidy::labels(&plan.run_id),
        )
        .await?)
    })
    .await?;
    ctx.uses("world read back after the rollback");
    let source_markers = Markers::for_server(&ctx.namespace, &plan.source);
    let clone_mods = format!("mods-{clone}-{}", ctx.namespace);
    let data = names::data_pvc(clone);
    let extra = names::extra_pvc(clone, fixture::EXTRA_WORLD);
    let get = |c: &str| readback.claims.get(c).cloned();
    let primary = get(&data);
    let format = primary.as_ref().and_then(|i| i.format);
    if format != Some(1) {
        problems.push(format!(
            "{data}: format {format:?}, expected 1 (readable by {previous})"
        ));
    }
    if primary.as_ref().is_some_and(|i| i.candidate_marker) {
        problems.push(format!("{data}: the candidate-only marker is still there"));
    }
    let primary_marker = primary.as_ref().and_then(|i| i.marker.clone());
    if primary_marker.as_deref() != Some(source_markers.primary.as_str()) {
        problems.push(format!(
            "{data}: world marker {primary_marker:?}, expected the source's {:?}",
            source_markers.primary
        ));
    }
    let extra_marker = get(&extra).and_then(|i| i.marker);
    if extra_marker.as_deref() != Some(source_markers.extra.as_str()) {
        problems.push(format!(
            "{extra}: extra world marker {extra_marker:?}, expected the source's {:?}",
            source_markers.extra
        ));
    }
    let mods_marker = get(&mods_claim).and_then(|i| i.marker);
    if mods_marker.as_deref() != Some(clone_mods.as_str()) {
        problems.push(format!(
            "{mods_claim}: mods marker {mods_marker:?}, expected the clone's own {clone_mods:?} (mods are not backed up)"
        ));
    }
    evidence["pod_uid"] = json!(pod.metadata.uid);
    evidence["join"] = json!(verdict.line());
    evidence["readback"] = json!(readback);
    let passed = problems.is_empty();
    Ok(gate(
        clone,
        gates::ROLLBACK,
        passed,
        Some(problems.join("; ")),
        evidence,
    ))
}
