//! One world on disk: its manifest, its region data and the two-step save that can be torn.
//!
//! A save writes the region file first (step 1) and the manifest that names the region's
//! generation and checksum second (step 2). Neither write is atomic and nothing orders them
//! for a reader, so a copy taken between the steps has a region from generation `n + 1` and a
//! manifest from generation `n`: [`crate::inspect`] reports it torn.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The world format the 1.x versions read and write.
pub const FORMAT_V1: u32 = 1;
/// The format the format-changing version migrates worlds to.
pub const FORMAT_V2: u32 = 2;
/// The manifest file inside a world directory.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The region file inside a world directory.
pub const REGION_FILE: &str = "region/r.0.0.dat";
/// Written next to the manifest by the format-changing version only.
pub const CANDIDATE_MARKER_FILE: &str = "candidate-only.marker";
/// Filler bytes per region file, so a save is more than one tiny write.
const REGION_FILLER: usize = 16 * 1024;

/// The manifest (`manifest.json`): what the last completed save wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// World format version (1 for versions 1.x, 2 after a format-changing migration).
    pub format: u32,
    /// The world's marker value (seeded from the environment on creation).
    pub marker: String,
    /// Save generation; every save increments it.
    pub generation: u64,
    /// SHA-256 (hex) of the region file this save wrote.
    pub region_sha256: String,
    /// The fixture game version that wrote this save.
    pub written_by: String,
}

/// Why a world could not be read or written; each variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// Reading a world file failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The world file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Writing a world file failed.
    #[error("cannot write {path}: {source} (is the volume mounted read-write and not full?)")]
    Write {
        /// The world file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The manifest is not valid JSON of the expected shape.
    #[error(
        "{path} is not a fixture world manifest: {source}; restore the volume or remove the file to recreate the world"
    )]
    BadManifest {
        /// The manifest file.
        path: PathBuf,
        /// Why it does not parse.
        source: serde_json::Error,
    },
    /// The world was written by a newer format than this version reads.
    #[error(
        "{path}: world format {found} is newer than this server (format {supported}); restore a backup taken before the upgrade"
    )]
    NewerFormat {
        /// The manifest file.
        path: PathBuf,
        /// The format the world was written in.
        found: u32,
        /// The newest format this server reads.
        supported: u32,
    },
}

/// The header line of a region file: which format and generation its bytes belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionHeader {
    /// Format the region was encoded in.
    pub format: u32,
    /// Save generation the region belongs to.
    pub generation: u64,
}

/// The bytes of a region file for a given format, marker and generation.
pub fn encode_region(format: u32, marker: &str, generation: u64) -> Vec<u8> {
    let mut out =
        format!("FXREGION format={format} generation={generation}\nmarker={marker}\n").into_bytes();
    // Deterministic filler that differs per generation (and per format, whose encoding differs).
    let mut block = Sha256::new()
        .chain_update(marker.as_bytes())
        .chain_update(generation.to_le_bytes())
        .finalize()
        .to_vec();
    while out.len() < REGION_FILLER {
        block = Sha256::digest(&block).to_vec();
        if format == FORMAT_V1 {
            out.extend_from_slice(hex::encode(&block).as_bytes());
            out.push(b'\n');
        } else {
            out.extend_from_slice(&block);
        }
    }
    out
}

/// Parse the header line of a region file (`None` if it is not one, e.g. cut short).
pub fn parse_region_header(bytes: &[u8]) -> Option<RegionHeader> {
    let line_end = bytes.iter().position(|b| *b == b'\n')?;
    let line = std::str::from_utf8(&bytes[..line_end]).ok()?;
    let mut parts = line.split(' ');
    if parts.next()? != "FXREGION" {
        return None;
    }
    let format = parts.next()?.strip_prefix("format=")?.parse().ok()?;
    let generation = parts.next()?.strip_prefix("generation=")?.parse().ok()?;
    Some(RegionHeader { format, generation })
}

/// Read and parse a manifest file.
pub fn read_manifest(path: &Path) -> Result<Manifest, WorldError> {
    let bytes = std::fs::read(path).map_err(|source| WorldError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| WorldError::BadManifest {
        path: path.to_owned(),
        source,
    })
}

/// A world the server owns: its directory and the state the next save writes.
#[derive(Debug)]
pub struct World {
    name: String,
    dir: PathBuf,
    state: Manifest,
    pending_region_sha256: Option<String>,
}

/// Whether [`World::open_or_create`] found a world or seeded a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// A manifest existed and was read.
    Existing,
    /// No manifest: a fresh world was created from the seed marker.
    Created,
}

impl World {
    /// Open the world in `dir`, or seed a format-1 world there with `seed_marker`.
    ///
    /// A new world is saved once (both steps) before this returns, so the volume always holds
    /// a consistent world after the first start.
    pub async fn open_or_create(
        name: &str,
        dir: &Path,
        seed_marker: &str,
        game_version: &str,
    ) -> Result<(World, Opened), WorldError> {
        let manifest_path = dir.join(MANIFEST_FILE);
        if manifest_path.exists() {
            let state = read_manifest(&manifest_path)?;
            let world = World {
                name: name.to_owned(),
                dir: dir.to_owned(),
                state,
                pending_region_sha256: None,
            };
            return Ok((world, Opened::Existing));
        }
        let mut world = World {
            name: name.to_owned(),
            dir: dir.to_owned(),
            state: Manifest {
                format: FORMAT_V1,
                marker: seed_marker.to_owned(),
                generation: 0,
                region_sha256: String::new(),
                written_by: game_version.to_owned(),
            },
            pending_region_sha256: None,
        };
        world.save_step_region(game_version).await?;
        world.save_step_manifest().await?;
        Ok((world, Opened::Created))
    }

    /// The world's name (`world` for the primary world, the configured name for extras).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The world directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The state as of the last completed save (or as changed since, for the next save).
    pub fn state(&self) -> &Manifest {
        &self.state
    }

    /// Refuse a world whose format is newer than `supported`.
    pub fn check_format(&self, supported: u32) -> Result<(), WorldError> {
        if self.state.format > supported {
            return Err(WorldError::NewerFormat {
                path: self.dir.join(MANIFEST_FILE),
                found: self.state.format,
                supported,
            });
        }
        Ok(())
    }

    /// Change the marker; the next save writes it.
    pub fn set_marker(&mut self, marker: &str) {
        self.state.marker = marker.to_owned();
    }

    /// Migrate to `format`: the next save writes the new encoding; the candidate-only marker
    /// file is written now, so it exists whenever a format-2 manifest may.
    pub async fn migrate(&mut self, format: u32, game_version: &str) -> Result<(), WorldError> {
        let path = self.dir.join(CANDIDATE_MARKER_FILE);
        let text = format!(
            "world migrated to format {format} by fixture game {game_version}; only the candidate wrote this\n"
        );
        write_file(&path, text.as_bytes()).await?;
        self.state.format = format;
        Ok(())
    }

    /// Save step 1: write the region file of the next generation (not atomic).
    pub async fn save_step_region(&mut self, game_version: &str) -> Result<(), WorldError> {
        let generation = self.state.generation + 1;
        let bytes = encode_region(self.state.format, &self.state.marker, generation);
        write_file(&self.dir.join(REGION_FILE), &bytes).await?;
        self.state.generation = generation;
        self.state.written_by = game_version.to_owned();
        self.pending_region_sha256 = Some(hex::encode(Sha256::digest(&bytes)));
        Ok(())
    }

    /// Save step 2: write the manifest naming the region written by step 1 (not atomic).
    pub async fn save_step_manifest(&mut self) -> Result<(), WorldError> {
        if let Some(sha) = self.pending_region_sha256.take() {
            self.state.region_sha256 = sha;
        }
        let mut bytes = serde_json::to_vec_pretty(&self.state).expect("manifest serializes");
        bytes.push(b'\n');
        write_file(&self.dir.join(MANIFEST_FILE), &bytes).await
    }
}

/// Truncate-and-write, deliberately without a rename: the game's saves are not atomic.
async fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WorldError> {
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|source| WorldError::Write {
                path: parent.to_owned(),
                source,
            })?;
    }
    tokio::fs::write(path, bytes)
        .await
        .map_err(|source| WorldError::Write {
            path: path.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_header_round_trips_and_rejects_cut_files() {
        let bytes = encode_region(2, "m", 41);
        assert_eq!(
            parse_region_header(&bytes),
            Some(RegionHeader {
                format: 2,
                generation: 41
            })
        );
        assert_eq!(parse_region_header(&bytes[..10]), None);
        assert_ne!(encode_region(1, "m", 41), bytes);
    }
}
