//! The command line: `serve`, `agent`, `inspect` and `ready`, and the exit code of each.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::agent::{self, AgentArgs};
use crate::inspect;
use crate::mode::Mode;
use crate::ready::{self, ReadyArgs};
use crate::serve::{self, ServeArgs};

/// A small Minecraft 26.1 server with RCON, its Gameplane-compatible agent, and a world
/// inspector, for rehearsing a game-server operator.
#[derive(Debug, Parser)]
#[command(name = "fixture-game", version)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the game: Minecraft (or HTTP in http-only mode) on the game port, RCON, autosave.
    ///
    /// Exit codes: 0 after `stop` or SIGTERM, 1 in crash mode, 2 for a configuration or volume
    /// problem, 3 when a world's format is newer than this version reads.
    Serve(Box<ServeArgs>),
    /// Run the Gameplane-compatible agent (quiesce over RCON, pod-bound identity routes).
    Agent(Box<AgentArgs>),
    /// Print one JSON line per PATH: kind, digest, marker, format, candidate marker, torn.
    ///
    /// Exit code 2 if a PATH does not exist or cannot be read (after printing the others).
    Inspect {
        /// Data directories, world directories or mods directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Exit 0 once the game port accepts a TCP connection, retrying for at most `--within`
    /// (the fixture templates' readiness probe); exit 1 otherwise.
    Ready(ReadyArgs),
}

/// Parse the command line and run it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match cli.command {
        Command::Serve(args) => run_serve(*args),
        Command::Agent(args) => run_agent(*args),
        Command::Inspect { paths } => run_inspect(&paths),
        Command::Ready(args) => match ready::ready(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fixture-game ready: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn run_serve(args: ServeArgs) -> ExitCode {
    if args.mode == Mode::Crash {
        eprintln!(
            "fixture-game: crash mode (FIXTURE_MODE=crash): exiting on start as this version is built to"
        );
        return ExitCode::from(1);
    }
    match runtime().block_on(serve::serve(args)) {
        Ok(stopped) => {
            let saved = if stopped.saved {
                "world saved"
            } else {
                "saving was off, world left as last saved"
            };
            eprintln!("fixture-game: stopped by {:?}; {saved}", stopped.cause);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fixture-game: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn run_agent(args: AgentArgs) -> ExitCode {
    match runtime().block_on(agent::run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fixture-game agent: {e}");
            ExitCode::from(2)
        }
    }
}

fn run_inspect(paths: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for path in paths {
        match inspect::inspect(path) {
            Ok(report) => println!(
                "{}",
                serde_json::to_string(&report).expect("inspection serializes")
            ),
            Err(e) => {
                eprintln!("fixture-game inspect: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
