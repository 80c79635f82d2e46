//! The restic REST server the cases' backup repositories live on, so one repository spec
//! (`rest:http://HOST:PORT/<name>` in the repository Secret's `repo` key, with `password`) works
//! for the reference operator and for Gameplane, whose backup Job mounts no host path.
//!
//! - Embedded cluster: [`RestServer`] runs Debian's `rclone serve restic` on the host, bound to
//!   127.0.0.1 on a free port; embedded pods share the host's loopback, so their restic reaches
//!   it directly. One server per process ([`RestServer::shared`]) serves every embedded cluster
//!   the process starts, each under its own path ([`RestTenant`]: `rest:http://ADDR/<tenant>`),
//!   so only the first cluster of a run pays for rclone's start-up. A tenant's repositories stay
//!   in its cluster's state directory (the server follows the tenant's symlink), are reachable
//!   only while the tenant is attached, and go with the state directory. The server ends with
//!   the process ([`stop_shared`], and `PR_SET_PDEATHSIG` when the process dies).
//! - Kind: [`kind_manifests`], a `restic/rest-server` Deployment and Service in
//!   [`KIND_NAMESPACE`] (the server Gameplane's own e2e runs), storing into the node directory
//!   [`crate::backend::kind::NODE_BACKUP_REPO`]; pods reach it through cluster DNS.
//!
//! A repository name is one DNS label (the case's namespace, or its run-unique id): it is a
//! directory below the server's root, removed after the case.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::BackendError;
use crate::process::{ChildGuard, Cmd, ProcessLog, ProcessRecord};

/// The namespace of the Kind REST server.
pub const KIND_NAMESPACE: &str = "rehearsal-repos";
/// Its Deployment and Service name.
pub const KIND_SERVICE: &str = "rest-server";
/// Its port (the image's default, as Gameplane's e2e runs it).
pub const KIND_PORT: u16 = 8000;
/// Its image (the one Gameplane's e2e uses).
pub const KIND_IMAGE: &str = "restic/rest-server:0.14.0";
/// The label its pod carries (NetworkPolicies select it).
pub const KIND_APP_LABEL: (&str, &str) = ("app.kubernetes.io/name", "rehearsal-rest-server");

/// The repository base URL on Kind, as pods in any namespace reach it.
pub fn kind_base() -> String {
    format!("rest:http://{KIND_SERVICE}.{KIND_NAMESPACE}.svc.cluster.local:{KIND_PORT}")
}

/// `name` checked as a repository name: one DNS label (lower-case letters, digits, `-`), so
/// it is exactly one directory below the server's root and safe to remove.
pub fn repository_name(name: &str) -> Result<&str, BackendError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-');
    if ok {
        Ok(name)
    } else {
        Err(BackendError::Setup(format!(
            "{name:?} is not a repository name; use one DNS label (a-z, 0-9, -), like the case's namespace"
        )))
    }
}

/// The repository URL for `name` below `base` (`rest:http://HOST:PORT`).
pub fn repository_url(base: &str, name: &str) -> Result<String, BackendError> {
    Ok(format!(
        "{}/{}",
        base.trim_end_matches('/'),
        repository_name(name)?
    ))
}

/// An empty restic repository for the cases' password whose one key is cheap to open
/// (`fixtures/restic-repository/README.md`): restic's encrypted `config` and the key file.
const TEMPLATE_CONFIG: &[u8] = include_bytes!("../../../fixtures/restic-repository/config");
const TEMPLATE_KEY: &[u8] = include_bytes!("../../../fixtures/restic-repository/key");

/// Writes the template repository into `dir` in restic's layout (`config`, `keys/<sha256>`,
/// `data`, `index`, `locks`, `snapshots`), unless `dir` already holds a repository. Every open
/// of it then costs milliseconds instead of a calibrated scrypt derivation, and no copy pays
/// for `restic init`.
///
/// `data/00`…`data/ff` are not created: the REST server (like restic's own local backend)
/// creates a pack's directory when the first pack lands there, and 256 `mkdir`s per repository
/// were the embedded rehearsal's largest single cost in kernel time (ext4 inode allocation).
pub fn write_template(dir: &Path) -> Result<(), BackendError> {
    use sha2::Digest as _;
    if dir.join("config").exists() {
        return Ok(());
    }
    let io = |what: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |e| BackendError::io(what, &p, e)
    };
    for sub in ["data", "index", "keys", "locks", "snapshots"] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).map_err(io("create the repository directory", &d))?;
    }
    let key = dir
        .join("keys")
        .join(hex::encode(sha2::Sha256::digest(TEMPLATE_KEY)));
    std::fs::write(&key, TEMPLATE_KEY).map_err(io("write the repository key", &key))?;
    // The config last: restic takes a directory with a config for a repository.
    let config = dir.join("config");
    std::fs::write(&config, TEMPLATE_CONFIG).map_err(io("write the repository config", &config))
}

/// A restic REST server on this host (`rclone serve restic`).
#[derive(Debug)]
pub struct RestServer {
    child: Mutex<Option<ChildGuard>>,
    addr: SocketAddr,
    root: PathBuf,
    log_file: PathBuf,
    /// How it was started, as recorded when it was.
    record: Option<ProcessRecord>,
    /// The shared server's own directory (root and log) and its owner record, removed when
    /// it stops.
    home: Option<(PathBuf, rehearsal_embedded::owners::OwnerRecord)>,
}

/// The line rclone prints once it listens: `… Serving restic REST API on http://ADDR/`.
fn served_addr(log: &str) -> Option<SocketAddr> {
    log.lines().find_map(|line| {
        let rest = line.split("Serving restic REST API on http://").nth(1)?;
        rest.trim().trim_end_matches('/').parse().ok()
    })
}

impl RestServer {
    /// The argv: rclone with no config file, serving `root` on a free loopback port.
    pub fn argv(program: &str, root: &Path) -> Vec<String> {
        vec![
            program.to_string(),
            "serve".into(),
            "restic".into(),
            "--config".into(),
            "/dev/null".into(),
            "--addr".into(),
            "127.0.0.1:0".into(),
            // A tenant's path is a symlink to its cluster's repository directory.
            "--copy-links".into(),
            root.display().to_string(),
        ]
    }

    /// Starts the server on `root` (created if missing), logging to `log_file`, and waits up to
    /// `bound` for it to listen. `REHEARSAL_RCLONE` names the program (default `rclone`).
    pub async fn start(
        root: &Path,
        log_file: &Path,
        bound: Duration,
        log: &ProcessLog,
    ) -> Result<Self, BackendError> {
        std::fs::create_dir_all(root)
            .map_err(|e| BackendError::io("create the repository root", root, e))?;
        let _ = std::fs::remove_file(log_file);
        let program = std::env::var("REHEARSAL_RCLONE").unwrap_or_else(|_| "rclone".into());
        let argv = Self::argv(&program, root);
        let mut child = Cmd::new(argv[0].clone())
            .args(argv[1..].iter().cloned())
            // rclone links tcell, whose start-up builds a Unicode width table unless this is
            // set: 100 → 60 ms of CPU per start, on every embedded cluster's way up.
            .env("TCELL_MINIMIZE", "1")
            .spawn(log_file, log)?;
        let start = Instant::now();
        // rclone names the port it bound only in its log: a short bounded poll reads it.
        loop {
            let text = std::fs::read_to_string(log_file).unwrap_or_default();
            if let Some(addr) = served_addr(&text) {
                return Ok(Self {
                    child: Mutex::new(Some(child)),
                    addr,
                    root: root.to_path_buf(),
                    log_file: log_file.to_path_buf(),
                    record: log.records().last().cloned(),
                    home: None,
                });
            }
            if let Some(code) = child.try_exit() {
                return Err(BackendError::Setup(format!(
                    "`rclone serve restic` exited with {code:?} before serving; its log {}: {}",
                    log_file.display(),
                    text.lines().last().unwrap_or("(empty)")
                )));
            }
            if start.elapsed() > bound {
                return Err(BackendError::Setup(format!(
                    "`rclone serve restic` did not serve within {bound:?}; its log {}: {}",
                    log_file.display(),
                    text.lines().last().unwrap_or("(empty)")
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Where it listens (127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The repository base URL (`rest:http://127.0.0.1:PORT`).
    pub fn base(&self) -> String {
        format!("rest:http://{}", self.addr)
    }

    /// The directory it serves.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The process, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.guard().as_ref().and_then(ChildGuard::pid)
    }

    /// Its log (rclone's stdout and stderr).
    pub fn log_file(&self) -> &Path {
        &self.log_file
    }

    /// True while the process has not exited.
    pub fn running(&self) -> bool {
        self.guard()
            .as_mut()
            .is_some_and(|child| child.try_exit().is_none())
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, Option<ChildGuard>> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops the server (and removes the shared server's directory).
    pub async fn stop(mut self) {
        let child = self.guard().take();
        if let Some(child) = child {
            child.stop(Duration::from_secs(5)).await;
        }
        if let Some((dir, owner)) = self.home.take() {
            let _ = std::fs::remove_dir_all(&dir);
            owner.remove();
        }
    }

    /// The process' shared server, started on first use (and again if it has died: a server
    /// started from a runtime's worker thread dies with that thread). Its root is a fresh
    /// directory under the embedded clusters' directory, registered like a cluster's state
    /// directory so a start after a crash removes it.
    pub async fn shared(bound: Duration) -> Result<Arc<Self>, BackendError> {
        let mut slot = SHARED.lock().await;
        if let Some(server) = slot.as_ref().filter(|s| s.running()) {
            return Ok(server.clone());
        }
        if let Some(dead) = slot.take() {
            tracing::warn!(log = %dead.log_file.display(), "the shared REST server had exited; starting another");
        }
        let dir = rehearsal_embedded::owners::root_dir().join(format!(
            "rest-server-{}-{}",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| BackendError::io("create the REST server's directory", &dir, e))?;
        let owner = rehearsal_embedded::owners::OwnerRecord::register(&dir, true)
            .map_err(|e| BackendError::io("register the REST server's directory", &dir, e))?;
        let started = Self::start(
            &dir.join("tenants"),
            &dir.join("rest-server.log"),
            bound,
            &ProcessLog::default(),
        )
        .await;
        let server = match started {
            // The record stays until the server stops: a crashed process' directory is reaped
            // by the next embedded cluster's start.
            Ok(mut server) => {
                server.home = Some((dir, owner));
                Arc::new(server)
            }
            Err(e) => {
                owner.remove();
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        *slot = Some(server.clone());
        Ok(server)
    }
}

impl Drop for RestServer {
    fn drop(&mut self) {
        // Not stopped: the guard kills the process; its directory goes too.
        if let Some((dir, owner)) = self.home.take() {
            let _ = std::fs::remove_dir_all(&dir);
            owner.remove();
        }
    }
}

/// The process' shared REST server ([`RestServer::shared`]).
static SHARED: tokio::sync::Mutex<Option<Arc<RestServer>>> = tokio::sync::Mutex::const_new(None);

/// Stops the process' shared REST server, if one runs and no cluster still uses it (a tenant
/// still attached keeps it; it then ends with the last tenant's drop or with the process).
pub async fn stop_shared() {
    let server = SHARED.lock().await.take();
    if let Some(server) = server.and_then(|s| Arc::try_unwrap(s).ok()) {
        server.stop().await;
    }
}

/// One embedded cluster's place on the shared [`RestServer`]: path `/<tenant>` of the server is
/// a symlink to the cluster's repository directory, so its repositories are
/// `rest:http://ADDR/<tenant>/<name>` and live (and are removed) with the cluster's state.
/// Dropping it detaches the path.
#[derive(Debug)]
pub struct RestTenant {
    server: Arc<RestServer>,
    /// The cluster's way to the server: its pods' restic reaches the server through it, so a
    /// case can hold one of their requests ([`super::rest_gate`]).
    gate: super::rest_gate::RestGate,
    tenant: String,
    repos: PathBuf,
    link: PathBuf,
}

impl RestTenant {
    /// Attaches `repos` (created if missing) to the process' shared server (started if none
    /// runs, within `bound`), recording the server's process in `log`.
    pub async fn attach(
        repos: &Path,
        bound: Duration,
        log: &ProcessLog,
    ) -> Result<Self, BackendError> {
        static SEQUENCE: AtomicU32 = AtomicU32::new(0);
        std::fs::create_dir_all(repos)
            .map_err(|e| BackendError::io("create the repository directory", repos, e))?;
        let server = RestServer::shared(bound).await?;
        let tenant = format!("cluster-{}", SEQUENCE.fetch_add(1, Ordering::Relaxed));
        let link = server.root.join(&tenant);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(repos, &link)
            .map_err(|e| BackendError::io("attach the repository directory", &link, e))?;
        if let Some(record) = &server.record {
            log.push(ProcessRecord {
                stdout: format!(
                    "(long-running, shared by this process' embedded clusters; this cluster's repositories are under /{tenant}/; output in {})",
                    server.log_file.display()
                ),
                ..record.clone()
            });
        }
        let gate = super::rest_gate::RestGate::start(server.addr)
            .await
            .map_err(|e| {
                BackendError::Setup(format!("cannot start the REST gate on 127.0.0.1: {e}"))
            })?;
        Ok(Self {
            server,
            gate,
            tenant,
            repos: repos.to_path_buf(),
            link,
        })
    }

    /// The server's address (127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    /// This cluster's gate to the server, where a case holds a request of its pods' restic.
    pub fn gate(&self) -> &super::rest_gate::RestGate {
        &self.gate
    }

    /// This cluster's repository base URL (`rest:http://127.0.0.1:GATE/<tenant>`), through its
    /// gate.
    pub fn base(&self) -> String {
        format!("rest:http://{}/{}", self.gate.addr(), self.tenant)
    }

    /// The directory this cluster's repositories are in.
    pub fn root(&self) -> &Path {
        &self.repos
    }

    /// The server's process, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.server.pid()
    }

    /// The server's log (shared by every tenant).
    pub fn log_file(&self) -> &Path {
        self.server.log_file()
    }

    /// Creates repository `name` from the template ([`write_template`]).
    pub fn create_repository(&self, name: &str) -> Result<(), BackendError> {
        write_template(&self.repos.join(repository_name(name)?))
    }

    /// Detaches this cluster's path; when nothing else uses the server any more (after
    /// [`stop_shared`]), stops it too.
    pub async fn release(self) {
        let server = self.server.clone();
        drop(self);
        if let Ok(server) = Arc::try_unwrap(server) {
            server.stop().await;
        }
    }

    /// Each snapshot file of repository `name` with its modification time (when restic wrote
    /// it); empty when the repository has no snapshot yet.
    pub fn snapshot_write_times(
        &self,
        name: &str,
    ) -> Result<Vec<(String, std::time::SystemTime)>, BackendError> {
        let dir = self.repos.join(repository_name(name)?).join("snapshots");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(BackendError::io("list the snapshots of", &dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| BackendError::io("list the snapshots of", &dir, e))?;
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .map_err(|e| BackendError::io("read the time of", &entry.path(), e))?;
            out.push((entry.file_name().to_string_lossy().into_owned(), modified));
        }
        out.sort();
        Ok(out)
    }

    /// Removes repository `name` (its directory); a missing one is fine.
    pub fn remove_repository(&self, name: &str) -> Result<(), BackendError> {
        let dir = self.repos.join(repository_name(name)?);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(BackendError::io("remove the repository", &dir, e))
            }
            _ => Ok(()),
        }
    }
}

impl Drop for RestTenant {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.link);
    }
}

/// The Kind REST server's manifest (`fixtures/rest-server/rest-server.yaml`): Namespace,
/// Deployment (`rest-server --no-auth`, data in the node's [`super::kind::NODE_BACKUP_REPO`])
/// and Service. `rehearse` applies it with kubectl after either operator's Kind install.
pub const KIND_MANIFEST: &str = include_str!("../../../fixtures/rest-server/rest-server.yaml");

/// [`KIND_MANIFEST`]'s documents.
pub fn kind_manifests() -> Result<Vec<Value>, BackendError> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(KIND_MANIFEST)
        .map(|doc| {
            Value::deserialize(doc).map_err(|e| {
                BackendError::Setup(format!(
                    "fixtures/rest-server/rest-server.yaml does not parse: {e}"
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_served_address_is_read_from_rcloneslog_line() {
        let log = "2026/12/01 NOTICE: Config file not found\n2026/12/01 NOTICE: Local file system at /r: Serving restic REST API on http://127.0.0.1:41871/\n";
        assert_eq!(served_addr(log), Some("127.0.0.1:41871".parse().unwrap()));
        assert_eq!(served_addr("nothing yet"), None);
    }

    #[test]
    fn repository_names_are_one_label() {
        assert_eq!(
            repository_url("rest:http://127.0.0.1:1/", "rh-case-1").unwrap(),
            "rest:http://127.0.0.1:1/rh-case-1"
        );
        for bad in ["", "..", "a/b", "/", "-x", "A"] {
            assert!(repository_url("rest:http://x", bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            kind_base(),
            "rest:http://rest-server.rehearsal-repos.svc.cluster.local:8000"
        );
    }

    /// The Kind manifest serves what [`kind_base`] names, with Gameplane's e2e image, and
    /// stores where the Kind backend removes repositories (and `--backup-repo` is mounted).
    #[test]
    fn the_kind_manifest_serves_the_base_url_from_the_node_directory() {
        let docs = kind_manifests().unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Namespace", "Deployment", "Service"]);
        assert_eq!(docs[0]["metadata"]["name"], KIND_NAMESPACE);
        let deployment = &docs[1];
        assert_eq!(deployment["metadata"]["namespace"], KIND_NAMESPACE);
        let pod = &deployment["spec"]["template"];
        let (key, value) = KIND_APP_LABEL;
        assert_eq!(pod["metadata"]["labels"][key], value);
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["image"], KIND_IMAGE);
        let args: Vec<&str> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "--listen",
                &format!(":{KIND_PORT}"),
                "--no-auth",
                "--path",
                "/data"
            ]
        );
        assert_eq!(container["volumeMounts"][0]["mountPath"], "/data");
        assert_eq!(
            pod["spec"]["volumes"][0]["hostPath"]["path"],
            crate::backend::kind::NODE_BACKUP_REPO
        );
        let service = &docs[2];
        assert_eq!(service["metadata"]["name"], KIND_SERVICE);
        assert_eq!(service["metadata"]["namespace"], KIND_NAMESPACE);
        assert_eq!(service["spec"]["selector"][key], value);
        assert_eq!(service["spec"]["ports"][0]["port"], KIND_PORT);
    }
}
