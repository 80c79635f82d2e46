//! Server-side defaults for built-in kinds: the fields a real API server fills in on create
//! that clients (k8s-openapi's required fields, Python's pydantic models, controllers) rely on.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::meta;
use crate::registry::ResourceInfo;

// The replicated workloads' defaults, a part of this module in a file of its own.
mod workloads;

/// What defaulting needs from the rest of the cluster.
pub struct Context<'a> {
    /// The StorageClass annotated as the default one, if any.
    pub default_storage_class: Option<&'a str>,
}

pub(crate) fn obj_mut<'a>(parent: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    let map = parent.as_object_mut().expect("defaulting runs on objects");
    let entry = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("just made an object")
}

pub(crate) fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// Defaults applied when an object is created.
pub fn on_create(info: &ResourceInfo, obj: &mut Value, ctx: &Context<'_>) {
    if info.is_custom() {
        return;
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => {
            let name = meta::name(obj).to_string();
            let labels = meta::meta_mut(obj)
                .entry("labels")
                .or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
            }
            let spec = obj_mut(obj, "spec");
            set_default(spec, "finalizers", json!(["kubernetes"]));
            obj["status"] = json!({"phase": "Active"});
        }
        ("", "pods") => {
            pod_spec(obj_mut(obj, "spec"));
            obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
        }
        ("", "secrets") => secret(obj),
        ("", "services") => {
            let spec = obj_mut(obj, "spec");
            set_default(spec, "type", json!("ClusterIP"));
            set_default(spec, "sessionAffinity", json!("None"));
            // The cluster IP is allocated by `services::admit_create` (with its validation).
            set_default(spec, "ipFamilies", json!(["IPv4"]));
            set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
            set_default(spec, "internalTrafficPolicy", json!("Cluster"));
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                    set_default(port, "protocol", json!("TCP"));
                    if let Some(p) = port.get("port").cloned() {
                        set_default(port, "targetPort", p);
                    }
                }
            }
            obj["status"] = json!({"loadBalancer": {}});
        }
        ("", "persistentvolumeclaims") => {
            let spec = obj_mut(obj, "spec");
            set_default(spec, "volumeMode", json!("Filesystem"));
            if spec.get("storageClassName").is_none()
                && let Some(sc) = ctx.default_storage_class
            {
                spec.insert("storageClassName".into(), json!(sc));
            }
            obj["status"] = json!({"phase": "Pending"});
        }
        ("", "persistentvolumes") => {
            let spec = obj_mut(obj, "spec");
            set_default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
            set_default(spec, "volumeMode", json!("Filesystem"));
            if obj.get("status").is_none_or(Value::is_null) {
                obj["status"] = json!({"phase": "Pending"});
            }
        }
        ("storage.k8s.io", "storageclasses") => {
            let map = obj.as_object_mut().expect("object");
            set_default(map, "reclaimPolicy", json!("Delete"));
            set_default(map, "volumeBindingMode", json!("Immediate"));
        }
        ("apps", "statefulsets") => {
            let spec = obj_mut(obj, "spec");
            set_default(spec, "replicas", json!(1));
            set_default(spec, "podManagementPolicy", json!("OrderedReady"));
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            );
            set_default(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
            if let Some(template) = spec.get_mut("template") {
                pod_spec(obj_mut(template, "spec"));
            }
            obj["status"] = json!({"replicas": 0, "availableReplicas": 0});
        }
        ("batch", "jobs") => job(obj),
        _ => workloads::defaults(info, obj),
    }
}

pub(crate) fn pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "enableServiceLinks", json!(true));
    set_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    set_default(spec, "priority", json!(0));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
                set_default(c, "terminationMessagePolicy", json!("File"));
                set_default(c, "resources", json!({}));
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                let latest =
                    !image.contains('@') && (image.ends_with(":latest") || !tag_present(image));
                set_default(
                    c,
                    "imagePullPolicy",
                    json!(if latest { "Always" } else { "IfNotPresent" }),
                );
                if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                    for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                        set_default(p, "protocol", json!("TCP"));
                    }
                }
            }
        }
    }
}

/// Whether an image reference carries a tag (a `:` after the last `/`).
fn tag_present(image: &str) -> bool {
    image
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'))
}

fn secret(obj: &mut Value) {
    let map = obj.as_object_mut().expect("object");
    set_default(map, "type", json!("Opaque"));
    fold_string_data(obj);
}

/// Folds `stringData` into base64 `data`, as the Secret strategy does on every write.
pub fn fold_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    let data = data.as_object_mut().expect("just made an object");
    for (k, v) in string_data {
        let text = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        data.insert(
            k,
            Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
}

fn job(obj: &mut Value) {
    let uid = meta::uid(obj).to_string();
    let name = meta::name(obj).to_string();
    let spec = obj_mut(obj, "spec");
    set_default(spec, "parallelism", json!(1));
    set_default(spec, "completions", json!(1));
    set_default(spec, "backoffLimit", json!(6));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if !manual {
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
    }
    if let Some(template) = spec.get_mut("template") {
        if !manual {
            let tmeta = obj_mut(template, "metadata");
            let labels = tmeta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("batch.kubernetes.io/controller-uid".into(), json!(uid));
                l.insert("batch.kubernetes.io/job-name".into(), json!(name));
                l.insert("controller-uid".into(), json!(uid));
                l.insert("job-name".into(), json!(name));
            }
        }
        let tspec = obj_mut(template, "spec");
        set_default(tspec, "restartPolicy", json!("Never"));
        pod_spec(tspec);
    }
    obj["status"] = json!({});
}
