//! Qualification reports, rendered only from bundles.
//!
//! Loading and rendering are separate layers: [`load()`] verifies a bundle and extracts what the
//! receipts prove (refusing the bundle outright if anything does not check), [`model`] merges
//! architectures by case name into a [`Report`], and the renderers ([`markdown`], [`html`] with
//! its SVG [`timeline`], JUnit via [`crate::report::junit`], [`json`]) are pure
//! functions of a [`Report`]: no clock, no cluster, stable ordering, so the same bundles give
//! byte-identical output.
//!
//! ```no_run
//! use rehearsal_evidence::report::{self, Format};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bundles = vec![report::load::load("reports/run-amd64")?, report::load::load("reports/run-arm64")?];
//! let merged = report::Report::merge(bundles, std::path::Path::new("reports/qualification"))?;
//! let markdown = report::render(&merged, Format::Markdown);
//! # let _ = markdown; Ok(()) }
//! ```

pub mod escape;
pub mod html;
pub mod json;
pub mod junit;
pub mod links;
pub mod load;
pub mod markdown;
pub mod matrix;
pub mod model;
pub mod qualification;
pub mod timeline;

pub use load::{LoadError, LoadedBundle, load};
pub use model::{MergeError, Report};

use std::path::{Path, PathBuf};

/// An output format of `rehearse report` (with the `clap` feature, a `--format` value: `md`
/// or `markdown`, `html`, `junit` or `xml`, `json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// `report.md`, for a pull request or a job summary.
    #[cfg_attr(feature = "clap", value(name = "md", alias = "markdown"))]
    Markdown,
    /// `report.html`, one self-contained page with timelines.
    Html,
    /// `junit.xml`, for CI test views.
    #[cfg_attr(feature = "clap", value(alias = "xml"))]
    Junit,
    /// `summary.json`, for machines.
    Json,
}

impl Format {
    /// Every format, in the order files are written.
    pub const ALL: [Format; 4] = [Format::Markdown, Format::Html, Format::Junit, Format::Json];

    /// The file the format is written to inside the output directory.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Markdown => "report.md",
            Format::Html => "report.html",
            Format::Junit => "junit.xml",
            Format::Json => "summary.json",
        }
    }
}

/// Renders `report` in `format`.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Markdown => markdown::render(report),
        Format::Html => html::render(report),
        Format::Json => json::render(report),
        Format::Junit => {
            let runs: Vec<&crate::summary::BundleSummary> = report.summaries.iter().collect();
            crate::report::junit::render(&runs)
        }
    }
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot {action}: {source}; check that the output directory is writable")]
pub struct WriteError {
    /// The file or directory.
    pub path: PathBuf,
    /// What was being done (`create`, `write`, `rename into place`).
    pub action: &'static str,
    /// The operating system's error.
    #[source]
    pub source: std::io::Error,
}

/// Writes each format into `out_dir` (created if needed). Each file is written to a temporary
/// name, fsynced and renamed, so a reader never sees a half-written report.
pub fn write(
    report: &Report,
    formats: &[Format],
    out_dir: &Path,
) -> Result<Vec<PathBuf>, WriteError> {
    use std::io::Write;
    let err = |path: &Path, action, source| WriteError {
        path: path.to_path_buf(),
        action,
        source,
    };
    std::fs::create_dir_all(out_dir).map_err(|e| err(out_dir, "create", e))?;
    let mut written = Vec::new();
    for format in formats {
        let path = out_dir.join(format.file_name());
        let tmp = out_dir.join(format!(".{}.tmp", format.file_name()));
        let text = render(report, *format);
        let mut file = std::fs::File::create(&tmp).map_err(|e| err(&tmp, "create", e))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| err(&tmp, "write", e))?;
        std::fs::rename(&tmp, &path).map_err(|e| err(&path, "rename into place", e))?;
        written.push(path);
    }
    Ok(written)
}
