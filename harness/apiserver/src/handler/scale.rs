//! The `scale` subresource of statefulsets (`kubectl scale`): an `autoscaling/v1` Scale view
//! of `spec.replicas`, read and written through the object itself.

use super::*;

/// The Scale view of an object with `spec.replicas` and a label selector.
fn to_scale(obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    let selector = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"),
            "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0))},
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
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
    let view = to_scale(&current);
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
    new["spec"]["replicas"] = json!(replicas);
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
    Ok(json_response(StatusCode::OK, &to_scale(&updated)))
}
