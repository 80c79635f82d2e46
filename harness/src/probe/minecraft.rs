//! The Minecraft join probe: wraps the fixture game's real client and turns its outcome into a
//! verdict against the depth that was asked for.

use std::net::SocketAddr;
use std::time::Duration;

pub use fixture_game::client::{Depth, ProbeOutcome};
use serde::Serialize;

/// The protocol number of Minecraft 26.1, sent in the login handshake.
pub const PROTOCOL_26_1: i32 = 775;

/// The result of a join probe against the depth asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MinecraftVerdict {
    pub addr: SocketAddr,
    /// The depth asked for.
    pub wanted: Depth,
    /// The deepest stage completed (`None`: not even the status ping).
    pub reached: Option<Depth>,
    /// True only when `reached >= wanted`.
    pub ok: bool,
    /// What the server reported, when the status ping worked.
    pub outcome: Option<ProbeOutcome>,
    /// Why the probe stopped short, when it did.
    pub error: Option<String>,
}

fn depth_name(d: Option<Depth>) -> &'static str {
    match d {
        None => "none",
        Some(Depth::Query) => "query",
        Some(Depth::Login) => "login",
        Some(Depth::Play) => "play",
    }
}

impl MinecraftVerdict {
    /// `VERDICT depth=<reached> wanted=<asked> ok=<bool> addr=… [version=… protocol=…] [reason="…"]`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "VERDICT depth={} wanted={} ok={} addr={}",
            depth_name(self.reached),
            depth_name(Some(self.wanted)),
            self.ok,
            self.addr
        );
        if let Some(o) = &self.outcome {
            line.push_str(&format!(
                " version={:?} protocol={} players={}",
                o.version_name, o.protocol, o.players_online
            ));
            if let Some(r) = &o.disconnect_reason {
                line.push_str(&format!(" disconnect={r:?}"));
            }
        }
        if let Some(e) = &self.error {
            line.push_str(&format!(" error={e:?}"));
        }
        line
    }
}

/// Joins `addr` up to `wanted` with the 26.1 protocol, bounded by `timeout`.
pub async fn probe(addr: SocketAddr, wanted: Depth, timeout: Duration) -> MinecraftVerdict {
    match fixture_game::client::probe(addr, wanted, PROTOCOL_26_1, timeout).await {
        Ok(outcome) => {
            let reached = Some(outcome.depth_reached);
            MinecraftVerdict {
                addr,
                wanted,
                reached,
                ok: outcome.depth_reached >= wanted,
                outcome: Some(outcome),
                error: None,
            }
        }
        Err(e) => MinecraftVerdict {
            addr,
            wanted,
            reached: None,
            ok: false,
            outcome: None,
            error: Some(e.to_string()),
        },
    }
}
