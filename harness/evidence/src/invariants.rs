//! The contract's invariants as code: functions over what one run of an operation observed,
//! independent of any case and of where a fault was placed.
//!
//! A case reads the evidence its author expected at the moment its author chose. An invariant
//! reads *everything* the run observed — every committed state of the Backup, of the game's pod
//! and of the copy's worker pods, in commit order with their commit times, and the game's RCON
//! audit log on the same clock — and states what must hold whatever happened in between. `rehearse
//! explore` judges every schedule (an operation with one fault at one point) with them, so a bug
//! that needs the fault one write later than any case placed it still fails the run.
//!
//! The reasoning is causal, so a slow machine cannot produce a violation: the copy's reads lie
//! inside its **window**, from the commit that created its first worker pod to the commit that
//! showed its last worker pod ended (terminal phase or gone) — a pod cannot read before it exists
//! or after its end was reported. A correct operator quiesces before it creates the Job (so the
//! game's `save-off` line is older than the window) and unquiesces after it saw the Job end (so
//! its `save-on` line is newer). Every violation names the invariant, the evidence it read and
//! what it found there.
//!
//! The invariants of a backup: [`BackupTrace::violations`]; of a restore:
//! [`restore::RestoreTrace::violations`]. Their ids are the clause kinds `docs/contract.toml`
//! lists under "Invariants".

use serde::{Deserialize, Serialize};

/// Invariant `consistency`: Succeeded+Quiesced only if one game incarnation was quiesced from
/// before the copy's window until after it and never changed inside it; Stopped only if no game
/// ran inside the window; a source change inside the window ends Failed, consistency
/// `Invalidated`, with a reason.
pub const CONSISTENCY: &str = "consistency";
/// Invariant `cleanup`: every `save-off` is followed by exactly one `save-on` to the same
/// incarnation while it lives, after the copy's window; no `save-on` reaches an incarnation
/// that was neither quiesced nor the one the Backup was bound to, and none is sent twice.
pub const CLEANUP: &str = "cleanup";
/// Invariant `drain`: no copy worker pod runs once its Backup is terminal (or removed), the
/// copy Job of a Backup that failed or was removed is gone or being deleted before it ends, and a
/// deleted Backup does not stay behind its finalizer. (A terminal Backup that nobody deleted
/// may keep its cleanup finalizer: it is what makes a later deletion pay what is owed.)
pub const DRAIN: &str = "drain";
/// Invariant `liveness`: once faults stop, the Backup reaches a terminal phase within its bound,
/// with a reason; the preparation deadline, once persisted, never moves.
pub const LIVENESS: &str = "liveness";

/// The `Completed` reason of a Backup whose recorded live source changed during its copy.
const SOURCE_CHANGED: &str = "SourceChanged";
/// The `Completed` reason of a stopped server's Backup whose server started during its copy.
const SOURCE_STARTED: &str = "SourceStarted";
/// The `Completed` reason of a Backup whose copy failed with its source unchanged.
const COPY_FAILED: &str = "CopyFailed";

/// Every invariant a backup schedule is judged by, in report order (`data`: what its snapshot
/// holds, [`capture`]).
pub const BACKUP_INVARIANTS: &[&str] = &[
    CONSISTENCY,
    CLEANUP,
    DRAIN,
    LIVENESS,
    restore::DATA,
    outcome::OUTCOME,
];

/// Every invariant of every operation.
pub const ALL: &[&str] = &[
    CONSISTENCY,
    CLEANUP,
    DRAIN,
    LIVENESS,
    restore::DATA,
    outcome::OUTCOME,
    qualification::QUALIFICATION,
    way_back::WAY_BACK,
    way_back::TRUTH,
];

/// The invariants that judge the operations the catalogue marks `judges`.
pub fn judged_by(judges: crate::catalogue::Judges) -> &'static [&'static str] {
    use crate::catalogue::Judges;
    match judges {
        Judges::Backup => BACKUP_INVARIANTS,
        Judges::Restore => restore::RESTORE_INVARIANTS,
        Judges::Qualify => qualification::QUALIFY_INVARIANTS,
        Judges::QualifyThenRestore => qualification::QUALIFY_RESTORE_INVARIANTS,
    }
}

/// The name of the qualification procedure's own schedules, stopped by signals at each of its
/// receipts (`rehearse explore --qualify-signals`).
pub const QUALIFY_SIGNALS: &str = "qualify-signals";

/// The invariants each operation `rehearse explore` covers is judged by, by the operation's
/// name in schedule ids (the catalogue's operations, then [`QUALIFY_SIGNALS`]);
/// `docs/contract.toml` lists the same under each `[[invariant]]`.
pub fn by_operation() -> Vec<(&'static str, &'static [&'static str])> {
    crate::catalogue::OPERATIONS
        .iter()
        .map(|row| (row.name, judged_by(row.judges)))
        .chain([(QUALIFY_SIGNALS, way_back::SIGNAL_INVARIANTS)])
        .collect()
}

pub mod capture;
pub mod history;
pub mod outcome;
pub mod qualification;
pub mod restore;
pub mod schedule;
pub mod way_back;

/// One broken promise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Violation {
    /// The invariant ([`CONSISTENCY`], [`CLEANUP`], …).
    pub invariant: String,
    /// The evidence read, e.g. `committed states of pod mc-0` or `RCON audit log`.
    pub evidence: String,
    /// What was found, one line.
    pub found: String,
}

impl Violation {
    pub(crate) fn new(invariant: &str, evidence: &str, found: String) -> Self {
        Self {
            invariant: invariant.to_string(),
            evidence: evidence.to_string(),
            found,
        }
    }
}

/// One invariant's verdict over one schedule, from everything the run observed. Evidence that
/// could not be read, or a run that never reached what the invariant reads, is `Unknown` with
/// the reason — never `Held`; a schedule is ok only when every invariant that applies held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum Judgement {
    /// It holds over everything the run observed.
    Held,
    /// It was broken: what was found, and where.
    Violated {
        /// Each broken promise.
        violations: Vec<Violation>,
    },
    /// It could not be judged: why (the evidence that was missing, and what it would take).
    Unknown {
        /// One line.
        why: String,
    },
}

impl Judgement {
    /// `held`, `violated` or `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Held => "held",
            Self::Violated { .. } => "violated",
            Self::Unknown { .. } => "unknown",
        }
    }
}

/// One invariant and its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judged {
    /// The invariant ([`CONSISTENCY`], [`CLEANUP`], …).
    pub invariant: String,
    /// Its verdict.
    pub judgement: Judgement,
}

/// The verdict of each of `invariants`, in order: `Violated` when `violations` holds one of
/// it (a broken promise seen is broken, whatever could not be seen), else `Unknown` when
/// `unknown` gives a reason it could not be judged, else `Held`.
pub fn judge_each(
    invariants: &[&str],
    violations: &[Violation],
    unknown: impl Fn(&str) -> Option<String>,
) -> Vec<Judged> {
    invariants
        .iter()
        .map(|id| {
            let broken: Vec<Violation> = violations
                .iter()
                .filter(|v| v.invariant == *id)
                .cloned()
                .collect();
            let judgement = if !broken.is_empty() {
                Judgement::Violated { violations: broken }
            } else if let Some(why) = unknown(id) {
                Judgement::Unknown { why }
            } else {
                Judgement::Held
            };
            Judged {
                invariant: (*id).to_string(),
                judgement,
            }
        })
        .collect()
}

/// The invariants of `judged` that were violated, in order.
pub fn violated(judged: &[Judged]) -> Vec<String> {
    judged
        .iter()
        .filter(|j| matches!(j.judgement, Judgement::Violated { .. }))
        .map(|j| j.invariant.clone())
        .collect()
}

/// `<invariant>: <why>` for each invariant of `judged` that could not be judged, in order.
pub fn unknown_reasons(judged: &[Judged]) -> Vec<String> {
    judged
        .iter()
        .filter_map(|j| match &j.judgement {
            Judgement::Unknown { why } => Some(format!("{}: {why}", j.invariant)),
            _ => None,
        })
        .collect()
}

/// A committed state of the Backup.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupState {
    /// `status.phase`.
    pub phase: Option<String>,
    /// `status.consistency`.
    pub consistency: Option<String>,
    /// `status.source.podUID`.
    pub source_pod_uid: Option<String>,
    /// `status.source.gameContainerID`.
    pub source_container: Option<String>,
    /// The `Completed` condition's reason.
    pub completed_reason: Option<String>,
    /// The `Unquiesced` condition's reason (e.g. `UnquiesceSucceeded`: save-on confirmed).
    #[serde(default)]
    pub unquiesced_reason: Option<String>,
    /// `status.snapshotID`.
    #[serde(default)]
    pub snapshot_id: Option<String>,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// When a quiesce was attempted (annotation `backup.gameplane.local/quiesce-attempted`):
    /// for a record with no incarnation fields (an older operator's), the only name of the
    /// process it quiesced.
    #[serde(default)]
    pub quiesce_attempted: Option<String>,
    /// The preparation deadline the operator persisted when it accepted the Backup (annotation
    /// `backup.gameplane.local/preparation-deadline`).
    #[serde(default)]
    pub preparation_deadline: Option<String>,
    /// Its deletion was requested (`metadata.deletionTimestamp`).
    #[serde(default)]
    pub deleting: bool,
    /// The object was removed from the store.
    pub gone: bool,
}

impl BackupState {
    /// Succeeded or Failed.
    pub fn terminal(&self) -> bool {
        matches!(self.phase.as_deref(), Some("Succeeded" | "Failed"))
    }
}

/// A committed state of the game server's pod.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GamePodState {
    /// The pod's UID.
    pub uid: String,
    /// The game container's ID, once it has one.
    pub game_container: Option<String>,
    /// The game container is running (`state.running`).
    pub game_running: bool,
    /// The object was removed from the store.
    pub gone: bool,
}

/// A committed state of one of the copy Job's worker pods.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyPodState {
    /// The pod's name.
    pub name: String,
    /// `status.phase`.
    pub phase: Option<String>,
    /// The object was removed from the store.
    pub gone: bool,
}

impl CopyPodState {
    /// Ended: a terminal phase, or removed.
    pub fn ended(&self) -> bool {
        self.gone || matches!(self.phase.as_deref(), Some("Succeeded" | "Failed"))
    }
}

/// A committed state of the Backup's copy Job object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyJobState {
    /// Its deletion was requested (`metadata.deletionTimestamp`: a foreground deletion waits
    /// for its pods).
    pub deleting: bool,
    /// The object was removed from the store.
    pub gone: bool,
}

/// What a committed change was about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "object")]
pub enum Subject {
    /// The Backup under test.
    Backup(BackupState),
    /// The game server's pod.
    GamePod(GamePodState),
    /// A worker pod of the Backup's copy Job.
    CopyPod(CopyPodState),
    /// The Backup's copy Job object.
    CopyJob(CopyJobState),
}

/// One committed change, on the host's clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Committed {
    /// Its resourceVersion (commit order).
    pub rv: u64,
    /// When it was committed.
    pub at: jiff::Timestamp,
    /// What changed, as committed.
    pub subject: Subject,
}

/// One line of the game's RCON audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditEntry {
    /// When the game wrote it.
    pub at: jiff::Timestamp,
    /// The game process that wrote it.
    pub incarnation: String,
    /// `start` (a game process began) or `command` (it received an RCON command).
    pub event: String,
    /// The command, for `command` lines.
    pub command: Option<String>,
}

/// Everything one backup schedule observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupTrace {
    /// The Backup's name.
    pub backup: String,
    /// Whether it asked for quiesce (`spec.quiesce`, true when absent).
    pub quiesce: bool,
    /// Committed states of the Backup, the game pod and the copy's worker pods, in commit order.
    pub changes: Vec<Committed>,
    /// The game's RCON audit log, in file order, read after the Backup ended (or at the bound)
    /// with the server settled: its newest process is the one running when the pod's last
    /// state shows a running game.
    pub audit: Vec<AuditEntry>,
    /// The audit log could be read (an unread log judges no audit clause).
    pub audit_read: bool,
    /// When the last fault of the schedule had landed (liveness counts from here).
    pub faults_stopped_at: Option<jiff::Timestamp>,
    /// How long the Backup may take to end once faults stopped, in milliseconds.
    pub bound_ms: u64,
    /// When observation ended.
    pub observed_until: jiff::Timestamp,
    /// The server's claims, each with the marker planted in it before the backup (none when
    /// the schedule planted none).
    #[serde(default)]
    pub claims: Vec<capture::MarkedClaim>,
    /// The snapshot the Backup named, as read once it ended.
    #[serde(default)]
    pub snapshot: Option<capture::SnapshotRead>,
    /// What was done to the run (judged by [`outcome`]); `None`: not judged.
    #[serde(default)]
    pub perturbation: Option<outcome::Perturbation>,
    /// The end state of the reference run of this operation, when there was one to compare
    /// with (the differential oracle, [`outcome::differential`]).
    #[serde(default)]
    pub reference_end: Option<outcome::EndState>,
    /// Why the operation leaves nothing for data's marker and run-state clauses to read, when it
    /// does so by design (a Backup created together with its server, before any claim
    /// exists): data then judges the copy and the snapshot id only, and says so here.
    #[serde(default)]
    pub data_scope: Option<String>,
    /// Why the audit log could not be read, when it could not (`audit_read` is false).
    #[serde(default)]
    pub audit_error: Option<String>,
    /// The server's run state (`suspend=… asleep=…`) just before the Backup was created.
    #[serde(default)]
    pub run_state_before: Option<String>,
    /// Its run state once the Backup ended (and the server settled).
    #[serde(default)]
    pub run_state_after: Option<String>,
}

/// The copy's window: from its first worker pod's creation to the end of its last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The commit that created the first worker pod.
    pub start: jiff::Timestamp,
    /// The commit that showed the last worker pod ended; `None` while one has not.
    pub end: Option<jiff::Timestamp>,
}

impl BackupTrace {
    /// The Backup's committed states, in order.
    fn backup_states(&self) -> impl Iterator<Item = (&Committed, &BackupState)> {
        self.changes.iter().filter_map(|c| match &c.subject {
            Subject::Backup(b) => Some((c, b)),
            _ => None,
        })
    }

    /// Every committed phase of the copy's worker pods, in commit order.
    pub fn copy_phases(&self) -> Vec<&str> {
        self.changes
            .iter()
            .filter_map(|c| match &c.subject {
                Subject::CopyPod(p) => p.phase.as_deref(),
                _ => None,
            })
            .collect()
    }

    /// The game pod's committed states, in order.
    fn pod_states(&self) -> impl Iterator<Item = (&Committed, &GamePodState)> {
        self.changes.iter().filter_map(|c| match &c.subject {
            Subject::GamePod(p) => Some((c, p)),
            _ => None,
        })
    }

    /// The Backup's last committed state that is not its removal.
    pub fn final_state(&self) -> Option<&BackupState> {
        self.backup_states()
            .map(|(_, b)| b)
            .filter(|b| !b.gone)
            .last()
    }

    /// The first commit at which the Backup was terminal.
    pub fn terminal_at(&self) -> Option<&Committed> {
        self.backup_states()
            .find(|(_, b)| b.terminal())
            .map(|(c, _)| c)
    }

    /// The copy's window, when a worker pod was ever created.
    pub fn window(&self) -> Option<Window> {
        let mut start = None;
        let mut open: std::collections::BTreeMap<&str, bool> = std::collections::BTreeMap::new();
        let mut end = None;
        for c in &self.changes {
            let Subject::CopyPod(p) = &c.subject else {
                continue;
            };
            start.get_or_insert(c.at);
            let was_open = open.insert(&p.name, !p.ended());
            if p.ended() && was_open != Some(false) {
                end = Some(c.at);
            }
        }
        let all_ended = open.values().all(|running| !running);
        start.map(|start| Window {
            start,
            end: end.filter(|_| all_ended),
        })
    }

    /// Every invariant's violations, in [`BACKUP_INVARIANTS`] order.
    pub fn violations(&self) -> Vec<Violation> {
        let mut out = self.consistency();
        out.extend(self.cleanup());
        out.extend(self.drain());
        out.extend(self.liveness());
        out.extend(self.data());
        out.extend(outcome::judge(
            self.perturbation.as_ref(),
            self.final_state().map(|b| outcome::Ending {
                phase: b.phase.clone(),
                consistency: b.consistency.clone(),
                reason: b.completed_reason.clone(),
            }),
        ));
        out.extend(outcome::differential(
            self.perturbation.as_ref(),
            self.reference_end.as_ref(),
            &self.end_state(),
        ));
        out
    }

    /// What this run left: the Backup's ending and finalizers, whether it was removed, and the
    /// server's run state once it ended.
    pub fn end_state(&self) -> outcome::EndState {
        let fin = self.final_state();
        let mut finalizers = fin.map(|b| b.finalizers.clone()).unwrap_or_default();
        finalizers.sort();
        outcome::EndState {
            ending: fin.map(|b| outcome::Ending {
                phase: b.phase.clone(),
                consistency: b.consistency.clone(),
                reason: b.completed_reason.clone(),
            }),
            finalizers,
            removed: self.backup_states().last().is_some_and(|(_, b)| b.gone),
            run_state: self.run_state_after.clone(),
            claims: None,
            snapshot_holds: self.snapshot_holds(),
        }
    }

    /// The claims whose planted marker the snapshot the Backup ended with lists, sorted
    /// (`None`: no snapshot id, no markers planted, or the snapshot was not listed).
    fn snapshot_holds(&self) -> Option<Vec<String>> {
        let id = self.final_state()?.snapshot_id.clone()?;
        let files = self
            .snapshot
            .as_ref()
            .filter(|s| s.id == id)?
            .files
            .as_ref()?;
        if self.claims.is_empty() {
            return None;
        }
        let mut held: Vec<String> = self
            .claims
            .iter()
            .filter(|c| files.iter().any(|f| f.ends_with(&format!("/{}", c.marker))))
            .map(|c| c.claim.clone())
            .collect();
        held.sort();
        Some(held)
    }

    /// Every invariant's verdict, in [`BACKUP_INVARIANTS`] order.
    pub fn judge(&self) -> Vec<Judged> {
        judge_each(BACKUP_INVARIANTS, &self.violations(), |id| self.unknown(id))
    }

    /// Why invariant `id` cannot be judged over this trace, if it cannot: what it reads was
    /// never recorded or could not be read. (Where the absence is itself a broken promise —
    /// a Backup that never ended, a Succeeded one without a snapshot — the invariant reports
    /// it as a violation instead.)
    pub fn unknown(&self, id: &str) -> Option<String> {
        let ended = self.terminal_at().is_some()
            || self.backup_states().last().is_some_and(|(_, b)| b.gone);
        let never = || {
            (!ended).then(|| {
                "the Backup never ended (liveness judges that), so what it owes is not settled"
                    .to_string()
            })
        };
        let no_state = || {
            self.final_state().is_none().then(|| {
                format!(
                    "no committed state of Backup {} was recorded: the trace holds nothing to judge",
                    self.backup
                )
            })
        };
        let unread = || {
            (!self.audit_read).then(|| {
                format!(
                    "the game's RCON audit log could not be read ({}): which game processes ran and what they were sent is unknown",
                    self.audit_error.as_deref().unwrap_or("no reason recorded")
                )
            })
        };
        match id {
            CONSISTENCY => no_state().or_else(|| {
                let fin = self.final_state()?;
                let succeeded = fin.phase.as_deref() == Some("Succeeded");
                match self.window() {
                    None if succeeded && self.quiesce => Some(format!(
                        "the Backup Succeeded with consistency {}, but no worker pod of its copy Job was recorded: there is no copy window to judge it over",
                        fin.consistency.as_deref().unwrap_or("-")
                    )),
                    Some(_) if self.quiesce && fin.terminal() => unread(),
                    _ => None,
                }
            }),
            CLEANUP => unread().or_else(never),
            DRAIN => never(),
            restore::DATA => no_state().or_else(|| {
                if self.data_scope.is_some() {
                    return None;
                }
                let fin = self.final_state()?;
                if fin.phase.as_deref() == Some("Succeeded") && self.claims.is_empty() {
                    return Some(
                        "no marker was planted in the server's claims: what the snapshot holds was not judged".into(),
                    );
                }
                match (&self.run_state_before, &self.run_state_after) {
                    (Some(_), Some(_)) => None,
                    _ => Some(
                        "the server's run state was not read both before the Backup and after it ended".into(),
                    ),
                }
            }),
            outcome::OUTCOME => self.perturbation.is_none().then(|| {
                "what was done to the run (operation and fault) was not recorded".to_string()
            }),
            _ => None,
        }
    }

    /// The game pod's states that describe the window: the last one committed before it
    /// began, and every one committed inside it (to its end, or to the end of observation).
    fn pod_states_in(&self, w: Window) -> Vec<(&Committed, &GamePodState)> {
        let before = self.pod_states().filter(|(c, _)| c.at < w.start).last();
        before
            .into_iter()
            .chain(
                self.pod_states()
                    .filter(|(c, _)| c.at >= w.start && w.end.is_none_or(|end| c.at <= end)),
            )
            .collect()
    }

    /// Game processes that started strictly inside the window.
    fn starts_in(&self, w: Window) -> Vec<&AuditEntry> {
        self.audit
            .iter()
            .filter(|a| a.event == "start" && a.at > w.start && w.end.is_none_or(|end| a.at < end))
            .collect()
    }

    /// Invariant [`CONSISTENCY`].
    pub fn consistency(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        if !self.quiesce {
            return self.raw_consistency();
        }
        let (Some(fin), Some(w)) = (self.final_state(), self.window()) else {
            return out;
        };
        let pods = self.pod_states_in(w);
        let starts = if self.audit_read {
            self.starts_in(w)
        } else {
            Vec::new()
        };
        let succeeded = fin.phase.as_deref() == Some("Succeeded");
        match fin.consistency.as_deref() {
            Some("Quiesced") if succeeded => {
                let (Some(uid), Some(container)) = (&fin.source_pod_uid, &fin.source_container)
                else {
                    out.push(Violation::new(
                        CONSISTENCY,
                        "Backup status.source",
                        "Succeeded with consistency Quiesced but no source pod UID and game container ID recorded".into(),
                    ));
                    return out;
                };
                for (c, p) in &pods {
                    if p.gone
                        || p.uid != *uid
                        || p.game_container.as_ref() != Some(container)
                        || !p.game_running
                    {
                        out.push(Violation::new(
                            CONSISTENCY,
                            "committed states of the game pod during the copy",
                            format!(
                                "Succeeded with consistency Quiesced from pod {uid} container {container}, but at rv {} ({}) the game was {}",
                                c.rv, c.at, describe(p)
                            ),
                        ));
                        break;
                    }
                }
                if let Some(s) = starts.first() {
                    out.push(Violation::new(
                        CONSISTENCY,
                        "RCON audit log",
                        format!(
                            "Succeeded with consistency Quiesced, but game process {} started at {} inside the copy's window ({} – {})",
                            s.incarnation, s.at, w.start, fmt_end(w.end)
                        ),
                    ));
                }
                if self.audit_read
                    && let Some(why) = self.not_quiesced_across(w)
                {
                    out.push(Violation::new(CONSISTENCY, "RCON audit log", why));
                }
            }
            Some("Stopped") if succeeded => {
                if let Some((c, p)) = pods.iter().find(|(_, p)| !p.gone && p.game_running) {
                    out.push(Violation::new(
                        CONSISTENCY,
                        "committed states of the game pod during the copy",
                        format!(
                            "Succeeded with consistency Stopped, but at rv {} ({}) the game was {}",
                            c.rv,
                            c.at,
                            describe(p)
                        ),
                    ));
                }
                if let Some(s) = starts.first() {
                    out.push(Violation::new(
                        CONSISTENCY,
                        "RCON audit log",
                        format!(
                            "Succeeded with consistency Stopped, but game process {} started at {} inside the copy's window",
                            s.incarnation, s.at
                        ),
                    ));
                }
            }
            _ => {}
        }
        out.extend(self.invalidated_on_change(fin, w, &pods, &starts));
        out
    }

    /// A raw copy (`spec.quiesce: false`) makes no RCON call (contract B5).
    fn raw_rcon_call(&self) -> Option<Violation> {
        let began = self.backup_states().next().map(|(c, _)| c.at)?;
        let cmd = self.audit.iter().find(|a| {
            a.event == "command"
                && a.at > began
                && matches!(
                    a.command.as_deref(),
                    Some("save-off" | "save-on" | "save-all")
                )
        })?;
        Some(Violation::new(
            CLEANUP,
            "RCON audit log",
            format!(
                "a raw copy (spec.quiesce: false) sent {} to game process {} at {}: it must make no RCON call",
                cmd.command.as_deref().unwrap_or("-"),
                cmd.incarnation,
                cmd.at
            ),
        ))
    }

    /// A raw copy (`spec.quiesce: false`) is never labelled `Quiesced` (contract B5): nothing
    /// quiesced the game, so nothing makes it consistent.
    fn raw_consistency(&self) -> Vec<Violation> {
        match self.final_state() {
            Some(fin) if fin.consistency.as_deref() == Some("Quiesced") => vec![Violation::new(
                CONSISTENCY,
                "Backup status.consistency",
                format!(
                    "a raw copy (spec.quiesce: false) ended {} with consistency Quiesced",
                    fin.phase.as_deref().unwrap_or("-")
                ),
            )],
            _ => Vec::new(),
        }
    }

    /// A source change inside the window must end the Backup Failed, Invalidated, with a
    /// reason — judged against the source the Backup recorded (a live one, or none).
    fn invalidated_on_change(
        &self,
        fin: &BackupState,
        w: Window,
        pods: &[(&Committed, &GamePodState)],
        starts: &[&AuditEntry],
    ) -> Option<Violation> {
        let (change, reason) = self.change_in_window(fin, w, pods, starts)?;
        let ok = fin.phase.as_deref() == Some("Failed")
            && fin.consistency.as_deref() == Some("Invalidated")
            && fin.completed_reason.as_deref() == Some(reason);
        (!ok && fin.terminal()).then(|| {
            Violation::new(
                CONSISTENCY,
                "Backup status and the game during the copy",
                format!(
                    "{change}, yet the Backup ended {} with consistency {} and reason {} (expected Failed, Invalidated, reason {reason})",
                    fin.phase.as_deref().unwrap_or("-"),
                    fin.consistency.as_deref().unwrap_or("-"),
                    fin.completed_reason.as_deref().unwrap_or("-")
                ),
            )
        })
    }

    /// What changed the source inside the window (its start excluded), if anything did, with
    /// the reason the contract names for it: `SourceChanged` for the live source the Backup
    /// recorded, `SourceStarted` for a stopped server that started.
    fn change_in_window(
        &self,
        fin: &BackupState,
        w: Window,
        pods: &[(&Committed, &GamePodState)],
        starts: &[&AuditEntry],
    ) -> Option<(String, &'static str)> {
        let inside = pods.iter().filter(|(c, _)| c.at >= w.start);
        match (&fin.source_pod_uid, &fin.source_container) {
            (Some(uid), Some(container)) => {
                if let Some((c, p)) = inside.into_iter().find(|(_, p)| {
                    p.gone
                        || p.uid != *uid
                        || p.game_container.as_ref() != Some(container)
                        || !p.game_running
                }) {
                    return Some((
                        format!(
                            "the recorded source (pod {uid}, container {container}) changed at rv {} ({}): the game was {}",
                            c.rv,
                            c.at,
                            describe(p)
                        ),
                        SOURCE_CHANGED,
                    ));
                }
                starts.first().map(|s| {
                    (
                        format!(
                            "game process {} started at {} during the copy",
                            s.incarnation, s.at
                        ),
                        SOURCE_CHANGED,
                    )
                })
            }
            (None, None) if fin.consistency.as_deref() != Some("Unquiesced") && self.quiesce => {
                // A stopped source: any game that runs inside the window started it.
                inside
                    .into_iter()
                    .find(|(_, p)| !p.gone && p.game_running)
                    .map(|(c, p)| {
                        format!(
                            "the stopped server started during the copy: at rv {} ({}) the game was {}",
                            c.rv, c.at, describe(p)
                        )
                    })
                    .or_else(|| {
                        starts.first().map(|s| {
                            format!("game process {} started at {} during the copy of a stopped server", s.incarnation, s.at)
                        })
                    })
                    .map(|change| (change, SOURCE_STARTED))
            }
            _ => None,
        }
    }

    /// Why the incarnation running when the copy began was not quiesced across the window.
    fn not_quiesced_across(&self, w: Window) -> Option<String> {
        let Some(game) = self
            .audit
            .iter()
            .rev()
            .find(|a| a.event == "start" && a.at < w.start)
        else {
            return Some(format!(
                "no game process had started before the copy began ({})",
                w.start
            ));
        };
        let commands: Vec<&AuditEntry> = self
            .audit
            .iter()
            .filter(|a| a.event == "command" && a.incarnation == game.incarnation)
            .collect();
        let last_off = commands
            .iter()
            .rev()
            .find(|a| a.command.as_deref() == Some("save-off") && a.at < w.start);
        let Some(off) = last_off else {
            return Some(format!(
                "game process {} received no save-off before the copy began ({})",
                game.incarnation, w.start
            ));
        };
        commands
            .iter()
            .find(|a| {
                a.command.as_deref() == Some("save-on")
                    && a.at > off.at
                    && w.end.is_none_or(|end| a.at < end)
            })
            .map(|on| {
                format!(
                    "game process {} received save-on at {} while the copy ran (window {} – {})",
                    game.incarnation,
                    on.at,
                    w.start,
                    fmt_end(w.end)
                )
            })
    }

    /// The game process the Backup was bound to: the newest one that had started when the
    /// Backup first recorded its source.
    fn bound_process(&self) -> Option<&str> {
        let recorded = self
            .backup_states()
            .find(|(_, b)| b.source_pod_uid.is_some())
            .map(|(c, _)| c.at)?;
        self.audit
            .iter()
            .rev()
            .find(|a| a.event == "start" && a.at < recorded)
            .map(|a| a.incarnation.as_str())
    }

    /// Invariant [`CLEANUP`]; judged once the Backup ended (terminal, or removed after a
    /// deletion) and the log was read.
    ///
    /// Per game process: each `save-off` is paid by one `save-on`, never while the copy runs;
    /// the process the Backup was bound to may also get one `save-on` with no `save-off` of
    /// its own (the conservative cleanup of a quiesce whose outcome the operator could not
    /// know, e.g. its agent restarted mid-call); any other `save-on` — to a process that was
    /// neither quiesced nor bound, or a second one — breaks the promise. A process still
    /// running at the end with an unpaid `save-off` was left unable to save.
    pub fn cleanup(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        let removed = self.backup_states().last().is_some_and(|(_, b)| b.gone);
        if !self.audit_read || !(removed || self.final_state().is_some_and(BackupState::terminal)) {
            return out;
        }
        let window = self.window();
        let newest = self
            .audit
            .iter()
            .rev()
            .find(|a| a.event == "start")
            .map(|a| a.incarnation.clone());
        let bound = self.bound_process().map(str::to_string);
        let game_alive_at_end = self
            .pod_states()
            .last()
            .is_some_and(|(_, p)| !p.gone && p.game_running);
        let mut incarnations: Vec<&str> = Vec::new();
        for a in &self.audit {
            if !incarnations.contains(&a.incarnation.as_str()) {
                incarnations.push(&a.incarnation);
            }
        }
        if !self.quiesce {
            out.extend(self.raw_rcon_call());
            return out;
        }
        let mut any_save_on = false;
        for inc in incarnations {
            let mut pending: Option<&AuditEntry> = None;
            let mut paid = false;
            for a in self
                .audit
                .iter()
                .filter(|a| a.event == "command" && a.incarnation == inc)
            {
                match a.command.as_deref() {
                    Some("save-off") => pending = pending.or(Some(a)),
                    Some("save-on") => {
                        let allowed = pending.take().is_some()
                            || (!paid
                                && (bound.as_deref() == Some(inc) || self.named_only_by_time(inc)));
                        paid = true;
                        if !allowed {
                            out.push(Violation::new(
                                CLEANUP,
                                "RCON audit log",
                                format!(
                                    "save-on reached game process {inc} at {} with no save-off of its own to pay (a process that was not quiesced, or a second save-on)",
                                    a.at
                                ),
                            ));
                        } else if let Some(w) = window
                            && let Some(end) = w.end
                            && a.at > w.start
                            && a.at < end
                        {
                            out.push(Violation::new(
                                CLEANUP,
                                "RCON audit log and the copy's worker pods",
                                format!(
                                    "save-on reached game process {inc} at {}, before the copy's last worker pod ended ({end})",
                                    a.at
                                ),
                            ));
                        }
                    }
                    _ => {}
                }
            }
            any_save_on |= paid;
            if let Some(off) = pending
                && newest.as_deref() == Some(inc)
                && game_alive_at_end
            {
                out.push(Violation::new(
                    CLEANUP,
                    "RCON audit log",
                    format!(
                        "game process {inc} received save-off at {} and, still running when the Backup ended, never a save-on",
                        off.at
                    ),
                ));
            }
        }
        // What the Backup says of its cleanup must be what the game saw.
        if let Some(fin) = self.final_state()
            && fin.unquiesced_reason.as_deref() == Some("UnquiesceSucceeded")
            && !any_save_on
        {
            out.push(Violation::new(
                CLEANUP,
                "Backup condition Unquiesced and the RCON audit log",
                "the Backup reports save-on confirmed (Unquiesced reason UnquiesceSucceeded), but no game process received a save-on".to_string(),
            ));
        }
        out
    }

    /// Invariant [`DRAIN`].
    pub fn drain(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        // Its end: the first terminal commit, or its removal when it was deleted before one.
        let removal = self.backup_states().find(|(_, b)| b.gone).map(|(c, _)| c);
        let Some(done) = self.terminal_at().or(removal) else {
            return out;
        };
        let mut pods: std::collections::BTreeMap<&str, &CopyPodState> =
            std::collections::BTreeMap::new();
        for c in self.changes.iter().filter(|c| c.rv < done.rv) {
            if let Subject::CopyPod(p) = &c.subject {
                pods.insert(&p.name, p);
            }
        }
        // A failed or removed Backup drains its copy: the Job itself is gone or going too.
        let failed_or_removed = matches!(&done.subject,
            Subject::Backup(b) if b.gone || b.phase.as_deref() == Some("Failed"));
        let job = self
            .changes
            .iter()
            .filter(|c| c.rv < done.rv)
            .rev()
            .find_map(|c| match &c.subject {
                Subject::CopyJob(j) => Some(j),
                _ => None,
            });
        if failed_or_removed && job.is_some_and(|j| !j.gone && !j.deleting) {
            out.push(Violation::new(
                DRAIN,
                "committed states of the copy Job",
                format!(
                    "the Backup had ended ({}) at rv {} while its copy Job was still there, not being deleted",
                    if matches!(&done.subject, Subject::Backup(b) if b.gone) { "removed" } else { "Failed" },
                    done.rv
                ),
            ));
        }
        for (name, p) in pods.into_iter().filter(|(_, p)| !p.ended()) {
            out.push(Violation::new(
                DRAIN,
                "committed states of the copy's worker pods",
                format!(
                    "the Backup had ended at rv {} while copy pod {name} was still {}",
                    done.rv,
                    p.phase.as_deref().unwrap_or("without a phase")
                ),
            ));
        }
        let deleted = self.backup_states().any(|(_, b)| b.deleting);
        let removed = self.backup_states().last().is_some_and(|(_, b)| b.gone);
        if deleted
            && !removed
            && let Some(fin) = self.final_state()
        {
            out.push(Violation::new(
                DRAIN,
                "Backup metadata (deletionTimestamp, finalizers)",
                format!(
                    "the Backup was deleted and is still there, phase {}, finalizer(s) {}",
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

    /// Whether game process `inc` is one a record that names its quiesced process only by time
    /// cannot tell from it: the Backup was never bound (no incarnation fields, an older
    /// operator's record) and `inc` started no later than the whole second of the recorded
    /// quiesce attempt (Kubernetes reports a container's start in whole seconds, so a successor
    /// started within that second reads as older). One conservative `save-on` to it is allowed.
    fn named_only_by_time(&self, inc: &str) -> bool {
        let never_bound = self
            .backup_states()
            .all(|(_, b)| b.source_pod_uid.is_none());
        let attempt = self.backup_states().find_map(|(_, b)| {
            b.quiesce_attempted
                .as_deref()?
                .parse::<jiff::Timestamp>()
                .ok()
        });
        let started = self
            .audit
            .iter()
            .find(|a| a.event == "start" && a.incarnation == inc)
            .and_then(|a| jiff::Timestamp::from_second(a.at.as_second()).ok());
        matches!((attempt, started), (Some(a), Some(s)) if never_bound && s <= a)
    }

    /// Invariant [`LIVENESS`].
    pub fn liveness(&self) -> Vec<Violation> {
        let mut out: Vec<Violation> = self.deadline_moved().into_iter().collect();
        out.extend(self.ending_reached());
        out
    }

    /// The preparation deadline, once persisted, is the Backup's bound: it never moves (an
    /// operator restarted while preparation waits keeps it).
    fn deadline_moved(&self) -> Option<Violation> {
        let mut first: Option<(&Committed, &str)> = None;
        for (c, b) in self.backup_states().filter(|(_, b)| !b.gone) {
            let Some(now) = b.preparation_deadline.as_deref() else {
                continue;
            };
            match first {
                None => first = Some((c, now)),
                Some((at, was)) if was != now => {
                    return Some(Violation::new(
                        LIVENESS,
                        "Backup annotation backup.gameplane.local/preparation-deadline",
                        format!(
                            "the preparation deadline persisted at rv {} ({was}) moved at rv {} to {now}",
                            at.rv, c.rv
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        None
    }

    /// Liveness's ending: terminal with a reason (the right one for a failed copy), or removed.
    fn ending_reached(&self) -> Vec<Violation> {
        let removed = self.backup_states().last().is_some_and(|(_, b)| b.gone);
        match self.terminal_at() {
            Some(_) => {
                let fin = self.final_state();
                if fin.is_some_and(|b| b.completed_reason.as_deref().is_none_or(str::is_empty)) {
                    return vec![Violation::new(
                        LIVENESS,
                        "Backup condition Completed",
                        format!(
                            "the Backup ended {} without a Completed reason",
                            fin.and_then(|b| b.phase.as_deref()).unwrap_or("-")
                        ),
                    )];
                }
                fin.and_then(|b| self.copy_failure_misreported(b))
                    .into_iter()
                    .collect()
            }
            // Deleted before it ended: the removal is its end (drain judges what it left).
            None if removed => Vec::new(),
            None => {
                let since = self
                    .faults_stopped_at
                    .map_or_else(|| "the start".to_string(), |t| t.to_string());
                vec![Violation::new(
                    LIVENESS,
                    "Backup status.phase",
                    format!(
                        "not Succeeded or Failed {} ms after faults stopped ({since}); last phase {}",
                        self.bound_ms,
                        self.final_state()
                            .and_then(|b| b.phase.as_deref())
                            .unwrap_or("none")
                    ),
                )]
            }
        }
    }
}

impl BackupTrace {
    /// A Backup that ended Failed because its copy failed (a worker pod failed, none
    /// succeeded) while its source stayed as recorded the whole time must say so: reason
    /// `CopyFailed`. (Once the source moved, the operator may have stopped the copy itself.)
    fn copy_failure_misreported(&self, fin: &BackupState) -> Option<Violation> {
        if fin.phase.as_deref() != Some("Failed") {
            return None;
        }
        let phases = self.copy_phases();
        if !phases.contains(&"Failed") || phases.contains(&"Succeeded") {
            return None;
        }
        if self.source_moved(fin) || fin.completed_reason.as_deref() == Some(COPY_FAILED) {
            return None;
        }
        Some(Violation::new(
            LIVENESS,
            "Backup condition Completed and the copy's worker pods",
            format!(
                "the copy failed (a worker pod Failed, none Succeeded) with the source unchanged, yet the Backup ended Failed with reason {} (expected {COPY_FAILED})",
                fin.completed_reason.as_deref().unwrap_or("-")
            ),
        ))
    }
}

impl BackupTrace {
    /// Anything the operator could have taken for a changed source, at any time after the
    /// Backup began (not only inside the copy's window): for a recorded live source, a state
    /// of the game pod other than that pod and container running, or a game process started
    /// after the source was recorded; for a stopped one, any game pod at all.
    fn source_moved(&self, fin: &BackupState) -> bool {
        let Some(began) = self.backup_states().next().map(|(c, _)| c.at) else {
            return false;
        };
        match (&fin.source_pod_uid, &fin.source_container) {
            (Some(uid), Some(container)) => {
                let recorded = self
                    .backup_states()
                    .find(|(_, b)| b.source_pod_uid.is_some())
                    .map_or(began, |(c, _)| c.at);
                self.pod_states().any(|(c, p)| {
                    c.at >= recorded
                        && (p.gone
                            || p.uid != *uid
                            || p.game_container.as_ref() != Some(container)
                            || !p.game_running)
                }) || self
                    .audit
                    .iter()
                    .any(|a| a.event == "start" && a.at > recorded)
            }
            _ => self.pod_states().any(|(c, p)| c.at >= began && !p.gone),
        }
    }
}

fn describe(p: &GamePodState) -> String {
    if p.gone {
        return format!("gone (pod {} removed)", p.uid);
    }
    match (&p.game_container, p.game_running) {
        (Some(c), true) => format!("running in pod {} container {c}", p.uid),
        (Some(c), false) => format!("not running in pod {} (container {c})", p.uid),
        (None, _) => format!("not started in pod {}", p.uid),
    }
}

fn fmt_end(end: Option<jiff::Timestamp>) -> String {
    end.map_or_else(|| "still running".to_string(), |t| t.to_string())
}
