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
}

impl Mutant {
    /// Every mutant, in documentation order.
    pub const ALL: [Mutant; 22] = [
        Mutant::IgnoreIncarnation,
        Mutant::StoppedSourceNeedsAgent,
        Mutant::UnquiesceAnyPod,
        Mutant::RestoreOverlays,
        Mutant::RestoreRecreatesPvc,
        Mutant::BackupSkipsExtras,
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
    ];

    /// The `--mutant` name.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::IgnoreIncarnation => "ignore-incarnation",
            Mutant::StoppedSourceNeedsAgent => "stopped-source-needs-agent",
            Mutant::UnquiesceAnyPod => "unquiesce-any-pod",
            Mutant::RestoreOverlays => "restore-overlays",
            Mutant::RestoreRecreatesPvc => "restore-recreates-pvc",
            Mutant::BackupSkipsExtras => "backup-skips-extras",
            Mutant::SucceedOnFailedCopy => "succeed-on-failed-copy",
            Mutant::NoIdentityPreflight => "no-identity-preflight",
            Mutant::WrongFailureReason => "wrong-failure-reason",
            Mutant::InvalidatedWithoutDraining => "invalidated-without-draining",
            Mutant::NoUnquiesceAfterSuccess => "no-unquiesce-after-success",
            Mutant::NoUnquiesceAfterFailure => "no-unquiesce-after-failure",
            Mutant::ExitReportedAsUnquiesced => "exit-reported-as-unquiesced",
            Mutant::StoppedLabelledQuiesced => "stopped-labelled-quiesced",
            Mutant::IdleAsleepTreatedLive => "idle-asleep-treated-live",
            Mutant::BackupWakesIdleServer => "backup-wakes-idle-server",
            Mutant::MidCopyStartIgnored => "mid-copy-start-ignored",
            Mutant::RestoreLatestSnapshot => "restore-latest-snapshot",
            Mutant::BackupIncludesMods => "backup-includes-mods",
            Mutant::NoPreparationWait => "no-preparation-wait",
            Mutant::RestoreSkipsExtras => "restore-skips-extras",
            Mutant::AgentRestartInvalidates => "agent-restart-invalidates",
        }
    }

    /// The rehearsal case (CONTRACT.md C table) that must catch this mutant.
    pub fn case(self) -> &'static str {
        match self {
            Mutant::IgnoreIncarnation => "live backup, same-pod game restart",
            Mutant::StoppedSourceNeedsAgent => "stopped-server backups",
            Mutant::UnquiesceAnyPod => "live backup, pod replaced during preparation",
            Mutant::RestoreOverlays => "format-changing update, restore-required rollback",
            Mutant::RestoreRecreatesPvc => "format-changing update, restore-required rollback",
            Mutant::BackupSkipsExtras => "format-changing update, restore-required rollback",
            // No case in the table has a failing copy of its own: the harness's self-test
            // makes the repository unusable in this case and expects Failed.
            Mutant::SucceedOnFailedCopy => "stopped-server backups (repository made unusable)",
            Mutant::NoIdentityPreflight => "live backup, older agent without identity route",
            Mutant::WrongFailureReason => "live backup, same-pod game restart",
            Mutant::InvalidatedWithoutDraining => "live backup, same-pod game restart",
            Mutant::NoUnquiesceAfterSuccess => "live backup, agent restart",
            // The round trip's copy into an unusable repository is a failed quiesced Backup.
            Mutant::NoUnquiesceAfterFailure => {
                "live backup, restore round trip (repository made unusable)"
            }
            Mutant::ExitReportedAsUnquiesced => "live backup, pod replaced during preparation",
            Mutant::StoppedLabelledQuiesced => "stopped-server backups",
            Mutant::IdleAsleepTreatedLive => "idle-asleep stopped-server backup",
            Mutant::BackupWakesIdleServer => "idle-asleep stopped-server backup",
            Mutant::MidCopyStartIgnored => "stopped-server backup, server started mid-copy",
            Mutant::RestoreLatestSnapshot => "stopped-server backups",
            Mutant::BackupIncludesMods => "format-changing update, restore-required rollback",
            Mutant::NoPreparationWait => "live backup, game not running yet",
            Mutant::RestoreSkipsExtras => "format-changing update, restore-required rollback",
            Mutant::AgentRestartInvalidates => "live backup, agent restart",
        }
    }

    /// What the case observes against this mutant that it never observes against the correct
    /// operator.
    pub fn difference(self) -> &'static str {
        match self {
            Mutant::IgnoreIncarnation => {
                "a same-pod game restart during the copy still ends Succeeded with consistency Quiesced (correct: Failed, reason SourceChanged)"
            }
            Mutant::StoppedSourceNeedsAgent => {
                "a quiesce backup of a suspended server without a pod ends Failed, reason QuiesceFailed (correct: Succeeded, consistency Stopped)"
            }
            Mutant::UnquiesceAnyPod => {
                "save-on reaches the replacement pod (its RCON audit log shows save-on; correct: no call, Unquiesced reason OriginalProcessExited)"
            }
            Mutant::RestoreOverlays => {
                "a file created after the backup survives the restore (correct: the claims hold exactly the snapshot)"
            }
            Mutant::RestoreRecreatesPvc => {
                "world and extra PVC UIDs change across the restore (correct: same UIDs)"
            }
            Mutant::BackupSkipsExtras => {
                "the snapshot lacks the extra world, so after a restore the extra claim keeps its newer value (correct: the extra value returns)"
            }
            Mutant::SucceedOnFailedCopy => {
                "a Backup whose restic Job failed (unusable repository) ends Succeeded without a snapshot id (correct: Failed, reason CopyFailed)"
            }
            Mutant::NoIdentityPreflight => {
                "an older agent without the identity route is quiesced: the game's RCON audit log shows save-off (correct: Failed, reason IdentityPreflightFailed, no save-off)"
            }
            Mutant::WrongFailureReason => {
                "a same-pod game restart or a replaced pod fails the Backup with Completed reason CopyFailed, consistency Invalidated (correct: reason SourceChanged)"
            }
            Mutant::InvalidatedWithoutDraining => {
                "after an invalidation (SourceChanged or SourceStarted) the Backup ends Failed but its copy Job still exists (correct: the Job is deleted before the Backup ends)"
            }
            Mutant::NoUnquiesceAfterSuccess => {
                "after a successful quiesced copy the original incarnation's RCON audit log has save-off but no save-on, while Unquiesced says True, UnquiesceSucceeded (correct: save-on reaches it)"
            }
            Mutant::NoUnquiesceAfterFailure => {
                "a quiesced Backup that fails while the game still runs (e.g. the copy Job failed) leaves the game without save-on; Unquiesced says True, NotQuiesced (correct: save-on reaches it, UnquiesceSucceeded)"
            }
            Mutant::ExitReportedAsUnquiesced => {
                "when the original process exited, Unquiesced says True, UnquiesceSucceeded though nothing was sent (correct: reason OriginalProcessExited)"
            }
            Mutant::StoppedLabelledQuiesced => {
                "a backup of a stopped server ends Succeeded with status.consistency Quiesced, source.state Stopped (correct: consistency Stopped)"
            }
            Mutant::IdleAsleepTreatedLive => {
                "a quiesce backup of an idle-asleep server (no pod) ends Failed, reason QuiesceFailed, without waiting (correct: Succeeded, consistency Stopped)"
            }
            Mutant::BackupWakesIdleServer => {
                "a backup of an idle-asleep server sets the GameServer's status.idle.asleep false (reason \"woken for backup\") and a pod starts (correct: idle intent unchanged, no pod)"
            }
            Mutant::MidCopyStartIgnored => {
                "a stopped server that starts while its copy runs still ends Succeeded with consistency Stopped (correct: Failed, reason SourceStarted, consistency Invalidated)"
            }
            Mutant::RestoreLatestSnapshot => {
                "restoring an older Backup brings back the newest snapshot's contents (the restore Job script selects `latest --tag server=<gs>`; correct: the Backup's own status.snapshotID)"
            }
            Mutant::BackupIncludesMods => {
                "the snapshot contains the mods claim under /mods (correct: only /data and /extra/<name>)"
            }
            Mutant::NoPreparationWait => {
                "a live Backup created before the game container runs fails at once, reason PreparationTimeout (correct: waits, then Succeeded, consistency Quiesced)"
            }
            Mutant::RestoreSkipsExtras => {
                "after a restore the extra claims keep their newer contents while the world claim is restored (correct: both hold the snapshot)"
            }
            Mutant::AgentRestartInvalidates => {
                "an agent container restart during the copy fails the Backup, reason SourceChanged, consistency Invalidated (correct: Succeeded, consistency Quiesced)"
            }
        }
    }
}

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
