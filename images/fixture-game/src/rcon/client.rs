//! A small RCON client: log in once, then run commands and collect fragmented replies.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use super::frame::{Frame, FrameError, PacketType};

/// Why an RCON exchange failed; each variant names the server address.
#[derive(Debug, thiserror::Error)]
pub enum RconError {
    /// Nothing accepted the connection (game not running, wrong address or port).
    #[error("cannot connect to RCON at {addr}: {source} (is the game running and RCON enabled?)")]
    Connect {
        /// The RCON address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The server refused the password.
    #[error("RCON at {addr} refused the password (check RCON_PASSWORD)")]
    BadPassword {
        /// The RCON address.
        addr: SocketAddr,
    },
    /// The exchange did not finish in time.
    #[error("RCON at {addr} did not answer {what:?} within {timeout:?}")]
    Timeout {
        /// The RCON address.
        addr: SocketAddr,
        /// The command (or login) that was sent.
        what: String,
        /// The bound that ran out.
        timeout: Duration,
    },
    /// The connection broke or the server sent something that is not RCON.
    #[error("RCON at {addr} failed during {what:?}: {source}")]
    Wire {
        /// The RCON address.
        addr: SocketAddr,
        /// The command (or login) that was sent.
        what: String,
        /// The framing error.
        source: FrameError,
    },
    /// The server answered with a packet that does not belong to the request.
    #[error(
        "RCON at {addr} answered {what:?} with unexpected packet id {got} (expected {expected})"
    )]
    UnexpectedId {
        /// The RCON address.
        addr: SocketAddr,
        /// The command (or login) that was sent.
        what: String,
        /// The request's packet id.
        expected: i32,
        /// The packet id the server answered with.
        got: i32,
    },
}

/// An authenticated RCON connection.
#[derive(Debug)]
pub struct RconClient {
    addr: SocketAddr,
    stream: TcpStream,
    next_id: i32,
    timeout: Duration,
}

impl RconClient {
    /// Connect and authenticate with the default 10 s timeout per exchange.
    pub async fn connect(addr: SocketAddr, password: &str) -> Result<Self, RconError> {
        Self::connect_with_timeout(addr, password, Duration::from_secs(10)).await
    }

    /// Connect and authenticate; `timeout` bounds the connect and every later exchange.
    pub async fn connect_with_timeout(
        addr: SocketAddr,
        password: &str,
        timeout: Duration,
    ) -> Result<Self, RconError> {
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => return Err(RconError::Connect { addr, source }),
            Err(_) => {
                return Err(RconError::Timeout {
                    addr,
                    what: "connect".into(),
                    timeout,
                });
            }
        };
        let _ = stream.set_nodelay(true);
        let mut client = RconClient {
            addr,
            stream,
            next_id: 1,
            timeout,
        };
        client.login(password).await?;
        Ok(client)
    }

    /// The server address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn fresh_id(&mut self) -> i32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    async fn login(&mut self, password: &str) -> Result<(), RconError> {
        let id = self.fresh_id();
        let what = "login";
        self.send(Frame::new(id, PacketType::Auth, password), what)
            .await?;
        loop {
            let frame = self.recv(what).await?;
            // Source-style servers send an empty RESPONSE_VALUE before the auth result.
            if frame.kind != PacketType::ExecOrAuthResponse {
                continue;
            }
            return match frame.id {
                -1 => Err(RconError::BadPassword { addr: self.addr }),
                got if got == id => Ok(()),
                got => Err(RconError::UnexpectedId {
                    addr: self.addr,
                    what: what.into(),
                    expected: id,
                    got,
                }),
            };
        }
    }

    /// Run one command and return its whole reply, however many 4096-byte chunks it spans.
    ///
    /// After the command the client sends an empty RESPONSE_VALUE probe with a second id; the
    /// server answers it after the last chunk, which marks the end of the reply.
    pub async fn command(&mut self, command: &str) -> Result<String, RconError> {
        let id = self.fresh_id();
        let probe = self.fresh_id();
        self.send(
            Frame::new(id, PacketType::ExecOrAuthResponse, command),
            command,
        )
        .await?;
        self.send(Frame::new(probe, PacketType::ResponseValue, ""), command)
            .await?;
        let mut reply = Vec::new();
        loop {
            let frame = match self.recv(command).await {
                Ok(frame) => frame,
                // `stop` ends the server, which may close before it answers the probe; the
                // reply chunks it already sent are the whole reply.
                Err(RconError::Wire {
                    source: FrameError::Closed,
                    ..
                }) if !reply.is_empty() => {
                    return Ok(String::from_utf8_lossy(&reply).into_owned());
                }
                Err(e) => return Err(e),
            };
            if frame.id == id {
                reply.extend_from_slice(&frame.payload);
            } else if frame.id == probe {
                return Ok(String::from_utf8_lossy(&reply).into_owned());
            } else {
                return Err(RconError::UnexpectedId {
                    addr: self.addr,
                    what: command.into(),
                    expected: id,
                    got: frame.id,
                });
            }
        }
    }

    async fn send(&mut self, frame: Frame, what: &str) -> Result<(), RconError> {
        let addr = self.addr;
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, frame.write_to(&mut self.stream)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(RconError::Wire {
                addr,
                what: what.into(),
                source: FrameError::Io(e),
            }),
            Err(_) => Err(RconError::Timeout {
                addr,
                what: what.into(),
                timeout,
            }),
        }
    }

    async fn recv(&mut self, what: &str) -> Result<Frame, RconError> {
        let addr = self.addr;
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, Frame::read_from(&mut self.stream)).await {
            Ok(Ok(frame)) => Ok(frame),
            Ok(Err(source)) => Err(RconError::Wire {
                addr,
                what: what.into(),
                source,
            }),
            Err(_) => Err(RconError::Timeout {
                addr,
                what: what.into(),
                timeout,
            }),
        }
    }
}
