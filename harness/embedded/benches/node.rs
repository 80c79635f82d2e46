//! Node figures (not a timed test): pod start latency (create → Ready) and how many busybox
//! `sleep` pods the embedded node runs at once.
//!
//! `cargo bench -p rehearsal-embedded --bench node`; `NODE_BENCH_MAX_PODS` caps the
//! capacity run (default 400).

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use rehearsal_embedded::{EmbeddedCluster, EmbeddedConfig};
use serde_json::json;

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"bench": "node"}},
        "spec": {"terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}
    }))
    .expect("valid pod")
}

fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Creates `names` and waits (watch) until all are Ready; returns per-pod latency.
async fn create_and_wait(pods: &Api<Pod>, names: &[String]) -> Vec<Duration> {
    let rv = pods
        .list(&ListParams::default().limit(1))
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut watch = pods
        .watch(&WatchParams::default().labels("bench=node"), &rv)
        .await
        .expect("watch")
        .boxed();
    let mut created = std::collections::HashMap::new();
    for name in names {
        created.insert(name.clone(), Instant::now());
        pods.create(&PostParams::default(), &pod(name))
            .await
            .expect("create pod");
    }
    let mut latencies = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    while !created.is_empty() && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(30), watch.next()).await {
            Ok(Some(Ok(WatchEvent::Modified(p)))) if ready(&p) => {
                if let Some(start) = created.remove(p.metadata.name.as_deref().unwrap_or_default())
                {
                    latencies.push(start.elapsed());
                }
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    assert!(
        created.is_empty(),
        "pods never Ready: {:?}",
        created.keys().take(5).collect::<Vec<_>>()
    );
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let max_pods: usize = std::env::var("NODE_BENCH_MAX_PODS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let started = Instant::now();
    let cluster = EmbeddedCluster::start(EmbeddedConfig::default())
        .await
        .expect("cluster starts");
    println!("cluster start: {:?}", started.elapsed());
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");

    // Latency: one pod at a time.
    let mut latencies = Vec::new();
    for i in 0..20 {
        let name = format!("latency-{i}");
        latencies.extend(create_and_wait(&pods, std::slice::from_ref(&name)).await);
        pods.delete(&name, &DeleteParams::default())
            .await
            .expect("delete");
    }
    latencies.sort();
    println!(
        "pod start latency (create -> Ready, busybox, 20 pods one at a time): p50 {:?}, p90 {:?}, max {:?}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.9),
        latencies[latencies.len() - 1]
    );

    // Capacity: grow in batches of 50 until the cap; all of them running at once.
    let mut running = 0;
    while running < max_pods {
        let batch: Vec<String> = (running..(running + 50).min(max_pods))
            .map(|i| format!("many-{i}"))
            .collect();
        let t = Instant::now();
        let lat = create_and_wait(&pods, &batch).await;
        running += batch.len();
        let sandboxes = cluster.sandbox_pids();
        let rss: u64 = sandboxes.iter().map(|p| rss_kib(*p)).sum();
        println!(
            "{running} pods Ready at once: batch of {} in {:?} (slowest {:?}); {} sandboxes, outer bwrap RSS {} MiB, this process {} MiB",
            batch.len(),
            t.elapsed(),
            lat.iter().max().copied().unwrap_or_default(),
            sandboxes.len(),
            rss / 1024,
            rss_kib(std::process::id()) / 1024
        );
    }
    let t = Instant::now();
    cluster.shutdown().await;
    println!("shutdown with {running} pods: {:?}", t.elapsed());
}
