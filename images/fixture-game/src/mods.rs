//! The mods directory: one `package.json` naming the mod bundle, created on first start.
//!
//! Mods are rebuildable content: backups exclude them, so after a restore the mods volume
//! keeps whatever value it had, which is what the restore-required rollback case checks.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The package file inside the mods directory.
pub const PACKAGE_FILE: &str = "package.json";

/// The contents of `package.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModsPackage {
    /// Always `fixture-mods`.
    pub name: String,
    /// The mods marker value (seeded from `FIXTURE_MODS_MARKER`).
    pub marker: String,
    /// The fixture game version that installed the package.
    pub game_version: String,
}

/// Why the mods directory could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum ModsError {
    /// Writing the package file failed.
    #[error("cannot write {path}: {source} (is the mods volume mounted read-write?)")]
    Write {
        /// The package file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Reading an existing package file failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The package file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An existing package file is not a fixture package.
    #[error("{path} is not a fixture mods package: {source}; remove it to reinstall the mods")]
    Bad {
        /// The package file.
        path: PathBuf,
        /// Why it does not parse.
        source: serde_json::Error,
    },
}

/// Read the package in `dir` or install one with `marker`; returns what is on disk afterwards.
pub fn ensure_package(
    dir: &Path,
    marker: &str,
    game_version: &str,
) -> Result<ModsPackage, ModsError> {
    let path = dir.join(PACKAGE_FILE);
    if path.exists() {
        return read_package(&path);
    }
    let package = ModsPackage {
        name: "fixture-mods".into(),
        marker: marker.into(),
        game_version: game_version.into(),
    };
    let write_err = |source| ModsError::Write {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(write_err)?;
    let mut bytes = serde_json::to_vec_pretty(&package).expect("package serializes");
    bytes.push(b'\n');
    std::fs::write(&path, bytes).map_err(write_err)?;
    Ok(package)
}

/// Read a `package.json`.
pub fn read_package(path: &Path) -> Result<ModsPackage, ModsError> {
    let bytes = std::fs::read(path).map_err(|source| ModsError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| ModsError::Bad {
        path: path.to_owned(),
        source,
    })
}
