//! An in-process Kubernetes API server for the embedded cluster.
//!
//! [`ApiServer::start`] serves HTTP/1.1 over TLS on 127.0.0.1 (a CA of its own per server;
//! [`ApiServer::ca_pem`], and the kubeconfig's `certificate-authority-data`) with enough of kube-apiserver's
//! behaviour that kube-rs, the Python client and `kubectl` 1.37 work against it unchanged:
//! discovery (aggregated and legacy), OpenAPI v3 for `kubectl apply`, generic object storage
//! with real metadata semantics, watches, patches, CRDs with schema validation, Table output,
//! garbage collection, `metav1.Status` errors, and the streaming subresources (`pods/exec`,
//! `pods/attach`, `pods/portforward` over WebSocket) served by an attached [`PodStreams`].
//!
//! Every request is authenticated and authorised as on a real cluster: the kubeconfig's
//! bearer token is `kubernetes-admin` (`system:masters`); ServiceAccount tokens come from
//! `serviceaccounts/NAME/token` (bound, with audience and expiry); `Impersonate-*` headers
//! need the `impersonate` verb; RBAC (Role, ClusterRole and their bindings, plus the default
//! roles of a real cluster) decides, and a denial is the `Forbidden` Status real clusters
//! send. A request without credentials is `system:anonymous`, whom the default RBAC allows
//! only the public health and version paths (anything else: `Forbidden`); a bad credential
//! is a 401.
//! Also served: `SelfSubjectAccessReview`, `SelfSubjectRulesReview`, `SubjectAccessReview`,
//! `SelfSubjectReview`, `TokenReview`, `pods/eviction` (PodDisruptionBudgets honoured),
//! the `scale` subresource of custom resources, metadata-only responses and the
//! `apiregistration.k8s.io` APIServices.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use rehearsal_apiserver::{ApiServer, ApiServerConfig};
//! let server = ApiServer::start(ApiServerConfig::default()).await?;
//! server.write_kubeconfig("/tmp/kubeconfig")?;
//! let mut config = kube::Config::new(server.url().parse()?);
//! config.root_cert = Some(vec![server.ca_der()]);
//! config.auth_info.token = Some(server.admin_token().to_string().into());
//! # let _ = config;
//! server.shutdown().await;
//! # Ok(()) }
//! ```

mod auth;
mod crd;
mod defaults;
mod discovery;
mod handler;
mod hook;
mod logs;
mod meta;
mod negotiate;
mod openapi_schemas;
mod protobuf;
mod rbac;
mod rbac_defaults;
mod registry;
mod render;
mod schema;
mod selector;
mod server;
mod service_account;
mod services;
mod shared;
mod smp;
mod state;
mod status;
mod streams;
mod strict;
// Some of the printer helpers exist for other users of the module.
#[allow(dead_code)]
mod table;
mod tls;
mod user;
mod watch;

pub use hook::{Answer, Change, DropNextEvent, RequestHook, StaleView, WriteRequest};
pub use logs::{LogError, LogRequest, LogStream, PodLogSource};
pub use server::{ApiServer, ApiServerConfig, DEFAULT_CONTEXT, KubeconfigError, StartError};
pub use service_account::{ROOT_CA_CONFIG_MAP, TOKEN_MOUNT_PATH};
pub use services::{ServiceRange, kubernetes_service_ip};
pub use streams::{
    ExecProcess, ExecRequest, PodConnection, PodConnectionIo, PodStreams, PortForwardRequest,
    ProcessInput, ProcessOutput, StreamError,
};
pub use tls::SERVICE_DNS_NAMES;
