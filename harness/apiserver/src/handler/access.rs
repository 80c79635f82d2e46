//! Access requests answered at once and never stored: SelfSubjectAccessReview,
//! SubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview, TokenReview, and the
//! `serviceaccounts/NAME/token` subresource (TokenRequest).

use std::collections::BTreeMap;

use super::*;

fn string_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The Attributes a review's `spec` asks about.
fn review_attributes(spec: &Value) -> Result<Attributes, ApiError> {
    if let Some(r) = spec.get("resourceAttributes").filter(|r| r.is_object()) {
        let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
        return Ok(Attributes::resource(
            &s("verb"),
            &s("group"),
            &s("resource"),
            &s("subresource"),
            &s("namespace"),
            &s("name"),
        ));
    }
    if let Some(n) = spec.get("nonResourceAttributes").filter(|n| n.is_object()) {
        return Ok(Attributes::non_resource(
            n["verb"].as_str().unwrap_or(""),
            n["path"].as_str().unwrap_or(""),
        ));
    }
    Err(ApiError::new(
        422,
        "Invalid",
        "spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
    ))
}

/// POST on a create-only resource.
pub(super) async fn review(
    call: &Call<'_>,
    info: &ResourceInfo,
    path: &ResourcePath<'_>,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    if call.method != Method::POST || path.name.is_some() || path.namespace.is_some() {
        return Err(ApiError::method_not_allowed(call.method.as_str()));
    }
    let bytes = read_body(call.shared, call.headers, body).await?;
    let mut obj = negotiate::decode_object(call.headers, &bytes)?;
    negotiate::check_type(info, &mut obj)?;
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    let state = call.shared.state();
    let status = match info.plural.as_str() {
        "selfsubjectaccessreviews" | "subjectaccessreviews" => {
            let subject = if info.plural == "subjectaccessreviews" {
                UserInfo {
                    name: spec["user"].as_str().unwrap_or("").to_string(),
                    uid: spec["uid"].as_str().unwrap_or("").to_string(),
                    groups: string_list(&spec["groups"]),
                    extra: spec["extra"]
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(k, v)| (k.clone(), string_list(v)))
                                .collect::<BTreeMap<_, _>>()
                        })
                        .unwrap_or_default(),
                }
            } else {
                call.user.clone()
            };
            let attrs = review_attributes(&spec)?;
            let decision = rbac::authorize(&state, &subject, &attrs);
            let mut status = json!({"allowed": decision.allowed});
            if !decision.reason.is_empty() {
                status["reason"] = json!(decision.reason);
            }
            status
        }
        "selfsubjectrulesreviews" => {
            let ns = spec["namespace"].as_str().unwrap_or("");
            let (resource_rules, non_resource_rules) = rbac::rules_for(&state, call.user, ns);
            json!({
                "resourceRules": resource_rules,
                "nonResourceRules": non_resource_rules,
                "incomplete": false,
            })
        }
        "selfsubjectreviews" => json!({"userInfo": call.user.to_json()}),
        "tokenreviews" => {
            let token = spec["token"].as_str().unwrap_or("");
            let audiences = string_list(&spec["audiences"]);
            let audience = audiences
                .first()
                .map(String::as_str)
                .unwrap_or(auth::API_AUDIENCE);
            match auth::service_account_user_of(&call.shared.keys, &state, token, audience) {
                Some(user) => json!({
                    "authenticated": true,
                    "user": user.to_json(),
                    "audiences": [audience],
                }),
                None => json!({"authenticated": false, "error": "invalid bearer token"}),
            }
        }
        _ => return Err(ApiError::no_route()),
    };
    meta::meta_mut(&mut obj).insert("creationTimestamp".into(), Value::Null);
    obj["status"] = status;
    Ok(json_response(StatusCode::CREATED, &obj))
}

/// `POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`.
pub(super) async fn token_request(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    if call.method != Method::POST {
        return Err(ApiError::method_not_allowed(call.method.as_str()));
    }
    let bytes = read_body(call.shared, call.headers, body).await?;
    let request = negotiate::decode_object(call.headers, &bytes)?;
    if let Some(kind) = request.get("kind").and_then(Value::as_str)
        && kind != "TokenRequest"
    {
        return Err(ApiError::bad_request(format!(
            "the body of serviceaccounts/token must be a TokenRequest, not {kind}"
        )));
    }
    let state = call.shared.state();
    let sa = state
        .get(info, ns, name)
        .ok_or_else(|| ApiError::not_found(info, name))?;
    let answer = auth::token_request(&call.shared.keys, &state, &sa, &request)?;
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// How many more pods matching `pdb` may be disrupted now, computed from the pods as they
/// are (no disruption controller keeps `status.disruptionsAllowed` here).
/// The budget's `(desiredHealthy, currentHealthy)`, as the disruption controller computes them
/// into its status; disruptions are allowed while current exceeds desired.
fn budget(pdb: &Value, pods: &[Arc<Value>]) -> (i64, i64) {
    let selector = &pdb["spec"]["selector"];
    let matching: Vec<&Arc<Value>> = pods
        .iter()
        .filter(|p| {
            let labels = p.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
            let wanted = selector["matchLabels"].as_object();
            wanted.is_some_and(|w| w.iter().all(|(k, v)| labels.get(k) == Some(v)))
                && p.pointer("/metadata/deletionTimestamp").is_none()
        })
        .collect();
    let expected = matching.len() as i64;
    let healthy = matching
        .iter()
        .filter(|p| {
            p.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
        })
        .count() as i64;
    let resolve = |v: &Value, round_up: bool| -> Option<i64> {
        if let Some(n) = v.as_i64() {
            return Some(n);
        }
        let pct: i64 = v.as_str()?.strip_suffix('%')?.parse().ok()?;
        let scaled = expected * pct;
        Some(if round_up {
            (scaled + 99) / 100
        } else {
            scaled / 100
        })
    };
    let spec = &pdb["spec"];
    let desired = if let Some(min) = spec.get("minAvailable").and_then(|v| resolve(v, true)) {
        min
    } else if let Some(max) = spec.get("maxUnavailable").and_then(|v| resolve(v, true)) {
        expected - max
    } else {
        0
    };
    (desired, healthy)
}

/// `POST …/pods/NAME/eviction` (policy/v1 Eviction): deletes the pod unless a
/// PodDisruptionBudget selecting it allows no disruption (429, as a real server answers).
pub(super) async fn evict(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    if call.method != Method::POST {
        return Err(ApiError::method_not_allowed(call.method.as_str()));
    }
    let bytes = read_body(call.shared, call.headers, body).await?;
    let eviction = negotiate::decode_object(call.headers, &bytes)?;
    if let Some(kind) = eviction.get("kind").and_then(Value::as_str)
        && kind != "Eviction"
    {
        return Err(ApiError::bad_request(format!(
            "the body of pods/eviction must be an Eviction, not {kind}"
        )));
    }
    if let Some(body_name) = meta::meta_str(&eviction, "name")
        && body_name != name
    {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in Eviction object: {name} != {body_name}"
        )));
    }
    let options = eviction
        .get("deleteOptions")
        .filter(|o| o.is_object())
        .map(render_value)
        .unwrap_or_default();
    let opts = delete_options(call.query, &options)?;
    let dry = dry_run(call.query)? || opts.dry_run;
    let mut state = call.shared.state();
    let pod = state
        .get(info, ns, name)
        .ok_or_else(|| ApiError::not_found(info, name))?;
    // As the eviction REST storage: a pod that is Pending, Succeeded or Failed (or already
    // deleting) is evicted whatever its budgets say.
    let running = !matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        None | Some("Pending" | "Succeeded" | "Failed")
    ) && pod.pointer("/metadata/deletionTimestamp").is_none();
    if running && let Some(pdb_info) = state.registry.get("policy", "v1", "poddisruptionbudgets") {
        let pods = state.list(info, Some(ns));
        for pdb in state.list(&pdb_info, Some(ns)) {
            let labels = pod
                .pointer("/metadata/labels")
                .cloned()
                .unwrap_or(json!({}));
            let selects = pdb["spec"]["selector"]["matchLabels"]
                .as_object()
                .is_some_and(|w| w.iter().all(|(k, v)| labels.get(k) == Some(v)));
            let (desired, current) = budget(&pdb, &pods);
            if selects && current - desired < 1 {
                let mut e = ApiError::new(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                );
                e.details = Some(json!({"causes": [{
                    "reason": "DisruptionBudget",
                    "message": format!(
                        "The disruption budget {} needs {} healthy pods and has {} currently",
                        meta::name(&pdb),
                        desired,
                        current
                    ),
                }]}));
                return Err(e);
            }
        }
    }
    state.dry_run(dry, |s| s.delete(info, ns, name, &opts))?;
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    ))
}
