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
