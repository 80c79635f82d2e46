//! The OCI registry the nodes pull the candidate images from, and what the harness reads from it.
//!
//! A digest-pinned reference (`rehearsal.local/fixture-game@sha256:…`) is pulled by a Kind node
//! from a registry: the digest is that registry's **manifest digest** (its
//! `Docker-Content-Digest`), never the image id an engine shows. The nodes reach the registry
//! through a containerd mirror for the host the images are named for ([`MIRRORED_HOST`]):
//! `/etc/containerd/certs.d/rehearsal.local/hosts.toml` ([`hosts_toml`]) points at the registry
//! container on the Kind network (kind's documented local-registry pattern). The harness reads
//! digests over HTTP from the registry's host address ([`manifest_digest`]).
//!
//! [`LocalRegistry`] runs Debian's `docker-registry` (distribution 2.8) on 127.0.0.1 for the
//! tests and local runs.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::process::{ChildGuard, Cmd, ProcessLog};

/// The registry host the workspace's images are named for; a Kind node resolves it through the
/// containerd mirror the harness writes.
pub const MIRRORED_HOST: &str = "rehearsal.local";

/// Where containerd looks for per-registry `hosts.toml` files (kind's local-registry pattern).
pub const CERTS_DIR: &str = "/etc/containerd/certs.d";

/// The containerd config patch that makes the node read [`CERTS_DIR`] (kind's local-registry
/// page; kind's containerd 2.x nodes still default to an empty `config_path`, kind #3918).
pub const CONTAINERD_PATCH: &str =
    "[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"";

/// The manifest media types the harness accepts (a single-platform manifest or an index).
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";

/// Why a registry operation failed; each names the registry and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The registry program could not be started or run.
    #[error(transparent)]
    Process(#[from] crate::process::ProcessError),
    /// A local file operation (directory, port, config) failed.
    #[error("cannot {what} at {path}: {source}")]
    Io {
        /// What was being done, e.g. `write the registry config`.
        what: String,
        /// The file or directory involved.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the registry at {addr} did not answer /v2/ within {bound:?} ({last}); see its log {log}"
    )]
    /// The started registry did not answer `/v2/` within its bound.
    NotReady {
        /// The registry's `127.0.0.1:PORT`.
        addr: String,
        /// How long the harness waited.
        bound: Duration,
        /// The last thing observed: its exit status, or the last request's error.
        last: String,
        /// The registry's log file, for the cause.
        log: String,
    },
    #[error(
        "registry {addr}: {what}: {reason}; is the registry running (REHEARSAL_REGISTRY names its host address)?"
    )]
    /// A request to the registry failed or was answered with an error.
    Http {
        /// The registry's host address.
        addr: String,
        /// The request, e.g. `HEAD /v2/fixture-game/manifests/1.0`.
        what: String,
        /// The transport error, the timeout, the unexpected HTTP status or the missing digest header.
        reason: String,
    },
    /// The image is not named for [`MIRRORED_HOST`], so no registry path maps to it.
    #[error("{0} is not an image of {MIRRORED_HOST}: the registry serves only rehearsal.local/…")]
    NotMirrored(String),
}

/// `repository` and `reference` (tag or digest) of an image named for [`MIRRORED_HOST`]:
/// `rehearsal.local/fixture-game:1.0` → (`fixture-game`, `1.0`). A name without tag is `latest`.
pub fn registry_path(image: &str) -> Result<(String, String), RegistryError> {
    let rest = image
        .strip_prefix(MIRRORED_HOST)
        .and_then(|r| r.strip_prefix('/'))
        .ok_or_else(|| RegistryError::NotMirrored(image.to_string()))?;
    if let Some((repo, digest)) = rest.split_once('@') {
        return Ok((repo.to_string(), digest.to_string()));
    }
    let last_slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
    Ok(match rest[last_slash..].rfind(':') {
        Some(i) => (
            rest[..last_slash + i].to_string(),
            rest[last_slash + i + 1..].to_string(),
        ),
        None => (rest.to_string(), "latest".to_string()),
    })
}

/// The containerd `hosts.toml` that sends pulls of [`MIRRORED_HOST`] to `endpoint`
/// (`http://rehearsal-registry:5000`), plain HTTP, pull and resolve only.
pub fn hosts_toml(endpoint: &str) -> String {
    format!(
        "# Written by rehearse: pulls of {MIRRORED_HOST}/… go to the local registry.\nserver = \"{endpoint}\"\n\n[host.\"{endpoint}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
    )
}

/// The registry's manifest digest (`Docker-Content-Digest`) of `repository:reference` at `addr`
/// (`127.0.0.1:5001`), or `None` when the registry does not hold it.
pub async fn manifest_digest(
    addr: &str,
    repository: &str,
    reference: &str,
) -> Result<Option<String>, RegistryError> {
    let what = format!("HEAD /v2/{repository}/manifests/{reference}");
    let fail = |reason: String| RegistryError::Http {
        addr: addr.to_string(),
        what: what.clone(),
        reason,
    };
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let request = http::Request::head(format!(
        "http://{addr}/v2/{repository}/manifests/{reference}"
    ))
    .header(http::header::ACCEPT, ACCEPT)
    .body(Empty::new())
    .map_err(|e| fail(e.to_string()))?;
    let response = tokio::time::timeout(Duration::from_secs(30), client.request(request))
        .await
        .map_err(|_| fail("no answer within 30 s".into()))?
        .map_err(|e| fail(e.to_string()))?;
    match response.status() {
        http::StatusCode::OK => {
            let digest = response
                .headers()
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| fail("the answer carries no Docker-Content-Digest".into()))?;
            Ok(Some(digest.to_string()))
        }
        http::StatusCode::NOT_FOUND => Ok(None),
        other => Err(fail(format!("HTTP {other}"))),
    }
}

/// The manifest digest of a `rehearsal.local/…` image in the registry at `addr`.
pub async fn image_digest(addr: &str, image: &str) -> Result<Option<String>, RegistryError> {
    let (repository, reference) = registry_path(image)?;
    manifest_digest(addr, &repository, &reference).await
}

/// `sha256:<hex>` of `bytes`: the digest a registry names content by.
pub fn content_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// One request to the registry at `addr`, answered within 30 s: its status, headers and body.
async fn send(
    addr: &str,
    request: http::Request<Full<Bytes>>,
) -> Result<(http::StatusCode, http::HeaderMap, Bytes), RegistryError> {
    let what = format!("{} {}", request.method(), request.uri().path());
    let fail = |reason: String| RegistryError::Http {
        addr: addr.to_string(),
        what: what.clone(),
        reason,
    };
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let response = tokio::time::timeout(Duration::from_secs(30), async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?;
        Ok::<_, String>((parts.status, parts.headers, body.to_bytes()))
    })
    .await
    .map_err(|_| fail("no answer within 30 s".into()))?
    .map_err(fail)?;
    Ok(response)
}

fn http_error(addr: &str, what: String, reason: String) -> RegistryError {
    RegistryError::Http {
        addr: addr.to_string(),
        what,
        reason,
    }
}

/// Uploads `blob` into `repository` at `addr` (one monolithic upload) and returns its digest.
async fn push_blob(addr: &str, repository: &str, blob: &[u8]) -> Result<String, RegistryError> {
    let digest = content_digest(blob);
    let start = http::Request::post(format!("http://{addr}/v2/{repository}/blobs/uploads/"))
        .body(Full::new(Bytes::new()))
        .map_err(|e| http_error(addr, "POST blob upload".into(), e.to_string()))?;
    let (status, headers, _) = send(addr, start).await?;
    let location = headers
        .get(http::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .filter(|_| status == http::StatusCode::ACCEPTED)
        .ok_or_else(|| {
            http_error(
                addr,
                format!("POST /v2/{repository}/blobs/uploads/"),
                format!("HTTP {status} without an upload location"),
            )
        })?;
    let location = if location.starts_with("http") {
        location.to_string()
    } else {
        format!("http://{addr}{location}")
    };
    let sep = if location.contains('?') { '&' } else { '?' };
    let put = http::Request::put(format!("{location}{sep}digest={digest}"))
        .header(http::header::CONTENT_TYPE, "application/octet-stream")
        .body(Full::new(Bytes::copy_from_slice(blob)))
        .map_err(|e| http_error(addr, "PUT blob".into(), e.to_string()))?;
    let (status, _, body) = send(addr, put).await?;
    if status != http::StatusCode::CREATED {
        return Err(http_error(
            addr,
            format!("PUT blob {digest} into {repository}"),
            format!("HTTP {status}: {}", String::from_utf8_lossy(&body)),
        ));
    }
    Ok(digest)
}

/// Pushes a single-layer OCI artifact (`artifact_type`, an empty config, one layer of
/// `layer_media_type`) as `repository:tag` into the registry at `addr`, moving the tag if it
/// named other content, and returns the manifest digest the registry now serves for the tag.
pub async fn push_artifact(
    addr: &str,
    repository: &str,
    tag: &str,
    artifact_type: &str,
    layer_media_type: &str,
    layer: &[u8],
) -> Result<String, RegistryError> {
    const EMPTY_CONFIG: &[u8] = b"{}";
    let config = push_blob(addr, repository, EMPTY_CONFIG).await?;
    let layer_digest = push_blob(addr, repository, layer).await?;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": artifact_type,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": config, "size": EMPTY_CONFIG.len()},
        "layers": [{"mediaType": layer_media_type, "digest": layer_digest, "size": layer.len()}],
    });
    let body = serde_json::to_vec(&manifest).unwrap_or_default();
    let what = format!("PUT /v2/{repository}/manifests/{tag}");
    let put = http::Request::put(format!("http://{addr}/v2/{repository}/manifests/{tag}"))
        .header(
            http::header::CONTENT_TYPE,
            "application/vnd.oci.image.manifest.v1+json",
        )
        .body(Full::new(Bytes::from(body.clone())))
        .map_err(|e| http_error(addr, what.clone(), e.to_string()))?;
    let (status, _, answer) = send(addr, put).await?;
    if status != http::StatusCode::CREATED {
        return Err(http_error(
            addr,
            what,
            format!("HTTP {status}: {}", String::from_utf8_lossy(&answer)),
        ));
    }
    Ok(content_digest(&body))
}

/// The manifest the registry at `addr` serves for `repository:reference`, with the digest
/// computed over the bytes served (never the registry's own header), or `None` when it holds
/// none.
pub async fn fetch_manifest(
    addr: &str,
    repository: &str,
    reference: &str,
) -> Result<Option<(String, Bytes)>, RegistryError> {
    let what = format!("GET /v2/{repository}/manifests/{reference}");
    let get = http::Request::get(format!(
        "http://{addr}/v2/{repository}/manifests/{reference}"
    ))
    .header(http::header::ACCEPT, ACCEPT)
    .body(Full::new(Bytes::new()))
    .map_err(|e| http_error(addr, what.clone(), e.to_string()))?;
    let (status, _, body) = send(addr, get).await?;
    match status {
        http::StatusCode::OK => Ok(Some((content_digest(&body), body))),
        http::StatusCode::NOT_FOUND => Ok(None),
        other => Err(http_error(addr, what, format!("HTTP {other}"))),
    }
}

/// The blob `digest` of `repository` as the registry at `addr` serves it, its bytes hashed:
/// `Ok(Err(got))` names the digest of the bytes served when it is not `digest`.
pub async fn fetch_blob(
    addr: &str,
    repository: &str,
    digest: &str,
) -> Result<Result<Bytes, String>, RegistryError> {
    let what = format!("GET /v2/{repository}/blobs/{digest}");
    let get = http::Request::get(format!("http://{addr}/v2/{repository}/blobs/{digest}"))
        .body(Full::new(Bytes::new()))
        .map_err(|e| http_error(addr, what.clone(), e.to_string()))?;
    let (status, _, body) = send(addr, get).await?;
    if status != http::StatusCode::OK {
        return Err(http_error(addr, what, format!("HTTP {status}")));
    }
    let got = content_digest(&body);
    Ok(if got == digest { Ok(body) } else { Err(got) })
}

/// Debian's `docker-registry` (distribution 2.8) serving on 127.0.0.1, its storage in a
/// directory of the caller's; stopped when dropped.
#[derive(Debug)]
pub struct LocalRegistry {
    child: ChildGuard,
    addr: SocketAddr,
}

impl LocalRegistry {
    /// Starts the registry with its config, storage and log under `dir` and waits (bounded)
    /// until `/v2/` answers. `REHEARSAL_DOCKER_REGISTRY` overrides the program.
    pub async fn start(dir: &Path, log: &ProcessLog) -> Result<Self, RegistryError> {
        let program = std::env::var("REHEARSAL_DOCKER_REGISTRY")
            .unwrap_or_else(|_| "docker-registry".to_string());
        let io = |what: &str, path: &Path| {
            let what = what.to_string();
            let path = path.to_path_buf();
            move |source| RegistryError::Io { what, path, source }
        };
        std::fs::create_dir_all(dir).map_err(io("create the registry directory", dir))?;
        // A free port: bound, then released for the registry (a loser of that race fails
        // to listen and is reported with its log).
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(io("find a free port", dir))?;
        let config = dir.join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
                dir.join("data").display()
            ),
        )
        .map_err(io("write the registry config", &config))?;
        let log_file = dir.join("registry.log");
        let mut child = Cmd::new(program)
            .arg("serve")
            .arg(&config)
            .spawn(&log_file, log)?;
        let bound = Duration::from_secs(20);
        let started = tokio::time::Instant::now();
        let mut interval = tokio::time::interval(Duration::from_millis(50));
        let last = loop {
            interval.tick().await;
            if let Some(code) = child.try_exit() {
                break format!("it exited with {code:?}");
            }
            match manifest_digest(&addr.to_string(), "rehearsal-probe", "latest").await {
                Ok(_) => return Ok(Self { child, addr }),
                Err(e) if started.elapsed() > bound => break e.to_string(),
                Err(_) => {}
            }
        };
        Err(RegistryError::NotReady {
            addr: addr.to_string(),
            bound,
            last,
            log: log_file.display().to_string(),
        })
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the registry.
    pub async fn stop(self) {
        self.child.stop(Duration::from_secs(5)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_of_the_mirrored_host_map_to_registry_paths() {
        assert_eq!(
            registry_path("rehearsal.local/fixture-game:1.0").unwrap(),
            ("fixture-game".into(), "1.0".into())
        );
        assert_eq!(
            registry_path("rehearsal.local/a/b@sha256:00").unwrap(),
            ("a/b".into(), "sha256:00".into())
        );
        assert_eq!(
            registry_path("rehearsal.local/op").unwrap(),
            ("op".into(), "latest".into())
        );
        let err = registry_path("busybox:1.36").unwrap_err().to_string();
        assert!(err.contains("rehearsal.local"), "{err}");
    }

    #[test]
    fn hosts_toml_names_the_endpoint_as_server_and_host() {
        let toml = hosts_toml("http://rehearsal-registry:5000");
        assert!(toml.contains("server = \"http://rehearsal-registry:5000\""));
        assert!(toml.contains("[host.\"http://rehearsal-registry:5000\"]"));
        assert!(toml.contains("capabilities = [\"pull\", \"resolve\"]"));
    }
}
