//! CONTRACT B3 (and A "Restore"): a restore replaces the world and extra claims exactly, keeps
//! every PVC object, leaves the mods claim alone and returns the server to its run state.

mod common;

use std::path::Path;

use common::*;
use gameplane_api::{BackupPhase, GameServer, RestorePhase};
use kube::ResourceExt;

fn write(dir: &Path, file: &str, value: &str) {
    std::fs::write(dir.join(file), value)
        .unwrap_or_else(|e| panic!("write {}/{file}: {e}", dir.display()));
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_replaces_world_and_extra_exactly_and_keeps_every_claim() {
    let rig = Rig::start(None).await;
    rig.create_server("alpha", "mc", false).await;
    let before = rig.await_running_pod("alpha").await;
    let (data, data_uid) = rig.volume("alpha-data").await;
    let (extra, extra_uid) = rig.volume(&format!("alpha-extra-{EXTRA}")).await;
    let (mods, mods_uid) = rig.volume("alpha-mods-1-0").await;
    write(&data, "probe.txt", "A");
    write(&extra, "probe.txt", "A");
    write(&mods, "probe.txt", "M1");
    rig.create_backup("b1", "alpha").await;
    let b = rig.await_backup_done("b1").await;
    assert_eq!(
        b.status.as_ref().unwrap().phase,
        Some(BackupPhase::Succeeded),
        "{}",
        dump(&b)
    );

    write(&data, "probe.txt", "B");
    write(&data, "newer.txt", "newer");
    write(&extra, "probe.txt", "B");
    write(&extra, "newer.txt", "newer");
    write(&mods, "probe.txt", "M2");
    rig.create_restore("r1", "b1", "alpha").await;
    let r = rig.await_restore_done("r1").await;
    assert_eq!(
        r.status.as_ref().unwrap().phase,
        Some(RestorePhase::Succeeded),
        "{}",
        dump(&r)
    );
    assert_eq!(
        r.status.as_ref().unwrap().snapshot_id,
        b.status.as_ref().unwrap().snapshot_id
    );

    assert_eq!(
        read(&data, "probe.txt").as_deref(),
        Some("A"),
        "world value returned"
    );
    assert_eq!(
        read(&extra, "probe.txt").as_deref(),
        Some("A"),
        "extra value returned"
    );
    assert!(
        read(&data, "newer.txt").is_none(),
        "a world file newer than the backup survived"
    );
    assert!(
        read(&extra, "newer.txt").is_none(),
        "an extra file newer than the backup survived"
    );
    assert_eq!(
        read(&mods, "probe.txt").as_deref(),
        Some("M2"),
        "mods keep their own value"
    );
    assert_eq!(rig.volume("alpha-data").await.1, data_uid, "world PVC UID");
    assert_eq!(
        rig.volume(&format!("alpha-extra-{EXTRA}")).await.1,
        extra_uid,
        "extra PVC UID"
    );
    assert_eq!(
        rig.volume("alpha-mods-1-0").await.1,
        mods_uid,
        "mods PVC UID"
    );

    // The server was running, so it runs again (a new pod: the restore stopped it).
    let after = rig.await_running_pod("alpha").await;
    assert_ne!(after.uid(), before.uid());
    let gs = rig.api::<GameServer>().get("alpha").await.unwrap();
    assert_eq!(gs.spec.suspend, Some(false), "prior run state returned");
}
