//! `bundle.json`: the run's summary, derived only from its verified journal.
//!
//! The writer derives it at [`crate::bundle::Bundle::finalize`]; the report loader derives it again
//! from the receipts and refuses a bundle whose `bundle.json` disagrees, so the summary can
//! never claim more than the chain proves.

use serde::{Deserialize, Serialize};

pub use crate::observation::{BundleMeta, FileRef, FinishObserved, Operator, Verdict};
use crate::observation::{Observation, ObservationError, RunFinished};
use crate::receipts::{FILE_NAME, Receipt, VerifiedJournal, kind};

/// The layout version of a bundle.
pub const FORMAT: u32 = 1;

/// `bundle.json`.
pub const SUMMARY_FILE: &str = "bundle.json";
/// `junit.xml`.
pub const JUNIT_FILE: &str = "junit.xml";
/// `kill-matrix.json`.
pub const KILL_MATRIX_FILE: &str = "kill-matrix.json";
/// The directory holding one subdirectory per case.
pub const CASES_DIR: &str = "cases";
/// A case's PVC UID table.
pub const PVC_TABLE_FILE: &str = "pvc-table.json";
/// A case's kept files.
pub const ARTIFACTS_DIR: &str = "artifacts";

/// One case in `bundle.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseSummary {
    /// The case's name (unique in the run).
    pub name: String,
    /// The bucket (scenario group) it ran in.
    pub bucket: String,
    /// How it ended.
    pub verdict: Verdict,
    /// From the `case-started` receipt to the `case-finished` receipt.
    pub duration_ms: u64,
    /// What the verdict rests on (e.g. "pod UID", "RCON audit log").
    pub evidence_used: Vec<String>,
    /// Why, when the case did not pass.
    pub reason: Option<String>,
    /// The named checks that failed (empty when it passed or ended for another reason).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_checks: Vec<String>,
    /// 1-based journal lines of the case's `case-started` and `case-finished` receipts.
    pub lines: (usize, usize),
}

/// Where the journal ends, so entries cut from its end are noticed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalAnchor {
    /// The journal's file name inside the bundle (`receipts.jsonl`).
    pub file: String,
    /// How many entries the finished run wrote (a kill matrix added later is not counted).
    pub entries: u64,
    /// The SHA-256 of the last of those entries' line: the chain head the summary vouches for.
    pub head_sha256: String,
}

/// The whole `bundle.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleSummary {
    /// The bundle layout version ([`FORMAT`]).
    pub format: u32,
    /// What the run is (id, commit, operator, architecture).
    #[serde(flatten)]
    pub meta: BundleMeta,
    /// The time of the `run-started` receipt.
    pub started: jiff::Timestamp,
    /// The time of the `run-finished` receipt (or, for a killed run, of its last receipt).
    pub finished: jiff::Timestamp,
    /// The run was interrupted or killed rather than completed.
    pub interrupted: bool,
    /// Every case, in the order it finished.
    pub cases: Vec<CaseSummary>,
    /// Where the journal ended when the run finished.
    pub journal: JournalAnchor,
    /// `kill-matrix.json` when the run wrote one, with its SHA-256.
    pub kill_matrix: Option<FileRef>,
}

/// Why a journal does not make a complete run.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The first receipt is not `run-started`.
    #[error(
        "line 1: the journal does not start with a run-started receipt; it is not a bundle journal"
    )]
    NoRunStarted,
    /// A receipt is not a typed observation of this format.
    #[error(transparent)]
    Observation(#[from] ObservationError),
    /// A receipt lacks what its kind needs beyond its payload (a case receipt without a case).
    #[error("line {line} (seq {seq}): malformed {kind} receipt: {reason}")]
    Malformed {
        /// 1-based line of the receipt.
        line: usize,
        /// Its sequence number.
        seq: u64,
        /// Its kind.
        kind: String,
        /// What is missing.
        reason: String,
    },
    /// A case started but the finalized run has no `case-finished` for it.
    #[error(
        "case {case:?} (started at line {line}, seq {seq}) has no case-finished receipt: the run stopped before the case ended"
    )]
    CaseNotFinished {
        /// The case.
        case: String,
        /// 1-based line of its `case-started` receipt.
        line: usize,
        /// That receipt's sequence number.
        seq: u64,
    },
    /// A `case-finished` receipt for a case that never started.
    #[error("line {line} (seq {seq}): case {case:?} was never started")]
    CaseNotStarted {
        /// The case.
        case: String,
        /// 1-based line of the `case-finished` receipt.
        line: usize,
        /// Its sequence number.
        seq: u64,
    },
    /// A case started or finished a second time.
    #[error("line {line} (seq {seq}): case {case:?} started or finished twice")]
    CaseTwice {
        /// The case.
        case: String,
        /// 1-based line of the second receipt.
        line: usize,
        /// Its sequence number.
        seq: u64,
    },
    /// A receipt other than a kill matrix follows `run-finished`.
    #[error(
        "line {line} (seq {seq}): a {kind} receipt after run-finished; only a kill matrix may be added to a finished run"
    )]
    AfterFinish {
        /// 1-based line of the late receipt.
        line: usize,
        /// Its sequence number.
        seq: u64,
        /// Its kind.
        kind: String,
    },
    /// The journal does not end with `run-finished`.
    #[error(
        "the journal's last entry (line {line}) is not run-finished: the run was not finalized"
    )]
    NotFinalized {
        /// 1-based line of the journal's last entry.
        line: usize,
    },
    /// The journal ends with `run-finished` but was read as a killed run (no `bundle.json`).
    #[error(
        "line {line}: the run finished (run-finished receipt) but its bundle.json is missing; restore bundle.json from the run's artifact (a finished run is reported only with the summary that anchors its journal)"
    )]
    FinishedNotKilled {
        /// 1-based line of the `run-finished` receipt.
        line: usize,
    },
}

fn malformed(line: usize, r: &Receipt, reason: impl std::fmt::Display) -> SummaryError {
    SummaryError::Malformed {
        line,
        seq: r.seq,
        kind: r.kind.clone(),
        reason: reason.to_string(),
    }
}

/// Reads a `run-started` receipt's metadata.
pub fn meta_of(receipt: &Receipt) -> Result<BundleMeta, SummaryError> {
    if receipt.kind != kind::RUN_STARTED {
        return Err(SummaryError::NoRunStarted);
    }
    match Observation::read(1, receipt)? {
        Observation::RunStarted(started) => Ok(started.meta()),
        _ => Err(SummaryError::NoRunStarted),
    }
}

struct Open {
    bucket: String,
    line: usize,
    seq: u64,
    time: jiff::Timestamp,
}

/// Derives the summary of a finalized run from its verified journal.
pub fn summarize(journal: &VerifiedJournal) -> Result<BundleSummary, SummaryError> {
    derive(journal, Ending::Finalized)
}

/// Why a case of a killed run has no verdict of its own.
pub const KILLED_REASON: &str = "killed: the case's process ended before the case reached a verdict (no case-finished receipt, no bundle.json; e.g. nextest's slow-timeout terminate-after)";

/// Derives the summary of a run whose process was killed before [`crate::bundle::Bundle::finalize`]
/// (nextest's `terminate-after`, SIGKILL, a crashed runner): the journal has no
/// `run-finished` entry and `bundle.json` was never written.
///
/// The summary claims only what the receipts prove: every case still open is
/// [`Verdict::Interrupted`] with [`KILLED_REASON`] and the last step it recorded, the run is
/// `interrupted`, and the anchor is the journal's last complete entry. A journal that *does*
/// end with `run-finished` is not a killed run: use [`summarize`].
pub fn summarize_killed(journal: &VerifiedJournal) -> Result<BundleSummary, SummaryError> {
    derive(journal, Ending::Killed)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ending {
    Finalized,
    Killed,
}

fn derive(journal: &VerifiedJournal, ending: Ending) -> Result<BundleSummary, SummaryError> {
    let receipts = &journal.receipts;
    let first = receipts.first().ok_or(SummaryError::NoRunStarted)?;
    let meta = meta_of(first)?;
    let walked = walk(receipts)?;
    match ending {
        Ending::Killed => killed_summary(journal, meta, walked),
        Ending::Finalized => finalized_summary(journal, meta, walked),
    }
}

/// What reading the journal once found.
#[derive(Default)]
struct Walked {
    /// Cases started and not (yet) finished, in start order.
    open: Vec<(String, Open)>,
    /// Cases finished, in finish order.
    cases: Vec<CaseSummary>,
    /// The last kill matrix recorded before `run-finished`.
    kill_matrix: Option<FileRef>,
    /// The `run-finished` receipt's time, `interrupted` and line.
    finished: Option<(jiff::Timestamp, bool, usize)>,
}

/// Reads every receipt as its typed observation and pairs each case's start with its end.
fn walk(receipts: &[Receipt]) -> Result<Walked, SummaryError> {
    let mut walked = Walked::default();
    let Walked {
        open,
        cases,
        kill_matrix,
        finished,
    } = &mut walked;
    for (i, r) in receipts.iter().enumerate() {
        let line = i + 1;
        // Every receipt is read as its typed observation: a missing, renamed or unknown field
        // anywhere refuses the journal at its line, whether or not the summary needs the entry.
        let observation = Observation::read(line, r)?;
        if finished.is_some() {
            // After run-finished only addenda (a kill matrix from a later self-test) may follow.
            if matches!(observation, Observation::KillMatrix(_)) {
                continue;
            }
            return Err(SummaryError::AfterFinish {
                line,
                seq: r.seq,
                kind: r.kind.clone(),
            });
        }
        match observation {
            Observation::CaseStarted(started_case) => {
                let case = case_of(line, r)?;
                if open.iter().any(|(n, _)| *n == case) || cases.iter().any(|c| c.name == case) {
                    return Err(SummaryError::CaseTwice {
                        case,
                        line,
                        seq: r.seq,
                    });
                }
                open.push((
                    case,
                    Open {
                        bucket: started_case.bucket,
                        line,
                        seq: r.seq,
                        time: r.time,
                    },
                ));
            }
            Observation::CaseFinished(finish) => {
                let case = case_of(line, r)?;
                let Some(pos) = open.iter().position(|(n, _)| *n == case) else {
                    return Err(if cases.iter().any(|c| c.name == case) {
                        SummaryError::CaseTwice {
                            case,
                            line,
                            seq: r.seq,
                        }
                    } else {
                        SummaryError::CaseNotStarted {
                            case,
                            line,
                            seq: r.seq,
                        }
                    });
                };
                let (name, started) = open.remove(pos);
                let duration_ms = r.time.duration_since(started.time).as_millis().max(0) as u64;
                cases.push(CaseSummary {
                    name,
                    bucket: started.bucket,
                    verdict: finish.verdict,
                    duration_ms,
                    evidence_used: finish.evidence_used,
                    reason: finish.reason,
                    failed_checks: finish.failed_checks,
                    lines: (started.line, line),
                });
            }
            Observation::KillMatrix(file) => *kill_matrix = Some(file),
            Observation::RunFinished(RunFinished { interrupted }) => {
                *finished = Some((r.time, interrupted, line));
            }
            _ => {}
        }
    }
    Ok(walked)
}

/// The summary of a run killed before it finalized: every open case `interrupted` at its last
/// receipt.
fn killed_summary(
    journal: &VerifiedJournal,
    meta: BundleMeta,
    walked: Walked,
) -> Result<BundleSummary, SummaryError> {
    let receipts = &journal.receipts;
    let first = receipts.first().expect("run-started at least");
    let Walked {
        open,
        mut cases,
        kill_matrix,
        finished,
    } = walked;
    if let Some((_, _, line)) = finished {
        return Err(SummaryError::FinishedNotKilled { line });
    }
    // Open cases end at their last receipt, in the order they started.
    for (name, started) in open {
        let (last_line, last) = receipts
            .iter()
            .enumerate()
            .skip(started.line - 1)
            .filter(|(_, r)| r.case.as_deref() == Some(name.as_str()))
            .map(|(i, r)| (i + 1, r))
            .next_back()
            .expect("the case-started receipt itself");
        cases.push(CaseSummary {
            duration_ms: last.time.duration_since(started.time).as_millis().max(0) as u64,
            reason: Some(format!(
                "{KILLED_REASON}; its last receipt is line {last_line} (step `{}`)",
                last.step
            )),
            name,
            bucket: started.bucket,
            verdict: Verdict::Interrupted,
            evidence_used: Vec::new(),
            failed_checks: Vec::new(),
            lines: (started.line, last_line),
        });
    }
    let last = receipts.last().expect("run-started at least");
    Ok(BundleSummary {
        format: FORMAT,
        meta,
        started: first.time,
        finished: last.time,
        interrupted: true,
        cases,
        journal: JournalAnchor {
            file: FILE_NAME.into(),
            entries: receipts.len() as u64,
            head_sha256: journal.head.clone(),
        },
        kill_matrix,
    })
}

/// The summary of a finalized run: every case finished, `run-finished` present.
fn finalized_summary(
    journal: &VerifiedJournal,
    meta: BundleMeta,
    walked: Walked,
) -> Result<BundleSummary, SummaryError> {
    let receipts = &journal.receipts;
    let first = receipts.first().expect("run-started at least");
    let Walked {
        open,
        cases,
        kill_matrix,
        finished,
    } = walked;
    if let Some((case, o)) = open.into_iter().next() {
        return Err(SummaryError::CaseNotFinished {
            case,
            line: o.line,
            seq: o.seq,
        });
    }
    let Some((finished, interrupted, finished_line)) = finished else {
        return Err(SummaryError::NotFinalized {
            line: receipts.len(),
        });
    };
    Ok(BundleSummary {
        format: FORMAT,
        meta,
        started: first.time,
        finished,
        interrupted,
        cases,
        journal: JournalAnchor {
            file: FILE_NAME.into(),
            entries: finished_line as u64,
            head_sha256: head_at(journal, finished_line),
        },
        kill_matrix,
    })
}

/// The chain head after `line` entries: the SHA-256 of line `line`.
pub fn head_at(journal: &VerifiedJournal, line: usize) -> String {
    match journal.receipts.get(line) {
        // The next entry's `prev` is exactly that hash (the chain was verified).
        Some(next) => next.prev.clone(),
        None => journal.head.clone(),
    }
}

/// A kill matrix added after the run finished ([`crate::bundle::Bundle::add_kill_matrix`]): its
/// 1-based line and file.
pub fn kill_matrix_addendum(
    journal: &VerifiedJournal,
) -> Result<Option<(usize, FileRef)>, SummaryError> {
    let Some(finished) = journal
        .receipts
        .iter()
        .position(|r| r.kind == kind::RUN_FINISHED)
    else {
        return Ok(None);
    };
    let mut found = None;
    for (i, r) in journal.receipts.iter().enumerate().skip(finished + 1) {
        match Observation::read(i + 1, r)? {
            Observation::KillMatrix(file) => found = Some((i + 1, file)),
            other => {
                return Err(SummaryError::AfterFinish {
                    line: i + 1,
                    seq: r.seq,
                    kind: other.kind().into(),
                });
            }
        }
    }
    Ok(found)
}

fn case_of(line: usize, r: &Receipt) -> Result<String, SummaryError> {
    r.case
        .clone()
        .ok_or_else(|| malformed(line, r, "no case name"))
}
