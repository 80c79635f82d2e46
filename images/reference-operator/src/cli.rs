//! The command line: `reference-operator --kubeconfig PATH [--context NAME]
//! [--namespace-scope NS] [--mutant NAME]`, every flag with an environment twin.

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::mutant::{ActiveMutant, Mutant};
use crate::settings::Settings;

/// The reference Gameplane operator.
#[derive(Debug, clap::Parser)]
#[command(name = "reference-operator", version, about)]
pub struct Args {
    /// Kubeconfig to use; without it, the in-cluster service account (or $KUBECONFIG).
    #[arg(long, env = "REFERENCE_OPERATOR_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the kubeconfig; without it, the current context.
    #[arg(long, env = "REFERENCE_OPERATOR_CONTEXT")]
    pub context: Option<String>,
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "REFERENCE_OPERATOR_NAMESPACE_SCOPE")]
    pub namespace_scope: Option<String>,
    /// Re-create one known defect (see --list-mutants).
    #[arg(long, env = "REFERENCE_OPERATOR_MUTANT")]
    pub mutant: Option<Mutant>,
    /// File written once the operator's caches are synced (for harnesses that wait on it).
    #[arg(long, env = "REHEARSAL_READY_FILE")]
    pub ready_file: Option<PathBuf>,
    /// Print every mutant with the rehearsal case that catches it, then exit.
    #[arg(long)]
    pub list_mutants: bool,
    /// Agent image when a template names none.
    #[arg(
        long,
        env = "REFERENCE_OPERATOR_AGENT_IMAGE",
        default_value = "rehearsal.local/fixture-agent:1.0"
    )]
    pub agent_image: String,
    /// Image of backup and restore Jobs (restic and sh).
    #[arg(
        long,
        env = "REFERENCE_OPERATOR_RESTIC_IMAGE",
        default_value = "restic/restic:0.14.0"
    )]
    pub restic_image: String,
    /// Seconds a live backup waits for a running game incarnation.
    #[arg(
        long,
        env = "REFERENCE_OPERATOR_PREPARATION_DEADLINE_SECS",
        default_value_t = 60
    )]
    pub preparation_deadline_secs: u64,
    /// The cluster's DNS server, for an operator running outside a pod: `<svc>.<ns>.svc.cluster.local`
    /// names (the agents' Services) are resolved there. In a pod, leave it unset: the pod's own
    /// resolver already uses the cluster DNS.
    #[arg(long, env = "REFERENCE_OPERATOR_CLUSTER_DNS")]
    pub cluster_dns: Option<std::net::Ipv4Addr>,
}

/// Why the operator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The kubeconfig file could not be read.
    #[error("cannot read kubeconfig {path}: {source} (pass --kubeconfig with a readable file)")]
    ReadKubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        #[source]
        /// kube's error.
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig (or context) is unusable.
    #[error("cannot use kubeconfig {path} context {context}: {source} (check --context)")]
    Kubeconfig {
        /// The kubeconfig file.
        path: String,
        /// The context asked for.
        context: String,
        #[source]
        /// kube's error.
        source: kube::config::KubeconfigError,
    },
    /// No configuration was found.
    #[error("no cluster configuration: {0} (pass --kubeconfig PATH)")]
    Infer(#[source] kube::config::InferConfigError),
    /// The client could not be built.
    #[error("cannot build a Kubernetes client: {0}")]
    Client(#[source] kube::Error),
}

impl Args {
    /// The settings these arguments select.
    pub fn settings(&self) -> Settings {
        Settings {
            mutant: ActiveMutant(self.mutant),
            agent_image: self.agent_image.clone(),
            restic_image: self.restic_image.clone(),
            preparation_deadline: Duration::from_secs(self.preparation_deadline_secs),
            cluster_dns: self.cluster_dns,
            ..Settings::default()
        }
    }

    /// A client for the selected kubeconfig and context.
    pub async fn client(&self) -> Result<Client, StartError> {
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..Default::default()
        };
        let config = match &self.kubeconfig {
            Some(path) => {
                let kubeconfig =
                    Kubeconfig::read_from(path).map_err(|source| StartError::ReadKubeconfig {
                        path: path.clone(),
                        source,
                    })?;
                Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(|source| StartError::Kubeconfig {
                        path: path.display().to_string(),
                        context: self.context.clone().unwrap_or_else(|| "(current)".into()),
                        source,
                    })?
            }
            None => Config::infer().await.map_err(StartError::Infer)?,
        };
        Client::try_from(config).map_err(StartError::Client)
    }
}
