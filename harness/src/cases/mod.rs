//! The rehearsal cases of CONTRACT.md, as library code: the nextest scenarios, `rehearse run`
//! and `rehearse selftest` all run these same functions.
//!
//! Each case gets its own namespace (labelled with the run id), writes named steps as receipts
//! into the run's bundle, records a PVC UID table where claims matter, and on failure collects
//! artifacts (events, logs, objects) before its namespace is removed.

pub mod batches;
pub mod candidate;
pub mod checks;
pub mod live;
pub mod module_bundle;
pub mod obligation;
pub mod restore;
pub mod rollout;
pub mod stopped;

use std::time::Duration;

use crate::backend::Backend;
use crate::evidence::bundle::{Bundle, Verdict};
use crate::namespaces::{self, Owner};
use crate::{artifacts, fixture};

pub use crate::context::{CaseContext, CaseError};

/// One case of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// The nextest test name and the case's name in bundles.
    pub name: &'static str,
    /// The CI bucket that runs it (its `[[bucket]]` in `scenarios/buckets.toml`; a test keeps them equal).
    pub bucket: &'static str,
    /// The row of CONTRACT.md's case table it proves.
    pub proves: &'static str,
}

/// Every case, in the order of CONTRACT.md's table.
pub const CASES: &[Case] = &[
    Case {
        name: "live_backup_same_pod_game_restart",
        bucket: "backup",
        proves: "live backup, same-pod game restart: pod UID same, game containerID changed and restartCount +1; Backup not a consistent success; no save-on reached the new incarnation",
    },
    Case {
        name: "live_backup_agent_restart",
        bucket: "backup",
        proves: "live backup, agent restart: game incarnation unchanged; Backup Succeeded, consistency Quiesced",
    },
    Case {
        name: "live_backup_agent_down",
        bucket: "backup",
        proves: "live backup, agent down during the copy: the agent crash-loops while the copy runs, the game is unchanged; Backup Succeeded, consistency Quiesced; save-on reaches the original once the agent is back",
    },
    Case {
        name: "live_backup_pod_replaced_during_preparation",
        bucket: "backup",
        proves: "live backup, pod replaced during preparation: Backup fails; cleanup never reaches the successor pod",
    },
    Case {
        name: "live_backup_job_create_conflicted",
        bucket: "backup",
        proves: "live backup, the copy Job's creation refused by a conflict (409): the operator creates it again; Backup Succeeded, consistency Quiesced",
    },
    Case {
        name: "live_backup_operator_restarted_onto_stale_view",
        bucket: "backup",
        proves: "live backup, operator restarted onto a stale view (its cache's lists as of the Backup's creation until it writes): it reads what it acts on; Backup Succeeded, consistency Quiesced",
    },
    Case {
        name: "live_backup_source_event_withheld",
        bucket: "backup",
        proves: "live backup, the watch event of the operator's source-recording write withheld from its watches: it requeues its own next pass; Backup Succeeded, consistency Quiesced",
    },
    Case {
        name: "live_backup_game_not_running_yet",
        bucket: "backup",
        proves: "live backup, game not running yet: preparation waits within its deadline, then records the running incarnation and succeeds",
    },
    Case {
        name: "live_backup_older_agent_without_identity_route",
        bucket: "backup",
        proves: "live backup, older agent without identity route: fails at the preflight; the game's RCON audit log shows no save-off",
    },
    Case {
        name: "stopped_server_backups",
        bucket: "backup",
        proves: "stopped-server backups: two backups and restores while the pod is absent; no agent call; suspend unchanged; data returned",
    },
    Case {
        name: "idle_asleep_stopped_server_backup",
        bucket: "backup",
        proves: "idle-asleep stopped-server backup: an idle-asleep server (no pod, idle intent kept) is backed up like a suspended one: consistency Stopped, no agent call, idle intent unchanged, data returned",
    },
    Case {
        name: "stopped_server_backup_started_mid_copy",
        bucket: "backup",
        proves: "stopped-server backup, server started mid-copy: the copy is invalidated, not reported consistent",
    },
    Case {
        name: "live_backup_restore_round_trip",
        bucket: "backup",
        proves: "a plain live backup and restore round trip: Succeeded with a snapshot; a copy into an unusable repository fails; files newer than the backup do not survive; markers and PVC UIDs kept",
    },
    Case {
        name: "restore_fails_on_broken_repository",
        bucket: "backup",
        proves: "restore fails on a broken repository: the Restore ends Failed (CopyFailed), the claims are untouched, PVC UIDs kept, the server returns to its prior run state",
    },
    Case {
        name: "live_backup_operator_restart",
        bucket: "backup",
        proves: "live backup, operator restart mid-copy: the operator is killed after quiesce during the copy and restarted: the Backup ends (Succeeded/Quiesced or Failed with a reason), the copy is drained, save-on reaches the original exactly once",
    },
    Case {
        name: "live_backup_deleted_mid_copy",
        bucket: "backup",
        proves: "live backup deleted mid-copy: the Backup object goes only after the copy is drained and save-on reached the original; nothing left behind",
    },
    Case {
        name: "raw_copy_without_quiesce",
        bucket: "backup",
        proves: "raw copy: quiesce false: Succeeded, consistency not Quiesced, no agent call, no RCON command from the backup",
    },
    Case {
        name: "preparation_deadline_expires",
        bucket: "backup",
        proves: "preparation deadline: the game never runs: Failed at the deadline with its reason, no save-off, the deadline kept across an operator restart",
    },
    Case {
        name: "legacy_preparation_fails_conservatively",
        bucket: "backup",
        proves: "legacy preparation: a Backup in the older status shape, then the new operator: Failed, never consistent, cleanup paid",
    },
    Case {
        name: "unpullable_candidate",
        bucket: "rollout",
        proves: "unpullable candidate: clone fails ImagePull within a bounded time; batch halts; fleet pod UIDs unchanged",
    },
    Case {
        name: "restore_after_halted_canary",
        bucket: "rollout",
        proves: "restore after a halted canary: a halted qualification, then a Restore of the source: Succeeded, data back, the journal still holds the halt",
    },
    Case {
        name: "candidate_module_layer_other_bytes",
        bucket: "rollout",
        proves: "module bundle layer served with other bytes: the operator hashes the layer and refuses it (DigestMismatch, no GameTemplate); halted at the module bundle gate before any join; fleet untouched",
    },
    Case {
        name: "candidate_module_digest_mismatch",
        bucket: "rollout",
        proves: "module bundle digest mismatch: halted at the module bundle gate before any join; fleet untouched; both digests in the evidence",
    },
    Case {
        name: "http_only_candidate",
        bucket: "rollout",
        proves: "HTTP-only candidate: serves the world marker over HTTP but fails the real Minecraft handshake; journal keeps only the baseline receipt; promotion blocked",
    },
    Case {
        name: "format_change_compatible_rollback",
        bucket: "rollout",
        proves: "format-changing update, compatible rollback: PVC UIDs unchanged; save readable directly after re-pinning",
    },
    Case {
        name: "format_change_restore_required_rollback",
        bucket: "rollout",
        proves: "format-changing update, restore-required rollback: restore from the pre-candidate snapshot; candidate-only marker gone; primary and extra world values back; mods keep the clone's value; PVC UIDs unchanged",
    },
    Case {
        name: "member_tracking_default_version",
        bucket: "rollout",
        proves: "member tracking the default version: the preflight refuses the rollout before any backup or clone, naming the member; nothing is touched",
    },
    Case {
        name: "extra_world_declared_on_template",
        bucket: "rollout",
        proves: "an extra world declared only on the template: a format-changing candidate's backup, read-back and restore-required rollback cover it on every member and the clone, and the fleet is promoted",
    },
    Case {
        name: "halt_at_later_batch",
        bucket: "rollout",
        proves: "halt at a later batch: the canary and batch 1 pass, a batch-2 member fails its gate; batch 1 stays promoted, later members untouched, the journal records the failing member's evidence and 1 batch promoted",
    },
    Case {
        name: "failed_format_batch_restored_from_its_backups",
        bucket: "rollout",
        proves: "a format-changing candidate whose batch fails on one member: every member of the batch is restored from the backup taken before the batch moved and re-pinned, and runs its own version again",
    },
    Case {
        name: "batch_of_three_gated_together",
        bucket: "rollout",
        proves: "a batch of three gated together: every member passes image, join and save on its own server, their gates overlap in time, and the batch is promoted",
    },
    Case {
        name: "batch_member_join_failure_put_back",
        bucket: "rollout",
        proves: "a format-changing candidate's batch of three whose second member fails its join gate: the batch halts, and every member is restored from its pre-promotion backup and put back on its version",
    },
    Case {
        name: "format_batch_two_member_cannot_read_its_world",
        bucket: "rollout",
        proves: "a format-changing candidate whose batch-2 member cannot read its own world: batch 1 stays promoted with its way back, the member is restored from its own backup (its world digests as before) and put back, the batch-3 member is untouched; every moved member was backed up before it was gated",
    },
    Case {
        name: "candidate_refuses_login",
        bucket: "rollout",
        proves: "candidate that answers status but refuses login: the join gate fails at login, not at status; halted, no promotion receipt",
    },
    Case {
        name: "candidate_stalls_configuration",
        bucket: "rollout",
        proves: "candidate that logs in but never finishes configuration: the join gate fails in the configuration phase, not earlier; halted, no promotion receipt",
    },
];

/// Looks a case up by name.
pub fn find(name: &str) -> Option<&'static Case> {
    CASES.iter().find(|c| c.name == name)
}

/// The case's body.
async fn body(case: &Case, ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    match case.name {
        "live_backup_same_pod_game_restart" => live::live_backup_same_pod_game_restart(ctx).await,
        "live_backup_agent_restart" => live::live_backup_agent_restart(ctx).await,
        "live_backup_agent_down" => live::live_backup_agent_down(ctx).await,
        "restore_fails_on_broken_repository" => {
            restore::restore_fails_on_broken_repository(ctx).await
        }
        "live_backup_pod_replaced_during_preparation" => {
            live::live_backup_pod_replaced_during_preparation(ctx).await
        }
        "live_backup_game_not_running_yet" => live::live_backup_game_not_running_yet(ctx).await,
        "live_backup_job_create_conflicted" => live::live_backup_job_create_conflicted(ctx).await,
        "live_backup_source_event_withheld" => live::live_backup_source_event_withheld(ctx).await,
        "live_backup_operator_restarted_onto_stale_view" => {
            live::live_backup_operator_restarted_onto_stale_view(ctx).await
        }
        "live_backup_older_agent_without_identity_route" => {
            live::live_backup_older_agent_without_identity_route(ctx).await
        }
        "stopped_server_backups" => stopped::stopped_server_backups(ctx).await,
        "idle_asleep_stopped_server_backup" => {
            stopped::idle_asleep_stopped_server_backup(ctx).await
        }
        "stopped_server_backup_started_mid_copy" => {
            stopped::stopped_server_backup_started_mid_copy(ctx).await
        }
        "live_backup_restore_round_trip" => restore::live_backup_restore_round_trip(ctx).await,
        "live_backup_operator_restart" => obligation::live_backup_operator_restart(ctx).await,
        "live_backup_deleted_mid_copy" => obligation::live_backup_deleted_mid_copy(ctx).await,
        "raw_copy_without_quiesce" => obligation::raw_copy_without_quiesce(ctx).await,
        "preparation_deadline_expires" => obligation::preparation_deadline_expires(ctx).await,
        "legacy_preparation_fails_conservatively" => {
            obligation::legacy_preparation_fails_conservatively(ctx).await
        }
        "unpullable_candidate" => candidate::unpullable_candidate(ctx).await,
        "http_only_candidate" => candidate::http_only_candidate(ctx).await,
        "restore_after_halted_canary" => candidate::restore_after_halted_canary(ctx).await,
        "candidate_module_digest_mismatch" => {
            module_bundle::candidate_module_digest_mismatch(ctx).await
        }
        "candidate_module_layer_other_bytes" => {
            module_bundle::candidate_module_layer_other_bytes(ctx).await
        }
        "format_change_compatible_rollback" => {
            batches::format_change_compatible_rollback(ctx).await
        }
        "format_change_restore_required_rollback" => {
            batches::format_change_restore_required_rollback(ctx).await
        }
        "member_tracking_default_version" => batches::member_tracking_default_version(ctx).await,
        "extra_world_declared_on_template" => batches::extra_world_declared_on_template(ctx).await,
        "halt_at_later_batch" => batches::halt_at_later_batch(ctx).await,
        "failed_format_batch_restored_from_its_backups" => {
            batches::failed_format_batch_restored_from_its_backups(ctx).await
        }
        "batch_of_three_gated_together" => batches::batch_of_three_gated_together(ctx).await,
        "batch_member_join_failure_put_back" => {
            batches::batch_member_join_failure_put_back(ctx).await
        }
        "format_batch_two_member_cannot_read_its_world" => {
            batches::format_batch_two_member_cannot_read_its_world(ctx).await
        }
        "candidate_refuses_login" => candidate::candidate_refuses_login(ctx).await,
        "candidate_stalls_configuration" => candidate::candidate_stalls_configuration(ctx).await,
        other => Err(CaseError::Setup(format!(
            "no case named {other:?}; `rehearse run --list` shows them"
        ))),
    }
}

/// How a case ended.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case's name ([`Case::name`]).
    pub case: &'static str,
    /// Passed, failed, or not applicable on this cluster: the verdict its bundle records.
    pub verdict: Verdict,
    /// One line: why it failed, when it did.
    pub reason: Option<String>,
    /// The named checks that failed (empty when it passed or ended for another reason).
    pub failed_checks: Vec<String>,
    /// Wall time of the case, from its start through its cleanup.
    pub duration: Duration,
}

/// Options for running one case.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The run's id: labels the case namespace so a later run's sweep can tell its leftovers.
    pub run_id: String,
    /// Keep the case's namespace (and objects) when it fails.
    pub keep_on_failure: bool,
    /// The whole case's ceiling (its waits have their own, smaller bounds).
    pub case_bound: Duration,
    /// A weakened harness gate (self-test only).
    pub harness_mutant: Option<crate::context::HarnessMutant>,
    /// The operator the cluster is expected to run; the case reads what it runs either way.
    pub expected_operator: Option<crate::deploy::profile::OperatorProfile>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            run_id: "local".into(),
            keep_on_failure: false,
            case_bound: Duration::from_secs(600),
            harness_mutant: None,
            expected_operator: None,
        }
    }
}

/// Runs `case` against `backend`, writing its receipts into `bundle`.
pub async fn run_case(
    backend: &dyn Backend,
    bundle: &Bundle,
    case: &'static Case,
    options: &RunOptions,
) -> Result<CaseResult, crate::evidence::bundle::BundleError> {
    let ended = run_body(backend, bundle, case.name, case.bucket, options, |ctx| {
        Box::pin(body(case, ctx))
    })
    .await?;
    Ok(CaseResult {
        case: case.name,
        verdict: ended.verdict,
        reason: ended.reason,
        failed_checks: ended.failed_checks,
        duration: ended.duration,
    })
}

/// How a body run by [`run_body`] ended.
#[derive(Debug, Clone)]
pub struct BodyEnded {
    /// The verdict its receipts record.
    pub verdict: Verdict,
    /// One line: why it failed, when it did.
    pub reason: Option<String>,
    /// The named checks that failed.
    pub failed_checks: Vec<String>,
    /// Wall time, from its start through its cleanup.
    pub duration: Duration,
}

/// Runs `body` as case `name` of `bucket` against `backend`: its own namespace, the operator's
/// profile read first, the case bound, artifacts on failure, its verdict recorded in `bundle`,
/// its namespace removed. `rehearse run` runs the table's cases through it, `rehearse explore`
/// its schedules.
pub async fn run_body<F>(
    backend: &dyn Backend,
    bundle: &Bundle,
    name: &str,
    bucket: &str,
    options: &RunOptions,
    body: F,
) -> Result<BodyEnded, crate::evidence::bundle::BundleError>
where
    F: for<'c> FnOnce(&'c CaseContext<'c>) -> futures::future::BoxFuture<'c, Result<(), CaseError>>,
{
    let started = std::time::Instant::now();
    let recorder = bundle.case(name, bucket)?;
    let client = backend.client();
    let owner = Owner::current(&options.run_id);
    let ns = match namespaces::create(&client, name, &owner).await {
        Ok(ns) => ns.metadata.name.unwrap_or_default(),
        Err(e) => {
            let reason = format!("could not create the case namespace: {e}");
            recorder.finish_with_reason(Verdict::Failed, Some(&reason))?;
            return Ok(BodyEnded {
                verdict: Verdict::Failed,
                reason: Some(reason),
                failed_checks: Vec::new(),
                duration: started.elapsed(),
            });
        }
    };
    let mut ctx = CaseContext::new(backend, ns.clone(), recorder);
    ctx.harness_mutant = options.harness_mutant;
    // What the cases give the operator depends on which operator the cluster runs.
    let prepared = async {
        // An operator the cluster does not run as a Deployment (e.g. a process beside it, as
        // `rehearse cluster up --embedded` runs the reference operator) cannot be read: the
        // profile the user named then decides, and without one the case says what to pass.
        let profile = match crate::deploy::profile::detect(backend).await {
            Ok(operator) => {
                crate::deploy::profile::check_expected(options.expected_operator, &operator)
                    .map_err(CaseError::Setup)?;
                operator.profile
            }
            Err(e) => options.expected_operator.ok_or_else(|| {
                CaseError::Setup(format!(
                    "which operator the cluster runs: {e}; if it runs outside the cluster, name it with --operator-profile reference|gameplane"
                ))
            })?,
        };
        // An operator that writes only where a Role lets it (Gameplane's chart, your
        // manifests) gets that Role in the case namespace, as the chart grants more namespaces.
        let grants = crate::deploy::profile::write_grants(backend.kind(), profile)
            .map_err(CaseError::Setup)?;
        for grant in &grants {
            crate::deploy::profile::grant_writes(&client, &ns, grant)
                .await
                .map_err(|e| CaseError::Setup(e.to_string()))?;
        }
        Ok::<_, CaseError>(profile)
    }
    .await;
    let outcome = match prepared {
        Err(e) => Err(e),
        Ok(profile) => {
            ctx.operator = profile;
            match tokio::time::timeout(options.case_bound, body(&ctx)).await {
                Ok(r) => r,
                Err(_) => Err(CaseError::Setup(format!(
                    "the case did not finish within {:?}; its last receipts show the step it was in",
                    options.case_bound
                ))),
            }
        }
    };
    let (verdict, reason, failed_checks) = crate::context::verdict_of(&outcome);
    if verdict == Verdict::Failed {
        // Evidence first, cleanup after: a failure's artifacts must outlive its namespace.
        artifacts::collect(&ctx, backend).await;
    }
    let CaseContext { recorder, .. } = ctx;
    recorder.finish_with_checks(verdict, reason.as_deref(), &failed_checks)?;
    let keep = verdict == Verdict::Failed && options.keep_on_failure;
    if !keep {
        let _ = namespaces::delete(&client, &ns).await;
        let _ = fixture::cleanup_cluster_scoped(&client, &ns).await;
        let _ = backend
            .remove_repository(fixture::repository_name(&ns))
            .await;
    }
    Ok(BodyEnded {
        verdict,
        reason,
        failed_checks,
        duration: started.elapsed(),
    })
}
