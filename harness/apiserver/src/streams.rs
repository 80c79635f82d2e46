//! The node hook behind the streaming subresources (`pods/exec`, `pods/attach`,
//! `pods/portforward`): the API server validates the request and speaks the client's protocol;
//! whoever runs the pods (the embedded kubelet) implements [`PodStreams`] to start the process
//! or open the connection, as a real kubelet does behind kube-apiserver.

use std::pin::Pin;

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite};

/// A validated exec (or attach) request for one container of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The pod's UID, so a request never reaches a newer pod of the same name.
    pub uid: String,
    /// The container to run in (or attach to).
    pub container: String,
    /// The command (empty for attach).
    pub command: Vec<String>,
    /// Connect the client's stdin to the process.
    pub stdin: bool,
    /// Send the process's stdout to the client.
    pub stdout: bool,
    /// Send the process's stderr to the client.
    pub stderr: bool,
    /// Run under a terminal (stdout and stderr merged, resizable).
    pub tty: bool,
}

/// A byte stream from a process.
pub type ProcessOutput = Pin<Box<dyn AsyncRead + Send>>;
/// A byte stream into a process.
pub type ProcessInput = Pin<Box<dyn AsyncWrite + Send>>;

/// A started exec (or an attachment): its streams and its end.
pub struct ExecProcess {
    /// Present when stdin was asked for.
    pub stdin: Option<ProcessInput>,
    /// Present when stdout was asked for (with a TTY: the terminal's output).
    pub stdout: Option<ProcessOutput>,
    /// Present when stderr was asked for and there is no TTY.
    pub stderr: Option<ProcessOutput>,
    /// Resolves with the exit code. Dropping it before it resolves ends the process and
    /// everything it started: a client that goes away leaves nothing running.
    pub exit: BoxFuture<'static, Result<i32, String>>,
    /// Sets the terminal size (columns, rows), with a TTY.
    pub resize: Option<Box<dyn Fn(u16, u16) + Send + Sync>>,
}

impl std::fmt::Debug for ExecProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecProcess")
            .field("stdin", &self.stdin.is_some())
            .field("stdout", &self.stdout.is_some())
            .field("stderr", &self.stderr.is_some())
            .finish_non_exhaustive()
    }
}

/// A port-forward request: one connection to `port` of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortForwardRequest {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The pod's UID, so a request never reaches a newer pod of the same name.
    pub uid: String,
    /// The port in the pod's network namespace.
    pub port: u16,
}

/// A connection to a pod's port.
pub type PodConnection = Pin<Box<dyn PodConnectionIo>>;

/// What a pod connection is: a bidirectional byte stream.
pub trait PodConnectionIo: AsyncRead + AsyncWrite + Send {}
impl<T: AsyncRead + AsyncWrite + Send> PodConnectionIo for T {}

/// Why the node could not serve a stream; the message reaches the client as a real kubelet's
/// would (e.g. `container not found ("game")`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StreamError(pub String);

/// Runs processes in, and opens connections to, the pods of a node.
pub trait PodStreams: Send + Sync + 'static {
    /// Starts `request.command` in the running container, in its namespaces.
    fn exec(&self, request: ExecRequest) -> BoxFuture<'static, Result<ExecProcess, StreamError>>;
    /// Attaches to the running container's main process.
    fn attach(&self, request: ExecRequest) -> BoxFuture<'static, Result<ExecProcess, StreamError>>;
    /// Connects to `request.port` in the pod's network.
    fn port_forward(
        &self,
        request: PortForwardRequest,
    ) -> BoxFuture<'static, Result<PodConnection, StreamError>>;
}
