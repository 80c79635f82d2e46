//! What `rehearse` installs on a Kind cluster once the backend brought it up: the reference
//! operator (its images, CRDs and manifests) or Gameplane's Helm chart, each followed by the
//! restic REST server the cases' repositories live on. The `run` layer puts a
//! [`KindDeploy`] into [`KindOptions::deploy`](crate::backend::kind::KindOptions::deploy).

use futures::future::BoxFuture;

use super::helm::{HelmConfig, HelmInstall};
use super::reference_operator::{KindInstall, RestServerInstall};
use crate::backend::kind::{Kind, KindDeployment};
use crate::backend::{Backend, BackendError};

/// The operator under test on Kind.
#[derive(Debug, Clone)]
pub enum KindDeploy {
    /// The reference operator: every image the cases use loaded into the nodes, then the CRDs
    /// and its manifests applied and its rollout awaited ([`KindInstall`]).
    ReferenceOperator(KindInstall),
    /// Gameplane's Helm chart (`helm upgrade --install … --wait`) run with `helm_program`
    /// (default `helm`, or `REHEARSAL_HELM`), then the restic REST server the cases'
    /// repositories live on ([`RestServerInstall`]), as on the reference operator's path.
    Helm {
        /// The chart and its values.
        config: HelmConfig,
        /// The `helm` program (name on PATH or a path).
        helm_program: String,
        /// The REST server installed after the chart.
        rest_server: RestServerInstall,
    },
}

impl KindDeploy {
    /// Gameplane's chart, installed with the default `helm`, and the REST server of the
    /// checkout in the working directory (`fixtures/rest-server`).
    pub fn helm(config: HelmConfig) -> Self {
        KindDeploy::Helm {
            config,
            helm_program: std::env::var("REHEARSAL_HELM").unwrap_or_else(|_| "helm".into()),
            rest_server: RestServerInstall::for_cases(std::path::Path::new("")),
        }
    }

    /// As [`KindOptions::deploy`](crate::backend::kind::KindOptions::deploy) takes it.
    pub fn shared(self) -> Option<std::sync::Arc<dyn KindDeployment>> {
        Some(std::sync::Arc::new(self))
    }
}

impl KindDeployment for KindDeploy {
    fn deploy<'a>(&'a self, kind: &'a Kind) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let (kubeconfig, context) = kind.kubeconfig();
            match self {
                KindDeploy::ReferenceOperator(install) => {
                    // Images first: the operator's pod and the cases' pods must never try a pull.
                    kind.load_images(&install.images).await?;
                    install
                        .apply(kubeconfig, context, kind.process_log())
                        .await
                        .map_err(|e| {
                            BackendError::Setup(format!(
                                "install the CRDs and the reference operator: {e}"
                            ))
                        })
                }
                KindDeploy::Helm {
                    config,
                    helm_program,
                    rest_server,
                } => {
                    let mut install = HelmInstall::new(config.clone(), kubeconfig, context);
                    install.helm_program = helm_program.clone();
                    install.run(kind.process_log()).await?;
                    rest_server
                        .apply(kubeconfig, context, kind.process_log())
                        .await
                        .map_err(|e| {
                            BackendError::Setup(format!("install the restic REST server: {e}"))
                        })
                }
            }
        })
    }
}
