//! Who is in the play state right now (for status pings and the RCON `list` command).

use std::sync::Mutex;

/// The online players, in join order.
#[derive(Debug, Default)]
pub struct Players {
    names: Mutex<Vec<String>>,
}

/// The server's advertised player limit.
pub const MAX_PLAYERS: i32 = 20;

impl Players {
    /// Record a player entering play; the returned guard removes them when dropped.
    pub fn join(&self, name: &str) -> PlayerGuard<'_> {
        self.names
            .lock()
            .expect("players lock")
            .push(name.to_owned());
        PlayerGuard {
            players: self,
            name: name.to_owned(),
        }
    }

    /// Names of the online players.
    pub fn names(&self) -> Vec<String> {
        self.names.lock().expect("players lock").clone()
    }

    /// How many players are online.
    pub fn count(&self) -> i32 {
        self.names.lock().expect("players lock").len() as i32
    }
}

/// Keeps a player listed while it lives.
pub struct PlayerGuard<'a> {
    players: &'a Players,
    name: String,
}

impl Drop for PlayerGuard<'_> {
    fn drop(&mut self) {
        let mut names = self.players.names.lock().expect("players lock");
        if let Some(i) = names.iter().position(|n| *n == self.name) {
            names.remove(i);
        }
    }
}
