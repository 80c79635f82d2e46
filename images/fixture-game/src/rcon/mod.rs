//! Minecraft RCON (the Source RCON framing as vanilla Minecraft speaks it): a server for the
//! fixture game and a small client for the agent, the harness and the tests.
//!
//! Wire facts this module keeps (measured against clients in `facts/minecraft.md`):
//! - a packet is `i32le size, i32le id, i32le type, payload, 0, 0` with `size = 10 + payload`;
//! - authentication is answered with exactly one AUTH_RESPONSE (id `-1` on a bad password),
//!   never with the Source-style empty RESPONSE_VALUE first, which hangs some clients;
//! - command replies are split into 4096-byte RESPONSE_VALUE chunks carrying the request id,
//!   and any packet of an unknown type is answered with `Unknown request <type>` under its own
//!   id, which clients send after a command to find the end of a fragmented reply.
//!
//! ```no_run
//! # async fn demo() -> Result<(), fixture_game::rcon::RconError> {
//! let addr = "127.0.0.1:25575".parse().unwrap();
//! let mut rcon = fixture_game::rcon::RconClient::connect(addr, "secret").await?;
//! let reply = rcon.command("save-all flush").await?;
//! assert!(reply.ends_with("Saved the game"));
//! # Ok(()) }
//! ```

mod client;
mod frame;
mod server;

pub use client::{RconClient, RconError};
pub use frame::{Frame, FrameError, PacketType};
pub use server::{CommandHandler, RconServer};
