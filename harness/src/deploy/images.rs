//! The images a Kind node must be able to pull before the cases run.
//!
//! `scripts/build-images.sh` builds them FROM scratch over the workspace's binaries and pushes
//! them to the local registry the nodes pull `rehearsal.local/…` from (`--start-registry`;
//! [`crate::registry`]); the Kind backend checks the registry holds each of them (or, without a
//! registry, imports them into the nodes). Public images the cases also use (`busybox`,
//! `restic/restic`) are pulled by the node itself.

use crate::cases::fixture;

/// Every locally built image the cases and the reference operator reference, sorted: the
/// fixture game versions the templates name, both agents, and the operator.
pub fn for_cases() -> Vec<String> {
    let mut images: Vec<String> = [
        fixture::VERSION_STABLE,
        fixture::VERSION_COMPAT,
        fixture::VERSION_FORMAT,
        fixture::VERSION_HTTP_ONLY,
        fixture::VERSION_REFUSE_LOGIN,
        fixture::VERSION_STALL_CONFIG,
    ]
    .iter()
    .map(|v| format!("{}:{v}", fixture::GAME_IMAGE_REPO))
    .chain([
        fixture::AGENT_IMAGE.to_string(),
        fixture::LEGACY_AGENT_IMAGE.to_string(),
        crate::probe::readback::INSPECT_IMAGE.to_string(),
        super::reference_operator::IMAGE.to_string(),
    ])
    .collect();
    images.sort();
    images.dedup();
    images
}
