//! Bad input to `rehearse`: every case gets a one-line error that names the cause and the fix,
//! a non-zero exit, and never a panic. Each runs the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rehearse() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rehearse"));
    c.env_remove("REHEARSAL_KUBECONFIG")
        .env_remove("REHEARSAL_CONTEXT");
    c
}

/// Asserts a one-line `rehearse: …` error containing every `needles` (case-insensitive) and
/// a non-zero exit.
fn assert_one_line_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        !out.status.success(),
        "expected a non-zero exit, got {:?}; stderr: {stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "panicked: {stderr}");
    assert_eq!(
        lines.len(),
        1,
        "expected exactly one line on stderr, got: {stderr:?}"
    );
    assert!(
        lines[0].starts_with("rehearse: "),
        "not a rehearse error line: {stderr:?}"
    );
    let lower = lines[0].to_lowercase();
    for n in needles {
        assert!(
            lower.contains(&n.to_lowercase()),
            "the error {:?} does not mention {n:?}",
            lines[0]
        );
    }
}

fn run(args: &[&str]) -> Output {
    rehearse().args(args).output().expect("run rehearse")
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    write(
        dir,
        "kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\ncontexts:\n- name: rehearsal-test\n  context:\n    cluster: c\n    user: u\ncurrent-context: rehearsal-test\nusers:\n- name: u\n  user: {{}}\n"
        ),
    )
}

#[test]
fn unknown_subcommand() {
    assert_one_line_error(&run(&["frobnicate"]), &["frobnicate", "--help"]);
}

#[test]
fn unknown_bucket() {
    assert_one_line_error(
        &run(&["run", "--bucket", "nope"]),
        &["unknown bucket", "nope", "backup"],
    );
}

#[test]
fn unknown_case() {
    assert_one_line_error(
        &run(&["run", "--case", "nope"]),
        &["unknown case", "nope", "--list"],
    );
}

#[test]
fn unknown_mutant() {
    assert_one_line_error(
        &run(&["selftest", "--mutant", "nope"]),
        &["unknown mutant", "ignore-incarnation"],
    );
}

#[test]
fn existing_cluster_without_kubeconfig() {
    assert_one_line_error(&run(&["run", "--cluster", "existing"]), &["--kubeconfig"]);
}

#[test]
fn existing_cluster_with_missing_kubeconfig() {
    assert_one_line_error(
        &run(&[
            "run",
            "--cluster",
            "existing",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "--context",
            "x",
        ]),
        &["does not exist", "--kubeconfig"],
    );
}

#[test]
fn existing_cluster_without_a_named_context() {
    let dir = tmp();
    let kc = kubeconfig(dir.path(), "http://127.0.0.1:9");
    assert_one_line_error(
        &run(&[
            "run",
            "--cluster",
            "existing",
            "--kubeconfig",
            kc.to_str().unwrap(),
        ]),
        &["--context", "never"],
    );
}

#[test]
fn existing_cluster_context_that_was_not_named_in_the_kubeconfig() {
    let dir = tmp();
    let kc = kubeconfig(dir.path(), "http://127.0.0.1:9");
    let reports = dir.path().join("reports");
    assert_one_line_error(
        &run(&[
            "run",
            "--cluster",
            "existing",
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--context",
            "prod",
            "--reports",
            reports.to_str().unwrap(),
        ]),
        &["prod"],
    );
}

#[test]
fn unreachable_cluster() {
    let dir = tmp();
    // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    let kc = kubeconfig(dir.path(), "http://127.0.0.1:9");
    let reports = dir.path().join("reports");
    assert_one_line_error(
        &run(&[
            "run",
            "--cluster",
            "existing",
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--context",
            "rehearsal-test",
            "--reports",
            reports.to_str().unwrap(),
        ]),
        &["127.0.0.1:9"],
    );
}

#[test]
fn kind_not_installed() {
    let dir = tmp();
    let out = rehearse()
        .env("PATH", dir.path())
        .args([
            "run",
            "--cluster",
            "kind",
            "--reports",
            dir.path().join("r").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, &["kind", "install"]);
}

#[test]
fn bubblewrap_not_installed() {
    let dir = tmp();
    let out = rehearse()
        .env("PATH", dir.path())
        .args(["run", "--reports", dir.path().join("r").to_str().unwrap()])
        .output()
        .unwrap();
    assert_one_line_error(&out, &["bwrap", "scripts/setup.sh"]);
}

/// The embedded cluster's module bundle registry is Debian's docker-registry: without it the
/// run stops before any case, naming the package.
#[test]
fn docker_registry_not_installed() {
    let dir = tmp();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for program in ["bwrap", "restic"] {
        let real = which(program);
        std::os::unix::fs::symlink(real, bin.join(program)).unwrap();
    }
    let out = rehearse()
        .env("PATH", &bin)
        .env_remove("REHEARSAL_DOCKER_REGISTRY")
        .args(["run", "--reports", dir.path().join("r").to_str().unwrap()])
        .output()
        .unwrap();
    assert_one_line_error(&out, &["docker-registry", "scripts/setup.sh"]);
}

fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} is not installed: run scripts/setup.sh"))
}

#[test]
fn module_bundle_that_is_not_pinned_by_digest() {
    for value in [
        "modules/fixture-game:1.1",
        "modules/fixture-game:1.1@sha256:abc",
        "fixture-game:1.1@sha256:0000000000000000000000000000000000000000000000000000000000000000",
    ] {
        assert_one_line_error(
            &run(&qualify(&["--module-bundle", value])),
            &["SOURCE/MODULE:VERSION@sha256:"],
        );
    }
}

#[test]
fn unwritable_reports_directory() {
    let dir = tmp();
    let file = write(dir.path(), "not-a-dir", "x");
    let reports = file.join("reports");
    assert_one_line_error(
        &run(&["run", "--reports", reports.to_str().unwrap()]),
        &["reports directory", "--reports"],
    );
}

#[test]
fn report_of_a_missing_bundle() {
    let dir = tmp();
    assert_one_line_error(
        &run(&[
            "report",
            dir.path().join("nope").to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ]),
        &["nope"],
    );
}

#[test]
fn report_with_an_unknown_format() {
    let dir = tmp();
    assert_one_line_error(
        &run(&["report", dir.path().to_str().unwrap(), "--format", "pdf"]),
        &["pdf", "md, html"],
    );
}

#[test]
fn receipts_verify_of_a_tampered_journal() {
    let dir = tmp();
    // Two entries whose chain does not link: the second's prev is not the first's hash.
    write(
        dir.path(),
        "receipts.jsonl",
        "{\"seq\":1,\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"sha256\":\"ab\"}\n{\"seq\":2,\"prev\":\"cd\",\"sha256\":\"ef\"}\n",
    );
    let out = run(&["receipts", "verify", dir.path().to_str().unwrap()]);
    assert_one_line_error(&out, &["line 1"]);
}

#[test]
fn malformed_bucket_manifest() {
    let dir = tmp();
    let m = write(dir.path(), "buckets.toml", "schema = 1\npackage = \n");
    assert_one_line_error(
        &run(&["buckets", "list", "--manifest", m.to_str().unwrap()]),
        &[m.file_name().unwrap().to_str().unwrap()],
    );
}

#[test]
fn bucket_manifest_with_an_unknown_key() {
    let dir = tmp();
    let m = write(
        dir.path(),
        "buckets.toml",
        "schema = 1\npackage = \"p\"\ncolour = \"blue\"\n",
    );
    assert_one_line_error(
        &run(&["buckets", "list", "--manifest", m.to_str().unwrap()]),
        &["colour"],
    );
}

#[test]
fn qualify_needs_an_existing_fleet() {
    assert_one_line_error(&run(&qualify(&[])), &["--cluster existing"]);
}

/// A qualification that cannot mean anything is refused in one line with exit 2, before any
/// cluster is reached (the kubeconfig named does not even exist): a batch of 0, a member listed
/// twice, an empty member or name.
#[test]
fn qualify_refuses_a_plan_that_means_nothing() {
    let cluster = [
        "--cluster",
        "existing",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--context",
        "c",
    ];
    for (extra, needles) in [
        (&["--batch-size", "0"][..], &["batch of 0", "1 or more"][..]),
        (
            &["--fleet", "survival,survival"][..],
            &["survival twice", "once"][..],
        ),
        (&["--fleet", ""][..], &["empty member"][..]),
        (&["--fleet", "a,,b"][..], &["empty member"][..]),
    ] {
        let out = run(&qualify(&[&cluster[..], extra].concat()));
        assert_one_line_error(&out, needles);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
    }
    let mut empty_source = qualify(&cluster);
    let at = empty_source.iter().position(|a| *a == "s").unwrap();
    empty_source[at] = "";
    let out = run(&empty_source);
    assert_one_line_error(&out, &["--source is empty"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `rehearse qualify` with a complete plan, then `extra`.
fn qualify<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "qualify",
        "--candidate",
        "2.0",
        "--template",
        "t",
        "--namespace",
        "n",
        "--source",
        "s",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn invalid_flag_value() {
    assert_one_line_error(&run(&["run", "--parallel", "many"]), &["many"]);
    assert_one_line_error(
        &run(&["run", "--parallel", "0"]),
        &["0 cases at a time", "1 or more"],
    );
}

/// `--parallel` is an option of the commands that run cases; `qualify` runs one procedure, so
/// it has none (it used to accept and ignore it).
#[test]
fn parallel_is_only_where_cases_run() {
    let qualify = [
        "qualify",
        "--candidate",
        "2.0",
        "--template",
        "t",
        "--source",
        "s",
        "--parallel",
        "2",
    ];
    assert_one_line_error(&run(&qualify), &["--parallel"]);
    for command in ["run", "selftest", "bench"] {
        let out = run(&[command, "--help"]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("--parallel"),
            "`rehearse {command}` takes --parallel"
        );
    }
    let out = run(&["qualify", "--help"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("--parallel"));
}

#[test]
fn missing_required_arguments_are_named() {
    assert_one_line_error(
        &run(&["qualify", "--candidate", "2.0"]),
        &["required", "--template", "--source"],
    );
    assert_one_line_error(&run(&["receipts", "verify"]), &["required", "<BUNDLE>"]);
    let out = run(&["qualify"]);
    assert_one_line_error(&out, &["required", "--candidate"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("provided:;"),
        "an empty list of missing arguments"
    );
}

#[test]
fn explore_regressions_and_its_selftest_refuse_bad_input_by_name() {
    let dir = tmp();
    // An empty or missing regressions directory, a malformed saved schedule.
    assert_one_line_error(
        &run(&["explore", "--regressions", dir.path().to_str().unwrap()]),
        &["holds no saved schedule", "--save-violations"],
    );
    assert_one_line_error(
        &run(&["explore", "--regressions", "/nonexistent/regressions"]),
        &["cannot read the regressions directory"],
    );
    write(dir.path(), "bad.json", "{\"operation\": \"restore\"}");
    assert_one_line_error(
        &run(&["explore", "--regressions", dir.path().to_str().unwrap()]),
        &["bad.json is not a saved schedule", "fields"],
    );
    // The signal exploration's regressions: none in a directory of operator schedules, and
    // a malformed one.
    let signals = tmp();
    assert_one_line_error(
        &run(&[
            "explore",
            "--qualify-signals",
            "--regressions",
            signals.path().to_str().unwrap(),
        ]),
        &["holds no saved signal schedule", "--save-violations"],
    );
    write(
        signals.path(),
        "s.json",
        "{\"operation\": \"qualify-signals\", \"variant\": \"nope\"}",
    );
    assert_one_line_error(
        &run(&[
            "explore",
            "--qualify-signals",
            "--regressions",
            signals.path().to_str().unwrap(),
        ]),
        &["s.json is not a saved signal schedule", "fields"],
    );
    // A replay from a bundle that is not an exploration's, or whose reference run learned
    // fewer writes than the id names; --from with a signal schedule.
    assert_one_line_error(
        &run(&[
            "explore",
            "--replay",
            "backup.create_jobs.1.game-restart",
            "--from",
            "/nonexistent/bundle",
        ]),
        &[
            "backup-reference",
            "--from names the bundle of an exploration",
        ],
    );
    let bundle = tmp();
    let artifacts = bundle.path().join("cases/backup-reference/artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    write(
        &artifacts,
        "placement.json",
        "{\"not_placed\": null, \"points\": [\"create pods mc-0\", \"patch backups live\"]}",
    );
    assert_one_line_error(
        &run(&[
            "explore",
            "--replay",
            "backup.patch_backups_live.2.game-restart",
            "--from",
            bundle.path().to_str().unwrap(),
        ]),
        &["made 1 `patch backups live` write(s), fewer than 2"],
    );
    assert_one_line_error(
        &run(&[
            "explore",
            "--replay",
            "qualify-signals-compatible-b1-sigint-r01",
            "--from",
            bundle.path().to_str().unwrap(),
        ]),
        &["leave out --from"],
    );
    // A shard that is not one of N.
    assert_one_line_error(
        &run(&["explore", "--shard", "5/4"]),
        &["5/4", "K/N", "--shard 2/4"],
    );
    // A mutant no invariant names.
    assert_one_line_error(
        &run(&["selftest", "--explore", "--mutant", "no-such-mutant"]),
        &["no-such-mutant", "[[invariant]]", "known"],
    );
    // The exploration's benchmark needs the embedded cluster's API server.
    assert_one_line_error(
        &run(&[
            "bench",
            "--explore",
            "--cluster",
            "existing",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "--context",
            "x",
        ]),
        &["--explore", "embedded"],
    );
}
