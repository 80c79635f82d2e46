//! Cases place their faults the way the exploration does — the cluster holds the operation at
//! the case's moment until the fault has landed — so no verdict ever asks to "rerun the case":
//! a case whose moment never comes fails on the operator, saying what never came.

use rehearsal::evidence::bundle::Verdict;
use rehearsal::run::{self, Cluster, RunConfig};

/// Under a mutant whose Backup of a stopped server fails before any copy, the case that starts
/// the server mid-copy never gets its moment (the copy's snapshot save): it fails, and says the
/// operator never made the copy it waits for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_case_whose_moment_never_comes_fails_on_the_operator() {
    let reports = tempfile::tempdir().unwrap();
    let outcome = run::run(RunConfig {
        cluster: Cluster::Embedded,
        cases: vec![rehearsal::cases::find("stopped_server_backup_started_mid_copy").unwrap()],
        reports: reports.path().to_path_buf(),
        run_id: run::new_run_id(),
        keep_on_failure: false,
        parallel: 1,
        mutant: Some("stopped-source-needs-agent".into()),
        progress: false,
        case_bound: run::CASE_BOUND,
        operator_profile: None,
    })
    .await
    .unwrap();
    let r = &outcome.results[0];
    assert_eq!(r.verdict, Verdict::Failed, "{r:?}");
    let reason = r.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("expected POST snapshots of repository")
            && reason.contains("the operator never made the copy the case waits for"),
        "{reason}"
    );
    assert!(!reason.contains("rerun"), "{reason}");
}

/// The wording and the racing helpers are gone from every case: nothing a case runs — its body,
/// its context, its faults, its waits — can say "rerun the case". (`rehearse receipts verify`
/// still tells a reader to rerun a case whose bundle was damaged: that is about the bundle, not
/// a verdict.)
#[test]
fn no_case_can_ask_to_be_rerun() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack: Vec<std::path::PathBuf> = [
        "cases",
        "fixture",
        "explore",
        "qualify",
        "context.rs",
        "faults.rs",
        "wait.rs",
    ]
    .iter()
    .map(|p| src.join(p))
    .collect();
    let mut found = Vec::new();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for needle in [
            "rerun the case",
            "fault_landed_before_completion",
            "copy_under_way",
        ] {
            if text.contains(needle) {
                found.push(format!("{}: {needle}", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
