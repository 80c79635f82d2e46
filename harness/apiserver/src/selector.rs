//! Label and field selectors as list and watch requests send them (`labelSelector`,
//! `fieldSelector`), parsed once per request and matched against stored objects.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::registry::ResourceInfo;
use crate::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed `labelSelector`; the empty selector matches everything.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector {
    reqs: Vec<LabelReq>,
}

fn valid_key(key: &str) -> bool {
    static KEY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
            .expect("static regex")
    });
    !key.is_empty() && key.len() <= 316 && KEY.is_match(key)
}

fn valid_value(value: &str) -> bool {
    static VALUE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$").expect("static regex")
    });
    value.len() <= 63 && VALUE.is_match(value)
}

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err("unbalanced parenthesis".into());
                }
            }
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced parenthesis".into());
    }
    parts.push(&s[start..]);
    Ok(parts)
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let bad =
            |why: String| ApiError::bad_request(format!("unable to parse requirement: {why}"));
        let mut reqs = Vec::new();
        if text.trim().is_empty() {
            return Ok(LabelSelector { reqs });
        }
        for part in split_top(text).map_err(bad)? {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad(format!("found '', expected: identifier in {text:?}")));
            }
            let req = if let Some(key) = part.strip_prefix('!') {
                let key = key.trim();
                check_key(key).map_err(bad)?;
                LabelReq::NotExists(key.to_string())
            } else if let Some((key, values)) = split_set(part, " notin ") {
                LabelReq::NotIn(
                    check_key(key).map_err(bad)?,
                    parse_set(values).map_err(bad)?,
                )
            } else if let Some((key, values)) = split_set(part, " in ") {
                LabelReq::In(
                    check_key(key).map_err(bad)?,
                    parse_set(values).map_err(bad)?,
                )
            } else if let Some((key, value)) = part.split_once("!=") {
                LabelReq::NotIn(
                    check_key(key).map_err(bad)?,
                    vec![check_value(value).map_err(bad)?],
                )
            } else if let Some((key, value)) =
                part.split_once("==").or_else(|| part.split_once('='))
            {
                LabelReq::In(
                    check_key(key).map_err(bad)?,
                    vec![check_value(value).map_err(bad)?],
                )
            } else {
                LabelReq::Exists(check_key(part).map_err(bad)?)
            };
            reqs.push(req);
        }
        Ok(LabelSelector { reqs })
    }

    pub fn matches(&self, object: &Value) -> bool {
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|r| match r {
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
            LabelReq::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| x == v)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|v| !vs.iter().any(|x| x == v)),
        })
    }
}

fn split_set<'a>(part: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let idx = part.find(op)?;
    Some((&part[..idx], &part[idx + op.len()..]))
}

fn check_key(key: &str) -> Result<String, String> {
    let key = key.trim();
    if valid_key(key) {
        Ok(key.to_string())
    } else {
        Err(format!("invalid label key {key:?}"))
    }
}

fn check_value(value: &str) -> Result<String, String> {
    let value = value.trim();
    if valid_value(value) {
        Ok(value.to_string())
    } else {
        Err(format!("invalid label value: {value:?}"))
    }
}

fn parse_set(values: &str) -> Result<Vec<String>, String> {
    let values = values.trim();
    let inner = values
        .strip_prefix('(')
        .and_then(|v| v.strip_suffix(')'))
        .ok_or_else(|| format!("found {values:?}, expected: '('"))?;
    inner.split(',').map(check_value).collect()
}

#[derive(Debug, Clone)]
struct FieldReq {
    path: String,
    value: String,
    negate: bool,
}

/// A parsed `fieldSelector`, limited to the fields the resource supports.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector {
    reqs: Vec<FieldReq>,
}

/// Field selectors each resource supports besides `metadata.name` and `metadata.namespace`.
fn extra_fields(info: &ResourceInfo) -> &'static [&'static str] {
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "secrets") => &["type"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "namespaces") => &["status.phase"],
        ("", "persistentvolumeclaims") => &["spec.volumeName"],
        ("batch", "jobs") => &["status.successful"],
        _ => &[],
    }
}

impl FieldSelector {
    pub fn parse(text: &str, info: &ResourceInfo) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if text.trim().is_empty() {
            return Ok(FieldSelector { reqs });
        }
        for part in text.split(',') {
            let part = part.trim();
            let (path, value, negate) = if let Some((p, v)) = part.split_once("!=") {
                (p, v, true)
            } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (p, v, false)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                )));
            };
            let path = path.trim();
            let known = path == "metadata.name"
                || path == "metadata.namespace"
                || extra_fields(info).contains(&path);
            if !known {
                return Err(ApiError::bad_request(format!(
                    "\"{path}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                )));
            }
            reqs.push(FieldReq {
                path: path.to_string(),
                value: value.trim().to_string(),
                negate,
            });
        }
        Ok(FieldSelector { reqs })
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.reqs.iter().all(|r| {
            let actual = field_value(object, &r.path);
            (actual == r.value) != r.negate
        })
    }
}

/// A field's value as a selector compares it: strings as is, others in their JSON form,
/// absent fields as the empty string.
fn field_value(object: &Value, path: &str) -> String {
    if path == "source" {
        return object
            .pointer("/source/component")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
    }
    // Fields kube-apiserver selects on in their Go form: a bool or a count that is absent in
    // JSON is its zero value there (`spec.unschedulable==false` selects an uncordoned node).
    let (path, zero) = match path {
        "spec.unschedulable" => (path, "false"),
        "status.successful" => ("status.succeeded", "0"),
        _ => (path, ""),
    };
    let pointer = format!("/{}", path.replace('.', "/"));
    match object.pointer(&pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => zero.to_string(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_based_label_selectors() {
        let obj = json!({"metadata": {"labels": {"app": "mc", "tier": "game"}}});
        for (sel, want) in [
            ("app=mc", true),
            ("app==mc,tier=game", true),
            ("app!=mc", false),
            ("app in (mc, other)", true),
            ("app notin (mc)", false),
            ("!app", false),
            ("!missing,app", true),
            ("missing", false),
            ("tier notin (x),app in (mc)", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&obj),
                want,
                "{sel}"
            );
        }
        for bad in ["app in mc", "a=b=c=(", "app in (mc", "=x", "app=!!"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad} should not parse");
        }
    }
}
