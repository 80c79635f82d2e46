//! kube-rs against the embedded API server over real HTTP: typed CRUD, conflicts, dynamic
//! objects of a CRD, watchers, await_condition, finalizers, garbage collection, status
//! isolation, selectors and expired resourceVersions.

mod common;

use common::{start, start_with, status_of, within};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, PropagationPolicy, WatchEvent, WatchParams,
};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use rehearsal_apiserver::ApiServerConfig;
use serde_json::json;

const PP: PatchParams = PatchParams {
    dry_run: false,
    force: false,
    field_manager: None,
    field_validation: None,
};

fn configmap(name: &str, data: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

#[tokio::test]
async fn typed_configmap_crud_with_server_metadata() {
    let (_server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = cms
        .create(&PostParams::default(), &configmap("one", json!({"a": "1"})))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(
        meta.uid.as_deref().is_some_and(|u| u.len() == 36),
        "uid set: {meta:?}"
    );
    assert!(
        meta.creation_timestamp.is_some(),
        "creationTimestamp set: {meta:?}"
    );
    assert_eq!(meta.generation, Some(1));
    assert_eq!(meta.namespace.as_deref(), Some("default"));

    let got = cms.get("one").await.unwrap();
    assert_eq!(got.data.unwrap()["a"], "1");

    let dup = status_of(
        cms.create(&PostParams::default(), &configmap("one", json!({})))
            .await,
    );
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(dup.message, "configmaps \"one\" already exists");

    let patched = cms
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.as_ref().unwrap().len(), 2);
    assert_eq!(
        patched.metadata.generation,
        Some(2),
        "data change bumps generation of a spec-less kind"
    );
    let rv = patched.metadata.resource_version.clone();
    let same = cms
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version, rv,
        "a no-op patch keeps the resourceVersion"
    );

    let listed = cms.list(&ListParams::default()).await.unwrap();
    // Every namespace also holds the cluster CA's ConfigMap, as on a real cluster.
    let names: Vec<_> = listed
        .items
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();
    assert_eq!(names, ["kube-root-ca.crt", "one"]);
    assert!(listed.metadata.resource_version.is_some());

    cms.delete("one", &DeleteParams::default()).await.unwrap();
    let missing = status_of(cms.get("one").await);
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));
    assert_eq!(missing.message, "configmaps \"one\" not found");
}

#[tokio::test]
async fn stale_update_conflicts_and_generate_name_works() {
    let (_server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut generated: ConfigMap =
        serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    generated = cms
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let name = generated.metadata.name.clone().unwrap();
    assert!(
        name.starts_with("gen-") && name.len() == 9,
        "generated name {name}"
    );

    let mut first = cms.get(&name).await.unwrap();
    let mut second = first.clone();
    first.data = Some([("k".to_string(), "first".to_string())].into());
    cms.replace(&name, &PostParams::default(), &first)
        .await
        .unwrap();
    second.data = Some([("k".to_string(), "second".to_string())].into());
    let conflict = status_of(cms.replace(&name, &PostParams::default(), &second).await);
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));
    assert!(conflict.message.starts_with(&format!(
        "Operation cannot be fulfilled on configmaps \"{name}\""
    )));
}

#[tokio::test]
async fn pods_get_defaults_and_missing_namespace_is_404() {
    let (_server, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p1", "labels": {"app": "mc"}},
        "spec": {"containers": [{"name": "game", "image": "fixture/game:1"}]}
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(
        spec.containers[0].termination_message_path.as_deref(),
        Some("/dev/termination-log")
    );
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Pending"));

    let nowhere: Api<Pod> = Api::namespaced(client, "nope");
    let missing = status_of(nowhere.create(&PostParams::default(), &pod).await);
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "namespaces \"nope\" not found")
    );
}

#[tokio::test]
async fn label_and_field_selectors_filter_lists() {
    let (_server, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for (name, app, node) in [("a", "mc", "n1"), ("b", "mc", "n2"), ("c", "web", "n1")] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": app, "tier": if name == "a" { "x" } else { "y" }}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i:1"}]}
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let names = |list: kube::core::ObjectList<Pod>| -> Vec<String> {
        list.items
            .into_iter()
            .map(|p| p.metadata.name.unwrap())
            .collect()
    };
    assert_eq!(
        names(
            pods.list(&ListParams::default().labels("app=mc"))
                .await
                .unwrap()
        ),
        ["a", "b"]
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().labels("app in (web),tier"))
                .await
                .unwrap()
        ),
        ["c"]
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().labels("tier notin (x),app!=web"))
                .await
                .unwrap()
        ),
        ["b"]
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().labels("!tier"))
                .await
                .unwrap()
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().fields("spec.nodeName=n1"))
                .await
                .unwrap()
        ),
        ["a", "c"]
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().fields("metadata.name!=a,status.phase=Pending"))
                .await
                .unwrap()
        ),
        ["b", "c"]
    );
    let bad = status_of(pods.list(&ListParams::default().labels("app in mc")).await);
    assert_eq!((bad.code, bad.reason.as_str()), (400, "BadRequest"));
    let bad = status_of(
        pods.list(&ListParams::default().fields("spec.bogus=1"))
            .await,
    );
    assert_eq!(bad.code, 400);
}

fn crd(status: bool) -> CustomResourceDefinition {
    let mut version = json!({
        "name": "v1alpha1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "required": ["templateRef"], "properties": {
                "templateRef": {"type": "object", "properties": {"name": {"type": "string"}}},
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "suspend": {"type": "boolean"}
            }},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }}},
        "additionalPrinterColumns": [{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}]
    });
    if status {
        version["subresources"] = json!({"status": {}});
    }
    serde_json::from_value(json!({
        "metadata": {"name": "gameservers.test.rehearsal"},
        "spec": {"group": "test.rehearsal", "scope": "Namespaced",
                 "names": {"plural": "gameservers", "singular": "gameserver", "kind": "GameServer", "shortNames": ["gs"]},
                 "versions": [version]}
    }))
    .unwrap()
}

async fn register_crd(client: &kube::Client, status: bool) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd(status))
        .await
        .unwrap();
    let established = await_condition(
        crds,
        "gameservers.test.rehearsal",
        conditions::is_crd_established(),
    );
    within("the CRD to be established", established)
        .await
        .unwrap();
    let gvk = GroupVersionKind::gvk("test.rehearsal", "v1alpha1", "GameServer");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "gameservers");
    Api::namespaced_with(client.clone(), "default", &resource)
}

fn game_server(name: &str, spec: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "test.rehearsal/v1alpha1", "kind": "GameServer",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

#[tokio::test]
async fn dynamic_objects_of_a_crd_are_validated_defaulted_and_pruned() {
    let (_server, client) = start().await;
    let gs = register_crd(&client, true).await;
    let created = gs
        .create(
            &PostParams::default(),
            &game_server("mc1", json!({"templateRef": {"name": "t"}, "junk": 1})),
        )
        .await
        .unwrap();
    assert_eq!(
        created.data["spec"]["replicas"], 1,
        "default applied: {:?}",
        created.data
    );
    assert!(
        created.data["spec"].get("junk").is_none(),
        "unknown field pruned: {:?}",
        created.data
    );

    let invalid = status_of(
        gs.create(
            &PostParams::default(),
            &game_server("bad", json!({"replicas": 2})),
        )
        .await,
    );
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        invalid.message,
        "GameServer.test.rehearsal \"bad\" is invalid: spec.templateRef: Required value"
    );
    let causes = invalid.details.unwrap().causes;
    assert_eq!(causes[0].field, "spec.templateRef");
    assert_eq!(causes[0].reason, "FieldValueRequired");

    let smp = status_of(
        gs.patch(
            "mc1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"suspend": true}})),
        )
        .await,
    );
    assert_eq!(smp.code, 415);

    let listed = gs.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);

    // Deleting the CRD removes its objects and stops serving the resource.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("gameservers.test.rehearsal", &DeleteParams::default())
        .await
        .unwrap();
    let gone = status_of(gs.list(&ListParams::default()).await);
    assert_eq!(gone.code, 404);
}

#[tokio::test]
async fn status_subresource_is_isolated_from_main_writes() {
    let (_server, client) = start().await;
    let gs = register_crd(&client, true).await;
    let created = gs
        .create(
            &PostParams::default(),
            &game_server("mc1", json!({"templateRef": {"name": "t"}})),
        )
        .await
        .unwrap();
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create"
    );
    let pp = PatchParams::default();
    let after_status = gs
        .patch_status(
            "mc1",
            &pp,
            &Patch::Merge(json!({"status": {"phase": "Running"}, "spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(after_status.data["status"]["phase"], "Running");
    assert_eq!(
        after_status.data["spec"]["replicas"], 1,
        "status writes ignore spec"
    );
    assert_eq!(
        after_status.metadata.generation,
        Some(1),
        "status writes keep the generation"
    );

    let after_main = gs
        .patch(
            "mc1",
            &pp,
            &Patch::Merge(json!({"status": {"phase": "Failed"}, "spec": {"replicas": 0}})),
        )
        .await
        .unwrap();
    assert_eq!(
        after_main.data["status"]["phase"], "Running",
        "main writes ignore status"
    );
    assert_eq!(after_main.data["spec"]["replicas"], 0);
    assert_eq!(
        after_main.metadata.generation,
        Some(2),
        "spec change bumps the generation"
    );
}

#[tokio::test]
async fn watcher_sees_added_modified_and_deleted() {
    let (_server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &configmap("before", json!({})))
        .await
        .unwrap();
    let mut events = watcher(
        cms.clone(),
        watcher::Config::default().labels("watched=yes"),
    )
    .touched_objects()
    .boxed();
    let writer = async {
        let mut cm = configmap("w1", json!({"v": "1"}));
        cm.metadata.labels = Some([("watched".to_string(), "yes".to_string())].into());
        cms.create(&PostParams::default(), &cm).await.unwrap();
        cms.patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "2"}})),
        )
        .await
        .unwrap();
    };
    let reader = async {
        let mut seen = Vec::new();
        while let Some(cm) = events.try_next().await.unwrap() {
            seen.push(
                cm.data
                    .unwrap_or_default()
                    .get("v")
                    .cloned()
                    .unwrap_or_default(),
            );
            if seen.last().map(String::as_str) == Some("2") {
                break;
            }
        }
        seen
    };
    let (_, seen) = within("the watcher to see w1 at v=2", async {
        tokio::join!(writer, reader)
    })
    .await;
    assert_eq!(seen.last().unwrap(), "2", "saw {seen:?}");
    assert!(!seen.is_empty());

    // Raw watch: deletion arrives as DELETED.
    let stream = cms
        .watch(&WatchParams::default().fields("metadata.name=before"), "0")
        .await
        .unwrap();
    let mut stream = stream.boxed();
    let first = within("the synthetic ADDED", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(first, WatchEvent::Added(_)),
        "first event {first:?}"
    );
    cms.delete("before", &DeleteParams::default())
        .await
        .unwrap();
    let next = within("the DELETED event", stream.try_next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(next, WatchEvent::Deleted(_)),
        "second event {next:?}"
    );
}

#[tokio::test]
async fn await_condition_wakes_on_status_change() {
    let (_server, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let waiter = tokio::spawn(await_condition(
        pods.clone(),
        "p",
        conditions::is_pod_running(),
    ));
    pods.patch_status(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
    let pod = within("pod p to be Running", waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Running"));
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (_server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = configmap("held", json!({}));
    cm.metadata.finalizers = Some(vec!["rehearsal.test/hold".into()]);
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let uid = created.metadata.uid.unwrap();
    let deleted = cms.delete("held", &DeleteParams::default()).await.unwrap();
    let pending = deleted
        .left()
        .expect("the object comes back while finalizers remain");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert!(
        cms.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );

    let gone = await_condition(cms.clone(), "held", conditions::is_deleted(&uid));
    let unfinalize = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    let release = cms.patch("held", &PP, &unfinalize);
    let (gone, released) =
        within("held to be deleted", async { tokio::join!(gone, release) }).await;
    released.unwrap();
    gone.unwrap();
    assert_eq!(status_of(cms.get("held").await).code, 404);
}

fn owned_by(name: &str, owner: &ConfigMap, finalizer: Option<&str>) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "finalizers": finalizer.map(|f| vec![f]).unwrap_or_default(),
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
                                 "uid": owner.metadata.uid, "controller": true, "blockOwnerDeletion": true}]
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn garbage_collection_background_foreground_and_orphan() {
    let (_server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();

    // Background: the dependent goes with its owner.
    let owner = cms
        .create(&pp, &configmap("owner-bg", json!({})))
        .await
        .unwrap();
    cms.create(&pp, &owned_by("dep-bg", &owner, None))
        .await
        .unwrap();
    cms.delete("owner-bg", &DeleteParams::background())
        .await
        .unwrap();
    assert_eq!(
        status_of(cms.get("dep-bg").await).code,
        404,
        "background GC removed the dependent"
    );

    // A dependent created after its owner is gone (a controller reconciling a stale copy of
    // the owner) is collected too: all its owners are absent.
    let created = cms
        .create(&pp, &owned_by("dep-late", &owner, None))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert_eq!(
        status_of(cms.get("dep-late").await).code,
        404,
        "a dependent whose owners are all gone is collected"
    );
    // One live owner among dead ones keeps it.
    let live = cms
        .create(&pp, &configmap("owner-live", json!({})))
        .await
        .unwrap();
    let mut two = owned_by("dep-two", &owner, None);
    let mut refs = two.metadata.owner_references.clone().unwrap();
    refs.extend(
        owned_by("x", &live, None)
            .metadata
            .owner_references
            .unwrap(),
    );
    refs[1].controller = Some(false);
    two.metadata.owner_references = Some(refs);
    cms.create(&pp, &two).await.unwrap();
    assert!(cms.get("dep-two").await.is_ok(), "a live owner keeps it");

    // Orphan: the dependent stays without the ownerReference.
    let owner = cms
        .create(&pp, &configmap("owner-or", json!({})))
        .await
        .unwrap();
    cms.create(&pp, &owned_by("dep-or", &owner, None))
        .await
        .unwrap();
    cms.delete("owner-or", &DeleteParams::orphan())
        .await
        .unwrap();
    let orphan = cms.get("dep-or").await.unwrap();
    assert!(
        orphan
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );

    // Foreground: the owner waits (foregroundDeletion) until its dependent is gone.
    let owner = cms
        .create(&pp, &configmap("owner-fg", json!({})))
        .await
        .unwrap();
    cms.create(
        &pp,
        &owned_by("dep-fg", &owner, Some("rehearsal.test/slow")),
    )
    .await
    .unwrap();
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    cms.delete("owner-fg", &dp).await.unwrap();
    let waiting = cms.get("owner-fg").await.unwrap();
    assert_eq!(
        waiting.metadata.finalizers.unwrap_or_default(),
        ["foregroundDeletion"]
    );
    assert!(
        cms.get("dep-fg")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    let owner_uid = owner.metadata.uid.clone().unwrap();
    let owner_gone = await_condition(cms.clone(), "owner-fg", conditions::is_deleted(&owner_uid));
    let unfinalize = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    let release = cms.patch("dep-fg", &PP, &unfinalize);
    let (gone, released) = within("the foreground owner to go", async {
        tokio::join!(owner_gone, release)
    })
    .await;
    released.unwrap();
    gone.unwrap();
}

#[tokio::test]
async fn namespace_deletion_terminates_then_removes_contents() {
    let (_server, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(
        created.metadata.labels.unwrap()["kubernetes.io/metadata.name"],
        "doomed"
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let mut held = configmap("held", json!({}));
    held.metadata.finalizers = Some(vec!["rehearsal.test/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    cms.create(&PostParams::default(), &configmap("free", json!({})))
        .await
        .unwrap();

    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = namespaces.get("doomed").await.unwrap();
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    assert_eq!(status_of(cms.get("free").await).code, 404);
    let refused = status_of(
        cms.create(&PostParams::default(), &configmap("late", json!({})))
            .await,
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));

    let uid = terminating.metadata.uid.unwrap();
    let gone = await_condition(namespaces.clone(), "doomed", conditions::is_deleted(&uid));
    let unfinalize = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    let release = cms.patch("held", &PP, &unfinalize);
    let (gone, released) = within("namespace doomed to go", async {
        tokio::join!(gone, release)
    })
    .await;
    released.unwrap();
    gone.unwrap();
}

#[tokio::test]
async fn watch_from_an_expired_resource_version_gets_410() {
    let config = ApiServerConfig {
        watch_history: 5,
        ..Default::default()
    };
    let (_server, client) = start_with(config).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let first = cms
        .create(&PostParams::default(), &configmap("c0", json!({})))
        .await
        .unwrap();
    let old_rv = first.metadata.resource_version.unwrap();
    for i in 1..20 {
        cms.create(
            &PostParams::default(),
            &configmap(&format!("c{i}"), json!({})),
        )
        .await
        .unwrap();
    }
    let mut stream = cms
        .watch(&WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match within("the watch's first event", stream.try_next())
        .await
        .unwrap()
    {
        Some(WatchEvent::Error(status)) => {
            assert_eq!(
                (status.code, status.reason.as_str()),
                (410, "Expired"),
                "{status:?}"
            );
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    // A recent resourceVersion still replays.
    let recent = cms
        .get("c18")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &recent)
        .await
        .unwrap()
        .boxed();
    match within("the replayed event", stream.try_next())
        .await
        .unwrap()
    {
        Some(WatchEvent::Added(cm)) => assert_eq!(cm.metadata.name.as_deref(), Some("c19")),
        other => panic!("expected ADDED c19, got {other:?}"),
    }
}

#[tokio::test]
async fn deletecollection_preconditions_apply_and_secret_string_data() {
    let (_server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (name, app) in [("x1", "x"), ("x2", "x"), ("y1", "y")] {
        let mut cm = configmap(name, json!({}));
        cm.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let deleted = cms
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("app=x"),
        )
        .await
        .unwrap();
    let names: Vec<String> = deleted
        .left()
        .expect("a list of deleted objects")
        .items
        .into_iter()
        .map(|c| c.metadata.name.unwrap())
        .collect();
    assert_eq!(names, ["x1", "x2"]);
    let left: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.metadata.name.unwrap())
        .collect();
    assert_eq!(left, ["kube-root-ca.crt", "y1"]);

    // Preconditions: a wrong uid or resourceVersion refuses the delete.
    let wrong_uid = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("nope".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let refused = status_of(cms.delete("y1", &wrong_uid).await);
    assert_eq!((refused.code, refused.reason.as_str()), (409, "Conflict"));
    assert!(
        refused
            .message
            .contains("Precondition failed: UID in precondition: nope"),
        "{}",
        refused.message
    );
    let current = cms.get("y1").await.unwrap();
    let right = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: current.metadata.uid.clone(),
            resource_version: current.metadata.resource_version.clone(),
        }),
        ..Default::default()
    };
    cms.delete("y1", &right).await.unwrap();

    // Server-side apply, supported simply: creates when missing, merges when present.
    let ssa = PatchParams::apply("rehearsal-test");
    let applied = cms.patch("applied", &ssa, &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1"}}))).await.unwrap();
    assert_eq!(applied.data.unwrap()["a"], "1");
    let applied = cms.patch("applied", &ssa, &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"b": "2"}}))).await.unwrap();
    assert_eq!(applied.data.unwrap().len(), 2);

    // Strategic merge on a built-in: containers merge by name.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "game", "image": "g:1", "env": [{"name": "A", "value": "1"}]},
        {"name": "agent", "image": "a:1"}]}}))
        .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let patched = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"containers": [{"name": "game", "image": "g:2"}]}})),
        )
        .await
        .unwrap();
    let containers = patched.spec.unwrap().containers;
    assert_eq!(
        containers.len(),
        2,
        "strategic merge keeps the agent container"
    );
    assert_eq!(containers[0].image.as_deref(), Some("g:2"));
    assert_eq!(
        containers[0].env.as_ref().unwrap()[0].value.as_deref(),
        Some("1")
    );

    // Secrets fold stringData into base64 data.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "default");
    let secret = serde_json::from_value(
        json!({"metadata": {"name": "repo"}, "stringData": {"password": "pw"}}),
    )
    .unwrap();
    let created = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert_eq!(created.data.unwrap()["password"].0, b"pw");
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
}

#[tokio::test]
async fn bound_pods_are_deleted_gracefully_until_the_kubelet_confirms() {
    let (_server, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "bound"}, "spec": {
        "nodeName": "node-1", "terminationGracePeriodSeconds": 7,
        "containers": [{"name": "c", "image": "i:1"}]}}))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    pods.delete("bound", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = pods.get("bound").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(7));
    // The kubelet's status report does not remove it; its grace-0 delete does.
    pods.patch_status(
        "bound",
        &PP,
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
    assert!(pods.get("bound").await.is_ok());
    let confirm = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(kube::api::Preconditions {
            uid: created.metadata.uid.clone(),
            resource_version: None,
        }),
        ..Default::default()
    };
    pods.delete("bound", &confirm).await.unwrap();
    assert_eq!(status_of(pods.get("bound").await).code, 404);

    // An unbound pod goes at once.
    let unbound: Pod = serde_json::from_value(json!({"metadata": {"name": "unbound"}, "spec": {
        "containers": [{"name": "c", "image": "i:1"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &unbound).await.unwrap();
    pods.delete("unbound", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(status_of(pods.get("unbound").await).code, 404);
}

#[tokio::test]
async fn shutdown_ends_open_watches() {
    let (server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut stream = cms
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &configmap("seen", json!({})))
        .await
        .unwrap();
    let first = within("the ADDED event", stream.try_next()).await.unwrap();
    assert!(matches!(first, Some(WatchEvent::Added(_))), "{first:?}");
    within("the server to shut down", server.shutdown()).await;
    let end = within("the watch to end after shutdown", async {
        loop {
            match stream.try_next().await {
                Ok(Some(_)) => continue,
                other => return other.map(|_| ()),
            }
        }
    })
    .await;
    let _ = end;
    let refused = cms.get("seen").await;
    assert!(
        refused.is_err(),
        "the server no longer answers: {refused:?}"
    );
}

#[tokio::test]
async fn crds_with_rules_beyond_the_cel_subset_are_stored_with_a_warning() {
    let (server, client) = start().await;
    let mut crd = crd(false);
    crd.spec.versions[0]
        .schema
        .as_mut()
        .unwrap()
        .open_api_v3_schema
        .as_mut()
        .unwrap()
        .x_kubernetes_validations = Some(vec![
        serde_json::from_value(json!({"rule": "self.spec.replicas == oldSelf.spec.replicas"}))
            .unwrap(),
    ]);
    let body = serde_json::to_vec(&crd).unwrap();
    let reply = common::raw(
        server.addr(),
        &common::request(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some("application/json"),
            &body,
        ),
    )
    .await;
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    assert!(
        reply
            .head
            .to_ascii_lowercase()
            .contains("warning: 299 - \"x-kubernetes-validations rule is stored but not enforced"),
        "{}",
        reply.head
    );
    let _ = client;
}

#[tokio::test]
async fn crd_and_namespace_guards() {
    let (_server, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut shadow = crd(false);
    shadow.metadata.name = Some("statefulsets.apps".into());
    shadow.spec.group = "apps".into();
    shadow.spec.names.plural = "statefulsets".into();
    let refused = status_of(crds.create(&PostParams::default(), &shadow).await);
    assert_eq!(
        refused.code, 422,
        "a CRD may not shadow a built-in group: {refused:?}"
    );
    let sts: Api<k8s_openapi::api::apps::v1::StatefulSet> =
        Api::namespaced(client.clone(), "default");
    sts.list(&ListParams::default())
        .await
        .expect("statefulsets are still served");

    register_crd(&client, false).await;
    let mut changed = crds.get("gameservers.test.rehearsal").await.unwrap();
    changed.spec.scope = "Cluster".into();
    let refused = status_of(
        crds.replace(
            "gameservers.test.rehearsal",
            &PostParams::default(),
            &changed,
        )
        .await,
    );
    assert_eq!(refused.code, 422);
    assert!(
        refused
            .message
            .contains("spec.scope: Invalid value: \"Cluster\": field is immutable"),
        "{}",
        refused.message
    );

    let namespaces: Api<Namespace> = Api::all(client);
    let refused = status_of(namespaces.delete("default", &DeleteParams::default()).await);
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
}

#[tokio::test]
async fn watch_lists_bookmarks_and_timeouts() {
    let config = ApiServerConfig {
        bookmark_interval: std::time::Duration::from_millis(100),
        ..Default::default()
    };
    let (_server, client) = start_with(config).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    for name in ["a", "b"] {
        cms.create(&PostParams::default(), &configmap(name, json!({})))
            .await
            .unwrap();
    }

    // Watch-list: ADDED for each object, then the initial-events-end bookmark.
    let mut stream = cms
        .watch(&WatchParams::streaming_lists(), "")
        .await
        .unwrap()
        .boxed();
    let mut added = Vec::new();
    let end = within("the initial-events-end bookmark", async {
        loop {
            match stream.try_next().await.unwrap() {
                Some(WatchEvent::Added(cm)) => added.push(cm.metadata.name.unwrap()),
                Some(WatchEvent::Bookmark(b)) => return b,
                other => panic!("unexpected {other:?}"),
            }
        }
    })
    .await;
    assert_eq!(added, ["a", "b", "kube-root-ca.crt"]);
    assert_eq!(
        end.metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(end.types.kind, "ConfigMap");

    // Periodic bookmarks follow the events: after ADDED c, one carries c's resourceVersion.
    let rv = cms
        .create(&PostParams::default(), &configmap("c", json!({})))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut seen_c = false;
    let mut bookmarks = Vec::new();
    within("a periodic bookmark at c's resourceVersion", async {
        loop {
            match stream.try_next().await.unwrap() {
                Some(WatchEvent::Added(cm)) => seen_c |= cm.metadata.name.as_deref() == Some("c"),
                Some(WatchEvent::Bookmark(b)) => {
                    bookmarks.push(b.metadata.resource_version.clone());
                    if b.metadata.resource_version == rv {
                        assert!(seen_c, "the bookmark at {rv} came before ADDED c");
                        return;
                    }
                }
                other => panic!("unexpected {other:?} after bookmarks {bookmarks:?}"),
            }
        }
    })
    .await;

    // timeoutSeconds ends the stream.
    let mut timed = cms
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    let added = within("the watch to time out", async {
        let mut added = 0;
        while let Some(event) = timed.try_next().await.unwrap() {
            if matches!(event, WatchEvent::Added(_)) {
                added += 1;
            }
        }
        added
    })
    .await;
    assert_eq!(
        added, 4,
        "four synthetic ADDED events (three and kube-root-ca.crt), then the end"
    );
}

#[tokio::test]
async fn dry_run_validates_without_storing() {
    let (_server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answered = cms
        .create(&dry, &configmap("ghost", json!({"a": "1"})))
        .await
        .unwrap();
    assert!(
        answered.metadata.uid.is_some(),
        "the answer looks created: {:?}",
        answered.metadata
    );
    assert_eq!(
        status_of(cms.get("ghost").await).code,
        404,
        "nothing was stored"
    );

    let real = cms
        .create(
            &PostParams::default(),
            &configmap("real", json!({"a": "1"})),
        )
        .await
        .unwrap();
    let dry_patch = PatchParams {
        dry_run: true,
        ..Default::default()
    };
    let answered = cms
        .patch(
            "real",
            &dry_patch,
            &Patch::Merge(json!({"data": {"a": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(answered.data.unwrap()["a"], "2");
    let stored = cms.get("real").await.unwrap();
    assert_eq!(stored.data.unwrap()["a"], "1");
    assert_eq!(
        stored.metadata.resource_version,
        real.metadata.resource_version
    );

    let dry_delete = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    cms.delete("real", &dry_delete).await.unwrap();
    assert!(
        cms.get("real").await.is_ok(),
        "a dry-run delete keeps the object"
    );

    let gs = register_crd(&client, false).await;
    let invalid = status_of(gs.create(&dry, &game_server("bad", json!({}))).await);
    assert_eq!(invalid.code, 422, "dry runs still validate");
}

/// The kubeconfig is serialised YAML, not text with names pasted in: a context name with YAML
/// syntax in it survives, and kube reads the file back into a client the server accepts.
#[tokio::test]
async fn the_kubeconfig_is_yaml_that_kube_reads_back() {
    let (server, _) = start().await;
    let name = "team: a # b";
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml(name))
        .expect("kube parses the kubeconfig");
    assert_eq!(kubeconfig.current_context.as_deref(), Some(name));
    let options = kube::config::KubeConfigOptions {
        context: Some(name.to_string()),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("the kubeconfig's context resolves");
    let client = kube::Client::try_from(config).expect("kube client builds");
    let namespaces: Api<Namespace> = Api::all(client);
    within("a namespace list", namespaces.list(&ListParams::default()))
        .await
        .expect("the kubeconfig's token is accepted");
}
