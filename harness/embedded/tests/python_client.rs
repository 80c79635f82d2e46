//! The official Python `kubernetes` client (37.x) against the embedded cluster, as an
//! independent client: identity from the kubeconfig, list, create and watch, `stream` exec
//! (stdout, stderr, exit code), `portforward` to a pod's HTTP server, and a ServiceAccount
//! token held to RBAC; termination messages read from pod statuses. The client's calls are in
//! tests/python/*.py.

mod common;

use std::path::PathBuf;
use std::process::Stdio;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use rehearsal_embedded::EmbeddedCluster;
use serde_json::{Value, json};

fn python() -> PathBuf {
    if let Ok(path) = std::env::var("REHEARSAL_PYTHON_CLIENT") {
        return PathBuf::from(path);
    }
    let fallback = PathBuf::from("/opt/rehearsal-pyclient/bin/python");
    assert!(
        fallback.exists(),
        "the Python kubernetes client is not installed: run scripts/setup.sh --tests \
         (or set REHEARSAL_PYTHON_CLIENT to a python with kubernetes==37.0.2)"
    );
    fallback
}

/// Runs tests/python/`script` with the cluster's kubeconfig and `args`; returns the one JSON
/// object it prints. The child is killed if the test ends first (kill_on_drop).
async fn run_script(cluster: &EmbeddedCluster, script: &str, args: &[&str]) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let child = tokio::process::Command::new(python())
        .arg(path)
        .arg(cluster.kubeconfig_path())
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python starts");
    let out = tokio::time::timeout(common::WAIT * 2, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish within {:?}", common::WAIT * 2))
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{script} printed no JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_reads_termination_messages() {
    let cluster = common::start().await;
    let seen = run_script(&cluster, "termination_check.py", &[]).await;
    let summary = &seen["py-summary"];
    assert_eq!(summary["phase"], "Succeeded", "{seen}");
    assert_eq!(summary["path"], "/dev/termination-log", "defaulted: {seen}");
    assert_eq!(summary["policy"], "File", "{seen}");
    assert_eq!(summary["reason"], "Completed", "{seen}");
    let parsed: Value = serde_json::from_str(summary["message"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"snapshot_id": "5f3a", "files_new": 3}));
    let fallback = &seen["py-fallback"];
    assert_eq!(fallback["phase"], "Failed", "{seen}");
    assert_eq!(fallback["exit_code"], 4, "{seen}");
    assert_eq!(fallback["reason"], "Error", "{seen}");
    assert_eq!(fallback["message"], "first\nlast words\n", "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_lists_watches_execs_and_port_forwards() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"terminationGracePeriodSeconds": 2,
            "containers": [{"name": "main", "image": "busybox:1.36",
                "command": ["sh", "-c", "mkdir -p /tmp/www && echo python-marker > /tmp/www/marker && cp /tmp/www/marker /tmp/marker && exec httpd -f -p $(POD_IP):8080 -h /tmp/www"],
                "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "readinessProbe": {"exec": {"command": ["test", "-e", "/tmp/marker"]}, "periodSeconds": 1}}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    common::wait_for(&pods, "web", "pod Ready", common::pod_ready()).await;

    let seen = run_script(&cluster, "client_check.py", &["web", "8080"]).await;

    assert_eq!(seen["user"], "kubernetes-admin", "{seen}");

    assert_eq!(
        seen["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    assert_eq!(seen["pods"], json!(["web"]));
    assert_eq!(seen["created_uid"], true);
    let watch = seen["watch"].as_array().unwrap();
    assert!(watch.contains(&json!(["ADDED", "from-python"])), "{seen}");
    assert_eq!(seen["exec_stdout"], "hello-from-exec\n", "{seen}");
    assert_eq!(seen["exec_stderr"], "to-stderr\n", "{seen}");
    assert_eq!(seen["exec_rc"], 3, "{seen}");
    assert_eq!(seen["exec_simple"], "python-marker\n", "{seen}");
    let http = seen["portforward"].as_str().unwrap();
    assert!(
        http.starts_with("HTTP/1.") && http.ends_with("python-marker\n"),
        "{seen}"
    );
    assert_eq!(seen["robot_secrets"]["status"], 403, "{seen}");
    assert_eq!(
        seen["robot_secrets"]["body"]["message"],
        "secrets is forbidden: User \"system:serviceaccount:default:py-robot\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
}

/// The kube-apiserver bodies recorded as facts in the API server's test fixtures.
fn recorded_body(case: &str) -> String {
    let fixture: Value = serde_json::from_str(include_str!(
        "../../apiserver/tests/fixtures/status-bodies.json"
    ))
    .unwrap();
    fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == case)
        .and_then(|c| c["body"].as_str())
        .unwrap_or_else(|| panic!("no recorded body for {case}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_aggregates_per_object_conflicts_with_kube_apiservers_bodies() {
    let cluster = common::start().await;
    let seen = run_script(&cluster, "errors_check.py", &[]).await;
    assert_eq!(seen["first"]["raised"], false, "{seen}");

    // One conflict among two documents: the Service fails, the Deployment is still created.
    let service = recorded_body("409 service already exists");
    let multi = &seen["multi"];
    assert_eq!(multi["raised"], true, "{seen}");
    assert_eq!(multi["exceptions"].as_array().unwrap().len(), 1, "{seen}");
    assert_eq!(multi["exceptions"][0]["status"], 409);
    assert_eq!(multi["exceptions"][0]["body"], service.as_str());
    assert_eq!(
        multi["str"].as_str().unwrap(),
        format!("Error from server (Conflict): {service}")
    );
    assert_eq!(seen["multi_deployment_created"], "mock-2");

    // Three copies of one Deployment: the first is created, each other one is an error.
    let deployment = recorded_body("409 deployment already exists");
    let triple = &seen["triple"];
    assert_eq!(triple["exceptions"].as_array().unwrap().len(), 2, "{seen}");
    assert_eq!(
        triple["str"].as_str().unwrap(),
        format!("Error from server (Conflict): {deployment}").repeat(2)
    );
    assert_eq!(seen["triple_deployment_created"], "triple-nginx");

    let plain = &seen["configmap_409"];
    assert_eq!(plain["status"], 409, "{seen}");
    assert_eq!(plain["reason"], "Conflict");
    assert_eq!(plain["content_type"], "application/json");
    assert_eq!(
        plain["body"],
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"configmaps \\\"twice\\\" already exists\",\"reason\":\"AlreadyExists\",\
         \"details\":{\"name\":\"twice\",\"kind\":\"configmaps\"},\"code\":409}\n"
    );
}

/// A port nobody listens on now, for the echo server (pods share the host's network, so
/// parallel tests must not pick the same one).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_streams_exec_and_port_forward_over_websockets() {
    let cluster = common::start().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let echo_port = free_port();
    let shell: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shell"},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "main",
            "image": "busybox:1.36", "command": ["sleep", "3600"]}]}
    }));
    let web: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [
            {"name": "http", "image": "busybox:1.36",
                "command": ["sh", "-c", "mkdir -p /tmp/www && echo forwarded-marker > /tmp/www/marker && exec httpd -f -p $(POD_IP):8080 -h /tmp/www"],
                "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}},
            {"name": "echo", "image": "busybox:1.36",
                "command": ["nc", "-ll", "-p", echo_port.to_string(), "-e", "cat"],
                "readinessProbe": {"tcpSocket": {"port": echo_port}, "periodSeconds": 1}}
        ]}
    }));
    for pod in [&shell, &web] {
        pods.create(&PostParams::default(), pod).await.unwrap();
    }
    for name in ["shell", "web"] {
        common::wait_for(&pods, name, "pod Ready", common::pod_ready()).await;
    }
    let port = echo_port.to_string();
    let seen = run_script(&cluster, "streams_check.py", &["shell", "web", &port]).await;
    assert_exec(&seen);
    assert_channel_variants(&seen);
    assert_port_forward(&seen, echo_port);
}

fn assert_exec(seen: &Value) {
    assert_eq!(seen["echo"], "test string 1\n", "{seen}");
    assert_eq!(seen["three_lines"], 3, "{seen}");
    assert_eq!(seen["gzip"], "binary payload", "{seen}");
    assert_eq!(
        seen["codes"],
        json!({"false": 1, "exit3": 3, "true": 0}),
        "{seen}"
    );
    for mode in ["interactive_text", "interactive_binary"] {
        let s = &seen[mode];
        assert_eq!(s["subprotocol"], "v5.channel.k8s.io", "{mode}: {seen}");
        assert_eq!(s["stdout"], "test string 1", "{mode}: {seen}");
        assert_eq!(s["stderr"], "test string 2", "{mode}: {seen}");
        assert_eq!(
            s["status"],
            json!({"metadata": {}, "status": "Success"}),
            "{mode}"
        );
        assert_eq!(s["open_after"], false, "{mode}: {seen}");
    }
    let close = &seen["close_stdin"];
    assert_eq!(close["echoed"], "test-close", "{seen}");
    assert_eq!(close["open_after"], false, "closing stdin ends cat: {seen}");
    assert_eq!(close["returncode"], 0, "{seen}");
}

fn assert_channel_variants(seen: &Value) {
    let v4 = &seen["v4"];
    assert_eq!(v4["subprotocol"], "v4.channel.k8s.io", "{seen}");
    assert_eq!(v4["stdout"], "v4 out\n", "{seen}");
    assert_eq!(v4["returncode"], 5, "{seen}");

    // Base64 v4: text frames, '0' + channel, base64 data; first the empty stdout frame.
    let b64 = &seen["v4.base64.channel.k8s.io"];
    assert_eq!(b64["subprotocol"], "v4.base64.channel.k8s.io", "{seen}");
    let frames = b64["frames"].as_array().unwrap();
    assert!(
        frames.iter().all(|f| f["opcode"] == 1),
        "text frames: {b64}"
    );
    assert_eq!(frames[0]["data"], "1", "the set-up frame: {b64}");
    let on = |ch: i64| -> String {
        frames
            .iter()
            .filter(|f| f["channel"] == ch)
            .filter_map(|f| f["decoded"].as_str())
            .collect()
    };
    assert_eq!(on(1), "b64 out\n", "{b64}");
    assert_eq!(on(2), "b64 err\n", "{b64}");
    let status: Value = serde_json::from_str(&on(3)).unwrap();
    assert_eq!(
        status["message"],
        "command terminated with non-zero exit code: error executing command [sh -c echo b64 out; echo b64 err >&2; exit 2], exit code 2",
        "{b64}"
    );
    assert_eq!(status["details"]["causes"][0]["message"], "2");

    // Pre-v4 protocols: only the failure's message on the error channel.
    let v1 = &seen["base64.channel.k8s.io"];
    let frames = v1["frames"].as_array().unwrap();
    let error: String = frames
        .iter()
        .filter(|f| f["channel"] == 3)
        .filter_map(|f| f["decoded"].as_str())
        .collect();
    assert!(
        error.starts_with("command terminated with non-zero exit code: error executing"),
        "{v1}"
    );
    let binary = &seen["channel.k8s.io"];
    assert_eq!(binary["subprotocol"], "channel.k8s.io", "{seen}");
    let frames = binary["frames"].as_array().unwrap();
    assert!(
        frames.iter().all(|f| f["opcode"] == 2),
        "binary frames: {binary}"
    );
    assert_eq!(frames[0]["data"], "\u{1}", "the set-up frame: {binary}");
}

fn assert_port_forward(seen: &Value, echo_port: u16) {
    let rounds: Vec<String> = (0..3)
        .map(|i| format!("round {i} through the port-forward"))
        .collect();
    assert_eq!(seen["pf_echo"], json!(rounds), "{seen}");
    assert_eq!(seen["pf_closed_read"], "", "{seen}");
    let error = seen["pf_closed_error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("error forwarding port 9 to pod web_default, uid ")
            && error.contains("Connection refused"),
        "port {echo_port} echoed; port 9's error: {seen}"
    );
    assert_eq!(seen["pf_http"]["status"], 200, "{seen}");
    assert_eq!(seen["pf_http"]["body"], "forwarded-marker\n", "{seen}");
    assert_eq!(
        seen["pf_errors_of_good_ports"],
        json!([null, null]),
        "{seen}"
    );
    assert_eq!(seen["pf_connected_after_close"], false, "{seen}");
    let b64 = &seen["pf_base64"];
    let header = base64_port(echo_port);
    assert_eq!(
        b64["headers"],
        json!([[1, format!("0{header}")], [1, format!("1{header}")]]),
        "{seen}"
    );
    assert_eq!(b64["port_from_header"], echo_port, "{seen}");
    assert_eq!(b64["echo"], json!([1, "0", "base64 forwarded"]), "{seen}");
}

/// Standard base64 of a port's two little-endian bytes (what the header frame carries).
fn base64_port(port: u16) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(port.to_le_bytes())
}
