//! What `rehearse` starts on the embedded cluster once the backend brought it up: the reference
//! operator (or your command) as a sandboxed host process ([`super::sandbox`]), running as its
//! own ServiceAccount (a TokenRequest token in a kubeconfig of its own) and held to the RBAC of
//! its deploy manifests (or yours). The `run` layer puts an
//! [`EmbeddedDeploy`] into
//! [`EmbeddedOptions::deploy`](crate::backend::embedded::EmbeddedOptions::deploy).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rehearsal_embedded::EmbeddedCluster;

use super::reference_operator;
use crate::backend::BackendError;
use crate::backend::embedded::{CONTEXT, EmbeddedDeployment};
use crate::process::{ChildGuard, ProcessLog};

/// Your operator, started by a command Rehearsal controls (`--operator-command`, or
/// `REHEARSAL_OPERATOR_COMMAND`) instead of the reference operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorCommand {
    /// The program and its arguments, `{kubeconfig}` standing for the operator's kubeconfig.
    pub argv: Vec<String>,
    /// Its name and version as `--operator NAME@VERSION` gave them; else asked with
    /// `PROGRAM --version`.
    pub named: Option<(String, String)>,
    /// Your install manifests (`--operator-manifests`): the ServiceAccount and RBAC it runs
    /// with; `None`: the reference operator's.
    pub manifests: Option<super::manifests::OperatorManifests>,
}

/// Where `{kubeconfig}` in an operator command stands for the operator's kubeconfig.
pub const KUBECONFIG_PLACEHOLDER: &str = "{kubeconfig}";

/// The resources an operator's informers watch once its caches are filled: a command that
/// writes no ready file is ready when it watches each.
pub const WATCHED_WHEN_READY: &[&str] = &["gameservers", "backups", "restores"];

impl OperatorCommand {
    /// `command` split as a shell would (quotes, no expansion) and `named` (`NAME@VERSION`); a
    /// one-line error naming the cause and the fix.
    pub fn parse(command: &str, named: Option<&str>) -> Result<Self, String> {
        let argv = shlex::split(command).ok_or_else(|| {
            format!("--operator-command {command:?} does not split into words (an unclosed quote?): quote it as a shell would")
        })?;
        if argv.is_empty() {
            return Err("--operator-command is empty: give the program that runs your operator, e.g. --operator-command './bin/manager --kubeconfig {kubeconfig} --leader-elect=false'".into());
        }
        let named = named
            .map(|n| match n.split_once('@') {
                Some((name, version)) if !name.is_empty() && !version.is_empty() => {
                    Ok((name.to_string(), version.to_string()))
                }
                _ => Err(format!(
                    "--operator {n:?} is not NAME@VERSION: name your operator and its version, e.g. --operator gameplane@v0.9.1"
                )),
            })
            .transpose()?;
        Ok(Self {
            argv,
            named,
            manifests: None,
        })
    }

    /// The argv to run, `{kubeconfig}` replaced by `kubeconfig`.
    pub fn argv_for(&self, kubeconfig: &std::path::Path) -> Vec<String> {
        let path = kubeconfig.display().to_string();
        self.argv
            .iter()
            .map(|a| a.replace(KUBECONFIG_PLACEHOLDER, &path))
            .collect()
    }

    /// How reports and errors name it: `operator command `…``.
    pub fn describe(&self) -> String {
        format!(
            "operator command `{}`",
            shlex::try_join(self.argv.iter().map(String::as_str))
                .unwrap_or_else(|_| self.argv.join(" "))
        )
    }
}

static COMMAND: std::sync::RwLock<Option<OperatorCommand>> = std::sync::RwLock::new(None);

/// Makes every embedded cluster this process starts run `command` as its operator (`None`:
/// the reference operator). The CLI sets it once from `--operator-command`.
pub fn set_operator_command(command: Option<OperatorCommand>) {
    *COMMAND.write().unwrap_or_else(|p| p.into_inner()) = command;
}

/// The operator command embedded clusters run, when one was set.
pub fn operator_command() -> Option<OperatorCommand> {
    COMMAND.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The operator on the embedded cluster: the reference operator, or your command.
#[derive(Debug, Clone)]
pub struct EmbeddedDeploy {
    /// `--mutant` passed to the reference operator.
    pub mutant: Option<String>,
    /// Your operator's command instead of the reference operator.
    pub command: Option<OperatorCommand>,
    /// How long the operator may take to become ready.
    pub ready: Duration,
    /// Replaces the rules of the operator's ClusterRole (tests take one away to see the
    /// operator's Forbidden error); `None`: exactly the rules of its manifests.
    pub rules: Option<serde_json::Value>,
}

impl EmbeddedDeploy {
    /// The reference operator with its manifests' RBAC, `mutant` if given, and 30 s to become
    /// ready.
    pub fn reference_operator(mutant: Option<String>) -> Self {
        Self {
            mutant,
            command: None,
            ready: Duration::from_secs(30),
            rules: None,
        }
    }

    /// The operator this process runs on embedded clusters: the command set with
    /// [`set_operator_command`], else the reference operator with `mutant`. With a command, a
    /// mutant (`selftest --explore`) is appended to it as `--mutant NAME`, the catalogue's
    /// switch: an operator that implements the catalogue's defects is checked as the reference
    /// operator is.
    pub fn chosen(mutant: Option<String>) -> Result<Self, BackendError> {
        match (operator_command(), mutant) {
            (Some(mut c), Some(m)) => {
                c.argv.extend(["--mutant".to_string(), m]);
                Ok(Self {
                    command: Some(c),
                    ..Self::reference_operator(None)
                })
            }
            (Some(c), None) => Ok(Self {
                command: Some(c),
                ..Self::reference_operator(None)
            }),
            (None, mutant) => Ok(Self::reference_operator(mutant)),
        }
    }

    /// As [`EmbeddedOptions::deploy`](crate::backend::embedded::EmbeddedOptions::deploy)
    /// takes it.
    pub fn shared(self) -> Option<Arc<dyn EmbeddedDeployment>> {
        Some(Arc::new(self))
    }
}

impl EmbeddedDeployment for EmbeddedDeploy {
    fn deploy<'a>(
        &'a self,
        cluster: &'a EmbeddedCluster,
        log: &'a ProcessLog,
    ) -> BoxFuture<'a, Result<ChildGuard, BackendError>> {
        Box::pin(async move {
            // The operator runs as its own ServiceAccount, held to the RBAC of its manifests:
            // yours (`--operator-manifests`) or the reference operator's.
            let manifests = self.command.as_ref().and_then(|c| c.manifests.as_ref());
            let identity = match manifests {
                Some(m) => reference_operator::Identity::from_manifests(m),
                None => reference_operator::Identity::reference(self.rules.clone())
                    .map_err(|e| BackendError::Setup(format!("operator identity: {e}")))?,
            };
            let operator_kubeconfig = reference_operator::grant_identity(
                &cluster.client(),
                &cluster.api_url(),
                Some(&cluster.ca_pem()),
                CONTEXT,
                &cluster
                    .state_dir()
                    .join(format!("{}.kubeconfig", identity.service_account)),
                &identity,
                Duration::from_secs(24 * 3600),
            )
            .await
            .map_err(|e| BackendError::Setup(format!("operator identity: {e}")))?;
            let started = if let Some(command) = &self.command {
                start_command(
                    command,
                    cluster,
                    &operator_kubeconfig,
                    &identity.namespace,
                    self.ready,
                    log,
                )
                .await
            } else {
                reference_operator::start_process(
                    &operator_kubeconfig,
                    CONTEXT,
                    self.mutant.as_deref(),
                    Some(cluster.dns_address()),
                    cluster.state_dir(),
                    self.ready,
                    log,
                )
                .await
                .map_err(|e| BackendError::Setup(e.to_string()))
            };
            started.map_err(|e| log_kept(e, cluster.state_dir()))
        })
    }
}

/// An operator that did not start names its log, which lives in the cluster's state directory:
/// a cluster that fails to come up removes that directory, so the log is kept beside it
/// (`<tmp>/rehearsal-<cluster>-<log>`) and the error names the copy. Nothing the operator wrote
/// is lost with the cluster.
fn log_kept(error: BackendError, state: &std::path::Path) -> BackendError {
    let BackendError::Setup(mut message) = error else {
        return error;
    };
    let cluster = state
        .file_name()
        .map_or_else(|| "cluster".into(), |n| n.to_string_lossy().into_owned());
    for name in ["operator.log", "reference-operator.log"] {
        let log = state.join(name);
        let shown = log.display().to_string();
        if !message.contains(&shown) {
            continue;
        }
        let kept = std::env::temp_dir().join(format!("rehearsal-{cluster}-{name}"));
        if std::fs::copy(&log, &kept).is_ok() {
            message = message.replace(&shown, &kept.display().to_string());
        }
    }
    BackendError::Setup(message)
}

/// Starts `command` as the embedded cluster's operator, as the reference operator is started:
/// its kubeconfig (the operator's own ServiceAccount, held to its manifests' RBAC) as
/// `{kubeconfig}` and `KUBECONFIG`, that ServiceAccount's namespace as `POD_NAMESPACE` (as a
/// Deployment's downward API gives it), the cluster's DNS server, its output in
/// `<state_dir>/operator.log`. Ready when it writes its ready file or, as an informer-based
/// operator shows it, once it watches GameServers, Backups and Restores.
async fn start_command(
    command: &OperatorCommand,
    cluster: &EmbeddedCluster,
    kubeconfig: &std::path::Path,
    namespace: &str,
    bound: Duration,
    log: &ProcessLog,
) -> Result<ChildGuard, BackendError> {
    const USERS: &str = "system:serviceaccount:";
    let argv = command.argv_for(kubeconfig);
    // Sandboxed as its Deployment's container: the host read-only, its state writable, its
    // Deployment's volumes (from your manifests) at their mount paths.
    let manifests = command.manifests.as_ref();
    let state = cluster.state_dir();
    let mut cmd = super::sandbox::command(&argv, state, manifests.map_or(&[][..], |m| &m.mounts))
        .map_err(|e| {
            BackendError::Setup(format!(
                "cannot prepare the sandbox of {} in {}: {e}",
                command.describe(),
                state.display()
            ))
        })?
        .env("KUBECONFIG", kubeconfig)
        .env("POD_NAMESPACE", namespace);
    for (k, v) in manifests.map_or(&[][..], |m| &m.env) {
        cmd = cmd.env(k, v);
    }
    let cmd = cmd.env(
        reference_operator::CLUSTER_DNS_ENV,
        cluster.dns_address().to_string(),
    );
    let wanted: Vec<(String, u64)> = WATCHED_WHEN_READY
        .iter()
        .map(|r| (r.to_string(), cluster.watches_opened(USERS, r)))
        .collect();
    let readiness = reference_operator::Readiness {
        what: command.describe(),
        state_dir: cluster.state_dir(),
        name: "operator",
        also: Some((
            Box::pin(async move { cluster.await_watches_opened(USERS, &wanted, bound).await }),
            format!(", nor watched {}", WATCHED_WHEN_READY.join(", ")),
        )),
    };
    reference_operator::spawn_until_ready(cmd, readiness, bound, log)
        .await
        .map_err(|e| BackendError::Setup(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutant_is_appended_to_a_command_as_the_catalogues_switch() {
        let c = OperatorCommand::parse("/opt/op --kubeconfig {kubeconfig}", None).unwrap();
        set_operator_command(Some(c.clone()));
        let with = EmbeddedDeploy::chosen(Some("layer-hash-skipped".into())).unwrap();
        let without = EmbeddedDeploy::chosen(None).unwrap();
        set_operator_command(None);
        let reference = EmbeddedDeploy::chosen(Some("layer-hash-skipped".into())).unwrap();
        assert_eq!(
            with.command.unwrap().argv,
            [
                "/opt/op",
                "--kubeconfig",
                "{kubeconfig}",
                "--mutant",
                "layer-hash-skipped"
            ]
        );
        assert_eq!(with.mutant, None);
        assert_eq!(without.command, Some(c));
        assert_eq!(reference.command, None);
        assert_eq!(reference.mutant.as_deref(), Some("layer-hash-skipped"));
    }

    #[test]
    fn a_command_splits_as_a_shell_would_and_names_its_kubeconfig() {
        let c = OperatorCommand::parse(
            "'/opt/my op/manager' --kubeconfig {kubeconfig} --leader-elect=false",
            Some("gameplane@v0.9.1"),
        )
        .unwrap();
        assert_eq!(
            c.argv_for(std::path::Path::new("/s/op.kubeconfig")),
            [
                "/opt/my op/manager",
                "--kubeconfig",
                "/s/op.kubeconfig",
                "--leader-elect=false"
            ]
        );
        assert_eq!(c.named, Some(("gameplane".into(), "v0.9.1".into())));
        assert_eq!(
            c.describe(),
            "operator command `'/opt/my op/manager' --kubeconfig '{kubeconfig}' '--leader-elect=false'`"
        );
        for (command, named, says) in [
            ("", None, "--operator-command is empty"),
            ("'unclosed", None, "does not split into words"),
            ("manager", Some("gameplane"), "is not NAME@VERSION"),
            ("manager", Some("@v1"), "is not NAME@VERSION"),
        ] {
            let e = OperatorCommand::parse(command, named).unwrap_err();
            assert!(e.contains(says), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
