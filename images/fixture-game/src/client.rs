//! A small Minecraft 26.1 client for probes: how far does a real client get on this server?
//!
//! [`probe`] always pings the server list first (version, protocol, MOTD, players), then, for
//! deeper probes, logs in offline and, for [`Depth::Play`], goes through configuration to the
//! play-state `Login` and answers the first keep-alive. A login refused by the server (e.g.
//! outdated client) is not an error: the outcome carries the disconnect reason, the stage it
//! came in and the depth reached before it. An error (nothing listening, a broken protocol, the
//! timeout) names the stage it happened in and the depth reached before it ([`Progress`]).
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

use tokio::time::Instant;

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

/// The stages of a join, in protocol order: what a failure or a disconnect is attributed to.
pub mod stage {
    /// Server-list status request and ping.
    pub const STATUS: &str = "status";
    /// Handshake with login intention, Hello, Login Finished.
    pub const LOGIN: &str = "login";
    /// Configuration until Finish Configuration.
    pub const CONFIGURATION: &str = "configuration";
    /// Play-state `Login` and the first keep-alive.
    pub const PLAY: &str = "play";
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
    /// The [`stage`] the server disconnected the client in, with `disconnect_reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disconnected_in: Option<String>,
}

/// How far a probe got before it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The [`stage`] the probe was in.
    pub stage: &'static str,
    /// What the server said so far (`None` until the status ping completed); its
    /// `depth_reached` is the deepest stage completed.
    pub outcome: Option<ProbeOutcome>,
}

impl Progress {
    /// The deepest stage completed (`None`: not even the status ping).
    pub fn reached(&self) -> Option<Depth> {
        self.outcome.as_ref().map(|o| o.depth_reached)
    }

    fn reached_name(&self) -> &'static str {
        match self.reached() {
            None => "none",
            Some(Depth::Query) => "query",
            Some(Depth::Login) => "login",
            Some(Depth::Play) => "play",
        }
    }
}

/// Why a probe could not complete; each variant names the address, the stage it failed in
/// and the depth reached before it ([`Progress`]).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Nothing accepted the connection.
    #[error(
        "cannot connect to {addr} for {}: {source} (is the game running on that address?)",
        at.stage
    )]
    Connect {
        /// The game's address.
        addr: SocketAddr,
        /// How far the client got.
        at: Progress,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The server did not get the client through `at.stage` in time.
    #[error(
        "{addr} did not complete {} within {timeout:?} (deepest stage completed: {})",
        at.stage,
        at.reached_name()
    )]
    Timeout {
        /// The game's address.
        addr: SocketAddr,
        /// How far the client got.
        at: Progress,
        /// The bound that ran out.
        timeout: Duration,
    },
    /// The server kept the connection open but sent nothing that advances `at.stage` (only
    /// keep-alives and pings, or nothing) for `idle`: the join has stalled.
    #[error(
        "{addr} made no progress in {} for {idle:?}, only keep-alives or silence (deepest stage completed: {})",
        at.stage,
        at.reached_name()
    )]
    Stalled {
        /// The game's address.
        addr: SocketAddr,
        /// How far the client got.
        at: Progress,
        /// How long nothing advanced the stage.
        idle: Duration,
    },
    /// The server sent something that is not the Minecraft 26.1 protocol, or closed early.
    #[error("{addr} broke the Minecraft protocol during {}: {detail}", at.stage)]
    Protocol {
        /// The game's address.
        addr: SocketAddr,
        /// How far the client got.
        at: Progress,
        /// What was wrong.
        detail: String,
    },
}

impl ProbeError {
    /// How far the probe got.
    pub fn progress(&self) -> &Progress {
        match self {
            ProbeError::Connect { at, .. }
            | ProbeError::Timeout { at, .. }
            | ProbeError::Stalled { at, .. }
            | ProbeError::Protocol { at, .. } => at,
        }
    }

    /// The [`stage`] the probe failed in.
    pub fn stage(&self) -> &'static str {
        self.progress().stage
    }

    /// The deepest stage completed before the failure (`None`: not even the status ping).
    pub fn reached(&self) -> Option<Depth> {
        self.progress().reached()
    }
}

/// A failure inside [`run`]; [`probe`] adds the address and the progress.
enum Failure {
    Connect(std::io::Error),
    Protocol(String),
    Stalled(Duration),
}

/// When the probe last saw progress, and how long it waits for more ([`probe_bounded`]).
/// `idle: None` (a stall bound no shorter than the whole probe's) never fires: the probe's own
/// timeout then reports the failure, so the two bounds never race at the same instant.
struct Stall {
    idle: Option<Duration>,
    since: Instant,
}

impl Stall {
    fn new(idle: Option<Duration>) -> Self {
        Self {
            idle,
            since: Instant::now(),
        }
    }

    /// Something advanced the join: the idle bound starts again.
    fn progressed(&mut self) {
        self.since = Instant::now();
    }

    /// `read`, unless the stage has seen no progress for the idle bound.
    async fn within<T>(
        &self,
        read: impl std::future::Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        match self.idle {
            Some(idle) => tokio::time::timeout_at(self.since + idle, read)
                .await
                .unwrap_or(Err(Failure::Stalled(idle))),
            None => read.await,
        }
    }
}

const PROBE_NAME: &str = "rehearsal";

/// Probe `addr` up to `depth`, sending `protocol` in the login handshake (775 is 26.1). The
/// whole probe is bounded by `timeout`; a failure says in which stage it happened and how far
/// the client got.
pub async fn probe(
    addr: SocketAddr,
    depth: Depth,
    protocol: i32,
    timeout: Duration,
) -> Result<ProbeOutcome, ProbeError> {
    probe_bounded(addr, depth, protocol, timeout, timeout).await
}

/// [`probe`], and a stall bound: a join that receives nothing advancing its current stage
/// (keep-alives and pings do not; every other packet does) for `stall` fails with
/// [`ProbeError::Stalled`] in that stage, without waiting for the whole `timeout`. A `stall`
/// no shorter than `timeout` is no separate bound: the probe then fails only by `timeout`.
pub async fn probe_bounded(
    addr: SocketAddr,
    depth: Depth,
    protocol: i32,
    timeout: Duration,
    stall: Duration,
) -> Result<ProbeOutcome, ProbeError> {
    let mut at = Progress {
        stage: stage::STATUS,
        outcome: None,
    };
    let mut watch = Stall::new((stall < timeout).then_some(stall));
    let result =
        tokio::time::timeout(timeout, run(addr, depth, protocol, &mut at, &mut watch)).await;
    match result {
        Ok(Ok(outcome)) => Ok(outcome),
        Ok(Err(Failure::Connect(source))) => Err(ProbeError::Connect { addr, at, source }),
        Ok(Err(Failure::Protocol(detail))) => Err(ProbeError::Protocol { addr, at, detail }),
        Ok(Err(Failure::Stalled(idle))) => Err(ProbeError::Stalled { addr, at, idle }),
        Err(_) => Err(ProbeError::Timeout { addr, at, timeout }),
    }
}

fn proto(e: Box<ReadPacketError>) -> Failure {
    Failure::Protocol(e.to_string())
}

fn io(e: std::io::Error) -> Failure {
    Failure::Protocol(e.to_string())
}

async fn connect(
    addr: SocketAddr,
    protocol: i32,
    intention: ClientIntention,
) -> Result<Connection<ClientboundHandshakePacket, ServerboundHandshakePacket>, Failure> {
    let stream = TcpStream::connect(addr).await.map_err(Failure::Connect)?;
    let _ = stream.set_nodelay(true);
    let mut conn = Connection::new_from_stream(stream)
        .await
        .map_err(|e| Failure::Protocol(format!("connection set-up: {e}")))?;
    conn.write(ServerboundIntention {
        protocol_version: protocol,
        hostname: addr.ip().to_string(),
        port: addr.port(),
        intention,
    })
    .await
    .map_err(io)?;
    Ok(conn)
}

/// Records that the server disconnected the client in `at.stage` and ends the probe.
fn disconnected(at: &mut Progress, reason: String) -> Result<ProbeOutcome, Failure> {
    let stage = at.stage;
    let outcome = at
        .outcome
        .as_mut()
        .expect("a disconnect after the status ping");
    outcome.disconnect_reason = Some(reason);
    outcome.disconnected_in = Some(stage.to_string());
    Ok(outcome.clone())
}

fn reach(at: &mut Progress, depth: Depth) {
    if let Some(outcome) = at.outcome.as_mut() {
        outcome.depth_reached = depth;
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one join, stage by stage in protocol order, each read under the stall bound"
)]
async fn run(
    addr: SocketAddr,
    depth: Depth,
    protocol: i32,
    at: &mut Progress,
    watch: &mut Stall,
) -> Result<ProbeOutcome, Failure> {
    // Status always uses the server's own protocol number: status carries no version check.
    at.stage = stage::STATUS;
    at.outcome = Some(status(addr, watch).await?);
    watch.progressed();
    if depth == Depth::Query {
        return Ok(at.outcome.clone().expect("status outcome"));
    }

    at.stage = stage::LOGIN;
    let mut conn = connect(addr, protocol, ClientIntention::Login)
        .await?
        .login();
    conn.write(ServerboundHello {
        name: PROBE_NAME.into(),
        profile_id: azalea_crypto::offline::generate_uuid(PROBE_NAME),
    })
    .await
    .map_err(io)?;
    loop {
        let packet = watch
            .within(async { conn.read().await.map_err(proto) })
            .await?;
        watch.progressed();
        match packet {
            ClientboundLoginPacket::LoginCompression(p) => {
                conn.set_compression_threshold(p.compression_threshold);
            }
            ClientboundLoginPacket::LoginFinished(_) => break,
            ClientboundLoginPacket::LoginDisconnect(p) => {
                return disconnected(at, p.reason.to_string());
            }
            other => {
                return Err(Failure::Protocol(format!(
                    "unexpected packet {other:?} (this probe supports offline mode only)"
                )));
            }
        }
    }
    reach(at, Depth::Login);
    conn.write(ServerboundLoginAcknowledged).await.map_err(io)?;
    if depth == Depth::Login {
        return Ok(at.outcome.clone().expect("status outcome"));
    }

    at.stage = stage::CONFIGURATION;
    watch.progressed();
    let mut conn = conn.config();
    loop {
        let packet = watch
            .within(async { conn.read().await.map_err(proto) })
            .await?;
        if !matches!(
            packet,
            ClientboundConfigPacket::KeepAlive(_) | ClientboundConfigPacket::Ping(_)
        ) {
            watch.progressed();
        }
        match packet {
            ClientboundConfigPacket::FinishConfiguration(_) => {
                conn.write(ServerboundFinishConfiguration)
                    .await
                    .map_err(io)?;
                break;
            }
            ClientboundConfigPacket::SelectKnownPacks(_) => conn
                .write(ServerboundSelectKnownPacks {
                    known_packs: Vec::new(),
                })
                .await
                .map_err(io)?,
            ClientboundConfigPacket::KeepAlive(p) => {
                conn.write(ConfigKeepAlive { id: p.id }).await.map_err(io)?
            }
            ClientboundConfigPacket::Ping(p) => {
                conn.write(ConfigPong { id: p.id }).await.map_err(io)?
            }
            ClientboundConfigPacket::Disconnect(p) => {
                return disconnected(at, p.reason.to_string());
            }
            _ => {}
        }
    }

    at.stage = stage::PLAY;
    watch.progressed();
    let mut conn = conn.game();
    let mut logged_in = false;
    loop {
        let packet = watch
            .within(async { conn.read().await.map_err(proto) })
            .await?;
        if !matches!(
            packet,
            ClientboundGamePacket::KeepAlive(_) | ClientboundGamePacket::Ping(_)
        ) {
            watch.progressed();
        }
        match packet {
            ClientboundGamePacket::Login(_) => logged_in = true,
            ClientboundGamePacket::KeepAlive(p) if logged_in => {
                conn.write(ServerboundKeepAlive { id: p.id })
                    .await
                    .map_err(io)?;
                reach(at, Depth::Play);
                return Ok(at.outcome.clone().expect("status outcome"));
            }
            ClientboundGamePacket::Disconnect(p) => {
                return disconnected(at, p.reason.to_string());
            }
            _ => {}
        }
    }
}

async fn status(addr: SocketAddr, watch: &Stall) -> Result<ProbeOutcome, Failure> {
    let protocol = azalea_protocol::packets::PROTOCOL_VERSION;
    let mut conn = connect(addr, protocol, ClientIntention::Status)
        .await?
        .status();
    conn.write(ServerboundStatusRequest).await.map_err(io)?;
    let ClientboundStatusPacket::StatusResponse(response) = watch
        .within(async { conn.read().await.map_err(proto) })
        .await?
    else {
        return Err(Failure::Protocol("expected a status response".into()));
    };
    conn.write(ServerboundPingRequest { time: 1 })
        .await
        .map_err(io)?;
    match watch
        .within(async { conn.read().await.map_err(proto) })
        .await?
    {
        ClientboundStatusPacket::PongResponse(p) if p.time == 1 => {}
        other => {
            return Err(Failure::Protocol(format!("expected pong 1, got {other:?}")));
        }
    }
    Ok(ProbeOutcome {
        depth_reached: Depth::Query,
        version_name: response.version.name,
        protocol: response.version.protocol,
        motd: response.description.to_string(),
        players_online: response.players.online,
        disconnect_reason: None,
        disconnected_in: None,
    })
}
