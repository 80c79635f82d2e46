//! `pods/exec`, `pods/attach` and `pods/portforward` driven by kube-rs (`Api::exec`,
//! `Api::attach`, `Api::portforward`) against pods on the embedded node: output, exit codes,
//! stdin, the container's namespaces, the Status of a missing or stopped container, a closed
//! port, and no process left behind when the client goes away.

mod common;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::Api;
use kube::api::{AttachParams, AttachedProcess, PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A running busybox pod whose container wrote a private /tmp marker, serves HTTP on its pod
/// IP and carries an env var — what exec must see from inside.
async fn web_pod(pods: &Api<Pod>, name: &str) -> Pod {
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "web", "image": "busybox:1.36",
                "workingDir": "/tmp",
                "command": ["sh", "-c", "mkdir -p /tmp/www && echo served-by-web > /tmp/www/index.html && echo private > /tmp/marker && exec httpd -f -p $(POD_IP):8080 -h /tmp/www"],
                "env": [
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "GREETING", "value": "hello-from-spec"}
                ],
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 1}}]
        }
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    common::wait_for(pods, name, "pod Ready", common::pod_ready()).await
}

struct Finished {
    stdout: String,
    stderr: String,
    status: Status,
}

impl Finished {
    fn summary(&self) -> (&str, &str, &str) {
        (
            self.status.status.as_deref().unwrap_or(""),
            self.status.reason.as_deref().unwrap_or(""),
            self.status.message.as_deref().unwrap_or(""),
        )
    }

    /// `(reason, message)` of each cause.
    fn causes(&self) -> Vec<(String, String)> {
        self.status
            .details
            .as_ref()
            .and_then(|d| d.causes.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.reason.unwrap_or_default(), c.message.unwrap_or_default()))
            .collect()
    }
}

/// Reads stdout and stderr to their end and the final Status, bounded.
async fn finish(mut process: AttachedProcess) -> Finished {
    let mut stdout = process.stdout();
    let mut stderr = process.stderr();
    let status = process.take_status().expect("status channel");
    let read = async {
        let mut out = String::new();
        let mut err = String::new();
        if let Some(s) = stdout.as_mut() {
            s.read_to_string(&mut out).await.unwrap();
        }
        if let Some(s) = stderr.as_mut() {
            s.read_to_string(&mut err).await.unwrap();
        }
        let status = status.await.expect("a Status on the error channel");
        Finished {
            stdout: out,
            stderr: err,
            status,
        }
    };
    match tokio::time::timeout(common::WAIT, read).await {
        Ok(done) => done,
        Err(_) => panic!("exec did not finish within {:?}", common::WAIT),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_in_the_container_with_output_and_exit_code() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    web_pod(&pods, "exec").await;

    let params = AttachParams::default().stdout(true).stderr(true);
    let done = finish(
        pods.exec(
            "exec",
            [
                "sh",
                "-c",
                "echo out-$GREETING; echo err-line >&2; cat /tmp/marker; hostname; pwd; ps -o comm | grep -c httpd; exit 3",
            ],
            &params,
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        done.stdout, "out-hello-from-spec\nprivate\nexec\n/tmp\n1\n",
        "stdout: the container's env, its private /tmp, its hostname, workingDir and PID namespace (sees httpd)"
    );
    assert_eq!(done.stderr, "err-line\n");
    // kube-rs negotiates v5.channel.k8s.io, which kube-apiserver's stream translator serves:
    // its Status wraps the exit code as client-go's SPDY decoder reported it.
    assert_eq!(
        done.summary(),
        (
            "Failure",
            "NonZeroExitCode",
            "command terminated with non-zero exit code: command terminated with exit code 3"
        )
    );
    assert_eq!(done.causes(), [("ExitCode".to_string(), "3".to_string())]);

    let ok = finish(pods.exec("exec", ["true"], &params).await.unwrap()).await;
    assert_eq!(ok.summary(), ("Success", "", ""));

    // A TTY request: one output stream, stderr included (no PTY on this node).
    let tty = finish(
        pods.exec(
            "exec",
            ["sh", "-c", "echo to-out; echo to-err >&2"],
            &AttachParams::default().stdout(true).stderr(false).tty(true),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        (tty.stdout.as_str(), tty.stderr.as_str()),
        ("to-out\nto-err\n", "")
    );

    let missing = finish(
        pods.exec("exec", ["no-such-command"], &params)
            .await
            .unwrap(),
    )
    .await;
    assert!(
        missing.stderr.contains("no-such-command"),
        "{}",
        missing.stderr
    );
    assert_eq!(
        missing.causes(),
        [("ExitCode".to_string(), "127".to_string())]
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_stdin_reaches_the_process_and_its_end_closes_it() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    web_pod(&pods, "stdin").await;
    let params = AttachParams::default()
        .stdin(true)
        .stdout(true)
        .stderr(true);
    let mut process = pods
        .exec("stdin", ["sh", "-c", "tr a-z A-Z; echo done"], &params)
        .await
        .unwrap();
    let mut stdin = process.stdin().unwrap();
    stdin.write_all(b"first line\nsecond\n").await.unwrap();
    stdin.shutdown().await.unwrap();
    drop(stdin);
    let done = finish(process).await;
    assert_eq!(done.stdout, "FIRST LINE\nSECOND\ndone\n");
    assert_eq!(done.summary(), ("Success", "", ""));
    cluster.shutdown().await;
}

/// Host PIDs whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            !zombie && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted)
        })
        .collect()
}

/// Waits (bounded) until `argv` runs (`want` = true) or no longer runs; returns the PIDs seen.
async fn await_processes(argv: &[&str], want: bool) -> Vec<u32> {
    let deadline = tokio::time::Instant::now() + common::WAIT;
    loop {
        let found = processes_running(argv);
        if found.is_empty() != want {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{argv:?}: expected {}; PIDs now {found:?}",
            if want { "to run" } else { "to have ended" }
        );
        // /proc has no change notification: a short poll, bounded by WAIT.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_leaves_no_exec_process() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    web_pod(&pods, "gone").await;
    let params = AttachParams::default().stdout(true).stderr(true);
    // A shell with a child: both must end, not only the process the kubelet started.
    let process = pods
        .exec(
            "gone",
            ["sh", "-c", "sleep 4242 & sleep 4343; wait"],
            &params,
        )
        .await
        .unwrap();
    let child = await_processes(&["sleep", "4242"], true).await;
    let foreground = await_processes(&["sleep", "4343"], true).await;
    assert_eq!((child.len(), foreground.len()), (1, 1));
    process.abort();
    drop(process);
    await_processes(&["sleep", "4242"], false).await;
    await_processes(&["sleep", "4343"], false).await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_and_stopped_containers_get_the_status_a_real_cluster_gives() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    web_pod(&pods, "web").await;
    let params = AttachParams::default().stdout(true);

    let no_pod = common_status(pods.exec("nope", ["true"], &params).await);
    assert_eq!(
        (no_pod.code, no_pod.reason.as_str()),
        (404, "NotFound"),
        "{no_pod:?}"
    );
    assert_eq!(no_pod.message, "pods \"nope\" not found");

    let bad = common_status(
        pods.exec(
            "web",
            ["true"],
            &AttachParams::default().stdout(true).container("sidecar"),
        )
        .await,
    );
    assert_eq!(
        (bad.code, bad.reason.as_str()),
        (400, "BadRequest"),
        "{bad:?}"
    );
    assert_eq!(bad.message, "container sidecar is not valid for pod web");

    // A pod whose only container has completed: the upgrade succeeds, the kubelet then finds
    // no running container and says so on the error channel.
    let done: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "done"},
        "spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}]}
    }));
    pods.create(&PostParams::default(), &done).await.unwrap();
    common::wait_for(&pods, "done", "pod Succeeded", |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref()?.phase.as_deref()) == Some("Succeeded")
    })
    .await;
    let stopped = finish(pods.exec("done", ["true"], &params).await.unwrap()).await;
    assert_eq!(
        stopped.summary(),
        (
            "Failure",
            "InternalError",
            "Internal error occurred: unable to upgrade connection: container not found (\"main\")"
        )
    );
    cluster.shutdown().await;
}

fn common_status<T>(result: Result<T, kube::Error>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        Err(other) => panic!("expected an API error Status, got {other}"),
        Ok(_) => panic!("expected an API error Status, got a stream"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_forward_reaches_the_pod_port_and_reports_a_closed_one() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    web_pod(&pods, "pf").await;

    let mut forwarder = pods.portforward("pf", &[8080]).await.unwrap();
    let mut stream = forwarder.take_stream(8080).unwrap();
    stream
        .write_all(b"GET /index.html HTTP/1.0\r\nHost: pf\r\n\r\n")
        .await
        .unwrap();
    let mut reply = String::new();
    tokio::time::timeout(common::WAIT, stream.read_to_string(&mut reply))
        .await
        .expect("the forwarded reply ends")
        .unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    assert!(reply.ends_with("served-by-web\n"), "{reply}");
    drop(stream);
    // The server closes the WebSocket once the pod closed its side (as the kubelet does);
    // kube-rs may then report its own late Close as an error, which is not this test's concern.
    let _ = tokio::time::timeout(common::WAIT, forwarder.join())
        .await
        .expect("the port-forward ends once the pod closed its side");

    let mut closed = pods.portforward("pf", &[9]).await.unwrap();
    let error = closed.take_error(9).unwrap();
    let message = tokio::time::timeout(common::WAIT, error)
        .await
        .expect("a closed port is reported, not left hanging")
        .expect("an error message on the port's error channel");
    assert!(
        message.starts_with("error forwarding port 9 to pod pf_default, uid ")
            && message.contains("Connection refused"),
        "{message}"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_streams_what_the_container_writes_until_it_ends() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "talker"},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "main", "image": "busybox:1.36",
                "command": ["sh", "-c", "mkfifo /tmp/go && read line < /tmp/go && echo attached-$line; exit 4"],
                "readinessProbe": {"exec": {"command": ["test", "-p", "/tmp/go"]}, "periodSeconds": 1}}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    common::wait_for(
        &pods,
        "talker",
        "pod Ready (its FIFO exists)",
        common::pod_ready(),
    )
    .await;
    let params = AttachParams::default().stdout(true).stderr(false);
    let attached = pods.attach("talker", &params).await.unwrap();
    // Release the container from an exec; what it then writes reaches the attached client,
    // and its end (exit 4) ends the attachment with Success, as a kubelet's attach does.
    let go = finish(
        pods.exec(
            "talker",
            ["sh", "-c", "echo output > /tmp/go"],
            &AttachParams::default().stdout(true),
        )
        .await
        .unwrap(),
    )
    .await;
    // The container ends once it read the line, killing what still runs in its PID
    // namespace: the writer may be caught before it exits (137), as in any container.
    assert!(
        go.summary() == ("Success", "", "")
            || go.causes() == [("ExitCode".to_string(), "137".to_string())],
        "{:?}",
        go.status
    );
    let done = finish(attached).await;
    assert_eq!(done.stdout, "attached-output\n");
    assert_eq!(done.summary(), ("Success", "", ""));
    cluster.shutdown().await;
}
