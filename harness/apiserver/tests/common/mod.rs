//! Helpers shared by the API server's integration tests: a server per test, a kube client
//! pointed at it, and bounded waits that report what they were waiting for.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use rehearsal_apiserver::{ApiServer, ApiServerConfig};

pub async fn start() -> (ApiServer, kube::Client) {
    start_with(ApiServerConfig::default()).await
}

pub async fn start_with(config: ApiServerConfig) -> (ApiServer, kube::Client) {
    let server = ApiServer::start(config)
        .await
        .expect("the API server starts");
    let client = client_for(&server);
    (server, client)
}

pub fn client_for(server: &ApiServer) -> kube::Client {
    let config = kube::Config::new(server.url().parse().expect("server URL parses"));
    kube::Client::try_from(config).expect("kube client builds")
}

/// Awaits `fut` for at most 15 s; on timeout the panic names what was awaited.
pub async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(15), fut).await {
        Ok(out) => out,
        Err(_) => panic!("timed out after 15s waiting for {what}"),
    }
}

/// The `Status` of a failed kube call, or a panic naming the unexpected outcome.
pub fn status_of<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error Status, got {other:?}"),
    }
}
