//! Reports rendered from the committed fixture bundles: insta snapshots of one bundle and of an
//! amd64 + arm64 merge with one disagreeing verdict, and byte-for-byte reproducibility.
//!
//! `REHEARSAL_UPDATE_FIXTURES=1` rewrites `fixtures/bundles/sample-*` from the writer API.

mod report_support;

use std::path::{Path, PathBuf};

use rehearsal::evidence::bundle::Verdict;
use rehearsal::report::{self, Format, Report};
use report_support::{AMD64, ARM64, Variant, fixtures_dir, write_sample};

fn fixture(v: &Variant) -> PathBuf {
    fixtures_dir().join(format!("sample-{}", v.arch))
}

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn committed_fixtures_are_what_the_writer_produces() {
    let update = std::env::var("REHEARSAL_UPDATE_FIXTURES").is_ok_and(|v| v == "1");
    for v in [&AMD64, &ARM64] {
        let committed = fixture(v);
        if update {
            if committed.exists() {
                std::fs::remove_dir_all(&committed).unwrap();
            }
            write_sample(&committed, v);
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let fresh = tmp.path().join("bundle");
        write_sample(&fresh, v);
        let (a, b) = (files(&committed), files(&fresh));
        assert_eq!(
            a,
            b,
            "{} lists different files; rerun with REHEARSAL_UPDATE_FIXTURES=1",
            committed.display()
        );
        for f in a {
            assert!(
                std::fs::read(committed.join(&f)).unwrap()
                    == std::fs::read(fresh.join(&f)).unwrap(),
                "{} differs from the writer's output; rerun with REHEARSAL_UPDATE_FIXTURES=1",
                committed.join(&f).display()
            );
        }
    }
}

fn merged(variants: &[&Variant]) -> Report {
    let bundles = variants
        .iter()
        .map(|v| report::load(fixture(v)).unwrap_or_else(|e| panic!("fixture must load: {e}")))
        .collect();
    Report::merge(bundles, &fixtures_dir().join("report")).unwrap()
}

#[test]
fn single_bundle_markdown_and_html() {
    let r = merged(&[&AMD64]);
    assert!(r.disagreements.is_empty());
    assert_eq!(r.cases.len(), 4);
    insta::assert_snapshot!(
        "single_amd64_markdown",
        report::render(&r, Format::Markdown)
    );
    insta::assert_snapshot!("single_amd64_html", report::render(&r, Format::Html));
}

#[test]
fn two_architecture_merge_calls_out_the_disagreement() {
    let r = merged(&[&ARM64, &AMD64]);
    assert_eq!(r.arches, vec!["amd64", "arm64"]);
    assert_eq!(r.disagreements.len(), 1);
    let d = &r.disagreements[0];
    assert_eq!(d.case, "http-only-candidate");
    assert_eq!(
        d.verdicts,
        vec![
            ("amd64".to_string(), Some(Verdict::Passed)),
            ("arm64".to_string(), Some(Verdict::Failed))
        ]
    );
    let md = report::render(&r, Format::Markdown);
    let warning = md.find("Architectures disagree").expect("callout present");
    assert!(
        warning < md.find("## Verdicts").unwrap(),
        "the callout must come first"
    );
    insta::assert_snapshot!("merge_markdown", md);
    insta::assert_snapshot!("merge_html", report::render(&r, Format::Html));
    insta::assert_snapshot!("merge_junit", report::render(&r, Format::Junit));
    insta::assert_snapshot!("merge_json", report::render(&r, Format::Json));
}

#[test]
fn the_report_shows_the_evidence_it_rests_on() {
    let r = merged(&[&AMD64, &ARM64]);
    let md = report::render(&r, Format::Markdown);
    for needle in [
        "`8a41c0b7`",                       // restic snapshot id
        "`restore-clone-2` of `8a41c0b7`",  // restore id
        "| Primary world | `clone-data` |", // PVC UID table
        "RCON audit log",                   // evidence used
        "../sample-amd64/receipts.jsonl#L", // link into the raw receipts
        "`skip-incarnation-check`",         // kill matrix
        "../sample-amd64/cases/live-backup-same-pod-game-restart/artifacts/rcon-audit.log",
    ] {
        assert!(md.contains(needle), "report lacks {needle}");
    }
    // The fixture records an RCON password; the report (like the receipts) must not show it.
    assert!(!md.contains("fixture-only-rcon-pw"));
    let html = report::render(&r, Format::Html);
    assert!(!html.contains("fixture-only-rcon-pw"));
    assert!(!html.contains("<script"), "the page must not run scripts");
    let without_svg_ns = html.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !without_svg_ns.contains("http://") && !without_svg_ns.contains("https://"),
        "the page must not load anything from the network"
    );
}

#[test]
fn the_same_bundles_give_byte_identical_reports_wherever_they_are() {
    let render_in = |root: &Path| -> Vec<(Format, String)> {
        let out = root.join("out");
        let mut bundles = Vec::new();
        for v in [&AMD64, &ARM64] {
            let dir = root.join(format!("sample-{}", v.arch));
            copy_dir(&fixture(v), &dir);
            bundles.push(report::load(&dir).unwrap());
        }
        let r = Report::merge(bundles, &out).unwrap();
        let written = report::write(&r, &Format::ALL, &out).unwrap();
        assert_eq!(written.len(), 4);
        Format::ALL
            .iter()
            .map(|f| {
                (
                    *f,
                    std::fs::read_to_string(out.join(f.file_name())).unwrap(),
                )
            })
            .collect()
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = render_in(a.path());
    let second = render_in(b.path());
    for ((f, x), (_, y)) in first.iter().zip(&second) {
        assert!(
            x == y,
            "{f:?} output differs between two renders of the same bundles"
        );
    }
    // And it is the same as the snapshot of the committed fixtures (same relative layout).
    let r = merged(&[&AMD64, &ARM64]);
    assert_eq!(first[0].1, report::render(&r, Format::Markdown));
}

fn copy_dir(from: &Path, to: &Path) {
    for f in files(from) {
        let target = to.join(&f);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(from.join(&f), target).unwrap();
    }
}
