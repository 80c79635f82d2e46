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

/// Parses `500ms`, `10s`, `2m` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; use e.g. 500ms, 10s or 2m"))?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`; use ms, s or m"
            ));
        }
    };
    Ok(Duration::from_secs_f64(secs))
}
