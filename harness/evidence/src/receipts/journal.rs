//! The journal writer: append-only, one `write_all` + `sync_data` per entry.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use super::{GENESIS, Receipt, entry_hash, sha256_hex, verify_prefix};
use crate::{canonical, redact};

/// Where receipt times come from; [`Journal::create`] uses the system clock. A fixed clock
/// makes a journal byte-reproducible (fixtures).
pub type Clock = Arc<dyn Fn() -> jiff::Timestamp + Send + Sync>;

/// Why a journal could not be opened or appended to.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// [`Journal::create`] found a file at the path.
    #[error(
        "{path}: journal already exists; pass it to `Journal::open_existing` to resume it, or choose a new run directory"
    )]
    AlreadyExists {
        /// The journal file.
        path: PathBuf,
    },
    /// A file operation failed.
    #[error("{path}: cannot {action}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done (`create`, `append to`, `lock`, …).
        action: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Another process (or handle) holds the journal's lock.
    #[error(
        "{path}: another writer holds this journal; one writer per journal (use its Journal handle)"
    )]
    InUse {
        /// The journal file.
        path: PathBuf,
    },
    /// The journal to resume does not verify.
    #[error("cannot resume {path}: {source}")]
    Unverifiable {
        /// The journal file.
        path: PathBuf,
        /// The first thing wrong with it.
        #[source]
        source: Box<super::VerifyError>,
    },
    /// The journal to resume ends with a partial entry.
    #[error("cannot resume {path}: it ends with a partial entry at line {line} (a writer was killed mid-write); it verifies up to line {}, start a new run directory", line - 1)]
    TruncatedTail {
        /// The journal file.
        path: PathBuf,
        /// 1-based line of the partial entry.
        line: usize,
    },
    /// The journal to resume has no entries.
    #[error(
        "cannot resume {path}: it is empty, so it has no run id or architecture; create it with `Journal::create`"
    )]
    EmptyResume {
        /// The journal file.
        path: PathBuf,
    },
    /// An earlier append failed, so this handle writes nothing more.
    #[error(
        "{path}: an earlier write failed, so the journal's tail is unknown; no further entries are written (start a new run directory)"
    )]
    Poisoned {
        /// The journal file.
        path: PathBuf,
    },
}

struct State {
    file: File,
    next_seq: u64,
    /// SHA-256 of the last written line, or [`GENESIS`].
    prev: String,
    poisoned: bool,
}

/// An append-only receipt journal with one writer (appends are serialized by a mutex and the
/// file carries an exclusive advisory lock, so a second writer is refused rather than
/// interleaved).
pub struct Journal {
    path: PathBuf,
    run_id: String,
    arch: String,
    clock: Clock,
    state: Mutex<State>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .field("run_id", &self.run_id)
            .field("arch", &self.arch)
            .finish_non_exhaustive()
    }
}

fn system_clock() -> Clock {
    Arc::new(jiff::Timestamp::now)
}

impl Journal {
    /// Creates a new journal at `path`; refuses to touch an existing file.
    pub fn create(path: impl AsRef<Path>, run_id: &str, arch: &str) -> Result<Self, JournalError> {
        Self::create_with_clock(path, run_id, arch, system_clock())
    }

    /// [`Journal::create`] with receipt times taken from `clock`.
    pub fn create_with_clock(
        path: impl AsRef<Path>,
        run_id: &str,
        arch: &str,
        clock: Clock,
    ) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        let file = match OpenOptions::new().append(true).create_new(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(JournalError::AlreadyExists { path });
            }
            Err(source) => {
                return Err(JournalError::Io {
                    path,
                    action: "create",
                    source,
                });
            }
        };
        lock(&file, &path)?;
        // The directory entry must survive a crash too, or a durable first entry is unreachable.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            sync_dir(dir)?;
        }
        Ok(Self {
            run_id: run_id.to_owned(),
            arch: arch.to_owned(),
            clock,
            state: Mutex::new(State {
                file,
                next_seq: 0,
                prev: GENESIS.to_owned(),
                poisoned: false,
            }),
            path,
        })
    }

    /// Resumes appending to an existing journal after verifying its whole chain; the run id and
    /// architecture come from its first entry.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        Self::open_existing_with_clock(path, system_clock())
    }

    /// [`Journal::open_existing`] with receipt times taken from `clock`.
    pub fn open_existing_with_clock(
        path: impl AsRef<Path>,
        clock: Clock,
    ) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|source| JournalError::Io {
                path: path.clone(),
                action: "open",
                source,
            })?;
        // Lock before reading so nobody appends between the check and our first entry.
        lock(&file, &path)?;
        let checked = verify_prefix(&path).map_err(|source| JournalError::Unverifiable {
            path: path.clone(),
            source: Box::new(source),
        })?;
        if let Some(tail) = checked.truncated_tail {
            return Err(JournalError::TruncatedTail {
                path,
                line: tail.line,
            });
        }
        let journal = checked.journal;
        let first = journal
            .receipts
            .first()
            .ok_or_else(|| JournalError::EmptyResume { path: path.clone() })?;
        Ok(Self {
            run_id: first.run_id.clone(),
            arch: first.arch.clone(),
            clock,
            state: Mutex::new(State {
                file,
                next_seq: journal.receipts.len() as u64,
                prev: journal.head.clone(),
                poisoned: false,
            }),
            path,
        })
    }

    /// Appends one entry: redacts `observed`, chains it, writes the full line with one
    /// `write_all` and makes it durable with `sync_data` before returning.
    pub fn append(
        &self,
        case: Option<&str>,
        step: &str,
        kind: &str,
        mut observed: Value,
    ) -> Result<Receipt, JournalError> {
        redact::redact(&mut observed);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.poisoned {
            return Err(JournalError::Poisoned {
                path: self.path.clone(),
            });
        }
        let time = (self.clock)();
        let mut entry = Map::new();
        entry.insert("seq".into(), json!(state.next_seq));
        entry.insert("time".into(), json!(time));
        entry.insert("run_id".into(), json!(self.run_id));
        entry.insert("case".into(), json!(case));
        entry.insert("step".into(), json!(step));
        entry.insert("arch".into(), json!(self.arch));
        entry.insert("kind".into(), json!(kind));
        entry.insert("observed".into(), observed.clone());
        entry.insert("prev".into(), json!(state.prev));
        let sha256 = entry_hash(&entry);
        entry.insert("sha256".into(), json!(sha256));
        let line = canonical::to_string(&Value::Object(entry));
        let mut bytes = line.clone().into_bytes();
        bytes.push(b'\n');
        let written = state
            .file
            .write_all(&bytes)
            .and_then(|()| state.file.sync_data());
        if let Err(source) = written {
            state.poisoned = true;
            return Err(JournalError::Io {
                path: self.path.clone(),
                action: "append to",
                source,
            });
        }
        let receipt = Receipt {
            seq: state.next_seq,
            time,
            run_id: self.run_id.clone(),
            case: case.map(str::to_owned),
            step: step.to_owned(),
            arch: self.arch.clone(),
            kind: kind.to_owned(),
            observed,
            prev: std::mem::replace(&mut state.prev, sha256_hex(line.as_bytes())),
            sha256,
        };
        state.next_seq += 1;
        drop(state);
        hold_after(&receipt.step);
        Ok(receipt)
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run id every entry carries.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The architecture every entry carries.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Entries written so far (including those found when resuming).
    pub fn len(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_seq
    }

    /// Whether no entry has been written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// SHA-256 of the last line written (the chain head), or 64 zeros.
    pub fn head(&self) -> String {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .prev
            .clone()
    }
}

fn lock(file: &File, path: &Path) -> Result<(), JournalError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(JournalError::InUse {
            path: path.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(JournalError::Io {
            path: path.to_path_buf(),
            action: "lock",
            source,
        }),
    }
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| JournalError::Io {
            path: dir.to_path_buf(),
            action: "sync directory",
            source,
        })
}

/// The environment variable that holds this process after one receipt: `PLACE:FIFO`, `PLACE`
/// the receipt as [`crate::place::Place::encode`] writes it (the `occurrence`-th receipt of a
/// step). Once that entry is durable, the writer opens the named pipe `FIFO` for reading and
/// reads it to its end, so it waits until a writer opened the pipe and closed it again. The
/// qualification's signal exploration (`rehearse explore --qualify-signals`) uses it to place a
/// signal exactly after a given receipt: it opens the pipe (which returns once this process
/// waits in it), sends the signal, then closes the pipe. Unset, nothing waits.
pub const HOLD_ENV: &str = "REHEARSAL_HOLD_AFTER_RECEIPT";

/// Waits as [`HOLD_ENV`] asks after a receipt of `step` (once per process).
fn hold_after(step: &str) {
    use std::io::Read;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static HOLD: OnceLock<Option<(crate::place::Place, std::path::PathBuf)>> = OnceLock::new();
    static SEEN: AtomicUsize = AtomicUsize::new(0);
    let hold = HOLD.get_or_init(|| {
        let value = std::env::var(HOLD_ENV).ok()?;
        let (at, fifo) = value.split_once(':')?;
        Some((crate::place::Place::decode(at)?, fifo.into()))
    });
    if let Some((at, fifo)) = hold
        && at.label == step
        && SEEN.fetch_add(1, Ordering::SeqCst) + 1 == at.occurrence
        && let Ok(mut pipe) = std::fs::File::open(fifo)
    {
        let _ = pipe.read_to_end(&mut Vec::new());
    }
}
