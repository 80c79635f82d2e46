//! `rehearse report` (being built).

use super::CliError;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Bundle directories to render.
    pub bundles: Vec<std::path::PathBuf>,
}

pub async fn run(_args: ReportArgs) -> Result<(), CliError> {
    Err(CliError::usage(
        "rehearse report is not available in this build",
    ))
}
