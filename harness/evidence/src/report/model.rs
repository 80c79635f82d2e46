//! The report's data: loaded bundles merged by case name across architectures.
//!
//! Any number of bundles may come from one architecture: CI writes one bundle per case (each
//! nextest test process records its own), or one per bucket job. A case appears once per
//! architecture; the same case in two bundles of one architecture is refused, because the
//! report could only show one of the two verdicts.
//!
//! Everything a renderer prints is here, already ordered (cases by bucket then name,
//! architectures by name), so every renderer is a pure function of a [`Report`] and the same
//! bundles always give the same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use crate::kill_matrix::KillMatrix;
use crate::summary::{BundleSummary, Operator, Verdict};

use super::links;
use super::load::{LoadedBundle, LoadedCase};

/// Why bundles cannot be reported together.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No bundle was given.
    #[error("no bundles given: pass one or more bundle directories (reports/<run-id>)")]
    Empty,
    /// Two bundles qualify different commits.
    #[error(
        "bundles {a} and {b} qualify different commits ({commit_a} vs {commit_b}); report one commit at a time"
    )]
    DifferentCommits {
        /// The first bundle's directory.
        a: String,
        /// The other bundle's directory.
        b: String,
        /// The commit of `a`.
        commit_a: String,
        /// The commit of `b`.
        commit_b: String,
    },
    /// Two bundles of one architecture hold the same case.
    #[error(
        "bundles {a} and {b} both hold case {case} on {arch}; pass each case's bundle once per architecture (report a rerun separately)"
    )]
    DuplicateCase {
        /// The first bundle's directory.
        a: String,
        /// The other bundle's directory.
        b: String,
        /// The case both hold.
        case: String,
        /// Their architecture.
        arch: String,
    },
    /// Two bundles of one architecture judge the same (mutant, case) cell.
    #[error(
        "bundles {a} and {b} both record whether case {case} caught mutant {mutant} on {arch}; pass one self-test per architecture"
    )]
    DuplicateKill {
        /// The first bundle's directory.
        a: String,
        /// The other bundle's directory.
        b: String,
        /// The mutant.
        mutant: String,
        /// The case.
        case: String,
        /// Their architecture.
        arch: String,
    },
}

/// One bundle's run (an architecture's whole run, or one case's or bucket's part of it).
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The architecture it ran on.
    pub arch: String,
    /// Its run id.
    pub run_id: String,
    /// The operator it qualified.
    pub operator: Operator,
    /// Its `run-started` time.
    pub started: jiff::Timestamp,
    /// Its `run-finished` time (or last receipt's, when killed).
    pub finished: jiff::Timestamp,
    /// It was interrupted (a signal) or killed rather than completed.
    pub interrupted: bool,
    /// Killed before it finalized: no `bundle.json`; the summary was derived from the journal.
    pub killed: bool,
    /// How many journal entries the run wrote up to its end.
    pub entries: u64,
    /// Relative link from the report directory to the bundle directory.
    pub href: String,
}

/// A case's result on one architecture, with links already resolved.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case as its bundle proves it.
    pub case: LoadedCase,
    /// Relative link to this run's `receipts.jsonl`.
    pub receipts_href: String,
    /// Relative link to the bundle directory (artifact paths are relative to it).
    pub bundle_href: String,
}

/// One case across architectures.
#[derive(Debug, Clone)]
pub struct MergedCase {
    /// The case's name.
    pub name: String,
    /// Its bucket.
    pub bucket: String,
    /// arch → result; an architecture that did not run the case is absent.
    pub results: BTreeMap<String, CaseResult>,
}

impl Report {
    /// What the report is of: `Exploration` when every case is an exploration schedule
    /// (bucket `explore`), else `Qualification`.
    pub fn title(&self) -> &'static str {
        if !self.cases.is_empty() && self.cases.iter().all(|c| c.bucket == "explore") {
            "Exploration"
        } else {
            "Qualification"
        }
    }
}

impl MergedCase {
    /// The verdict per architecture of the report (`None` = not run there).
    pub fn verdicts<'a>(&'a self, arches: &'a [String]) -> Vec<(&'a str, Option<Verdict>)> {
        arches
            .iter()
            .map(|a| {
                (
                    a.as_str(),
                    self.results.get(a).map(|r| r.case.summary.verdict),
                )
            })
            .collect()
    }
}

/// A case whose architectures did not reach the same verdict (or did not all run it).
#[derive(Debug, Clone)]
pub struct Disagreement {
    /// The case.
    pub case: String,
    /// Each architecture of the report and its verdict (`None` = not run there).
    pub verdicts: Vec<(String, Option<Verdict>)>,
}

/// The whole qualification report.
#[derive(Debug, Clone)]
pub struct Report {
    /// The commit every bundle qualifies.
    pub commit: String,
    /// Distinct operators (name + version) across runs, sorted.
    pub operators: Vec<Operator>,
    /// Architectures, sorted.
    pub arches: Vec<String>,
    /// Every bundle's run, by architecture, run id and directory.
    pub runs: Vec<RunInfo>,
    /// Every case, by bucket then name.
    pub cases: Vec<MergedCase>,
    /// Cases whose architectures disagree, in case order.
    pub disagreements: Vec<Disagreement>,
    /// arch → kill matrix, for runs that recorded one (merged across an arch's bundles).
    pub kill_matrices: BTreeMap<String, KillMatrix>,
    /// Every bundle's proven summary, in the order of [`Report::runs`] (for JUnit).
    pub summaries: Vec<BundleSummary>,
    /// An exploration's operations: the writes each reference run made, in order (what orders
    /// the matrix's rows), from its `placement.json`.
    pub point_labels: BTreeMap<String, Vec<String>>,
}

impl Report {
    /// Merges verified bundles; links are made relative to `out_dir`, where the report is written.
    ///
    /// Bundles are ordered by architecture, run id and directory first, so the order they are
    /// given in never changes the output.
    pub fn merge(mut bundles: Vec<LoadedBundle>, out_dir: &Path) -> Result<Report, MergeError> {
        let first = bundles.first().ok_or(MergeError::Empty)?;
        let commit = first.summary.meta.commit.clone();
        if let Some(other) = bundles.iter().find(|b| b.summary.meta.commit != commit) {
            return Err(MergeError::DifferentCommits {
                a: first.dir.display().to_string(),
                b: other.dir.display().to_string(),
                commit_a: commit,
                commit_b: other.summary.meta.commit.clone(),
            });
        }
        bundles.sort_by(|x, y| {
            (&x.summary.meta.arch, &x.summary.meta.run_id, &x.dir).cmp(&(
                &y.summary.meta.arch,
                &y.summary.meta.run_id,
                &y.dir,
            ))
        });
        let mut arches: Vec<String> = bundles
            .iter()
            .map(|b| b.summary.meta.arch.clone())
            .collect();
        arches.dedup();
        let mut merging = Merging::default();
        let mut point_labels = BTreeMap::new();
        for bundle in &bundles {
            point_labels.extend(reference_labels(bundle));
        }
        for bundle in bundles {
            merging.add(bundle, out_dir)?;
        }
        let Merging {
            mut operators,
            runs,
            cases,
            kill_matrices,
            summaries,
            ..
        } = merging;
        operators.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
        let cases: Vec<MergedCase> = cases.into_values().collect();
        let disagreements = disagreements(&cases, &arches);
        Ok(Report {
            commit,
            operators,
            arches,
            runs,
            cases,
            disagreements,
            kill_matrices,
            summaries,
            point_labels,
        })
    }

    /// Count of each verdict on `arch`.
    pub fn totals(&self, arch: &str) -> BTreeMap<Verdict, usize> {
        let mut totals = BTreeMap::new();
        for case in &self.cases {
            if let Some(r) = case.results.get(arch) {
                *totals.entry(r.case.summary.verdict).or_insert(0) += 1;
            }
        }
        totals
    }
}

/// The report being merged, one bundle at a time.
#[derive(Default)]
struct Merging {
    operators: Vec<Operator>,
    runs: Vec<RunInfo>,
    cases: BTreeMap<(String, String), MergedCase>,
    /// (arch, case) → the bundle that holds it, to name both sides of a duplicate.
    holder: BTreeMap<(String, String), String>,
    kill_matrices: BTreeMap<String, KillMatrix>,
    /// (arch, mutant, case) → the bundle that judged it.
    kill_holder: BTreeMap<(String, String, String), String>,
    summaries: Vec<BundleSummary>,
}

impl Merging {
    /// Adds one bundle's run, cases and kill matrix.
    fn add(&mut self, bundle: LoadedBundle, out_dir: &Path) -> Result<(), MergeError> {
        let arch = bundle.summary.meta.arch.clone();
        let dir = bundle.dir.display().to_string();
        self.summaries.push(bundle.summary.clone());
        let s = &bundle.summary;
        if !self.operators.contains(&s.meta.operator) {
            self.operators.push(s.meta.operator.clone());
        }
        let href = links::relative(out_dir, &bundle.dir);
        let receipts_href = format!("{href}/{}", s.journal.file);
        self.runs.push(RunInfo {
            arch: arch.clone(),
            run_id: s.meta.run_id.clone(),
            operator: s.meta.operator.clone(),
            started: s.started,
            finished: s.finished,
            interrupted: s.interrupted,
            killed: bundle.killed,
            entries: s.journal.entries,
            href: href.clone(),
        });
        for case in bundle.cases {
            let name = case.summary.name.clone();
            if let Some(a) = self
                .holder
                .insert((arch.clone(), name.clone()), dir.clone())
            {
                return Err(MergeError::DuplicateCase {
                    a,
                    b: dir,
                    case: name,
                    arch,
                });
            }
            let key = (case.summary.bucket.clone(), name);
            self.cases
                .entry(key)
                .or_insert_with(|| MergedCase {
                    name: case.summary.name.clone(),
                    bucket: case.summary.bucket.clone(),
                    results: BTreeMap::new(),
                })
                .results
                .insert(
                    arch.clone(),
                    CaseResult {
                        case,
                        receipts_href: receipts_href.clone(),
                        bundle_href: href.clone(),
                    },
                );
        }
        match bundle.kill_matrix {
            Some(matrix) => self.add_kill_matrix(&arch, &dir, &matrix),
            None => Ok(()),
        }
    }

    /// Merges a bundle's kill matrix into its architecture's.
    fn add_kill_matrix(
        &mut self,
        arch: &str,
        dir: &str,
        matrix: &KillMatrix,
    ) -> Result<(), MergeError> {
        let merged = self.kill_matrices.entry(arch.to_owned()).or_default();
        for (mutant, row) in &matrix.mutants {
            for (case, caught) in row {
                let key = (arch.to_owned(), mutant.clone(), case.clone());
                if let Some(a) = self.kill_holder.insert(key, dir.to_owned()) {
                    return Err(MergeError::DuplicateKill {
                        a,
                        b: dir.to_owned(),
                        mutant: mutant.clone(),
                        case: case.clone(),
                        arch: arch.to_owned(),
                    });
                }
                merged.record_cell(mutant, case, caught.clone());
            }
        }
        Ok(())
    }
}

/// The cases whose architectures did not all reach the same verdict.
/// The writes each reference run (`<operation>-reference`) of an exploration kept in `bundle`
/// made, by operation; a reference whose placement cannot be read is left out (its matrix
/// rows are then in name order).
fn reference_labels(bundle: &LoadedBundle) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for case in &bundle.cases {
        let Some(operation) = crate::place::reference_of(&case.summary.name) else {
            continue;
        };
        let placement = case
            .artifacts
            .iter()
            .find(|a| a.path.ends_with(&format!("/{}", crate::place::PLACEMENT)))
            .and_then(|a| std::fs::read(bundle.dir.join(&a.path)).ok())
            .and_then(|b| serde_json::from_slice::<crate::place::Placement>(&b).ok());
        if let Some(p) = placement {
            out.insert(operation.to_string(), p.points);
        }
    }
    out
}

fn disagreements(cases: &[MergedCase], arches: &[String]) -> Vec<Disagreement> {
    cases
        .iter()
        .filter_map(|c| {
            let verdicts = c.verdicts(arches);
            let first = verdicts[0].1;
            verdicts
                .iter()
                .any(|(_, v)| *v != first)
                .then(|| Disagreement {
                    case: c.name.clone(),
                    verdicts: verdicts
                        .into_iter()
                        .map(|(a, v)| (a.to_owned(), v))
                        .collect(),
                })
        })
        .collect()
}

/// `850 ms`, `12.3 s`, `2 min 05 s`.
pub fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
    } else {
        format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}
