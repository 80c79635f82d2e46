//! CustomResourceDefinitions: turning a CRD object into the resources it serves (one per
//! served version, with its compiled schema and printer columns) and the status a real
//! apiextensions controller writes (`NamesAccepted`, `Established`, `acceptedNames`).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::meta;
use crate::registry::{CustomInfo, ResourceInfo, storage_key};
use crate::schema::{FieldError, FieldErrorReason, StructuralSchema};

/// The group, plural and served resources of a CRD, or the field errors that make it invalid.
pub struct Definition {
    pub group: String,
    pub plural: String,
    pub resources: Vec<ResourceInfo>,
}

fn required(field: &str) -> FieldError {
    FieldError {
        reason: FieldErrorReason::Required,
        field: field.into(),
        message: "Required value".into(),
    }
}

fn invalid(field: &str, value: &str, why: &str) -> FieldError {
    FieldError {
        reason: FieldErrorReason::Invalid,
        field: field.into(),
        message: format!("Invalid value: \"{value}\": {why}"),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Reads a CRD object into the resources it serves.
pub fn definition(crd: &Value) -> Result<Definition, Vec<FieldError>> {
    let mut errors = Vec::new();
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let names = spec.get("names").cloned().unwrap_or(Value::Null);
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let scope = spec.get("scope").and_then(Value::as_str).unwrap_or("");
    check_identity(crd, &group, &plural, &kind, scope, &mut errors);
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    check_versions(&versions, &mut errors);
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let list_kind = names
        .get("listKind")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{kind}List"));
    let mut resources = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        let vname = version.get("name").and_then(Value::as_str).unwrap_or("");
        if vname.is_empty() {
            errors.push(required(&format!("spec.versions[{i}].name")));
            continue;
        }
        let schema = match version.pointer("/schema/openAPIV3Schema") {
            Some(s) => match StructuralSchema::from_openapi_v3(s) {
                Ok(schema) => Some(Arc::new(schema)),
                Err(why) => {
                    errors.push(FieldError {
                        reason: FieldErrorReason::Invalid,
                        field: format!("spec.versions[{i}].schema.openAPIV3Schema"),
                        message: format!("Invalid value: \"\": {why}"),
                    });
                    None
                }
            },
            None => None,
        };
        if version.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        resources.push(ResourceInfo {
            group: group.clone(),
            version: vname.to_string(),
            plural: plural.clone(),
            singular: singular.clone(),
            kind: kind.clone(),
            list_kind: list_kind.clone(),
            namespaced: scope == "Namespaced",
            short_names: strings(names.get("shortNames")),
            categories: strings(names.get("categories")),
            status: version.pointer("/subresources/status").is_some(),
            log: false,
            scale: version.pointer("/subresources/scale").is_some(),
            storage: storage_key(&group, &plural),
            custom: Some(CustomInfo {
                schema,
                printer_columns: version
                    .get("additionalPrinterColumns")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                scale: version.pointer("/subresources/scale").cloned(),
                raw_schema: version
                    .pointer("/schema/openAPIV3Schema")
                    .cloned()
                    .map(Arc::new),
            }),
        });
    }
    if errors.is_empty() {
        Ok(Definition {
            group,
            plural,
            resources,
        })
    } else {
        Err(errors)
    }
}

/// The group, names and scope checks of a CRD, in the order kube-apiserver reports them.
fn check_identity(
    crd: &Value,
    group: &str,
    plural: &str,
    kind: &str,
    scope: &str,
    errors: &mut Vec<FieldError>,
) {
    if group.is_empty() {
        errors.push(required("spec.group"));
    } else if crate::registry::is_builtin_group(group) || !group.contains('.') {
        errors.push(invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot, and not a built-in API group",
        ));
    }
    if plural.is_empty() {
        errors.push(required("spec.names.plural"));
    }
    if kind.is_empty() {
        errors.push(required("spec.names.kind"));
    }
    let name = meta::name(crd);
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        errors.push(invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        errors.push(FieldError {
            reason: FieldErrorReason::NotSupported,
            field: "spec.scope".into(),
            message: format!(
                "Unsupported value: \"{scope}\": supported values: \"Cluster\", \"Namespaced\""
            ),
        });
    }
}

/// At least one version, exactly one of them the storage version.
fn check_versions(versions: &[Value], errors: &mut Vec<FieldError>) {
    if versions.is_empty() {
        errors.push(required("spec.versions"));
    }
    let storage_count = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if !versions.is_empty() && storage_count != 1 {
        errors.push(invalid(
            "spec.versions",
            &storage_count.to_string(),
            "must have exactly one version marked as storage version",
        ));
    }
}

/// Writes the status the apiextensions controllers would, keeping condition times of `old`.
pub fn set_status(crd: &mut Value, old: Option<&Value>) {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let mut accepted = names.clone();
    if let Some(a) = accepted.as_object_mut() {
        let kind = a
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        a.entry("singular")
            .or_insert_with(|| json!(kind.to_lowercase()));
        a.entry("listKind")
            .or_insert_with(|| json!(format!("{kind}List")));
    }
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let mut stored = old
        .and_then(|o| o.pointer("/status/storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for v in storage {
        if !stored.contains(&v) {
            stored.push(v);
        }
    }
    let conditions = match old.and_then(|o| o.pointer("/status/conditions")) {
        Some(c) => c.clone(),
        None => {
            let now = meta::now_rfc3339();
            json!([
                {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now, "reason": "NoConflicts",
                 "message": "no conflicts found"},
                {"type": "Established", "status": "True", "lastTransitionTime": now, "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted"},
            ])
        }
    };
    crd["status"] =
        json!({"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored});
}

/// The `x-kubernetes-validations` rules of a CRD's versions the schema evaluator cannot run.
pub fn unenforced_rules(crd: &Value) -> Vec<String> {
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut rules = Vec::new();
    for version in versions {
        let name = version
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(schema) = version.pointer("/schema/openAPIV3Schema")
            && let Ok(compiled) = StructuralSchema::from_openapi_v3(schema)
        {
            rules.extend(
                compiled
                    .unenforced_rules()
                    .into_iter()
                    .map(|r| format!("{name}: {r}")),
            );
        }
    }
    rules
}
