//! The API surface kube-rs's own cluster tests use, each exercised through kube-rs as those
//! tests do: node field selectors with cordon/uncordon, metadata-only pods, the
//! `pods/ephemeralcontainers` subresource, CertificateSigningRequest approval and the scale
//! subresource of a custom resource.

mod common;

use common::{start, status_of, within};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

async fn create<K>(api: &Api<K>, v: Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(v).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap()
}

#[tokio::test]
async fn node_field_selectors_see_cordons() {
    let (_server, client) = start().await;
    let nodes: Api<Node> = Api::all(client);
    create(&nodes, json!({"metadata": {"name": "fakenode"}})).await;
    let schedulable = ListParams::default().fields("spec.unschedulable==false");
    let cordoned = ListParams::default().fields("spec.unschedulable=true");
    let names = |l: kube::core::ObjectList<Node>| -> Vec<String> {
        l.items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect()
    };
    assert_eq!(
        names(nodes.list(&schedulable).await.unwrap()),
        ["fakenode"],
        "a node without spec.unschedulable is schedulable"
    );
    nodes.cordon("fakenode").await.unwrap();
    assert!(names(nodes.list(&schedulable).await.unwrap()).is_empty());
    assert_eq!(names(nodes.list(&cordoned).await.unwrap()), ["fakenode"]);
    nodes.uncordon("fakenode").await.unwrap();
    assert_eq!(names(nodes.list(&schedulable).await.unwrap()), ["fakenode"]);
}

#[tokio::test]
async fn pods_have_metadata_only_views() {
    let (_server, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    create(
        &pods,
        json!({"metadata": {"name": "meta", "labels": {"app": "m"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}),
    )
    .await;
    let one = pods.get_metadata("meta").await.unwrap();
    assert_eq!(one.metadata.labels.unwrap()["app"], "m");
    let list = pods
        .list_metadata(&ListParams::default().labels("app=m"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("meta"));
    let patched = pods
        .patch_metadata(
            "meta",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"seen": "yes"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.annotations.unwrap()["seen"], "yes");
    let types = patched.types.expect("the answer names its type");
    assert_eq!(
        (types.kind.as_str(), types.api_version.as_str()),
        ("PartialObjectMetadata", "meta.k8s.io/v1"),
        "a metadata patch is answered with metadata only"
    );
}

#[tokio::test]
async fn ephemeral_containers_are_added_through_their_subresource() {
    let (_server, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    create(&pods, json!({"metadata": {"name": "debugme"},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "60"]}]}}))
    .await;
    let initial = pods.get_ephemeral_containers("debugme").await.unwrap();
    assert_eq!(initial.spec.unwrap().ephemeral_containers, None);

    let first =
        json!({"name": "debugger1", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 2"]});
    let replace: Pod = serde_json::from_value(
        json!({"metadata": {"name": "debugme"}, "spec": {"containers": [], "ephemeralContainers": [first]}}),
    )
    .unwrap();
    let replaced = pods
        .replace_ephemeral_containers("debugme", &PostParams::default(), &replace)
        .await
        .unwrap();
    let spec = replaced.spec.unwrap();
    let eph = spec.ephemeral_containers.unwrap();
    assert_eq!(eph.len(), 1);
    assert_eq!(eph[0].name, "debugger1");
    assert_eq!(
        eph[0].termination_message_path.as_deref(),
        Some("/dev/termination-log"),
        "defaulted like any container"
    );
    assert_eq!(
        spec.containers[0].name, "main",
        "the rest of the spec stays"
    );

    let second =
        json!({"name": "debugger2", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 1"]});
    let patch: Pod = serde_json::from_value(
        json!({"spec": {"containers": [], "ephemeralContainers": [second]}}),
    )
    .unwrap();
    let patched = pods
        .patch_ephemeral_containers("debugme", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let mut names: Vec<String> = patched
        .spec
        .unwrap()
        .ephemeral_containers
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    names.sort();
    assert_eq!(names, ["debugger1", "debugger2"], "merged by name");

    // Ephemeral containers can be added, never removed or changed.
    let removal: Pod = serde_json::from_value(
        json!({"metadata": {"name": "debugme"}, "spec": {"containers": [], "ephemeralContainers": []}}),
    )
    .unwrap();
    let status = status_of(
        pods.replace_ephemeral_containers("debugme", &PostParams::default(), &removal)
            .await,
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{status:?}"
    );
    assert!(
        status.message.contains(
            "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debugger"
        ) && status.message.ends_with("\" may not be removed"),
        "{status:?}"
    );
}

#[tokio::test]
async fn certificate_signing_requests_are_approved_through_their_subresource() {
    let (_server, client) = start().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(client);
    create(
        &csrs,
        json!({"metadata": {"name": "fake"}, "spec": {
        "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
        "signerName": "kubernetes.io/kube-apiserver-client",
        "expirationSeconds": 86400, "usages": ["client auth"]}}),
    )
    .await;
    let approval = json!({"status": {"conditions": [{
        "type": "Approved", "status": "True", "reason": "RehearsalTest", "message": "approved by the test"}]}});
    csrs.patch_approval("fake", &PatchParams::default(), &Patch::Merge(approval))
        .await
        .unwrap();
    let after = csrs.get_approval("fake").await.unwrap();
    let conditions = after.status.unwrap().conditions.unwrap();
    assert_eq!(conditions[0].type_, "Approved");
    assert!(
        conditions[0].last_update_time.is_some(),
        "the server stamps lastUpdateTime"
    );
    // The main resource does not write the status, the approval subresource does not write
    // the spec.
    let spec_change = json!({"spec": {"usages": ["server auth"]}, "status": {"conditions": []}});
    let via_approval = csrs
        .patch_approval("fake", &PatchParams::default(), &Patch::Merge(spec_change))
        .await
        .unwrap();
    assert_eq!(via_approval.spec.usages.unwrap(), ["client auth"]);
    assert!(
        via_approval
            .status
            .unwrap()
            .conditions
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn custom_resources_scale_through_their_subresource() {
    let (_server, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    create(&crds, json!({"metadata": {"name": "foos.clux.dev"}, "spec": {
        "group": "clux.dev", "scope": "Namespaced",
        "names": {"plural": "foos", "singular": "foo", "kind": "Foo"},
        "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}}]}}))
    .await;
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("clux.dev", "v1", "Foo"), "foos");
    let foos: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let foo: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "clux.dev/v1", "kind": "Foo", "metadata": {"name": "baz"}, "spec": {"replicas": 1}}))
    .unwrap();
    within(
        "creating the custom resource",
        foos.create(&PostParams::default(), &foo),
    )
    .await
    .unwrap();
    let scale = foos.get_scale("baz").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(1));
    let scaled = foos
        .patch_scale(
            "baz",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(2));
    let after = foos.get("baz").await.unwrap();
    assert_eq!(after.data["spec"]["replicas"], 2);
}

/// kube-runtime's event recorder test publishes an event about the `scheduler`
/// ComponentStatus: the deprecated, read-only list a control plane still serves.
#[tokio::test]
async fn component_statuses_are_listed_and_read_only() {
    use k8s_openapi::api::core::v1::ComponentStatus;
    let (_server, client) = start().await;
    let statuses: Api<ComponentStatus> = Api::all(client);
    let names: Vec<String> = statuses
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
    let scheduler = statuses.get("scheduler").await.unwrap();
    let healthy = &scheduler.conditions.unwrap()[0];
    assert_eq!(
        (healthy.type_.as_str(), healthy.status.as_str()),
        ("Healthy", "True")
    );
    let status = status_of(
        statuses
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "mine"}})).unwrap(),
            )
            .await,
    );
    assert_eq!(status.code, 405, "{status:?}");
}

/// An APIService a client registers (an aggregated API) is kept while the server's own
/// APIServices follow the served groups (a new CRD group adds one).
#[tokio::test]
async fn registered_api_services_survive_the_aggregators_sync() {
    let (_server, client) = start().await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService"),
        "apiservices",
    );
    let services: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let wardle: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1alpha1.wardle.example.com"},
        "spec": {"group": "wardle.example.com", "version": "v1alpha1",
            "service": {"name": "api", "namespace": "wardle", "port": 443},
            "groupPriorityMinimum": 1000, "versionPriority": 15, "insecureSkipTLSVerify": true}}))
    .unwrap();
    services
        .create(&PostParams::default(), &wardle)
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    create(&crds, json!({"metadata": {"name": "bars.example.dev"}, "spec": {
        "group": "example.dev", "scope": "Namespaced",
        "names": {"plural": "bars", "singular": "bar", "kind": "Bar"},
        "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}))
    .await;
    let names: Vec<String> = services
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|a| a.metadata.name)
        .collect();
    assert!(names.contains(&"v1.example.dev".to_string()), "{names:?}");
    assert!(
        names.contains(&"v1alpha1.wardle.example.com".to_string()),
        "{names:?}"
    );
}
