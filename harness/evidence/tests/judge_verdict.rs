//! How a case's assessment and its ending become a verdict: every check is recorded, a timeout
//! is never a pass, only an uninjectable fault excuses a case, and the failed checks the
//! self-test matches are exactly the ones that did not hold.

use proptest::prelude::*;
use rehearsal_evidence::bundle::Verdict;
use rehearsal_evidence::judge::verdict::{CheckResult, Checks, Ending, NotPassed, verdict};

#[test]
fn each_ending_maps_to_its_verdict_reason_and_checks() {
    assert_eq!(verdict(Ending::Passed), (Verdict::Passed, None, vec![]));
    assert_eq!(
        verdict(Ending::Interrupted(
            "interrupted by SIGINT before step \"x\"".into()
        )),
        (
            Verdict::Interrupted,
            Some("interrupted by SIGINT before step \"x\"".into()),
            vec![]
        )
    );
    assert_eq!(
        verdict(Ending::NotApplicable("no node access".into())),
        (
            Verdict::NotApplicable,
            Some("not applicable on this cluster: no node access".into()),
            vec![]
        )
    );
    assert_eq!(
        verdict(Ending::Failed {
            message: "check drain: …".into(),
            checks: vec!["drain".into(), "save-on".into()],
        }),
        (
            Verdict::Failed,
            Some("check drain: …".into()),
            vec!["drain".into(), "save-on".into()]
        )
    );
    assert_eq!(
        verdict(Ending::Failed {
            message: "evidence absent: log: empty".into(),
            checks: vec![],
        }),
        (
            Verdict::Failed,
            Some("evidence absent: log: empty".into()),
            vec![]
        )
    );
}

#[test]
fn a_check_records_what_it_looked_at() {
    let mut c = Checks::new();
    assert!(c.results().is_empty());
    assert!(c.all_passed(), "no check is no failure");
    assert!(c.check("drain", true, "job ns/j", "status.active", "0", 0));
    assert!(!c.check("save-on", false, "game ns/mc", "save-on", "once", vec!["x"]));
    assert!(c.eq("phase", "backup ns/b", "status.phase", "Failed", "Failed"));
    assert!(!c.eq("uid", "pvc ns/p", "metadata.uid", 1, 2));
    assert!(!c.all_passed());
    assert_eq!(
        c.results(),
        &[
            CheckResult {
                check: "drain",
                passed: true,
                object: "job ns/j".into(),
                field: "status.active".into(),
                expected: "0".into(),
                observed: "0".into(),
            },
            CheckResult {
                check: "save-on",
                passed: false,
                object: "game ns/mc".into(),
                field: "save-on".into(),
                expected: "once".into(),
                observed: "[\"x\"]".into(),
            },
            CheckResult {
                check: "phase",
                passed: true,
                object: "backup ns/b".into(),
                field: "status.phase".into(),
                expected: "\"Failed\"".into(),
                observed: "\"Failed\"".into(),
            },
            CheckResult {
                check: "uid",
                passed: false,
                object: "pvc ns/p".into(),
                field: "metadata.uid".into(),
                expected: "1".into(),
                observed: "2".into(),
            },
        ]
    );
    let e = c.finish().unwrap_err();
    assert_eq!(e.check_ids(), vec!["save-on", "uid"]);
    assert!(e.timeouts.is_empty());
    assert_eq!(
        e.to_string(),
        "check save-on: game ns/mc: expected save-on once, observed [\"x\"]; \
         check uid: pvc ns/p: expected metadata.uid 1, observed 2"
    );
}

#[test]
fn a_timeout_is_never_a_pass_and_names_no_check() {
    let mut c = Checks::new();
    c.eq("same", "o", "f", 1, 1);
    let e = c.finish_after(vec!["w: timed out".into()]).unwrap_err();
    assert!(e.check_ids().is_empty());
    assert_eq!(e.to_string(), "timed out: w: timed out");
    let mut c = Checks::new();
    c.eq("differs", "o", "f", 1, 2);
    let e = c
        .finish_after(vec!["a: timed out".into(), "b: timed out".into()])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "check differs: o: expected f 1, observed 2; timed out: a: timed out; b: timed out"
    );
    let mut c = Checks::new();
    c.eq("same", "o", "f", 1, 1);
    assert_eq!(c.finish().unwrap().len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// For any assessment: it passes exactly when every check held and no wait timed out; what
    /// did not pass lists exactly the failed checks, in order, and every timeout; and the
    /// verdict of that failure names exactly those checks.
    #[test]
    fn an_assessment_passes_only_when_every_check_held_and_nothing_timed_out(
        outcomes in prop::collection::vec(any::<bool>(), 0..8),
        timeouts in prop::collection::vec("[a-z]{1,6}: timed out", 0..3),
    ) {
        const IDS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
        let mut c = Checks::new();
        for (i, passed) in outcomes.iter().enumerate() {
            prop_assert_eq!(c.check(IDS[i], *passed, "o", "f", "x", "y"), *passed);
        }
        prop_assert_eq!(c.all_passed(), outcomes.iter().all(|p| *p));
        let failed: Vec<String> = outcomes
            .iter()
            .enumerate()
            .filter(|(_, p)| !**p)
            .map(|(i, _)| IDS[i].to_string())
            .collect();
        match c.finish_after(timeouts.clone()) {
            Ok(results) => {
                prop_assert!(failed.is_empty() && timeouts.is_empty());
                prop_assert_eq!(results.len(), outcomes.len());
            }
            Err(NotPassed { failed: f, timeouts: t }) => {
                prop_assert!(!failed.is_empty() || !timeouts.is_empty());
                let ids: Vec<String> = f.iter().map(|r| r.check.to_string()).collect();
                prop_assert_eq!(&ids, &failed);
                prop_assert!(f.iter().all(|r| !r.passed));
                prop_assert_eq!(&t, &timeouts);
                let not_passed = NotPassed { failed: f, timeouts: t };
                let message = not_passed.to_string();
                prop_assert!(!message.is_empty());
                for id in &failed {
                    let needle = format!("check {id}: ");
                    prop_assert!(message.contains(&needle));
                }
                for t in &timeouts {
                    prop_assert!(message.contains(t.as_str()));
                }
                let (v, reason, checks) = verdict(Ending::Failed {
                    message: message.clone(),
                    checks: not_passed.check_ids(),
                });
                prop_assert_eq!(v, Verdict::Failed);
                prop_assert_eq!(reason, Some(message));
                prop_assert_eq!(checks, failed);
            }
        }
    }
}
