//! The HTTP marker probe: GET a URL on a pod and check that the body carries the world marker
//! (what the HTTP-only candidate serves while failing the Minecraft handshake).

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;

/// What the HTTP probe saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpMarkerOutcome {
    /// The URL requested, `http://<addr><path>`.
    pub url: String,
    /// The HTTP status code of the answer.
    pub status: u16,
    /// The body (first 4 KiB, lossily decoded).
    pub body: String,
    /// The marker looked for.
    pub marker: String,
    /// True when the status is 2xx and the body contains the marker.
    pub ok: bool,
}

/// Why the HTTP probe could not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum HttpProbeError {
    #[error("GET {url} failed: {reason} (is the server listening for HTTP on that address?)")]
    /// The connection or request failed.
    Request {
        /// The URL requested.
        url: String,
        /// hyper's error.
        reason: String,
    },
    #[error("GET {url} did not answer within {bound:?}")]
    /// No answer within the bound.
    Timeout {
        /// The URL requested.
        url: String,
        /// The bound that passed.
        bound: Duration,
    },
}

/// GETs `http://addr{path}` and looks for `marker` in the body.
pub async fn probe(
    addr: SocketAddr,
    path: &str,
    marker: &str,
    bound: Duration,
) -> Result<HttpMarkerOutcome, HttpProbeError> {
    let url = format!("http://{addr}{path}");
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let request_err = |reason: String| HttpProbeError::Request {
        url: url.clone(),
        reason,
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| request_err(e.to_string()))?;
    let fetch = async {
        let response = client
            .get(uri)
            .await
            .map_err(|e| request_err(e.to_string()))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| request_err(e.to_string()))?
            .to_bytes();
        Ok::<_, HttpProbeError>((status, body))
    };
    let (status, body) =
        tokio::time::timeout(bound, fetch)
            .await
            .map_err(|_| HttpProbeError::Timeout {
                url: url.clone(),
                bound,
            })??;
    let cut = &body[..body.len().min(4096)];
    let body = String::from_utf8_lossy(cut).into_owned();
    let ok = (200..300).contains(&status) && body.contains(marker);
    Ok(HttpMarkerOutcome {
        url,
        status,
        body,
        marker: marker.to_string(),
        ok,
    })
}
