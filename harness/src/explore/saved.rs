//! Schedules saved as regression files, as proptest keeps its `proptest-regressions`: a schedule
//! that once broke an invariant is written down as a small JSON file, and CI replays every file
//! against the operator it ships (`rehearse explore --regressions DIR`): each must hold every
//! invariant.
//!
//! A file names the write the fault lands before by its label and occurrence ("the 3rd
//! `patch restores/status back`"), not by its index, so it still lands on the same write after
//! the operator gains or loses other writes; the replay resolves it against a fresh reference
//! run and refuses, naming the file, when that write no longer exists.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::observer::Point;
use super::signals::{Pattern, SignalSchedule, Variant};
use super::{Fault, Operation, Place, Schedule};

/// One saved schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedSchedule {
    /// The operation (`backup`, `stopped-backup`, `restore`).
    pub operation: String,
    /// The fault (`restore-deleted`, …).
    pub fault: String,
    /// The label of the operator write the fault lands before, e.g. `patch restores/status back`.
    pub write: String,
    /// Which write of that label, counting from 1.
    pub occurrence: usize,
    /// What it broke when it was saved (invariant: what was found), for the reader.
    pub found: Vec<String>,
    /// The operator (and mutant) it broke on when it was saved.
    pub operator: String,
}

impl SavedSchedule {
    /// The saved form of `schedule`.
    pub fn of(schedule: &Schedule, found: Vec<String>, operator: &str) -> Self {
        Self {
            operation: schedule.operation.as_str().to_string(),
            fault: schedule.fault.as_str().to_string(),
            write: schedule.place.label.clone(),
            occurrence: schedule.place.occurrence,
            found,
            operator: operator.to_string(),
        }
    }

    /// Its operation; the error names the known ones.
    pub fn operation(&self) -> Result<Operation, String> {
        Operation::parse(&self.operation).ok_or_else(|| {
            format!(
                "unknown operation {:?}; known: {}",
                self.operation,
                Operation::ALL
                    .iter()
                    .map(|o| o.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// The schedule it is in a run whose reference learned `points`; the error says why not.
    pub fn resolve(&self, points: &[Point]) -> Result<Schedule, String> {
        let operation = self.operation()?;
        let fault = Fault::parse(&self.fault).ok_or_else(|| {
            format!(
                "unknown fault {:?}; known: {}",
                self.fault,
                Fault::ALL
                    .iter()
                    .map(|f| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        if !operation.faults().contains(&fault) {
            return Err(format!(
                "fault {} does not apply to operation {}",
                self.fault, self.operation
            ));
        }
        let place = Place {
            label: self.write.clone(),
            occurrence: self.occurrence,
        };
        let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        place.index_in(&labels).ok_or_else(|| {
                format!(
                    "the operator no longer makes write {} #{} during a {} (it makes {} such write(s)): re-save the schedule or delete the file",
                    self.write,
                    self.occurrence,
                    self.operation,
                    points.iter().filter(|p| p.label == self.write).count()
                )
            })?;
        Ok(Schedule {
            operation,
            place,
            fault,
        })
    }
}

/// Schedule `id` of the exploration kept in bundle `dir`, named by the write its fault landed
/// before — that write's label and occurrence in the operation's reference run there
/// (`cases/<operation>-reference/artifacts/placement.json`) — so a replay lands on the same
/// write even after the operator gained or lost others (`rehearse explore --replay ID --from
/// BUNDLE`). The error is one line naming what is missing.
pub fn from_bundle(dir: &Path, id: &str) -> Result<SavedSchedule, String> {
    let schedule = Schedule::parse(id)?;
    let operation = schedule.operation.as_str();
    // A shard's reference run carries the shard in its name.
    let reference = std::fs::read_dir(dir.join("cases"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| crate::evidence::place::reference_of(n) == Some(operation))
        .unwrap_or_else(|| format!("{operation}-reference"));
    let path = dir
        .join("cases")
        .join(reference)
        .join("artifacts")
        .join(super::rejudge::PLACEMENT);
    let bytes = std::fs::read(&path).map_err(|e| {
        format!(
            "{}: {e}: --from names the bundle of an exploration that ran {} (reports/<run-id>)",
            path.display(),
            schedule.operation
        )
    })?;
    let placement: super::rejudge::Placement = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not a placement record: {e}", path.display()))?;
    if schedule.place.index_in(&placement.points).is_none() {
        return Err(format!(
            "{id}: the {} reference run in {} made {} `{}` write(s), fewer than {}",
            schedule.operation,
            dir.display(),
            placement
                .points
                .iter()
                .filter(|l| **l == schedule.place.label)
                .count(),
            schedule.place.label,
            schedule.place.occurrence
        ));
    }
    Ok(SavedSchedule::of(
        &schedule,
        Vec::new(),
        &format!("replayed from {}", dir.display()),
    ))
}

/// A signal schedule of the qualification procedure (`rehearse explore --qualify-signals`)
/// saved the same way: the receipt the signal follows is named by its step and occurrence ("the
/// 1st `pre-promotion backup created`"), so it still follows the same receipt after the
/// procedure gains or loses others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedSignalSchedule {
    /// Always `qualify-signals` (what tells the two kinds of file apart).
    pub operation: String,
    /// The qualification (`restore-required-b1`, …).
    pub variant: String,
    /// The step of the receipt the signal follows, e.g. `pre-promotion backup created`.
    pub receipt: String,
    /// Which receipt of that step, counting from 1.
    pub occurrence: usize,
    /// The signal pattern (`sigint`, `sigint-twice`, `sigterm`, `sigkill-rerun`).
    pub signal: String,
    /// What it broke when it was saved (invariant: what was found), for the reader.
    pub found: Vec<String>,
    /// The harness (rehearse version and commit) it broke on when it was saved.
    pub harness: String,
}

impl SavedSignalSchedule {
    /// The saved form of `schedule`.
    pub fn of(schedule: &SignalSchedule, found: Vec<String>, harness: &str) -> Self {
        Self {
            operation: SIGNALS.to_string(),
            variant: schedule.variant.as_str().to_string(),
            receipt: schedule.place.label.clone(),
            occurrence: schedule.place.occurrence,
            signal: schedule.pattern.as_str().to_string(),
            found,
            harness: harness.to_string(),
        }
    }

    /// Its variant; the error names the known ones.
    pub fn variant(&self) -> Result<Variant, String> {
        Variant::parse(&self.variant).ok_or_else(|| {
            format!(
                "unknown variant {:?}; known: {}",
                self.variant,
                Variant::ALL
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// The schedule it is in a run whose reference run of its variant wrote receipts with
    /// `steps`; the error says why not.
    pub fn resolve(&self, steps: &[String]) -> Result<SignalSchedule, String> {
        let variant = self.variant()?;
        let pattern = Pattern::parse(&self.signal).ok_or_else(|| {
            format!(
                "unknown signal pattern {:?}; known: {}",
                self.signal,
                Pattern::ALL
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        let place = Place {
            label: self.receipt.clone(),
            occurrence: self.occurrence,
        };
        let at = place.index_in(steps).ok_or_else(|| {
                format!(
                    "the qualification {} no longer writes receipt {:?} #{} (it writes {} such receipt(s)): re-save the schedule or delete the file",
                    self.variant,
                    self.receipt,
                    self.occurrence,
                    steps.iter().filter(|s| **s == self.receipt).count()
                )
            })?;
        if at == 0 {
            return Err(format!(
                "receipt {:?} #{} is the run's first, written before its signal handlers are installed: no signal can follow it",
                self.receipt, self.occurrence
            ));
        }
        Ok(SignalSchedule {
            variant,
            place,
            pattern,
        })
    }
}

/// The `operation` of a saved signal schedule.
const SIGNALS: &str = super::signals::OPERATION;

/// Reads every `*.json` file of `dir` that saves an operator's schedule (files of the
/// qualification's signal schedules are left to [`load_signal_dir`]), sorted by name; an
/// unreadable or malformed file is an error naming it.
pub fn load_dir(dir: &Path) -> Result<Vec<(PathBuf, SavedSchedule)>, String> {
    let files = read_dir(dir, false)?;
    files
        .into_iter()
        .map(|(path, value)| {
            let saved: SavedSchedule = serde_json::from_value(value).map_err(|e| {
                format!(
                    "{} is not a saved schedule: {e}; fields: operation, fault, write, occurrence, found, operator",
                    path.display()
                )
            })?;
            saved
                .operation()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok((path, saved))
        })
        .collect()
}

/// Reads every `*.json` file of `dir` that saves a signal schedule of the qualification
/// (`"operation": "qualify-signals"`), sorted by name; a malformed one is an error naming it.
pub fn load_signal_dir(dir: &Path) -> Result<Vec<(PathBuf, SavedSignalSchedule)>, String> {
    let files = read_dir(dir, true)?;
    files
        .into_iter()
        .map(|(path, value)| {
            let saved: SavedSignalSchedule = serde_json::from_value(value).map_err(|e| {
                format!(
                    "{} is not a saved signal schedule: {e}; fields: operation, variant, receipt, occurrence, signal, found, harness",
                    path.display()
                )
            })?;
            saved
                .variant()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok((path, saved))
        })
        .collect()
}

/// The `*.json` files of `dir` of one kind (`signals`: the qualification's), parsed, sorted by
/// name.
fn read_dir(dir: &Path, signals: bool) -> Result<Vec<(PathBuf, serde_json::Value)>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        format!(
            "cannot read the regressions directory {}: {e}; give a directory of saved schedules (*.json)",
            dir.display()
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not a saved schedule: {e}; it must be one JSON object",
                path.display()
            )
        })?;
        if (value["operation"] == SIGNALS) == signals {
            out.push((path, value));
        }
    }
    Ok(out)
}

/// Writes `saved` as `<dir>/<operation>-<fault>-<write slug>-<occurrence>.json` (a file of that
/// name is replaced: it is the same schedule); returns its path.
pub fn save(dir: &Path, saved: &SavedSchedule) -> Result<PathBuf, String> {
    let name = format!(
        "{}-{}-{}-{}.json",
        saved.operation,
        saved.fault,
        slug(&saved.write),
        saved.occurrence
    );
    write(dir, &name, saved)
}

/// Writes `saved` as `<dir>/qualify-signals-<variant>-<signal>-<receipt slug>-<occurrence>.json`
/// (a file of that name is replaced: it is the same schedule); returns its path.
pub fn save_signal(dir: &Path, saved: &SavedSignalSchedule) -> Result<PathBuf, String> {
    let name = format!(
        "{}-{}-{}-{}-{}.json",
        saved.operation,
        saved.variant,
        saved.signal,
        slug(&saved.receipt),
        saved.occurrence
    );
    write(dir, &name, saved)
}

fn slug(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

fn write(dir: &Path, name: &str, saved: &impl Serialize) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(name);
    let mut text = serde_json::to_string_pretty(saved).unwrap_or_default();
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(labels: &[&str]) -> Vec<Point> {
        labels
            .iter()
            .enumerate()
            .map(|(index, l)| Point {
                index,
                label: l.to_string(),
            })
            .collect()
    }

    #[test]
    fn a_saved_schedule_lands_on_the_same_write_after_the_operator_gains_others() {
        let before = points(&[
            "patch restores/status back",
            "patch restores back",
            "patch restores/status back",
            "create jobs",
            "patch restores/status back",
        ]);
        let schedule = Schedule {
            operation: Operation::Restore,
            place: Place::at(
                &before.iter().map(|p| p.label.as_str()).collect::<Vec<_>>(),
                4,
            )
            .unwrap(),
            fault: Fault::RestoreDeleted,
        };
        let saved = SavedSchedule::of(&schedule, vec!["drain: …".into()], "ref");
        assert_eq!(saved.write, "patch restores/status back");
        assert_eq!(saved.occurrence, 3);
        // The operator now adds its finalizer first: the same write is the 6th, and the
        // schedule (its id too) is the same.
        let mut after = points(&["patch restores back"]);
        after.extend(before.iter().map(|p| Point {
            index: p.index + 1,
            label: p.label.clone(),
        }));
        let resolved = saved.resolve(&after).unwrap();
        assert_eq!(resolved, schedule);
        assert_eq!(
            resolved.id(),
            "restore.patch_restores~status_back.3.restore-deleted"
        );
        // A write that is gone is refused, naming it.
        let e = saved.resolve(&after[..3]).unwrap_err();
        assert!(
            e.contains("no longer makes write patch restores/status back #3"),
            "{e}"
        );
    }

    #[test]
    fn files_round_trip_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let saved = SavedSchedule {
            operation: "restore".into(),
            fault: "restore-deleted".into(),
            write: "patch restores/status back".into(),
            occurrence: 3,
            found: vec!["drain: x".into()],
            operator: "reference-operator 0.1.0".into(),
        };
        let path = save(dir.path(), &saved).unwrap();
        assert!(
            path.ends_with("restore-restore-deleted-patch-restores-status-back-3.json"),
            "{}",
            path.display()
        );
        // A signal schedule's file beside it is the other loader's.
        let signal = SavedSignalSchedule {
            operation: "qualify-signals".into(),
            variant: "restore-required-b1".into(),
            receipt: "pre-promotion backup created".into(),
            occurrence: 1,
            signal: "sigkill-rerun".into(),
            found: vec!["way-back: x".into()],
            harness: "rehearse 0.1.0".into(),
        };
        let signal_path = save_signal(dir.path(), &signal).unwrap();
        assert!(
            signal_path.ends_with(
                "qualify-signals-restore-required-b1-sigkill-rerun-pre-promotion-backup-created-1.json"
            ),
            "{}",
            signal_path.display()
        );
        assert_eq!(
            load_dir(dir.path()).unwrap(),
            vec![(path.clone(), saved.clone())]
        );
        assert_eq!(
            load_signal_dir(dir.path()).unwrap(),
            vec![(signal_path, signal)]
        );
        std::fs::write(dir.path().join("bad.json"), "{\"operation\": 1}").unwrap();
        let e = load_dir(dir.path()).unwrap_err();
        assert!(e.contains("bad.json is not a saved schedule"), "{e}");
        let e = load_dir(&dir.path().join("missing")).unwrap_err();
        assert!(e.contains("cannot read the regressions directory"), "{e}");
        let wrong = SavedSchedule {
            fault: "game-restart".into(),
            ..saved
        };
        assert!(
            wrong
                .resolve(&points(&["patch restores/status back"]))
                .unwrap_err()
                .contains("does not apply to operation restore")
        );
    }

    fn steps(labels: &[&str]) -> Vec<String> {
        labels.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn a_saved_signal_schedule_follows_the_same_receipt_after_the_procedure_gains_others() {
        let before = steps(&[
            "run started",
            "start   promotion batch 1",
            "pre-promotion backup created",
            "start   promotion batch 2",
            "pre-promotion backup created",
        ]);
        let schedule = SignalSchedule {
            variant: Variant::RestoreRequiredB1,
            place: Place::at(&before, 4).unwrap(),
            pattern: Pattern::SigkillRerun,
        };
        let saved = SavedSignalSchedule::of(&schedule, vec!["way-back: …".into()], "r");
        assert_eq!(saved.receipt, "pre-promotion backup created");
        assert_eq!(saved.occurrence, 2);
        // The procedure now writes a receipt more before them: the same receipt, the same
        // schedule.
        let mut after = steps(&["run started", "preflight passed"]);
        after.extend(before[1..].iter().cloned());
        assert_eq!(saved.resolve(&after).unwrap(), schedule);
        let e = saved.resolve(&after[..4]).unwrap_err();
        assert!(
            e.contains("no longer writes receipt \"pre-promotion backup created\" #2"),
            "{e}"
        );
        let first = SavedSignalSchedule {
            receipt: "run started".into(),
            occurrence: 1,
            ..saved.clone()
        };
        assert!(
            first
                .resolve(&after)
                .unwrap_err()
                .contains("the run's first")
        );
        let bad = SavedSignalSchedule {
            signal: "sighup".into(),
            ..saved
        };
        assert!(
            bad.resolve(&after)
                .unwrap_err()
                .contains("unknown signal pattern")
        );
    }
}
