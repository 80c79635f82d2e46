//! The mutant kill matrix: for each reference-operator mutant, which cases caught it.
//!
//! A self-test run records it so a reviewer sees every case fails against the defect it exists
//! to catch. Stored as `kill-matrix.json`: `{"mutants": {"<mutant>": {"<case>": true}}}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// mutant → case → caught (the case failed against the mutant).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillMatrix {
    pub mutants: BTreeMap<String, BTreeMap<String, bool>>,
}

impl KillMatrix {
    /// Records whether `case` caught `mutant`.
    pub fn record(&mut self, mutant: &str, case: &str, caught: bool) {
        self.mutants
            .entry(mutant.to_owned())
            .or_default()
            .insert(case.to_owned(), caught);
    }

    /// Mutants no case caught.
    pub fn survivors(&self) -> Vec<&str> {
        self.mutants
            .iter()
            .filter(|(_, cases)| !cases.values().any(|c| *c))
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
