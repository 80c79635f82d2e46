//! Runs one rehearsal case as a nextest test: picks the cluster from the environment, writes a
//! bundle for the case, and fails the test with the case's one-line reason.
//!
//! - `REHEARSAL_CLUSTER`: `embedded` (default; this test process starts its own embedded cluster
//!   and reference operator) or `kind`/`existing` (the cluster the nextest setup script booted:
//!   `REHEARSAL_KUBECONFIG` and `REHEARSAL_CONTEXT`; on Kind the test process only reads the
//!   kubeconfig the setup script exported once, it never runs `kind`). See
//!   `rehearsal::run::Cluster::from_nextest_env`.
//! - `REHEARSAL_REPORTS`: where bundles go (default `target/rehearsal-bundles/`); each test
//!   writes `<reports>/<run-id>-<case>/`.
//! - `REHEARSAL_MUTANT`: deploy the reference operator with this mutant (embedded only).
//! - `REHEARSAL_EMBEDDED_REACH`: how the harness reaches a pod on the embedded cluster. Unset,
//!   the scenarios take `port-forward` — the path Kind and existing clusters take — so the code
//!   the Kind path runs is what these tests run; `pod-ip` selects the loopback shortcut that
//!   `rehearse run` uses (`harness/tests/core_reach.rs` shows both give the same verdicts).
//! - `REHEARSAL_OPERATOR` (`reference` or `gameplane`): the operator the cluster must run. The
//!   bundle names the operator and version read from the cluster
//!   (`rehearsal::deploy::profile::detect`), never this variable.

use std::path::PathBuf;

use rehearsal::backend::embedded::{Embedded, EmbeddedOptions, REACH_ENV, ReachMode};
use rehearsal::backend::{Backend, BackendError};
use rehearsal::cases::{self, RunOptions};
use rehearsal::deploy::embedded::EmbeddedDeploy;
use rehearsal::deploy::profile::{self, OperatorProfile};
use rehearsal::evidence::bundle::{Bundle, BundleMeta, Verdict};
use rehearsal::run::{self, Cluster};

fn cluster_from_env() -> Cluster {
    Cluster::from_nextest_env(|var| std::env::var(var).ok()).unwrap_or_else(|e| panic!("{e}"))
}

fn reports_root() -> PathBuf {
    if let Ok(dir) = std::env::var("REHEARSAL_REPORTS") {
        return dir.into();
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("rehearsal-bundles")
}

/// Runs `case` and panics (failing the test) unless it passed.
///
/// The case runs on its own thread with a large stack: the cases' futures are deep, and the
/// test harness's threads have a small default stack.
pub fn rehearse(case: &str) {
    let case = case.to_string();
    let outcome = std::thread::Builder::new()
        .name(format!("case {case}"))
        .stack_size(64 * 1024 * 1024)
        .spawn(move || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_stack_size(16 * 1024 * 1024)
                .enable_all()
                .build()
                .expect("a tokio runtime")
                .block_on(rehearse_async(&case))
        })
        .expect("spawn the case thread")
        .join();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The cluster's backend; an embedded one reaches pods through port-forward unless
/// `REHEARSAL_EMBEDDED_REACH` names a mode.
async fn start_backend(
    cluster: &Cluster,
    mutant: Option<&str>,
) -> Result<Box<dyn Backend>, BackendError> {
    if !matches!(cluster, Cluster::Embedded) {
        return run::start_backend(cluster, mutant).await;
    }
    let reach = match std::env::var_os(REACH_ENV) {
        Some(_) => ReachMode::from_env()?,
        None => ReachMode::PortForward,
    };
    let backend = Embedded::up(EmbeddedOptions {
        deploy: EmbeddedDeploy::reference_operator(mutant.map(str::to_string)).shared(),
        reach: Some(reach),
        ..Default::default()
    })
    .await?;
    Ok(Box::new(backend))
}

async fn rehearse_async(case: &str) {
    let case = cases::find(case)
        .unwrap_or_else(|| panic!("no case named {case:?} in rehearsal::cases::CASES"));
    let cluster = cluster_from_env();
    let shared = !matches!(cluster, Cluster::Embedded);
    let mutant = std::env::var("REHEARSAL_MUTANT").ok();
    let run_id = std::env::var("NEXTEST_RUN_ID")
        .map(|id| id[..8.min(id.len())].to_string())
        .unwrap_or_else(|_| run::new_run_id());
    let dir = Bundle::dir_for(reports_root(), &format!("{run_id}-{}", case.name));
    let arch = rehearsal::backend::Arch::host().as_str().to_string();
    let backend = start_backend(&cluster, mutant.as_deref())
        .await
        .unwrap_or_else(|e| panic!("cannot start the cluster: {e}"));
    // The operator the cluster runs and its version, read from it; the deploy step's
    // REHEARSAL_OPERATOR is what it must be.
    let expected =
        OperatorProfile::from_env(|var| std::env::var(var).ok()).unwrap_or_else(|e| panic!("{e}"));
    let operator = profile::detect(backend.as_ref())
        .await
        .unwrap_or_else(|e| panic!("which operator the cluster runs: {e}"));
    profile::check_expected(expected, &operator).unwrap_or_else(|e| panic!("{e}"));
    let bundle = Bundle::create(
        &dir,
        BundleMeta::new(
            &run_id,
            &run::current_commit(),
            &operator.name,
            &operator.version,
            &arch,
        ),
    )
    .unwrap_or_else(|e| panic!("cannot create the bundle at {}: {e}", dir.display()));
    let options = RunOptions {
        run_id: run_id.clone(),
        keep_on_failure: false,
        case_bound: run::CASE_BOUND,
        harness_mutant: None,
        expected_operator: expected,
    };
    let result = cases::run_case(backend.as_ref(), &bundle, case, &options).await;
    // A shared cluster (Kind, existing) belongs to the whole run: never delete it here.
    let _ = backend.teardown(shared).await;
    let summary = bundle.finalize(false);
    let result =
        result.unwrap_or_else(|e| panic!("evidence for {} could not be written: {e}", case.name));
    if let Err(e) = summary {
        panic!(
            "the bundle at {} could not be finalized: {e}",
            dir.display()
        );
    }
    assert_eq!(
        result.verdict,
        Verdict::Passed,
        "case {} {}: {} (bundle: {})",
        case.name,
        result.verdict,
        result.reason.as_deref().unwrap_or(""),
        dir.display()
    );
}
