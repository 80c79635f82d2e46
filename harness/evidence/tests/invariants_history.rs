//! The history → trace conversion: which committed objects the invariants read, and how each is
//! read.

use rehearsal_evidence::invariants::history::{
    BackupNames, Recorded, backup_changes, restore_changes,
};
use rehearsal_evidence::invariants::restore::RestoreSubject;
use rehearsal_evidence::invariants::{CopyPodState, Subject};
use serde_json::{Value, json};

const NAMES: BackupNames<'static> = BackupNames {
    backup: "live",
    game_pod: "mc-0",
    game_container: "game",
    copy_job: "backup-live",
    quiesce_attempted: "gameplane.local/quiesce-attempted",
    preparation_deadline: "gameplane.local/preparation-deadline",
};

fn at(rv: u64, resource: &str, gone: bool, object: Value) -> Recorded {
    Recorded {
        rv,
        at: jiff::Timestamp::from_millisecond(1_700_000_000_000 + rv as i64).unwrap(),
        resource: resource.into(),
        gone,
        object,
    }
}

fn history() -> Vec<Recorded> {
    vec![
        at(
            1,
            "backups",
            false,
            json!({
                "metadata": {"name": "live", "finalizers": ["gameplane.local/backup-cleanup"],
                    "annotations": {"gameplane.local/quiesce-attempted": "true",
                        "gameplane.local/preparation-deadline": "2026-12-06T08:00:00Z"}},
                "status": {"phase": "Running", "consistency": "Quiesced", "snapshotID": "s1",
                    "source": {"podUID": "u1", "gameContainerID": "containerd://g1"},
                    "conditions": [{"type": "Unquiesced", "reason": "NotYet"},
                        {"type": "Completed", "reason": "Succeeded"}]}
            }),
        ),
        // Another Backup, another server's pod, another Job's pod: not read.
        at(
            2,
            "backups",
            false,
            json!({"metadata": {"name": "other"}, "status": {"phase": "Failed"}}),
        ),
        at(
            3,
            "pods",
            false,
            json!({"metadata": {"name": "mc-1", "uid": "x"}}),
        ),
        at(
            4,
            "pods",
            false,
            json!({"metadata": {"name": "restore-back-abc",
            "labels": {"job-name": "restore-back"}}, "status": {"phase": "Running"}}),
        ),
        at(
            5,
            "pods",
            false,
            json!({
                "metadata": {"name": "mc-0", "uid": "u1"},
                "status": {"containerStatuses": [
                    {"name": "agent", "containerID": "containerd://a1", "state": {"running": {}}},
                    {"name": "game", "containerID": "containerd://g1", "state": {"running": {}}}]}
            }),
        ),
        at(
            6,
            "pods",
            false,
            json!({"metadata": {"name": "backup-live-xyz",
            "labels": {"job-name": "backup-live"}}, "status": {"phase": "Succeeded"}}),
        ),
        at(
            7,
            "jobs",
            false,
            json!({"metadata": {"name": "backup-live",
            "deletionTimestamp": "2026-12-06T08:00:00Z"}}),
        ),
        at(
            8,
            "jobs",
            true,
            json!({"metadata": {"name": "restore-back"}}),
        ),
        at(
            9,
            "restores",
            false,
            json!({
                "metadata": {"name": "back", "finalizers": ["gameplane.local/restore"],
                    "deletionTimestamp": "2026-12-06T08:00:00Z"},
                "status": {"phase": "Succeeded", "conditions": [{"type": "Completed", "reason": "Restored"}]}
            }),
        ),
        at(
            10,
            "pods",
            true,
            json!({"metadata": {"name": "mc-0", "uid": "u1"}, "status": {}}),
        ),
    ]
}

#[test]
fn a_backups_history_reads_its_backup_game_pod_copy_job_and_workers_only() {
    let changes = backup_changes(&history(), &NAMES);
    let rvs: Vec<u64> = changes.iter().map(|c| c.rv).collect();
    assert_eq!(rvs, [1, 5, 6, 7, 10]);
    let Subject::Backup(b) = &changes[0].subject else {
        panic!("{:?}", changes[0])
    };
    assert_eq!(b.phase.as_deref(), Some("Running"));
    assert_eq!(b.consistency.as_deref(), Some("Quiesced"));
    assert_eq!(b.snapshot_id.as_deref(), Some("s1"));
    assert_eq!(b.source_pod_uid.as_deref(), Some("u1"));
    assert_eq!(b.source_container.as_deref(), Some("containerd://g1"));
    assert_eq!(b.completed_reason.as_deref(), Some("Succeeded"));
    assert_eq!(b.unquiesced_reason.as_deref(), Some("NotYet"));
    assert_eq!(b.quiesce_attempted.as_deref(), Some("true"));
    assert_eq!(
        b.preparation_deadline.as_deref(),
        Some("2026-12-06T08:00:00Z")
    );
    assert_eq!(b.finalizers, ["gameplane.local/backup-cleanup"]);
    assert!(!b.deleting && !b.gone);
    assert_eq!(changes[0].at.as_millisecond(), 1_700_000_000_001);
    let Subject::GamePod(pod) = &changes[1].subject else {
        panic!("{:?}", changes[1])
    };
    // The game's container, not the first one listed.
    assert_eq!(pod.game_container.as_deref(), Some("containerd://g1"));
    assert!(pod.game_running && !pod.gone);
    assert_eq!(pod.uid, "u1");
    assert_eq!(
        changes[2].subject,
        Subject::CopyPod(CopyPodState {
            name: "backup-live-xyz".into(),
            phase: Some("Succeeded".into()),
            gone: false,
        })
    );
    let Subject::CopyJob(job) = &changes[3].subject else {
        panic!("{:?}", changes[3])
    };
    assert!(job.deleting && !job.gone);
    let Subject::GamePod(removed) = &changes[4].subject else {
        panic!("{:?}", changes[4])
    };
    assert!(removed.gone && !removed.game_running && removed.game_container.is_none());
}

#[test]
fn a_restores_history_reads_its_restore_and_workers_only() {
    let changes = restore_changes(&history(), "back", "restore-back");
    let rvs: Vec<u64> = changes.iter().map(|c| c.rv).collect();
    assert_eq!(rvs, [4, 9]);
    let RestoreSubject::WorkerPod(w) = &changes[0].subject else {
        panic!("{:?}", changes[0])
    };
    assert_eq!(w.phase.as_deref(), Some("Running"));
    let RestoreSubject::Restore(r) = &changes[1].subject else {
        panic!("{:?}", changes[1])
    };
    assert_eq!(r.phase.as_deref(), Some("Succeeded"));
    assert_eq!(r.completed_reason.as_deref(), Some("Restored"));
    assert_eq!(r.finalizers, ["gameplane.local/restore"]);
    assert!(r.deleting && !r.gone);
    // The history of another Restore reads nothing.
    assert!(restore_changes(&history(), "elsewhere", "restore-elsewhere").is_empty());
}
