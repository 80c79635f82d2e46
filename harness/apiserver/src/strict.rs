//! `fieldValidation=Strict` for custom resources: fields the CRD schema would prune are an
//! error (400, `strict decoding error: unknown field "spec.x"`) instead of being dropped.
//! kubectl sends Strict on create, apply and replace.

use serde_json::Value;

use crate::registry::ResourceInfo;
use crate::status::ApiError;

/// Refuses `obj` if admitting it through the resource's schema would prune fields.
pub fn check(info: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let Some(schema) = info.custom.as_ref().and_then(|c| c.schema.as_ref()) else {
        return Ok(());
    };
    let mut admitted = obj.clone();
    if schema.admit(&mut admitted).is_err() {
        // Validation errors are reported (as 422) by the store, with all their causes.
        return Ok(());
    }
    let mut unknown = Vec::new();
    pruned(obj, &admitted, "", &mut unknown);
    if unknown.is_empty() {
        return Ok(());
    }
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    Err(ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
        fields.join(", "),
        kind = info.kind,
        version = info.version
    )))
}

/// Paths present (and not null) in `before` but gone from `after`.
fn pruned(before: &Value, after: &Value, path: &str, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (key, value) in b {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match a.get(key) {
                    None if !value.is_null() => out.push(child),
                    None => {}
                    Some(kept) => pruned(value, kept, &child, out),
                }
            }
        }
        (Value::Array(b), Value::Array(a)) if b.len() == a.len() => {
            for (i, (x, y)) in b.iter().zip(a).enumerate() {
                pruned(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}
