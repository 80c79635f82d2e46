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
    if let Ok(path) = std::env::var("REHEARSAL_READY_FILE") {
        tokio::spawn(signal_ready(client.clone(), path.into()));
    }
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

/// Writes `path` once the API server answers lists of the three kinds this operator
/// reconciles, so a harness that started it as a process knows it can create objects now (the
/// controllers' initial lists pick up anything created from then on). Gives up quietly after a
/// bound: the harness reports the missing file together with this process's log.
async fn signal_ready(client: kube::Client, path: std::path::PathBuf) {
    use gameplane_api::{Backup, GameServer, Restore};
    use kube::api::{Api, ListParams};
    let lp = ListParams::default().limit(1);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(50));
    loop {
        tick.tick().await;
        let ready = Api::<GameServer>::all(client.clone())
            .list(&lp)
            .await
            .is_ok()
            && Api::<Backup>::all(client.clone()).list(&lp).await.is_ok()
            && Api::<Restore>::all(client.clone()).list(&lp).await.is_ok();
        if ready {
            if let Err(e) = std::fs::write(&path, b"ready\n") {
                tracing::error!(path = %path.display(), %e, "cannot write the ready file");
            }
            return;
        }
        if tokio::time::Instant::now() > deadline {
            tracing::error!(
                "the API server did not list GameServers, Backups and Restores within 60 s"
            );
            return;
        }
    }
}
