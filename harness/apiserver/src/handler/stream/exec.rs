//! Exec and attach sessions in the channel protocols: stdin (0), stdout (1), stderr (2), the
//! error channel (3), resize (4), and v5's close signal (255). As on a real cluster:
//!
//! - an empty message on the lowest writable channel (stdout, else stderr, else error) first,
//!   telling the client the streams are set up;
//! - `v5.channel.k8s.io` is served by kube-apiserver's stream translator, whose final `Status`
//!   wraps the exit code as client-go's SPDY decoder reported it ("command terminated with
//!   non-zero exit code: command terminated with exit code N");
//! - `v4.channel.k8s.io` and `v4.base64.channel.k8s.io` reach the kubelet, whose `Status` names
//!   the command ("… error executing command [sh -c exit 3], exit code 3");
//! - the pre-v4 `channel.k8s.io` and `base64.channel.k8s.io` get only a failure's message as
//!   text on the error channel, and nothing on success.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use super::channel::{self, Outbox};
use super::websocket::Socket;
use crate::streams::{ExecProcess, ExecRequest, StreamError};

/// What exec and attach speak (the client's order of preference decides).
pub const PROTOCOLS: &[&str] = &[
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
];

/// Who writes the error channel's final report, which follows from the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reporter {
    /// kube-apiserver's stream translator (v5).
    Translator,
    /// The kubelet, v4 protocols: a JSON `Status`.
    KubeletV4,
    /// The kubelet, pre-v4 protocols: a failure's message as text, nothing on success.
    KubeletV1,
}

impl Reporter {
    pub fn of(protocol: &str) -> Reporter {
        match protocol {
            "v5.channel.k8s.io" => Reporter::Translator,
            p if p.starts_with("v4.") => Reporter::KubeletV4,
            _ => Reporter::KubeletV1,
        }
    }
}

/// How long output may keep flowing after the process ended (a background child holding the
/// pipe open must not keep the session alive).
const DRAIN_BOUND: Duration = Duration::from_secs(2);

/// The final `Status` on the error channel, worded as `reporter` words it.
pub fn exit_status(reporter: Reporter, command: &[String], code: Result<i32, String>) -> Value {
    let exited = match reporter {
        Reporter::Translator => format!(
            "command terminated with exit code {}",
            code.as_ref().copied().unwrap_or_default()
        ),
        Reporter::KubeletV4 | Reporter::KubeletV1 => format!(
            "error executing command [{}], exit code {}",
            command.join(" "),
            code.as_ref().copied().unwrap_or_default()
        ),
    };
    match code {
        Ok(0) => json!({"metadata": {}, "status": "Success"}),
        Ok(code) => json!({
            "metadata": {},
            "status": "Failure",
            "message": format!("command terminated with non-zero exit code: {exited}"),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
        }),
        Err(why) => internal_error(&format!("error executing command in container: {why}")),
    }
}

/// `InternalError` as kube-apiserver's stream translator reports a kubelet failure.
pub fn internal_error(why: &str) -> Value {
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("Internal error occurred: {why}"),
        "reason": "InternalError",
        "details": {"causes": [{"message": why}]},
        "code": 500,
    })
}

/// Runs one exec or attach session to its end: the process exits (its output is drained and
/// its Status sent), or the client goes away or the server stops (the process is ended).
#[expect(
    clippy::too_many_lines,
    reason = "one select loop over the client's channels and the process's streams; splitting it would pass its state around"
)]
pub async fn session(
    socket: Socket,
    protocol: &'static str,
    request: &ExecRequest,
    started: Result<ExecProcess, StreamError>,
    stopped: Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let v5 = protocol == "v5.channel.k8s.io";
    let reporter = Reporter::of(protocol);
    let codec = channel::Codec::of(protocol);
    let (outbox, mut incoming, writer) = channel::split(socket, codec);
    let lowest = if request.stdout {
        channel::STDOUT
    } else if request.stderr {
        channel::STDERR
    } else {
        channel::ERROR
    };
    outbox.send(lowest, &[]).await;
    let process = match started {
        Ok(p) => p,
        Err(e) => {
            let what = if request.command.is_empty() {
                "unable to attach"
            } else {
                "unable to upgrade connection"
            };
            send_status(&outbox, reporter, &internal_error(&format!("{what}: {e}"))).await;
            finish(outbox, writer).await;
            return;
        }
    };
    let ExecProcess {
        stdin,
        stdout,
        stderr,
        mut exit,
        resize,
    } = process;
    let mut pumps = tokio::task::JoinSet::new();
    for (reader, ch) in [(stdout, channel::STDOUT), (stderr, channel::STDERR)] {
        if let Some(reader) = reader {
            let out = outbox.clone();
            pumps.spawn(async move { out.pump(reader, ch).await });
        }
    }
    // Stdin is written by its own task so a process that does not read cannot stall the
    // session; the bounded queue pushes back on the client instead.
    let (stdin_tx, mut stdin_rx) = mpsc::channel::<bytes::Bytes>(16);
    let mut stdin_tx = Some(stdin_tx);
    let stdin_task = stdin.map(|mut input| {
        tokio::spawn(async move {
            while let Some(data) = stdin_rx.recv().await {
                if input.write_all(&data).await.is_err() || input.flush().await.is_err() {
                    return;
                }
            }
            let _ = input.shutdown().await;
        })
    });
    if stdin_task.is_none() {
        stdin_tx = None;
    }
    let mut stopped = stopped;
    let outcome = loop {
        tokio::select! {
            code = &mut exit => break Some(code),
            _ = &mut stopped => break None,
            message = incoming.next() => match message {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break None,
                Some(Ok(message)) => {
                    let Some((ch, payload)) = codec.decode(&message) else { continue };
                    match ch {
                        channel::STDIN => {
                            if let Some(tx) = &stdin_tx {
                                tokio::select! {
                                    sent = tx.send(payload) => if sent.is_err() { stdin_tx = None },
                                    code = &mut exit => break Some(code),
                                }
                            }
                        }
                        channel::RESIZE => {
                            if let (Some(resize), Ok(size)) =
                                (&resize, serde_json::from_slice::<Value>(&payload))
                            {
                                let dim = |k: &str| {
                                    size.get(k).and_then(Value::as_u64).unwrap_or(0).min(u16::MAX as u64) as u16
                                };
                                resize(dim("Width"), dim("Height"));
                            }
                        }
                        channel::CLOSE if v5 && payload.first() == Some(&channel::STDIN) => {
                            stdin_tx = None;
                        }
                        _ => {}
                    }
                }
            },
        }
    };
    drop(stdin_tx);
    match outcome {
        Some(code) => {
            // The output the process wrote before it ended still reaches the client.
            let drained = async { while pumps.join_next().await.is_some() {} };
            let _ = tokio::time::timeout(DRAIN_BOUND, drained).await;
            pumps.abort_all();
            // Attach ends with Success whatever the container's exit code (as the kubelet's).
            let status = if request.command.is_empty() {
                exit_status(reporter, &[], Ok(0))
            } else {
                exit_status(reporter, &request.command, code)
            };
            send_status(&outbox, reporter, &status).await;
        }
        None => {
            // Client gone or server stopping: dropping `exit` ends the process tree.
            drop(exit);
            pumps.abort_all();
        }
    }
    if let Some(task) = stdin_task {
        task.abort();
    }
    finish(outbox, writer).await;
}

/// Writes the final report: v4 and v5 marshal the `Status` (no newline, no kind); pre-v4
/// protocols get a failure's message alone.
async fn send_status(outbox: &Outbox, reporter: Reporter, status: &Value) {
    let body = match reporter {
        Reporter::Translator | Reporter::KubeletV4 => {
            serde_json::to_vec(status).expect("JSON values serialise")
        }
        Reporter::KubeletV1 if status["status"] == "Success" => return,
        Reporter::KubeletV1 => status["message"]
            .as_str()
            .unwrap_or_default()
            .as_bytes()
            .to_vec(),
    };
    outbox.send(channel::ERROR, &body).await;
}

/// Drops the last outbox (the writer then sends Close) and waits, bounded, for the writer.
async fn finish(outbox: Outbox, writer: tokio::task::JoinHandle<()>) {
    drop(outbox);
    let abort = writer.abort_handle();
    if tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .is_err()
    {
        abort.abort();
    }
}
