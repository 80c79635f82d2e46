//! The exploration's catalogue: every operation's row (setup, faults, ending, invariants) and
//! every fault's class, as the runner, the oracle and the contract check read them.

use rehearsal_evidence::catalogue::{
    Allowed, Ends, FAULTS, Fault, FaultClass, Judges, OPERATIONS, Operation, Setup, Source,
    Variant, class_of,
};
use rehearsal_evidence::invariants::{
    self, BACKUP_INVARIANTS, QUALIFY_SIGNALS, by_operation, judged_by,
};

#[test]
fn each_operation_has_the_faults_that_can_act_on_it() {
    use Fault::*;
    assert_eq!(
        Operation::Restore.faults(),
        [
            RestoreDeleted,
            OperatorRestart,
            RepositoryUnreachable,
            RepositoryWrongPassword,
            WriteConflict,
            DroppedEvent,
            StaleView
        ]
    );
    // A watch event withheld is about the operation's object: a Backup's or a Restore's (a
    // qualification has many objects, none of them the operation's).
    for row in OPERATIONS {
        let has = row.faults.contains(&DroppedEvent);
        assert_eq!(has, !matches!(row.setup, Setup::Qualify(_)), "{}", row.name);
    }
    // A copy held at its end spans a change of its source: every operation that copies a
    // server (not the refused or ended backups, nor the restore or qualifications).
    let copies: Vec<Operation> = OPERATIONS
        .iter()
        .filter(|r| r.faults.contains(&CopyHeldAtEnd))
        .map(|r| r.operation)
        .collect();
    assert_eq!(
        copies,
        [
            Operation::Backup,
            Operation::RawBackup,
            Operation::StoppedBackup,
            Operation::IdleBackup,
            Operation::EarlyBackup
        ]
    );
    assert_eq!(Operation::Backup.while_copy_held(), Some(GameRestart));
    assert_eq!(Operation::IdleBackup.while_copy_held(), Some(ServerStarted));
    // A stopped server is started, never restarted; a running one the other way round.
    for op in [Operation::StoppedBackup, Operation::IdleBackup] {
        assert!(op.faults().contains(&ServerStarted), "{op}");
        assert!(!op.faults().contains(&GameRestart), "{op}");
    }
    assert!(Operation::Backup.faults().contains(&GameRestart));
    assert!(!Operation::Backup.faults().contains(&ServerStarted));
    // The module qualification also has its registry serving other bytes for the pinned layer.
    assert_eq!(
        Operation::QualifyModule.faults(),
        [
            OperatorRestart,
            WriteConflict,
            StaleView,
            RegistryOtherBytes
        ]
    );
    assert_eq!(
        Operation::QualifyModuleMoved.faults(),
        [OperatorRestart, WriteConflict, StaleView]
    );
    // Every fault acts on some operation; the operator's restart (also onto a stale view) and
    // a conflicted write on every one.
    for f in Fault::ALL {
        assert!(
            OPERATIONS.iter().any(|r| r.faults.contains(f)),
            "{f} acts on no operation"
        );
    }
    assert!(OPERATIONS.iter().all(|r| {
        [OperatorRestart, WriteConflict, StaleView]
            .iter()
            .all(|f| r.faults.contains(f))
    }));
}

#[test]
fn each_operation_names_its_setup_and_ending() {
    assert_eq!(
        Operation::IdleBackup.setup(),
        Setup::Backup(Source::IdleAsleep)
    );
    assert_eq!(Operation::Restore.setup(), Setup::Restore);
    assert_eq!(
        Operation::QualifyModuleMoved.setup(),
        Setup::Qualify(Variant::ModuleMoved)
    );
    assert_eq!(
        Operation::RawBackup.row().ends,
        Ends::Succeeded(Some("Unquiesced"))
    );
    assert_eq!(
        Operation::LegacyBackup.row().ends,
        Ends::Refused("LegacyPreparation")
    );
    assert_eq!(Operation::Qualify.row().ends, Ends::Promoted);
    assert_eq!(Operation::Backup.to_string(), "backup");
    assert_eq!(Fault::AgentDown.to_string(), "agent-down");
}

#[test]
fn each_fault_has_its_class() {
    let class = |f: Fault| f.class();
    assert_eq!(class(Fault::AgentRestart), FaultClass::Transparent);
    assert_eq!(class(Fault::OperatorRestart), FaultClass::Transparent);
    assert_eq!(class(Fault::WriteConflict), FaultClass::Transparent);
    assert_eq!(class(Fault::DroppedEvent), FaultClass::Transparent);
    assert_eq!(class(Fault::StaleView), FaultClass::Transparent);
    assert_eq!(class(Fault::AgentDown), FaultClass::KeepsSource);
    for f in FAULTS.iter().map(|r| r.fault).filter(|f| {
        !matches!(
            f,
            Fault::AgentRestart
                | Fault::OperatorRestart
                | Fault::WriteConflict
                | Fault::DroppedEvent
                | Fault::StaleView
                | Fault::AgentDown
        )
    }) {
        assert_eq!(class(f), FaultClass::Changes, "{f}");
    }
    assert_eq!(class_of(None), FaultClass::Transparent);
    assert_eq!(class_of(Some(Fault::GameRestart)), FaultClass::Changes);
    // What the oracle may demand follows from the class alone.
    assert_eq!(
        Operation::Restore.allowed(Some(Fault::OperatorRestart)),
        Some(Allowed::Only(Ends::Succeeded(None)))
    );
    assert_eq!(
        Operation::QualifyUnpullable.allowed(None),
        Some(Allowed::Only(Ends::HaltedOnClone(
            rehearsal_evidence::qualification::gates::IMAGE
        )))
    );
}

#[test]
fn each_operation_is_judged_by_the_invariants_its_row_names() {
    use invariants::qualification::{QUALIFY_INVARIANTS, QUALIFY_RESTORE_INVARIANTS};
    use invariants::restore::RESTORE_INVARIANTS;
    assert_eq!(judged_by(Judges::Backup), BACKUP_INVARIANTS);
    assert_eq!(judged_by(Judges::Restore), RESTORE_INVARIANTS);
    assert_eq!(judged_by(Judges::Qualify), QUALIFY_INVARIANTS);
    assert_eq!(
        judged_by(Judges::QualifyThenRestore),
        QUALIFY_RESTORE_INVARIANTS
    );
    let all = by_operation();
    assert_eq!(all.len(), OPERATIONS.len() + 1);
    for (row, (name, ids)) in OPERATIONS.iter().zip(&all) {
        assert_eq!(*name, row.name);
        assert_eq!(*ids, judged_by(row.judges), "{name}");
    }
    assert_eq!(
        all.last(),
        Some(&(QUALIFY_SIGNALS, invariants::way_back::SIGNAL_INVARIANTS))
    );
    assert!(all.iter().any(|(name, ids)| *name == "restore"
        && ids.contains(&invariants::restore::DATA)
        && !ids.contains(&invariants::CONSISTENCY)));
}

/// A schedule's verdicts read two ways — the invariants it violated, and why each unknown one
/// could not be judged — the same for the run and for `--rejudge`.
#[test]
fn the_violated_and_unknown_invariants_are_read_in_order() {
    use rehearsal_evidence::invariants::{Violation, judge_each, unknown_reasons, violated};
    let violation = |invariant: &str| Violation {
        invariant: invariant.into(),
        evidence: "recorded".into(),
        found: "broken".into(),
    };
    let violations = vec![violation("drain"), violation("consistency")];
    let judged = judge_each(
        &["consistency", "cleanup", "drain", "liveness"],
        &violations,
        |id| (id == "cleanup").then(|| "the audit log was not read".to_string()),
    );
    assert_eq!(violated(&judged), ["consistency", "drain"]);
    assert_eq!(
        unknown_reasons(&judged),
        ["cleanup: the audit log was not read"]
    );
    assert!(violated(&judge_each(&["liveness"], &[], |_| None)).is_empty());
}
