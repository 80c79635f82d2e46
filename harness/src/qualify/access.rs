//! Cluster reads and the ways into a server, shared by every stage: the fleet's GameServers,
//! their pods and owned claims, the world claims' read-backs, RCON and a real Minecraft join
//! (reached through the backend, port-forward checked first), and the [`Access`] the gates use,
//! read from the fleet's own template and Secret.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use gameplane_api::gameserver::GameServer;
use gameplane_api::gametemplate::GameTemplate;
use gameplane_api::names;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde_json::Value;

use super::tidy;
use crate::backend::BackendKind;
use crate::context::{CaseContext, CaseError, HarnessMutant};
use crate::evidence::pvc_table::PvcObservation;
use crate::evidence::qualification::{AccessEvidence, ClaimDigest, MemberBaseline, Plan};
use crate::probe::minecraft::{self, Depth};
use crate::probe::readback::Readback;
use crate::wait::{await_object, conditions};

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
    pub(super) rcon_password: String,
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

pub(super) fn gs_api(ctx: &CaseContext<'_>) -> Api<GameServer> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

pub(super) async fn get_server(ctx: &CaseContext<'_>, name: &str) -> Result<GameServer, CaseError> {
    gs_api(ctx).get(name).await.map_err(CaseError::kube(
        "get GameServer",
        format!("{}/{name}", ctx.namespace),
    ))
}

pub(super) async fn get_server_opt(
    ctx: &CaseContext<'_>,
    name: &str,
) -> Result<Option<GameServer>, CaseError> {
    gs_api(ctx).get_opt(name).await.map_err(CaseError::kube(
        "get GameServer",
        format!("{}/{name}", ctx.namespace),
    ))
}

pub(super) async fn await_server_phase(
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
pub(super) async fn patch_server(
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

pub(super) async fn pod_uid(
    ctx: &CaseContext<'_>,
    server: &str,
) -> Result<Option<String>, CaseError> {
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
    Ok(owned_pvcs(&gs, &list_pvcs(ctx).await?))
}

/// Every PVC of the case namespace (one list, shared by a whole fleet's reads).
async fn list_pvcs(ctx: &CaseContext<'_>) -> Result<Vec<PersistentVolumeClaim>, CaseError> {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    Ok(pvcs
        .list(&Default::default())
        .await
        .map_err(CaseError::kube("list PVCs", ctx.namespace.clone()))?
        .items)
}

/// The claims among `all` that `gs` owns (by owner reference UID), sorted by claim.
fn owned_pvcs(gs: &GameServer, all: &[PersistentVolumeClaim]) -> Vec<PvcObservation> {
    let server = gs.metadata.name.as_deref().unwrap_or_default();
    let owner_uid = gs.metadata.uid.as_deref().unwrap_or_default();
    let mut rows: Vec<PvcObservation> = all
        .iter()
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
    rows
}

/// The world claims of a server as the operator resolves them: the primary world claim and one
/// per extra world, the server's own `storage.extra` or, when it declares none, its template's
/// (the claims a backup covers; rebuildable mods are not).
pub(super) fn world_claims(gs: &GameServer, template: Option<&GameTemplate>) -> Vec<String> {
    let name = gs.metadata.name.clone().unwrap_or_default();
    let own = gs
        .spec
        .storage
        .as_ref()
        .map(|s| s.extra.as_slice())
        .unwrap_or_default();
    let extra = if own.is_empty() {
        template
            .and_then(|t| t.spec.storage.as_ref())
            .map(|s| s.extra.as_slice())
            .unwrap_or_default()
    } else {
        own
    };
    std::iter::once(names::data_pvc(&name))
        .chain(extra.iter().map(|e| names::extra_pvc(&name, &e.name)))
        .collect()
}

/// [`world_claims`] with the server's template read from the cluster (a template that does not
/// exist declares no extra worlds). The `harness-world-claims-server-only` defect never reads
/// the template.
pub(super) async fn world_claims_of(
    ctx: &CaseContext<'_>,
    gs: &GameServer,
) -> Result<Vec<String>, CaseError> {
    if ctx.harness_mutant(HarnessMutant::WorldClaimsServerOnly) {
        return Ok(world_claims(gs, None));
    }
    let name = &gs.spec.template_ref.name;
    let template = Api::<GameTemplate>::all(ctx.client.clone())
        .get_opt(name)
        .await
        .map_err(CaseError::kube("get GameTemplate", name.clone()))?;
    Ok(world_claims(gs, template.as_ref()))
}

/// Reads the content digest of each of `claims` through a short-lived read-back pod labelled
/// with the run id.
pub(super) async fn read_claims(
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
pub(super) fn digests_of(r: &Readback) -> BTreeMap<String, ClaimDigest> {
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
pub(super) async fn with_saves_off<T>(
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
pub(super) async fn check_port_forward(
    ctx: &CaseContext<'_>,
    pod: &str,
    port: u16,
) -> Result<(), CaseError> {
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
    rcon_at(ctx, &pod, access.rcon_port, &access.rcon_password, commands).await
}

/// Sends RCON `commands` to pod `pod`'s port `port` with `password`, returning the replies:
/// the one RCON client of the cases and the qualification (a refused login or a missing reply
/// is an assertion on that RCON, an unreachable pod a set-up error).
pub async fn rcon_at(
    ctx: &CaseContext<'_>,
    pod: &str,
    port: u16,
    password: &str,
    commands: &[&str],
) -> Result<Vec<String>, CaseError> {
    let reach = ctx
        .backend
        .reach(&ctx.namespace, pod, port)
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
        password,
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

/// Each member's version, pod UID, PVC UIDs and (with `read`) world-claim digests, in the
/// order given. A member that does not exist is recorded without any (the preflight refuses
/// it). Members are observed [`READ_CONCURRENCY`] at a time, and their worlds read by one
/// short-lived pod per [`MEMBERS_PER_READ`] members whose pods run on the same node (their
/// claims can be mounted there together): a pod per member made a 100-member baseline take
/// 9–11 s, each pod starting more slowly beside 100 running servers.
pub(super) async fn members(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    servers: &[String],
    read: bool,
) -> Result<Vec<MemberBaseline>, CaseError> {
    // One list of the namespace's claims for every member: a list per member grows with the
    // fleet twice (N lists of N members' claims).
    let pvcs = list_pvcs(ctx).await?;
    let each: Vec<_> = servers
        .iter()
        .map(|member| observe_member(ctx, member, read, &pvcs))
        .collect();
    let mut seen: Vec<Observed> = futures::stream::iter(each)
        .buffered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    if read {
        let groups = read_groups(&seen);
        let reads: Vec<_> = groups
            .iter()
            .enumerate()
            .map(|(g, members)| {
                let claims: Vec<String> = members
                    .iter()
                    .flat_map(|&i| seen[i].claims.iter().cloned())
                    .collect();
                async move { read_claims(ctx, plan, &format!("baseline-{g}"), &claims).await }
            })
            .collect();
        let read: Vec<Readback> = futures::stream::iter(reads)
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        for (members, r) in groups.iter().zip(read) {
            for &i in members {
                let m = &mut seen[i];
                m.baseline.digests = m
                    .claims
                    .iter()
                    .filter_map(|c| Some((c.clone(), r.claims.get(c)?.digest.clone())))
                    .collect();
            }
        }
    }
    Ok(seen.into_iter().map(|o| o.baseline).collect())
}

/// How many members [`members`] observes at once, and how many read-back pods run at once.
const READ_CONCURRENCY: usize = 8;
/// How many members' worlds one read-back pod reads.
const MEMBERS_PER_READ: usize = 10;

/// One member as [`members`] sees it before its worlds are read.
struct Observed {
    baseline: MemberBaseline,
    /// The node its pod runs on (`None`: no pod, or not scheduled).
    node: Option<String>,
    /// Its world claims (empty unless asked to read, or when it does not exist).
    claims: Vec<String>,
}

/// The members [`members`] reads together (indices into `seen`): those whose pods run on the
/// same node, [`MEMBERS_PER_READ`] at a time, in order; a member without a pod alone (its
/// claims may be bound anywhere); members without world claims not at all.
fn read_groups(seen: &[Observed]) -> Vec<Vec<usize>> {
    let mut by_node: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut groups = Vec::new();
    for (i, m) in seen.iter().enumerate() {
        if m.claims.is_empty() {
            continue;
        }
        match &m.node {
            Some(node) => by_node.entry(node).or_default().push(i),
            None => groups.push(vec![i]),
        }
    }
    for members in by_node.into_values() {
        groups.extend(members.chunks(MEMBERS_PER_READ).map(<[usize]>::to_vec));
    }
    groups.sort_by_key(|g| g[0]);
    groups
}

/// One member's GameServer, pod and claims for [`members`].
async fn observe_member(
    ctx: &CaseContext<'_>,
    member: &str,
    read: bool,
    pvcs: &[PersistentVolumeClaim],
) -> Result<Observed, CaseError> {
    let Some(gs) = get_server_opt(ctx, member).await? else {
        return Ok(Observed {
            baseline: MemberBaseline {
                server: member.to_string(),
                version: None,
                pod_uid: None,
                pvcs: BTreeMap::new(),
                digests: BTreeMap::new(),
            },
            node: None,
            claims: Vec::new(),
        });
    };
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = names::pod(member);
    let pod = pods.get_opt(&name).await.map_err(CaseError::kube(
        "get Pod",
        format!("{}/{name}", ctx.namespace),
    ))?;
    let claims = if read {
        world_claims_of(ctx, &gs).await?
    } else {
        Vec::new()
    };
    Ok(Observed {
        baseline: MemberBaseline {
            server: member.to_string(),
            version: gs.spec.version.clone(),
            pod_uid: pod.as_ref().and_then(|p| p.metadata.uid.clone()),
            pvcs: owned_pvcs(&gs, pvcs)
                .into_iter()
                .map(|p| (p.claim, p.uid))
                .collect(),
            digests: BTreeMap::new(),
        },
        node: pod.and_then(|p| p.spec?.node_name),
        claims,
    })
}

/// One member as it is now (its version, pod UID, PVC UIDs and, with `read`, world-claim
/// digests read by read-back pod `read_as`): what a put-back records before and after.
pub(super) async fn member_state(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    member: &str,
    read_as: String,
    read: bool,
) -> Result<MemberBaseline, CaseError> {
    let pvcs = list_pvcs(ctx).await?;
    let mut o = observe_member(ctx, member, read, &pvcs).await?;
    if read && !o.claims.is_empty() {
        let r = read_claims(ctx, plan, &read_as, &o.claims).await?;
        o.baseline.digests = r.claims.into_iter().map(|(c, i)| (c, i.digest)).collect();
    }
    Ok(o.baseline)
}

/// The image a template version runs.
pub(super) async fn version_image(
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

#[cfg(test)]
mod tests {
    use gameplane_api::gameserver::{ExtraVolume, GameServerSpec, StorageSpec, TemplateRef};
    use gameplane_api::gametemplate::{GameTemplateSpec, TemplateStorage};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    fn extra(name: &str) -> ExtraVolume {
        ExtraVolume {
            name: name.into(),
            mount_path: format!("/worlds/{name}"),
            size: Quantity("1Gi".into()),
        }
    }

    fn server(extras: &[&str]) -> GameServer {
        GameServer::new(
            "mc",
            GameServerSpec {
                template_ref: TemplateRef { name: "t".into() },
                storage: Some(StorageSpec {
                    extra: extras.iter().map(|e| extra(e)).collect(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
    }

    fn template(extras: &[&str]) -> GameTemplate {
        GameTemplate::new(
            "t",
            GameTemplateSpec {
                storage: Some(TemplateStorage {
                    extra: extras.iter().map(|e| extra(e)).collect(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
    }

    #[test]
    fn a_servers_own_extra_worlds_win_over_its_templates() {
        assert_eq!(
            world_claims(&server(&["nether"]), Some(&template(&["end"]))),
            ["mc-data", "mc-extra-nether"]
        );
    }

    #[test]
    fn a_server_without_extra_worlds_has_its_templates() {
        assert_eq!(
            world_claims(&server(&[]), Some(&template(&["nether", "end"]))),
            ["mc-data", "mc-extra-nether", "mc-extra-end"]
        );
        assert_eq!(world_claims(&server(&[]), None), ["mc-data"]);
        let mut bare = server(&[]);
        bare.spec.storage = None;
        assert_eq!(
            world_claims(&bare, Some(&template(&["end"]))),
            ["mc-data", "mc-extra-end"]
        );
    }

    fn observed(node: Option<&str>, claims: usize) -> Observed {
        Observed {
            baseline: MemberBaseline {
                server: String::new(),
                version: None,
                pod_uid: None,
                pvcs: BTreeMap::new(),
                digests: BTreeMap::new(),
            },
            node: node.map(str::to_string),
            claims: (0..claims).map(|c| format!("c{c}")).collect(),
        }
    }

    #[test]
    fn members_on_one_node_are_read_together_ten_at_a_time() {
        let mut seen: Vec<Observed> = (0..23).map(|_| observed(Some("a"), 2)).collect();
        seen[3] = observed(Some("b"), 2);
        seen[5] = observed(None, 2);
        seen[7] = observed(Some("a"), 0);
        let groups = read_groups(&seen);
        // Every member with claims exactly once; none without.
        let mut all: Vec<usize> = groups.iter().flatten().copied().collect();
        all.sort_unstable();
        let want: Vec<usize> = (0..23).filter(|&i| i != 7).collect();
        assert_eq!(all, want);
        for g in &groups {
            assert!(g.len() <= MEMBERS_PER_READ, "{groups:?}");
            let nodes: std::collections::BTreeSet<_> =
                g.iter().map(|&i| seen[i].node.clone()).collect();
            assert_eq!(nodes.len(), 1, "one node per read: {groups:?}");
        }
        // The podless member and the one on node b alone.
        assert!(
            groups.contains(&vec![5]) && groups.contains(&vec![3]),
            "{groups:?}"
        );
        // 20 members on node a: two reads.
        assert_eq!(groups.len(), 4, "{groups:?}");
    }
}
