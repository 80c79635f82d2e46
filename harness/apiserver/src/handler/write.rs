//! The writing verbs' helpers: patches of every content type, delete options,
//! deletecollection, dry runs, strict field validation and warning headers.

use super::*;

/// `dryRun=All`: validate and answer as if written, store nothing.
pub(super) fn dry_run(query: &Query) -> Result<bool, ApiError> {
    match query.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "invalid dry run option: {other:?}; the only supported value is \"All\""
        ))),
    }
}

/// `fieldValidation=Strict`: unknown fields of custom resources are refused, not pruned.
pub(super) fn strict_fields(
    call: &Call<'_>,
    info: &ResourceInfo,
    obj: &Value,
) -> Result<(), ApiError> {
    if call.query.get("fieldValidation").map(String::as_str) == Some("Strict") {
        crate::strict::check(info, obj)?;
    }
    Ok(())
}

/// `Warning` headers (kubectl prints them as `Warning: …`) for what a write stored but the
/// server will not enforce: CEL rules of a CRD outside the supported subset.
pub(super) fn with_warnings(
    mut response: Response<Body>,
    info: &ResourceInfo,
    obj: &Value,
) -> Response<Body> {
    if &*info.storage != crate::state::CRD_STORAGE {
        return response;
    }
    for rule in crate::crd::unenforced_rules(obj) {
        let text = format!(
            "299 - \"x-kubernetes-validations rule is stored but not enforced: {}\"",
            rule.replace('"', "'")
        );
        if let Ok(value) = http::HeaderValue::from_str(&text) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    response
}

/// The object a write (or read) answers with: as served at `info`'s version, or its
/// `PartialObjectMetadata` when the client's Accept asks for metadata only (kube-rs's
/// `patch_metadata`, client-go's metadata client).
pub(super) fn object_response(
    headers: &http::HeaderMap,
    code: StatusCode,
    info: &ResourceInfo,
    obj: &Value,
) -> Response<Body> {
    let body = if negotiate::wants_metadata(headers) {
        render_value(&negotiate::partial_metadata(obj))
    } else {
        render_value(&view(info, obj))
    };
    bytes_response(code, "application/json", body)
}

pub(super) fn patch(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    target: Target,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let ct = negotiate::content_type(call.headers);
    let patch_doc: Value = match ct.as_str() {
        "application/merge-patch+json"
        | "application/json-patch+json"
        | "application/strategic-merge-patch+json" => negotiate::parse_json(body)?,
        "application/apply-patch+yaml" => serde_yaml::from_slice::<Value>(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
        other => return Err(ApiError::unsupported_patch(other)),
    };
    if ct == "application/strategic-merge-patch+json" && info.is_custom() {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    let dry = dry_run(call.query)?;
    let mut state = call.shared.state();
    let current = state.get(info, ns, name);
    let Some(current) = current else {
        if ct == "application/apply-patch+yaml" {
            let mut obj = patch_doc;
            if !obj.is_object() {
                return Err(ApiError::bad_request("an apply patch must be an object"));
            }
            negotiate::check_type(info, &mut obj)?;
            meta::meta_mut(&mut obj).insert("name".into(), json!(name));
            let created = state.dry_run(dry, |s| s.create(info, ns, obj))?;
            return Ok(object_response(
                call.headers,
                StatusCode::CREATED,
                info,
                &created,
            ));
        }
        return Err(ApiError::not_found(info, name));
    };
    let original = view(info, &current).into_owned();
    let patched = match ct.as_str() {
        "application/json-patch+json" => {
            let ops: json_patch::Patch = serde_json::from_value(patch_doc)
                .map_err(|e| ApiError::bad_request(format!("the JSON patch is malformed: {e}")))?;
            let mut doc = original;
            json_patch::patch(&mut doc, &ops)
                .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
            doc
        }
        "application/strategic-merge-patch+json" => {
            if !patch_doc.is_object() {
                return Err(ApiError::bad_request(format!(
                    "a strategic merge patch must be a JSON object, not a {}",
                    negotiate::json_type(&patch_doc)
                )));
            }
            crate::smp::strategic_merge(&original, &patch_doc, &info.kind)
                .map_err(|e| ApiError::new(422, "Invalid", e))?
        }
        _ => {
            if !patch_doc.is_object() {
                return Err(ApiError::bad_request(format!(
                    "a merge patch must be a JSON object, not a {}",
                    negotiate::json_type(&patch_doc)
                )));
            }
            let mut doc = original;
            json_patch::merge(&mut doc, &patch_doc);
            doc
        }
    };
    if !patched.is_object() {
        return Err(ApiError::new(
            422,
            "Invalid",
            "the patched object is not a JSON object",
        ));
    }
    let mut patched = patched;
    negotiate::check_type(info, &mut patched)?;
    strict_fields(call, info, &patched)?;
    let updated = state.dry_run(dry, |s| s.update(info, ns, name, patched, target))?;
    Ok(with_warnings(
        object_response(call.headers, StatusCode::OK, info, &updated),
        info,
        &updated,
    ))
}

pub(super) fn delete_options(query: &Query, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions::default();
    let parse_policy = |p: &str| match p {
        "Background" => Ok(Propagation::Background),
        "Foreground" => Ok(Propagation::Foreground),
        "Orphan" => Ok(Propagation::Orphan),
        other => Err(ApiError::bad_request(format!(
            "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
        ))),
    };
    if !body.iter().all(u8::is_ascii_whitespace) {
        let doc = negotiate::parse_json(body)?;
        if !doc.is_object() {
            return Err(ApiError::bad_request("DeleteOptions must be a JSON object"));
        }
        if let Some(p) = doc.get("propagationPolicy").and_then(Value::as_str) {
            opts.propagation = Some(parse_policy(p)?);
        }
        if doc.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
            opts.propagation = Some(Propagation::Orphan);
        }
        opts.uid = doc
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.resource_version = doc
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.grace_period = doc.get("gracePeriodSeconds").and_then(Value::as_i64);
        opts.dry_run = doc
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    }
    if let Some(p) = query.get("propagationPolicy") {
        opts.propagation = Some(parse_policy(p)?);
    }
    if query.get("orphanDependents").map(String::as_str) == Some("true") {
        opts.propagation = Some(Propagation::Orphan);
    }
    if let Some(g) = query.get("gracePeriodSeconds") {
        opts.grace_period =
            Some(g.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid gracePeriodSeconds: {g:?}"))
            })?);
    }
    Ok(opts)
}

pub(super) fn delete_collection(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: Option<&str>,
    opts: &DeleteOptions,
) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(call.query, info)?;
    let dry = dry_run(call.query)? || opts.dry_run;
    let mut state = call.shared.state();
    let targets: Vec<(String, String)> = state
        .list(info, ns)
        .into_iter()
        .filter(|o| labels.matches(o) && fields.matches(o))
        .map(|o| {
            (
                meta::meta_str(&o, "namespace").unwrap_or("").to_string(),
                meta::name(&o).to_string(),
            )
        })
        .collect();
    let mut deleted = Vec::new();
    for (obj_ns, name) in targets {
        match state.dry_run(dry, |s| s.delete(info, &obj_ns, &name, opts)) {
            Ok((obj, _)) => deleted.push(obj),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rv = state.resource_version().to_string();
    drop(state);
    Ok(bytes_response(
        StatusCode::OK,
        "application/json",
        render_list(info, &deleted, &rv),
    ))
}
