//! The existing-cluster backend: a kubeconfig and an explicitly named context.
//!
//! It refuses to act without `--context` (the kubeconfig's current-context is never followed) and
//! refuses a context the file does not contain; both messages list the available contexts.
//! The harness cannot reach into the nodes of a cluster it did not make, so in-place container
//! restarts and image loading are refused with a message saying what to use instead.

use std::path::{Path, PathBuf};

/// Names the restic REST server (`rest:http://HOST:PORT`) the cases' repositories go to on an
/// existing cluster.
pub const REPO_BASE_ENV: &str = "REHEARSAL_REPO_BASE";

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::ListParams;

use super::kubeconfig::explicit_context;
use super::{Backend, BackendError, BackendKind, BoxFuture, Reach};
use crate::process::ProcessRecord;

/// A cluster the harness did not create.
pub struct Existing {
    kubeconfig: PathBuf,
    context: String,
    client: kube::Client,
}

impl std::fmt::Debug for Existing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Existing")
            .field("kubeconfig", &self.kubeconfig)
            .field("context", &self.context)
            .finish()
    }
}

impl Existing {
    /// Connects to `context` of `kubeconfig`; `None` is refused (pass `--context`).
    pub async fn connect(kubeconfig: &Path, context: Option<&str>) -> Result<Self, BackendError> {
        let context = explicit_context(kubeconfig, context)?;
        let client = super::pinned_client(kubeconfig, &context).await?;
        Ok(Self {
            kubeconfig: kubeconfig.to_path_buf(),
            context,
            client,
        })
    }

    /// For live tests: connects to `REHEARSAL_KUBECONFIG` with the context named in
    /// `REHEARSAL_CONTEXT`, and to nothing else (`context`, when given, must be that one).
    pub async fn for_live_test(context: Option<&str>) -> Result<Self, BackendError> {
        let allowed = std::env::var(super::kubeconfig::LIVE_CONTEXT_ENV).unwrap_or_default();
        let context = context.unwrap_or(&allowed);
        super::kubeconfig::live_test_context(context)?;
        let path = std::env::var_os("REHEARSAL_KUBECONFIG").ok_or_else(|| {
            BackendError::Setup(
                "REHEARSAL_KUBECONFIG is not set: live tests need the kubeconfig of the cluster named by REHEARSAL_CONTEXT".into(),
            )
        })?;
        Self::connect(Path::new(&path), Some(context)).await
    }

    /// The pinned context.
    pub fn context(&self) -> &str {
        &self.context
    }
}

impl Backend for Existing {
    fn kind(&self) -> BackendKind {
        BackendKind::Existing
    }

    fn name(&self) -> &str {
        &self.context
    }

    fn client(&self) -> kube::Client {
        self.client.clone()
    }

    fn kubeconfig(&self) -> (&Path, &str) {
        (&self.kubeconfig, &self.context)
    }

    fn restart_container<'a>(
        &'a self,
        _namespace: &'a str,
        _pod: &'a str,
        container: &'a str,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            Err(BackendError::Unsupported {
                backend: BackendKind::Existing,
                operation: format!("restart container `{container}` in place"),
                why: "the harness has no access to the nodes' container runtime; run this case on --kind or --embedded".into(),
            })
        })
    }

    fn reach<'a>(
        &'a self,
        namespace: &'a str,
        pod: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Reach, BackendError>> {
        Box::pin(super::port_forward::reach(
            self.client.clone(),
            namespace,
            pod,
            port,
        ))
    }

    fn load_images<'a>(&'a self, images: &'a [String]) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            if images.is_empty() {
                return Ok(());
            }
            Err(BackendError::Unsupported {
                backend: BackendKind::Existing,
                operation: format!("load images ({})", images.join(", ")),
                why: "push them to a registry the cluster pulls from and reference them by digest"
                    .into(),
            })
        })
    }

    /// A restic REST server the cluster's pods reach, named by [`REPO_BASE_ENV`] (e.g.
    /// `rest:http://rest-server.rehearsal-repos.svc.cluster.local:8000`, the manifest in
    /// `fixtures/rest-server`): the harness cannot guess where an existing cluster keeps backups.
    fn repository_url(&self, name: &str) -> Result<String, BackendError> {
        let base = std::env::var(REPO_BASE_ENV).ok().filter(|b| !b.is_empty()).ok_or_else(|| {
            BackendError::Setup(format!(
                "{REPO_BASE_ENV} is unset: an existing cluster needs a restic REST server its pods reach; apply fixtures/rest-server/ and export {REPO_BASE_ENV}={}",
                super::rest_server::kind_base()
            ))
        })?;
        if !base.starts_with("rest:http") {
            return Err(BackendError::Setup(format!(
                "{REPO_BASE_ENV}={base:?} is not a restic REST URL; set it to rest:http://HOST:PORT"
            )));
        }
        super::rest_server::repository_url(&base, name)
    }

    /// The repository is on a server the harness does not own; it is left for its owner.
    fn remove_repository<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            Err(BackendError::Unsupported {
                backend: BackendKind::Existing,
                operation: format!("remove the repository {name}"),
                why: format!(
                    "it is on the REST server {REPO_BASE_ENV} names, which the harness does not own"
                ),
            })
        })
    }

    fn export_logs<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            // Node logs are out of reach; the Node objects (conditions, versions) are not.
            let nodes: Api<Node> = Api::all(self.client.clone());
            let list = nodes
                .list(&ListParams::default())
                .await
                .map_err(|e| BackendError::kube("list nodes", e))?;
            let path = dir.join("nodes.json");
            let json = serde_json::to_vec_pretty(&list.items)
                .map_err(|e| BackendError::Setup(format!("cannot encode nodes: {e}")))?;
            std::fs::create_dir_all(dir).map_err(|e| BackendError::io("create", dir, e))?;
            std::fs::write(&path, json).map_err(|e| BackendError::io("write", &path, e))
        })
    }

    fn process_records(&self) -> Vec<ProcessRecord> {
        Vec::new()
    }

    fn teardown(self: Box<Self>, _keep: bool) -> BoxFuture<'static, Result<(), BackendError>> {
        // Never deletes anything: the cluster is not ours.
        Box::pin(async { Ok(()) })
    }
}
