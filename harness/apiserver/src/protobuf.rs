//! Protobuf request bodies: what `kubectl create namespace|configmap|secret|serviceaccount` POST.
//!
//! kubectl's typed-client generators send `application/vnd.kubernetes.protobuf` with no JSON
//! fallback, so the server must read them. The body is the `k8s\0` magic followed by a
//! `runtime.Unknown` envelope whose `raw` bytes are the object message. Only the few kinds
//! those generators create are mapped (by hand, into the same JSON the server stores); any
//! other kind is refused so the server can answer 415 and the client can resend as JSON.
//! Field numbers follow `k8s.io/api/core/v1/generated.proto` and
//! `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use prost::Message;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

// `apps/v1` Deployments (`kubectl create deployment`) and the authorization-related kinds
// (`auth can-i`, `create token`, `create role`, …); beside this file so the path-included copy
// in the module tests finds them too.
#[path = "protobuf_apps.rs"]
mod apps;
#[path = "protobuf_authz.rs"]
mod authz;

/// The four bytes that open every Kubernetes protobuf body.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Decodes a protobuf request body into the JSON object model (`apiVersion` and `kind` from
/// the envelope's TypeMeta).
pub fn decode_object(body: &[u8]) -> Result<Value, String> {
    let raw = body.strip_prefix(MAGIC.as_slice()).ok_or_else(|| {
        "protobuf body does not start with the k8s\\0 magic bytes; send JSON".to_owned()
    })?;
    let unknown = Unknown::decode(raw)
        .map_err(|e| format!("protobuf envelope is not a runtime.Unknown: {e}"))?;
    if !unknown.content_encoding.is_empty() {
        return Err(format!(
            "protobuf content encoding {:?} is not supported; send JSON",
            unknown.content_encoding
        ));
    }
    let type_meta = unknown.type_meta.unwrap_or_default();
    let kind = type_meta.kind.as_str();
    let group_version = type_meta.api_version.as_str();
    let core = group_version == "v1";
    let mut object = match kind {
        "Namespace" if core => decode_as::<Namespace>(&unknown.raw, kind)?.into_json(),
        "ConfigMap" if core => decode_as::<ConfigMap>(&unknown.raw, kind)?.into_json(),
        "Secret" if core => decode_as::<Secret>(&unknown.raw, kind)?.into_json(),
        "ServiceAccount" if core => decode_as::<ServiceAccount>(&unknown.raw, kind)?.into_json(),
        "Deployment" if group_version == "apps/v1" => apps::deployment(&unknown.raw)?,
        _ if let Some(mapped) = authz::decode_object(group_version, kind, &unknown.raw) => mapped?,
        _ => {
            let shown = if kind.is_empty() { "<empty>" } else { kind };
            return Err(format!(
                "protobuf body for kind {shown} is not supported; send JSON"
            ));
        }
    };
    let mut head = Map::new();
    head.insert("apiVersion".into(), json!(group_version));
    head.insert("kind".into(), json!(kind));
    head.append(&mut object);
    Ok(Value::Object(head))
}

fn decode_as<M: Message + Default>(raw: &[u8], kind: &str) -> Result<M, String> {
    M::decode(raw).map_err(|e| format!("protobuf body is not a valid {kind}: {e}"))
}

/// `runtime.Unknown`, the envelope around every protobuf object.
#[derive(Clone, PartialEq, Message)]
pub struct Unknown {
    #[prost(message, optional, tag = "1")]
    pub type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", tag = "2")]
    pub raw: Vec<u8>,
    #[prost(string, tag = "3")]
    pub content_encoding: String,
    #[prost(string, tag = "4")]
    pub content_type: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct TypeMeta {
    #[prost(string, tag = "1")]
    pub api_version: String,
    #[prost(string, tag = "2")]
    pub kind: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct Time {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct OwnerReference {
    #[prost(string, tag = "1")]
    pub kind: String,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub uid: String,
    #[prost(string, tag = "5")]
    pub api_version: String,
    #[prost(bool, optional, tag = "6")]
    pub controller: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    pub block_owner_deletion: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ObjectMeta {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub generate_name: String,
    #[prost(string, tag = "3")]
    pub namespace: String,
    #[prost(string, tag = "5")]
    pub uid: String,
    #[prost(string, tag = "6")]
    pub resource_version: String,
    #[prost(int64, tag = "7")]
    pub generation: i64,
    #[prost(message, optional, tag = "8")]
    pub creation_timestamp: Option<Time>,
    #[prost(btree_map = "string, string", tag = "11")]
    pub labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    pub annotations: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "13")]
    pub owner_references: Vec<OwnerReference>,
    #[prost(string, repeated, tag = "14")]
    pub finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamespaceSpec {
    #[prost(string, repeated, tag = "1")]
    pub finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Namespace {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<NamespaceSpec>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    pub data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    pub binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    pub immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Secret {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    pub data: BTreeMap<String, Vec<u8>>,
    #[prost(string, tag = "3")]
    pub type_: String,
    #[prost(btree_map = "string, string", tag = "4")]
    pub string_data: BTreeMap<String, String>,
    #[prost(bool, optional, tag = "5")]
    pub immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ObjectReference {
    #[prost(string, tag = "1")]
    pub kind: String,
    #[prost(string, tag = "2")]
    pub namespace: String,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub uid: String,
    #[prost(string, tag = "5")]
    pub api_version: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct LocalObjectReference {
    #[prost(string, tag = "1")]
    pub name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct ServiceAccount {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub secrets: Vec<ObjectReference>,
    #[prost(message, repeated, tag = "3")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    #[prost(bool, optional, tag = "4")]
    pub automount_service_account_token: Option<bool>,
}

/// Inserts `value` under `key` unless it is empty: kubectl sends every string field, and an
/// empty `namespace` or `uid` must read as absent.
fn put_str(map: &mut Map<String, Value>, key: &str, value: String) {
    if !value.is_empty() {
        map.insert(key.into(), Value::String(value));
    }
}

fn put_map(map: &mut Map<String, Value>, key: &str, value: BTreeMap<String, String>) {
    if !value.is_empty() {
        let m: Map<String, Value> = value
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        map.insert(key.into(), Value::Object(m));
    }
}

fn put_bytes_map(map: &mut Map<String, Value>, key: &str, value: BTreeMap<String, Vec<u8>>) {
    if !value.is_empty() {
        let m: Map<String, Value> = value
            .into_iter()
            .map(|(k, v)| (k, Value::String(BASE64.encode(v))))
            .collect();
        map.insert(key.into(), Value::Object(m));
    }
}

fn put_bool(map: &mut Map<String, Value>, key: &str, value: Option<bool>) {
    if let Some(b) = value {
        map.insert(key.into(), Value::Bool(b));
    }
}

fn time_json(t: Time) -> Option<Value> {
    // kubectl sends an empty Time (seconds 0) for "unset".
    if t.seconds == 0 && t.nanos == 0 {
        return None;
    }
    let ts = jiff::Timestamp::new(t.seconds, t.nanos).ok()?;
    Some(Value::String(ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

impl ObjectMeta {
    pub(crate) fn into_json(self) -> Value {
        let mut m = Map::new();
        put_str(&mut m, "name", self.name);
        put_str(&mut m, "generateName", self.generate_name);
        put_str(&mut m, "namespace", self.namespace);
        put_str(&mut m, "uid", self.uid);
        put_str(&mut m, "resourceVersion", self.resource_version);
        if self.generation != 0 {
            m.insert("generation".into(), json!(self.generation));
        }
        if let Some(t) = self.creation_timestamp.and_then(time_json) {
            m.insert("creationTimestamp".into(), t);
        }
        put_map(&mut m, "labels", self.labels);
        put_map(&mut m, "annotations", self.annotations);
        if !self.owner_references.is_empty() {
            let refs: Vec<Value> = self
                .owner_references
                .into_iter()
                .map(|r| {
                    let mut o = Map::new();
                    put_str(&mut o, "apiVersion", r.api_version);
                    put_str(&mut o, "kind", r.kind);
                    put_str(&mut o, "name", r.name);
                    put_str(&mut o, "uid", r.uid);
                    put_bool(&mut o, "controller", r.controller);
                    put_bool(&mut o, "blockOwnerDeletion", r.block_owner_deletion);
                    Value::Object(o)
                })
                .collect();
            m.insert("ownerReferences".into(), Value::Array(refs));
        }
        if !self.finalizers.is_empty() {
            m.insert("finalizers".into(), json!(self.finalizers));
        }
        Value::Object(m)
    }
}

pub(crate) fn metadata_json(meta: Option<ObjectMeta>) -> Value {
    meta.unwrap_or_default().into_json()
}

impl Namespace {
    fn into_json(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("metadata".into(), metadata_json(self.metadata));
        let finalizers = self.spec.map(|s| s.finalizers).unwrap_or_default();
        let mut spec = Map::new();
        if !finalizers.is_empty() {
            spec.insert("finalizers".into(), json!(finalizers));
        }
        m.insert("spec".into(), Value::Object(spec));
        m
    }
}

impl ConfigMap {
    fn into_json(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("metadata".into(), metadata_json(self.metadata));
        put_map(&mut m, "data", self.data);
        put_bytes_map(&mut m, "binaryData", self.binary_data);
        put_bool(&mut m, "immutable", self.immutable);
        m
    }
}

impl Secret {
    fn into_json(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("metadata".into(), metadata_json(self.metadata));
        put_bytes_map(&mut m, "data", self.data);
        put_map(&mut m, "stringData", self.string_data);
        put_str(&mut m, "type", self.type_);
        put_bool(&mut m, "immutable", self.immutable);
        m
    }
}

impl ServiceAccount {
    fn into_json(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("metadata".into(), metadata_json(self.metadata));
        if !self.secrets.is_empty() {
            let secrets: Vec<Value> = self
                .secrets
                .into_iter()
                .map(|r| {
                    let mut o = Map::new();
                    put_str(&mut o, "apiVersion", r.api_version);
                    put_str(&mut o, "kind", r.kind);
                    put_str(&mut o, "namespace", r.namespace);
                    put_str(&mut o, "name", r.name);
                    put_str(&mut o, "uid", r.uid);
                    Value::Object(o)
                })
                .collect();
            m.insert("secrets".into(), Value::Array(secrets));
        }
        if !self.image_pull_secrets.is_empty() {
            let refs: Vec<Value> = self
                .image_pull_secrets
                .into_iter()
                .map(|r| json!({"name": r.name}))
                .collect();
            m.insert("imagePullSecrets".into(), Value::Array(refs));
        }
        put_bool(
            &mut m,
            "automountServiceAccountToken",
            self.automount_service_account_token,
        );
        m
    }
}
