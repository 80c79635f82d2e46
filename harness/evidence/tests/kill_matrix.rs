//! The self-test's judge and its kill matrix: a pair is caught only when the case failed on
//! exactly the check it targets; a mutant survives unless every case listed for it caught it.

mod support;

use proptest::prelude::*;
use rehearsal_evidence::bundle::{KillCell, KillMatrix, Verdict};

fn checks() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "save-on",
        "save-on-once",
        "once",
        "drain",
        "drain-pods",
        "",
        "Save-on",
    ])
    .prop_map(str::to_owned)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_pair_is_caught_only_on_the_exact_check_of_a_failed_case(
        target in checks(),
        failed in prop::collection::vec(checks(), 0..4),
        v in 0..support::VERDICTS.len(),
        reason in prop::option::of("[a-z ]{1,12}"),
    ) {
        let verdict = support::VERDICTS[v];
        let cell = KillCell::judge(&target, verdict, &failed, reason.as_deref());
        let expected = verdict == Verdict::Failed && failed.contains(&target);
        prop_assert_eq!(cell.caught, expected);
        prop_assert_eq!(&cell.check, &target);
        prop_assert_eq!(&cell.failed_checks, &failed);
        prop_assert_eq!(&cell.reason, &if expected { None } else { reason });
        // The cell round-trips through kill-matrix.json.
        let text = serde_json::to_string(&cell).unwrap();
        let back: KillCell = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, cell);
    }

    #[test]
    fn a_mutant_survives_unless_every_listed_case_caught_it(
        rows in prop::collection::btree_map(
            "[a-c]",
            prop::collection::btree_map("case-[0-3]", any::<bool>(), 0..4),
            0..4,
        )
    ) {
        let mut m = KillMatrix::default();
        for (mutant, cells) in &rows {
            // A mutant with no case yet still has a row.
            m.mutants.entry(mutant.clone()).or_default();
            for (case, caught) in cells {
                m.record(mutant, case, *caught);
            }
        }
        let expected: Vec<&str> = rows
            .iter()
            .filter(|(_, cells)| cells.is_empty() || cells.values().any(|c| !c))
            .map(|(m, _)| m.as_str())
            .collect();
        prop_assert_eq!(m.survivors(), expected);
        let mut cases: Vec<&str> = rows.values().flat_map(|c| c.keys().map(String::as_str)).collect();
        cases.sort_unstable();
        cases.dedup();
        prop_assert_eq!(m.cases(), cases);
        let text = serde_json::to_string(&m).unwrap();
        prop_assert_eq!(serde_json::from_str::<KillMatrix>(&text).unwrap(), m);
    }
}

#[test]
fn a_check_that_merely_contains_the_target_is_not_a_catch() {
    let failed = vec!["save-on-once".to_string(), "no-save-on".to_string()];
    assert!(!KillCell::judge("save-on", Verdict::Failed, &failed, None).caught);
    assert!(!KillCell::judge("save-on-once-more", Verdict::Failed, &failed, None).caught);
    assert!(KillCell::judge("no-save-on", Verdict::Failed, &failed, None).caught);
}

#[test]
fn a_timeout_an_interruption_or_a_pass_is_not_a_catch() {
    let failed = vec!["drain".to_string()];
    for v in [
        Verdict::Passed,
        Verdict::Skipped,
        Verdict::Interrupted,
        Verdict::NotApplicable,
    ] {
        let cell = KillCell::judge("drain", v, &failed, Some("timed out"));
        assert!(!cell.caught, "{v}");
        assert_eq!(cell.reason.as_deref(), Some("timed out"));
    }
    let caught = KillCell::judge("drain", Verdict::Failed, &failed, Some("checks failed"));
    assert!(caught.caught);
    assert_eq!(caught.reason, None, "a caught cell carries no reason");
}

#[test]
fn each_cell_describes_itself() {
    let cell = |caught, check: &str, failed: &[&str], reason: Option<&str>| KillCell {
        caught,
        check: check.into(),
        failed_checks: failed.iter().map(|s| s.to_string()).collect(),
        reason: reason.map(str::to_owned),
    };
    assert_eq!(cell(true, "", &[], None).describe(), "caught");
    assert_eq!(
        cell(true, "drain", &["drain"], None).describe(),
        "caught on drain"
    );
    assert_eq!(
        cell(false, "drain", &["a", "b"], Some("r")).describe(),
        "missed (failed on a, b)"
    );
    assert_eq!(
        cell(false, "drain", &[], Some("timed out")).describe(),
        "missed (timed out)"
    );
    assert_eq!(
        cell(false, "drain", &[], None).describe(),
        "missed (the case passed)"
    );
}

#[test]
fn bare_boolean_cells_of_older_bundles_load_and_full_cells_keep_every_field() {
    let m: KillMatrix = serde_json::from_str(
        r#"{"mutants": {"m1": {"c1": true, "c2": false},
            "m2": {"c1": {"caught": false, "check": "x", "failed_checks": ["y"], "reason": "r"}}}}"#,
    )
    .unwrap();
    assert!(m.mutants["m1"]["c1"].caught);
    assert!(!m.mutants["m1"]["c2"].caught);
    assert_eq!(m.mutants["m1"]["c1"].check, "");
    let c = &m.mutants["m2"]["c1"];
    assert_eq!(
        (
            c.caught,
            c.check.as_str(),
            c.failed_checks.as_slice(),
            c.reason.as_deref()
        ),
        (false, "x", ["y".to_string()].as_slice(), Some("r"))
    );
    assert_eq!(m.survivors(), vec!["m1", "m2"]);
    assert_eq!(m.cases(), vec!["c1", "c2"]);
    // Empty fields stay out of the file.
    let text = serde_json::to_string(&m.mutants["m1"]["c1"]).unwrap();
    assert_eq!(text, r#"{"caught":true}"#);
}

#[test]
fn recording_a_cell_again_replaces_it() {
    let mut m = KillMatrix::default();
    m.record("m", "c", false);
    m.record("m", "c", true);
    assert_eq!(m.mutants["m"].len(), 1);
    assert!(m.survivors().is_empty());
}
