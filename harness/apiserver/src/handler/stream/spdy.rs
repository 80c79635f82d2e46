//! kubectl's port-forward: SPDY/3.1 tunnelled through WebSocket (subprotocol
//! `SPDY/3.1+portforward.k8s.io`; each binary message carries raw SPDY bytes). For every
//! local connection kubectl opens an error stream and a data stream, both SYN_STREAMs with
//! headers `streamtype`, `port` and `requestid`; once both of a request have arrived the
//! server connects to the pod, copies the data stream both ways, and reports a failure on the
//! error stream, as the kubelet's SPDY port-forward handler does.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use bytes::{Buf, Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;

use super::channel::{self, Outbox};
use super::portforward::forward_error;
use super::websocket::Socket;
use crate::streams::{PodStreams, PortForwardRequest};

/// The WebSocket subprotocol kubectl 1.31+ offers for port-forward.
pub const PROTOCOL: &str = "SPDY/3.1+portforward.k8s.io";

const VERSION: u16 = 3;
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const FLAG_FIN: u8 = 0x01;
/// Largest DATA payload sent at once.
const DATA_CHUNK: usize = 32 * 1024;

/// The SPDY/3 header-compression dictionary (draft-mbelshe-httpbis-spdy-00, 2.6.10.1):
/// length-prefixed header names and values, then a block of common text.
fn dictionary() -> &'static [u8] {
    static DICT: OnceLock<Vec<u8>> = OnceLock::new();
    DICT.get_or_init(|| {
        let words = [
            "options",
            "head",
            "post",
            "put",
            "delete",
            "trace",
            "accept",
            "accept-charset",
            "accept-encoding",
            "accept-language",
            "accept-ranges",
            "age",
            "allow",
            "authorization",
            "cache-control",
            "connection",
            "content-base",
            "content-encoding",
            "content-language",
            "content-length",
            "content-location",
            "content-md5",
            "content-range",
            "content-type",
            "date",
            "etag",
            "expect",
            "expires",
            "from",
            "host",
            "if-match",
            "if-modified-since",
            "if-none-match",
            "if-range",
            "if-unmodified-since",
            "last-modified",
            "location",
            "max-forwards",
            "pragma",
            "proxy-authenticate",
            "proxy-authorization",
            "range",
            "referer",
            "retry-after",
            "server",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
            "user-agent",
            "vary",
            "via",
            "warning",
            "www-authenticate",
            "method",
            "get",
            "status",
            "200 OK",
            "version",
            "HTTP/1.1",
            "url",
            "public",
            "set-cookie",
            "keep-alive",
            "origin",
        ];
        let mut dict = Vec::with_capacity(1500);
        for word in words {
            dict.extend_from_slice(&(word.len() as u32).to_be_bytes());
            dict.extend_from_slice(word.as_bytes());
        }
        dict.extend_from_slice(
            b"100101201202205206300302303304305306307402405406407408409410411412413414415416417\
502504505203 Non-Authoritative Information204 No Content301 Moved Permanently\
400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error\
501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec \
00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,\
image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,\
publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
        );
        dict
    })
}

/// One direction's header compression: a single zlib stream per connection, primed with
/// the dictionary, each header block ending on a sync flush.
struct Headers {
    inflate: Decompress,
    deflate: Compress,
    deflate_primed: bool,
}

impl Headers {
    fn new() -> Self {
        Headers {
            inflate: Decompress::new(true),
            deflate: Compress::new(Compression::default(), true),
            deflate_primed: false,
        }
    }

    fn decode(&mut self, block: &[u8]) -> Result<Vec<(String, String)>, String> {
        let mut out = Vec::with_capacity(block.len() * 4 + 64);
        let mut input = block;
        while !input.is_empty() {
            if out.capacity() - out.len() < 256 {
                out.reserve(out.capacity().max(1024));
            }
            let before = self.inflate.total_in();
            match self
                .inflate
                .decompress_vec(input, &mut out, FlushDecompress::Sync)
            {
                Ok(Status::BufError) if self.inflate.total_in() == before => {
                    return Err("header block does not inflate".into());
                }
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate
                        .set_dictionary(dictionary())
                        .map_err(|e| format!("header dictionary rejected: {e}"))?;
                }
                Err(e) => return Err(format!("header block does not inflate: {e}")),
            }
            let used = (self.inflate.total_in() - before) as usize;
            input = &input[used..];
        }
        let mut data = Bytes::from(out);
        let mut headers = Vec::new();
        let take = |data: &mut Bytes| -> Result<String, String> {
            if data.remaining() < 4 {
                return Err("truncated header block".into());
            }
            let len = data.get_u32() as usize;
            if data.remaining() < len {
                return Err("truncated header block".into());
            }
            Ok(String::from_utf8_lossy(&data.split_to(len)).into_owned())
        };
        if data.remaining() < 4 {
            return Err("truncated header block".into());
        }
        let count = data.get_u32();
        for _ in 0..count {
            let name = take(&mut data)?;
            let value = take(&mut data)?;
            headers.push((name.to_ascii_lowercase(), value));
        }
        Ok(headers)
    }

    fn encode(&mut self, headers: &[(&str, &str)]) -> Vec<u8> {
        if !self.deflate_primed {
            let _ = self.deflate.set_dictionary(dictionary());
            self.deflate_primed = true;
        }
        let mut raw = Vec::new();
        raw.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        for (name, value) in headers {
            raw.extend_from_slice(&(name.len() as u32).to_be_bytes());
            raw.extend_from_slice(name.as_bytes());
            raw.extend_from_slice(&(value.len() as u32).to_be_bytes());
            raw.extend_from_slice(value.as_bytes());
        }
        let mut out = Vec::with_capacity(raw.len() + 128);
        let mut input = raw.as_slice();
        loop {
            let before = self.deflate.total_in();
            let _ = self
                .deflate
                .compress_vec(input, &mut out, FlushCompress::Sync);
            input = &input[(self.deflate.total_in() - before) as usize..];
            // A sync flush is complete when input is consumed and output space was left over.
            if input.is_empty() && out.len() < out.capacity() {
                return out;
            }
            out.reserve(out.capacity().max(256));
        }
    }
}

fn control_frame(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + payload.len());
    frame.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
    frame.extend_from_slice(&kind.to_be_bytes());
    let len = payload.len() as u32;
    frame.push(flags);
    frame.extend_from_slice(&len.to_be_bytes()[1..]);
    frame.extend_from_slice(payload);
    frame
}

fn data_frame(stream: u32, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + data.len());
    frame.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    frame.push(flags);
    frame.extend_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
    frame.extend_from_slice(data);
    frame
}

/// What arrives on one SPDY stream from the client.
enum StreamKind {
    Data,
    Error,
}

struct StreamState {
    request: String,
    kind: StreamKind,
    /// Client → pod bytes, once the pair is connected (data streams only).
    to_pod: Option<mpsc::Sender<Bytes>>,
    /// Data that arrived before the pod connection was up.
    early: Vec<Bytes>,
    /// The client ended its side before the pod connection was up.
    early_fin: bool,
}

#[derive(Default)]
struct Pair {
    port: Option<u16>,
    data: Option<u32>,
    error: Option<u32>,
    started: bool,
}

#[expect(
    clippy::too_many_lines,
    reason = "one SPDY frame loop: each control frame's arm updates the same per-stream state"
)]
pub async fn session(
    socket: Socket,
    streams: Arc<dyn PodStreams>,
    base: PortForwardRequest,
    stopped: Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let (outbox, mut incoming, writer) = channel::split(socket, channel::Codec::Binary);
    let mut headers = Headers::new();
    let mut buffer = BytesMut::new();
    let mut by_stream: HashMap<u32, StreamState> = HashMap::new();
    let mut pairs: HashMap<String, Pair> = HashMap::new();
    let mut forwards = JoinSet::new();
    let mut stopped = stopped;
    'session: loop {
        let message = tokio::select! {
            _ = &mut stopped => break,
            Some(_) = forwards.join_next(), if !forwards.is_empty() => continue,
            message = incoming.next() => message,
        };
        match message {
            Some(Ok(Message::Binary(data))) => buffer.extend_from_slice(&data),
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
            Some(Ok(_)) => continue,
        }
        while buffer.len() >= 8 {
            let len = u32::from_be_bytes([0, buffer[5], buffer[6], buffer[7]]) as usize;
            if buffer.len() < 8 + len {
                break;
            }
            let frame = buffer.split_to(8 + len).freeze();
            let flags = frame[4];
            let payload = frame.slice(8..);
            if frame[0] & 0x80 == 0 {
                let stream = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
                on_data(&mut by_stream, stream, flags, payload).await;
                continue;
            }
            let kind = u16::from_be_bytes([frame[2], frame[3]]);
            match kind {
                SYN_STREAM if payload.len() >= 10 => {
                    let stream =
                        u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                            & 0x7fff_ffff;
                    let parsed = match headers.decode(&payload[10..]) {
                        Ok(h) => h,
                        Err(why) => {
                            tracing::warn!(%why, "port-forward: bad SPDY header block");
                            break 'session;
                        }
                    };
                    let reply = headers.encode(&[]);
                    let mut body = stream.to_be_bytes().to_vec();
                    body.extend_from_slice(&reply);
                    if !outbox.send_raw(control_frame(SYN_REPLY, 0, &body)).await {
                        break 'session;
                    }
                    let get = |name: &str| {
                        parsed
                            .iter()
                            .find(|(n, _)| n == name)
                            .map(|(_, v)| v.clone())
                            .unwrap_or_default()
                    };
                    let request = get("requestid");
                    let kind = match get("streamtype").as_str() {
                        "data" => StreamKind::Data,
                        "error" => StreamKind::Error,
                        other => {
                            tracing::warn!(streamtype = other, "port-forward: unknown stream type");
                            let mut rst = stream.to_be_bytes().to_vec();
                            rst.extend_from_slice(&1u32.to_be_bytes());
                            outbox.send_raw(control_frame(RST_STREAM, 0, &rst)).await;
                            continue;
                        }
                    };
                    let pair = pairs.entry(request.clone()).or_default();
                    let port = get("port").parse::<u16>().ok();
                    pair.port = pair.port.or(port);
                    match kind {
                        StreamKind::Data => pair.data = Some(stream),
                        StreamKind::Error => pair.error = Some(stream),
                    }
                    by_stream.insert(
                        stream,
                        StreamState {
                            request: request.clone(),
                            kind,
                            to_pod: None,
                            early: Vec::new(),
                            early_fin: false,
                        },
                    );
                    if let (Some(data), Some(error), false) = (pair.data, pair.error, pair.started)
                    {
                        pair.started = true;
                        let state = by_stream.get_mut(&data).expect("registered above");
                        let (tx, rx) = mpsc::channel::<Bytes>(16 + state.early.len());
                        for chunk in state.early.drain(..) {
                            let _ = tx.try_send(chunk);
                        }
                        // Dropping the sender ends the pod's input if the client already did.
                        if !state.early_fin {
                            state.to_pod = Some(tx);
                        }
                        let request = PortForwardRequest {
                            port: pair.port.unwrap_or(0),
                            ..base.clone()
                        };
                        forwards.spawn(forward(
                            streams.clone(),
                            request,
                            data,
                            error,
                            rx,
                            outbox.clone(),
                        ));
                    }
                }
                SYN_REPLY => {}
                RST_STREAM if payload.len() >= 4 => {
                    let stream =
                        u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                            & 0x7fff_ffff;
                    if let Some(state) = by_stream.remove(&stream) {
                        pairs.remove(&state.request);
                    }
                }
                // A PING is answered by echoing it.
                PING if !outbox.send_raw(frame.to_vec()).await => break 'session,
                GOAWAY => break 'session,
                // SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do for port-forward.
                _ => {}
            }
        }
    }
    drop(by_stream);
    forwards.abort_all();
    while forwards.join_next().await.is_some() {}
    drop(outbox);
    let abort = writer.abort_handle();
    if tokio::time::timeout(std::time::Duration::from_secs(5), writer)
        .await
        .is_err()
    {
        abort.abort();
    }
}

async fn on_data(
    by_stream: &mut HashMap<u32, StreamState>,
    stream: u32,
    flags: u8,
    payload: Bytes,
) {
    let Some(state) = by_stream.get_mut(&stream) else {
        return;
    };
    if !matches!(state.kind, StreamKind::Data) {
        return;
    }
    if !payload.is_empty() {
        match &state.to_pod {
            Some(tx) => {
                let _ = tx.send(payload).await;
            }
            None => state.early.push(payload),
        }
    }
    if flags & FLAG_FIN != 0 {
        // The client ended its side: the pod sees end of input.
        state.to_pod = None;
        state.early_fin = true;
    }
}

/// One request: connect to the pod port, then copy until the pod closes its side.
async fn forward(
    streams: Arc<dyn PodStreams>,
    request: PortForwardRequest,
    data: u32,
    error: u32,
    mut from_client: mpsc::Receiver<Bytes>,
    outbox: Outbox,
) {
    let conn = match streams.port_forward(request.clone()).await {
        Ok(conn) => conn,
        Err(e) => {
            let message = forward_error(&request, &e.0);
            outbox
                .send_raw(data_frame(error, 0, message.as_bytes()))
                .await;
            outbox.send_raw(data_frame(error, FLAG_FIN, &[])).await;
            outbox.send_raw(data_frame(data, FLAG_FIN, &[])).await;
            return;
        }
    };
    let (mut reader, mut writer) = tokio::io::split(conn);
    let up = async move {
        while let Some(chunk) = from_client.recv().await {
            if writer.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
        std::future::pending::<()>().await;
    };
    let down = async {
        let mut buf = vec![0u8; DATA_CHUNK];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if !outbox.send_raw(data_frame(data, 0, &buf[..n])).await {
                        return;
                    }
                }
            }
        }
        outbox.send_raw(data_frame(data, FLAG_FIN, &[])).await;
        outbox.send_raw(data_frame(error, FLAG_FIN, &[])).await;
    };
    tokio::select! {
        _ = down => {}
        _ = up => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_blocks_round_trip_across_one_zlib_stream() {
        let (mut client, mut server) = (Headers::new(), Headers::new());
        for request in ["0", "1", "2"] {
            let block = client.encode(&[
                ("streamtype", "data"),
                ("port", "25565"),
                ("requestid", request),
            ]);
            let decoded = server.decode(&block).unwrap();
            assert_eq!(
                decoded,
                [
                    ("streamtype".to_string(), "data".to_string()),
                    ("port".to_string(), "25565".to_string()),
                    ("requestid".to_string(), request.to_string()),
                ]
            );
        }
        assert!(server.decode(b"not zlib").is_err());
    }

    #[test]
    fn frames_carry_their_length_and_flags() {
        let frame = control_frame(SYN_REPLY, 0, &[0, 0, 0, 1]);
        assert_eq!(&frame[..8], &[0x80, 3, 0, 2, 0, 0, 0, 4]);
        let data = data_frame(3, FLAG_FIN, b"abc");
        assert_eq!(data, [0, 0, 0, 3, 1, 0, 0, 3, b'a', b'b', b'c']);
    }
}
