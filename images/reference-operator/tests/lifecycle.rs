//! CONTRACT B4–B6: what outlives one operator process or the Backup object, and raw copies.

mod common;

use common::*;
use gameplane_api::conditions::types;
use gameplane_api::names::{annotations as ann, finalizers};
use gameplane_api::{Backup, BackupPhase, Consistency, GameTemplate};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};

/// B4: a Backup deleted while its quiesced copy runs keeps its finalizer until the copy is
/// drained and save-on reached the game; then it goes, and no copy Job is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_deleted_mid_copy_goes_only_after_its_cleanup() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    let gate = RepoGate::close(&rig.repo);
    rig.create_backup("b1", "alpha").await;
    let running = rig.await_backup_running("b1").await;
    assert!(
        running
            .finalizers()
            .iter()
            .any(|f| f == finalizers::BACKUP_CLEANUP),
        "an unfinished Backup carries the cleanup finalizer: {}",
        dump(&running)
    );
    rig.api::<Backup>()
        .delete("b1", &DeleteParams::default())
        .await
        .expect("delete Backup");
    rig.await_gone::<Backup>("b1").await;
    let job = rig.api::<Job>().get_opt("b1").await.unwrap();
    assert!(
        job.is_none()
            || job
                .as_ref()
                .is_some_and(|j| j.metadata.deletion_timestamp.is_some()),
        "the copy Job outlived the Backup: {}",
        dump(&job)
    );
    let log = audit(&data);
    let game = incarnations(&log).pop().unwrap();
    let cmds = commands_of(&log, &game);
    let off = cmds.iter().position(|c| c == "save-off");
    let on = cmds.iter().rposition(|c| c == "save-on");
    assert!(
        off.is_some() && on > off,
        "save-on after the save-off before the Backup went: {cmds:?}"
    );
    drop(gate);
}

/// B6: the preparation deadline is written once when the Backup is accepted; an operator
/// restarted during the wait keeps it, and the Backup fails at it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preparation_deadline_is_persisted_and_survives_a_restart() {
    let mut rig = Rig::start(None).await;
    start_unpullable_server(&rig, "alpha").await;
    create_deadline_backup(&rig, "b1", "alpha", 3).await;
    let accepted = wait_for(
        &rig.api::<Backup>(),
        "b1",
        "a persisted preparation deadline",
        |b: Option<&Backup>| {
            b.is_some_and(|b| b.annotations().contains_key(ann::PREPARATION_DEADLINE))
        },
    )
    .await;
    let deadline = accepted.annotations()[ann::PREPARATION_DEADLINE].clone();
    rig.operator.take().expect("operator").kill().await;
    rig.operator = Some(Operator::start(&rig.cluster, None));
    let done = rig.await_backup_done("b1").await;
    assert_eq!(
        done.annotations().get(ann::PREPARATION_DEADLINE),
        Some(&deadline),
        "the restart kept the deadline: {}",
        dump(&done)
    );
    assert_eq!(
        backup_condition(&done, types::COMPLETED),
        ("False".into(), "PreparationTimeout".into()),
        "{}",
        dump(&done)
    );
    assert!(
        !done.annotations().contains_key(ann::QUIESCE_ATTEMPTED),
        "nothing was quiesced: {}",
        dump(&done)
    );
}

/// B6: a Backup an older operator left mid-preparation (quiesce annotations, no
/// `status.source`) fails with reason LegacyPreparation and still sends save-on to the game it
/// quiesced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_preparation_fails_and_pays_its_cleanup() {
    let mut rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    rig.await_running_pod("alpha").await;
    let data = rig.data_dir("alpha").await;
    rig.operator.take().expect("operator").kill().await;
    write_legacy_backup(&rig, "legacy", "alpha").await;
    rig.operator = Some(Operator::start(&rig.cluster, None));
    let done = rig.await_backup_done("legacy").await;
    let s = done.status.clone().unwrap();
    assert_eq!(s.phase, Some(BackupPhase::Failed), "{}", dump(&done));
    assert_ne!(s.consistency, Some(Consistency::Quiesced));
    assert_eq!(
        backup_condition(&done, types::COMPLETED),
        ("False".into(), "LegacyPreparation".into())
    );
    assert_eq!(
        backup_condition(&done, types::UNQUIESCED),
        ("True".into(), "UnquiesceSucceeded".into()),
        "{}",
        dump(&done)
    );
    let log = audit(&data);
    let game = incarnations(&log).pop().unwrap();
    assert!(
        commands_of(&log, &game).contains(&"save-on".to_string()),
        "{:?}",
        commands_of(&log, &game)
    );
}

/// B5: a server whose template disables the agent runs without it, and its Backup (quiesce
/// asked) is a raw copy: Succeeded, consistency Unquiesced, no RCON command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_an_agent_is_copied_raw() {
    let rig = Rig::start(None).await;
    let mut t = template("mc-noagent", None);
    t.spec.agent = Some(gameplane_api::AgentSpec {
        image: None,
        disabled: Some(true),
    });
    Api::<GameTemplate>::all(rig.client.clone())
        .create(&PostParams::default(), &t)
        .await
        .expect("create template");
    rig.create_server("alpha", "mc-noagent", false).await;
    let pod = rig.await_running_pod("alpha").await;
    let containers: Vec<String> = pod
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(containers, ["game"]);
    let data = rig.data_dir("alpha").await;
    rig.create_backup("b1", "alpha").await;
    let done = rig.await_backup_done("b1").await;
    let s = done.status.clone().unwrap();
    assert_eq!(s.phase, Some(BackupPhase::Succeeded), "{}", dump(&done));
    assert_eq!(s.consistency, Some(Consistency::Unquiesced));
    let log = audit(&data);
    let game = incarnations(&log).pop().unwrap();
    let cmds = commands_of(&log, &game);
    assert!(
        !cmds.iter().any(|c| c.starts_with("save")),
        "no RCON command from the backup: {cmds:?}"
    );
}
