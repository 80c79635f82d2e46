//! Condition types and reasons Gameplane reports, and the one rule for updating a condition list.
//!
//! `lastTransitionTime` changes only when a condition's status flips, as the Kubernetes API
//! conventions require; the harness relies on that to tell a fresh verdict from an old one.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Condition types.
pub mod types {
    /// GameServer: a replica is ready (reason `IdleAsleep` marks idle sleep).
    pub const READY: &str = "Ready";
    /// GameServer: a rollout of the desired version is under way.
    pub const PROGRESSING: &str = "Progressing";
    /// GameServer: the game is not crash looping or failing to pull.
    pub const HEALTHY: &str = "Healthy";
    /// Backup/Restore: the operation reached its end (True = success).
    pub const COMPLETED: &str = "Completed";
    /// Backup: the source was returned to save-on (or it is known that it no longer needs it).
    pub const UNQUIESCED: &str = "Unquiesced";
}

/// Condition reasons.
pub mod reasons {
    /// The replica is ready.
    pub const RUNNING: &str = "Running";
    /// The server sleeps because it was idle.
    pub const IDLE_ASLEEP: &str = "IdleAsleep";
    /// `spec.suspend` is true.
    pub const SUSPENDED: &str = "Suspended";
    /// No ready replica yet.
    pub const STARTING: &str = "Starting";
    /// The game image cannot be pulled.
    pub const IMAGE_PULL_FAILED: &str = "ImagePullFailed";
    /// The game container crash loops (restartCount ≥ 3).
    pub const CRASH_LOOP: &str = "CrashLoopBackOff";
    /// The game container terminated with a non-zero exit code.
    pub const CONTAINER_EXITED: &str = "ContainerExited";
    /// The template or version the server names does not exist.
    pub const TEMPLATE_NOT_FOUND: &str = "TemplateNotFound";
    /// The game incarnation the live capture was bound to changed or became unobservable.
    pub const SOURCE_CHANGED: &str = "SourceChanged";
    /// The agent could not prove which pod it serves (older agent, wrong pod).
    pub const IDENTITY_PREFLIGHT_FAILED: &str = "IdentityPreflightFailed";
    /// The agent refused or failed the quiesce call.
    pub const QUIESCE_FAILED: &str = "QuiesceFailed";
    /// The game did not reach a running incarnation within the preparation deadline.
    pub const PREPARATION_TIMEOUT: &str = "PreparationTimeout";
    /// An older operator left the Backup mid-preparation without the incarnation fields: the
    /// capture cannot be proven bound to one game process.
    pub const LEGACY_PREPARATION: &str = "LegacyPreparation";
    /// The restic copy Job failed.
    pub const COPY_FAILED: &str = "CopyFailed";
    /// A stopped source started while its copy ran.
    pub const SOURCE_STARTED: &str = "SourceStarted";
    /// The operation finished as asked.
    pub const SUCCEEDED: &str = "Succeeded";
    /// The agent confirmed save-on on the original pod.
    pub const UNQUIESCE_SUCCEEDED: &str = "UnquiesceSucceeded";
    /// The original game process exited, so nothing remains to unquiesce; nothing was sent to
    /// a successor.
    pub const ORIGINAL_PROCESS_EXITED: &str = "OriginalProcessExited";
    /// The unquiesce call to the original pod failed while it still runs.
    pub const UNQUIESCE_FAILED: &str = "UnquiesceFailed";
    /// Nothing was quiesced (stopped source, or `spec.quiesce: false`).
    pub const NOT_QUIESCED: &str = "NotQuiesced";
    /// A referenced object (server, Secret, Backup) is missing or unusable.
    pub const INVALID_REFERENCE: &str = "InvalidReference";
}

/// Sets condition `type_` in `conditions`, keeping `lastTransitionTime` when the status does not
/// change. Returns whether anything changed.
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: Time,
) -> bool {
    let status = if status { "True" } else { "False" }.to_string();
    if let Some(existing) = conditions.iter_mut().find(|c| c.type_ == type_) {
        let changed = existing.status != status
            || existing.reason != reason
            || existing.message != message
            || existing.observed_generation != observed_generation;
        if existing.status != status {
            existing.last_transition_time = now;
        }
        existing.status = status;
        existing.reason = reason.to_string();
        existing.message = message.to_string();
        existing.observed_generation = observed_generation;
        return changed;
    }
    conditions.push(Condition {
        type_: type_.to_string(),
        status,
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation,
        last_transition_time: now,
    });
    true
}

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether condition `type_` is present with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn transition_time_moves_only_when_status_flips() {
        let mut list = Vec::new();
        assert!(set(
            &mut list,
            types::READY,
            false,
            "Starting",
            "",
            Some(1),
            at(10)
        ));
        assert!(set(
            &mut list,
            types::READY,
            false,
            "Other",
            "m",
            Some(1),
            at(20)
        ));
        assert_eq!(list[0].last_transition_time, at(10));
        assert!(!set(
            &mut list,
            types::READY,
            false,
            "Other",
            "m",
            Some(1),
            at(30)
        ));
        assert!(set(
            &mut list,
            types::READY,
            true,
            "Running",
            "",
            Some(1),
            at(40)
        ));
        assert_eq!(list[0].last_transition_time, at(40));
        assert!(is_true(&list, types::READY));
        assert_eq!(list.len(), 1);
    }
}
