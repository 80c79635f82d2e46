//! Discovery documents: `/version`, aggregated discovery v2 on `/api` and `/apis`, the legacy
//! `APIVersions`/`APIGroupList`/`APIGroup`/`APIResourceList` documents, and the OpenAPI v3
//! index and per-group-version documents that `kubectl apply` reads to decide on
//! server-side field validation.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::registry::{GroupView, Registry, ResourceInfo};

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "37",
        "emulationMajor": "1",
        "emulationMinor": "37",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "36",
        "gitVersion": "v1.37.1+rehearsal",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-11-29T00:00:00Z",
        "goVersion": "go1.26.8",
        "compiler": "gc",
        "platform": format!("linux/{}", if cfg!(target_arch = "aarch64") { "arm64" } else { "amd64" }),
    })
}

/// Create-only subresources served with another kind: (subresource, group, version, kind).
/// A subresource beyond status, scale and log: its name, its kind's group and version (`None`:
/// the resource's own), its kind and verbs, as kube-apiserver's discovery lists them.
type Extra = (
    &'static str,
    Option<(&'static str, &'static str)>,
    &'static str,
    &'static [&'static str],
);

fn extra_subresources(info: &ResourceInfo) -> Vec<Extra> {
    const CREATE_GET: &[&str] = &["create", "get"];
    const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => vec![
            ("attach", None, "PodAttachOptions", CREATE_GET),
            ("ephemeralcontainers", None, "Pod", GET_PATCH_UPDATE),
            ("eviction", Some(("policy", "v1")), "Eviction", &["create"]),
            ("exec", None, "PodExecOptions", CREATE_GET),
            ("portforward", None, "PodPortForwardOptions", CREATE_GET),
        ],
        ("", "serviceaccounts") => vec![(
            "token",
            Some(("authentication.k8s.io", "v1")),
            "TokenRequest",
            &["create"],
        )],
        ("certificates.k8s.io", "certificatesigningrequests") => vec![(
            "approval",
            None,
            "CertificateSigningRequest",
            GET_PATCH_UPDATE,
        )],
        _ => Vec::new(),
    }
}

fn response_kind(info: &ResourceInfo) -> Value {
    json!({"group": info.group, "version": info.version, "kind": info.kind})
}

fn aggregated_resource(info: &ResourceInfo) -> Value {
    let mut r = json!({
        "resource": info.plural,
        "responseKind": response_kind(info),
        "scope": if info.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": info.singular,
        "verbs": info.verbs(),
    });
    if !info.short_names.is_empty() {
        r["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        r["categories"] = json!(info.categories);
    }
    let mut subs = Vec::new();
    if info.status {
        subs.push(json!({"subresource": "status", "responseKind": response_kind(info), "verbs": ["get", "patch", "update"]}));
    }
    if info.scale {
        subs.push(json!({"subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": ["get", "patch", "update"]}));
    }
    if info.log {
        subs.push(json!({"subresource": "log", "responseKind": {"group": "", "version": "", "kind": "Pod"}, "verbs": ["get"]}));
    }
    for (sub, foreign, kind, verbs) in extra_subresources(info) {
        let (group, version) = foreign.unwrap_or((&info.group, &info.version));
        subs.push(json!({"subresource": sub, "responseKind": {"group": group, "version": version, "kind": kind}, "verbs": verbs}));
    }
    if !subs.is_empty() {
        // Alphabetical, as kube-apiserver lists them.
        subs.sort_by(|a, b| a["subresource"].as_str().cmp(&b["subresource"].as_str()));
        r["subresources"] = Value::Array(subs);
    }
    r
}

fn aggregated_group(group: &GroupView) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|(v, resources)| {
            json!({
                "version": v,
                "resources": resources.iter().map(|r| aggregated_resource(r)).collect::<Vec<_>>(),
                "freshness": "Current",
            })
        })
        .collect();
    let metadata = if group.name.is_empty() {
        json!({"creationTimestamp": null})
    } else {
        json!({"name": group.name, "creationTimestamp": null})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// `/api` (core = true) or `/apis` as an `APIGroupDiscoveryList`.
pub fn aggregated(registry: &Registry, core: bool) -> Value {
    let items: Vec<Value> = registry
        .groups()
        .iter()
        .filter(|g| g.name.is_empty() == core)
        .map(aggregated_group)
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_doc(group: &GroupView) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|(v, _)| json!({"groupVersion": format!("{}/{}", group.name, v), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group.name, "versions": versions, "preferredVersion": preferred})
}

pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .filter(|g| !g.name.is_empty())
        .map(group_doc)
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    let g = registry.group(name).filter(|g| !g.name.is_empty())?;
    let mut doc = group_doc(&g);
    let map = doc.as_object_mut().expect("object");
    map.insert("kind".into(), json!("APIGroup"));
    map.insert("apiVersion".into(), json!("v1"));
    Some(doc)
}

fn group_version_resources(
    registry: &Registry,
    group: &str,
    version: &str,
) -> Option<Vec<Arc<ResourceInfo>>> {
    registry
        .group(group)?
        .versions
        .into_iter()
        .find(|(v, _)| v == version)
        .map(|(_, r)| r)
}

/// `APIResourceList` for `/api/v1` or `/apis/G/V`.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources = group_version_resources(registry, group, version)?;
    let mut entries = Vec::new();
    for info in &resources {
        let first_sub = entries.len() + 1;
        let mut r = json!({
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": info.verbs(),
        });
        if !info.short_names.is_empty() {
            r["shortNames"] = json!(info.short_names);
        }
        if !info.categories.is_empty() {
            r["categories"] = json!(info.categories);
        }
        entries.push(r);
        if info.status {
            entries.push(json!({"name": format!("{}/status", info.plural), "singularName": "",
                "namespaced": info.namespaced, "kind": info.kind, "verbs": ["get", "patch", "update"]}));
        }
        if info.scale {
            entries.push(json!({"name": format!("{}/scale", info.plural), "singularName": "",
                "namespaced": info.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale",
                "verbs": ["get", "patch", "update"]}));
        }
        if info.log {
            entries.push(
                json!({"name": format!("{}/log", info.plural), "singularName": "",
                "namespaced": info.namespaced, "kind": "Pod", "verbs": ["get"]}),
            );
        }
        for (sub, foreign, kind, verbs) in extra_subresources(info) {
            // `APIResource`'s field order; group and version only for a kind of another group.
            let mut entry = serde_json::Map::new();
            entry.insert("name".into(), json!(format!("{}/{sub}", info.plural)));
            entry.insert("singularName".into(), json!(""));
            entry.insert("namespaced".into(), json!(info.namespaced));
            if let Some((group, version)) = foreign {
                entry.insert("group".into(), json!(group));
                entry.insert("version".into(), json!(version));
            }
            entry.insert("kind".into(), json!(kind));
            entry.insert("verbs".into(), json!(verbs));
            entries.push(Value::Object(entry));
        }
        // `pods/attach` … `pods/status`, alphabetical as in kube-apiserver's list.
        entries[first_sub..].sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": entries}),
    )
}

fn hash_of(doc: &Value) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    doc.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

/// The OpenAPI v3 index: one entry per served group version, hashed by content.
pub fn openapi_root(registry: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    for g in registry.groups() {
        for (v, _) in &g.versions {
            let (key, doc) = if g.name.is_empty() {
                (format!("api/{v}"), openapi_doc(registry, "", v))
            } else {
                (
                    format!("apis/{}/{v}", g.name),
                    openapi_doc(registry, &g.name, v),
                )
            };
            let hash = doc.as_ref().map(hash_of).unwrap_or_default();
            paths.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

fn param(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

/// A group version's OpenAPI v3 document: every write operation is tagged with its GVK and
/// takes `fieldValidation`, which is what kubectl checks before validating on the server.
pub fn openapi_doc(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources = group_version_resources(registry, group, version)?;
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let mut paths = serde_json::Map::new();
    for info in &resources {
        let gvk = json!({"group": info.group, "version": info.version, "kind": info.kind});
        let scope = if info.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let collection = format!("{prefix}{scope}/{}", info.plural);
        let write_params = json!([
            param("dryRun"),
            param("fieldManager"),
            param("fieldValidation")
        ]);
        let op = |action: &str, params: &Value| {
            json!({
                "operationId": format!("{action}{}", info.kind),
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params,
                "responses": {"200": {"description": "OK"}},
            })
        };
        let mut patch_params = write_params.clone();
        patch_params
            .as_array_mut()
            .expect("array")
            .push(param("force"));
        paths.insert(
            collection.clone(),
            json!({"get": op("list", &json!([])), "post": op("post", &write_params),
                   "delete": op("deletecollection", &json!([]))}),
        );
        let item = json!({"get": op("get", &json!([])), "put": op("put", &write_params),
                          "patch": op("patch", &patch_params), "delete": op("delete", &json!([]))});
        paths.insert(format!("{collection}/{{name}}"), item.clone());
        if info.status {
            paths.insert(format!("{collection}/{{name}}/status"), item);
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.1"},
        "paths": paths,
        "components": {"schemas": crate::openapi_schemas::components(group, version, &resources)},
    }))
}
