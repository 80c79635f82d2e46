//! Holding one request of a backup or restore Job's restic to the repository until a case has
//! placed its fault: the moments the operator marks with no write of its own ("the copy is
//! under way", "the copy is about to save its snapshot") are placed here exactly as
//! [`super::hold`] places the ones it does mark.
//!
//! Each embedded cluster reaches the process' shared REST server through its own gate, a
//! small HTTP/1.1 proxy on 127.0.0.1 in front of it: every request is passed through as it is,
//! except the next one that matches a hold ([`RepoRequest`]), which waits — restic blocked on
//! it, its worker pod running — until the case has changed the cluster and releases it
//! ([`RequestHold::release`], or dropping the hold, also on panic and timeout). So "the game
//! restarted while its copy was under way" holds every time, on any machine, with no sleep and
//! no race.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// The request a case holds: its method, the repository, and the kind of file it reads or
/// writes (restic's REST API: `config`, `keys`, `locks`, `data`, `index`, `snapshots`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRequest {
    /// `GET`, `HEAD`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The repository's name (the case's namespace: `fixture::repository_name`).
    pub repository: String,
    /// The kind of file: `data` (a pack of the copy's bytes), `snapshots` (the copy's last
    /// write: its snapshot saved), …
    pub kind: &'static str,
}

impl RepoRequest {
    /// A request at `path` (`/<tenant>/<repository>/<kind>[/<name>]`) with `method`.
    fn matches(&self, method: &str, path: &str) -> bool {
        let mut parts = path.trim_start_matches('/').split('/').skip(1);
        method == self.method
            && parts.next() == Some(self.repository.as_str())
            && parts.next() == Some(self.kind)
    }

    /// How a report names it: `POST snapshots of repository case-1`.
    pub fn label(&self) -> String {
        format!(
            "{} {} of repository {}",
            self.method, self.kind, self.repository
        )
    }
}

struct Pending {
    matches: RepoRequest,
    waiting: super::hold::Waiting<String>,
}

/// A repository request held (or waited for) by a case; it learns the request's path.
pub type RequestHold = super::hold::Hold<String>;

type Holds = Arc<Mutex<Vec<Pending>>>;

/// One cluster's gate in front of the REST server. Dropping it stops serving.
#[derive(Debug)]
pub struct RestGate {
    addr: SocketAddr,
    holds: Holds,
    serving: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("matches", &self.matches)
            .finish()
    }
}

impl RestGate {
    /// Starts a gate on a free 127.0.0.1 port, passing every request to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let holds: Holds = Arc::default();
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build_http();
        let serving = tokio::spawn({
            let holds = holds.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (holds, client) = (holds.clone(), client.clone());
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            pass(req, upstream, holds.clone(), client.clone())
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        });
        Ok(Self {
            addr,
            holds,
            serving,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Holds the next request that `matches`.
    pub fn hold(&self, matches: RepoRequest) -> RequestHold {
        let (hold, waiting) = RequestHold::open(matches.label());
        self.holds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Pending { matches, waiting });
        hold
    }
}

impl Drop for RestGate {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// Passes `req` to `upstream`, first waiting for its release if a hold matches it.
async fn pass(
    req: Request<Incoming>,
    upstream: SocketAddr,
    holds: Holds,
    client: Client<HttpConnector, Incoming>,
) -> Result<Answer, Infallible> {
    let path = req.uri().path().to_string();
    let held = {
        let mut pending = holds.lock().unwrap_or_else(|p| p.into_inner());
        // A hold whose case went away holds nothing.
        pending.retain(|p| !p.waiting.abandoned());
        let at = pending
            .iter()
            .position(|p| p.matches.matches(req.method().as_str(), &path));
        at.map(|i| pending.remove(i))
    };
    if let Some(p) = held {
        // Released, or the hold dropped: the request goes on either way.
        p.waiting.arrive(path.clone()).await;
    }
    Ok(forward(req, upstream, &client, "the REST server").await)
}

/// The gates' answer type: a streamed upstream body, or one of their own.
pub(super) type Answer = Response<BoxBody<Bytes, hyper::Error>>;

/// Passes `req` on to `upstream` (`what`, as an error names it) as it is.
pub(super) async fn forward(
    mut req: Request<Incoming>,
    upstream: SocketAddr,
    client: &Client<HttpConnector, Incoming>,
    what: &str,
) -> Answer {
    let path = req.uri().path().to_string();
    let target = format!(
        "http://{upstream}{}",
        req.uri().path_and_query().map_or("/", |p| p.as_str())
    );
    *req.uri_mut() = match target.parse() {
        Ok(uri) => uri,
        Err(_) => return bad_gateway(format!("cannot pass {path} on")),
    };
    match client.request(req).await {
        Ok(resp) => resp.map(BodyExt::boxed),
        Err(e) => bad_gateway(format!("{what} at {upstream} did not answer: {e}")),
    }
}

fn bad_gateway(why: String) -> Response<BoxBody<Bytes, hyper::Error>> {
    let mut resp = Response::new(
        http_body_util::Full::new(Bytes::from(why))
            .map_err(|never| match never {})
            .boxed(),
    );
    *resp.status_mut() = hyper::StatusCode::BAD_GATEWAY;
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_matches_by_method_repository_and_kind() {
        let m = RepoRequest {
            method: "POST",
            repository: "case-1".into(),
            kind: "snapshots",
        };
        assert!(m.matches("POST", "/cluster-0/case-1/snapshots/abc"));
        assert!(!m.matches("GET", "/cluster-0/case-1/snapshots/abc"));
        assert!(!m.matches("POST", "/cluster-0/case-2/snapshots/abc"));
        assert!(!m.matches("POST", "/cluster-0/case-1/data/abc"));
        assert!(!m.matches("POST", "/cluster-0"));
        assert_eq!(m.label(), "POST snapshots of repository case-1");
    }
}
