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

use rehearsal_evidence::pvc_table::{
    PvcChange, PvcObserved, PvcPhase, PvcRow, PvcSide, PvcTable, Role, build,
};

fn bound(claim: &str, uid: &str, volume: Option<&str>) -> PvcObservation {
    PvcObservation::classify("gs", claim, uid, volume)
}

#[test]
fn claims_are_classified_and_labelled_by_gameplane_naming() {
    for (claim, role, label) in [
        ("gs-data", Role::PrimaryWorld, "Primary world"),
        ("gs-extra-nether", Role::ExtraWorld, "Extra world"),
        ("gs-mods-1-21-4", Role::RebuildableMods, "Rebuildable mods"),
        ("gs-data-old", Role::Other, "Other"),
        ("gsx-data", Role::Other, "Other"),
        ("other-data", Role::Other, "Other"),
        ("gs-extra", Role::Other, "Other"),
    ] {
        assert_eq!(Role::classify("gs", claim), role, "{claim}");
        assert_eq!(role.label(), label);
    }
    assert_eq!(PvcPhase::Before.as_str(), "before");
    assert_eq!(PvcPhase::After.as_str(), "after");
}

#[test]
fn a_table_pairs_the_first_before_with_the_last_after() {
    let table = build([
        PvcObserved {
            phase: PvcPhase::Before,
            claims: vec![
                bound("gs-data", "1", Some("pv-1")),
                bound("gs-extra-n", "2", None),
                bound("gs-extra-v", "5", Some("pv-5")),
                bound("gs-mods-1", "3", Some("pv-3")),
            ],
        },
        // A later "before" does not move the baseline.
        PvcObserved {
            phase: PvcPhase::Before,
            claims: vec![bound("gs-data", "9", Some("pv-9"))],
        },
        PvcObserved {
            phase: PvcPhase::After,
            claims: vec![bound("gs-data", "8", Some("pv-8"))],
        },
        PvcObserved {
            phase: PvcPhase::After,
            claims: vec![
                bound("gs-data", "1", Some("pv-1")),
                // First bound after the baseline (WaitForFirstConsumer): same identity.
                bound("gs-extra-n", "2", Some("pv-2")),
                // Same UID, another volume: replaced.
                bound("gs-extra-v", "5", Some("pv-6")),
                bound("gs-mods-2", "4", Some("pv-4")),
            ],
        },
    ]);
    let change: Vec<(&str, PvcChange)> = table
        .rows
        .iter()
        .map(|r| (r.claim.as_str(), r.change()))
        .collect();
    assert_eq!(
        change,
        vec![
            ("gs-data", PvcChange::Kept),
            ("gs-extra-n", PvcChange::Kept),
            ("gs-extra-v", PvcChange::Replaced),
            ("gs-mods-1", PvcChange::Vanished),
            ("gs-mods-2", PvcChange::Appeared),
        ],
        "rows by role, then claim"
    );
    assert!(!table.all_unchanged());
    assert!(!table.is_empty());
    assert_eq!(
        table.to_markdown(),
        "| PVC | Claim | Before | After | Volume | Identity |\n|---|---|---|---|---|---|\n\
         | Primary world | `gs-data` | `1` | `1` | `pv-1` | kept |\n\
         | Extra world | `gs-extra-n` | `2` | `2` | `-` → `pv-2` | kept |\n\
         | Extra world | `gs-extra-v` | `5` | `5` | `pv-5` → `pv-6` | **replaced** |\n\
         | Rebuildable mods | `gs-mods-1` | `3` | not observed | `pv-3` → `-` | **vanished** |\n\
         | Rebuildable mods | `gs-mods-2` | not observed | `4` | `-` → `pv-4` | appeared |\n"
    );
    // Only what existed before counts: an appeared claim changes nothing.
    let kept = PvcTable {
        rows: table
            .rows
            .iter()
            .filter(|r| matches!(r.change(), PvcChange::Kept | PvcChange::Appeared))
            .cloned()
            .collect(),
    };
    assert!(kept.all_unchanged());
    assert!(PvcTable::default().is_empty());
    assert!(PvcTable::default().all_unchanged());
    assert_eq!(PvcChange::Kept.label(), "kept");
    assert_eq!(PvcChange::Replaced.label(), "**replaced**");
    assert_eq!(PvcChange::Appeared.label(), "appeared");
    assert_eq!(PvcChange::Vanished.label(), "**vanished**");
}

#[test]
fn a_row_says_what_happened_to_its_claim() {
    let side = |uid: &str| {
        Some(PvcSide {
            uid: uid.into(),
            volume: None,
        })
    };
    let row = |before, after, unchanged| PvcRow {
        claim: "gs-data".into(),
        role: Role::PrimaryWorld,
        before,
        after,
        unchanged,
    };
    assert_eq!(row(side("1"), side("1"), true).change(), PvcChange::Kept);
    assert_eq!(
        row(side("1"), side("2"), false).change(),
        PvcChange::Replaced
    );
    assert_eq!(row(None, side("1"), false).change(), PvcChange::Appeared);
    assert_eq!(row(None, None, false).change(), PvcChange::Appeared);
    assert_eq!(row(side("1"), None, false).change(), PvcChange::Vanished);
}

#[test]
fn the_defective_positional_comparison_pairs_by_position() {
    // `compare_zip` is the `harness-pvc-compare-zip` mutant's comparison: kept here as what
    // that defect does, so the self-test's mutant stays the defect it names.
    use rehearsal_evidence::pvc_table::compare_zip;
    let before = [obs("gs-data", "1"), obs("gs-extra-n", "2")];
    let after = [
        obs("gs-extra-n", "2"),
        obs("gs-data", "1"),
        obs("gs-mods-2", "3"),
    ];
    let z = compare_zip(&before, &after);
    assert!(z.kept.is_empty());
    assert_eq!(
        z.changed,
        vec![
            ("gs-data".to_string(), "1".to_string(), "2".to_string()),
            ("gs-extra-n".to_string(), "2".to_string(), "1".to_string()),
        ]
    );
    assert!(z.appeared.is_empty() && z.vanished.is_empty());
    let same = compare_zip(&before, &before);
    assert_eq!(same.kept, names(&["gs-data", "gs-extra-n"]));
    assert!(same.changed.is_empty());
}
