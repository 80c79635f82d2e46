//! The journal verifier: parses every line and checks sequence, chain and hashes, naming the
//! first bad entry.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{GENESIS, Receipt, entry_hash, sha256_hex};
use crate::canonical;

/// A journal whose every entry checked out. `receipts[i]` is on line `i + 1`.
#[derive(Debug, Clone)]
pub struct VerifiedJournal {
    /// The journal file.
    pub path: PathBuf,
    /// Every entry, in order.
    pub receipts: Vec<Receipt>,
    /// SHA-256 of the last line (what the next entry's `prev` must be), or 64 zeros.
    pub head: String,
}

/// A partial last line left by a writer killed mid-write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncatedTail {
    /// 1-based line number of the partial entry.
    pub line: usize,
    /// Bytes of it that reached the file.
    pub bytes: usize,
}

/// What [`verify_prefix`] accepted: every complete entry, and the partial tail if there was one.
#[derive(Debug, Clone)]
pub struct PrefixVerified {
    /// The complete entries, all verified.
    pub journal: VerifiedJournal,
    /// The partial last line, if the writer was killed mid-write.
    pub truncated_tail: Option<TruncatedTail>,
}

/// The first thing wrong with a journal. Every variant names the file, the 1-based line and,
/// where it could be read, the entry's `seq`.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The journal could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The journal file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a JSON receipt.
    #[error(
        "{path} line {line}: not a JSON receipt ({reason}); the entry was damaged or inserted by hand"
    )]
    Unparsable {
        /// The journal file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What the JSON parser (or the receipt's shape) refused.
        reason: String,
    },
    /// An entry's content does not hash to its `sha256`: it was edited.
    #[error("{path} line {line}{}: tampered: its content does not match its sha256 (stored {stored}, computed {computed})", seq_suffix(*seq))]
    Tampered {
        /// The journal file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The entry's `seq`, if it could be read.
        seq: Option<u64>,
        /// The `sha256` the entry carries.
        stored: String,
        /// The SHA-256 of its content as it is now.
        computed: String,
    },
    /// An entry hashes correctly but its line was re-serialized after writing.
    #[error(
        "{path} line {line} (seq {seq}): tampered: the line is not in canonical form, so it was rewritten after it was written"
    )]
    NotCanonical {
        /// The journal file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The entry's `seq`.
        seq: u64,
    },
    /// An entry is out of order.
    #[error("{path} line {line} (seq {found}): reordered: expected seq {expected} here{}", expected_at.map(|l| format!(", found it at line {l}")).unwrap_or_default())]
    Reordered {
        /// The journal file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The `seq` that belongs on this line.
        expected: u64,
        /// The `seq` found there.
        found: u64,
        /// Where the entry that belongs here was found, if it is later in the file.
        expected_at: Option<usize>,
    },
    /// Entries are absent: the next `seq` is higher than the line's position.
    #[error(
        "{path} line {line} (seq {found}): missing entries: seq {expected}..{found} are not in the journal"
    )]
    Missing {
        /// The journal file.
        path: PathBuf,
        /// 1-based line where the gap shows.
        line: usize,
        /// The first absent `seq`.
        expected: u64,
        /// The `seq` found where it belonged.
        found: u64,
    },
    /// An entry's `prev` is not the previous line's SHA-256.
    #[error(
        "{path} line {line} (seq {seq}): broken chain: its prev does not match the previous line's SHA-256, so the previous entry was altered, removed or replaced"
    )]
    BrokenChain {
        /// The journal file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The entry's `seq`.
        seq: u64,
    },
    /// An entry of another run (or architecture) sits in this journal.
    #[error(
        "{path} line {line} (seq {seq}): belongs to run {found}, but the journal is run {expected}"
    )]
    ForeignEntry {
        /// The journal file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The entry's `seq`.
        seq: u64,
        /// `<run id>/<arch>` of the journal's first entry.
        expected: String,
        /// `<run id>/<arch>` of this entry.
        found: String,
    },
    /// The last line is partial (a writer killed mid-write).
    #[error("{path} line {line}: truncated last line ({bytes} bytes, no newline): a writer was killed mid-write; the {} entries before it verify", line - 1)]
    TruncatedTail {
        /// The journal file.
        path: PathBuf,
        /// 1-based line of the partial entry.
        line: usize,
        /// Bytes of it that reached the file.
        bytes: usize,
    },
}

fn seq_suffix(seq: Option<u64>) -> String {
    seq.map(|s| format!(" (seq {s})")).unwrap_or_default()
}

impl VerifyError {
    /// The 1-based line of the bad entry (0 when the file could not be read).
    pub fn line(&self) -> usize {
        match self {
            VerifyError::Io { .. } => 0,
            VerifyError::Unparsable { line, .. }
            | VerifyError::Tampered { line, .. }
            | VerifyError::NotCanonical { line, .. }
            | VerifyError::Reordered { line, .. }
            | VerifyError::Missing { line, .. }
            | VerifyError::BrokenChain { line, .. }
            | VerifyError::ForeignEntry { line, .. }
            | VerifyError::TruncatedTail { line, .. } => *line,
        }
    }
}

/// Verifies the whole journal; a partial last line is an error ([`VerifyError::TruncatedTail`]).
pub fn verify(path: impl AsRef<Path>) -> Result<VerifiedJournal, VerifyError> {
    let path = path.as_ref();
    let checked = verify_prefix(path)?;
    match checked.truncated_tail {
        Some(TruncatedTail { line, bytes }) => Err(VerifyError::TruncatedTail {
            path: path.to_path_buf(),
            line,
            bytes,
        }),
        None => Ok(checked.journal),
    }
}

/// Verifies every complete entry and accepts a partial last line (a writer killed mid-write),
/// reporting it in [`PrefixVerified::truncated_tail`].
pub fn verify_prefix(path: impl AsRef<Path>) -> Result<PrefixVerified, VerifyError> {
    let path = path.as_ref().to_path_buf();
    let bytes = std::fs::read(&path).map_err(|source| VerifyError::Io {
        path: path.clone(),
        source,
    })?;
    let mut receipts: Vec<Receipt> = Vec::new();
    let mut head = GENESIS.to_owned();
    let mut rest: &[u8] = &bytes;
    let mut line_no = 0;
    let mut truncated_tail = None;
    while !rest.is_empty() {
        line_no += 1;
        let Some(end) = rest.iter().position(|b| *b == b'\n') else {
            truncated_tail = Some(TruncatedTail {
                line: line_no,
                bytes: rest.len(),
            });
            break;
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        let receipt = match check_line(&path, line_no, line, &head, receipts.first()) {
            Ok(r) => r,
            Err(VerifyError::Missing {
                path,
                line,
                expected,
                found,
            }) => {
                // The absent seq may sit further down: then this is a reordering, not a loss.
                return Err(match find_seq(rest, expected) {
                    Some(offset) => VerifyError::Reordered {
                        path,
                        line,
                        expected,
                        found,
                        expected_at: Some(line + offset),
                    },
                    None => VerifyError::Missing {
                        path,
                        line,
                        expected,
                        found,
                    },
                });
            }
            Err(e) => return Err(e),
        };
        head = sha256_hex(line);
        receipts.push(receipt);
    }
    Ok(PrefixVerified {
        journal: VerifiedJournal {
            path,
            receipts,
            head,
        },
        truncated_tail,
    })
}

/// 1-based offset (from the line after the current one) of the first complete line in `rest`
/// whose `seq` is `seq`.
fn find_seq(rest: &[u8], seq: u64) -> Option<usize> {
    rest.split(|b| *b == b'\n')
        .enumerate()
        .find(|(_, line)| {
            serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|v| v.get("seq").and_then(Value::as_u64))
                == Some(seq)
        })
        .map(|(i, _)| i + 1)
}

fn check_line(
    path: &Path,
    line_no: usize,
    line: &[u8],
    prev_head: &str,
    first: Option<&Receipt>,
) -> Result<Receipt, VerifyError> {
    let unparsable = |reason: String| VerifyError::Unparsable {
        path: path.to_path_buf(),
        line: line_no,
        reason,
    };
    let value: Value = serde_json::from_slice(line).map_err(|e| unparsable(e.to_string()))?;
    let Value::Object(map) = &value else {
        return Err(unparsable("not a JSON object".into()));
    };
    let seq = map.get("seq").and_then(Value::as_u64);
    let stored = map
        .get("sha256")
        .and_then(Value::as_str)
        .ok_or_else(|| unparsable("no sha256 field".into()))?;
    let computed = entry_hash(map);
    if computed != stored {
        return Err(VerifyError::Tampered {
            path: path.to_path_buf(),
            line: line_no,
            seq,
            stored: stored.to_owned(),
            computed,
        });
    }
    let receipt: Receipt =
        serde_json::from_value(value.clone()).map_err(|e| unparsable(e.to_string()))?;
    if canonical::to_string(&value).as_bytes() != line {
        return Err(VerifyError::NotCanonical {
            path: path.to_path_buf(),
            line: line_no,
            seq: receipt.seq,
        });
    }
    let expected = (line_no - 1) as u64;
    if receipt.seq < expected {
        return Err(VerifyError::Reordered {
            path: path.to_path_buf(),
            line: line_no,
            expected,
            found: receipt.seq,
            expected_at: None,
        });
    }
    if receipt.seq > expected {
        // A later entry in an earlier slot is a swap if the skipped seq shows up later; either
        // way the reviewer learns which seq is absent from this position.
        return Err(VerifyError::Missing {
            path: path.to_path_buf(),
            line: line_no,
            expected,
            found: receipt.seq,
        });
    }
    if receipt.prev != prev_head {
        return Err(VerifyError::BrokenChain {
            path: path.to_path_buf(),
            line: line_no,
            seq: receipt.seq,
        });
    }
    if let Some(first) = first
        && (first.run_id != receipt.run_id || first.arch != receipt.arch)
    {
        return Err(VerifyError::ForeignEntry {
            path: path.to_path_buf(),
            line: line_no,
            seq: receipt.seq,
            expected: format!("{}/{}", first.run_id, first.arch),
            found: format!("{}/{}", receipt.run_id, receipt.arch),
        });
    }
    Ok(receipt)
}
