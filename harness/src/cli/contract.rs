//! `rehearse contract`: check the clause matrix (`docs/contract.toml`) against the bucket
//! manifest, and render `docs/contract.md` from it.

use std::path::{Path, PathBuf};

use super::CliError;
use crate::buckets::{DEFAULT_MANIFEST, Manifest};
use crate::contract::{Contract, DEFAULT_CONTRACT, DEFAULT_DOCUMENT};

/// `rehearse contract` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ContractCommand {
    /// Prove that every clause has a check and a mutant, and every mutant a clause.
    Verify {
        /// The workspace root (where docs/contract.toml and scenarios/buckets.toml are).
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
    /// Render docs/contract.md from docs/contract.toml (to stdout, or into the file).
    Render {
        /// The workspace root.
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// Write docs/contract.md instead of printing it.
        #[arg(long)]
        write: bool,
    },
}

fn load(root: &Path) -> Result<(Contract, Manifest), CliError> {
    let contract =
        Contract::load(&root.join(DEFAULT_CONTRACT)).map_err(|e| CliError::usage(e.to_string()))?;
    let manifest =
        Manifest::load(&root.join(DEFAULT_MANIFEST)).map_err(|e| CliError::usage(e.to_string()))?;
    Ok((contract, manifest))
}

/// Runs a `rehearse contract` subcommand.
pub async fn run(cmd: ContractCommand) -> Result<(), CliError> {
    match cmd {
        ContractCommand::Verify { root } => {
            let (contract, manifest) = load(&root)?;
            let problems = contract.verify(&manifest);
            if !problems.is_empty() {
                for p in &problems {
                    eprintln!("rehearse: {p}");
                }
                return Err(CliError::failed(format!(
                    "{} problem(s) in {DEFAULT_CONTRACT}",
                    problems.len()
                )));
            }
            let unguarded = contract.unguarded(&manifest);
            println!(
                "{DEFAULT_CONTRACT}: {} clauses, every one with a check and a mutant; {} proofs not targeted by a mutant yet",
                contract.clauses().count(),
                unguarded.len()
            );
            Ok(())
        }
        ContractCommand::Render { root, write } => {
            let (contract, manifest) = load(&root)?;
            let doc = contract.render_markdown(&manifest);
            if write {
                let path = root.join(DEFAULT_DOCUMENT);
                std::fs::write(&path, doc).map_err(|e| {
                    CliError::usage(format!("cannot write {}: {e}", path.display()))
                })?;
                println!("wrote {}", path.display());
            } else {
                print!("{doc}");
            }
            Ok(())
        }
    }
}
