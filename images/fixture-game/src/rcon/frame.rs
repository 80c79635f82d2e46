//! One RCON packet on the wire: reading and writing the little-endian frame.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest reply payload vanilla puts in one packet; longer replies are split.
pub const MAX_REPLY_CHUNK: usize = 4096;

/// Frames larger than this are refused: vanilla accepts 1446-byte requests, and a client reply
/// chunk is at most [`MAX_REPLY_CHUNK`] bytes, so anything bigger is a broken or hostile peer.
const MAX_FRAME: i32 = 1 << 16;

/// Packet types as vanilla numbers them (the same number means different things per direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketType {
    /// 0: a reply chunk (server to client), also what clients send as the end-of-reply probe.
    ResponseValue,
    /// 2: a command (client to server) or the authentication result (server to client).
    ExecOrAuthResponse,
    /// 3: a login with the password (client to server).
    Auth,
    /// Anything else; the server answers it with `Unknown request <type>`.
    Other(i32),
}

impl PacketType {
    /// The number on the wire.
    pub fn code(self) -> i32 {
        match self {
            PacketType::ResponseValue => 0,
            PacketType::ExecOrAuthResponse => 2,
            PacketType::Auth => 3,
            PacketType::Other(code) => code,
        }
    }

    /// The type for a number read from the wire.
    pub fn from_code(code: i32) -> Self {
        match code {
            0 => PacketType::ResponseValue,
            2 => PacketType::ExecOrAuthResponse,
            3 => PacketType::Auth,
            other => PacketType::Other(other),
        }
    }
}

/// One RCON packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The request id; replies carry the id of the request they answer.
    pub id: i32,
    /// What the packet is.
    pub kind: PacketType,
    /// The payload without its two trailing NUL bytes.
    pub payload: Vec<u8>,
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    #[error("the RCON peer closed the connection")]
    Closed,
    /// The size field is impossible (shorter than a header or larger than any RCON packet).
    #[error("RCON frame size {size} is outside 10..={max}: the peer does not speak RCON")]
    BadSize {
        /// The size field read.
        size: i32,
        /// The largest size RCON allows.
        max: i32,
    },
    /// The socket failed.
    #[error("RCON socket error: {0}")]
    Io(#[from] std::io::Error),
}

impl Frame {
    /// A frame with a text payload.
    pub fn new(id: i32, kind: PacketType, payload: impl Into<Vec<u8>>) -> Self {
        Frame {
            id,
            kind,
            payload: payload.into(),
        }
    }

    /// The payload as text (RCON payloads are UTF-8 in practice; invalid bytes are replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.payload).into_owned()
    }

    /// The frame's bytes, ready for one `write_all` (one frame per write: some clients lose a
    /// second frame that arrives in the same segment as the first during login).
    pub fn encode(&self) -> Vec<u8> {
        let size = (4 + 4 + self.payload.len() + 2) as i32;
        let mut out = Vec::with_capacity(size as usize + 4);
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.kind.code().to_le_bytes());
        out.extend_from_slice(&self.payload);
        out.extend_from_slice(&[0, 0]);
        out
    }

    /// Write the frame and flush it.
    pub async fn write_to<W: AsyncWrite + Unpin>(&self, w: &mut W) -> std::io::Result<()> {
        w.write_all(&self.encode()).await?;
        w.flush().await
    }

    /// Read one frame; [`FrameError::Closed`] when the peer closed cleanly before a new frame.
    pub async fn read_from<R: AsyncRead + Unpin>(r: &mut R) -> Result<Frame, FrameError> {
        let mut size = [0u8; 4];
        match r.read_exact(&mut size).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(FrameError::Closed);
            }
            Err(e) => return Err(e.into()),
        }
        let size = i32::from_le_bytes(size);
        if !(10..=MAX_FRAME).contains(&size) {
            return Err(FrameError::BadSize {
                size,
                max: MAX_FRAME,
            });
        }
        let mut body = vec![0u8; size as usize];
        r.read_exact(&mut body).await?;
        let id = i32::from_le_bytes(body[0..4].try_into().expect("4 bytes"));
        let kind =
            PacketType::from_code(i32::from_le_bytes(body[4..8].try_into().expect("4 bytes")));
        // The payload ends with two NULs; tolerate peers that send only one.
        let mut payload = body[8..].to_vec();
        while payload.last() == Some(&0) {
            payload.pop();
        }
        Ok(Frame { id, kind, payload })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn round_trip_keeps_id_type_and_payload() {
        let frame = Frame::new(7, PacketType::ExecOrAuthResponse, "list");
        let bytes = frame.encode();
        assert_eq!(&bytes[0..4], &(14i32).to_le_bytes());
        let back = Frame::read_from(&mut bytes.as_slice()).await.unwrap();
        assert_eq!(back, frame);
    }

    #[tokio::test]
    async fn absurd_size_is_refused() {
        let bytes = (-5i32).to_le_bytes();
        let err = Frame::read_from(&mut bytes.as_slice()).await.unwrap_err();
        assert!(matches!(err, FrameError::BadSize { size: -5, .. }), "{err}");
    }
}
