//! Recording one case: its steps, waits, PVC observations, restic ids, artifacts and verdict.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::summary::FinishObserved;
use super::{
    ARTIFACTS_DIR, BundleError, CASES_DIR, CaseState, Inner, PVC_TABLE_FILE, Verdict, create_dirs,
    write_new,
};
use crate::observation::{
    ArtifactStored, Observation, ResticRestore, ResticSnapshot, WaitObserved,
};
use crate::pvc_table::{PvcObservation, PvcObserved, PvcPhase};
use crate::qualification::Gate;
use crate::receipts::{self, Receipt};

/// Writes one case's receipts into the run's journal. Finish it with [`CaseRecorder::finish`];
/// a recorder dropped without a verdict records `failed` when its thread is panicking and
/// `interrupted` otherwise, so a case never silently vanishes from the bundle.
pub struct CaseRecorder {
    inner: Arc<Inner>,
    name: String,
    bucket: String,
    evidence: Mutex<Vec<String>>,
    pvc_receipts: Mutex<Vec<Receipt>>,
    finished: bool,
}

impl std::fmt::Debug for CaseRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaseRecorder")
            .field("name", &self.name)
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

impl CaseRecorder {
    pub(super) fn new(inner: Arc<Inner>, name: &str, bucket: &str) -> Self {
        Self {
            inner,
            name: name.into(),
            bucket: bucket.into(),
            evidence: Mutex::new(Vec::new()),
            pvc_receipts: Mutex::new(Vec::new()),
            finished: false,
        }
    }

    /// The case name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The case's bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// `cases/<case>` inside the bundle.
    pub fn dir(&self) -> PathBuf {
        self.inner.dir.join(CASES_DIR).join(&self.name)
    }

    /// Records that the named unit `step` completed, with what it observed.
    pub fn step(&self, step: &str, observed: Value) -> Result<Receipt, BundleError> {
        self.inner
            .append(&self.name, step, Observation::Step(observed))
    }

    /// Records that one wait for an observable condition inside `step` ended, and how.
    pub fn wait(&self, step: &str, observed: WaitObserved) -> Result<Receipt, BundleError> {
        self.inner
            .append(&self.name, step, Observation::Wait(observed))
    }

    /// Records that a qualification gate was judged (`step` names it), with its typed evidence.
    pub fn gate(&self, step: &str, gate: &Gate) -> Result<Receipt, BundleError> {
        self.inner
            .append(&self.name, step, Observation::Gate(gate.clone()))
    }

    /// Records the case's PVCs at `phase`; feeds the PVC UID table.
    pub fn observe_pvcs(
        &self,
        phase: PvcPhase,
        rows: &[PvcObservation],
    ) -> Result<Receipt, BundleError> {
        let receipt = self.inner.append(
            &self.name,
            &format!("pvcs-{}", phase.as_str()),
            Observation::PvcObservation(PvcObserved {
                phase,
                claims: rows.to_vec(),
            }),
        )?;
        lock(&self.pvc_receipts).push(receipt.clone());
        Ok(receipt)
    }

    /// Records a restic snapshot the case took (or used), e.g. a Backup's `status.snapshotID`.
    pub fn restic_snapshot(
        &self,
        step: &str,
        snapshot_id: &str,
        details: Value,
    ) -> Result<Receipt, BundleError> {
        self.inner.append(
            &self.name,
            step,
            Observation::ResticSnapshot(ResticSnapshot {
                snapshot_id: snapshot_id.to_owned(),
                details,
            }),
        )
    }

    /// Records a restore (`restore_id` names it, e.g. the Restore object) of `snapshot_id`.
    pub fn restic_restore(
        &self,
        step: &str,
        restore_id: &str,
        snapshot_id: &str,
        details: Value,
    ) -> Result<Receipt, BundleError> {
        self.inner.append(
            &self.name,
            step,
            Observation::ResticRestore(ResticRestore {
                restore_id: restore_id.to_owned(),
                snapshot_id: snapshot_id.to_owned(),
                details,
            }),
        )
    }

    /// Notes a kind of evidence the verdict rests on ("pod UID", "RCON audit log", …); listed
    /// once, in first-use order, in the `case-finished` receipt.
    pub fn uses_evidence(&self, what: &str) {
        let mut evidence = lock(&self.evidence);
        if !evidence.iter().any(|e| e == what) {
            evidence.push(what.to_owned());
        }
    }

    /// Stores `bytes` as `cases/<case>/artifacts/<name>` (never replacing a file) and records
    /// its size and SHA-256. `name` may contain `/`-separated subdirectories. Artifacts are
    /// stored as given: redact secrets before passing them (receipts are redacted, files are not).
    pub fn artifact(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, BundleError> {
        let rel = artifact_path(name)?;
        let path = self.dir().join(ARTIFACTS_DIR).join(&rel);
        if let Some(parent) = path.parent() {
            create_dirs(parent)?;
        }
        write_new(&path, bytes)?;
        let bundle_rel = format!(
            "{CASES_DIR}/{}/{ARTIFACTS_DIR}/{}",
            self.name,
            rel.to_string_lossy()
        );
        self.inner.append(
            &self.name,
            &format!("artifact {name}"),
            Observation::Artifact(ArtifactStored {
                path: bundle_rel,
                bytes: bytes.len() as u64,
                sha256: receipts::sha256_hex(bytes),
            }),
        )?;
        Ok(path)
    }

    /// Ends the case: writes `pvc-table.json` (when PVCs were observed) and the `case-finished`
    /// receipt carrying the verdict.
    pub fn finish(self, verdict: Verdict) -> Result<Receipt, BundleError> {
        self.finish_with_reason(verdict, None)
    }

    /// [`CaseRecorder::finish`] with a one-line reason (why it failed or was skipped).
    pub fn finish_with_reason(
        self,
        verdict: Verdict,
        reason: Option<&str>,
    ) -> Result<Receipt, BundleError> {
        self.finish_with_checks(verdict, reason, &[])
    }

    /// [`CaseRecorder::finish_with_reason`] naming the checks that failed (the self-test
    /// matches them against the check a mutant targets).
    pub fn finish_with_checks(
        mut self,
        verdict: Verdict,
        reason: Option<&str>,
        failed_checks: &[String],
    ) -> Result<Receipt, BundleError> {
        self.finished = true;
        self.write_pvc_table()?;
        let evidence = lock(&self.evidence).clone();
        finish_case(
            &self.inner,
            &self.name,
            verdict,
            &evidence,
            reason,
            failed_checks,
        )
    }
}

impl CaseRecorder {
    /// Writes `pvc-table.json` from the PVC observations recorded so far (nothing when there
    /// were none): what `case-finished` is checked against, also for a case that was cut short.
    fn write_pvc_table(&self) -> Result<(), BundleError> {
        let pvcs = lock(&self.pvc_receipts).clone();
        if pvcs.is_empty() {
            return Ok(());
        }
        let table = crate::observation::pvc_table_from_receipts(&pvcs).map_err(|source| {
            BundleError::PvcTable {
                case: self.name.clone(),
                source,
            }
        })?;
        write_new(
            &self.dir().join(PVC_TABLE_FILE),
            &crate::pvc_table::file_bytes(&table),
        )
    }
}

impl Drop for CaseRecorder {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let (verdict, reason) = if std::thread::panicking() {
            (
                Verdict::Failed,
                "the case panicked before reaching a verdict",
            )
        } else {
            (
                Verdict::Interrupted,
                "the case ended without recording a verdict",
            )
        };
        // The partial table first, as `finish` does: a bundle whose receipts record PVC
        // observations and a case-finished receipt must hold the table they prove.
        if let Err(e) = self.write_pvc_table() {
            tracing::error!(case = %self.name, error = %e, "could not write the case's PVC table");
        }
        let evidence = lock(&self.evidence).clone();
        // Drop cannot return the error; a failed write leaves the case open, which the report
        // refuses as "no case-finished receipt" rather than trusting it.
        if let Err(e) = finish_case(
            &self.inner,
            &self.name,
            verdict,
            &evidence,
            Some(reason),
            &[],
        ) {
            tracing::error!(case = %self.name, error = %e, "could not record the case's verdict");
        }
    }
}

pub(super) fn finish_case(
    inner: &Inner,
    case: &str,
    verdict: Verdict,
    evidence: &[String],
    reason: Option<&str>,
    failed_checks: &[String],
) -> Result<Receipt, BundleError> {
    let observed = FinishObserved {
        verdict,
        evidence_used: evidence.to_vec(),
        reason: reason.map(str::to_owned),
        failed_checks: failed_checks.to_vec(),
    };
    let receipt = inner.append(case, "case-finished", Observation::CaseFinished(observed))?;
    inner
        .cases
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(case.to_owned(), CaseState::Finished);
    Ok(receipt)
}

fn artifact_path(name: &str) -> Result<PathBuf, BundleError> {
    let invalid = || BundleError::InvalidName {
        what: "artifact",
        name: name.into(),
    };
    let path = Path::new(name);
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => {
                super::validate_name("artifact", &part.to_string_lossy()).map_err(|_| invalid())?;
                out.push(part);
            }
            _ => return Err(invalid()),
        }
    }
    if out.as_os_str().is_empty() {
        return Err(invalid());
    }
    Ok(out)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
