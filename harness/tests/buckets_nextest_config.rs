//! `.config/nextest.toml` agrees with the bucket manifest, and its profiles behave as documented
//! under the real cargo-nextest (on a throwaway `rehearsal-scenarios` crate).

use std::collections::BTreeSet;

use rehearsal::buckets::Manifest;

mod buckets_support;
use buckets_support::{
    expect_success, nextest, real_manifest, text, tiny_scenarios_crate, workspace,
};

fn config() -> toml::Table {
    let path = workspace().join(".config/nextest.toml");
    let text = std::fs::read_to_string(&path).expect(".config/nextest.toml");
    text.parse().expect("nextest.toml is TOML")
}

fn profile<'a>(config: &'a toml::Table, name: &str) -> &'a toml::Table {
    config["profile"]
        .get(name)
        .and_then(toml::Value::as_table)
        .unwrap_or_else(|| panic!("[profile.{name}] missing from .config/nextest.toml"))
}

fn str_of<'a>(table: &'a toml::Table, key: &str) -> Option<&'a str> {
    table.get(key).and_then(toml::Value::as_str)
}

/// The `filter`s of `[[profile.X.<list>]]` entries whose `key` equals `value`.
fn filters_with(table: &toml::Table, list: &str, key: &str, value: &str) -> Vec<String> {
    table
        .get(list)
        .and_then(toml::Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(toml::Value::as_table)
                .filter(|e| str_of(e, key) == Some(value))
                .filter_map(|e| str_of(e, "filter").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn each_bucket_profile_selects_exactly_its_manifest_cases() {
    let manifest = real_manifest();
    let config = config();
    for bucket in manifest.bucket_names() {
        let p = profile(&config, bucket);
        let expected = manifest.nextest_filter(bucket).unwrap();
        assert_eq!(
            str_of(p, "default-filter"),
            Some(expected.as_str()),
            "[profile.{bucket}] default-filter is stale: set it to the output of `rehearse buckets nextest-filter {bucket}`"
        );
        assert_eq!(
            str_of(p, "inherits"),
            Some("ci"),
            "[profile.{bucket}] inherits the CI settings"
        );
    }
}

#[test]
fn kind_setup_and_test_group_cover_every_bucket_profile_and_nothing_stale() {
    let manifest = real_manifest();
    let config = config();
    let scenarios = manifest.scenarios_filter();
    let mut with_setup = BTreeSet::new();
    for (name, p) in config["profile"].as_table().unwrap() {
        let p = p.as_table().unwrap();
        let setups = filters_with(p, "scripts", "setup", "kind-cluster");
        let groups = filters_with(p, "overrides", "test-group", "kind-cluster");
        if !setups.is_empty() {
            with_setup.insert(name.clone());
            assert_eq!(
                setups,
                vec![scenarios.clone()],
                "[profile.{name}] setup filter"
            );
            assert_eq!(
                groups,
                vec![scenarios.clone()],
                "[profile.{name}] test group filter"
            );
        }
    }
    let mut expected: BTreeSet<String> = manifest
        .bucket_names()
        .iter()
        .map(|b| b.to_string())
        .collect();
    expected.insert("kind".into());
    assert_eq!(
        with_setup, expected,
        "profiles with the Kind setup script = one per bucket + `kind` (a removed bucket leaves no stale profile)"
    );
    assert_eq!(
        str_of(profile(&config, "kind"), "default-filter"),
        Some(scenarios.as_str())
    );
    assert_eq!(
        config["test-groups"]["kind-cluster"]["max-threads"].as_integer(),
        Some(2)
    );
    let experimental = config["experimental"].as_array().unwrap();
    assert!(
        experimental
            .iter()
            .any(|e| e.as_str() == Some("setup-scripts"))
    );
}

#[test]
fn ci_profile_has_no_hidden_retries_and_bounded_tests() {
    let config = config();
    let ci = profile(&config, "ci");
    assert_eq!(ci["retries"].as_integer(), Some(0));
    assert_eq!(str_of(ci, "flaky-result"), Some("fail"));
    assert_eq!(ci["fail-fast"].as_bool(), Some(false));
    assert_eq!(ci["slow-timeout"]["period"].as_str(), Some("60s"));
    assert_eq!(ci["slow-timeout"]["terminate-after"].as_integer(), Some(5));
    assert_eq!(ci["junit"]["path"].as_str(), Some("junit.xml"));
    let default = profile(&config, "default");
    assert_eq!(default["fail-fast"].as_bool(), Some(false));
    assert!(
        default["slow-timeout"]["terminate-after"]
            .as_integer()
            .is_some()
    );
}

/// Real nextest: each bucket profile lists exactly that bucket's cases (and the unit test of
/// the scenarios lib is in no bucket profile).
#[test]
fn real_nextest_bucket_profiles_match_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = real_manifest();
    tiny_scenarios_crate(dir.path(), &manifest, &[], &[], true);
    for bucket in &manifest.buckets {
        let out = nextest(
            dir.path(),
            &[
                "list",
                "--profile",
                &bucket.name,
                "--message-format",
                "json",
            ],
        )
        .output()
        .unwrap();
        expect_success(
            &out,
            &format!("cargo nextest list --profile {}", bucket.name),
        );
        let selected = matching_tests(&text(&out.stdout));
        let expected: BTreeSet<String> = bucket
            .cases
            .iter()
            .map(|c| format!("{} {}", c.binary_id(&manifest.package), c.test))
            .collect();
        assert_eq!(selected, expected, "profile {}", bucket.name);
    }
    let out = nextest(
        dir.path(),
        &["list", "--profile", "kind", "--message-format", "json"],
    )
    .output()
    .unwrap();
    expect_success(&out, "cargo nextest list --profile kind");
    assert_eq!(
        matching_tests(&text(&out.stdout)).len(),
        manifest.cases().count()
    );
}

fn matching_tests(json: &str) -> BTreeSet<String> {
    let v: serde_json::Value = serde_json::from_str(json).expect("nextest json");
    let mut out = BTreeSet::new();
    for (id, suite) in v["rust-suites"].as_object().unwrap() {
        if let Some(cases) = suite["testcases"].as_object() {
            for (name, case) in cases {
                if case["filter-match"]["status"] == "matches" {
                    out.insert(format!("{id} {name}"));
                }
            }
        }
    }
    out
}

/// Real nextest with `REHEARSAL_CLUSTER=kind`: the setup script calls `rehearse cluster up
/// --kind` once and every case sees the kubeconfig and context through $NEXTEST_ENV; JUnit is
/// written. `REHEARSE` points at a stand-in that records its argv (no Kind here).
#[test]
fn real_nextest_kind_setup_hands_the_kubeconfig_to_every_case() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let manifest = real_manifest();
    tiny_scenarios_crate(root, &manifest, &[], &[], true);
    let argv_log = root.join("rehearse-argv");
    let fake = root.join("fake-rehearse");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", argv_log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();

    let out = nextest(root, &["run", "--profile", "rollout", "--no-capture"])
        .env("REHEARSAL_CLUSTER", "kind")
        .env("REHEARSE", &fake)
        .output()
        .unwrap();
    expect_success(&out, "cargo nextest run --profile rollout");
    let state = root.join("target/rehearsal-kind/rehearsal");
    let kubeconfig = state.join("rehearsal.kubeconfig");
    assert_eq!(
        std::fs::read_to_string(&argv_log).unwrap(),
        format!(
            "cluster up --kind --name rehearsal --state-dir {} --kubeconfig {}\n",
            state.display(),
            kubeconfig.display()
        ),
        "one cluster up per run"
    );
    let stdout = text(&out.stdout);
    let expected = format!(
        "ENV REHEARSAL_KUBECONFIG=Some({:?}) REHEARSAL_CONTEXT=Some(\"kind-rehearsal\") REHEARSAL_KIND_CLUSTER=Some(\"rehearsal\") REHEARSAL_KIND_STATE=Some({:?})",
        kubeconfig.display().to_string(),
        state.display().to_string()
    );
    assert_eq!(
        stdout.lines().filter(|l| *l == expected).count(),
        manifest.bucket("rollout").unwrap().cases.len(),
        "every rollout case got the kubeconfig:\n{stdout}"
    );
    let junit = std::fs::read_to_string(root.join("target/nextest/rollout/junit.xml")).unwrap();
    assert_eq!(
        junit
            .matches("classname=\"rehearsal-scenarios::rollout\"")
            .count(),
        manifest.bucket("rollout").unwrap().cases.len(),
        "{junit}"
    );
    assert!(
        junit.contains("classname=\"@setup-script:kind-cluster\""),
        "{junit}"
    );

    // Without REHEARSAL_CLUSTER=kind the script does nothing and no kubeconfig is handed over.
    let out = nextest(root, &["run", "--profile", "backup", "--no-capture"])
        .env("REHEARSE", &fake)
        .output()
        .unwrap();
    expect_success(&out, "cargo nextest run --profile backup");
    assert_eq!(
        std::fs::read_to_string(&argv_log).unwrap().lines().count(),
        1
    );
    assert!(
        text(&out.stdout).contains("ENV REHEARSAL_KUBECONFIG=None"),
        "{}",
        text(&out.stdout)
    );
}

/// Real nextest: under the CI profile a test that passes only on a retry fails the run.
#[test]
fn real_nextest_ci_profile_fails_flaky_tests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let manifest: Manifest = real_manifest();
    tiny_scenarios_crate(root, &manifest, &[], &[], true);
    let marker = root.join("attempted");
    std::fs::write(
        root.join("tests/flaky.rs"),
        "#[test]\nfn passes_on_second_try() {\n    let m = std::env::var(\"FLAKY_MARKER\").unwrap();\n    if std::fs::metadata(&m).is_err() {\n        std::fs::write(&m, \"1\").unwrap();\n        panic!(\"first attempt fails\");\n    }\n}\n",
    )
    .unwrap();
    let out = nextest(
        root,
        &[
            "run",
            "--profile",
            "ci",
            "--retries",
            "1",
            "-E",
            "binary(flaky)",
        ],
    )
    .env("FLAKY_MARKER", &marker)
    .output()
    .unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(marker.exists(), "the test ran: {all}");
    assert!(
        !out.status.success(),
        "a flaky pass must fail the CI profile: {all}"
    );
    // Nextest marks the retry's pass as "configured to fail if flaky" (FLKY-FL).
    assert!(all.contains("fail if flaky"), "{all}");
}

/// `"120s"`, `"10m"`, `"1h"`: the humantime forms this config uses.
fn duration(text: &str) -> std::time::Duration {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(0));
    let n: u64 = number
        .parse()
        .unwrap_or_else(|_| panic!("unreadable duration {text:?}"));
    match unit {
        "s" => std::time::Duration::from_secs(n),
        "m" => std::time::Duration::from_secs(n * 60),
        "h" => std::time::Duration::from_secs(n * 3600),
        _ => panic!("unreadable duration {text:?}: use s, m or h"),
    }
}

/// When nextest kills a test: `period` × `terminate-after` of a `slow-timeout` table.
fn kill_after(table: &toml::Value) -> Option<std::time::Duration> {
    let period = duration(table.get("period")?.as_str()?);
    let after = table.get("terminate-after")?.as_integer()?;
    Some(period * u32::try_from(after).ok()?)
}

/// Defect: the bucket profiles inherited `ci`'s 60 s × 5 while a case may run for 600 s, so
/// nextest killed slow cases before they recorded a verdict. Every profile (scenario cases run
/// under all of them: the embedded cluster by default, Kind in the bucket profiles) must give a
/// scenario case its bound plus its overhead, through an override in the profile itself, and no
/// other slow-timeout override may match a case first.
#[test]
fn every_profile_lets_a_scenario_case_reach_its_bound() {
    let manifest = real_manifest();
    let config = config();
    let scenarios = manifest.scenarios_filter();
    let case_names: BTreeSet<String> = manifest.cases().map(|(_, c)| c.test.clone()).collect();
    let needed = rehearsal::run::CASE_BOUND + rehearsal::run::CASE_OVERHEAD;
    // The library's default options use the same bound (one source, not two).
    assert_eq!(
        rehearsal::cases::RunOptions::default().case_bound,
        rehearsal::run::CASE_BOUND
    );
    let profiles = config["profile"].as_table().unwrap();
    assert!(profiles.contains_key("default") && profiles.contains_key("ci"));
    for (name, p) in profiles {
        let overrides: Vec<&toml::Table> = p
            .get("overrides")
            .and_then(toml::Value::as_array)
            .map(|o| o.iter().filter_map(toml::Value::as_table).collect())
            .unwrap_or_default();
        let with_timeout: Vec<&&toml::Table> = overrides
            .iter()
            .filter(|o| o.contains_key("slow-timeout"))
            .collect();
        let first = with_timeout.first().unwrap_or_else(|| {
            panic!("[profile.{name}] has no slow-timeout override for the scenario cases ({scenarios}); scenario cases would be killed at the profile's slow-timeout")
        });
        assert_eq!(
            str_of(first, "filter"),
            Some(scenarios.as_str()),
            "[profile.{name}]: the first slow-timeout override must be the scenario cases' one"
        );
        let kill = kill_after(&first["slow-timeout"]).unwrap_or_else(|| {
            panic!("[profile.{name}] scenario slow-timeout needs period and terminate-after")
        });
        assert!(
            kill >= needed,
            "[profile.{name}] kills a scenario case after {kill:?}, before CASE_BOUND + CASE_OVERHEAD = {needed:?}: raise period × terminate-after"
        );
        // Any other slow-timeout override names one test that is not a case.
        for o in &with_timeout[1..] {
            let filter = str_of(o, "filter").unwrap_or("");
            let test = filter
                .strip_prefix("test(=")
                .and_then(|f| f.strip_suffix(')'))
                .unwrap_or_else(|| panic!("[profile.{name}] override {filter:?} may match a scenario case before its own override; select one test with test(=NAME)"));
            assert!(
                !case_names.contains(test),
                "[profile.{name}] override {filter:?} would shorten a case's slow-timeout"
            );
        }
    }
}
