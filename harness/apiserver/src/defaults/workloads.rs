//! Server-side defaults of the replicated workloads (Deployments, ReplicaSets, DaemonSets,
//! ReplicationControllers), as kube-apiserver fills them in on create; the embedded node's
//! controllers act on them.

use serde_json::{Value, json};

use super::{obj_mut, pod_spec, set_default};
use crate::registry::ResourceInfo;

fn template_defaults(obj: &mut Value) {
    let spec = obj_mut(obj, "spec");
    if let Some(template) = spec.get_mut("template")
        && template.is_object()
    {
        pod_spec(obj_mut(template, "spec"));
    }
}

/// Defaults applied on create for the kinds of this module; other kinds are left alone.
pub fn defaults(info: &ResourceInfo, obj: &mut Value) {
    match (info.group.as_str(), info.plural.as_str()) {
        ("apps", "deployments") => {
            let spec = obj_mut(obj, "spec");
            set_default(spec, "replicas", json!(1));
            set_default(
                spec,
                "strategy",
                json!({"type": "RollingUpdate",
                       "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
            );
            if spec
                .get("strategy")
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                == Some("RollingUpdate")
                && let Some(strategy) = spec.get_mut("strategy").and_then(Value::as_object_mut)
            {
                let rolling = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
                if let Some(rolling) = rolling.as_object_mut() {
                    set_default(rolling, "maxUnavailable", json!("25%"));
                    set_default(rolling, "maxSurge", json!("25%"));
                }
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "progressDeadlineSeconds", json!(600));
            template_defaults(obj);
            obj["status"] = json!({});
        }
        ("apps", "replicasets") => {
            set_default(obj_mut(obj, "spec"), "replicas", json!(1));
            template_defaults(obj);
            obj["status"] = json!({"replicas": 0});
        }
        ("", "replicationcontrollers") => {
            let spec = obj_mut(obj, "spec");
            set_default(spec, "replicas", json!(1));
            // An RC without a selector selects its template's labels.
            if spec
                .get("selector")
                .is_none_or(|s| s.as_object().is_none_or(|m| m.is_empty()))
                && let Some(labels) = spec
                    .get("template")
                    .and_then(|t| t.pointer("/metadata/labels"))
                    .cloned()
            {
                spec.insert("selector".into(), labels);
            }
            template_defaults(obj);
            obj["status"] = json!({"replicas": 0});
        }
        ("apps", "daemonsets") => {
            let spec = obj_mut(obj, "spec");
            set_default(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate",
                       "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            set_default(spec, "revisionHistoryLimit", json!(10));
            template_defaults(obj);
            obj["status"] = json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                   "desiredNumberScheduled": 0, "numberReady": 0});
        }
        _ => {}
    }
}
