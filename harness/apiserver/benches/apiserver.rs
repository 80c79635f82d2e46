//! API server figures (DESIGN.md targets: ≥2,000 writes/s, 50 concurrent watchers,
//! <100 MB with 10,000 objects), measured through kube-rs over real HTTP and printed.
//! Run with `cargo bench -p rehearsal-apiserver`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use rehearsal_apiserver::{ApiServer, ApiServerConfig};
use serde_json::json;

const WRITES: usize = 4_000;
const WRITE_CONCURRENCY: usize = 32;
const WATCHERS: usize = 50;
const FANOUT_EVENTS: usize = 200;
const OBJECTS: usize = 10_000;

fn configmap(name: &str) -> ConfigMap {
    let data: serde_json::Map<String, serde_json::Value> = (0..8)
        .map(|i| {
            (
                format!("key-{i}"),
                json!(format!("value-{i}-of-{name}-with-some-padding")),
            )
        })
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "bench", "shard": (name.len() % 7).to_string()}},
        "data": data,
    }))
    .expect("a valid ConfigMap")
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

async fn namespace(client: &kube::Client, name: &str) {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
}

async fn writes_per_second(client: &kube::Client) {
    namespace(client, "writes").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "writes");
    let start = Instant::now();
    futures::stream::iter(0..WRITES)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &configmap(&format!("w-{i}")))
                    .await
            }
        })
        .buffer_unordered(WRITE_CONCURRENCY)
        .try_for_each(|_| async { Ok(()) })
        .await
        .expect("all creates succeed");
    let elapsed = start.elapsed();
    println!(
        "writes: {WRITES} ConfigMap creates via kube-rs, {WRITE_CONCURRENCY} concurrent: {:.0} writes/s ({:.2?})",
        WRITES as f64 / elapsed.as_secs_f64(),
        elapsed
    );
}

async fn watch_fanout(client: &kube::Client) {
    namespace(client, "fanout").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "fanout");
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let rv = api
        .list_metadata(&Default::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let stream = api
            .watch(&WatchParams::default(), &rv)
            .await
            .expect("watch starts");
        let sent = sent.clone();
        let latencies = latencies.clone();
        watchers.push(tokio::spawn(async move {
            let mut stream = stream.boxed();
            let mut seen = 0;
            while seen < FANOUT_EVENTS {
                match stream.try_next().await {
                    Ok(Some(WatchEvent::Added(cm))) => {
                        let name = cm.metadata.name.unwrap_or_default();
                        if let Some(at) = sent.lock().expect("lock").get(&name) {
                            latencies.lock().expect("lock").push(at.elapsed());
                        }
                        seen += 1;
                    }
                    Ok(Some(_)) => {}
                    other => panic!("watch ended early: {other:?}"),
                }
            }
        }));
    }
    let start = Instant::now();
    for i in 0..FANOUT_EVENTS {
        let name = format!("f-{i}");
        sent.lock()
            .expect("lock")
            .insert(name.clone(), Instant::now());
        api.create(&PostParams::default(), &configmap(&name))
            .await
            .expect("create");
    }
    for w in watchers {
        tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("watchers finish in 60 s")
            .expect("watcher");
    }
    let elapsed = start.elapsed();
    let mut lat = latencies.lock().expect("lock").clone();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    println!(
        "watch fan-out: {WATCHERS} watchers x {FANOUT_EVENTS} events = {} deliveries in {:.2?}: {:.0} events/s; \
         latency write->watcher p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        lat.len(),
        elapsed,
        lat.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        lat[lat.len() - 1]
    );
}

async fn memory(client: &kube::Client) {
    namespace(client, "memory").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "memory");
    let before = rss_kib();
    futures::stream::iter(0..OBJECTS)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &configmap(&format!("m-{i}")))
                    .await
            }
        })
        .buffer_unordered(WRITE_CONCURRENCY)
        .try_for_each(|_| async { Ok(()) })
        .await
        .expect("all creates succeed");
    let after = rss_kib();
    println!(
        "memory: process RSS {:.1} MiB with {OBJECTS} ConfigMaps (~{} B of JSON each) stored; \
         growth {:.1} MiB (server and kube-rs client share the process)",
        after as f64 / 1024.0,
        serde_json::to_vec(&configmap("m-0000"))
            .map(|v| v.len())
            .unwrap_or(0),
        (after.saturating_sub(before)) as f64 / 1024.0
    );
}

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        println!(
            "rehearsal-apiserver benchmark (RSS at start {:.1} MiB)",
            rss_kib() as f64 / 1024.0
        );
        let server = ApiServer::start(ApiServerConfig::default())
            .await
            .expect("server starts");
        let client = kube::Client::try_from({
            let mut c = kube::Config::new(server.url().parse().expect("url"));
            c.root_cert = Some(vec![server.ca_der()]);
            c.auth_info.token = Some(server.admin_token().to_string().into());
            c
        })
        .expect("client");
        // Memory first, so the figure is the server (and client) with just these objects.
        memory(&client).await;
        writes_per_second(&client).await;
        watch_fanout(&client).await;
        server.shutdown().await;
    });
}
