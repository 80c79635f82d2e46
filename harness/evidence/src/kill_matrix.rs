//! The mutant kill matrix: for each mutant (reference operator or harness), which cases caught
//! it, and on which check.
//!
//! A self-test run records it so a reviewer sees every case fail against the defect it exists
//! to catch, on the check that targets it. Stored as `kill-matrix.json`:
//! `{"mutants": {"<mutant>": {"<case>": {"caught": true, "check": "…", "failed_checks": […]}}}}`
//! (older bundles hold a bare `true`/`false` per cell, which still loads).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::observation::Verdict;

/// mutant → case → cell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillMatrix {
    /// Each mutant's cells, by case name.
    pub mutants: BTreeMap<String, BTreeMap<String, KillCell>>,
}

/// One (mutant, case) pair of the self-test.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "CellRepr")]
pub struct KillCell {
    /// The targeted check was among the case's failed checks.
    pub caught: bool,
    /// The check that must fail (empty in bundles written before checks were named).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub check: String,
    /// Every check that failed against the mutant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_checks: Vec<String>,
    /// How the case ended, when it did not end on the targeted check (a timeout, a setup
    /// error, a pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum CellRepr {
    Bare(bool),
    Cell {
        caught: bool,
        #[serde(default)]
        check: String,
        #[serde(default)]
        failed_checks: Vec<String>,
        #[serde(default)]
        reason: Option<String>,
    },
}

impl From<CellRepr> for KillCell {
    fn from(r: CellRepr) -> Self {
        match r {
            CellRepr::Bare(caught) => KillCell {
                caught,
                ..Default::default()
            },
            CellRepr::Cell {
                caught,
                check,
                failed_checks,
                reason,
            } => KillCell {
                caught,
                check,
                failed_checks,
                reason,
            },
        }
    }
}

impl KillCell {
    /// Judges one (mutant, case) pair from how the case ended against the mutant: caught only
    /// when the case *failed* and `check` — exactly that id, not one that contains it or is
    /// contained in it — is among its failed checks. A timeout, a setup error, another check
    /// alone, an interruption or a case that could not run is never a catch; the cell keeps
    /// every failed check and, when not caught, the case's reason.
    pub fn judge(
        check: &str,
        verdict: Verdict,
        failed_checks: &[String],
        reason: Option<&str>,
    ) -> KillCell {
        let caught = verdict == Verdict::Failed && failed_checks.iter().any(|c| c == check);
        KillCell {
            caught,
            check: check.to_owned(),
            failed_checks: failed_checks.to_vec(),
            reason: if caught {
                None
            } else {
                reason.map(str::to_owned)
            },
        }
    }

    /// The cell as one short phrase: "caught on `<check>`", or why not.
    pub fn describe(&self) -> String {
        match (self.caught, self.check.is_empty()) {
            (true, true) => "caught".into(),
            (true, false) => format!("caught on {}", self.check),
            (false, _) if !self.failed_checks.is_empty() => {
                format!("missed (failed on {})", self.failed_checks.join(", "))
            }
            (false, _) => match &self.reason {
                Some(r) => format!("missed ({r})"),
                None => "missed (the case passed)".into(),
            },
        }
    }
}

impl KillMatrix {
    /// Records whether `case` caught `mutant` (on no named check: older self-tests).
    pub fn record(&mut self, mutant: &str, case: &str, caught: bool) {
        self.record_cell(
            mutant,
            case,
            KillCell {
                caught,
                ..Default::default()
            },
        );
    }

    /// Records one cell.
    pub fn record_cell(&mut self, mutant: &str, case: &str, cell: KillCell) {
        self.mutants
            .entry(mutant.to_owned())
            .or_default()
            .insert(case.to_owned(), cell);
    }

    /// Mutants not caught by every case listed for them.
    pub fn survivors(&self) -> Vec<&str> {
        self.mutants
            .iter()
            .filter(|(_, cases)| cases.is_empty() || !cases.values().all(|c| c.caught))
            .map(|(m, _)| m.as_str())
            .collect()
    }

    /// Every case that appears in any row, sorted.
    pub fn cases(&self) -> Vec<&str> {
        let mut cases: Vec<&str> = self
            .mutants
            .values()
            .flat_map(|c| c.keys().map(String::as_str))
            .collect();
        cases.sort_unstable();
        cases.dedup();
        cases
    }
}
