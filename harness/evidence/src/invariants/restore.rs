//! The invariants of a restore, over what one restore schedule observed: every committed state
//! of the Restore and of its Job's worker pods, the server's claims (every path, with its
//! digest, and each claim's UID) as the snapshot holds them, just before the Restore and after
//! it ended, and the server's run state before and after.
//!
//! - [`DATA`] (contract D4): after a Succeeded Restore every world claim holds exactly what the
//!   snapshot holds (every path, hidden files and nested directories included, nothing more);
//!   after a Failed one every claim holds what it held before; a Restore removed before it ended
//!   leaves the world claims all as before or all as the snapshot, never a mix; the mods claim is
//!   never touched; no claim is replaced (same UID); the server's run state is what it was.
//! - [`DRAIN`] (D3): no worker pod of the restore Job runs once the Restore is terminal or
//!   removed, and a deleted Restore does not stay behind a finalizer.
//! - [`LIVENESS`] (D5): once faults stop, the Restore reaches Succeeded or Failed within its
//!   bound, with a reason (or it is removed, when a user deleted it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CopyPodState, DRAIN, LIVENESS, Violation};

/// Invariant `data`: what the claims hold after a restore, and the server's run state.
pub const DATA: &str = "data";

/// Every invariant a restore schedule is judged by, in report order.
pub const RESTORE_INVARIANTS: &[&str] = &[DATA, DRAIN, LIVENESS, super::outcome::OUTCOME];

/// The evidence the data invariant reads.
const EVIDENCE: &str = "every path of the server's claims (digests), before and after";

/// What one claim holds: every path below its root (`./a/b`), with `dir`, `file <sha256>` or
/// `link <target>`.
pub type Contents = BTreeMap<String, String>;

/// One claim as read: its UID and its contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimState {
    /// The PersistentVolumeClaim's UID.
    pub uid: String,
    /// Every path it holds.
    pub contents: Contents,
}

/// A committed state of the Restore.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreState {
    /// `status.phase`.
    pub phase: Option<String>,
    /// The `Completed` condition's reason.
    pub completed_reason: Option<String>,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// Its deletion was requested (`metadata.deletionTimestamp`).
    pub deleting: bool,
    /// The object was removed from the store.
    pub gone: bool,
}

impl RestoreState {
    /// Succeeded or Failed.
    pub fn terminal(&self) -> bool {
        matches!(self.phase.as_deref(), Some("Succeeded" | "Failed"))
    }
}

/// What a committed change of a restore schedule was about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "object")]
pub enum RestoreSubject {
    /// The Restore under test.
    Restore(RestoreState),
    /// A worker pod of the restore Job.
    WorkerPod(CopyPodState),
}

/// One committed change, on the host's clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreCommitted {
    /// Its resourceVersion (commit order).
    pub rv: u64,
    /// When it was committed.
    pub at: jiff::Timestamp,
    /// What changed, as committed.
    pub subject: RestoreSubject,
}

/// Everything one restore schedule observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreTrace {
    /// The Restore's name.
    pub restore: String,
    /// Committed states of the Restore and its worker pods, in commit order.
    pub changes: Vec<RestoreCommitted>,
    /// The world claims (the primary and every extra) as the snapshot holds them: read with
    /// the server stopped just before the Backup was taken.
    pub snapshot: BTreeMap<String, Contents>,
    /// Every claim of the server (world and mods) just before the Restore was created.
    pub before: BTreeMap<String, ClaimState>,
    /// Every claim once the Restore ended; `None` when they could not be read.
    pub after: Option<BTreeMap<String, ClaimState>>,
    /// The claims that hold mods (never in a snapshot, never touched by a restore).
    pub mods: Vec<String>,
    /// The server's run state before the Restore (e.g. `suspend=absent asleep=true`).
    pub run_state_before: String,
    /// Its run state once the Restore ended; `None` when it could not be read.
    pub run_state_after: Option<String>,
    /// When the last fault of the schedule had landed (liveness counts from here).
    pub faults_stopped_at: Option<jiff::Timestamp>,
    /// How long the Restore may take to end once faults stopped, in milliseconds.
    pub bound_ms: u64,
    /// When observation ended.
    pub observed_until: jiff::Timestamp,
    /// What was done to the run (judged by [`super::outcome`]); `None`: not judged.
    #[serde(default)]
    pub perturbation: Option<super::outcome::Perturbation>,
    /// The end state of the reference run of the restore, when there was one to compare with.
    #[serde(default)]
    pub reference_end: Option<super::outcome::EndState>,
}

/// The first difference between `found` and `expected`, one line; `None` when they are equal.
pub fn first_difference(expected: &Contents, found: &Contents) -> Option<String> {
    for (path, want) in expected {
        match found.get(path) {
            None => return Some(format!("{path} missing (expected {want})")),
            Some(got) if got != want => return Some(format!("{path} is {got}, expected {want}")),
            Some(_) => {}
        }
    }
    found
        .iter()
        .find(|(path, _)| !expected.contains_key(*path))
        .map(|(path, got)| format!("{path} ({got}) should not be there"))
}

/// Parses the listing the harness's claim reader prints: per claim, one tab-separated line per
/// path (`<claim> dir <path>`, `<claim> file <path> <sha256>`, `<claim> link <path> <target>`)
/// and a closing `<claim> end` line, so an empty claim is listed and a cut listing is refused.
pub fn parse_listing(text: &str, claims: &[String]) -> Result<BTreeMap<String, Contents>, String> {
    let mut out: BTreeMap<String, Contents> = BTreeMap::new();
    let mut ended: Vec<String> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        let bad = || format!("line {} of the claim listing is malformed: {line:?}", n + 1);
        let claim = fields[0];
        if !claims.iter().any(|c| c == claim) {
            continue;
        }
        if ended.iter().any(|c| c == claim) {
            return Err(format!(
                "line {}: claim {claim} listed after its end line",
                n + 1
            ));
        }
        let entry = out.entry(claim.to_string()).or_default();
        match fields.as_slice() {
            [_, "end"] => ended.push(claim.to_string()),
            [_, "dir", path] => {
                entry.insert((*path).to_string(), "dir".to_string());
            }
            [_, kind @ ("file" | "link"), path, detail] if !detail.is_empty() => {
                entry.insert((*path).to_string(), format!("{kind} {detail}"));
            }
            _ => return Err(bad()),
        }
    }
    if let Some(missing) = claims.iter().find(|c| !ended.contains(c)) {
        return Err(format!(
            "the claim listing has no end line for {missing}: it was cut or the claim was not mounted"
        ));
    }
    Ok(out)
}

impl RestoreTrace {
    fn restore_states(&self) -> impl Iterator<Item = (&RestoreCommitted, &RestoreState)> {
        self.changes.iter().filter_map(|c| match &c.subject {
            RestoreSubject::Restore(r) => Some((c, r)),
            RestoreSubject::WorkerPod(_) => None,
        })
    }

    /// The Restore's last committed state that is not its removal.
    pub fn final_state(&self) -> Option<&RestoreState> {
        self.restore_states()
            .map(|(_, r)| r)
            .filter(|r| !r.gone)
            .last()
    }

    /// The first commit at which the Restore was terminal.
    pub fn terminal_at(&self) -> Option<&RestoreCommitted> {
        self.restore_states()
            .find(|(_, r)| r.terminal())
            .map(|(c, _)| c)
    }

    /// The commit that removed it.
    fn removed_at(&self) -> Option<&RestoreCommitted> {
        self.restore_states().find(|(_, r)| r.gone).map(|(c, _)| c)
    }

    /// Every invariant's violations, in [`RESTORE_INVARIANTS`] order.
    pub fn violations(&self) -> Vec<Violation> {
        let mut out = self.data();
        out.extend(self.drain());
        out.extend(self.liveness());
        out.extend(super::outcome::judge(
            self.perturbation.as_ref(),
            self.final_state().map(|r| super::outcome::Ending {
                phase: r.phase.clone(),
                consistency: None,
                reason: None,
            }),
        ));
        out.extend(super::outcome::differential(
            self.perturbation.as_ref(),
            self.reference_end.as_ref(),
            &self.end_state(),
        ));
        out
    }

    /// What this run left: the Restore's phase and finalizers, whether it was removed, and the
    /// server's run state once it ended.
    pub fn end_state(&self) -> super::outcome::EndState {
        let fin = self.final_state();
        let mut finalizers = fin.map(|r| r.finalizers.clone()).unwrap_or_default();
        finalizers.sort();
        super::outcome::EndState {
            ending: fin.map(|r| super::outcome::Ending {
                phase: r.phase.clone(),
                consistency: None,
                reason: None,
            }),
            finalizers,
            removed: self.removed_at().is_some(),
            run_state: self.run_state_after.clone(),
            claims: self.claims_end(),
            snapshot_holds: None,
        }
    }

    /// What each claim holds once the Restore ended, relative to the snapshot and to itself
    /// before (see [`super::outcome::EndState::claims`]); `None` when they were not read.
    fn claims_end(&self) -> Option<BTreeMap<String, String>> {
        let after = self.after.as_ref()?;
        Some(
            after
                .iter()
                .map(|(name, now)| {
                    let before = self.before.get(name);
                    let contents = if self.snapshot.get(name) == Some(&now.contents) {
                        "as the snapshot"
                    } else if before.is_some_and(|b| b.contents == now.contents) {
                        "as before"
                    } else {
                        "other"
                    };
                    let uid = if before.is_some_and(|b| b.uid == now.uid) {
                        "same UID"
                    } else {
                        "new UID"
                    };
                    (name.clone(), format!("{contents}, {uid}"))
                })
                .collect(),
        )
    }

    /// Every invariant's verdict, in [`RESTORE_INVARIANTS`] order.
    pub fn judge(&self) -> Vec<super::Judged> {
        super::judge_each(RESTORE_INVARIANTS, &self.violations(), |id| {
            self.unknown(id)
        })
    }

    /// Why invariant `id` cannot be judged over this trace, if it cannot.
    pub fn unknown(&self, id: &str) -> Option<String> {
        let ended = self.terminal_at().is_some() || self.removed_at().is_some();
        let never = || {
            (!ended).then(|| {
                "the Restore never ended (liveness judges that), so what it owes is not settled"
                    .to_string()
            })
        };
        match id {
            DATA => never().or_else(|| {
                self.before.is_empty().then(|| {
                    "the server's claims were not read before the Restore: there is nothing to compare with".to_string()
                })
            }),
            DRAIN => never(),
            super::outcome::OUTCOME => self.perturbation.is_none().then(|| {
                "what was done to the run (operation and fault) was not recorded".to_string()
            }),
            _ => None,
        }
    }

    fn world_claims(&self) -> impl Iterator<Item = &String> {
        self.before.keys().filter(|c| !self.mods.contains(c))
    }

    /// Invariant [`DATA`]; judged once the Restore ended (terminal, or removed).
    pub fn data(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        let terminal = self.terminal_at().is_some();
        let removed = self.removed_at().is_some();
        if !terminal && !removed {
            return out;
        }
        let Some(after) = &self.after else {
            out.push(Violation::new(
                DATA,
                "the claims after the restore",
                "the claims could not be read after the Restore ended".into(),
            ));
            return out;
        };
        out.extend(self.claims_kept(after));
        out.extend(self.world_contents(after));
        out.extend(self.run_state());
        out
    }

    /// No claim replaced or gone; the mods claims untouched.
    fn claims_kept(&self, after: &BTreeMap<String, ClaimState>) -> Vec<Violation> {
        let mut out = Vec::new();
        for (claim, was) in &self.before {
            match after.get(claim) {
                None => out.push(Violation::new(
                    DATA,
                    "PVC UIDs",
                    format!(
                        "claim {claim} is gone after the restore (its UID was {})",
                        was.uid
                    ),
                )),
                Some(now) if now.uid != was.uid => out.push(Violation::new(
                    DATA,
                    "PVC UIDs",
                    format!(
                        "claim {claim} was replaced: UID {} before, {} after",
                        was.uid, now.uid
                    ),
                )),
                Some(_) => {}
            }
        }
        for claim in self.mods.iter().filter(|c| self.before.contains_key(*c)) {
            if let Some(now) = after.get(claim)
                && let Some(diff) = first_difference(&self.before[claim].contents, &now.contents)
            {
                out.push(Violation::new(
                    DATA,
                    EVIDENCE,
                    format!("the restore touched mods claim {claim}: {diff}"),
                ));
            }
        }
        out
    }

    /// The world claims hold the snapshot (Succeeded), what they held (Failed), or one of the
    /// two throughout (removed before it ended).
    fn world_contents(&self, after: &BTreeMap<String, ClaimState>) -> Vec<Violation> {
        let mut out = Vec::new();
        let terminal = self.terminal_at().is_some();
        let phase = self.final_state().and_then(|r| r.phase.as_deref());
        let against_snapshot = |claim: &String| {
            let want = self.snapshot.get(claim).cloned().unwrap_or_default();
            let got = after
                .get(claim)
                .map(|c| c.contents.clone())
                .unwrap_or_default();
            first_difference(&want, &got)
        };
        let against_before = |claim: &String| {
            let got = after
                .get(claim)
                .map(|c| c.contents.clone())
                .unwrap_or_default();
            first_difference(&self.before[claim].contents, &got)
        };
        match phase {
            Some("Succeeded") if terminal => {
                for claim in self.world_claims() {
                    if let Some(diff) = against_snapshot(claim) {
                        out.push(Violation::new(
                            DATA,
                            EVIDENCE,
                            format!(
                                "the Restore Succeeded, but world claim {claim} does not hold the snapshot: {diff}"
                            ),
                        ));
                    }
                }
            }
            Some("Failed") if terminal => {
                for claim in self.world_claims() {
                    if let Some(diff) = against_before(claim) {
                        out.push(Violation::new(
                            DATA,
                            EVIDENCE,
                            format!(
                                "the Restore Failed, but world claim {claim} is not as it was before: {diff}"
                            ),
                        ));
                    }
                }
            }
            _ => {
                // Removed before it ended: all as before, or all restored; never a mix.
                let all_before = self.world_claims().all(|c| against_before(c).is_none());
                let all_restored = self.world_claims().all(|c| against_snapshot(c).is_none());
                if !all_before && !all_restored {
                    let torn = self
                        .world_claims()
                        .find_map(|c| against_before(c).map(|d| format!("world claim {c}: {d}")))
                        .unwrap_or_default();
                    out.push(Violation::new(
                        DATA,
                        EVIDENCE,
                        format!(
                            "the Restore was removed before it ended and left the world claims neither as they were nor as the snapshot ({torn})"
                        ),
                    ));
                }
            }
        }
        out
    }

    /// The server's run state is what it was.
    fn run_state(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        match &self.run_state_after {
            Some(now) if *now != self.run_state_before => out.push(Violation::new(
                DATA,
                "GameServer spec.suspend and status.idle",
                format!(
                    "the server's run state was {} before the restore and is {now} after it",
                    self.run_state_before
                ),
            )),
            Some(_) => {}
            None => out.push(Violation::new(
                DATA,
                "GameServer spec.suspend and status.idle",
                "the server could not be read after the restore".into(),
            )),
        }
        out
    }

    /// Invariant [`DRAIN`].
    pub fn drain(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        let Some(done) = self.terminal_at().or(self.removed_at()) else {
            return out;
        };
        let mut pods: BTreeMap<&str, &CopyPodState> = BTreeMap::new();
        for c in self.changes.iter().filter(|c| c.rv < done.rv) {
            if let RestoreSubject::WorkerPod(p) = &c.subject {
                pods.insert(&p.name, p);
            }
        }
        let how = if self.terminal_at().is_some() {
            "ended"
        } else {
            "been removed"
        };
        for (name, p) in pods.into_iter().filter(|(_, p)| !p.ended()) {
            out.push(Violation::new(
                DRAIN,
                "committed states of the restore Job's worker pods",
                format!(
                    "the Restore had {how} at rv {} while worker pod {name} was still {}",
                    done.rv,
                    p.phase.as_deref().unwrap_or("without a phase")
                ),
            ));
        }
        let deleted = self.restore_states().any(|(_, r)| r.deleting);
        let removed = self.removed_at().is_some();
        if deleted
            && !removed
            && let Some(fin) = self.final_state()
        {
            out.push(Violation::new(
                DRAIN,
                "Restore metadata (deletionTimestamp, finalizers)",
                format!(
                    "the Restore was deleted and is still there, phase {}, finalizer(s) {}",
                    fin.phase.as_deref().unwrap_or("-"),
                    if fin.finalizers.is_empty() {
                        "none".to_string()
                    } else {
                        fin.finalizers.join(", ")
                    }
                ),
            ));
        }
        out
    }

    /// Invariant [`LIVENESS`].
    pub fn liveness(&self) -> Vec<Violation> {
        if self.terminal_at().is_some() {
            let fin = self.final_state();
            if fin.is_some_and(|r| r.completed_reason.as_deref().is_none_or(str::is_empty)) {
                return vec![Violation::new(
                    LIVENESS,
                    "Restore condition Completed",
                    format!(
                        "the Restore ended {} without a Completed reason",
                        fin.and_then(|r| r.phase.as_deref()).unwrap_or("-")
                    ),
                )];
            }
            return Vec::new();
        }
        if self.removed_at().is_some() {
            return Vec::new();
        }
        let since = self
            .faults_stopped_at
            .map_or_else(|| "the start".to_string(), |t| t.to_string());
        vec![Violation::new(
            LIVENESS,
            "Restore status.phase",
            format!(
                "not Succeeded or Failed {} ms after faults stopped ({since}); last phase {}",
                self.bound_ms,
                self.final_state()
                    .and_then(|r| r.phase.as_deref())
                    .unwrap_or("none")
            ),
        )]
    }
}
