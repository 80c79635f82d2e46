//! The per-run bundle directory and the writer API scenarios record into.
//!
//! Layout of `reports/<run-id>/`:
//! ```text
//! bundle.json                     summary (written once, at finalize; see `summary`)
//! receipts.jsonl                  the run's one journal; every case writes into it
//! junit.xml                       one testsuite, a testcase per case (written at finalize)
//! kill-matrix.json                optional: mutant → case → caught
//! cases/<case>/pvc-table.json     the case's PVC UID table (when it observed PVCs)
//! cases/<case>/artifacts/…        files the case kept (logs, objects, events)
//! ```
//! Nothing is overwritten: every file is created with `create_new`, written, and fsynced (with
//! its directory) before the receipt that names it is appended.

mod case;
pub use crate::{kill_matrix, summary};

pub use case::CaseRecorder;
pub use kill_matrix::{KillCell, KillMatrix};
pub use summary::{
    BundleMeta, BundleSummary, CaseSummary, FileRef, Operator, SummaryError, Verdict,
};

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::observation::{CaseStarted, Observation, RunFinished, RunStarted};
use super::receipts::{self, Clock, FILE_NAME, Journal, JournalError, Receipt};

pub use crate::summary::{
    ARTIFACTS_DIR, CASES_DIR, JUNIT_FILE, KILL_MATRIX_FILE, PVC_TABLE_FILE, SUMMARY_FILE,
};

/// Why the bundle could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// [`Bundle::create`] found a journal or summary in the directory.
    #[error(
        "{dir} already holds a run's receipts; use a new run directory, or `Bundle::resume` to continue that run"
    )]
    AlreadyExists {
        /// The bundle directory.
        dir: PathBuf,
    },
    /// [`Bundle::resume`] found a finalized run.
    #[error(
        "{dir} is already finalized ({SUMMARY_FILE} exists); a finished run cannot be resumed (use a new run directory; to add a self-test's kill matrix use `Bundle::add_kill_matrix`)"
    )]
    AlreadyFinalized {
        /// The bundle directory.
        dir: PathBuf,
    },
    /// [`Bundle::add_kill_matrix`] found a run that is not finalized yet.
    #[error(
        "{dir} is not finalized yet ({SUMMARY_FILE} is missing); record the kill matrix with `bundle.kill_matrix` before `finalize`"
    )]
    NotFinalized {
        /// The bundle directory.
        dir: PathBuf,
    },
    /// The journal refused an append or could not be opened.
    #[error(transparent)]
    Journal(Box<JournalError>),
    /// A file or directory of the bundle could not be written.
    #[error("{path}: cannot {action}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done (`create`, `write`, `sync`, …).
        action: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A bundle file already exists; nothing is overwritten.
    #[error(
        "{path} already exists; bundle files are never overwritten (pick another artifact name)"
    )]
    FileExists {
        /// The existing file.
        path: PathBuf,
    },
    /// A run id, case or artifact name would escape its directory or is not portable.
    #[error(
        "invalid {what} name {name:?}: use letters, digits, '.', '_', '-', '~', '+' and '%' (artifacts may add '/'-separated subdirectories)"
    )]
    InvalidName {
        /// What the name names (`run id`, `case`, `artifact`).
        what: &'static str,
        /// The name as given.
        name: String,
    },
    /// The case's PVC observations do not make a table.
    #[error("case {case:?}: cannot build its PVC table: {source}")]
    PvcTable {
        /// The case.
        case: String,
        /// The unreadable observation.
        #[source]
        source: crate::observation::PvcTableError,
    },
    /// The case was already recorded in this run.
    #[error("case {case:?} was already recorded in this run; case names are unique per run")]
    CaseExists {
        /// The case.
        case: String,
    },
    /// Something was recorded after [`Bundle::finalize`].
    #[error("the bundle in {dir} was finalized; nothing more can be recorded (case {case:?})")]
    Finalized {
        /// The bundle directory.
        dir: PathBuf,
        /// The case that tried to record (empty for run-level records).
        case: String,
    },
    /// The directory's journal is not a run's journal.
    #[error("cannot resume {dir}: {source}")]
    NotARun {
        /// The bundle directory.
        dir: PathBuf,
        /// What the summary derivation refused.
        #[source]
        source: SummaryError,
    },
    /// The journal written by this process does not verify.
    #[error("{dir}: the journal does not verify after finalizing: {source}")]
    Verify {
        /// The bundle directory.
        dir: PathBuf,
        /// The first thing wrong with it.
        #[source]
        source: Box<receipts::VerifyError>,
    },
}

impl From<JournalError> for BundleError {
    fn from(e: JournalError) -> Self {
        BundleError::Journal(Box::new(e))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CaseState {
    Open,
    Finished,
}

pub(crate) struct Inner {
    dir: PathBuf,
    journal: Journal,
    cases: Mutex<BTreeMap<String, CaseState>>,
    finalized: std::sync::atomic::AtomicBool,
}

impl Inner {
    fn append(
        &self,
        case: &str,
        step: &str,
        observation: Observation,
    ) -> Result<Receipt, BundleError> {
        if self.finalized.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(BundleError::Finalized {
                dir: self.dir.clone(),
                case: case.to_owned(),
            });
        }
        Ok(self.journal.record(Some(case), step, observation)?)
    }
}

/// A run being recorded. Cheap to share by reference across a run's cases.
pub struct Bundle {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundle")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

impl Bundle {
    /// `<reports_root>/<run_id>`, the conventional bundle directory.
    pub fn dir_for(reports_root: impl AsRef<Path>, run_id: &str) -> PathBuf {
        reports_root.as_ref().join(run_id)
    }

    /// Starts a new run in `dir` (created if absent); refuses a directory that already holds
    /// receipts.
    pub fn create(dir: impl AsRef<Path>, meta: BundleMeta) -> Result<Self, BundleError> {
        Self::create_with_clock(dir, meta, Arc::new(jiff::Timestamp::now))
    }

    /// [`Bundle::create`] with receipt times from `clock` (reproducible fixtures).
    pub fn create_with_clock(
        dir: impl AsRef<Path>,
        meta: BundleMeta,
        clock: Clock,
    ) -> Result<Self, BundleError> {
        let dir = dir.as_ref().to_path_buf();
        validate_name("run id", &meta.run_id)?;
        create_dirs(&dir.join(CASES_DIR))?;
        if dir.join(FILE_NAME).exists() || dir.join(SUMMARY_FILE).exists() {
            return Err(BundleError::AlreadyExists { dir });
        }
        let journal =
            Journal::create_with_clock(dir.join(FILE_NAME), &meta.run_id, &meta.arch, clock)
                .map_err(|e| match e {
                    JournalError::AlreadyExists { .. } => {
                        BundleError::AlreadyExists { dir: dir.clone() }
                    }
                    e => e.into(),
                })?;
        journal.record(
            None,
            "run-started",
            Observation::RunStarted(RunStarted::new(&meta)),
        )?;
        Ok(Self::from_journal(dir, journal, BTreeMap::new()))
    }

    /// Continues a run that stopped before [`Bundle::finalize`] (the harness restarted).
    /// Cases left open by the stopped process are marked `interrupted` at finalize.
    pub fn resume(dir: impl AsRef<Path>) -> Result<Self, BundleError> {
        Self::resume_with_clock(dir, Arc::new(jiff::Timestamp::now))
    }

    /// [`Bundle::resume`] with receipt times from `clock`.
    pub fn resume_with_clock(dir: impl AsRef<Path>, clock: Clock) -> Result<Self, BundleError> {
        let dir = dir.as_ref().to_path_buf();
        if dir.join(SUMMARY_FILE).exists() {
            return Err(BundleError::AlreadyFinalized { dir });
        }
        let journal = Journal::open_existing_with_clock(dir.join(FILE_NAME), clock)?;
        let verified = receipts::verify(journal.path()).map_err(|source| BundleError::Verify {
            dir: dir.clone(),
            source: Box::new(source),
        })?;
        let first = verified.receipts.first();
        first
            .ok_or(SummaryError::NoRunStarted)
            .and_then(summary::meta_of)
            .map_err(|source| BundleError::NotARun {
                dir: dir.clone(),
                source,
            })?;
        let mut cases = BTreeMap::new();
        for (i, r) in verified.receipts.iter().enumerate() {
            // Typed, like every reader: a journal this build cannot read is not resumed.
            let observation =
                Observation::read(i + 1, r).map_err(|source| BundleError::NotARun {
                    dir: dir.clone(),
                    source: source.into(),
                })?;
            match (observation, &r.case) {
                (Observation::CaseStarted(_), Some(c)) => {
                    cases.insert(c.clone(), CaseState::Open);
                }
                (Observation::CaseFinished(_), Some(c)) => {
                    cases.insert(c.clone(), CaseState::Finished);
                }
                _ => {}
            }
        }
        journal.record(None, "run-resumed", Observation::Step(json!({})))?;
        Ok(Self::from_journal(dir, journal, cases))
    }

    fn from_journal(dir: PathBuf, journal: Journal, cases: BTreeMap<String, CaseState>) -> Self {
        Self {
            inner: Arc::new(Inner {
                dir,
                journal,
                cases: Mutex::new(cases),
                finalized: false.into(),
            }),
        }
    }

    /// The bundle directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The run's journal (read-only uses: path, length, head).
    pub fn journal(&self) -> &Journal {
        &self.inner.journal
    }

    /// Starts recording case `name` of `bucket`: writes its `case-started` receipt.
    pub fn case(&self, name: &str, bucket: &str) -> Result<CaseRecorder, BundleError> {
        validate_name("case", name)?;
        {
            let mut cases = self.inner.cases.lock().unwrap_or_else(|p| p.into_inner());
            if cases.contains_key(name) {
                return Err(BundleError::CaseExists { case: name.into() });
            }
            cases.insert(name.to_owned(), CaseState::Open);
        }
        create_dirs(&self.inner.dir.join(CASES_DIR).join(name))?;
        self.inner.append(
            name,
            "case-started",
            Observation::CaseStarted(CaseStarted {
                bucket: bucket.to_owned(),
            }),
        )?;
        Ok(CaseRecorder::new(self.inner.clone(), name, bucket))
    }

    /// Writes `kill-matrix.json` (mutant → case → caught) and its receipt.
    pub fn kill_matrix(&self, matrix: &KillMatrix) -> Result<(), BundleError> {
        if self
            .inner
            .finalized
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(BundleError::Finalized {
                dir: self.inner.dir.clone(),
                case: String::new(),
            });
        }
        let mut text = serde_json::to_string_pretty(matrix).expect("kill matrix serializes");
        text.push('\n');
        write_new(&self.inner.dir.join(KILL_MATRIX_FILE), text.as_bytes())?;
        self.inner
            .journal
            .record(None, "kill-matrix", kill_matrix_observation(&text))?;
        Ok(())
    }

    /// Adds a kill matrix to a run that is already finalized (a self-test judges mutants after
    /// its baseline run finished). The matrix becomes `kill-matrix.json` and a `kill-matrix`
    /// receipt appended after `run-finished`, the one kind of entry allowed there; `bundle.json`
    /// is not touched (it anchors the run up to `run-finished`).
    pub fn add_kill_matrix(dir: impl AsRef<Path>, matrix: &KillMatrix) -> Result<(), BundleError> {
        let dir = dir.as_ref().to_path_buf();
        if !dir.join(SUMMARY_FILE).is_file() {
            return Err(BundleError::NotFinalized { dir });
        }
        let journal = Journal::open_existing(dir.join(FILE_NAME))?;
        let verified = receipts::verify(journal.path()).map_err(|source| BundleError::Verify {
            dir: dir.clone(),
            source: Box::new(source),
        })?;
        let summary = summary::summarize(&verified).map_err(|source| BundleError::NotARun {
            dir: dir.clone(),
            source,
        })?;
        let existing =
            summary::kill_matrix_addendum(&verified).map_err(|source| BundleError::NotARun {
                dir: dir.clone(),
                source,
            })?;
        if summary.kill_matrix.is_some() || existing.is_some() {
            return Err(BundleError::FileExists {
                path: dir.join(KILL_MATRIX_FILE),
            });
        }
        let mut text = serde_json::to_string_pretty(matrix).expect("kill matrix serializes");
        text.push('\n');
        write_new(&dir.join(KILL_MATRIX_FILE), text.as_bytes())?;
        journal.record(None, "kill-matrix", kill_matrix_observation(&text))?;
        Ok(())
    }

    /// Closes the run: marks cases still open as `interrupted`, appends `run-finished`, then
    /// writes `bundle.json` and `junit.xml` derived from the verified journal.
    pub fn finalize(self, interrupted: bool) -> Result<BundleSummary, BundleError> {
        let open: Vec<String> = {
            let cases = self.inner.cases.lock().unwrap_or_else(|p| p.into_inner());
            cases
                .iter()
                .filter(|(_, s)| **s == CaseState::Open)
                .map(|(n, _)| n.clone())
                .collect()
        };
        for case in &open {
            case::finish_case(
                &self.inner,
                case,
                Verdict::Interrupted,
                &[],
                Some("the run ended before this case reached a verdict"),
                &[],
            )?;
        }
        self.inner
            .finalized
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.journal.record(
            None,
            "run-finished",
            Observation::RunFinished(RunFinished { interrupted }),
        )?;
        let dir = self.inner.dir.clone();
        let verified =
            receipts::verify(self.inner.journal.path()).map_err(|source| BundleError::Verify {
                dir: dir.clone(),
                source: Box::new(source),
            })?;
        let summary = summary::summarize(&verified).map_err(|source| BundleError::NotARun {
            dir: dir.clone(),
            source,
        })?;
        let mut text = serde_json::to_string_pretty(&summary).expect("summary serializes");
        text.push('\n');
        write_new(
            &dir.join(JUNIT_FILE),
            crate::report::junit::render(&[&summary]).as_bytes(),
        )?;
        // bundle.json last: its presence means the bundle is complete.
        write_new(&dir.join(SUMMARY_FILE), text.as_bytes())?;
        Ok(summary)
    }
}

pub(crate) fn validate_name(what: &'static str, name: &str) -> Result<(), BundleError> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '~' | '+' | '%'));
    if ok {
        Ok(())
    } else {
        Err(BundleError::InvalidName {
            what,
            name: name.into(),
        })
    }
}

/// Creates `dir` and any missing parents, syncing each new directory's parent so the new
/// entries survive a crash along with the files written into them.
pub(crate) fn create_dirs(dir: &Path) -> Result<(), BundleError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dirs(parent)?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        // Another case's recorder may have created it in between; that is fine.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(source) => {
            return Err(BundleError::Io {
                path: dir.to_path_buf(),
                action: "create directory",
                source,
            });
        }
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(|source| BundleError::Io {
                path: parent.to_path_buf(),
                action: "sync directory",
                source,
            })?;
    }
    Ok(())
}

/// Creates `path` (never replacing a file), writes `bytes`, and makes file and directory entry
/// durable.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> Result<(), BundleError> {
    let io = |action, source| BundleError::Io {
        path: path.to_path_buf(),
        action,
        source,
    };
    let mut file = match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(BundleError::FileExists {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(io("create", e)),
    };
    file.write_all(bytes).map_err(|e| io("write", e))?;
    file.sync_all().map_err(|e| io("sync", e))?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("sync the directory of", e))?;
    }
    Ok(())
}

/// The `kill-matrix` receipt of `kill-matrix.json` with contents `text`.
fn kill_matrix_observation(text: &str) -> Observation {
    Observation::KillMatrix(FileRef {
        path: KILL_MATRIX_FILE.into(),
        sha256: receipts::sha256_hex(text.as_bytes()),
    })
}
