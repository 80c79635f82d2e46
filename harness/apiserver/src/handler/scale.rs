//! The `scale` subresource (`kubectl scale`): an `autoscaling/v1` Scale view of a
//! statefulset's `spec.replicas`, or of the paths a CRD's `subresources.scale` names
//! (specReplicasPath, statusReplicasPath, labelSelectorPath), read and written through the
//! object itself.

use super::*;

/// Where the Scale's fields live in the object, as JSON pointers.
struct ScalePaths {
    spec_replicas: String,
    status_replicas: String,
    /// `None`: the selector is built from `spec.selector.matchLabels` (statefulsets).
    label_selector: Option<String>,
}

/// `.spec.replicas` → `/spec/replicas` (the simple field paths CRDs use).
fn pointer(path: &str) -> String {
    path.trim_start_matches('.')
        .split('.')
        .map(|part| format!("/{}", part.replace('~', "~0").replace('/', "~1")))
        .collect()
}

fn scale_paths(info: &ResourceInfo) -> ScalePaths {
    match info.custom.as_ref().and_then(|c| c.scale.as_ref()) {
        Some(scale) => ScalePaths {
            spec_replicas: pointer(
                scale["specReplicasPath"]
                    .as_str()
                    .unwrap_or(".spec.replicas"),
            ),
            status_replicas: pointer(
                scale["statusReplicasPath"]
                    .as_str()
                    .unwrap_or(".status.replicas"),
            ),
            label_selector: Some(
                scale["labelSelectorPath"]
                    .as_str()
                    .map(pointer)
                    .unwrap_or_default(),
            ),
        },
        None => ScalePaths {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            label_selector: None,
        },
    }
}

/// The Scale view of an object.
fn to_scale(obj: &Value, paths: &ScalePaths) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    let selector = match &paths.label_selector {
        Some(path) if path.is_empty() => String::new(),
        Some(path) => obj
            .pointer(path)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        None => obj
            .pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
    };
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer(&paths.spec_replicas).cloned().unwrap_or(json!(0))},
        "status": {
            "replicas": obj.pointer(&paths.status_replicas).cloned().unwrap_or(json!(0)),
            "selector": selector,
        },
    })
}

pub(super) async fn scale(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    let method = call.method.clone();
    let bytes = match method {
        Method::GET => bytes::Bytes::new(),
        Method::PUT | Method::PATCH => read_body(call.shared, call.headers, body).await?,
        other => return Err(ApiError::method_not_allowed(other.as_str())),
    };
    let dry = dry_run(call.query)?;
    let mut state = call.shared.state();
    let current = state
        .get(info, ns, name)
        .ok_or_else(|| ApiError::not_found(info, name))?;
    let paths = scale_paths(info);
    let view = to_scale(&current, &paths);
    let wanted = match method {
        Method::GET => return Ok(json_response(StatusCode::OK, &view)),
        Method::PUT => negotiate::decode_object(call.headers, &bytes)?,
        _ => {
            let mut doc = view.clone();
            let patch = negotiate::parse_json(&bytes)?;
            match negotiate::content_type(call.headers).as_str() {
                "application/json-patch+json" => {
                    let ops: json_patch::Patch = serde_json::from_value(patch).map_err(|e| {
                        ApiError::bad_request(format!("the JSON patch is malformed: {e}"))
                    })?;
                    json_patch::patch(&mut doc, &ops)
                        .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
                }
                "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                    if !patch.is_object() {
                        return Err(ApiError::bad_request("a merge patch must be a JSON object"));
                    }
                    json_patch::merge(&mut doc, &patch);
                }
                other => return Err(ApiError::unsupported_patch(other)),
            }
            doc
        }
    };
    let replicas = wanted
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::new(
            422,
            "Invalid",
            format!(
                "Scale.autoscaling \"{name}\" is invalid: spec.replicas: Invalid value: {replicas}: \
                 must be greater than or equal to 0"
            ),
        ));
    }
    let mut new = (*current).clone();
    set_at(&mut new, &paths.spec_replicas, json!(replicas));
    match wanted
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
    {
        Some(rv) if !rv.is_empty() => {
            meta::meta_mut(&mut new).insert("resourceVersion".into(), json!(rv));
        }
        _ => {
            meta::meta_mut(&mut new).remove("resourceVersion");
        }
    }
    let updated = state.dry_run(dry, |s| s.update(info, ns, name, new, Target::Main))?;
    Ok(json_response(StatusCode::OK, &to_scale(&updated, &paths)))
}

/// Sets the value at a JSON pointer, creating the objects on the way.
fn set_at(obj: &mut Value, pointer: &str, value: Value) {
    let mut here = obj;
    let parts: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect();
    for (i, part) in parts.iter().enumerate() {
        if !here.is_object() {
            *here = json!({});
        }
        let map = here.as_object_mut().expect("made an object");
        if i + 1 == parts.len() {
            map.insert(part.clone(), value);
            return;
        }
        here = map.entry(part.clone()).or_insert_with(|| json!({}));
    }
}
