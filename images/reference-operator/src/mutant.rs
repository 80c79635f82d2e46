//! Mutants: each re-creates one known defect, so the harness can prove that the rehearsal case
//! written for it fails against it.
//!
//! A mutant is a small, explicit branch at the one place the defect lives
//! (`ctx.mutant.is(Mutant::…)`); everything else stays the correct operator.

use std::fmt;
use std::str::FromStr;

/// One known defect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mutant {
    /// Compares only the pod UID, not the game container's ID and restart count.
    IgnoreIncarnation,
    /// Treats a stopped server like a live one and needs the (absent) agent to quiesce.
    StoppedSourceNeedsAgent,
    /// Sends save-on to whatever pod `<gs>-0` is now, with its current UID.
    UnquiesceAnyPod,
    /// Restores by copying the snapshot over the claims without removing newer files.
    RestoreOverlays,
    /// Deletes and recreates the world and extra claims before restoring into them.
    RestoreRecreatesPvc,
    /// Copies only the world claim, not the extra claims.
    BackupSkipsExtras,
    /// Copies the extra claims the server declares, never the ones its template declares.
    BackupExtrasFromServerOnly,
    /// Reports a Backup Succeeded (consistency Quiesced) when the copy Job failed.
    SucceedOnFailedCopy,
    /// Skips the read-only identity preflight and falls back to the unbound `/quiesce` route.
    NoIdentityPreflight,
    /// Fails an invalidated live capture with reason `CopyFailed` instead of `SourceChanged`.
    WrongFailureReason,
    /// Leaves the copy Job of an invalidated capture running instead of draining it.
    InvalidatedWithoutDraining,
    /// Never sends save-on after a successful quiesced copy, yet reports `UnquiesceSucceeded`.
    NoUnquiesceAfterSuccess,
    /// Never sends save-on after a failed quiesced Backup, and reports `NotQuiesced`.
    NoUnquiesceAfterFailure,
    /// Reports the original process's exit as `UnquiesceSucceeded`.
    ExitReportedAsUnquiesced,
    /// Labels the copy of a stopped server `consistency: Quiesced`.
    StoppedLabelledQuiesced,
    /// Ignores idle sleep: an idle-asleep server is treated as live and fails `QuiesceFailed`.
    IdleAsleepTreatedLive,
    /// Wakes an idle-asleep server (clears `status.idle.asleep`) before copying it.
    BackupWakesIdleServer,
    /// Does not invalidate the copy of a stopped server that starts while the copy runs.
    MidCopyStartIgnored,
    /// Restores the server's newest snapshot instead of the Backup's own.
    RestoreLatestSnapshot,
    /// Copies the mods claim along with the world and extra claims.
    BackupIncludesMods,
    /// Fails a live Backup at once when the game container is not running yet.
    NoPreparationWait,
    /// Restores only the world claim and leaves the extra claims unchanged.
    RestoreSkipsExtras,
    /// Binds the capture to every container of the pod: an agent restart invalidates it.
    AgentRestartInvalidates,
    /// Records the source's pod UID but not the game container's ID.
    SourceContainerUnrecorded,
    /// Does not compare the pod UID after quiesce: a replaced pod goes unnoticed.
    ReplacedPodIgnored,
    /// Skips the identity preflight, quiesces through the unbound route and then leaves the Backup Pending.
    PreflightSkippedPending,
    /// Treats an agent that is not running (crash-looping) as a changed source.
    AgentDownInvalidates,
    /// Sends save-on as soon as the copy's pod runs, while restic still reads the claims.
    EarlySaveOn,
    /// Reports a Restore Succeeded although its restic Job failed.
    RestoreFailureReportedSucceeded,
    /// Clears the claims before restic has read the snapshot, so a failed restore leaves them empty.
    RestoreFailureWipesClaims,
    /// Leaves the server suspended when its Restore fails.
    RestoreFailureKeepsSuspended,
    /// Never reports an image pull failure on the GameServer (phase stays Starting).
    PullFailureUnreported,
    /// Fails a Backup whose copy Job failed with reason `QuiesceFailed` instead of `CopyFailed`.
    CopyFailureMisreported,
    /// Leaves the Job of a failed copy in place when the Backup ends Failed.
    FailedCopyLeftRunning,
    /// Ends a Backup Succeeded without setting its Completed condition.
    SuccessWithoutCompleted,
    /// Fails a refused identity preflight with reason `QuiesceFailed` instead of `IdentityPreflightFailed`.
    PreflightFailureMisreported,
    /// Fails a stopped server's copy that it started during with reason `SourceChanged` instead of `SourceStarted`.
    MidCopyStartMisreported,
    /// Labels a raw copy (`spec.quiesce: false`) `consistency: Quiesced`.
    RawCopyLabelledQuiesced,
    /// Keeps the preparation deadline in memory only: a restarted operator starts it anew.
    DeadlineInMemory,
    /// Keeps the cleanup obligation (what was quiesced, whether save-on was sent) in memory
    /// only: a restarted operator forgets it owes save-on.
    CleanupLostOnRestart,
    /// Removes the Backup's cleanup finalizer as soon as it is deleted, before any cleanup.
    FinalizerRemovedBeforeCleanup,
    /// Takes a legacy mid-preparation record (no incarnation fields) for a live-bound one:
    /// binds it to whatever runs now and finishes it as a consistent success.
    LegacyTreatedLiveBound,
    /// Keeps fleet progress as a lock on the template's servers: a Restore waits while another
    /// server of its template is Failed on a version of its own (a halted canary), for ever.
    CanaryBlocksRestore,
    /// Never compares a Module's pinned digest with the bundle served: a moved tag installs.
    BundleDigestUnchecked,
    /// Compares a Module's pin with the bundle layer's digest, not the manifest's: every pinned
    /// bundle is refused as moved.
    BundlePinAgainstLayer,
    /// Takes any 409 answering its creation of a copy Job for "it exists already", also a
    /// `Conflict` that created nothing: the copy is then missing.
    ConflictTakenForExists,
    /// In its first pass over a Backup whose copy runs when it starts, takes the copy Job
    /// from a list (as an informer's first list has it) instead of reading it: a Job missing
    /// from a list a lagging cache answered is taken for one deleted.
    FirstListTrusted,
    /// After recording a Backup's source, skips every pass until its cache shows that write
    /// (an expectation with no expiry) instead of going on from what it read: an event its
    /// watch never delivers leaves the Backup where it is, whatever else wakes it.
    SourceEventAwaited,
    /// Installs a bundle's layer without hashing its bytes: a registry that serves the pinned
    /// manifest but other bytes for its layer has its content installed as the pinned bundle.
    LayerHashSkipped,
}

impl Mutant {
    /// Every mutant, in documentation order.
    pub const ALL: [Mutant; 49] = [
        Mutant::IgnoreIncarnation,
        Mutant::StoppedSourceNeedsAgent,
        Mutant::UnquiesceAnyPod,
        Mutant::RestoreOverlays,
        Mutant::RestoreRecreatesPvc,
        Mutant::BackupSkipsExtras,
        Mutant::BackupExtrasFromServerOnly,
        Mutant::SucceedOnFailedCopy,
        Mutant::NoIdentityPreflight,
        Mutant::WrongFailureReason,
        Mutant::InvalidatedWithoutDraining,
        Mutant::NoUnquiesceAfterSuccess,
        Mutant::NoUnquiesceAfterFailure,
        Mutant::ExitReportedAsUnquiesced,
        Mutant::StoppedLabelledQuiesced,
        Mutant::IdleAsleepTreatedLive,
        Mutant::BackupWakesIdleServer,
        Mutant::MidCopyStartIgnored,
        Mutant::RestoreLatestSnapshot,
        Mutant::BackupIncludesMods,
        Mutant::NoPreparationWait,
        Mutant::RestoreSkipsExtras,
        Mutant::AgentRestartInvalidates,
        Mutant::SourceContainerUnrecorded,
        Mutant::ReplacedPodIgnored,
        Mutant::PreflightSkippedPending,
        Mutant::AgentDownInvalidates,
        Mutant::EarlySaveOn,
        Mutant::RestoreFailureReportedSucceeded,
        Mutant::RestoreFailureWipesClaims,
        Mutant::RestoreFailureKeepsSuspended,
        Mutant::PullFailureUnreported,
        Mutant::CopyFailureMisreported,
        Mutant::FailedCopyLeftRunning,
        Mutant::SuccessWithoutCompleted,
        Mutant::PreflightFailureMisreported,
        Mutant::MidCopyStartMisreported,
        Mutant::RawCopyLabelledQuiesced,
        Mutant::DeadlineInMemory,
        Mutant::CleanupLostOnRestart,
        Mutant::FinalizerRemovedBeforeCleanup,
        Mutant::LegacyTreatedLiveBound,
        Mutant::CanaryBlocksRestore,
        Mutant::BundleDigestUnchecked,
        Mutant::BundlePinAgainstLayer,
        Mutant::ConflictTakenForExists,
        Mutant::FirstListTrusted,
        Mutant::SourceEventAwaited,
        Mutant::LayerHashSkipped,
    ];

    fn entry(self) -> &'static (Mutant, &'static str, &'static str, &'static str) {
        CATALOGUE
            .iter()
            .find(|e| e.0 == self)
            .expect("every mutant is in the catalogue")
    }

    /// The `--mutant` name.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The rehearsal case (CONTRACT.md C table) that must catch this mutant.
    pub fn case(self) -> &'static str {
        self.entry().2
    }

    /// What the case observes against this mutant that it never observes against the correct
    /// operator.
    pub fn difference(self) -> &'static str {
        self.entry().3
    }
}

/// The catalogue, in documentation order: each mutant with its `--mutant` name, the rehearsal
/// case (CONTRACT.md C table) that must catch it, and what that case observes against it that it
/// never observes against the correct operator.
const CATALOGUE: [(Mutant, &str, &str, &str); 49] = [
    (
        Mutant::IgnoreIncarnation,
        "ignore-incarnation",
        "live backup, same-pod game restart",
        "a same-pod game restart during the copy still ends Succeeded with consistency Quiesced (correct: Failed, reason SourceChanged)",
    ),
    (
        Mutant::StoppedSourceNeedsAgent,
        "stopped-source-needs-agent",
        "stopped-server backups",
        "a quiesce backup of a suspended server without a pod ends Failed, reason QuiesceFailed (correct: Succeeded, consistency Stopped)",
    ),
    (
        Mutant::UnquiesceAnyPod,
        "unquiesce-any-pod",
        "live backup, pod replaced during preparation",
        "save-on reaches the replacement pod (its RCON audit log shows save-on; correct: no call, Unquiesced reason OriginalProcessExited)",
    ),
    (
        Mutant::RestoreOverlays,
        "restore-overlays",
        "format-changing update, restore-required rollback",
        "a file created after the backup survives the restore (correct: the claims hold exactly the snapshot)",
    ),
    (
        Mutant::RestoreRecreatesPvc,
        "restore-recreates-pvc",
        "format-changing update, restore-required rollback",
        "world and extra PVC UIDs change across the restore (correct: same UIDs)",
    ),
    (
        Mutant::BackupSkipsExtras,
        "backup-skips-extras",
        "format-changing update, restore-required rollback",
        "the snapshot lacks the extra world, so after a restore the extra claim keeps its newer value (correct: the extra value returns)",
    ),
    (
        Mutant::BackupExtrasFromServerOnly,
        "backup-extras-from-server-only",
        "extra world declared only on the template",
        "a server whose extra world comes from its template's storage.extra is backed up without it, so a clone seeded from the snapshot has an empty extra world (correct: the snapshot holds every claim the server mounts)",
    ),
    (
        Mutant::SucceedOnFailedCopy,
        "succeed-on-failed-copy",
        "stopped-server backups (repository made unusable)",
        "a Backup whose restic Job failed (unusable repository) ends Succeeded without a snapshot id (correct: Failed, reason CopyFailed)",
    ),
    (
        Mutant::NoIdentityPreflight,
        "no-identity-preflight",
        "live backup, older agent without identity route",
        "an older agent without the identity route is quiesced: the game's RCON audit log shows save-off (correct: Failed, reason IdentityPreflightFailed, no save-off)",
    ),
    (
        Mutant::WrongFailureReason,
        "wrong-failure-reason",
        "live backup, same-pod game restart",
        "a same-pod game restart or a replaced pod fails the Backup with Completed reason CopyFailed, consistency Invalidated (correct: reason SourceChanged)",
    ),
    (
        Mutant::InvalidatedWithoutDraining,
        "invalidated-without-draining",
        "live backup, same-pod game restart",
        "after an invalidation (SourceChanged or SourceStarted) the Backup ends Failed but its copy Job still exists (correct: the Job is deleted before the Backup ends)",
    ),
    (
        Mutant::NoUnquiesceAfterSuccess,
        "no-unquiesce-after-success",
        "live backup, agent restart",
        "after a successful quiesced copy the original incarnation's RCON audit log has save-off but no save-on, while Unquiesced says True, UnquiesceSucceeded (correct: save-on reaches it)",
    ),
    (
        Mutant::NoUnquiesceAfterFailure,
        "no-unquiesce-after-failure",
        "live backup, restore round trip (repository made unusable)",
        "a quiesced Backup that fails while the game still runs (e.g. the copy Job failed) leaves the game without save-on; Unquiesced says True, NotQuiesced (correct: save-on reaches it, UnquiesceSucceeded)",
    ),
    (
        Mutant::ExitReportedAsUnquiesced,
        "exit-reported-as-unquiesced",
        "live backup, pod replaced during preparation",
        "when the original process exited, Unquiesced says True, UnquiesceSucceeded though nothing was sent (correct: reason OriginalProcessExited)",
    ),
    (
        Mutant::StoppedLabelledQuiesced,
        "stopped-labelled-quiesced",
        "stopped-server backups",
        "a backup of a stopped server ends Succeeded with status.consistency Quiesced, source.state Stopped (correct: consistency Stopped)",
    ),
    (
        Mutant::IdleAsleepTreatedLive,
        "idle-asleep-treated-live",
        "idle-asleep stopped-server backup",
        "a quiesce backup of an idle-asleep server (no pod) ends Failed, reason QuiesceFailed, without waiting (correct: Succeeded, consistency Stopped)",
    ),
    (
        Mutant::BackupWakesIdleServer,
        "backup-wakes-idle-server",
        "idle-asleep stopped-server backup",
        "a backup of an idle-asleep server sets the GameServer's status.idle.asleep false (reason \"woken for backup\") and a pod starts (correct: idle intent unchanged, no pod)",
    ),
    (
        Mutant::MidCopyStartIgnored,
        "mid-copy-start-ignored",
        "stopped-server backup, server started mid-copy",
        "a stopped server that starts while its copy runs still ends Succeeded with consistency Stopped (correct: Failed, reason SourceStarted, consistency Invalidated)",
    ),
    (
        Mutant::RestoreLatestSnapshot,
        "restore-latest-snapshot",
        "stopped-server backups",
        "restoring an older Backup brings back the newest snapshot's contents (the restore Job script selects `latest --tag server=<gs>`; correct: the Backup's own status.snapshotID)",
    ),
    (
        Mutant::BackupIncludesMods,
        "backup-includes-mods",
        "format-changing update, restore-required rollback",
        "the snapshot contains the mods claim under /mods (correct: only /data and /extra/<name>)",
    ),
    (
        Mutant::NoPreparationWait,
        "no-preparation-wait",
        "live backup, game not running yet",
        "a live Backup created before the game container runs fails at once, reason PreparationTimeout (correct: waits, then Succeeded, consistency Quiesced)",
    ),
    (
        Mutant::RestoreSkipsExtras,
        "restore-skips-extras",
        "format-changing update, restore-required rollback",
        "after a restore the extra claims keep their newer contents while the world claim is restored (correct: both hold the snapshot)",
    ),
    (
        Mutant::AgentRestartInvalidates,
        "agent-restart-invalidates",
        "live backup, agent restart",
        "an agent container restart during the copy fails the Backup, reason SourceChanged, consistency Invalidated (correct: Succeeded, consistency Quiesced)",
    ),
    (
        Mutant::SourceContainerUnrecorded,
        "source-container-unrecorded",
        "live backup, game not running yet",
        "a live Backup's status.source has the pod UID but no gameContainerID (correct: both, so the capture is bound to the incarnation)",
    ),
    (
        Mutant::ReplacedPodIgnored,
        "replaced-pod-ignored",
        "live backup, pod replaced during preparation",
        "a pod replaced after quiesce still ends Succeeded with consistency Quiesced (correct: Failed, reason SourceChanged)",
    ),
    (
        Mutant::PreflightSkippedPending,
        "preflight-skipped-pending",
        "live backup, older agent without identity route",
        "an older agent receives save-off and the Backup never ends (correct: Failed, IdentityPreflightFailed, no save-off)",
    ),
    (
        Mutant::AgentDownInvalidates,
        "agent-down-invalidates",
        "live backup, agent down during the copy",
        "an agent in CrashLoopBackOff during the copy fails the Backup, reason SourceChanged (correct: Succeeded, consistency Quiesced; save-on once the agent is back)",
    ),
    (
        Mutant::EarlySaveOn,
        "early-save-on",
        "live backup, agent restart",
        "save-on reaches the game before restic wrote the snapshot (correct: only after the copy Job completed)",
    ),
    (
        Mutant::RestoreFailureReportedSucceeded,
        "restore-failure-reported-succeeded",
        "restore fails on a broken repository",
        "a Restore whose Job failed (no such repository) ends Succeeded (correct: Failed, reason CopyFailed)",
    ),
    (
        Mutant::RestoreFailureWipesClaims,
        "restore-failure-wipes-claims",
        "restore fails on a broken repository",
        "after a failed Restore the world claim is empty (correct: untouched, the restore clears a claim only once the snapshot was read)",
    ),
    (
        Mutant::RestoreFailureKeepsSuspended,
        "restore-failure-keeps-suspended",
        "restore fails on a broken repository",
        "after a failed Restore of a running server, spec.suspend stays true and no pod runs (correct: the prior run state returns)",
    ),
    (
        Mutant::PullFailureUnreported,
        "pull-failure-unreported",
        "unpullable candidate",
        "a GameServer whose pod cannot pull its image never becomes Failed, reason ImagePullFailed (correct: it does)",
    ),
    (
        Mutant::CopyFailureMisreported,
        "copy-failure-misreported",
        "live backup, restore round trip (repository made unusable)",
        "a Backup whose copy Job failed (unusable repository) ends Failed with Completed reason QuiesceFailed (correct: CopyFailed)",
    ),
    (
        Mutant::FailedCopyLeftRunning,
        "failed-copy-left-running",
        "live backup, restore round trip (repository made unusable)",
        "a Backup whose copy failed ends Failed while its copy Job still exists (correct: the Job is deleted)",
    ),
    (
        Mutant::SuccessWithoutCompleted,
        "success-without-completed",
        "stopped-server backups",
        "a Backup reports phase Succeeded but has no Completed condition (correct: Completed True, reason Succeeded)",
    ),
    (
        Mutant::PreflightFailureMisreported,
        "preflight-failure-misreported",
        "live backup, older agent without identity route",
        "an older agent without the identity route fails the Backup with reason QuiesceFailed (correct: IdentityPreflightFailed; nothing was quiesced)",
    ),
    (
        Mutant::MidCopyStartMisreported,
        "mid-copy-start-misreported",
        "stopped-server backup, server started mid-copy",
        "a stopped server that starts while its copy runs fails the Backup with reason SourceChanged (correct: SourceStarted)",
    ),
    (
        Mutant::RawCopyLabelledQuiesced,
        "raw-copy-labelled-quiesced",
        "raw copy",
        "a raw copy (spec.quiesce false, or a server whose agent is disabled), made without any agent call or RCON command, ends Succeeded with status.consistency Quiesced (correct: Unquiesced)",
    ),
    (
        Mutant::DeadlineInMemory,
        "deadline-in-memory",
        "preparation deadline",
        "an operator restarted while a Backup waits for a game that never runs starts the deadline anew: the persisted preparation-deadline moves and the Backup fails later than it said (correct: the deadline written at the start holds)",
    ),
    (
        Mutant::CleanupLostOnRestart,
        "cleanup-lost-on-restart",
        "live backup, operator restart mid-copy",
        "an operator restarted while a quiesced copy runs forgets the quiesce: the Backup ends without save-on reaching the original game, Unquiesced NotQuiesced (correct: save-on exactly once after the copy)",
    ),
    (
        Mutant::FinalizerRemovedBeforeCleanup,
        "finalizer-removed-before-cleanup",
        "live backup deleted mid-copy",
        "a Backup deleted while its quiesced copy runs goes at once: the game is left with saving off, no save-on reaches it (correct: the object goes only after the copy is drained and save-on reached the original)",
    ),
    (
        Mutant::LegacyTreatedLiveBound,
        "legacy-treated-live-bound",
        "legacy preparation",
        "a Backup an older operator left mid-preparation without incarnation fields is bound to whatever game runs now and ends Succeeded, consistency Quiesced (correct: Failed, reason LegacyPreparation, save-on paid)",
    ),
    (
        Mutant::CanaryBlocksRestore,
        "canary-blocks-restore",
        "restore after a halted canary",
        "after a qualification halted with its canary Failed on the candidate, a Restore of the source stays Pending waiting for the rollout (correct: it runs to Succeeded; fleet progress is no lock on any server)",
    ),
    (
        Mutant::BundleDigestUnchecked,
        "bundle-digest-unchecked",
        "module bundle digest mismatch",
        "a Module whose pinned digest differs from the bundle its tag now serves is installed (Ready, appliedDigest the served one; correct: Failed, reason DigestMismatch naming both digests, no GameTemplate written)",
    ),
    (
        Mutant::BundlePinAgainstLayer,
        "bundle-pin-against-layer",
        "module bundle digest mismatch",
        "a Module pinned to exactly the manifest its tag serves is refused with DigestMismatch (the pin compared with the layer's digest; correct: Ready, appliedDigest the pin, its GameTemplate written)",
    ),
    (
        Mutant::ConflictTakenForExists,
        "conflict-taken-for-exists",
        "live backup, copy Job creation refused by a conflict",
        "a creation of the copy Job answered 409 Conflict is taken for an existing Job: the copy never runs and the Backup ends Failed, reason CopyFailed (correct: the Job is created again and the Backup Succeeds, consistency Quiesced)",
    ),
    (
        Mutant::FirstListTrusted,
        "first-list-trusted",
        "live backup, operator restarted onto a stale view",
        "an operator restarted while its Backup's copy runs, whose first list is served as the cluster was before it began the Backup, takes the copy Job missing from that list for one deleted and fails the Backup CopyFailed (correct: it reads the Job and ends as an unperturbed run, Succeeded, consistency Quiesced)",
    ),
    (
        Mutant::SourceEventAwaited,
        "source-event-awaited",
        "live backup, watch event of the recorded source withheld",
        "after recording a Backup's source, every pass waits until its cache shows that write (an expectation with no expiry): a Backup whose source-recording status write's watch event never reaches the operator stays Pending for ever, whatever else wakes it (correct: the operator requeues its own next pass and the Backup Succeeds, consistency Quiesced)",
    ),
    (
        Mutant::LayerHashSkipped,
        "layer-hash-skipped",
        "module bundle layer served with other bytes",
        "a bundle whose pinned manifest is served honestly but whose layer is served as other bytes is installed from those bytes and reported Ready with the pinned digest (correct: the layer's bytes are hashed and the Module Fails, reason DigestMismatch naming both digests, with no GameTemplate written)",
    ),
];

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--mutant` named no known mutant.
#[derive(Debug, thiserror::Error)]
#[error("unknown mutant {0:?}: run `reference-operator --list-mutants` for the known names")]
pub struct UnknownMutant(pub String);

impl FromStr for Mutant {
    type Err = UnknownMutant;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mutant::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMutant(s.to_string()))
    }
}

/// The mutant an operator runs as, if any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActiveMutant(pub Option<Mutant>);

impl ActiveMutant {
    /// Whether this operator re-creates `mutant`'s defect.
    pub fn is(self, mutant: Mutant) -> bool {
        self.0 == Some(mutant)
    }
}

/// The `--list-mutants` table: name, case, difference; tab-separated, one per line.
pub fn listing() -> String {
    Mutant::ALL
        .iter()
        .map(|m| format!("{}\t{}\t{}\n", m.name(), m.case(), m.difference()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for m in Mutant::ALL {
            assert_eq!(m.name().parse::<Mutant>().unwrap(), m);
        }
        let mut names: Vec<_> = Mutant::ALL.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Mutant::ALL.len());
        let err = "nope".parse::<Mutant>().unwrap_err().to_string();
        assert!(err.contains("--list-mutants"), "{err}");
    }

    #[test]
    fn is_matches_only_the_active_mutant() {
        let none = ActiveMutant(None);
        let one = ActiveMutant(Some(Mutant::RestoreOverlays));
        for m in Mutant::ALL {
            assert!(!none.is(m));
            assert_eq!(one.is(m), m == Mutant::RestoreOverlays);
        }
    }

    #[test]
    fn listing_has_one_line_per_mutant_with_a_case_from_the_contract() {
        let listing = listing();
        assert_eq!(listing.lines().count(), Mutant::ALL.len());
        for line in listing.lines() {
            assert_eq!(line.split('\t').count(), 3, "{line}");
        }
    }
}
