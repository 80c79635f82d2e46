//! `rehearse probe` (being built).

use super::CliError;

#[derive(Debug, clap::Subcommand)]
pub enum ProbeCommand {}

pub async fn run(command: ProbeCommand) -> Result<(), CliError> {
    match command {}
}
