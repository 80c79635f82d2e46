//! `rehearse receipts verify BUNDLE`: checks a run's receipt chain and names the first bad entry.

use std::path::{Path, PathBuf};

use super::CliError;
use crate::evidence::receipts::{self, VerifyError};

/// `rehearse receipts` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ReceiptsCommand {
    /// Verify a bundle's receipt chain (sequence, links, hashes); exit non-zero at the first
    /// bad entry.
    Verify {
        /// A bundle directory (reports/<run-id>) or a receipts.jsonl file.
        bundle: PathBuf,
    },
}

/// Runs a `receipts` subcommand: a broken chain exits 1 naming the first bad entry; an
/// unreadable path exits 2.
pub async fn run(command: ReceiptsCommand) -> Result<(), CliError> {
    match command {
        ReceiptsCommand::Verify { bundle } => {
            let line = verify(&bundle)?;
            println!("{line}");
            Ok(())
        }
    }
}

/// The journal path for a bundle directory or a journal file.
fn journal_path(bundle: &Path) -> PathBuf {
    if bundle.is_dir() {
        bundle.join(receipts::FILE_NAME)
    } else {
        bundle.to_path_buf()
    }
}

/// Verifies and returns the one-line summary, or the one-line error naming the bad entry and
/// what to do.
pub fn verify(bundle: &Path) -> Result<String, CliError> {
    let path = journal_path(bundle);
    match receipts::verify(&path) {
        Ok(journal) => {
            check_anchor(bundle, &journal)?;
            check_summary(bundle)?;
            let (run, arch) = journal
                .receipts
                .first()
                .map(|r| (r.run_id.as_str(), r.arch.as_str()))
                .unwrap_or(("-", "-"));
            Ok(format!(
                "{}: {} entries verify (run {run}, {arch}); head sha256 {}",
                path.display(),
                journal.receipts.len(),
                journal.head
            ))
        }
        Err(VerifyError::Io { path, source }) => Err(CliError::usage(format!(
            "cannot read {}: {source}; pass a bundle directory (reports/<run-id>) or its receipts.jsonl",
            path.display()
        ))),
        Err(e @ VerifyError::TruncatedTail { .. }) => Err(CliError::failed(format!(
            "{e}; treat only those entries as evidence and rerun the case for a complete journal"
        ))),
        Err(e) => Err(CliError::failed(format!(
            "{e}; do not trust this bundle: rerun the case and keep the original for investigation"
        ))),
    }
}

/// A finalized bundle's `bundle.json` must claim nothing its receipts do not prove (verdicts,
/// reasons, evidence, the files it names): the same check `rehearse report` refuses a bundle
/// on, so a bundle that verifies is one the report will render.
fn check_summary(bundle: &Path) -> Result<(), CliError> {
    if !bundle.is_dir() || !bundle.join(crate::evidence::bundle::SUMMARY_FILE).is_file() {
        return Ok(());
    }
    crate::report::load(bundle).map(|_| ()).map_err(|e| {
        CliError::failed(format!(
            "{e}; do not trust this bundle: rerun the case and keep the original for investigation"
        ))
    })
}

/// A finalized bundle's `bundle.json` records the journal's length and head hash; comparing
/// them catches whole entries cut from the end, which the chain alone cannot show.
fn check_anchor(bundle: &Path, journal: &receipts::VerifiedJournal) -> Result<(), CliError> {
    let summary_path = bundle.join(crate::evidence::bundle::SUMMARY_FILE);
    if !bundle.is_dir() || !summary_path.is_file() {
        return Ok(());
    }
    let summary: crate::evidence::bundle::BundleSummary = std::fs::read(&summary_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| {
            CliError::failed(format!(
                "{}: not a readable bundle summary; the bundle was damaged, rerun the case",
                summary_path.display()
            ))
        })?;
    // A finished run may carry addenda (a kill matrix) after its anchored entries.
    let entries = journal.receipts.len() as u64;
    let anchored = usize::try_from(summary.journal.entries).unwrap_or(usize::MAX);
    let head = crate::evidence::bundle::summary::head_at(journal, anchored);
    let addenda_ok = journal
        .receipts
        .iter()
        .skip(anchored)
        .all(|r| r.kind == receipts::kind::KILL_MATRIX);
    if summary.journal.entries > entries || summary.journal.head_sha256 != head || !addenda_ok {
        return Err(CliError::failed(format!(
            "{}: the chain verifies but ends at entry {entries} (head {}), while bundle.json anchors {} entries (head {}): entries were cut from its end or bundle.json belongs to another run; do not trust this bundle, rerun the case",
            journal.path.display(),
            head,
            summary.journal.entries,
            summary.journal.head_sha256
        )));
    }
    Ok(())
}
