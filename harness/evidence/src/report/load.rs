//! Loading a bundle for reporting: everything is checked before anything is rendered.
//!
//! A bundle is refused (with the entry named) when its journal does not verify or ends in a
//! partial line, when a case lacks its `case-finished` receipt, when `bundle.json` claims
//! anything the receipts do not prove, or when a file a receipt names (PVC table, artifact,
//! kill matrix) is missing or differs from the SHA-256 recorded for it.
//!
//! The one exception is a run killed from outside before it finalized (no `bundle.json`, no
//! `run-finished` receipt): its complete entries must verify, and its summary is derived from
//! them with every open case `interrupted` ([`summary::summarize_killed`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::kill_matrix::KillMatrix;
use crate::observation::{Observation, ResticRestore, ResticSnapshot};
use crate::pvc_table::PvcTable;
use crate::receipts::{self, FILE_NAME, Receipt, VerifyError, kind};
use crate::summary::{
    self, BundleSummary, CASES_DIR, CaseSummary, PVC_TABLE_FILE, SUMMARY_FILE, SummaryError,
};

/// Why a bundle is refused. Every message names the bundle and the bad entry or file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The directory holds neither a summary nor a journal.
    #[error(
        "{dir}: neither {SUMMARY_FILE} nor {FILE_NAME}: not a bundle; pass bundle directories (reports/<run-id>)"
    )]
    NotABundle {
        /// The directory as given.
        dir: PathBuf,
    },
    /// A bundle file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// `bundle.json` is not a summary of this layout.
    #[error("{path}: not a bundle summary: {reason}")]
    BadSummary {
        /// The summary file.
        path: PathBuf,
        /// What the parser refused.
        reason: String,
    },
    /// The journal does not verify (edited, reordered, truncated, foreign entries).
    #[error("refusing {dir}: {source}")]
    Journal {
        /// The bundle directory.
        dir: PathBuf,
        /// The first bad entry.
        #[source]
        source: Box<VerifyError>,
    },
    /// The journal verifies but is not a complete run of this format (a malformed, renamed or
    /// older receipt, an unfinished case, no `run-finished`).
    #[error("refusing {dir}: {FILE_NAME} {source}")]
    Incomplete {
        /// The bundle directory.
        dir: PathBuf,
        /// What the summary derivation refused, naming the line.
        #[source]
        source: SummaryError,
    },
    /// `bundle.json` claims something the journal does not prove.
    #[error(
        "refusing {dir}: {SUMMARY_FILE} field `{field}` does not match what {FILE_NAME} proves; the summary was edited or belongs to another run"
    )]
    SummaryMismatch {
        /// The bundle directory.
        dir: PathBuf,
        /// The first field (or `cases[i] (name)`) that differs.
        field: String,
    },
    /// A file a receipt names is missing, changed, or disagrees with the receipts.
    #[error("refusing {dir}: {path} {problem}")]
    FileMismatch {
        /// The bundle directory.
        dir: PathBuf,
        /// The file, relative to the bundle directory.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// One receipt of a case as the report shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// 1-based line in `receipts.jsonl`.
    pub line: usize,
    /// The receipt's sequence number.
    pub seq: u64,
    /// The named unit that wrote it.
    pub step: String,
    /// The receipt's kind (the timeline colours by it).
    pub kind: String,
    /// Milliseconds from the case's start to this receipt.
    pub at_ms: u64,
    /// Milliseconds since the case's previous receipt: how long this step took.
    pub took_ms: u64,
}

/// A restore found in the receipts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreRecord {
    /// What names the restore (e.g. the Restore object).
    pub restore_id: String,
    /// The restic snapshot it restored.
    pub snapshot_id: String,
    /// 1-based line of its receipt.
    pub line: usize,
}

/// An artifact a receipt names, checked against its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRecord {
    /// Relative to the bundle directory.
    pub path: String,
    /// Its size when stored.
    pub bytes: u64,
    /// The SHA-256 its receipt recorded (the file was checked against it).
    pub sha256: String,
    /// 1-based line of its receipt.
    pub line: usize,
}

/// A case with everything the report needs, from receipts only.
#[derive(Debug, Clone)]
pub struct LoadedCase {
    /// The case as the journal proves it (verdict, duration, evidence used).
    pub summary: CaseSummary,
    /// Every receipt of the case after `case-started`, in order.
    pub steps: Vec<StepRecord>,
    /// Its PVC UID table, rebuilt from its `pvc-observation` receipts.
    pub pvc_table: PvcTable,
    /// restic snapshot ids, first-seen order, without duplicates.
    pub snapshots: Vec<String>,
    /// Restores, in order.
    pub restores: Vec<RestoreRecord>,
    /// Files it kept, each checked against its SHA-256.
    pub artifacts: Vec<ArtifactRecord>,
}

/// A verified bundle.
#[derive(Debug, Clone)]
pub struct LoadedBundle {
    /// The directory as given.
    pub dir: PathBuf,
    /// The run's summary as the journal proves it (equal to `bundle.json` when there is one).
    pub summary: BundleSummary,
    /// The run's process was killed before it finalized: there is no `bundle.json`, and
    /// `summary` was derived from the journal ([`summary::summarize_killed`]), its open cases
    /// `interrupted`.
    pub killed: bool,
    /// Every case, in the order it finished.
    pub cases: Vec<LoadedCase>,
    /// The self-test's kill matrix, when the run has one (checked against its receipt).
    pub kill_matrix: Option<KillMatrix>,
}

/// Loads and checks the bundle in `dir`.
///
/// A bundle without `bundle.json` is a run whose process was killed before it finalized (a
/// case nextest terminated, a crashed runner): its summary is derived from the journal's
/// complete entries and every case it left open is `interrupted`, so the report shows the
/// kill as a failure instead of losing the case.
pub fn load(dir: impl AsRef<Path>) -> Result<LoadedBundle, LoadError> {
    let dir = dir.as_ref().to_path_buf();
    let summary_path = dir.join(SUMMARY_FILE);
    if !summary_path.exists() {
        return load_killed(dir);
    }
    let text = read(&summary_path)?;
    let claimed: BundleSummary =
        serde_json::from_slice(&text).map_err(|e| LoadError::BadSummary {
            path: summary_path.clone(),
            reason: e.to_string(),
        })?;
    let journal = receipts::verify(dir.join(FILE_NAME)).map_err(|source| LoadError::Journal {
        dir: dir.clone(),
        source: Box::new(source),
    })?;
    let proven = summary::summarize(&journal).map_err(|source| LoadError::Incomplete {
        dir: dir.clone(),
        source,
    })?;
    if let Some(field) = first_difference(&claimed, &proven) {
        return Err(LoadError::SummaryMismatch { dir, field });
    }
    finish_loading(dir, journal, proven, false)
}

/// [`load`] of a bundle whose `bundle.json` was never written.
fn load_killed(dir: PathBuf) -> Result<LoadedBundle, LoadError> {
    if !dir.join(FILE_NAME).exists() {
        return Err(LoadError::NotABundle { dir });
    }
    // A partial last line is what a kill in the middle of a write leaves; every complete entry
    // before it still has to verify.
    let checked =
        receipts::verify_prefix(dir.join(FILE_NAME)).map_err(|source| LoadError::Journal {
            dir: dir.clone(),
            source: Box::new(source),
        })?;
    let journal = checked.journal;
    let proven = summary::summarize_killed(&journal).map_err(|source| LoadError::Incomplete {
        dir: dir.clone(),
        source,
    })?;
    finish_loading(dir, journal, proven, true)
}

fn finish_loading(
    dir: PathBuf,
    journal: receipts::VerifiedJournal,
    proven: BundleSummary,
    killed: bool,
) -> Result<LoadedBundle, LoadError> {
    let mut cases = Vec::with_capacity(proven.cases.len());
    for case in &proven.cases {
        cases.push(load_case(&dir, &journal.receipts, case)?);
    }
    let addendum =
        summary::kill_matrix_addendum(&journal).map_err(|source| LoadError::Incomplete {
            dir: dir.clone(),
            source,
        })?;
    let kill_matrix_file = proven
        .kill_matrix
        .clone()
        .or(addendum.map(|(_, file)| file));
    let kill_matrix = match &kill_matrix_file {
        Some(file) => {
            let bytes = checked_file(&dir, &file.path, &file.sha256)?;
            Some(
                serde_json::from_slice(&bytes).map_err(|e| LoadError::FileMismatch {
                    dir: dir.clone(),
                    path: file.path.clone(),
                    problem: format!("is not a kill matrix: {e}"),
                })?,
            )
        }
        None => None,
    };
    Ok(LoadedBundle {
        dir,
        summary: proven,
        killed,
        cases,
        kill_matrix,
    })
}

fn load_case(
    dir: &Path,
    receipts: &[Receipt],
    case: &CaseSummary,
) -> Result<LoadedCase, LoadError> {
    let (first_line, last_line) = case.lines;
    let mine: Vec<(usize, &Receipt)> = receipts
        .iter()
        .enumerate()
        .map(|(i, r)| (i + 1, r))
        .filter(|(line, r)| {
            *line >= first_line && *line <= last_line && r.case.as_deref() == Some(&case.name)
        })
        .collect();
    let start = mine[0].1.time;
    let mut steps = Vec::new();
    let mut snapshots: Vec<String> = Vec::new();
    let mut restores = Vec::new();
    let mut artifacts = Vec::new();
    let mut prev_ms = 0u64;
    for (line, r) in &mine {
        let at_ms = r.time.duration_since(start).as_millis().max(0) as u64;
        if r.kind != kind::CASE_STARTED {
            steps.push(StepRecord {
                line: *line,
                seq: r.seq,
                step: r.step.clone(),
                kind: r.kind.clone(),
                at_ms,
                took_ms: at_ms.saturating_sub(prev_ms),
            });
        }
        prev_ms = at_ms;
        // Typed: the summary already read every receipt, so this cannot fail on a journal that
        // got this far; the error still names the line rather than defaulting a field.
        let observation = Observation::read(*line, r).map_err(|e| LoadError::Incomplete {
            dir: dir.to_path_buf(),
            source: e.into(),
        })?;
        match observation {
            Observation::ResticSnapshot(ResticSnapshot { snapshot_id, .. }) => {
                note_snapshot(&mut snapshots, snapshot_id);
            }
            Observation::ResticRestore(ResticRestore {
                restore_id,
                snapshot_id,
                ..
            }) => {
                note_snapshot(&mut snapshots, snapshot_id.clone());
                restores.push(RestoreRecord {
                    restore_id,
                    snapshot_id,
                    line: *line,
                });
            }
            Observation::Artifact(stored) => {
                let record = ArtifactRecord {
                    path: stored.path,
                    bytes: stored.bytes,
                    sha256: stored.sha256,
                    line: *line,
                };
                checked_file(dir, &record.path, &record.sha256)?;
                artifacts.push(record);
            }
            _ => {}
        }
    }
    let pvc_table = checked_pvc_table(dir, receipts, case, &mine)?;
    Ok(LoadedCase {
        summary: case.clone(),
        steps,
        pvc_table,
        snapshots,
        restores,
        artifacts,
    })
}

/// The case's PVC UID table, rebuilt from its receipts and checked against its
/// `pvc-table.json`: the file must exist exactly when the receipts record PVC observations
/// (unless the case was killed before writing it) and hold the same table.
fn checked_pvc_table(
    dir: &Path,
    receipts: &[Receipt],
    case: &CaseSummary,
    mine: &[(usize, &Receipt)],
) -> Result<PvcTable, LoadError> {
    let last_line = case.lines.1;
    let pvc_table = crate::observation::pvc_table_from_receipts(mine.iter().map(|(_, r)| *r))
        .map_err(|e| LoadError::FileMismatch {
            dir: dir.to_path_buf(),
            path: FILE_NAME.into(),
            problem: e.to_string(),
        })?;
    let table_rel = format!("{CASES_DIR}/{}/{PVC_TABLE_FILE}", case.name);
    let table_path = dir.join(&table_rel);
    // The table is written just before `case-finished`: a case killed before that has none.
    let finished = receipts
        .get(last_line - 1)
        .is_some_and(|r| r.kind == kind::CASE_FINISHED);
    match (pvc_table.is_empty(), table_path.exists()) {
        (true, false) => {}
        (false, false) if !finished => {}
        (true, true) => {
            return Err(LoadError::FileMismatch {
                dir: dir.to_path_buf(),
                path: table_rel,
                problem: "exists but the receipts record no PVC observation".into(),
            });
        }
        (false, false) => {
            return Err(LoadError::FileMismatch {
                dir: dir.to_path_buf(),
                path: table_rel,
                problem: "is missing, but the receipts record PVC observations".into(),
            });
        }
        (false, true) => {
            // Byte for byte: the writer renders the table exactly so, and a file nobody hashed
            // must not differ from it even in a byte that would not change its parse.
            if read(&table_path)? != crate::pvc_table::file_bytes(&pvc_table) {
                return Err(LoadError::FileMismatch {
                    dir: dir.to_path_buf(),
                    path: table_rel,
                    problem: "differs from the table the receipts prove".into(),
                });
            }
        }
    }
    Ok(pvc_table)
}

/// Adds a snapshot id once, in first-seen order.
fn note_snapshot(out: &mut Vec<String>, id: String) {
    if !id.is_empty() && !out.contains(&id) {
        out.push(id);
    }
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a bundle file a receipt names and checks its SHA-256.
fn checked_file(dir: &Path, rel: &str, sha256: &str) -> Result<Vec<u8>, LoadError> {
    let mismatch = |problem: String| LoadError::FileMismatch {
        dir: dir.to_path_buf(),
        path: rel.to_owned(),
        problem,
    };
    if rel.split('/').any(|p| p == ".." || p.is_empty()) {
        return Err(mismatch("is not a path inside the bundle".into()));
    }
    let bytes = std::fs::read(dir.join(rel))
        .map_err(|e| mismatch(format!("named by a receipt cannot be read: {e}")))?;
    let actual = receipts::sha256_hex(&bytes);
    if actual != sha256 {
        return Err(mismatch(format!(
            "was changed after its receipt was written (SHA-256 {actual}, receipt says {sha256})"
        )));
    }
    Ok(bytes)
}

/// The first top-level field (or case) where the claimed summary differs from the proven one.
fn first_difference(claimed: &BundleSummary, proven: &BundleSummary) -> Option<String> {
    // Cases are compared as typed summaries, so the one that differs is named by its own name.
    if claimed.cases != proven.cases {
        let n = claimed.cases.len().max(proven.cases.len());
        if let Some(i) = (0..n).find(|&i| claimed.cases.get(i) != proven.cases.get(i)) {
            let name = proven
                .cases
                .get(i)
                .or(claimed.cases.get(i))
                .map_or("?", |c| c.name.as_str());
            return Some(format!("cases[{i}] ({name})"));
        }
    }
    // The other fields by their names in `bundle.json` (the meta fields are flattened there).
    let a = serde_json::to_value(claimed).ok()?;
    let b = serde_json::to_value(proven).ok()?;
    let (Value::Object(a), Value::Object(b)) = (&a, &b) else {
        return Some("(whole file)".into());
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .find(|key| a.get(*key) != b.get(*key))
        .cloned()
}
