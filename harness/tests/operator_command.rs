//! Your operator through `--operator-command`: the reference operator, copied out of `target/`
//! and started by a command Rehearsal did not build the path of, gives the verdicts the
//! built-in path gives; a catalogue mutant passed as that command's own argument is caught by
//! the exploration on its row; a command that exits at once or never serves is one line, exit
//! 2, with nothing run. With `--operator-manifests` (your chart as `helm template` renders it)
//! the command runs as the ServiceAccount those manifests name, held to their RBAC: writes only
//! through the games-namespace Role copied into each case namespace. Each runs the real
//! `rehearse` binary on the embedded cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The reference operator copied into a directory outside `target/` (kept while the test runs).
fn operator_outside_target() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let program = PathBuf::from(rehearsal::deploy::reference_operator::program());
    assert!(
        program.is_file(),
        "build the workspace's binaries first: {program:?}"
    );
    let copy = dir.path().join("my-operator");
    std::fs::copy(&program, &copy).expect("copy the operator");
    assert!(!copy.starts_with(env!("CARGO_MANIFEST_DIR")));
    (dir, copy)
}

fn rehearse(reports: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(args)
        .arg("--reports")
        .arg(reports)
        .env_remove("REHEARSAL_OPERATOR_COMMAND")
        .env_remove("REHEARSAL_OPERATOR_MANIFESTS")
        .env_remove("REHEARSAL_REFERENCE_OPERATOR")
        .output()
        .expect("run rehearse")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The directory of the one bundle under `reports`.
fn bundle_dir(reports: &Path) -> PathBuf {
    std::fs::read_dir(reports)
        .expect("reports")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("bundle.json").is_file())
        .expect("a bundle")
}

/// The one bundle under `reports`.
fn bundle(reports: &Path) -> serde_json::Value {
    let dir = bundle_dir(reports);
    serde_json::from_slice(&std::fs::read(dir.join("bundle.json")).expect("read")).expect("json")
}

/// `rehearse run` of the reference operator copied out of `target/`, started by a command and
/// named `reference-operator@1.2.3`, with `extra` arguments.
fn run_my_operator(reports: &Path, extra: &[&str]) -> Output {
    let (_dir, op) = operator_outside_target();
    let command = format!("{} --kubeconfig {{kubeconfig}}", op.display());
    let mut args = vec![
        "run",
        "--operator-command",
        &command,
        "--operator",
        "reference-operator@1.2.3",
    ];
    args.extend_from_slice(extra);
    rehearse(reports, &args)
}

#[test]
fn every_case_passes_with_the_reference_operator_started_by_a_command() {
    let (_dir, op) = operator_outside_target();
    let reports = tempfile::tempdir().unwrap();
    let command = format!("{} --kubeconfig {{kubeconfig}}", op.display());
    let out = rehearse(reports.path(), &["run", "--operator-command", &command]);
    assert!(out.status.success(), "{}", text(&out));
    let cases = rehearsal::cases::CASES.len();
    assert!(
        text(&out).contains(&format!("{cases} passed, 0 failed")),
        "{}",
        text(&out)
    );
    let b = bundle(reports.path());
    assert_eq!(b["operator"]["name"], "reference-operator", "{b:#}");
    assert_eq!(b["operator"]["version"], env!("CARGO_PKG_VERSION"), "{b:#}");
}

#[test]
fn a_mutant_in_the_command_is_caught_on_its_row_and_the_command_without_it_holds() {
    let (_dir, op) = operator_outside_target();
    let explore = |extra: &str| {
        let reports = tempfile::tempdir().unwrap();
        let command = format!("{} --kubeconfig {{kubeconfig}}{extra}", op.display());
        let out = rehearse(
            reports.path(),
            &[
                "explore",
                "--operation",
                "qualify-module",
                "--fault",
                "registry-other-bytes",
                "--operator-command",
                &command,
                "--operator",
                "reference-operator@1.2.3",
            ],
        );
        (out, bundle(reports.path()))
    };
    let (out, b) = explore(" --mutant layer-hash-skipped");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("qualify-module.get_bundle_fixture-game.1.registry-other-bytes")
            && all.contains("violated: outcome")
            && all.contains("1 schedules: 0 ok, 1 violated"),
        "{all}"
    );
    assert_eq!(b["operator"]["name"], "reference-operator", "{b:#}");
    assert_eq!(b["operator"]["version"], "1.2.3", "{b:#}");

    let (out, _) = explore("");
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("1 schedules: 1 ok"), "{}", text(&out));
}

/// Exactly one line on stderr naming `needles`, exit 2, and no bundle written.
fn refused(out: &Output, reports: &Path, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(out.status.code(), Some(2), "{}", text(out));
    assert_eq!(lines.len(), 1, "one line: {}", text(out));
    for n in needles {
        assert!(lines[0].contains(n), "{:?} does not name {n:?}", lines[0]);
    }
    // The log it names outlives the cluster that failed to come up.
    if let Some((_, rest)) = lines[0].split_once("its log ") {
        let path = rest.split(' ').next().unwrap_or_default();
        assert!(
            std::path::Path::new(path).is_file(),
            "{path} is gone: {}",
            lines[0]
        );
    }
    let bundles = std::fs::read_dir(reports).map_or(0, |d| d.count());
    assert_eq!(bundles, 0, "nothing run: {}", text(out));
}

#[test]
fn a_command_that_exits_at_once_or_never_serves_is_one_line_and_nothing_runs() {
    let reports = tempfile::tempdir().unwrap();
    let out = rehearse(
        reports.path(),
        &[
            "run",
            "--operator-command",
            "sh -c 'echo unknown flag: --kubeconfig >&2; exit 3'",
            "--operator",
            "broken@0",
        ],
    );
    refused(
        &out,
        reports.path(),
        &[
            "operator command `sh -c",
            "exited with code 3 before it was ready",
            "unknown flag: --kubeconfig",
        ],
    );

    let out = rehearse(
        reports.path(),
        &[
            "explore",
            "--operation",
            "backup",
            "--operator-command",
            "sh -c 'echo listening on nothing; exec sleep 600'",
            "--operator",
            "silent@0",
        ],
    );
    refused(
        &out,
        reports.path(),
        &[
            "operator command `sh -c",
            "was not ready within",
            "nor watched gameservers, backups, restores",
            "listening on nothing",
        ],
    );

    let out = rehearse(
        reports.path(),
        &["run", "--operator-command", "./no/such/manager"],
    );
    refused(&out, reports.path(), &["\"./no/such/manager\" not found"]);
}

/// Manifests shaped as Gameplane's chart renders its operator's: cluster-wide reads, writes only
/// through a Role in its games namespace, a Deployment, a CRD and a Service the embedded cluster
/// skips.
const CHART_SHAPED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/operator_manifests/chart-shaped.yaml"
);

#[test]
fn every_case_passes_as_the_service_account_of_your_manifests_held_to_their_rbac() {
    let reports = tempfile::tempdir().unwrap();
    let out = run_my_operator(reports.path(), &["--operator-manifests", CHART_SHAPED]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains(&format!(
            "{} passed, 0 failed",
            rehearsal::cases::CASES.len()
        )),
        "{all}"
    );
    assert!(
        all.contains(
            "the operator runs as ServiceAccount gameplane-system/gameplane-operator, gameplane-games/gameplane-operator-manage copied into each case namespace; its Deployment's volumes at /etc/gameplane/agent-ca; 10 objects created; skipped (the command or the embedded cluster stands in for them): Deployment gameplane-system/gameplane-operator, CustomResourceDefinition networkcaptures.gameplane.local, Service gameplane-system/gameplane-operator-metrics"
        ),
        "{all}"
    );
}

#[test]
fn a_write_your_manifests_do_not_grant_is_forbidden_to_your_operator() {
    let scratch = tempfile::tempdir().unwrap();
    let chart = std::fs::read_to_string(CHART_SHAPED).unwrap();
    let jobs = "resources: [jobs]\n    verbs: [create, delete]";
    assert!(chart.contains(jobs));
    let withheld = scratch.path().join("no-job-create.yaml");
    let chart = chart.replace(jobs, "resources: [jobs]\n    verbs: [delete]");
    std::fs::write(&withheld, chart).unwrap();
    let reports = scratch.path().join("reports");
    let out = run_my_operator(
        &reports,
        &[
            "--case",
            "live_backup_agent_restart",
            "--operator-manifests",
            withheld.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let log =
        bundle_dir(&reports).join("cases/live_backup_agent_restart/artifacts/backend/operator.log");
    let log =
        std::fs::read_to_string(log).expect("the failed case's artifacts hold the operator's log");
    assert!(
        log.contains(
            "User \"system:serviceaccount:gameplane-system:gameplane-operator\" cannot create resource \"jobs\" in API group \"batch\""
        ),
        "{}",
        text(&out)
    );
}

#[test]
fn an_operator_taken_for_gameplanes_without_manifests_or_with_bad_ones_is_one_line() {
    let (_dir, op) = operator_outside_target();
    let command = format!("{} --kubeconfig {{kubeconfig}}", op.display());
    let reports = tempfile::tempdir().unwrap();
    let out = rehearse(
        reports.path(),
        &[
            "run",
            "--operator-command",
            &command,
            "--operator",
            "gameplane@v0.9.1",
        ],
    );
    refused(
        &out,
        reports.path(),
        &[
            "gameplane",
            "taken for Gameplane's",
            "pass --operator-manifests FILE",
        ],
    );

    let out = rehearse(
        reports.path(),
        &[
            "run",
            "--operator-command",
            &command,
            "--operator-manifests",
            "/no/such/chart.yaml",
        ],
    );
    refused(
        &out,
        reports.path(),
        &[
            "--operator-manifests /no/such/chart.yaml: cannot read it",
            "helm template",
        ],
    );

    let out = rehearse(
        reports.path(),
        &["run", "--operator-manifests", CHART_SHAPED],
    );
    refused(&out, reports.path(), &["pass --operator-command too"]);
}

/// The command runs sandboxed as its Deployment's container: the Secret the Deployment mounts is
/// at its mount path (a directory the host lacks), the host is read-only, and it is PID 1's
/// child in a PID namespace of its own. A wrapper checks all three, then becomes the operator:
/// the case passes only if they hold.
#[test]
fn your_command_runs_sandboxed_with_its_deployments_secret_at_its_mount_path() {
    let (_dir, op) = operator_outside_target();
    let reports = tempfile::tempdir().unwrap();
    let check = format!(
        "test \"$(cat /etc/gameplane/agent-ca/ca.crt)\" = 'REHEARSAL TEST CA' || {{ echo no agent CA >&2; exit 4; }}; \
         if touch /usr/rehearsal-operator-wrote-here 2>/dev/null; then echo host writable >&2; exit 5; fi; \
         test $$ -lt 10 || {{ echo not in its own PID namespace: $$ >&2; exit 6; }}; \
         exec {} --kubeconfig {{kubeconfig}}",
        op.display()
    );
    let command = shlex::try_join(["sh", "-c", check.as_str()]).unwrap();
    let out = rehearse(
        reports.path(),
        &[
            "run",
            "--case",
            "live_backup_agent_restart",
            "--operator-command",
            &command,
            "--operator",
            "reference-operator@1.2.3",
            "--operator-manifests",
            CHART_SHAPED,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("1 passed, 0 failed"), "{}", text(&out));
}
