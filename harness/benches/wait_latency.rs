//! Wake latency of a watch-based wait versus a 500 ms polling loop, measured in the same run
//! against the embedded API server (`cargo bench -p rehearsal --bench wait_latency`).
//!
//! Each sample: a waiter for "ConfigMap `target` has data.seq == i" is started, then the
//! ConfigMap is patched to seq=i; the latency is from the patch being sent to the waiter
//! returning. Target (DESIGN.md): p99 under 50 ms; the polling baseline's median is
//! ~250 ms (changes are spread evenly over the poll interval).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use rehearsal::backend::pinned_client;
use rehearsal::wait::{Condition, Progress, await_condition};
use rehearsal_apiserver::{ApiServer, ApiServerConfig, DEFAULT_CONTEXT};

const WATCH_SAMPLES: usize = 200;
const POLL_SAMPLES: usize = 20;
const POLL_INTERVAL: Duration = Duration::from_millis(500);

fn seq_is(i: usize) -> Condition<ConfigMap> {
    Condition::new(format!("seq {i}"), move |cm: Option<&ConfigMap>| {
        let seq = cm
            .and_then(|c| c.data.as_ref())
            .and_then(|d| d.get("seq"))
            .and_then(|s| s.parse::<usize>().ok());
        if seq == Some(i) {
            Progress::Met
        } else {
            Progress::Pending
        }
    })
}

async fn set_seq(api: &Api<ConfigMap>, i: usize) -> Instant {
    let patch = serde_json::json!({"data": {"seq": i.to_string()}});
    let sent = Instant::now();
    api.patch("target", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    sent
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name}: n={} p50={:.1} ms p99={:.1} ms max={:.1} ms",
        samples.len(),
        percentile(&samples, 0.50).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.last().unwrap().as_secs_f64() * 1e3,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let server = ApiServer::start(ApiServerConfig::default())
        .await
        .expect("embedded API server starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let client = pinned_client(&kubeconfig, DEFAULT_CONTEXT).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("target".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("seq".to_string(), "0".to_string())])),
        ..Default::default()
    };
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");

    let mut watch = Vec::with_capacity(WATCH_SAMPLES);
    for i in 1..=WATCH_SAMPLES {
        let waiter_api = api.clone();
        let waiter = tokio::spawn(async move {
            await_condition(&waiter_api, "target", seq_is(i), Duration::from_secs(10))
                .await
                .expect("waiter wakes");
            Instant::now()
        });
        let sent = set_seq(&api, i).await;
        let woke = waiter.await.unwrap();
        watch.push(woke.saturating_duration_since(sent));
    }

    let mut poll = Vec::with_capacity(POLL_SAMPLES);
    for j in 1..=POLL_SAMPLES {
        let i = WATCH_SAMPLES + j;
        let poll_api = api.clone();
        let (first_read, first_read_done) = tokio::sync::oneshot::channel();
        let poller = tokio::spawn(async move {
            let mut first = Some(first_read);
            loop {
                let cm = poll_api.get("target").await.expect("get");
                if let Some(tx) = first.take() {
                    let _ = tx.send(());
                }
                if seq_is(i).check(Some(&cm)) == Progress::Met {
                    return Instant::now();
                }
                tokio::time::sleep(POLL_INTERVAL).await;
            }
        });
        // The change lands after the poller's first read, at a point spread evenly over the
        // poll interval (a real change is not aligned with the poll).
        first_read_done.await.unwrap();
        tokio::time::sleep(POLL_INTERVAL * (j as u32 - 1) / POLL_SAMPLES as u32).await;
        let sent = set_seq(&api, i).await;
        let woke = poller.await.unwrap();
        poll.push(woke.saturating_duration_since(sent));
    }

    report("wait wake latency, watch-based await_condition", watch);
    report("wait wake latency, 500 ms polling baseline", poll);
    server.shutdown().await;
}
