//! `rehearse buckets` (being built).

use super::CliError;

#[derive(Debug, clap::Subcommand)]
pub enum BucketsCommand {}

pub async fn run(command: BucketsCommand) -> Result<(), CliError> {
    match command {}
}
