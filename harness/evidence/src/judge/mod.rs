//! The harness's judgement, as pure functions over observations: how a case's assessment and
//! ending become a verdict ([`verdict`]), what the game's RCON audit log proves ([`audit`]),
//! and the qualification's gate decisions and batch arithmetic ([`gates`]).
//!
//! The harness reads the cluster and hands what it read to these functions; they reach no
//! cluster, so a mistake in them is caught in seconds by this crate's own tests
//! (`harness/evidence/tests/judge_*.rs`) and measured by `scripts/mutants.sh judge`.

pub mod audit;
pub mod gates;
pub mod verdict;
