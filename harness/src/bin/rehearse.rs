//! `rehearse`: the command-line entry point. Parses the command line (a bad one is a single
//! `rehearse: …` line and exit 2), sets up logging (`REHEARSAL_LOG`, off by default) and the
//! async runtime, and runs [`rehearsal::cli::run`]; a [`rehearsal::cli::CliError`] is printed as
//! one line and its code becomes the exit status (2 bad input, 1 a negative verdict).

use clap::Parser;
use rehearsal::cli::{self, Cli};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            eprintln!("rehearse: {}", cli::usage_error_line(&e));
            std::process::exit(2);
        }
    };
    // Quiet unless asked (REHEARSAL_LOG=info, =debug, …): what a user needs reaches them as
    // the one-line error or the printed verdicts; library chatter would bury it.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REHEARSAL_LOG")
                .unwrap_or_else(|_| "off".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    // The rehearsal cases are deep futures: give every runtime thread a roomy stack.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(16 * 1024 * 1024)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rehearse: cannot start the async runtime: {e}");
            std::process::exit(2);
        }
    };
    // The command's own future is polled on this thread, not a runtime worker: a thread with
    // the same roomy stack (the main thread has 8 MiB, too little for the deepest commands in a
    // build of the harness without optimization).
    let outcome = std::thread::Builder::new()
        .name("rehearse".into())
        .stack_size(64 * 1024 * 1024)
        .spawn(move || {
            runtime.block_on(async {
                let outcome = cli::run(cli).await;
                // The embedded clusters' shared REST server ends with the command (gracefully;
                // the death signal would end it with the process anyway).
                rehearsal::backend::rest_server::stop_shared().await;
                outcome
            })
        })
        .and_then(|thread| {
            thread
                .join()
                .map_err(|_| std::io::Error::other("the command's thread panicked"))
        });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("rehearse: {e}");
            std::process::exit(101);
        }
    };
    if let Err(e) = outcome {
        eprintln!("rehearse: {e}");
        std::process::exit(e.code);
    }
}
