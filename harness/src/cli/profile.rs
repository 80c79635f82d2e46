//! The step profile `rehearse bench` prints: where a rehearsal's wall time goes, read from the
//! bundles it wrote as typed observations (every timed `step` receipt carries its
//! [`StepTiming`]; every `wait` receipt is one [`WaitObserved`] inside a step: how long, and the
//! observation that ended it).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::evidence::observation::{Observation, StateChange, StepTiming, WaitObserved};
use crate::evidence::receipts::{self, Receipt};

/// Elapsed times of one step name across runs and cases, in milliseconds.
#[derive(Debug, Default, Clone)]
pub struct StepTimes {
    /// One elapsed time per occurrence, in milliseconds, in the order the bundles were read.
    pub samples: Vec<u64>,
}

impl StepTimes {
    fn percentile(&self, p: f64) -> u64 {
        let mut s = self.samples.clone();
        s.sort_unstable();
        if s.is_empty() {
            return 0;
        }
        let i = ((s.len() - 1) as f64 * p).round() as usize;
        s[i]
    }

    fn total(&self) -> u64 {
        self.samples.iter().sum()
    }
}

/// The waits of one step of one case on one object, across runs.
#[derive(Debug, Default, Clone)]
pub struct WaitTimes {
    /// How long each wait took.
    pub times: StepTimes,
    /// What ended the latest of them (the change that woke it).
    pub woken_by: String,
    /// Its state changes while waiting.
    pub transitions: Vec<StateChange>,
}

/// The profile of a set of bundles.
#[derive(Debug, Default)]
pub struct Profile {
    /// step name → times.
    pub steps: BTreeMap<String, StepTimes>,
    /// case → step → times, and the step's order (its first `at_ms`).
    pub critical: BTreeMap<String, BTreeMap<String, StepTimes>>,
    order: BTreeMap<(String, String), u64>,
    /// (case, step) → waited-for object and condition → times.
    pub waits: BTreeMap<(String, String), BTreeMap<String, WaitTimes>>,
}

impl Profile {
    /// Adds every timed step and every wait of the bundle at `dir`, read as typed observations:
    /// a receipt that is not one of this build's format is refused naming its line.
    pub fn add_bundle(&mut self, dir: &Path) -> Result<(), String> {
        let journal = receipts::verify(dir.join(receipts::FILE_NAME))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let refused = |e: crate::evidence::observation::ObservationError| {
            format!("{}: {e}", dir.join(receipts::FILE_NAME).display())
        };
        for (i, r) in journal.receipts.iter().enumerate() {
            match Observation::read(i + 1, r).map_err(refused)? {
                Observation::Wait(w) => self.add_wait(r, w),
                Observation::Step(_) => {
                    let timing = StepTiming::read(i + 1, r).map_err(refused)?;
                    self.add_step(r, timing);
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn add_step(&mut self, r: &Receipt, timing: StepTiming) {
        let Some(ms) = timing.elapsed_ms else {
            return;
        };
        self.steps
            .entry(r.step.clone())
            .or_default()
            .samples
            .push(ms);
        if let Some(case) = &r.case {
            self.order
                .entry((case.clone(), r.step.clone()))
                .or_insert(timing.at_ms.unwrap_or(0));
            self.critical
                .entry(case.clone())
                .or_default()
                .entry(r.step.clone())
                .or_default()
                .samples
                .push(ms);
        }
    }

    fn add_wait(&mut self, r: &Receipt, w: WaitObserved) {
        let Some(case) = &r.case else {
            return;
        };
        // The namespace differs per run: `pods rh-x-1234/mc-0` → `pods mc-0`.
        let object = match w.object.split_once(' ') {
            Some((resource, path)) => {
                format!("{resource} {}", path.rsplit('/').next().unwrap_or(path))
            }
            None => w.object.clone(),
        };
        let key = format!("{object} {}", w.expected);
        let times = self
            .waits
            .entry((case.clone(), r.step.clone()))
            .or_default()
            .entry(key)
            .or_default();
        times.times.samples.push(w.elapsed_ms);
        times.woken_by = w.woken_by;
        times.transitions = w.transitions;
    }

    /// The table: steps by total time, with p50/p90 and count; then each case's slowest step.
    pub fn render(&self) -> String {
        let mut rows: Vec<(&String, &StepTimes)> = self.steps.iter().collect();
        rows.sort_by_key(|(_, t)| std::cmp::Reverse(t.total()));
        let mut out = String::from("step profile (all cases, all runs):\n");
        let _ = writeln!(
            out,
            "  {:<58} {:>6} {:>8} {:>8} {:>9}",
            "step", "count", "p50 ms", "p90 ms", "total s"
        );
        for (name, t) in rows {
            let _ = writeln!(
                out,
                "  {:<58} {:>6} {:>8} {:>8} {:>9.1}",
                truncate(name, 58),
                t.samples.len(),
                t.percentile(0.5),
                t.percentile(0.9),
                t.total() as f64 / 1000.0
            );
        }
        out.push_str(
            "critical path (per case, its steps in order with median ms; under a step of ≥ 100 ms the wait it spent most in, and what woke it):\n",
        );
        for (case, steps) in &self.critical {
            let total: u64 = steps.values().map(|t| t.percentile(0.5)).sum();
            let _ = writeln!(out, "  {case} (steps sum {total} ms)");
            let mut ordered: Vec<(&String, &StepTimes)> = steps.iter().collect();
            ordered.sort_by_key(|(step, _)| {
                self.order
                    .get(&(case.clone(), (*step).clone()))
                    .copied()
                    .unwrap_or(0)
            });
            for (step, t) in ordered {
                let p50 = t.percentile(0.5);
                let _ = writeln!(out, "    {:<58} {:>7} ms", truncate(step, 58), p50);
                if p50 < 100 {
                    continue;
                }
                let waits = self.waits.get(&(case.clone(), step.clone()));
                let longest =
                    waits.and_then(|w| w.iter().max_by_key(|(_, w)| w.times.percentile(0.5)));
                if let Some((what, w)) = longest {
                    let _ = writeln!(
                        out,
                        "      wait {:>7} ms  {}",
                        w.times.percentile(0.5),
                        truncate(what, 100)
                    );
                    let _ = writeln!(out, "        woken by: {}", truncate(&w.woken_by, 140));
                    for change in &w.transitions {
                        let _ = writeln!(out, "        {}", truncate(&change.to_string(), 140));
                    }
                }
            }
        }
        out
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;
    use crate::evidence::bundle::{Bundle, BundleMeta, Verdict};
    use crate::evidence::observation::WaitOutcome;
    use crate::evidence::receipts::{Clock, Journal};

    /// A bundle with one case: a timed step that spent its time in one wait.
    fn bundle(dir: &Path) {
        let bundle = Bundle::create(dir, BundleMeta::new("r", "c", "op", "1", "amd64")).unwrap();
        let case = bundle.case("stopped", "backup").unwrap();
        case.wait(
            "backup-completes",
            WaitObserved {
                object: "backups rh-x-1234/stopped".into(),
                expected: "backup Succeeded".into(),
                started_ms: 3,
                elapsed_ms: 1500,
                events: 3,
                outcome: WaitOutcome::Met,
                woken_by: "phase=Succeeded".into(),
                transitions: vec![
                    StateChange {
                        at_ms: 2,
                        state: "phase=Running".into(),
                    },
                    StateChange {
                        at_ms: 1499,
                        state: "phase=Succeeded".into(),
                    },
                ],
            },
        )
        .unwrap();
        case.step(
            "backup-completes",
            json!({"ok": true, "elapsed_ms": 1510, "at_ms": 1600, "observed": null}),
        )
        .unwrap();
        case.step("hand-written", json!({"note": "untimed"}))
            .unwrap();
        case.finish(Verdict::Passed).unwrap();
        bundle.finalize(false).unwrap();
    }

    #[test]
    fn the_critical_path_shows_the_wait_and_what_woke_it() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("r");
        bundle(&dir);
        let mut profile = Profile::default();
        profile.add_bundle(&dir).unwrap();
        let out = profile.render();
        assert!(out.contains("stopped (steps sum 1510 ms)"), "{out}");
        assert!(
            out.contains("wait    1500 ms  backups stopped backup Succeeded"),
            "{out}"
        );
        assert!(out.contains("woken by: phase=Succeeded"), "{out}");
        assert!(out.contains("+2 phase=Running"), "{out}");
        assert!(
            !out.contains("hand-written"),
            "untimed steps have no row: {out}"
        );
    }

    /// Rewrites the journal with `edit` applied to each payload, re-chained so it verifies.
    fn rewrite(dir: &Path, edit: impl Fn(&Receipt) -> serde_json::Value) {
        let path = dir.join(receipts::FILE_NAME);
        let old = receipts::verify(&path).unwrap().receipts;
        std::fs::remove_file(&path).unwrap();
        let times = Mutex::new(old.iter().map(|r| r.time).collect::<Vec<_>>());
        let clock: Clock = Arc::new(move || times.lock().unwrap().remove(0));
        let j = Journal::create_with_clock(&path, "r", "amd64", clock).unwrap();
        for r in &old {
            j.append(r.case.as_deref(), &r.step, &r.kind, edit(r))
                .unwrap();
        }
    }

    #[test]
    fn a_renamed_wait_field_is_refused_naming_its_line() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("r");
        bundle(&dir);
        rewrite(&dir, |r| {
            let mut observed = r.observed.clone();
            if r.kind == "wait" {
                let woken = observed
                    .as_object_mut()
                    .unwrap()
                    .remove("woken_by")
                    .unwrap();
                observed["wokenBy"] = woken;
            }
            observed
        });
        let err = Profile::default().add_bundle(&dir).unwrap_err();
        // run-started, case-started, then the wait.
        assert!(
            err.contains("line 3 (seq 2): malformed wait receipt"),
            "{err}"
        );
        assert!(err.contains("wokenBy"), "names the field: {err}");
    }

    #[test]
    fn a_step_timing_of_the_wrong_type_is_refused_naming_its_line() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("r");
        bundle(&dir);
        rewrite(&dir, |r| {
            let mut observed = r.observed.clone();
            if r.kind == "step" && observed.get("elapsed_ms").is_some() {
                observed["elapsed_ms"] = json!("1510 ms");
            }
            observed
        });
        let err = Profile::default().add_bundle(&dir).unwrap_err();
        assert!(
            err.contains("line 4 (seq 3): malformed step receipt"),
            "{err}"
        );
    }
}
