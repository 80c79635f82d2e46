//! The self-test on the embedded cluster: every case that targets a reference-operator mutant
//! passes against the correct operator and fails against each mutant it exists to catch, and
//! the kill matrix in the bundle says so.

use std::process::Command;

#[test]
fn every_mutant_is_caught_by_its_case() {
    let reports = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rehearse"))
        // Two at a time: CI runs this beside other tests on 2 cores.
        .args(["selftest", "--parallel", "2", "--reports"])
        .arg(reports.path())
        .output()
        .expect("run rehearse selftest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "selftest failed:\n{stdout}\n{stderr}");

    let path = stdout
        .lines()
        .find_map(|l| l.strip_prefix("kill matrix: "))
        .unwrap_or_else(|| panic!("selftest printed no kill matrix path:\n{stdout}"));
    let matrix: rehearsal::evidence::bundle::KillMatrix =
        serde_json::from_slice(&std::fs::read(path).expect("kill-matrix.json")).unwrap();
    let list = rehearsal::cli::run::kill_list().expect("the built-in manifest");
    assert!(
        list.len() >= 24,
        "the catalogue holds {} mutants, fewer than 20 operator + 4 harness",
        list.len()
    );
    for (mutant, cases) in list {
        let row = matrix
            .mutants
            .get(&mutant)
            .unwrap_or_else(|| panic!("kill matrix lacks mutant {mutant}: {matrix:?}"));
        for (case, check) in cases {
            let cell = row
                .get(case.name)
                .unwrap_or_else(|| panic!("kill matrix lacks {mutant} × {}", case.name));
            assert!(
                cell.caught && cell.check == check && cell.failed_checks.contains(&check),
                "mutant {mutant} was not caught by {} on {check}: {cell:?}\n{stdout}",
                case.name
            );
        }
    }
    // The bundle holding the matrix still verifies.
    let bundle = std::path::Path::new(path).parent().unwrap();
    rehearsal::evidence::receipts::verify(bundle.join("receipts.jsonl")).expect("journal verifies");
}
