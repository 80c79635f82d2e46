//! The rehearsal cases of CONTRACT.md, as library code: the nextest scenarios, `rehearse run`
//! and `rehearse selftest` all run these same functions.
//!
//! Each case gets its own namespace (labelled with the run id), writes named steps as receipts
//! into the run's bundle, records a PVC UID table where claims matter, and on failure collects
//! artifacts (events, logs, objects) before its namespace is removed.

pub mod artifacts;
pub mod backup;
pub mod context;
pub mod fixture;
pub mod rollout;

use std::time::Duration;

use crate::backend::Backend;
use crate::evidence::bundle::{Bundle, Verdict};
use crate::namespaces::{self, Owner};

pub use context::{CaseContext, CaseError};

/// One case of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// The nextest test name and the case's name in bundles.
    pub name: &'static str,
    pub bucket: &'static str,
    /// The row of CONTRACT.md's case table it proves.
    pub proves: &'static str,
    /// Reference-operator mutants this case must catch (`rehearse selftest`).
    pub catches: &'static [&'static str],
}

/// Every case, in the order of CONTRACT.md's table.
pub const CASES: &[Case] = &[
    Case {
        name: "live_backup_same_pod_game_restart",
        bucket: "backup",
        proves: "live backup, same-pod game restart: pod UID same, game containerID changed and restartCount +1; Backup not a consistent success; no save-on reached the new incarnation",
        catches: &["ignore-incarnation"],
    },
    Case {
        name: "live_backup_agent_restart",
        bucket: "backup",
        proves: "live backup, agent restart: game incarnation unchanged; Backup Succeeded, consistency Quiesced",
        catches: &[],
    },
    Case {
        name: "live_backup_pod_replaced_during_preparation",
        bucket: "backup",
        proves: "live backup, pod replaced during preparation: Backup fails; cleanup never reaches the successor pod",
        catches: &["unquiesce-any-pod"],
    },
    Case {
        name: "live_backup_game_not_running_yet",
        bucket: "backup",
        proves: "live backup, game not running yet: preparation waits within its deadline, then records the running incarnation and succeeds",
        catches: &[],
    },
    Case {
        name: "live_backup_older_agent_without_identity_route",
        bucket: "backup",
        proves: "live backup, older agent without identity route: fails at the preflight; the game's RCON audit log shows no save-off",
        catches: &["no-identity-preflight"],
    },
    Case {
        name: "stopped_server_backups",
        bucket: "backup",
        proves: "stopped-server backups: two backups and restores while the pod is absent; no agent call; suspend unchanged; data returned",
        catches: &["stopped-source-needs-agent", "restore-overlays"],
    },
    Case {
        name: "stopped_server_backup_started_mid_copy",
        bucket: "backup",
        proves: "stopped-server backup, server started mid-copy: the copy is invalidated, not reported consistent",
        catches: &[],
    },
    Case {
        name: "live_backup_restore_round_trip",
        bucket: "backup",
        proves: "a plain live backup and restore round trip: Succeeded with a snapshot; a copy into an unusable repository fails; files newer than the backup do not survive; markers and PVC UIDs kept",
        catches: &[
            "restore-overlays",
            "restore-recreates-pvc",
            "succeed-on-failed-copy",
        ],
    },
    Case {
        name: "unpullable_candidate",
        bucket: "rollout",
        proves: "unpullable candidate: clone fails ImagePull within a bounded time; batch halts; fleet pod UIDs unchanged",
        catches: &[],
    },
    Case {
        name: "http_only_candidate",
        bucket: "rollout",
        proves: "HTTP-only candidate: serves the world marker over HTTP but fails the real Minecraft handshake; journal keeps only the baseline receipt; promotion blocked",
        catches: &[],
    },
    Case {
        name: "format_change_compatible_rollback",
        bucket: "rollout",
        proves: "format-changing update, compatible rollback: PVC UIDs unchanged; save readable directly after re-pinning",
        catches: &[],
    },
    Case {
        name: "format_change_restore_required_rollback",
        bucket: "rollout",
        proves: "format-changing update, restore-required rollback: restore from the pre-candidate snapshot; candidate-only marker gone; primary and extra world values back; mods keep the clone's value; PVC UIDs unchanged",
        catches: &[
            "restore-overlays",
            "restore-recreates-pvc",
            "backup-skips-extras",
        ],
    },
];

/// Looks a case up by name.
pub fn find(name: &str) -> Option<&'static Case> {
    CASES.iter().find(|c| c.name == name)
}

/// The case's body.
async fn body(case: &Case, ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    match case.name {
        "live_backup_same_pod_game_restart" => backup::live_backup_same_pod_game_restart(ctx).await,
        "live_backup_agent_restart" => backup::live_backup_agent_restart(ctx).await,
        "live_backup_pod_replaced_during_preparation" => {
            backup::live_backup_pod_replaced_during_preparation(ctx).await
        }
        "live_backup_game_not_running_yet" => backup::live_backup_game_not_running_yet(ctx).await,
        "live_backup_older_agent_without_identity_route" => {
            backup::live_backup_older_agent_without_identity_route(ctx).await
        }
        "stopped_server_backups" => backup::stopped_server_backups(ctx).await,
        "stopped_server_backup_started_mid_copy" => {
            backup::stopped_server_backup_started_mid_copy(ctx).await
        }
        "live_backup_restore_round_trip" => backup::live_backup_restore_round_trip(ctx).await,
        "unpullable_candidate" => rollout::unpullable_candidate(ctx).await,
        "http_only_candidate" => rollout::http_only_candidate(ctx).await,
        "format_change_compatible_rollback" => {
            rollout::format_change_compatible_rollback(ctx).await
        }
        "format_change_restore_required_rollback" => {
            rollout::format_change_restore_required_rollback(ctx).await
        }
        other => Err(CaseError::Setup(format!(
            "no case named {other:?}; `rehearse run --list` shows them"
        ))),
    }
}

/// How a case ended.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub case: &'static str,
    pub verdict: Verdict,
    /// One line: why it failed, when it did.
    pub reason: Option<String>,
    pub duration: Duration,
}

/// Options for running one case.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub run_id: String,
    /// Keep the case's namespace (and objects) when it fails.
    pub keep_on_failure: bool,
    /// The whole case's ceiling (its waits have their own, smaller bounds).
    pub case_bound: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            run_id: "local".into(),
            keep_on_failure: false,
            case_bound: Duration::from_secs(600),
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
    let started = std::time::Instant::now();
    let recorder = bundle.case(case.name, case.bucket)?;
    let client = backend.client();
    let owner = Owner::current(&options.run_id);
    let ns = match namespaces::create(&client, case.name, &owner).await {
        Ok(ns) => ns.metadata.name.unwrap_or_default(),
        Err(e) => {
            let reason = format!("could not create the case namespace: {e}");
            recorder.finish_with_reason(Verdict::Failed, Some(&reason))?;
            return Ok(CaseResult {
                case: case.name,
                verdict: Verdict::Failed,
                reason: Some(reason),
                duration: started.elapsed(),
            });
        }
    };
    let ctx = CaseContext::new(backend, ns.clone(), recorder);
    let outcome = match tokio::time::timeout(options.case_bound, body(case, &ctx)).await {
        Ok(r) => r,
        Err(_) => Err(CaseError::Setup(format!(
            "the case did not finish within {:?}; its last receipts show the step it was in",
            options.case_bound
        ))),
    };
    let (verdict, reason) = match &outcome {
        Ok(()) => (Verdict::Passed, None),
        Err(e) => (Verdict::Failed, Some(e.to_string())),
    };
    if verdict == Verdict::Failed {
        // Evidence first, cleanup after: a failure's artifacts must outlive its namespace.
        artifacts::collect(&ctx, backend).await;
    }
    let CaseContext { recorder, .. } = ctx;
    recorder.finish_with_reason(verdict, reason.as_deref())?;
    let keep = verdict == Verdict::Failed && options.keep_on_failure;
    if !keep {
        let _ = namespaces::delete(&client, &ns).await;
        let _ = fixture::cleanup_cluster_scoped(&client, &ns).await;
        let _ = backend.remove_repository(&fixture::repo_path(&ns)).await;
    }
    Ok(CaseResult {
        case: case.name,
        verdict,
        reason,
        duration: started.elapsed(),
    })
}
