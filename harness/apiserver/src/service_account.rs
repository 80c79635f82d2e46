//! What a real cluster gives every pod so that in-cluster clients work unchanged:
//!
//! - the `ServiceAccount` admission plugin: a pod names an existing ServiceAccount (`default`
//!   when it names none; a missing one is a `Forbidden`), and unless
//!   `automountServiceAccountToken: false` (on the pod, else on the ServiceAccount) it gets a
//!   `kube-api-access-<random>` projected volume — a bound token (`token`), the cluster CA
//!   (`ca.crt`, from the `kube-root-ca.crt` ConfigMap) and the namespace (`namespace`) —
//!   mounted read-only at [`TOKEN_MOUNT_PATH`] in every container that does not mount
//!   something there itself;
//! - the `kube-root-ca.crt` ConfigMap in every namespace (the root-CA publisher's job);
//! - the `kubernetes` Service in `default`, with its EndpointSlice and Endpoints naming the
//!   API server's own address (the API server's bootstrap controller's job).

use std::net::SocketAddr;

use serde_json::{Map, Value, json};

use crate::meta;

/// Where the projected ServiceAccount volume is mounted.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The ConfigMap holding the cluster CA in every namespace.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// A projected token's lifetime, as kube-apiserver sets it (an hour plus seven seconds, so
/// that clients can tell an admission-made token from a requested one).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;

/// The ServiceAccount a pod runs as: `serviceAccountName`, else the deprecated
/// `serviceAccount`, else `default`; both fields are set to it.
pub fn pod_service_account(pod: &mut Value) -> String {
    let spec = crate::defaults::obj_mut(pod, "spec");
    let name = ["serviceAccountName", "serviceAccount"]
        .iter()
        .find_map(|k| {
            spec.get(*k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .unwrap_or("default")
        .to_string();
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
    name
}

/// The message a real API server gives for a pod naming a ServiceAccount that does not exist.
pub fn missing_service_account(ns: &str, sa: &str) -> String {
    format!("error looking up service account {ns}/{sa}: serviceaccount \"{sa}\" not found")
}

/// Adds the projected token volume and its mounts to `pod` (created in `ns`) unless
/// automounting is off on the pod or its ServiceAccount `sa`.
pub fn mount_token(pod: &mut Value, sa: &Value) {
    let spec = crate::defaults::obj_mut(pod, "spec");
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true);
    if !automount {
        return;
    }
    let volume_name = meta::generated_name("kube-api-access-");
    let mut mounted = false;
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            if mounts_token_path(c) {
                continue;
            }
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            if let Some(mounts) = mounts.as_array_mut() {
                mounts.push(json!({
                    "name": volume_name,
                    "readOnly": true,
                    "mountPath": TOKEN_MOUNT_PATH,
                }));
                mounted = true;
            }
        }
    }
    if !mounted {
        return;
    }
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Some(volumes) = volumes.as_array_mut() {
        volumes.push(json!({
            "name": volume_name,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                    {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
            },
        }));
    }
}

fn mounts_token_path(container: &Map<String, Value>) -> bool {
    container
        .get("volumeMounts")
        .and_then(Value::as_array)
        .is_some_and(|mounts| {
            mounts.iter().any(|m| {
                m.get("mountPath")
                    .and_then(Value::as_str)
                    .is_some_and(|p| p.trim_end_matches('/') == TOKEN_MOUNT_PATH)
            })
        })
}

/// The `kube-root-ca.crt` ConfigMap of a namespace.
pub fn root_ca_config_map(ca_pem: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIG_MAP, "annotations": {
            "kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
        }},
        "data": {"ca.crt": ca_pem},
    })
}

/// The `kubernetes` Service (cluster IP `ip`, port 443 to the API server's port), its
/// EndpointSlice and its Endpoints.
pub fn kubernetes_service(ip: std::net::Ipv4Addr, api: SocketAddr) -> [Value; 3] {
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let address = match api.ip() {
        std::net::IpAddr::V4(v4) if !v4.is_unspecified() => v4.to_string(),
        _ => "127.0.0.1".to_string(),
    };
    let port = api.port();
    [
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "labels": labels},
            "spec": {"clusterIP": ip.to_string(), "clusterIPs": [ip.to_string()], "type": "ClusterIP",
                "sessionAffinity": "None",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
        }),
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }),
        json!({
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": address}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
        }),
    ]
}
