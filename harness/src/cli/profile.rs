//! The step profile `rehearse bench` prints: where a rehearsal's wall time goes, read from the
//! bundles it wrote (every `step` receipt carries its `elapsed_ms`; every `wait` receipt one
//! watch wait inside a step: how long, and the observation that ended it).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::evidence::receipts::{self, kind};

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
    /// Its state changes while waiting (`+<ms> <state>`).
    pub transitions: Vec<String>,
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
    /// Adds every timed step receipt of the bundle at `dir`.
    pub fn add_bundle(&mut self, dir: &Path) -> Result<(), String> {
        let journal = receipts::verify(dir.join(receipts::FILE_NAME))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        for r in &journal.receipts {
            if r.kind == kind::WAIT {
                self.add_wait(r);
                continue;
            }
            if r.kind != kind::STEP {
                continue;
            }
            let Some(ms) = r.observed.get("elapsed_ms").and_then(|v| v.as_u64()) else {
                continue;
            };
            self.steps
                .entry(r.step.clone())
                .or_default()
                .samples
                .push(ms);
            if let Some(case) = &r.case {
                let at = r
                    .observed
                    .get("at_ms")
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0);
                self.order
                    .entry((case.clone(), r.step.clone()))
                    .or_insert(at);
                self.critical
                    .entry(case.clone())
                    .or_default()
                    .entry(r.step.clone())
                    .or_default()
                    .samples
                    .push(ms);
            }
        }
        Ok(())
    }

    fn add_wait(&mut self, r: &crate::evidence::receipts::Receipt) {
        let (Some(case), Some(ms)) = (
            &r.case,
            r.observed.get("elapsed_ms").and_then(|v| v.as_u64()),
        ) else {
            return;
        };
        let text = |k: &str| r.observed.get(k).and_then(|v| v.as_str()).unwrap_or("");
        // The namespace differs per run: `pods rh-x-1234/mc-0` → `pods mc-0`.
        let object = match text("object").split_once(' ') {
            Some((resource, path)) => {
                format!("{resource} {}", path.rsplit('/').next().unwrap_or(path))
            }
            None => text("object").to_string(),
        };
        let key = format!("{object} {}", text("expected"));
        let w = self
            .waits
            .entry((case.clone(), r.step.clone()))
            .or_default()
            .entry(key)
            .or_default();
        w.times.samples.push(ms);
        w.woken_by = text("woken_by").to_string();
        w.transitions = r
            .observed
            .get("transitions")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
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
                    for step in &w.transitions {
                        let _ = writeln!(out, "        {}", truncate(step, 140));
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
