//! Each mutant shows the observable difference its rehearsal case asserts (see
//! `reference-operator --list-mutants`); the correct operator's side of each difference is
//! asserted in `live_backup`, `stopped_backup`, `restore` and `lifecycle`.

mod common;

use std::path::Path;

use common::*;
use gameplane_api::conditions::types;
use gameplane_api::{BackupPhase, Consistency, GameServer, RestorePhase};
use k8s_openapi::api::batch::v1::Job;
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

/// A running server with a copy held in flight: the Backup `b1` is Running behind the gate.
async fn live_copy_in_flight(rig: &Rig) -> RepoGate {
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    rig.await_backup_running("b1").await;
    gate
}

/// A server that ran once and now sleeps while idle (not suspended), with no pod.
async fn idle_asleep_server(rig: &Rig) {
    use kube::api::{Patch, PatchParams};
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let servers = rig.api::<GameServer>();
    servers
        .patch(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"idle": {"enabled": true}}})),
        )
        .await
        .expect("enable idle sleep");
    servers
        .patch_status(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(
                serde_json::json!({"status": {"idle": {"asleep": true, "reason": "no players"}}}),
            ),
        )
        .await
        .expect("mark idle-asleep");
    rig.await_server_phase("alpha", "Stopped").await;
    rig.await_no_pod("alpha").await;
}

fn snapshot_of(b: &gameplane_api::Backup) -> String {
    b.status
        .as_ref()
        .and_then(|s| s.snapshot_id.clone())
        .unwrap_or_else(|| panic!("no snapshot id: {}", dump(b)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_failure_reason_reports_a_restarted_game_as_a_failed_copy() {
    let rig = Rig::start(Some("wrong-failure-reason")).await;
    let gate = live_copy_in_flight(&rig).await;
    rig.cluster
        .restart_container(NS, "alpha-0", "game")
        .await
        .expect("restart game");
    let b = rig.await_backup_done("b1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Failed), "{}", dump(&b));
    assert_eq!(status.consistency, Some(Consistency::Invalidated));
    assert_eq!(
        backup_condition(&b, types::COMPLETED),
        ("False".into(), "CopyFailed".into())
    );
    drop(gate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalidated_without_draining_leaves_the_copy_job_running() {
    let rig = Rig::start(Some("invalidated-without-draining")).await;
    let gate = live_copy_in_flight(&rig).await;
    rig.cluster
        .restart_container(NS, "alpha-0", "game")
        .await
        .expect("restart game");
    let b = rig.await_backup_done("b1").await;
    assert_eq!(
        backup_condition(&b, types::COMPLETED).1,
        "SourceChanged",
        "{}",
        dump(&b)
    );
    let job = rig.api::<Job>().get_opt("b1").await.unwrap();
    assert!(
        job.as_ref()
            .is_some_and(|j| j.metadata.deletion_timestamp.is_none()),
        "the copy Job should be left running: {}",
        dump(&job)
    );
    drop(gate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_unquiesce_after_success_leaves_the_game_in_save_off() {
    let rig = Rig::start(Some("no-unquiesce-after-success")).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let inc = current_incarnation(&data);
    rig.create_backup("b1", "alpha").await;
    let b = rig.await_backup_done("b1").await;
    assert_eq!(
        b.status.as_ref().unwrap().phase,
        Some(BackupPhase::Succeeded),
        "{}",
        dump(&b)
    );
    assert_eq!(
        backup_condition(&b, types::UNQUIESCED),
        ("True".into(), "UnquiesceSucceeded".into())
    );
    let cmds = commands_of(&audit(&data), &inc);
    assert!(cmds.contains(&"save-off".to_string()), "{cmds:?}");
    assert!(!cmds.contains(&"save-on".to_string()), "{cmds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_unquiesce_after_failure_leaves_the_game_in_save_off() {
    let rig = Rig::start(Some("no-unquiesce-after-failure")).await;
    break_repository(&rig).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let inc = current_incarnation(&data);
    rig.create_backup("b1", "alpha").await;
    let b = rig.await_backup_done("b1").await;
    assert_eq!(
        backup_condition(&b, types::COMPLETED),
        ("False".into(), "CopyFailed".into()),
        "{}",
        dump(&b)
    );
    assert_eq!(
        backup_condition(&b, types::UNQUIESCED),
        ("True".into(), "NotQuiesced".into())
    );
    let cmds = commands_of(&audit(&data), &inc);
    assert!(cmds.contains(&"save-off".to_string()), "{cmds:?}");
    assert!(!cmds.contains(&"save-on".to_string()), "{cmds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_reported_as_unquiesced_claims_save_on_for_a_replaced_pod() {
    let rig = Rig::start(Some("exit-reported-as-unquiesced")).await;
    let gate = live_copy_in_flight(&rig).await;
    rig.api::<Pod>()
        .delete("alpha-0", &Default::default())
        .await
        .expect("delete pod");
    let b = rig.await_backup_done("b1").await;
    assert_eq!(
        backup_condition(&b, types::COMPLETED).1,
        "SourceChanged",
        "{}",
        dump(&b)
    );
    assert_eq!(
        backup_condition(&b, types::UNQUIESCED),
        ("True".into(), "UnquiesceSucceeded".into())
    );
    assert!(
        !b.annotations()
            .contains_key(gameplane_api::names::annotations::UNQUIESCED_AT),
        "nothing was sent: {}",
        dump(&b)
    );
    drop(gate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_labelled_quiesced_labels_a_stopped_copy_quiesced() {
    let rig = Rig::start(Some("stopped-labelled-quiesced")).await;
    stopped_server(&rig).await;
    rig.create_backup("s1", "alpha").await;
    let b = rig.await_backup_done("s1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(status.consistency, Some(Consistency::Quiesced));
    assert_eq!(
        status.source.map(|s| s.state),
        Some(gameplane_api::SourceState::Stopped)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_asleep_treated_live_fails_at_once_without_an_agent() {
    let rig = Rig::start(Some("idle-asleep-treated-live")).await;
    idle_asleep_server(&rig).await;
    rig.create_backup("s1", "alpha").await;
    let b = rig.await_backup_done("s1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Failed), "{}", dump(&b));
    assert_eq!(backup_condition(&b, types::COMPLETED).1, "QuiesceFailed");
    let took = status
        .completion_time
        .unwrap()
        .0
        .duration_since(status.start_time.unwrap().0);
    assert!(
        took < k8s_openapi::jiff::SignedDuration::from_secs(10),
        "failed after {took:?}: the defect does not wait for the preparation deadline"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_wakes_idle_server_clears_the_idle_intent() {
    let rig = Rig::start(Some("backup-wakes-idle-server")).await;
    idle_asleep_server(&rig).await;
    rig.create_backup("s1", "alpha").await;
    rig.await_backup_done("s1").await;
    let gs = rig.api::<GameServer>().get("alpha").await.unwrap();
    let idle = gs.status.as_ref().and_then(|s| s.idle.clone()).unwrap();
    assert_eq!(
        (idle.asleep, idle.reason.as_deref()),
        (Some(false), Some("woken for backup")),
        "{}",
        dump(&gs)
    );
    assert_eq!(gs.spec.suspend, Some(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mid_copy_start_ignored_reports_a_started_server_as_stopped() {
    let rig = Rig::start(Some("mid-copy-start-ignored")).await;
    rig.create_server("alpha", "mc", true).await;
    rig.await_server_phase("alpha", "Suspended").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("s1", "alpha").await;
    rig.await_backup_running("s1").await;
    rig.set_suspend("alpha", false).await;
    // The server runs while the copy is still held.
    rig.await_running_pod("alpha").await;
    gate.open();
    let b = rig.await_backup_done("s1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Succeeded), "{}", dump(&b));
    assert_eq!(status.consistency, Some(Consistency::Stopped));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_latest_snapshot_restores_the_newer_backup() {
    let rig = Rig::start(Some("restore-latest-snapshot")).await;
    stopped_server(&rig).await;
    let (data, _) = rig.volume("alpha-data").await;
    let mut snapshots = Vec::new();
    for (backup, value) in [("s1", "A"), ("s2", "B")] {
        write(&data, "probe.txt", value);
        rig.create_backup(backup, "alpha").await;
        snapshots.push(snapshot_of(&rig.await_backup_done(backup).await));
    }
    rig.create_restore("r1", "s1", "alpha").await;
    let r = rig.await_restore_done("r1").await;
    let status = r.status.clone().unwrap();
    assert_eq!(status.phase, Some(RestorePhase::Succeeded), "{}", dump(&r));
    assert_eq!(status.snapshot_id.as_deref(), Some(snapshots[0].as_str()));
    assert_eq!(
        read(&data, "probe.txt").as_deref(),
        Some("B"),
        "the newer snapshot's value comes back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_includes_mods_copies_the_mods_claim() {
    let rig = Rig::start(Some("backup-includes-mods")).await;
    stopped_server(&rig).await;
    rig.create_backup("s1", "alpha").await;
    let b = rig.await_backup_done("s1").await;
    let paths = rig.snapshot_paths(&snapshot_of(&b)).await;
    assert!(paths.iter().any(|p| p.starts_with("/mods/")), "{paths:?}");
    assert!(paths.iter().any(|p| p.starts_with("/data/")), "{paths:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_preparation_wait_fails_a_game_that_is_not_running_yet() {
    let rig = Rig::start(Some("no-preparation-wait")).await;
    rig.create_server("alpha", "mc", false).await;
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
        "PreparationTimeout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_skips_extras_leaves_the_extra_claim_newer() {
    let rig = Rig::start(Some("restore-skips-extras")).await;
    stopped_server(&rig).await;
    let (data, _) = rig.volume("alpha-data").await;
    let (extra, _) = rig.volume(&format!("alpha-extra-{EXTRA}")).await;
    write(&data, "probe.txt", "A");
    write(&extra, "probe.txt", "A");
    rig.create_backup("s1", "alpha").await;
    let b = rig.await_backup_done("s1").await;
    let paths = rig.snapshot_paths(&snapshot_of(&b)).await;
    assert!(paths.iter().any(|p| p.starts_with("/extra/")), "{paths:?}");
    write(&data, "probe.txt", "B");
    write(&extra, "probe.txt", "B");
    rig.create_restore("r1", "s1", "alpha").await;
    let r = rig.await_restore_done("r1").await;
    assert_eq!(
        r.status.as_ref().unwrap().phase,
        Some(RestorePhase::Succeeded),
        "{}",
        dump(&r)
    );
    assert_eq!(read(&data, "probe.txt").as_deref(), Some("A"), "world");
    assert_eq!(read(&extra, "probe.txt").as_deref(), Some("B"), "extra");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_restart_invalidates_fails_a_consistent_copy() {
    let rig = Rig::start(Some("agent-restart-invalidates")).await;
    let gate = live_copy_in_flight(&rig).await;
    rig.cluster
        .restart_container(NS, "alpha-0", "agent")
        .await
        .expect("restart agent");
    gate.open();
    let b = rig.await_backup_done("b1").await;
    let status = b.status.clone().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Failed), "{}", dump(&b));
    assert_eq!(status.consistency, Some(Consistency::Invalidated));
    assert_eq!(backup_condition(&b, types::COMPLETED).1, "SourceChanged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_copy_labelled_quiesced_reports_a_raw_copy_as_quiesced() {
    let rig = Rig::start(Some("raw-copy-labelled-quiesced")).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let b = gameplane_api::Backup::new(
        "raw",
        gameplane_api::BackupSpec {
            server_ref: gameplane_api::ServerRef {
                name: "alpha".into(),
            },
            repo_ref: Some(gameplane_api::RepoRef {
                name: REPO_SECRET.into(),
                key: "repo".into(),
            }),
            strategy: None,
            quiesce: Some(false),
            tags: vec![],
        },
    );
    rig.api::<gameplane_api::Backup>()
        .create(&Default::default(), &b)
        .await
        .expect("create raw Backup");
    let done = rig.await_backup_done("raw").await;
    let status = done.status.clone().unwrap();
    assert_eq!(
        status.phase,
        Some(BackupPhase::Succeeded),
        "{}",
        dump(&done)
    );
    assert_eq!(status.consistency, Some(Consistency::Quiesced));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_lost_on_restart_forgets_the_save_on_it_owes() {
    let mut rig = Rig::start(Some("cleanup-lost-on-restart")).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    rig.await_backup_running("b1").await;
    rig.operator.take().expect("operator").kill().await;
    rig.operator = Some(Operator::start(
        &rig.cluster,
        Some("cleanup-lost-on-restart"),
    ));
    gate.open();
    let done = rig.await_backup_done("b1").await;
    assert_eq!(
        backup_condition(&done, types::UNQUIESCED),
        ("True".into(), "NotQuiesced".into()),
        "{}",
        dump(&done)
    );
    let log = audit(&data);
    let game = incarnations(&log).pop().unwrap();
    let cmds = commands_of(&log, &game);
    assert!(cmds.contains(&"save-off".to_string()), "{cmds:?}");
    assert!(!cmds.contains(&"save-on".to_string()), "{cmds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_removed_before_cleanup_leaves_the_game_saving_off() {
    let rig = Rig::start(Some("finalizer-removed-before-cleanup")).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    rig.await_backup_running("b1").await;
    rig.api::<gameplane_api::Backup>()
        .delete("b1", &Default::default())
        .await
        .expect("delete Backup");
    rig.await_gone::<gameplane_api::Backup>("b1").await;
    drop(gate);
    let log = audit(&data);
    let game = incarnations(&log).pop().unwrap();
    let cmds = commands_of(&log, &game);
    assert!(cmds.contains(&"save-off".to_string()), "{cmds:?}");
    assert!(!cmds.contains(&"save-on".to_string()), "{cmds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_in_memory_moves_the_deadline_on_restart() {
    use gameplane_api::names::annotations::PREPARATION_DEADLINE;
    let mut rig = Rig::start(Some("deadline-in-memory")).await;
    start_unpullable_server(&rig, "alpha").await;
    create_deadline_backup(&rig, "b1", "alpha", 3).await;
    let api = rig.api::<gameplane_api::Backup>();
    let first = wait_for(
        &api,
        "b1",
        "a preparation deadline",
        |b: Option<&gameplane_api::Backup>| {
            b.is_some_and(|b| b.annotations().contains_key(PREPARATION_DEADLINE))
        },
    )
    .await
    .annotations()[PREPARATION_DEADLINE]
        .clone();
    rig.operator.take().expect("operator").kill().await;
    rig.operator = Some(Operator::start(&rig.cluster, Some("deadline-in-memory")));
    let done = rig.await_backup_done("b1").await;
    assert_ne!(
        done.annotations().get(PREPARATION_DEADLINE),
        Some(&first),
        "{}",
        dump(&done)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_treated_live_bound_finishes_a_legacy_record_as_a_consistent_success() {
    let mut rig = Rig::start(Some("legacy-treated-live-bound")).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    rig.operator.take().expect("operator").kill().await;
    write_legacy_backup(&rig, "legacy", "alpha").await;
    rig.operator = Some(Operator::start(
        &rig.cluster,
        Some("legacy-treated-live-bound"),
    ));
    let done = rig.await_backup_done("legacy").await;
    let status = done.status.clone().unwrap();
    assert_eq!(
        status.phase,
        Some(BackupPhase::Succeeded),
        "{}",
        dump(&done)
    );
    assert_eq!(status.consistency, Some(Consistency::Quiesced));
}
