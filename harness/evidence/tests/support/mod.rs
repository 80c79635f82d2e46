//! Shared builders for the evidence crate's own tests: journals and bundles written with a
//! fixed clock, so every generated input is byte-reproducible and a proptest failure replays.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rehearsal_evidence::bundle::{Bundle, BundleMeta, KillMatrix, Verdict};
use rehearsal_evidence::observation::{CaseStarted, FinishObserved, Observation, RunStarted};
use rehearsal_evidence::pvc_table::{PvcObservation, PvcPhase};
use rehearsal_evidence::receipts::{Clock, Journal};

/// A clock that starts at a fixed instant and advances `step_ms` per reading.
pub fn clock(step_ms: i64) -> Clock {
    let base = jiff::Timestamp::from_second(1_780_000_000).unwrap();
    let ticks = Arc::new(AtomicI64::new(0));
    Arc::new(move || {
        let n = ticks.fetch_add(1, Ordering::SeqCst);
        base + jiff::SignedDuration::from_millis(n * step_ms)
    })
}

/// Every verdict a case can end with.
pub const VERDICTS: [Verdict; 5] = [
    Verdict::Passed,
    Verdict::Failed,
    Verdict::Skipped,
    Verdict::Interrupted,
    Verdict::NotApplicable,
];

/// The metadata of run `run_id` on `arch` of commit `c0ffee`.
pub fn meta(run_id: &str, arch: &str) -> BundleMeta {
    BundleMeta::new(run_id, "c0ffee", "reference-operator", "0.1.0", arch)
}

/// A journal of `n` receipts (a run-started, then steps of two cases) at `path`; returns its
/// lines without their newlines.
pub fn plain_journal(path: &Path, n: usize) -> Vec<Vec<u8>> {
    let journal = Journal::create_with_clock(path, "run-1", "amd64", clock(5)).unwrap();
    journal
        .record(
            None,
            "run-started",
            Observation::RunStarted(RunStarted::new(&meta("run-1", "amd64"))),
        )
        .unwrap();
    for i in 1..n {
        let case = if i % 2 == 0 { "case-a" } else { "case-b" };
        journal
            .record(
                Some(case),
                &format!("step-{i}"),
                Observation::Step(serde_json::json!({"i": i, "pods": [i, i + 1]})),
            )
            .unwrap();
    }
    drop(journal);
    lines(path)
}

/// The file's lines without their newlines (the file must end with one).
pub fn lines(path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.last(), Some(&b'\n'));
    bytes[..bytes.len() - 1]
        .split(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Writes `lines`, each followed by a newline.
pub fn write_lines(path: &Path, lines: &[Vec<u8>]) {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    std::fs::write(path, out).unwrap();
}

/// What one case of a generated run does.
#[derive(Debug, Clone)]
pub struct CaseSpec {
    /// `case-<i>`.
    pub name: String,
    /// Its bucket.
    pub bucket: String,
    /// How it ends.
    pub verdict: Verdict,
    /// Steps it records before finishing.
    pub steps: usize,
    /// It observes PVCs before and after.
    pub pvcs: bool,
    /// It stores an artifact.
    pub artifact: bool,
    /// Failed checks it reports.
    pub failed_checks: Vec<String>,
    /// Why it did not pass (`<verdict> because` when `None`).
    pub reason: Option<String>,
    /// The writes its run made, kept as its `placement.json` (an exploration's reference run).
    pub placement: Option<Vec<String>>,
}

impl CaseSpec {
    /// A passing case of bucket `backup` with one step.
    pub fn passed(name: &str) -> Self {
        Self {
            name: name.into(),
            bucket: "backup".into(),
            verdict: Verdict::Passed,
            steps: 1,
            pvcs: false,
            artifact: false,
            failed_checks: Vec::new(),
            reason: None,
            placement: None,
        }
    }

    /// The same case with `verdict`.
    pub fn with(mut self, verdict: Verdict) -> Self {
        self.verdict = verdict;
        self
    }
}

/// Records `cases` in a new bundle at `dir`, interleaving their steps round-robin (cases run in
/// parallel), and finalizes it. With `kill_matrix`, the run records one before it finishes.
/// (A killed run is this journal cut short: see the summary tests.)
pub fn write_bundle(
    dir: &Path,
    meta: BundleMeta,
    cases: &[CaseSpec],
    kill_matrix: Option<&KillMatrix>,
) {
    let bundle = Bundle::create_with_clock(dir, meta, clock(3)).unwrap();
    let recorders: Vec<_> = cases
        .iter()
        .map(|c| bundle.case(&c.name, &c.bucket).unwrap())
        .collect();
    let rounds = cases.iter().map(|c| c.steps).max().unwrap_or(0);
    for round in 0..rounds {
        for (spec, rec) in cases.iter().zip(&recorders) {
            if round < spec.steps {
                rec.step(
                    &format!("step-{round}"),
                    serde_json::json!({"round": round}),
                )
                .unwrap();
            }
        }
    }
    for (spec, rec) in cases.iter().zip(&recorders) {
        if spec.pvcs {
            let rows = [PvcObservation::classify(
                "mc",
                "mc-world",
                &format!("uid-{}", spec.name),
                Some("pv-1"),
            )];
            rec.observe_pvcs(PvcPhase::Before, &rows).unwrap();
            rec.observe_pvcs(PvcPhase::After, &rows).unwrap();
        }
        if spec.artifact {
            rec.artifact(
                "events.txt",
                format!("events of {}\n", spec.name).as_bytes(),
            )
            .unwrap();
        }
        if let Some(points) = &spec.placement {
            let placement = rehearsal_evidence::place::Placement {
                not_placed: None,
                points: points.clone(),
            };
            rec.artifact(
                rehearsal_evidence::place::PLACEMENT,
                &serde_json::to_vec(&placement).unwrap(),
            )
            .unwrap();
        }
        rec.uses_evidence("pod UID");
    }
    for (spec, rec) in cases.iter().zip(recorders) {
        let v = spec.verdict;
        let reason = (v != Verdict::Passed).then(|| {
            spec.reason
                .clone()
                .unwrap_or_else(|| format!("{} because", v.as_str()))
        });
        rec.finish_with_checks(v, reason.as_deref(), &spec.failed_checks)
            .unwrap();
    }
    if let Some(m) = kill_matrix {
        bundle.kill_matrix(m).unwrap();
    }
    bundle.finalize(false).unwrap();
}

/// A `case-started` observation.
pub fn started(bucket: &str) -> Observation {
    Observation::CaseStarted(CaseStarted {
        bucket: bucket.into(),
    })
}

/// A `case-finished` observation.
pub fn finished(verdict: Verdict, reason: Option<&str>, checks: &[&str]) -> Observation {
    Observation::CaseFinished(FinishObserved {
        verdict,
        evidence_used: vec!["pod UID".into()],
        reason: reason.map(str::to_owned),
        failed_checks: checks.iter().map(|c| c.to_string()).collect(),
    })
}

/// Any run of 1 to `max` cases: every verdict, 0–3 steps, PVC tables, artifacts and failed
/// checks in any combination; case names unique.
pub fn runs(max: usize) -> impl proptest::strategy::Strategy<Value = Vec<CaseSpec>> {
    use proptest::prelude::*;
    let case = (
        0..VERDICTS.len(),
        0..4usize,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(
            prop::sample::select(vec!["save-on", "save-on-once", "drain"]),
            0..3,
        ),
    );
    prop::collection::vec(case, 1..=max).prop_map(|cases| {
        cases
            .into_iter()
            .enumerate()
            .map(
                |(i, (v, steps, rollout, pvcs, artifact, checks))| CaseSpec {
                    name: format!("case-{i}"),
                    bucket: if rollout { "rollout" } else { "backup" }.into(),
                    verdict: VERDICTS[v],
                    steps,
                    pvcs,
                    artifact,
                    failed_checks: checks.into_iter().map(str::to_owned).collect(),
                    reason: None,
                    placement: None,
                },
            )
            .collect()
    })
}
