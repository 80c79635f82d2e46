//! The PVC identity check cases make: every claim observed before keeps its UID, and the claims
//! that appeared are exactly the ones the operation is expected to create.

use proptest::prelude::*;
use rehearsal_evidence::pvc_table::{PvcObservation, compare};

fn obs(claim: &str, uid: &str) -> PvcObservation {
    PvcObservation::classify("gs", claim, uid, None)
}

fn names(c: &[&str]) -> Vec<String> {
    c.iter().map(|s| s.to_string()).collect()
}

#[test]
fn only_the_expected_claims_may_appear_and_none_may_change() {
    let before = [obs("gs-data", "1"), obs("gs-extra-n", "2")];
    let same = [obs("gs-extra-n", "2"), obs("gs-data", "1")];
    assert!(compare(&before, &same).only_expected_new(&before, &[]));
    let grown = [
        obs("gs-data", "1"),
        obs("gs-extra-n", "2"),
        obs("gs-mods-2", "3"),
        obs("gs-mods-3", "4"),
    ];
    let c = compare(&before, &grown);
    assert!(
        c.only_expected_new(&before, &names(&["gs-mods-3", "gs-mods-2"])),
        "any order"
    );
    assert!(
        !c.only_expected_new(&before, &names(&["gs-mods-2"])),
        "one more appeared"
    );
    assert!(!c.only_expected_new(&before, &[]));
    let shrunk = [obs("gs-data", "1")];
    assert!(
        !compare(&before, &shrunk).only_expected_new(&before, &[]),
        "a claim vanished"
    );
    let recreated = [obs("gs-data", "9"), obs("gs-extra-n", "2")];
    assert!(
        !compare(&before, &recreated).only_expected_new(&before, &[]),
        "a UID changed"
    );
    // Nothing observed before proves nothing kept.
    assert!(!compare(&[], &[]).only_expected_new(&[], &[]));
    assert!(!compare(&[], &same).only_expected_new(&[], &names(&["gs-data", "gs-extra-n"])));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// For any before and after over a few claims: the check holds exactly when before is not
    /// empty, every claim before is after with its UID, and the new claims are the expected ones.
    #[test]
    fn the_check_holds_exactly_when_identities_kept_and_only_expected_appeared(
        before in prop::collection::btree_map(0..6usize, 0..3u8, 0..5),
        after in prop::collection::btree_map(0..6usize, 0..3u8, 0..6),
        expected in prop::collection::btree_set(0..6usize, 0..3),
    ) {
        let o = |m: &std::collections::BTreeMap<usize, u8>| -> Vec<PvcObservation> {
            m.iter().map(|(c, u)| obs(&format!("gs-c{c}"), &u.to_string())).collect()
        };
        let (b, a) = (o(&before), o(&after));
        let expected_new: Vec<String> = expected.iter().rev().map(|c| format!("gs-c{c}")).collect();
        let kept = before.iter().all(|(c, u)| after.get(c) == Some(u));
        let appeared: std::collections::BTreeSet<usize> =
            after.keys().filter(|c| !before.contains_key(c)).copied().collect();
        let holds = !before.is_empty() && kept && appeared == expected;
        prop_assert_eq!(compare(&b, &a).only_expected_new(&b, &expected_new), holds);
    }
}
