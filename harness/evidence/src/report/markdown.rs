//! The Markdown report: reads as a GitHub step summary or pull-request comment.

use std::fmt::Write;

use crate::summary::Verdict;

pub use super::escape::anchor;
use super::model::{CaseResult, MergedCase, Report, format_duration};

/// A verdict with a symbol a reviewer can scan.
pub fn verdict_badge(v: Option<Verdict>) -> &'static str {
    match v {
        Some(Verdict::Passed) => "✅ passed",
        Some(Verdict::Failed) => "❌ failed",
        Some(Verdict::Skipped) => "⏭️ skipped",
        Some(Verdict::Interrupted) => "⚠️ interrupted",
        Some(Verdict::NotApplicable) => "⏭️ not applicable on this cluster",
        None => "— not run",
    }
}

/// Makes text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Renders the whole report.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    header(&mut out, report);
    explore_matrix(&mut out, report);
    verdicts(&mut out, report);
    runs(&mut out, report);
    cases(&mut out, report);
    kill_matrices(&mut out, report);
    out
}

/// The title, operators and architectures, and whether the architectures agree.
fn header(out: &mut String, report: &Report) {
    let operators: Vec<String> = report
        .operators
        .iter()
        .map(|o| format!("{} {}", o.name, o.version))
        .collect();
    let _ = writeln!(out, "# {} report: `{}`\n", report.title(), report.commit);
    let _ = writeln!(
        out,
        "Operator **{}** · commit `{}` · architectures: {}\n",
        operators.join("**, **"),
        report.commit,
        report.arches.join(", ")
    );
    if report.disagreements.is_empty() {
        let _ = writeln!(out, "All architectures agree on every verdict.\n");
    } else {
        let _ = writeln!(out, "> [!WARNING]");
        let _ = writeln!(
            out,
            "> **Architectures disagree on {} case(s):**",
            report.disagreements.len()
        );
        for d in &report.disagreements {
            let parts: Vec<String> = d
                .verdicts
                .iter()
                .map(|(a, v)| format!("{a} {}", verdict_badge(*v)))
                .collect();
            let _ = writeln!(out, "> - `{}`: {}", d.case, parts.join(", "));
        }
        out.push('\n');
    }
}

/// An exploration opens with its point × fault matrix per operation (the one matrix model,
/// [`super::matrix`]), each cell linking to its schedule's section, and the closing line.
fn explore_matrix(out: &mut String, report: &Report) {
    use super::matrix;
    let all = matrix::of_report(report);
    if all.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Exploration: point × fault\n\n**{}** — a cell is `ok` (every invariant held over a run whose fault landed), the invariants broken (bold), `unknown` (one could not be judged), `not placed` (its point never came) or a verdict; `rehearse explore --replay ID` runs one again.\n",
        matrix::closing_line(
            "schedules",
            all.iter()
                .flat_map(matrix::Matrix::schedules)
                .map(matrix::Schedule::standing)
        )
    );
    for m in &all {
        let _ = writeln!(out, "### `{}`\n", m.operation);
        let _ = writeln!(
            out,
            "{}",
            m.markdown(crate::report::matrix::LABEL_HEADER, true)
        );
    }
}

/// The verdict table (a row per case, a column per architecture) and each architecture's
/// totals.
fn verdicts(out: &mut String, report: &Report) {
    out.push_str("## Verdicts\n\n| Case | Bucket |");
    for a in &report.arches {
        let _ = write!(out, " {a} |");
    }
    out.push_str("\n|---|---|");
    for _ in &report.arches {
        out.push_str("---|");
    }
    out.push('\n');
    for case in &report.cases {
        let _ = write!(
            out,
            "| [`{}`](#{}) | {} |",
            case.name,
            anchor(&case.name),
            case.bucket
        );
        for a in &report.arches {
            match case.results.get(a) {
                Some(r) => {
                    let _ = write!(
                        out,
                        " {} ({}) |",
                        verdict_badge(Some(r.case.summary.verdict)),
                        format_duration(r.case.summary.duration_ms)
                    );
                }
                None => {
                    let _ = write!(out, " {} |", verdict_badge(None));
                }
            }
        }
        out.push('\n');
    }
    out.push('\n');
    for a in &report.arches {
        let totals = report.totals(a);
        let parts: Vec<String> = totals.iter().map(|(v, n)| format!("{n} {v}")).collect();
        let _ = writeln!(out, "- **{a}**: {}", parts.join(", "));
    }
    out.push('\n');
}

/// The runs table: one row per bundle.
fn runs(out: &mut String, report: &Report) {
    out.push_str("## Runs\n\n| Arch | Run | Operator | Started | Finished | Interrupted | Receipts |\n|---|---|---|---|---|---|---|\n");
    for run in &report.runs {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} {} | {} | {} | {} | [receipts.jsonl]({}/receipts.jsonl) ({} entries) |",
            run.arch,
            run.run_id,
            run.operator.name,
            run.operator.version,
            run.started,
            run.finished,
            match (run.killed, run.interrupted) {
                (true, _) => "**killed** (no bundle.json: derived from its receipts)",
                (false, true) => "**yes**",
                (false, false) => "no",
            },
            run.href,
            run.entries
        );
    }
    out.push('\n');
}

/// Each case's section.
fn cases(out: &mut String, report: &Report) {
    out.push_str("## Cases\n\n");
    for case in &report.cases {
        render_case(out, report, case);
    }
}

/// The mutant kill matrix of each architecture that recorded one.
fn kill_matrices(out: &mut String, report: &Report) {
    if !report.kill_matrices.is_empty() {
        out.push_str("## Mutant kill matrix\n\n");
        for (arch, matrix) in &report.kill_matrices {
            let cases = matrix.cases();
            let _ = writeln!(out, "### {arch}\n");
            out.push_str("| Mutant |");
            for c in &cases {
                let _ = write!(out, " `{c}` |");
            }
            out.push_str(" Caught |\n|---|");
            for _ in &cases {
                out.push_str("---|");
            }
            out.push_str("---|\n");
            for (mutant, row) in &matrix.mutants {
                let _ = write!(out, "| `{mutant}` |");
                for c in &cases {
                    let mark = row.get(*c).map(|cell| cell.describe()).unwrap_or_default();
                    let _ = write!(out, " {} |", cell(&mark));
                }
                let caught = !row.is_empty() && row.values().all(|c| c.caught);
                let _ = writeln!(
                    out,
                    " {} |",
                    if caught {
                        "✅ yes"
                    } else {
                        "❌ **survived**"
                    }
                );
            }
            out.push('\n');
        }
    }
}

fn render_case(out: &mut String, report: &Report, case: &MergedCase) {
    let _ = writeln!(out, "### {}\n", case.name);
    let _ = writeln!(out, "Bucket `{}`.\n", case.bucket);
    let cols: Vec<(&str, Option<&CaseResult>)> = report
        .arches
        .iter()
        .map(|a| (a.as_str(), case.results.get(a)))
        .collect();
    out.push_str("| |");
    for (a, _) in &cols {
        let _ = write!(out, " {a} |");
    }
    out.push_str("\n|---|");
    for _ in &cols {
        out.push_str("---|");
    }
    out.push('\n');
    let row = |out: &mut String, label: &str, f: &dyn Fn(&CaseResult) -> String| {
        let _ = write!(out, "| {label} |");
        for (_, r) in &cols {
            let _ = write!(out, " {} |", r.map(f).unwrap_or_else(|| "—".into()));
        }
        out.push('\n');
    };
    row(out, "Verdict", &|r| {
        verdict_badge(Some(r.case.summary.verdict)).into()
    });
    row(out, "Duration", &|r| {
        format_duration(r.case.summary.duration_ms)
    });
    if cols
        .iter()
        .any(|(_, r)| r.is_some_and(|r| r.case.summary.reason.is_some()))
    {
        row(out, "Reason", &|r| {
            cell(r.case.summary.reason.as_deref().unwrap_or(""))
        });
    }
    row(out, "Evidence used", &|r| {
        if r.case.summary.evidence_used.is_empty() {
            "none recorded".into()
        } else {
            cell(&r.case.summary.evidence_used.join(", "))
        }
    });
    row(out, "restic snapshots", &|r| ids(&r.case.snapshots));
    row(out, "Restores", &|r| {
        if r.case.restores.is_empty() {
            "none".into()
        } else {
            r.case
                .restores
                .iter()
                .map(|x| format!("`{}` of `{}`", x.restore_id, x.snapshot_id))
                .collect::<Vec<_>>()
                .join(", ")
        }
    });
    row(out, "Receipts", &|r| {
        let (a, b) = r.case.summary.lines;
        format!("[lines {a}–{b}]({}#L{a}-L{b})", r.receipts_href)
    });
    if cols
        .iter()
        .any(|(_, r)| r.is_some_and(|r| !r.case.artifacts.is_empty()))
    {
        row(out, "Artifacts", &|r| {
            r.case
                .artifacts
                .iter()
                .map(|a| {
                    let name = a.path.rsplit('/').next().unwrap_or(&a.path);
                    format!("[{}]({}/{})", cell(name), r.bundle_href, a.path)
                })
                .collect::<Vec<_>>()
                .join(", ")
        });
    }
    out.push('\n');
    for (arch, r) in &cols {
        let Some(r) = r else { continue };
        if r.case.pvc_table.is_empty() {
            continue;
        }
        let _ = writeln!(out, "PVC UIDs on {arch}:\n");
        out.push_str(&r.case.pvc_table.to_markdown());
        out.push('\n');
    }
}

fn ids(ids: &[String]) -> String {
    if ids.is_empty() {
        "none".into()
    } else {
        ids.iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
