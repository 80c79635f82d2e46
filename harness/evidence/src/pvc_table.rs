//! PVC UID tables: which claims kept their identity across a case, built from receipts only.
//!
//! A case records what it saw with [`super::bundle::CaseRecorder::observe_pvcs`] (a
//! `pvc-observation` receipt per phase); [`build`] (over the typed observations that
//! [`super::observation::pvc_table_from_receipts`] reads) pairs the first `before` observation
//! with the last `after` observation of every claim. A claim whose UID (and volume) is the same
//! on both sides is `unchanged`: the data was restored into the same object, not a new one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a claim holds, by Gameplane's naming (CONTRACT part A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// `<gs>-data`: the server's main world; losing it loses the game.
    PrimaryWorld,
    /// `<gs>-extra-<name>`: an additional world (a dimension, a lobby) kept like the primary.
    ExtraWorld,
    /// `<gs>-mods-<version>`: mods the operator can download again; replacing it loses nothing.
    RebuildableMods,
    /// A claim outside Gameplane's naming.
    Other,
}

impl Role {
    /// Classifies claim `claim` of GameServer `server`: `<gs>-data`, `<gs>-extra-<name>`,
    /// `<gs>-mods-<version>`.
    pub fn classify(server: &str, claim: &str) -> Role {
        match claim.strip_prefix(server).and_then(|r| r.strip_prefix('-')) {
            Some("data") => Role::PrimaryWorld,
            Some(rest) if rest.starts_with("extra-") => Role::ExtraWorld,
            Some(rest) if rest.starts_with("mods-") => Role::RebuildableMods,
            _ => Role::Other,
        }
    }

    /// The label CONTRACT's tables use.
    pub fn label(self) -> &'static str {
        match self {
            Role::PrimaryWorld => "Primary world",
            Role::ExtraWorld => "Extra world",
            Role::RebuildableMods => "Rebuildable mods",
            Role::Other => "Other",
        }
    }
}

/// When PVCs were observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PvcPhase {
    /// Before the risky operation (candidate, restore).
    Before,
    /// After it (and after any rollback).
    After,
}

impl PvcPhase {
    /// `before` or `after`, as receipts and step names spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            PvcPhase::Before => "before",
            PvcPhase::After => "after",
        }
    }
}

/// One claim as observed in the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PvcObservation {
    /// The PersistentVolumeClaim's name.
    pub claim: String,
    /// What the claim holds.
    pub role: Role,
    /// The claim's `metadata.uid`: a claim deleted and recreated under the same name gets a
    /// new one.
    pub uid: String,
    /// The bound PersistentVolume's name, if bound.
    pub volume: Option<String>,
}

impl PvcObservation {
    /// An observation whose role is derived from Gameplane's claim naming for `server`.
    pub fn classify(server: &str, claim: &str, uid: &str, volume: Option<&str>) -> Self {
        Self {
            claim: claim.to_owned(),
            role: Role::classify(server, claim),
            uid: uid.to_owned(),
            volume: volume.map(str::to_owned),
        }
    }
}

/// The payload of a `pvc-observation` receipt: the case's claims at one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PvcObserved {
    /// Whether this is the baseline or the outcome.
    pub phase: PvcPhase,
    /// Every claim of the case's servers at that moment.
    pub claims: Vec<PvcObservation>,
}

/// A claim's identity on one side of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PvcSide {
    /// The claim's `metadata.uid` on this side.
    pub uid: String,
    /// The bound PersistentVolume's name, if it was bound then.
    pub volume: Option<String>,
}

/// One claim's row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PvcRow {
    /// The claim's name.
    pub claim: String,
    /// What the claim holds.
    pub role: Role,
    /// The claim at the first `before` observation; `None` if it did not exist then.
    pub before: Option<PvcSide>,
    /// The claim at the last `after` observation; `None` if it was gone (or never observed).
    pub after: Option<PvcSide>,
    /// Observed on both sides with the same UID and, if it was bound before, the same volume.
    pub unchanged: bool,
}

impl PvcRow {
    /// What happened to the claim between the two observations.
    pub fn change(&self) -> PvcChange {
        match (&self.before, &self.after) {
            (Some(_), Some(_)) if self.unchanged => PvcChange::Kept,
            (Some(_), Some(_)) => PvcChange::Replaced,
            (None, _) => PvcChange::Appeared,
            (Some(_), None) => PvcChange::Vanished,
        }
    }
}

/// What happened to one claim between the `before` and `after` observations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PvcChange {
    /// Same UID (and volume) on both sides.
    Kept,
    /// On both sides with a different UID or volume: the object was replaced.
    Replaced,
    /// Only after (e.g. a candidate version's new mods claim): not a change of identity.
    Appeared,
    /// Only before: the claim is gone.
    Vanished,
}

impl PvcChange {
    /// The word the report tables show.
    pub fn label(self) -> &'static str {
        match self {
            PvcChange::Kept => "kept",
            PvcChange::Replaced => "**replaced**",
            PvcChange::Appeared => "appeared",
            PvcChange::Vanished => "**vanished**",
        }
    }
}

/// The table for one case, rows ordered by role then claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PvcTable {
    /// One row per claim observed on either side.
    pub rows: Vec<PvcRow>,
}

/// `pvc-table.json` as the bundle writer writes it (pretty JSON and a newline); the loader
/// requires these exact bytes.
pub fn file_bytes(table: &PvcTable) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(table).expect("a PVC table serializes");
    text.push('\n');
    text.into_bytes()
}

/// Builds the table from a case's PVC observations, in the order they were recorded.
pub fn build(observations: impl IntoIterator<Item = PvcObserved>) -> PvcTable {
    let mut rows: BTreeMap<(Role, String), PvcRow> = BTreeMap::new();
    for observed in observations {
        for claim in observed.claims {
            let row = rows
                .entry((claim.role, claim.claim.clone()))
                .or_insert_with(|| PvcRow {
                    claim: claim.claim.clone(),
                    role: claim.role,
                    before: None,
                    after: None,
                    unchanged: false,
                });
            let side = PvcSide {
                uid: claim.uid,
                volume: claim.volume,
            };
            match observed.phase {
                // The first "before" is the baseline; later ones must not move it.
                PvcPhase::Before => {
                    row.before.get_or_insert(side);
                }
                PvcPhase::After => row.after = Some(side),
            }
        }
    }
    let rows = rows
        .into_values()
        .map(|mut row| {
            // A claim first bound after the `before` observation (WaitForFirstConsumer) got
            // its volume, not a new identity: only a different UID or a different bound
            // volume is a change.
            row.unchanged = matches!((&row.before, &row.after),
                (Some(b), Some(a)) if b.uid == a.uid && (b.volume.is_none() || b.volume == a.volume));
            row
        })
        .collect();
    PvcTable { rows }
}

impl PvcTable {
    /// Whether the case observed no claims at all.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether every claim observed before kept its identity (a claim that only appeared
    /// afterwards changes nothing that existed).
    pub fn all_unchanged(&self) -> bool {
        self.rows
            .iter()
            .all(|r| matches!(r.change(), PvcChange::Kept | PvcChange::Appeared))
    }

    /// A GitHub-flavoured Markdown table in CONTRACT's shape.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from(
            "| PVC | Claim | Before | After | Volume | Identity |\n|---|---|---|---|---|---|\n",
        );
        for row in &self.rows {
            out.push_str(&format!(
                "| {} | `{}` | {} | {} | {} | {} |\n",
                row.role.label(),
                row.claim,
                side_uid(&row.before),
                side_uid(&row.after),
                volume(row),
                row.change().label(),
            ));
        }
        out
    }
}

fn side_uid(side: &Option<PvcSide>) -> String {
    match side {
        Some(s) => format!("`{}`", s.uid),
        None => "not observed".into(),
    }
}

/// The volume, or both when it changed.
fn volume(row: &PvcRow) -> String {
    let name = |s: &Option<PvcSide>| {
        s.as_ref()
            .and_then(|s| s.volume.clone())
            .unwrap_or_else(|| "-".into())
    };
    let (b, a) = (name(&row.before), name(&row.after));
    if b == a {
        format!("`{b}`")
    } else {
        format!("`{b}` → `{a}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_gameplane_claims() {
        assert_eq!(Role::classify("gs", "gs-data"), Role::PrimaryWorld);
        assert_eq!(Role::classify("gs", "gs-extra-nether"), Role::ExtraWorld);
        assert_eq!(
            Role::classify("gs", "gs-mods-1-21-4"),
            Role::RebuildableMods
        );
        assert_eq!(Role::classify("gs", "other-data"), Role::Other);
    }
}

/// Two observations of a server's claims compared claim by claim (by name), with each side's
/// extras named: a claim that vanished or appeared is never silently dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PvcComparison {
    /// Claims on both sides with the same UID.
    pub kept: Vec<String>,
    /// Claims on both sides whose UID differs: `(claim, before, after)`.
    pub changed: Vec<(String, String, String)>,
    /// Claims observed before but not after.
    pub vanished: Vec<String>,
    /// Claims observed after but not before (e.g. a candidate version's new mods claim).
    pub appeared: Vec<String>,
}

impl PvcComparison {
    /// Whether every claim observed before is still there with its UID.
    pub fn identities_kept(&self) -> bool {
        self.changed.is_empty() && self.vanished.is_empty()
    }

    /// What a case checks of a comparison of `before` with a later observation: claims were
    /// observed before, every one kept its UID, and the claims that appeared are exactly
    /// `expected_new`, in any order.
    pub fn only_expected_new(&self, before: &[PvcObservation], expected_new: &[String]) -> bool {
        let mut appeared = self.appeared.clone();
        appeared.sort();
        let mut wanted = expected_new.to_vec();
        wanted.sort();
        self.identities_kept() && appeared == wanted && !before.is_empty()
    }
}

/// Compares `before` and `after` claim by claim.
pub fn compare(before: &[PvcObservation], after: &[PvcObservation]) -> PvcComparison {
    let after_by_name: BTreeMap<&str, &PvcObservation> =
        after.iter().map(|a| (a.claim.as_str(), a)).collect();
    let mut out = PvcComparison::default();
    for b in before {
        match after_by_name.get(b.claim.as_str()) {
            Some(a) if a.uid == b.uid => out.kept.push(b.claim.clone()),
            Some(a) => out
                .changed
                .push((b.claim.clone(), b.uid.clone(), a.uid.clone())),
            None => out.vanished.push(b.claim.clone()),
        }
    }
    for a in after {
        if !before.iter().any(|b| b.claim == a.claim) {
            out.appeared.push(a.claim.clone());
        }
    }
    out
}

/// The defective comparison the `harness-pvc-compare-zip` mutant uses: pairs by position and
/// stops at the shorter side, so extras on either side disappear from the result.
pub fn compare_zip(before: &[PvcObservation], after: &[PvcObservation]) -> PvcComparison {
    let mut out = PvcComparison::default();
    for (b, a) in before.iter().zip(after) {
        if b.uid == a.uid {
            out.kept.push(b.claim.clone());
        } else {
            out.changed
                .push((b.claim.clone(), b.uid.clone(), a.uid.clone()));
        }
    }
    out
}

#[cfg(test)]
mod compare_tests {
    use super::*;

    fn obs(claim: &str, uid: &str) -> PvcObservation {
        PvcObservation::classify("gs", claim, uid, None)
    }

    #[test]
    fn names_each_side_s_extras_and_changed_uids() {
        let before = [
            obs("gs-data", "1"),
            obs("gs-extra-n", "2"),
            obs("gs-mods-1-0", "3"),
        ];
        let after = [
            obs("gs-data", "1"),
            obs("gs-extra-n", "9"),
            obs("gs-mods-2-0", "4"),
        ];
        let c = compare(&before, &after);
        assert_eq!(c.kept, vec!["gs-data"]);
        assert_eq!(
            c.changed,
            vec![("gs-extra-n".into(), "2".into(), "9".into())]
        );
        assert_eq!(c.vanished, vec!["gs-mods-1-0"]);
        assert_eq!(c.appeared, vec!["gs-mods-2-0"]);
        assert!(!c.identities_kept());
    }

    #[test]
    fn zip_drops_the_longer_side_s_tail() {
        let before = [obs("gs-data", "1")];
        let after = [obs("gs-data", "1"), obs("gs-mods-2-0", "4")];
        assert!(compare_zip(&before, &after).appeared.is_empty());
        assert_eq!(compare(&before, &after).appeared, vec!["gs-mods-2-0"]);
    }
}
