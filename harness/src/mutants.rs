//! Harness mutants: deliberate weakenings of the harness's own gates, so the self-test can show
//! that each gate is what rejects a bad candidate (a gate that can be weakened without any case
//! noticing proves nothing).
//!
//! Selected with `rehearse selftest --mutant NAME` like the reference operator's mutants; only the
//! self-test turns one on, and a bundle made with one names it.

use std::fmt;
use std::str::FromStr;

/// One weakened gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HarnessMutant {
    /// The join gate is satisfied by a status ping (no login, no configuration, no play).
    JoinStatusOnly,
    /// The join gate is satisfied once login succeeds (the configuration phase is not awaited).
    JoinLoginOnly,
    /// The join gate is satisfied when the game port answers at all (an HTTP answer counts).
    JoinPortOpen,
    /// A failed gate in a promotion batch does not halt the rollout.
    BatchHaltIgnored,
    /// A failed promotion batch halts, but its members are left on the candidate.
    FailedBatchKept,
    /// A failed batch of a format-changing candidate is put back by re-pinning alone, without
    /// restoring the members' pre-promotion backups.
    PutBackRepinsOnly,
    /// The preflight accepts fleet members that track the template's default version.
    DefaultTrackingAllowed,
    /// The image gate accepts the pod once it runs, without comparing its imageID with the digest
    /// the candidate was pinned to.
    DigestCheckSkipped,
    /// PVC tables are compared pairwise by position, so a claim present on one side only is
    /// silently dropped (the `zip` defect).
    PvcCompareZip,
    /// The baseline receipt is never taken: a halt has no record of the fleet as it was.
    BaselineSkipped,
    /// A halt on the canary still writes a promotion receipt for the first batch (the decision
    /// recorded before the canary's gates were judged).
    CanaryPromotionReceipt,
    /// The candidate version is applied to the source server instead of its clone.
    CandidateOnSource,
    /// The module bundle gate trusts the bundle's tag: the canary Module carries no digest and
    /// whatever the tag serves is accepted as the pin.
    ModuleGateTrustsTag,
    /// A member's world claims are read from its own `storage.extra` only: extra worlds its
    /// template declares are never baselined, seeded-checked or compared after a rollback.
    WorldClaimsServerOnly,
    /// A promotion batch's members are gated one after another, whatever `--gate-concurrency`
    /// says (a batch of 20 takes 20 members' gates end to end).
    BatchGatedOneByOne,
    /// A restore-required batch's members are moved and gated while their pre-promotion
    /// backups still run: the harness waits for the backups only after the batch's gates.
    GatedBeforeBackupEnded,
}

impl HarnessMutant {
    /// Every harness mutant, in the self-test's order.
    pub const ALL: [HarnessMutant; 16] = [
        HarnessMutant::JoinStatusOnly,
        HarnessMutant::JoinLoginOnly,
        HarnessMutant::JoinPortOpen,
        HarnessMutant::BatchHaltIgnored,
        HarnessMutant::FailedBatchKept,
        HarnessMutant::PutBackRepinsOnly,
        HarnessMutant::DefaultTrackingAllowed,
        HarnessMutant::DigestCheckSkipped,
        HarnessMutant::PvcCompareZip,
        HarnessMutant::BaselineSkipped,
        HarnessMutant::CanaryPromotionReceipt,
        HarnessMutant::CandidateOnSource,
        HarnessMutant::ModuleGateTrustsTag,
        HarnessMutant::WorldClaimsServerOnly,
        HarnessMutant::BatchGatedOneByOne,
        HarnessMutant::GatedBeforeBackupEnded,
    ];

    /// The `--mutant` name (prefixed `harness-` so it never collides with an operator mutant).
    pub fn name(self) -> &'static str {
        match self {
            HarnessMutant::JoinStatusOnly => "harness-join-status-only",
            HarnessMutant::JoinLoginOnly => "harness-join-login-only",
            HarnessMutant::JoinPortOpen => "harness-join-port-open",
            HarnessMutant::BatchHaltIgnored => "harness-batch-halt-ignored",
            HarnessMutant::FailedBatchKept => "harness-failed-batch-kept",
            HarnessMutant::PutBackRepinsOnly => "harness-put-back-repins-only",
            HarnessMutant::DefaultTrackingAllowed => "harness-default-tracking-allowed",
            HarnessMutant::DigestCheckSkipped => "harness-digest-check-skipped",
            HarnessMutant::PvcCompareZip => "harness-pvc-compare-zip",
            HarnessMutant::BaselineSkipped => "harness-baseline-skipped",
            HarnessMutant::CanaryPromotionReceipt => "harness-canary-promotion-receipt",
            HarnessMutant::CandidateOnSource => "harness-candidate-on-source",
            HarnessMutant::ModuleGateTrustsTag => "harness-module-gate-trusts-tag",
            HarnessMutant::WorldClaimsServerOnly => "harness-world-claims-server-only",
            HarnessMutant::BatchGatedOneByOne => "harness-batch-gated-one-by-one",
            HarnessMutant::GatedBeforeBackupEnded => "harness-gated-before-backup-ended",
        }
    }

    /// Whether `name` names a harness mutant rather than a reference-operator one.
    pub fn is_harness_name(name: &str) -> bool {
        name.starts_with("harness-")
    }
}

impl fmt::Display for HarnessMutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--mutant harness-…` name that names no harness mutant.
#[derive(Debug, thiserror::Error)]
#[error("unknown harness mutant {0:?}; known: {known}", known = HarnessMutant::ALL.map(|m| m.name()).join(", "))]
pub struct UnknownHarnessMutant(pub String);

impl FromStr for HarnessMutant {
    type Err = UnknownHarnessMutant;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HarnessMutant::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownHarnessMutant(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_marked_as_harness() {
        for m in HarnessMutant::ALL {
            assert_eq!(m.name().parse::<HarnessMutant>().unwrap(), m);
            assert!(HarnessMutant::is_harness_name(m.name()));
        }
        assert!(!HarnessMutant::is_harness_name("restore-overlays"));
        let err = "harness-nope"
            .parse::<HarnessMutant>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("harness-join-status-only"), "{err}");
    }
}
