//! The reference operator, deployed two ways:
//! - on the embedded cluster as a sandboxed host process (`reference-operator --kubeconfig P --context C
//!   [--mutant M]`)
//!   held by a [`ChildGuard`]; it is ready when it has written the file named by
//!   `REHEARSAL_READY_FILE` (it does so once its watches are established);
//! - on Kind ([`KindInstall`]): every image the cases use loaded into the nodes, the CRDs
//!   (`fixtures/crds`) and its manifests (`images/reference-operator/deploy/`) applied with
//!   kubectl 1.37 and the context pinned; ready when its rollout is complete.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::process::{ChildGuard, Cmd, ProcessError, ProcessLog, kubectl_path};
use crate::wait::WaitError;

/// Environment variable naming the file the operator writes once it is ready.
pub const READY_FILE_ENV: &str = "REHEARSAL_READY_FILE";
/// Name of the Deployment its Kind manifests create (in [`super::SYSTEM_NAMESPACE`]).
pub const DEPLOYMENT: &str = crate::backend::operator_pod::REFERENCE_DEPLOYMENT;
/// The image its Kind manifests reference.
pub const IMAGE: &str = "rehearsal.local/reference-operator:dev";

/// Why the reference operator could not be deployed.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// The operator process could not be started.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// Waiting for the operator's rollout on the cluster failed.
    #[error(transparent)]
    Wait(#[from] WaitError),
    #[error(
        "{what} exited with {} before it was ready; its log {log} ends: {}",
        exit_code(*.code),
        last_line(.tail)
    )]
    /// The operator process exited before it wrote its ready file.
    ExitedEarly {
        /// Which operator: `reference operator`, or `operator command \`…\``.
        what: String,
        /// Its exit code (`None` when killed by a signal).
        code: Option<i32>,
        /// Its log file.
        log: PathBuf,
        /// The last lines of that log.
        tail: String,
    },
    /// The operator's sandbox could not be prepared.
    #[error(
        "cannot prepare the operator's sandbox in {state_dir}: {source}; the cluster's state directory must be writable"
    )]
    Sandbox {
        /// The cluster's state directory.
        state_dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The pipe the operator signals readiness on could not be made.
    #[error(
        "cannot make the reference operator's ready pipe {path}: {source}; the cluster's state directory must be writable"
    )]
    ReadyPipe {
        /// The pipe's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    #[error(
        "{what} was not ready within {bound:?}: it did not write its ready file {ready_file}{also}; its log {log} ends: {}",
        last_line(.tail)
    )]
    /// The operator did not write its ready file within the bound.
    NotReady {
        /// Which operator: `reference operator`, or `operator command \`…\``.
        what: String,
        /// The other readiness it was given, when it was: `, nor watched …`.
        also: String,
        /// The file the operator writes once its controllers run.
        ready_file: PathBuf,
        /// The bound that passed.
        bound: Duration,
        /// Its log file.
        log: PathBuf,
        /// The last lines of that log.
        tail: String,
    },
}

/// The program: `REHEARSAL_REFERENCE_OPERATOR`, else a sibling of the running executable
/// (cargo puts workspace binaries side by side), else `reference-operator` on PATH.
pub fn program() -> String {
    if let Ok(p) = std::env::var("REHEARSAL_REFERENCE_OPERATOR") {
        return p;
    }
    let sibling = std::env::current_exe().ok().and_then(|exe| {
        // Test binaries live in target/<profile>/deps; binaries in target/<profile>.
        let dir = exe.parent()?;
        [
            dir.join("reference-operator"),
            dir.parent()?.join("reference-operator"),
        ]
        .into_iter()
        .find(|p| p.is_file())
    });
    sibling
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "reference-operator".into())
}

/// The argv the embedded deployment runs.
pub fn process_argv(
    program: &str,
    kubeconfig: &Path,
    context: &str,
    mutant: Option<&str>,
) -> Vec<String> {
    let mut argv = vec![
        program.to_string(),
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
        "--context".into(),
        context.to_string(),
    ];
    if let Some(m) = mutant {
        argv.push("--mutant".into());
        argv.push(m.into());
    }
    argv
}

/// Environment variable giving a host-process operator the cluster's DNS server, so it reaches
/// agents by Service name as it does in a pod.
pub const CLUSTER_DNS_ENV: &str = "REFERENCE_OPERATOR_CLUSTER_DNS";

/// Starts the reference operator as a child process and waits (bounded) until it is ready.
/// Its output goes to `<state_dir>/reference-operator.log`. `cluster_dns` is the cluster's DNS
/// server: the operator resolves the agents' Service names there.
#[allow(clippy::too_many_arguments)]
pub async fn start_process(
    kubeconfig: &Path,
    context: &str,
    mutant: Option<&str>,
    cluster_dns: Option<std::net::Ipv4Addr>,
    state_dir: &Path,
    bound: Duration,
    log: &ProcessLog,
) -> Result<ChildGuard, DeployError> {
    let argv = process_argv(&program(), kubeconfig, context, mutant);
    // Sandboxed as your operator command is: the host read-only, its state writable.
    let mut cmd =
        super::sandbox::command(&argv, state_dir, &[]).map_err(|source| DeployError::Sandbox {
            state_dir: state_dir.to_path_buf(),
            source,
        })?;
    if let Some(dns) = cluster_dns {
        cmd = cmd.env(CLUSTER_DNS_ENV, dns.to_string());
    }
    let cmd = cmd.env(
        "RUST_LOG",
        std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
    );
    spawn_until_ready(
        cmd,
        Readiness {
            what: "reference operator".into(),
            state_dir,
            name: "reference-operator",
            also: None,
        },
        bound,
        log,
    )
    .await
}

/// How an operator process is told ready: its ready file, or `also` (a condition of its own
/// the cluster shows, e.g. its watches opened), whichever comes first.
pub(crate) struct Readiness<'a> {
    /// How errors name it.
    pub(crate) what: String,
    /// Where its ready file and log go.
    pub(crate) state_dir: &'a Path,
    /// The files' stem: `<state_dir>/<name>.ready`, `<name>.log`.
    pub(crate) name: &'a str,
    /// What else makes it ready, and how an error names it (`, nor watched …`).
    pub(crate) also: Option<(futures::future::BoxFuture<'a, bool>, String)>,
}

/// Spawns `cmd` with [`READY_FILE_ENV`] naming `<state_dir>/reference-operator.ready` and its
/// output in `<state_dir>/reference-operator.log`, and waits up to `bound` for it to write the
/// ready file.
pub(crate) async fn spawn_until_ready(
    cmd: Cmd,
    readiness: Readiness<'_>,
    bound: Duration,
    log: &ProcessLog,
) -> Result<ChildGuard, DeployError> {
    let state_dir = readiness.state_dir;
    let ready_file = state_dir.join(format!("{}.ready", readiness.name));
    let _ = std::fs::remove_file(&ready_file);
    // The ready file is a FIFO the harness holds open (read and write, so it never reads an
    // end of file): the operator's write wakes the wait at once, with no polling.
    let pipe_err = |source| DeployError::ReadyPipe {
        path: ready_file.clone(),
        source,
    };
    nix::unistd::mkfifo(
        &ready_file,
        nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
    )
    .map_err(|e| pipe_err(e.into()))?;
    let ready = tokio::net::unix::pipe::OpenOptions::new()
        .read_write(true)
        .open_receiver(&ready_file)
        .map_err(pipe_err)?;
    let log_file = state_dir.join(format!("{}.log", readiness.name));
    let mut child = cmd.env(READY_FILE_ENV, &ready_file).spawn(&log_file, log)?;
    let start = Instant::now();
    let (mut other, also_named) = match readiness.also {
        // Resolves only once the other readiness held.
        Some((ready, named)) => (
            Box::pin(async move {
                if !ready.await {
                    futures::future::pending::<()>().await;
                }
            }) as futures::future::BoxFuture<'_, ()>,
            named,
        ),
        None => (
            Box::pin(futures::future::pending()) as futures::future::BoxFuture<'_, ()>,
            String::new(),
        ),
    };
    loop {
        if futures::poll!(&mut other).is_ready() {
            return Ok(child);
        }
        // Readiness wakes this at once; the operator's exit and the bound are checked every
        // 10 ms (an exit closes no pipe end the harness could wait on).
        if let Ok(Ok(())) = tokio::time::timeout(Duration::from_millis(10), ready.readable()).await
        {
            let mut buf = [0u8; 16];
            match ready.try_read(&mut buf) {
                Ok(n) if n > 0 => return Ok(child),
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => {
                    return Err(pipe_err(e));
                }
                _ => {}
            }
        }
        if let Some(code) = child.try_exit() {
            return Err(DeployError::ExitedEarly {
                what: readiness.what.clone(),
                code,
                tail: tail(&log_file),
                log: log_file,
            });
        }
        if start.elapsed() > bound {
            return Err(DeployError::NotReady {
                what: readiness.what.clone(),
                also: also_named,
                ready_file: ready_file.clone(),
                bound,
                tail: tail(&log_file),
                log: log_file,
            });
        }
    }
}

/// How an error names an exit: `code 2`, or `a signal`.
fn exit_code(code: Option<i32>) -> String {
    code.map_or("a signal".into(), |c| format!("code {c}"))
}

/// The last non-empty line of a log tail, for a one-line error (`(nothing)` when empty).
fn last_line(tail: &str) -> String {
    tail.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map_or("(nothing)".into(), |l| l.trim().to_string())
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// `kubectl apply` argv for the Kind manifests, context pinned.
pub fn apply_argv(
    kubectl: &Path,
    kubeconfig: &Path,
    context: &str,
    manifests: &Path,
) -> Vec<String> {
    vec![
        kubectl.display().to_string(),
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
        "--context".into(),
        context.into(),
        "apply".into(),
        "--server-side".into(),
        "-f".into(),
        manifests.display().to_string(),
    ]
}

/// The reference operator on Kind, installed in this order: every image the cases use loaded
/// into the nodes (by the backend, before anything runs), the Gameplane CRDs applied and awaited
/// Established, the operator's manifests applied, and its rollout awaited; then the restic REST
/// server the cases' repositories live on, and its rollout.
///
/// Waiting with `kubectl rollout status` rather than for `Available=True` matters on a reused
/// cluster: an earlier rollout is still Available while the new one has not started.
#[derive(Debug, Clone)]
pub struct KindInstall {
    /// The CRDs (`fixtures/crds`).
    pub crds: PathBuf,
    /// The operator's manifests (`images/reference-operator/deploy`).
    pub manifests: PathBuf,
    /// The restic REST server the cases' repositories live on (`fixtures/rest-server`).
    pub rest_server: PathBuf,
    /// Every image the cases and the operator use ([`super::images::for_cases`]).
    pub images: Vec<String>,
    /// How long the CRDs and the rollout may take.
    pub bound: Duration,
    /// kubectl 1.37; `None` is [`kubectl_path`].
    pub kubectl: Option<PathBuf>,
}

impl KindInstall {
    /// What `rehearse run --cluster kind` installs, from the repository checkout at `root`.
    pub fn for_cases(root: &Path) -> Self {
        Self {
            crds: root.join("fixtures").join("crds"),
            manifests: root
                .join("images")
                .join("reference-operator")
                .join("deploy"),
            rest_server: root.join("fixtures").join("rest-server"),
            images: super::images::for_cases(),
            bound: Duration::from_secs(300),
            kubectl: None,
        }
    }

    /// The kubectl argvs, in the order they run, context pinned.
    pub fn kubectl_argvs(
        &self,
        kubectl: &Path,
        kubeconfig: &Path,
        context: &str,
    ) -> Vec<Vec<String>> {
        let base = |rest: &[&str]| -> Vec<String> {
            let mut argv = vec![
                kubectl.display().to_string(),
                "--kubeconfig".into(),
                kubeconfig.display().to_string(),
                "--context".into(),
                context.into(),
            ];
            argv.extend(rest.iter().map(|s| s.to_string()));
            argv
        };
        let bound = format!("{}s", self.bound.as_secs());
        vec![
            apply_argv(kubectl, kubeconfig, context, &self.crds),
            base(&[
                "wait",
                "--for",
                "condition=established",
                "--timeout",
                &bound,
                "-f",
                &self.crds.display().to_string(),
            ]),
            apply_argv(kubectl, kubeconfig, context, &self.manifests),
            base(&[
                "--namespace",
                super::SYSTEM_NAMESPACE,
                "rollout",
                "status",
                &format!("deployment/{DEPLOYMENT}"),
                "--timeout",
                &bound,
            ]),
        ]
        .into_iter()
        .chain(rest_server_argvs(
            kubectl,
            kubeconfig,
            context,
            &self.rest_server,
            self.bound,
        ))
        .collect()
    }

    /// Applies the CRDs and the operator and waits for its rollout (the images must already be
    /// in the nodes).
    pub async fn apply(
        &self,
        kubeconfig: &Path,
        context: &str,
        log: &ProcessLog,
    ) -> Result<(), DeployError> {
        let kubectl = match &self.kubectl {
            Some(k) => k.clone(),
            None => kubectl_path()?,
        };
        for argv in self.kubectl_argvs(&kubectl, kubeconfig, context) {
            Cmd::new(argv[0].clone())
                .args(argv[1..].iter().cloned())
                .timeout(self.bound + Duration::from_secs(30))
                .run_checked(log)
                .await?;
        }
        Ok(())
    }
}

/// The kubectl argvs that install the restic REST server the cases' repositories live on
/// (`fixtures/rest-server`) and wait for its rollout, context pinned. Both operators' Kind
/// installs end with them: the repository spec the cases write is the same for either.
pub fn rest_server_argvs(
    kubectl: &Path,
    kubeconfig: &Path,
    context: &str,
    manifests: &Path,
    bound: Duration,
) -> Vec<Vec<String>> {
    let mut rollout = vec![
        kubectl.display().to_string(),
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
        "--context".into(),
        context.into(),
    ];
    rollout.extend(
        [
            "--namespace",
            crate::backend::rest_server::KIND_NAMESPACE,
            "rollout",
            "status",
            &format!("deployment/{}", crate::backend::rest_server::KIND_SERVICE),
            "--timeout",
            &format!("{}s", bound.as_secs()),
        ]
        .map(String::from),
    );
    vec![apply_argv(kubectl, kubeconfig, context, manifests), rollout]
}

/// The restic REST server alone on Kind (`fixtures/rest-server`, then its rollout): what the
/// Gameplane chart path installs after `helm upgrade --install`, as [`KindInstall`] does after
/// the reference operator.
#[derive(Debug, Clone)]
pub struct RestServerInstall {
    /// The REST server's manifests (`fixtures/rest-server`).
    pub manifests: PathBuf,
    /// How long its rollout may take.
    pub bound: Duration,
    /// kubectl 1.37; `None` is [`kubectl_path`].
    pub kubectl: Option<PathBuf>,
}

impl RestServerInstall {
    /// The REST server of the repository checkout at `root`.
    pub fn for_cases(root: &Path) -> Self {
        Self {
            manifests: root.join("fixtures").join("rest-server"),
            bound: Duration::from_secs(300),
            kubectl: None,
        }
    }

    /// Applies the manifests and waits for the rollout.
    pub async fn apply(
        &self,
        kubeconfig: &Path,
        context: &str,
        log: &ProcessLog,
    ) -> Result<(), DeployError> {
        let kubectl = match &self.kubectl {
            Some(k) => k.clone(),
            None => kubectl_path()?,
        };
        for argv in rest_server_argvs(&kubectl, kubeconfig, context, &self.manifests, self.bound) {
            Cmd::new(argv[0].clone())
                .args(argv[1..].iter().cloned())
                .timeout(self.bound + Duration::from_secs(30))
                .run_checked(log)
                .await?;
        }
        Ok(())
    }
}

/// The operator's identity and least-privilege RBAC (its namespace, ServiceAccount,
/// ClusterRole and ClusterRoleBinding), exactly as its Kind manifests declare them.
pub const IDENTITY_MANIFESTS: &[(&str, &str)] = &[
    (
        "00-namespace.yaml",
        include_str!("../../../images/reference-operator/deploy/00-namespace.yaml"),
    ),
    (
        "10-rbac.yaml",
        include_str!("../../../images/reference-operator/deploy/10-rbac.yaml"),
    ),
];

/// The ServiceAccount the operator runs as (in [`super::SYSTEM_NAMESPACE`]).
pub const SERVICE_ACCOUNT: &str = "reference-operator";

/// Why the operator's identity could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// A bundled identity manifest is not valid YAML or not a Kubernetes object.
    #[error("the reference operator manifest {file} does not parse: {source}")]
    Parse {
        /// The manifest's file name.
        file: &'static str,
        /// serde_yaml's error.
        source: serde_yaml::Error,
    },
    /// An object to create is not a Kubernetes object kube can send.
    #[error("{what} is not a Kubernetes object: {reason}")]
    Object {
        /// The object and where it was read.
        what: String,
        /// serde's error.
        reason: String,
    },
    #[error("cannot {what}: {}", crate::kube_error::line(source))]
    /// Creating an identity object or requesting the ServiceAccount's token failed.
    Kube {
        /// What was being done, e.g. `create ClusterRole <name> from <file>`.
        what: String,
        /// kube's error.
        source: kube::Error,
    },
    /// The operator's kubeconfig could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The kubeconfig path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Who an operator runs as on the embedded cluster, and the objects that make it so.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Where the objects were read, for messages (`10-rbac.yaml`, your manifests' path).
    pub source: String,
    /// The objects to create, in order: namespace, ServiceAccount, RBAC.
    pub objects: Vec<serde_json::Value>,
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount the operator runs as.
    pub service_account: String,
}

impl Identity {
    /// The reference operator's, from [`IDENTITY_MANIFESTS`], with `rules` replacing its
    /// ClusterRole's rules when given (a test takes one away).
    pub fn reference(rules: Option<serde_json::Value>) -> Result<Self, IdentityError> {
        use serde::Deserialize;
        let mut objects = Vec::new();
        for (file, text) in IDENTITY_MANIFESTS {
            let docs = serde_yaml::Deserializer::from_str(text)
                .map(serde_json::Value::deserialize)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|source| IdentityError::Parse { file, source })?;
            for mut obj in docs.into_iter().filter(|d| !d.is_null()) {
                if let (Some(rules), Some("ClusterRole")) = (&rules, obj["kind"].as_str()) {
                    obj["rules"] = rules.clone();
                }
                objects.push(obj);
            }
        }
        Ok(Self {
            source: "images/reference-operator/deploy".into(),
            objects,
            namespace: super::SYSTEM_NAMESPACE.into(),
            service_account: SERVICE_ACCOUNT.into(),
        })
    }

    /// Yours, from `--operator-manifests`.
    pub fn from_manifests(m: &super::manifests::OperatorManifests) -> Self {
        Self {
            source: m.source.clone(),
            objects: m.objects.clone(),
            namespace: m.identity.namespace.clone(),
            service_account: m.identity.name.clone(),
        }
    }
}

/// Creates `identity`'s objects (those that exist are left as they are), then requests a token
/// for its ServiceAccount (TokenRequest, `expiration`) and writes a kubeconfig at `path` that
/// authenticates with it against `server` (trusting `ca_pem`, the cluster's CA, when given).
/// The operator then holds exactly the RBAC those objects grant.
pub async fn grant_identity(
    admin: &kube::Client,
    server: &str,
    ca_pem: Option<&str>,
    context: &str,
    path: &Path,
    identity: &Identity,
    expiration: Duration,
) -> Result<PathBuf, IdentityError> {
    use kube::api::{Api, DynamicObject, PostParams};
    let kube_err = |what: String| move |source| IdentityError::Kube { what, source };
    let file = &identity.source;
    for obj in &identity.objects {
        let described = format!(
            "{} {}",
            obj["kind"].as_str().unwrap_or("?"),
            obj["metadata"]["name"].as_str().unwrap_or("?")
        );
        let obj: DynamicObject =
            serde_json::from_value(obj.clone()).map_err(|e| IdentityError::Object {
                what: format!("{described} from {file}"),
                reason: e.to_string(),
            })?;
        let types = obj.types.clone().unwrap_or_default();
        let what = format!("create {described} from {file}");
        let (group, version) = match types.api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), types.api_version.clone()),
        };
        let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &types.kind);
        let (resource, caps) = kube::discovery::pinned_kind(admin, &gvk)
            .await
            .map_err(kube_err(what.clone()))?;
        let api: Api<DynamicObject> = match (&obj.metadata.namespace, caps.scope) {
            (Some(ns), kube::discovery::Scope::Namespaced) => {
                Api::namespaced_with(admin.clone(), ns, &resource)
            }
            _ => Api::all_with(admin.clone(), &resource),
        };
        match api.create(&PostParams::default(), &obj).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(kube_err(what)(e)),
        }
    }
    let sa: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(admin.clone(), &identity.namespace);
    let request = k8s_openapi::api::authentication::v1::TokenRequest {
        spec: Some(k8s_openapi::api::authentication::v1::TokenRequestSpec {
            expiration_seconds: Some(expiration.as_secs() as i64),
            ..Default::default()
        }),
        ..Default::default()
    };
    let answer = sa
        .create_token_request(&identity.service_account, &PostParams::default(), &request)
        .await
        .map_err(kube_err(format!(
            "request a token for ServiceAccount {}/{}",
            identity.namespace, identity.service_account
        )))?;
    let token = answer.status.and_then(|s| s.token).unwrap_or_default();
    let user = format!("{}-{}", context, identity.service_account);
    let ca = ca_pem
        .map(|pem| {
            use base64::Engine as _;
            format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(pem)
            )
        })
        .unwrap_or_default();
    let text = format!(
        "apiVersion: v1\nkind: Config\npreferences: {{}}\nclusters:\n- name: {context}\n  cluster:\n    server: {server}\n{ca}\
         contexts:\n- name: {context}\n  context:\n    cluster: {context}\n    user: {user}\n    namespace: {ns}\n\
         current-context: {context}\nusers:\n- name: {user}\n  user:\n    token: {token}\n",
        ns = identity.namespace,
    );
    std::fs::write(path, text).map_err(|source| IdentityError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Cmd {
        Cmd::new("sh").arg("-c").arg(script)
    }

    fn reference(dir: &Path) -> Readiness<'_> {
        Readiness {
            what: "reference operator".into(),
            state_dir: dir,
            name: "reference-operator",
            also: None,
        }
    }

    /// The operator's write to its ready file (a FIFO the harness reads) ends the wait; the
    /// process keeps running and is recorded.
    #[tokio::test]
    async fn a_write_to_the_ready_file_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let log = ProcessLog::default();
        let cmd = sh("echo starting; printf 'ready\\n' > \"$REHEARSAL_READY_FILE\"; exec sleep 60");
        let mut child =
            spawn_until_ready(cmd, reference(dir.path()), Duration::from_secs(30), &log)
                .await
                .expect("ready");
        assert_eq!(child.try_exit(), None, "still running once ready");
        assert_eq!(log.records().len(), 1);
        child.stop(Duration::from_secs(5)).await;
    }

    /// An operator that exits before it is ready is reported with its exit code and log tail.
    #[tokio::test]
    async fn an_exit_before_ready_names_the_code_and_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = sh("echo 'cannot reach the API server' >&2; exit 3");
        let err = spawn_until_ready(
            cmd,
            reference(dir.path()),
            Duration::from_secs(30),
            &ProcessLog::default(),
        )
        .await
        .expect_err("exited");
        match err {
            DeployError::ExitedEarly {
                code, tail, what, ..
            } => {
                assert_eq!(what, "reference operator");
                assert_eq!(code, Some(3));
                assert!(tail.contains("cannot reach the API server"), "{tail}");
            }
            other => panic!("{other}"),
        }
    }

    /// One that runs but never signals readiness fails at the bound, naming the ready file; a
    /// stale regular file of an earlier run in its place does not count as ready.
    #[tokio::test]
    async fn no_ready_write_within_the_bound_is_not_ready() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("reference-operator.ready"), b"ready\n").unwrap();
        let cmd = sh("echo waiting; exec sleep 60");
        let err = spawn_until_ready(
            cmd,
            reference(dir.path()),
            Duration::from_millis(300),
            &ProcessLog::default(),
        )
        .await
        .expect_err("not ready");
        match err {
            DeployError::NotReady {
                ready_file, tail, ..
            } => {
                assert!(ready_file.ends_with("reference-operator.ready"));
                assert!(tail.contains("waiting"), "{tail}");
            }
            other => panic!("{other}"),
        }
    }

    /// A command that never writes a ready file is ready once its other readiness holds (the
    /// cluster shows its watches); when that never holds, the error names both.
    #[tokio::test]
    async fn the_other_readiness_ends_the_wait_and_is_named_when_it_never_holds() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let readiness = Readiness {
            what: "operator command `my-operator`".into(),
            state_dir: dir.path(),
            name: "operator",
            also: Some((
                Box::pin(async move { rx.await.is_ok() }),
                ", nor watched gameservers".into(),
            )),
        };
        let _ = tx.send(());
        let mut child = spawn_until_ready(
            sh("exec sleep 60"),
            readiness,
            Duration::from_secs(30),
            &ProcessLog::default(),
        )
        .await
        .expect("ready by the other readiness");
        assert_eq!(child.try_exit(), None);
        child.stop(Duration::from_secs(5)).await;

        let readiness = Readiness {
            what: "operator command `my-operator`".into(),
            state_dir: dir.path(),
            name: "operator",
            also: Some((
                Box::pin(async { false }),
                ", nor watched gameservers".into(),
            )),
        };
        let err = spawn_until_ready(
            sh("echo serving nothing; exec sleep 60"),
            readiness,
            Duration::from_millis(300),
            &ProcessLog::default(),
        )
        .await
        .expect_err("never ready");
        let line = err.to_string();
        assert!(
            line.starts_with("operator command `my-operator` was not ready within 300ms: it did not write its ready file"),
            "{line}"
        );
        assert!(
            line.contains("operator.ready, nor watched gameservers;"),
            "{line}"
        );
        assert!(line.contains("serving nothing"), "{line}");
    }
}
