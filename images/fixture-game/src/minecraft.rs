//! The Minecraft Java 26.1 (protocol 775) side of the game: server-list status, offline-mode
//! login, the configuration phase and the play-state `Login`, then keep-alives until the
//! client leaves. A login with another protocol number gets vanilla's outdated-client
//! disconnect. The packet sequence is the one measured in `facts/minecraft.md`.
//!
//! Two [`Join`] behaviours make negative rollout candidates that fail at a known depth: one
//! refuses every login after a normal status ping, one logs players in and then never finishes
//! the configuration phase.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use azalea_auth::game_profile::GameProfile;
use azalea_chat::FormattedText;
use azalea_chat::translatable_component::{PrimitiveOrComponent, TranslatableComponent};
use azalea_core::entity_id::MinecraftEntityId;
use azalea_core::game_type::{GameMode, OptionalGameType};
use azalea_protocol::connect::Connection;
use azalea_protocol::connect::ReadConnection;
use azalea_protocol::packets::common::CommonPlayerSpawnInfo;
use azalea_protocol::packets::config::{
    ClientboundConfigPacket, ClientboundFinishConfiguration,
    ClientboundKeepAlive as ConfigKeepAlive, ClientboundRegistryData, ServerboundConfigPacket,
};
use azalea_protocol::packets::game::{
    ClientboundGamePacket, ClientboundKeepAlive, ClientboundLogin, ServerboundGamePacket,
};
use azalea_protocol::packets::handshake::{ClientboundHandshakePacket, ServerboundHandshakePacket};
use azalea_protocol::packets::login::{
    ClientboundLoginDisconnect, ClientboundLoginFinished, ClientboundLoginPacket,
    ServerboundLoginPacket,
};
use azalea_protocol::packets::status::{
    ClientboundPongResponse, ClientboundStatusResponse, ServerboundStatusPacket,
    c_status_response::{Players as StatusPlayers, Version},
};
use azalea_protocol::packets::{ClientIntention, PROTOCOL_VERSION, VERSION_NAME};
use azalea_protocol::read::ReadPacketError;
use azalea_registry::DataRegistry;
use azalea_registry::data::DimensionKind;
use azalea_registry::identifier::Identifier;
use simdnbt::owned::{NbtCompound, NbtTag};
use tokio::net::{TcpListener, TcpStream};

use crate::players::{MAX_PLAYERS, Players};

/// The reason every login gets from a server that refuses logins ([`Join::RefuseLogin`]).
pub const REFUSED_LOGIN_REASON: &str =
    "This server refuses every login (rehearsal fixture, mode refuse-login)";

/// How far this server lets a client join.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Join {
    /// Status, login, configuration and play, like vanilla.
    #[default]
    Complete,
    /// Status works; every login gets a Login Disconnect with [`REFUSED_LOGIN_REASON`].
    RefuseLogin,
    /// Status and login work; configuration never finishes (no Finish Configuration). The
    /// connection stays open with configuration keep-alives until the client leaves.
    StallConfiguration,
}

/// What the Minecraft listener needs from the rest of the game.
pub struct MinecraftServer {
    /// The server-list description.
    pub motd: String,
    /// Who is online.
    pub players: Arc<Players>,
    /// Time between keep-alives in configuration and play (vanilla: 15 s; clients time out
    /// after 30 s).
    pub keepalive: Duration,
    /// How far a client gets.
    pub join: Join,
}

/// Why one client session ended abnormally (logged, never fatal for the server).
#[derive(Debug, thiserror::Error)]
enum SessionError {
    #[error("reading from {peer}: {source}")]
    Read {
        peer: SocketAddr,
        source: Box<ReadPacketError>,
    },
    #[error("writing to {peer}: {source}")]
    Write {
        peer: SocketAddr,
        source: std::io::Error,
    },
}

impl MinecraftServer {
    /// Accept clients until the task is dropped.
    pub async fn run(self: Arc<Self>, listener: TcpListener) {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!("game accept failed: {e}");
                    continue;
                }
            };
            let server = self.clone();
            tokio::spawn(async move {
                match server.session(stream, peer).await {
                    Ok(()) => {}
                    Err(SessionError::Read { source, .. })
                        if matches!(*source, ReadPacketError::ConnectionClosed) => {}
                    Err(e) => tracing::debug!("game session ended: {e}"),
                }
            });
        }
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one protocol session read in wire order (handshake, status or login, configuration, play)"
    )]
    async fn session(&self, stream: TcpStream, peer: SocketAddr) -> Result<(), SessionError> {
        let _ = stream.set_nodelay(true);
        let read_err = |source| SessionError::Read { peer, source };
        let write_err = |source| SessionError::Write { peer, source };
        let mut conn: Connection<ServerboundHandshakePacket, ClientboundHandshakePacket> =
            Connection::wrap(stream);
        let ServerboundHandshakePacket::Intention(intent) = conn.read().await.map_err(read_err)?;
        match intent.intention {
            ClientIntention::Status => {
                let mut conn = conn.status();
                loop {
                    match conn.read().await.map_err(read_err)? {
                        ServerboundStatusPacket::StatusRequest(_) => {
                            conn.write(self.status()).await.map_err(write_err)?
                        }
                        ServerboundStatusPacket::PingRequest(ping) => {
                            conn.write(ClientboundPongResponse { time: ping.time })
                                .await
                                .map_err(write_err)?;
                            return Ok(());
                        }
                    }
                }
            }
            ClientIntention::Login | ClientIntention::Transfer => {
                let mut conn = conn.login();
                if intent.protocol_version != PROTOCOL_VERSION {
                    // Vanilla answers before reading Hello, then closes.
                    let reason = TranslatableComponent::new(
                        "multiplayer.disconnect.outdated_client".into(),
                        vec![PrimitiveOrComponent::String(VERSION_NAME.into())],
                    );
                    return disconnect_login(conn, FormattedText::from(reason))
                        .await
                        .map_err(write_err);
                }
                let hello = loop {
                    if let ServerboundLoginPacket::Hello(h) = conn.read().await.map_err(read_err)? {
                        break h;
                    }
                };
                if self.join == Join::RefuseLogin {
                    // Like a whitelist refusal: the Hello is read, then the reason is sent.
                    let reason = FormattedText::from(REFUSED_LOGIN_REASON);
                    return disconnect_login(conn, reason).await.map_err(write_err);
                }
                let uuid = azalea_crypto::offline::generate_uuid(&hello.name);
                conn.write(ClientboundLoginFinished {
                    game_profile: GameProfile::new(uuid, hello.name.clone()),
                })
                .await
                .map_err(write_err)?;
                while !matches!(
                    conn.read().await.map_err(read_err)?,
                    ServerboundLoginPacket::LoginAcknowledged(_)
                ) {}
                let mut conn = conn.config();
                // One dimension type, so full azalea bots (not only packet-level clients) log in.
                conn.write(ClientboundRegistryData {
                    registry_id: Identifier::new("minecraft:dimension_type"),
                    entries: vec![(
                        Identifier::new("minecraft:overworld"),
                        Some(NbtCompound::from_values(vec![
                            ("height".into(), NbtTag::Int(384)),
                            ("min_y".into(), NbtTag::Int(-64)),
                        ])),
                    )],
                })
                .await
                .map_err(write_err)?;
                if self.join == Join::StallConfiguration {
                    let (rd, mut wr) = conn.into_split();
                    let keepalive = self.keepalive;
                    // Keep-alives keep a client waiting instead of timing out on its own.
                    let writer = tokio::spawn(async move {
                        let mut ticks = tokio::time::interval(keepalive);
                        loop {
                            ticks.tick().await;
                            let id = jiff::Timestamp::now().as_millisecond() as u64;
                            let packet = ClientboundConfigPacket::KeepAlive(ConfigKeepAlive { id });
                            if wr.write(packet).await.is_err() {
                                return;
                            }
                        }
                    });
                    let result = read_until_closed(rd).await.map_err(read_err);
                    writer.abort();
                    return result;
                }
                conn.write(ClientboundFinishConfiguration)
                    .await
                    .map_err(write_err)?;
                while !matches!(
                    conn.read().await.map_err(read_err)?,
                    ServerboundConfigPacket::FinishConfiguration(_)
                ) {}
                let (mut rd, mut wr) = conn.game().into_split();
                let _online = self.players.join(&hello.name);
                let eid = rand_entity_id();
                wr.write(ClientboundGamePacket::Login(login_packet(eid)))
                    .await
                    .map_err(write_err)?;
                let keepalive = self.keepalive;
                // The first keep-alive goes out at once, so a client sees one without waiting.
                let writer = tokio::spawn(async move {
                    let mut ticks = tokio::time::interval(keepalive);
                    loop {
                        ticks.tick().await;
                        let id = jiff::Timestamp::now().as_millisecond() as u64;
                        let packet = ClientboundGamePacket::KeepAlive(ClientboundKeepAlive { id });
                        if wr.write(packet).await.is_err() {
                            return;
                        }
                    }
                });
                let result = loop {
                    match rd.read().await {
                        Ok(ServerboundGamePacket::KeepAlive(_)) => {}
                        Ok(_) => {}
                        Err(e) => match *e {
                            // These happen after the frame was consumed: skip the packet.
                            ReadPacketError::Parse { .. }
                            | ReadPacketError::LeftoverData { .. }
                            | ReadPacketError::UnknownPacketId { .. } => {}
                            _ => break Err(read_err(e)),
                        },
                    }
                };
                writer.abort();
                result
            }
        }
    }

    fn status(&self) -> ClientboundStatusResponse {
        ClientboundStatusResponse {
            description: FormattedText::from(self.motd.as_str()),
            favicon: None,
            players: StatusPlayers {
                max: MAX_PLAYERS,
                online: self.players.count(),
                sample: Vec::new(),
            },
            version: Version {
                name: VERSION_NAME.into(),
                protocol: PROTOCOL_VERSION,
            },
            enforces_secure_chat: Some(false),
        }
    }
}

/// Sends a Login Disconnect with `reason` and closes the connection.
async fn disconnect_login(
    mut conn: Connection<ServerboundLoginPacket, ClientboundLoginPacket>,
    reason: FormattedText,
) -> Result<(), std::io::Error> {
    conn.write(ClientboundLoginDisconnect { reason }).await?;
    let _ = conn.writer.shutdown().await;
    // Closing with client packets still unread can turn our FIN into an RST that discards the
    // reason; drain until the client closes (bounded).
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        drain(&mut conn.reader.raw.read_stream),
    )
    .await;
    Ok(())
}

/// Reads (and ignores) configuration packets until the client leaves.
async fn read_until_closed(
    mut rd: ReadConnection<ServerboundConfigPacket>,
) -> Result<(), Box<ReadPacketError>> {
    loop {
        match rd.read().await {
            Ok(_) => {}
            Err(e) => match *e {
                ReadPacketError::Parse { .. }
                | ReadPacketError::LeftoverData { .. }
                | ReadPacketError::UnknownPacketId { .. } => {}
                _ => return Err(e),
            },
        }
    }
}

async fn drain(stream: &mut tokio::net::tcp::OwnedReadHalf) {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1024];
    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
}

fn rand_entity_id() -> i32 {
    // Any positive id works; derive one from the clock rather than pull in an RNG.
    (jiff::Timestamp::now().as_nanosecond() % 1_000_000) as i32 + 1
}

fn login_packet(eid: i32) -> ClientboundLogin {
    ClientboundLogin {
        player_id: MinecraftEntityId(eid),
        hardcore: false,
        levels: vec![Identifier::new("minecraft:overworld")],
        max_players: MAX_PLAYERS,
        chunk_radius: 2,
        simulation_distance: 2,
        reduced_debug_info: false,
        show_death_screen: true,
        do_limited_crafting: false,
        common: CommonPlayerSpawnInfo {
            dimension_type: DimensionKind::new_raw(0),
            dimension: Identifier::new("minecraft:overworld"),
            seed: 0,
            game_type: GameMode::Creative,
            previous_game_type: OptionalGameType(None),
            is_debug: false,
            is_flat: true,
            last_death_location: None,
            portal_cooldown: 0,
            sea_level: 63,
        },
        enforces_secure_chat: false,
    }
}
