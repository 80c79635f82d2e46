//! How a case's assessment and its ending become a verdict.
//!
//! A case evaluates every named check ([`Checks`]: none stops the others, so the receipt shows
//! each one and the self-test sees every check a mutant trips), then ends one of four ways
//! ([`Ending`]). [`verdict`] turns the ending into the verdict, reason and failed checks the
//! bundle records. The rules:
//! - a timeout is never a pass, even when every check held, and it names no check;
//! - only a fault the cluster cannot inject makes a case not applicable; evidence that is
//!   missing fails it;
//! - a case stopped at a step boundary by a signal is interrupted: it reached no verdict.

use serde::Serialize;

use crate::observation::Verdict;

/// One named check of a case's assessment: what it looked at, what it expected, what it saw.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CheckResult {
    /// Stable id (kebab-case); `scenarios/buckets.toml` names it as a mutant's target.
    pub check: &'static str,
    /// Whether the check held.
    pub passed: bool,
    /// The object looked at, e.g. `backup <namespace>/live`.
    pub object: String,
    /// The field or property looked at, e.g. `status.snapshotID`.
    pub field: String,
    /// What the check expected, rendered for the receipt.
    pub expected: String,
    /// What was observed, `Debug`-rendered.
    pub observed: String,
}

/// The assessment of a case: every named check is evaluated (none stops the others).
#[derive(Debug, Default)]
pub struct Checks {
    results: Vec<CheckResult>,
}

/// An assessment that did not pass: the checks that did not hold and the waits that reached
/// their bound before it (each with the last observed state), in the order they ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPassed {
    /// The checks that did not hold.
    pub failed: Vec<CheckResult>,
    /// Waits that reached their bound before the assessment.
    pub timeouts: Vec<String>,
}

impl std::fmt::Display for NotPassed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let checks = self
            .failed
            .iter()
            .map(|c| {
                format!(
                    "check {}: {}: expected {} {}, observed {}",
                    c.check, c.object, c.field, c.expected, c.observed
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        match (checks.is_empty(), self.timeouts.is_empty()) {
            (_, true) => f.write_str(&checks),
            (true, false) => write!(f, "timed out: {}", self.timeouts.join("; ")),
            (false, false) => write!(f, "{checks}; timed out: {}", self.timeouts.join("; ")),
        }
    }
}

impl NotPassed {
    /// The ids of the checks that did not hold, in the order they were evaluated.
    pub fn check_ids(&self) -> Vec<String> {
        self.failed.iter().map(|c| c.check.to_string()).collect()
    }
}

impl Checks {
    /// An assessment with no checks yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records check `id`: `passed`, about `object`'s `field`. Returns `passed`.
    pub fn check(
        &mut self,
        id: &'static str,
        passed: bool,
        object: &str,
        field: &str,
        expected: impl std::fmt::Display,
        observed: impl std::fmt::Debug,
    ) -> bool {
        self.results.push(CheckResult {
            check: id,
            passed,
            object: object.to_string(),
            field: field.to_string(),
            expected: expected.to_string(),
            observed: format!("{observed:?}"),
        });
        passed
    }

    /// Records check `id`: `observed == expected`. Returns whether they are equal.
    pub fn eq<T: PartialEq + std::fmt::Debug>(
        &mut self,
        id: &'static str,
        object: &str,
        field: &str,
        expected: T,
        observed: T,
    ) -> bool {
        let passed = expected == observed;
        self.check(id, passed, object, field, format!("{expected:?}"), observed)
    }

    /// Whether every check so far passed (true when there is none).
    pub fn all_passed(&self) -> bool {
        self.results.iter().all(|c| c.passed)
    }

    /// Every check so far, in the order recorded.
    pub fn results(&self) -> &[CheckResult] {
        &self.results
    }

    /// Ends the assessment: every result (for the receipt), or what did not pass.
    pub fn finish(self) -> Result<Vec<CheckResult>, NotPassed> {
        self.finish_after(Vec::new())
    }

    /// Ends the assessment of a case whose waits in `timeouts` reached their bound: it does not
    /// pass (a timeout is never a pass), listing the failed checks and the timeouts.
    pub fn finish_after(self, timeouts: Vec<String>) -> Result<Vec<CheckResult>, NotPassed> {
        if self.all_passed() && timeouts.is_empty() {
            Ok(self.results)
        } else {
            Err(NotPassed {
                failed: self.results.into_iter().filter(|c| !c.passed).collect(),
                timeouts,
            })
        }
    }
}

/// How a case's body ended, as the verdict needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It returned without error.
    Passed,
    /// A signal stopped it at a step boundary; the message names the signal and step.
    Interrupted(String),
    /// It needs a fault this cluster cannot inject; the message says which and why.
    NotApplicable(String),
    /// Anything else: the message names the cause; `checks` are the named checks that failed
    /// (empty when it ended on a timeout, a setup error or absent evidence).
    Failed {
        /// The error's one-line message.
        message: String,
        /// The ids of the failed checks.
        checks: Vec<String>,
    },
}

/// A case's verdict, reason and failed checks from how it ended.
pub fn verdict(ending: Ending) -> (Verdict, Option<String>, Vec<String>) {
    match ending {
        Ending::Passed => (Verdict::Passed, None, Vec::new()),
        Ending::Interrupted(message) => (Verdict::Interrupted, Some(message), Vec::new()),
        Ending::NotApplicable(why) => (
            Verdict::NotApplicable,
            Some(format!("not applicable on this cluster: {why}")),
            Vec::new(),
        ),
        Ending::Failed { message, checks } => (Verdict::Failed, Some(message), checks),
    }
}
