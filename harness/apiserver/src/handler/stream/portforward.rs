//! Port-forward sessions in the `v4.channel.k8s.io` / `portforward.k8s.io` protocol (what
//! kube-rs's `Api::portforward` speaks): port *i* of the `ports` parameter is data channel
//! `2i` and error channel `2i+1`, each opened by a frame carrying the port (little endian);
//! a port that cannot be reached gets the kubelet's message on its error channel, and the
//! session ends once every port's pod side has closed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;

use super::channel::{self, Outbox};
use super::websocket::Socket;
use crate::streams::{PodStreams, PortForwardRequest};

/// What port-forward speaks over WebSocket: kubectl's SPDY tunnel, then the channel protocols
/// (binary and base64, as the kubelet's port-forward WebSocket).
pub const PROTOCOLS: &[&str] = &[
    super::spdy::PROTOCOL,
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "portforward.k8s.io",
];

/// The kubelet's wording for a port it could not forward.
pub fn forward_error(request: &PortForwardRequest, why: &str) -> String {
    format!(
        "error forwarding port {} to pod {}_{}, uid {}: {why}",
        request.port, request.pod, request.namespace, request.uid
    )
}

pub async fn session(
    socket: Socket,
    codec: channel::Codec,
    streams: Arc<dyn PodStreams>,
    requests: Vec<PortForwardRequest>,
    stopped: Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let (outbox, mut incoming, writer) = channel::split(socket, codec);
    let mut to_pod = Vec::with_capacity(requests.len());
    let mut ports = JoinSet::new();
    for (index, request) in requests.into_iter().enumerate() {
        let data = (2 * index) as u8;
        let port = request.port.to_le_bytes();
        if !outbox.send(data, &port).await || !outbox.send(data + 1, &port).await {
            break;
        }
        let (tx, rx) = mpsc::channel::<Bytes>(16);
        to_pod.push(tx);
        ports.spawn(forward_port(
            streams.clone(),
            request,
            rx,
            outbox.clone(),
            data,
        ));
    }
    let mut stopped = stopped;
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            done = ports.join_next() => if done.is_none() { break },
            message = incoming.next() => match message {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(message)) => {
                    let Some((ch, data)) = codec.decode(&message) else { continue };
                    let ch = ch as usize;
                    if ch.is_multiple_of(2)
                        && let Some(tx) = to_pod.get(ch / 2)
                    {
                        // A port whose pod side already closed drops what is sent to it.
                        let _ = tx.send(data).await;
                    }
                }
            },
        }
    }
    drop(to_pod);
    ports.abort_all();
    while ports.join_next().await.is_some() {}
    drop(outbox);
    let abort = writer.abort_handle();
    if tokio::time::timeout(std::time::Duration::from_secs(5), writer)
        .await
        .is_err()
    {
        abort.abort();
    }
}

/// One forwarded port: connect, then copy both ways until the pod closes its side.
async fn forward_port(
    streams: Arc<dyn PodStreams>,
    request: PortForwardRequest,
    mut from_client: mpsc::Receiver<Bytes>,
    outbox: Outbox,
    data_channel: u8,
) {
    let conn = match streams.port_forward(request.clone()).await {
        Ok(conn) => conn,
        Err(e) => {
            let message = forward_error(&request, &e.0);
            outbox.send(data_channel + 1, message.as_bytes()).await;
            return;
        }
    };
    let (reader, mut writer) = tokio::io::split(conn);
    let up = async move {
        while let Some(data) = from_client.recv().await {
            if writer.write_all(&data).await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
        // Keep the write half (and so the connection) open until the pod side ends.
        std::future::pending::<()>().await;
    };
    let down = outbox.pump(Box::pin(reader), data_channel);
    tokio::select! {
        _ = down => {}
        _ = up => {}
    }
}
