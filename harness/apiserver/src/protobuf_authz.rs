//! Protobuf bodies of the authorization-related kinds kubectl's typed clients send:
//! `auth can-i` (SelfSubjectAccessReview, SelfSubjectRulesReview), `auth whoami`
//! (SelfSubjectReview), `create token` (TokenRequest), `drain` (Eviction) and
//! `create role|clusterrole|rolebinding|clusterrolebinding`. Field numbers follow
//! `k8s.io/api/{authorization,authentication,policy,rbac}/v1/generated.proto`.

use prost::Message;
use serde_json::{Map, Value, json};

use super::{ObjectMeta, metadata_json};

#[derive(Clone, PartialEq, Message)]
struct ResourceAttributes {
    #[prost(string, tag = "1")]
    namespace: String,
    #[prost(string, tag = "2")]
    verb: String,
    #[prost(string, tag = "3")]
    group: String,
    #[prost(string, tag = "4")]
    version: String,
    #[prost(string, tag = "5")]
    resource: String,
    #[prost(string, tag = "6")]
    subresource: String,
    #[prost(string, tag = "7")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct NonResourceAttributes {
    #[prost(string, tag = "1")]
    path: String,
    #[prost(string, tag = "2")]
    verb: String,
}

#[derive(Clone, PartialEq, Message)]
struct AccessReviewSpec {
    #[prost(message, optional, tag = "1")]
    resource_attributes: Option<ResourceAttributes>,
    #[prost(message, optional, tag = "2")]
    non_resource_attributes: Option<NonResourceAttributes>,
    #[prost(string, tag = "3")]
    user: String,
    #[prost(string, repeated, tag = "4")]
    groups: Vec<String>,
    #[prost(string, tag = "6")]
    uid: String,
}

#[derive(Clone, PartialEq, Message)]
struct AccessReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<AccessReviewSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct RulesReviewSpec {
    #[prost(string, tag = "1")]
    namespace: String,
}

#[derive(Clone, PartialEq, Message)]
struct RulesReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<RulesReviewSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct MetaOnly {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
}

#[derive(Clone, PartialEq, Message)]
struct BoundObjectReference {
    #[prost(string, tag = "1")]
    kind: String,
    #[prost(string, tag = "2")]
    api_version: String,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    uid: String,
}

#[derive(Clone, PartialEq, Message)]
struct TokenRequestSpec {
    #[prost(string, repeated, tag = "1")]
    audiences: Vec<String>,
    #[prost(message, optional, tag = "3")]
    bound_object_ref: Option<BoundObjectReference>,
    #[prost(int64, optional, tag = "4")]
    expiration_seconds: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct TokenRequest {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<TokenRequestSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct Preconditions {
    #[prost(string, optional, tag = "1")]
    uid: Option<String>,
    #[prost(string, optional, tag = "2")]
    resource_version: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct DeleteOptions {
    #[prost(int64, optional, tag = "1")]
    grace_period_seconds: Option<i64>,
    #[prost(message, optional, tag = "2")]
    preconditions: Option<Preconditions>,
    #[prost(string, optional, tag = "4")]
    propagation_policy: Option<String>,
    #[prost(string, repeated, tag = "5")]
    dry_run: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Eviction {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    delete_options: Option<DeleteOptions>,
}

#[derive(Clone, PartialEq, Message)]
struct PolicyRule {
    #[prost(string, repeated, tag = "1")]
    verbs: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    api_groups: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    resources: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    resource_names: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    non_resource_urls: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Role {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    rules: Vec<PolicyRule>,
}

#[derive(Clone, PartialEq, Message)]
struct Subject {
    #[prost(string, tag = "1")]
    kind: String,
    #[prost(string, tag = "2")]
    api_group: String,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    namespace: String,
}

#[derive(Clone, PartialEq, Message)]
struct RoleRef {
    #[prost(string, tag = "1")]
    api_group: String,
    #[prost(string, tag = "2")]
    kind: String,
    #[prost(string, tag = "3")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct RoleBinding {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    subjects: Vec<Subject>,
    #[prost(message, optional, tag = "3")]
    role_ref: Option<RoleRef>,
}

fn non_empty(m: &mut Map<String, Value>, key: &str, v: String) {
    if !v.is_empty() {
        m.insert(key.into(), Value::String(v));
    }
}

fn list(m: &mut Map<String, Value>, key: &str, v: Vec<String>) {
    if !v.is_empty() {
        m.insert(key.into(), json!(v));
    }
}

fn decode<M: Message + Default>(raw: &[u8], kind: &str) -> Result<M, String> {
    M::decode(raw).map_err(|e| format!("protobuf body is not a valid {kind}: {e}"))
}

/// The JSON body (without apiVersion/kind) of `kind` in `group_version`, or `None` for a
/// kind this module does not map.
#[expect(
    clippy::too_many_lines,
    reason = "a table: one match arm per mapped group/version/kind"
)]
pub fn decode_object(
    group_version: &str,
    kind: &str,
    raw: &[u8],
) -> Option<Result<Map<String, Value>, String>> {
    let out = match (group_version, kind) {
        (
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview",
        ) => decode::<AccessReview>(raw, kind).map(|r| {
            let spec = r.spec.unwrap_or_default();
            let mut s = Map::new();
            if let Some(a) = spec.resource_attributes {
                let mut o = Map::new();
                non_empty(&mut o, "namespace", a.namespace);
                non_empty(&mut o, "verb", a.verb);
                non_empty(&mut o, "group", a.group);
                non_empty(&mut o, "version", a.version);
                non_empty(&mut o, "resource", a.resource);
                non_empty(&mut o, "subresource", a.subresource);
                non_empty(&mut o, "name", a.name);
                s.insert("resourceAttributes".into(), Value::Object(o));
            }
            if let Some(a) = spec.non_resource_attributes {
                s.insert(
                    "nonResourceAttributes".into(),
                    json!({"path": a.path, "verb": a.verb}),
                );
            }
            non_empty(&mut s, "user", spec.user);
            list(&mut s, "groups", spec.groups);
            non_empty(&mut s, "uid", spec.uid);
            let mut m = Map::new();
            m.insert("metadata".into(), metadata_json(r.metadata));
            m.insert("spec".into(), Value::Object(s));
            m
        }),
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => {
            decode::<RulesReview>(raw, kind).map(|r| {
                let mut m = Map::new();
                m.insert("metadata".into(), metadata_json(r.metadata));
                m.insert(
                    "spec".into(),
                    json!({"namespace": r.spec.unwrap_or_default().namespace}),
                );
                m
            })
        }
        ("authentication.k8s.io/v1", "SelfSubjectReview") => {
            decode::<MetaOnly>(raw, kind).map(|r| {
                let mut m = Map::new();
                m.insert("metadata".into(), metadata_json(r.metadata));
                m
            })
        }
        ("authentication.k8s.io/v1", "TokenRequest") => decode::<TokenRequest>(raw, kind).map(|r| {
            let spec = r.spec.unwrap_or_default();
            let mut s = Map::new();
            list(&mut s, "audiences", spec.audiences);
            if let Some(e) = spec.expiration_seconds {
                s.insert("expirationSeconds".into(), json!(e));
            }
            if let Some(b) = spec.bound_object_ref {
                let mut o = Map::new();
                non_empty(&mut o, "kind", b.kind);
                non_empty(&mut o, "apiVersion", b.api_version);
                non_empty(&mut o, "name", b.name);
                non_empty(&mut o, "uid", b.uid);
                s.insert("boundObjectRef".into(), Value::Object(o));
            }
            let mut m = Map::new();
            m.insert("metadata".into(), metadata_json(r.metadata));
            m.insert("spec".into(), Value::Object(s));
            m
        }),
        ("policy/v1", "Eviction") => decode::<Eviction>(raw, kind).map(|r| {
            let mut m = Map::new();
            m.insert("metadata".into(), metadata_json(r.metadata));
            if let Some(d) = r.delete_options {
                let mut o = Map::new();
                if let Some(g) = d.grace_period_seconds {
                    o.insert("gracePeriodSeconds".into(), json!(g));
                }
                if let Some(p) = d.preconditions {
                    o.insert(
                        "preconditions".into(),
                        json!({"uid": p.uid, "resourceVersion": p.resource_version}),
                    );
                }
                if let Some(p) = d.propagation_policy {
                    o.insert("propagationPolicy".into(), json!(p));
                }
                list(&mut o, "dryRun", d.dry_run);
                m.insert("deleteOptions".into(), Value::Object(o));
            }
            m
        }),
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => {
            decode::<Role>(raw, kind).map(|r| {
                let rules: Vec<Value> = r
                    .rules
                    .into_iter()
                    .map(|rule| {
                        let mut o = Map::new();
                        o.insert("verbs".into(), json!(rule.verbs));
                        list(&mut o, "apiGroups", rule.api_groups);
                        list(&mut o, "resources", rule.resources);
                        list(&mut o, "resourceNames", rule.resource_names);
                        list(&mut o, "nonResourceURLs", rule.non_resource_urls);
                        Value::Object(o)
                    })
                    .collect();
                let mut m = Map::new();
                m.insert("metadata".into(), metadata_json(r.metadata));
                m.insert("rules".into(), Value::Array(rules));
                m
            })
        }
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => {
            decode::<RoleBinding>(raw, kind).map(|r| {
                let subjects: Vec<Value> = r
                    .subjects
                    .into_iter()
                    .map(|s| {
                        let mut o = Map::new();
                        non_empty(&mut o, "kind", s.kind);
                        non_empty(&mut o, "apiGroup", s.api_group);
                        non_empty(&mut o, "name", s.name);
                        non_empty(&mut o, "namespace", s.namespace);
                        Value::Object(o)
                    })
                    .collect();
                let role_ref = r.role_ref.unwrap_or_default();
                let mut m = Map::new();
                m.insert("metadata".into(), metadata_json(r.metadata));
                m.insert("subjects".into(), Value::Array(subjects));
                m.insert(
                    "roleRef".into(),
                    json!({"apiGroup": role_ref.api_group, "kind": role_ref.kind, "name": role_ref.name}),
                );
                m
            })
        }
        _ => return None,
    };
    Some(out)
}
