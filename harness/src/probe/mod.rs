//! Probes: how a game server looks from outside.
//! - [`minecraft`]: a real Minecraft 26.1 join to depth QUERY, LOGIN or PLAY, summarised as one
//!   `VERDICT …` line;
//! - [`http_marker`]: an HTTP GET that must return a world marker (the HTTP-only candidate);
//! - [`readback`]: world read-back by a pod that runs `fixture-game inspect` on a server's PVCs;
//! - [`restic`]: restic in a pod, against the repository a Secret names (snapshot files, and the
//!   snapshots a qualification lists and forgets).

pub mod http_marker;
pub mod minecraft;
pub mod readback;
pub mod restic;
