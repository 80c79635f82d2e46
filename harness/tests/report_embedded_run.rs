//! The report of a real rehearsal: `fixtures/bundles/embedded-amd64` is the bundle a full
//! `rehearse run` on the embedded cluster wrote (every case, real operator, real restic). Its
//! Markdown and HTML are snapshots, so a change to rendering shows up as a reviewable diff.
//!
//! To refresh the fixture after the cases change: `rehearse run --reports /tmp/r`, then copy
//! `bundle.json`, `receipts.jsonl`, `junit.xml` and `cases/` of the new bundle over it.

use std::path::PathBuf;

use rehearsal::report::{self, Format, Report};

fn bundle() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/bundles/embedded-amd64")
}

fn report() -> Report {
    let loaded = report::load(bundle())
        .unwrap_or_else(|e| panic!("the committed real bundle must load: {e}"));
    Report::merge(vec![loaded], &bundle().join("..").join("report")).unwrap()
}

#[test]
fn the_real_bundle_verifies_and_every_case_passed() {
    rehearsal::evidence::receipts::verify(bundle().join("receipts.jsonl")).expect("chain verifies");
    let md = report::render(&report(), Format::Markdown);
    assert!(md.contains("35 passed"), "{md}");
    for case in rehearsal::cases::CASES {
        assert!(
            md.contains(case.name),
            "the report lacks case {}",
            case.name
        );
    }
}

#[test]
fn markdown_of_a_real_run() {
    insta::assert_snapshot!(
        "embedded_amd64_markdown",
        report::render(&report(), Format::Markdown)
    );
}

#[test]
fn html_of_a_real_run() {
    insta::assert_snapshot!(
        "embedded_amd64_html",
        report::render(&report(), Format::Html)
    );
}

/// The waits a real run wrote read back as typed observations: `rehearse bench`'s critical
/// path names, under a slow step, the wait it spent its time in and what woke it.
#[test]
fn the_real_bundle_profiles_its_waits() {
    let mut profile = rehearsal::cli::profile::Profile::default();
    profile
        .add_bundle(&bundle())
        .unwrap_or_else(|e| panic!("the committed real bundle must profile: {e}"));
    let waits: usize = profile.waits.values().map(|w| w.len()).sum();
    assert!(waits > 0, "no wait receipts read from the real bundle");
    let out = profile.render();
    assert!(out.contains("      wait "), "{out}");
    assert!(out.contains("        woken by: "), "{out}");
}
