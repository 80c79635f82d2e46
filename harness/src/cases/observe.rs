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

/// Where the fixture game keeps its RCON audit log, relative to its world claim.
pub const AUDIT_LOG: &str = "logs/rcon-audit.jsonl";

/// The game's RCON audit log, as read from its world claim.
#[derive(Debug, Clone, Serialize)]
pub struct AuditLog {
    /// The claim the log was read from.
    pub claim: String,
    /// Its JSON lines in file order, one per RCON command or game start the game recorded.
    pub lines: Vec<fixture_game::audit::AuditLine>,
}

impl AuditLog {
    /// The incarnations that started, oldest first (one `start` line each).
    pub fn starts(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.event == "start")
            .map(|l| l.incarnation.clone())
            .collect()
    }

    /// The RCON commands incarnation `incarnation` received, in order.
    pub fn commands_of(&self, incarnation: &str) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.event == "command" && l.incarnation == incarnation)
            .filter_map(|l| l.command.clone())
            .collect()
    }

    /// When incarnation `incarnation` received its first `save-on` after its `nth` (0-based)
    /// `save-off`; `None` when it never did (or a time does not parse).
    pub fn save_on_after(&self, incarnation: &str, nth: usize) -> Option<jiff::Timestamp> {
        let mut offs = 0;
        let mut armed = false;
        for l in self
            .lines
            .iter()
            .filter(|l| l.event == "command" && l.incarnation == incarnation)
        {
            match l.command.as_deref() {
                Some("save-off") => {
                    armed = offs == nth;
                    offs += 1;
                }
                Some("save-on") if armed => return l.time.parse().ok(),
                _ => {}
            }
        }
        None
    }

    /// Every RCON command any incarnation received.
    pub fn all_commands(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.event == "command")
            .filter_map(|l| l.command.clone())
            .collect()
    }

    /// The `n`-th newest incarnation (0 = newest), or evidence absent when fewer started.
    pub fn nth_newest(&self, n: usize, why: &str) -> Result<String, CaseError> {
        let starts = self.starts();
        starts
            .len()
            .checked_sub(n + 1)
            .map(|i| starts[i].clone())
            .ok_or_else(|| {
                CaseError::evidence_absent(
                    format!("{} {AUDIT_LOG}", self.claim),
                    format!(
                        "{why}: {} incarnation(s) wrote a start line, {} needed",
                        starts.len(),
                        n + 1
                    ),
                )
            })
    }
}

/// Whether every `save-off` in `commands` was followed by a `save-on` (and there was at least
/// one `save-off`): cleanup reached this incarnation after each quiesce.
pub fn save_on_after_each_save_off(commands: &[String]) -> bool {
    let mut quiesced = 0;
    let mut pending = false;
    for c in commands {
        match c.as_str() {
            "save-off" => {
                quiesced += 1;
                pending = true;
            }
            "save-on" => pending = false,
            _ => {}
        }
    }
    quiesced > 0 && !pending
}

/// The number of `save-off` commands in `commands`.
pub fn save_offs(commands: &[String]) -> usize {
    commands.iter().filter(|c| *c == "save-off").count()
}

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
        &format!("f=/v/{claim}/{AUDIT_LOG}; if [ -f \"$f\" ]; then cat \"$f\"; else echo REHEARSAL-AUDIT-LOG-MISSING; fi"),
    )
    .await?;
    parse_audit_log(&ctx.namespace, claim, &out)
}

/// What the probe pod printed for the audit log of `claim` in `namespace`, judged: the
/// missing-file marker, a line that is not JSON, or a log without a start line is evidence
/// absent (naming the claim and the line), never an empty log that would pass.
pub fn parse_audit_log(namespace: &str, claim: String, out: &str) -> Result<AuditLog, CaseError> {
    if out.trim() == "REHEARSAL-AUDIT-LOG-MISSING" {
        return Err(CaseError::evidence_absent(
            format!("pvc {namespace}/{claim} {AUDIT_LOG}"),
            "the game's RCON audit log does not exist, so no absence of a command can be shown",
        ));
    }
    let mut lines = Vec::new();
    for (i, line) in out.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str(line).map_err(|e| {
            CaseError::evidence_absent(
                format!("pvc {namespace}/{claim} {AUDIT_LOG} line {}", i + 1),
                format!("not one JSON object per line ({e}): {line}"),
            )
        })?;
        lines.push(parsed);
    }
    let log = AuditLog { claim, lines };
    if log.starts().is_empty() {
        return Err(CaseError::evidence_absent(
            format!("pvc {namespace}/{} {AUDIT_LOG}", log.claim),
            "the audit log holds no start line, so it covers no incarnation",
        ));
    }
    Ok(log)
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
    let mut appeared = comparison.appeared.clone();
    appeared.sort();
    let mut wanted = expected_new.to_vec();
    wanted.sort();
    checks.check(
        id,
        comparison.identities_kept() && appeared == wanted && !before.is_empty(),
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

    /// An audit log as the fixture game writes it: two incarnations, a backup's quiesce and
    /// cleanup reaching the first, a second quiesce never undone on the second.
    const LOG: &str = r#"{"event":"start","time":"2026-12-04T10:00:00Z","incarnation":"bwrap://g-1","game_version":"1.0","mode":"survival"}
{"event":"command","time":"2026-12-04T10:00:01Z","incarnation":"bwrap://g-1","remote":"10.0.0.7:5000","command":"save-off","reply":"ok"}
{"event":"command","time":"2026-12-04T10:00:02Z","incarnation":"bwrap://g-1","remote":"10.0.0.7:5000","command":"save-all flush","reply":"ok"}
{"event":"command","time":"2026-12-04T10:00:05Z","incarnation":"bwrap://g-1","remote":"10.0.0.7:5000","command":"save-on","reply":"ok"}

{"event":"start","time":"2026-12-04T10:01:00Z","incarnation":"bwrap://g-2","game_version":"1.0","mode":"survival"}
{"event":"command","time":"2026-12-04T10:01:01Z","incarnation":"bwrap://g-2","remote":"10.0.0.7:5000","command":"save-off","reply":"ok"}
"#;

    fn log() -> AuditLog {
        parse_audit_log("ns", "mc-data".into(), LOG).unwrap()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_recorded_audit_log_reads_per_incarnation() {
        let log = log();
        assert_eq!(log.starts(), strings(&["bwrap://g-1", "bwrap://g-2"]));
        assert_eq!(
            log.commands_of("bwrap://g-1"),
            strings(&["save-off", "save-all flush", "save-on"])
        );
        assert_eq!(log.commands_of("bwrap://g-2"), strings(&["save-off"]));
        assert_eq!(log.all_commands().len(), 4);
        assert_eq!(
            log.save_on_after("bwrap://g-1", 0),
            Some("2026-12-04T10:00:05Z".parse().unwrap())
        );
        // No second save-off on the first incarnation; no save-on at all on the second.
        assert_eq!(log.save_on_after("bwrap://g-1", 1), None);
        assert_eq!(log.save_on_after("bwrap://g-2", 0), None);
        assert_eq!(log.nth_newest(0, "x").unwrap(), "bwrap://g-2");
        assert_eq!(log.nth_newest(1, "x").unwrap(), "bwrap://g-1");
        let e = log.nth_newest(2, "the original").unwrap_err();
        assert!(
            e.to_string()
                .contains("the original: 2 incarnation(s) wrote a start line, 3 needed"),
            "{e}"
        );
        assert_eq!(
            verdict_of_absent(e),
            crate::evidence::bundle::Verdict::Failed
        );
    }

    fn verdict_of_absent(e: CaseError) -> crate::evidence::bundle::Verdict {
        crate::context::verdict_of(&Err(e)).0
    }

    #[test]
    fn a_save_on_counts_only_after_the_save_off_it_answers() {
        let log = parse_audit_log(
            "ns",
            "c".into(),
            r#"{"event":"start","time":"t","incarnation":"a"}
{"event":"command","time":"2026-12-04T10:00:00Z","incarnation":"a","command":"save-on"}
{"event":"command","time":"2026-12-04T10:00:01Z","incarnation":"a","command":"save-off"}
{"event":"command","time":"2026-12-04T10:00:02Z","incarnation":"b","command":"save-on"}
{"event":"command","time":"2026-12-04T10:00:03Z","incarnation":"a","command":"save-off"}
{"event":"command","time":"2026-12-04T10:00:04Z","incarnation":"a","command":"save-on"}
"#,
        )
        .unwrap();
        // The save-on before the first save-off and the other incarnation's do not answer it;
        // the one after the second save-off answers the second, not the first.
        assert_eq!(log.save_on_after("a", 0), None);
        assert_eq!(
            log.save_on_after("a", 1),
            Some("2026-12-04T10:00:04Z".parse().unwrap())
        );
    }

    #[test]
    fn cleanup_after_every_quiesce() {
        let yes = |c: &[&str]| save_on_after_each_save_off(&strings(c));
        assert!(yes(&["save-off", "save-all", "save-on"]));
        assert!(yes(&["save-off", "save-on", "save-off", "save-on"]));
        assert!(!yes(&["save-off", "save-on", "save-off"]));
        assert!(!yes(&["save-off"]));
        // No quiesce at all is not "cleaned up after it".
        assert!(!yes(&[]));
        assert!(!yes(&["save-on"]));
        assert_eq!(
            save_offs(&strings(&["save-off", "x", "save-off", "save-on"])),
            2
        );
        assert_eq!(save_offs(&[]), 0);
    }

    #[test]
    fn an_audit_log_that_cannot_speak_is_evidence_absent_never_empty() {
        for (out, says) in [
            ("REHEARSAL-AUDIT-LOG-MISSING\n", "does not exist"),
            ("", "no start line"),
            ("\n\n", "no start line"),
            (
                r#"{"event":"command","time":"t","incarnation":"a","command":"save-off"}"#,
                "no start line",
            ),
            ("{\"event\":\"start\"\nnot json\n", "line 1"),
        ] {
            let e = parse_audit_log("ns", "mc-data".into(), out).unwrap_err();
            assert!(
                matches!(e, CaseError::EvidenceAbsent { .. }),
                "{out:?}: {e}"
            );
            let msg = e.to_string();
            assert!(msg.contains(says), "{out:?}: {msg}");
            assert!(msg.contains("ns/mc-data"), "{out:?}: {msg}");
            assert_eq!(
                verdict_of_absent(e),
                crate::evidence::bundle::Verdict::Failed
            );
        }
        let e = parse_audit_log(
            "ns",
            "c".into(),
            "{\"event\":\"start\",\"time\":\"t\",\"incarnation\":\"a\"}\n\nbroken\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
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
