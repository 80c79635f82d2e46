//! The WebSocket upgrade of a streaming request (RFC 6455 handshake, subprotocol negotiation
//! as kube-apiserver's `wsstream` does it: the first protocol the client offers that the
//! server speaks wins).

use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::super::Body;
use crate::status::ApiError;

/// A server-side WebSocket over the upgraded HTTP connection.
pub type Socket = WebSocketStream<TokioIo<Upgraded>>;

/// Whether the request asks for a WebSocket (as opposed to SPDY or no upgrade at all).
pub fn is_websocket(headers: &HeaderMap) -> bool {
    header_has_token(headers, http::header::UPGRADE, "websocket")
}

/// Whether the request asks for SPDY/3.1 (kubectl's fallback when WebSocket fails).
pub fn is_spdy(headers: &HeaderMap) -> bool {
    header_has_token(headers, http::header::UPGRADE, "spdy/3.1")
}

fn header_has_token(headers: &HeaderMap, name: http::header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// The protocols the client offers, in its order of preference.
pub fn offered_protocols(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(http::header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Picks the first offered protocol that `supported` contains.
pub fn negotiate(
    headers: &HeaderMap,
    supported: &[&'static str],
) -> Result<&'static str, ApiError> {
    let offered = offered_protocols(headers);
    offered
        .iter()
        .find_map(|p| supported.iter().find(|s| **s == p.as_str()).copied())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "unable to upgrade connection: requested protocols {offered:?} are not supported; \
                 this endpoint speaks {supported:?}"
            ))
        })
}

/// Checks the handshake headers; returns the `Sec-WebSocket-Accept` value.
pub fn accept_key(method: &Method, headers: &HeaderMap) -> Result<String, ApiError> {
    if method != Method::GET {
        return Err(ApiError::bad_request(format!(
            "unable to upgrade connection: a WebSocket upgrade must be a GET, not {method}"
        )));
    }
    if !header_has_token(headers, http::header::CONNECTION, "upgrade") {
        return Err(ApiError::bad_request(
            "unable to upgrade connection: missing `Connection: Upgrade`",
        ));
    }
    let version = headers
        .get(http::header::SEC_WEBSOCKET_VERSION)
        .and_then(|v| v.to_str().ok());
    if version != Some("13") {
        return Err(ApiError::bad_request(format!(
            "unable to upgrade connection: unsupported Sec-WebSocket-Version {version:?} (want 13)"
        )));
    }
    let key = headers
        .get(http::header::SEC_WEBSOCKET_KEY)
        .ok_or_else(|| {
            ApiError::bad_request("unable to upgrade connection: no Sec-WebSocket-Key")
        })?;
    Ok(tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes()))
}

/// The `101 Switching Protocols` answer.
pub fn switching_protocols(accept: &str, protocol: &str) -> Response<Body> {
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(http::header::UPGRADE, "websocket")
        .header(http::header::CONNECTION, "Upgrade")
        .header(
            http::header::SEC_WEBSOCKET_ACCEPT,
            HeaderValue::from_str(accept).expect("base64 is a valid header value"),
        )
        .header(
            http::header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_str(protocol).expect("protocol names are valid header values"),
        )
        .body(Body::empty())
        .expect("static response parts")
}

/// Completes the upgrade once the 101 has been sent; `None` when the client went away first.
pub async fn socket(upgrade: OnUpgrade) -> Option<Socket> {
    let upgraded = upgrade.await.ok()?;
    let mut config = WebSocketConfig::default();
    // Frames as large as kubelet's (and kube-rs's) buffers; the default 16 MiB cap stays.
    config.max_frame_size = Some(16 << 20);
    Some(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await)
}
