//! The command line: the mutant listing and one-line errors for bad input.

use std::process::Command;

fn operator() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reference-operator"))
}

#[test]
fn list_mutants_prints_name_case_and_difference_for_each() {
    let out = operator().arg("--list-mutants").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<_> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ignore-incarnation",
            "stopped-source-needs-agent",
            "unquiesce-any-pod",
            "restore-overlays",
            "restore-recreates-pvc",
            "backup-skips-extras",
            "backup-extras-from-server-only",
            "succeed-on-failed-copy",
            "no-identity-preflight",
            "wrong-failure-reason",
            "invalidated-without-draining",
            "no-unquiesce-after-success",
            "no-unquiesce-after-failure",
            "exit-reported-as-unquiesced",
            "stopped-labelled-quiesced",
            "idle-asleep-treated-live",
            "backup-wakes-idle-server",
            "mid-copy-start-ignored",
            "restore-latest-snapshot",
            "backup-includes-mods",
            "no-preparation-wait",
            "restore-skips-extras",
            "agent-restart-invalidates",
            "source-container-unrecorded",
            "replaced-pod-ignored",
            "preflight-skipped-pending",
            "agent-down-invalidates",
            "early-save-on",
            "restore-failure-reported-succeeded",
            "restore-failure-wipes-claims",
            "restore-failure-keeps-suspended",
            "pull-failure-unreported",
            "copy-failure-misreported",
            "failed-copy-left-running",
            "success-without-completed",
            "preflight-failure-misreported",
            "mid-copy-start-misreported",
            "raw-copy-labelled-quiesced",
            "deadline-in-memory",
            "cleanup-lost-on-restart",
            "finalizer-removed-before-cleanup",
            "legacy-treated-live-bound",
            "canary-blocks-restore",
            "bundle-digest-unchecked",
            "bundle-pin-against-layer",
            "conflict-taken-for-exists",
            "first-list-trusted",
            "source-event-awaited",
            "layer-hash-skipped",
        ]
    );
}

#[test]
fn an_unknown_mutant_is_a_one_line_error_naming_the_fix() {
    let out = operator().args(["--mutant", "nope"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("unknown mutant \"nope\"") && err.contains("--list-mutants"),
        "{err}"
    );
}

#[test]
fn an_unreadable_kubeconfig_is_a_one_line_error() {
    let out = operator()
        .args(["--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("/nonexistent/kubeconfig") && err.contains("--kubeconfig"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn the_readme_documents_every_mutant() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let out = operator().arg("--list-mutants").output().unwrap();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let name = line.split('\t').next().unwrap();
        assert!(
            readme.contains(&format!("| `{name}` |")),
            "README.md lacks mutant {name}"
        );
    }
}
