//! The rest of the API surface operators and their charts use: the `scale` subresource of
//! custom resources (CRD `subresources.scale` paths, via kube-rs and `kubectl scale`) and
//! metadata-only responses (`PartialObjectMetadata` for get, list and watch).

mod common;

use std::process::Stdio;

use common::{start, within};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.size",
                    "statusReplicasPath": ".status.running",
                    "labelSelectorPath": ".status.selector",
                }},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    "status": {"type": "object", "properties": {
                        "running": {"type": "integer"}, "selector": {"type": "string"}}},
                }}},
            }],
        },
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_resources_scale_through_their_crd_paths() {
    let (server, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let w: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 2},
    }))
    .unwrap();
    widgets.create(&PostParams::default(), &w).await.unwrap();
    widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"running": 2, "selector": "app=w1"}})),
        )
        .await
        .unwrap();

    let scale = widgets.get_scale("w1").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    let status = scale.status.unwrap();
    assert_eq!(
        (status.replicas, status.selector.as_deref()),
        (2, Some("app=w1"))
    );
    widgets
        .patch_scale(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(widgets.get("w1").await.unwrap().data["spec"]["size"], 5);

    // kubectl scale of a custom resource.
    let dir = tempfile::tempdir().unwrap();
    server
        .write_kubeconfig(dir.path().join("kubeconfig"))
        .unwrap();
    let kubectl = std::env::var("REHEARSAL_KUBECTL")
        .unwrap_or_else(|_| "/opt/rehearsal-kubectl/bin/kubectl".into());
    let child = tokio::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .args(["scale", "widget/w1", "--replicas=3"])
        .env("HOME", dir.path())
        .env("KUBECACHEDIR", dir.path().join("cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = within("kubectl scale", child.wait_with_output())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "widget.example.com/w1 scaled"
    );
    assert_eq!(widgets.get("w1").await.unwrap().data["spec"]["size"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn metadata_only_get_list_and_watch() {
    let (_server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "m1", "labels": {"app": "x"}}, "data": {"big": "payload"},
    }))
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();

    let one = cms.get_metadata("m1").await.unwrap();
    assert_eq!(one.types.as_ref().unwrap().kind, "PartialObjectMetadata");
    assert_eq!(one.metadata.labels.unwrap()["app"], "x");
    let list = cms.list_metadata(&ListParams::default()).await.unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|i| i.metadata.name.clone())
        .collect();
    assert!(names.contains(&"m1".to_string()), "{names:?}");
    assert!(
        list.items
            .iter()
            .all(|i| i.types.as_ref().unwrap().kind == "PartialObjectMetadata")
    );

    let rv = list.metadata.resource_version.unwrap();
    let mut events = cms
        .watch_metadata(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    cms.patch(
        "m1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "y"}}})),
    )
    .await
    .unwrap();
    let event = within("a metadata watch event", events.try_next())
        .await
        .unwrap()
        .unwrap();
    match event {
        WatchEvent::Modified(obj) => {
            assert_eq!(obj.types.unwrap().kind, "PartialObjectMetadata");
            assert_eq!(obj.metadata.labels.unwrap()["app"], "y");
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }
}
