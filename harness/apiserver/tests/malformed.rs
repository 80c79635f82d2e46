//! Malformed and hostile requests over a raw TLS connection: each gets a 4xx `Status` body (or, for
//! requests that are not HTTP at all, hyper's 400) and the server keeps answering.

mod common;

use common::{raw, request, start, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CM: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one server that must survive every malformed request in turn"
)]
async fn malformed_requests_get_4xx_status_and_the_server_survives() {
    let (server, _client) = start().await;
    let addr = server.addr();
    let json = Some("application/json");
    let existing = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ok"}}"#;
    assert_eq!(
        raw(addr, &request("POST", CM, json, existing)).await.code,
        201
    );

    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let huge = vec![b' '; 4 * 1024 * 1024];
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "malformed JSON",
            request("POST", CM, json, b"{\"metadata\": "),
            400,
            "BadRequest",
        ),
        (
            "invalid UTF-8",
            request("POST", CM, json, b"{\"a\": \"\xff\xfe\"}"),
            400,
            "BadRequest",
        ),
        (
            "deeply nested JSON",
            request("POST", CM, json, deep.as_bytes()),
            400,
            "BadRequest",
        ),
        (
            "a JSON array as an object",
            request("POST", CM, json, b"[1,2]"),
            400,
            "BadRequest",
        ),
        (
            "wrong content type",
            request("POST", CM, Some("text/plain"), b"hello"),
            415,
            "UnsupportedMediaType",
        ),
        (
            "body over the limit",
            request("POST", CM, json, &huge),
            413,
            "RequestEntityTooLarge",
        ),
        (
            "unknown path",
            request("GET", "/nothing/here", None, b""),
            404,
            "NotFound",
        ),
        (
            "unknown resource",
            request("GET", "/api/v1/namespaces/default/widgets", None, b""),
            404,
            "NotFound",
        ),
        (
            "unknown group",
            request("GET", "/apis/nope.example/v1/things", None, b""),
            404,
            "NotFound",
        ),
        (
            "bad label selector",
            request("GET", &format!("{CM}?labelSelector=a%20in%20b"), None, b""),
            400,
            "BadRequest",
        ),
        (
            "bad field selector",
            request("GET", &format!("{CM}?fieldSelector=spec.x%3D1"), None, b""),
            400,
            "BadRequest",
        ),
        (
            "wrong kind in the body",
            request(
                "POST",
                CM,
                json,
                br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#,
            ),
            400,
            "BadRequest",
        ),
        (
            "wrong group in the body",
            request(
                "POST",
                CM,
                json,
                br#"{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
            ),
            400,
            "BadRequest",
        ),
        (
            "name mismatch on update",
            request(
                "PUT",
                &format!("{CM}/ok"),
                json,
                br#"{"metadata":{"name":"other"}}"#,
            ),
            400,
            "BadRequest",
        ),
        (
            "failing JSON patch",
            request(
                "PATCH",
                &format!("{CM}/ok"),
                Some("application/json-patch+json"),
                br#"[{"op":"test","path":"/data/x","value":"1"}]"#,
            ),
            422,
            "Invalid",
        ),
        (
            "malformed JSON patch",
            request(
                "PATCH",
                &format!("{CM}/ok"),
                Some("application/json-patch+json"),
                br#"{"op":"add"}"#,
            ),
            400,
            "BadRequest",
        ),
        (
            "merge patch that is an array",
            request(
                "PATCH",
                &format!("{CM}/ok"),
                Some("application/merge-patch+json"),
                b"[]",
            ),
            400,
            "BadRequest",
        ),
        (
            "unknown patch type",
            request("PATCH", &format!("{CM}/ok"), Some("text/x-diff"), b"x"),
            415,
            "UnsupportedMediaType",
        ),
        (
            "invalid name",
            request("POST", CM, json, br#"{"metadata":{"name":"Not_Valid"}}"#),
            422,
            "Invalid",
        ),
        (
            "missing name",
            request("POST", CM, json, br#"{"metadata":{}}"#),
            422,
            "Invalid",
        ),
        (
            "bad watch resourceVersion",
            request(
                "GET",
                &format!("{CM}?watch=true&resourceVersion=abc"),
                None,
                b"",
            ),
            400,
            "BadRequest",
        ),
        (
            "bad boolean",
            request("GET", &format!("{CM}?watch=maybe"), None, b""),
            400,
            "BadRequest",
        ),
        (
            "bad propagation policy",
            request(
                "DELETE",
                &format!("{CM}/ok"),
                json,
                br#"{"propagationPolicy":"Sideways"}"#,
            ),
            400,
            "BadRequest",
        ),
        (
            "status of a kind without status",
            request("GET", &format!("{CM}/ok/status"), None, b""),
            404,
            "NotFound",
        ),
        (
            "create without a namespace",
            request("POST", "/api/v1/configmaps", json, existing),
            405,
            "MethodNotAllowed",
        ),
        (
            "write to discovery",
            request("POST", "/version", json, b"{}"),
            405,
            "MethodNotAllowed",
        ),
        (
            "missing object",
            request("GET", &format!("{CM}/absent"), None, b""),
            404,
            "NotFound",
        ),
        (
            "strategic merge patch on a missing object",
            request(
                "PATCH",
                &format!("{CM}/absent"),
                Some("application/strategic-merge-patch+json"),
                b"{}",
            ),
            404,
            "NotFound",
        ),
    ];
    for (what, req, code, reason) in cases {
        let reply = raw(addr, &req).await;
        assert_eq!(
            reply.code,
            code,
            "{what}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let status = reply.status();
        assert_eq!(status["kind"], "Status", "{what}: {status}");
        assert_eq!(status["reason"], reason, "{what}: {status}");
        assert_eq!(status["code"], code, "{what}: {status}");
        assert!(
            status["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}: {status}"
        );
        let health = raw(addr, &request("GET", "/healthz", None, b"")).await;
        assert_eq!(
            health.code, 200,
            "the server stopped answering after: {what}"
        );
    }

    // Not HTTP at all, and a body cut short: hyper answers or closes; the server lives on.
    let garbage = raw(addr, b"HELLO THERE\r\n\r\n").await;
    assert_eq!(garbage.code, 400);
    within("a truncated body to be dropped", async {
        let mut stream = common::connect(addr).await;
        stream
            .write_all(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\"")
            .await
            .unwrap();
        stream.shutdown().await.unwrap();
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out).await;
    })
    .await;
    let health = raw(addr, &request("GET", "/healthz", None, b"")).await;
    assert_eq!(health.code, 200);
    let still = raw(addr, &request("GET", &format!("{CM}/ok"), None, b"")).await;
    assert_eq!(still.code, 200, "the object created first is still served");
}
