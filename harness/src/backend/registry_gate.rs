//! The module bundle registry as the operator reaches it: a small HTTP/1.1 proxy on 127.0.0.1
//! in front of the real registry, passing every request through as it is — until the
//! exploration's `registry-other-bytes` fault (or a case) arms it. Armed for a repository, it
//! still serves that repository's manifests honestly (the digest a pin names is the one
//! served), but answers every request for one of its blobs with other bytes, as a compromised
//! mirror or a corrupting proxy would. The harness itself reads the registry directly, never
//! through the gate, so what it compares is what the registry holds.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::sync::watch;

use super::rest_gate::{Answer, forward};

/// Other bytes served for every blob of one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherBytes {
    /// The repository (`<namespace>/<module>`), as in `/v2/<repository>/blobs/<digest>`.
    pub repository: String,
    /// What is served instead of each of its blobs.
    pub bytes: Bytes,
}

impl OtherBytes {
    /// Whether a request at `path` with `method` is one of the repository's blobs.
    fn matches(&self, method: &str, path: &str) -> bool {
        (method == "GET" || method == "HEAD")
            && path
                .strip_prefix("/v2/")
                .and_then(|p| p.strip_prefix(self.repository.as_str()))
                .and_then(|p| p.strip_prefix("/blobs/"))
                .is_some_and(|digest| !digest.is_empty() && !digest.contains('/'))
    }
}

#[derive(Default)]
struct Armed {
    other: Mutex<Option<OtherBytes>>,
}

/// One cluster's gate in front of the bundle registry. Dropping it stops serving.
pub struct RegistryGate {
    addr: SocketAddr,
    armed: Arc<Armed>,
    /// Blob requests answered with other bytes since the gate started.
    served: watch::Receiver<usize>,
    serving: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for RegistryGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryGate")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RegistryGate {
    /// Starts a gate on a free 127.0.0.1 port, passing every request to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let armed = Arc::new(Armed::default());
        let (served_tx, served) = watch::channel(0usize);
        let served_tx = Arc::new(served_tx);
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build_http();
        let serving = tokio::spawn({
            let armed = armed.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (armed, client, served) =
                        (armed.clone(), client.clone(), served_tx.clone());
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            pass(req, upstream, armed.clone(), client.clone(), served.clone())
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
            armed,
            served,
            serving,
        })
    }

    /// Where it listens: the registry host the operator is given.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on serves `other` (`None`: every request passes through again).
    pub fn serve_other_bytes(&self, other: Option<OtherBytes>) {
        *self.armed.other.lock().unwrap_or_else(|p| p.into_inner()) = other;
    }

    /// Blob requests answered with other bytes so far.
    pub fn other_bytes_served(&self) -> usize {
        *self.served.borrow()
    }
}

impl Drop for RegistryGate {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

async fn pass(
    req: Request<Incoming>,
    upstream: SocketAddr,
    armed: Arc<Armed>,
    client: Client<HttpConnector, Incoming>,
    served: Arc<watch::Sender<usize>>,
) -> Result<Answer, Infallible> {
    let other = armed
        .other
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .filter(|o| o.matches(req.method().as_str(), req.uri().path()));
    let Some(other) = other else {
        return Ok(forward(req, upstream, &client, "the bundle registry").await);
    };
    served.send_modify(|n| *n += 1);
    let length = other.bytes.len();
    let body = if req.method() == hyper::Method::HEAD {
        Bytes::new()
    } else {
        other.bytes
    };
    let mut resp = Response::new(
        http_body_util::Full::new(body)
            .map_err(|never| match never {})
            .boxed(),
    );
    let headers = resp.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(hyper::header::CONTENT_LENGTH, length.into());
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_repositorys_blobs_are_served_other_bytes() {
        let o = OtherBytes {
            repository: "ns-1/fixture-game".into(),
            bytes: Bytes::from_static(b"other"),
        };
        assert!(o.matches("GET", "/v2/ns-1/fixture-game/blobs/sha256:abc"));
        assert!(o.matches("HEAD", "/v2/ns-1/fixture-game/blobs/sha256:abc"));
        assert!(!o.matches("GET", "/v2/ns-1/fixture-game/manifests/1.1"));
        assert!(!o.matches("PUT", "/v2/ns-1/fixture-game/blobs/sha256:abc"));
        assert!(!o.matches("GET", "/v2/ns-2/fixture-game/blobs/sha256:abc"));
        assert!(!o.matches("GET", "/v2/ns-1/fixture-game/blobs/uploads/x"));
        assert!(!o.matches("GET", "/v2/ns-1/fixture-game/blobs/"));
    }
}
