//! Exec and attach sessions in the `v5.channel.k8s.io` / `v4.channel.k8s.io` protocols:
//! stdin (0), stdout (1), stderr (2), the error channel (3) that carries the final `Status`
//! (the exit code as a `NonZeroExitCode` cause), resize (4), and v5's close signal (255).

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

/// What exec and attach speak, best first.
pub const PROTOCOLS: &[&str] = &["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// How long output may keep flowing after the process ended (a background child holding the
/// pipe open must not keep the session alive).
const DRAIN_BOUND: Duration = Duration::from_secs(2);

/// The final `Status` on the error channel, worded as the kubelet words it.
pub fn exit_status(command: &[String], code: Result<i32, String>) -> Value {
    match code {
        Ok(0) => json!({"metadata": {}, "status": "Success"}),
        Ok(code) => json!({
            "metadata": {},
            "status": "Failure",
            "message": format!(
                "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                command.join(" ")
            ),
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
    let (outbox, mut incoming, writer) = channel::split(socket);
    let process = match started {
        Ok(p) => p,
        Err(e) => {
            let what = if request.command.is_empty() {
                "unable to attach"
            } else {
                "unable to upgrade connection"
            };
            send_status(&outbox, &internal_error(&format!("{what}: {e}"))).await;
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
                Some(Ok(Message::Binary(data))) if !data.is_empty() => {
                    match data[0] {
                        channel::STDIN => {
                            if let Some(tx) = &stdin_tx {
                                let payload = data.slice(1..);
                                tokio::select! {
                                    sent = tx.send(payload) => if sent.is_err() { stdin_tx = None },
                                    code = &mut exit => break Some(code),
                                }
                            }
                        }
                        channel::RESIZE => {
                            if let (Some(resize), Ok(size)) =
                                (&resize, serde_json::from_slice::<Value>(&data[1..]))
                            {
                                let dim = |k: &str| {
                                    size.get(k).and_then(Value::as_u64).unwrap_or(0).min(u16::MAX as u64) as u16
                                };
                                resize(dim("Width"), dim("Height"));
                            }
                        }
                        channel::CLOSE if v5 && data.get(1) == Some(&channel::STDIN) => {
                            stdin_tx = None;
                        }
                        _ => {}
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break None,
                Some(Ok(_)) => {}
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
                exit_status(&[], Ok(0))
            } else {
                exit_status(&request.command, code)
            };
            send_status(&outbox, &status).await;
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

async fn send_status(outbox: &Outbox, status: &Value) {
    let body = serde_json::to_vec(status).expect("JSON values serialise");
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
