//! `fixture-game ready`: the readiness check the fixture templates run as an exec probe.
//!
//! It succeeds once the game port accepts a TCP connection (what a `tcpSocket` probe checks),
//! retrying for at most `--within`. A kubelet runs a readiness probe as soon as the container
//! runs, before a just-started game has bound its port; a `tcpSocket` probe then fails and
//! the pod waits a whole probe period for the next attempt. Waiting here, bounded well below
//! the probe's `timeoutSeconds`, lets that first probe succeed as soon as the game listens,
//! on the embedded node and on Kind alike. Ready still means the game accepts connections.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Settings of `fixture-game ready`; the address flags share `serve`'s environment.
#[derive(Clone, Debug, clap::Args)]
pub struct ReadyArgs {
    /// Address the game binds (the pod IP from the downward API).
    #[arg(long, env = "POD_IP", default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// The game port.
    #[arg(long, env = "FIXTURE_GAME_PORT", default_value_t = 25565)]
    pub port: u16,
    /// How long to keep trying, e.g. `900ms` or `2s`.
    #[arg(long, default_value = "900ms", value_parser = parse_duration)]
    pub within: Duration,
}

/// Parses `<n>ms` or `<n>s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?}: write it as <n>ms or <n>s, e.g. 900ms");
    if let Some(ms) = s.strip_suffix("ms") {
        return ms.parse().map(Duration::from_millis).map_err(|_| bad());
    }
    if let Some(secs) = s.strip_suffix('s') {
        return secs.parse().map(Duration::from_secs).map_err(|_| bad());
    }
    Err(bad())
}

/// Pause between connection attempts while the port is not yet bound.
const RETRY: Duration = Duration::from_millis(10);

/// Connects to the game port until it accepts or `within` has passed; on failure, the last
/// connection error.
pub fn ready(args: &ReadyArgs) -> Result<(), String> {
    let addr = SocketAddr::new(args.host, args.port);
    let deadline = Instant::now() + args.within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let attempt = TcpStream::connect_timeout(&addr, left.max(Duration::from_millis(1)));
        match attempt {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() + RETRY >= deadline => {
                return Err(format!(
                    "the game does not accept connections on {addr} after {:?}: {e}",
                    args.within
                ));
            }
            Err(_) => std::thread::sleep(RETRY),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(port: u16, within: Duration) -> ReadyArgs {
        ReadyArgs {
            host: "127.0.0.1".parse().unwrap(),
            port,
            within,
        }
    }

    #[test]
    fn ready_once_the_port_accepts_and_not_before() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(ready(&args(port, Duration::from_millis(900))), Ok(()));
        drop(listener);
        let err = ready(&args(port, Duration::from_millis(100))).unwrap_err();
        assert!(
            err.contains(&format!("127.0.0.1:{port}")) && err.contains("100ms"),
            "{err}"
        );
    }

    #[test]
    fn durations_are_milliseconds_or_seconds() {
        assert_eq!(parse_duration("900ms"), Ok(Duration::from_millis(900)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        for bad in ["", "9", "1.5s", "ms", "-1s"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("900ms"), "{bad:?}: {e}");
        }
    }
}
