//! The image catalogue: what an image reference means on the embedded node.
//!
//! There is no image store. An image reference (`repo:tag` or `repo@sha256:…`) maps to a local
//! executable plus the parts of an image config the kubelet needs (entrypoint, cmd, env). A
//! reference the catalogue does not know is what a failed pull is on a real node: `ErrImagePull`.
//!
//! Two digests, as a registry has them:
//! - the **image id** ([`Image::digest`]): the digest of the image's config blob, which names
//!   the executable's bytes as its one layer — what `podman images` shows as the ID;
//! - the **manifest digest** ([`ResolvedImage::manifest_digest`]): the digest of the manifest
//!   document that names the config blob and the layer — what a registry answers in
//!   `Docker-Content-Digest`, what `repo@sha256:…` pins and what a node reports as `imageID`
//!   after a pull. An insert keyed by a digest (`repo@sha256:…`) is given that manifest digest
//!   (one read from a real registry); any other insert publishes the image, computing it.
//!
//! A `repo@sha256:<d>` reference resolves only when `<d>` is a manifest digest of that
//! repository, never through the image id: a reference pinned by the wrong digest fails to
//! pull here as it does on a Kind node pulling from a registry.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// What an image reference resolves to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// The host executable the image stands for; it is bound read-only at its own path.
    pub executable: PathBuf,
    /// The image's ENTRYPOINT (empty: none).
    pub entrypoint: Vec<String>,
    /// The image's CMD.
    pub cmd: Vec<String>,
    /// The image's ENV, before the container's own env.
    pub env: Vec<(String, String)>,
    /// A host directory that becomes `/bin` in the sandbox (busybox's applets), if any.
    pub bin_dir: Option<PathBuf>,
    /// `sha256:<hex>` over the executable's bytes and the config above.
    pub digest: String,
}

impl Image {
    /// An image whose digest is computed when first resolved.
    fn deferred(
        executable: PathBuf,
        entrypoint: Vec<String>,
        cmd: Vec<String>,
        env: Vec<(String, String)>,
    ) -> Self {
        Self {
            executable,
            entrypoint,
            cmd,
            env,
            bin_dir: None,
            digest: String::new(),
        }
    }

    /// An image for `executable` with the given config; the digest is computed here.
    pub fn new(
        executable: impl Into<PathBuf>,
        entrypoint: Vec<String>,
        cmd: Vec<String>,
        env: Vec<(String, String)>,
    ) -> std::io::Result<Self> {
        let executable = executable.into();
        let digest = digest_of(&executable, &entrypoint, &cmd, &env)?;
        Ok(Self {
            executable,
            entrypoint,
            cmd,
            env,
            bin_dir: None,
            digest,
        })
    }
}

/// An image reference resolved against the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedImage {
    /// The image.
    pub image: Image,
    /// `<repo>@<manifest digest>`, reported as the container status' `imageID` (a node
    /// reports the repository digest of what it pulled).
    pub image_id: String,
    /// The registry's manifest digest (`sha256:…`): what a digest-pinned reference names.
    pub manifest_digest: String,
}

/// A workspace image: reference, binary name, cmd, env.
type WorkspaceImage = (String, &'static str, Vec<String>, Vec<(String, String)>);

/// Maps image references to local executables. Cheap to clone; clones share entries, so an
/// image inserted while the cluster runs is pullable from then on.
#[derive(Clone, Debug, Default)]
pub struct ImageCatalogue {
    entries: Arc<RwLock<HashMap<String, Arc<Entry>>>>,
}

/// A catalogue entry whose digests may still be pending: hashing tens of megabytes of
/// workspace binary is deferred until a pod first uses the image, so a cluster starts fast.
#[derive(Debug)]
struct Entry {
    image: Image,
    /// A manifest digest the catalogue was given (an insert keyed by `repo@sha256:…`).
    given_manifest: Option<String>,
    /// The image id and manifest digest, once computed (`None`: the executable is unreadable).
    digests: OnceLock<Option<(String, String)>>,
}

impl Entry {
    fn ready(image: Image, given_manifest: Option<String>) -> Self {
        Self {
            image,
            given_manifest,
            digests: OnceLock::new(),
        }
    }

    fn lazy(image: Image) -> Self {
        Self::ready(image, None)
    }

    /// The image with its id, and its manifest digest; `None` when the executable cannot be
    /// read.
    fn materialize(&self) -> Option<(Image, String)> {
        let digests = self.digests.get_or_init(|| {
            let i = &self.image;
            let computed = if i.digest.is_empty() {
                digest_of(&i.executable, &i.entrypoint, &i.cmd, &i.env)
            } else {
                Ok(i.digest.clone())
            };
            let both = computed.and_then(|id| {
                let manifest = match &self.given_manifest {
                    Some(given) => given.clone(),
                    None => manifest_digest(&i.executable, &id, &i.entrypoint, &i.cmd, &i.env)?,
                };
                Ok((id, manifest))
            });
            match both {
                Ok(d) => Some(d),
                Err(error) => {
                    tracing::warn!(%error, executable = %i.executable.display(), "cannot read image executable: the image is unknown");
                    None
                }
            }
        });
        let (id, manifest) = digests.clone()?;
        Some((
            Image {
                digest: id,
                ..self.image.clone()
            },
            manifest,
        ))
    }
}

/// The name of a reference without tag or digest, after Docker Hub normalisation.
fn split_reference(reference: &str) -> (String, Option<String>, Option<String>) {
    let mut rest = reference.trim();
    for prefix in [
        "docker.io/library/",
        "docker.io/",
        "index.docker.io/library/",
    ] {
        if let Some(stripped) = rest.strip_prefix(prefix) {
            rest = stripped;
            break;
        }
    }
    let (name_tag, digest) = match rest.split_once('@') {
        Some((a, d)) => (a, Some(d.to_string())),
        None => (rest, None),
    };
    // A colon after the last slash is a tag; one before it belongs to a registry port.
    let last_slash = name_tag.rfind('/').map(|i| i + 1).unwrap_or(0);
    match name_tag[last_slash..].rfind(':') {
        Some(i) => (
            name_tag[..last_slash + i].to_string(),
            Some(name_tag[last_slash + i + 1..].to_string()),
            digest,
        ),
        None => (name_tag.to_string(), None, digest),
    }
}

impl ImageCatalogue {
    /// An empty catalogue.
    pub fn new() -> Self {
        Self::default()
    }

    /// The catalogue with busybox, restic and the workspace's own images (those whose binary
    /// is found; see [`locate_workspace_binary`]).
    #[expect(
        clippy::too_many_lines,
        reason = "the catalogue itself: one entry per image the embedded node can run"
    )]
    pub fn with_defaults() -> Self {
        let catalogue = Self::new();
        let busybox = Path::new("/usr/bin/busybox");
        if busybox.exists() {
            match busybox_image(busybox) {
                Ok(image) => catalogue.insert("busybox:*", image),
                Err(error) => tracing::warn!(%error, "busybox image unavailable"),
            }
        } else {
            tracing::warn!(
                "/usr/bin/busybox not found: image busybox:* is unknown (install Debian package `busybox`)"
            );
        }
        let restic = Path::new("/usr/bin/restic");
        if restic.exists() {
            catalogue.insert_entry(
                "restic/restic:*",
                Entry::lazy(Image::deferred(
                    restic.to_path_buf(),
                    vec!["/usr/bin/restic".into()],
                    vec![],
                    vec![],
                )),
            );
        } else {
            tracing::warn!(
                "/usr/bin/restic not found: image restic/restic:* is unknown (install Debian package `restic`)"
            );
        }
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let game: [(&str, Vec<(String, String)>); 7] = [
            (
                "1.0",
                env(&[("FIXTURE_MODE", "normal"), ("FIXTURE_GAME_VERSION", "1.0")]),
            ),
            (
                "1.1-compat",
                env(&[("FIXTURE_MODE", "compat"), ("FIXTURE_GAME_VERSION", "1.1")]),
            ),
            (
                "2.0-format",
                env(&[("FIXTURE_MODE", "format"), ("FIXTURE_GAME_VERSION", "2.0")]),
            ),
            (
                "http-only",
                env(&[
                    ("FIXTURE_MODE", "http-only"),
                    ("FIXTURE_GAME_VERSION", "1.0"),
                ]),
            ),
            (
                "crash",
                env(&[("FIXTURE_MODE", "crash"), ("FIXTURE_GAME_VERSION", "1.0")]),
            ),
            // Negative rollout candidates: the join fails at login, or in configuration.
            (
                "refuse-login",
                env(&[
                    ("FIXTURE_MODE", "refuse-login"),
                    ("FIXTURE_GAME_VERSION", "1.0"),
                ]),
            ),
            (
                "stall-configuration",
                env(&[
                    ("FIXTURE_MODE", "stall-configuration"),
                    ("FIXTURE_GAME_VERSION", "1.0"),
                ]),
            ),
        ];
        let workspace: Vec<WorkspaceImage> = game
            .into_iter()
            .map(|(tag, env)| {
                (
                    format!("rehearsal.local/fixture-game:{tag}"),
                    "fixture-game",
                    vec!["serve".to_string()],
                    env,
                )
            })
            .chain([
                (
                    "rehearsal.local/fixture-agent:1.0".to_string(),
                    "fixture-game",
                    vec!["agent".to_string()],
                    vec![],
                ),
                (
                    "rehearsal.local/fixture-agent:legacy".to_string(),
                    "fixture-game",
                    vec!["agent".to_string()],
                    env(&[("FIXTURE_AGENT_LEGACY", "1")]),
                ),
                (
                    "rehearsal.local/reference-operator:dev".to_string(),
                    "reference-operator",
                    vec![],
                    vec![],
                ),
            ])
            .collect();
        for (reference, binary, cmd, env) in workspace {
            let Some(path) = locate_workspace_binary(binary) else {
                tracing::warn!(
                    binary,
                    image = %reference,
                    "workspace binary not found (build it with `cargo build -p {binary}` or set REHEARSAL_BIN_DIR): the image is unknown"
                );
                continue;
            };
            let entrypoint = vec![path.to_string_lossy().into_owned()];
            // The built image has its binary on `PATH` (/usr/local/bin), so a probe or exec
            // can name it bare (`fixture-game ready`); here its directory comes first.
            let mut env = env;
            if let Some(dir) = path.parent() {
                env.push((
                    "PATH".to_string(),
                    format!("{}:{WORKSPACE_IMAGE_PATH}", dir.display()),
                ));
            }
            catalogue.insert_entry(
                &reference,
                Entry::lazy(Image::deferred(path, entrypoint, cmd, env)),
            );
        }
        catalogue
    }

    /// Adds or replaces an image. `reference` is `repo:tag`, `repo@sha256:…` or `repo:*`
    /// (every tag of `repo`).
    /// An insert keyed by a digest is given that digest as the image's manifest digest (as
    /// read from a registry); any other insert publishes the image, its manifest digest computed
    /// from its manifest document.
    pub fn insert(&self, reference: &str, image: Image) {
        let (_, _, digest) = split_reference(reference);
        self.insert_entry(reference, Entry::ready(image, digest));
    }

    fn insert_entry(&self, reference: &str, entry: Entry) {
        let (repo, tag, digest) = split_reference(reference);
        let key = match (tag, digest) {
            (_, Some(digest)) => format!("{repo}@{digest}"),
            (Some(tag), None) => format!("{repo}:{tag}"),
            (None, None) => format!("{repo}:latest"),
        };
        self.entries
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, Arc::new(entry));
    }

    /// Resolves a reference, or `None` when the node could not pull it.
    pub fn resolve(&self, reference: &str) -> Option<ResolvedImage> {
        let (repo, tag, digest) = split_reference(reference);
        let entries: Vec<(String, Arc<Entry>)> = self
            .entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let get = |key: &str| {
            entries
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, e)| e.clone())
        };
        let (image, manifest_digest) = match &digest {
            // A digest pins a manifest: an entry of this repo given that digest, or one whose
            // manifest has it. The image id is no manifest digest and never matches.
            Some(digest) => get(&format!("{repo}@{digest}"))
                .and_then(|e| e.materialize())
                .or_else(|| {
                    entries
                        .iter()
                        .filter(|(key, _)| key_repo(key) == repo)
                        .filter_map(|(_, e)| e.materialize())
                        .find(|(_, manifest)| manifest == digest)
                }),
            None => {
                let tag = tag.unwrap_or_else(|| "latest".to_string());
                get(&format!("{repo}:{tag}"))
                    .or_else(|| get(&format!("{repo}:*")))
                    .and_then(|e| e.materialize())
            }
        }?;
        Some(ResolvedImage {
            image_id: format!("{repo}@{manifest_digest}"),
            image,
            manifest_digest,
        })
    }

    /// Every reference the catalogue holds, sorted.
    pub fn references(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    }
}

fn key_repo(key: &str) -> &str {
    match key.split_once('@') {
        Some((repo, _)) => repo,
        None => {
            let last_slash = key.rfind('/').map(|i| i + 1).unwrap_or(0);
            match key[last_slash..].rfind(':') {
                Some(i) => &key[..last_slash + i],
                None => key,
            }
        }
    }
}

/// `PATH` of the workspace images after their binary's directory: the container runtimes'
/// default, which the Dockerfile's images have with `/usr/local/bin/<binary>` on it.
const WORKSPACE_IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Finds a binary built by this workspace: `$REHEARSAL_BIN_DIR`, next to the running
/// executable, in its parent (test binaries live in `target/debug/deps/`), then `$PATH`.
pub fn locate_workspace_binary(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("REHEARSAL_BIN_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        dirs.push(dir.to_path_buf());
        if let Some(parent) = dir.parent() {
            dirs.push(parent.to_path_buf());
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.into_iter()
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Applets linked into busybox's `/bin`, so `sh`, `httpd` or `nc` mean busybox as in its image.
const BUSYBOX_APPLETS: &[&str] = &[
    "sh",
    "ash",
    "sleep",
    "echo",
    "cat",
    "ls",
    "httpd",
    "nc",
    "wget",
    "touch",
    "mkdir",
    "rm",
    "cp",
    "mv",
    "test",
    "[",
    "[[",
    "true",
    "false",
    "env",
    "date",
    "grep",
    "sed",
    "awk",
    "head",
    "tail",
    "wc",
    "printf",
    "kill",
    "ps",
    "id",
    "hostname",
    "tar",
    "gzip",
    "gunzip",
    "find",
    "stat",
    "df",
    "du",
    "chmod",
    "chown",
    "ln",
    "sync",
    "tee",
    "yes",
    "seq",
    "uname",
    "whoami",
    "sha256sum",
    "md5sum",
    "xargs",
    "cut",
    "sort",
    "uniq",
    "tr",
    "basename",
    "dirname",
    "readlink",
    "realpath",
    "pwd",
    "timeout",
    "nslookup",
    "ping",
    "netstat",
    "vi",
    "dd",
    "od",
    "hexdump",
    "base64",
    "expr",
    "usleep",
    "watch",
    "nohup",
    "which",
    "busybox",
    "rmdir",
    "mktemp",
    "diff",
    "cmp",
    "less",
    "more",
    "top",
    "free",
    "uptime",
    "nproc",
    "sha1sum",
    "xxd",
    "fold",
    "rev",
    "nl",
];

fn busybox_image(busybox: &Path) -> std::io::Result<Image> {
    let mut image = Image::new(
        busybox,
        vec![],
        vec!["sh".into()],
        vec![("PATH".into(), "/bin:/sbin:/usr/bin:/usr/sbin".into())],
    )?;
    let hex = image.digest.trim_start_matches("sha256:");
    let dir = std::env::temp_dir()
        .join("rehearsal-embedded")
        .join("images")
        .join(format!("busybox-{}", &hex[..12]))
        .join("bin");
    if !dir.join("busybox").exists() {
        std::fs::create_dir_all(&dir)?;
        for applet in BUSYBOX_APPLETS {
            let link = dir.join(applet);
            // Parallel test processes create the same links: an existing one is fine.
            match std::os::unix::fs::symlink("/usr/bin/busybox", &link) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
    }
    image.bin_dir = Some(dir);
    Ok(image)
}

type DigestCache = Mutex<HashMap<(PathBuf, u64, SystemTime), String>>;

/// Hash of an executable's bytes; cached per (path, size, mtime) because the workspace
/// binaries are tens of megabytes and a process starts several clusters.
fn file_hash(path: &Path) -> std::io::Result<String> {
    static CACHE: OnceLock<DigestCache> = OnceLock::new();
    let meta = std::fs::metadata(path)?;
    let key = (path.to_path_buf(), meta.len(), meta.modified()?);
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hash) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(hash.clone());
    }
    // Across processes too: every nextest test process would otherwise hash the same
    // binaries again. The key is what make trusts: path, size and modification time.
    let mtime = key
        .2
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let path_hash = hex::encode(Sha256::digest(path.as_os_str().as_encoded_bytes()));
    let disk = std::env::temp_dir()
        .join("rehearsal-embedded")
        .join("digests")
        .join(format!("{}-{}-{mtime}", &path_hash[..16], key.1));
    let hash = match std::fs::read_to_string(&disk) {
        Ok(hash) if hash.len() == 64 => hash,
        _ => {
            let bytes = std::fs::read(path)?;
            let hash = hex::encode(Sha256::digest(&bytes));
            if let Some(dir) = disk.parent()
                && std::fs::create_dir_all(dir).is_ok()
            {
                // Write then rename, so a parallel reader never sees half a digest.
                let tmp = disk.with_extension(format!("tmp{}", std::process::id()));
                if std::fs::write(&tmp, &hash).is_ok() {
                    let _ = std::fs::rename(&tmp, &disk);
                }
            }
            hash
        }
    };
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, hash.clone());
    Ok(hash)
}

/// The image's config blob (OCI image config): its one layer is the executable's bytes.
fn config_blob(
    layer: &str,
    entrypoint: &[String],
    cmd: &[String],
    env: &[(String, String)],
) -> Vec<u8> {
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    serde_json::json!({
        "architecture": std::env::consts::ARCH,
        "os": "linux",
        "config": { "Entrypoint": entrypoint, "Cmd": cmd, "Env": env },
        "rootfs": { "type": "layers", "diff_ids": [format!("sha256:{layer}")] },
    })
    .to_string()
    .into_bytes()
}

/// The image id: the digest of the config blob.
fn digest_of(
    executable: &Path,
    entrypoint: &[String],
    cmd: &[String],
    env: &[(String, String)],
) -> std::io::Result<String> {
    let blob = config_blob(&file_hash(executable)?, entrypoint, cmd, env);
    Ok(format!("sha256:{}", hex::encode(Sha256::digest(&blob))))
}

/// The manifest digest: the digest of the manifest document a registry serves for the image,
/// which names the config blob (by the image id `id`) and the one layer.
fn manifest_digest(
    executable: &Path,
    id: &str,
    entrypoint: &[String],
    cmd: &[String],
    env: &[(String, String)],
) -> std::io::Result<String> {
    let layer = file_hash(executable)?;
    let size = std::fs::metadata(executable)?.len();
    let config = config_blob(&layer, entrypoint, cmd, env);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": id,
            "size": config.len(),
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": format!("sha256:{layer}"),
            "size": size,
        }],
    })
    .to_string();
    Ok(format!("sha256:{}", hex::encode(Sha256::digest(manifest))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh_image(env: &str) -> Image {
        Image::new(
            "/usr/bin/busybox",
            vec![],
            vec!["sh".into()],
            vec![("X".into(), env.into())],
        )
        .unwrap()
    }

    #[test]
    fn tags_wildcards_and_digests_resolve() {
        let catalogue = ImageCatalogue::new();
        catalogue.insert("example.local:5000/app:1.0", sh_image("a"));
        catalogue.insert("busybox:*", sh_image("b"));
        let app = catalogue.resolve("example.local:5000/app:1.0").unwrap();
        assert_eq!(
            app.image_id,
            format!("example.local:5000/app@{}", app.manifest_digest)
        );
        let by_digest = catalogue
            .resolve(&format!("example.local:5000/app@{}", app.manifest_digest))
            .unwrap();
        assert_eq!(by_digest.image, app.image);
        // The image id is not a manifest digest: pinning it is a failed pull.
        assert_ne!(app.image.digest, app.manifest_digest);
        assert!(
            catalogue
                .resolve(&format!("example.local:5000/app@{}", app.image.digest))
                .is_none()
        );
        // The manifest digest of another repository does not resolve here either.
        assert!(
            catalogue
                .resolve(&format!("example.local:5000/other@{}", app.manifest_digest))
                .is_none()
        );
        assert_eq!(
            catalogue
                .resolve("docker.io/library/busybox:1.36")
                .unwrap()
                .image
                .env[0]
                .1,
            "b"
        );
        assert_eq!(catalogue.resolve("busybox").unwrap().image.env[0].1, "b");
        assert!(catalogue.resolve("example.local:5000/app:2.0").is_none());
        assert!(catalogue.resolve("nosuch/image:1").is_none());
        assert!(
            catalogue
                .resolve("example.local:5000/app@sha256:0000")
                .is_none()
        );
    }

    /// A digest the catalogue was given (read from a real registry) pins the image; the
    /// node then reports it as the imageID.
    #[test]
    fn a_given_manifest_digest_resolves_and_is_reported() {
        let catalogue = ImageCatalogue::new();
        let given = format!("sha256:{}", "ab".repeat(32));
        catalogue.insert(&format!("127.0.0.1:5000/app@{given}"), sh_image("a"));
        let pinned = catalogue
            .resolve(&format!("127.0.0.1:5000/app@{given}"))
            .unwrap();
        assert_eq!(pinned.manifest_digest, given);
        assert_eq!(pinned.image_id, format!("127.0.0.1:5000/app@{given}"));
        assert!(
            catalogue
                .resolve(&format!("127.0.0.1:5000/app@{}", pinned.image.digest))
                .is_none()
        );
    }

    #[test]
    fn digest_is_stable_and_depends_on_config() {
        assert_eq!(sh_image("a").digest, sh_image("a").digest);
        assert_ne!(sh_image("a").digest, sh_image("b").digest);
        assert!(sh_image("a").digest.starts_with("sha256:"));
    }

    #[test]
    fn defaults_include_busybox_and_restic() {
        let catalogue = ImageCatalogue::with_defaults();
        let busybox = catalogue.resolve("busybox:1.36").unwrap();
        assert_eq!(busybox.image.cmd, vec!["sh".to_string()]);
        assert!(busybox.image.bin_dir.unwrap().join("httpd").exists());
        let restic = catalogue.resolve("restic/restic:0.17.0").unwrap();
        assert_eq!(restic.image.entrypoint, vec!["/usr/bin/restic".to_string()]);
    }
}
