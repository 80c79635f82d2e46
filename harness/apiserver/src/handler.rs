//! Request handling: routing a path to discovery, OpenAPI or a resource, and the verbs on
//! resources (get, list, watch, create, update, patch, delete, deletecollection, status,
//! log). Every failure is answered with a `Status`; a panicking handler becomes a 500.

use std::borrow::Cow;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use futures::{FutureExt, StreamExt, TryStreamExt};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::discovery;
use crate::logs::{LogError, LogRequest};
use crate::meta::{self, parse_bool};
use crate::negotiate::{self, AGGREGATED_DISCOVERY};
use crate::registry::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::server::Shared;
use crate::state::{DeleteOptions, Propagation, Target};
use crate::status::ApiError;
use crate::table::{self, Columns, PrinterColumn};
use crate::watch::{self, WatchRequest};

type Query = HashMap<String, String>;

/// Serves one request; never panics outward.
pub async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    match AssertUnwindSafe(dispatch(shared, req)).catch_unwind().await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => error_response(&error),
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a request handler panicked".into());
            tracing::error!(%why, "request handler panicked");
            error_response(&ApiError::internal(why))
        }
    }
}

pub fn error_response(error: &ApiError) -> Response<Body> {
    json_response(
        StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &error.to_status(),
    )
}

pub fn render_value(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("JSON values serialise")
}

fn json_response(code: StatusCode, v: &Value) -> Response<Body> {
    bytes_response(code, "application/json", render_value(v))
}

fn bytes_response(code: StatusCode, content_type: &str, body: Vec<u8>) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from(body))
        .expect("static response parts")
}

/// An object as served at `info`'s version (custom resources may be stored at another).
pub fn view<'a>(info: &ResourceInfo, obj: &'a Value) -> Cow<'a, Value> {
    let wanted = info.api_version();
    if obj.get("apiVersion").and_then(Value::as_str) == Some(wanted.as_str()) {
        Cow::Borrowed(obj)
    } else {
        let mut o = obj.clone();
        o["apiVersion"] = Value::String(wanted);
        Cow::Owned(o)
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(
                    std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                    16,
                ) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(query: Option<&str>) -> Query {
    let mut map = HashMap::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        map.insert(percent_decode(k), percent_decode(v));
    }
    map
}

fn query_bool(query: &Query, key: &str) -> Result<bool, ApiError> {
    match query.get(key) {
        None => Ok(false),
        Some(v) if v.is_empty() => Ok(true),
        Some(v) => parse_bool(v)
            .ok_or_else(|| ApiError::bad_request(format!("invalid boolean for {key}: {v:?}"))),
    }
}

/// Bodies above the limit are still read (and dropped) up to this size, so the client is
/// not reset mid-upload and reliably sees the 413.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

async fn read_body(
    shared: &Shared,
    headers: &HeaderMap,
    mut body: Incoming,
) -> Result<bytes::Bytes, ApiError> {
    let limit = shared.config.max_body_bytes;
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let mut collected = bytes::BytesMut::new();
    let mut seen = 0usize;
    let drain = async {
        while let Some(frame) = body.frame().await {
            let frame = frame
                .map_err(|e| ApiError::bad_request(format!("cannot read the request body: {e}")))?;
            if let Ok(data) = frame.into_data() {
                seen += data.len();
                if seen <= limit {
                    collected.extend_from_slice(&data);
                } else if seen > DRAIN_LIMIT {
                    break;
                }
            }
        }
        Ok::<(), ApiError>(())
    };
    if declared.is_some_and(|len| len > DRAIN_LIMIT) {
        return Err(ApiError::too_large(limit));
    }
    tokio::time::timeout(Duration::from_secs(30), drain)
        .await
        .map_err(|_| ApiError::new(408, "Timeout", "timed out reading the request body"))??;
    if seen > limit {
        return Err(ApiError::too_large(limit));
    }
    Ok(collected.freeze())
}

async fn dispatch(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let (parts, body) = req.into_parts();
    let query = parse_query(parts.uri.query());
    let segments: Vec<String> = parts
        .uri
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let read_only = parts.method == Method::GET || parts.method == Method::HEAD;
    let discovery_path = matches!(
        segs.as_slice(),
        ["version"]
            | ["api"]
            | ["apis"]
            | ["apis", _]
            | ["api", "v1"]
            | ["apis", _, _]
            | ["openapi", ..]
    ) || matches!(segs.first(), Some(&("healthz" | "readyz" | "livez")));
    if discovery_path && !read_only {
        return Err(ApiError::method_not_allowed(parts.method.as_str()));
    }
    let registry = || shared.state().registry.clone();
    match segs.as_slice() {
        ["version"] => Ok(json_response(StatusCode::OK, &discovery::version())),
        [first, ..] if matches!(*first, "healthz" | "readyz" | "livez") => Ok(bytes_response(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            b"ok".to_vec(),
        )),
        ["api"] => {
            if negotiate::wants_aggregated_discovery(&parts.headers) {
                let doc = discovery::aggregated(&registry(), true);
                Ok(bytes_response(
                    StatusCode::OK,
                    AGGREGATED_DISCOVERY,
                    render_value(&doc),
                ))
            } else {
                Ok(json_response(
                    StatusCode::OK,
                    &discovery::api_versions(&shared.addr.to_string()),
                ))
            }
        }
        ["apis"] => {
            if negotiate::wants_aggregated_discovery(&parts.headers) {
                let doc = discovery::aggregated(&registry(), false);
                Ok(bytes_response(
                    StatusCode::OK,
                    AGGREGATED_DISCOVERY,
                    render_value(&doc),
                ))
            } else {
                Ok(json_response(
                    StatusCode::OK,
                    &discovery::group_list(&registry()),
                ))
            }
        }
        ["apis", group] => discovery::group(&registry(), group)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::no_route),
        ["api", "v1"] => discovery::resource_list(&registry(), "", "v1")
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::no_route),
        ["apis", group, version] => discovery::resource_list(&registry(), group, version)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::no_route),
        ["openapi", "v3"] => Ok(json_response(
            StatusCode::OK,
            &discovery::openapi_root(&registry()),
        )),
        ["openapi", "v3", "api", version] => discovery::openapi_doc(&registry(), "", version)
            .map(|d| json_response(StatusCode::OK, &d))
            .ok_or_else(ApiError::no_route),
        ["openapi", "v3", "apis", group, version] => {
            discovery::openapi_doc(&registry(), group, version)
                .map(|d| json_response(StatusCode::OK, &d))
                .ok_or_else(ApiError::no_route)
        }
        ["api", "v1", rest @ ..] => {
            let call = Call {
                shared: &shared,
                method: parts.method.clone(),
                headers: &parts.headers,
                query: &query,
            };
            resource(call, "", "v1", rest, body).await
        }
        ["apis", group, version, rest @ ..] => {
            let call = Call {
                shared: &shared,
                method: parts.method.clone(),
                headers: &parts.headers,
                query: &query,
            };
            resource(call, group, version, rest, body).await
        }
        _ => Err(ApiError::no_route()),
    }
}

struct Call<'a> {
    shared: &'a Arc<Shared>,
    method: Method,
    headers: &'a HeaderMap,
    query: &'a Query,
}

struct ResourcePath<'a> {
    namespace: Option<&'a str>,
    plural: &'a str,
    name: Option<&'a str>,
    sub: Option<&'a str>,
}

fn parse_resource_path<'a>(rest: &[&'a str]) -> Option<ResourcePath<'a>> {
    let namespaced_form = rest.first() == Some(&"namespaces")
        && rest.len() >= 3
        && !(rest.len() == 3 && matches!(rest[2], "status" | "finalize"));
    if namespaced_form {
        let ns = Some(rest[1]);
        match rest[2..] {
            [plural] => Some(ResourcePath {
                namespace: ns,
                plural,
                name: None,
                sub: None,
            }),
            [plural, name] => Some(ResourcePath {
                namespace: ns,
                plural,
                name: Some(name),
                sub: None,
            }),
            [plural, name, sub] => Some(ResourcePath {
                namespace: ns,
                plural,
                name: Some(name),
                sub: Some(sub),
            }),
            _ => None,
        }
    } else {
        match *rest {
            [plural] => Some(ResourcePath {
                namespace: None,
                plural,
                name: None,
                sub: None,
            }),
            [plural, name] => Some(ResourcePath {
                namespace: None,
                plural,
                name: Some(name),
                sub: None,
            }),
            [plural, name, sub] => Some(ResourcePath {
                namespace: None,
                plural,
                name: Some(name),
                sub: Some(sub),
            }),
            _ => None,
        }
    }
}

fn table_columns(info: &ResourceInfo) -> Columns {
    match &info.custom {
        Some(custom) => Columns::Crd {
            columns: custom
                .printer_columns
                .iter()
                .filter_map(PrinterColumn::from_crd)
                .collect(),
        },
        None => Columns::Builtin {
            kind: info.kind.clone(),
        },
    }
}

async fn resource(
    call: Call<'_>,
    group: &str,
    version: &str,
    rest: &[&str],
    body: Incoming,
) -> Result<Response<Body>, ApiError> {
    let target = parse_resource_path(rest).ok_or_else(ApiError::no_route)?;
    let info = call
        .shared
        .state()
        .registry
        .get(group, version, target.plural)
        .ok_or_else(ApiError::no_route)?;
    if target.namespace.is_some() && !info.namespaced {
        return Err(ApiError::no_route());
    }
    if target.namespace.is_none() && info.namespaced && target.name.is_some() {
        return Err(ApiError::no_route());
    }
    let ns = target.namespace.unwrap_or("");
    let all_namespaces = target.namespace.is_none();
    let status_target = match target.sub {
        None => Target::Main,
        Some("status") if info.status => Target::Status,
        Some("log") if info.log && call.method == Method::GET => {
            let name = target.name.expect("sub implies a name");
            return pod_log(&call, &info, ns, name).await;
        }
        Some(_) => return Err(ApiError::no_route()),
    };
    let method = call.method.clone();
    match (method, target.name) {
        (Method::GET, None) => {
            if query_bool(call.query, "watch")? {
                start_watch(&call, info, target.namespace)
            } else {
                list(&call, &info, target.namespace)
            }
        }
        (Method::GET, Some(name)) => get(&call, &info, ns, name),
        (Method::POST, None) if !(info.namespaced && all_namespaces) => {
            let bytes = read_body(call.shared, call.headers, body).await?;
            let mut obj = negotiate::decode_object(call.headers, &bytes)?;
            negotiate::check_type(&info, &mut obj)?;
            strict_fields(&call, &info, &obj)?;
            let dry = dry_run(call.query)?;
            let created = call
                .shared
                .state()
                .dry_run(dry, |s| s.create(&info, ns, obj))?;
            Ok(with_warnings(
                object_response(StatusCode::CREATED, &info, &created),
                &info,
                &created,
            ))
        }
        (Method::PUT, Some(name)) => {
            let bytes = read_body(call.shared, call.headers, body).await?;
            let mut obj = negotiate::decode_object(call.headers, &bytes)?;
            negotiate::check_type(&info, &mut obj)?;
            strict_fields(&call, &info, &obj)?;
            let dry = dry_run(call.query)?;
            let updated = call
                .shared
                .state()
                .dry_run(dry, |s| s.update(&info, ns, name, obj, status_target))?;
            Ok(with_warnings(
                object_response(StatusCode::OK, &info, &updated),
                &info,
                &updated,
            ))
        }
        (Method::PATCH, Some(name)) => {
            let bytes = read_body(call.shared, call.headers, body).await?;
            patch(&call, &info, ns, name, status_target, &bytes)
        }
        (Method::DELETE, Some(name)) if status_target == Target::Main => {
            let bytes = read_body(call.shared, call.headers, body).await?;
            let opts = delete_options(call.query, &bytes)?;
            let dry = dry_run(call.query)? || opts.dry_run;
            let (obj, _) = call
                .shared
                .state()
                .dry_run(dry, |s| s.delete(&info, ns, name, &opts))?;
            Ok(object_response(StatusCode::OK, &info, &obj))
        }
        (Method::DELETE, None) => {
            let bytes = read_body(call.shared, call.headers, body).await?;
            let opts = delete_options(call.query, &bytes)?;
            delete_collection(&call, &info, target.namespace, &opts)
        }
        (method, _) => Err(ApiError::method_not_allowed(method.as_str())),
    }
}

/// `dryRun=All`: validate and answer as if written, store nothing.
fn dry_run(query: &Query) -> Result<bool, ApiError> {
    match query.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "invalid dry run option: {other:?}; the only supported value is \"All\""
        ))),
    }
}

/// `fieldValidation=Strict`: unknown fields of custom resources are refused, not pruned.
fn strict_fields(call: &Call<'_>, info: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    if call.query.get("fieldValidation").map(String::as_str) == Some("Strict") {
        crate::strict::check(info, obj)?;
    }
    Ok(())
}

/// `Warning` headers (kubectl prints them as `Warning: …`) for what a write stored but the
/// server will not enforce: CEL rules of a CRD outside the supported subset.
fn with_warnings(mut response: Response<Body>, info: &ResourceInfo, obj: &Value) -> Response<Body> {
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

fn object_response(code: StatusCode, info: &ResourceInfo, obj: &Value) -> Response<Body> {
    bytes_response(code, "application/json", render_value(&view(info, obj)))
}

fn get(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let obj = call.shared.state().get(info, ns, name);
    let obj = obj.ok_or_else(|| ApiError::not_found(info, name))?;
    if negotiate::wants_table(call.headers) {
        let viewed = view(info, &obj);
        let rv = meta::resource_version(&viewed).unwrap_or("").to_string();
        let t = table::to_table(
            &table_columns(info),
            &[&viewed],
            &rv,
            jiff::Timestamp::now(),
        );
        return Ok(json_response(StatusCode::OK, &t));
    }
    Ok(object_response(StatusCode::OK, info, &obj))
}

fn selectors(
    query: &Query,
    info: &ResourceInfo,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels =
        LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))?;
    let fields = FieldSelector::parse(
        query.get("fieldSelector").map(String::as_str).unwrap_or(""),
        info,
    )?;
    Ok((labels, fields))
}

fn list(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(call.query, info)?;
    let (items, rv) = {
        let state = call.shared.state();
        let items: Vec<Arc<Value>> = state
            .list(info, ns)
            .into_iter()
            .filter(|o| labels.matches(o) && fields.matches(o))
            .collect();
        (items, state.resource_version())
    };
    let rv = rv.to_string();
    if negotiate::wants_table(call.headers) {
        let viewed: Vec<Cow<'_, Value>> = items.iter().map(|o| view(info, o)).collect();
        let refs: Vec<&Value> = viewed.iter().map(|c| c.as_ref()).collect();
        let t = table::to_table(&table_columns(info), &refs, &rv, jiff::Timestamp::now());
        return Ok(json_response(StatusCode::OK, &t));
    }
    Ok(bytes_response(
        StatusCode::OK,
        "application/json",
        render_list(info, &items, &rv),
    ))
}

/// A `…List` written item by item, without building one big value.
fn render_list(info: &ResourceInfo, items: &[Arc<Value>], rv: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + items.len() * 512);
    let head = json!({"kind": info.list_kind, "apiVersion": info.api_version(), "metadata": {"resourceVersion": rv}});
    let head = render_value(&head);
    out.extend_from_slice(&head[..head.len() - 1]);
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, view(info, item).as_ref()).expect("JSON values serialise");
    }
    out.extend_from_slice(b"]}");
    out
}

fn start_watch(
    call: &Call<'_>,
    info: Arc<ResourceInfo>,
    ns: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(call.query, &info)?;
    let resource_version = match call.query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(v) => Some(
            v.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v:?}")))?,
        ),
    };
    let timeout = match call.query.get("timeoutSeconds") {
        Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid timeoutSeconds: {t:?}"))
        })?)),
        None => None,
    };
    let table = negotiate::wants_table(call.headers).then(|| table_columns(&info));
    let request = WatchRequest {
        info,
        namespace: ns.map(str::to_string),
        labels,
        fields,
        resource_version,
        send_initial_events: query_bool(call.query, "sendInitialEvents")?,
        bookmarks: query_bool(call.query, "allowWatchBookmarks")?,
        timeout,
        table,
    };
    Ok(watch::serve(call.shared, request))
}

fn patch(
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
            return Ok(object_response(StatusCode::CREATED, info, &created));
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
        object_response(StatusCode::OK, info, &updated),
        info,
        &updated,
    ))
}

fn delete_options(query: &Query, body: &[u8]) -> Result<DeleteOptions, ApiError> {
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

fn delete_collection(
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

async fn pod_log(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<Response<Body>, ApiError> {
    let pod = call
        .shared
        .state()
        .get(info, ns, name)
        .ok_or_else(|| ApiError::not_found(info, name))?;
    let names = |list: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.get("name")?.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = names("containers");
    let mut all = containers.clone();
    all.extend(names("initContainers"));
    all.extend(names("ephemeralContainers"));
    let container = match call.query.get("container").filter(|c| !c.is_empty()) {
        Some(c) if all.contains(c) => c.clone(),
        Some(c) => {
            return Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {name}"
            )));
        }
        None => containers
            .first()
            .cloned()
            .ok_or_else(|| ApiError::bad_request(format!("pod {name} has no containers")))?,
    };
    let tail_lines = match call.query.get("tailLines") {
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid tailLines: {t:?}")))?,
        ),
        None => None,
    };
    let follow = query_bool(call.query, "follow")?;
    let request = LogRequest {
        namespace: ns.to_string(),
        pod: name.to_string(),
        container,
        previous: query_bool(call.query, "previous")?,
        tail_lines,
        follow,
    };
    let source = call
        .shared
        .logs
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let source = source.ok_or_else(|| {
        ApiError::service_unavailable(format!(
            "no node serves logs for pod {name}: the API server has no pod log source attached"
        ))
    })?;
    let stream = source.logs(request).await.map_err(|e| match e {
        LogError::NotFound(m) => ApiError::new(404, "NotFound", m),
        LogError::BadRequest(m) => ApiError::bad_request(m),
    })?;
    let builder = Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "text/plain")
        .header(http::header::CACHE_CONTROL, "no-cache, private");
    if follow {
        let stopped = crate::server::stopped(call.shared.shutdown.clone());
        let body = Body::from_stream(stream.take_until(Box::pin(stopped)));
        Ok(builder.body(body).expect("static response parts"))
    } else {
        let chunks: Vec<bytes::Bytes> = stream
            .try_collect()
            .await
            .map_err(|e| ApiError::internal(format!("reading the log failed: {e}")))?;
        Ok(builder
            .body(Body::from(chunks.concat()))
            .expect("static response parts"))
    }
}
