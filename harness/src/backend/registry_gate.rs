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

/// Told of every read of a manifest through the gate before it goes on (the exploration's
/// observer: the operator pulling a bundle is a point of its schedule, held like a write).
pub trait RegistryHook: Send + Sync {
    /// The operator reads a manifest of `repository`; the read goes on once this resolves.
    fn before_pull(&self, repository: &str) -> futures::future::BoxFuture<'static, ()>;
}

/// Where the gate finds the hook: set and cleared by the backend, also before the gate starts.
pub type HookSlot = Arc<std::sync::RwLock<Option<Arc<dyn RegistryHook>>>>;

#[derive(Default)]
struct Armed {
    other: Mutex<Option<OtherBytes>>,
}

/// The repository of a manifest read at `path` (`/v2/<repository>/manifests/<reference>`).
fn manifest_repository<'p>(method: &str, path: &'p str) -> Option<&'p str> {
    if method != "GET" && method != "HEAD" {
        return None;
    }
    let (repository, reference) = path.strip_prefix("/v2/")?.rsplit_once("/manifests/")?;
    (!repository.is_empty() && !reference.is_empty() && !reference.contains('/'))
        .then_some(repository)
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
    /// Starts a gate on a free 127.0.0.1 port, passing every request to `upstream`, telling
    /// the hook in `hook` (when there is one) of every manifest read.
    pub async fn start(upstream: SocketAddr, hook: HookSlot) -> std::io::Result<Self> {
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
                    let gate = Pass {
                        upstream,
                        armed: armed.clone(),
                        client: client.clone(),
                        served: served_tx.clone(),
                        hook: hook.clone(),
                    };
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| gate.clone().pass(req));
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

/// What one connection's requests are passed with.
#[derive(Clone)]
struct Pass {
    upstream: SocketAddr,
    armed: Arc<Armed>,
    client: Client<HttpConnector, Incoming>,
    served: Arc<watch::Sender<usize>>,
    hook: HookSlot,
}

impl Pass {
    async fn pass(self, req: Request<Incoming>) -> Result<Answer, Infallible> {
        let hook = self.hook.read().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(hook) = hook
            && let Some(repository) = manifest_repository(req.method().as_str(), req.uri().path())
        {
            hook.before_pull(repository).await;
        }
        let other = self
            .armed
            .other
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .filter(|o| o.matches(req.method().as_str(), req.uri().path()));
        let Some(other) = other else {
            return Ok(forward(req, self.upstream, &self.client, "the bundle registry").await);
        };
        self.served.send_modify(|n| *n += 1);
        Ok(other_answer(
            req.method() == hyper::Method::HEAD,
            other.bytes,
        ))
    }
}

/// The other bytes as a blob's answer (no body for a `HEAD`).
fn other_answer(head: bool, bytes: Bytes) -> Answer {
    let length = bytes.len();
    let body = if head { Bytes::new() } else { bytes };
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
    resp
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

    #[test]
    fn a_manifest_read_names_its_repository() {
        assert_eq!(
            manifest_repository("GET", "/v2/ns-1/fixture-game/manifests/1.1"),
            Some("ns-1/fixture-game")
        );
        assert_eq!(
            manifest_repository("HEAD", "/v2/ns-1/fixture-game/manifests/sha256:ab"),
            Some("ns-1/fixture-game")
        );
        assert_eq!(
            manifest_repository("PUT", "/v2/ns-1/fixture-game/manifests/1.1"),
            None
        );
        assert_eq!(
            manifest_repository("GET", "/v2/ns-1/fixture-game/blobs/sha256:ab"),
            None
        );
        assert_eq!(manifest_repository("GET", "/v2//manifests/1.1"), None);
        assert_eq!(manifest_repository("GET", "/v2/x/manifests/"), None);
    }
}
