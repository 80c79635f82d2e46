//! The backup cases' shared checks: how a Backup ended (Failed for a reason, Succeeded with a
//! consistency), its copy drained, save-on after the copy's end.

use gameplane_api::backup::Backup;
use gameplane_api::conditions::types;
use gameplane_api::names;
use serde_json::{Value, json};

use crate::context::{CaseContext, CaseError, Checks};
use crate::fixture::backup::*;
use crate::fixture::observe::{self, AuditLog, backup_condition, backup_field, backup_phase};
use crate::fixture::{self};

/// Checks `backup-failed` (phase Failed) and `completed-reason` (Completed False/`reason`).
pub(crate) fn check_failed_for(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    b: &Backup,
    reason: &str,
) {
    let o = object(
        ctx,
        "backup",
        b.metadata.name.as_deref().unwrap_or_default(),
    );
    checks.eq(
        "backup-failed",
        &o,
        "status.phase",
        "Failed".to_string(),
        backup_phase(b),
    );
    checks.eq(
        "completed-reason",
        &o,
        "condition Completed (status/reason)",
        Some(format!("False/{reason}")),
        backup_condition(b, types::COMPLETED),
    );
}

/// Checks `copy-job-drained`: the copy Job of an invalidated or failed capture is gone.
pub(crate) fn check_drained(ctx: &CaseContext<'_>, checks: &mut Checks, job: &observe::JobState) {
    checks.check(
        "copy-job-drained",
        job.drained(),
        &object(ctx, "job", &job.name),
        "existence when the Backup ended",
        "gone (copy workers drained)",
        job,
    );
}

/// Checks `backup-succeeded` (phase) and `consistency` (status.consistency = `consistency`)
/// and that the Completed condition agrees.
pub(crate) fn check_succeeded(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    b: &Backup,
    consistency: &str,
) {
    let o = object(
        ctx,
        "backup",
        b.metadata.name.as_deref().unwrap_or_default(),
    );
    checks.eq(
        "backup-succeeded",
        &o,
        "status.phase",
        "Succeeded".to_string(),
        backup_phase(b),
    );
    checks.eq(
        "consistency",
        &o,
        "status.consistency",
        Some(consistency.to_string()),
        backup_field(b, "/status/consistency"),
    );
    checks.check(
        "completed-condition",
        backup_condition(b, types::COMPLETED).is_some_and(|c| c.starts_with("True/")),
        &o,
        "condition Completed",
        "True",
        backup_condition(b, types::COMPLETED),
    );
}

/// When restic wrote Backup `b`'s snapshot, as the REST server's storage recorded it (the end of
/// the copy); `None` where the backend cannot read that storage.
pub(crate) async fn copy_end(
    ctx: &CaseContext<'_>,
    b: &Backup,
) -> Result<Option<(String, Option<jiff::Timestamp>)>, CaseError> {
    let snapshot = backup_field(b, "/status/snapshotID").unwrap_or_default();
    let times = ctx
        .backend
        .snapshot_write_times(fixture::repository_name(&ctx.namespace))
        .await
        .map_err(|e| CaseError::Setup(format!("read the repository's snapshot files: {e}")))?;
    let Some(times) = times else {
        return Ok(None);
    };
    let written = times
        .iter()
        .find(|(id, _)| !snapshot.is_empty() && id.starts_with(&snapshot))
        .and_then(|(_, t)| jiff::Timestamp::try_from(*t).ok());
    Ok(Some((snapshot, written)))
}

/// Checks `save-on-after-copy-end`: the first `save-on` incarnation `game` received after its
/// `nth` `save-off` came after restic wrote the Backup's snapshot (the game was not saving
/// while restic read its claims). The moment comes from the REST server's storage; a backend
/// that cannot read it leaves the check out and says so in the returned observation.
pub(crate) async fn check_save_on_after_copy_end(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    audit: &AuditLog,
    game: &str,
    b: &Backup,
    nth: usize,
) -> Result<Value, CaseError> {
    let Some((snapshot, written)) = copy_end(ctx, b).await? else {
        return Ok(json!({"assessed": false,
            "why": "this backend cannot read the REST server's storage, so the copy's end is not observable"}));
    };
    ctx.uses("snapshot write time (REST server storage)");
    let save_on = audit.save_on_after(game, nth);
    let passed = matches!((written, save_on), (Some(w), Some(on)) if on > w);
    checks.check(
        "save-on-after-copy-end",
        passed,
        &object(ctx, "pod", &names::pod(SERVER)),
        &format!("time of the first save-on to {game} after save-off #{} vs when snapshot {snapshot} was written", nth + 1),
        "save-on after the snapshot was written",
        (
            save_on.map(|t| t.to_string()),
            written.map(|t| t.to_string()),
        ),
    );
    Ok(json!({"assessed": true, "snapshot": snapshot,
              "snapshot_written": written.map(|t| t.to_string()),
              "save_on": save_on.map(|t| t.to_string())}))
}
