//! CONTRACT B2: backups of stopped servers, one test per bullet.

mod common;

use std::path::Path;

use common::*;
use gameplane_api::conditions::types;
use gameplane_api::names::annotations as ann;
use gameplane_api::{BackupPhase, Consistency, GameServer, RestorePhase, SourceState};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

fn write(dir: &Path, file: &str, value: &str) {
    std::fs::write(dir.join(file), value)
        .unwrap_or_else(|e| panic!("write {}/{file}: {e}", dir.display()));
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

/// Bullets 1 and 2: two backups and two restores while the pod stays absent: no agent call,
/// consistency Stopped, suspend untouched, the saved data returns, the server stays stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_server_backups_and_restores_return_the_saved_data() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let (data, data_uid) = rig.volume("alpha-data").await;
    let (extra, extra_uid) = rig.volume(&format!("alpha-extra-{EXTRA}")).await;
    rig.set_suspend("alpha", true).await;
    rig.await_server_phase("alpha", "Suspended").await;
    rig.await_no_pod("alpha").await;
    let audit_lines = audit(&data).len();

    write(&data, "probe.txt", "A");
    write(&extra, "probe.txt", "A");
    for backup in ["s1", "s2"] {
        rig.create_backup(backup, "alpha").await;
        let b = rig.await_backup_done(backup).await;
        let status = b.status.clone().unwrap();
        assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
        assert_eq!(
            status.source.as_ref().map(|s| s.state),
            Some(SourceState::Stopped)
        );
        assert_eq!(status.consistency, Some(Consistency::Stopped));
        assert!(
            !b.annotations().contains_key(ann::QUIESCE_ATTEMPTED),
            "an agent call was attempted: {}",
            dump(&b)
        );
        assert_eq!(backup_condition(&b, types::UNQUIESCED).1, "NotQuiesced");
        let gs = rig.api::<GameServer>().get("alpha").await.unwrap();
        assert_eq!(gs.spec.suspend, Some(true), "a backup changed spec.suspend");
        // Between the backups: new values and a newer file.
        write(&data, "probe.txt", "B");
        write(&extra, "probe.txt", "B");
        write(&data, &format!("after-{backup}.txt"), backup);
    }
    write(&data, "probe.txt", "C");
    write(&extra, "probe.txt", "C");

    for (restore, backup, value) in [("r1", "s1", "A"), ("r2", "s2", "B")] {
        rig.create_restore(restore, backup, "alpha").await;
        let r = rig.await_restore_done(restore).await;
        assert_eq!(
            r.status.as_ref().unwrap().phase,
            Some(RestorePhase::Succeeded),
            "{}",
            dump(&r)
        );
        assert_eq!(
            read(&data, "probe.txt").as_deref(),
            Some(value),
            "world after restoring {backup}"
        );
        assert_eq!(
            read(&extra, "probe.txt").as_deref(),
            Some(value),
            "extra after restoring {backup}"
        );
        assert!(
            read(&data, "after-s2.txt").is_none(),
            "a file newer than {backup} survived"
        );
        assert_eq!(
            read(&data, "after-s1.txt").is_some(),
            backup == "s2",
            "after-s1.txt after restoring {backup}"
        );
        let gs = rig.api::<GameServer>().get("alpha").await.unwrap();
        assert_eq!(gs.spec.suspend, Some(true), "the server stays stopped");
        assert!(
            rig.api::<Pod>().get_opt("alpha-0").await.unwrap().is_none(),
            "a pod appeared"
        );
        assert_eq!(rig.volume("alpha-data").await.1, data_uid, "world PVC UID");
        assert_eq!(
            rig.volume(&format!("alpha-extra-{EXTRA}")).await.1,
            extra_uid,
            "extra PVC UID"
        );
    }
    assert_eq!(
        audit(&data).len(),
        audit_lines,
        "no RCON command reached the game while it was stopped"
    );
}

/// Bullet 3: a server that starts while its stopped copy runs invalidates the copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_during_a_stopped_copy_invalidates_it() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", true).await;
    rig.await_server_phase("alpha", "Suspended").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("s1", "alpha").await;
    let running = rig.await_backup_running("s1").await;
    assert_eq!(
        running.status.unwrap().source.map(|s| s.state),
        Some(SourceState::Stopped)
    );
    rig.set_suspend("alpha", false).await;
    let b = rig.await_backup_done("s1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Failed), "{}", dump(&b));
    assert_eq!(status.consistency, Some(Consistency::Invalidated));
    assert_eq!(backup_condition(&b, types::COMPLETED).1, "SourceStarted");
    let job = rig
        .api::<k8s_openapi::api::batch::v1::Job>()
        .get_opt("s1")
        .await
        .unwrap();
    assert!(
        job.is_none(),
        "the copy Job outlived the Backup: {}",
        dump(&job)
    );
    drop(gate);
}

/// Idle sleep counts as stopped: no replica, phase Stopped (Ready reason IdleAsleep), and a
/// backup copies without an agent and leaves the idle intent alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_asleep_server_is_backed_up_as_stopped_and_stays_asleep() {
    use kube::api::{Patch, PatchParams};
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    rig.api::<GameServer>()
        .patch(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"idle": {"enabled": true}}})),
        )
        .await
        .expect("enable idle sleep");
    rig.api::<GameServer>()
        .patch_status(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(
                serde_json::json!({"status": {"idle": {"asleep": true, "reason": "no players"}}}),
            ),
        )
        .await
        .expect("mark idle-asleep");
    let stopped = rig.await_server_phase("alpha", "Stopped").await;
    assert_eq!(ready_reason(&stopped), "IdleAsleep", "{}", dump(&stopped));
    rig.await_no_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let audit_lines = audit(&data).len();
    rig.create_backup("s1", "alpha").await;
    let b = rig.await_backup_done("s1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(
        status.source.as_ref().map(|s| s.state),
        Some(SourceState::Stopped)
    );
    assert_eq!(status.consistency, Some(Consistency::Stopped));
    assert!(
        !b.annotations().contains_key(ann::QUIESCE_ATTEMPTED),
        "an agent call was attempted: {}",
        dump(&b)
    );
    let gs = rig.api::<GameServer>().get("alpha").await.unwrap();
    assert_eq!(gs.spec.suspend, Some(false), "suspend untouched");
    let idle = gs.status.as_ref().and_then(|s| s.idle.clone()).unwrap();
    assert_eq!(
        (idle.asleep, idle.reason.as_deref()),
        (Some(true), Some("no players")),
        "idle intent untouched: {}",
        dump(&gs)
    );
    assert!(
        rig.api::<Pod>().get_opt("alpha-0").await.unwrap().is_none(),
        "a pod appeared"
    );
    assert_eq!(
        audit(&data).len(),
        audit_lines,
        "no RCON command reached the game"
    );
}

fn ready_reason(gs: &GameServer) -> String {
    gameplane_api::conditions::find(&gs.status.as_ref().unwrap().conditions, types::READY)
        .map(|c| c.reason.clone())
        .unwrap_or_default()
}
