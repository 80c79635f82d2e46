//! The reference operator: a correct implementation of the Gameplane contract (CONTRACT.md
//! parts A and B) with kube-runtime, and its mutants.
//!
//! Every rehearsal case needs an operator that does the right thing, so the case can pass, and
//! operators that do one specific wrong thing ([`mutant::Mutant`]), so the harness can prove the
//! case catches it. It runs as a process with a kubeconfig (embedded cluster) or in-cluster
//! from its image (Kind, manifests under `deploy/`).

pub mod agent;
pub mod backup;
pub mod cli;
pub mod context;
pub mod error;
pub mod gameserver;
pub mod incarnation;
pub mod kubeutil;
pub mod module;
pub mod mutant;
pub mod restic;
pub mod restore;
pub mod run;
pub mod settings;

pub use mutant::{ActiveMutant, Mutant};
pub use settings::Settings;
