//! The self-contained HTML report: the Markdown report's content plus an SVG timeline per case
//! and architecture. Inline CSS only; no scripts, fonts or images from anywhere.

use std::fmt::Write;

use crate::receipts::kind;
use crate::summary::Verdict;

use super::escape::escape;
use super::markdown::anchor;
use super::model::{MergedCase, Report, format_duration};
use super::timeline;

const CSS: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1f2328;margin:24px auto;max-width:1100px;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{margin-top:28px}h3 code{font-size:16px}code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f3f4f6;padding:1px 4px;border-radius:4px}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #d0d7de;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f6f8fa}.meta{color:#57606a}
.v-passed{color:#1a7f37;font-weight:600}.v-failed{color:#cf222e;font-weight:600}.v-skipped{color:#6e7781}.v-interrupted{color:#9a6700;font-weight:600}.v-none{color:#6e7781}
.callout{border-left:4px solid #9a6700;background:#fff8c5;padding:8px 14px;margin:16px 0}.agree{border-left:4px solid #1a7f37;background:#dafbe1;padding:8px 14px;margin:16px 0}
.timeline{display:block;margin:6px 0 14px;border:1px solid #eaeef2;background:#fcfcfd}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px;border-radius:2px}
";

/// Symbols every system font has (emoji are boxes in a font-less headless browser).
fn verdict_cell(v: Option<Verdict>) -> String {
    let class = v.map(|v| v.as_str()).unwrap_or("none");
    let text = match v {
        Some(Verdict::Passed) => "✓ passed",
        Some(Verdict::Failed) => "✗ failed",
        Some(Verdict::Skipped) => "– skipped",
        Some(Verdict::Interrupted) => "! interrupted",
        Some(Verdict::NotApplicable) => "– not applicable on this cluster",
        None => "— not run",
    };
    format!("<span class=\"v-{class}\">{text}</span>")
}

/// Renders the whole report as one HTML document.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(
        out,
        "<title>{} report: {}</title>",
        report.title(),
        escape(&report.commit)
    );
    let _ = writeln!(out, "<style>\n{CSS}</style>\n</head>\n<body>");
    let _ = writeln!(
        out,
        "<h1>{} report: <code>{}</code></h1>",
        report.title(),
        escape(&report.commit)
    );
    header(&mut out, report);
    // An exploration opens with its matrix.
    explore_matrix(&mut out, report);
    verdicts(&mut out, report);
    runs(&mut out, report);
    cases(&mut out, report);
    kill_matrices(&mut out, report);
    out.push_str("</body>\n</html>\n");
    out
}

/// The operators, commit and architectures, and whether the architectures agree.
fn header(out: &mut String, report: &Report) {
    let operators: Vec<String> = report
        .operators
        .iter()
        .map(|o| {
            format!(
                "<strong>{} {}</strong>",
                escape(&o.name),
                escape(&o.version)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"meta\">Operator {} · commit <code>{}</code> · architectures: {}</p>",
        operators.join(", "),
        escape(&report.commit),
        escape(&report.arches.join(", "))
    );
    if report.disagreements.is_empty() {
        out.push_str("<div class=\"agree\">All architectures agree on every verdict.</div>\n");
    } else {
        let _ = writeln!(
            out,
            "<div class=\"callout\" id=\"disagreements\"><strong>Architectures disagree on {} case(s):</strong><ul>",
            report.disagreements.len()
        );
        for d in &report.disagreements {
            let parts: Vec<String> = d
                .verdicts
                .iter()
                .map(|(a, v)| format!("{} {}", escape(a), verdict_cell(*v)))
                .collect();
            let _ = writeln!(
                out,
                "<li><a href=\"#{}\"><code>{}</code></a>: {}</li>",
                anchor(&d.case),
                escape(&d.case),
                parts.join(", ")
            );
        }
        out.push_str("</ul></div>\n");
    }
}

/// The verdict table (a row per case, a column per architecture) and each architecture's
/// totals.
fn verdicts(out: &mut String, report: &Report) {
    out.push_str("<h2>Verdicts</h2>\n<table>\n<tr><th>Case</th><th>Bucket</th>");
    for a in &report.arches {
        let _ = write!(out, "<th>{}</th>", escape(a));
    }
    out.push_str("</tr>\n");
    for case in &report.cases {
        let _ = write!(
            out,
            "<tr><td><a href=\"#{}\"><code>{}</code></a></td><td>{}</td>",
            anchor(&case.name),
            escape(&case.name),
            escape(&case.bucket)
        );
        for a in &report.arches {
            match case.results.get(a) {
                Some(r) => {
                    let _ = write!(
                        out,
                        "<td>{} ({})</td>",
                        verdict_cell(Some(r.case.summary.verdict)),
                        format_duration(r.case.summary.duration_ms)
                    );
                }
                None => {
                    let _ = write!(out, "<td>{}</td>", verdict_cell(None));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n<ul>\n");
    for a in &report.arches {
        let parts: Vec<String> = report
            .totals(a)
            .iter()
            .map(|(v, n)| format!("{n} {v}"))
            .collect();
        let _ = writeln!(
            out,
            "<li><strong>{}</strong>: {}</li>",
            escape(a),
            parts.join(", ")
        );
    }
    out.push_str("</ul>\n");
}

/// The runs table: one row per bundle.
fn runs(out: &mut String, report: &Report) {
    out.push_str("<h2>Runs</h2>\n<table>\n<tr><th>Arch</th><th>Run</th><th>Operator</th><th>Started</th><th>Finished</th><th>Interrupted</th><th>Receipts</th></tr>\n");
    for run in &report.runs {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td><a href=\"{}/receipts.jsonl\">receipts.jsonl</a> ({} entries)</td></tr>",
            escape(&run.arch),
            escape(&run.run_id),
            escape(&run.operator.name),
            escape(&run.operator.version),
            run.started,
            run.finished,
            match (run.killed, run.interrupted) {
                (true, _) => "<strong>killed</strong> (no bundle.json: derived from its receipts)",
                (false, true) => "<strong>yes</strong>",
                (false, false) => "no",
            },
            escape(&run.href),
            run.entries
        );
    }
    out.push_str("</table>\n");
}

/// The legend, then each case's section with its timelines.
fn cases(out: &mut String, report: &Report) {
    out.push_str("<h2>Cases</h2>\n<p class=\"legend\">");
    for (label, k) in [
        ("step", kind::STEP),
        ("wait", kind::WAIT),
        ("PVC observation", kind::PVC_OBSERVATION),
        ("restic", kind::RESTIC_SNAPSHOT),
        ("artifact", kind::ARTIFACT),
        ("verdict", kind::CASE_FINISHED),
    ] {
        let _ = write!(
            out,
            "<span><i style=\"background:{}\"></i>{label}</span>",
            timeline::colour(k)
        );
    }
    out.push_str("<span>bars run from the previous receipt to this one; the slowest is outlined in red</span></p>\n");
    for case in &report.cases {
        render_case(out, report, case);
    }
}

/// An exploration's point × fault matrix per operation (cases of bucket `explore`), from the
/// one matrix model ([`super::matrix`]): a cell is `ok`, the invariants broken, `unknown`, `not
/// placed`, or a verdict, each linking to its schedule's case; the closing line counts them.
fn explore_matrix(out: &mut String, report: &Report) {
    use super::matrix::{self, Standing};
    let all = matrix::of_report(report);
    if all.is_empty() {
        return;
    }
    out.push_str("<h2>Exploration: point × fault</h2>\n<p class=\"meta\">One row per point a fault was placed at, one column per fault; a cell is <code>ok</code> (every invariant held over a run whose fault landed), the invariants the schedule broke, <code>unknown</code> (an invariant could not be judged), <code>not placed</code> (its point never came) or its verdict. Each schedule is a case below; <code>rehearse explore --replay ID</code> runs one again.</p>\n");
    let _ = writeln!(
        out,
        "<p><strong>{}</strong></p>",
        escape(&matrix::closing_line(
            "schedules",
            all.iter()
                .flat_map(matrix::Matrix::schedules)
                .map(matrix::Schedule::standing)
        ))
    );
    for m in &all {
        let _ = write!(
            out,
            "<h3><code>{}</code></h3>\n<table>\n<tr><th>point</th><th>write</th>",
            escape(&m.operation)
        );
        for c in &m.columns {
            let _ = write!(out, "<th><code>{}</code></th>", escape(c));
        }
        out.push_str("</tr>\n");
        for row in &m.rows {
            let _ = write!(
                out,
                "<tr><td>{}</td><td><code>{}</code></td>",
                row.point_text(),
                escape(&row.label_text())
            );
            for cell in &row.cells {
                let html = match cell {
                    None => "·".to_string(),
                    Some(s) => format!(
                        "<a class=\"{}\" href=\"#{}\">{}</a>",
                        if s.standing() == Standing::Ok {
                            "v-passed"
                        } else {
                            "v-failed"
                        },
                        anchor(&s.id),
                        escape(&s.cell())
                    ),
                };
                let _ = write!(out, "<td>{html}</td>");
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
}

/// The mutant kill matrix of each architecture that recorded one.
fn kill_matrices(out: &mut String, report: &Report) {
    if !report.kill_matrices.is_empty() {
        out.push_str("<h2>Mutant kill matrix</h2>\n");
        for (arch, matrix) in &report.kill_matrices {
            let cases = matrix.cases();
            let _ = writeln!(
                out,
                "<h3>{}</h3>\n<table>\n<tr><th>Mutant</th>",
                escape(arch)
            );
            for c in &cases {
                let _ = write!(out, "<th><code>{}</code></th>", escape(c));
            }
            out.push_str("<th>Caught</th></tr>\n");
            for (mutant, row) in &matrix.mutants {
                let _ = write!(out, "<tr><td><code>{}</code></td>", escape(mutant));
                for c in &cases {
                    let mark = row.get(*c).map(|cell| cell.describe()).unwrap_or_default();
                    let _ = write!(out, "<td>{}</td>", escape(&mark));
                }
                let caught = !row.is_empty() && row.values().all(|c| c.caught);
                let _ = writeln!(
                    out,
                    "<td>{}</td></tr>",
                    if caught {
                        "<span class=\"v-passed\">yes</span>"
                    } else {
                        "<span class=\"v-failed\">survived</span>"
                    }
                );
            }
            out.push_str("</table>\n");
        }
    }
}

fn render_case(out: &mut String, report: &Report, case: &MergedCase) {
    let _ = writeln!(
        out,
        "<h3 id=\"{}\"><code>{}</code></h3>\n<p class=\"meta\">Bucket <code>{}</code></p>",
        anchor(&case.name),
        escape(&case.name),
        escape(&case.bucket)
    );
    out.push_str("<table>\n<tr><th></th>");
    for a in &report.arches {
        let _ = write!(out, "<th>{}</th>", escape(a));
    }
    out.push_str("</tr>\n");
    type Cell<'a> = &'a dyn Fn(&super::model::CaseResult) -> String;
    let rows: Vec<(&str, Cell)> = vec![
        ("Verdict", &|r| verdict_cell(Some(r.case.summary.verdict))),
        ("Duration", &|r| format_duration(r.case.summary.duration_ms)),
        ("Reason", &|r| {
            escape(r.case.summary.reason.as_deref().unwrap_or(""))
        }),
        ("Evidence used", &|r| {
            if r.case.summary.evidence_used.is_empty() {
                "none recorded".into()
            } else {
                escape(&r.case.summary.evidence_used.join(", "))
            }
        }),
        ("restic snapshots", &|r| codes(&r.case.snapshots)),
        ("Restores", &|r| {
            if r.case.restores.is_empty() {
                "none".into()
            } else {
                r.case
                    .restores
                    .iter()
                    .map(|x| {
                        format!(
                            "<code>{}</code> of <code>{}</code>",
                            escape(&x.restore_id),
                            escape(&x.snapshot_id)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }),
        ("Receipts", &|r| {
            let (a, b) = r.case.summary.lines;
            format!(
                "<a href=\"{}#L{a}-L{b}\">lines {a}–{b}</a>",
                escape(&r.receipts_href)
            )
        }),
        ("Artifacts", &|r| {
            r.case
                .artifacts
                .iter()
                .map(|a| {
                    let name = a.path.rsplit('/').next().unwrap_or(&a.path);
                    format!(
                        "<a href=\"{}/{}\">{}</a>",
                        escape(&r.bundle_href),
                        escape(&a.path),
                        escape(name)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        }),
    ];
    for (label, f) in rows {
        let cells: Vec<String> = report
            .arches
            .iter()
            .map(|a| case.results.get(a).map(f).unwrap_or_else(|| "—".into()))
            .collect();
        if (label == "Reason" || label == "Artifacts")
            && cells.iter().all(|c| c.is_empty() || c == "—")
        {
            continue;
        }
        let _ = write!(out, "<tr><th>{label}</th>");
        for c in cells {
            let _ = write!(out, "<td>{c}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    for a in &report.arches {
        let Some(r) = case.results.get(a) else {
            continue;
        };
        if !r.case.pvc_table.is_empty() {
            pvc_table(out, a, &r.case.pvc_table);
        }
        let _ = writeln!(out, "<p class=\"meta\">Timeline on {}:</p>", escape(a));
        out.push_str(&timeline::render(&r.case, a));
    }
}

/// A case's PVC UID table on architecture `a`.
fn pvc_table(out: &mut String, a: &str, table: &crate::pvc_table::PvcTable) {
    let _ = writeln!(
        out,
        "<p>PVC UIDs on {}:</p>\n<table>\n<tr><th>PVC</th><th>Claim</th><th>Before</th><th>After</th><th>Volume</th><th>Identity</th></tr>",
        escape(a)
    );
    for row in &table.rows {
        let side = |s: &Option<crate::pvc_table::PvcSide>| match s {
            Some(s) => format!("<code>{}</code>", escape(&s.uid)),
            None => "not observed".into(),
        };
        let vol = |s: &Option<crate::pvc_table::PvcSide>| {
            s.as_ref()
                .and_then(|s| s.volume.clone())
                .unwrap_or_else(|| "-".into())
        };
        let (vb, va) = (vol(&row.before), vol(&row.after));
        let volume = if vb == va {
            format!("<code>{}</code>", escape(&vb))
        } else {
            format!(
                "<code>{}</code> → <code>{}</code>",
                escape(&vb),
                escape(&va)
            )
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{volume}</td><td>{}</td></tr>",
            row.role.label(),
            escape(&row.claim),
            side(&row.before),
            side(&row.after),
            match row.change() {
                crate::pvc_table::PvcChange::Kept => "<span class=\"v-passed\">kept</span>",
                crate::pvc_table::PvcChange::Appeared => "<span class=\"v-passed\">appeared</span>",
                crate::pvc_table::PvcChange::Replaced => "<span class=\"v-failed\">replaced</span>",
                crate::pvc_table::PvcChange::Vanished => "<span class=\"v-failed\">vanished</span>",
            }
        );
    }
    out.push_str("</table>\n");
}

fn codes(ids: &[String]) -> String {
    if ids.is_empty() {
        "none".into()
    } else {
        ids.iter()
            .map(|i| format!("<code>{}</code>", escape(i)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
