//! `rehearse run` records the harness's own commit, fixed when it was built, wherever it is
//! started: a run from outside the repository names the same commit as `rehearse qualify`.
//! Piped, it prints a `[n/N]` line as each case ends and a closing `N passed, N failed` line.

use std::process::Command;

#[test]
fn a_run_outside_the_repository_records_the_build_commit() {
    let cwd = tempfile::tempdir().unwrap();
    let reports = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .current_dir(cwd.path())
        .env_remove("GITHUB_SHA")
        .args([
            "run",
            "--case",
            "member_tracking_default_version",
            "--reports",
        ])
        .arg(reports.path())
        .output()
        .expect("run rehearse");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("[1/1] passed       member_tracking_default_version"),
        "{stdout}"
    );
    assert!(stdout.contains("\n1 passed, 0 failed\n"), "{stdout}");
    let bundle = stdout
        .lines()
        .find_map(|l| l.strip_prefix("bundle: "))
        .unwrap_or_else(|| panic!("no bundle line: {stdout}"));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{bundle}/bundle.json")).unwrap()).unwrap();
    let commit = rehearsal::qualify::identity::HARNESS_COMMIT;
    assert_ne!(commit, "unknown", "the workspace is a git checkout");
    assert_eq!(meta["commit"], commit, "{meta}");
}
