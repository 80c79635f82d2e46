//! Status bodies byte for byte: each request below provokes one error, and its response
//! (status code, `Content-Type`, body bytes including the trailing newline) must equal the
//! kube-apiserver body recorded in tests/fixtures/status-bodies.json. The 500 body, which no
//! request can provoke on purpose, is checked against the same fixture in src/status.rs.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use common::{Reply, raw, request, request_with, start, start_with};
use rehearsal_apiserver::ApiServerConfig;
use serde_json::{Value, json};

const FIXTURE: &str = include_str!("fixtures/status-bodies.json");
const CM: &str = "/api/v1/namespaces/default/configmaps";
const JSON: Option<&str> = Some("application/json");

fn expected() -> BTreeMap<String, (u16, String)> {
    let fixture: Value = serde_json::from_str(FIXTURE).expect("the fixture is JSON");
    fixture["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            (
                c["case"].as_str().unwrap().to_string(),
                (
                    c["code"].as_u64().unwrap() as u16,
                    c["body"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

/// A request without any credentials (kubectl with an empty kubeconfig user).
fn anonymous(method: &str, path: &str) -> Vec<u8> {
    format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        .into_bytes()
}

async fn post(addr: SocketAddr, path: &str, body: &Value) -> Reply {
    raw(
        addr,
        &request("POST", path, JSON, body.to_string().as_bytes()),
    )
    .await
}

fn content_type(reply: &Reply) -> Option<String> {
    reply.head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-type")
            .then(|| v.trim().to_string())
    })
}

/// Provokes every fixture case but the 500 (and the 410, which needs a server of its own).
async fn provoke(addr: SocketAddr) -> Vec<(&'static str, Reply)> {
    let mut seen = Vec::new();
    let cm = |name: &str, ns: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}});
    seen.push((
        "400 object namespace differs from the URL's",
        post(addr, CM, &cm("x", "other")).await,
    ));
    let bad_token = request_with(
        "GET",
        "/api/v1/namespaces/default/pods",
        &[("Authorization", "Bearer not-a-token")],
        b"",
    );
    seen.push(("401 unknown bearer token", raw(addr, &bad_token).await));
    let list = anonymous("GET", "/api/v1/namespaces/default/pods");
    seen.push(("403 anonymous list of pods", raw(addr, &list).await));
    let get = anonymous("GET", "/apis/apps/v1/namespaces/default/deployments/web");
    seen.push((
        "403 anonymous get of a named deployment",
        raw(addr, &get).await,
    ));
    let delete = request("DELETE", "/api/v1/namespaces/default", None, b"");
    seen.push((
        "403 deleting the default namespace",
        raw(addr, &delete).await,
    ));
    let get_cm = request("GET", &format!("{CM}/nope"), None, b"");
    seen.push(("404 core object", raw(addr, &get_cm).await));
    let get_deploy = request(
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/nope",
        None,
        b"",
    );
    seen.push(("404 object of a named group", raw(addr, &get_deploy).await));

    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "mock-2"},
        "spec": {"ports": [{"port": 99, "protocol": "TCP", "targetPort": 9949}], "selector": {"app": "mock"}}});
    let services = "/api/v1/namespaces/default/services";
    assert_eq!(post(addr, services, &service).await.code, 201);
    seen.push((
        "409 service already exists",
        post(addr, services, &service).await,
    ));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "triple-nginx"},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}}, "template": {"metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.15.4"}]}}}});
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    assert_eq!(post(addr, deployments, &deployment).await.code, 201);
    seen.push((
        "409 deployment already exists",
        post(addr, deployments, &deployment).await,
    ));
    assert_eq!(post(addr, CM, &cm("stale", "default")).await.code, 201);
    let mut stale = cm("stale", "default");
    stale["metadata"]["resourceVersion"] = json!("1");
    let put = request(
        "PUT",
        &format!("{CM}/stale"),
        JSON,
        stale.to_string().as_bytes(),
    );
    seen.push((
        "409 update with a stale resourceVersion",
        raw(addr, &put).await,
    ));
    seen.push((
        "422 invalid object name",
        post(addr, CM, &cm("Bad_Name", "default")).await,
    ));
    seen.push((
        "429 eviction blocked by a disruption budget",
        blocked_eviction(addr).await,
    ));
    seen
}

/// A running (not Ready) pod that a budget of minAvailable 1 protects.
async fn blocked_eviction(addr: SocketAddr) -> Reply {
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}});
    assert_eq!(post(addr, pods, &pod).await.code, 201);
    let running = json!({"status": {"phase": "Running"}});
    let patch = request(
        "PATCH",
        &format!("{pods}/web/status"),
        Some("application/merge-patch+json"),
        running.to_string().as_bytes(),
    );
    assert_eq!(raw(addr, &patch).await.code, 200);
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web-pdb"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    assert_eq!(post(addr, pdbs, &pdb).await.code, 201);
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web", "namespace": "default"}});
    post(addr, &format!("{pods}/web/eviction"), &eviction).await
}

fn compare(case: &str, reply: &Reply, code: u16, body: &str) {
    let got = String::from_utf8_lossy(&reply.body);
    assert_eq!(
        (reply.code, got.as_ref()),
        (code, body),
        "{case}: the body differs from kube-apiserver's"
    );
    assert_eq!(
        content_type(reply).as_deref(),
        Some("application/json"),
        "{case}: {}",
        reply.head
    );
}

#[tokio::test]
async fn error_bodies_match_kube_apiservers_byte_for_byte() {
    let expected = expected();
    let (server, _client) = start().await;
    let seen = provoke(server.addr()).await;
    for (case, reply) in &seen {
        let (code, body) = expected
            .get(*case)
            .unwrap_or_else(|| panic!("no fixture for {case}"));
        compare(case, reply, *code, body);
    }
    let covered: Vec<&str> = seen
        .iter()
        .map(|(c, _)| *c)
        .chain([
            "410 watch from a compacted resourceVersion",
            "500 internal error",
        ])
        .collect();
    let missing: Vec<&String> = expected
        .keys()
        .filter(|k| !covered.contains(&k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "fixture cases nobody provokes: {missing:?}"
    );
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_ends_with_the_expired_status() {
    let (_, body) = expected()["410 watch from a compacted resourceVersion"].clone();
    let config = ApiServerConfig {
        watch_history: 2,
        ..ApiServerConfig::default()
    };
    let (server, _client) = start_with(config).await;
    let addr = server.addr();
    for i in 0..5 {
        let cm =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
        assert_eq!(post(addr, CM, &cm).await.code, 201);
    }
    let watch = request(
        "GET",
        &format!("{CM}?watch=true&resourceVersion=1&timeoutSeconds=5"),
        None,
        b"",
    );
    let reply = raw(addr, &watch).await;
    let text = String::from_utf8_lossy(&reply.body).into_owned();
    // The oldest retained version is the server's own; everything around it is fixed.
    let oldest = text
        .split("too old resource version: 1 (")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no Expired message in {text:?}"));
    assert!(
        oldest.parse::<u64>().is_ok_and(|n| n > 1),
        "oldest retained version {oldest:?} in {text:?}"
    );
    compare(
        "410 watch from a compacted resourceVersion",
        &reply,
        200,
        &body.replace("{oldest}", oldest),
    );
}
