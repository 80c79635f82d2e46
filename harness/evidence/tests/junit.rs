//! JUnit from a summary: every verdict maps to its element, and nothing a CI system reads as a
//! pass hides a failure.

mod support;

use rehearsal_evidence::bundle::Verdict;
use rehearsal_evidence::report::junit;
use rehearsal_evidence::summary::{BundleSummary, CaseSummary, JournalAnchor};

fn summary(
    arch: &str,
    interrupted: bool,
    cases: &[(&str, Verdict, Option<&str>, u64)],
) -> BundleSummary {
    let start = jiff::Timestamp::from_second(1_780_000_000).unwrap();
    BundleSummary {
        format: 1,
        meta: support::meta(&format!("run-{arch}"), arch),
        started: start + jiff::SignedDuration::from_millis(250),
        finished: start + jiff::SignedDuration::from_secs(9),
        interrupted,
        cases: cases
            .iter()
            .map(|(name, verdict, reason, ms)| CaseSummary {
                name: (*name).into(),
                bucket: "backup".into(),
                verdict: *verdict,
                duration_ms: *ms,
                evidence_used: vec![],
                reason: reason.map(str::to_owned),
                failed_checks: vec![],
                lines: (2, 3),
            })
            .collect(),
        journal: JournalAnchor {
            file: "receipts.jsonl".into(),
            entries: 4,
            head_sha256: "0".repeat(64),
        },
        kill_matrix: None,
    }
}

/// The `<testcase …>…</testcase>` (or self-closed) element of `name`.
fn element<'a>(xml: &'a str, name: &str) -> &'a str {
    let start = xml
        .find(&format!("<testcase name=\"{name}\""))
        .unwrap_or_else(|| panic!("no testcase {name} in {xml}"));
    let rest = &xml[start..];
    let open_end = rest.find('>').unwrap();
    if rest[..open_end].ends_with('/') {
        &rest[..=open_end]
    } else {
        &rest[..rest.find("</testcase>").unwrap() + "</testcase>".len()]
    }
}

#[test]
fn every_verdict_maps_to_its_element() {
    let s = summary(
        "amd64",
        false,
        &[
            ("p", Verdict::Passed, None, 1500),
            ("f", Verdict::Failed, Some("check drain failed"), 2000),
            ("i", Verdict::Interrupted, Some("the run ended"), 10),
            ("s", Verdict::Skipped, Some("skipped by filter"), 0),
            ("n", Verdict::NotApplicable, Some("no node access"), 0),
            (
                "n2",
                Verdict::NotApplicable,
                Some("not applicable on this cluster: x"),
                0,
            ),
        ],
    );
    let xml = junit::render(&[&s]);
    assert!(xml.contains("tests=\"6\""), "{xml}");
    assert!(xml.contains("failures=\"1\""), "{xml}");
    assert!(xml.contains("errors=\"1\""), "{xml}");
    assert!(xml.contains("skipped=\"3\""), "{xml}");

    let p = element(&xml, "p");
    assert!(
        !p.contains("<failure") && !p.contains("<error") && !p.contains("<skipped"),
        "{p}"
    );
    assert!(
        p.contains("classname=\"backup.amd64\"") && p.contains("time=\"1.500\""),
        "{p}"
    );

    let f = element(&xml, "f");
    assert!(f.contains("<failure message=\"check drain failed\""), "{f}");
    let i = element(&xml, "i");
    assert!(
        i.contains("<error") && i.contains("type=\"interrupted\""),
        "{i}"
    );
    assert!(i.contains("message=\"the run ended\""), "{i}");
    let sk = element(&xml, "s");
    assert!(
        sk.contains("<skipped message=\"skipped by filter\""),
        "{sk}"
    );
    let n = element(&xml, "n");
    assert!(
        n.contains("<skipped message=\"not applicable on this cluster: no node access\""),
        "{n}"
    );
    // Never said twice.
    let n2 = element(&xml, "n2");
    assert!(
        n2.contains("message=\"not applicable on this cluster: x\""),
        "{n2}"
    );
}

#[test]
fn one_suite_per_run_with_its_properties_time_and_timestamp() {
    let a = summary(
        "amd64",
        false,
        &[
            ("c", Verdict::Passed, None, 1200),
            ("d", Verdict::Passed, None, 300),
        ],
    );
    let b = summary("arm64", true, &[("c", Verdict::Failed, Some("r"), 5)]);
    let xml = junit::render(&[&a, &b]);
    let amd = xml.find("<testsuite name=\"rehearsal-amd64\"").unwrap();
    let arm = xml.find("<testsuite name=\"rehearsal-arm64\"").unwrap();
    assert!(amd < arm, "in the order given: {xml}");
    let amd_suite = &xml[amd..arm];
    assert!(
        amd_suite.contains("tests=\"2\"") && amd_suite.contains("time=\"1.500\""),
        "{amd_suite}"
    );
    assert!(
        amd_suite.contains("timestamp=\"2026-05-28T20:26:40.250+00:00\""),
        "{amd_suite}"
    );
    for (name, value) in [
        ("run_id", "run-amd64"),
        ("commit", "c0ffee"),
        ("operator", "reference-operator"),
        ("operator_version", "0.1.0"),
        ("arch", "amd64"),
        ("interrupted", "false"),
    ] {
        assert!(
            amd_suite.contains(&format!("<property name=\"{name}\" value=\"{value}\"/>")),
            "{name}: {amd_suite}"
        );
    }
    assert!(
        xml[arm..].contains("<property name=\"interrupted\" value=\"true\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<testsuites name=\"rehearsal\" tests=\"3\" skipped=\"0\" failures=\"1\" errors=\"0\">"
        ),
        "{xml}"
    );
}
