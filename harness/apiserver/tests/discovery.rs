//! Discovery and OpenAPI documents as kubectl and kube-rs read them: aggregated discovery
//! with its exact Content-Type, the legacy documents, kube-rs `Discovery`, and OpenAPI v3
//! listing CRD group versions with GVK-tagged PATCH operations.

mod common;

use common::{raw, request, request_with, start, within};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::discovery::{Discovery, Scope};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};

const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

async fn register(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.test"},
        "spec": {"group": "example.test", "scope": "Cluster",
                 "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
                 "versions": [
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
                 ]}
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    within(
        "widgets to be established",
        await_condition(
            crds,
            "widgets.example.test",
            conditions::is_crd_established(),
        ),
    )
    .await
    .unwrap();
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one server and the discovery documents it serves, asserted in order"
)]
async fn aggregated_and_legacy_discovery() {
    let (server, client) = start().await;
    register(&client).await;
    let addr = server.addr();

    let agg = raw(
        addr,
        &request_with("GET", "/apis?timeout=32s", &[("Accept", AGGREGATED)], b""),
    )
    .await;
    assert_eq!(agg.code, 200);
    assert!(
        agg.head
            .contains("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
        "aggregated Content-Type: {}",
        agg.head
    );
    let doc = agg.status();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    let widgets = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "example.test")
        .unwrap();
    assert_eq!(
        widgets["versions"][0]["version"], "v1",
        "GA version preferred: {widgets}"
    );
    assert_eq!(widgets["versions"][0]["resources"][0]["scope"], "Cluster");
    assert_eq!(
        widgets["versions"][0]["resources"][0]["shortNames"],
        json!(["wd"])
    );

    let core = raw(
        addr,
        &request_with("GET", "/api", &[("Accept", AGGREGATED)], b""),
    )
    .await
    .status();
    let pods = core["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .cloned()
        .unwrap();
    let subs: Vec<&str> = pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subresource"].as_str().unwrap())
        .collect();
    assert_eq!(
        subs,
        [
            "attach",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "status"
        ],
        "alphabetical, as kube-apiserver lists them"
    );

    let legacy = raw(addr, &request("GET", "/api", None, b"")).await.status();
    assert_eq!(legacy["kind"], "APIVersions");
    let groups = raw(addr, &request("GET", "/apis", None, b""))
        .await
        .status();
    assert_eq!(groups["kind"], "APIGroupList");
    let example = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "example.test")
        .unwrap();
    assert_eq!(
        example["preferredVersion"]["groupVersion"],
        "example.test/v1"
    );
    let list = raw(addr, &request("GET", "/api/v1", None, b""))
        .await
        .status();
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for expected in [
        "pods",
        "pods/status",
        "pods/log",
        "namespaces",
        "configmaps",
        "persistentvolumeclaims/status",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let version = raw(addr, &request("GET", "/version", None, b""))
        .await
        .status();
    assert!(
        version["gitVersion"]
            .as_str()
            .unwrap()
            .starts_with("v1.37.")
    );
    for path in ["/healthz", "/readyz", "/livez"] {
        assert_eq!(
            raw(addr, &request("GET", path, None, b"")).await.body,
            b"ok"
        );
    }

    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (resource, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "Widget")
        .expect("kube-rs discovers Widget");
    assert_eq!(
        (resource.version.as_str(), caps.scope),
        ("v1", Scope::Cluster)
    );
    let (sts, _) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "StatefulSet")
        .unwrap();
    assert_eq!(sts.plural, "statefulsets");
}

#[tokio::test]
async fn openapi_v3_lists_every_group_version_with_tagged_patches() {
    let (server, client) = start().await;
    let addr = server.addr();
    let before = raw(addr, &request("GET", "/openapi/v3", None, b""))
        .await
        .status();
    assert!(before["paths"].get("apis/example.test/v1").is_none());
    register(&client).await;
    let root = raw(addr, &request("GET", "/openapi/v3?timeout=32s", None, b""))
        .await
        .status();
    for gv in [
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/example.test/v1",
        "apis/example.test/v1beta1",
    ] {
        assert!(root["paths"].get(gv).is_some(), "{gv} listed: {root}");
    }
    let url = root["paths"]["apis/example.test/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        url.starts_with("/openapi/v3/apis/example.test/v1?hash="),
        "{url}"
    );
    let doc: Value = raw(addr, &request("GET", &url, None, b"")).await.status();
    let patch = &doc["paths"]["/apis/example.test/v1/widgets/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "example.test", "version": "v1", "kind": "Widget"})
    );
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation")
    );
    let pods = raw(addr, &request("GET", "/openapi/v3/api/v1", None, b""))
        .await
        .status();
    assert!(
        pods["paths"]
            .get("/api/v1/namespaces/{namespace}/pods/{name}")
            .is_some()
    );
    assert_eq!(
        raw(addr, &request("GET", "/openapi/v2", None, b""))
            .await
            .code,
        404
    );
}
