//! The `components.schemas` of the OpenAPI v3 documents, which is what `kubectl explain` reads:
//! each served kind's schema tagged with `x-kubernetes-group-version-kind`, its fields with
//! their descriptions, nested types under `#/components/schemas/…` as kube-apiserver names
//! them (`io.k8s.api.core.v1.Container`). Built-in kinds come from k8s-openapi's schemas (the
//! Kubernetes API's own descriptions); a custom resource's from its CRD's `openAPIV3Schema`.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;

/// The schemas of group version `group`/`version` serving `resources`.
pub fn components(
    group: &str,
    version: &str,
    resources: &[std::sync::Arc<ResourceInfo>],
) -> Map<String, Value> {
    let mut out = builtin_components(group, version, resources);
    for info in resources {
        let Some(raw) = info.custom.as_ref().and_then(|c| c.raw_schema.as_ref()) else {
            continue;
        };
        let mut schema = (**raw).clone();
        if let Value::Object(o) = &mut schema {
            o.insert("x-kubernetes-group-version-kind".into(), json!([gvk(info)]));
        }
        out.insert(custom_name(info), schema);
    }
    out
}

/// `gameplane.local` v1alpha1 `GameTemplate` → `local.gameplane.v1alpha1.GameTemplate`, as
/// kube-apiserver names a custom resource's schema.
fn custom_name(info: &ResourceInfo) -> String {
    let reversed: Vec<&str> = info.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), info.version, info.kind)
}

fn gvk(info: &ResourceInfo) -> Value {
    json!({"group": info.group, "version": info.version, "kind": info.kind})
}

/// The built-in kinds' schemas of a group version, generated once per process (they never
/// change while it runs).
fn builtin_components(
    group: &str,
    version: &str,
    resources: &[std::sync::Arc<ResourceInfo>],
) -> Map<String, Value> {
    static CACHE: OnceLock<Mutex<HashMap<String, Map<String, Value>>>> = OnceLock::new();
    let key = format!("{group}/{version}");
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return found.clone();
    }
    let mut generator: SchemaGenerator = SchemaSettings::openapi3().into_generator();
    let mut kinds = Vec::new();
    for info in resources.iter().filter(|i| i.custom.is_none()) {
        if let Some(name) = builtin(&mut generator, &info.group, &info.kind) {
            kinds.push((name, gvk(info)));
        }
    }
    let mut defs = generator.take_definitions(true);
    for (name, gvk) in kinds {
        if let Some(Value::Object(o)) = defs.get_mut(&name) {
            o.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
        }
    }
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, defs.clone());
    defs
}

/// Adds the schema of built-in kind `kind` of `group` (and of every type it names) to
/// `generator`; its name, or `None` for a kind without one here.
fn builtin(generator: &mut SchemaGenerator, group: &str, kind: &str) -> Option<String> {
    use k8s_openapi::api::{apps, batch, coordination, core, discovery, rbac, storage};
    fn add<T: JsonSchema>(generator: &mut SchemaGenerator) -> Option<String> {
        generator.subschema_for::<T>();
        Some(T::schema_name().into_owned())
    }
    match (group, kind) {
        ("", "Pod") => add::<core::v1::Pod>(generator),
        ("", "Namespace") => add::<core::v1::Namespace>(generator),
        ("", "PersistentVolumeClaim") => add::<core::v1::PersistentVolumeClaim>(generator),
        ("", "PersistentVolume") => add::<core::v1::PersistentVolume>(generator),
        ("", "Service") => add::<core::v1::Service>(generator),
        ("", "Endpoints") => add::<core::v1::Endpoints>(generator),
        ("", "ConfigMap") => add::<core::v1::ConfigMap>(generator),
        ("", "Secret") => add::<core::v1::Secret>(generator),
        ("", "ServiceAccount") => add::<core::v1::ServiceAccount>(generator),
        ("", "Event") => add::<core::v1::Event>(generator),
        ("", "Node") => add::<core::v1::Node>(generator),
        ("", "ReplicationController") => add::<core::v1::ReplicationController>(generator),
        ("apps", "StatefulSet") => add::<apps::v1::StatefulSet>(generator),
        ("apps", "Deployment") => add::<apps::v1::Deployment>(generator),
        ("apps", "ReplicaSet") => add::<apps::v1::ReplicaSet>(generator),
        ("apps", "DaemonSet") => add::<apps::v1::DaemonSet>(generator),
        ("apps", "ControllerRevision") => add::<apps::v1::ControllerRevision>(generator),
        ("batch", "Job") => add::<batch::v1::Job>(generator),
        ("discovery.k8s.io", "EndpointSlice") => add::<discovery::v1::EndpointSlice>(generator),
        ("storage.k8s.io", "StorageClass") => add::<storage::v1::StorageClass>(generator),
        ("coordination.k8s.io", "Lease") => add::<coordination::v1::Lease>(generator),
        ("rbac.authorization.k8s.io", "ClusterRole") => add::<rbac::v1::ClusterRole>(generator),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            add::<rbac::v1::ClusterRoleBinding>(generator)
        }
        ("rbac.authorization.k8s.io", "Role") => add::<rbac::v1::Role>(generator),
        ("rbac.authorization.k8s.io", "RoleBinding") => add::<rbac::v1::RoleBinding>(generator),
        _ => None,
    }
}
