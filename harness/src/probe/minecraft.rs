//! The Minecraft join probe: wraps the fixture game's real client and turns its outcome into a
//! verdict against the depth that was asked for.

use std::net::SocketAddr;
use std::time::Duration;

pub use fixture_game::client::{Depth, ProbeOutcome, stage};
use serde::Serialize;

/// The protocol number of Minecraft 26.1, sent in the login handshake.
pub const PROTOCOL_26_1: i32 = 775;

/// The result of a join probe against the depth asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MinecraftVerdict {
    /// The address probed: the game port as the host reaches it (a forwarded or pod address).
    pub addr: SocketAddr,
    /// The depth asked for.
    pub wanted: Depth,
    /// The deepest stage completed (`None`: not even the status ping), also when the probe
    /// failed.
    pub reached: Option<Depth>,
    /// True only when `reached >= wanted`.
    pub ok: bool,
    /// The stage the join stopped in when it fell short (`status`, `login`, `configuration`,
    /// `play`): where the server disconnected the client, or where the probe failed.
    pub failed_stage: Option<String>,
    /// What the server reported, when the status ping worked (also when a later stage failed).
    pub outcome: Option<ProbeOutcome>,
    /// Why the probe stopped short, when it failed (a disconnect is in `outcome`).
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
    /// `VERDICT depth=<reached> wanted=<asked> ok=<bool> addr=… [failed_in=<stage>]
    /// [version=… protocol=… players=…] [disconnect="…"] [error="…"]`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "VERDICT depth={} wanted={} ok={} addr={}",
            depth_name(self.reached),
            depth_name(Some(self.wanted)),
            self.ok,
            self.addr
        );
        if let Some(stage) = &self.failed_stage {
            line.push_str(&format!(" failed_in={stage}"));
        }
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
    probe_bounded(addr, wanted, timeout, timeout).await
}

/// [`probe`], failing early in a stage that sees no progress for `stall` (nothing but
/// keep-alives and pings): the same verdict (depth reached, failed stage) as waiting out
/// `timeout`, sooner.
pub async fn probe_bounded(
    addr: SocketAddr,
    wanted: Depth,
    timeout: Duration,
    stall: Duration,
) -> MinecraftVerdict {
    match fixture_game::client::probe_bounded(addr, wanted, PROTOCOL_26_1, timeout, stall).await {
        Ok(outcome) => {
            let ok = outcome.depth_reached >= wanted;
            // Short of the asked depth without an error: the server disconnected the client.
            let failed_stage = (!ok).then(|| {
                outcome
                    .disconnected_in
                    .clone()
                    .unwrap_or_else(|| next_stage(outcome.depth_reached).to_string())
            });
            MinecraftVerdict {
                addr,
                wanted,
                reached: Some(outcome.depth_reached),
                ok,
                failed_stage,
                outcome: Some(outcome),
                error: None,
            }
        }
        Err(e) => MinecraftVerdict {
            addr,
            wanted,
            reached: e.reached(),
            ok: false,
            failed_stage: Some(e.stage().to_string()),
            outcome: e.progress().outcome.clone(),
            error: Some(e.to_string()),
        },
    }
}

/// The stage that follows a completed depth.
fn next_stage(reached: Depth) -> &'static str {
    match reached {
        Depth::Query => stage::LOGIN,
        Depth::Login => stage::CONFIGURATION,
        Depth::Play => stage::PLAY,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fixture_game::minecraft::{Join, MinecraftServer, REFUSED_LOGIN_REASON};
    use tokio::net::TcpListener;

    use super::*;

    /// The fixture game's real Minecraft listener with `join`, on a free port; the task ends
    /// with the returned guard.
    async fn game(join: Join) -> (SocketAddr, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = Arc::new(MinecraftServer {
            motd: "verdict test".into(),
            players: Default::default(),
            keepalive: Duration::from_millis(100),
            join,
        });
        (addr, tokio::spawn(server.run(listener)))
    }

    #[tokio::test]
    async fn a_complete_join_has_no_failed_stage() {
        let (addr, task) = game(Join::Complete).await;
        let v = probe(addr, Depth::Play, Duration::from_secs(10)).await;
        task.abort();
        assert!(v.ok, "{}", v.line());
        assert_eq!(
            (v.reached, v.failed_stage.as_deref()),
            (Some(Depth::Play), None)
        );
        assert!(!v.line().contains("failed_in="), "{}", v.line());
    }

    #[tokio::test]
    async fn a_refused_login_fails_in_login_after_the_status_ping() {
        let (addr, task) = game(Join::RefuseLogin).await;
        let v = probe(addr, Depth::Play, Duration::from_secs(10)).await;
        task.abort();
        assert!(!v.ok, "{}", v.line());
        assert_eq!(v.reached, Some(Depth::Query), "{}", v.line());
        assert_eq!(
            v.failed_stage.as_deref(),
            Some(stage::LOGIN),
            "{}",
            v.line()
        );
        let reason = v.outcome.as_ref().and_then(|o| o.disconnect_reason.clone());
        assert!(
            reason
                .as_deref()
                .is_some_and(|r| r.contains(REFUSED_LOGIN_REASON)),
            "{}",
            v.line()
        );
        let line = v.line();
        assert!(
            line.starts_with("VERDICT depth=query wanted=play ok=false")
                && line.contains("failed_in=login")
                && line.contains("protocol=775")
                && line.contains("disconnect="),
            "{line}"
        );
    }

    #[tokio::test]
    async fn a_stalled_configuration_fails_in_configuration_after_login() {
        let (addr, task) = game(Join::StallConfiguration).await;
        let v = probe(addr, Depth::Play, Duration::from_secs(2)).await;
        task.abort();
        assert!(!v.ok, "{}", v.line());
        assert_eq!(v.reached, Some(Depth::Login), "{}", v.line());
        assert_eq!(
            v.failed_stage.as_deref(),
            Some(stage::CONFIGURATION),
            "{}",
            v.line()
        );
        let line = v.line();
        assert!(
            line.starts_with("VERDICT depth=login wanted=play ok=false")
                && line.contains("failed_in=configuration")
                && line.contains("protocol=775")
                && line.contains("error="),
            "{line}"
        );
    }

    #[tokio::test]
    async fn a_stall_bound_gives_the_timeouts_verdict_without_waiting_for_it() {
        let (addr, task) = game(Join::StallConfiguration).await;
        // The server keeps sending keep-alives (every 100 ms): they are not progress.
        let stalled = probe_bounded(
            addr,
            Depth::Play,
            Duration::from_secs(600),
            Duration::from_millis(500),
        )
        .await;
        let timed_out = probe(addr, Depth::Play, Duration::from_secs(1)).await;
        task.abort();
        for v in [&stalled, &timed_out] {
            assert_eq!(
                (v.ok, v.reached, v.failed_stage.as_deref()),
                (false, Some(Depth::Login), Some(stage::CONFIGURATION)),
                "{}",
                v.line()
            );
        }
        assert!(
            stalled
                .error
                .as_deref()
                .is_some_and(|e| e.contains("made no progress in configuration")),
            "{}",
            stalled.line()
        );
        // A server that progresses is not cut short by the stall bound.
        let (addr, task) = game(Join::Complete).await;
        let v = probe_bounded(
            addr,
            Depth::Play,
            Duration::from_secs(600),
            Duration::from_millis(500),
        )
        .await;
        task.abort();
        assert!(v.ok, "{}", v.line());
    }

    #[tokio::test]
    async fn nothing_listening_fails_in_status_with_no_depth() {
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let v = probe(addr, Depth::Play, Duration::from_secs(5)).await;
        assert_eq!(
            (v.reached, v.failed_stage.as_deref()),
            (None, Some(stage::STATUS))
        );
        assert!(v.line().starts_with("VERDICT depth=none"), "{}", v.line());
    }
}
