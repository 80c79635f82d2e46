//! `rehearse receipts` (being built).

use super::CliError;

#[derive(Debug, clap::Subcommand)]
pub enum ReceiptsCommand {}

pub async fn run(command: ReceiptsCommand) -> Result<(), CliError> {
    match command {}
}
