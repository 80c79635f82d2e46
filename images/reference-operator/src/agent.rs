//! The HTTP client for the Gameplane agent sidecar (`:8090` on the pod IP).
//!
//! Only the pod-bound routes are used by the correct operator: the identity preflight and the
//! quiesce calls name the pod UID (and the game incarnation the preflight saw), so an agent
//! that serves another pod or another game process refuses instead of acting.

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
        url: String,
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    /// No answer within the bound.
    #[error("agent {url} did not answer within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    /// The agent answered with a non-success status.
    #[error("agent {url} answered {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    /// The answer was not the expected JSON.
    #[error("agent {url} answered unreadable JSON: {source}")]
    Body {
        url: String,
        #[source]
        source: serde_json::Error,
    },
    /// The request could not be built (bad pod IP).
    #[error("cannot build a request to {url}: {source}")]
    Request {
        url: String,
        #[source]
        source: http::Error,
    },
}

impl AgentError {
    /// Whether no answer came at all (not listening yet, or gone).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            AgentError::Unreachable { .. } | AgentError::Timeout { .. }
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

/// Talks to agents by pod IP.
#[derive(Clone)]
pub struct AgentClient {
    http: Client<HttpConnector, Empty<Bytes>>,
    timeout: Duration,
    port: u16,
}

impl AgentClient {
    /// A client whose every exchange is bounded by `timeout`.
    pub fn new(timeout: Duration) -> Self {
        AgentClient {
            http: Client::builder(TokioExecutor::new()).build_http(),
            timeout,
            port: ports::AGENT,
        }
    }

    fn base(&self, pod_ip: &str) -> String {
        format!("http://{pod_ip}:{}", self.port)
    }

    async fn call(&self, method: http::Method, url: String) -> Result<Bytes, AgentError> {
        let request = http::Request::builder()
            .method(method)
            .uri(&url)
            .body(Empty::new())
            .map_err(|source| AgentError::Request {
                url: url.clone(),
                source,
            })?;
        let exchange = async {
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
    pub async fn identity(&self, pod_ip: &str, pod_uid: &str) -> Result<Identity, AgentError> {
        let url = format!("{}/pods/{pod_uid}/identity", self.base(pod_ip));
        let body = self.call(http::Method::GET, url.clone()).await?;
        serde_json::from_slice(&body).map_err(|source| AgentError::Body { url, source })
    }

    /// `POST /pods/{uid}/quiesce`, refused by the agent unless it still serves that pod and (if
    /// given) that game incarnation.
    pub async fn quiesce_bound(
        &self,
        pod_ip: &str,
        pod_uid: &str,
        game_incarnation: Option<&str>,
    ) -> Result<(), AgentError> {
        let url = bound_url(&self.base(pod_ip), pod_uid, "quiesce", game_incarnation);
        self.call(http::Method::POST, url).await.map(drop)
    }

    /// `POST /pods/{uid}/unquiesce`, with the same guards as [`Self::quiesce_bound`].
    pub async fn unquiesce_bound(
        &self,
        pod_ip: &str,
        pod_uid: &str,
        game_incarnation: Option<&str>,
    ) -> Result<(), AgentError> {
        let url = bound_url(&self.base(pod_ip), pod_uid, "unquiesce", game_incarnation);
        self.call(http::Method::POST, url).await.map(drop)
    }

    /// The unbound `POST /quiesce` (used only by the `no-identity-preflight` mutant).
    pub async fn quiesce_unbound(&self, pod_ip: &str) -> Result<(), AgentError> {
        let url = format!("{}/quiesce", self.base(pod_ip));
        self.call(http::Method::POST, url).await.map(drop)
    }

    /// The unbound `POST /unquiesce` (used only by the `no-identity-preflight` mutant).
    pub async fn unquiesce_unbound(&self, pod_ip: &str) -> Result<(), AgentError> {
        let url = format!("{}/unquiesce", self.base(pod_ip));
        self.call(http::Method::POST, url).await.map(drop)
    }
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
