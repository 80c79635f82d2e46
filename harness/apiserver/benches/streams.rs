//! Streaming subresources beside the loopback direct path, through kube-rs over real HTTP:
//! port-forward throughput (MB/s, pod → client and client → pod) against a plain TCP
//! connection to the same server, and exec round trips (p50/p99: a whole `true` exec, and one
//! line through a running `cat`) against the same processes spawned directly.
//! Run with `cargo bench -p rehearsal-apiserver --bench streams`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, PostParams};
use rehearsal_apiserver::{
    ApiServer, ApiServerConfig, ExecProcess, ExecRequest, PodConnection, PodStreams,
    PortForwardRequest, ProcessInput, ProcessOutput, StreamError,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const BULK: usize = 64 << 20;
const BULK_RUNS: usize = 3;
const EXEC_RUNS: usize = 200;
const ECHO_RUNS: usize = 1_000;

/// A node whose "pod" is a TCP server on loopback and whose exec spawns local processes:
/// what is measured is the API server's streaming path, not a sandbox.
struct LocalNode {
    target: SocketAddr,
}

fn spawn(command: &[String], stdin: bool) -> Result<ExecProcess, StreamError> {
    let mut cmd = tokio::process::Command::new(&command[0]);
    cmd.args(&command[1..])
        .stdin(if stdin {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| StreamError(e.to_string()))?;
    Ok(ExecProcess {
        stdin: child.stdin.take().map(|s| Box::pin(s) as ProcessInput),
        stdout: child.stdout.take().map(|s| Box::pin(s) as ProcessOutput),
        stderr: child.stderr.take().map(|s| Box::pin(s) as ProcessOutput),
        exit: async move {
            child
                .wait()
                .await
                .map(|s| s.code().unwrap_or(255))
                .map_err(|e| e.to_string())
        }
        .boxed(),
        resize: None,
    })
}

impl PodStreams for LocalNode {
    fn exec(&self, request: ExecRequest) -> BoxFuture<'static, Result<ExecProcess, StreamError>> {
        async move { spawn(&request.command, request.stdin) }.boxed()
    }

    fn attach(&self, _: ExecRequest) -> BoxFuture<'static, Result<ExecProcess, StreamError>> {
        async { Err(StreamError("not benchmarked".into())) }.boxed()
    }

    fn port_forward(
        &self,
        _: PortForwardRequest,
    ) -> BoxFuture<'static, Result<PodConnection, StreamError>> {
        let target = self.target;
        async move {
            let stream = TcpStream::connect(target)
                .await
                .map_err(|e| StreamError(e.to_string()))?;
            stream.set_nodelay(true).ok();
            Ok(Box::pin(stream) as PodConnection)
        }
        .boxed()
    }
}

/// The "pod": the first byte says what to do — `d`: send BULK bytes and close; `u`: read
/// BULK bytes, then answer one byte.
async fn serve_bulk(listener: TcpListener) {
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            return;
        };
        conn.set_nodelay(true).ok();
        tokio::spawn(async move {
            let mut op = [0u8; 1];
            if conn.read_exact(&mut op).await.is_err() {
                return;
            }
            let chunk = vec![7u8; 256 * 1024];
            if op[0] == b'd' {
                let mut left = BULK;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if conn.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                    left -= n;
                }
                let _ = conn.shutdown().await;
            } else {
                let mut buf = vec![0u8; 256 * 1024];
                let mut got = 0;
                while got < BULK {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let _ = conn.write_all(b"k").await;
            }
        });
    }
}

async fn bulk<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    op: u8,
) -> Duration {
    let start = Instant::now();
    stream.write_all(&[op]).await.expect("op sent");
    if op == b'd' {
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0;
        while got < BULK {
            let n = stream.read(&mut buf).await.expect("bulk read");
            assert!(n > 0, "the stream ended after {got} of {BULK} bytes");
            got += n;
        }
    } else {
        let chunk = vec![9u8; 256 * 1024];
        let mut left = BULK;
        while left > 0 {
            let n = left.min(chunk.len());
            stream.write_all(&chunk[..n]).await.expect("bulk write");
            left -= n;
        }
        let mut ack = [0u8; 1];
        stream.read_exact(&mut ack).await.expect("ack");
    }
    start.elapsed()
}

fn mb_per_s(elapsed: Duration) -> f64 {
    BULK as f64 / 1e6 / elapsed.as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "  {name:<34} p50 {:>8.3} ms   p99 {:>8.3} ms   ({} runs)",
        percentile(&samples, 0.50).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.len()
    );
}

async fn throughput(pods: &Api<Pod>, target: SocketAddr) {
    println!(
        "port-forward throughput ({} MiB per run, median of {BULK_RUNS}):",
        BULK >> 20
    );
    for (op, what) in [(b'd', "pod -> client"), (b'u', "client -> pod")] {
        let mut forwarded = Vec::new();
        let mut direct = Vec::new();
        for _ in 0..BULK_RUNS {
            let mut pf = pods
                .portforward("bench", &[25565])
                .await
                .expect("port-forward");
            let stream = pf.take_stream(25565).expect("stream");
            forwarded.push(mb_per_s(bulk(stream, op).await));
            pf.abort();
            let conn = TcpStream::connect(target).await.expect("direct connect");
            conn.set_nodelay(true).ok();
            direct.push(mb_per_s(bulk(conn, op).await));
        }
        println!(
            "  {what:<14} port-forward {:>8.1} MB/s   loopback direct {:>8.1} MB/s",
            median(forwarded),
            median(direct)
        );
    }
}

async fn exec_round_trips(pods: &Api<Pod>) {
    println!("exec round trips:");
    let params = AttachParams::default().stdout(true).stderr(true);
    let mut via_api = Vec::with_capacity(EXEC_RUNS);
    for _ in 0..EXEC_RUNS {
        let start = Instant::now();
        let mut process = pods.exec("bench", ["true"], &params).await.expect("exec");
        let status = process.take_status().expect("status").await;
        assert_eq!(
            status.and_then(|s| s.status).as_deref(),
            Some("Success"),
            "exec true failed"
        );
        via_api.push(start.elapsed());
    }
    report("exec `true` via pods/exec", via_api);
    let mut direct = Vec::with_capacity(EXEC_RUNS);
    for _ in 0..EXEC_RUNS {
        let start = Instant::now();
        let status = tokio::process::Command::new("true")
            .status()
            .await
            .expect("true runs");
        assert!(status.success());
        direct.push(start.elapsed());
    }
    report("`true` spawned directly", direct);

    let params = AttachParams::default()
        .stdin(true)
        .stdout(true)
        .stderr(true);
    let mut process = pods
        .exec("bench", ["cat"], &params)
        .await
        .expect("exec cat");
    let mut stdin = process.stdin().expect("stdin");
    let mut stdout = BufReader::new(process.stdout().expect("stdout"));
    let mut line = String::new();
    let mut via_api = Vec::with_capacity(ECHO_RUNS);
    for i in 0..ECHO_RUNS {
        let start = Instant::now();
        stdin
            .write_all(format!("line {i}\n").as_bytes())
            .await
            .expect("stdin");
        line.clear();
        stdout.read_line(&mut line).await.expect("echo");
        via_api.push(start.elapsed());
    }
    report("one line through exec `cat`", via_api);
    drop(stdin);
    process.abort();

    let mut cat = tokio::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("cat runs");
    let mut stdin = cat.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(cat.stdout.take().expect("stdout"));
    let mut direct = Vec::with_capacity(ECHO_RUNS);
    for i in 0..ECHO_RUNS {
        let start = Instant::now();
        stdin
            .write_all(format!("line {i}\n").as_bytes())
            .await
            .expect("stdin");
        line.clear();
        stdout.read_line(&mut line).await.expect("echo");
        direct.push(start.elapsed());
    }
    report("one line through `cat` directly", direct);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = listener.local_addr().expect("address");
        tokio::spawn(serve_bulk(listener));
        let server = ApiServer::start(ApiServerConfig::default())
            .await
            .expect("server starts");
        server.set_pod_streams(std::sync::Arc::new(LocalNode { target }));
        let client = kube::Client::try_from({
            let mut c = kube::Config::new(server.url().parse().expect("url"));
            c.root_cert = Some(vec![server.ca_der()]);
            c.auth_info.token = Some(server.admin_token().to_string().into());
            c
        })
        .expect("client");
        let pods: Api<Pod> = Api::namespaced(client, "default");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "bench"},
            "spec": {"nodeName": "bench-node", "containers": [{"name": "main", "image": "bench"}]}
        }))
        .expect("pod");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("pod created");
        println!("rehearsal-apiserver streaming benchmark");
        throughput(&pods, target).await;
        exec_round_trips(&pods).await;
        server.shutdown().await;
    });
}
