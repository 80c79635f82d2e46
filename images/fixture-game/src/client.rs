//! A small Minecraft 26.1 client for probes: how far does a real client get on this server?
//!
//! [`probe`] always pings the server list first (version, protocol, MOTD, players), then, for
//! deeper probes, logs in offline and, for [`Depth::Play`], goes through configuration to the
//! play-state `Login` and answers the first keep-alive. A login refused by the server (e.g.
//! outdated client) is not an error: the outcome carries the disconnect reason and the depth
//! reached before it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), fixture_game::client::ProbeError> {
//! use fixture_game::client::{probe, Depth};
//! use std::time::Duration;
//! let outcome = probe("127.0.0.1:25565".parse().unwrap(), Depth::Play, 775, Duration::from_secs(5)).await?;
//! assert_eq!(outcome.depth_reached, Depth::Play);
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use azalea_protocol::connect::Connection;
use azalea_protocol::packets::ClientIntention;
use azalea_protocol::packets::config::{
    ClientboundConfigPacket, ServerboundFinishConfiguration,
    ServerboundKeepAlive as ConfigKeepAlive, ServerboundPong as ConfigPong,
    ServerboundSelectKnownPacks,
};
use azalea_protocol::packets::game::{ClientboundGamePacket, ServerboundKeepAlive};
use azalea_protocol::packets::handshake::{
    ClientboundHandshakePacket, ServerboundHandshakePacket, ServerboundIntention,
};
use azalea_protocol::packets::login::{
    ClientboundLoginPacket, ServerboundHello, ServerboundLoginAcknowledged,
};
use azalea_protocol::packets::status::{
    ClientboundStatusPacket, ServerboundPingRequest, ServerboundStatusRequest,
};
use azalea_protocol::read::ReadPacketError;
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;

/// How far a probe goes, in protocol order.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Depth {
    /// Server-list status and ping.
    Query,
    /// Offline-mode login finished (`LoginFinished` received).
    Login,
    /// Configuration done, play-state `Login` received and a keep-alive answered.
    Play,
}

/// What the probe saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeOutcome {
    /// The deepest stage completed.
    pub depth_reached: Depth,
    /// Version name from the status response (e.g. `26.1`).
    pub version_name: String,
    /// Protocol number from the status response (e.g. 775).
    pub protocol: i32,
    /// The server-list description as plain text.
    pub motd: String,
    /// Online players according to the status response.
    pub players_online: i32,
    /// The server's reason when it disconnected the client during login or play.
    pub disconnect_reason: Option<String>,
}

/// Why a probe could not complete; each variant names the address and the stage.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Nothing accepted the connection.
    #[error("cannot connect to {addr}: {source} (is the game running on that address?)")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The server did not get the client to `stage` in time.
    #[error("{addr} did not complete {stage} within {timeout:?}")]
    Timeout {
        addr: SocketAddr,
        stage: &'static str,
        timeout: Duration,
    },
    /// The server sent something that is not the Minecraft 26.1 protocol, or closed early.
    #[error("{addr} broke the Minecraft protocol during {stage}: {detail}")]
    Protocol {
        addr: SocketAddr,
        stage: &'static str,
        detail: String,
    },
}

const PROBE_NAME: &str = "rehearsal";

/// Probe `addr` up to `depth`, sending `protocol` in the login handshake (775 is 26.1).
pub async fn probe(
    addr: SocketAddr,
    depth: Depth,
    protocol: i32,
    timeout: Duration,
) -> Result<ProbeOutcome, ProbeError> {
    let stage = "the whole probe";
    tokio::time::timeout(timeout, run(addr, depth, protocol))
        .await
        .map_err(|_| ProbeError::Timeout {
            addr,
            stage,
            timeout,
        })?
}

fn proto(addr: SocketAddr, stage: &'static str) -> impl Fn(Box<ReadPacketError>) -> ProbeError {
    move |e| ProbeError::Protocol {
        addr,
        stage,
        detail: e.to_string(),
    }
}

fn io(addr: SocketAddr, stage: &'static str) -> impl Fn(std::io::Error) -> ProbeError {
    move |e| ProbeError::Protocol {
        addr,
        stage,
        detail: e.to_string(),
    }
}

async fn connect(
    addr: SocketAddr,
    protocol: i32,
    intention: ClientIntention,
) -> Result<Connection<ClientboundHandshakePacket, ServerboundHandshakePacket>, ProbeError> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|source| ProbeError::Connect { addr, source })?;
    let _ = stream.set_nodelay(true);
    let mut conn = Connection::new_from_stream(stream)
        .await
        .map_err(|e| ProbeError::Protocol {
            addr,
            stage: "connect",
            detail: e.to_string(),
        })?;
    conn.write(ServerboundIntention {
        protocol_version: protocol,
        hostname: addr.ip().to_string(),
        port: addr.port(),
        intention,
    })
    .await
    .map_err(io(addr, "handshake"))?;
    Ok(conn)
}

async fn run(addr: SocketAddr, depth: Depth, protocol: i32) -> Result<ProbeOutcome, ProbeError> {
    // Status always uses the server's own protocol number: status carries no version check.
    let mut outcome = status(addr).await?;
    if depth == Depth::Query {
        return Ok(outcome);
    }

    let stage = "login";
    let mut conn = connect(addr, protocol, ClientIntention::Login)
        .await?
        .login();
    conn.write(ServerboundHello {
        name: PROBE_NAME.into(),
        profile_id: azalea_crypto::offline::generate_uuid(PROBE_NAME),
    })
    .await
    .map_err(io(addr, stage))?;
    loop {
        match conn.read().await.map_err(proto(addr, stage))? {
            ClientboundLoginPacket::LoginCompression(p) => {
                conn.set_compression_threshold(p.compression_threshold);
            }
            ClientboundLoginPacket::LoginFinished(_) => break,
            ClientboundLoginPacket::LoginDisconnect(p) => {
                outcome.disconnect_reason = Some(p.reason.to_string());
                return Ok(outcome);
            }
            other => {
                return Err(ProbeError::Protocol {
                    addr,
                    stage,
                    detail: format!(
                        "unexpected packet {other:?} (this probe supports offline mode only)"
                    ),
                });
            }
        }
    }
    outcome.depth_reached = Depth::Login;
    conn.write(ServerboundLoginAcknowledged)
        .await
        .map_err(io(addr, stage))?;
    if depth == Depth::Login {
        return Ok(outcome);
    }

    let stage = "configuration";
    let mut conn = conn.config();
    loop {
        match conn.read().await.map_err(proto(addr, stage))? {
            ClientboundConfigPacket::FinishConfiguration(_) => {
                conn.write(ServerboundFinishConfiguration)
                    .await
                    .map_err(io(addr, stage))?;
                break;
            }
            ClientboundConfigPacket::SelectKnownPacks(_) => conn
                .write(ServerboundSelectKnownPacks {
                    known_packs: Vec::new(),
                })
                .await
                .map_err(io(addr, stage))?,
            ClientboundConfigPacket::KeepAlive(p) => conn
                .write(ConfigKeepAlive { id: p.id })
                .await
                .map_err(io(addr, stage))?,
            ClientboundConfigPacket::Ping(p) => conn
                .write(ConfigPong { id: p.id })
                .await
                .map_err(io(addr, stage))?,
            ClientboundConfigPacket::Disconnect(p) => {
                outcome.disconnect_reason = Some(p.reason.to_string());
                return Ok(outcome);
            }
            _ => {}
        }
    }

    let stage = "play";
    let mut conn = conn.game();
    let mut logged_in = false;
    loop {
        match conn.read().await.map_err(proto(addr, stage))? {
            ClientboundGamePacket::Login(_) => logged_in = true,
            ClientboundGamePacket::KeepAlive(p) if logged_in => {
                conn.write(ServerboundKeepAlive { id: p.id })
                    .await
                    .map_err(io(addr, stage))?;
                outcome.depth_reached = Depth::Play;
                return Ok(outcome);
            }
            ClientboundGamePacket::Disconnect(p) => {
                outcome.disconnect_reason = Some(p.reason.to_string());
                return Ok(outcome);
            }
            _ => {}
        }
    }
}

async fn status(addr: SocketAddr) -> Result<ProbeOutcome, ProbeError> {
    let stage = "status";
    let protocol = azalea_protocol::packets::PROTOCOL_VERSION;
    let mut conn = connect(addr, protocol, ClientIntention::Status)
        .await?
        .status();
    conn.write(ServerboundStatusRequest)
        .await
        .map_err(io(addr, stage))?;
    let ClientboundStatusPacket::StatusResponse(response) =
        conn.read().await.map_err(proto(addr, stage))?
    else {
        return Err(ProbeError::Protocol {
            addr,
            stage,
            detail: "expected a status response".into(),
        });
    };
    conn.write(ServerboundPingRequest { time: 1 })
        .await
        .map_err(io(addr, stage))?;
    match conn.read().await.map_err(proto(addr, stage))? {
        ClientboundStatusPacket::PongResponse(p) if p.time == 1 => {}
        other => {
            return Err(ProbeError::Protocol {
                addr,
                stage,
                detail: format!("expected pong 1, got {other:?}"),
            });
        }
    }
    Ok(ProbeOutcome {
        depth_reached: Depth::Query,
        version_name: response.version.name,
        protocol: response.version.protocol,
        motd: response.description.to_string(),
        players_online: response.players.online,
        disconnect_reason: None,
    })
}
