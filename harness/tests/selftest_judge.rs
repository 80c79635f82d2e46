//! The self-test's rule: a mutant is caught by a case only when the case failed on the check
//! that targets it — never on a timeout, a setup error, absent evidence or another check alone.

use std::time::Duration;

use rehearsal::cases::CaseResult;
use rehearsal::cli::run::judge;
use rehearsal::evidence::bundle::{KillMatrix, Verdict};

fn result(verdict: Verdict, reason: Option<&str>, failed: &[&str]) -> CaseResult {
    CaseResult {
        case: "live_backup_same_pod_game_restart",
        verdict,
        reason: reason.map(str::to_string),
        failed_checks: failed.iter().map(|c| c.to_string()).collect(),
        duration: Duration::from_secs(1),
    }
}

#[test]
fn caught_only_on_the_targeted_check() {
    let cell = judge(
        &result(
            Verdict::Failed,
            Some("check completed-reason: …"),
            &["completed-reason", "copy-job-drained"],
        ),
        "completed-reason",
    );
    assert!(cell.caught, "{cell:?}");
    assert_eq!(cell.describe(), "caught on completed-reason");
}

#[test]
fn a_timeout_is_not_a_catch() {
    let cell = judge(
        &result(
            Verdict::Failed,
            Some(
                "backup rh-x/live: timed out after 90s waiting for phase Succeeded or Failed; last observed: phase Running",
            ),
            &[],
        ),
        "not-consistent-success",
    );
    assert!(!cell.caught);
    assert!(cell.describe().contains("timed out"), "{}", cell.describe());
}

#[test]
fn another_check_alone_is_not_a_catch() {
    let cell = judge(
        &result(
            Verdict::Failed,
            Some("check fault-in-place: …"),
            &["fault-in-place"],
        ),
        "not-consistent-success",
    );
    assert!(!cell.caught);
    assert_eq!(cell.describe(), "missed (failed on fault-in-place)");
}

#[test]
fn a_pass_is_not_a_catch_and_a_survivor_is_named() {
    let cell = judge(
        &result(Verdict::Passed, None, &[]),
        "snapshot-excludes-mods",
    );
    assert!(!cell.caught);
    let mut m = KillMatrix::default();
    m.record_cell(
        "backup-includes-mods",
        "live_backup_restore_round_trip",
        cell,
    );
    m.record_cell(
        "restore-overlays",
        "live_backup_restore_round_trip",
        judge(
            &result(Verdict::Failed, None, &["post-backup-file-gone"]),
            "post-backup-file-gone",
        ),
    );
    assert_eq!(m.survivors(), vec!["backup-includes-mods"]);
}

#[test]
fn bare_boolean_cells_of_older_bundles_still_load() {
    let m: KillMatrix =
        serde_json::from_str(r#"{"mutants":{"m":{"c":true,"d":{"caught":false,"check":"x"}}}}"#)
            .unwrap();
    assert!(m.mutants["m"]["c"].caught);
    assert_eq!(m.mutants["m"]["d"].check, "x");
    assert_eq!(m.survivors(), vec!["m"]);
}
