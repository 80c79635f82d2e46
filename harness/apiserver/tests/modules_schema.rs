//! Structural-schema admission: defaults, pruning and validation as kube-apiserver does them.
//! The module is included by path so these tests run whether or not `lib.rs` declares it.

#[allow(dead_code)]
#[path = "../src/schema.rs"]
mod schema;

use schema::{FieldError, FieldErrorReason, StructuralSchema};
use serde_json::{Value, json};

fn compile(schema: Value) -> StructuralSchema {
    StructuralSchema::from_openapi_v3(&schema).expect("schema compiles")
}

fn errors_of(schema: &StructuralSchema, mut object: Value) -> Vec<FieldError> {
    match schema.admit(&mut object) {
        Ok(()) => panic!("expected {object} to be rejected"),
        Err(errors) => errors,
    }
}

fn only_error(schema: &StructuralSchema, object: Value) -> FieldError {
    let errors = errors_of(schema, object);
    assert_eq!(errors.len(), 1, "expected one error, got {errors:?}");
    errors.into_iter().next().unwrap()
}

/// A CRD schema in the shape controller-gen writes, small enough to read.
fn widget_schema() -> StructuralSchema {
    compile(json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["templateRef"],
                "properties": {
                    "templateRef": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 8}}
                    },
                    "replicas": {"type": "integer", "default": 1, "minimum": 0, "maximum": 10},
                    "size": {"type": "integer", "minimum": 1},
                    "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "version": {"type": "string", "pattern": "^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$"},
                    "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "protocol": {"type": "string", "default": "TCP"}
                            }
                        }
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2, "minProperties": 1},
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "note": {"type": "string", "nullable": true},
                    "enabled": {"type": "boolean"},
                    "startedAt": {"type": "string", "format": "date-time"},
                    "storage": {
                        "type": "object",
                        "default": {},
                        "properties": {
                            "size": {"type": "string", "default": "1Gi"},
                            "backup": {
                                "type": "object",
                                "properties": {"keep": {"type": "integer", "default": 3}}
                            }
                        }
                    },
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": true,
                        "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}
                    },
                    "choice": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]
                    },
                    "notEmpty": {"type": "string", "not": {"enum": [""]}},
                    "bounded": {"type": "integer", "allOf": [{"minimum": 2}, {"maximum": 4}]}
                }
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    }))
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": spec})
}

#[test]
fn a_valid_object_is_admitted_with_defaults_applied() {
    let schema = widget_schema();
    let mut object = widget(json!({
        "templateRef": {"name": "mc"},
        "ports": [{"name": "game"}],
        "storage": {"backup": {}},
        "port": "http",
        "note": null,
        "startedAt": "2026-11-29T21:28:27Z"
    }));
    schema.admit(&mut object).expect("valid object is admitted");
    assert_eq!(object["spec"]["replicas"], json!(1));
    assert_eq!(object["spec"]["ports"][0]["protocol"], json!("TCP"));
    assert_eq!(object["spec"]["storage"]["size"], json!("1Gi"));
    assert_eq!(object["spec"]["storage"]["backup"]["keep"], json!(3));
    assert_eq!(object["spec"]["note"], Value::Null);
}

#[test]
fn a_defaulted_object_gets_its_nested_defaults() {
    let schema = widget_schema();
    let mut object = widget(json!({"templateRef": {"name": "mc"}}));
    schema.admit(&mut object).unwrap();
    assert_eq!(object["spec"]["storage"], json!({"size": "1Gi"}));
}

#[test]
fn unknown_fields_are_pruned_but_type_meta_and_preserved_fields_stay() {
    let schema = widget_schema();
    let mut object = widget(json!({
        "templateRef": {"name": "mc", "bogus": 1},
        "unknownTop": true,
        "extra": {"anything": {"goes": [1, 2]}},
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y", "z": 1}, "junk": 1}
    }));
    object["topLevelJunk"] = json!(1);
    object["status"] = json!({"free": "form"});
    schema.admit(&mut object).unwrap();
    assert_eq!(object["spec"]["templateRef"], json!({"name": "mc"}));
    assert!(object["spec"].get("unknownTop").is_none());
    assert!(object.get("topLevelJunk").is_none());
    assert_eq!(object["metadata"], json!({"name": "w1"}));
    assert_eq!(
        object["spec"]["extra"],
        json!({"anything": {"goes": [1, 2]}})
    );
    assert_eq!(
        object["spec"]["template"],
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y"}})
    );
    assert_eq!(object["status"], json!({"free": "form"}));
}

#[test]
fn a_missing_required_field_is_reported_with_its_path() {
    let schema = widget_schema();
    let error = only_error(&schema, widget(json!({"templateRef": {}})));
    assert_eq!(error.reason, FieldErrorReason::Required);
    assert_eq!(error.field, "spec.templateRef.name");
    assert_eq!(error.message, "Required value");
    assert_eq!(error.cause_type(), "FieldValueRequired");
    assert_eq!(error.to_string(), "spec.templateRef.name: Required value");
}

#[test]
fn a_wrong_type_reads_like_the_real_server() {
    let schema = widget_schema();
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "replicas": "string"})),
    );
    assert_eq!(error.reason, FieldErrorReason::TypeInvalid);
    assert_eq!(error.cause_type(), "FieldValueTypeInvalid");
    assert_eq!(error.field, "spec.replicas");
    assert_eq!(
        error.message,
        r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
    );
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "replicas": 1.5})),
    );
    assert_eq!(
        error.message,
        r#"Invalid value: "number": spec.replicas in body must be of type integer: "number""#
    );
    // A null in a non-nullable field is dropped (or defaulted), as upstream does; a nullable
    // one keeps it; a null list item is a type error.
    let mut object = widget(
        json!({"templateRef": {"name": "a"}, "enabled": null, "replicas": null, "note": null}),
    );
    schema.admit(&mut object).unwrap();
    assert!(object["spec"].get("enabled").is_none(), "{object}");
    assert_eq!(object["spec"]["replicas"], json!(1));
    assert_eq!(object["spec"]["note"], Value::Null);
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "tags": [null]})),
    );
    assert_eq!(error.field, "spec.tags[0]");
    assert_eq!(
        error.message,
        r#"Invalid value: "null": spec.tags[0] in body must be of type string: "null""#
    );
}

#[test]
fn enum_violations_list_the_supported_values() {
    let schema = widget_schema();
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "mode": "x"})),
    );
    assert_eq!(error.reason, FieldErrorReason::NotSupported);
    assert_eq!(error.cause_type(), "FieldValueNotSupported");
    assert_eq!(
        error.message,
        r#"Unsupported value: "x": supported values: "a", "b""#
    );
}

#[test]
fn numeric_bounds_are_enforced_inclusive_and_exclusive() {
    let schema = widget_schema();
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "size": 0})),
    );
    assert_eq!(error.reason, FieldErrorReason::Invalid);
    assert_eq!(
        error.message,
        "Invalid value: 0: spec.size in body should be greater than or equal to 1"
    );
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "replicas": 11})),
    );
    assert_eq!(
        error.message,
        "Invalid value: 11: spec.replicas in body should be less than or equal to 10"
    );
    let errors = errors_of(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "ratio": 0})),
    );
    assert_eq!(
        errors[0].message,
        "Invalid value: 0: spec.ratio in body should be greater than 0"
    );
    let errors = errors_of(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "ratio": 1})),
    );
    assert_eq!(
        errors[0].message,
        "Invalid value: 1: spec.ratio in body should be less than 1"
    );
    let mut ok =
        widget(json!({"templateRef": {"name": "a"}, "ratio": 0.5, "replicas": 10, "size": 1}));
    schema.admit(&mut ok).unwrap();
}

#[test]
fn string_length_pattern_and_format_are_enforced() {
    let schema = widget_schema();
    let error = only_error(&schema, widget(json!({"templateRef": {"name": ""}})));
    assert_eq!(
        error.message,
        r#"Invalid value: "": spec.templateRef.name in body should be at least 1 chars long"#
    );
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "ninechars"}})),
    );
    assert_eq!(error.reason, FieldErrorReason::TooLong);
    assert_eq!(error.cause_type(), "FieldValueTooLong");
    assert_eq!(error.message, "Too long: may not be more than 8 bytes");
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "version": "1.0-"})),
    );
    assert_eq!(
        error.message,
        r#"Invalid value: "1.0-": spec.version in body should match '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$'"#
    );
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "startedAt": "yesterday"})),
    );
    assert_eq!(error.field, "spec.startedAt");
    assert!(error.message.contains("date-time"), "{error}");
}

#[test]
fn list_limits_and_duplicates_are_enforced() {
    let schema = widget_schema();
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "tags": ["a", "b", "c"]})),
    );
    assert_eq!(error.reason, FieldErrorReason::TooMany);
    assert_eq!(error.cause_type(), "FieldValueTooMany");
    assert_eq!(error.message, "Too many: 3: must have at most 2 items");
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "tags": []})),
    );
    assert_eq!(
        error.message,
        "Invalid value: []: spec.tags in body should have at least 1 items"
    );
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "tags": ["a", "a"]})),
    );
    assert_eq!(error.reason, FieldErrorReason::Duplicate);
    assert_eq!(error.field, "spec.tags[1]");
    assert_eq!(error.message, r#"Duplicate value: "a""#);
    let error = only_error(
        &schema,
        widget(
            json!({"templateRef": {"name": "a"}, "ports": [{"name": "x"}, {"name": "x", "protocol": "UDP"}]}),
        ),
    );
    assert_eq!(error.reason, FieldErrorReason::Duplicate);
    assert_eq!(error.cause_type(), "FieldValueDuplicate");
    assert_eq!(error.field, "spec.ports[1]");
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "ports": [{"protocol": "UDP"}]})),
    );
    assert_eq!(error.field, "spec.ports[0].name");
}

#[test]
fn maps_check_their_values_and_property_counts() {
    let schema = widget_schema();
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "labels": {"a": 1}})),
    );
    assert_eq!(error.field, "spec.labels.a");
    assert_eq!(error.reason, FieldErrorReason::TypeInvalid);
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "labels": {"a": "1", "b": "2", "c": "3"}})),
    );
    assert_eq!(error.reason, FieldErrorReason::TooMany);
    assert_eq!(error.message, "Too many: 3: must have at most 2 items");
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "labels": {}})),
    );
    assert!(
        error.message.contains("should have at least 1 properties"),
        "{error}"
    );
    let mut ok = widget(json!({"templateRef": {"name": "a"}, "labels": {"k": "v"}}));
    schema.admit(&mut ok).unwrap();
    assert_eq!(
        ok["spec"]["labels"],
        json!({"k": "v"}),
        "map entries are not pruned"
    );
}

#[test]
fn int_or_string_accepts_both_and_nothing_else() {
    let schema = widget_schema();
    for port in [json!(8080), json!("http")] {
        let mut ok = widget(json!({"templateRef": {"name": "a"}, "port": port}));
        schema.admit(&mut ok).unwrap();
    }
    let errors = errors_of(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "port": true})),
    );
    assert_eq!(errors[0].field, "spec.port");
}

#[test]
fn combinators_are_validated() {
    let schema = widget_schema();
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "choice": {"a": "x", "b": "y"}})),
    );
    assert!(
        error
            .message
            .contains("must validate one and only one schema (oneOf)"),
        "{error}"
    );
    let mut ok = widget(json!({"templateRef": {"name": "a"}, "choice": {"b": "y"}}));
    schema.admit(&mut ok).unwrap();
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "notEmpty": ""})),
    );
    assert!(
        error.message.contains("must not validate the schema (not)"),
        "{error}"
    );
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "bounded": 5})),
    );
    assert!(error.message.contains("less than or equal to 4"), "{error}");
    let error = only_error(
        &schema,
        widget(json!({"templateRef": {"name": "a"}, "bounded": 1})),
    );
    assert!(
        error.message.contains("greater than or equal to 2"),
        "{error}"
    );
}

#[test]
fn additional_properties_false_forbids_extras_and_embedded_resources_need_type_meta() {
    let schema = compile(json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "additionalProperties": false, "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {"a": {"type": "string"}}},
            "tpl": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
        }
    }));
    let error = only_error(&schema, json!({"spec": {"a": "x", "b": 1}}));
    assert_eq!(error.field, "spec.b");
    assert!(error.message.contains("forbidden property"), "{error}");
    let errors = errors_of(&schema, json!({"tpl": {"metadata": {}}}));
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["tpl.apiVersion", "tpl.kind"]);
}

#[test]
fn all_errors_are_reported_at_once() {
    let schema = widget_schema();
    let errors = errors_of(&schema, widget(json!({"replicas": -1, "mode": "z"})));
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert!(fields.contains(&"spec.templateRef"), "{fields:?}");
    assert!(fields.contains(&"spec.replicas"), "{fields:?}");
    assert!(fields.contains(&"spec.mode"), "{fields:?}");
}

#[test]
fn malformed_schemas_are_refused_with_the_path() {
    let err = StructuralSchema::from_openapi_v3(
        &json!({"type": "object", "properties": {"a": {"type": "strin"}}}),
    )
    .unwrap_err();
    assert!(err.contains("openAPIV3Schema.properties.a.type"), "{err}");
    let err = StructuralSchema::from_openapi_v3(
        &json!({"properties": {"a": {"type": "string", "pattern": "("}}}),
    )
    .unwrap_err();
    assert!(err.contains("properties.a.pattern"), "{err}");
    let err = StructuralSchema::from_openapi_v3(&json!("object")).unwrap_err();
    assert!(err.contains("must be an object"), "{err}");
}

/// The real Gameplane CRDs: every version compiles, a minimal object of each kind is admitted
/// with its defaults, and the schemas' constraints are enforced.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "every real CRD version checked in turn against one set of objects"
)]
fn the_real_gameplane_crds_are_accepted_and_enforced() {
    let dir = std::path::Path::new("/work/shared/reference/gameplane-crds");
    if !dir.is_dir() {
        println!(
            "NOTE: {} is absent; the Gameplane CRD check did not run",
            dir.display()
        );
        return;
    }
    let mut schemas = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let crd: Value = serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap().to_owned();
        for version in crd["spec"]["versions"].as_array().unwrap() {
            let schema = StructuralSchema::from_openapi_v3(&version["schema"]["openAPIV3Schema"])
                .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), version["name"]));
            schemas.insert(kind.clone(), schema);
        }
    }
    assert!(
        schemas.len() >= 8,
        "expected the 8 Gameplane kinds, got {:?}",
        schemas.keys()
    );
    for (kind, schema) in &schemas {
        assert!(
            schema.unenforced_rules().is_empty(),
            "{kind}: CEL rules outside the supported subset: {:?}",
            schema.unenforced_rules()
        );
    }
    let object = |kind: &str, spec: Value| json!({"apiVersion": "gameplane.local/v1alpha1", "kind": kind, "metadata": {"name": "x"}, "spec": spec});

    let gs = &schemas["GameServer"];
    let mut ok = object(
        "GameServer",
        json!({"templateRef": {"name": "minecraft"}, "bogus": 1}),
    );
    gs.admit(&mut ok).unwrap();
    assert_eq!(
        ok["spec"]["stopGracePeriodSeconds"],
        json!(30),
        "default applied: {ok}"
    );
    assert_eq!(ok["spec"]["suspend"], json!(false));
    assert!(
        ok["spec"].get("bogus").is_none(),
        "unknown field pruned: {ok}"
    );
    let error = only_error(gs, object("GameServer", json!({"templateRef": {}})));
    assert_eq!(error.field, "spec.templateRef.name");
    assert_eq!(error.reason, FieldErrorReason::Required);
    let error = only_error(
        gs,
        object(
            "GameServer",
            json!({"templateRef": {"name": "m"}, "stopGracePeriodSeconds": 601}),
        ),
    );
    assert_eq!(
        error.message,
        "Invalid value: 601: spec.stopGracePeriodSeconds in body should be less than or equal to 600"
    );
    let error = only_error(
        gs,
        object(
            "GameServer",
            json!({"templateRef": {"name": "m"}, "version": "Bad_Version"}),
        ),
    );
    assert_eq!(error.field, "spec.version");
    let error = only_error(gs, object("GameServer", json!({})));
    assert_eq!(error.field, "spec.templateRef");

    let backup = &schemas["Backup"];
    let repo = json!({"name": "repo", "key": "password"});
    let mut ok = object(
        "Backup",
        json!({"serverRef": {"name": "mc1"}, "repoRef": repo}),
    );
    backup.admit(&mut ok).unwrap();
    assert_eq!(ok["spec"]["strategy"], json!("restic-snapshot"));
    assert_eq!(ok["spec"]["quiesce"], json!(true));
    // The CRD's CEL rule: the defaulted restic strategy needs a repoRef.
    let error = only_error(
        backup,
        object("Backup", json!({"serverRef": {"name": "mc1"}})),
    );
    assert_eq!(error.field, "spec");
    assert_eq!(
        error.message,
        r#"Invalid value: "object": repoRef is required for the restic-snapshot strategy"#
    );
    let mut ok = object(
        "Backup",
        json!({"serverRef": {"name": "mc1"}, "strategy": "volume-snapshot"}),
    );
    backup.admit(&mut ok).unwrap();
    let errors = errors_of(
        backup,
        object(
            "Backup",
            json!({"serverRef": {"name": "mc1"}, "strategy": "tar"}),
        ),
    );
    assert_eq!(
        errors[0].message,
        r#"Unsupported value: "tar": supported values: "restic-snapshot", "volume-snapshot""#
    );
    // As upstream, CEL rules are not run on an object with type or enum errors.
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[1]
            .message
            .contains("some validation rules were not checked"),
        "{errors:?}"
    );

    let schedule = &schemas["BackupSchedule"];
    let errors = errors_of(
        schedule,
        object(
            "BackupSchedule",
            json!({"serverRef": {"name": "mc1"}, "schedule": "every-hour", "repoRef": repo}),
        ),
    );
    assert_eq!(errors[0].field, "spec.schedule");
    let mut ok = object(
        "BackupSchedule",
        json!({"serverRef": {"name": "mc1"}, "schedule": "0 * * * *", "repoRef": repo}),
    );
    schedule.admit(&mut ok).unwrap();
    assert_eq!(ok["spec"]["concurrencyPolicy"], json!("Forbid"));

    let template = &schemas["GameTemplate"];
    let errors = errors_of(
        template,
        object(
            "GameTemplate",
            json!({"game": "", "image": "i", "version": "1"}),
        ),
    );
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert!(
        fields.contains(&"spec.displayName") && fields.contains(&"spec.game"),
        "{fields:?}"
    );
    let error = only_error(
        template,
        object(
            "GameTemplate",
            json!({"displayName": "M", "game": "m", "image": "i", "version": "1", "accentColor": "red"}),
        ),
    );
    assert_eq!(error.field, "spec.accentColor");
}

/// `x-kubernetes-validations` with the CEL subset CRD authors use.
fn cel_schema() -> StructuralSchema {
    compile(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.strategy == 'volume' || has(self.repoRef)", "message": "repoRef is required"},
                    {"rule": "has(self.key) != has(self.keyless)", "message": "exactly one of key or keyless", "fieldPath": ".key"},
                    {"rule": "!has(self.tunnel) || !self.tunnel.enabled || has(self.tunnel.secret)", "reason": "FieldValueRequired", "message": "secret is required"},
                    {"rule": "size(self.tags) <= 3 && self.tags.all(t, t.size() > 0) && self.tags.exists_one(t, t == 'main')"},
                    {"rule": "self.replicas * 2 - 1 >= 1 ? true : false", "message": "replicas too small"},
                    {"rule": "self.strategy in ['volume', 'restic'] && 'tags' in self", "message": "in works"},
                    {"rule": "self.missing == 'x' || true"},
                    {"rule": "self.unknownFn()"},
                    {"rule": "self.replicas == oldSelf.replicas"}
                ],
                "properties": {
                    "strategy": {"type": "string", "default": "restic"},
                    "repoRef": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "key": {"type": "string"},
                    "keyless": {"type": "boolean"},
                    "tunnel": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "secret": {"type": "string"}}},
                    "tags": {"type": "array", "items": {"type": "string"}, "default": ["main"]},
                    "replicas": {"type": "integer", "default": 1},
                    "config": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "x-kubernetes-validations": [{"rule": "self.all(k, self[k].size() <= 4)", "message": "values must be at most 4 characters"}]
                    },
                    "paths": {
                        "type": "array",
                        "items": {"type": "string", "x-kubernetes-validations": [{"rule": "!self.startsWith('/') && !self.contains('..')", "message": "path must be relative"}]}
                    }
                }
            }
        }
    }))
}

#[test]
fn cel_rules_are_enforced() {
    let schema = cel_schema();
    assert_eq!(
        schema.unenforced_rules(),
        ["self.unknownFn()", "self.replicas == oldSelf.replicas"]
    );
    let mut ok = json!({"spec": {"repoRef": {"name": "r"}, "key": "k", "config": {"a": "1234"}, "paths": ["world/region"]}});
    schema.admit(&mut ok).unwrap();

    let error = only_error(&schema, json!({"spec": {"key": "k"}}));
    assert_eq!(error.field, "spec");
    assert_eq!(
        error.message,
        r#"Invalid value: "object": repoRef is required"#
    );

    let error = only_error(
        &schema,
        json!({"spec": {"repoRef": {}, "key": "k", "keyless": true}}),
    );
    assert_eq!(error.field, "spec.key", "fieldPath moves the error");
    assert_eq!(
        error.message,
        r#"Invalid value: "object": exactly one of key or keyless"#
    );

    let error = only_error(
        &schema,
        json!({"spec": {"repoRef": {}, "key": "k", "tunnel": {"enabled": true}}}),
    );
    assert_eq!(error.reason, FieldErrorReason::Required);
    assert_eq!(error.message, "Required value: secret is required");
    let mut ok = json!({"spec": {"repoRef": {}, "key": "k", "tunnel": {"enabled": false}}});
    schema.admit(&mut ok).unwrap();

    let error = only_error(
        &schema,
        json!({"spec": {"repoRef": {}, "key": "k", "tags": ["main", "main"]}}),
    );
    assert!(
        error.message.contains("failed rule: size(self.tags) <= 3"),
        "{error}"
    );
    let error = only_error(
        &schema,
        json!({"spec": {"repoRef": {}, "key": "k", "replicas": 0}}),
    );
    assert_eq!(
        error.message,
        r#"Invalid value: "object": replicas too small"#
    );
    let error = only_error(
        &schema,
        json!({"spec": {"repoRef": {}, "key": "k", "strategy": "other"}}),
    );
    assert_eq!(error.message, r#"Invalid value: "object": in works"#);

    let error = only_error(
        &schema,
        json!({"spec": {"repoRef": {}, "key": "k", "config": {"a": "12345"}}}),
    );
    assert_eq!(error.field, "spec.config");
    assert_eq!(
        error.message,
        r#"Invalid value: "object": values must be at most 4 characters"#
    );
    let errors = errors_of(
        &schema,
        json!({"spec": {"repoRef": {}, "key": "k", "paths": ["ok", "/abs", "a/../b"]}}),
    );
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["spec.paths[1]", "spec.paths[2]"]);
    assert_eq!(
        errors[0].message,
        r#"Invalid value: "string": path must be relative"#
    );
}

#[test]
fn cel_evaluation_errors_are_reported_not_panics() {
    let schema = compile(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "properties": {"provider": {"type": "string"}, "steam": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.provider != 'steam' || has(self.steam)", "message": "steam is required"}]
        }}
    }));
    // `provider` absent: selecting it is a CEL "no such key" error, as on a real server.
    let error = only_error(&schema, json!({"spec": {}}));
    assert_eq!(error.field, "spec");
    assert!(error.message.contains("no such key: provider"), "{error}");
    let mut ok = json!({"spec": {"provider": "steam", "steam": "1"}});
    schema.admit(&mut ok).unwrap();
    let error = only_error(&schema, json!({"spec": {"provider": "steam"}}));
    assert_eq!(
        error.message,
        r#"Invalid value: "object": steam is required"#
    );
    // Malformed rules compile to nothing rather than failing the CRD.
    let deep_parens = format!("{}true{}", "(".repeat(10_000), ")".repeat(10_000));
    let deep_nots = format!("{}true", "!".repeat(10_000));
    let long_chain = vec!["true"; 2_000].join(" || ");
    for rule in [
        "self.(",
        "'unterminated",
        "has(self)",
        "a ? b",
        "1 +",
        "self.x[",
        "@",
        &deep_parens,
        &deep_nots,
        &long_chain,
    ] {
        let schema =
            compile(json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}]}));
        assert_eq!(schema.unenforced_rules(), [rule]);
    }
}
