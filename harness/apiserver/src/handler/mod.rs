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

use crate::auth;
use crate::discovery;
use crate::logs::{LogError, LogRequest};
use crate::meta::{self, parse_bool};
use crate::negotiate::{self, AGGREGATED_DISCOVERY};
use crate::rbac::{self, Attributes};
use crate::registry::ResourceInfo;
use crate::render::{render_value, view};
use crate::selector::{FieldSelector, LabelSelector};
use crate::shared::Shared;
use crate::state::{DeleteOptions, Propagation, Target};
use crate::status::ApiError;
use crate::table::{self, Columns, PrinterColumn};
use crate::user::UserInfo;
use crate::watch::{self, WatchRequest};

mod access;
mod pod_log;
mod read;
mod scale;
mod stream;
mod write;

use access::*;
use pod_log::*;
use read::*;
use scale::*;
use write::*;

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

/// kube-apiserver's deprecation warning on reads of a deprecated resource
/// (`componentstatuses`), which kubectl prints as `Warning: …`.
fn deprecated(mut response: Response<Body>, info: &ResourceInfo) -> Response<Body> {
    if info.read_only() {
        response.headers_mut().append(
            http::header::WARNING,
            http::HeaderValue::from_static("299 - \"v1 ComponentStatus is deprecated in v1.19+\""),
        );
    }
    response
}

pub fn error_response(error: &ApiError) -> Response<Body> {
    bytes_response(
        StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        "application/json",
        error.to_body(),
    )
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

#[expect(
    clippy::too_many_lines,
    reason = "the route table: one match arm per URL shape, kept in one place so the routes read as a list"
)]
async fn dispatch(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let (mut parts, body) = req.into_parts();
    // Taken for the streaming subresources (exec, attach, port-forward), which switch protocols.
    let upgrade = std::sync::Mutex::new(parts.extensions.remove::<hyper::upgrade::OnUpgrade>());
    let raw_query = parts.uri.query().unwrap_or("").to_string();
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
    let user = authorize_request(&shared, &parts, &segs, &query)?;
    let user = &user;
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
                raw_query: &raw_query,
                upgrade,
                user,
            };
            resource(call, "", "v1", rest, body).await
        }
        ["apis", group, version, rest @ ..] => {
            let call = Call {
                shared: &shared,
                method: parts.method.clone(),
                headers: &parts.headers,
                query: &query,
                raw_query: &raw_query,
                upgrade,
                user,
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
    /// The query as sent (repeated parameters such as `command` keep every value).
    raw_query: &'a str,
    upgrade: std::sync::Mutex<Option<hyper::upgrade::OnUpgrade>>,
    /// Whom the request acts as (after impersonation).
    user: &'a UserInfo,
}

/// Authenticates the request, applies impersonation and authorises what it does; the user
/// it acts as, or the 401/403 Status.
fn authorize_request(
    shared: &Shared,
    parts: &http::request::Parts,
    segs: &[&str],
    query: &Query,
) -> Result<UserInfo, ApiError> {
    let state = shared.state();
    let requester = auth::authenticate(&shared.keys, &state, &parts.headers)?;
    let user = auth::impersonate(&state, requester, &parts.headers)?;
    let attrs = Attributes::of_request(
        &parts.method,
        parts.uri.path(),
        segs,
        query_bool(query, "watch").unwrap_or(false),
        query.get("fieldSelector").map(String::as_str),
    );
    if rbac::authorize(&state, &user, &attrs).allowed {
        Ok(user)
    } else {
        Err(rbac::forbidden(&user, &attrs))
    }
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

#[expect(
    clippy::too_many_lines,
    reason = "one match arm per verb on a resource (and its subresources), the dispatch kube-apiserver does"
)]
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
    // A client's write ends the stale view it was served (its watches catch up).
    if let Some(verb) = crate::hook::verb_of(&call.method, target.name.is_some()) {
        call.shared.wrote(&call.user.name, &info.plural, || {
            let sub = target.sub.map(|s| format!("/{s}")).unwrap_or_default();
            let name = target.name.map(|n| format!(" {n}")).unwrap_or_default();
            format!("{verb} {}{sub}{name}", info.plural)
        });
    }
    // The exploration hook sees every mutating request before it is applied, and may hold it.
    let hook = call.shared.hook();
    if let Some(hook) = hook
        && let Some(verb) = crate::hook::verb_of(&call.method, target.name.is_some())
    {
        let answer = hook
            .before_write(crate::hook::WriteRequest {
                user: call.user.name.clone(),
                verb: verb.to_string(),
                group: info.group.clone(),
                resource: info.plural.clone(),
                subresource: target.sub.map(str::to_string),
                namespace: target.namespace.unwrap_or("").to_string(),
                name: target.name.map(str::to_string),
            })
            .await;
        if answer == crate::hook::Answer::Conflict {
            // Another writer got there first: the object moves on, this write is refused.
            let name = target.name.unwrap_or_default();
            if target.name.is_some() {
                call.shared
                    .state()
                    .touch(&info, target.namespace.unwrap_or(""), name);
            }
            return Err(ApiError::conflict(
                &info,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
    }
    if info.create_only() {
        return review(&call, &info, &target, body).await;
    }
    if info.read_only() && call.method != Method::GET {
        return Err(ApiError::method_not_allowed(call.method.as_str()));
    }
    let ns = target.namespace.unwrap_or("");
    let all_namespaces = target.namespace.is_none();
    let status_target = match target.sub {
        None => Target::Main,
        Some("status") if info.status => Target::Status,
        Some("ephemeralcontainers")
            if info.log && matches!(call.method, Method::GET | Method::PUT | Method::PATCH) =>
        {
            Target::EphemeralContainers
        }
        Some("approval")
            if info.group == "certificates.k8s.io"
                && matches!(call.method, Method::GET | Method::PUT | Method::PATCH) =>
        {
            Target::Approval
        }
        Some("log") if info.log && call.method == Method::GET => {
            let name = target.name.expect("sub implies a name");
            return pod_log(&call, &info, ns, name).await;
        }
        Some(sub) if info.log && stream::Kind::parse(sub).is_some() => {
            let name = target.name.expect("sub implies a name");
            let kind = stream::Kind::parse(sub).expect("checked above");
            if !matches!(call.method, Method::GET | Method::POST) {
                return Err(ApiError::method_not_allowed(call.method.as_str()));
            }
            return stream::serve(&call, &info, ns, name, kind).await;
        }
        Some("token") if info.group.is_empty() && info.plural == "serviceaccounts" => {
            let name = target.name.expect("sub implies a name");
            return token_request(&call, &info, ns, name, body).await;
        }
        Some("eviction") if info.log => {
            let name = target.name.expect("sub implies a name");
            return evict(&call, &info, ns, name, body).await;
        }
        Some("scale") if info.scale => {
            let name = target.name.expect("sub implies a name");
            return scale(&call, &info, ns, name, body).await;
        }
        Some(_) => return Err(ApiError::no_route()),
    };
    let method = call.method.clone();
    match (method, target.name) {
        (Method::GET, None) => {
            if query_bool(call.query, "watch")? {
                start_watch(&call, info, target.namespace)
            } else {
                list(&call, &info, target.namespace).map(|r| deprecated(r, &info))
            }
        }
        (Method::GET, Some(name)) => get(&call, &info, ns, name).map(|r| deprecated(r, &info)),
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
                object_response(call.headers, StatusCode::CREATED, &info, &created),
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
                object_response(call.headers, StatusCode::OK, &info, &updated),
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
            Ok(object_response(call.headers, StatusCode::OK, &info, &obj))
        }
        (Method::DELETE, None) => {
            let bytes = read_body(call.shared, call.headers, body).await?;
            let opts = delete_options(call.query, &bytes)?;
            delete_collection(&call, &info, target.namespace, &opts)
        }
        (method, _) => Err(ApiError::method_not_allowed(method.as_str())),
    }
}
