//! Strategic merge patch on built-in kinds, from the patch shapes kubectl 1.37 sends.
//! The module is included by path so these tests run whether or not `lib.rs` declares it.

#[allow(dead_code)]
#[path = "../src/smp.rs"]
mod smp;

use serde_json::{Value, json};
use smp::{ListStrategy, list_strategy, strategic_merge};

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "mc", "tier": "game"}, "finalizers": ["a", "b"]},
        "spec": {
            "containers": [
                {"name": "c", "image": "game:1",
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "x"}],
                 "ports": [{"containerPort": 25565, "protocol": "TCP"}],
                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                {"name": "sidecar", "image": "agent:1"}
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}],
            "tolerations": [{"key": "a", "operator": "Exists"}]
        }
    })
}

fn apply(original: &Value, patch: Value, kind: &str) -> Value {
    strategic_merge(original, &patch, kind).unwrap_or_else(|e| panic!("patch {patch} failed: {e}"))
}

#[test]
fn kubectl_apply_second_time_changes_one_env_value() {
    // The exact shape from the facts file: kubectl apply of a changed env value.
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "c"}],
        "containers": [{"$setElementOrder/env": [{"name": "A"}], "env": [{"name": "A", "value": "2"}], "name": "c"}]}});
    let out = apply(&pod(), patch, "Pod");
    let c = &out["spec"]["containers"];
    assert_eq!(
        c[0]["env"],
        json!([{"name": "A", "value": "2"}, {"name": "B", "value": "x"}])
    );
    assert_eq!(c[0]["image"], "game:1");
    assert_eq!(c[1]["name"], "sidecar", "server-only container kept: {out}");
    assert_eq!(out["spec"]["volumes"], pod()["spec"]["volumes"]);
}

#[test]
fn list_items_merge_on_their_keys_and_new_items_are_appended() {
    let patch = json!({"spec": {"containers": [
        {"name": "sidecar", "image": "agent:2"},
        {"name": "new", "image": "n:1"},
        {"name": "c", "ports": [{"containerPort": 25575, "name": "rcon"}],
         "volumeMounts": [{"mountPath": "/data", "readOnly": true}]}
    ]}});
    let out = apply(&pod(), patch, "Pod");
    let names: Vec<&str> = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // Patch order wins for items the patch names.
    assert_eq!(names, ["sidecar", "new", "c"]);
    let c = &out["spec"]["containers"][2];
    // As upstream: a new item lands before the server-only ones (mergeSortedSlice cannot
    // place it in the live order, so the patch side wins).
    assert_eq!(c["image"], "game:1");
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 25575, "name": "rcon"}, {"containerPort": 25565, "protocol": "TCP"}])
    );
    assert_eq!(
        c["volumeMounts"],
        json!([{"name": "data", "mountPath": "/data", "readOnly": true}])
    );
    assert_eq!(out["spec"]["containers"][0]["image"], "agent:2");
}

#[test]
fn lists_without_a_merge_key_are_replaced() {
    let patch = json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}],
        "containers": [{"name": "c", "args": ["--x"]}]}});
    let out = apply(&pod(), patch, "Pod");
    assert_eq!(
        out["spec"]["tolerations"],
        json!([{"key": "b", "operator": "Exists"}])
    );
    assert_eq!(out["spec"]["containers"][0]["args"], json!(["--x"]));
}

#[test]
fn null_deletes_keys_and_maps_merge() {
    let patch = json!({"metadata": {"labels": {"tier": null, "new": "1"}}, "spec": {"containers": [{"name": "c", "image": null}]}});
    let out = apply(&pod(), patch, "Pod");
    assert_eq!(out["metadata"]["labels"], json!({"app": "mc", "new": "1"}));
    assert!(out["spec"]["containers"][0].get("image").is_none());
}

#[test]
fn patch_delete_removes_a_list_item_and_an_object_field() {
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "c"}],
        "containers": [{"name": "sidecar", "$patch": "delete"},
                       {"name": "c", "env": [{"name": "B", "$patch": "delete"}]}]
    }});
    let out = apply(&pod(), patch, "Pod");
    assert_eq!(out["spec"]["containers"].as_array().unwrap().len(), 1);
    assert_eq!(
        out["spec"]["containers"][0]["env"],
        json!([{"name": "A", "value": "1"}])
    );

    let out = apply(
        &pod(),
        json!({"metadata": {"labels": {"$patch": "delete"}}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["labels"], json!({}));
}

#[test]
fn patch_replace_replaces_a_map_or_a_list() {
    let out = apply(
        &pod(),
        json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
    let out = apply(
        &pod(),
        json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "s:1"}]}}),
        "Pod",
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "solo", "image": "s:1"}])
    );
    let out = apply(
        &pod(),
        json!({"metadata": {"labels": {"$patch": "merge", "x": "y"}}}),
        "Pod",
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "mc", "tier": "game", "x": "y"})
    );
}

#[test]
fn retain_keys_drops_fields_not_listed() {
    let patch = json!({"spec": {"volumes": [{"name": "data", "$retainKeys": ["emptyDir", "name"], "emptyDir": {}}]}});
    let out = apply(&pod(), patch, "Pod");
    assert_eq!(
        out["spec"]["volumes"],
        json!([{"name": "data", "emptyDir": {}}])
    );
}

#[test]
fn finalizers_merge_as_a_primitive_list_and_delete_from_primitive_list() {
    let out = apply(
        &pod(),
        json!({"metadata": {"finalizers": ["c", "a"]}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
    let out = apply(
        &pod(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    let out = apply(
        &pod(),
        json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"], "$deleteFromPrimitiveList/finalizers": ["x"]}}),
        "Pod",
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
    let out = apply(&pod(), json!({"metadata": {"finalizers": null}}), "Pod");
    assert!(out["metadata"].get("finalizers").is_none());
    // Namespace spec.finalizers has no strategy: replaced.
    let ns = json!({"spec": {"finalizers": ["kubernetes"]}});
    assert_eq!(
        apply(&ns, json!({"spec": {"finalizers": ["x"]}}), "Namespace")["spec"]["finalizers"],
        json!(["x"])
    );
}

#[test]
fn set_element_order_reorders_and_keeps_server_only_items_in_place() {
    // Upstream's mergeSortedSlice: a server-only item goes before the first patch item that
    // comes after it in the live list.
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "s"}, {"name": "b"}]}});
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}});
    let out = apply(&original, patch, "Pod");
    let names: Vec<&str> = out["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["s", "b", "a"]);
}

#[test]
fn workload_templates_and_status_conditions_use_the_same_keys() {
    let sts = json!({"kind": "StatefulSet", "spec": {"template": {"spec": {
        "containers": [{"name": "game", "image": "g:1", "env": [{"name": "EULA", "value": "true"}]}]}}},
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Other", "status": "True"}]}});
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "game", "image": "g:2"}]}}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let out = apply(&sts, patch, "StatefulSet");
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "game", "image": "g:2", "env": [{"name": "EULA", "value": "true"}]}])
    );
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "Other", "status": "True"}])
    );

    let svc = json!({"spec": {"ports": [{"port": 25565, "name": "game"}, {"port": 25575, "name": "rcon"}]}});
    let out = apply(
        &svc,
        json!({"spec": {"ports": [{"port": 25575, "targetPort": 25575}]}}),
        "Service",
    );
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 25565, "name": "game"}, {"port": 25575, "name": "rcon", "targetPort": 25575}])
    );

    let owned = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}});
    let out = apply(
        &owned,
        json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}}),
        "ConfigMap",
    );
    assert_eq!(
        out["metadata"]["ownerReferences"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn config_map_data_merges_like_a_map() {
    let cm = json!({"data": {"a": "1", "b": "2"}});
    let out = apply(&cm, json!({"data": {"b": null, "c": "3"}}), "ConfigMap");
    assert_eq!(out["data"], json!({"a": "1", "c": "3"}));
}

#[test]
fn directives_never_reach_the_stored_object() {
    let original = json!({"metadata": {"name": "p"}});
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "c"}],
        "containers": [{"name": "c", "env": [{"name": "X", "value": "1"}, {"name": "Y", "$patch": "delete"}]}]}});
    let out = apply(&original, patch, "Pod");
    assert_eq!(
        out["spec"],
        json!({"containers": [{"name": "c", "env": [{"name": "X", "value": "1"}]}]})
    );
    assert!(!out.to_string().contains('$'), "{out}");
}

#[test]
fn malformed_patches_are_errors_not_panics() {
    for (patch, needle) in [
        (json!([1, 2]), "must be a JSON object"),
        (
            json!({"metadata": {"$patch": "explode"}}),
            "unknown patch type",
        ),
        (
            json!({"spec": {"containers": [{"$patch": "delete"}]}}),
            "merge key",
        ),
        (
            json!({"spec": {"containers": [{"image": "no-name"}]}}),
            "merge key",
        ),
        (
            json!({"spec": {"$setElementOrder/containers": "c"}}),
            "must be a list",
        ),
        (json!({"metadata": {"$retainKeys": "x"}}), "$retainKeys"),
        (json!({"spec": {"$bogus": 1}}), "unknown directive"),
    ] {
        let err = strategic_merge(&pod(), &patch, "Pod").expect_err(&patch.to_string());
        assert!(err.contains(needle), "{patch}: {err}");
    }
}

#[test]
fn the_strategy_table() {
    assert_eq!(
        list_strategy("Pod", &["spec"], "containers"),
        ListStrategy::MergeKey("name")
    );
    assert_eq!(
        list_strategy("Pod", &["spec", "containers"], "ports"),
        ListStrategy::MergeKey("containerPort")
    );
    assert_eq!(
        list_strategy("Service", &["spec"], "ports"),
        ListStrategy::MergeKey("port")
    );
    assert_eq!(
        list_strategy("Pod", &["spec"], "tolerations"),
        ListStrategy::Replace
    );
    assert_eq!(
        list_strategy("Pod", &["metadata"], "finalizers"),
        ListStrategy::MergePrimitive
    );
    assert_eq!(
        list_strategy(
            "StatefulSet",
            &["spec", "template", "metadata"],
            "finalizers"
        ),
        ListStrategy::MergePrimitive
    );
    assert_eq!(
        list_strategy("Namespace", &["spec"], "finalizers"),
        ListStrategy::Replace
    );
    assert_eq!(
        list_strategy("Job", &["status"], "conditions"),
        ListStrategy::MergeKey("type")
    );
}
