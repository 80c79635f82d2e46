//! The `channel.k8s.io` framing shared by exec, attach and port-forward: every binary
//! WebSocket message is one channel byte followed by that channel's data.

use futures::stream::SplitStream;
use futures::{SinkExt, StreamExt};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::websocket::Socket;
use crate::streams::ProcessOutput;

pub const STDIN: u8 = 0;
pub const STDOUT: u8 = 1;
pub const STDERR: u8 = 2;
pub const ERROR: u8 = 3;
pub const RESIZE: u8 = 4;
/// v5: `[255, channel]` closes that channel (the client's end of stdin).
pub const CLOSE: u8 = 255;

/// How much of a stream one message carries at most (kubelet copies in 32 KiB buffers).
const CHUNK: usize = 32 * 1024;

/// The sending half: messages queue here and one task writes them, so every producer
/// (stdout, stderr, each forwarded port) can send without owning the socket.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Message>,
}

impl Outbox {
    /// Sends `data` on `channel`; false once the client is gone.
    pub async fn send(&self, channel: u8, data: &[u8]) -> bool {
        let mut frame = Vec::with_capacity(data.len() + 1);
        frame.push(channel);
        frame.extend_from_slice(data);
        self.tx.send(Message::binary(frame)).await.is_ok()
    }

    /// Sends one binary message as is (SPDY frames tunnelled without a channel byte).
    pub async fn send_raw(&self, message: Vec<u8>) -> bool {
        self.tx.send(Message::binary(message)).await.is_ok()
    }

    /// Copies `reader` to `channel` until its end (or until the client is gone).
    pub async fn pump(&self, mut reader: ProcessOutput, channel: u8) {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if !self.send(channel, &buf[..n]).await {
                        return;
                    }
                }
            }
        }
    }
}

/// Splits the socket: an [`Outbox`] whose writer task sends a normal Close once every
/// outbox clone is dropped, and the incoming messages.
pub fn split(socket: Socket) -> (Outbox, SplitStream<Socket>, JoinHandle<()>) {
    let (mut sink, incoming) = socket.split();
    let (tx, mut rx) = mpsc::channel::<Message>(32);
    let writer = tokio::spawn(async move {
        'outer: while let Some(first) = rx.recv().await {
            if sink.feed(first).await.is_err() {
                break;
            }
            // Batch what is already queued into one flush.
            while let Ok(more) = rx.try_recv() {
                if sink.feed(more).await.is_err() {
                    break 'outer;
                }
            }
            if sink.flush().await.is_err() {
                break;
            }
        }
        let close = CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        };
        let _ = sink.send(Message::Close(Some(close))).await;
        let _ = sink.close().await;
    });
    (Outbox { tx }, incoming, writer)
}
