//! Helpers shared by the API server's integration tests: a server per test, a kube client
//! pointed at it, and bounded waits that report what they were waiting for.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use rehearsal_apiserver::{ApiServer, ApiServerConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn start() -> (ApiServer, kube::Client) {
    start_with(ApiServerConfig::default()).await
}

/// The admin token of the server started last: [`request_with`] sends it, as kubectl does.
static ADMIN_TOKEN: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
/// The CA of the server started last: [`raw`] and [`connect`] verify the server with it.
static CA_DER: std::sync::Mutex<Option<Vec<u8>>> = std::sync::Mutex::new(None);

pub async fn start_with(config: ApiServerConfig) -> (ApiServer, kube::Client) {
    let server = ApiServer::start(config)
        .await
        .expect("the API server starts");
    *ADMIN_TOKEN.lock().unwrap() = Some(server.admin_token().to_string());
    *CA_DER.lock().unwrap() = Some(server.ca_der());
    let client = client_for(&server);
    (server, client)
}

/// A client with the admin kubeconfig's identity.
pub fn client_for(server: &ApiServer) -> kube::Client {
    client_with_token(server, Some(server.admin_token()))
}

/// A client that authenticates with `token` (none: anonymous).
pub fn client_with_token(server: &ApiServer, token: Option<&str>) -> kube::Client {
    let mut config = kube::Config::new(server.url().parse().expect("server URL parses"));
    config.root_cert = Some(vec![server.ca_der()]);
    config.auth_info.token = token.map(|t| t.to_string().into());
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

pub struct Reply {
    pub code: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn status(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// A TLS connection to the server started last, its certificate verified against the
/// server's CA for the name `127.0.0.1`.
pub async fn connect(addr: SocketAddr) -> tokio_rustls::client::TlsStream<TcpStream> {
    let ca = CA_DER
        .lock()
        .unwrap()
        .clone()
        .expect("a server was started");
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(ca))
        .expect("the CA parses");
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("the TLS handshake with the server's CA succeeds")
}

/// One request on a fresh TLS connection; the reply read to EOF.
pub async fn raw(addr: SocketAddr, request: &[u8]) -> Reply {
    let first_line =
        String::from_utf8_lossy(&request[..request.len().min(200)]).replace("\r\n", " | ");
    within("a raw HTTP exchange", async {
        let mut stream = connect(addr).await;
        // The server may answer (and close) before reading everything; its reply still counts.
        let _ = stream.write_all(request).await;
        let _ = stream.shutdown().await;
        let mut out = Vec::new();
        // A server closing without close_notify after its reply is still a reply.
        if let Err(e) = stream.read_to_end(&mut out).await
            && out.is_empty()
        {
            panic!("reading the reply to {first_line:?}: {e}");
        }
        let text_end = out
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| {
                panic!(
                    "no response head for {first_line:?}: got {:?}",
                    String::from_utf8_lossy(&out)
                )
            });
        let head = String::from_utf8_lossy(&out[..text_end]).into_owned();
        let code: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut body = out[text_end + 4..].to_vec();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body = dechunk(&body);
        }
        Reply { code, head, body }
    })
    .await
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(std::str::from_utf8(&data[..eol]).unwrap().trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[eol + 2..eol + 2 + size]);
        data = &data[eol + 2 + size + 2..];
    }
}

/// An HTTP/1.1 request with `Connection: close`.
pub fn request(method: &str, path: &str, content_type: Option<&str>, body: &[u8]) -> Vec<u8> {
    let headers: Vec<(&str, &str)> = content_type
        .map(|ct| ("Content-Type", ct))
        .into_iter()
        .collect();
    request_with(method, path, &headers, body)
}

/// An HTTP/1.1 request with `Connection: close` and extra headers.
pub fn request_with(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    let explicit_auth = headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    if let Some(token) = ADMIN_TOKEN
        .lock()
        .unwrap()
        .as_ref()
        .filter(|_| !explicit_auth)
    {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}
