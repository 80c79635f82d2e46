//! An exploration's bundle renders its point × fault matrix in the HTML report: one table per
//! operation, a cell per schedule that links to its case, `ok` or the invariants it broke.

mod support;

use rehearsal_evidence::bundle::Verdict;
use rehearsal_evidence::report::{Format, Report, load::load, render};
use support::CaseSpec;

fn schedule(name: &str, verdict: Verdict, checks: &[&str]) -> CaseSpec {
    let mut c = CaseSpec::passed(name).with(verdict);
    c.bucket = "explore".into();
    c.failed_checks = checks.iter().map(|s| s.to_string()).collect();
    c
}

/// A failed schedule with no failed check, ended for `reason`.
fn because(name: &str, reason: &str) -> CaseSpec {
    let mut c = schedule(name, Verdict::Failed, &[]);
    c.reason = Some(reason.into());
    c
}

/// The restore's reference run: its order orders the rows, not the labels' names.
fn reference() -> CaseSpec {
    let mut r = schedule("restore-reference", Verdict::Passed, &[]);
    r.placement = Some(vec!["patch restores live".into(), "create jobs".into()]);
    r
}

/// report.md draws the same matrix, from the same model, each cell linking to its section.
fn assert_markdown_matrix(md: &str) {
    let md_matrix = &md[md
        .find("## Exploration: point × fault")
        .expect("the markdown matrix")..md.find("## Verdicts").unwrap()];
    assert!(
        md_matrix.contains(
            "**6 schedules: 2 ok, 1 violated, 1 unknown, 1 not placed, 1 did not finish**"
        ),
        "{md_matrix}"
    );
    assert!(
        md_matrix.contains("| p01 | `create jobs` | [failed](#restorecreate_jobs1operator-restart) | [**data, drain**](#restorecreate_jobs1restore-deleted) |"),
        "{md_matrix}"
    );
    assert!(
        md_matrix.contains("| · | `patch backups/status live` | [unknown](#stopped-backuppatch_backupsstatus_live1server-started) |"),
        "{md_matrix}"
    );
}

#[test]
fn the_html_report_shows_each_operations_point_by_fault_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("run-1");
    let mut elsewhere = CaseSpec::passed("backup.create_jobs.1.not-a-schedule");
    elsewhere.bucket = "backup".into();
    support::write_bundle(
        &bundle,
        support::meta("run-1", "amd64"),
        &[
            reference(),
            schedule(
                "restore.patch_restores_live.1.restore-deleted",
                Verdict::Passed,
                &[],
            ),
            schedule(
                "restore.create_jobs.1.restore-deleted",
                Verdict::Failed,
                &["data", "drain"],
            ),
            schedule(
                "restore.create_jobs.1.operator-restart",
                Verdict::Failed,
                &[],
            ),
            schedule(
                "stopped-backup.create_jobs.1.server-started",
                Verdict::Passed,
                &[],
            ),
            because(
                "stopped-backup.patch_backups~status_live.1.server-started",
                "evidence absent: what invariant(s) cleanup read: cleanup: the RCON audit log could not be read",
            ),
            because(
                "stopped-backup.patch_backups~status_live.2.server-started",
                "not placed: the operation ended before the operator made write p05",
            ),
            elsewhere,
        ],
        None,
    );
    let report = Report::merge(vec![load(&bundle).unwrap()], dir.path()).unwrap();
    let html = render(&report, Format::Html);
    // The report opens with the matrix, before the verdicts.
    let matrix = &html[html.find("Exploration: point × fault").expect("the matrix")
        ..html.find("<h2>Verdicts</h2>").unwrap()];
    assert!(
        matrix.contains("<strong>6 schedules: 2 ok, 1 violated, 1 unknown, 1 not placed, 1 did not finish</strong>"),
        "{matrix}"
    );
    assert!(
        matrix.contains("<tr><td>·</td><td><code>patch backups/status live</code></td><td><a class=\"v-failed\" href=\"#stopped-backuppatch_backupsstatus_live1server-started\">unknown</a></td></tr>"),
        "{matrix}"
    );
    assert!(
        matrix.contains("<tr><td>·</td><td><code>patch backups/status live #2</code></td><td><a class=\"v-failed\" href=\"#stopped-backuppatch_backupsstatus_live2server-started\">not placed</a></td></tr>"),
        "{matrix}"
    );
    let md = render(&report, Format::Markdown);
    assert_markdown_matrix(&md);
    // A bundle with a case outside the exploration is a qualification report; one of
    // schedules only, an exploration report.
    assert!(md.starts_with("# Qualification report"), "{md}");
    assert!(matrix.contains("<h3><code>restore</code></h3>"), "{matrix}");
    assert!(
        matrix.contains("<h3><code>stopped-backup</code></h3>"),
        "{matrix}"
    );
    assert!(
        matrix.contains(
            "<th><code>operator-restart</code></th><th><code>restore-deleted</code></th>"
        ),
        "{matrix}"
    );
    assert!(
        matrix.contains("<tr><td>p00</td><td><code>patch restores live</code></td><td>·</td><td><a class=\"v-passed\" href=\"#restorepatch_restores_live1restore-deleted\">ok</a></td></tr>"),
        "{matrix}"
    );
    assert!(
        matrix.contains("<tr><td>p01</td><td><code>create jobs</code></td><td><a class=\"v-failed\" href=\"#restorecreate_jobs1operator-restart\">failed</a></td><td><a class=\"v-failed\" href=\"#restorecreate_jobs1restore-deleted\">data, drain</a></td></tr>"),
        "{matrix}"
    );
    assert!(
        !matrix.contains("reference"),
        "a reference run is no schedule"
    );
    assert!(!matrix.contains("not-a-schedule"), "only bucket explore");
    // Each linked case is rendered below under that anchor.
    assert!(html.contains("<h3 id=\"restorecreate_jobs1restore-deleted\">"));

    // A run without exploration has no matrix.
    let plain = dir.path().join("run-2");
    support::write_bundle(
        &plain,
        support::meta("run-2", "amd64"),
        &[CaseSpec::passed("live_backup")],
        None,
    );
    let report = Report::merge(vec![load(&plain).unwrap()], dir.path()).unwrap();
    assert!(!render(&report, Format::Html).contains("Exploration"));
}

/// An exploration run as four shards (`rehearse explore --shard K/4`: each with its own
/// reference runs, named with the shard) merges into the same matrix as one run of it.
#[test]
fn four_shard_bundles_merge_into_the_matrix_of_one_run() {
    use rehearsal_evidence::place::{Place, Shard, id};
    let labels = [
        "create jobs",
        "patch backups/status live",
        "create jobs",
        "patch backups live",
    ];
    let mut schedules = Vec::new();
    for (op, faults) in [
        (
            "backup",
            &["game-restart", "pod-replaced", "agent-restart"][..],
        ),
        ("restore", &["restore-deleted", "operator-restart"][..]),
    ] {
        for (i, place) in Place::all(&labels).into_iter().enumerate() {
            for (j, fault) in faults.iter().enumerate() {
                let name = id(op, &place, fault);
                schedules.push(match (i + j) % 4 {
                    0 => schedule(&name, Verdict::Failed, &["drain"]),
                    1 => because(&name, "not placed: the operation ended first"),
                    _ => schedule(&name, Verdict::Passed, &[]),
                });
            }
        }
    }
    let reference = |op: &str, suffix: &str| {
        let mut r = schedule(&format!("{op}-reference{suffix}"), Verdict::Passed, &[]);
        r.placement = Some(labels.iter().map(|l| l.to_string()).collect());
        r
    };
    let matrix_of = |md: &str| {
        md[md.find("## Exploration: point × fault").expect("a matrix")
            ..md.find("## Verdicts").unwrap()]
            .to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let mut all = vec![reference("backup", ""), reference("restore", "")];
    all.extend(schedules.iter().cloned());
    support::write_bundle(&one, support::meta("one", "amd64"), &all, None);
    let whole = Report::merge(vec![load(&one).unwrap()], dir.path()).unwrap();
    let mut shards = Vec::new();
    for k in 1..=4 {
        let shard = Shard { k, n: 4 };
        let mut cases = vec![
            reference("backup", &shard.suffix()),
            reference("restore", &shard.suffix()),
        ];
        cases.extend(schedules.iter().filter(|c| shard.holds(&c.name)).cloned());
        let path = dir.path().join(format!("shard-{k}"));
        support::write_bundle(
            &path,
            support::meta(&format!("shard-{k}"), "amd64"),
            &cases,
            None,
        );
        shards.push(load(&path).unwrap());
    }
    let merged = Report::merge(shards, dir.path()).unwrap();
    let (a, b) = (
        matrix_of(&render(&whole, Format::Markdown)),
        matrix_of(&render(&merged, Format::Markdown)),
    );
    assert_eq!(a, b);
    assert!(a.contains("**20 schedules: "), "{a}");
    assert!(a.contains("| p02 | `create jobs #2` |"), "{a}");
}
