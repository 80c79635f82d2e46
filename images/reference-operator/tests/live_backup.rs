//! CONTRACT B1: live backups bound to the game's incarnation, one test per bullet.

mod common;

use common::*;
use gameplane_api::conditions::types;
use gameplane_api::names::annotations as ann;
use gameplane_api::{BackupPhase, Consistency, SourceState};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;

/// Bullet 1: the source is recorded at preparation; a quiesced copy of an unchanged
/// incarnation succeeds with consistency Quiesced, and save-on returns to the same process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_backup_records_its_source_and_succeeds_quiesced() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    let pod = rig.await_running_pod("alpha").await;
    let (cid, restarts) = game_container(&pod);
    rig.create_backup("b1", "alpha").await;
    let b = rig.await_backup_done("b1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(
        status.consistency,
        Some(Consistency::Quiesced),
        "{}",
        dump(&b)
    );
    let source = status.source.clone().unwrap();
    assert_eq!(source.state, SourceState::Live);
    assert_eq!(
        source.pod_uid.as_deref(),
        pod.uid().as_deref(),
        "recorded pod UID"
    );
    assert_eq!(
        source.game_container_id.as_deref(),
        Some(cid.as_str()),
        "recorded game container"
    );
    assert_eq!(source.game_restart_count, Some(restarts));
    for key in [ann::QUIESCE_ATTEMPTED, ann::QUIESCED_AT, ann::UNQUIESCED_AT] {
        assert!(
            b.annotations().contains_key(key),
            "annotation {key} on {}",
            dump(&b)
        );
    }
    assert_eq!(
        backup_condition(&b, types::COMPLETED),
        ("True".into(), "Succeeded".into())
    );
    assert_eq!(
        backup_condition(&b, types::UNQUIESCED),
        ("True".into(), "UnquiesceSucceeded".into())
    );
    let snapshot = status.snapshot_id.clone().expect("snapshotID");
    let data = rig.data_dir("alpha").await;
    let inc = current_incarnation(&data);
    let cmds = commands_of(&audit(&data), &inc);
    let pos = |c: &str| {
        cmds.iter()
            .position(|x| x == c)
            .unwrap_or_else(|| panic!("{c} not in {cmds:?}"))
    };
    assert!(
        pos("save-off") < pos("save-all flush") && pos("save-all flush") < pos("save-on"),
        "{cmds:?}"
    );
    // B3: the copy holds the world and the extra claim, never the mods claim.
    let paths = rig.snapshot_paths(&snapshot).await;
    assert!(paths.iter().any(|p| p.starts_with("/data/")), "{paths:?}");
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with(&format!("/extra/{EXTRA}/"))),
        "{paths:?}"
    );
    assert!(!paths.iter().any(|p| p.starts_with("/mods")), "{paths:?}");
}

/// Bullet 2: a game restart inside the same pod during the copy invalidates the capture;
/// the copy is drained and no save-on reaches the new incarnation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_pod_game_restart_during_the_copy_invalidates_it() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    rig.await_backup_running("b1").await;
    let restarted = rig
        .cluster
        .restart_container(NS, "alpha-0", "game")
        .await
        .expect("restart game");
    assert_ne!(restarted.old_id, restarted.new_id);
    let b = rig.await_backup_done("b1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Failed), "{}", dump(&b));
    assert_ne!(status.consistency, Some(Consistency::Quiesced));
    assert_eq!(
        backup_condition(&b, types::COMPLETED),
        ("False".into(), "SourceChanged".into())
    );
    assert_eq!(
        backup_condition(&b, types::UNQUIESCED).1,
        "OriginalProcessExited",
        "{}",
        dump(&b)
    );
    // Drained before the Backup ended: the Job (deleted in the foreground) is already gone.
    let job = rig.api::<Job>().get_opt("b1").await.unwrap();
    assert!(
        job.is_none(),
        "the copy Job outlived the Backup: {}",
        dump(&job)
    );
    let pod = rig.await_running_pod("alpha").await;
    assert_eq!(
        Some(pod.uid().unwrap()),
        status.source.unwrap().pod_uid,
        "same pod"
    );
    let log = audit(&data);
    let new = incarnations(&log).pop().unwrap();
    assert!(
        !commands_of(&log, &new).contains(&"save-on".to_string()),
        "save-on reached the new incarnation: {log:?}"
    );
    drop(gate);
}

/// Bullet 3: a game that is not running yet is waited for, then its incarnation is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_waits_for_a_game_that_is_not_running_yet() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    rig.create_backup("b1", "alpha").await;
    let b = rig.await_backup_done("b1").await;
    let pod = rig.await_running_pod("alpha").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(status.consistency, Some(Consistency::Quiesced));
    let source = status.source.unwrap();
    assert_eq!(source.pod_uid.as_deref(), pod.uid().as_deref());
    assert_eq!(source.game_container_id, Some(game_container(&pod).0));
}

/// Bullet 4: an agent without the identity route fails the preflight; no save-off is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_agent_fails_the_identity_preflight_and_nothing_is_quiesced() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc-legacy", false).await;
    rig.await_running_pod("alpha").await;
    rig.create_backup("b1", "alpha").await;
    let b = rig.await_backup_done("b1").await;
    assert_eq!(
        b.status.as_ref().unwrap().phase,
        Some(BackupPhase::Failed),
        "{}",
        dump(&b)
    );
    assert_eq!(
        backup_condition(&b, types::COMPLETED).1,
        "IdentityPreflightFailed"
    );
    assert!(
        !b.annotations().contains_key(ann::QUIESCE_ATTEMPTED),
        "{}",
        dump(&b)
    );
    let log = audit(&rig.data_dir("alpha").await);
    assert!(
        log.iter().all(|a| a.command.as_deref() != Some("save-off")),
        "save-off was sent: {log:?}"
    );
}

/// Bullet 5: an agent restart with the game unchanged does not invalidate the capture.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_restart_during_the_copy_keeps_it_consistent() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let inc = current_incarnation(&data);
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    rig.await_backup_running("b1").await;
    rig.cluster
        .restart_container(NS, "alpha-0", "agent")
        .await
        .expect("restart agent");
    gate.open();
    let b = rig.await_backup_done("b1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(status.consistency, Some(Consistency::Quiesced));
    assert_eq!(
        backup_condition(&b, types::UNQUIESCED),
        ("True".into(), "UnquiesceSucceeded".into())
    );
    assert_eq!(
        current_incarnation(&data),
        inc,
        "the game process did not change"
    );
    assert!(commands_of(&audit(&data), &inc).contains(&"save-on".to_string()));
}

/// Bullet 6: cleanup is bound to the original pod: a replacement never gets save-on, and the
/// original process's exit is reported as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_pod_fails_the_copy_and_its_successor_gets_no_save_on() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    let original = rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    rig.await_backup_running("b1").await;
    rig.api::<k8s_openapi::api::core::v1::Pod>()
        .delete("alpha-0", &Default::default())
        .await
        .expect("delete pod");
    let b = rig.await_backup_done("b1").await;
    assert_eq!(
        b.status.as_ref().unwrap().phase,
        Some(BackupPhase::Failed),
        "{}",
        dump(&b)
    );
    assert_eq!(backup_condition(&b, types::COMPLETED).1, "SourceChanged");
    assert_eq!(
        backup_condition(&b, types::UNQUIESCED).1,
        "OriginalProcessExited"
    );
    let successor = wait_for(
        &rig.api::<k8s_openapi::api::core::v1::Pod>(),
        "alpha-0",
        "a running successor",
        |p: Option<&k8s_openapi::api::core::v1::Pod>| {
            let replaced = p.is_some_and(|p| p.uid() != original.uid());
            replaced
                && matches!(
                    reference_operator::incarnation::observe(p),
                    reference_operator::incarnation::Observation::Running(_)
                )
        },
    )
    .await;
    assert_ne!(successor.uid(), original.uid());
    let log = audit(&data);
    let new = incarnations(&log).pop().unwrap();
    assert!(
        !commands_of(&log, &new).contains(&"save-on".to_string()),
        "save-on reached the successor: {log:?}"
    );
    drop(gate);
}

/// A copy that fails (unusable repository) fails the Backup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_copy_fails_the_backup() {
    let rig = Rig::start(None).await;
    break_repository(&rig).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    rig.create_backup("b1", "alpha").await;
    let b = rig.await_backup_done("b1").await;
    assert_eq!(
        b.status.as_ref().unwrap().phase,
        Some(BackupPhase::Failed),
        "{}",
        dump(&b)
    );
    assert_eq!(backup_condition(&b, types::COMPLETED).1, "CopyFailed");
    assert_eq!(
        backup_condition(&b, types::UNQUIESCED).1,
        "UnquiesceSucceeded"
    );
}

/// `spec.quiesce: false` copies a live game without touching it: crash-consistent only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_without_quiesce_is_reported_unquiesced() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let inc = current_incarnation(&data);
    let spec = gameplane_api::BackupSpec {
        server_ref: gameplane_api::ServerRef {
            name: "alpha".into(),
        },
        repo_ref: Some(gameplane_api::RepoRef {
            name: REPO_SECRET.into(),
            key: "repo".into(),
        }),
        strategy: None,
        quiesce: Some(false),
        tags: vec!["no-quiesce".into()],
    };
    rig.api::<gameplane_api::Backup>()
        .create(&Default::default(), &gameplane_api::Backup::new("b1", spec))
        .await
        .unwrap();
    let b = rig.await_backup_done("b1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(status.consistency, Some(Consistency::Unquiesced));
    assert_eq!(backup_condition(&b, types::UNQUIESCED).1, "NotQuiesced");
    let cmds = commands_of(&audit(&data), &inc);
    assert!(
        !cmds.contains(&"save-off".to_string()),
        "no save-off for a backup without quiesce: {cmds:?}"
    );
}
