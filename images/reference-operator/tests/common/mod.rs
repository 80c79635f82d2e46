//! The rig of the integration tests: an embedded cluster with the project's CRDs, a GameTemplate
//! running the fixture game and its agent, a restic repository on the host, and the reference
//! operator as a child process (killed on drop).
//!
//! Needs the workspace binaries: `cargo build -p fixture-game -p reference-operator`.

#![allow(dead_code)] // each test binary uses a different part of the rig

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use gameplane_api::{
    Backup, BackupSpec, GamePort, GameServer, GameServerSpec, GameTemplate, GameTemplateSpec,
    GameVersion, QuiesceCapability, RconSpec, RepoRef, Restore, RestoreSpec, ServerRef,
    TemplateCapabilities, TemplateRef, TemplateStorage,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{EnvVar, Namespace, PersistentVolumeClaim, Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::{Client, Resource, ResourceExt};
use rehearsal_embedded::{EmbeddedCluster, EmbeddedConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// The namespace games run in.
pub const NS: &str = "games";
/// The RCON password of the fixture template.
pub const RCON_PASSWORD: &str = "rehearsal";
/// The restic repository password.
pub const REPO_PASSWORD: &str = "rehearsal-repo";
/// The repository Secret.
pub const REPO_SECRET: &str = "restic-repo";
/// The extra world of the fixture template.
pub const EXTRA: &str = "nether";
/// Bound of every wait.
pub const WAIT: Duration = Duration::from_secs(60);

/// Initialises test logging once (RUST_LOG controls it).
fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_test_writer()
        .try_init();
}

/// The reference operator as a child process.
pub struct Operator {
    child: tokio::process::Child,
}

impl Operator {
    /// Starts `reference-operator --kubeconfig … --cluster-dns … [--mutant …]` for `cluster`
    /// (a host process resolves the agents' Service names at the cluster's DNS server).
    pub fn start(cluster: &EmbeddedCluster, mutant: Option<&str>) -> Operator {
        Operator::start_with(cluster, mutant, &[])
    }

    /// Starts the operator with extra environment variables.
    pub fn start_with(
        cluster: &EmbeddedCluster,
        mutant: Option<&str>,
        env: &[(&str, &Path)],
    ) -> Operator {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_reference-operator"));
        cmd.arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .arg("--cluster-dns")
            .arg(cluster.dns_address().to_string())
            .arg("--preparation-deadline-secs")
            .arg("30")
            .env(
                "RUST_LOG",
                std::env::var("OPERATOR_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .kill_on_drop(true);
        if let Some(m) = mutant {
            cmd.arg("--mutant").arg(m);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        // The operator dies with the test process even if the test is killed hard.
        unsafe {
            cmd.pre_exec(|| {
                libc_prctl_pdeathsig();
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .expect("spawn reference-operator (cargo build -p reference-operator)");
        Operator { child }
    }

    /// Kills the operator like a crash (SIGKILL) and reaps it.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }

    /// Sends SIGTERM and waits for a clean exit; returns the exit status.
    pub async fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().expect("operator pid") as i32;
        // SAFETY: signalling our own child.
        unsafe { kill(pid, 15) };
        tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("the operator exits within 20 s of SIGTERM")
            .expect("wait for the operator")
    }
}

unsafe extern "C" {
    fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
    fn kill(pid: i32, sig: i32) -> i32;
}

fn libc_prctl_pdeathsig() {
    const PR_SET_PDEATHSIG: i32 = 1;
    // SAFETY: prctl with PR_SET_PDEATHSIG only sets a flag of the calling process.
    unsafe {
        prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0);
    }
}

/// An embedded cluster with the fixture template, a restic repository and an operator.
pub struct Rig {
    pub cluster: EmbeddedCluster,
    pub client: Client,
    pub repo: PathBuf,
    pub operator: Option<Operator>,
    _repo_dir: tempfile::TempDir,
}

/// The fixture template; `agent_image` selects the normal or the legacy agent.
pub fn template(name: &str, agent_image: Option<&str>) -> GameTemplate {
    let env = |k: &str, v: &str| EnvVar {
        name: k.into(),
        value: Some(v.into()),
        ..Default::default()
    };
    GameTemplate::new(
        name,
        GameTemplateSpec {
            display_name: "Fixture Minecraft".into(),
            game: "minecraft-java".into(),
            version: "1".into(),
            image: "rehearsal.local/fixture-game:1.0".into(),
            versions: vec![
                GameVersion {
                    id: "1.0".into(),
                    display_name: "1.0".into(),
                    image: "rehearsal.local/fixture-game:1.0".into(),
                    default: Some(true),
                    ..Default::default()
                },
                GameVersion {
                    id: "1.1".into(),
                    display_name: "1.1 (compatible)".into(),
                    image: "rehearsal.local/fixture-game:1.1-compat".into(),
                    ..Default::default()
                },
            ],
            env: vec![
                env("RCON_PASSWORD", RCON_PASSWORD),
                env("FIXTURE_DATA_DIR", "/data"),
                env("FIXTURE_EXTRA_WORLDS", &format!("{EXTRA}=/worlds/{EXTRA}")),
                env("FIXTURE_MODS_DIR", "/mods"),
            ],
            ports: vec![
                GamePort {
                    name: "game".into(),
                    container_port: 25565,
                    protocol: None,
                },
                GamePort {
                    name: "rcon".into(),
                    container_port: 25575,
                    protocol: None,
                },
            ],
            storage: Some(TemplateStorage {
                extra: vec![gameplane_api::ExtraVolume {
                    name: EXTRA.into(),
                    mount_path: format!("/worlds/{EXTRA}"),
                    size: Quantity("1Gi".into()),
                }],
                ..Default::default()
            }),
            rcon: Some(RconSpec {
                protocol: Some("source".into()),
                port: Some(25575),
                password_env: Some("RCON_PASSWORD".into()),
                ..Default::default()
            }),
            capabilities: Some(TemplateCapabilities {
                quiesce: Some(QuiesceCapability {
                    quiesce: vec!["save-off".into(), "save-all flush".into()],
                    unquiesce: vec!["save-on".into()],
                    failure_pattern: None,
                }),
            }),
            agent: agent_image.map(|image| gameplane_api::AgentSpec {
                disabled: None,
                image: Some(image.into()),
            }),
            // The operator's default readiness probe (TCP on the game port).
            probes: None,
        },
    )
}

impl Rig {
    /// Starts the cluster, installs CRDs, namespace, templates `mc` (current agent) and
    /// `mc-legacy` (agent without pod-bound routes), the repository Secret, and the operator.
    pub async fn start(mutant: Option<&str>) -> Rig {
        init_tracing();
        let cluster = EmbeddedCluster::start(EmbeddedConfig::default())
            .await
            .expect("start the embedded cluster");
        let client = cluster.client();
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for crd in gameplane_api::crds::all() {
            crds.create(&PostParams::default(), &crd)
                .await
                .expect("create CRD");
            let name = crd.name_any();
            wait_for(
                &crds,
                &name,
                "established",
                conditions::is_crd_established(),
            )
            .await;
        }
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: meta(NS),
                    ..Default::default()
                },
            )
            .await
            .expect("create namespace");
        let templates: Api<GameTemplate> = Api::all(client.clone());
        templates
            .create(&PostParams::default(), &template("mc", None))
            .await
            .expect("create template");
        templates
            .create(
                &PostParams::default(),
                &template("mc-legacy", Some("rehearsal.local/fixture-agent:legacy")),
            )
            .await
            .expect("create legacy template");

        let repo_dir = tempfile::Builder::new()
            .prefix("restic-repo-")
            .tempdir()
            .expect("repo tempdir");
        let repo = repo_dir.path().join("repo");
        let init = restic(&repo, &["init"]).await;
        assert!(init.0, "restic init {}: {}", repo.display(), init.1);
        let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
        secrets
            .create(
                &PostParams::default(),
                &Secret {
                    metadata: meta(REPO_SECRET),
                    data: Some(BTreeMap::from([
                        (
                            "repo".to_string(),
                            ByteString(repo.to_string_lossy().as_bytes().to_vec()),
                        ),
                        (
                            "password".to_string(),
                            ByteString(REPO_PASSWORD.as_bytes().to_vec()),
                        ),
                    ])),
                    ..Default::default()
                },
            )
            .await
            .expect("create repo secret");
        let operator = Operator::start(&cluster, mutant);
        Rig {
            cluster,
            client,
            repo,
            operator: Some(operator),
            _repo_dir: repo_dir,
        }
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), NS)
    }

    /// Creates GameServer `name` from template `template`.
    pub async fn create_server(&self, name: &str, template: &str, suspend: bool) -> GameServer {
        let gs = GameServer {
            metadata: meta(name),
            spec: GameServerSpec {
                template_ref: TemplateRef {
                    name: template.into(),
                },
                version: Some("1.0".into()),
                suspend: Some(suspend),
                ..Default::default()
            },
            status: None,
        };
        self.api::<GameServer>()
            .create(&PostParams::default(), &gs)
            .await
            .expect("create GameServer")
    }

    /// Waits until the server's phase is `phase`.
    pub async fn await_server_phase(&self, name: &str, phase: &'static str) -> GameServer {
        let want = phase.to_string();
        wait_for(
            &self.api::<GameServer>(),
            name,
            phase,
            move |gs: Option<&GameServer>| {
                gs.and_then(|g| g.status.as_ref()?.phase)
                    .is_some_and(|p| p.as_str() == want)
            },
        )
        .await
    }

    /// Waits until pod `<gs>-0` runs its game container and agent ready, returns it.
    pub async fn await_running_pod(&self, gs: &str) -> Pod {
        self.await_server_phase(gs, "Running").await;
        wait_for(
            &self.api::<Pod>(),
            &format!("{gs}-0"),
            "running game",
            |p: Option<&Pod>| {
                matches!(
                    reference_operator::incarnation::observe(p),
                    reference_operator::incarnation::Observation::Running(_)
                )
            },
        )
        .await
    }

    /// Waits until pod `<gs>-0` is gone.
    pub async fn await_no_pod(&self, gs: &str) {
        let pods = self.api::<Pod>();
        let name = format!("{gs}-0");
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let Some(pod) = pods.get_opt(&name).await.expect("get pod") else {
                return;
            };
            let uid = pod.uid().unwrap_or_default();
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let gone = tokio::time::timeout(
                left,
                await_condition(pods.clone(), &name, conditions::is_deleted(&uid)),
            )
            .await;
            if gone.is_err() {
                panic!(
                    "pod {NS}/{name} still exists after {WAIT:?}: {}",
                    dump(&pods.get_opt(&name).await.ok().flatten())
                );
            }
        }
    }

    /// Creates a Backup of `server`.
    pub async fn create_backup(&self, name: &str, server: &str) -> Backup {
        let b = Backup::new(
            name,
            BackupSpec {
                server_ref: ServerRef {
                    name: server.into(),
                },
                repo_ref: Some(RepoRef {
                    name: REPO_SECRET.into(),
                    key: "repo".into(),
                }),
                strategy: None,
                quiesce: Some(true),
                tags: vec![],
            },
        );
        self.api::<Backup>()
            .create(&PostParams::default(), &b)
            .await
            .expect("create Backup")
    }

    /// Waits until the Backup is Succeeded or Failed.
    pub async fn await_backup_done(&self, name: &str) -> Backup {
        wait_for(
            &self.api::<Backup>(),
            name,
            "Succeeded or Failed",
            |b: Option<&Backup>| b.and_then(Backup::phase).is_some_and(|p| p.is_terminal()),
        )
        .await
    }

    /// Waits until the Backup's phase is `Running` (the copy Job exists).
    pub async fn await_backup_running(&self, name: &str) -> Backup {
        wait_for(
            &self.api::<Backup>(),
            name,
            "Running",
            |b: Option<&Backup>| {
                b.and_then(Backup::phase) == Some(gameplane_api::BackupPhase::Running)
            },
        )
        .await
    }

    /// Creates a Restore of `backup` into `server`.
    pub async fn create_restore(&self, name: &str, backup: &str, server: &str) -> Restore {
        let r = Restore::new(
            name,
            RestoreSpec {
                backup_ref: gameplane_api::BackupRef {
                    name: backup.into(),
                },
                server_ref: ServerRef {
                    name: server.into(),
                },
            },
        );
        self.api::<Restore>()
            .create(&PostParams::default(), &r)
            .await
            .expect("create Restore")
    }

    /// Waits until the Restore is Succeeded or Failed.
    pub async fn await_restore_done(&self, name: &str) -> Restore {
        wait_for(
            &self.api::<Restore>(),
            name,
            "Succeeded or Failed",
            |r: Option<&Restore>| {
                r.and_then(|r| r.status.as_ref()?.phase)
                    .is_some_and(|p| p.is_terminal())
            },
        )
        .await
    }

    /// Sets `spec.suspend` of a server.
    pub async fn set_suspend(&self, server: &str, suspend: bool) {
        self.api::<GameServer>()
            .patch(
                server,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"suspend": suspend}})),
            )
            .await
            .expect("patch suspend");
    }

    /// The host directory backing claim `pvc`, and its UID.
    pub async fn volume(&self, pvc: &str) -> (PathBuf, String) {
        let claim = wait_for(
            &self.api::<PersistentVolumeClaim>(),
            pvc,
            "bound",
            |c: Option<&PersistentVolumeClaim>| {
                c.and_then(|c| c.status.as_ref()?.phase.clone()).as_deref() == Some("Bound")
            },
        )
        .await;
        let uid = claim.uid().expect("pvc uid");
        let dir =
            rehearsal_embedded::controllers::volumes::volume_dir(self.cluster.state_dir(), &uid);
        (dir, uid)
    }

    /// Paths in a snapshot (host restic).
    pub async fn snapshot_paths(&self, snapshot: &str) -> Vec<String> {
        let (ok, out) = restic(&self.repo, &["ls", snapshot]).await;
        assert!(ok, "restic ls {snapshot}: {out}");
        out.lines()
            .filter(|l| l.starts_with('/'))
            .map(String::from)
            .collect()
    }

    /// Number of snapshots in the repository.
    pub async fn snapshot_count(&self) -> usize {
        let (ok, out) = restic(&self.repo, &["snapshots", "--json"]).await;
        assert!(ok, "restic snapshots: {out}");
        let list: Vec<serde_json::Value> = serde_json::from_str(out.trim()).unwrap_or_default();
        list.len()
    }
}

/// Runs host restic against `repo`; returns (success, stdout+stderr).
pub async fn restic(repo: &Path, args: &[&str]) -> (bool, String) {
    let cache = std::env::temp_dir().join("reference-operator-tests-restic-cache");
    let out = tokio::process::Command::new("restic")
        .args(args)
        .env("RESTIC_REPOSITORY", repo)
        .env("RESTIC_PASSWORD", REPO_PASSWORD)
        .env("RESTIC_CACHE_DIR", cache)
        .kill_on_drop(true)
        .output()
        .await
        .expect("run restic");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Object metadata in the test namespace.
pub fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(NS.into()),
        ..Default::default()
    }
}

/// Pretty JSON of an object (for failure messages).
pub fn dump<T: Serialize>(obj: &T) -> String {
    serde_json::to_string_pretty(obj).unwrap_or_else(|e| format!("<unserialisable: {e}>"))
}

/// Waits (bounded by [`WAIT`]) until `cond` holds for object `name`; on timeout panics with
/// the last observed object.
pub async fn wait_for<K>(api: &Api<K>, name: &str, what: &str, cond: impl Condition<K>) -> K
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
{
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(Some(obj))) => obj,
        Ok(Ok(None)) => panic!("{name}: condition {what:?} held for a missing object"),
        Ok(Err(e)) => panic!("waiting for {name} to be {what}: {e}"),
        Err(_) => {
            let last = api.get_opt(name).await.ok().flatten();
            panic!(
                "{name} not {what} within {WAIT:?}; last observed:\n{}",
                dump(&last)
            )
        }
    }
}

/// One line of the fixture game's RCON audit log.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Audit {
    pub event: String,
    pub incarnation: String,
    #[serde(default)]
    pub command: Option<String>,
}

/// The RCON audit log kept in a world directory.
pub fn audit(data_dir: &Path) -> Vec<Audit> {
    let path = data_dir.join("logs").join("rcon-audit.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Commands an incarnation received over RCON.
pub fn commands_of(log: &[Audit], incarnation: &str) -> Vec<String> {
    log.iter()
        .filter(|a| a.incarnation == incarnation && a.event == "command")
        .filter_map(|a| a.command.clone())
        .collect()
}

/// The incarnations that started, in order.
pub fn incarnations(log: &[Audit]) -> Vec<String> {
    log.iter()
        .filter(|a| a.event == "start")
        .map(|a| a.incarnation.clone())
        .collect()
}

/// A gate that holds every restic process at its first repository access (loading the key)
/// until released: the key file is replaced by a FIFO the test holds open.
pub struct RepoGate {
    fifo: PathBuf,
    real: PathBuf,
    fd: Option<std::fs::File>,
}

impl RepoGate {
    /// Closes the gate on `repo`.
    pub fn close(repo: &Path) -> RepoGate {
        let keys = repo.join("keys");
        let key = std::fs::read_dir(&keys)
            .expect("read keys/")
            .next()
            .expect("one key")
            .expect("key entry")
            .path();
        let real = repo.join("gate-key.real");
        std::fs::rename(&key, &real).expect("move key aside");
        let status = std::process::Command::new("mkfifo")
            .arg(&key)
            .status()
            .expect("mkfifo");
        assert!(status.success(), "mkfifo {}", key.display());
        // Read-write open of a FIFO does not block, and keeps readers waiting for data.
        let fd = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&key)
            .expect("open fifo");
        RepoGate {
            fifo: key,
            real,
            fd: Some(fd),
        }
    }

    /// Opens the gate: the key is back, and readers already waiting get its bytes.
    pub fn open(mut self) {
        self.release();
    }

    fn release(&mut self) {
        use std::io::Write;
        let Some(mut fd) = self.fd.take() else { return };
        let bytes = std::fs::read(&self.real).expect("read real key");
        std::fs::rename(&self.real, &self.fifo).expect("put the key back");
        let _ = fd.write_all(&bytes);
    }
}

impl Drop for RepoGate {
    fn drop(&mut self) {
        self.release();
    }
}

impl Rig {
    /// Waits until object `name` does not exist.
    pub async fn await_gone<K>(&self, name: &str)
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Serialize
            + Debug
            + Send
            + 'static,
    {
        let api = self.api::<K>();
        let Some(obj) = api.get_opt(name).await.expect("get") else {
            return;
        };
        let uid = obj.uid().unwrap_or_default();
        if tokio::time::timeout(
            WAIT,
            await_condition(api.clone(), name, conditions::is_deleted(&uid)),
        )
        .await
        .is_err()
        {
            panic!(
                "{name} still exists after {WAIT:?}: {}",
                dump(&api.get_opt(name).await.ok().flatten())
            );
        }
    }

    /// The world directory of a server on the host.
    pub async fn data_dir(&self, gs: &str) -> PathBuf {
        self.volume(&gameplane_api::names::data_pvc(gs)).await.0
    }
}

/// The `game` container's ID and restart count.
pub fn game_container(pod: &Pod) -> (String, i32) {
    let status = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == "game"))
        .unwrap_or_else(|| panic!("pod has no game container status: {}", dump(pod)));
    (
        status.container_id.clone().unwrap_or_default(),
        status.restart_count,
    )
}

/// Condition `type_` of a Backup (reason, status), for assertions.
pub fn backup_condition(b: &Backup, type_: &str) -> (String, String) {
    let c = b
        .status
        .as_ref()
        .and_then(|s| gameplane_api::conditions::find(&s.conditions, type_).cloned())
        .unwrap_or_else(|| {
            panic!(
                "Backup {} has no {type_} condition: {}",
                b.name_any(),
                dump(b)
            )
        });
    (c.status, c.reason)
}

/// The last incarnation that started, per the audit log.
pub fn current_incarnation(data_dir: &Path) -> String {
    incarnations(&audit(data_dir))
        .pop()
        .unwrap_or_else(|| panic!("no incarnation in the audit log of {}", data_dir.display()))
}

/// Makes the repository unusable: the Secret's password is wrong.
pub async fn break_repository(rig: &Rig) {
    let patch = json!({ "stringData": { "password": "not-the-password" } });
    let secrets: Api<Secret> = rig.api();
    // stringData is write-only; merge it through data to be independent of server support.
    let _ = patch;
    secrets
        .patch(
            REPO_SECRET,
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "data": { "password": ByteString(b"not-the-password".to_vec()) } }),
            ),
        )
        .await
        .expect("patch repo secret");
}

/// Creates GameServer `name` suspended (no pod), then starts it with a game image no catalogue
/// holds: its game container never runs.
pub async fn start_unpullable_server(rig: &Rig, name: &str) {
    rig.create_server(name, "mc", true).await;
    let patch = serde_json::json!({"spec": {
        "image": "rehearsal.local/fixture-game@sha256:0bad",
        "suspend": false,
    }});
    rig.api::<GameServer>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("start GameServer with an unpullable image");
}

/// Creates a quiesced Backup `name` of `server` that asks for a preparation deadline of
/// `seconds`.
pub async fn create_deadline_backup(rig: &Rig, name: &str, server: &str, seconds: u64) {
    let mut b = Backup::new(
        name,
        BackupSpec {
            server_ref: ServerRef {
                name: server.into(),
            },
            repo_ref: Some(RepoRef {
                name: REPO_SECRET.into(),
                key: "repo".into(),
            }),
            strategy: None,
            quiesce: Some(true),
            tags: vec![],
        },
    );
    b.metadata.annotations = Some(BTreeMap::from([(
        gameplane_api::names::annotations::PREPARATION_TIMEOUT_SECONDS.to_string(),
        seconds.to_string(),
    )]));
    rig.api::<Backup>()
        .create(&PostParams::default(), &b)
        .await
        .expect("create Backup");
}

/// Writes Backup `name` of `server` as an older operator left it mid-preparation: quiesce
/// annotations, `status.phase: Pending`, no `status.source`. Run it while no operator runs.
pub async fn write_legacy_backup(rig: &Rig, name: &str, server: &str) {
    use gameplane_api::names::annotations as ann;
    let at = k8s_openapi::jiff::Timestamp::now().to_string();
    rig.create_backup(name, server).await;
    let patch = serde_json::json!({"metadata": {"annotations": {
        ann::QUIESCE_ATTEMPTED: at,
        ann::QUIESCED_AT: at,
    }}});
    let api = rig.api::<Backup>();
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotate");
    let status = serde_json::json!({"status": {"phase": "Pending", "startTime": at}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("write legacy status");
}
