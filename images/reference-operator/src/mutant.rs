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
}

impl Mutant {
    /// Every mutant, in documentation order.
    pub const ALL: [Mutant; 8] = [
        Mutant::IgnoreIncarnation,
        Mutant::StoppedSourceNeedsAgent,
        Mutant::UnquiesceAnyPod,
        Mutant::RestoreOverlays,
        Mutant::RestoreRecreatesPvc,
        Mutant::BackupSkipsExtras,
        Mutant::SucceedOnFailedCopy,
        Mutant::NoIdentityPreflight,
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
