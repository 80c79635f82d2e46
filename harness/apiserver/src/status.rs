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

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

fn resource_details(info: &ResourceInfo, name: &str) -> Value {
    if info.group.is_empty() {
        json!({"name": name, "kind": info.plural})
    } else {
        json!({"name": name, "group": info.group, "kind": info.plural})
    }
}
