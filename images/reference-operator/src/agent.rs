//! The HTTP client for the Gameplane agent sidecar, reached as Gameplane reaches it: through
//! the `<gs>-agent` Service, `http://<gs>-agent.<ns>.svc.cluster.local:8090`.
//!
//! In a pod the name resolves through the pod's resolver (the cluster DNS). An operator
//! running outside the cluster (a host process next to the embedded cluster) is given the
//! cluster's DNS server (`--cluster-dns`): `*.cluster.local` names are then looked up there
//! with a plain A query and the connection goes to the Service's cluster IP, which the node
//! proxies to the agent. Connections are not pooled, so each exchange reaches whichever pod
//! backs the Service at that moment; the pod-bound routes make the agent refuse if that is not
//! the pod the operator means.
//!
//! Only the pod-bound routes are used by the correct operator: the identity preflight and the
//! quiesce calls name the pod UID (and the game incarnation the preflight saw), so an agent
//! that serves another pod or another game process refuses instead of acting.

use std::net::Ipv4Addr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;

use gameplane_api::names::ports;

/// What `GET /pods/{uid}/identity` proves.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Identity {
    /// The pod the agent serves.
    #[serde(rename = "podUID")]
    pub pod_uid: String,
    /// The game process the agent talks to.
    #[serde(rename = "gameIncarnation")]
    pub game_incarnation: String,
}

/// A failed agent exchange.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No HTTP answer (connection refused, reset).
    #[error("agent {url} unreachable: {source}")]
    Unreachable {
        /// The agent URL.
        url: String,
        #[source]
        /// The HTTP client's error.
        source: hyper_util::client::legacy::Error,
    },
    /// No answer within the bound.
    #[error("agent {url} did not answer within {timeout:?}")]
    Timeout {
        /// The agent URL.
        url: String,
        /// The bound that ran out.
        timeout: Duration,
    },
    /// The agent answered with a non-success status.
    #[error("agent {url} answered {status}: {body}")]
    Status {
        /// The agent URL.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The answer's body.
        body: String,
    },
    /// The answer was not the expected JSON.
    #[error("agent {url} answered unreadable JSON: {source}")]
    Body {
        /// The agent URL.
        url: String,
        #[source]
        /// Why the body does not parse.
        source: serde_json::Error,
    },
    /// The Service name could not be resolved (no such Service yet, or no DNS answer).
    #[error("agent {url}: cannot resolve its name: {message}")]
    Resolve {
        /// The agent URL.
        url: String,
        /// The resolver's message.
        message: String,
    },
    /// The request could not be built (bad host).
    #[error("cannot build a request to {url}: {source}")]
    Request {
        /// The agent URL.
        url: String,
        #[source]
        /// Why the request could not be built.
        source: http::Error,
    },
}

impl AgentError {
    /// Whether no answer came at all (not listening yet, or gone).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            AgentError::Unreachable { .. }
                | AgentError::Timeout { .. }
                | AgentError::Resolve { .. }
        )
    }

    /// Whether the agent answered but could not reach the game yet (502: its RCON is not up,
    /// as right after the game container starts). Like [`Self::is_unreachable`], this is
    /// missing evidence that preparation may wait for within its deadline.
    pub fn is_game_unavailable(&self) -> bool {
        matches!(self, AgentError::Status { status: 502, .. })
    }

    /// Whether the agent lacks the route (an older agent).
    pub fn is_missing_route(&self) -> bool {
        matches!(self, AgentError::Status { status: 404, .. })
    }
}

/// `<gs>-agent.<ns>.svc.cluster.local`: the agent's Service name.
pub fn service_host(gs: &str, namespace: &str) -> String {
    format!(
        "{}.{namespace}.svc.cluster.local",
        gameplane_api::names::agent_service(gs)
    )
}

/// Talks to agents by Service name (or any host).
#[derive(Clone)]
pub struct AgentClient {
    http: Client<HttpConnector, Empty<Bytes>>,
    timeout: Duration,
    port: u16,
    /// Resolves `*.cluster.local` names here (an operator outside the cluster).
    cluster_dns: Option<Ipv4Addr>,
}

impl AgentClient {
    /// A client whose every exchange is bounded by `timeout`; `cluster_dns` resolves
    /// `*.cluster.local` names when the operator runs outside a pod.
    pub fn new(timeout: Duration, cluster_dns: Option<Ipv4Addr>) -> Self {
        AgentClient {
            http: Client::builder(TokioExecutor::new())
                .pool_max_idle_per_host(0)
                .build_http(),
            timeout,
            port: ports::AGENT,
            cluster_dns,
        }
    }

    fn base(&self, host: &str) -> String {
        format!("http://{host}:{}", self.port)
    }

    async fn call(&self, method: http::Method, url: String) -> Result<Bytes, AgentError> {
        let exchange = async {
            let host = url
                .strip_prefix("http://")
                .and_then(|rest| rest.split([':', '/']).next())
                .unwrap_or_default()
                .to_string();
            let target = match self.cluster_dns {
                Some(dns) if host.ends_with(".cluster.local") => {
                    let ip = lookup(dns, &host)
                        .await
                        .map_err(|message| AgentError::Resolve {
                            url: url.clone(),
                            message,
                        })?;
                    url.replacen(&host, &ip.to_string(), 1)
                }
                _ => url.clone(),
            };
            let request = http::Request::builder()
                .method(method)
                .uri(&target)
                .header(http::header::HOST, format!("{host}:{}", self.port))
                .body(Empty::new())
                .map_err(|source| AgentError::Request {
                    url: url.clone(),
                    source,
                })?;
            let response =
                self.http
                    .request(request)
                    .await
                    .map_err(|source| AgentError::Unreachable {
                        url: url.clone(),
                        source,
                    })?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            if !status.is_success() {
                return Err(AgentError::Status {
                    url: url.clone(),
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&body).trim().to_string(),
                });
            }
            Ok(body)
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| AgentError::Timeout {
                url: url.clone(),
                timeout: self.timeout,
            })?
    }

    /// The read-only identity preflight: which pod and game process the agent serves.
    pub async fn identity(&self, host: &str, pod_uid: &str) -> Result<Identity, AgentError> {
        let url = format!("{}/pods/{pod_uid}/identity", self.base(host));
        let body = self.call(http::Method::GET, url.clone()).await?;
        serde_json::from_slice(&body).map_err(|source| AgentError::Body { url, source })
    }

    /// `POST /pods/{uid}/quiesce`, refused by the agent unless it still serves that pod and (if
    /// given) that game incarnation.
    pub async fn quiesce_bound(
        &self,
        host: &str,
        pod_uid: &str,
        game_incarnation: Option<&str>,
    ) -> Result<(), AgentError> {
        let url = bound_url(&self.base(host), pod_uid, "quiesce", game_incarnation);
        self.call(http::Method::POST, url).await.map(drop)
    }

    /// `POST /pods/{uid}/unquiesce`, with the same guards as [`Self::quiesce_bound`]; with an
    /// `obligation` (the Backup's UID) the agent pays it at most once per game incarnation, so a
    /// retry after a crash between the agent's answer and the operator's record sends no
    /// second `save-on`.
    pub async fn unquiesce_bound(
        &self,
        host: &str,
        pod_uid: &str,
        game_incarnation: Option<&str>,
        obligation: Option<&str>,
    ) -> Result<(), AgentError> {
        let mut url = bound_url(&self.base(host), pod_uid, "unquiesce", game_incarnation);
        if let Some(obligation) = obligation {
            // UIDs are UUIDs: nothing to escape.
            let sep = if url.contains('?') { '&' } else { '?' };
            url = format!("{url}{sep}obligation={obligation}");
        }
        self.call(http::Method::POST, url).await.map(drop)
    }

    /// The unbound `POST /quiesce` (used only by the `no-identity-preflight` mutant).
    pub async fn quiesce_unbound(&self, host: &str) -> Result<(), AgentError> {
        let url = format!("{}/quiesce", self.base(host));
        self.call(http::Method::POST, url).await.map(drop)
    }

    /// The unbound `POST /unquiesce` (used only by the `no-identity-preflight` mutant).
    pub async fn unquiesce_unbound(&self, host: &str) -> Result<(), AgentError> {
        let url = format!("{}/unquiesce", self.base(host));
        self.call(http::Method::POST, url).await.map(drop)
    }
}

/// The first A record of `name` from the DNS server at `server` (one UDP query, bounded).
async fn lookup(server: Ipv4Addr, name: &str) -> Result<Ipv4Addr, String> {
    let socket = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|e| format!("cannot open a UDP socket: {e}"))?;
    let id = (std::process::id() as u16) ^ (jiff::Timestamp::now().subsec_nanosecond() as u16);
    let mut query = Vec::with_capacity(64);
    query.extend_from_slice(&id.to_be_bytes());
    query.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        query.push(label.len() as u8);
        query.extend_from_slice(label.as_bytes());
    }
    query.extend_from_slice(&[0, 0, 1, 0, 1]);
    socket
        .send_to(&query, (server, 53))
        .await
        .map_err(|e| format!("cannot ask {server}:53: {e}"))?;
    let mut buf = vec![0u8; 1500];
    let answer = async {
        loop {
            let (n, _) = socket.recv_from(&mut buf).await?;
            if n >= 12 && buf[..2] == id.to_be_bytes() {
                return Ok::<usize, std::io::Error>(n);
            }
        }
    };
    let n = tokio::time::timeout(Duration::from_secs(2), answer)
        .await
        .map_err(|_| format!("no answer from {server}:53 within 2s"))?
        .map_err(|e| format!("reading the answer of {server}:53: {e}"))?;
    parse_a(&buf[..n]).map_err(|why| format!("{server}:53 answered {why} for {name}"))
}

/// The first A record of a DNS response.
fn parse_a(msg: &[u8]) -> Result<Ipv4Addr, String> {
    let rcode = msg[3] & 0x0f;
    match rcode {
        0 => {}
        3 => return Err("NXDOMAIN".into()),
        other => return Err(format!("rcode {other}")),
    }
    let answers = u16::from_be_bytes([msg[6], msg[7]]);
    let skip_name = |mut at: usize| -> Option<usize> {
        loop {
            let len = *msg.get(at)?;
            if len & 0xc0 == 0xc0 {
                return Some(at + 2);
            }
            at += 1 + len as usize;
            if len == 0 {
                return Some(at);
            }
        }
    };
    let truncated = || "a truncated message".to_string();
    let mut at = skip_name(12).ok_or_else(truncated)? + 4;
    for _ in 0..answers {
        at = skip_name(at).ok_or_else(truncated)?;
        let field = |i: usize| msg.get(at + i).copied().ok_or_else(truncated);
        let rtype = u16::from_be_bytes([field(0)?, field(1)?]);
        let len = u16::from_be_bytes([field(8)?, field(9)?]) as usize;
        let data = msg.get(at + 10..at + 10 + len).ok_or_else(truncated)?;
        if rtype == 1 && len == 4 {
            return Ok(Ipv4Addr::new(data[0], data[1], data[2], data[3]));
        }
        at += 10 + len;
    }
    Err("no A record".into())
}

fn bound_url(base: &str, pod_uid: &str, action: &str, game_incarnation: Option<&str>) -> String {
    match game_incarnation {
        // Incarnations are UUIDs or hex: nothing to escape.
        Some(inc) => format!("{base}/pods/{pod_uid}/{action}?gameIncarnation={inc}"),
        None => format!("{base}/pods/{pod_uid}/{action}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_records_are_read_past_compressed_names() {
        // Response to "a.b" with one CNAME-less A answer using a pointer to the question.
        let mut msg = vec![0, 7, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0];
        msg.extend_from_slice(&[1, b'a', 1, b'b', 0, 0, 1, 0, 1]);
        msg.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 127, 9, 192, 16]);
        assert_eq!(parse_a(&msg), Ok(Ipv4Addr::new(127, 9, 192, 16)));
        msg[3] = 0x83;
        assert_eq!(parse_a(&msg), Err("NXDOMAIN".to_string()));
    }

    #[test]
    fn service_hosts_name_the_agent_service() {
        assert_eq!(
            service_host("lobby", "games"),
            "lobby-agent.games.svc.cluster.local"
        );
    }

    #[test]
    fn bound_urls_carry_the_pod_and_incarnation() {
        assert_eq!(
            bound_url("http://127.0.0.5:8090", "u1", "quiesce", Some("g1")),
            "http://127.0.0.5:8090/pods/u1/quiesce?gameIncarnation=g1"
        );
        assert_eq!(
            bound_url("http://127.0.0.5:8090", "u1", "unquiesce", None),
            "http://127.0.0.5:8090/pods/u1/unquiesce"
        );
    }
}
