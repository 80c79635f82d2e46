//! The RCON audit log: one JSON line per RCON command at `<data>/logs/rcon-audit.jsonl`, each
//! tagged with the incarnation (a fresh id per process start), so evidence can show which
//! process received which command, across restarts.
//!
//! Lines are appended and flushed before the RCON reply goes out, and echoed to stdout (the
//! container log). The first line of every incarnation is `{"event":"start",…}`. The current
//! incarnation id is also written to `<data>/logs/incarnation`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// The log directory under the data directory (excluded from content digests).
pub const LOG_DIR: &str = "logs";
/// The audit log file under [`LOG_DIR`].
pub const AUDIT_FILE: &str = "rcon-audit.jsonl";
/// The file holding the current incarnation id under [`LOG_DIR`].
pub const INCARNATION_FILE: &str = "incarnation";

/// One line of the audit log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditLine {
    /// `start` for the first line of an incarnation, `command` for an RCON command.
    pub event: String,
    /// RFC 3339 time.
    pub time: String,
    /// The process incarnation that wrote the line.
    pub incarnation: String,
    /// The RCON client (commands only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The command text (commands only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The reply sent (commands only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// The fixture game version (start lines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game_version: Option<String>,
    /// The mode (start lines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// Why the audit log could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Creating or appending to a log file failed.
    #[error("cannot write {path}: {source} (is the data volume mounted read-write?)")]
    Write {
        /// The log file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Reading the log failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The log file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line is not an audit entry.
    #[error("{path} line {line} is not an audit entry: {source}")]
    Parse {
        /// The log file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// Why the line does not parse.
        source: serde_json::Error,
    },
}

/// The open audit log of this incarnation.
pub struct AuditLog {
    path: PathBuf,
    incarnation: String,
    file: Mutex<std::fs::File>,
}

impl AuditLog {
    /// Open (append) the log under `data_dir`, record the incarnation and write its start line.
    pub fn open(
        data_dir: &Path,
        incarnation: &str,
        game_version: &str,
        mode: &str,
    ) -> Result<AuditLog, AuditError> {
        let dir = data_dir.join(LOG_DIR);
        std::fs::create_dir_all(&dir).map_err(|source| AuditError::Write {
            path: dir.clone(),
            source,
        })?;
        let id_path = dir.join(INCARNATION_FILE);
        std::fs::write(&id_path, format!("{incarnation}\n")).map_err(|source| {
            AuditError::Write {
                path: id_path.clone(),
                source,
            }
        })?;
        let path = dir.join(AUDIT_FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| AuditError::Write {
                path: path.clone(),
                source,
            })?;
        let log = AuditLog {
            path,
            incarnation: incarnation.to_owned(),
            file: Mutex::new(file),
        };
        log.append(&AuditLine {
            event: "start".into(),
            time: jiff::Timestamp::now().to_string(),
            incarnation: incarnation.to_owned(),
            remote: None,
            command: None,
            reply: None,
            game_version: Some(game_version.to_owned()),
            mode: Some(mode.to_owned()),
        })?;
        Ok(log)
    }

    /// This incarnation's id.
    pub fn incarnation(&self) -> &str {
        &self.incarnation
    }

    /// Record one RCON command and its reply.
    pub fn record(&self, remote: SocketAddr, command: &str, reply: &str) -> Result<(), AuditError> {
        self.append(&AuditLine {
            event: "command".into(),
            time: jiff::Timestamp::now().to_string(),
            incarnation: self.incarnation.clone(),
            remote: Some(remote.to_string()),
            command: Some(command.to_owned()),
            reply: Some(abbreviate(reply)),
            game_version: None,
            mode: None,
        })
    }

    fn append(&self, line: &AuditLine) -> Result<(), AuditError> {
        let mut text = serde_json::to_string(line).expect("audit line serializes");
        println!("{text}");
        text.push('\n');
        let mut file = self.file.lock().expect("audit lock");
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|source| AuditError::Write {
                path: self.path.clone(),
                source,
            })
    }
}

/// Replies longer than this are logged as their start and their length.
const MAX_LOGGED_REPLY: usize = 1024;

fn abbreviate(reply: &str) -> String {
    if reply.len() <= MAX_LOGGED_REPLY {
        return reply.to_owned();
    }
    let mut end = 256;
    while !reply.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &reply[..end], reply.len())
}

/// Read every line of an audit log (for the harness and tests).
pub fn read_audit(path: &Path) -> Result<Vec<AuditLine>, AuditError> {
    let text = std::fs::read_to_string(path).map_err(|source| AuditError::Read {
        path: path.to_owned(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| AuditError::Parse {
                path: path.to_owned(),
                line: i + 1,
                source,
            })
        })
        .collect()
}
