//! Read-back of a volume: what kind of fixture data it holds, a content digest, the marker,
//! the world format, whether the candidate-only marker is present and whether the save on it
//! is torn. `fixture-game inspect PATH…` prints one [`Inspection`] per path as one JSON line
//! each (JSON Lines, in argument order); the harness parses them with these types.
//!
//! A PATH may be a data directory (the primary world is `PATH/world/`), a world directory
//! (an extra world's mount: `PATH/manifest.json`) or a mods directory (`PATH/package.json`).
//! The digest is SHA-256 over every file below PATH except the top-level `logs/` directory, in
//! sorted path order, each as `path NUL length(u64 LE) contents`; two volumes with the same
//! digest hold the same world data.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::audit::LOG_DIR;
use crate::mods::{self, PACKAGE_FILE};
use crate::serve::PRIMARY_WORLD_DIR;
use crate::world::{self, CANDIDATE_MARKER_FILE, MANIFEST_FILE, REGION_FILE};

/// What a volume holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A fixture world (a data directory or an extra world directory).
    World,
    /// A mods directory with `package.json`.
    Mods,
    /// No files at all (apart from `logs/`).
    Empty,
    /// Files, but neither a world nor a mods package.
    Other,
}

/// The read-back of one path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inspection {
    /// The path as given.
    pub path: PathBuf,
    /// What the path holds.
    pub kind: Kind,
    /// Content digest (hex SHA-256, see the module docs).
    pub digest: String,
    /// Number of files in the digest.
    pub files: usize,
    /// The world's or mods package's marker value.
    pub marker: Option<String>,
    /// World format version (worlds only).
    pub format: Option<u32>,
    /// Whether the candidate-only marker file is present (worlds only).
    pub candidate_marker: bool,
    /// Whether the save is torn: region and manifest disagree on generation or checksum, or
    /// one of them is missing or unreadable.
    pub torn: bool,
    /// Save generation named by the manifest (worlds only).
    pub generation: Option<u64>,
    /// The fixture game version that wrote the data.
    pub written_by: Option<String>,
    /// Why the data is torn or unreadable, when it is.
    pub problem: Option<String>,
}

/// Why a path could not be inspected at all.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The path does not exist.
    #[error("{path} does not exist (is the volume mounted there?)")]
    Missing {
        /// The path asked for.
        path: PathBuf,
    },
    /// Listing or reading a file failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file or directory that could not be read.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Inspect one path.
pub fn inspect(path: &Path) -> Result<Inspection, InspectError> {
    if !path.exists() {
        return Err(InspectError::Missing {
            path: path.to_owned(),
        });
    }
    let (digest, files) = digest(path)?;
    let mut report = Inspection {
        path: path.to_owned(),
        kind: Kind::Other,
        digest,
        files,
        marker: None,
        format: None,
        candidate_marker: false,
        torn: false,
        generation: None,
        written_by: None,
        problem: None,
    };
    let world_dir = [path.join(PRIMARY_WORLD_DIR), path.to_owned()]
        .into_iter()
        .find(|d| d.join(MANIFEST_FILE).exists() || d.join(REGION_FILE).exists());
    if let Some(dir) = world_dir {
        report.kind = Kind::World;
        report.candidate_marker = dir.join(CANDIDATE_MARKER_FILE).exists();
        inspect_world(&dir, &mut report);
    } else if path.join(PACKAGE_FILE).exists() {
        report.kind = Kind::Mods;
        match mods::read_package(&path.join(PACKAGE_FILE)) {
            Ok(p) => {
                report.marker = Some(p.marker);
                report.written_by = Some(p.game_version);
            }
            Err(e) => report.problem = Some(e.to_string()),
        }
    } else if files == 0 {
        report.kind = Kind::Empty;
    }
    Ok(report)
}

fn inspect_world(dir: &Path, report: &mut Inspection) {
    let manifest = match world::read_manifest(&dir.join(MANIFEST_FILE)) {
        Ok(m) => m,
        Err(e) => {
            report.torn = true;
            report.problem = Some(e.to_string());
            return;
        }
    };
    report.marker = Some(manifest.marker.clone());
    report.format = Some(manifest.format);
    report.generation = Some(manifest.generation);
    report.written_by = Some(manifest.written_by.clone());
    let region_path = dir.join(REGION_FILE);
    let region = match std::fs::read(&region_path) {
        Ok(bytes) => bytes,
        Err(e) => {
            report.torn = true;
            report.problem = Some(format!("cannot read {}: {e}", region_path.display()));
            return;
        }
    };
    let sha = hex::encode(Sha256::digest(&region));
    let header = world::parse_region_header(&region);
    let problem = match header {
        None => Some(format!(
            "{} has no region header (cut short?)",
            region_path.display()
        )),
        Some(h) if h.generation != manifest.generation => Some(format!(
            "region is generation {} but the manifest names generation {}",
            h.generation, manifest.generation
        )),
        Some(h) if h.format != manifest.format => Some(format!(
            "region is format {} but the manifest says format {}",
            h.format, manifest.format
        )),
        Some(_) if sha != manifest.region_sha256 => {
            Some("region checksum does not match the manifest".to_owned())
        }
        Some(_) => None,
    };
    report.torn = problem.is_some();
    report.problem = problem;
}

/// Digest every file below `root` except the top-level `logs/` (see the module docs).
pub fn digest(root: &Path) -> Result<(String, usize), InspectError> {
    let mut files = Vec::new();
    collect(root, root, &mut files)?;
    files.sort();
    let mut hasher = Sha256::new();
    for rel in &files {
        let path = root.join(rel);
        let bytes = std::fs::read(&path).map_err(|source| InspectError::Read { path, source })?;
        hasher.update(rel.to_string_lossy().as_bytes());
        hasher.update([0u8]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok((hex::encode(hasher.finalize()), files.len()))
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), InspectError> {
    let read_err = |source| InspectError::Read {
        path: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let path = entry.path();
        let rel = path.strip_prefix(root).expect("below root").to_owned();
        if dir == root && rel == Path::new(LOG_DIR) {
            continue;
        }
        let kind = entry.file_type().map_err(read_err)?;
        if kind.is_dir() {
            collect(root, &path, out)?;
        } else if kind.is_file() {
            out.push(rel);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn digest_ignores_top_level_logs_but_not_other_changes() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "world/a", b"1");
        let (base, files) = digest(dir.path()).unwrap();
        assert_eq!(files, 1);
        write(dir.path(), "logs/rcon-audit.jsonl", b"{}");
        assert_eq!(
            digest(dir.path()).unwrap().0,
            base,
            "logs/ is not world data"
        );
        write(dir.path(), "world/logs/x", b"");
        assert_ne!(
            digest(dir.path()).unwrap().0,
            base,
            "only the top-level logs/ is skipped"
        );
    }

    #[test]
    fn kinds_are_told_apart() {
        let empty = tempfile::tempdir().unwrap();
        write(empty.path(), "logs/incarnation", b"x");
        assert_eq!(inspect(empty.path()).unwrap().kind, Kind::Empty);

        let mods = tempfile::tempdir().unwrap();
        crate::mods::ensure_package(mods.path(), "m-1", "1.0").unwrap();
        let report = inspect(mods.path()).unwrap();
        assert_eq!(
            (report.kind, report.marker.as_deref()),
            (Kind::Mods, Some("m-1"))
        );

        let other = tempfile::tempdir().unwrap();
        write(other.path(), "lost+found/x", b"");
        assert_eq!(inspect(other.path()).unwrap().kind, Kind::Other);

        let missing = other.path().join("nope");
        assert!(matches!(
            inspect(&missing),
            Err(InspectError::Missing { .. })
        ));
    }

    #[tokio::test]
    async fn a_cut_short_region_is_torn_and_a_complete_save_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, _) =
            world::World::open_or_create("world", &dir.path().join("world"), "w", "1.0")
                .await
                .unwrap();
        let report = inspect(dir.path()).unwrap();
        assert_eq!(report.kind, Kind::World);
        assert!(!report.torn, "{report:?}");
        assert_eq!(
            (report.marker.as_deref(), report.generation),
            (Some("w"), Some(1))
        );

        world.save_step_region("1.0").await.unwrap();
        let between = inspect(dir.path()).unwrap();
        assert!(between.torn, "{between:?}");

        world.save_step_manifest().await.unwrap();
        let region = dir.path().join("world").join(REGION_FILE);
        let bytes = std::fs::read(&region).unwrap();
        std::fs::write(&region, &bytes[..bytes.len() / 2]).unwrap();
        let cut = inspect(dir.path()).unwrap();
        assert!(cut.torn, "{cut:?}");
        assert_eq!(
            cut.problem.as_deref(),
            Some("region checksum does not match the manifest")
        );
    }
}
