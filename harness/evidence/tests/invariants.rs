//! The backup invariants on recorded shapes of observation: the correct operator's traces hold
//! every invariant (no false alarm, also with a fault the operator handled), and each broken
//! promise is named by its invariant — swept over every position of the fault where the answer
//! depends on the moment.

use rehearsal_evidence::catalogue::{Fault, Operation};
use rehearsal_evidence::invariants::capture::{MarkedClaim, SnapshotRead};
use rehearsal_evidence::invariants::restore::DATA;
use rehearsal_evidence::invariants::{
    AuditEntry, BackupState, BackupTrace, CLEANUP, CONSISTENCY, Committed, CopyJobState,
    CopyPodState, DRAIN, GamePodState, LIVENESS, Subject,
};

const POD: &str = "pod-uid-1";
const GAME: &str = "containerd://game-1";

fn at(ms: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(1_700_000_000_000 + ms).unwrap()
}

/// A trace under construction: changes and audit lines at millisecond offsets.
struct Build {
    trace: BackupTrace,
    rv: u64,
}

impl Build {
    fn new() -> Self {
        Self {
            trace: BackupTrace {
                backup: "live".into(),
                quiesce: true,
                changes: Vec::new(),
                audit: Vec::new(),
                audit_read: true,
                faults_stopped_at: None,
                bound_ms: 30_000,
                observed_until: at(100_000),
                claims: Vec::new(),
                snapshot: None,
                perturbation: None,
                run_state_before: None,
                run_state_after: None,
                audit_error: None,
                data_scope: None,
                reference_end: None,
            },
            rv: 0,
        }
    }

    fn change(&mut self, ms: i64, subject: Subject) -> &mut Self {
        self.rv += 1;
        self.trace.changes.push(Committed {
            rv: self.rv,
            at: at(ms),
            subject,
        });
        self.trace.changes.sort_by_key(|c| c.at);
        for (i, c) in self.trace.changes.iter_mut().enumerate() {
            c.rv = i as u64 + 1;
        }
        self
    }

    fn pod(&mut self, ms: i64, uid: &str, container: &str, running: bool) -> &mut Self {
        self.change(
            ms,
            Subject::GamePod(GamePodState {
                uid: uid.into(),
                game_container: Some(container.into()),
                game_running: running,
                gone: false,
            }),
        )
    }

    fn copy(&mut self, ms: i64, phase: &str) -> &mut Self {
        self.change(
            ms,
            Subject::CopyPod(CopyPodState {
                name: "live-backup-x".into(),
                phase: Some(phase.into()),
                gone: false,
            }),
        )
    }

    fn copy_gone(&mut self, ms: i64) -> &mut Self {
        self.change(
            ms,
            Subject::CopyPod(CopyPodState {
                name: "live-backup-x".into(),
                phase: Some("Running".into()),
                gone: true,
            }),
        )
    }

    fn backup(&mut self, ms: i64, state: BackupState) -> &mut Self {
        self.change(ms, Subject::Backup(state))
    }

    fn audit(&mut self, ms: i64, incarnation: &str, command: Option<&str>) -> &mut Self {
        self.trace.audit.push(AuditEntry {
            at: at(ms),
            incarnation: incarnation.into(),
            event: if command.is_some() {
                "command"
            } else {
                "start"
            }
            .into(),
            command: command.map(str::to_string),
        });
        self.trace.audit.sort_by_key(|a| a.at);
        self
    }

    /// The usual start: game process inc-1 running in the recorded pod, the Backup created and
    /// bound to it, then its save-off (the copy's window comes after, from 400).
    fn quiesced(&mut self) -> &mut Self {
        self.audit(-5_000, "inc-1", None)
            .pod(-4_000, POD, GAME, true)
            .backup(100, pending())
            .backup(150, bound())
            .audit(200, "inc-1", Some("save-off"))
    }

    fn done(&self) -> BackupTrace {
        self.trace.clone()
    }
}

fn pending() -> BackupState {
    BackupState {
        phase: Some("Pending".into()),
        finalizers: vec!["gameplane.local/backup-cleanup".into()],
        ..BackupState::default()
    }
}

fn bound() -> BackupState {
    BackupState {
        source_pod_uid: Some(POD.into()),
        source_container: Some(GAME.into()),
        ..pending()
    }
}

fn ended(phase: &str, consistency: Option<&str>, reason: &str) -> BackupState {
    BackupState {
        phase: Some(phase.into()),
        consistency: consistency.map(str::to_string),
        completed_reason: Some(reason.into()),
        snapshot_id: (phase == "Succeeded").then(|| "snap-1".to_string()),
        finalizers: Vec::new(),
        ..bound()
    }
}

/// A correct quiesced backup: save-off before the copy pod exists, save-on after it ended,
/// Succeeded/Quiesced bound to the game that ran throughout. Copy window: 400 – 900.
fn correct() -> Build {
    let done = BackupState {
        unquiesced_reason: Some("UnquiesceSucceeded".into()),
        ..ended("Succeeded", Some("Quiesced"), "Succeeded")
    };
    let mut b = Build::new();
    b.quiesced()
        .audit(210, "inc-1", Some("save-all"))
        .copy(400, "Pending")
        .copy(500, "Running")
        .copy(900, "Succeeded")
        .audit(1_000, "inc-1", Some("save-on"))
        .backup(1_100, done);
    b
}

fn invariants_of(trace: &BackupTrace) -> Vec<String> {
    let mut ids: Vec<String> = trace
        .violations()
        .into_iter()
        .map(|v| v.invariant)
        .collect();
    ids.dedup();
    ids
}

#[test]
fn a_correct_quiesced_backup_holds_every_invariant() {
    let t = correct().done();
    assert_eq!(t.violations(), Vec::new());
    let w = t.window().unwrap();
    assert_eq!((w.start, w.end), (at(400), Some(at(900))));
}

#[test]
fn a_game_restart_during_the_copy_must_fail_the_backup_wherever_it_lands() {
    // The game restarts in place at every 50 ms from the copy pod's creation to its end; an
    // operator that still reports Succeeded/Quiesced breaks consistency each time; one that
    // fails it Invalidated with a reason, and pays no save-on to the new process, holds.
    for ms in (450..900).step_by(50) {
        let mut lying = correct();
        lying
            .pod(ms, POD, GAME, false)
            .pod(ms + 10, POD, "containerd://game-2", true)
            .audit(ms + 20, "inc-2", None);
        let found = invariants_of(&lying.done());
        assert!(
            found.contains(&CONSISTENCY.to_string()),
            "restart at {ms}: {found:?}"
        );

        let mut honest = Build::new();
        honest
            .quiesced()
            .copy(400, "Pending")
            .copy(420, "Running")
            .pod(ms, POD, GAME, false)
            .pod(ms + 10, POD, "containerd://game-2", true)
            .audit(ms + 20, "inc-2", None)
            .copy_gone(ms + 30)
            .backup(
                ms + 40,
                ended("Failed", Some("Invalidated"), "SourceChanged"),
            );
        assert_eq!(honest.done().violations(), Vec::new(), "restart at {ms}");
    }
}

#[test]
fn a_restart_after_the_copy_ended_is_no_inconsistency() {
    let mut b = correct();
    // After the copy pod's end was committed (900) and after save-on (1000).
    b.pod(1_050, POD, GAME, false)
        .pod(1_060, POD, "containerd://game-2", true)
        .audit(1_070, "inc-2", None);
    assert_eq!(b.done().violations(), Vec::new());
}

#[test]
fn a_source_change_reported_without_invalidated_is_a_violation() {
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(100, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .pod(600, POD, "containerd://game-2", true)
        .audit(610, "inc-2", None)
        .copy_gone(700)
        .backup(800, ended("Failed", None, "CopyFailed"));
    let v = b.done().consistency();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.contains("expected Failed, Invalidated"),
        "{}",
        v[0].found
    );
}

#[test]
fn save_on_while_the_copy_runs_breaks_consistency_and_cleanup() {
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Pending")
        .audit(450, "inc-1", Some("save-on"))
        .copy(900, "Succeeded")
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    assert_eq!(invariants_of(&b.done()), [CONSISTENCY, CLEANUP]);
}

#[test]
fn no_save_off_before_the_copy_is_not_quiesced() {
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .copy(400, "Pending")
        .audit(420, "inc-1", Some("save-off"))
        .copy(900, "Succeeded")
        .audit(1_000, "inc-1", Some("save-on"))
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    let v = b.done().consistency();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.contains("no save-off before the copy began"),
        "{}",
        v[0].found
    );
}

#[test]
fn save_on_to_the_new_incarnation_and_a_lost_save_on_break_cleanup() {
    // The game restarted during preparation; the operator fails the Backup but sends save-on
    // to the new process (which was never quiesced).
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .pod(300, POD, "containerd://game-2", true)
        .audit(310, "inc-2", None)
        .audit(500, "inc-2", Some("save-on"))
        .backup(600, ended("Failed", Some("Invalidated"), "SourceChanged"));
    let v = b.done().cleanup();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("inc-2"), "{}", v[0].found);

    // The same game keeps running and never gets its save-on back.
    let mut lost = Build::new();
    lost.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Pending")
        .copy(900, "Succeeded")
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    assert_eq!(invariants_of(&lost.done()), [CLEANUP]);

    // Two save-ons for one save-off: the second has nothing pending.
    let mut twice = correct();
    twice.audit(1_050, "inc-1", Some("save-on"));
    assert_eq!(invariants_of(&twice.done()), [CLEANUP]);
}

#[test]
fn the_bound_process_may_get_one_conservative_save_on() {
    // The quiesce call failed (its agent restarted): the operator cannot know whether
    // save-off landed and sends save-on to the process it was bound to. Once is cleanup;
    // twice is a duplicate.
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(300, "inc-1", Some("save-on"))
        .backup(400, ended("Failed", None, "QuiesceFailed"));
    assert_eq!(b.done().violations(), Vec::new());
    b.audit(350, "inc-1", Some("save-on"));
    assert_eq!(invariants_of(&b.done()), [CLEANUP]);
}

#[test]
fn a_save_on_reported_but_never_sent_breaks_cleanup() {
    // The original exited mid-copy; the operator claims it confirmed save-on.
    let mut lying = ended("Failed", Some("Invalidated"), "SourceChanged");
    lying.unquiesced_reason = Some("UnquiesceSucceeded".into());
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .pod(500, POD, "containerd://game-2", true)
        .audit(510, "inc-2", None)
        .copy_gone(600)
        .backup(700, lying);
    let v = b.done().cleanup();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("UnquiesceSucceeded"), "{}", v[0].found);
    // Reported as what it was, it holds.
    let mut honest = ended("Failed", Some("Invalidated"), "SourceChanged");
    honest.unquiesced_reason = Some("OriginalProcessExited".into());
    b.backup(800, honest);
    assert_eq!(b.done().violations(), Vec::new());
}

#[test]
fn a_deleted_backup_owes_its_save_on_too() {
    let gone = BackupState {
        gone: true,
        ..bound()
    };
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .copy_gone(600)
        .backup(700, gone);
    assert_eq!(invariants_of(&b.done()), [CLEANUP]);
}

#[test]
fn a_process_that_died_owes_no_save_on() {
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .pod(500, POD, "containerd://game-2", true)
        .audit(510, "inc-2", None)
        .copy_gone(600)
        .backup(700, ended("Failed", Some("Invalidated"), "SourceChanged"));
    assert_eq!(b.done().violations(), Vec::new());
}

#[test]
fn a_stopped_backup_with_a_game_running_in_the_window_is_inconsistent() {
    let stopped = |phase: &str, consistency: &str, reason: &str| BackupState {
        phase: Some(phase.into()),
        consistency: Some(consistency.into()),
        completed_reason: Some(reason.into()),
        snapshot_id: (phase == "Succeeded").then(|| "snap-1".to_string()),
        ..BackupState::default()
    };
    let mut b = Build::new();
    b.backup(100, BackupState::default())
        .copy(400, "Running")
        .pod(500, POD, GAME, true)
        .audit(510, "inc-1", None)
        .copy(900, "Succeeded")
        .backup(1_000, stopped("Succeeded", "Stopped", "Succeeded"));
    assert_eq!(invariants_of(&b.done()), [CONSISTENCY]);

    let mut ok = Build::new();
    ok.backup(100, BackupState::default())
        .copy(400, "Running")
        .pod(500, POD, GAME, true)
        .audit(510, "inc-1", None)
        .copy_gone(600)
        .backup(700, stopped("Failed", "Invalidated", "SourceStarted"));
    assert_eq!(ok.done().violations(), Vec::new());

    // The game ran only after the copy ended: a consistent stopped copy.
    let mut after = Build::new();
    after
        .backup(100, BackupState::default())
        .copy(400, "Running")
        .copy(900, "Succeeded")
        .pod(950, POD, GAME, true)
        .audit(960, "inc-1", None)
        .backup(1_000, stopped("Succeeded", "Stopped", "Succeeded"));
    assert_eq!(after.done().violations(), Vec::new());
}

#[test]
fn a_copy_pod_left_running_or_a_finalizer_left_breaks_drain() {
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .pod(500, POD, "containerd://game-2", true)
        .audit(510, "inc-2", None)
        .backup(600, ended("Failed", Some("Invalidated"), "SourceChanged"))
        .copy_gone(700);
    let v = b.done().drain();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("live-backup-x"), "{}", v[0].found);

    // A terminal Backup nobody deleted may keep its finalizer; a deleted one must go.
    let mut kept = correct();
    let mut last = ended("Succeeded", Some("Quiesced"), "Succeeded");
    last.finalizers = vec!["gameplane.local/backup-cleanup".into()];
    kept.backup(1_200, last.clone());
    assert_eq!(kept.done().violations(), Vec::new());
    last.deleting = true;
    kept.backup(1_300, last);
    assert_eq!(invariants_of(&kept.done()), [DRAIN]);

    // Deleted mid-copy: gone only after its copy pod was.
    let gone = BackupState {
        gone: true,
        ..bound()
    };
    let mut deleted = Build::new();
    deleted
        .audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .copy_gone(600)
        .audit(650, "inc-1", Some("save-on"))
        .backup(700, gone.clone());
    assert_eq!(deleted.done().violations(), Vec::new());
    let mut early = Build::new();
    early
        .audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .backup(500, gone)
        .copy_gone(600);
    assert!(invariants_of(&early.done()).contains(&DRAIN.to_string()));
}

#[test]
fn a_backup_that_never_ends_or_ends_without_a_reason_breaks_liveness() {
    let mut stuck = Build::new();
    stuck
        .audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .copy(400, "Running");
    let v = stuck.done().liveness();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].invariant, LIVENESS);
    assert!(v[0].found.contains("last phase Pending"), "{}", v[0].found);

    let mut silent = correct();
    silent.backup(1_200, ended("Succeeded", Some("Quiesced"), ""));
    assert_eq!(invariants_of(&silent.done()), [LIVENESS]);
}

#[test]
fn an_unread_audit_log_breaks_no_promise_by_itself() {
    let mut b = correct();
    b.trace.audit.clear();
    b.trace.audit_read = false;
    assert_eq!(b.done().violations(), Vec::new());
}

#[test]
fn traces_round_trip_through_json() {
    let t = correct().done();
    let text = serde_json::to_string(&t).unwrap();
    let back: BackupTrace = serde_json::from_str(&text).unwrap();
    assert_eq!(back, t);
}

#[test]
fn an_invalidated_backup_must_name_the_cause_the_contract_gives() {
    // A live source that changed: SourceChanged, not CopyFailed.
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .pod(500, POD, "containerd://game-2", true)
        .audit(510, "inc-2", None)
        .copy_gone(600)
        .backup(700, ended("Failed", Some("Invalidated"), "CopyFailed"));
    let v = b.done().consistency();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.contains("reason SourceChanged"),
        "{}",
        v[0].found
    );

    // A stopped server that started: SourceStarted, not SourceChanged.
    let mut s = Build::new();
    s.backup(100, BackupState::default())
        .copy(400, "Running")
        .pod(500, POD, GAME, true)
        .audit(510, "inc-1", None)
        .copy_gone(600)
        .backup(
            700,
            BackupState {
                phase: Some("Failed".into()),
                consistency: Some("Invalidated".into()),
                completed_reason: Some("SourceChanged".into()),
                ..BackupState::default()
            },
        );
    let v = s.done().consistency();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.contains("reason SourceStarted"),
        "{}",
        v[0].found
    );
}

/// A quiesced backup whose copy failed (the repository unusable) with the game unchanged.
fn copy_failed(reason: &str) -> BackupTrace {
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .copy(400, "Running")
        .copy(600, "Failed")
        .audit(700, "inc-1", Some("save-on"))
        .backup(800, ended("Failed", Some("Quiesced"), reason));
    b.done()
}

#[test]
fn a_failed_copy_of_an_unchanged_source_is_reported_copy_failed() {
    assert_eq!(copy_failed("CopyFailed").violations(), Vec::new());
    let v = copy_failed("QuiesceFailed").liveness();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("expected CopyFailed"), "{}", v[0].found);
    // Reported Succeeded instead: no copy succeeded, so the snapshot cannot hold the world.
    let mut lying = copy_failed("Succeeded");
    for c in &mut lying.changes {
        if let Subject::Backup(b) = &mut c.subject
            && b.phase.as_deref() == Some("Failed")
        {
            b.phase = Some("Succeeded".into());
            b.snapshot_id = Some("snap-1".into());
        }
    }
    let v = lying.data();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.contains("no copy worker pod succeeded"),
        "{}",
        v[0].found
    );
}

/// `copy_failed("CopyFailed")` with its copy Job committed (created at 300) and, when
/// `deleted_at` is given, deleted then (foreground: `deleting`, or removed: `gone`).
fn copy_failed_with_job(deleted_at: Option<(i64, bool)>) -> BackupTrace {
    let job = |deleting: bool, gone: bool| Subject::CopyJob(CopyJobState { deleting, gone });
    let mut b = Build::new();
    b.trace = copy_failed("CopyFailed");
    b.rv = b.trace.changes.len() as u64;
    b.change(300, job(false, false));
    if let Some((ms, foreground)) = deleted_at {
        b.change(ms, job(foreground, !foreground));
    }
    b.done()
}

#[test]
fn a_failed_backup_drains_its_copy_job_before_it_ends() {
    // Deleted before the Backup ended (800), in the background or the foreground: holds.
    assert_eq!(
        copy_failed_with_job(Some((750, false))).violations(),
        Vec::new()
    );
    assert_eq!(
        copy_failed_with_job(Some((750, true))).violations(),
        Vec::new()
    );
    // Left behind, or deleted only after the Backup was Failed: drain is broken.
    for trace in [
        copy_failed_with_job(None),
        copy_failed_with_job(Some((900, false))),
    ] {
        let v = trace.drain();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].found.contains("copy Job was still there"),
            "{}",
            v[0].found
        );
        assert_eq!(invariants_of(&trace), [DRAIN]);
    }
    // A Succeeded Backup may keep its Job (its logs): the contract drains failed copies.
    let mut kept = correct();
    kept.change(300, Subject::CopyJob(CopyJobState::default()));
    assert_eq!(kept.done().violations(), Vec::new());
}

#[test]
fn an_older_operators_record_may_pay_a_successor_started_in_its_attempts_second() {
    // The older operator attempted a quiesce at 1_000 (its record names no process); the game
    // it quiesced restarted and the successor, inc-2, got the new operator's save-on.
    let legacy = |attempt_ms: i64, successor_ms: i64| {
        let attempted = BackupState {
            quiesce_attempted: Some(at(attempt_ms).to_string()),
            ..pending()
        };
        let mut b = Build::new();
        b.audit(-5_000, "inc-1", None)
            .pod(-4_000, POD, GAME, true)
            .audit(attempt_ms + 10, "inc-1", Some("save-off"))
            .backup(attempt_ms + 20, attempted.clone())
            .audit(successor_ms, "inc-2", None)
            .pod(successor_ms + 10, POD, "containerd://game-2", true)
            .audit(successor_ms + 100, "inc-2", Some("save-on"))
            .backup(
                successor_ms + 200,
                BackupState {
                    phase: Some("Failed".into()),
                    consistency: Some("Invalidated".into()),
                    completed_reason: Some("LegacyPreparation".into()),
                    ..attempted
                },
            );
        b.done().cleanup()
    };
    // at(0) is a whole second: a successor started within it reads as older; one later does not.
    assert_eq!(legacy(0, 300), Vec::new());
    let v = legacy(0, 1_300);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.contains("no save-off of its own"),
        "{}",
        v[0].found
    );
}

#[test]
fn a_persisted_preparation_deadline_never_moves() {
    let waiting = |deadline: &str| BackupState {
        preparation_deadline: Some(deadline.into()),
        ..pending()
    };
    let with_deadlines = |later: &str| {
        let mut b = correct();
        b.backup(50, waiting("2023-11-14T22:15:00Z"))
            .backup(120, waiting(later));
        b.done()
    };
    // Written once and kept (an operator restarted while it waited re-read it): holds.
    assert_eq!(
        with_deadlines("2023-11-14T22:15:00Z").violations(),
        Vec::new()
    );
    // Counted again from when a restarted process first saw the Backup: liveness is broken.
    let moved = with_deadlines("2023-11-14T22:15:07Z");
    let v = moved.liveness();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("moved at rv"), "{}", v[0].found);
    assert_eq!(invariants_of(&moved), [LIVENESS]);
}

fn marked(trace: &mut BackupTrace, files: Option<Vec<&str>>) {
    trace.claims = vec![
        MarkedClaim {
            claim: "mc-data".into(),
            world: true,
            marker: ".m-data".into(),
        },
        MarkedClaim {
            claim: "mc-nether".into(),
            world: true,
            marker: ".m-nether".into(),
        },
        MarkedClaim {
            claim: "mc-mods".into(),
            world: false,
            marker: ".m-mods".into(),
        },
    ];
    trace.snapshot = Some(SnapshotRead {
        id: "snap-1".into(),
        error: files
            .is_none()
            .then(|| "restic ls: no such snapshot".to_string()),
        files: files.map(|f| f.into_iter().map(str::to_string).collect()),
    });
}

#[test]
fn a_succeeded_backups_snapshot_holds_every_world_claim_and_no_mods() {
    let whole = vec!["/data", "/data/.m-data", "/extra/nether/.m-nether"];
    let mut t = correct().done();
    marked(&mut t, Some(whole.clone()));
    assert_eq!(t.violations(), Vec::new());

    let mut skipped = correct().done();
    marked(&mut skipped, Some(vec!["/data/.m-data"]));
    let v = skipped.data();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.contains("world claim mc-nether"),
        "{}",
        v[0].found
    );

    let mut with_mods = correct().done();
    let mut files = whole.clone();
    files.push("/mods/.m-mods");
    marked(&mut with_mods, Some(files));
    let v = with_mods.data();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("mods claim mc-mods"), "{}", v[0].found);

    let mut unreadable = correct().done();
    marked(&mut unreadable, None);
    assert_eq!(invariants_of(&unreadable), [DATA]);

    // A marker's name must end a path: a longer name that merely ends the same is not it.
    let mut lookalike = correct().done();
    marked(
        &mut lookalike,
        Some(vec!["/data/.m-data", "/extra/nether/x.m-nether"]),
    );
    assert_eq!(lookalike.data().len(), 1);

    // The snapshot read is of another id than the Backup names: not evidence of this one.
    let mut other = correct().done();
    marked(&mut other, Some(whole));
    other.snapshot.as_mut().unwrap().id = "snap-0".into();
    assert_eq!(invariants_of(&other), [DATA]);

    // Succeeded without a snapshot id.
    let mut no_id = correct().done();
    for c in &mut no_id.changes {
        if let Subject::Backup(b) = &mut c.subject {
            b.snapshot_id = None;
        }
    }
    assert_eq!(invariants_of(&no_id), [DATA]);

    // A Failed backup names no snapshot and is not judged on one.
    let mut failed = copy_failed("CopyFailed");
    marked(&mut failed, None);
    assert_eq!(failed.violations(), Vec::new());
}

#[test]
fn where_the_contract_allows_one_ending_the_operation_ends_that_way() {
    use rehearsal_evidence::invariants::outcome::{OUTCOME, Perturbation};
    let run = |fault: Option<&str>, trace: BackupTrace| {
        let mut t = trace;
        t.perturbation = Some(Perturbation {
            operation: Operation::parse("backup").unwrap(),
            fault: fault.map(|f| Fault::parse(f).unwrap()),
        });
        invariants_of(&t)
    };
    let honest_failure = copy_failed("CopyFailed");
    // Unperturbed, or after a fault that changes nothing the backup depends on: Succeeded,
    // Quiesced is the only ending.
    for fault in [None, Some("agent-restart"), Some("operator-restart")] {
        assert_eq!(
            run(fault, correct().done()),
            Vec::<String>::new(),
            "{fault:?}"
        );
        assert_eq!(run(fault, honest_failure.clone()), [OUTCOME], "{fault:?}");
    }
    // The agent held down: it may fail (the agent could not be reached), never Invalidated.
    assert_eq!(
        run(Some("agent-down"), correct().done()),
        Vec::<String>::new()
    );
    assert_eq!(
        run(Some("agent-down"), honest_failure.clone()),
        Vec::<String>::new()
    );
    let mut invalidated = copy_failed("CopyFailed");
    for c in &mut invalidated.changes {
        if let Subject::Backup(b) = &mut c.subject
            && b.phase.as_deref() == Some("Failed")
        {
            b.consistency = Some("Invalidated".into());
        }
    }
    assert_eq!(run(Some("agent-down"), invalidated), [OUTCOME]);
    // After a fault that may end it otherwise, the invariants judge it alone.
    for fault in [
        "game-restart",
        "pod-replaced",
        "repository-unreachable",
        "backup-deleted",
    ] {
        assert_eq!(
            run(Some(fault), honest_failure.clone()),
            Vec::<String>::new(),
            "{fault}"
        );
    }
    // A stopped server's backup is Stopped, not Quiesced.
    let mut stopped = correct().done();
    stopped.perturbation = Some(Perturbation {
        operation: Operation::parse("stopped-backup").unwrap(),
        fault: None,
    });
    let v = stopped.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.contains("only Succeeded, consistency Stopped"),
        "{}",
        v[0].found
    );
}

#[test]
fn an_older_agent_or_an_older_operators_backup_fails_for_the_reason_the_contract_names() {
    use rehearsal_evidence::invariants::outcome::{OUTCOME, Perturbation};
    // Refused before anything was quiesced or copied.
    let run = |operation: &str, fault: Option<&str>, reason: &str| {
        let mut b = Build::new();
        b.audit(-5_000, "inc-1", None)
            .pod(-4_000, POD, GAME, true)
            .backup(100, pending())
            .backup(300, ended("Failed", None, reason));
        let mut t = b.done();
        t.perturbation = Some(Perturbation {
            operation: Operation::parse(operation).unwrap(),
            fault: fault.map(|f| Fault::parse(f).unwrap()),
        });
        t.violations()
    };
    for (operation, reason) in [
        ("old-agent-backup", "IdentityPreflightFailed"),
        ("legacy-backup", "LegacyPreparation"),
    ] {
        for fault in [None, Some("operator-restart")] {
            assert_eq!(run(operation, fault, reason), Vec::new(), "{operation}");
            // Failed, but for another reason (e.g. QuiesceFailed: something was quiesced).
            let v = run(operation, fault, "QuiesceFailed");
            assert_eq!(v.len(), 1, "{v:?}");
            assert_eq!(v[0].invariant, OUTCOME);
            assert!(
                v[0].found
                    .contains(&format!("the contract allows only Failed, reason {reason}")),
                "{}",
                v[0].found
            );
        }
        // A success (bound to whichever game runs now) is never the ending.
        let mut t = correct().done();
        t.perturbation = Some(Perturbation {
            operation: Operation::parse(operation).unwrap(),
            fault: None,
        });
        assert_eq!(invariants_of(&t), [OUTCOME], "{operation}");
    }
}

#[test]
fn a_backup_never_changes_the_servers_run_state_unless_its_fault_started_it() {
    use rehearsal_evidence::invariants::outcome::Perturbation;
    let with = |before: &str, after: &str, fault: Option<&str>| {
        let mut t = correct().done();
        t.run_state_before = Some(before.into());
        t.run_state_after = Some(after.into());
        t.perturbation = Some(Perturbation {
            operation: Operation::parse("idle-backup").unwrap(),
            fault: fault.map(|f| Fault::parse(f).unwrap()),
        });
        t.data()
    };
    let asleep = "suspend=absent asleep=true";
    let woken = "suspend=absent asleep=false";
    assert_eq!(with(asleep, asleep, None), Vec::new());
    let v = with(asleep, woken, None);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("run state"), "{}", v[0].found);
    assert_eq!(with(asleep, woken, Some("server-started")), Vec::new());
    // A stopped server's copy held at its end is the server started meanwhile.
    assert_eq!(with(asleep, woken, Some("copy-held-at-end")), Vec::new());
    assert_eq!(with(asleep, woken, Some("operator-restart")).len(), 1);
}

#[test]
fn a_raw_copy_is_never_quiesced_and_makes_no_rcon_call() {
    // The game ran throughout, nothing was quiesced, the copy succeeded: Unquiesced.
    let raw = |consistency: &str, save_off: bool| {
        let mut b = Build::new();
        b.audit(-5_000, "inc-1", None)
            .pod(-4_000, POD, GAME, true)
            .backup(100, pending())
            .backup(150, bound());
        if save_off {
            b.audit(200, "inc-1", Some("save-off"));
        }
        b.copy(400, "Running")
            .copy(900, "Succeeded")
            .backup(1_000, ended("Succeeded", Some(consistency), "Succeeded"));
        let mut t = b.done();
        t.quiesce = false;
        t
    };
    assert_eq!(raw("Unquiesced", false).violations(), Vec::new());
    let v = raw("Quiesced", false).consistency();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("raw copy"), "{}", v[0].found);
    let v = raw("Unquiesced", true).cleanup();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("save-off"), "{}", v[0].found);
    // The game restarting during a raw copy is no invalidation the contract asks for.
    let mut restarted = raw("Unquiesced", false);
    restarted.changes.push(Committed {
        rv: 99,
        at: at(500),
        subject: Subject::GamePod(GamePodState {
            uid: POD.into(),
            game_container: Some("containerd://game-2".into()),
            game_running: true,
            gone: false,
        }),
    });
    restarted.changes.sort_by_key(|c| c.at);
    assert_eq!(restarted.consistency(), Vec::new());
}

/// A verdict per invariant: `correct()` made whole (markers planted and listed, the run state
/// read, what was done recorded).
fn whole(mut b: Build) -> BackupTrace {
    use rehearsal_evidence::invariants::outcome::Perturbation;
    b.trace.claims = vec![MarkedClaim {
        claim: "mc-data".into(),
        world: true,
        marker: "m-world".into(),
    }];
    b.trace.snapshot = Some(SnapshotRead {
        id: "snap-1".into(),
        files: Some(vec!["/data/m-world".into()]),
        error: None,
    });
    b.trace.run_state_before = Some("suspend=absent asleep=false".into());
    b.trace.run_state_after = Some("suspend=absent asleep=false".into());
    b.trace.perturbation = Some(Perturbation {
        operation: Operation::parse("backup").unwrap(),
        fault: None,
    });
    b.done()
}

/// Each invariant's verdict, as `(invariant, held|violated|unknown)`, and the unknowns' reasons.
fn verdicts(t: &BackupTrace) -> (Vec<(String, &'static str)>, Vec<String>) {
    use rehearsal_evidence::invariants::Judgement;
    let judged = t.judge();
    let whys = judged
        .iter()
        .filter_map(|j| match &j.judgement {
            Judgement::Unknown { why } => Some(format!("{}: {why}", j.invariant)),
            _ => None,
        })
        .collect();
    (
        judged
            .into_iter()
            .map(|j| (j.invariant, j.judgement.as_str()))
            .collect(),
        whys,
    )
}

fn expect(pairs: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
    pairs.iter().map(|(i, v)| (i.to_string(), *v)).collect()
}

#[test]
fn a_whole_correct_trace_holds_every_invariant_and_says_so() {
    let (v, whys) = verdicts(&whole(correct()));
    assert_eq!(
        v,
        expect(&[
            (CONSISTENCY, "held"),
            (CLEANUP, "held"),
            (DRAIN, "held"),
            (LIVENESS, "held"),
            (DATA, "held"),
            ("outcome", "held"),
        ]),
        "{whys:?}"
    );
}

/// An audit log that could not be read leaves every clause that reads it unknown, naming why:
/// never held (it was `ok` before: the unread log judged no audit clause).
#[test]
fn an_unread_audit_log_leaves_consistency_and_cleanup_unknown() {
    let mut b = correct();
    b.trace.audit.clear();
    b.trace.audit_read = false;
    b.trace.audit_error = Some("the probe pod found no audit.log".into());
    let t = whole(b);
    assert_eq!(t.violations(), Vec::new(), "nothing seen broken");
    let (v, whys) = verdicts(&t);
    assert_eq!(
        v,
        expect(&[
            (CONSISTENCY, "unknown"),
            (CLEANUP, "unknown"),
            (DRAIN, "held"),
            (LIVENESS, "held"),
            (DATA, "held"),
            ("outcome", "held"),
        ])
    );
    assert!(
        whys.iter()
            .all(|w| w.contains("could not be read (the probe pod found no audit.log)")),
        "{whys:?}"
    );
}

/// Each invariant, given a trace without the structure it reads, answers unknown (saying why)
/// or violated (the absence is the broken promise) — never silence.
#[test]
fn every_invariant_answers_without_its_structure() {
    // Nothing recorded at all: no state of the Backup.
    let (v, whys) = verdicts(&whole(Build::new()));
    assert_eq!(
        v,
        expect(&[
            (CONSISTENCY, "unknown"),
            (CLEANUP, "unknown"),
            (DRAIN, "unknown"),
            (LIVENESS, "violated"),
            (DATA, "unknown"),
            ("outcome", "violated"),
        ]),
        "{whys:?}"
    );
    assert!(
        whys[0].contains("no committed state of Backup live"),
        "{whys:?}"
    );
    assert!(whys[1].contains("never ended"), "{whys:?}");

    // Succeeded with no copy window: no worker pod was recorded.
    let mut no_window = Build::new();
    no_window
        .audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .audit(200, "inc-1", Some("save-off"))
        .audit(1_000, "inc-1", Some("save-on"))
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    let (v, whys) = verdicts(&whole(no_window));
    assert_eq!(v[0], (CONSISTENCY.to_string(), "unknown"), "{whys:?}");
    assert!(whys[0].contains("no copy window"), "{whys:?}");
    assert_eq!(v[4], (DATA.to_string(), "violated"));

    // Succeeded, but no marker planted: what the snapshot holds was not judged.
    let mut unmarked = whole(correct());
    unmarked.claims.clear();
    let (v, whys) = verdicts(&unmarked);
    assert_eq!(v[4], (DATA.to_string(), "unknown"));
    assert!(whys[0].contains("no marker was planted"), "{whys:?}");

    // The run state not read after: data cannot say the backup kept it.
    let mut unread_state = whole(correct());
    unread_state.run_state_after = None;
    assert_eq!(verdicts(&unread_state).0[4], (DATA.to_string(), "unknown"));
    // Unless the operation leaves nothing to mark by design, and the trace says so.
    let mut early = unread_state.clone();
    early.claims.clear();
    early.data_scope = Some("created together with its server".into());
    assert_eq!(verdicts(&early).0[4], (DATA.to_string(), "held"));

    // What was done to the run not recorded: the outcome is unknown.
    let mut unrecorded = whole(correct());
    unrecorded.perturbation = None;
    assert_eq!(
        verdicts(&unrecorded).0[5],
        ("outcome".to_string(), "unknown")
    );

    // Never ended: cleanup and drain have nothing settled to judge; liveness is violated.
    let mut stuck = Build::new();
    stuck
        .audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .copy(400, "Running");
    let (v, _) = verdicts(&whole(stuck));
    assert_eq!(
        v[1..4],
        expect(&[
            (CLEANUP, "unknown"),
            (DRAIN, "unknown"),
            (LIVENESS, "violated")
        ])
    );
}

/// A broken promise seen is a violation even where something else could not be read.
#[test]
fn a_violation_seen_is_violated_even_with_an_unread_log() {
    let mut b = correct();
    b.pod(600, POD, "containerd://game-2", true);
    b.trace.audit_read = false;
    b.trace.audit.clear();
    let (v, _) = verdicts(&whole(b));
    assert_eq!(v[0], (CONSISTENCY.to_string(), "violated"));
    assert_eq!(v[1], (CLEANUP.to_string(), "unknown"));
}

/// The differential oracle: unperturbed or after a transparent fault, a run ends as the
/// reference run ended, field by field — a difference is a violation naming the field; other
/// faults, and a run without a reference to compare with, are left to the invariants.
#[test]
fn a_transparent_fault_that_changed_the_end_state_is_a_violation_naming_the_field() {
    use rehearsal_evidence::invariants::outcome::{EndState, Perturbation};
    let after = |fault: Option<&str>, reference: Option<EndState>| {
        let mut t = whole(correct());
        t.perturbation = Some(Perturbation {
            operation: Operation::parse("backup").unwrap(),
            fault: fault.map(|f| Fault::parse(f).unwrap()),
        });
        t.reference_end = reference;
        t
    };
    let reference = whole(correct()).end_state();
    assert_eq!(
        reference
            .ending
            .as_ref()
            .and_then(|e| e.consistency.as_deref()),
        Some("Quiesced")
    );
    // The same end state: nothing to say.
    assert_eq!(
        after(Some("operator-restart"), Some(reference.clone())).violations(),
        Vec::new()
    );
    // The reference ended with a finalizer kept and another run state: each field is named.
    let other = EndState {
        finalizers: vec!["gameplane.local/backup-cleanup".into()],
        run_state: Some("suspend=true asleep=false".into()),
        ..reference.clone()
    };
    let v = after(Some("agent-restart"), Some(other.clone())).violations();
    let found: Vec<&str> = v.iter().map(|v| v.found.as_str()).collect();
    assert_eq!(v.len(), 2, "{found:#?}");
    assert!(v.iter().all(|v| v.invariant == "outcome"));
    assert!(
        found[0].contains("after fault agent-restart")
            && found[0].contains("metadata.finalizers []")
            && found[0].contains("reference run ended with [\"gameplane.local/backup-cleanup\"]"),
        "{found:#?}"
    );
    assert!(
        found[1].contains("the server's run state suspend=absent asleep=false")
            && found[1].contains("suspend=true asleep=false"),
        "{found:#?}"
    );
    // Unperturbed, a different ending is named by its field.
    let failed = EndState {
        ending: Some(rehearsal_evidence::invariants::outcome::Ending {
            phase: Some("Succeeded".into()),
            consistency: Some("Unquiesced".into()),
            reason: Some("Succeeded".into()),
        }),
        ..reference.clone()
    };
    let v = after(None, Some(failed)).violations();
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].found.contains("unperturbed, the backup ended with status.consistency Quiesced, where the reference run ended with Unquiesced"),
        "{}",
        v[0].found
    );
    // A fault that may change the ending, or no reference: left to the invariants.
    assert_eq!(
        after(Some("game-restart"), Some(other.clone())).violations(),
        Vec::new()
    );
    assert_eq!(after(Some("agent-restart"), None).violations(), Vec::new());
    // The removal is compared too.
    let removed = EndState {
        removed: true,
        ..reference.clone()
    };
    let v = after(Some("operator-restart"), Some(removed)).violations();
    assert!(v[0].found.contains("removed false"), "{v:#?}");
    // What the snapshot holds is compared as the claims whose marker it lists (each run writes
    // its own world: the relation, not the bytes).
    assert_eq!(reference.snapshot_holds, Some(vec!["mc-data".to_string()]));
    let more = EndState {
        snapshot_holds: Some(vec!["mc-data".into(), "mc-nether".into()]),
        ..reference.clone()
    };
    let v = after(Some("agent-restart"), Some(more)).violations();
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(
        v[0].found.contains(
            "with the claims its snapshot holds [\"mc-data\"], where the reference run ended with [\"mc-data\", \"mc-nether\"]"
        ),
        "{v:#?}"
    );
}

/// Consistency is unknown only where it would read what is missing: a quiesced Backup that
/// Succeeded with no copy window, or a terminal quiesced one whose audit log is unread. A
/// Backup that failed before any copy, a raw copy (judged by its status alone) and a Backup
/// that has not ended claim nothing the missing evidence could contradict.
#[test]
fn consistency_is_unknown_only_where_it_reads_what_is_missing() {
    let consistency = |t: &BackupTrace| verdicts(t).0[0].1;
    // Failed before any copy: no window, nothing captured, nothing claimed.
    let mut failed = Build::new();
    failed
        .audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .backup(300, ended("Failed", None, "QuiesceFailed"));
    assert_eq!(consistency(&whole(failed)), "held");
    // A raw copy that Succeeded with no window recorded: its status alone is judged.
    let mut raw = Build::new();
    raw.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .backup(1_100, ended("Succeeded", Some("Unquiesced"), "Succeeded"));
    let mut raw = whole(raw);
    raw.quiesce = false;
    assert_eq!(consistency(&raw), "held");
    // A raw copy with a window and an unread log: consistency held, cleanup unknown.
    let mut raw_unread = whole(correct());
    raw_unread.quiesce = false;
    raw_unread.audit_read = false;
    raw_unread.audit.clear();
    if let Some(Subject::Backup(b)) = raw_unread
        .changes
        .iter_mut()
        .rev()
        .map(|c| &mut c.subject)
        .find(|s| matches!(s, Subject::Backup(_)))
    {
        b.consistency = Some("Unquiesced".into());
        b.unquiesced_reason = None;
    }
    let (v, _) = verdicts(&raw_unread);
    assert_eq!((v[0].1, v[1].1), ("held", "unknown"), "{v:?}");
    // Not ended yet, its log unread: consistency claims nothing yet.
    let mut running = Build::new();
    running
        .audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(150, bound())
        .copy(400, "Running");
    let mut running = whole(running);
    running.audit_read = false;
    running.audit.clear();
    assert_eq!(consistency(&running), "held");
}

/// The copy's window ends when its last worker pod ended; the pod's removal afterwards does not
/// move it (a pod still running when removed ends the window there).
#[test]
fn the_copy_window_ends_when_its_last_pod_ended_not_when_it_was_removed() {
    let mut b = correct();
    b.copy_gone(1_050);
    let w = b.done().window().unwrap();
    assert_eq!((w.start, w.end), (at(400), Some(at(900))));
    let mut cut = Build::new();
    cut.copy(400, "Pending").copy(500, "Running").copy_gone(700);
    assert_eq!(cut.done().window().unwrap().end, Some(at(700)));
}

/// The game pod's last state before the copy's window describes the window's beginning: a game
/// that had stopped before the copy began, and did not change inside it, was not running
/// throughout the copy, whatever the Backup claims.
#[test]
fn the_pod_state_before_the_window_is_judged_with_it() {
    let mut b = correct();
    b.pod(300, POD, GAME, false);
    let found = b
        .done()
        .consistency()
        .into_iter()
        .map(|v| v.found)
        .collect::<Vec<_>>();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("the game was"), "{found:#?}");
}

fn found_of(v: Vec<rehearsal_evidence::invariants::Violation>) -> Vec<String> {
    v.into_iter().map(|v| v.found).collect()
}

/// A game process counts as started inside the copy's window only strictly between its start
/// and its end: one that started as the window began or as it ended is not inside it.
#[test]
fn a_process_start_is_inside_the_window_only_strictly_between_its_ends() {
    let inside = |ms: i64| {
        let mut b = correct();
        b.audit(ms, "inc-2", None);
        found_of(b.done().consistency())
            .iter()
            .any(|f| f.contains("game process inc-2 started"))
    };
    assert!(inside(600));
    assert!(!inside(400), "at the window's start");
    assert!(!inside(900), "at the window's end");
}

/// Each way the recorded source can differ inside the window, alone, breaks a Quiesced success
/// and calls for Invalidated: the pod gone, another pod UID, another game container, the game
/// not running. A pod state inside the window that shows the recorded source unchanged is no
/// change at all.
#[test]
fn each_difference_from_the_recorded_source_alone_is_a_change() {
    let with = |state: GamePodState| {
        let mut b = correct();
        b.change(600, Subject::GamePod(state));
        found_of(b.done().consistency())
    };
    let same = GamePodState {
        uid: POD.into(),
        game_container: Some(GAME.into()),
        game_running: true,
        gone: false,
    };
    assert_eq!(with(same.clone()), Vec::<String>::new());
    for (what, state) in [
        (
            "gone",
            GamePodState {
                gone: true,
                ..same.clone()
            },
        ),
        (
            "uid",
            GamePodState {
                uid: "pod-uid-2".into(),
                ..same.clone()
            },
        ),
        (
            "container",
            GamePodState {
                game_container: Some("containerd://game-2".into()),
                ..same.clone()
            },
        ),
        (
            "stopped",
            GamePodState {
                game_running: false,
                ..same.clone()
            },
        ),
    ] {
        let found = with(state);
        assert!(
            found
                .iter()
                .any(|f| f.contains("Succeeded with consistency Quiesced from pod")),
            "{what}: {found:#?}"
        );
        assert!(
            found.iter().any(|f| f.contains("the recorded source (pod")),
            "{what}: {found:#?}"
        );
    }
}

/// A Backup that failed claims no consistent capture: the Quiesced and Stopped promises are
/// judged on successes only (a failed one with a source change is still held to Invalidated).
#[test]
fn the_consistency_promises_bind_successes_only() {
    let mut failed = correct();
    failed.audit(600, "inc-1", Some("save-on")).backup(
        1_200,
        BackupState {
            phase: Some("Failed".into()),
            consistency: Some("Quiesced".into()),
            completed_reason: Some("CopyFailed".into()),
            ..bound()
        },
    );
    assert_eq!(found_of(failed.done().consistency()), Vec::<String>::new());
    let stopped_failed = {
        let mut b = stopped_copy(true);
        b.backup(
            1_200,
            BackupState {
                phase: Some("Failed".into()),
                consistency: Some("Stopped".into()),
                completed_reason: Some("CopyFailed".into()),
                ..pending()
            },
        );
        found_of(b.done().consistency())
    };
    assert!(
        !stopped_failed
            .iter()
            .any(|f| f.contains("Succeeded with consistency Stopped")),
        "{stopped_failed:#?}"
    );
}

/// A stopped server's copy (no source recorded) where the pod at 600 shows a running game
/// (`running`), or a pod whose game is not running.
fn stopped_copy(running: bool) -> Build {
    let mut b = Build::new();
    b.backup(100, pending())
        .copy(400, "Pending")
        .copy(500, "Running")
        .pod(600, POD, GAME, running)
        .copy(900, "Succeeded");
    b
}

/// A stopped server's Succeeded, Stopped copy: a game running inside the window breaks it (and
/// calls for SourceStarted); a pod inside the window whose game does not run does not.
#[test]
fn a_stopped_copy_is_broken_by_a_running_game_only() {
    let stopped = BackupState {
        phase: Some("Succeeded".into()),
        consistency: Some("Stopped".into()),
        completed_reason: Some("Succeeded".into()),
        ..pending()
    };
    let mut started = stopped_copy(true);
    started.backup(1_100, stopped.clone());
    let found = found_of(started.done().consistency());
    assert!(
        found
            .iter()
            .any(|f| f.contains("Succeeded with consistency Stopped, but at rv")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.contains("the stopped server started during the copy")),
        "{found:#?}"
    );
    let mut idle = stopped_copy(false);
    idle.backup(1_100, stopped);
    assert_eq!(found_of(idle.done().consistency()), Vec::<String>::new());
}

/// A Backup with no recorded source that says its copy was not quiesced (`Unquiesced`) claims
/// nothing about a stopped source: a game running inside the window does not call for
/// SourceStarted.
#[test]
fn an_unquiesced_copy_without_a_source_is_not_held_to_source_started() {
    let mut b = stopped_copy(true);
    b.backup(
        1_100,
        BackupState {
            phase: Some("Succeeded".into()),
            consistency: Some("Unquiesced".into()),
            completed_reason: Some("Succeeded".into()),
            ..pending()
        },
    );
    assert_eq!(found_of(b.done().consistency()), Vec::<String>::new());
}

/// The process running when the copy began must have had its save-off strictly before the
/// window began, from itself (another process' save-off does not quiesce it), and a save-on
/// only once the copy ended.
#[test]
fn the_running_process_is_quiesced_before_the_window_by_its_own_save_off() {
    let consistency = |b: &Build| found_of(b.done().consistency());
    // Its save-off as the window began: too late.
    let mut late = Build::new();
    late.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(100, pending())
        .backup(150, bound())
        .audit(400, "inc-1", Some("save-off"))
        .copy(400, "Pending")
        .copy(900, "Succeeded")
        .audit(1_000, "inc-1", Some("save-on"))
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    assert!(
        consistency(&late)
            .iter()
            .any(|f| f.contains("received no save-off before the copy began")),
        "{:#?}",
        consistency(&late)
    );
    // Another process' save-off.
    let mut other = Build::new();
    other
        .audit(-6_000, "inc-0", None)
        .audit(-5_500, "inc-0", Some("save-off"))
        .audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .backup(100, pending())
        .backup(150, bound())
        .copy(400, "Pending")
        .copy(900, "Succeeded")
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    assert!(
        consistency(&other)
            .iter()
            .any(|f| f.contains("game process inc-1 received no save-off")),
        "{:#?}",
        consistency(&other)
    );
    // A save-on as the copy ended is after it.
    let mut at_end = correct();
    at_end.audit(900, "inc-1", Some("save-on"));
    assert!(
        !consistency(&at_end)
            .iter()
            .any(|f| f.contains("while the copy ran")),
        "{:#?}",
        consistency(&at_end)
    );
    // A game that started only as the copy began had not started before it.
    let mut fresh = Build::new();
    fresh
        .pod(-4_000, POD, GAME, true)
        .backup(100, pending())
        .backup(150, bound())
        .audit(400, "inc-1", None)
        .copy(400, "Pending")
        .copy(900, "Succeeded")
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    assert!(
        consistency(&fresh)
            .iter()
            .any(|f| f.contains("no game process had started before the copy began")),
        "{:#?}",
        consistency(&fresh)
    );
}

/// A raw copy makes no RCON call once it began: a command before the Backup, or a game
/// process starting after it, is none of its doing.
#[test]
fn a_raw_copy_is_judged_on_its_own_commands_after_it_began() {
    let raw = |extra: &dyn Fn(&mut Build)| {
        let mut b = Build::new();
        b.trace.quiesce = false;
        b.audit(-5_000, "inc-1", None)
            .pod(-4_000, POD, GAME, true)
            .backup(100, pending());
        extra(&mut b);
        b.copy(400, "Pending")
            .copy(900, "Succeeded")
            .backup(1_100, ended("Succeeded", Some("Unquiesced"), "Succeeded"));
        found_of(b.done().cleanup())
    };
    assert_eq!(raw(&|_| {}), Vec::<String>::new());
    assert_eq!(
        raw(&|b| {
            b.audit(50, "inc-1", Some("save-all"));
        }),
        Vec::<String>::new()
    );
    assert_eq!(
        raw(&|b| {
            b.audit(100, "inc-1", Some("save-all"));
        }),
        Vec::<String>::new(),
        "a command as the Backup was created is not after it began"
    );
    assert_eq!(
        raw(&|b| {
            b.audit(500, "inc-2", None);
        }),
        Vec::<String>::new()
    );
    assert!(
        raw(&|b| {
            b.audit(500, "inc-1", Some("save-off"));
        })
        .iter()
        .any(|f| f.contains("it must make no RCON call"))
    );
}

/// An unpaid save-off is a violation only while its game still runs at the end: a pod whose
/// game has stopped (or that is gone) left no one unable to save.
#[test]
fn an_unpaid_save_off_binds_only_a_game_still_running() {
    let unpaid = |last: GamePodState| {
        let mut b = Build::new();
        b.quiesced()
            .copy(400, "Pending")
            .copy(900, "Succeeded")
            .change(950, Subject::GamePod(last))
            .backup(1_100, ended("Failed", None, "CopyFailed"));
        found_of(b.done().cleanup())
            .iter()
            .any(|f| f.contains("never a save-on"))
    };
    let running = GamePodState {
        uid: POD.into(),
        game_container: Some(GAME.into()),
        game_running: true,
        gone: false,
    };
    assert!(unpaid(running.clone()));
    assert!(!unpaid(GamePodState {
        game_running: false,
        ..running.clone()
    }));
    assert!(!unpaid(GamePodState {
        gone: true,
        ..running
    }));
}

/// An older operator's record names its quiesced process only by time: what counts is when the
/// successor *started*, not when it first got a command.
#[test]
fn an_older_operators_record_is_matched_by_the_successors_start() {
    let attempted = BackupState {
        quiesce_attempted: Some(at(0).to_string()),
        ..pending()
    };
    let mut b = Build::new();
    b.audit(-5_000, "inc-1", None)
        .pod(-4_000, POD, GAME, true)
        .audit(10, "inc-1", Some("save-off"))
        .backup(20, attempted.clone())
        .audit(300, "inc-2", None)
        .pod(310, POD, "containerd://game-2", true)
        // Its first command comes seconds after it started.
        .audit(2_500, "inc-2", Some("save-on"))
        .backup(
            2_600,
            BackupState {
                phase: Some("Failed".into()),
                consistency: Some("Invalidated".into()),
                completed_reason: Some("LegacyPreparation".into()),
                ..attempted
            },
        );
    assert_eq!(b.done().cleanup(), Vec::new());
}

/// A copy that failed with its source unchanged must say `CopyFailed`; once the source moved —
/// each way it can, alone — the operator may have stopped the copy itself and say so instead.
/// What happened before the source was recorded, or before the Backup began, moved nothing.
#[test]
fn a_failed_copy_is_copy_failed_unless_the_source_moved() {
    let liveness_of = |extra: &dyn Fn(&mut Build)| {
        let mut b = Build::new();
        b.quiesced();
        extra(&mut b);
        b.copy(400, "Pending")
            .copy(500, "Running")
            .copy(700, "Failed")
            .audit(1_000, "inc-1", Some("save-on"))
            .backup(1_100, ended("Failed", Some("Invalidated"), "SourceChanged"));
        b.done()
            .liveness()
            .into_iter()
            .any(|v| v.found.contains("with the source unchanged"))
    };
    // Unchanged: SourceChanged is the wrong reason.
    assert!(liveness_of(&|_| {}));
    // Before the source was recorded: nothing moved.
    assert!(liveness_of(&|b| {
        b.pod(120, POD, GAME, false);
    }));
    assert!(liveness_of(&|b| {
        b.audit(140, "inc-0", None);
    }));
    let pod = |uid: &str, container: &str, running: bool, gone: bool| GamePodState {
        uid: uid.into(),
        game_container: Some(container.into()),
        game_running: running,
        gone,
    };
    for (what, state) in [
        ("gone", pod(POD, GAME, true, true)),
        ("another pod", pod("pod-uid-2", GAME, true, false)),
        (
            "another container",
            pod(POD, "containerd://game-2", true, false),
        ),
        ("stopped", pod(POD, GAME, false, false)),
    ] {
        assert!(
            !liveness_of(&|b| {
                b.change(600, Subject::GamePod(state.clone()));
            }),
            "{what}"
        );
    }
    assert!(!liveness_of(&|b| {
        b.audit(600, "inc-2", None);
    }));
    // The same state of the recorded source is no move.
    assert!(liveness_of(&|b| {
        b.pod(600, POD, GAME, true);
    }));
}

/// A stopped server's failed copy: any game pod seen after the Backup began moved its source;
/// a pod gone, or one seen before the Backup, did not.
#[test]
fn a_stopped_servers_failed_copy_moved_only_with_a_pod_after_it_began() {
    let liveness_of = |extra: &dyn Fn(&mut Build)| {
        let mut b = Build::new();
        extra(&mut b);
        b.backup(100, pending())
            .copy(400, "Pending")
            .copy(700, "Failed")
            .backup(
                1_100,
                BackupState {
                    phase: Some("Failed".into()),
                    consistency: Some("Invalidated".into()),
                    completed_reason: Some("SourceStarted".into()),
                    ..pending()
                },
            );
        b.done()
            .liveness()
            .into_iter()
            .any(|v| v.found.contains("with the source unchanged"))
    };
    assert!(liveness_of(&|_| {}));
    assert!(!liveness_of(&|b| {
        b.pod(500, POD, GAME, true);
    }));
    assert!(liveness_of(&|b| {
        b.pod(50, POD, GAME, true);
    }));
    assert!(liveness_of(&|b| {
        b.change(
            500,
            Subject::GamePod(GamePodState {
                uid: POD.into(),
                game_container: None,
                game_running: false,
                gone: true,
            }),
        );
    }));
}

/// A save-on reached the game during the copy only strictly inside its window: one as the copy
/// began, or as its last pod ended, is not "before the copy's last worker pod ended".
#[test]
fn a_save_on_is_during_the_copy_only_strictly_inside_its_window() {
    let during = |ms: i64| {
        let mut b = Build::new();
        b.quiesced()
            .copy(400, "Pending")
            .audit(ms, "inc-1", Some("save-on"))
            .copy(900, "Succeeded")
            .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
        b.done()
            .cleanup()
            .into_iter()
            .any(|v| v.found.contains("before the copy's last worker pod ended"))
    };
    assert!(during(600));
    assert!(!during(400));
    assert!(!during(900));
}

/// What a violation says of the game and of the window is readable: the game's state in
/// words, and a window that never ended as "still running".
#[test]
fn violations_describe_the_game_and_an_open_window() {
    let mut b = correct();
    b.pod(600, POD, GAME, false);
    let found = found_of(b.done().consistency());
    assert!(
        found.iter().any(|f| f
            .contains("the game was not running in pod pod-uid-1 (container containerd://game-1)")),
        "{found:#?}"
    );
    let mut open = Build::new();
    open.quiesced()
        .copy(400, "Pending")
        .audit(600, "inc-2", None)
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    let found = found_of(open.done().consistency());
    assert!(
        found
            .iter()
            .any(|f| f.contains("inside the copy's window") && f.ends_with("– still running)")),
        "{found:#?}"
    );
}

/// A Backup a user removed may take its snapshot with it: only its copy is judged, not a
/// snapshot nobody could read any more.
#[test]
fn a_removed_backups_snapshot_is_not_judged() {
    let mut b = correct();
    b.backup(
        1_200,
        BackupState {
            gone: true,
            ..ended("Succeeded", Some("Quiesced"), "Succeeded")
        },
    );
    let mut t = b.done();
    marked(&mut t, None);
    assert_eq!(t.data(), Vec::new());
    // Not removed, the same unreadable snapshot is a violation.
    let mut kept = correct().done();
    marked(&mut kept, None);
    assert!(!kept.data().is_empty());
}

/// A Backup reported Succeeded whose copy never succeeded names each phase its worker pods
/// showed, once, in order.
#[test]
fn a_success_without_a_succeeded_copy_names_the_phases_seen() {
    let mut b = Build::new();
    b.quiesced()
        .copy(400, "Pending")
        .copy(450, "Pending")
        .copy(500, "Running")
        .copy(900, "Failed")
        .audit(1_000, "inc-1", Some("save-on"))
        .backup(1_100, ended("Succeeded", Some("Quiesced"), "Succeeded"));
    let found = found_of(b.done().data());
    assert!(
        found
            .iter()
            .any(|f| f
                .ends_with("no copy worker pod succeeded (phases seen: Pending, Running, Failed)")),
        "{found:#?}"
    );
}

/// One judge for the runner and `--rejudge`: it completes the trace with what was done to the
/// run and the reference's end state, judges it, and what it keeps of the trace (its
/// artifacts) judges the same again; a trace that never recorded what was done to its run
/// leaves `outcome` unknown, never held.
#[test]
fn one_judge_judges_a_schedule_and_its_kept_trace_the_same() {
    use rehearsal_evidence::invariants::Judgement;
    use rehearsal_evidence::invariants::outcome::{EndState, Perturbation};
    use rehearsal_evidence::invariants::schedule::{Trace, judge};
    let mut plain = whole(correct());
    plain.perturbation = None;
    let reference = plain.end_state();
    let changed = EndState {
        finalizers: vec!["gameplane.local/backup-cleanup".into()],
        ..reference.clone()
    };
    let schedule = Perturbation {
        operation: Operation::Backup,
        fault: Some(Fault::AgentRestart),
    };
    let mut trace = Trace::Backup(Box::new(plain.clone()));
    let judged = judge(Some(&schedule), &mut trace, Some(&changed));
    let outcome = judged.iter().find(|j| j.invariant == "outcome").unwrap();
    assert!(
        matches!(&outcome.judgement, Judgement::Violated { violations }
            if violations[0].found.contains("metadata.finalizers")),
        "{judged:#?}"
    );
    assert_eq!(
        trace.judged_with(),
        (Some(schedule.clone()), Some(changed.clone()))
    );
    assert_eq!(trace.end_state(), Some(reference.clone()));
    // Kept as artifacts and read back: the same verdicts.
    let kept = trace.artifacts();
    let read = |name: &str| {
        Ok(kept
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, b)| b.clone()))
    };
    let mut again = Trace::from_artifacts(read).unwrap().unwrap();
    let (s, r) = again.judged_with();
    assert_eq!(judge(s.as_ref(), &mut again, r.as_ref()), judged);
    // Nothing kept: nothing to judge again (the caller keeps the recorded standing).
    assert!(Trace::from_artifacts(|_| Ok(None)).unwrap().is_none());
    // Not a trace: an error naming the artifact.
    let e = Trace::from_artifacts(|_| Ok(Some(b"{".to_vec()))).unwrap_err();
    assert!(e.contains("trace.json is not JSON"), "{e}");
    // What was done to the run never recorded: outcome unknown.
    let mut unrecorded = Trace::Backup(Box::new(plain));
    let judged = judge(None, &mut unrecorded, Some(&reference));
    let outcome = judged.iter().find(|j| j.invariant == "outcome").unwrap();
    assert!(
        matches!(outcome.judgement, Judgement::Unknown { .. }),
        "{judged:#?}"
    );
}
