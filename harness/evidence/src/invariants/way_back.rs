//! A qualification's way back and the truth of its report, judged from a **fresh read of the
//! cluster** after the qualification ended ([`FleetRead`]), never from what the procedure
//! remembers. Two invariants, beside the qualification invariant (contract D6):
//!
//! - [`WAY_BACK`]: every member that runs the candidate afterwards is in a batch whose promotion
//!   receipt passed, or — for a candidate that changes the save format — still has a Succeeded
//!   pre-promotion Backup whose snapshot is in the repository (for a compatible candidate,
//!   pinning the version it ran is the way back, so the record must name that version); and a
//!   pre-promotion Backup (or its snapshot) of a member not verified back on its previous
//!   version ([`verified_back`]) is never deleted or forgotten, whatever signals arrived.
//! - [`TRUTH`]: the report's per-member version, pod UID and PVC UIDs are what the cluster
//!   shows; nothing that exists is reported gone; an unfinished qualification's decision names
//!   every member left on the candidate.
//!
//! The same rule, [`verified_back`], decides what the clean-up may remove: a pre-promotion Backup
//! carries its member's previous version ([`PREVIOUS_VERSION_ANNOTATION`]), and it is kept (no
//! longer labelled with the run) unless a fresh read shows that member running that version.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Violation;
use crate::qualification::{Qualification, Rollback};
use crate::report::qualification::QualificationReport;

/// Invariant `way-back`: no member is left on the candidate without a way back.
pub const WAY_BACK: &str = "way-back";
/// Invariant `truth`: the report says what the cluster shows.
pub const TRUTH: &str = "truth";
/// Every invariant a qualification's end is judged by from the cluster, in report order.
pub const FLEET_INVARIANTS: &[&str] = &[WAY_BACK, TRUTH];
/// The invariants of a qualification stopped by a signal (the signal exploration's schedules):
/// way back, truth and the qualification invariant (D6).
pub const SIGNAL_INVARIANTS: &[&str] = &[WAY_BACK, TRUTH, super::qualification::QUALIFICATION];

/// The annotation on a pre-promotion Backup naming the version its member ran before the batch
/// (empty: it tracked the template's default). The clean-up reads it to decide whether the
/// member is back.
pub const PREVIOUS_VERSION_ANNOTATION: &str = "rehearsal.local/previous-version";

/// A GameServer as a fresh read shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerNow {
    /// Its name.
    pub server: String,
    /// `spec.version` (`None`: it tracks the template's default).
    pub version: Option<String>,
    /// `spec.suspend`.
    pub suspend: Option<bool>,
    /// `status.phase`, as the API spells it (`Running`, `Failed`, …).
    pub phase: Option<String>,
    /// Its pod's UID, when it has a pod.
    pub pod_uid: Option<String>,
    /// Claim → PVC UID of the claims it owns.
    pub pvcs: BTreeMap<String, String>,
}

/// A Backup as a fresh read shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupNow {
    /// Its name.
    pub name: String,
    /// `spec.serverRef.name`.
    pub server: String,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `status.snapshotID`.
    pub snapshot: Option<String>,
}

/// What a fresh read of the qualification's namespace shows once it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetRead {
    /// The observed servers (the fleet and the source); a server that does not exist is absent.
    pub servers: Vec<ServerNow>,
    /// Every Backup in the namespace.
    pub backups: Vec<BackupNow>,
    /// The snapshot ids the repository lists (`None`: it could not be listed).
    #[serde(default)]
    pub snapshots: Option<Vec<String>>,
}

impl FleetRead {
    /// The server named `name`, if it exists.
    pub fn server(&self, name: &str) -> Option<&ServerNow> {
        self.servers.iter().find(|s| s.server == name)
    }

    fn backup(&self, name: &str) -> Option<&BackupNow> {
        self.backups.iter().find(|b| b.name == name)
    }

    fn has_snapshot(&self, id: &str) -> Option<bool> {
        self.snapshots.as_ref().map(|s| {
            s.iter()
                .any(|x| x == id || (id.len() >= 8 && x.starts_with(id)))
        })
    }
}

/// Whether the member `now` shows is back on `previous` (the version it ran before the batch,
/// `None` for the template's default): it exists, pins exactly that version, is not suspended
/// and runs (`Running`). `Err` says why not — the reason its pre-promotion Backup is kept.
pub fn verified_back(previous: Option<&str>, now: Option<&ServerNow>) -> Result<(), String> {
    let Some(now) = now else {
        return Err("the member no longer exists".into());
    };
    let shown = |v: Option<&str>| v.map_or("the template's default".to_string(), str::to_string);
    if now.version.as_deref() != previous {
        return Err(format!(
            "{} pins {}, not {} it ran before",
            now.server,
            shown(now.version.as_deref()),
            shown(previous)
        ));
    }
    if now.suspend == Some(true) {
        return Err(format!("{} is suspended", now.server));
    }
    match now.phase.as_deref() {
        Some("Running") => Ok(()),
        other => Err(format!(
            "{} is {} on {}, not Running",
            now.server,
            other.unwrap_or("without a phase"),
            shown(previous)
        )),
    }
}

/// The previous version an annotation value records (empty: the template's default).
pub fn previous_from_annotation(value: &str) -> Option<&str> {
    (!value.is_empty()).then_some(value)
}

/// Members the read shows on the candidate that no promoted batch holds, in fleet order.
pub fn left_on_candidate(q: &Qualification, read: &FleetRead) -> Vec<String> {
    let promoted = q.promoted_members();
    q.plan
        .fleet
        .iter()
        .filter(|m| !promoted.contains(m))
        .filter(|m| {
            read.server(m)
                .is_some_and(|s| s.version.as_deref() == Some(q.plan.candidate.as_str()))
        })
        .cloned()
        .collect()
}

/// Invariant [`WAY_BACK`] over the record `q` and the fresh `read`; `taken` are the
/// pre-promotion Backups the journal says the run created (`(member, backup, previous
/// version, snapshot once it succeeded)`).
pub fn way_back(q: &Qualification, taken: &[TakenBackup], read: &FleetRead) -> Vec<Violation> {
    let mut out = Vec::new();
    let evidence = "a fresh read of each member, the namespace's Backups and the repository";
    for member in left_on_candidate(q, read) {
        let found = match q.plan.rollback {
            Rollback::Compatible => {
                let before = q.baseline.iter().find(|b| b.server == member);
                before
                    .and_then(|b| b.version.as_ref())
                    .is_none()
                    .then(|| format!("{member} runs the candidate outside a promoted batch and the record names no version it ran before to pin again"))
            }
            Rollback::RestoreRequired => restorable(&member, read).err(),
        };
        if let Some(found) = found {
            out.push(Violation::new(WAY_BACK, evidence, found));
        }
    }
    for t in taken {
        let Err(why) = verified_back(t.previous.as_deref(), read.server(&t.member)) else {
            continue;
        };
        if read.backup(&t.backup).is_none() {
            out.push(Violation::new(
                WAY_BACK,
                evidence,
                format!(
                    "pre-promotion Backup {} of {} was deleted, yet the member is not back ({why})",
                    t.backup, t.member
                ),
            ));
        }
        if let Some(snapshot) = t.snapshot.as_deref().filter(|s| !s.is_empty()) {
            match read.has_snapshot(snapshot) {
                Some(true) => {}
                Some(false) => out.push(Violation::new(
                    WAY_BACK,
                    evidence,
                    format!(
                        "snapshot {snapshot} of {}'s pre-promotion Backup {} was forgotten, yet the member is not back ({why})",
                        t.member, t.backup
                    ),
                )),
                None => out.push(Violation::new(
                    WAY_BACK,
                    evidence,
                    format!(
                        "the repository was not listed: snapshot {snapshot} of {}'s way back cannot be shown to exist ({why})",
                        t.member
                    ),
                )),
            }
        }
    }
    out
}

/// A pre-promotion Backup a run created, as its journal records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TakenBackup {
    /// The member it backs up.
    pub member: String,
    /// The Backup's name.
    pub backup: String,
    /// The version the member ran before (`None`: the template's default).
    pub previous: Option<String>,
    /// Its snapshot, once the run saw it succeed.
    pub snapshot: Option<String>,
}

/// `Ok` when `member` has a Succeeded Backup whose snapshot the repository lists.
fn restorable(member: &str, read: &FleetRead) -> Result<(), String> {
    let mut why = format!("{member} runs the candidate outside a promoted batch and has no Backup");
    for b in read.backups.iter().filter(|b| b.server == member) {
        if b.phase.as_deref() != Some("Succeeded") {
            why = format!(
                "{member} runs the candidate outside a promoted batch and its Backup {} is {}",
                b.name,
                b.phase.as_deref().unwrap_or("without a phase")
            );
            continue;
        }
        match b.snapshot.as_deref().map(|s| read.has_snapshot(s)) {
            Some(Some(true)) => return Ok(()),
            Some(None) => {
                why = format!(
                    "the repository was not listed: {member}'s Backup {} cannot be shown restorable",
                    b.name
                );
            }
            _ => {
                why = format!(
                    "{member} runs the candidate outside a promoted batch and the snapshot of its Backup {} is not in the repository",
                    b.name
                );
            }
        }
    }
    Err(why)
}

/// Invariant [`TRUTH`] over the written report and the fresh `read` (with the record `q` the
/// report was rendered from): each member's version, pod UID and PVC UIDs as the cluster shows
/// them; an unfinished qualification names every member left on the candidate.
pub fn truth(q: &Qualification, report: &QualificationReport, read: &FleetRead) -> Vec<Violation> {
    let mut out = Vec::new();
    let evidence = "the report's tables and decision against a fresh read of the fleet";
    for row in report.pods.iter().filter(|r| r.server != report.clone) {
        let now = read.server(&row.server).and_then(|s| s.pod_uid.clone());
        if row.after != now {
            out.push(Violation::new(
                TRUTH,
                evidence,
                format!(
                    "the report shows {}'s pod as {} ({}), the cluster {}",
                    row.server,
                    row.after.as_deref().unwrap_or("none"),
                    row.change(),
                    now.as_deref().unwrap_or("none")
                ),
            ));
        }
    }
    for row in report.pvcs.iter().filter(|r| r.server != report.clone) {
        let now = read
            .server(&row.server)
            .and_then(|s| s.pvcs.get(&row.object).cloned());
        if row.after != now {
            out.push(Violation::new(
                TRUTH,
                evidence,
                format!(
                    "the report shows claim {} of {} as {} ({}), the cluster {}",
                    row.object,
                    row.server,
                    row.after.as_deref().unwrap_or("none"),
                    row.change(),
                    now.as_deref().unwrap_or("none")
                ),
            ));
        }
    }
    for v in &report.versions {
        let now = read.server(&v.server).and_then(|s| s.version.clone());
        if v.after != now {
            out.push(Violation::new(
                TRUTH,
                evidence,
                format!(
                    "the report shows {} on {}, the cluster pins {}",
                    v.server,
                    v.after.as_deref().unwrap_or("no version"),
                    now.as_deref().unwrap_or("no version")
                ),
            ));
        }
    }
    let unfinished = !report.promoted;
    if unfinished {
        for member in left_on_candidate(q, read) {
            if !report.decision.contains(&member) {
                out.push(Violation::new(
                    TRUTH,
                    evidence,
                    format!(
                        "{member} runs the candidate, yet the decision does not name it: {}",
                        report.decision
                    ),
                ));
            }
        }
    }
    if report.promoted && !left_on_candidate(q, read).is_empty() {
        out.push(Violation::new(
            TRUTH,
            evidence,
            format!(
                "the report says promoted ({}) while {} run the candidate outside a promoted batch",
                report.decision,
                left_on_candidate(q, read).join(", ")
            ),
        ));
    }
    out
}

/// The step name of the receipt a qualification writes as it creates a pre-promotion Backup,
/// before it waits for it: the journal then names every way back, even one a second signal cut
/// short.
pub const WAY_BACK_CREATED_STEP: &str = "pre-promotion backup created";

/// The pre-promotion Backups a qualification's journal says it created (a
/// [`WAY_BACK_CREATED_STEP`] step receipt each: `member`, `backup`, `previous`), with the
/// snapshot of each that a later `restic-snapshot` receipt (`details.backup`) recorded.
pub fn taken_from_receipts(receipts: &[crate::receipts::Receipt]) -> Vec<TakenBackup> {
    let mut out: Vec<TakenBackup> = Vec::new();
    for r in receipts {
        let o = &r.observed;
        if r.kind == "step" && r.step == WAY_BACK_CREATED_STEP {
            let text = |k: &str| o.get(k).and_then(|v| v.as_str()).map(str::to_string);
            if let (Some(member), Some(backup)) = (text("member"), text("backup")) {
                out.push(TakenBackup {
                    member,
                    backup,
                    previous: text("previous"),
                    snapshot: None,
                });
            }
        } else if r.kind == "restic-snapshot" {
            let backup = o.pointer("/details/backup").and_then(|v| v.as_str());
            let id = o.get("snapshot_id").and_then(|v| v.as_str());
            if let (Some(backup), Some(id)) = (backup, id)
                && let Some(t) = out.iter_mut().find(|t| t.backup == backup)
            {
                t.snapshot = Some(id.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_named_by_its_id_or_a_prefix_of_at_least_eight() {
        let read = FleetRead {
            servers: Vec::new(),
            backups: Vec::new(),
            snapshots: Some(vec!["0123456789abcdef".into()]),
        };
        assert_eq!(read.has_snapshot("0123456789abcdef"), Some(true));
        assert_eq!(read.has_snapshot("01234567"), Some(true));
        assert_eq!(read.has_snapshot("0123456"), Some(false));
        assert_eq!(read.has_snapshot("fedcba98"), Some(false));
        let unlisted = FleetRead {
            snapshots: None,
            ..read
        };
        assert_eq!(unlisted.has_snapshot("0123456789abcdef"), None);
    }
}
