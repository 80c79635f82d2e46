//! What a backup covers and a restore returns (CONTRACT B3): a live round trip returns exactly
//! the backed-up files into the same claims; a restore from a broken repository fails and
//! leaves the claims as they were.

use gameplane_api::backup::Backup;
use gameplane_api::conditions::{reasons, types};
use gameplane_api::names;
use serde_json::{Value, json};

use super::checks::*;
use crate::context::{CaseContext, CaseError, Checks};
use crate::evidence::pvc_table::PvcPhase;
use crate::fixture::backup::*;
use crate::fixture::observe::{self, AuditLog, backup_condition, backup_field, backup_phase};
use crate::fixture::{self, FixtureOptions};

/// Sentinel files the round trip plants in each claim before the backup: distinct names per
/// claim (so a snapshot listing shows which claims it covers) and values distinct from
/// anything the game writes.
struct Sentinels {
    primary: String,
    extra: String,
    mods: String,
    value: String,
}

impl Sentinels {
    fn new(ctx: &CaseContext<'_>) -> Self {
        Self {
            primary: names::data_pvc(SERVER),
            extra: names::extra_pvc(SERVER, fixture::EXTRA_WORLD),
            mods: names::mods_pvc(SERVER, fixture::VERSION_STABLE),
            value: format!("rehearsal-before-backup-{}", ctx.namespace),
        }
    }

    fn file(claim: &str) -> String {
        format!("rehearsal-sentinel-{claim}.txt")
    }

    fn claims(&self) -> Vec<String> {
        vec![self.primary.clone(), self.extra.clone(), self.mods.clone()]
    }

    /// Writes `value` into each claim's sentinel and `extra_file` next to it when given.
    fn script(&self, value: &str, extra_file: Option<&str>) -> String {
        let mut s = String::new();
        for c in self.claims() {
            s.push_str(&format!("echo {value} > /v/{c}/{} && ", Self::file(&c)));
            if let Some(f) = extra_file {
                s.push_str(&format!("echo {value} > /v/{c}/{f} && "));
            }
        }
        s.push_str("echo planted");
        s
    }

    /// Prints `<claim> <sentinel value or MISSING> <after-file present|absent>` per claim.
    fn read_script(&self) -> String {
        let mut s = String::new();
        for c in self.claims() {
            s.push_str(&format!(
                "printf '%s %s %s\\n' {c} \"$(cat /v/{c}/{} 2>/dev/null || echo MISSING)\" \"$(test -e /v/{c}/after-backup.txt && echo present || echo absent)\"; ",
                Self::file(&c)
            ));
        }
        s
    }
}

/// The live backup's snapshot id (recorded as a restic snapshot receipt) and its files as
/// `restic ls` lists them; both empty when the backup produced no snapshot.
async fn live_snapshot(
    ctx: &CaseContext<'_>,
    backup: &Backup,
) -> Result<(String, Vec<String>), CaseError> {
    let snapshot = backup_field(backup, "/status/snapshotID").unwrap_or_default();
    if !snapshot.is_empty() {
        ctx.recorder
            .restic_snapshot("live backup", &snapshot, backup_observation(backup))?;
    }
    let files = if snapshot.is_empty() {
        Vec::new()
    } else {
        ctx.step(
            "list the snapshot's files",
            observe::snapshot_files(ctx, "snapshot-ls", &snapshot),
        )
        .await?
    };
    Ok((snapshot, files))
}

/// A backup into a repository whose password is wrong, awaited to its end, with its copy Job.
async fn backup_into_unusable_repo(
    ctx: &CaseContext<'_>,
) -> Result<(Backup, observe::JobState), CaseError> {
    ctx.step("backup into an unusable repository", async {
        fixture::install_bad_repo_secret(ctx).await?;
        fixture::create_backup_into(ctx, "unusable-repo", SERVER, fixture::BAD_REPO_SECRET).await?;
        let (b, job) = await_backup(ctx, "unusable-repo").await?;
        Ok((backup_observation(&b), b, job))
    })
    .await
    .map(|(_, b, job)| (b, job))
}

/// The live backup's snapshot: it has an id, and `files` (its `restic ls`) hold the primary and
/// extra world claims' sentinel files but not the mods claim's.
fn check_snapshot(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    snapshot: &str,
    files: &[String],
    sentinels: &Sentinels,
) {
    let b = object(ctx, "backup", "live");
    checks.check(
        "snapshot-id",
        !snapshot.is_empty(),
        &b,
        "status.snapshotID",
        "a restic snapshot id",
        snapshot,
    );
    let holds = |claim: &str| {
        files
            .iter()
            .any(|f| f.ends_with(&format!("/{}", Sentinels::file(claim))))
    };
    checks.eq(
        "snapshot-covers-claims",
        &format!("restic snapshot {snapshot}"),
        "sentinel files of the primary and extra world claims",
        (true, true),
        (holds(&sentinels.primary), holds(&sentinels.extra)),
    );
    checks.eq(
        "snapshot-excludes-mods",
        &format!("restic snapshot {snapshot}"),
        "sentinel file of the mods claim (rebuildable, not backed up)",
        false,
        holds(&sentinels.mods),
    );
}

/// The backup into an unusable repository failed without a snapshot, for the copy-failed reason.
fn check_unusable_repo(ctx: &CaseContext<'_>, checks: &mut Checks, bad: &Backup) {
    let o = object(ctx, "backup", "unusable-repo");
    checks.check(
        "unusable-repo-fails",
        backup_phase(bad) == "Failed"
            && backup_field(bad, "/status/snapshotID").is_none_or(|s| s.is_empty()),
        &o,
        "status (phase, snapshotID)",
        "Failed without a snapshot id",
        (backup_phase(bad), backup_field(bad, "/status/snapshotID")),
    );
    checks.eq(
        "unusable-repo-reason",
        &o,
        "condition Completed (status/reason)",
        Some(format!("False/{}", reasons::COPY_FAILED)),
        backup_condition(bad, types::COMPLETED),
    );
}

/// The game ran one incarnation through both backups: the live one's save-on, then the failed
/// one's, must both have reached it. Returns that incarnation's RCON commands (the evidence).
fn check_save_on_reached(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    audit: &AuditLog,
) -> Result<Vec<String>, CaseError> {
    let starts = audit.starts();
    let game = audit.nth_newest(0, "the game that was backed up")?;
    let cmds = audit.commands_of(&game);
    let pairs: Vec<&[String]> = cmds.split(|c| c == "save-off").skip(1).collect();
    checks.check(
        "save-on-reached-original",
        !starts.is_empty() && !pairs.is_empty() && pairs[0].iter().any(|c| c == "save-on"),
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("RCON commands of incarnation {game} after the live backup's save-off"),
        "save-on",
        &cmds,
    );
    checks.check(
        "save-on-after-failed-backup",
        pairs.len() >= 2 && pairs[1].iter().any(|c| c == "save-on"),
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("RCON commands of incarnation {game} after the failed backup's save-off"),
        "save-on (cleanup after a failed quiesced backup)",
        &cmds,
    );
    Ok(cmds)
}

/// In the primary and extra world claims the restore brought back the sentinel value from
/// before the backup and removed the file made after it (`readback`: one `<claim> <value>
/// present|absent` line per claim).
fn check_sentinels_restored(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    sentinels: &Sentinels,
    readback: &str,
) {
    let row = |claim: &str| -> (String, String) {
        readback
            .lines()
            .find_map(|l| {
                let mut parts = l.split_whitespace();
                (parts.next() == Some(claim)).then(|| {
                    (
                        parts.next().unwrap_or("MISSING").to_string(),
                        parts.next().unwrap_or("unknown").to_string(),
                    )
                })
            })
            .unwrap_or_else(|| ("MISSING".into(), "unknown".into()))
    };
    for (claim, id_value, id_gone) in [
        (
            &sentinels.primary,
            "pre-backup-value-back",
            "post-backup-file-gone",
        ),
        (
            &sentinels.extra,
            "extra-value-back",
            "extra-post-backup-file-gone",
        ),
    ] {
        let (value, after_file) = row(claim);
        let o = object(ctx, "pvc", claim);
        checks.eq(
            id_value,
            &o,
            "sentinel value after the restore",
            sentinels.value.clone(),
            value,
        );
        checks.eq(
            id_gone,
            &o,
            "file created after the backup",
            "absent".to_string(),
            after_file,
        );
    }
}

/// A plain live backup and restore round trip: the backup succeeds quiesced and its snapshot
/// holds the primary world and every extra claim but not the mods; save-on returns to the game
/// after it and after a failed copy into an unusable repository; a restore brings back the
/// values from before the backup and removes files made after it, in every world claim; every
/// PVC keeps its UID.
pub async fn live_backup_restore_round_trip(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let sentinels = Sentinels::new(ctx);
    let pvcs_before = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::Before, &pvcs_before)?;
    ctx.step("plant sentinels before the backup", async {
        fixture::volume_script(
            ctx,
            "plant-before",
            &sentinels.claims(),
            &sentinels.script(&sentinels.value, None),
        )
        .await
    })
    .await?;
    let (backup, _) = backup_to_end(ctx, "live backup", "live").await?;
    let (snapshot, files) = live_snapshot(ctx, &backup).await?;
    // A copy that cannot be written (the repository's password is wrong) must fail, never
    // report success without a snapshot; the game still gets its save-on.
    let (bad, bad_job) = backup_into_unusable_repo(ctx).await?;
    // Read before the restore: it rolls the world claim, and the audit log on it, back.
    let audit = read_audit(ctx, "audit-read").await?;
    ctx.step(
        "overwrite sentinels and plant files after the backup",
        async {
            fixture::volume_script(
                ctx,
                "plant-after",
                &sentinels.claims(),
                &sentinels.script("rehearsal-after-backup", Some("after-backup.txt")),
            )
            .await
        },
    )
    .await?;
    if backup_phase(&backup) != "Succeeded" {
        // No snapshot to restore: judge what there is (the backup's checks fail and say why).
        let mut checks = Checks::new();
        check_succeeded(ctx, &mut checks, &backup, "Quiesced");
        return ctx.assess(checks, json!({"backup": backup_observation(&backup)}));
    }
    let restored_id = ctx
        .step("restore", async {
            let id = restore(ctx, "back", "live").await?;
            fixture::await_server_phase(ctx, SERVER, "Running").await?;
            Ok(id)
        })
        .await?;
    let readback = ctx
        .step("read sentinels after the restore", async {
            fixture::volume_script(ctx, "look", &sentinels.claims(), &sentinels.read_script()).await
        })
        .await?;
    let pvcs_after = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::After, &pvcs_after)?;

    ctx.uses("Backup status (phase, consistency, snapshotID, Completed reason)");
    if !files.is_empty() {
        ctx.uses("restic snapshot contents (restic ls)");
    }
    ctx.uses("values read back from the volumes");
    ctx.uses("RCON audit log");
    ctx.uses("PVC UIDs");
    let mut checks = Checks::new();
    check_succeeded(ctx, &mut checks, &backup, "Quiesced");
    check_snapshot(ctx, &mut checks, &snapshot, &files, &sentinels);
    check_unusable_repo(ctx, &mut checks, &bad);
    let cmds = check_save_on_reached(ctx, &mut checks, &audit)?;
    let game = audit.nth_newest(0, "the game that was backed up")?;
    let copy_end =
        check_save_on_after_copy_end(ctx, &mut checks, &audit, &game, &backup, 0).await?;
    checks.check(
        "failed-copy-drained",
        bad_job.drained(),
        &object(ctx, "job", &bad_job.name),
        "existence when the Backup ended",
        "gone",
        &bad_job,
    );
    check_sentinels_restored(ctx, &mut checks, &sentinels, &readback);
    checks.eq(
        "restored-own-snapshot",
        &object(ctx, "restore", "back"),
        "status.snapshotID",
        snapshot.clone(),
        restored_id.clone(),
    );
    let comparison = observe::check_pvcs(
        ctx,
        &mut checks,
        "pvc-uids-kept",
        &pvcs_before,
        &pvcs_after,
        &[],
    );
    ctx.assess(
        checks,
        json!({"backup": backup_observation(&backup), "snapshot_files": files,
               "unusable_repo": backup_observation(&bad), "readback": readback,
               "commands": cmds, "pvcs": comparison, "copy_end": copy_end}),
    )
}

/// The failed restore's checks: the post-backup state was planted (`planted`, read before the
/// restore), the Restore failed with CopyFailed, and the claims still hold it (`readback`).
fn check_failed_restore(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    sentinels: &Sentinels,
    after: &str,
    (planted, readback): (&str, &str),
    restore: &Value,
) {
    let world = [sentinels.primary.clone(), sentinels.extra.clone()];
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| {
                world
                    .iter()
                    .any(|c| l.split_whitespace().next() == Some(c.as_str()))
            })
            .map(str::to_string)
            .collect()
    };
    let expected: Vec<String> = world
        .iter()
        .map(|c| format!("{c} {after} present"))
        .collect();
    checks.eq(
        "post-backup-value-planted",
        &object(ctx, "pvc", &sentinels.primary),
        "world and extra claims before the restore (sentinel value, post-backup file)",
        expected.clone(),
        rows(planted),
    );
    let completed = restore["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == types::COMPLETED))
        .map(|c| {
            format!(
                "{}/{}",
                c["status"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or("")
            )
        });
    checks.eq(
        "restore-failed",
        &object(ctx, "restore", "back"),
        "status.phase and condition Completed (status/reason)",
        (
            Some("Failed".to_string()),
            Some(format!("False/{}", reasons::COPY_FAILED)),
        ),
        (
            restore["status"]["phase"].as_str().map(str::to_string),
            completed,
        ),
    );
    checks.eq(
        "claims-untouched",
        &object(ctx, "pvc", &sentinels.primary),
        "world and extra claims after the failed restore (sentinel value, post-backup file)",
        expected,
        rows(readback),
    );
}

/// Restore fails on a broken repository: a running server is backed up, its world and extra
/// claims are written after the backup, and the repository is then made unreachable (its
/// Secret names a repository that does not exist). The Restore ends Failed (CopyFailed), the
/// claims keep what they held (the post-backup values and files), every PVC keeps its UID,
/// and the server gets back the run state it had (`spec.suspend` unset again, its pod runs).
pub async fn restore_fails_on_broken_repository(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    running_server(ctx, FixtureOptions::default()).await?;
    let sentinels = Sentinels::new(ctx);
    let pvcs_before = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::Before, &pvcs_before)?;
    let suspend_before = gameserver(ctx).await?.spec.suspend;
    let (backup, _) = backup_to_end(ctx, "live backup", "live").await?;
    if backup_phase(&backup) != "Succeeded" {
        return Err(CaseError::Setup(format!(
            "the backup to restore from ended {} ({}): nothing to restore, so the failed restore cannot be judged",
            backup_phase(&backup),
            backup_field(&backup, "/status/message").unwrap_or_default()
        )));
    }
    let after = "rehearsal-after-backup";
    let planted = ctx
        .step("write the claims after the backup", async {
            fixture::volume_script(
                ctx,
                "plant-after",
                &sentinels.claims(),
                &sentinels.script(after, Some("after-backup.txt")),
            )
            .await?;
            fixture::volume_script(
                ctx,
                "look-before",
                &sentinels.claims(),
                &sentinels.read_script(),
            )
            .await
        })
        .await?;
    let broken = ctx
        .step("break the repository", break_repository(ctx))
        .await?;
    let restore = ctx
        .step(
            "restore from the broken repository",
            restore_to_end(ctx, "back", "live", SERVER),
        )
        .await?;
    let server = gameserver(ctx).await?;
    let resumed = server.spec.suspend == suspend_before;
    if resumed {
        // It was running: once the run state is back, its pod runs again.
        ctx.step("server running again", async {
            fixture::await_server_phase(ctx, SERVER, "Running").await?;
            Ok(json!({"server": SERVER, "phase": "Running"}))
        })
        .await?;
    }
    let readback = ctx
        .step("read the claims after the failed restore", async {
            fixture::volume_script(ctx, "look", &sentinels.claims(), &sentinels.read_script()).await
        })
        .await?;
    let pvcs_after = fixture::server_pvcs(ctx, SERVER).await?;
    ctx.observe_pvcs(PvcPhase::After, &pvcs_after)?;
    ctx.uses("Restore status (phase, Completed reason)");
    ctx.uses("values read back from the volumes");
    ctx.uses("GameServer spec.suspend");
    ctx.uses("PVC UIDs");
    let mut checks = Checks::new();
    check_failed_restore(
        ctx,
        &mut checks,
        &sentinels,
        after,
        (&planted, &readback),
        &restore,
    );
    let comparison = observe::check_pvcs(
        ctx,
        &mut checks,
        "pvc-uids-kept",
        &pvcs_before,
        &pvcs_after,
        &[],
    );
    checks.eq(
        "server-state-returned",
        &object(ctx, "gameserver", SERVER),
        "spec.suspend after the failed restore",
        suspend_before,
        server.spec.suspend,
    );
    ctx.assess(
        checks,
        json!({"backup": backup_observation(&backup), "broken": broken, "restore": restore["status"],
               "planted": planted, "readback": readback, "pvcs": comparison}),
    )
}
