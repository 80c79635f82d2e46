//! `rehearse report BUNDLE… [--out DIR] [--format md,html,junit,json]`: renders one
//! qualification report from one or more bundles of a commit: the amd64 and arm64 runs of
//! `rehearse run`, or the many bundles CI writes (one per case and architecture).

use std::path::PathBuf;

use super::CliError;
use crate::report::{self, Format, Report};

/// `rehearse report`: the bundles to render, where, and in which formats.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Bundle directories (reports/<run-id>) to render: any number per architecture, each case
    /// in one of them.
    #[arg(required = true)]
    pub bundles: Vec<PathBuf>,
    /// Where to write report.md, report.html, junit.xml and summary.json.
    #[arg(long, default_value = "reports/qualification")]
    pub out: PathBuf,
    /// Comma-separated formats: md, html, junit, json.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        ignore_case = true,
        default_value = "md,html,junit,json"
    )]
    pub format: Vec<Format>,
}

/// Renders the report. A bundle that cannot be loaded or verified exits 1 and nothing is
/// rendered; bundles that cannot be merged, or a report that cannot be written, exit 2.
pub async fn run(args: ReportArgs) -> Result<(), CliError> {
    let mut formats = args.format.clone();
    formats.sort();
    formats.dedup();
    // Every bundle is loaded (and verified) before anything is rendered: a refused bundle
    // leaves no partial report behind.
    let mut bundles = Vec::with_capacity(args.bundles.len());
    for dir in &args.bundles {
        bundles.push(report::load(dir).map_err(|e| {
            CliError::failed(format!(
                "{e}; nothing was rendered (rerun the affected cases, or leave that bundle out)"
            ))
        })?);
    }
    let merged = Report::merge(bundles, &args.out).map_err(|e| CliError::usage(e.to_string()))?;
    let written =
        report::write(&merged, &formats, &args.out).map_err(|e| CliError::usage(e.to_string()))?;
    for path in written {
        println!("{}", path.display());
    }
    if !merged.disagreements.is_empty() {
        eprintln!(
            "rehearse: architectures disagree on {} case(s); see the top of the report",
            merged.disagreements.len()
        );
    }
    Ok(())
}
