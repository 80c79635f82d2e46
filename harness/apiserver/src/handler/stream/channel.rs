//! The `channel.k8s.io` framing shared by exec, attach and port-forward: every binary
//! WebSocket message is one channel byte followed by that channel's data. The
//! `base64.channel.k8s.io` variants send text messages instead: the channel as an ASCII digit
//! (`'0' + channel`), then the data in standard base64. As kube-apiserver's `wsstream`, the
//! server reads either frame type from the client in either codec.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
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

/// How channel messages are encoded on the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Binary messages: the channel byte, then the raw data.
    Binary,
    /// Text messages: `'0' + channel`, then the data in standard base64.
    Base64,
}

impl Codec {
    /// The codec of a negotiated subprotocol (`v4.base64.channel.k8s.io` is base64).
    pub fn of(protocol: &str) -> Codec {
        if protocol.contains("base64.") {
            Codec::Base64
        } else {
            Codec::Binary
        }
    }

    /// One channel message for the client.
    pub fn encode(self, channel: u8, data: &[u8]) -> Message {
        match self {
            Codec::Binary => {
                let mut frame = Vec::with_capacity(data.len() + 1);
                frame.push(channel);
                frame.extend_from_slice(data);
                Message::binary(frame)
            }
            Codec::Base64 => {
                let mut text = String::with_capacity(data.len() * 4 / 3 + 5);
                text.push(char::from(b'0'.wrapping_add(channel)));
                text.push_str(&BASE64.encode(data));
                Message::text(text)
            }
        }
    }

    /// The channel and data of a client message; `None` for control frames, empty frames and
    /// base64 that does not decode (which wsstream skips too).
    pub fn decode(self, message: &Message) -> Option<(u8, Bytes)> {
        let raw: Bytes = match message {
            Message::Binary(data) => data.clone(),
            Message::Text(text) => Bytes::copy_from_slice(text.as_bytes()),
            _ => return None,
        };
        let (&first, rest) = raw.split_first()?;
        match self {
            Codec::Binary => Some((first, raw.slice(1..))),
            Codec::Base64 => {
                let data = BASE64.decode(rest).ok()?;
                Some((first.wrapping_sub(b'0'), Bytes::from(data)))
            }
        }
    }
}

/// The sending half: messages queue here and one task writes them, so every producer
/// (stdout, stderr, each forwarded port) can send without owning the socket.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Message>,
    codec: Codec,
}

impl Outbox {
    /// Sends `data` on `channel`; false once the client is gone.
    pub async fn send(&self, channel: u8, data: &[u8]) -> bool {
        self.tx.send(self.codec.encode(channel, data)).await.is_ok()
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
pub fn split(socket: Socket, codec: Codec) -> (Outbox, SplitStream<Socket>, JoinHandle<()>) {
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
    (Outbox { tx, codec }, incoming, writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_frames_carry_an_ascii_channel_and_standard_base64() {
        let m = Codec::Base64.encode(1, b"test string 1\n");
        assert_eq!(m, Message::text("1dGVzdCBzdHJpbmcgMQo="));
        assert_eq!(
            Codec::Base64.decode(&Message::text("0aGk=")),
            Some((0, Bytes::from_static(b"hi")))
        );
        assert_eq!(Codec::Base64.decode(&Message::text("0not base64!")), None);
        // The port header of a base64 port-forward: port 8080 little endian.
        assert_eq!(
            Codec::Base64.encode(2, &8080u16.to_le_bytes()),
            Message::text("2kB8=")
        );
    }

    #[test]
    fn binary_protocols_read_text_frames_too() {
        assert_eq!(
            Codec::Binary.decode(&Message::text("\u{0}echo hi\n")),
            Some((0, Bytes::from_static(b"echo hi\n")))
        );
        assert_eq!(
            Codec::Binary.decode(&Message::binary(vec![255, 0])),
            Some((255, Bytes::from_static(&[0])))
        );
        assert_eq!(Codec::Binary.decode(&Message::binary(Vec::new())), None);
        assert_eq!(Codec::of("v4.base64.channel.k8s.io"), Codec::Base64);
        assert_eq!(Codec::of("base64.channel.k8s.io"), Codec::Base64);
        assert_eq!(Codec::of("v5.channel.k8s.io"), Codec::Binary);
    }
}
