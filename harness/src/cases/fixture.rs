//! The world every case starts from: a namespace with the restic repository and RCON secrets, a
//! GameTemplate with the fixture game's versions, and GameServers pinned to a version.
//!
//! Test-only credentials live in `fixtures/credentials/`; they protect nothing real.

use std::collections::BTreeMap;

use gameplane_api::backup::{Backup, BackupSpec, RepoRef, ServerRef};
use gameplane_api::gameserver::{
    ExtraVolume, GameServer, GameServerSpec, StorageSpec, TemplateRef,
};
use gameplane_api::gametemplate::{
    AgentSpec, GamePort, GameTemplate, GameTemplateSpec, GameVersion, QuiesceCapability, RconSpec,
    SecretKeyRef, TemplateCapabilities, TemplateProbes, TemplateStorage,
};
use gameplane_api::names;
use gameplane_api::restore::{BackupRef, Restore, RestoreSpec};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, ExecAction, PersistentVolumeClaim, Pod, PodSpec, Probe, Secret,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ObjectMeta, PostParams};
use serde::Serialize;

use crate::context::{CaseContext, CaseError};
use crate::evidence::pvc_table::PvcObservation;
use crate::faults::incarnation;
use crate::wait::{await_object, conditions};

/// The RCON password the fixture servers use (test-only; see fixtures/credentials/README.md).
pub const RCON_PASSWORD: &str =
    include_str!("../../../fixtures/credentials/rcon-password").trim_ascii();
/// The restic repository password (test-only).
pub const RESTIC_PASSWORD: &str =
    include_str!("../../../fixtures/credentials/restic-password").trim_ascii();

/// The fixture game's images by template version id (defined with the images the deployment
/// layer loads, [`crate::deploy::images`]).
pub use crate::deploy::images::{
    AGENT_IMAGE, GAME_IMAGE_REPO, LEGACY_AGENT_IMAGE, VERSION_COMPAT, VERSION_FORMAT,
    VERSION_HTTP_ONLY, VERSION_REFUSE_LOGIN, VERSION_STABLE, VERSION_STALL_CONFIG,
    VERSION_UNPULLABLE,
};
/// A digest no registry or catalogue holds: the unpullable candidate.
pub const UNPULLABLE_IMAGE: &str = "rehearsal.local/fixture-game@sha256:0000000000000000000000000000000000000000000000000000000000000bad";
/// restic (with `sh`) for the harness's own snapshot reads: the image the operator's copy Jobs
/// use, so the same repository format is read.
pub const RESTIC_IMAGE: &str = crate::probe::restic::IMAGE;
/// Busybox for the harness's own volume probes.
pub const BUSYBOX_IMAGE: &str = "busybox:1.36";

/// The extra world every fixture server has (its claim is `<server>-extra-nether`).
pub const EXTRA_WORLD: &str = "nether";
/// Where the game sees the extra world's claim mounted.
pub const EXTRA_MOUNT: &str = "/worlds/nether";

/// The Secret holding the RCON password (key `password`) the template points the game at.
pub const RCON_SECRET: &str = "rcon";
/// The Secret naming the case's restic repository (`repo`, its URL) and its `password`: what
/// the Backups copy into.
pub const REPO_SECRET: &str = "restic-repo";
/// The same repository with the wrong password: a copy into it must fail.
pub const BAD_REPO_SECRET: &str = "restic-repo-wrong-password";

/// Which agent the template deploys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// Has the pod-bound identity route.
    Current,
    /// An older agent without it.
    Legacy,
    /// No agent at all (`spec.agent.disabled`): the server's backups are raw copies.
    Disabled,
}

/// What a case asks of its fixture.
#[derive(Debug, Clone)]
pub struct FixtureOptions {
    /// Which agent the template deploys (the reference operator runs it; see `provides_agent`).
    pub agent: AgentKind,
    /// Candidate images by version id (digest-pinned references); versions missing here use tags.
    pub pinned: BTreeMap<String, String>,
    /// The template names its agent image (the reference operator runs it). Off for Gameplane,
    /// which injects its own agent and talks to it over mutual TLS: the template then provides
    /// only the game container. [`install`] sets it from the operator the cluster runs.
    pub provides_agent: bool,
    /// The template declares the extra world (`storage.extra`), for servers that declare none
    /// of their own (the operator falls back to the template's).
    pub extra_on_template: bool,
}

impl Default for FixtureOptions {
    fn default() -> Self {
        Self {
            agent: AgentKind::Current,
            pinned: BTreeMap::new(),
            provides_agent: true,
            extra_on_template: false,
        }
    }
}

/// The objects a case was given.
#[derive(Debug, Clone, Serialize)]
pub struct Fixture {
    /// The case namespace the fixture's namespaced objects live in.
    pub namespace: String,
    /// Cluster-scoped, so named after the namespace.
    pub template: String,
    /// The restic repository URL (`rest:http://HOST:PORT/<name>`) in the repository Secret.
    pub repo: String,
}

/// Markers a server's worlds are seeded with, distinct per server so read-back can tell whose
/// data a volume holds.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Markers {
    /// Seeded into the primary world (`FIXTURE_WORLD_MARKER`).
    pub primary: String,
    /// Seeded into the extra world (`FIXTURE_EXTRA_MARKER`).
    pub extra: String,
    /// Seeded into the mods claim (`FIXTURE_MODS_MARKER`).
    pub mods: String,
}

impl Markers {
    /// The markers of `server` in `namespace`: `primary-<server>-<namespace>` and so on.
    pub fn for_server(namespace: &str, server: &str) -> Self {
        Self {
            primary: format!("primary-{server}-{namespace}"),
            extra: format!("extra-{server}-{namespace}"),
            mods: format!("mods-{server}-{namespace}"),
        }
    }
}

pub(super) fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

fn version(id: &str, image: String, default: bool) -> GameVersion {
    GameVersion {
        id: id.into(),
        display_name: format!("Fixture game {id}"),
        image,
        env: vec![],
        default: default.then_some(true),
        game_version: Some("26.1".into()),
    }
}

/// The template's image for `id`: the pinned digest when given, else the catalogue tag.
fn image_for(options: &FixtureOptions, id: &str) -> String {
    if let Some(pinned) = options.pinned.get(id) {
        return pinned.clone();
    }
    match id {
        VERSION_UNPULLABLE => UNPULLABLE_IMAGE.to_string(),
        other => format!("{GAME_IMAGE_REPO}:{other}"),
    }
}

/// How long the readiness probe waits for the game port ([`readiness_probe`]).
pub const READY_WITHIN: &str = "900ms";

/// The fixture game's readiness probe, chosen deliberately (Kind runs the same template).
///
/// A kubelet probes readiness as soon as the container runs (the embedded node at once; Kind's
/// kubelet on the first status sync after the start), usually before the game has bound its
/// port; a `tcpSocket` probe then fails and the pod waits a full period for the next try,
/// which was one second per game pod start. The exec probe `fixture-game ready` connects to the
/// game port (`POD_IP`:`FIXTURE_GAME_PORT`, as the game binds them) and retries for at most
/// [`READY_WITHIN`], so the first probe succeeds as soon as the game listens. Ready means what
/// it meant: the game accepts connections. `timeoutSeconds` 2 leaves room for the exec's own
/// start on Kind; `periodSeconds` is Kubernetes' default (10), so a running game costs one exec
/// every 10 s; `failureThreshold` 3 as by default.
pub fn readiness_probe() -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(vec![
                "fixture-game".into(),
                "ready".into(),
                "--within".into(),
                READY_WITHIN.into(),
            ]),
        }),
        period_seconds: Some(10),
        timeout_seconds: Some(2),
        failure_threshold: Some(3),
        ..Default::default()
    }
}

/// The GameTemplate a fixture uses: the fixture game's versions, Minecraft's RCON (the Source
/// protocol), the quiesce commands, the readiness probe ([`readiness_probe`]), and (when
/// [`FixtureOptions::provides_agent`]) the agent.
pub fn template(name: &str, options: &FixtureOptions) -> GameTemplate {
    let ids = [
        VERSION_STABLE,
        VERSION_COMPAT,
        VERSION_FORMAT,
        VERSION_HTTP_ONLY,
        VERSION_UNPULLABLE,
        VERSION_REFUSE_LOGIN,
        VERSION_STALL_CONFIG,
    ];
    let agent_image = match options.agent {
        AgentKind::Current | AgentKind::Disabled => AGENT_IMAGE,
        AgentKind::Legacy => LEGACY_AGENT_IMAGE,
    };
    GameTemplate::new(
        name,
        GameTemplateSpec {
            display_name: "Rehearsal fixture game".into(),
            game: "minecraft-java".into(),
            version: VERSION_STABLE.into(),
            image: image_for(options, VERSION_STABLE),
            versions: ids
                .iter()
                .map(|id| version(id, image_for(options, id), *id == VERSION_STABLE))
                .collect(),
            env: vec![
                env(
                    "FIXTURE_EXTRA_WORLDS",
                    &format!("{EXTRA_WORLD}={EXTRA_MOUNT}"),
                ),
                env("FIXTURE_MODS_DIR", names::MODS_MOUNT_PATH),
            ],
            ports: vec![GamePort {
                name: "minecraft".into(),
                container_port: 25565,
                protocol: Some("TCP".into()),
            }],
            storage: options.extra_on_template.then(|| TemplateStorage {
                extra: vec![extra_world()],
                ..Default::default()
            }),
            rcon: Some(RconSpec {
                protocol: Some("source".into()),
                port: Some(25575),
                password_secret_ref: Some(SecretKeyRef {
                    name: RCON_SECRET.into(),
                    key: "password".into(),
                }),
                password_env: None,
            }),
            capabilities: Some(TemplateCapabilities {
                quiesce: Some(QuiesceCapability {
                    quiesce: vec!["save-off".into(), "save-all flush".into()],
                    unquiesce: vec!["save-on".into()],
                    failure_pattern: None,
                }),
            }),
            agent: match options.agent {
                AgentKind::Disabled => Some(AgentSpec {
                    image: None,
                    disabled: Some(true),
                }),
                _ => options.provides_agent.then(|| AgentSpec {
                    image: Some(agent_image.into()),
                    disabled: None,
                }),
            },
            probes: Some(TemplateProbes {
                readiness: Some(readiness_probe()),
                liveness: None,
                startup: None,
            }),
        },
    )
}

/// The fixture's extra world ([`EXTRA_WORLD`] at [`EXTRA_MOUNT`]), as a server or template
/// declares it.
fn extra_world() -> ExtraVolume {
    ExtraVolume {
        name: EXTRA_WORLD.into(),
        mount_path: EXTRA_MOUNT.into(),
        size: Quantity("1Gi".into()),
    }
}

/// A GameServer pinned to `version`, with one extra world, seeded with `markers`.
pub fn server(
    name: &str,
    template: &str,
    version: &str,
    markers: &Markers,
    suspend: bool,
) -> GameServer {
    let mut gs = GameServer::new(
        name,
        GameServerSpec {
            template_ref: TemplateRef {
                name: template.into(),
            },
            version: Some(version.into()),
            image: None,
            suspend: suspend.then_some(true),
            storage: Some(StorageSpec {
                size: Some(Quantity("1Gi".into())),
                storage_class_name: None,
                mount_path: None,
                extra: vec![extra_world()],
            }),
            env: vec![
                env("FIXTURE_WORLD_MARKER", &markers.primary),
                env("FIXTURE_EXTRA_MARKER", &markers.extra),
                env("FIXTURE_MODS_MARKER", &markers.mods),
            ],
            idle: None,
        },
    );
    gs.metadata.labels = Some(BTreeMap::from([(
        "rehearsal.local/fleet".to_string(),
        template.to_string(),
    )]));
    gs
}

fn secret(name: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        string_data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..Default::default()
    }
}

/// The name of the case's restic repository on the backend's REST server: the case's namespace
/// (unique per case and run).
pub fn repository_name(namespace: &str) -> &str {
    namespace
}

/// The case's repository URL (`rest:http://HOST:PORT/<name>`): a restic REST server the
/// backend runs, so the copy Jobs of either operator reach it without mounting anything.
pub fn repository_url(ctx: &CaseContext<'_>) -> Result<String, CaseError> {
    ctx.backend
        .repository_url(repository_name(&ctx.namespace))
        .map_err(|e| CaseError::Setup(format!("the case's restic repository: {e}")))
}

/// The Secrets every case gets: the RCON password and the repository (`repo` = `repo_url`,
/// `password`), as Gameplane reads them.
pub fn secrets(repo_url: &str) -> Vec<Secret> {
    vec![
        secret(RCON_SECRET, &[("password", RCON_PASSWORD)]),
        secret(
            REPO_SECRET,
            &[("repo", repo_url), ("password", RESTIC_PASSWORD)],
        ),
    ]
}

/// The repository Secret with the wrong password.
pub fn bad_repo_secret(repo_url: &str) -> Secret {
    secret(
        BAD_REPO_SECRET,
        &[("repo", repo_url), ("password", "not-the-password")],
    )
}

/// Installs the secrets and the template into the case's namespace.
pub async fn install(
    ctx: &CaseContext<'_>,
    options: &FixtureOptions,
) -> Result<Fixture, CaseError> {
    let ns = ctx.namespace.clone();
    let secrets_api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let repo = repository_url(ctx)?;
    ctx.backend
        .create_repository(repository_name(&ctx.namespace))
        .await
        .map_err(|e| CaseError::Setup(format!("the case's restic repository: {e}")))?;
    for s in secrets(&repo) {
        let name = s.metadata.name.clone().unwrap_or_default();
        secrets_api
            .create(&PostParams::default(), &s)
            .await
            .map_err(CaseError::kube("create Secret", format!("{ns}/{name}")))?;
    }
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    let options = FixtureOptions {
        provides_agent: options.provides_agent && ctx.operator.template_provides_agent(),
        ..options.clone()
    };
    let t = template(&ns, &options);
    templates
        .create(&PostParams::default(), &t)
        .await
        .map_err(CaseError::kube("create GameTemplate", ns.clone()))?;
    Ok(Fixture {
        namespace: ns.clone(),
        template: ns,
        repo,
    })
}

/// Creates the Secret naming the case's repository with a wrong password.
pub async fn install_bad_repo_secret(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let repo = repository_url(ctx)?;
    secrets
        .create(&PostParams::default(), &bad_repo_secret(&repo))
        .await
        .map_err(CaseError::kube(
            "create Secret",
            format!("{}/{BAD_REPO_SECRET}", ctx.namespace),
        ))?;
    Ok(())
}

/// Creates GameServer `name` (pinned to `version`).
pub async fn create_server(
    ctx: &CaseContext<'_>,
    fixture: &Fixture,
    name: &str,
    version: &str,
    suspend: bool,
) -> Result<GameServer, CaseError> {
    let markers = Markers::for_server(&fixture.namespace, name);
    let servers: Api<GameServer> = Api::namespaced(ctx.client.clone(), &fixture.namespace);
    servers
        .create(
            &PostParams::default(),
            &server(name, &fixture.template, version, &markers, suspend),
        )
        .await
        .map_err(CaseError::kube(
            "create GameServer",
            format!("{}/{name}", fixture.namespace),
        ))
}

/// Waits until GameServer `name` reports `phase` (failing fast on `Failed`).
pub async fn await_server_phase(
    ctx: &CaseContext<'_>,
    name: &str,
    phase: &str,
) -> Result<GameServer, CaseError> {
    let servers: Api<GameServer> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    Ok(await_object(
        &servers,
        name,
        conditions::gameserver_phase(phase),
        ctx.bounds.settle,
    )
    .await?)
}

/// Waits until the server's pod is Ready and returns it.
pub async fn await_server_pod_ready(ctx: &CaseContext<'_>, server: &str) -> Result<Pod, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    Ok(await_object(
        &pods,
        &names::pod(server),
        conditions::pod_ready(),
        ctx.bounds.settle,
    )
    .await?)
}

/// A server's game incarnation as the pod status shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GameIncarnation {
    /// The pod's UID: a new one means the pod was replaced.
    pub pod_uid: String,
    /// The game container's runtime ID: a new one means a new process.
    pub container_id: String,
    /// The game container's restart count in the pod status.
    pub restart_count: i32,
}

/// Reads the game container's incarnation from the server's pod.
pub async fn game_incarnation(
    ctx: &CaseContext<'_>,
    server: &str,
) -> Result<GameIncarnation, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod_name = names::pod(server);
    let pod = pods.get(&pod_name).await.map_err(CaseError::kube(
        "get Pod",
        format!("{}/{pod_name}", ctx.namespace),
    ))?;
    let inc = incarnation(&pod, names::containers::GAME).ok_or_else(|| {
        CaseError::assertion(
            format!("pod {}/{pod_name}", ctx.namespace),
            "game container status",
            "a running game container with a containerID",
            crate::wait::describe(Some(&pod)),
        )
    })?;
    Ok(GameIncarnation {
        pod_uid: inc.pod_uid,
        container_id: inc.container_id,
        restart_count: inc.restart_count,
    })
}

/// The server's PVCs found by ownerReference UID (not by labels), as UID-table rows.
pub async fn server_pvcs(
    ctx: &CaseContext<'_>,
    server: &str,
) -> Result<Vec<PvcObservation>, CaseError> {
    let servers: Api<GameServer> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let gs = servers.get(server).await.map_err(CaseError::kube(
        "get GameServer",
        format!("{}/{server}", ctx.namespace),
    ))?;
    let owner_uid = gs.metadata.uid.clone().unwrap_or_default();
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut rows = Vec::new();
    for p in pvcs
        .list(&Default::default())
        .await
        .map_err(CaseError::kube("list PVCs", ctx.namespace.clone()))?
        .items
    {
        let owned = p
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == owner_uid);
        if !owned {
            continue;
        }
        let name = p.metadata.name.clone().unwrap_or_default();
        let uid = p.metadata.uid.clone().unwrap_or_default();
        let volume = p.spec.as_ref().and_then(|s| s.volume_name.clone());
        rows.push(PvcObservation::classify(
            server,
            &name,
            &uid,
            volume.as_deref(),
        ));
    }
    rows.sort_by(|a, b| a.claim.cmp(&b.claim));
    Ok(rows)
}

/// Creates a quiesced Backup of `server` into the repository named by Secret `repo_secret`.
pub async fn create_backup_into(
    ctx: &CaseContext<'_>,
    name: &str,
    server: &str,
    repo_secret: &str,
) -> Result<Backup, CaseError> {
    new_backup(ctx, name, server, repo_secret, true).await
}

/// Creates a Backup of `server` into the case's repository.
pub async fn create_backup(
    ctx: &CaseContext<'_>,
    name: &str,
    server: &str,
    quiesce: bool,
) -> Result<Backup, CaseError> {
    new_backup(ctx, name, server, REPO_SECRET, quiesce).await
}

/// The Backup the cases create: of `server` into the repository Secret `repo_secret`.
pub fn backup(name: &str, server: &str, repo_secret: &str, quiesce: bool) -> Backup {
    Backup::new(
        name,
        BackupSpec {
            server_ref: ServerRef {
                name: server.into(),
            },
            repo_ref: Some(RepoRef {
                name: repo_secret.into(),
                key: "repo".into(),
            }),
            strategy: None,
            quiesce: Some(quiesce),
            tags: vec!["rehearsal".into()],
        },
    )
}

/// The Restore the cases create: backup `backup` into `server`.
pub fn restore(name: &str, backup: &str, server: &str) -> Restore {
    Restore::new(
        name,
        RestoreSpec {
            backup_ref: BackupRef {
                name: backup.into(),
            },
            server_ref: ServerRef {
                name: server.into(),
            },
        },
    )
}

async fn new_backup(
    ctx: &CaseContext<'_>,
    name: &str,
    server: &str,
    repo_secret: &str,
    quiesce: bool,
) -> Result<Backup, CaseError> {
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    backups
        .create(
            &PostParams::default(),
            &backup(name, server, repo_secret, quiesce),
        )
        .await
        .map_err(CaseError::kube(
            "create Backup",
            format!("{}/{name}", ctx.namespace),
        ))
}

/// Creates a Restore of backup `backup` into `server`.
pub async fn create_restore(
    ctx: &CaseContext<'_>,
    name: &str,
    backup: &str,
    server: &str,
) -> Result<Restore, CaseError> {
    let restores: Api<Restore> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    restores
        .create(&PostParams::default(), &restore(name, backup, server))
        .await
        .map_err(CaseError::kube(
            "create Restore",
            format!("{}/{name}", ctx.namespace),
        ))
}

/// Runs a busybox pod with `claims` mounted at `/v/<claim>` that runs `script`, and returns its
/// output. The harness's own eyes on a volume: used to plant files and to read the RCON audit
/// log, the same way on every backend.
pub async fn volume_script(
    ctx: &CaseContext<'_>,
    pod_name: &str,
    claims: &[String],
    script: &str,
) -> Result<String, CaseError> {
    use k8s_openapi::api::core::v1::{PersistentVolumeClaimVolumeSource, Volume, VolumeMount};
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(pod_name.into()),
            labels: Some(BTreeMap::from([(
                "rehearsal.local/role".to_string(),
                "volume-probe".to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            containers: vec![Container {
                name: "probe".into(),
                image: Some(BUSYBOX_IMAGE.into()),
                command: Some(vec!["sh".into(), "-c".into(), script.into()]),
                volume_mounts: Some(
                    claims
                        .iter()
                        .map(|c| VolumeMount {
                            name: c.clone(),
                            mount_path: format!("/v/{c}"),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }],
            volumes: Some(
                claims
                    .iter()
                    .map(|c| Volume {
                        name: c.clone(),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                            claim_name: c.clone(),
                            read_only: None,
                        }),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    };
    run_pod_for_output(ctx, &pods, &pod).await
}

/// Creates `pod` (restart policy Never) in the case's namespace, waits (within the settle
/// bound) for it to succeed, returns its output and deletes it, also when it failed.
pub async fn run_pod_for_output(
    ctx: &CaseContext<'_>,
    pods: &Api<Pod>,
    pod: &Pod,
) -> Result<String, CaseError> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let object = format!("pod {}/{pod_name}", ctx.namespace);
    pods.create(&PostParams::default(), pod)
        .await
        .map_err(CaseError::kube("create", object.clone()))?;
    let outcome = async {
        await_object(
            pods,
            pod_name,
            conditions::pod_succeeded(),
            ctx.bounds.settle,
        )
        .await?;
        pods.logs(pod_name, &Default::default())
            .await
            .map_err(CaseError::kube("read logs of", object.clone()))
    }
    .await;
    let _ = pods.delete(pod_name, &Default::default()).await;
    outcome
}

/// The name of the case's second GameTemplate, the one without an agent ([`AgentKind::Disabled`]).
pub fn agentless_template_name(namespace: &str) -> String {
    format!("{namespace}-noagent")
}

/// Installs the case's second GameTemplate: the fixture's, with its agent disabled.
pub async fn install_agentless_template(ctx: &CaseContext<'_>) -> Result<String, CaseError> {
    let name = agentless_template_name(&ctx.namespace);
    let options = FixtureOptions {
        agent: AgentKind::Disabled,
        ..FixtureOptions::default()
    };
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    templates
        .create(&PostParams::default(), &template(&name, &options))
        .await
        .map_err(CaseError::kube("create GameTemplate", name.clone()))?;
    Ok(name)
}

/// Removes the case's cluster-scoped objects (its GameTemplates, named after the namespace).
pub async fn cleanup_cluster_scoped(
    client: &kube::Client,
    namespace: &str,
) -> Result<(), kube::Error> {
    let templates: Api<GameTemplate> = Api::all(client.clone());
    let agentless = agentless_template_name(namespace);
    // Most cases have no agentless template: its absence is not an error.
    match templates.delete(&agentless, &Default::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e),
    }
    templates
        .delete(namespace, &Default::default())
        .await
        .map(|_| ())
}
