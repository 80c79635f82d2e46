//! The game's RCON commands: the vanilla ones the operator uses, plus a few `fixture-*`
//! commands that exist only so rehearsals and tests can observe and steer the fixture.
//!
//! | command | reply |
//! |---|---|
//! | `save-off` | `Automatic saving is now disabled` |
//! | `save-on` | `Automatic saving is now enabled` |
//! | `save-all [flush]` | `Saving the game (this may take a moment!)` + newline + `Saved the game`, after a complete save |
//! | `list` | `There are N of a max of 20 players online: a, b` |
//! | `stop` | `Stopping the server`, then a full save and exit 0 |
//! | `fixture-incarnation` | this process's incarnation id (what the agent's identity route reports) |
//! | `fixture-status` | JSON: incarnation, save_on, worlds (name, format, marker, generation) |
//! | `fixture-marker WORLD VALUE` | sets a world's marker for the next save |
//! | `fixture-blob N` | N bytes of text (N ≤ 1 MiB), to exercise reply fragmentation |

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::Notify;

use crate::audit::AuditLog;
use crate::players::{MAX_PLAYERS, Players};
use crate::rcon::CommandHandler;
use crate::save::Saver;

/// The largest `fixture-blob` reply.
const MAX_BLOB: usize = 1 << 20;

/// Runs RCON commands against the game's state and audits each one.
pub struct GameCommands {
    /// Owns the worlds.
    pub saver: Arc<Saver>,
    /// The audit log of this incarnation.
    pub audit: Arc<AuditLog>,
    /// Who is online.
    pub players: Arc<Players>,
    /// Notified once when `stop` asks the server to save and exit.
    pub stop: Arc<Notify>,
}

impl GameCommands {
    async fn run(&self, command: &str) -> String {
        let mut words = command.split_whitespace();
        let name = words.next().unwrap_or("");
        let args: Vec<&str> = words.collect();
        match (name, args.as_slice()) {
            ("save-off", []) => {
                if self.saver.set_save_on(false) {
                    "Automatic saving is now disabled".into()
                } else {
                    "Saving is already turned off".into()
                }
            }
            ("save-on", []) => {
                if self.saver.set_save_on(true) {
                    "Saving is already turned on".into()
                } else {
                    "Automatic saving is now enabled".into()
                }
            }
            ("save-all", []) | ("save-all", ["flush"]) => match self.saver.save_all().await {
                Ok(()) => "Saving the game (this may take a moment!)\nSaved the game".into(),
                Err(e) => {
                    tracing::error!("save-all failed: {e}");
                    format!("Unable to save the game (is there enough disk space?): {e}")
                }
            },
            ("list", []) => {
                let names = self.players.names();
                format!(
                    "There are {} of a max of {MAX_PLAYERS} players online: {}",
                    names.len(),
                    names.join(", ")
                )
            }
            ("stop", []) => {
                self.stop.notify_one();
                "Stopping the server".into()
            }
            ("fixture-incarnation", []) => self.audit.incarnation().to_owned(),
            ("fixture-status", []) => serde_json::json!({
                "incarnation": self.audit.incarnation(),
                "save_on": self.saver.save_on(),
                "worlds": self.saver.summary(),
            })
            .to_string(),
            ("fixture-marker", [world, value]) => {
                if self.saver.set_marker(world, value).await {
                    format!("Marker of world {world} set to {value}")
                } else {
                    let names: Vec<String> =
                        self.saver.summary().into_iter().map(|w| w.name).collect();
                    format!("No world named {world}; worlds: {}", names.join(", "))
                }
            }
            ("fixture-blob", [n]) => match n.parse::<usize>() {
                Ok(n) if n <= MAX_BLOB => blob(n),
                _ => format!("fixture-blob takes a byte count up to {MAX_BLOB}, not {n:?}"),
            },
            _ => format!("Unknown or incomplete command, see below for error: {command}"),
        }
    }
}

/// `n` bytes of printable text that differ along their length (so a lost chunk is noticed).
pub fn blob(n: usize) -> String {
    (0..n)
        .map(|i| char::from(b'a' + ((i / 7 + i) % 26) as u8))
        .collect()
}

impl CommandHandler for GameCommands {
    async fn execute(&self, remote: SocketAddr, command: &str) -> String {
        let reply = self.run(command.trim()).await;
        // The line is on disk before the reply leaves, so the log proves receipt.
        if let Err(e) = self.audit.record(remote, command, &reply) {
            tracing::error!("{e}");
        }
        reply
    }
}
