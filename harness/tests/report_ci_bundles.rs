//! The bundles CI actually produces, reported the way CI reports them.
//!
//! Each scenario test process writes its own bundle (`scenarios/src/lib.rs`: one per case and
//! architecture, all with the nextest run's id), and the workflow's report job passes every
//! uploaded bundle to `rehearse report`. A case nextest kills (SIGKILL after
//! `terminate-after`) leaves a bundle without `bundle.json`; it must still appear in the report,
//! as interrupted, instead of vanishing or breaking the report.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use rehearsal::evidence::bundle::{Bundle, BundleMeta, Verdict};
use rehearsal::evidence::observation::{StateChange, WaitObserved, WaitOutcome};
use rehearsal::evidence::pvc_table::{PvcObservation, PvcPhase};
use rehearsal::report::{self, MergeError, Report};
use serde_json::json;

const COMMIT: &str = "9a8b7c6d5e4f30112233445566778899aabbccdd";
/// The nextest run id prefix every case bundle of one job shares.
const RUN: &str = "3f2a9c1e";

/// A case's bundle as one scenario test process writes it.
fn case_bundle(root: &Path, arch: &str, case: &str, bucket: &str, verdict: Verdict) -> PathBuf {
    let dir = Bundle::dir_for(root, &format!("{RUN}-{case}"));
    let bundle = Bundle::create(
        &dir,
        BundleMeta::new(RUN, COMMIT, "reference-operator", "0.1.0", arch),
    )
    .unwrap();
    let rec = bundle.case(case, bucket).unwrap();
    rec.step(
        "baseline",
        json!({"pod": "survival-0", "podUID": format!("{arch}-{case}")}),
    )
    .unwrap();
    rec.uses_evidence("pod UID");
    let reason = (verdict != Verdict::Passed).then_some("the Backup succeeded on a torn copy");
    rec.finish_with_reason(verdict, reason).unwrap();
    bundle.finalize(false).unwrap();
    dir
}

/// Kills and reaps the child even when an assertion fails first.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const CHILD_ENV: &str = "REHEARSAL_KILLED_CASE_BUNDLE";
const CHILD_TEST: &str = "a_case_killed_from_outside_is_reported_as_interrupted";
/// What the child prints once its case's receipts are durable.
const RECORDED: &str = "rehearsal-test: case recorded, waiting to be killed";

/// The child: records a case up to a wait, like a scenario mid-case, then blocks on stdin
/// until it is killed.
fn run_child_case(dir: &str) -> ! {
    let bundle = Bundle::create(
        dir,
        BundleMeta::new(RUN, COMMIT, "reference-operator", "0.1.0", "arm64"),
    )
    .unwrap();
    let rec = bundle.case("stopped_server_backups", "backup").unwrap();
    rec.step("baseline", json!({"server": "survival"})).unwrap();
    rec.observe_pvcs(
        PvcPhase::Before,
        &[PvcObservation::classify(
            "survival",
            "survival-data",
            "0d1c2b3a-0000-4000-8000-000000000001",
            Some("pvc-0d1c2b3a"),
        )],
    )
    .unwrap();
    rec.wait(
        "await-backup-terminal",
        WaitObserved {
            object: "backups rh-ci/stopped".into(),
            expected: "backup Succeeded".into(),
            started_ms: 12,
            elapsed_ms: 340,
            events: 2,
            outcome: WaitOutcome::TimedOut,
            woken_by: "phase=Running".into(),
            transitions: vec![StateChange {
                at_ms: 338,
                state: "phase=Running".into(),
            }],
        },
    )
    .unwrap();
    // libtest may have printed the test's name on this line already.
    println!("\n{RECORDED}");
    let mut line = String::new();
    // The parent never writes: this blocks until the kill.
    let _ = std::io::stdin().read_line(&mut line);
    unreachable!("the parent kills this process")
}

/// A bundle whose process was SIGKILLed mid-case, as nextest's terminate-after leaves it.
fn killed_case_bundle(root: &Path) -> PathBuf {
    let dir = Bundle::dir_for(root, &format!("{RUN}-stopped_server_backups"));
    let child = Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("re-exec the test binary as the case process");
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().unwrap();
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains(RECORDED));
    assert!(ready, "the case process exited before recording its case");
    child.0.kill().expect("SIGKILL the case process");
    let status = child.0.wait().unwrap();
    assert!(!status.success(), "killed, not finished: {status}");
    assert!(!dir.join("bundle.json").exists());
    dir
}

fn load_all(dirs: &[PathBuf]) -> Vec<report::LoadedBundle> {
    dirs.iter()
        .map(|d| report::load(d).unwrap_or_else(|e| panic!("{} must load: {e}", d.display())))
        .collect()
}

#[test]
fn bundles_of_one_architecture_merge_one_per_case() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let dirs = vec![
        case_bundle(
            &r.join("a"),
            "amd64",
            "live_backup_agent_restart",
            "backup",
            Verdict::Passed,
        ),
        case_bundle(
            &r.join("a"),
            "amd64",
            "stopped_server_backups",
            "backup",
            Verdict::Passed,
        ),
        case_bundle(
            &r.join("b"),
            "arm64",
            "live_backup_agent_restart",
            "backup",
            Verdict::Passed,
        ),
        case_bundle(
            &r.join("b"),
            "arm64",
            "stopped_server_backups",
            "backup",
            Verdict::Failed,
        ),
    ];
    let merged = Report::merge(load_all(&dirs), &r.join("report")).expect("per-case bundles merge");
    assert_eq!(merged.arches, ["amd64", "arm64"]);
    assert_eq!(merged.runs.len(), 4);
    assert_eq!(merged.summaries.len(), 4);
    let names: Vec<&str> = merged.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["live_backup_agent_restart", "stopped_server_backups"]
    );
    for case in &merged.cases {
        assert_eq!(case.results.len(), 2, "{} on both arches", case.name);
    }
    assert_eq!(merged.disagreements.len(), 1);
    assert_eq!(merged.disagreements[0].case, "stopped_server_backups");
    let md = report::render(&merged, report::Format::Markdown);
    assert!(md.contains("- **amd64**: 2 passed"), "{md}");
    assert!(md.contains("- **arm64**: 1 passed, 1 failed"), "{md}");
    let junit = report::render(&merged, report::Format::Junit);
    let suites = junit.lines().find(|l| l.contains("<testsuites ")).unwrap();
    assert!(
        suites.contains("tests=\"4\"") && suites.contains("failures=\"1\""),
        "{junit}"
    );

    // The order bundles are given in does not change a byte.
    let mut reversed = dirs.clone();
    reversed.reverse();
    let again = Report::merge(load_all(&reversed), &r.join("report")).unwrap();
    assert_eq!(md, report::render(&again, report::Format::Markdown));
}

#[test]
fn the_same_case_twice_on_one_architecture_is_refused_naming_both_bundles() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let first = case_bundle(
        &r.join("a"),
        "amd64",
        "unpullable_candidate",
        "rollout",
        Verdict::Passed,
    );
    let rerun = case_bundle(
        &r.join("b"),
        "amd64",
        "unpullable_candidate",
        "rollout",
        Verdict::Failed,
    );
    let err =
        Report::merge(load_all(&[first.clone(), rerun.clone()]), &r.join("report")).unwrap_err();
    assert!(matches!(err, MergeError::DuplicateCase { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("unpullable_candidate")
            && msg.contains("amd64")
            && msg.contains(&first.display().to_string())
            && msg.contains(&rerun.display().to_string()),
        "{msg}"
    );
}

#[test]
fn a_case_killed_from_outside_is_reported_as_interrupted() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        run_child_case(&dir);
    }
    let root = tempfile::tempdir().unwrap();
    let killed = killed_case_bundle(root.path());

    let loaded = report::load(&killed).expect("a killed case's bundle loads from its journal");
    assert!(loaded.killed);
    assert!(loaded.summary.interrupted);
    let case = &loaded.summary.cases[..];
    assert_eq!(case.len(), 1);
    assert_eq!(case[0].name, "stopped_server_backups");
    assert_eq!(case[0].verdict, Verdict::Interrupted);
    let reason = case[0].reason.as_deref().unwrap();
    assert!(
        reason.starts_with("killed") && reason.contains("await-backup-terminal"),
        "{reason}"
    );

    // Through the command line, next to a finished bundle of the same architecture.
    let other = case_bundle(
        root.path(),
        "arm64",
        "live_backup_agent_restart",
        "backup",
        Verdict::Passed,
    );
    let out_dir = root.path().join("report");
    let out = Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .arg("report")
        .args([&killed, &other])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        md.contains(
            "| [`stopped_server_backups`](#stopped_server_backups) | backup | ⚠️ interrupted"
        ),
        "{md}"
    );
    assert!(md.contains("**killed**"), "{md}");
    assert!(md.contains("- **arm64**: 1 passed, 1 interrupted"), "{md}");
    let junit = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<error message=\"killed") && junit.contains("type=\"interrupted\""),
        "{junit}"
    );
}

#[test]
fn a_finished_run_whose_summary_was_removed_is_still_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = case_bundle(
        root.path(),
        "amd64",
        "http_only_candidate",
        "rollout",
        Verdict::Failed,
    );
    std::fs::remove_file(dir.join("bundle.json")).unwrap();
    let err = report::load(&dir).unwrap_err().to_string();
    assert!(err.contains("bundle.json is missing"), "{err}");
    assert!(!err.contains('\n'), "{err}");
}

/// The `run:` script of the workflow's report step, verbatim.
fn workflow_report_script() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.github/workflows/rehearsal.yml");
    let workflow: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let steps = workflow["jobs"]["report"]["steps"]
        .as_sequence()
        .expect("the report job has steps");
    steps
        .iter()
        .find(|s| s["name"].as_str() == Some("Render the report from every bundle"))
        .and_then(|s| s["run"].as_str())
        .expect("the report job's render step")
        .to_owned()
}

/// Runs the step as GitHub does (`bash --noprofile --norc -eo pipefail`), in `workspace`.
fn run_report_step(workspace: &Path, runner_temp: &Path) -> (std::process::Output, String) {
    let script = workspace.join("step.sh");
    std::fs::write(&script, workflow_report_script()).unwrap();
    let summary = workspace.join("step-summary.md");
    let _ = std::fs::remove_file(&summary);
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail"])
        .arg(&script)
        .current_dir(workspace)
        .env("RUNNER_TEMP", runner_temp)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let summary = std::fs::read_to_string(&summary).unwrap_or_default();
    (out, summary)
}

/// The report job's own script over the artifacts the bucket jobs upload: `bundle-<bucket>-
/// <arch>/` holding `reports/<run>-<case>/`, the bucket's JUnit and Kind's logs.
#[test]
fn the_workflow_report_step_reports_every_uploaded_bundle() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("work");
    let runner_temp = root.path().join("runner");
    std::fs::create_dir_all(runner_temp.join("build")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_rehearse"),
        runner_temp.join("build/rehearse"),
    )
    .unwrap();

    // No bundle at all: the step fails and says why.
    std::fs::create_dir_all(workspace.join("bundles")).unwrap();
    let (out, summary) = run_report_step(&workspace, &runner_temp);
    assert!(!out.status.success());
    assert!(summary.contains("No bundle was uploaded"), "{summary}");

    for (artifact, arch, cases) in [
        (
            "bundle-backup-amd64",
            "amd64",
            &["live_backup_agent_restart", "stopped_server_backups"][..],
        ),
        (
            "bundle-rollout-amd64",
            "amd64",
            &["unpullable_candidate"][..],
        ),
        (
            "bundle-backup-arm64",
            "arm64",
            &["live_backup_agent_restart"][..],
        ),
        (
            "bundle-rollout-arm64",
            "arm64",
            &["unpullable_candidate"][..],
        ),
    ] {
        let a = workspace.join("bundles").join(artifact);
        for case in cases {
            let bucket = if artifact.contains("backup") {
                "backup"
            } else {
                "rollout"
            };
            case_bundle(&a.join("reports"), arch, case, bucket, Verdict::Passed);
        }
        let bucket = artifact.split('-').nth(1).unwrap();
        let junit = a.join("target/nextest").join(bucket).join("junit.xml");
        std::fs::create_dir_all(junit.parent().unwrap()).unwrap();
        std::fs::write(&junit, "<testsuites/>\n").unwrap();
        std::fs::create_dir_all(a.join("kind-logs")).unwrap();
        std::fs::write(a.join("kind-logs/kind-version.txt"), "kind v0.29.0\n").unwrap();
    }
    // arm64's stopped_server_backups was killed by nextest: no bundle.json.
    killed_case_bundle(&workspace.join("bundles/bundle-backup-arm64/reports"));

    let (out, summary) = run_report_step(&workspace, &runner_temp);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(summary.starts_with("# Qualification report"), "{summary}");
    assert!(summary.contains("- **amd64**: 3 passed"), "{summary}");
    assert!(
        summary.contains("- **arm64**: 2 passed, 1 interrupted"),
        "{summary}"
    );
    assert!(summary.contains("**killed**"), "{summary}");
    assert!(workspace.join("report/report.html").is_file());
}

/// What CI does, for real and end to end on the embedded cluster: a bucket profile run of the
/// scenarios with real nextest (two cases, so two bundles of one architecture, written by the
/// test processes themselves), then the workflow's report step over them laid out as the
/// bucket job uploads them.
#[test]
fn a_real_bucket_run_is_reported_by_the_workflow_step() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("work");
    let runner_temp = root.path().join("runner");
    std::fs::create_dir_all(runner_temp.join("build")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_rehearse"),
        runner_temp.join("build/rehearse"),
    )
    .unwrap();
    let reports = workspace.join("bundles/bundle-backup-amd64/reports");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut run = Command::new(cargo);
    // `--workspace` with a package filter, not `-p`: the README's test command builds the whole
    // workspace, and only the same package selection resolves the same features, so the inner
    // run reuses that build instead of recompiling the scenarios' dependencies.
    run.args(["nextest", "run", "--locked", "--offline", "--workspace"])
        .args(["--profile", "backup"])
        .args([
            "-E",
            "package(=rehearsal-scenarios) & (test(=live_backup_agent_restart) | test(=stopped_server_backups))",
        ])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("REHEARSAL_REPORTS", &reports)
        .stdin(Stdio::null());
    // The profile this test was built with (e.g. `quick`), so the inner run reuses its build.
    if let Some(profile) =
        rehearsal::cli::buckets::cargo_profile_of(Path::new(env!("CARGO_BIN_EXE_rehearse")))
    {
        run.args(["--cargo-profile", &profile]);
    }
    // The outer nextest's variables (run id, profile, setup-script exports) are not this run's,
    // nor the ones cargo gives a test (package metadata, .cargo/config.toml's [env]): inherited,
    // they change the build's fingerprints and cargo rebuilds the workspace. `OUT_DIR` (the
    // harness build script's, given to its tests) is one: every build script that reads it
    // (ring, rustls) records it, and the inner cargo would rebuild from there up.
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let cargo_given = k.starts_with("CARGO_") && k != "CARGO_HOME" && k != "CARGO_TARGET_DIR";
        if k.starts_with("NEXTEST")
            || cargo_given
            || k == "RUSTC_BOOTSTRAP"
            || k == "OUT_DIR"
            || (k.starts_with("REHEARSAL_") && k != "REHEARSAL_REPORTS")
        {
            run.env_remove(&key);
        }
    }
    let out = run.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let bundles = std::fs::read_dir(&reports).unwrap().count();
    assert_eq!(bundles, 2, "one bundle per case");

    let (out, summary) = run_report_step(&workspace, &runner_temp);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let arch = rehearsal::backend::Arch::host();
    assert!(
        summary.contains(&format!("- **{arch}**: 2 passed")),
        "{summary}"
    );
    for case in ["live_backup_agent_restart", "stopped_server_backups"] {
        assert!(summary.contains(&format!("[`{case}`]")), "{summary}");
    }
}
