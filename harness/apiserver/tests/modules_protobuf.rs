//! Protobuf request bodies: messages encoded here, and golden bodies captured from real
//! kubectl 1.37.1 (`tests/fixtures/kubectl-1.37-*.pb`, recorded by pointing kubectl's
//! kubeconfig at a listener that saved each POST body).
//! The module is included by path so these tests run whether or not `lib.rs` declares it.

#[allow(dead_code)]
#[path = "../src/protobuf.rs"]
mod protobuf;

use prost::Message;
use protobuf::{
    ConfigMap, LocalObjectReference, Namespace, NamespaceSpec, ObjectMeta, OwnerReference, Secret,
    ServiceAccount, Time, TypeMeta, Unknown, decode_object,
};
use serde_json::json;
use std::collections::BTreeMap;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/kubectl-1.37-{name}.pb",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: api_version.into(),
            kind: kind.into(),
        }),
        raw,
        content_encoding: String::new(),
        content_type: String::new(),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn golden_kubectl_create_namespace() {
    let object = decode_object(&fixture("create-namespace-x")).unwrap();
    assert_eq!(
        object,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spec": {}})
    );
}

#[test]
fn golden_kubectl_create_configmap() {
    let object = decode_object(&fixture("create-configmap-c")).unwrap();
    assert_eq!(
        object,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}, "data": {"a": "b"}})
    );
}

#[test]
fn golden_kubectl_create_secrets() {
    let object = decode_object(&fixture("create-secret-s")).unwrap();
    assert_eq!(
        object,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "x"},
               "data": {"password": "aHVudGVyMg=="}})
    );
    let object = decode_object(&fixture("create-secret-tls")).unwrap();
    assert_eq!(object["type"], "kubernetes.io/dockerconfigjson");
    assert_eq!(object["metadata"], json!({"name": "reg", "namespace": "x"}));
    let encoded = object["data"][".dockerconfigjson"].as_str().unwrap();
    use base64::Engine as _;
    let config = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    assert!(
        String::from_utf8(config)
            .unwrap()
            .contains(r#""r.example""#)
    );
}

#[test]
fn golden_kubectl_create_serviceaccount() {
    let object = decode_object(&fixture("create-serviceaccount-sa")).unwrap();
    assert_eq!(
        object,
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "x"}})
    );
}

#[test]
fn golden_kubectl_create_deployment() {
    let object = decode_object(&fixture("create-deployment-d")).unwrap();
    assert_eq!(
        object,
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "x", "labels": {"app": "d"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}}}})
    );
}

#[test]
fn other_kinds_are_refused_with_send_json() {
    let body = envelope("apps/v1", "DaemonSet", Vec::new());
    assert_eq!(
        decode_object(&body).unwrap_err(),
        "protobuf body for kind DaemonSet is not supported; send JSON"
    );
}

#[test]
fn object_meta_round_trip_drops_empty_values() {
    let meta = ObjectMeta {
        name: String::new(),
        generate_name: "mc-".into(),
        namespace: "games".into(),
        uid: String::new(),
        resource_version: String::new(),
        generation: 0,
        creation_timestamp: Some(Time {
            seconds: 0,
            nanos: 0,
        }),
        labels: labels(&[("app", "mc")]),
        annotations: labels(&[("note", "hi")]),
        owner_references: vec![OwnerReference {
            kind: "GameServer".into(),
            name: "mc1".into(),
            uid: "u-1".into(),
            api_version: "gameplane.local/v1alpha1".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }],
        finalizers: vec!["gameplane.local/cleanup".into()],
    };
    let ns = Namespace {
        metadata: Some(meta),
        spec: Some(NamespaceSpec {
            finalizers: vec!["kubernetes".into()],
        }),
    };
    let object = decode_object(&envelope("v1", "Namespace", ns.encode_to_vec())).unwrap();
    assert_eq!(
        object,
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {
                "generateName": "mc-", "namespace": "games",
                "labels": {"app": "mc"}, "annotations": {"note": "hi"},
                "ownerReferences": [{"apiVersion": "gameplane.local/v1alpha1", "kind": "GameServer", "name": "mc1", "uid": "u-1", "controller": true}],
                "finalizers": ["gameplane.local/cleanup"]
            },
            "spec": {"finalizers": ["kubernetes"]}
        })
    );
}

#[test]
fn set_values_are_kept() {
    let meta = ObjectMeta {
        name: "c".into(),
        uid: "abc".into(),
        resource_version: "42".into(),
        generation: 3,
        creation_timestamp: Some(Time {
            seconds: 1_764_419_307,
            nanos: 0,
        }),
        ..Default::default()
    };
    let cm = ConfigMap {
        metadata: Some(meta),
        data: labels(&[("k", "v")]),
        binary_data: [("bin".to_string(), vec![0u8, 1, 2, 255])]
            .into_iter()
            .collect(),
        immutable: Some(false),
    };
    let object = decode_object(&envelope("v1", "ConfigMap", cm.encode_to_vec())).unwrap();
    assert_eq!(
        object,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "abc", "resourceVersion": "42", "generation": 3,
                         "creationTimestamp": "2025-11-29T12:28:27Z"},
            "data": {"k": "v"}, "binaryData": {"bin": "AAEC/w=="}, "immutable": false
        })
    );
}

#[test]
fn secret_and_service_account_fields() {
    let secret = Secret {
        metadata: Some(ObjectMeta {
            name: "s".into(),
            ..Default::default()
        }),
        data: [("tls.key".to_string(), b"secret".to_vec())]
            .into_iter()
            .collect(),
        type_: "kubernetes.io/tls".into(),
        string_data: labels(&[("plain", "text")]),
        immutable: None,
    };
    let object = decode_object(&envelope("v1", "Secret", secret.encode_to_vec())).unwrap();
    assert_eq!(
        object,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
               "data": {"tls.key": "c2VjcmV0"}, "stringData": {"plain": "text"}, "type": "kubernetes.io/tls"})
    );
    let sa = ServiceAccount {
        metadata: Some(ObjectMeta {
            name: "sa".into(),
            ..Default::default()
        }),
        secrets: vec![],
        image_pull_secrets: vec![LocalObjectReference { name: "reg".into() }],
        automount_service_account_token: Some(false),
    };
    let object = decode_object(&envelope("v1", "ServiceAccount", sa.encode_to_vec())).unwrap();
    assert_eq!(
        object,
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"},
               "imagePullSecrets": [{"name": "reg"}], "automountServiceAccountToken": false})
    );
}

#[test]
fn bad_bodies_are_errors_not_panics() {
    let err = decode_object(b"{\"kind\":\"Namespace\"}").unwrap_err();
    assert!(err.contains("magic"), "{err}");
    let err = decode_object(b"k8s\0\xff\xff\xff").unwrap_err();
    assert!(err.contains("runtime.Unknown"), "{err}");
    let err = decode_object(&envelope("v1", "Namespace", vec![0x0a, 0x05, 0x01])).unwrap_err();
    assert!(err.contains("not a valid Namespace"), "{err}");
    let err = decode_object(&envelope("v1", "Pod", vec![])).unwrap_err();
    assert_eq!(
        err,
        "protobuf body for kind Pod is not supported; send JSON"
    );
    let err = decode_object(&envelope("apps/v1", "ConfigMap", vec![])).unwrap_err();
    assert!(err.contains("not supported"), "{err}");
    let err = decode_object(b"k8s\0").unwrap_err();
    assert!(err.contains("kind <empty>"), "{err}");
    // Every prefix of a real body fails cleanly (or decodes), never panics.
    let body = fixture("create-secret-tls");
    for end in 0..body.len() {
        let _ = decode_object(&body[..end]);
    }
}
