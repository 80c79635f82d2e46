//! Pod field references (`fieldRef`), shared by env `valueFrom` and downward API volumes.

use k8s_openapi::api::core::v1::Pod;

/// The value of a `fieldRef.fieldPath` for `pod` with address `pod_ip`, or `None` for a path
/// the kubelet does not support.
pub fn field_value(pod: &Pod, pod_ip: &str, path: &str) -> Option<String> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let keyed = |prefix: &str, map: &Option<std::collections::BTreeMap<String, String>>| {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?.to_string();
        Some(
            map.as_ref()
                .and_then(|m| m.get(&key).cloned())
                .unwrap_or_default(),
        )
    };
    match path {
        "metadata.name" => meta.name.clone(),
        "metadata.namespace" => meta.namespace.clone(),
        "metadata.uid" => meta.uid.clone(),
        "metadata.labels" => Some(render_map(&meta.labels)),
        "metadata.annotations" => Some(render_map(&meta.annotations)),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()),
        "spec.serviceAccountName" => Some(
            spec.and_then(|s| s.service_account_name.clone())
                .unwrap_or_else(|| "default".to_string()),
        ),
        "status.podIP" => Some(pod_ip.to_string()),
        "status.podIPs" => Some(pod_ip.to_string()),
        "status.hostIP" | "status.hostIPs" => Some("127.0.0.1".to_string()),
        _ => keyed("metadata.labels['", &meta.labels)
            .or_else(|| keyed("metadata.annotations['", &meta.annotations)),
    }
}

fn render_map(map: &Option<std::collections::BTreeMap<String, String>>) -> String {
    map.iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v:?}\n"))
        .collect()
}
