//! Merging bundles into one report: for any bundles over any architectures, every case appears
//! once with each architecture's verdict, a case missing on one architecture or judged
//! differently is a disagreement, and the order the bundles are given in never changes a byte.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use rehearsal_evidence::bundle::{KillMatrix, Verdict};
use rehearsal_evidence::pvc_table::PvcTable;
use rehearsal_evidence::report::load::LoadedCase;
use rehearsal_evidence::report::{Format, LoadedBundle, MergeError, Report, render};
use rehearsal_evidence::summary::{BundleSummary, CaseSummary, JournalAnchor};

const ARCHES: [&str; 3] = ["amd64", "arm64", "riscv64"];
const CASES: [(&str, &str); 5] = [
    ("live_backup", "backup"),
    ("stopped_backup", "backup"),
    ("restore_round_trip", "backup"),
    ("unpullable", "rollout"),
    ("format_change", "rollout"),
];

/// A bundle as [`rehearsal_evidence::report::load`] returns it, built in memory.
fn loaded(arch: &str, run: usize, commit: &str, cases: &[(usize, Verdict)]) -> LoadedBundle {
    let t = jiff::Timestamp::from_second(1_780_000_000).unwrap();
    let mut meta = support::meta(&format!("run-{arch}-{run}"), arch);
    meta.commit = commit.into();
    let summaries: Vec<CaseSummary> = cases
        .iter()
        .enumerate()
        .map(|(i, (c, v))| CaseSummary {
            name: CASES[*c].0.into(),
            bucket: CASES[*c].1.into(),
            verdict: *v,
            duration_ms: 100 * (*c as u64 + 1),
            evidence_used: vec!["pod UID".into()],
            reason: (*v != Verdict::Passed).then(|| format!("{v} on {arch}")),
            failed_checks: vec![],
            lines: (2 + 2 * i, 3 + 2 * i),
        })
        .collect();
    let summary = BundleSummary {
        format: 1,
        meta,
        started: t,
        finished: t + jiff::SignedDuration::from_secs(5),
        interrupted: false,
        cases: summaries.clone(),
        journal: JournalAnchor {
            file: "receipts.jsonl".into(),
            entries: 2 + 2 * cases.len() as u64,
            head_sha256: "0".repeat(64),
        },
        kill_matrix: None,
    };
    LoadedBundle {
        dir: PathBuf::from(format!("/bundles/{arch}-{run}")),
        summary,
        killed: false,
        cases: summaries
            .into_iter()
            .map(|summary| LoadedCase {
                summary,
                steps: vec![],
                pvc_table: PvcTable::default(),
                snapshots: vec![],
                restores: vec![],
                artifacts: vec![],
            })
            .collect(),
        kill_matrix: None,
    }
}

/// Any report input: for each architecture, a verdict per case it ran, split over one or two
/// bundles (CI writes one bundle per case or bucket).
fn inputs() -> impl Strategy<Value = BTreeMap<String, Vec<Vec<(usize, Verdict)>>>> {
    let verdict = (0..support::VERDICTS.len()).prop_map(|v| support::VERDICTS[v]);
    let arch_run = (
        prop::collection::btree_map(0..CASES.len(), verdict, 0..=CASES.len()),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(cases, split)| {
            let cases: Vec<(usize, Verdict)> = cases.into_iter().collect();
            let at = split.index(cases.len() + 1);
            let (a, b) = cases.split_at(at);
            [a.to_vec(), b.to_vec()]
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
        });
    prop::collection::btree_map(
        prop::sample::select(ARCHES.to_vec()).prop_map(str::to_owned),
        arch_run,
        1..=ARCHES.len(),
    )
}

fn bundles(input: &BTreeMap<String, Vec<Vec<(usize, Verdict)>>>) -> Vec<LoadedBundle> {
    let mut out = Vec::new();
    for (arch, parts) in input {
        for (i, part) in parts.iter().enumerate() {
            out.push(loaded(arch, i, "c0ffee", part));
        }
        if parts.is_empty() {
            out.push(loaded(arch, 0, "c0ffee", &[]));
        }
    }
    out
}

fn rendered(report: &Report) -> Vec<String> {
    Format::ALL.iter().map(|f| render(report, *f)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_case_once_with_each_architectures_verdict_and_disagreements_exact(
        input in inputs()
    ) {
        let report = Report::merge(bundles(&input), Path::new("/reports")).unwrap();
        let arches: Vec<String> = input.keys().cloned().collect();
        prop_assert_eq!(&report.arches, &arches);
        // arch → case → verdict, as given.
        let mut given: BTreeMap<usize, BTreeMap<&str, Verdict>> = BTreeMap::new();
        for (arch, parts) in &input {
            for (c, v) in parts.iter().flatten() {
                given.entry(*c).or_default().insert(arch.as_str(), *v);
            }
        }
        let expected_names: BTreeSet<(&str, &str)> =
            given.keys().map(|c| (CASES[*c].1, CASES[*c].0)).collect();
        let names: Vec<(&str, &str)> =
            report.cases.iter().map(|c| (c.bucket.as_str(), c.name.as_str())).collect();
        prop_assert_eq!(names, expected_names.into_iter().collect::<Vec<_>>());
        let mut expected_disagreements = Vec::new();
        for case in &report.cases {
            let c = CASES.iter().position(|(n, _)| *n == case.name).unwrap();
            let per_arch = &given[&c];
            for arch in &arches {
                let v = case.results.get(arch).map(|r| r.case.summary.verdict);
                prop_assert_eq!(v, per_arch.get(arch.as_str()).copied());
            }
            let verdicts: BTreeSet<Option<Verdict>> = arches
                .iter()
                .map(|a| per_arch.get(a.as_str()).copied())
                .collect();
            if verdicts.len() > 1 {
                expected_disagreements.push(case.name.clone());
            }
        }
        let found: Vec<String> = report.disagreements.iter().map(|d| d.case.clone()).collect();
        prop_assert_eq!(found, expected_disagreements);
        for d in &report.disagreements {
            prop_assert_eq!(d.verdicts.len(), arches.len());
        }
        for arch in &arches {
            let mut totals: BTreeMap<Verdict, usize> = BTreeMap::new();
            for (c, v) in input[arch].iter().flatten() {
                let _ = c;
                *totals.entry(*v).or_default() += 1;
            }
            prop_assert_eq!(report.totals(arch), totals);
        }
        prop_assert_eq!(report.runs.len(), report.summaries.len());
    }

    #[test]
    fn the_order_bundles_are_given_in_changes_no_byte(
        input in inputs(), seed in any::<u64>()
    ) {
        let given = bundles(&input);
        let mut shuffled = given.clone();
        // A deterministic permutation from the seed.
        let n = shuffled.len();
        let mut s = seed;
        for i in (1..n).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (s >> 33) as usize % (i + 1));
        }
        let a = Report::merge(given, Path::new("/reports")).unwrap();
        let b = Report::merge(shuffled, Path::new("/reports")).unwrap();
        prop_assert_eq!(rendered(&a), rendered(&b));
    }
}

#[test]
fn a_case_run_on_one_architecture_only_is_a_disagreement() {
    let report = Report::merge(
        vec![
            loaded(
                "amd64",
                0,
                "c0ffee",
                &[(0, Verdict::Passed), (1, Verdict::Passed)],
            ),
            loaded("arm64", 0, "c0ffee", &[(0, Verdict::Passed)]),
        ],
        Path::new("/reports"),
    )
    .unwrap();
    assert_eq!(report.disagreements.len(), 1);
    let d = &report.disagreements[0];
    assert_eq!(d.case, "stopped_backup");
    assert_eq!(
        d.verdicts,
        vec![
            ("amd64".to_string(), Some(Verdict::Passed)),
            ("arm64".to_string(), None)
        ]
    );
}

#[test]
fn what_cannot_be_merged_is_refused_naming_both_bundles() {
    assert!(matches!(
        Report::merge(vec![], Path::new("/r")),
        Err(MergeError::Empty)
    ));
    let e = Report::merge(
        vec![
            loaded("amd64", 0, "c0ffee", &[(0, Verdict::Passed)]),
            loaded("arm64", 0, "beef", &[(0, Verdict::Passed)]),
        ],
        Path::new("/r"),
    )
    .unwrap_err();
    assert!(matches!(e, MergeError::DifferentCommits { .. }), "{e}");
    assert!(e.to_string().contains("c0ffee vs beef"), "{e}");

    let e = Report::merge(
        vec![
            loaded("amd64", 0, "c0ffee", &[(0, Verdict::Passed)]),
            loaded("amd64", 1, "c0ffee", &[(0, Verdict::Failed)]),
        ],
        Path::new("/r"),
    )
    .unwrap_err();
    match e {
        MergeError::DuplicateCase { a, b, case, arch } => {
            assert_eq!(
                (a.as_str(), b.as_str()),
                ("/bundles/amd64-0", "/bundles/amd64-1")
            );
            assert_eq!((case.as_str(), arch.as_str()), ("live_backup", "amd64"));
        }
        other => panic!("{other}"),
    }
    // The same case on two architectures is what a merge is for.
    assert!(
        Report::merge(
            vec![
                loaded("amd64", 0, "c0ffee", &[(0, Verdict::Passed)]),
                loaded("arm64", 0, "c0ffee", &[(0, Verdict::Passed)]),
            ],
            Path::new("/r"),
        )
        .unwrap()
        .disagreements
        .is_empty()
    );
}

#[test]
fn kill_matrices_merge_per_architecture_and_a_cell_judged_twice_is_refused() {
    let with = |arch: &str, run: usize, mutant: &str, case: &str, caught: bool| {
        let mut b = loaded(arch, run, "c0ffee", &[]);
        let mut m = KillMatrix::default();
        m.record(mutant, case, caught);
        b.kill_matrix = Some(m);
        b
    };
    let report = Report::merge(
        vec![
            with("amd64", 0, "m1", "c1", true),
            with("amd64", 1, "m1", "c2", false),
            with("arm64", 0, "m1", "c1", true),
        ],
        Path::new("/r"),
    )
    .unwrap();
    let amd = &report.kill_matrices["amd64"];
    assert_eq!(amd.mutants["m1"].len(), 2);
    assert_eq!(amd.survivors(), vec!["m1"]);
    assert!(report.kill_matrices["arm64"].survivors().is_empty());

    let e = Report::merge(
        vec![
            with("amd64", 0, "m1", "c1", true),
            with("amd64", 1, "m1", "c1", false),
        ],
        Path::new("/r"),
    )
    .unwrap_err();
    match e {
        MergeError::DuplicateKill {
            mutant, case, arch, ..
        } => {
            assert_eq!(
                (mutant.as_str(), case.as_str(), arch.as_str()),
                ("m1", "c1", "amd64")
            )
        }
        other => panic!("{other}"),
    }
}

#[test]
fn runs_and_operators_are_listed_once_in_order() {
    let mut a = loaded("arm64", 0, "c0ffee", &[(0, Verdict::Passed)]);
    a.summary.meta.operator.version = "0.2.0".into();
    let b = loaded("amd64", 0, "c0ffee", &[(0, Verdict::Passed)]);
    let c = loaded("amd64", 1, "c0ffee", &[(1, Verdict::Passed)]);
    let report = Report::merge(vec![a, b, c], Path::new("/bundles")).unwrap();
    let runs: Vec<(&str, &str, &str)> = report
        .runs
        .iter()
        .map(|r| (r.arch.as_str(), r.run_id.as_str(), r.href.as_str()))
        .collect();
    assert_eq!(
        runs,
        vec![
            ("amd64", "run-amd64-0", "amd64-0"),
            ("amd64", "run-amd64-1", "amd64-1"),
            ("arm64", "run-arm64-0", "arm64-0"),
        ]
    );
    let ops: Vec<&str> = report
        .operators
        .iter()
        .map(|o| o.version.as_str())
        .collect();
    assert_eq!(ops, vec!["0.1.0", "0.2.0"]);
    assert_eq!(report.commit, "c0ffee");
    let case = &report.cases[0];
    assert_eq!(
        case.results["amd64"].receipts_href,
        "amd64-0/receipts.jsonl"
    );
    assert_eq!(case.results["amd64"].bundle_href, "amd64-0");
}

#[test]
fn durations_read_as_a_person_would_say_them() {
    use rehearsal_evidence::report::model::format_duration;
    assert_eq!(format_duration(0), "0 ms");
    assert_eq!(format_duration(999), "999 ms");
    assert_eq!(format_duration(1000), "1.0 s");
    assert_eq!(format_duration(12_345), "12.3 s");
    assert_eq!(format_duration(59_999), "59.9 s");
    assert_eq!(format_duration(60_000), "1 min 00 s");
    assert_eq!(format_duration(125_000), "2 min 05 s");
}
