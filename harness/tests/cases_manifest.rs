//! The case library (`rehearsal::cases::CASES`, what `rehearse run` and `selftest` execute) and
//! the bucket manifest (what CI and nextest select) describe the same cases, buckets and mutants.

use std::path::Path;

use rehearsal::buckets::Manifest;
use rehearsal::cases::{self, CASES};

fn manifest() -> Manifest {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/buckets.toml");
    Manifest::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_library_case_is_in_the_manifest_with_the_same_bucket_and_mutants() {
    let m = manifest();
    for case in CASES {
        let (bucket, entry) = m
            .find_case(case.name)
            .unwrap_or_else(|| panic!("case {} is missing from scenarios/buckets.toml", case.name));
        assert_eq!(bucket.name, case.bucket, "bucket of case {}", case.name);
        for m in &entry.mutants {
            assert!(
                !m.check.is_empty(),
                "mutant {} of case {} names no check",
                m.name,
                case.name
            );
        }
    }
}

#[test]
fn every_manifest_case_is_a_library_case() {
    for (_, entry) in manifest().cases() {
        assert!(
            cases::find(&entry.test).is_some(),
            "scenarios/buckets.toml names {} but rehearsal::cases has no such case",
            entry.test
        );
    }
}

#[test]
fn every_scenario_test_function_runs_its_namesake_case() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/tests");
    for case in CASES {
        let file = dir.join(format!("{}.rs", case.bucket));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let function = format!("fn {}()", case.name);
        let call = format!("rehearse(\"{}\")", case.name);
        assert!(
            text.contains(&function) && text.contains(&call),
            "{} lacks {function} calling {call}",
            file.display()
        );
    }
}
