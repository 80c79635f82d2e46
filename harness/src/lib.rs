//! Rehearsal: rehearses a game-server operator's riskiest operations on a real cluster and
//! hands back evidence a reviewer can trust.
//!
//! Layers, bottom up (data flows one way: cluster → observations → receipts → report):
//! - [`process`]: the only place that spawns host processes; records argv, exit code, output.
//! - [`backend`]: cluster backends (`embedded`, `kind`, `existing`) behind one trait.
//! - [`deploy`]: the operator under test (Helm chart, or the reference operator).
//! - [`namespaces`]: per-case namespaces and the startup sweep of leftovers.
//! - [`wait`], [`faults`], [`probe`]: watch-based waits, fault injectors and probes, all via kube.
//! - [`context`]: what a running case or qualification holds, and its named steps.
//! - [`qualify`], then [`cases`] (which run qualifications too), then [`run`] and [`cli`].
//! - [`evidence`] (the `rehearsal-evidence` crate): hash-chained receipts, typed observations,
//!   PVC UID tables and bundles, and [`report`]: reports rendered from bundles only.
//! - [`buckets`]: the bucket manifest and its check against `cargo nextest list`.
//! - [`cli`]: the `rehearse` command.

pub mod artifacts;
pub mod backend;
pub mod buckets;
pub mod cases;
pub mod cli;
pub mod context;
pub mod contract;
pub mod deploy;
pub mod explore;
pub use rehearsal_evidence as evidence;
pub mod faults;
pub mod fixture;
pub mod kube_error;
pub mod mutants;
pub mod namespaces;
pub mod probe;
pub mod process;
pub mod qualify;
pub mod registry;
pub use rehearsal_evidence::report;
pub mod run;
pub mod wait;
