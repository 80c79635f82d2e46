//! An exploration's point × fault matrix, built once and drawn for the console, report.md and
//! report.html alike: where each schedule stands, from what its case recorded.
//!
//! A schedule's case is named by its id (`<operation>.<write>.<occurrence>.<column>`,
//! [`crate::place`]): its row is that write of the operation (the `occurrence`-th write with
//! that label, placed where the operation's reference run made it), its column the fault (or
//! signal pattern). A cell is `ok` only when every invariant held over a
//! run whose fault landed; otherwise the invariants it broke, `unknown` (one could not be
//! judged: its evidence was missing), `not placed` (its point never came), `not applicable`,
//! or the verdict of a schedule that did not finish.

use std::collections::{BTreeMap, BTreeSet};

use crate::place::Place;
use crate::summary::Verdict;

/// Where a schedule stands, as the matrix and the closing line count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Standing {
    /// Every invariant that applies held, and the fault landed where the schedule says.
    Ok,
    /// An invariant was broken (the failed checks name which).
    Violated,
    /// No invariant was broken, but one could not be judged: its evidence was missing.
    Unknown,
    /// Every invariant held, but the schedule's point never came: nothing was perturbed.
    NotPlaced,
    /// The cluster cannot place this fault.
    NotApplicable,
    /// It did not reach a judgement (an error, a timeout, an interrupt).
    DidNotFinish,
}

impl Standing {
    /// Every standing, in closing-line order.
    pub const ALL: &[Standing] = &[
        Standing::Ok,
        Standing::Violated,
        Standing::Unknown,
        Standing::NotPlaced,
        Standing::NotApplicable,
        Standing::DidNotFinish,
    ];

    /// How a schedule whose case ended `verdict`, with `reason` and `failed_checks`, stands.
    /// The harness words the two reasons this reads: `evidence absent: …` (an invariant was
    /// unknown) and `not placed: …` (the fault never landed).
    pub fn of(verdict: Verdict, reason: Option<&str>, failed_checks: &[String]) -> Self {
        let reason = reason.unwrap_or_default();
        match verdict {
            Verdict::Passed => Self::Ok,
            Verdict::NotApplicable => Self::NotApplicable,
            Verdict::Failed if !failed_checks.is_empty() => Self::Violated,
            Verdict::Failed if reason.starts_with("not placed") => Self::NotPlaced,
            Verdict::Failed if reason.starts_with("evidence absent") => Self::Unknown,
            _ => Self::DidNotFinish,
        }
    }

    /// As a cell and the closing line name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Violated => "violated",
            Self::Unknown => "unknown",
            Self::NotPlaced => "not placed",
            Self::NotApplicable => "not applicable",
            Self::DidNotFinish => "did not finish",
        }
    }
}

/// The closing line over `noun` (`schedules`) that stood as `standings`: how many, and how
/// many of each (`674 schedules: 670 ok, 2 violated, 1 unknown, 1 not placed`; not applicable
/// and did not finish only when there are any).
pub fn closing_line(noun: &str, standings: impl Iterator<Item = Standing>) -> String {
    let mut counts: BTreeMap<Standing, usize> = BTreeMap::new();
    let mut total = 0;
    for s in standings {
        total += 1;
        *counts.entry(s).or_default() += 1;
    }
    let parts: Vec<String> = Standing::ALL
        .iter()
        .filter(|s| {
            matches!(
                s,
                Standing::Ok | Standing::Violated | Standing::Unknown | Standing::NotPlaced
            ) || counts.contains_key(s)
        })
        .map(|s| format!("{} {}", counts.get(s).copied().unwrap_or(0), s.as_str()))
        .collect();
    format!("{total} {noun}: {}", parts.join(", "))
}

/// The header of the matrix's label column: the operator's request a schedule's fault is placed
/// before (a write, or a read such as `get bundle …`), by its label.
pub const LABEL_HEADER: &str = "held request";

/// One schedule as its case recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Its id, also its case's name.
    pub id: String,
    /// How its case ended.
    pub verdict: Verdict,
    /// Why, when it did not pass.
    pub reason: Option<String>,
    /// The invariants (checks) it broke.
    pub failed_checks: Vec<String>,
}

impl Schedule {
    /// Where it stands.
    pub fn standing(&self) -> Standing {
        Standing::of(self.verdict, self.reason.as_deref(), &self.failed_checks)
    }

    /// Its cell's text: `ok`, the invariants it broke, `unknown`, `not placed`, …, or the
    /// verdict of a schedule that did not finish.
    pub fn cell(&self) -> String {
        match self.standing() {
            Standing::Violated => self.failed_checks.join(", "),
            Standing::DidNotFinish => self.verdict.as_str().to_string(),
            other => other.as_str().to_string(),
        }
    }
}

/// One operation's matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matrix {
    /// The operation (or qualification variant), as schedule ids name it.
    pub operation: String,
    /// The columns (faults or signal patterns), sorted.
    pub columns: Vec<String>,
    /// One row per write, in the order the reference run made them; writes it did not make
    /// (a replay's, a saved schedule's) after them.
    pub rows: Vec<Row>,
}

/// One write's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its index among the reference run's writes, when that run made it.
    pub point: Option<usize>,
    /// The write (or receipt): its label and occurrence.
    pub place: Place,
    /// A schedule per column, `None` where none ran.
    pub cells: Vec<Option<Schedule>>,
}

impl Row {
    /// `p03`, or `·` for a write the reference run did not make.
    pub fn point_text(&self) -> String {
        self.point
            .map_or_else(|| "·".to_string(), |p| format!("p{p:02}"))
    }

    /// The write as the matrix names it: its label, with `#n` from its second occurrence on.
    pub fn label_text(&self) -> String {
        if self.place.occurrence > 1 {
            format!("{} #{}", self.place.label, self.place.occurrence)
        } else {
            self.place.label.clone()
        }
    }
}

/// The matrices of `schedules`, one per operation, in name order; `labels` holds each
/// operation's reference run's writes in order (a row's position; empty where unknown).
pub fn matrices(
    schedules: impl IntoIterator<Item = Schedule>,
    labels: &BTreeMap<String, Vec<String>>,
) -> Vec<Matrix> {
    let mut ops: BTreeMap<String, BTreeMap<(Place, String), Schedule>> = BTreeMap::new();
    for s in schedules {
        if let Some((op, place, column)) = crate::place::parse(&s.id) {
            let (op, column) = (op.to_string(), column.to_string());
            ops.entry(op).or_default().insert((place, column), s);
        }
    }
    ops.into_iter()
        .map(|(operation, cells)| {
            let columns: Vec<String> = cells
                .keys()
                .map(|(_, c)| c.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let names = labels.get(&operation).map_or(&[][..], Vec::as_slice);
            let mut places: Vec<(Option<usize>, Place)> = cells
                .keys()
                .map(|(p, _)| p.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .map(|p| (p.index_in(names), p))
                .collect();
            // The reference run's order first; the writes it did not make after, by name.
            places.sort_by(|a, b| (a.0.is_none(), a.0, &a.1).cmp(&(b.0.is_none(), b.0, &b.1)));
            let rows = places
                .into_iter()
                .map(|(point, place)| Row {
                    point,
                    cells: columns
                        .iter()
                        .map(|c| cells.get(&(place.clone(), c.clone())).cloned())
                        .collect(),
                    place,
                })
                .collect();
            Matrix {
                operation,
                columns,
                rows,
            }
        })
        .collect()
}

/// The matrices of a report's exploration schedules (its cases of bucket `explore`): a
/// schedule is `ok` when every architecture passed it, else it stands as its first
/// architecture that did not (the invariants every architecture broke together).
pub fn of_report(report: &super::model::Report) -> Vec<Matrix> {
    let schedules = report
        .cases
        .iter()
        .filter(|c| c.bucket == "explore")
        .map(|case| {
            let results: Vec<_> = case.results.values().map(|r| &r.case.summary).collect();
            let failing = results.iter().find(|r| r.verdict != Verdict::Passed);
            let mut failed_checks: Vec<String> = results
                .iter()
                .flat_map(|r| r.failed_checks.clone())
                .collect();
            failed_checks.sort();
            failed_checks.dedup();
            Schedule {
                id: case.name.clone(),
                verdict: match (results.is_empty(), failing) {
                    (true, _) => Verdict::Failed,
                    (false, Some(r)) => r.verdict,
                    (false, None) => Verdict::Passed,
                },
                reason: failing.and_then(|r| r.reason.clone()).or_else(|| {
                    results
                        .is_empty()
                        .then(|| "not run on any architecture".to_string())
                }),
                failed_checks,
            }
        });
    matrices(schedules, &report.point_labels)
}

impl Matrix {
    /// As a Markdown table: `| point | label | <column>… |`; a violated cell is bold; with
    /// `link`, each cell links to its schedule's section of report.md.
    pub fn markdown(&self, label_header: &str, link: bool) -> String {
        let mut out = format!(
            "| point | {label_header} | {} |\n|---|---|{}\n",
            self.columns.join(" | "),
            "---|".repeat(self.columns.len())
        );
        for row in &self.rows {
            let cells: Vec<String> = row
                .cells
                .iter()
                .map(|c| match c {
                    None => "·".to_string(),
                    Some(s) => {
                        let text = match s.standing() {
                            Standing::Violated => format!("**{}**", s.cell()),
                            _ => s.cell(),
                        };
                        if link {
                            format!("[{text}](#{})", super::escape::anchor(&s.id))
                        } else {
                            text
                        }
                    }
                })
                .collect();
            out.push_str(&format!(
                "| {} | `{}` | {} |\n",
                row.point_text(),
                row.label_text(),
                cells.join(" | ")
            ));
        }
        out
    }

    /// Every schedule of the matrix.
    pub fn schedules(&self) -> impl Iterator<Item = &Schedule> {
        self.rows.iter().flat_map(|r| r.cells.iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(id: &str, verdict: Verdict, reason: Option<&str>, failed: &[&str]) -> Schedule {
        Schedule {
            id: id.into(),
            verdict,
            reason: reason.map(str::to_string),
            failed_checks: failed.iter().map(|c| c.to_string()).collect(),
        }
    }

    fn endings() -> Vec<Schedule> {
        vec![
            s(
                "backup.patch_backups_live.1.game-restart",
                Verdict::Passed,
                None,
                &[],
            ),
            s(
                "backup.patch_backups_live.1.pod-replaced",
                Verdict::Failed,
                Some("cleanup: …"),
                &["cleanup", "drain"],
            ),
            s(
                "backup.create_jobs.1.game-restart",
                Verdict::Failed,
                Some(
                    "evidence absent: what invariant(s) cleanup read: the audit log could not be read",
                ),
                &[],
            ),
            s(
                "backup.create_jobs.1.pod-replaced",
                Verdict::Failed,
                Some("not placed: the operation ended before the operator made write p01"),
                &[],
            ),
            s(
                "restore.create_jobs.2.repository-unreachable",
                Verdict::NotApplicable,
                Some("not applicable on this cluster"),
                &[],
            ),
            s(
                "qualify-signals-compatible-b1.back_up_batch_1.1.sigint",
                Verdict::Failed,
                Some("timed out"),
                &[],
            ),
        ]
    }

    #[test]
    fn each_ending_stands_as_what_it_is_and_is_counted() {
        let all = endings();
        let standings: Vec<Standing> = all.iter().map(Schedule::standing).collect();
        assert_eq!(standings, Standing::ALL);
        let cells: Vec<String> = all.iter().map(Schedule::cell).collect();
        assert_eq!(
            cells,
            [
                "ok",
                "cleanup, drain",
                "unknown",
                "not placed",
                "not applicable",
                "failed"
            ]
        );
        assert_eq!(
            closing_line("schedules", standings.iter().copied()),
            "6 schedules: 1 ok, 1 violated, 1 unknown, 1 not placed, 1 not applicable, 1 did not finish"
        );
        assert_eq!(
            closing_line("schedules", standings[..1].iter().copied()),
            "1 schedules: 1 ok, 0 violated, 0 unknown, 0 not placed"
        );
    }

    #[test]
    fn one_matrix_per_operation_with_its_labels_and_cells() {
        let labels = BTreeMap::from([(
            "backup".to_string(),
            vec!["patch backups live".to_string(), "create jobs".to_string()],
        )]);
        let m = matrices(endings(), &labels);
        let ops: Vec<&str> = m.iter().map(|m| m.operation.as_str()).collect();
        assert_eq!(ops, ["backup", "qualify-signals-compatible-b1", "restore"]);
        assert_eq!(m[0].columns, ["game-restart", "pod-replaced"]);
        assert_eq!(
            m[0].markdown("operator write", false),
            "| point | operator write | game-restart | pod-replaced |\n|---|---|---|---|\n\
             | p00 | `patch backups live` | ok | **cleanup, drain** |\n\
             | p01 | `create jobs` | unknown | not placed |\n"
        );
        assert_eq!(
            m[2].markdown("operator write", true),
            "| point | operator write | repository-unreachable |\n|---|---|---|\n\
             | · | `create jobs #2` | [not applicable](#restorecreate_jobs2repository-unreachable) |\n"
        );
        // The reference run's order, not the names': a write it did not make comes last.
        let mut reordered = labels.clone();
        reordered.insert(
            "backup".into(),
            vec!["create jobs".to_string(), "patch backups live".to_string()],
        );
        let m2 = matrices(endings(), &reordered);
        assert_eq!(m2[0].rows[0].place.label, "create jobs");
        assert_eq!(m2[0].rows[0].point, Some(0));
        let mut partly = labels.clone();
        partly.get_mut("backup").unwrap().pop();
        let m3 = matrices(endings(), &partly);
        assert_eq!(m3[0].rows[1].point, None);
        assert!(
            m3[0]
                .markdown("operator write", false)
                .contains("| · | `create jobs` | unknown | not placed |")
        );
        assert_eq!(m[1].columns, ["sigint"]);
        assert_eq!(m.iter().flat_map(Matrix::schedules).count(), 6);
        // A reference run's case is no schedule.
        let with_reference =
            endings()
                .into_iter()
                .chain([s("backup-reference", Verdict::Passed, None, &[])]);
        assert_eq!(
            matrices(with_reference, &labels)
                .iter()
                .flat_map(Matrix::schedules)
                .count(),
            6
        );
    }
}
