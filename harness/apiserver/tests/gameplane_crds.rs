//! The real Gameplane CRDs (shared reference data, not part of the repository) are accepted
//! over HTTP and enforce their schemas. Skips, saying so, when the reference directory is
//! absent, as it is in a user's clone.

mod common;

use std::path::Path;

use common::{start, status_of, within};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

const REFERENCE: &str = "/work/shared/reference/gameplane-crds";

fn api(client: &kube::Client, kind: &str, plural: &str, namespaced: bool) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("gameplane.local", "v1alpha1", kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    if namespaced {
        Api::namespaced_with(client.clone(), "default", &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    }
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one server and the real CRDs' objects, asserted in order"
)]
async fn real_gameplane_crds_are_served_and_enforced() {
    let dir = Path::new(REFERENCE);
    if !dir.is_dir() {
        eprintln!(
            "SKIPPED: {REFERENCE} is absent (shared reference data is not in the repository)"
        );
        return;
    }
    let (_server, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
    {
        let text = std::fs::read_to_string(path).unwrap();
        let crd: CustomResourceDefinition = serde_yaml::from_str(&text).unwrap();
        let name = crd.metadata.name.clone().unwrap();
        crds.create(&PostParams::default(), &crd)
            .await
            .unwrap_or_else(|e| panic!("{} refused: {e}", path.display()));
        names.push(name);
    }
    assert!(names.len() >= 7, "reference CRDs found: {names:?}");
    for name in &names {
        within(
            &format!("{name} to be established"),
            await_condition(crds.clone(), name, conditions::is_crd_established()),
        )
        .await
        .unwrap();
    }

    let servers = api(&client, "GameServer", "gameservers", true);
    let server: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "GameServer",
        "metadata": {"name": "mc1"},
        "spec": {"templateRef": {"name": "vanilla"}, "version": "1.21", "notInSchema": true}
    }))
    .unwrap();
    let created = servers
        .create(&PostParams::default(), &server)
        .await
        .unwrap();
    assert!(
        created.data["spec"].get("notInSchema").is_none(),
        "unknown fields are pruned: {:?}",
        created.data
    );

    let invalid: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "GameServer",
        "metadata": {"name": "x"}, "spec": {"version": "1.21"}
    }))
    .unwrap();
    let refused = status_of(servers.create(&PostParams::default(), &invalid).await);
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        refused.message,
        "GameServer.gameplane.local \"x\" is invalid: spec.templateRef: Required value"
    );

    let templates = api(&client, "GameTemplate", "gametemplates", false);
    let template: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "GameTemplate",
        "metadata": {"name": "vanilla"},
        "spec": {"displayName": "Vanilla", "game": "minecraft", "image": "fixture/game:1", "version": "1.21"}
    }))
    .unwrap();
    templates
        .create(&PostParams::default(), &template)
        .await
        .unwrap();
    let missing: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "GameTemplate",
        "metadata": {"name": "broken"}, "spec": {"game": "minecraft"}
    }))
    .unwrap();
    let refused = status_of(templates.create(&PostParams::default(), &missing).await);
    assert_eq!(refused.code, 422);
    let fields: Vec<String> = refused
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    for field in ["spec.displayName", "spec.image", "spec.version"] {
        assert!(
            fields.iter().any(|f| f == field),
            "{field} reported in {fields:?}"
        );
    }
    assert_eq!(
        templates
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}
