use clap::Parser;
use rehearsal::cli::{self, Cli};

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REHEARSAL_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rehearse: cannot start the async runtime: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = runtime.block_on(cli::run(cli)) {
        eprintln!("rehearse: {e}");
        std::process::exit(e.code);
    }
}
