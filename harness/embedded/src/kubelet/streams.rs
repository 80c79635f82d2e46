//! What the API server's `pods/exec`, `pods/attach` and `pods/portforward` reach on this
//! node: a process entering a running container's namespaces, the container's output as it
//! is written, and a connection to a port on the pod's IP. Errors are worded as the kubelet
//! words them (`container not found ("game")`, `pod not found ("mc-0_ns")`).

use futures::FutureExt;
use rehearsal_apiserver::{
    ExecProcess, ExecRequest, PodConnection, PodStreams, PortForwardRequest, ProcessInput,
    ProcessOutput, StreamError,
};
use tokio::sync::oneshot;

use super::{Kubelet, LogQuery, PodCommand, RunningContainer};
use crate::sandbox::{EnterError, EnterStdio};

impl Kubelet {
    fn pod_commands(
        &self,
        namespace: &str,
        pod: &str,
        uid: &str,
    ) -> Result<tokio::sync::mpsc::UnboundedSender<PodCommand>, StreamError> {
        let uid = (!uid.is_empty()).then_some(uid);
        self.commands_for(namespace, pod, uid)
            .ok_or_else(|| StreamError(format!("pod not found (\"{pod}_{namespace}\")")))
    }

    async fn running(
        &self,
        namespace: &str,
        pod: &str,
        uid: &str,
        container: &str,
    ) -> Result<RunningContainer, StreamError> {
        let commands = self.pod_commands(namespace, pod, uid)?;
        let (reply, answer) = oneshot::channel();
        let gone = || StreamError(format!("pod not found (\"{pod}_{namespace}\")"));
        commands
            .send(PodCommand::Locate {
                container: container.to_string(),
                reply,
            })
            .map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?.map_err(StreamError)
    }

    /// Starts `request.command` in the running container (`kubectl exec`).
    pub async fn exec(&self, request: ExecRequest) -> Result<ExecProcess, StreamError> {
        let running = self
            .running(
                &request.namespace,
                &request.pod,
                &request.uid,
                &request.container,
            )
            .await?;
        let stdio = EnterStdio {
            stdin: request.stdin,
            stdout: request.stdout,
            stderr: request.stderr,
            // No PTY on this node: a TTY request gets the terminal's single output stream.
            merged_output: request.tty && request.stdout,
        };
        let mut entered = self
            .node
            .sandboxes
            .enter(&running.handle, &running.spec, &request.command, stdio)
            .map_err(|e| match e {
                EnterError::NotRunning => {
                    StreamError(format!("container not found ({:?})", request.container))
                }
                other => StreamError(other.to_string()),
            })?;
        let stdin = entered
            .child
            .stdin
            .take()
            .map(|s| Box::pin(s) as ProcessInput);
        let stdout = match entered.merged_output.take() {
            Some(merged) => Some(Box::pin(merged) as ProcessOutput),
            None => entered
                .child
                .stdout
                .take()
                .map(|s| Box::pin(s) as ProcessOutput),
        };
        let stderr = entered
            .child
            .stderr
            .take()
            .map(|s| Box::pin(s) as ProcessOutput);
        Ok(ExecProcess {
            stdin,
            stdout,
            stderr,
            exit: async move { entered.wait().await.map_err(|e| e.to_string()) }.boxed(),
            resize: None,
        })
    }

    /// Attaches to the running container's main process (`kubectl attach`): what it writes
    /// from now on, until it ends. Containers run without stdin here, so none is offered.
    pub async fn attach(&self, request: ExecRequest) -> Result<ExecProcess, StreamError> {
        let running = self
            .running(
                &request.namespace,
                &request.pod,
                &request.uid,
                &request.container,
            )
            .await?;
        let output = self
            .logs()
            .stream(LogQuery {
                namespace: request.namespace.clone(),
                pod: request.pod.clone(),
                container: request.container.clone(),
                previous: false,
                tail_lines: Some(0),
                follow: true,
            })
            .map_err(|e| StreamError(e.to_string()))?;
        let reader = tokio_util::io::StreamReader::new(output);
        let handle = running.handle.clone();
        Ok(ExecProcess {
            stdin: None,
            stdout: (request.stdout || request.stderr).then(|| Box::pin(reader) as ProcessOutput),
            stderr: None,
            exit: async move { Ok(handle.wait().await) }.boxed(),
            resize: None,
        })
    }

    /// Connects to `request.port` on the pod's IP (`kubectl port-forward`).
    pub async fn port_forward(
        &self,
        request: PortForwardRequest,
    ) -> Result<PodConnection, StreamError> {
        let commands = self.pod_commands(&request.namespace, &request.pod, &request.uid)?;
        let (reply, answer) = oneshot::channel();
        let gone = || {
            StreamError(format!(
                "pod not found (\"{}_{}\")",
                request.pod, request.namespace
            ))
        };
        commands
            .send(PodCommand::Address { reply })
            .map_err(|_| gone())?;
        let ip = answer.await.map_err(|_| gone())?;
        let stream = tokio::net::TcpStream::connect((ip.as_str(), request.port))
            .await
            .map_err(|e| {
                StreamError(format!(
                    "failed to connect to {ip}:{} inside the pod's network: {e}",
                    request.port
                ))
            })?;
        let _ = stream.set_nodelay(true);
        Ok(Box::pin(stream))
    }
}

/// The kubelet as the API server's [`PodStreams`].
pub struct KubeletStreams(pub Kubelet);

impl PodStreams for KubeletStreams {
    fn exec(
        &self,
        request: ExecRequest,
    ) -> futures::future::BoxFuture<'static, Result<ExecProcess, StreamError>> {
        let kubelet = self.0.clone();
        async move { kubelet.exec(request).await }.boxed()
    }

    fn attach(
        &self,
        request: ExecRequest,
    ) -> futures::future::BoxFuture<'static, Result<ExecProcess, StreamError>> {
        let kubelet = self.0.clone();
        async move { kubelet.attach(request).await }.boxed()
    }

    fn port_forward(
        &self,
        request: PortForwardRequest,
    ) -> futures::future::BoxFuture<'static, Result<PodConnection, StreamError>> {
        let kubelet = self.0.clone();
        async move { kubelet.port_forward(request).await }.boxed()
    }
}
