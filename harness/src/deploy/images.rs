//! The images a Kind node must be able to pull before the cases run.
//!
//! `scripts/build-images.sh` builds them FROM scratch over the workspace's binaries and pushes
//! them to the local registry the nodes pull `rehearsal.local/…` from (`--start-registry`;
//! [`crate::registry`]); the Kind backend checks the registry holds each of them (or, without a
//! registry, imports them into the nodes). Public images the cases also use (`busybox`,
//! `restic/restic`) are pulled by the node itself.

/// The fixture game's images by template version id (each is also its image tag). The
/// candidates are pinned by digest when the qualification procedure runs (see `qualify`).
///
/// The fleet's running version: reads and writes world format 1.
pub const VERSION_STABLE: &str = "1.0";
/// A compatible candidate: newer, still reads and writes format 1 (rollback by re-pinning).
pub const VERSION_COMPAT: &str = "1.1-compat";
/// A format-changing candidate: migrates every world to format 2, which 1.x refuses (rollback
/// needs the pre-candidate snapshot).
pub const VERSION_FORMAT: &str = "2.0-format";
/// A bad candidate that serves the world marker over HTTP on the game port and speaks no
/// Minecraft.
pub const VERSION_HTTP_ONLY: &str = "http-only";
/// A candidate version whose image no node can pull.
pub const VERSION_UNPULLABLE: &str = "unpullable";
/// Answers the status ping, refuses every login.
pub const VERSION_REFUSE_LOGIN: &str = "refuse-login";
/// Logs in, never finishes the configuration phase.
pub const VERSION_STALL_CONFIG: &str = "stall-configuration";

/// The fixture game's repository; a version's image is `<repo>:<version id>`.
pub const GAME_IMAGE_REPO: &str = "rehearsal.local/fixture-game";
/// The current fixture agent (with the pod-bound identity route).
pub const AGENT_IMAGE: &str = "rehearsal.local/fixture-agent:1.0";
/// An older fixture agent without the identity route.
pub const LEGACY_AGENT_IMAGE: &str = "rehearsal.local/fixture-agent:legacy";

/// Every locally built image the cases and the reference operator reference, sorted: the
/// fixture game versions the templates name, both agents, and the operator.
pub fn for_cases() -> Vec<String> {
    let mut images: Vec<String> = [
        VERSION_STABLE,
        VERSION_COMPAT,
        VERSION_FORMAT,
        VERSION_HTTP_ONLY,
        VERSION_REFUSE_LOGIN,
        VERSION_STALL_CONFIG,
    ]
    .iter()
    .map(|v| format!("{}:{v}", GAME_IMAGE_REPO))
    .chain([
        AGENT_IMAGE.to_string(),
        LEGACY_AGENT_IMAGE.to_string(),
        crate::probe::readback::INSPECT_IMAGE.to_string(),
        super::reference_operator::IMAGE.to_string(),
    ])
    .collect();
    images.sort();
    images.dedup();
    images
}
