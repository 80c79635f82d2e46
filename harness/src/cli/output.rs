//! What the commands that run cases and explorations share: how many run at once on the
//! embedded cluster, the one-line error of a run that could not start, and where the bundle's
//! rendered reports are. (Its own module so `run` and `explore` need not import each other.)

use std::path::{Path, PathBuf};

use super::CliError;
use crate::run;

/// Cases at once on the embedded cluster unless `--parallel` says otherwise.
pub const EMBEDDED_PARALLEL: usize = 4;

/// The one-line usage error of a run that could not start.
pub(crate) fn run_error(e: run::RunError) -> CliError {
    CliError::usage(format!("the rehearsal could not run: {e}"))
}

/// Renders the bundle's reports and prints where they and the bundle are; a report that
/// cannot be rendered is said on stderr (the bundle stays, whole).
pub(crate) fn print_report(dir: &Path) {
    match render_report(dir) {
        Ok(files) => {
            for f in files {
                println!("report: {}", f.display());
            }
        }
        Err(e) => {
            eprintln!("rehearse: the bundle was written but the report could not be rendered: {e}")
        }
    }
    println!("bundle: {}", dir.display());
}

/// Renders report.md and report.html into the bundle directory.
pub(crate) fn render_report(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let loaded = crate::report::load(dir).map_err(|e| e.to_string())?;
    let report = crate::report::Report::merge(vec![loaded], dir).map_err(|e| e.to_string())?;
    crate::report::write(
        &report,
        &[crate::report::Format::Markdown, crate::report::Format::Html],
        dir,
    )
    .map_err(|e| e.to_string())
}
