//! `rehearse buckets …` as a user runs it (the real binary), and the JSON format check against
//! the real `cargo nextest list` on a throwaway crate.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rehearsal::buckets::{Manifest, NextestList, Problem, verify};

mod buckets_support;
use buckets_support::workspace;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/buckets_fixtures")
        .join(name)
}

fn rehearse(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(args)
        .current_dir(cwd)
        .env_remove("REHEARSAL_BUCKET_MANIFEST")
        .output()
        .expect("run rehearse")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn verify_passes_on_a_valid_list_from_a_subdirectory() {
    // Run from harness/: the manifest is found in the parent workspace.
    let out = rehearse(
        &[
            "buckets",
            "verify",
            "--nextest-list-json",
            fixture("list_valid.json").to_str().unwrap(),
        ],
        &workspace().join("harness"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("verified: 35 cases"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn verify_reads_the_list_from_stdin() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(["buckets", "verify", "--nextest-list-json", "-"])
        .current_dir(workspace())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let json = std::fs::read(fixture("list_unknown_entry.json")).unwrap();
    child.stdin.take().unwrap().write_all(&json).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`http_only_candidate`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn verify_fails_naming_the_missing_case() {
    let out = rehearse(
        &[
            "buckets",
            "verify",
            "--nextest-list-json",
            fixture("list_missing_case.json").to_str().unwrap(),
        ],
        &workspace(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.starts_with("rehearse: case `live_backup_during_world_upload`")),
        "{err}"
    );
    assert!(
        err.lines()
            .last()
            .unwrap()
            .contains("disagrees with cargo nextest list or the nextest config (1 problem)"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_inputs_give_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad_manifest = dir.path().join("buckets.toml");
    std::fs::write(
        &bad_manifest,
        "schema = 1\npackage = \"p\"\n[[bucket]]\nname = \"ci\"\n",
    )
    .unwrap();
    let not_json = dir.path().join("list.json");
    std::fs::write(&not_json, "Finished test profile\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "buckets".into(),
                "list".into(),
                "--manifest".into(),
                bad_manifest.display().to_string(),
            ],
            "bucket name `ci`",
        ),
        (
            vec![
                "buckets".into(),
                "verify".into(),
                "--nextest-list-json".into(),
                not_json.display().to_string(),
            ],
            "is not nextest's JSON list",
        ),
        (
            vec![
                "buckets".into(),
                "verify".into(),
                "--nextest-list-json".into(),
                dir.path().join("absent.json").display().to_string(),
            ],
            "cannot read nextest list",
        ),
        (
            vec!["buckets".into(), "nextest-filter".into(), "bakup".into()],
            "unknown bucket `bakup`; known buckets: backup, rollout",
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = rehearse(&args, &workspace());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    // No manifest anywhere above a tempdir: the error names the path and the flag.
    let out = rehearse(&["buckets", "list"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("pass --manifest PATH"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn list_and_filter_print_the_manifest() {
    let out = rehearse(&["buckets", "list"], &workspace());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("backup (19 cases)"), "{text}");
    assert!(
        text.contains("  rollout::unpullable_candidate  unpullable candidate"),
        "{text}"
    );

    let out = rehearse(&["buckets", "list", "--json"], &workspace());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["buckets"][1]["name"], "rollout");
    assert_eq!(
        json["buckets"][0]["cases"][0]["mutants"][0]["name"],
        "ignore-incarnation"
    );

    let out = rehearse(&["buckets", "nextest-filter", "backup"], &workspace());
    assert!(out.status.success());
    let manifest = Manifest::load(&workspace().join("scenarios/buckets.toml")).unwrap();
    assert_eq!(
        stdout(&out).trim_end(),
        manifest.nextest_filter("backup").unwrap()
    );
}

/// Lists a throwaway `rehearsal-scenarios` crate with the real cargo-nextest and checks the
/// parser and `verify` against that output: the recorded fixtures follow the same format.
#[test]
fn real_nextest_list_output_parses_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let manifest = buckets_support::real_manifest();
    // One case left out and one unbucketed (ignored) test added, so verify has real work.
    buckets_support::tiny_scenarios_crate(
        root,
        &manifest,
        &["http_only_candidate"],
        &["not_in_any_bucket"],
        false,
    );
    let out = buckets_support::nextest(root, &["list", "--message-format", "json"])
        .output()
        .expect("run cargo nextest list");
    buckets_support::expect_success(&out, "cargo nextest list");

    let list = NextestList::from_json("real nextest list", &stdout(&out)).expect("parses");
    let backup = list
        .suites
        .iter()
        .find(|s| s.binary_id == "rehearsal-scenarios::backup")
        .expect("backup suite");
    assert_eq!(backup.kind, "test");
    assert_eq!(backup.status, "listed");
    assert!(backup.testcases.contains(&"not_in_any_bucket".to_owned()));

    let err = verify(&manifest, &list).unwrap_err();
    assert_eq!(
        err.problems,
        vec![
            Problem::UnknownEntry {
                bucket: "rollout".into(),
                binary_id: "rehearsal-scenarios::rollout".into(),
                test: "http_only_candidate".into(),
                found_in: vec![],
            },
            Problem::UnbucketedCase {
                binary_id: "rehearsal-scenarios::backup".into(),
                test: "not_in_any_bucket".into(),
            },
        ]
    );

    // The same check through the CLI with the real JSON on disk.
    let json = root.join("list.json");
    std::fs::write(&json, &out.stdout).unwrap();
    let cli = rehearse(
        &[
            "buckets",
            "verify",
            "--nextest-list-json",
            json.to_str().unwrap(),
        ],
        &workspace(),
    );
    assert_eq!(cli.status.code(), Some(1));
    assert!(stderr(&cli).contains("(2 problems)"), "{}", stderr(&cli));
}

#[test]
fn verify_checks_the_nextest_config_too() {
    let out = rehearse(
        &[
            "buckets",
            "verify",
            "--nextest-list-json",
            fixture("list_valid.json").to_str().unwrap(),
        ],
        &workspace(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(".config/nextest.toml agrees"),
        "{}",
        stdout(&out)
    );

    let dir = tempfile::tempdir().unwrap();
    let real = std::fs::read_to_string(workspace().join(".config/nextest.toml")).unwrap();
    let stale = real.replace(" | test(=http_only_candidate)", "");
    assert_ne!(stale, real);
    let config = dir.path().join("nextest.toml");
    std::fs::write(&config, stale).unwrap();
    let out = rehearse(
        &[
            "buckets",
            "verify",
            "--nextest-list-json",
            fixture("list_valid.json").to_str().unwrap(),
            "--nextest-config",
            config.to_str().unwrap(),
        ],
        &workspace(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("[profile.rollout] in ")
            && err.contains("rehearse buckets nextest-filter rollout"),
        "{err}"
    );

    let out = rehearse(
        &[
            "buckets",
            "verify",
            "--nextest-list-json",
            fixture("list_valid.json").to_str().unwrap(),
            "--nextest-config",
            dir.path().join("absent.toml").to_str().unwrap(),
        ],
        &workspace(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--nextest-config PATH"),
        "{}",
        stderr(&out)
    );
}
