//! `rehearse cluster` (being built).

use super::CliError;

#[derive(Debug, clap::Subcommand)]
pub enum ClusterCommand {}

pub async fn run(command: ClusterCommand) -> Result<(), CliError> {
    match command {}
}
