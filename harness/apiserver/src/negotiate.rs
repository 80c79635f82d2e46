//! Content negotiation: decoding request bodies (JSON, YAML, protobuf) into objects, and
//! reading what representation a client asks for (Table, aggregated discovery).

use http::HeaderMap;
use serde_json::Value;

use crate::registry::{ResourceInfo, split_api_version};
use crate::status::ApiError;

/// The media type of the request body, lower-cased and without parameters.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn accept(headers: &HeaderMap) -> String {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",")
        .replace(' ', "")
}

/// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,…`.
pub fn wants_table(headers: &HeaderMap) -> bool {
    accept(headers)
        .split(',')
        .any(|m| m.contains("as=Table") && m.contains("g=meta.k8s.io"))
}

/// `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (or the List form):
/// metadata-only responses, as the metadata clients of client-go, kube-rs and Python ask.
pub fn wants_metadata(headers: &HeaderMap) -> bool {
    accept(headers).split(',').any(|m| {
        (m.contains("as=PartialObjectMetadata;")
            || m.ends_with("as=PartialObjectMetadata")
            || m.contains("as=PartialObjectMetadataList"))
            && m.contains("g=meta.k8s.io")
    })
}

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

/// `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,…`.
pub fn wants_aggregated_discovery(headers: &HeaderMap) -> bool {
    accept(headers).split(',').any(|m| {
        m.contains("as=APIGroupDiscoveryList")
            && m.contains("g=apidiscovery.k8s.io")
            && m.contains("v=v2;")
            || m.ends_with("v=v2") && m.contains("as=APIGroupDiscoveryList")
    })
}

pub const AGGREGATED_DISCOVERY: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Parses JSON with the wording kube-apiserver uses for malformed bodies.
pub fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })
}

/// Decodes an object body of a create or update.
pub fn decode_object(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let ct = content_type(headers);
    let value = match ct.as_str() {
        "" | "application/json" | "*/*" => parse_json(body)?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            serde_yaml::from_slice::<Value>(body).map_err(|e| {
                ApiError::bad_request(format!("couldn't get version/kind; yaml parse error: {e}"))
            })?
        }
        "application/vnd.kubernetes.protobuf" => {
            crate::protobuf::decode_object(body).map_err(|e| {
                // A kind this server cannot decode from protobuf is a media-type problem (415: the
                // client should send JSON); bytes that do not decode are a bad request.
                if e.contains("is not supported; send JSON") {
                    ApiError::new(415, "UnsupportedMediaType", e)
                } else {
                    ApiError::bad_request(format!("protobuf decode error: {e}"))
                }
            })?
        }
        other => return Err(ApiError::unsupported_media_type(other)),
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: the body is a JSON {}, not an object",
            json_type(&value)
        )));
    }
    Ok(value)
}

pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks (or fills in) `apiVersion` and `kind` of a body against the URL's resource.
pub fn check_type(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let expected = info.api_version();
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !api_version.is_empty() {
        let (group, _) = split_api_version(&api_version);
        if group != info.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({expected})"
            )));
        }
    }
    if !kind.is_empty() && kind != info.kind {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {}: the kind in the body does not match the resource \
             of the URL ({})",
            info.version,
            info.kind,
            info.qualified_plural()
        )));
    }
    // Rebuilt so apiVersion and kind come first, as the real server writes them.
    let map = std::mem::take(obj.as_object_mut().expect("decode_object returns objects"));
    let mut ordered = serde_json::Map::with_capacity(map.len() + 2);
    ordered.insert("apiVersion".into(), Value::String(expected));
    ordered.insert("kind".into(), Value::String(info.kind.clone()));
    for (k, v) in map {
        if k != "apiVersion" && k != "kind" {
            ordered.insert(k, v);
        }
    }
    *obj = Value::Object(ordered);
    Ok(())
}
