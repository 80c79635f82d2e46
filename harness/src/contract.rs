//! The clause matrix: every behaviour the cases hold an operator (and the harness's own
//! qualification procedure) to, as one clause with the checks that prove it and the mutants
//! those checks catch.
//!
//! `docs/contract.toml` is the source (its schema is documented at its top); `docs/contract.md`
//! is rendered from it ([`Contract::render_markdown`], `rehearse contract render --write`).
//! [`Contract::verify`] cross-checks it against the bucket manifest: a clause without a proof or
//! a mutant, a mutant a clause names that no case targets on one of its checks, a mutant target
//! of `scenarios/buckets.toml` that no clause names, or a proof on a case that does not exist is
//! a [`MatrixProblem`]. [`Contract::unnamed_checks`] is what a case run enforces: every check a
//! case assesses is a precondition of it or proves some clause.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::path::Path;

use serde::Deserialize;

use crate::buckets::Manifest;

/// Where the clause matrix lives, relative to the workspace root.
pub const DEFAULT_CONTRACT: &str = "docs/contract.toml";

/// Where the document rendered from it lives, relative to the workspace root.
pub const DEFAULT_DOCUMENT: &str = "docs/contract.md";

/// The schema this code understands (the `schema` key).
pub const SCHEMA_VERSION: u32 = 1;

const BUILTIN: &str = include_str!("../../docs/contract.toml");

/// The clause matrix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    /// Schema version; must be [`SCHEMA_VERSION`].
    pub schema: u32,
    /// The document's heading.
    pub title: String,
    /// The document's opening (Markdown).
    pub intro: String,
    /// Every case, with what it proves and its preconditions.
    #[serde(rename = "case", default)]
    pub cases: Vec<CaseRow>,
    /// The clause sections, in document order.
    #[serde(rename = "group", default)]
    pub groups: Vec<Group>,
    /// The invariants `rehearse explore` judges every schedule by.
    #[serde(rename = "invariant", default)]
    pub invariants: Vec<InvariantRow>,
    /// Closing prose sections.
    #[serde(rename = "section", default)]
    pub sections: Vec<Section>,
}

/// One case: what it proves, and which of its checks only show that the fault or setup landed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseRow {
    /// The case (nextest test name, `rehearsal::cases` name).
    pub name: String,
    /// Its bucket in `scenarios/buckets.toml`.
    pub bucket: String,
    /// What it shows (Markdown, one paragraph).
    pub proves: String,
    /// Checks that show the fault or setup landed: they prove no clause and need no mutant.
    #[serde(default)]
    pub preconditions: Vec<String>,
}

/// A section of clauses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Short id, e.g. `B1`.
    pub id: String,
    /// Heading.
    pub title: String,
    /// Prose under the heading (Markdown).
    #[serde(default)]
    pub text: String,
    /// Its clauses in order.
    #[serde(rename = "clause", default)]
    pub clauses: Vec<Clause>,
}

/// Which side of a behaviour a clause states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// What happens when all goes well.
    Holds,
    /// What happens when a copy, restore, gate, agent or game fails or is down.
    Failure,
}

impl Side {
    fn label(self) -> &'static str {
        match self {
            Side::Holds => "holds",
            Side::Failure => "failure",
        }
    }
}

/// One clause: a behaviour, its proofs and its mutants.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clause {
    /// `<group>.<n>`, unique.
    pub id: String,
    /// Success or failure side.
    pub side: Side,
    /// The clause (Markdown).
    pub text: String,
    /// `"case: check"` pairs that prove it.
    #[serde(default)]
    pub proofs: Vec<String>,
    /// Mutants caught on one of the proof checks.
    #[serde(default)]
    pub mutants: Vec<String>,
}

/// An invariant: a promise that holds whatever fault lands and whenever, judged by
/// `rehearse explore` over every schedule of the operations it names (the evidence crate's
/// `invariants` module is its code).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvariantRow {
    /// Its id, as the evidence crate names it (`consistency`, `data`, …): the check id of every
    /// schedule judged by it.
    pub id: String,
    /// The contract's clause it states, e.g. `D1`.
    pub clause: String,
    /// What must hold (Markdown).
    pub text: String,
    /// The operations whose schedules it judges (`backup`, `stopped-backup`, `restore`).
    pub operations: Vec<String>,
    /// Operator mutants the exploration catches on it (each a mutant of the manifest).
    #[serde(default)]
    pub mutants: Vec<String>,
}

/// A closing prose section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// Heading.
    pub heading: String,
    /// Body (Markdown).
    pub text: String,
}

/// A proof: a check of a case.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Proof {
    /// The case.
    pub case: String,
    /// The check id in its `assess` receipt.
    pub check: String,
}

/// The clause matrix could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// The file could not be read.
    #[error("{path}: cannot read the clause matrix: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// TOML syntax, an unknown key or a wrong type.
    #[error("{path}: {message}; fix the file (its schema is documented at its top)")]
    Syntax {
        /// The file.
        path: String,
        /// toml's message.
        message: String,
    },
    /// A schema this build does not know.
    #[error("{path}: schema {found} is not supported (this build reads schema {SCHEMA_VERSION})")]
    Schema {
        /// The file.
        path: String,
        /// The `schema` value found.
        found: u32,
    },
}

/// One way the clause matrix and the bucket manifest disagree; each names the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatrixProblem {
    /// A clause with no proof.
    ClauseWithoutCheck(String),
    /// A clause with no mutant.
    ClauseWithoutMutant(String),
    /// A proof that is not `case: check`.
    BadProof {
        /// The clause.
        clause: String,
        /// The text.
        proof: String,
    },
    /// A proof on a case the manifest or the case table does not have.
    UnknownCase {
        /// The clause (or `case table`).
        clause: String,
        /// The case.
        case: String,
    },
    /// A proof on a check the case lists as a precondition.
    ProofIsPrecondition {
        /// The clause.
        clause: String,
        /// The proof.
        proof: String,
    },
    /// A mutant the clause names is not targeted by the manifest at any of the clause's proofs.
    MutantNotOnClauseCheck {
        /// The clause.
        clause: String,
        /// The mutant.
        mutant: String,
    },
    /// A manifest mutant target that no clause names with that proof.
    MutantWithoutClause {
        /// The case.
        case: String,
        /// The mutant.
        mutant: String,
        /// The check that must catch it.
        check: String,
    },
    /// A case of the manifest without a row in the case table.
    CaseWithoutRow(String),
    /// Two clauses or groups with one id.
    DuplicateId(String),
    /// An invariant of the evidence crate without an `[[invariant]]` row.
    InvariantWithoutRow(String),
    /// An `[[invariant]]` row the evidence crate does not judge.
    UnknownInvariant(String),
    /// An invariant row whose operations are not those that judge it.
    InvariantOperations {
        /// The invariant.
        id: String,
        /// The operations the row lists.
        listed: Vec<String>,
        /// The operations whose schedules are judged by it.
        judged: Vec<String>,
    },
    /// An invariant row naming a mutant the manifest does not know.
    UnknownInvariantMutant {
        /// The invariant.
        id: String,
        /// The mutant.
        mutant: String,
    },
}

impl fmt::Display for MatrixProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ClauseWithoutCheck(c) => write!(
                f,
                "clause {c} has no check: add a proof \"case: check\" that shows it"
            ),
            Self::ClauseWithoutMutant(c) => write!(
                f,
                "clause {c} has no mutant: add one that its checks catch (and list it in scenarios/buckets.toml)"
            ),
            Self::BadProof { clause, proof } => {
                write!(f, "clause {clause}: proof {proof:?} is not \"case: check\"")
            }
            Self::UnknownCase { clause, case } => write!(
                f,
                "{clause}: case {case:?} is not in scenarios/buckets.toml and the case table: add it or fix the name"
            ),
            Self::ProofIsPrecondition { clause, proof } => write!(
                f,
                "clause {clause}: {proof} is a precondition of its case, which proves no clause: drop it from the preconditions or from the proofs"
            ),
            Self::MutantNotOnClauseCheck { clause, mutant } => write!(
                f,
                "clause {clause}: mutant {mutant} is not targeted in scenarios/buckets.toml at any of the clause's proofs: target it at one of them, or name it under the clause it is caught for"
            ),
            Self::MutantWithoutClause {
                case,
                mutant,
                check,
            } => write!(
                f,
                "scenarios/buckets.toml: mutant {mutant} on {case} (check {check}) belongs to no clause: name it under the clause that proves \"{case}: {check}\" in docs/contract.toml"
            ),
            Self::CaseWithoutRow(c) => write!(
                f,
                "case {c} of scenarios/buckets.toml has no [[case]] row in docs/contract.toml: add what it proves"
            ),
            Self::DuplicateId(id) => write!(f, "id {id} is used twice in docs/contract.toml"),
            Self::InvariantWithoutRow(id) => write!(
                f,
                "invariant {id} judges explore's schedules but has no [[invariant]] row in docs/contract.toml: add what it promises"
            ),
            Self::UnknownInvariant(id) => write!(
                f,
                "[[invariant]] {id} is not an invariant of the evidence crate (invariants::ALL): fix the id or remove the row"
            ),
            Self::InvariantOperations { id, listed, judged } => write!(
                f,
                "[[invariant]] {id} lists operations {listed:?}, but the schedules of {judged:?} are judged by it (invariants::by_operation): list exactly those"
            ),
            Self::UnknownInvariantMutant { id, mutant } => write!(
                f,
                "[[invariant]] {id} names mutant {mutant}, which no case of scenarios/buckets.toml targets: fix the name"
            ),
        }
    }
}

impl Proof {
    fn parse(text: &str) -> Option<Self> {
        let (case, check) = text.split_once(':')?;
        let (case, check) = (case.trim(), check.trim());
        (!case.is_empty() && !check.is_empty() && !check.contains(' ')).then(|| Self {
            case: case.to_string(),
            check: check.to_string(),
        })
    }
}

impl fmt::Display for Proof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.case, self.check)
    }
}

impl Clause {
    /// The clause's proofs that parse as `case: check`.
    pub fn parsed_proofs(&self) -> Vec<Proof> {
        self.proofs.iter().filter_map(|p| Proof::parse(p)).collect()
    }
}

impl Contract {
    /// The matrix compiled into this build (`docs/contract.toml` at build time).
    pub fn builtin() -> Result<Self, ContractError> {
        Self::parse(Path::new(DEFAULT_CONTRACT), BUILTIN)
    }

    /// Reads the matrix at `path`.
    pub fn load(path: &Path) -> Result<Self, ContractError> {
        let text = std::fs::read_to_string(path).map_err(|source| ContractError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Parses matrix `text` (`path` names the file in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, ContractError> {
        let contract: Contract = toml::from_str(text).map_err(|e| ContractError::Syntax {
            path: path.display().to_string(),
            message: e.message().trim().replace('\n', " "),
        })?;
        if contract.schema != SCHEMA_VERSION {
            return Err(ContractError::Schema {
                path: path.display().to_string(),
                found: contract.schema,
            });
        }
        Ok(contract)
    }

    /// Every clause, with its group.
    pub fn clauses(&self) -> impl Iterator<Item = (&Group, &Clause)> {
        self.groups
            .iter()
            .flat_map(|g| g.clauses.iter().map(move |c| (g, c)))
    }

    fn case_row(&self, name: &str) -> Option<&CaseRow> {
        self.cases.iter().find(|c| c.name == name)
    }

    /// The checks a case may assess: its preconditions and every check a clause proves on it.
    pub fn checks_of(&self, case: &str) -> BTreeSet<String> {
        let mut checks: BTreeSet<String> = self
            .case_row(case)
            .map(|r| r.preconditions.iter().cloned().collect())
            .unwrap_or_default();
        for (_, clause) in self.clauses() {
            for p in clause.parsed_proofs() {
                if p.case == case {
                    checks.insert(p.check);
                }
            }
        }
        checks
    }

    /// The checks of `assessed` (a case's `assess` receipt) that this matrix does not name for
    /// `case`: a new check needs a clause (or a precondition entry) before the case may pass.
    pub fn unnamed_checks<'a>(
        &self,
        case: &str,
        assessed: impl IntoIterator<Item = &'a str>,
    ) -> Vec<String> {
        let known = self.checks_of(case);
        let mut unnamed: Vec<String> = assessed
            .into_iter()
            .filter(|c| !known.contains(*c))
            .map(str::to_string)
            .collect();
        unnamed.sort();
        unnamed.dedup();
        unnamed
    }

    /// Cross-checks the matrix against the bucket manifest; empty when they agree.
    pub fn verify(&self, manifest: &Manifest) -> Vec<MatrixProblem> {
        let mut problems = Vec::new();
        let manifest_cases: BTreeMap<&str, _> = manifest
            .cases()
            .map(|(_, c)| (c.test.as_str(), c))
            .collect();
        let mut ids = BTreeSet::new();
        for g in &self.groups {
            if !ids.insert(g.id.clone()) {
                problems.push(MatrixProblem::DuplicateId(g.id.clone()));
            }
        }
        for row in &self.cases {
            if !manifest_cases.contains_key(row.name.as_str()) {
                problems.push(MatrixProblem::UnknownCase {
                    clause: "case table".into(),
                    case: row.name.clone(),
                });
            }
        }
        for name in manifest_cases.keys() {
            if self.case_row(name).is_none() {
                problems.push(MatrixProblem::CaseWithoutRow(name.to_string()));
            }
        }
        // (case, mutant, check) triples the clauses account for.
        let mut claimed: BTreeSet<(String, String, String)> = BTreeSet::new();
        for (_, clause) in self.clauses() {
            if !ids.insert(clause.id.clone()) {
                problems.push(MatrixProblem::DuplicateId(clause.id.clone()));
            }
            self.verify_clause(clause, &manifest_cases, &mut problems, &mut claimed);
        }
        for (case, entry) in &manifest_cases {
            for m in &entry.mutants {
                let key = (case.to_string(), m.name.clone(), m.check.clone());
                if !claimed.contains(&key) {
                    problems.push(MatrixProblem::MutantWithoutClause {
                        case: case.to_string(),
                        mutant: m.name.clone(),
                        check: m.check.clone(),
                    });
                }
            }
        }
        self.verify_invariants(manifest, &mut ids, &mut problems);
        problems
    }

    /// The `[[invariant]]` rows against the evidence crate's invariants and the manifest's
    /// mutants.
    fn verify_invariants(
        &self,
        manifest: &Manifest,
        ids: &mut BTreeSet<String>,
        problems: &mut Vec<MatrixProblem>,
    ) {
        use crate::evidence::invariants::{ALL, by_operation};
        let known = manifest.cases_targeting();
        for row in &self.invariants {
            if !ids.insert(row.id.clone()) {
                problems.push(MatrixProblem::DuplicateId(row.id.clone()));
            }
            if !ALL.contains(&row.id.as_str()) {
                problems.push(MatrixProblem::UnknownInvariant(row.id.clone()));
                continue;
            }
            let judged: Vec<String> = by_operation()
                .iter()
                .filter(|(_, ids)| ids.contains(&row.id.as_str()))
                .map(|(op, _)| op.to_string())
                .collect();
            let mut listed = row.operations.clone();
            listed.sort();
            let mut sorted = judged.clone();
            sorted.sort();
            if listed != sorted {
                problems.push(MatrixProblem::InvariantOperations {
                    id: row.id.clone(),
                    listed: row.operations.clone(),
                    judged,
                });
            }
            for m in &row.mutants {
                if !known.contains_key(m.as_str()) {
                    problems.push(MatrixProblem::UnknownInvariantMutant {
                        id: row.id.clone(),
                        mutant: m.clone(),
                    });
                }
            }
        }
        for id in ALL {
            if !self.invariants.iter().any(|r| r.id == *id) {
                problems.push(MatrixProblem::InvariantWithoutRow(id.to_string()));
            }
        }
    }

    fn verify_clause(
        &self,
        clause: &Clause,
        manifest_cases: &BTreeMap<&str, &crate::buckets::CaseEntry>,
        problems: &mut Vec<MatrixProblem>,
        claimed: &mut BTreeSet<(String, String, String)>,
    ) {
        if clause.proofs.is_empty() {
            problems.push(MatrixProblem::ClauseWithoutCheck(clause.id.clone()));
        }
        if clause.mutants.is_empty() {
            problems.push(MatrixProblem::ClauseWithoutMutant(clause.id.clone()));
        }
        let mut proofs = Vec::new();
        for text in &clause.proofs {
            let Some(p) = Proof::parse(text) else {
                problems.push(MatrixProblem::BadProof {
                    clause: clause.id.clone(),
                    proof: text.clone(),
                });
                continue;
            };
            if !manifest_cases.contains_key(p.case.as_str()) {
                problems.push(MatrixProblem::UnknownCase {
                    clause: format!("clause {}", clause.id),
                    case: p.case.clone(),
                });
            }
            if self
                .case_row(&p.case)
                .is_some_and(|r| r.preconditions.contains(&p.check))
            {
                problems.push(MatrixProblem::ProofIsPrecondition {
                    clause: clause.id.clone(),
                    proof: p.to_string(),
                });
            }
            proofs.push(p);
        }
        for mutant in &clause.mutants {
            let mut found = false;
            for p in &proofs {
                let Some(entry) = manifest_cases.get(p.case.as_str()) else {
                    continue;
                };
                if entry
                    .mutants
                    .iter()
                    .any(|m| &m.name == mutant && m.check == p.check)
                {
                    found = true;
                    claimed.insert((p.case.clone(), mutant.clone(), p.check.clone()));
                }
            }
            if !found {
                problems.push(MatrixProblem::MutantNotOnClauseCheck {
                    clause: clause.id.clone(),
                    mutant: mutant.clone(),
                });
            }
        }
    }

    /// Proofs (case, check) that no mutant of the manifest targets: checks whose failure side
    /// no mutant has shown yet. Rendered in the document so the gap is visible.
    pub fn unguarded(&self, manifest: &Manifest) -> Vec<Proof> {
        let targeted: BTreeSet<(String, String)> = manifest
            .cases()
            .flat_map(|(_, c)| {
                c.mutants
                    .iter()
                    .map(|m| (c.test.clone(), m.check.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut out: BTreeSet<Proof> = BTreeSet::new();
        for (_, clause) in self.clauses() {
            for p in clause.parsed_proofs() {
                if !targeted.contains(&(p.case.clone(), p.check.clone())) {
                    out.insert(p);
                }
            }
        }
        out.into_iter().collect()
    }

    /// The Markdown document (`docs/contract.md`): the case tables, the clause matrix with the
    /// mutant that catches each proof, the prose sections.
    pub fn render_markdown(&self, manifest: &Manifest) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}\n", self.title);
        let _ = writeln!(
            out,
            "<!-- Generated from docs/contract.toml by `rehearse contract render --write`; do not edit. -->\n"
        );
        out.push_str(self.intro.trim());
        out.push_str("\n\n");
        self.render_cases(manifest, &mut out);
        self.render_clauses(manifest, &mut out);
        self.render_invariants(&mut out);
        for s in &self.sections {
            let _ = writeln!(out, "## {}\n\n{}\n", s.heading, s.text.trim());
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    }

    fn render_cases(&self, manifest: &Manifest, out: &mut String) {
        for bucket in &manifest.buckets {
            let _ = writeln!(out, "## The cases of bucket `{}`\n", bucket.name);
            if !bucket.description.is_empty() {
                let _ = writeln!(out, "{}\n", bucket.description);
            }
            let _ = writeln!(
                out,
                "| case | what it proves | clauses | preconditions |\n|---|---|---|---|"
            );
            for entry in &bucket.cases {
                let Some(row) = self.case_row(&entry.test) else {
                    continue;
                };
                let clauses: Vec<String> = self
                    .clauses()
                    .filter(|(_, c)| c.parsed_proofs().iter().any(|p| p.case == row.name))
                    .map(|(_, c)| c.id.clone())
                    .collect();
                let pre: Vec<String> = row.preconditions.iter().map(|p| format!("`{p}`")).collect();
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} |",
                    row.name,
                    cell(&row.proves),
                    clauses.join(", "),
                    if pre.is_empty() {
                        "—".into()
                    } else {
                        pre.join(", ")
                    }
                );
            }
            out.push('\n');
        }
    }

    fn render_clauses(&self, manifest: &Manifest, out: &mut String) {
        let targets: BTreeMap<(String, String), Vec<String>> = {
            let mut t: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
            for (_, c) in manifest.cases() {
                for m in &c.mutants {
                    t.entry((c.test.clone(), m.check.clone()))
                        .or_default()
                        .push(m.name.clone());
                }
            }
            t
        };
        out.push_str("## The clause matrix\n\n");
        out.push_str(
            "Each clause is one behaviour; *side* says whether it is what happens when all goes \
             well (`holds`) or when a copy, restore, gate, agent or game fails or is down \
             (`failure`). Each proof is `case: check`, followed by the mutants the self-test \
             shows that check catching (or *unguarded* where no mutant targets it yet).\n\n",
        );
        for g in &self.groups {
            let _ = writeln!(out, "### {} {}\n", g.id, g.title);
            if !g.text.trim().is_empty() {
                let _ = writeln!(out, "{}\n", g.text.trim());
            }
            let _ = writeln!(
                out,
                "| clause | side | behaviour | proved by |\n|---|---|---|---|"
            );
            for c in &g.clauses {
                let proofs: Vec<String> = c
                    .parsed_proofs()
                    .iter()
                    .map(|p| {
                        let by = targets
                            .get(&(p.case.clone(), p.check.clone()))
                            .map(|ms| ms.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>());
                        match by {
                            Some(ms) => format!("`{}`: `{}` ← {}", p.case, p.check, ms.join(", ")),
                            None => format!("`{}`: `{}` (unguarded)", p.case, p.check),
                        }
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    c.id,
                    c.side.label(),
                    cell(&c.text),
                    proofs.join("<br>")
                );
            }
            out.push('\n');
        }
        let unguarded = self.unguarded(manifest);
        let _ = writeln!(
            out,
            "{} proofs in {} clauses; {} of them unguarded (no mutant targets the check yet).\n",
            self.clauses().map(|(_, c)| c.proofs.len()).sum::<usize>(),
            self.clauses().count(),
            unguarded.len()
        );
    }
}

impl Contract {
    fn render_invariants(&self, out: &mut String) {
        if self.invariants.is_empty() {
            return;
        }
        out.push_str("## The invariants (judged by `rehearse explore`)\n\n");
        out.push_str(
            "A case proves a clause at the moment its author chose; an invariant holds at every \
             moment. `rehearse explore` places every fault before every write the operator makes \
             during an operation and judges each schedule by these, one check per invariant \
             ([docs/explore.md](explore.md)). *Caught* lists the operator mutants the exploration \
             catches on the invariant.\n\n",
        );
        let _ = writeln!(
            out,
            "| invariant | clause | operations | what must hold | caught |\n|---|---|---|---|---|"
        );
        for row in &self.invariants {
            let caught = if row.mutants.is_empty() {
                "(no mutant shown yet)".to_string()
            } else {
                row.mutants
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {caught} |",
                row.id,
                row.clause,
                row.operations
                    .iter()
                    .map(|o| format!("`{o}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                cell(&row.text)
            );
        }
        out.push('\n');
    }
}

/// A Markdown table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(mutants: &str) -> Manifest {
        let text = format!(
            "schema = 1\npackage = \"p\"\n[[bucket]]\nname = \"backup\"\n[[bucket.case]]\nbinary = \"b\"\ntest = \"c\"\ncontract = \"c\"\nmutants = [{mutants}]\n"
        );
        Manifest::parse(Path::new("buckets.toml"), &text).expect("manifest")
    }

    /// An `[[invariant]]` row for every invariant of the evidence crate, as it judges them.
    fn invariant_rows(mutant: &str) -> String {
        use crate::evidence::invariants::{ALL, by_operation};
        ALL.iter()
            .map(|id| {
                let ops: Vec<String> = by_operation()
                    .iter()
                    .filter(|(_, ids)| ids.contains(id))
                    .map(|(op, _)| format!("\"{op}\""))
                    .collect();
                format!(
                    "[[invariant]]\nid = \"{id}\"\nclause = \"D\"\ntext = \"holds\"\noperations = [{}]\nmutants = [{mutant}]\n",
                    ops.join(", ")
                )
            })
            .collect()
    }

    fn contract(clause: &str) -> Contract {
        contract_with(clause, &invariant_rows(""))
    }

    fn contract_with(clause: &str, invariants: &str) -> Contract {
        let text = format!(
            "schema = 1\ntitle = \"t\"\nintro = \"i\"\n[[case]]\nname = \"c\"\nbucket = \"backup\"\nproves = \"p\"\npreconditions = [\"fault\"]\n[[group]]\nid = \"B\"\ntitle = \"g\"\n[[group.clause]]\nid = \"B.1\"\nside = \"failure\"\ntext = \"x\"\n{clause}\n{invariants}"
        );
        Contract::parse(Path::new("contract.toml"), &text).expect("contract")
    }

    #[test]
    fn a_clause_without_a_check_or_a_mutant_is_a_problem() {
        let m = manifest("{ name = \"m\", check = \"k\" }");
        let c = contract("proofs = []\nmutants = []");
        let problems = c.verify(&m);
        assert!(problems.contains(&MatrixProblem::ClauseWithoutCheck("B.1".into())));
        assert!(problems.contains(&MatrixProblem::ClauseWithoutMutant("B.1".into())));
        // …and the manifest's mutant now belongs to no clause.
        assert!(problems.contains(&MatrixProblem::MutantWithoutClause {
            case: "c".into(),
            mutant: "m".into(),
            check: "k".into()
        }));
    }

    #[test]
    fn a_mutant_must_be_targeted_at_one_of_its_clauses_checks() {
        let m = manifest("{ name = \"m\", check = \"other\" }");
        let c = contract("proofs = [\"c: k\"]\nmutants = [\"m\"]");
        let problems = c.verify(&m);
        assert!(
            problems.contains(&MatrixProblem::MutantNotOnClauseCheck {
                clause: "B.1".into(),
                mutant: "m".into()
            }),
            "{problems:?}"
        );
    }

    #[test]
    fn a_consistent_matrix_has_no_problem_and_names_every_check() {
        let m = manifest("{ name = \"m\", check = \"k\" }");
        let c = contract("proofs = [\"c: k\", \"c: j\"]\nmutants = [\"m\"]");
        assert_eq!(c.verify(&m), Vec::<MatrixProblem>::new());
        assert_eq!(
            c.unnamed_checks("c", ["k", "fault", "new-check"]),
            vec!["new-check".to_string()]
        );
        assert_eq!(
            c.unguarded(&m),
            vec![Proof {
                case: "c".into(),
                check: "j".into()
            }]
        );
        let doc = c.render_markdown(&m);
        assert!(doc.contains("`c`: `k` ← `m`"), "{doc}");
        assert!(doc.contains("`c`: `j` (unguarded)"), "{doc}");
    }

    #[test]
    fn a_precondition_proves_nothing_and_unknown_cases_are_named() {
        let m = manifest("{ name = \"m\", check = \"k\" }");
        let c =
            contract("proofs = [\"c: fault\", \"c: k\", \"nope: k\", \"bad\"]\nmutants = [\"m\"]");
        let problems = c.verify(&m);
        assert!(problems.contains(&MatrixProblem::ProofIsPrecondition {
            clause: "B.1".into(),
            proof: "c: fault".into()
        }));
        assert!(problems.contains(&MatrixProblem::UnknownCase {
            clause: "clause B.1".into(),
            case: "nope".into()
        }));
        assert!(problems.contains(&MatrixProblem::BadProof {
            clause: "B.1".into(),
            proof: "bad".into()
        }));
    }

    #[test]
    fn every_invariant_has_a_row_with_the_operations_it_judges_and_known_mutants() {
        let m = manifest("{ name = \"m\", check = \"k\" }");
        let clause = "proofs = [\"c: k\"]\nmutants = [\"m\"]";
        assert_eq!(
            contract_with(clause, &invariant_rows("\"m\"")).verify(&m),
            Vec::<MatrixProblem>::new()
        );
        // The operations `drain` judges (every one but the qualification), as by_operation has
        // them.
        let judged: Vec<String> = crate::evidence::invariants::by_operation()
            .iter()
            .filter(|(_, ids)| ids.contains(&"drain"))
            .map(|(op, _)| op.to_string())
            .collect();
        assert!(judged.len() > 1 && !judged.contains(&"qualify".to_string()));
        let doc = contract_with(clause, &invariant_rows("\"m\"")).render_markdown(&m);
        let cells: Vec<String> = judged.iter().map(|op| format!("`{op}`")).collect();
        let row = format!("| `drain` | D | {} | holds | `m` |", cells.join(", "));
        assert!(doc.contains(&row), "{row} not in {doc}");
        // A missing row, an unknown invariant, wrong operations, an unknown mutant.
        let quoted: Vec<String> = judged.iter().map(|op| format!("\"{op}\"")).collect();
        let every = format!("operations = [{}]", quoted.join(", "));
        assert!(invariant_rows("").contains(&every));
        let rows = invariant_rows("\"nope\"")
            .replacen("id = \"consistency\"", "id = \"speed\"", 1)
            .replacen(
                &format!("id = \"drain\"\nclause = \"D\"\ntext = \"holds\"\n{every}"),
                "id = \"drain\"\nclause = \"D\"\ntext = \"holds\"\noperations = [\"backup\"]",
                1,
            );
        let problems = contract_with(clause, &rows).verify(&m);
        for expected in [
            MatrixProblem::InvariantWithoutRow("consistency".into()),
            MatrixProblem::UnknownInvariant("speed".into()),
            MatrixProblem::InvariantOperations {
                id: "drain".into(),
                listed: vec!["backup".into()],
                judged: judged.clone(),
            },
            MatrixProblem::UnknownInvariantMutant {
                id: "cleanup".into(),
                mutant: "nope".into(),
            },
        ] {
            assert!(
                problems.contains(&expected),
                "{expected:?} not in {problems:?}"
            );
        }
        for p in &problems {
            assert!(
                p.to_string().contains("[[invariant]]")
                    || p.to_string().contains("invariant consistency"),
                "{p}"
            );
        }
    }

    #[test]
    fn unknown_keys_are_refused_naming_the_file() {
        let err = Contract::parse(
            Path::new("contract.toml"),
            "schema = 1\ntitle = \"t\"\nintro = \"i\"\nextra = 1\n",
        )
        .expect_err("unknown key");
        let msg = err.to_string();
        assert!(msg.starts_with("contract.toml: "), "{msg}");
        assert!(msg.contains("extra"), "{msg}");
    }
}
