//! `reference-operator`: runs the reference Gameplane operator until SIGTERM or Ctrl-C.

use clap::Parser;
use reference_operator::cli::Args;
use reference_operator::mutant;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if args.list_mutants {
        print!("{}", mutant::listing());
        return std::process::ExitCode::SUCCESS;
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube_runtime=warn".into()),
        )
        .init();
    let client = match args.client().await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("reference-operator: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    tracing::info!(mutant = ?args.mutant, namespace = ?args.namespace_scope, "reference operator starting");
    let shutdown = async {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(%e, "cannot install the SIGTERM handler");
                    return;
                }
            };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    reference_operator::run::run(
        client,
        args.settings(),
        args.namespace_scope.clone(),
        args.ready_file.clone(),
        shutdown,
    )
    .await;
    tracing::info!("reference operator stopped");
    std::process::ExitCode::SUCCESS
}
