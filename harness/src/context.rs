//! What a running case holds — its cluster, namespace and recorder — and the named-step and
//! assertion helpers the cases are written in.
//!
//! A case reads like the table in CONTRACT.md: setup, act, assess. Each step is a named unit
//! that writes a receipt with what it observed (or why it failed), so the journal shows how far a
//! case got even when it fails.

use std::future::Future;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::backend::Backend;
use crate::evidence::bundle::{BundleError, CaseRecorder, Verdict};
use crate::evidence::judge::audit::Absent;
pub use crate::evidence::judge::verdict::{CheckResult, Checks, NotPassed};
use crate::evidence::judge::verdict::{Ending, verdict};
use crate::evidence::pvc_table::{PvcObservation, PvcPhase};
pub use crate::mutants::HarnessMutant;

/// Whether every step prints a progress line on stdout as it ends (the `rehearse qualify`
/// console; cases run quietly).
static STEP_PROGRESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The signal that asked this process to stop, once one did: every later step returns
/// [`CaseError::Interrupted`] instead of starting.
static INTERRUPT: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Turns the per-step progress line on or off for this process.
pub fn set_step_progress(on: bool) {
    STEP_PROGRESS.store(on, std::sync::atomic::Ordering::SeqCst);
}

/// Asks every procedure of this process to stop at its next step boundary (`signal` names
/// why, e.g. `SIGINT`).
pub fn request_interrupt(signal: &str) {
    let mut held = INTERRUPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    held.get_or_insert_with(|| signal.to_string());
}

/// A step boundary: refuses to start `name` once an interrupt was requested, and prints its
/// start line on the `rehearse qualify` console.
pub fn boundary(name: &str) -> Result<(), CaseError> {
    if let Some(signal) = interrupt_requested() {
        return Err(CaseError::Interrupted {
            signal,
            step: name.to_string(),
        });
    }
    if STEP_PROGRESS.load(std::sync::atomic::Ordering::SeqCst) {
        println!("  start   {name}");
    }
    Ok(())
}

/// The signal that asked this process to stop, if one did.
pub fn interrupt_requested() -> Option<String> {
    INTERRUPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Why a case failed. Every variant names the object, what was expected and what was observed.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// A single expectation about an object failed outside the named checks.
    #[error("{object}: expected {field} {expected}, observed {observed}")]
    Assertion {
        /// The object, e.g. `gametemplate <name>`.
        object: String,
        /// The field or property looked at.
        field: String,
        /// What it should have been.
        expected: String,
        /// What was read.
        observed: String,
    },
    /// A wait ended without its condition (the error names the object's last observed state).
    #[error(transparent)]
    Wait(Box<crate::wait::WaitError>),
    /// A fault could not be injected or its effect not observed.
    #[error(transparent)]
    Fault(Box<crate::faults::FaultError>),
    /// World data could not be read back from the volumes.
    #[error(transparent)]
    Readback(Box<crate::probe::readback::ReadbackError>),
    /// A Kubernetes call failed.
    #[error("{what} {object}: {}", crate::kube_error::line(source))]
    Kube {
        /// The call, e.g. `create Backup`.
        what: &'static str,
        /// The object, as `<namespace>/<name>` (its name alone when cluster-scoped).
        object: String,
        /// kube's error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The case could not be set up or did not finish (namespace, operator, case bound); the
    /// message names the cause.
    #[error("{0}")]
    Setup(String),
    /// A receipt or artifact could not be written.
    #[error("could not write evidence: {0}")]
    Evidence(Box<BundleError>),
    /// The command was interrupted (SIGINT or SIGTERM): the procedure stopped at a step
    /// boundary, before the step named here.
    #[error("interrupted by {signal} before step {step:?}")]
    Interrupted {
        /// `SIGINT` or `SIGTERM`.
        signal: String,
        /// The step that was not started.
        step: String,
    },
    /// One or more named checks failed, or a wait reached its bound and the case assessed the
    /// evidence that existed then: the verdict's evidence, matched by the self-test against the
    /// check a mutant targets (a timeout alone names no check).
    #[error("{0}")]
    Checks(NotPassed),
    /// The schedule's fault never landed: the point it waits for never came (the operation
    /// ended first). Every invariant held, but over a run nothing perturbed; never a pass.
    #[error("not placed: {why}")]
    NotPlaced {
        /// What never came and what the run did instead.
        why: String,
    },
    /// The source that would show an absence was not there (a missing or empty log): the case
    /// cannot conclude, so it fails, and never on a check.
    #[error("evidence absent: {what}: {why}")]
    EvidenceAbsent {
        /// The evidence or the object it would come from, e.g. `backup <namespace>/<name>`.
        what: String,
        /// Why it is absent or cannot speak to the moment in question, and what to do.
        why: String,
    },
}

// Boxed so a `Result<_, CaseError>` stays small; `?` still converts.
macro_rules! boxed_from {
    ($($variant:ident($ty:ty)),*) => {$(
        impl From<$ty> for CaseError {
            fn from(e: $ty) -> Self {
                Self::$variant(Box::new(e))
            }
        }
    )*};
}
boxed_from!(
    Wait(crate::wait::WaitError),
    Fault(crate::faults::FaultError),
    Readback(crate::probe::readback::ReadbackError),
    Evidence(BundleError)
);

/// A case's verdict, reason and failed checks from how its body ended: a fault the cluster
/// cannot inject is "not applicable on this cluster", never "failed".
///
/// A case stopped at a step boundary by SIGINT/SIGTERM is `interrupted` (it reached no
/// verdict); every other error is `failed`, naming its checks when it failed on checks.
pub fn verdict_of(outcome: &Result<(), CaseError>) -> (Verdict, Option<String>, Vec<String>) {
    verdict(match outcome {
        Ok(()) => Ending::Passed,
        Err(e @ CaseError::Interrupted { .. }) => Ending::Interrupted(e.to_string()),
        Err(e) => match e.not_applicable() {
            Some(why) => Ending::NotApplicable(why),
            None => Ending::Failed {
                message: e.to_string(),
                checks: e.failed_checks(),
            },
        },
    })
}

impl CaseError {
    /// The named checks that failed (empty when the case ended for another reason: a wait
    /// that timed out, a setup error, absent evidence).
    pub fn failed_checks(&self) -> Vec<String> {
        match self {
            Self::Checks(not_passed) => not_passed.check_ids(),
            _ => Vec::new(),
        }
    }

    /// Why the case cannot run on this cluster at all: a fault the backend cannot inject.
    pub fn not_applicable(&self) -> Option<String> {
        match self {
            Self::Fault(f) => f.not_applicable(),
            _ => None,
        }
    }

    /// Evidence that a case needed was not there.
    pub fn evidence_absent(what: impl Into<String>, why: impl Into<String>) -> Self {
        Self::EvidenceAbsent {
            what: what.into(),
            why: why.into(),
        }
    }

    /// A failed expectation about `object`'s `field`.
    pub fn assertion(
        object: impl Into<String>,
        field: impl Into<String>,
        expected: impl std::fmt::Display,
        observed: impl std::fmt::Display,
    ) -> Self {
        Self::Assertion {
            object: object.into(),
            field: field.into(),
            expected: expected.to_string(),
            observed: observed.to_string(),
        }
    }

    /// Wraps a kube error with the operation and object it concerned.
    pub fn kube(what: &'static str, object: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let object = object.into();
        move |source| Self::Kube {
            what,
            object,
            source: Box::new(source),
        }
    }
}

/// Fails with an assertion error unless `observed == expected`.
pub fn expect_eq<T: PartialEq + std::fmt::Debug>(
    object: &str,
    field: &str,
    expected: T,
    observed: T,
) -> Result<(), CaseError> {
    if expected == observed {
        Ok(())
    } else {
        Err(CaseError::assertion(
            object,
            field,
            format!("{expected:?}"),
            format!("{observed:?}"),
        ))
    }
}

/// Fails with an assertion error unless `condition` holds.
pub fn expect(
    condition: bool,
    object: &str,
    field: &str,
    expected: &str,
    observed: impl std::fmt::Debug,
) -> Result<(), CaseError> {
    if condition {
        Ok(())
    } else {
        Err(CaseError::assertion(
            object,
            field,
            expected,
            format!("{observed:?}"),
        ))
    }
}

impl From<NotPassed> for CaseError {
    fn from(e: NotPassed) -> Self {
        Self::Checks(e)
    }
}

impl From<Absent> for CaseError {
    fn from(e: Absent) -> Self {
        Self::EvidenceAbsent {
            what: e.what,
            why: e.why,
        }
    }
}

/// Bounds on the waits of a case. Generous: they are ceilings that report the last observed
/// state, not expectations of speed (speed is measured by `rehearse bench`).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// A server or pod becoming ready, a Backup or Restore finishing.
    pub settle: Duration,
    /// A pull failure surfacing (ErrImagePull / ImagePullBackOff).
    pub pull_failure: Duration,
    /// A single probe (join, HTTP, RCON).
    pub probe: Duration,
    /// A join that sees no progress in its current stage (nothing but keep-alives) for this
    /// long has stalled there: the join gate's verdict without waiting out [`Self::probe`].
    /// `REHEARSAL_JOIN_STALL` (e.g. `3s`, `1500ms`) overrides it.
    pub join_stall: Duration,
    /// How long a `stale-view` lasts at most once the restarted operator read it, when the
    /// operator makes no write of the operation's objects meanwhile (it had nothing left to
    /// do): then its cache catches up anyway. A slow machine only shortens what the fault can
    /// show; it never fails a schedule.
    pub stale_view: Duration,
}

/// Default of [`Bounds::stale_view`]: an operator acts on what it listed within milliseconds.
pub const STALE_VIEW: Duration = Duration::from_secs(1);

/// Default of [`Bounds::join_stall`]: a server's configuration phase is a burst of packets
/// answered in milliseconds; seconds of keep-alives only mean it will not finish.
pub const JOIN_STALL: Duration = Duration::from_secs(3);

impl Default for Bounds {
    fn default() -> Self {
        Self {
            settle: Duration::from_secs(90),
            pull_failure: Duration::from_secs(60),
            probe: Duration::from_secs(10),
            join_stall: JOIN_STALL,
            stale_view: STALE_VIEW,
        }
    }
}

impl Bounds {
    /// The defaults with `REHEARSAL_JOIN_STALL` applied; a one-line error for a bad value.
    pub fn from_env() -> Result<Self, String> {
        let mut bounds = Self::default();
        if let Ok(value) = std::env::var("REHEARSAL_JOIN_STALL") {
            let parsed = fixture_game::ready::parse_duration(&value)
                .ok()
                .filter(|d| !d.is_zero());
            bounds.join_stall = parsed.ok_or_else(|| {
                format!(
                    "REHEARSAL_JOIN_STALL={value:?} is not a duration: set it like 3s or 1500ms (above zero), or unset it for {JOIN_STALL:?}"
                )
            })?;
        }
        Ok(bounds)
    }
}

/// One running case.
pub struct CaseContext<'a> {
    /// The cluster the case runs on (for what kube cannot do portably: reach, restart, export).
    pub backend: &'a dyn Backend,
    /// A kube client for that cluster.
    pub client: kube::Client,
    /// The case's own namespace (`rh-<case>-<run>`); every namespaced object it makes goes here.
    pub namespace: String,
    /// Writes the case's receipts and artifacts into the bundle.
    pub recorder: CaseRecorder,
    /// The ceilings of the case's waits.
    pub bounds: Bounds,
    /// A deliberately weakened harness gate, when the self-test asks for one.
    pub harness_mutant: Option<HarnessMutant>,
    /// The operator the cluster runs (read from it before the case starts).
    pub operator: crate::deploy::profile::OperatorProfile,
    started: Instant,
    /// Waits that reached their bound and were judged rather than ending the case.
    timeouts: std::sync::Mutex<Vec<String>>,
}

impl<'a> CaseContext<'a> {
    /// A context for a case in `namespace` on `backend`, recording into `recorder`, with the
    /// default bounds, no harness mutant, and the reference operator until the run reads the
    /// cluster's.
    pub fn new(backend: &'a dyn Backend, namespace: String, recorder: CaseRecorder) -> Self {
        Self {
            backend,
            client: backend.client(),
            namespace,
            recorder,
            // The CLI checked the environment before any case started (`Bounds::from_env`).
            bounds: Bounds::from_env().unwrap_or_default(),
            harness_mutant: None,
            operator: crate::deploy::profile::OperatorProfile::Reference,
            started: Instant::now(),
            timeouts: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Runs the named unit `name` and writes a receipt with what it observed (its return value)
    /// or the error that ended it; refused once an interrupt was requested ([`boundary`]).
    pub async fn step<T, F>(&self, name: &str, unit: F) -> Result<T, CaseError>
    where
        T: Serialize,
        F: Future<Output = Result<T, CaseError>>,
    {
        boundary(name)?;
        self.run_step(name, unit).await
    }

    /// A step that puts back what an unfinished step changed: like [`Self::step`], but it runs
    /// after an interrupt too (an interrupt stops the procedure, never the repair of the fleet).
    pub async fn repair_step<T, F>(&self, name: &str, unit: F) -> Result<T, CaseError>
    where
        T: Serialize,
        F: Future<Output = Result<T, CaseError>>,
    {
        if STEP_PROGRESS.load(std::sync::atomic::Ordering::SeqCst) {
            println!("  start   {name}");
        }
        self.run_step(name, unit).await
    }

    async fn run_step<T, F>(&self, name: &str, unit: F) -> Result<T, CaseError>
    where
        T: Serialize,
        F: Future<Output = Result<T, CaseError>>,
    {
        let started = Instant::now();
        let (outcome, waits) = crate::wait::logged(unit).await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let at_ms = self.started.elapsed().as_millis() as u64;
        // Each wait of the step, in the order they ended: the critical path `rehearse bench`
        // attributes the step's time to.
        for w in waits {
            self.recorder.wait(name, w)?;
        }
        if STEP_PROGRESS.load(std::sync::atomic::Ordering::SeqCst) {
            let state = if outcome.is_ok() { "ok" } else { "error" };
            println!(
                "  step    {name} · {:.1} s ({state})",
                elapsed_ms as f64 / 1000.0
            );
        }
        match &outcome {
            Ok(observed) => {
                let observed = serde_json::to_value(observed).unwrap_or(Value::Null);
                self.recorder.step(
                    name,
                    json!({"ok": true, "elapsed_ms": elapsed_ms, "at_ms": at_ms, "observed": observed}),
                )?;
            }
            Err(e) => {
                self.recorder.step(
                    name,
                    json!({"ok": false, "elapsed_ms": elapsed_ms, "at_ms": at_ms, "error": e.to_string()}),
                )?;
            }
        }
        outcome
    }

    /// Writes the step "assess": every check's result and `observed`; fails with the failed
    /// checks when any did.
    ///
    /// Every check must be named by the clause matrix (`docs/contract.toml`) for this case — a
    /// proof of some clause or one of its preconditions: a check no clause names is a setup
    /// error, so a new check cannot pass unnoticed without the contract saying what it proves.
    pub fn assess(&self, checks: Checks, observed: Value) -> Result<(), CaseError> {
        let unnamed = match crate::contract::Contract::builtin() {
            Ok(contract) => contract.unnamed_checks(
                self.recorder.name(),
                checks.results().iter().map(|c| c.check),
            ),
            Err(e) => vec![format!("(the clause matrix is unreadable: {e})")],
        };
        self.record_assessment(checks, observed, &unnamed)
    }

    /// [`Self::assess`] for an exploration schedule: its checks are the invariants, one per
    /// invariant, whatever the schedule; each must be an `[[invariant]]` of the clause matrix
    /// (`docs/contract.toml`), as a case's checks must be named by its clauses.
    pub fn assess_invariants(&self, checks: Checks, observed: Value) -> Result<(), CaseError> {
        let mut unnamed: Vec<String> = match crate::contract::Contract::builtin() {
            Ok(contract) => checks
                .results()
                .iter()
                .map(|c| c.check)
                .filter(|c| !contract.invariants.iter().any(|i| i.id == *c))
                .map(str::to_string)
                .collect(),
            Err(e) => vec![format!("(the clause matrix is unreadable: {e})")],
        };
        unnamed.dedup();
        self.record_assessment(checks, observed, &unnamed)
    }

    fn record_assessment(
        &self,
        checks: Checks,
        observed: Value,
        unnamed: &[String],
    ) -> Result<(), CaseError> {
        let at_ms = self.started.elapsed().as_millis() as u64;
        let timeouts =
            std::mem::take(&mut *self.timeouts.lock().unwrap_or_else(|p| p.into_inner()));
        let passed = checks.all_passed() && timeouts.is_empty();
        let results = checks.results().to_vec();
        let failed: Vec<&str> = results
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.check)
            .collect();
        self.recorder.step(
            "assess",
            json!({"ok": passed, "at_ms": at_ms, "checks": results, "failed_checks": failed, "timeouts": timeouts, "observed": observed}),
        )?;
        if !unnamed.is_empty() {
            return Err(CaseError::Setup(format!(
                "case {} assessed checks that docs/contract.toml does not name for it: {}; add each to the clause it proves (or to the case's preconditions)",
                self.recorder.name(),
                unnamed.join(", ")
            )));
        }
        checks
            .finish_after(timeouts)
            .map(|_| ())
            .map_err(CaseError::from)
    }

    /// Records that a wait reached its bound while the case goes on to judge the evidence that
    /// exists: the next [`Self::assess`] fails and its verdict names the timeout with the
    /// checks. `what` is the wait's error (object, condition, bound and last observed state).
    pub fn timed_out(&self, what: impl Into<String>) {
        self.timeouts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what.into());
    }

    /// Whether the harness runs with `mutant`'s weakened gate (self-test only).
    pub fn harness_mutant(&self, mutant: HarnessMutant) -> bool {
        self.harness_mutant == Some(mutant)
    }

    /// Records the PVC rows for `phase` (the PVC UID table is built from these receipts).
    pub fn observe_pvcs(&self, phase: PvcPhase, rows: &[PvcObservation]) -> Result<(), CaseError> {
        self.recorder.observe_pvcs(phase, rows)?;
        Ok(())
    }

    /// Names a kind of evidence the verdict rests on.
    pub fn uses(&self, evidence: &str) {
        self.recorder.uses_evidence(evidence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BackendError, BackendKind};
    use crate::faults::FaultError;
    use crate::wait::WaitError;

    fn timed_out() -> WaitError {
        WaitError::TimedOut {
            object: "backup ns/b".into(),
            expected: "phase Succeeded".into(),
            bound: Duration::from_secs(90),
            last_observed: "phase Running".into(),
        }
    }

    fn unsupported() -> BackendError {
        BackendError::Unsupported {
            backend: BackendKind::Existing,
            operation: "restart a container in place".into(),
            why: "no node access".into(),
        }
    }

    fn failed_on(checks: &[(&'static str, bool)], timeouts: Vec<String>) -> CaseError {
        let mut c = Checks::new();
        for (id, passed) in checks {
            c.check(
                id,
                *passed,
                "backup ns/b",
                "status.phase",
                "Failed",
                "Succeeded",
            );
        }
        c.finish_after(timeouts).unwrap_err().into()
    }

    #[test]
    fn every_case_error_kind_maps_to_its_verdict() {
        let kinds: Vec<(&str, CaseError, Verdict, Vec<&str>)> = vec![
            (
                "assertion",
                CaseError::assertion("o", "f", 1, 2),
                Verdict::Failed,
                vec![],
            ),
            ("wait", timed_out().into(), Verdict::Failed, vec![]),
            (
                "fault wait",
                CaseError::from(FaultError::from(timed_out())),
                Verdict::Failed,
                vec![],
            ),
            (
                "setup",
                CaseError::Setup("no namespace".into()),
                Verdict::Failed,
                vec![],
            ),
            (
                "evidence",
                BundleError::InvalidName {
                    what: "case",
                    name: "..".into(),
                }
                .into(),
                Verdict::Failed,
                vec![],
            ),
            (
                "absent",
                CaseError::evidence_absent("agent log", "empty"),
                Verdict::Failed,
                vec![],
            ),
            (
                "checks",
                failed_on(&[("a", true), ("drain", false), ("save-on", false)], vec![]),
                Verdict::Failed,
                vec!["drain", "save-on"],
            ),
            (
                "timeout and checks",
                failed_on(&[("drain", true)], vec!["backup ns/b: timed out".into()]),
                Verdict::Failed,
                vec![],
            ),
            (
                "interrupted",
                CaseError::Interrupted {
                    signal: "SIGINT".into(),
                    step: "create backup".into(),
                },
                Verdict::Interrupted,
                vec![],
            ),
            (
                "not applicable",
                CaseError::from(FaultError::from(unsupported())),
                Verdict::NotApplicable,
                vec![],
            ),
        ];
        for (what, error, verdict, checks) in kinds {
            let message = error.to_string();
            let (v, reason, failed) = verdict_of(&Err(error));
            assert_eq!(v, verdict, "{what}");
            assert_eq!(failed, checks, "{what}");
            let reason = reason.unwrap_or_else(|| panic!("{what}: a reason"));
            if v == Verdict::NotApplicable {
                assert_eq!(reason, format!("not applicable on this cluster: {message}"));
            } else {
                assert_eq!(reason, message, "{what}");
            }
        }
        assert_eq!(verdict_of(&Ok(())), (Verdict::Passed, None, Vec::new()));
    }

    #[test]
    fn absent_evidence_is_never_not_applicable() {
        // Only a fault the backend cannot inject excuses a case; evidence that is missing fails it.
        let e = CaseError::evidence_absent("rcon audit log", "the file is empty");
        assert_eq!(e.not_applicable(), None);
        assert_eq!(verdict_of(&Err(e)).0, Verdict::Failed);
        let e: CaseError = FaultError::from(timed_out()).into();
        assert_eq!(e.not_applicable(), None);
    }

    #[test]
    fn a_passing_assessment_is_ok_and_a_timeout_alone_still_fails() {
        let mut c = Checks::new();
        assert!(c.eq("same", "o", "f", 1, 1));
        assert!(c.all_passed());
        assert_eq!(c.finish().unwrap().len(), 1);
        let mut c = Checks::new();
        c.eq("same", "o", "f", 1, 1);
        let e = c.finish_after(vec!["w: timed out".into()]).unwrap_err();
        assert!(e.check_ids().is_empty());
        let mut c = Checks::new();
        assert!(!c.eq("differs", "o", "f", 1, 2));
        assert!(!c.all_passed());
        assert_eq!(c.finish().unwrap_err().check_ids(), vec!["differs"]);
    }
}
