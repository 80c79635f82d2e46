//! The pod-log hook: `GET …/pods/NAME/log` is answered by whoever runs the pods (the embedded
//! kubelet), through [`PodLogSource`]. The API server checks the pod and container first, so
//! a source only sees requests for containers that exist in the pod spec.

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

/// A validated log request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRequest {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container asked for, or the pod's first container when none was named.
    pub container: String,
    /// The log of the container's previous (terminated) instance rather than the current one.
    pub previous: bool,
    /// Only the last this many lines (`tailLines`).
    pub tail_lines: Option<i64>,
    /// Keep the stream open and send lines as they are written (`follow=true`).
    pub follow: bool,
}

/// The bytes of a log, streamed as they are produced when following.
pub type LogStream = BoxStream<'static, std::io::Result<Bytes>>;

/// Serves container logs for pods the API server knows.
pub trait PodLogSource: Send + Sync + 'static {
    /// Opens the log `request` asks for, or says why it cannot be served.
    fn logs(&self, request: LogRequest) -> BoxFuture<'static, Result<LogStream, LogError>>;
}

/// Why a log cannot be served; the message reaches the client in a `Status`.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// 404, e.g. no container has run yet.
    #[error("{0}")]
    NotFound(String),
    /// 400, e.g. `previous terminated container "game" in pod "mc-0" not found`.
    #[error("{0}")]
    BadRequest(String),
}
