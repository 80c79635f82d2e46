//! The rollout qualification procedure (CONTRACT part C): rehearse a candidate template version
//! on a canary clone restored from a real backup, prove its rollback, and only then promote the
//! fleet in gated batches — or halt without touching any fleet member.
//!
//! Fleet progress lives in the harness's journal (receipts), never in a server's lifecycle
//! owner, so a failed canary cannot block a restore. A halted qualification leaves the baseline
//! receipt and the failed gate's evidence, and no `promotion` receipt.
//!
//! Nothing here assumes the fixture game: the clone copies the source GameServer's own spec,
//! the game and RCON ports, the RCON password and the quiesce commands come from the fleet's
//! GameTemplate and its Secret, and world data is compared as content digests of each world
//! claim (every file below it, see [`crate::probe::readback`]) taken before and after — never
//! as values a fixture wrote. What a fleet cannot offer (no RCON, no password Secret, no game
//! port) is a preflight refusal that names it.
//!
//! One file per stage, in the order a qualification runs them:
//!
//! | module | what it holds |
//! |---|---|
//! | [`access`] | cluster reads and the ways in: GameServers, pods, claims, read-backs, RCON, joins |
//! | [`preflight`] | what the procedure refuses to start with, each refusal naming its fix |
//! | [`procedure`] | the procedure itself, step by step (the entry points) |
//! | [`seed`] | back up the source, create its clone, restore the backup into it |
//! | [`gates`] | the gates a server passes on the candidate: [`gates::image`], [`gates::join`], [`gates::save`], [`gates::read_back`]; [`gates::pods`] is the one rule for every wait on a pod |
//! | [`rollback`] | the clone's rollback and how it is judged |
//! | [`promotion`] | the fleet moved in gated batches |
//! | [`tidy`] | removing what a run created (never a way back a member still needs) |
//! | [`fleet`] | the fleet as a fresh read shows it once the run ended |
//! | [`identity`] | which operator and harness ran |
//!
//! The stages depend on each other only downwards (procedure → promotion, rollback, seed →
//! gates → access); `harness/tests/module_graph.rs` keeps the graph acyclic.

pub mod access;
pub mod fleet;
pub mod gates;
pub mod identity;
pub mod preflight;
pub mod procedure;
pub mod promotion;
pub mod rollback;
pub mod seed;
pub mod tidy;

pub use crate::evidence::qualification::{
    AccessEvidence, ClaimDigest, ClaimReadBack, Gate, GateError, GateEvidence, HttpAnswer,
    ImageEvidence, JoinEvidence, MemberBaseline, Observed, Outcome, Plan, PreflightEvidence,
    Qualification, ReadBackEvidence, Rollback, RollbackEvidence, SaveEvidence, clone_name,
};
pub use access::{Access, join, rcon, server_pvcs};
pub use gates::{progress_line, set_progress};
pub use procedure::{qualify, qualify_into, qualify_recorded, start};
