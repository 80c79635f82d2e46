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
use crate::evidence::bundle::{BundleError, CaseRecorder};
use crate::evidence::pvc_table::{PvcObservation, PvcPhase};

/// Why a case failed. Every variant names the object, what was expected and what was observed.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("{object}: expected {field} {expected}, observed {observed}")]
    Assertion {
        object: String,
        field: String,
        expected: String,
        observed: String,
    },
    #[error(transparent)]
    Wait(Box<crate::wait::WaitError>),
    #[error(transparent)]
    Fault(Box<crate::faults::FaultError>),
    #[error(transparent)]
    Readback(Box<crate::probe::readback::ReadbackError>),
    #[error("{what} {object}: {source}")]
    Kube {
        what: &'static str,
        object: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("{0}")]
    Setup(String),
    #[error("could not write evidence: {0}")]
    Evidence(Box<BundleError>),
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

impl CaseError {
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
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            settle: Duration::from_secs(90),
            pull_failure: Duration::from_secs(60),
            probe: Duration::from_secs(10),
        }
    }
}

/// One running case.
pub struct CaseContext<'a> {
    pub backend: &'a dyn Backend,
    pub client: kube::Client,
    pub namespace: String,
    pub recorder: CaseRecorder,
    pub bounds: Bounds,
    started: Instant,
}

impl<'a> CaseContext<'a> {
    pub fn new(backend: &'a dyn Backend, namespace: String, recorder: CaseRecorder) -> Self {
        Self {
            backend,
            client: backend.client(),
            namespace,
            recorder,
            bounds: Bounds::default(),
            started: Instant::now(),
        }
    }

    /// Runs the named unit `name` and writes a receipt with what it observed (its return value)
    /// or the error that ended it.
    pub async fn step<T, F>(&self, name: &str, unit: F) -> Result<T, CaseError>
    where
        T: Serialize,
        F: Future<Output = Result<T, CaseError>>,
    {
        let started = Instant::now();
        let outcome = unit.await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let at_ms = self.started.elapsed().as_millis() as u64;
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
