//! What `rehearse` starts on the embedded cluster once the backend brought it up: the reference
//! operator as a host process, running as its own ServiceAccount (a TokenRequest token in a
//! kubeconfig of its own) and held to the RBAC of its deploy manifests. The `run` layer puts an
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

/// The reference operator on the embedded cluster.
#[derive(Debug, Clone)]
pub struct EmbeddedDeploy {
    /// `--mutant` passed to the reference operator.
    pub mutant: Option<String>,
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
            ready: Duration::from_secs(30),
            rules: None,
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
            // The operator runs as its own ServiceAccount, held to the RBAC of its manifests.
            let operator_kubeconfig = reference_operator::grant_identity(
                &cluster.client(),
                &cluster.api_url(),
                Some(&cluster.ca_pem()),
                CONTEXT,
                &cluster.state_dir().join("reference-operator.kubeconfig"),
                self.rules.clone(),
                Duration::from_secs(24 * 3600),
            )
            .await
            .map_err(|e| BackendError::Setup(format!("reference operator identity: {e}")))?;
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
        })
    }
}
