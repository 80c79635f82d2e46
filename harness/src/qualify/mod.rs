//! The rollout qualification procedure (CONTRACT part C): rehearse a candidate template version
//! on a canary clone restored from a real backup, prove its rollback, and only then promote the
//! fleet in gated batches — or halt without touching any fleet member.
//!
//! Fleet progress lives in the harness's journal (receipts), never in a server's lifecycle
//! owner, so a failed canary cannot block a restore. A halted qualification leaves the baseline
//! receipt and the failed gate's evidence, and no `promotion` receipt.
//!
//! Nothing here assumes the fixture game: the clone copies the source GameServer's own spec,
//! the game and RCON ports, the RCON password and the quiesce commands come from the fleet's
//! GameTemplate and its Secret, and world data is compared as content digests of each world
//! claim (every file below it, see [`crate::probe::readback`]) taken before and after — never
//! as values a fixture wrote. What a fleet cannot offer (no RCON, no password Secret, no game
//! port) is a preflight refusal that names it.

pub mod identity;
pub mod tidy;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gameplane_api::backup::{Backup, BackupSpec, RepoRef, ServerRef};
use gameplane_api::gameserver::GameServer;
use gameplane_api::gametemplate::GameTemplate;
use gameplane_api::names;
use gameplane_api::restore::{BackupRef, Restore, RestoreSpec};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

use crate::backend::BackendKind;
use crate::context::{CaseContext, CaseError, HarnessMutant};
use crate::evidence::pvc_table::{PvcObservation, PvcPhase};
pub use crate::evidence::qualification::{
    AccessEvidence, ClaimDigest, ClaimReadBack, Gate, GateError, GateEvidence, HttpAnswer,
    ImageEvidence, JoinEvidence, MemberBaseline, Observed, Outcome, Plan, PreflightEvidence,
    Qualification, ReadBackEvidence, Rollback, RollbackEvidence, SaveEvidence, clone_name, gates,
};
use crate::probe::minecraft::{self, Depth};
use crate::probe::readback::Readback;
use crate::wait::{Condition, Progress, await_condition, await_object, conditions};

/// Whether each gate prints a progress line on stdout as it ends (the `rehearse qualify`
/// console; cases run quietly).
static PROGRESS: AtomicBool = AtomicBool::new(false);

/// Turns the per-gate progress line on or off for this process.
pub fn set_progress(on: bool) {
    PROGRESS.store(on, Ordering::SeqCst);
    crate::context::set_step_progress(on);
}

/// How to reach and save the fleet's servers, read from its own GameTemplate and Secret.
#[derive(Debug, Clone, Serialize)]
pub struct Access {
    /// The template's Minecraft port (the port named `minecraft`, else the first TCP port).
    pub game_port: u16,
    /// The template's RCON port (`spec.rcon.port`), where the quiesce commands are sent.
    pub rcon_port: u16,
    /// `<secret>/<key>` the password was read from.
    pub rcon_secret: String,
    #[serde(skip)]
    rcon_password: String,
    /// The template's quiesce console commands, sent before a read-back so it sees a whole save.
    pub quiesce: Vec<String>,
    /// The template's unquiesce commands, sent after the read-back whatever its outcome.
    pub unquiesce: Vec<String>,
}

impl Access {
    /// What a gate's evidence records of it (never the password).
    pub fn evidence(&self) -> AccessEvidence {
        AccessEvidence {
            game_port: self.game_port,
            rcon_port: self.rcon_port,
            rcon_secret: self.rcon_secret.clone(),
            quiesce: self.quiesce.clone(),
            unquiesce: self.unquiesce.clone(),
        }
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A gate being judged: when it started.
struct Timer {
    unix_ms: u64,
    started: Instant,
}

impl Timer {
    fn start() -> Self {
        Self {
            unix_ms: unix_ms(),
            started: Instant::now(),
        }
    }
}

fn gs_api(ctx: &CaseContext<'_>) -> Api<GameServer> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

async fn get_server(ctx: &CaseContext<'_>, name: &str) -> Result<GameServer, CaseError> {
    gs_api(ctx).get(name).await.map_err(CaseError::kube(
        "get GameServer",
        format!("{}/{name}", ctx.namespace),
    ))
}

async fn get_server_opt(
    ctx: &CaseContext<'_>,
    name: &str,
) -> Result<Option<GameServer>, CaseError> {
    gs_api(ctx).get_opt(name).await.map_err(CaseError::kube(
        "get GameServer",
        format!("{}/{name}", ctx.namespace),
    ))
}

async fn await_server_phase(
    ctx: &CaseContext<'_>,
    name: &str,
    phase: &str,
) -> Result<GameServer, CaseError> {
    Ok(await_object(
        &gs_api(ctx),
        name,
        conditions::gameserver_phase(phase),
        ctx.bounds.settle,
    )
    .await?)
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

/// The PVCs GameServer `server` owns (by owner reference), sorted by claim.
pub async fn server_pvcs(
    ctx: &CaseContext<'_>,
    server: &str,
) -> Result<Vec<PvcObservation>, CaseError> {
    let Some(gs) = get_server_opt(ctx, server).await? else {
        return Ok(vec![]);
    };
    let owner_uid = gs.metadata.uid.clone().unwrap_or_default();
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut rows: Vec<PvcObservation> = pvcs
        .list(&Default::default())
        .await
        .map_err(CaseError::kube("list PVCs", ctx.namespace.clone()))?
        .items
        .into_iter()
        .filter(|p| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == owner_uid)
        })
        .map(|p| {
            PvcObservation::classify(
                server,
                p.metadata.name.as_deref().unwrap_or_default(),
                p.metadata.uid.as_deref().unwrap_or_default(),
                p.spec.as_ref().and_then(|s| s.volume_name.as_deref()),
            )
        })
        .collect();
    rows.sort_by(|a, b| a.claim.cmp(&b.claim));
    Ok(rows)
}

/// The world claims of a server as its spec declares them: the primary world claim and one
/// per `storage.extra` entry (the claims a backup covers; rebuildable mods are not).
fn world_claims(gs: &GameServer) -> Vec<String> {
    let name = gs.metadata.name.clone().unwrap_or_default();
    let mut claims = vec![names::data_pvc(&name)];
    if let Some(storage) = &gs.spec.storage {
        claims.extend(
            storage
                .extra
                .iter()
                .map(|e| names::extra_pvc(&name, &e.name)),
        );
    }
    claims
}

/// Reads the content digest of each of `claims` through a short-lived read-back pod labelled
/// with the run id.
async fn read_claims(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    pod: &str,
    claims: &[String],
) -> Result<Readback, CaseError> {
    Ok(crate::probe::readback::read_back_labelled(
        &ctx.client,
        &ctx.namespace,
        pod,
        claims,
        ctx.bounds.settle,
        &tidy::labels(&plan.run_id),
    )
    .await?)
}

/// Claim → digest and file count, as the report and the rollback gate compare them.
fn digests_of(r: &Readback) -> BTreeMap<String, ClaimDigest> {
    r.claims
        .iter()
        .map(|(c, i)| {
            let digest = ClaimDigest {
                digest: i.digest.clone(),
                files: i.files as u64,
            };
            (c.clone(), digest)
        })
        .collect()
}

/// Quiesces the game over RCON with the template's commands, runs `unit`, and unquiesces
/// whatever happened, so a read-back sees a whole save rather than one torn by autosave.
async fn with_saves_off<T>(
    ctx: &CaseContext<'_>,
    access: &Access,
    server: &str,
    unit: impl std::future::Future<Output = Result<T, CaseError>>,
) -> Result<T, CaseError> {
    let quiesce: Vec<&str> = access.quiesce.iter().map(String::as_str).collect();
    let unquiesce: Vec<&str> = access.unquiesce.iter().map(String::as_str).collect();
    rcon(ctx, access, server, &quiesce).await?;
    let out = unit.await;
    let _ = rcon(ctx, access, server, &unquiesce).await;
    out
}

/// On a backend that reaches pods through `pods/portforward`, checks that the API server
/// serves it for `pod`, so a cluster that cannot port-forward says so in one line instead of
/// every probe seeing a reset connection.
async fn check_port_forward(ctx: &CaseContext<'_>, pod: &str, port: u16) -> Result<(), CaseError> {
    if ctx.backend.kind() == BackendKind::Embedded {
        return Ok(());
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    match pods.portforward(pod, &[port]).await {
        Ok(mut f) => {
            drop(f.take_stream(port));
            f.abort();
            Ok(())
        }
        Err(e) => Err(CaseError::Setup(format!(
            "this cluster cannot port-forward to pod {}/{pod} port {port} ({}); rehearse qualify reaches the game and RCON ports through pods/portforward: allow it for your user, or use a cluster that serves it",
            ctx.namespace,
            crate::kube_error::line(&e)
        ))),
    }
}

/// Sends RCON `commands` to a server's game, returning the replies.
pub async fn rcon(
    ctx: &CaseContext<'_>,
    access: &Access,
    server: &str,
    commands: &[&str],
) -> Result<Vec<String>, CaseError> {
    let pod = names::pod(server);
    check_port_forward(ctx, &pod, access.rcon_port).await?;
    let reach = ctx
        .backend
        .reach(&ctx.namespace, &pod, access.rcon_port)
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
        &access.rcon_password,
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
    access: &Access,
    server: &str,
    depth: Depth,
) -> Result<minecraft::MinecraftVerdict, CaseError> {
    let pod = names::pod(server);
    check_port_forward(ctx, &pod, access.game_port).await?;
    let reach = ctx
        .backend
        .reach(&ctx.namespace, &pod, access.game_port)
        .await
        .map_err(|e| {
            CaseError::Setup(format!(
                "cannot reach the game port of pod {}/{pod}: {e}",
                ctx.namespace
            ))
        })?;
    Ok(minecraft::probe_bounded(reach.addr, depth, ctx.bounds.probe, ctx.bounds.join_stall).await)
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

/// Each member's version, pod UID, PVC UIDs and (with `read`) world-claim digests. A member
/// that does not exist is recorded without any (the preflight refuses it).
async fn members(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    servers: &[String],
    read: bool,
) -> Result<Vec<MemberBaseline>, CaseError> {
    let mut out = Vec::new();
    for (i, member) in servers.iter().enumerate() {
        let Some(gs) = get_server_opt(ctx, member).await? else {
            out.push(MemberBaseline {
                server: member.clone(),
                version: None,
                pod_uid: None,
                pvcs: BTreeMap::new(),
                digests: BTreeMap::new(),
            });
            continue;
        };
        let pvcs = server_pvcs(ctx, member).await?;
        let digests = if read {
            read_claims(ctx, plan, &format!("baseline-{i}"), &world_claims(&gs))
                .await?
                .claims
                .into_iter()
                .map(|(c, i)| (c, i.digest))
                .collect()
        } else {
            BTreeMap::new()
        };
        out.push(MemberBaseline {
            server: member.clone(),
            version: gs.spec.version.clone(),
            pod_uid: pod_uid(ctx, member).await?,
            pvcs: pvcs.into_iter().map(|p| (p.claim, p.uid)).collect(),
            digests,
        });
    }
    Ok(out)
}

/// Why the preflight refuses, as one line.
#[derive(Debug, Clone)]
struct Refusal(String);

/// Refuses what the procedure cannot work with, naming it: a fleet member or the source that
/// does not exist, members that track the template default (they would adopt automatically), a
/// missing template or candidate version, a candidate whose image is not pinned by digest, and
/// a template without what the gates need (a Minecraft port, RCON with a password Secret).
async fn preflight(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> Result<Result<(PreflightEvidence, Access, String), Refusal>, CaseError> {
    let mut missing = Vec::new();
    let mut floating = Vec::new();
    let mut on_candidate = Vec::new();
    let mut servers = plan.fleet.clone();
    if !servers.contains(&plan.source) {
        servers.push(plan.source.clone());
    }
    for member in &servers {
        match get_server_opt(ctx, member).await? {
            None => missing.push(member.clone()),
            Some(gs) if gs.spec.version.as_deref().unwrap_or("").is_empty() => {
                floating.push(member.clone())
            }
            Some(gs) if gs.spec.version.as_deref() == Some(plan.candidate.as_str()) => {
                on_candidate.push(member.clone())
            }
            Some(_) => {}
        }
    }
    if !missing.is_empty() {
        return Ok(Err(Refusal(format!(
            "GameServer(s) {} do not exist in namespace {}; name the fleet's members with --fleet and --source",
            missing.join(", "),
            ctx.namespace
        ))));
    }
    if !floating.is_empty() && !ctx.harness_mutant(HarnessMutant::DefaultTrackingAllowed) {
        return Ok(Err(Refusal(format!(
            "fleet member(s) {} track the template's default version and would adopt the candidate automatically; pin spec.version on each",
            floating.join(", ")
        ))));
    }
    if !on_candidate.is_empty() {
        return Ok(Err(on_candidate_refusal(
            plan,
            &on_candidate,
            servers.len(),
        )));
    }
    if let Err(refusal) = check_repository(ctx, plan).await? {
        return Ok(Err(refusal));
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
    let source = get_server(ctx, &plan.source).await?;
    if source.spec.template_ref.name != plan.template {
        return Ok(Err(Refusal(format!(
            "source {} runs template {}, not {}; qualify the template the fleet runs",
            plan.source, source.spec.template_ref.name, plan.template
        ))));
    }
    if let Some(image) = source.spec.image.as_deref().filter(|i| !i.is_empty()) {
        return Ok(Err(Refusal(format!(
            "source {} overrides its image (spec.image {image}), so its clone would never run the candidate's image; pick a source without an override or remove it",
            plan.source
        ))));
    }
    let previous = source.spec.version.clone().unwrap_or_default();
    let access = match read_access(ctx, plan, &t).await? {
        Ok(access) => access,
        Err(refusal) => return Ok(Err(refusal)),
    };
    Ok(Ok((
        PreflightEvidence {
            candidate: plan.candidate.clone(),
            image: version.image.clone(),
            previous,
            fleet_pinned: plan.fleet.clone(),
            tracking_default: floating,
            access: access.evidence(),
        },
        access,
        version.image.clone(),
    )))
}

/// The refusal of members that already run the candidate: "nothing to promote" when that is
/// the whole fleet, else the members to leave out.
fn on_candidate_refusal(plan: &Plan, on_candidate: &[String], members: usize) -> Refusal {
    Refusal(if on_candidate.len() == members {
        format!(
            "nothing to promote: every fleet member ({}) already runs version {}; a candidate must differ from the version the fleet runs",
            on_candidate.join(", "),
            plan.candidate
        )
    } else {
        format!(
            "fleet member(s) {} already run version {} (the candidate): a rollback to it or a promotion to it proves nothing; leave them out of --fleet and pick a --source on the version the fleet runs",
            on_candidate.join(", "),
            plan.candidate
        )
    })
}

/// The repository Secret the source's backup needs (`--repo-secret`): present in the fleet's
/// namespace with the keys `repo` and `password`, and `repo` a restic REST URL (the copy Jobs
/// reach the repository over the network; a local path only works where pods share the host).
async fn check_repository(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> Result<Result<(), Refusal>, CaseError> {
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = &plan.repo_secret;
    let Some(secret) = secrets.get_opt(name).await.map_err(CaseError::kube(
        "get Secret",
        format!("{}/{name}", ctx.namespace),
    ))?
    else {
        return Ok(Err(Refusal(format!(
            "repository Secret {}/{name} does not exist: create it with keys repo (rest:http://HOST:PORT/PATH) and password, or name it with --repo-secret",
            ctx.namespace
        ))));
    };
    let value = |k: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(k))
            .map(|b| String::from_utf8_lossy(&b.0).trim().to_string())
            .or_else(|| secret.string_data.as_ref().and_then(|d| d.get(k)).cloned())
            .filter(|v| !v.is_empty())
    };
    let missing: Vec<&str> = ["repo", "password"]
        .into_iter()
        .filter(|k| value(k).is_none())
        .collect();
    if !missing.is_empty() {
        return Ok(Err(Refusal(format!(
            "repository Secret {}/{name} lacks key(s) {}: it needs repo (rest:http://HOST:PORT/PATH) and password",
            ctx.namespace,
            missing.join(", ")
        ))));
    }
    let repo = value("repo").unwrap_or_default();
    if !(repo.starts_with("rest:http://") || repo.starts_with("rest:https://")) {
        return Ok(Err(Refusal(format!(
            "repository Secret {}/{name} has repo {repo:?}, not a restic REST URL: the copy Jobs reach the repository over the network; use rest:http://HOST:PORT/PATH",
            ctx.namespace
        ))));
    }
    Ok(Ok(()))
}

/// What the gates need from the fleet's template, or why it lacks it: the game port (the port
/// named `minecraft`, else the first TCP port), the RCON port and the password from its Secret,
/// and the quiesce commands.
async fn read_access(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    t: &GameTemplate,
) -> Result<Result<Access, Refusal>, CaseError> {
    let game_port = t
        .spec
        .ports
        .iter()
        .find(|p| p.name == "minecraft")
        .or_else(|| {
            t.spec
                .ports
                .iter()
                .find(|p| p.protocol.as_deref().unwrap_or("TCP") == "TCP")
        })
        .and_then(|p| u16::try_from(p.container_port).ok());
    let Some(game_port) = game_port else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} declares no TCP game port (spec.ports); the join gate joins the game on it",
            plan.template
        ))));
    };
    let rcon = t.spec.rcon.clone().unwrap_or_default();
    let (Some(port), Some(secret_ref)) = (
        rcon.port.and_then(|p| u16::try_from(p).ok()),
        rcon.password_secret_ref.clone(),
    ) else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} declares no RCON port and password Secret (spec.rcon.port, spec.rcon.passwordSecretRef); the save gate and read-backs save the world over RCON",
            plan.template
        ))));
    };
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let secret = secrets
        .get_opt(&secret_ref.name)
        .await
        .map_err(CaseError::kube(
            "get Secret",
            format!("{}/{}", ctx.namespace, secret_ref.name),
        ))?;
    let password = secret
        .as_ref()
        .and_then(|s| s.data.as_ref()?.get(&secret_ref.key))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .or_else(|| {
            secret
                .as_ref()
                .and_then(|s| s.string_data.as_ref()?.get(&secret_ref.key).cloned())
        });
    let Some(password) = password else {
        return Ok(Err(Refusal(format!(
            "the RCON password Secret {}/{} has no key {:?} (GameTemplate {} spec.rcon.passwordSecretRef); create it where the fleet runs",
            ctx.namespace, secret_ref.name, secret_ref.key, plan.template
        ))));
    };
    let quiesce = t.spec.capabilities.as_ref().and_then(|c| c.quiesce.clone());
    let Some(quiesce) = quiesce.filter(|q| !q.quiesce.is_empty()) else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} declares no quiesce commands (spec.capabilities.quiesce); backups and read-backs need a whole save",
            plan.template
        ))));
    };
    Ok(Ok(Access {
        game_port,
        rcon_port: port,
        rcon_secret: format!("{}/{}", secret_ref.name, secret_ref.key),
        rcon_password: password,
        quiesce: quiesce.quiesce,
        unquiesce: quiesce.unquiesce,
    }))
}

fn candidate_digest(image: &str) -> &str {
    image.rsplit_once('@').map(|(_, d)| d).unwrap_or(image)
}

/// The clone of `source`: its own spec (template, storage, env, …) at `version`, suspended so
/// the restore finds no running game, labelled with the run id and the server it clones.
fn clone_of(source: &GameServer, clone: &str, version: &str, run_id: &str) -> GameServer {
    let mut spec = source.spec.clone();
    spec.version = Some(version.to_string());
    spec.suspend = Some(true);
    let mut labels = tidy::labels(run_id);
    labels.insert(
        "rehearsal.local/canary-of".into(),
        source.metadata.name.clone().unwrap_or_default(),
    );
    GameServer {
        metadata: ObjectMeta {
            name: Some(clone.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

/// Runs the qualification. Gate failures are an [`Outcome::Halted`], not an error: an error
/// means the procedure itself could not run.
pub async fn qualify(ctx: &CaseContext<'_>, plan: &Plan) -> Result<Qualification, CaseError> {
    match qualify_recorded(ctx, plan).await {
        (q, None) => Ok(q),
        (_, Some(e)) => Err(e),
    }
}

/// Runs the qualification and returns what it recorded, with the error that ended it early
/// when the procedure could not complete (for a report that shows how far it got).
pub async fn qualify_recorded(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> (Qualification, Option<CaseError>) {
    let mut q = start(plan);
    let error = qualify_into(ctx, plan, &mut q).await;
    (q, error)
}

/// A qualification of `plan` that has recorded nothing yet.
pub fn start(plan: &Plan) -> Qualification {
    Qualification {
        plan: plan.clone(),
        clone: clone_name(&plan.source),
        candidate_image: None,
        previous: None,
        baseline: vec![],
        after: vec![],
        snapshot: None,
        gates: vec![],
        clone_pvcs_before: vec![],
        clone_pvcs_after: vec![],
        promotion_receipts: 0,
        outcome: Outcome::Promoted { batches: 0 },
    }
}

/// Runs the qualification, recording into `q` as it goes (so a caller that stops it early —
/// an interrupt — still holds what was recorded), and returns the error that ended it early.
pub async fn qualify_into(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
) -> Option<CaseError> {
    let error = procedure(ctx, plan, q).await.err();
    if matches!(error, Some(CaseError::Interrupted { .. })) {
        // Reading the members again would only add steps an interrupt refuses.
        return error;
    }
    let mut servers = plan.observed();
    servers.push(q.clone.clone());
    match members(ctx, plan, &servers, false).await {
        Ok(after) => q.after = after,
        Err(e) if error.is_none() => return Some(e),
        Err(_) => {}
    }
    error
}

async fn procedure(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
) -> Result<(), CaseError> {
    let clone = q.clone.clone();
    ctx.uses("fleet pod UIDs");
    ctx.uses("PVC UIDs");
    q.baseline = baseline(ctx, plan).await?;

    // 2. Preflight: a refusal is a failed gate (a gate receipt that did not pass).
    let timer = Timer::start();
    let pre = preflight(ctx, plan).await?;
    let gate = finish(
        timer,
        Gate::new(
            "",
            GateEvidence::Preflight(pre.as_ref().ok().map(|(e, _, _)| e.clone())),
            pre.is_ok(),
            pre.as_ref().err().map(|r| r.0.clone()),
        ),
    );
    record(ctx, &gate)?;
    q.gates.push(gate.clone());
    let Ok((_, access, candidate_image)) = pre else {
        halt(q, &gate, 0);
        return Ok(());
    };
    q.candidate_image = Some(candidate_image.clone());
    let source = get_server(ctx, &plan.source).await?;
    let previous = source.spec.version.clone().unwrap_or_default();
    q.previous = Some(previous.clone());
    let claims = world_claims(&clone_of(&source, &clone, &previous, &plan.run_id));

    // 3. Back up the source, clone it, restore the backup into the clone.
    let restored = seed_clone(ctx, plan, q, &source, &previous, &claims).await?;
    let backup_name = plan.backup_name();
    let [_, rollback_restore] = plan.restore_names();

    // 4. The candidate on the clone only, behind gates.
    let generation = ctx
        .step("apply the candidate to the clone", async {
            // `harness-candidate-on-source` defect: the patch names the source, not its clone.
            let on_source = ctx.harness_mutant(HarnessMutant::CandidateOnSource);
            let generation = patch_server(
                ctx,
                if on_source { &plan.source } else { &clone },
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
    let before = Some((&restored, claims.as_slice()));
    let gates = server_gates(
        ctx,
        plan,
        &access,
        &clone,
        &candidate_image,
        generation,
        before,
    )
    .await?;
    let failed = gates.iter().find(|g| !g.passed).cloned();
    q.gates.extend(gates);
    if let Some(gate) = failed {
        premature_promotion_receipt(ctx, plan, q)?;
        halt(q, &gate, 0);
        return Ok(());
    }

    // 5. Rollback evidence on the clone: a gate computed from what was read back.
    crate::context::boundary(&format!("gate: rollback ({clone})"))?;
    let timer = Timer::start();
    let rollback = rollback_clone(
        ctx,
        plan,
        &access,
        &Rolling {
            clone: &clone,
            previous: &previous,
            backup: &backup_name,
            restore: &rollback_restore,
            claims: &claims,
            restored: &restored,
            source_baseline: q.baseline.iter().find(|b| b.server == plan.source),
        },
    )
    .await?;
    let rollback = finish(timer, rollback);
    record(ctx, &rollback)?;
    q.gates.push(rollback.clone());
    q.clone_pvcs_after = server_pvcs(ctx, &clone).await?;
    ctx.observe_pvcs(PvcPhase::After, &q.clone_pvcs_after)?;
    if !rollback.passed {
        halt(q, &rollback, 0);
        return Ok(());
    }

    // 6. Promote in gated batches.
    promote(ctx, plan, q, &access, &candidate_image).await
}

/// Step 3 of the procedure: backs up the source, creates its clone (suspended, at the previous
/// version), restores the backup into it, and reads what the snapshot put in the clone's world
/// `claims` before the candidate runs: the digests the read-back gate and a restore-required
/// rollback compare against.
async fn seed_clone(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
    source: &GameServer,
    previous: &str,
    claims: &[String],
) -> Result<Readback, CaseError> {
    let clone = q.clone.clone();
    let backup_name = plan.backup_name();
    let [clone_restore, _] = plan.restore_names();
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
        let gs = clone_of(source, &clone, previous, &plan.run_id);
        gs_api(ctx)
            .create(&Default::default(), &gs)
            .await
            .map_err(CaseError::kube(
                "create GameServer",
                format!("{}/{clone}", ctx.namespace),
            ))?;
        await_server_phase(ctx, &clone, "Suspended").await?;
        Ok(json!({"clone": clone, "copied_from": plan.source, "version": previous, "suspended": true}))
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
    q.clone_pvcs_before = server_pvcs(ctx, &clone).await?;
    ctx.observe_pvcs(PvcPhase::Before, &q.clone_pvcs_before)?;
    // What the snapshot holds, read from the clone's claims before the candidate runs: the
    // digests the read-back gate and a restore-required rollback compare against.
    let restored = ctx
        .step(
            "read the restored world (before the candidate)",
            read_claims(ctx, plan, "restored-read", claims),
        )
        .await?;
    ctx.uses("world digests before and after");
    Ok(restored)
}

/// Step 6 of the procedure: moves the fleet to the candidate batch by batch, each member behind
/// its gates, and halts at the first failed batch (unless the self-test's `BatchHaltIgnored`
/// harness mutant is on); records one `promotion` receipt per batch.
async fn promote(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
    access: &Access,
    candidate_image: &str,
) -> Result<(), CaseError> {
    let mut promoted = 0;
    for (i, batch) in plan.batches().iter().enumerate() {
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
                        server_gates(ctx, plan, access, member, candidate_image, generation, None)
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
                halt(q, &gate, promoted);
                if let Outcome::Halted { gate: g, .. } = &mut q.outcome {
                    *g = format!("{name}: {}", gate.name);
                }
                return Ok(());
            }
        }
    }
    q.outcome = Outcome::Promoted { batches: promoted };
    Ok(())
}

/// Step 1: the baseline receipt, the fleet as it was (pod UIDs, versions, claims' digests).
/// The `harness-baseline-skipped` defect never records it.
async fn baseline(ctx: &CaseContext<'_>, plan: &Plan) -> Result<Vec<MemberBaseline>, CaseError> {
    if ctx.harness_mutant(HarnessMutant::BaselineSkipped) {
        return Ok(vec![]);
    }
    ctx.step(
        "baseline receipt",
        members(ctx, plan, &plan.observed(), true),
    )
    .await
}

/// The `harness-canary-promotion-receipt` defect: the first batch's promotion decision is
/// recorded before the canary's gates were judged (nothing without the mutant).
fn premature_promotion_receipt(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
) -> Result<(), CaseError> {
    if ctx.harness_mutant(HarnessMutant::CanaryPromotionReceipt) {
        let batch = plan.batches().into_iter().next().unwrap_or_default();
        ctx.recorder.step(
            "promotion batch 1",
            json!({"kind": "promotion", "batch": 1, "members": batch, "passed": true}),
        )?;
        q.promotion_receipts += 1;
    }
    Ok(())
}

/// Ends the qualification at `gate`, recording how many batches were promoted before it.
fn halt(q: &mut Qualification, gate: &Gate, batches_promoted: usize) {
    q.outcome = Outcome::Halted {
        gate: gate.name.clone(),
        server: (!gate.server.is_empty()).then(|| gate.server.clone()),
        reason: gate
            .reason
            .clone()
            .unwrap_or_else(|| "the gate failed".into()),
        batches_promoted,
    };
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

/// Writes a gate's typed receipt (kind `gate`, step `gate: <name> (<server>)`) and, on the
/// `rehearse qualify` console, its progress line.
fn record(ctx: &CaseContext<'_>, gate: &Gate) -> Result<(), CaseError> {
    let step = if gate.server.is_empty() {
        format!("gate: {}", gate.name)
    } else {
        format!("gate: {} ({})", gate.name, gate.server)
    };
    ctx.recorder.gate(&step, gate)?;
    if PROGRESS.load(Ordering::SeqCst) {
        println!("{}", progress_line(gate));
    }
    Ok(())
}

/// `  passed  <gate> · <server> · 1.2 s` or `  FAILED  <gate> · <server> · 1.2 s: <reason>`.
pub fn progress_line(gate: &Gate) -> String {
    let mut line = format!(
        "  {}  {}",
        if gate.passed { "passed" } else { "FAILED" },
        gate.name
    );
    if !gate.server.is_empty() {
        line.push_str(&format!(" · {}", gate.server));
    }
    line.push_str(&format!(
        " · {}",
        crate::report::model::format_duration(gate.duration_ms)
    ));
    if let Some(reason) = gate.reason.as_ref().filter(|_| !gate.passed) {
        line.push_str(&format!(": {reason}"));
    }
    line
}

fn gate(server: &str, evidence: GateEvidence, passed: bool, reason: Option<String>) -> Gate {
    Gate::new(server, evidence, passed, reason)
}

/// A gate's `{"error": …}` evidence.
fn gate_error<T>(e: impl ToString) -> Observed<T> {
    Observed::Error(GateError {
        error: e.to_string(),
    })
}

/// Stamps a gate with when it started and how long it took.
fn finish(timer: Timer, mut g: Gate) -> Gate {
    g.started_unix_ms = timer.unix_ms;
    g.duration_ms = timer.started.elapsed().as_millis() as u64;
    g
}

/// A server's gates after it was moved to the candidate: the pinned image runs, a real join
/// reaches play, a save succeeds, and (on the clone, given the digests read `before` the
/// candidate ran) the world claims read back whole. Each writes a receipt; the first failure
/// stops the rest (they would only repeat it).
async fn server_gates(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    access: &Access,
    server: &str,
    image: &str,
    generation: Option<i64>,
    before: Option<(&Readback, &[String])>,
) -> Result<Vec<Gate>, CaseError> {
    let mut out = Vec::new();
    let at = |gate: &str| crate::context::boundary(&format!("gate: {gate} ({server})"));
    at("image")?;
    let timer = Timer::start();
    let g = finish(timer, image_gate(ctx, server, image, generation).await?);
    record(ctx, &g)?;
    let passed = g.passed;
    out.push(g);
    if !passed {
        return Ok(out);
    }

    at("join")?;
    let g = join_gate(ctx, access, server).await?;
    record(ctx, &g)?;
    let passed = g.passed;
    out.push(g);
    if !passed {
        return Ok(out);
    }

    at("save")?;
    let timer = Timer::start();
    let g = finish(timer, save_gate(ctx, access, server).await);
    record(ctx, &g)?;
    let passed = g.passed;
    out.push(g);
    let Some((restored, claims)) = before.filter(|_| passed) else {
        return Ok(out);
    };

    at("read-back")?;
    let g = read_back_gate(ctx, plan, access, server, restored, claims).await;
    record(ctx, &g)?;
    out.push(g);
    Ok(out)
}

/// The join gate: a real Minecraft join reaches the depth the backend allows; when no
/// Minecraft stage answered, the evidence says what the game port serves instead (the
/// HTTP-only candidate's tell).
async fn join_gate(
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

/// The read-back gate (on the clone): with saves off, every world claim reads back, holds files
/// where it held them before the candidate, and is not torn; the evidence has each claim's
/// digest and file count before (`restored`) and now.
async fn read_back_gate(
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

/// The save gate: the game answers a save over RCON with "Saved the game".
async fn save_gate(ctx: &CaseContext<'_>, access: &Access, server: &str) -> Gate {
    let saved = rcon(ctx, access, server, &["save-all flush"]).await;
    ctx.uses("RCON reply to save-all");
    let (passed, reason, evidence) = match saved {
        Ok(replies) => (
            replies.iter().any(|r| r.contains("Saved the game")),
            Some(format!(
                "the game replied {replies:?}, not \"Saved the game\""
            )),
            Observed::Read(SaveEvidence { replies }),
        ),
        Err(e) => (false, Some(e.to_string()), gate_error(&e)),
    };
    gate(server, GateEvidence::Save(evidence), passed, reason)
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
    let evidence = ImageEvidence {
        pod_uid: pod.as_ref().and_then(|p| p.metadata.uid.clone()),
        image_id,
        pinned: pinned.to_string(),
        spec_image: wanted,
        waiting_reason: waiting,
        gameserver_phase: gs_phase,
        gameserver_ready_reason: gs_reason,
    };
    Ok(gate(
        server,
        GateEvidence::Image(Observed::Read(evidence)),
        passed,
        Some(reason),
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
            Some(g) if g >= wanted => Progress::Met,
            _ => Progress::Pending,
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
                return Progress::Pending;
            }
            if let Some(reason) = pod.and_then(crash_loop) {
                return Progress::Terminal(reason);
            }
            ready.check(pod)
        },
    );
    let bound = ctx.bounds.pull_failure.max(Duration::from_secs(1));
    Ok(await_object(pods, pod_name, condition, bound).await?)
}

/// The game container restarts after exiting (`CrashLoopBackOff`, or terminated with a
/// restart already counted): the candidate's image ran but the game does not stay up — e.g. a
/// version that cannot read the world's format. Names the last exit.
fn crash_loop(pod: &Pod) -> Option<String> {
    let c = pod
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == names::containers::GAME)?;
    let waiting = c.state.as_ref()?.waiting.as_ref()?.reason.as_deref()?;
    if waiting != "CrashLoopBackOff" {
        return None;
    }
    let last = c
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .map(|t| {
            format!(
                "; last exit code {}{}",
                t.exit_code,
                t.message
                    .as_deref()
                    .map(|m| format!(": {}", m.trim()))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_default();
    Some(format!(
        "container `{}` is CrashLoopBackOff after {} restart(s){last}",
        c.name, c.restart_count
    ))
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
                return Progress::Pending;
            }
            // The rule of every gate that waits on a pod: a crash loop is terminal at once.
            if let Some(reason) = pod.and_then(crash_loop) {
                return Progress::Terminal(reason);
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

/// What the rollback works on.
struct Rolling<'a> {
    clone: &'a str,
    previous: &'a str,
    backup: &'a str,
    restore: &'a str,
    /// The world claims the backup covers.
    claims: &'a [String],
    /// What the clone's claims held right after the seeding restore (the snapshot).
    restored: &'a Readback,
    /// The source's baseline (its claims' digests), to see that the snapshot seeded them.
    source_baseline: Option<&'a MemberBaseline>,
}

/// Rolls the clone back (re-pin, or restore the pre-candidate snapshot and re-pin) and judges
/// it from what is read back: a restore-required rollback must leave every world claim with
/// exactly the snapshot's digest (read while the clone is still suspended, before the game
/// writes anything); the seeding restore must not have left empty a claim that holds data on
/// the source; then the previous version runs, a real join reaches play, a save succeeds and
/// the claims read back whole.
async fn rollback_clone(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    access: &Access,
    r: &Rolling<'_>,
) -> Result<Gate, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let clone = r.clone;
    let pod_name = names::pod(clone);
    let mut problems: Vec<String> = Vec::new();
    let mut evidence = RollbackEvidence::new(plan.rollback, digests_of(r.restored));
    unseeded_claims(plan, r, &mut problems);
    match plan.rollback {
        Rollback::Compatible => {
            patch_server(ctx, clone, json!({"spec": {"version": r.previous}})).await?;
        }
        Rollback::RestoreRequired => {
            patch_server(
                ctx,
                clone,
                json!({"spec": {"version": r.previous, "suspend": true}}),
            )
            .await?;
            await_server_phase(ctx, clone, "Suspended").await?;
            await_condition(&pods, &pod_name, conditions::deleted(), ctx.bounds.settle).await?;
            let id = restore_into(
                ctx,
                plan,
                "restore the pre-candidate snapshot",
                r.restore,
                r.backup,
                clone,
            )
            .await?;
            evidence.restored_snapshot = Some(id);
            // Read while still suspended: nothing but the restore has written the claims.
            let back = read_claims(ctx, plan, "rollback-restored-read", r.claims).await?;
            for claim in r.claims {
                let want = r.restored.claims.get(claim).map(|i| i.digest.as_str());
                let got = back.claims.get(claim).map(|i| i.digest.as_str());
                if want != got {
                    problems.push(format!(
                        "{claim}: digest {} after the rollback restore, not the snapshot's {} (the claim does not hold exactly the snapshot)",
                        short(got),
                        short(want)
                    ));
                }
            }
            evidence.digests_after_restore = Some(digests_of(&back));
            patch_server(ctx, clone, json!({"spec": {"suspend": false}})).await?;
        }
    }
    // The clone ran the candidate until now: wait for the pod of the previous version, not
    // the candidate's pod that is still Ready while the StatefulSet rolls.
    let previous_image = version_image(ctx, &plan.template, r.previous).await?;
    let pod = match await_pod_running_image(ctx, &pods, &pod_name, &previous_image).await {
        Ok(pod) => pod,
        Err(e) => {
            problems.push(format!("the previous version did not come back: {e}"));
            evidence.error = Some(problems.join("; "));
            return Ok(gate(
                clone,
                GateEvidence::Rollback(Box::new(evidence)),
                false,
                Some(problems.join("; ")),
            ));
        }
    };
    await_server_phase(ctx, clone, "Running").await?;
    let verdict = join(ctx, access, clone, Depth::Play).await?;
    if !verdict.ok {
        problems.push(format!("join after rollback: {}", verdict.line()));
    }
    let saved = save_gate(ctx, access, clone).await;
    if !saved.passed {
        problems.push(format!(
            "save after rollback: {}",
            saved.reason.clone().unwrap_or_default()
        ));
    }
    let readback = with_saves_off(
        ctx,
        access,
        clone,
        read_claims(ctx, plan, "rollback-read", r.claims),
    )
    .await?;
    ctx.uses("world read back after the rollback");
    unsound_after_rollback(r, &readback, &mut problems);
    evidence.pod_uid = pod.metadata.uid.clone();
    evidence.join = Some(verdict.line());
    evidence.save = match saved.evidence {
        GateEvidence::Save(save) => Some(save),
        _ => None,
    };
    evidence.digests_after_rollback = Some(digests_of(&readback));
    evidence.readback = Some(json!(readback));
    let passed = problems.is_empty();
    Ok(gate(
        clone,
        GateEvidence::Rollback(Box::new(evidence)),
        passed,
        Some(problems.join("; ")),
    ))
}

/// The snapshot seeded every world claim the source holds data in: a clone claim the seeding
/// restore left empty while the source's claim of the same suffix holds data is a problem.
fn unseeded_claims(plan: &Plan, r: &Rolling<'_>, problems: &mut Vec<String>) {
    for claim in r.claims {
        let Some(suffix) = claim.strip_prefix(r.clone) else {
            continue;
        };
        let source_claim = format!("{}{suffix}", plan.source);
        let source_has_data = r
            .source_baseline
            .and_then(|b| b.digests.get(&source_claim))
            .is_some_and(|d| d != EMPTY_DIGEST);
        let restored_files = r.restored.claims.get(claim).map(|i| i.files).unwrap_or(0);
        if source_has_data && restored_files == 0 {
            problems.push(format!(
            "{claim}: the snapshot restored no files, but the source's {source_claim} holds data (the backup does not cover it)"
        ));
        }
    }
}

/// After the rollback every world claim reads back, is not torn, and holds files where the
/// snapshot did.
fn unsound_after_rollback(r: &Rolling<'_>, readback: &Readback, problems: &mut Vec<String>) {
    for claim in r.claims {
        match readback.claims.get(claim) {
            None => problems.push(format!("{claim} was not read after the rollback")),
            Some(i) if i.torn => problems.push(format!(
                "{claim} is torn after the rollback: {}",
                i.problem.as_deref().unwrap_or("the save is inconsistent")
            )),
            Some(i)
                if i.files == 0 && r.restored.claims.get(claim).is_some_and(|w| w.files > 0) =>
            {
                problems.push(format!("{claim} holds no files after the rollback"))
            }
            Some(_) => {}
        }
    }
}

/// The digest of a claim without any file (SHA-256 of nothing).
const EMPTY_DIGEST: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn short(digest: Option<&str>) -> String {
    match digest {
        Some(d) => d.chars().take(12).collect(),
        None => "(not read)".into(),
    }
}
