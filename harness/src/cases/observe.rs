//! Evidence the cases read from what the operator, the game and the cluster produced: the game's
//! RCON audit log, the contents of a restic snapshot, the copy Job's state, a Backup's
//! conditions, and PVC identities compared claim by claim.
//!
//! Absence counts only when its source was read and covers the moment in question: a missing
//! or empty audit log is [`CaseError::EvidenceAbsent`], never an empty list that passes.

use std::collections::BTreeMap;

use gameplane_api::backup::Backup;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde::Serialize;
use serde_json::Value;

use super::fixture;
use crate::context::{CaseContext, CaseError, Checks, HarnessMutant};
use crate::evidence::pvc_table::{self, PvcComparison, PvcObservation};
use crate::probe::restic;

/// The audit log and its judgement live in the evidence crate (pure, tested there).
pub use crate::evidence::judge::audit::{
    AUDIT_LOG, AuditLine, AuditLog, MISSING_MARKER, save_offs, save_on_after_each_save_off,
};

/// Reads server `server`'s RCON audit log from its world claim with a probe pod named
/// `pod_name`. A missing or empty log is evidence absent.
pub async fn audit_log(
    ctx: &CaseContext<'_>,
    server: &str,
    pod_name: &str,
) -> Result<AuditLog, CaseError> {
    let claim = gameplane_api::names::data_pvc(server);
    let out = fixture::volume_script(
        ctx,
        pod_name,
        std::slice::from_ref(&claim),
        &format!("f=/v/{claim}/{AUDIT_LOG}; if [ -f \"$f\" ]; then cat \"$f\"; else echo {MISSING_MARKER}; fi"),
    )
    .await?;
    parse_audit_log(&ctx.namespace, claim, &out)
}

/// What the probe pod printed for the audit log of `claim` in `namespace`, judged by
/// [`AuditLog::parse`]: a missing, broken or start-less log is evidence absent.
pub fn parse_audit_log(namespace: &str, claim: String, out: &str) -> Result<AuditLog, CaseError> {
    Ok(AuditLog::parse(namespace, claim, out)?)
}

/// The files of snapshot `snapshot` in the case's repository, read with `restic ls` in a pod of
/// the case from the repository Secret the Backups use (the REST URL and password).
pub async fn snapshot_files(
    ctx: &CaseContext<'_>,
    pod_name: &str,
    snapshot: &str,
) -> Result<Vec<String>, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    // The repository Secret the Backups name: the same REST URL and password they use.
    let mut pod = restic::pod(
        pod_name,
        fixture::REPO_SECRET,
        &format!(
            "restic --no-cache ls {} && echo REHEARSAL-LS-DONE",
            restic::sh_quote(snapshot)
        ),
        &BTreeMap::new(),
    );
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("rehearsal.local/role".into(), "snapshot-probe".into());
    let out = fixture::run_pod_for_output(ctx, &pods, &pod).await?;
    if !out.contains("REHEARSAL-LS-DONE") {
        return Err(CaseError::evidence_absent(
            format!("restic snapshot {snapshot}"),
            format!("`restic ls` did not finish: {out}"),
        ));
    }
    Ok(out
        .lines()
        .filter(|l| l.starts_with('/'))
        .map(str::to_string)
        .collect())
}

/// The copy Job of a Backup as seen when its Backup ended.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct JobState {
    /// The Job's name in the case namespace.
    pub name: String,
    /// The Job object exists and is not being deleted.
    pub present: bool,
    /// Pods of the Job still running (`status.active`; 0 when the Job is gone).
    pub active: i32,
    /// Pods of the Job that succeeded (`status.succeeded`).
    pub succeeded: i32,
    /// `status.completionTime` (RFC 3339), when the Job completed.
    pub completion_time: Option<String>,
}

impl JobState {
    /// Drained: gone, or being deleted with no worker left running.
    pub fn drained(&self) -> bool {
        !self.present
    }
}

/// Reads Job `name` of the case's namespace.
pub async fn job_state(ctx: &CaseContext<'_>, name: &str) -> Result<JobState, CaseError> {
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let job = jobs.get_opt(name).await.map_err(CaseError::kube(
        "get Job",
        format!("{}/{name}", ctx.namespace),
    ))?;
    let status = job
        .as_ref()
        .and_then(|j| j.status.clone())
        .unwrap_or_default();
    Ok(JobState {
        name: name.into(),
        present: job
            .as_ref()
            .is_some_and(|j| j.metadata.deletion_timestamp.is_none()),
        active: status.active.unwrap_or(0),
        succeeded: status.succeeded.unwrap_or(0),
        completion_time: status.completion_time.map(|t| t.0.to_string()),
    })
}

/// `status/reason` of condition `type_` of a Backup (`None` when absent).
pub fn backup_condition(b: &Backup, type_: &str) -> Option<String> {
    b.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .map(|c| format!("{}/{}", c.status, c.reason))
}

/// A string field of a Backup by JSON pointer (`/status/consistency`, …).
pub fn backup_field(b: &Backup, pointer: &str) -> Option<String> {
    serde_json::to_value(b).ok().and_then(|v| {
        v.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// The Backup's phase as a string (`none` when it has none).
pub fn backup_phase(b: &Backup) -> String {
    backup_field(b, "/status/phase").unwrap_or_else(|| "none".into())
}

/// Compares PVC observations claim by claim (or, under the `harness-pvc-compare-zip` mutant,
/// by position) and records check `id`: every claim before kept its UID, and the claims that
/// appeared are exactly `expected_new`.
pub fn check_pvcs(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    id: &'static str,
    before: &[PvcObservation],
    after: &[PvcObservation],
    expected_new: &[String],
) -> PvcComparison {
    let comparison = if ctx.harness_mutant(HarnessMutant::PvcCompareZip) {
        pvc_table::compare_zip(before, after)
    } else {
        pvc_table::compare(before, after)
    };
    let mut wanted = expected_new.to_vec();
    wanted.sort();
    checks.check(
        id,
        comparison.only_expected_new(before, expected_new),
        &format!("pvcs of namespace {}", ctx.namespace),
        "claims before vs after (by name)",
        format!("every claim kept its UID; new claims exactly {wanted:?}"),
        &comparison,
    );
    comparison
}

#[cfg(test)]
mod tests {
    use super::*;

    // The log's judgement is tested where it lives (harness/evidence/tests/judge_audit.rs);
    // here, only what binds it to the harness and to the fixture game.

    #[test]
    fn an_absent_audit_log_fails_the_case_and_is_never_not_applicable() {
        for out in [
            format!("{MISSING_MARKER}\n"),
            String::new(),
            "broken\n".into(),
        ] {
            let e = parse_audit_log("ns", "mc-data".into(), &out).unwrap_err();
            assert!(
                matches!(e, CaseError::EvidenceAbsent { .. }),
                "{out:?}: {e}"
            );
            assert!(e.to_string().contains("ns/mc-data"), "{e}");
            assert_eq!(
                crate::context::verdict_of(&Err(e)).0,
                crate::evidence::bundle::Verdict::Failed
            );
        }
    }

    #[test]
    fn what_the_fixture_game_writes_is_what_the_judgement_reads() {
        let start = fixture_game::audit::AuditLine {
            event: "start".into(),
            time: "2026-12-04T10:00:00Z".into(),
            incarnation: "bwrap://g-1".into(),
            remote: None,
            command: None,
            reply: None,
            game_version: Some("1.0".into()),
            mode: Some("survival".into()),
        };
        let command = fixture_game::audit::AuditLine {
            event: "command".into(),
            time: "2026-12-04T10:00:01Z".into(),
            incarnation: "bwrap://g-1".into(),
            remote: Some("10.0.0.7:5000".into()),
            command: Some("save-off".into()),
            reply: Some("Automatic saving is now disabled".into()),
            game_version: None,
            mode: None,
        };
        let written: String = [&start, &command]
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect();
        let log = parse_audit_log("ns", "mc-data".into(), &written).unwrap();
        // Every field survives the trip: the reader drops nothing the writer records.
        let back: Vec<String> = log
            .lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap())
            .collect();
        let sent: Vec<String> = [&start, &command]
            .iter()
            .map(|l| serde_json::to_string(l).unwrap())
            .collect();
        assert_eq!(back, sent);
        assert_eq!(log.commands_of("bwrap://g-1"), vec!["save-off".to_string()]);
    }

    #[test]
    fn backup_fields_read_by_pointer_and_condition() {
        let b: Backup = serde_json::from_value(serde_json::json!({
            "apiVersion": "gameplane.dev/v1alpha1",
            "kind": "Backup",
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"serverRef": {"name": "mc"}},
            "status": {
                "phase": "Failed",
                "consistency": "Invalidated",
                "conditions": [
                    {"type": "Quiesced", "status": "False", "reason": "SourceChanged",
                     "message": "m", "lastTransitionTime": "2026-12-04T10:00:00Z"}
                ]
            }
        }))
        .unwrap();
        assert_eq!(backup_phase(&b), "Failed");
        assert_eq!(
            backup_field(&b, "/status/consistency").as_deref(),
            Some("Invalidated")
        );
        assert_eq!(backup_field(&b, "/status/nothing"), None);
        assert_eq!(
            backup_condition(&b, "Quiesced").as_deref(),
            Some("False/SourceChanged")
        );
        assert_eq!(backup_condition(&b, "Ready"), None);
        let mut none = b.clone();
        none.status = None;
        assert_eq!(backup_phase(&none), "none");
        assert_eq!(backup_condition(&none, "Quiesced"), None);
    }
}
