//! The step profile `rehearse bench` prints: where a rehearsal's wall time goes, read from the
//! bundles it wrote (every `step` receipt carries its `elapsed_ms`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::evidence::receipts::{self, kind};

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

/// The profile of a set of bundles.
#[derive(Debug, Default)]
pub struct Profile {
    /// step name → times.
    pub steps: BTreeMap<String, StepTimes>,
    /// case → (its slowest step, that step's median ms): where the case spends its time.
    pub critical: BTreeMap<String, BTreeMap<String, StepTimes>>,
}

impl Profile {
    /// Adds every timed step receipt of the bundle at `dir`.
    pub fn add_bundle(&mut self, dir: &Path) -> Result<(), String> {
        let journal = receipts::verify(dir.join(receipts::FILE_NAME))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        for r in &journal.receipts {
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
        out.push_str("critical path (each case's slowest step, median across runs):\n");
        for (case, steps) in &self.critical {
            if let Some((step, t)) = steps.iter().max_by_key(|(_, t)| t.percentile(0.5)) {
                let _ = writeln!(
                    out,
                    "  {:<50} {:<50} {:>7} ms",
                    case,
                    truncate(step, 50),
                    t.percentile(0.5)
                );
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
