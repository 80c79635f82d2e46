//! `rehearse probe`: probe a game server from the command line.
//!
//! - `rehearse probe minecraft --addr HOST:PORT [--depth query|login|play] [--timeout 10s]`
//!   prints one `VERDICT …` line and exits 0 only when the asked depth was reached.
//! - `rehearse probe http --addr HOST:PORT --marker TEXT [--path /] [--timeout 10s]` exits 0
//!   only when the body carries the marker.

use std::net::SocketAddr;
use std::time::Duration;

use super::CliError;
use crate::probe::{http_marker, minecraft};

/// `rehearse probe` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ProbeCommand {
    /// Join a Minecraft 26.1 server up to a depth and print a VERDICT line.
    Minecraft {
        /// Server address, HOST:PORT.
        #[arg(long)]
        addr: String,
        /// How far to go: query (status), login (login finished) or play (play-state Login).
        #[arg(long, value_enum, default_value = "play")]
        depth: minecraft::Depth,
        /// Bound for the whole probe, e.g. 10s, 500ms, 1m.
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// GET a URL and require a marker in the body.
    Http {
        /// Server address, HOST:PORT.
        #[arg(long)]
        addr: String,
        /// Path to GET.
        #[arg(long, default_value = "/")]
        path: String,
        /// Text the body must contain.
        #[arg(long)]
        marker: String,
        /// Bound for the request, e.g. 10s.
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        timeout: Duration,
    },
}

/// Runs a probe and prints its verdict line; a probe that does not reach its goal exits 1.
pub async fn run(command: ProbeCommand) -> Result<(), CliError> {
    match command {
        ProbeCommand::Minecraft {
            addr,
            depth,
            timeout,
        } => {
            let addr = resolve(&addr).await?;
            let verdict = minecraft::probe(addr, depth, timeout).await;
            println!("{}", verdict.line());
            if verdict.ok {
                Ok(())
            } else {
                Err(CliError::failed(format!(
                    "{addr} did not reach depth {:?} (reached {:?}); see the VERDICT line",
                    verdict.wanted, verdict.reached
                )))
            }
        }
        ProbeCommand::Http {
            addr,
            path,
            marker,
            timeout,
        } => {
            let addr = resolve(&addr).await?;
            let outcome = http_marker::probe(addr, &path, &marker, timeout)
                .await
                .map_err(|e| CliError::failed(e.to_string()))?;
            println!(
                "VERDICT http status={} marker={:?} ok={} url={}",
                outcome.status, outcome.marker, outcome.ok, outcome.url
            );
            if outcome.ok {
                Ok(())
            } else {
                Err(CliError::failed(format!(
                    "{} answered {} without the marker {:?}",
                    outcome.url, outcome.status, outcome.marker
                )))
            }
        }
    }
}

async fn resolve(addr: &str) -> Result<SocketAddr, CliError> {
    let bad = |why: String| {
        CliError::usage(format!(
            "--addr {addr}: {why}; pass HOST:PORT, e.g. 127.0.0.1:25565"
        ))
    };
    let mut addrs = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| bad(e.to_string()))?;
    addrs
        .next()
        .ok_or_else(|| bad("resolves to no address".into()))
}

/// Parses a duration with jiff's friendly format (`500ms`, `10s`, `2m`, `1m 30s`) or ISO 8601
/// (`PT10S`); a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad =
        |why: String| format!("`{text}` is not a duration ({why}); use e.g. 500ms, 10s or 2m");
    if let Ok(secs) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|e| bad(e.to_string()));
    }
    let signed: jiff::SignedDuration = text.parse().map_err(|e: jiff::Error| bad(e.to_string()))?;
    Duration::try_from(signed).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_parse_with_units_or_as_bare_seconds() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["ten", "10 parsecs", "-3s", ""] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains("use e.g. 500ms"), "{bad}: {err}");
        }
    }
}
