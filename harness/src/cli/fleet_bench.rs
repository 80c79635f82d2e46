//! `rehearse bench --fleet 10,50,100`: what a qualification costs as the fleet grows. For each
//! size, a fresh embedded cluster, a fleet of that many fixture servers, and one qualification
//! of a compatible candidate in batches of `--batch-size` gated `--gate-concurrency` at once;
//! printed per size: the wall time of the qualification and per member, the peak memory of the
//! harness process (which holds the embedded API server, kubelet and operator) and of the
//! cluster's processes (the game servers, agents and jobs it started), and the number of HTTP
//! requests the API server received.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::CliError;
use crate::cases::{RunOptions, run_body};
use crate::evidence::bundle::{Bundle, BundleMeta};
use crate::fixture::fleet::{FleetCost, fleet_scale};
use crate::run::{Cluster, current_commit, new_run_id, start_backend};

/// One fleet size's figures.
#[derive(Debug, Clone)]
struct Figures {
    cost: FleetCost,
    harness_peak_kib: u64,
    cluster_peak_kib: u64,
    requests: Option<u64>,
}

/// Runs the fleet benchmark for every size in `sizes`, writing the receipts into one bundle
/// under `reports`.
pub async fn bench_fleet(
    reports: &std::path::Path,
    sizes: &[usize],
    batch: usize,
    gate_concurrency: usize,
    case_bound: Duration,
) -> Result<(), CliError> {
    let run_id = format!("bench-fleet-{}", new_run_id());
    let dir = Bundle::dir_for(reports, &run_id);
    let operator = match crate::deploy::profile::detect_embedded().await {
        Ok(found) => (found.name, found.version),
        Err(e) => {
            let unread = crate::deploy::profile::unread(&e.to_string());
            (unread.name, unread.version)
        }
    };
    let bundle = Bundle::create(
        &dir,
        BundleMeta::new(
            &run_id,
            &current_commit(),
            &operator.0,
            &operator.1,
            crate::backend::Arch::host().as_str(),
        ),
    )
    .map_err(|e| CliError::usage(e.to_string()))?;
    let options = RunOptions {
        run_id: run_id.clone(),
        keep_on_failure: false,
        case_bound,
        harness_mutant: None,
        expected_operator: None,
    };
    let mut all = Vec::new();
    for &members in sizes {
        let backend = start_backend(&Cluster::Embedded, None)
            .await
            .map_err(|e| CliError::usage(e.to_string()))?;
        let requests_before = backend.api_requests();
        let sampler = MemorySampler::start();
        let cost = Arc::new(Mutex::new(FleetCost::default()));
        let name = format!("fleet-{members}");
        let ended = run_body(backend.as_ref(), &bundle, &name, "bench", &options, |ctx| {
            let cost = cost.clone();
            Box::pin(async move { fleet_scale(ctx, members, batch, gate_concurrency, &cost).await })
        })
        .await;
        let (harness_peak_kib, cluster_peak_kib) = sampler.stop().await;
        let requests = backend
            .api_requests()
            .zip(requests_before)
            .map(|(after, before)| after - before);
        let _ = backend.teardown(false).await;
        let ended = ended.map_err(|e| CliError::usage(e.to_string()))?;
        let cost = cost
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if ended.verdict != crate::evidence::bundle::Verdict::Passed {
            return Err(CliError::failed(format!(
                "fleet of {members}: {}",
                ended.reason.unwrap_or_else(|| "failed".into())
            )));
        }
        let f = Figures {
            cost,
            harness_peak_kib,
            cluster_peak_kib,
            requests,
        };
        println!("{}", line(&f, batch, gate_concurrency));
        all.push(f);
    }
    if let (Some(first), Some(last)) = (all.first(), all.last())
        && all.len() > 1
    {
        let per = |f: &Figures| f.cost.qualify.as_secs_f64() / f.cost.members.max(1) as f64;
        println!(
            "time per member at {} members is {:.2}× that at {} (target ≤ 1.5×); bundle {}",
            last.cost.members,
            per(last) / per(first).max(f64::EPSILON),
            first.cost.members,
            dir.display()
        );
    }
    Ok(())
}

fn line(f: &Figures, batch: usize, gate_concurrency: usize) -> String {
    format!(
        "fleet {:>4} members (batches of {batch}, {gate_concurrency} gated at once): qualification {:.1} s wall, {:.2} s per member; fleet set-up {:.1} s; peak memory: harness {} MiB, cluster processes {} MiB; API requests {}; {}",
        f.cost.members,
        f.cost.qualify.as_secs_f64(),
        f.cost.qualify.as_secs_f64() / f.cost.members.max(1) as f64,
        f.cost.setup.as_secs_f64(),
        f.harness_peak_kib / 1024,
        f.cluster_peak_kib / 1024,
        f.requests
            .map_or_else(|| "not counted".to_string(), |n| n.to_string()),
        f.cost.outcome
    )
}

/// Samples, every 200 ms until stopped, the resident memory of this process and the summed
/// resident memory of its descendants (read from `/proc`), keeping each peak.
pub(super) struct MemorySampler {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<(u64, u64)>,
}

impl MemorySampler {
    pub(super) fn start() -> Self {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut peaks = (0, 0);
            // A sampling rate, not a wait: peaks between two samples are missed.
            let mut every = tokio::time::interval(Duration::from_millis(200));
            loop {
                let (own, descendants) = tokio::task::spawn_blocking(sample)
                    .await
                    .unwrap_or_default();
                peaks.0 = peaks.0.max(own);
                peaks.1 = peaks.1.max(descendants);
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = every.tick() => {}
                }
            }
            peaks
        });
        Self { stop, task }
    }

    /// The peaks, in KiB: (this process, its descendants together).
    pub(super) async fn stop(self) -> (u64, u64) {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

/// (this process's RSS, the sum of its descendants' RSS), in KiB.
fn sample() -> (u64, u64) {
    let me = std::process::id();
    let mut parent_of = HashMap::new();
    let mut rss = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return (0, 0);
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Some((ppid, kib)) = stat_of(pid) else {
            continue;
        };
        parent_of.insert(pid, ppid);
        rss.insert(pid, kib);
    }
    let descends = |mut pid: u32| {
        for _ in 0..64 {
            match parent_of.get(&pid) {
                Some(&p) if p == me => return true,
                Some(&p) if p > 1 => pid = p,
                _ => return false,
            }
        }
        false
    };
    let own = rss.get(&me).copied().unwrap_or(0);
    let others = rss
        .iter()
        .filter(|(pid, _)| **pid != me && descends(**pid))
        .map(|(_, kib)| kib)
        .sum();
    (own, others)
}

/// A process's parent and resident memory in KiB, from `/proc/PID/status` (`PPid`, `VmRSS`;
/// a process without `VmRSS`, e.g. a zombie, counts 0).
fn stat_of(pid: u32) -> Option<(u32, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    let ppid = u32::try_from(field("PPid:")?).ok()?;
    Some((ppid, field("VmRSS:").unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_sampled_and_a_child_counts_as_a_descendant() {
        let (own, _) = sample();
        assert!(own > 0, "this process has resident memory");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("start sleep");
        let (_, descendants) = sample();
        let _ = child.kill();
        let _ = child.wait();
        assert!(descendants > 0, "the child's memory is counted");
    }
}
