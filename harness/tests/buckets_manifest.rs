//! The bucket manifest: loading, validation, and `verify` against recorded
//! `cargo nextest list --message-format json` output (fixtures in `buckets_fixtures/`, written
//! in nextest 0.9.143's format; `buckets_cli.rs` checks that format against the real nextest).

use std::path::{Path, PathBuf};

use rehearsal::buckets::{
    Manifest, ManifestError, NextestList, Problem, check_nextest_config, verify,
};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("harness/ has a parent")
        .to_owned()
}

fn real_manifest() -> Manifest {
    Manifest::load(&workspace().join("scenarios/buckets.toml")).expect("scenarios/buckets.toml")
}

fn fixture(name: &str) -> NextestList {
    NextestList::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/buckets_fixtures")
            .join(name),
    )
    .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

const BACKUP: &[&str] = &[
    "live_backup_same_pod_game_restart",
    "live_backup_agent_restart",
    "live_backup_agent_down",
    "live_backup_pod_replaced_during_preparation",
    "live_backup_job_create_conflicted",
    "live_backup_operator_restarted_onto_stale_view",
    "live_backup_source_event_withheld",
    "live_backup_game_not_running_yet",
    "live_backup_older_agent_without_identity_route",
    "stopped_server_backups",
    "idle_asleep_stopped_server_backup",
    "stopped_server_backup_started_mid_copy",
    "live_backup_restore_round_trip",
    "restore_fails_on_broken_repository",
    "live_backup_operator_restart",
    "live_backup_deleted_mid_copy",
    "raw_copy_without_quiesce",
    "preparation_deadline_expires",
    "legacy_preparation_fails_conservatively",
];
const ROLLOUT: &[&str] = &[
    "unpullable_candidate",
    "restore_after_halted_canary",
    "candidate_module_layer_other_bytes",
    "candidate_module_digest_mismatch",
    "http_only_candidate",
    "format_change_compatible_rollback",
    "format_change_restore_required_rollback",
    "member_tracking_default_version",
    "extra_world_declared_on_template",
    "halt_at_later_batch",
    "failed_format_batch_restored_from_its_backups",
    "batch_of_three_gated_together",
    "batch_member_join_failure_put_back",
    "format_batch_two_member_cannot_read_its_world",
    "candidate_refuses_login",
    "candidate_stalls_configuration",
];

#[test]
fn real_manifest_has_the_agreed_buckets_and_case_names() {
    let m = real_manifest();
    assert_eq!(m.package, "rehearsal-scenarios");
    assert_eq!(m.bucket_names(), ["backup", "rollout"]);
    let names = |b: &str| -> Vec<String> {
        m.bucket(b)
            .unwrap()
            .cases
            .iter()
            .map(|c| c.test.clone())
            .collect()
    };
    assert_eq!(names("backup"), BACKUP);
    assert_eq!(names("rollout"), ROLLOUT);
    for (bucket, case) in m.cases() {
        assert_eq!(
            case.binary, bucket.name,
            "case {} lives in scenarios/tests/{}.rs",
            case.test, bucket.name
        );
    }
}

/// The mutant catalogue: at least 20 reference-operator mutants and 4 harness mutants, every
/// operator mutant one the reference operator knows (its `--list-mutants`), every harness mutant
/// one the harness knows, each targeted on a named check.
#[test]
fn real_manifest_maps_every_mutant_to_the_case_that_catches_it() {
    let m = real_manifest();
    let targets = m.cases_targeting();
    let known_operator: Vec<&str> = reference_operator::Mutant::ALL
        .iter()
        .map(|m| m.name())
        .collect();
    let (harness, operator): (Vec<&str>, Vec<&str>) = targets
        .keys()
        .copied()
        .partition(|n| rehearsal::mutants::HarnessMutant::is_harness_name(n));
    assert!(
        operator.len() >= 20,
        "{} operator mutants: {operator:?}",
        operator.len()
    );
    assert!(
        harness.len() >= 4,
        "{} harness mutants: {harness:?}",
        harness.len()
    );
    for name in &operator {
        assert!(
            known_operator.contains(name),
            "reference-operator has no mutant {name}"
        );
    }
    for name in &harness {
        name.parse::<rehearsal::mutants::HarnessMutant>()
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // Every reference-operator mutant is targeted by some case.
    for name in &known_operator {
        assert!(targets.contains_key(name), "no case targets mutant {name}");
    }
    for (_, case) in m.cases() {
        for t in &case.mutants {
            assert!(!t.check.is_empty(), "{} × {}: no check", t.name, case.test);
        }
    }
}

#[test]
fn builtin_manifest_is_the_file() {
    let builtin = Manifest::builtin().expect("builtin manifest is valid");
    let file = real_manifest();
    assert_eq!(builtin.buckets, file.buckets);
    assert_eq!(builtin.package, file.package);
    assert_eq!(builtin.path, Path::new("scenarios/buckets.toml"));
}

/// `rehearsal::cases::CASES` (what `rehearse run --bucket` and `rehearse selftest` use) must say
/// the same as the manifest: same cases, same bucket (the mutants each case must catch live only in the manifest).
#[test]
fn cases_table_agrees_with_the_manifest() {
    let m = real_manifest();
    for case in rehearsal::cases::CASES {
        let (bucket, entry) = m.find_case(case.name).unwrap_or_else(|| {
            panic!(
                "case `{}` of rehearsal::cases::CASES is not in scenarios/buckets.toml",
                case.name
            )
        });
        assert_eq!(
            case.bucket, bucket.name,
            "case `{}`: bucket in rehearsal::cases::CASES vs scenarios/buckets.toml",
            case.name
        );
        assert_eq!(
            case.name, entry.test,
            "case `{}`: the manifest entry found names another test",
            case.name
        );
    }
    assert_eq!(rehearsal::cases::CASES.len(), m.cases().count());
}

#[test]
fn valid_list_verifies() {
    let summary = verify(&real_manifest(), &fixture("list_valid.json")).expect("verifies");
    assert_eq!(summary.cases, 35);
    assert_eq!(
        summary.buckets,
        vec![("backup".to_owned(), 19), ("rollout".to_owned(), 16)]
    );
    let line = summary.to_string();
    assert!(!line.contains('\n'));
    assert!(line.contains("35 cases"), "{line}");
}

#[test]
fn lib_unit_tests_are_not_cases() {
    // list_valid.json has a unit test in the scenarios lib; it must not be reported missing.
    let list = fixture("list_valid.json");
    assert!(
        list.suites
            .iter()
            .any(|s| s.kind == "lib" && !s.testcases.is_empty())
    );
    verify(&real_manifest(), &list).expect("lib tests ignored");
}

#[test]
fn case_in_no_bucket_is_named() {
    let err = verify(&real_manifest(), &fixture("list_missing_case.json")).unwrap_err();
    assert_eq!(
        err.problems,
        vec![Problem::UnbucketedCase {
            binary_id: "rehearsal-scenarios::backup".into(),
            test: "live_backup_during_world_upload".into(),
        }]
    );
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.contains("live_backup_during_world_upload"), "{msg}");
    assert!(msg.contains("is in no bucket"), "{msg}");
    assert!(msg.contains("scenarios/buckets.toml"), "{msg}");
}

#[test]
fn bucket_entry_that_does_not_exist_is_named() {
    let err = verify(&real_manifest(), &fixture("list_unknown_entry.json")).unwrap_err();
    assert_eq!(
        err.problems,
        vec![Problem::UnknownEntry {
            bucket: "rollout".into(),
            binary_id: "rehearsal-scenarios::rollout".into(),
            test: "http_only_candidate".into(),
            found_in: vec![],
        }]
    );
    let msg = err.to_string();
    assert!(
        msg.contains("bucket `rollout` lists case `http_only_candidate`"),
        "{msg}"
    );
    assert!(msg.contains("remove it"), "{msg}");
}

#[test]
fn entry_pointing_at_the_wrong_binary_says_where_the_test_is() {
    let err = verify(&real_manifest(), &fixture("list_wrong_binary.json")).unwrap_err();
    assert_eq!(
        err.problems,
        vec![
            Problem::UnknownEntry {
                bucket: "rollout".into(),
                binary_id: "rehearsal-scenarios::rollout".into(),
                test: "http_only_candidate".into(),
                found_in: vec!["rehearsal-scenarios::backup".into()],
            },
            Problem::UnbucketedCase {
                binary_id: "rehearsal-scenarios::backup".into(),
                test: "http_only_candidate".into(),
            },
        ]
    );
    assert!(err.to_string().contains("fix the entry's `binary`"));
}

#[test]
fn skipped_binary_cannot_be_checked() {
    let err = verify(&real_manifest(), &fixture("list_rollout_skipped.json")).unwrap_err();
    assert_eq!(
        err.problems[0],
        Problem::SuiteNotListed {
            binary_id: "rehearsal-scenarios::rollout".into(),
            status: "skipped".into(),
        }
    );
    // Its cases then also show up as unknown entries: nothing is silently assumed to exist.
    assert_eq!(err.problems.len(), 1 + ROLLOUT.len());
}

#[test]
fn list_without_the_scenarios_package_fails() {
    let err = verify(&real_manifest(), &fixture("list_no_scenarios.json")).unwrap_err();
    assert_eq!(
        err.problems[0],
        Problem::PackageNotListed {
            package: "rehearsal-scenarios".into()
        }
    );
}

#[test]
fn same_test_name_in_two_binaries_is_ambiguous() {
    let mut list = fixture("list_valid.json");
    for s in &mut list.suites {
        if s.binary_id == "rehearsal-scenarios::rollout" {
            s.testcases.push("live_backup_agent_restart".into());
        }
    }
    let err = verify(&real_manifest(), &list).unwrap_err();
    assert!(err.problems.contains(&Problem::AmbiguousTestName {
        test: "live_backup_agent_restart".into(),
        binary_ids: vec![
            "rehearsal-scenarios::backup".into(),
            "rehearsal-scenarios::rollout".into()
        ],
    }));
}

fn parse(text: &str) -> Result<Manifest, ManifestError> {
    Manifest::parse(Path::new("scenarios/buckets.toml"), text)
}

const HEAD: &str = "schema = 1\npackage = \"rehearsal-scenarios\"\n";

#[test]
fn case_in_two_buckets_is_refused_naming_both() {
    let text = format!(
        "{HEAD}
[[bucket]]
name = \"backup\"
[[bucket.case]]
binary = \"backup\"
test = \"stopped_server_backups\"
contract = \"stopped-server backups\"

[[bucket]]
name = \"rollout\"
[[bucket.case]]
binary = \"backup\"
test = \"stopped_server_backups\"
contract = \"stopped-server backups\"
"
    );
    let err = parse(&text).unwrap_err();
    assert!(
        matches!(&err, ManifestError::CaseInTwoBuckets { test, first, second, .. }
            if test == "stopped_server_backups" && first == "backup" && second == "rollout"),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(!msg.contains('\n'));
    assert!(
        msg.starts_with("scenarios/buckets.toml: case `stopped_server_backups`"),
        "{msg}"
    );
    assert!(msg.contains("remove one entry"), "{msg}");
}

#[test]
fn case_in_two_buckets_fixture_with_a_valid_list_still_fails() {
    // The whole path a CI run takes: the manifest is refused before the list is consulted.
    let text = std::fs::read_to_string(workspace().join("scenarios/buckets.toml")).unwrap();
    let doubled = text.replace(
        "[[bucket.case]]\nbinary = \"rollout\"\ntest = \"unpullable_candidate\"",
        "[[bucket.case]]\nbinary = \"backup\"\ntest = \"live_backup_agent_restart\"\ncontract = \"x\"\n\n[[bucket.case]]\nbinary = \"rollout\"\ntest = \"unpullable_candidate\"",
    );
    assert_ne!(doubled, text, "the edit applied");
    let err = parse(&doubled).unwrap_err();
    assert!(
        err.to_string().contains(
            "case `live_backup_agent_restart` is in bucket `backup` and in bucket `rollout`"
        ),
        "{err}"
    );
}

#[test]
fn empty_bucket_is_refused() {
    let err = parse(&format!("{HEAD}[[bucket]]\nname = \"backup\"\n")).unwrap_err();
    assert!(matches!(err, ManifestError::EmptyBucket { ref bucket, .. } if bucket == "backup"));
    assert!(err.to_string().contains("bucket `backup` has no cases"));
}

#[test]
fn unknown_key_is_a_syntax_error_with_line() {
    let text = format!(
        "{HEAD}[[bucket]]\nname = \"backup\"\n[[bucket.case]]\nbinary = \"backup\"\ntest = \"a\"\ncontract = \"c\"\nmutant = [\"x\"]\n"
    );
    let err = parse(&text).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ManifestError::Syntax { .. }), "{err:?}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.contains("unknown field `mutant`"), "{msg}");
    assert!(msg.starts_with("scenarios/buckets.toml:"), "{msg}");
}

#[test]
fn malformed_toml_names_the_line() {
    let err = parse("schema = 1\npackage = \"x\"\n[[bucket]\n").unwrap_err();
    match err {
        ManifestError::Syntax { line, .. } => assert_eq!(line, 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn reserved_and_malformed_names_are_refused() {
    for name in ["ci", "default", "default-kind", "Backup", "9x", "kind", ""] {
        let text = format!(
            "{HEAD}[[bucket]]\nname = \"{name}\"\n[[bucket.case]]\nbinary = \"b\"\ntest = \"t\"\ncontract = \"c\"\n"
        );
        let err = parse(&text).unwrap_err();
        assert!(
            matches!(
                err,
                ManifestError::BadName {
                    what: "bucket name",
                    ..
                }
            ),
            "{name}: {err:?}"
        );
    }
    let text = format!(
        "{HEAD}[[bucket]]\nname = \"b\"\n[[bucket.case]]\nbinary = \"b\"\ntest = \"not a test\"\ncontract = \"c\"\n"
    );
    assert!(matches!(
        parse(&text).unwrap_err(),
        ManifestError::BadName { what: "test", .. }
    ));
}

#[test]
fn other_refusals() {
    assert!(matches!(
        parse("schema = 2\npackage = \"x\"\n").unwrap_err(),
        ManifestError::UnsupportedSchema { found: 2, .. }
    ));
    assert!(matches!(
        parse("schema = 1\npackage = \" \"\n").unwrap_err(),
        ManifestError::EmptyPackage { .. }
    ));
    assert!(matches!(
        parse(HEAD).unwrap_err(),
        ManifestError::NoBuckets { .. }
    ));
    let missing_contract = format!(
        "{HEAD}[[bucket]]\nname = \"b\"\n[[bucket.case]]\nbinary = \"b\"\ntest = \"t\"\ncontract = \"\"\n"
    );
    assert!(matches!(
        parse(&missing_contract).unwrap_err(),
        ManifestError::MissingContract { .. }
    ));
    let twice = format!(
        "{HEAD}[[bucket]]\nname = \"b\"\n[[bucket.case]]\nbinary = \"b\"\ntest = \"t\"\ncontract = \"c\"\n[[bucket]]\nname = \"b\"\n[[bucket.case]]\nbinary = \"b\"\ntest = \"u\"\ncontract = \"c\"\n"
    );
    assert!(matches!(
        parse(&twice).unwrap_err(),
        ManifestError::DuplicateBucket { .. }
    ));
    let err = Manifest::load(Path::new("/nonexistent/buckets.toml")).unwrap_err();
    assert!(err.to_string().contains("pass --manifest PATH"));
}

#[test]
fn unknown_bucket_lists_known_ones() {
    let err = real_manifest().nextest_filter("bakup").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: unknown bucket `bakup`; known buckets: backup, rollout",
            workspace().join("scenarios/buckets.toml").display()
        )
    );
}

#[test]
fn bucket_filter_selects_exactly_its_cases() {
    let filter = real_manifest().nextest_filter("rollout").unwrap();
    assert_eq!(
        filter,
        "package(=rehearsal-scenarios) & kind(test) & (test(=unpullable_candidate) | test(=restore_after_halted_canary) | test(=candidate_module_layer_other_bytes) | test(=candidate_module_digest_mismatch) | test(=http_only_candidate) | test(=format_change_compatible_rollback) | test(=format_change_restore_required_rollback) | test(=member_tracking_default_version) | test(=extra_world_declared_on_template) | test(=halt_at_later_batch) | test(=failed_format_batch_restored_from_its_backups) | test(=batch_of_three_gated_together) | test(=batch_member_join_failure_put_back) | test(=format_batch_two_member_cannot_read_its_world) | test(=candidate_refuses_login) | test(=candidate_stalls_configuration))"
    );
}

#[test]
fn not_nextest_json_is_refused() {
    let err = NextestList::from_json("list.json", "{\"test-count\": 0}").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("rust-suites"), "{msg}");
    assert!(
        msg.contains("cargo nextest list --message-format json"),
        "{msg}"
    );
}

#[test]
fn nextest_config_check_finds_missing_stale_and_unreadable_profiles() {
    let m = real_manifest();
    let path = workspace().join(".config/nextest.toml");
    let real = std::fs::read_to_string(&path).unwrap();
    assert_eq!(check_nextest_config(&m, &path, &real), vec![]);

    let no_backup = real.replace("[profile.backup]", "[profile.backup-old]");
    let problems = check_nextest_config(&m, &path, &no_backup);
    assert_eq!(
        problems,
        vec![Problem::StaleProfile {
            config: path.clone(),
            bucket: "backup".into(),
            found: None
        }]
    );
    assert!(problems[0].to_string().contains("has no default-filter"));

    let stale = real.replace(" | test(=http_only_candidate)", "");
    let problems = check_nextest_config(&m, &path, &stale);
    assert!(
        matches!(&problems[..], [Problem::StaleProfile { bucket, found: Some(_), .. }] if bucket == "rollout"),
        "{problems:?}"
    );

    let problems = check_nextest_config(&m, &path, "[profile\n");
    assert!(
        matches!(&problems[..], [Problem::UnreadableConfig { .. }]),
        "{problems:?}"
    );
    assert!(!problems[0].to_string().contains('\n'));
}
