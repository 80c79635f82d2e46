//! Reading and writing `metadata` fields of objects held as JSON, plus the few value
//! formats the server generates (timestamps, uids, generated names).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata` as a mutable map, created when missing or not an object.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let root = obj.as_object_mut().expect("objects are JSON objects");
    let entry = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("just made an object")
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid").unwrap_or("")
}

pub fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}

pub fn is_deleting(obj: &Value) -> bool {
    meta_str(obj, "deletionTimestamp").is_some()
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub fn set_finalizers(obj: &mut Value, finalizers: Vec<String>) {
    let m = meta_mut(obj);
    if finalizers.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), Value::from(finalizers));
    }
}

/// The `uid`s of an object's ownerReferences.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    owner_refs(obj)
        .iter()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

pub fn owner_refs(obj: &Value) -> Vec<Value> {
    meta(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub fn set_owner_refs(obj: &mut Value, refs: Vec<Value>) {
    let m = meta_mut(obj);
    if refs.is_empty() {
        m.remove("ownerReferences");
    } else {
        m.insert("ownerReferences".into(), Value::Array(refs));
    }
}

/// RFC 3339 with second precision and `Z`, as metav1.Time serialises.
pub fn now_rfc3339() -> String {
    timestamp_rfc3339(jiff::Timestamp::now())
}

pub fn timestamp_rfc3339(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `generateName` plus five characters from the alphabet kube-apiserver uses.
pub fn generated_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let random = uuid::Uuid::new_v4();
    let suffix: String = random.as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect();
    let prefix = if prefix.len() > 58 {
        &prefix[..58]
    } else {
        prefix
    };
    format!("{prefix}{suffix}")
}

/// Why `name` is not a valid object name, in the wording of apimachinery's validation.
/// Names of RBAC objects only need to be usable as a path segment (`system:discovery`).
pub fn invalid_path_segment(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("Invalid value: \"{name}\": may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            return Some(format!(
                "Invalid value: \"{name}\": may not contain '{bad}'"
            ));
        }
    }
    None
}

pub fn invalid_name(name: &str, label_only: bool) -> Option<String> {
    static LABEL: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").expect("static regex"));
    static SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
            .expect("static regex")
    });
    let (label, subdomain) = (&*LABEL, &*SUBDOMAIN);
    if label_only {
        if name.len() > 63 || !label.is_match(name) {
            return Some(format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric \
                 characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
                 '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ));
        }
    } else if name.len() > 253 || !subdomain.is_match(name) {
        return Some(format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
             characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', \
             regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ));
    }
    None
}

/// Parses a query boolean like Go's `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}
