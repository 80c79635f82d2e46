//! Each mutant shows the observable difference its rehearsal case asserts (see
//! `reference-operator --list-mutants`); the correct operator's side of each difference is
//! asserted in `live_backup`, `stopped_backup` and `restore`.

mod common;

use std::path::Path;

use common::*;
use gameplane_api::conditions::types;
use gameplane_api::{BackupPhase, Consistency, RestorePhase};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

fn write(dir: &Path, file: &str, value: &str) {
    std::fs::write(dir.join(file), value)
        .unwrap_or_else(|e| panic!("write {}/{file}: {e}", dir.display()));
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

/// A server that ran once (claims bound, world written) and is now suspended with no pod.
async fn stopped_server(rig: &Rig) {
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    rig.set_suspend("alpha", true).await;
    rig.await_server_phase("alpha", "Suspended").await;
    rig.await_no_pod("alpha").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_incarnation_reports_a_restarted_game_as_a_consistent_success() {
    let rig = Rig::start(Some("ignore-incarnation")).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    rig.await_backup_running("b1").await;
    rig.cluster
        .restart_container(NS, "alpha-0", "game")
        .await
        .expect("restart game");
    gate.open();
    let b = rig.await_backup_done("b1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(
        status.consistency,
        Some(Consistency::Quiesced),
        "{}",
        dump(&b)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_source_needs_agent_cannot_back_up_a_stopped_server() {
    let rig = Rig::start(Some("stopped-source-needs-agent")).await;
    stopped_server(&rig).await;
    rig.create_backup("s1", "alpha").await;
    let b = rig.await_backup_done("s1").await;
    assert_eq!(
        b.status.as_ref().unwrap().phase,
        Some(BackupPhase::Failed),
        "{}",
        dump(&b)
    );
    assert_eq!(backup_condition(&b, types::COMPLETED).1, "QuiesceFailed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unquiesce_any_pod_sends_save_on_to_the_replacement() {
    let rig = Rig::start(Some("unquiesce-any-pod")).await;
    rig.create_server("alpha", "mc", false).await;
    let original = rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    rig.await_backup_running("b1").await;
    rig.api::<Pod>()
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
    let successor = rig.await_running_pod("alpha").await;
    assert_ne!(successor.uid(), original.uid());
    let log = audit(&data);
    let new = incarnations(&log).pop().unwrap();
    assert!(
        commands_of(&log, &new).contains(&"save-on".to_string()),
        "save-on did not reach the successor: {log:?}"
    );
    drop(gate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_overlays_lets_newer_files_survive() {
    let rig = Rig::start(Some("restore-overlays")).await;
    stopped_server(&rig).await;
    let (data, _) = rig.volume("alpha-data").await;
    write(&data, "probe.txt", "A");
    rig.create_backup("s1", "alpha").await;
    assert_eq!(
        rig.await_backup_done("s1").await.status.unwrap().phase,
        Some(BackupPhase::Succeeded)
    );
    write(&data, "newer.txt", "newer");
    rig.create_restore("r1", "s1", "alpha").await;
    let r = rig.await_restore_done("r1").await;
    assert_eq!(
        r.status.as_ref().unwrap().phase,
        Some(RestorePhase::Succeeded),
        "{}",
        dump(&r)
    );
    assert_eq!(
        read(&data, "newer.txt").as_deref(),
        Some("newer"),
        "the newer file should survive the overlay"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_recreates_pvc_changes_the_claim_uids() {
    let rig = Rig::start(Some("restore-recreates-pvc")).await;
    stopped_server(&rig).await;
    let (_, data_uid) = rig.volume("alpha-data").await;
    let (_, extra_uid) = rig.volume(&format!("alpha-extra-{EXTRA}")).await;
    rig.create_backup("s1", "alpha").await;
    assert_eq!(
        rig.await_backup_done("s1").await.status.unwrap().phase,
        Some(BackupPhase::Succeeded)
    );
    rig.create_restore("r1", "s1", "alpha").await;
    let r = rig.await_restore_done("r1").await;
    assert_eq!(
        r.status.as_ref().unwrap().phase,
        Some(RestorePhase::Succeeded),
        "{}",
        dump(&r)
    );
    assert_ne!(
        rig.volume("alpha-data").await.1,
        data_uid,
        "world PVC UID should change"
    );
    assert_ne!(
        rig.volume(&format!("alpha-extra-{EXTRA}")).await.1,
        extra_uid,
        "extra PVC UID should change"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_skips_extras_loses_the_extra_world() {
    let rig = Rig::start(Some("backup-skips-extras")).await;
    stopped_server(&rig).await;
    let (extra, _) = rig.volume(&format!("alpha-extra-{EXTRA}")).await;
    write(&extra, "probe.txt", "A");
    rig.create_backup("s1", "alpha").await;
    let b = rig.await_backup_done("s1").await;
    assert_eq!(
        b.status.as_ref().unwrap().phase,
        Some(BackupPhase::Succeeded),
        "{}",
        dump(&b)
    );
    let paths = rig
        .snapshot_paths(b.status.as_ref().unwrap().snapshot_id.as_deref().unwrap())
        .await;
    assert!(!paths.iter().any(|p| p.starts_with("/extra")), "{paths:?}");
    write(&extra, "probe.txt", "B");
    rig.create_restore("r1", "s1", "alpha").await;
    rig.await_restore_done("r1").await;
    assert_eq!(
        read(&extra, "probe.txt").as_deref(),
        Some("B"),
        "the extra value does not return"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn succeed_on_failed_copy_reports_success_without_a_snapshot() {
    let rig = Rig::start(Some("succeed-on-failed-copy")).await;
    break_repository(&rig).await;
    stopped_server(&rig).await;
    rig.create_backup("s1", "alpha").await;
    let b = rig.await_backup_done("s1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(status.snapshot_id, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_identity_preflight_quiesces_an_older_agent() {
    let rig = Rig::start(Some("no-identity-preflight")).await;
    rig.create_server("alpha", "mc-legacy", false).await;
    rig.await_running_pod("alpha").await;
    rig.create_backup("b1", "alpha").await;
    let b = rig.await_backup_done("b1").await;
    let log = audit(&rig.data_dir("alpha").await);
    assert!(
        log.iter().any(|a| a.command.as_deref() == Some("save-off")),
        "save-off should reach the game through the unbound route: {log:?}\n{}",
        dump(&b)
    );
}
