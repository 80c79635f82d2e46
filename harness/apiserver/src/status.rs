//! `metav1.Status` errors: every failure a client can cause becomes one of these, with the
//! reason, code and message wording of kube-apiserver, because kubectl and kube-rs print or
//! match them verbatim.

use serde_json::{Value, json};

use crate::registry::ResourceInfo;
use crate::schema::FieldError;

/// An API error that renders as a `Status` body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// `pods "p1" not found`.
    pub fn not_found(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", info.qualified_plural(), name),
        )
        .with_details(resource_details(info, name))
    }

    pub fn namespace_not_found(namespace: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("namespaces \"{namespace}\" not found"),
        )
        .with_details(json!({"name": namespace, "kind": "namespaces"}))
    }

    /// The path names nothing this server serves.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    pub fn already_exists(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", info.qualified_plural(), name),
        )
        .with_details(resource_details(info, name))
    }

    /// A stale resourceVersion or a failed precondition.
    pub fn conflict(info: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                info.qualified_plural(),
                name,
                why
            ),
        )
        .with_details(resource_details(info, name))
    }

    pub fn stale(info: &ResourceInfo, name: &str) -> Self {
        Self::conflict(
            info,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 422 with field causes: `GameServer.gameplane.local "x" is invalid: spec.templateRef: Required value`.
    pub fn invalid(info: &ResourceInfo, name: &str, errors: &[FieldError]) -> Self {
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.cause_type(), "message": e.message, "field": e.field}))
            .collect();
        let joined = if errors.len() == 1 {
            errors[0].to_string()
        } else {
            format!(
                "[{}]",
                errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Self::new(
            422,
            "Invalid",
            format!(
                "{} \"{}\" is invalid: {}",
                info.qualified_kind(),
                name,
                joined
            ),
        )
        .with_details(json!({
            "name": name,
            "group": info.group,
            "kind": info.kind,
            "causes": causes,
        }))
    }

    /// 422 for one field, built by the server itself (not the CRD schema).
    pub fn invalid_field(
        info: &ResourceInfo,
        name: &str,
        field: &str,
        reason: &'static str,
        message: &str,
    ) -> Self {
        Self::new(
            422,
            "Invalid",
            format!(
                "{} \"{}\" is invalid: {}: {}",
                info.qualified_kind(),
                name,
                field,
                message
            ),
        )
        .with_details(json!({
            "name": name, "group": info.group, "kind": info.kind,
            "causes": [{"reason": reason, "message": message, "field": field}],
        }))
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({content_type}) - accepted media types include: \
                 application/json, application/yaml, application/vnd.kubernetes.protobuf"
            ),
        )
    }

    pub fn unsupported_patch(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({content_type}) - accepted media types include: \
                 application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
            ),
        )
    }

    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is larger than the limit of {limit} bytes"),
        )
    }

    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )
    }

    /// A watch from a resourceVersion older than the retained history.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 500 as `NewInternalError` builds it: the cause repeated in `details.causes`.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(json!({"causes": [{"message": message}]}))
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// The `Status` object, its fields in the order kube-apiserver's encoder writes them
    /// (`metav1.Status`'s declaration order: kind, apiVersion, metadata, status, message,
    /// reason, details, code), empty fields left out as Go's `omitempty` leaves them out.
    pub fn to_status(&self) -> Value {
        let mut status = serde_json::Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        if !self.message.is_empty() {
            status.insert("message".into(), json!(self.message));
        }
        if !self.reason.is_empty() {
            status.insert("reason".into(), json!(self.reason));
        }
        if let Some(details) = &self.details {
            status.insert("details".into(), ordered_details(details));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }

    /// The `Status` body as kube-apiserver sends it: the JSON and the newline its stream
    /// encoder ends every object with.
    pub fn to_body(&self) -> Vec<u8> {
        let mut body = go_escaped(&crate::render::render_value(&self.to_status()));
        body.push(b'\n');
        body
    }
}

/// JSON as Go's `encoding/json` writes it by default: `<`, `>` and `&` (which only occur inside
/// strings) as `\u003c`, `\u003e`, `\u0026`, and the line separators U+2028/U+2029 escaped.
fn go_escaped(json: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(json);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.into_bytes()
}

/// `metav1.StatusDetails` in declaration order (name, group, kind, uid, causes,
/// retryAfterSeconds), each cause as `StatusCause` (reason, message, field); empty strings,
/// an empty cause list and a zero retry are left out.
fn ordered_details(details: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["name", "group", "kind", "uid"] {
        if let Some(v) = details.get(key).filter(|v| v.as_str() != Some("")) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(causes) = details
        .get("causes")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
    {
        let causes = causes
            .iter()
            .map(|cause| {
                let mut c = serde_json::Map::new();
                for key in ["reason", "message", "field"] {
                    if let Some(v) = cause.get(key).filter(|v| v.as_str() != Some("")) {
                        c.insert(key.into(), v.clone());
                    }
                }
                Value::Object(c)
            })
            .collect();
        out.insert("causes".into(), Value::Array(causes));
    }
    if let Some(v) = details
        .get("retryAfterSeconds")
        .filter(|v| v.as_i64().is_some_and(|n| n != 0))
    {
        out.insert("retryAfterSeconds".into(), v.clone());
    }
    Value::Object(out)
}

fn resource_details(info: &ResourceInfo, name: &str) -> Value {
    if info.group.is_empty() {
        json!({"name": name, "kind": info.plural})
    } else {
        json!({"name": name, "group": info.group, "kind": info.plural})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../tests/fixtures/status-bodies.json");

    fn fixture_body(case: &str) -> String {
        let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
        fixture["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case"] == case)
            .and_then(|c| c["body"].as_str())
            .unwrap_or_else(|| panic!("no fixture case {case}"))
            .to_string()
    }

    #[test]
    fn an_internal_error_renders_as_kube_apiservers() {
        let body = ApiError::internal("reading the log failed: disk gone").to_body();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            fixture_body("500 internal error")
        );
    }

    #[test]
    fn details_are_ordered_and_empty_fields_left_out_whatever_the_construction_order() {
        let mut e = ApiError::forbidden("m");
        e.details = Some(json!({
            "causes": [{"field": "f", "message": "", "reason": "R"}],
            "kind": "deployments", "group": "apps", "name": "web", "uid": "",
            "retryAfterSeconds": 0,
        }));
        assert_eq!(
            String::from_utf8(e.to_body()).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"m\",\"reason\":\"Forbidden\",\
             \"details\":{\"name\":\"web\",\"group\":\"apps\",\"kind\":\"deployments\",\"causes\":[{\"reason\":\"R\",\"field\":\"f\"}]},\"code\":403}\n"
        );
    }

    #[test]
    fn html_characters_are_escaped_as_go_escapes_them() {
        let e = ApiError::bad_request("a < b && c > d");
        let body = String::from_utf8(e.to_body()).unwrap();
        assert!(
            body.contains(r#""message":"a \u003c b \u0026\u0026 c \u003e d""#),
            "{body}"
        );
        let parsed: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["message"], "a < b && c > d");
    }
}
