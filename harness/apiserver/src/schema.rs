//! CRD structural schemas: what the API server does with a custom object before storing it.
//!
//! A [`StructuralSchema`] is built once from a CRD version's `openAPIV3Schema` and then
//! [`admits`](StructuralSchema::admit) every object written to that version, in the same order
//! as kube-apiserver: defaults are applied, unknown fields pruned, then the value is validated.
//! Errors are [`FieldError`]s whose reasons and messages match the real server's `Status`
//! causes, because `kubectl` and kube-rs users read them verbatim.

use regex::Regex;
use serde_json::{Map, Value};

/// A compiled `openAPIV3Schema` of one CRD version.
#[derive(Debug, Clone)]
pub struct StructuralSchema {
    root: Node,
    /// Whether any node carries `x-kubernetes-validations` rules.
    has_rules: bool,
}

/// Why a field was rejected; each maps to a `metav1.CauseType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorReason {
    Invalid,
    Required,
    NotSupported,
    TooMany,
    TooLong,
    TypeInvalid,
    Duplicate,
}

/// One rejected field, as it appears in a 422 `Status`'s `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub reason: FieldErrorReason,
    /// The JSON path of the field, e.g. `spec.templateRef.name` or `spec.ports[1]`.
    pub field: String,
    /// The message body the real server puts in the cause, e.g. `Required value`.
    pub message: String,
}

impl FieldError {
    /// The `type` of the `Status` cause.
    pub fn cause_type(&self) -> &'static str {
        match self.reason {
            FieldErrorReason::Invalid => "FieldValueInvalid",
            FieldErrorReason::Required => "FieldValueRequired",
            FieldErrorReason::NotSupported => "FieldValueNotSupported",
            FieldErrorReason::TooMany => "FieldValueTooMany",
            FieldErrorReason::TooLong => "FieldValueTooLong",
            FieldErrorReason::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorReason::Duplicate => "FieldValueDuplicate",
        }
    }
}

/// `spec.size: Invalid value: 0: …`, the form the server joins into a `Status` message.
impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

#[derive(Debug, Clone, Default)]
enum Additional {
    /// No `additionalProperties`: unknown fields are pruned (or preserved).
    #[default]
    Unset,
    /// `additionalProperties: false` or `true`.
    Bool(bool),
    /// A map whose values follow this schema.
    Schema(Box<Node>),
}

#[derive(Debug, Clone, Default)]
struct Node {
    type_: Option<String>,
    nullable: bool,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    items: Option<Box<Node>>,
    additional: Additional,
    enum_: Option<Vec<Value>>,
    pattern: Option<(String, Regex)>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: bool,
    exclusive_maximum: bool,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    format: Option<String>,
    int_or_string: bool,
    preserve_unknown: bool,
    embedded_resource: bool,
    unique_items: bool,
    list_type: Option<String>,
    list_map_keys: Vec<String>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Box<Node>>,
    default: Option<Value>,
    rules: Vec<Rule>,
}

/// One `x-kubernetes-validations` entry.
#[derive(Debug, Clone)]
struct Rule {
    rule: String,
    message: Option<String>,
    field_path: Option<String>,
    reason: Option<String>,
    /// `None` when the rule is outside the supported CEL subset; it is then not enforced.
    expr: Option<cel::Expr>,
}

fn parse_rules(s: &Map<String, Value>) -> Vec<Rule> {
    let Some(Value::Array(entries)) = s.get("x-kubernetes-validations") else {
        return Vec::new();
    };
    let text = |e: &Value, k: &str| {
        e.get(k)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    };
    entries
        .iter()
        .filter_map(|e| {
            let rule = text(e, "rule")?;
            Some(Rule {
                expr: cel::compile(&rule),
                message: text(e, "message"),
                field_path: text(e, "fieldPath"),
                reason: text(e, "reason"),
                rule,
            })
        })
        .collect()
}

impl StructuralSchema {
    /// Compiles an `openAPIV3Schema`. Fails, naming the path, on a malformed schema (a
    /// non-object node, an unknown type, an invalid regular expression).
    pub fn from_openapi_v3(schema: &Value) -> Result<Self, String> {
        let root = Node::parse(schema, "openAPIV3Schema")?;
        let has_rules = root.has_rules();
        Ok(Self { root, has_rules })
    }

    /// The `x-kubernetes-validations` rules this evaluator cannot run (outside its CEL subset,
    /// or transition rules on `oldSelf`); they are accepted but not enforced, and the server
    /// warns about them when the CRD is written.
    pub fn unenforced_rules(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.root.collect_unenforced(&mut out);
        out
    }

    /// Prepares `object` for storage: applies defaults (including nested ones, and inside
    /// objects that are present), prunes fields the schema does not know (unless
    /// `x-kubernetes-preserve-unknown-fields`; `apiVersion`, `kind` and `metadata` are always
    /// kept at the root and in embedded resources), then validates it.
    pub fn admit(&self, object: &mut Value) -> Result<(), Vec<FieldError>> {
        self.root.apply_defaults(object);
        self.root.prune(object, true);
        let mut errors = Vec::new();
        self.root.validate(object, "", &mut errors);
        if self.has_rules {
            // As upstream: CEL rules only run on an object whose types are right.
            let blocking = errors.iter().any(|e| {
                matches!(
                    e.reason,
                    FieldErrorReason::TypeInvalid | FieldErrorReason::NotSupported
                )
            });
            if blocking {
                errors.push(FieldError {
                    reason: FieldErrorReason::Invalid,
                    field: String::new(),
                    message: "Invalid value: \"null\": some validation rules were not checked \
                              because the object was invalid; correct the existing errors to \
                              complete validation"
                        .to_owned(),
                });
            } else {
                self.root.validate_rules(object, "", &mut errors);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

fn u64_of(v: &Map<String, Value>, key: &str, at: &str) -> Result<Option<u64>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| format!("{at}.{key} must be a non-negative integer, got {n}")),
    }
}

fn f64_of(v: &Map<String, Value>, key: &str, at: &str) -> Result<Option<f64>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_f64()
            .map(Some)
            .ok_or_else(|| format!("{at}.{key} must be a number, got {n}")),
    }
}

fn bool_of(v: &Map<String, Value>, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn parse_list(v: &Map<String, Value>, key: &str, at: &str) -> Result<Vec<Node>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| Node::parse(s, &format!("{at}.{key}[{i}]")))
            .collect(),
        Some(_) => Err(format!("{at}.{key} must be a list of schemas")),
    }
}

/// `type`: one of the structural types, or none.
fn type_of(s: &Map<String, Value>, at: &str) -> Result<Option<String>, String> {
    Ok(match s.get("type") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => match t.as_str() {
            "object" | "array" | "string" | "integer" | "number" | "boolean" => Some(t.clone()),
            "" => None,
            other => return Err(format!("{at}.type: unsupported type {other:?}")),
        },
        Some(other) => return Err(format!("{at}.type must be a string, got {other}")),
    })
}

/// `properties`, each parsed, in their order.
fn properties_of(s: &Map<String, Value>, at: &str) -> Result<Vec<(String, Node)>, String> {
    let mut properties = Vec::new();
    if let Some(props) = s.get("properties") {
        let Value::Object(props) = props else {
            return Err(format!("{at}.properties must be an object"));
        };
        for (name, sub) in props {
            properties.push((
                name.clone(),
                Node::parse(sub, &format!("{at}.properties.{name}"))?,
            ));
        }
    }
    Ok(properties)
}

/// `required`: a list of property names.
fn required_of(s: &Map<String, Value>, at: &str) -> Result<Vec<String>, String> {
    Ok(match s.get("required") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(r)) => r
            .iter()
            .map(|n| {
                n.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{at}.required must list strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{at}.required must be a list")),
    })
}

/// `pattern` with its compiled regular expression.
fn pattern_of(s: &Map<String, Value>, at: &str) -> Result<Option<(String, Regex)>, String> {
    Ok(match s.get("pattern") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some((
            p.clone(),
            Regex::new(p).map_err(|e| {
                format!("{at}.pattern {p:?} is not a valid regular expression: {e}")
            })?,
        )),
        Some(_) => return Err(format!("{at}.pattern must be a string")),
    })
}

impl Node {
    fn parse(schema: &Value, at: &str) -> Result<Self, String> {
        let Value::Object(s) = schema else {
            return Err(format!("{at} must be an object, got {schema}"));
        };
        let type_ = type_of(s, at)?;
        let properties = properties_of(s, at)?;
        let required = required_of(s, at)?;
        let items = match s.get("items") {
            None | Some(Value::Null) => None,
            // A list of schemas (tuple form) is not structural; the first one is used.
            Some(Value::Array(list)) => match list.first() {
                Some(first) => Some(Box::new(Node::parse(first, &format!("{at}.items[0]"))?)),
                None => None,
            },
            Some(sub) => Some(Box::new(Node::parse(sub, &format!("{at}.items"))?)),
        };
        let additional = match s.get("additionalProperties") {
            None | Some(Value::Null) => Additional::Unset,
            Some(Value::Bool(b)) => Additional::Bool(*b),
            Some(sub) => Additional::Schema(Box::new(Node::parse(
                sub,
                &format!("{at}.additionalProperties"),
            )?)),
        };
        let enum_ = match s.get("enum") {
            None | Some(Value::Null) => None,
            Some(Value::Array(values)) => Some(values.clone()),
            Some(_) => return Err(format!("{at}.enum must be a list")),
        };
        let pattern = pattern_of(s, at)?;
        let not = match s.get("not") {
            None | Some(Value::Null) => None,
            Some(sub) => Some(Box::new(Node::parse(sub, &format!("{at}.not"))?)),
        };
        let list_map_keys = match s.get("x-kubernetes-list-map-keys") {
            Some(Value::Array(keys)) => keys
                .iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        Ok(Node {
            type_,
            nullable: bool_of(s, "nullable"),
            properties,
            required,
            items,
            additional,
            enum_,
            pattern,
            minimum: f64_of(s, "minimum", at)?,
            maximum: f64_of(s, "maximum", at)?,
            exclusive_minimum: bool_of(s, "exclusiveMinimum"),
            exclusive_maximum: bool_of(s, "exclusiveMaximum"),
            min_length: u64_of(s, "minLength", at)?,
            max_length: u64_of(s, "maxLength", at)?,
            min_items: u64_of(s, "minItems", at)?,
            max_items: u64_of(s, "maxItems", at)?,
            min_properties: u64_of(s, "minProperties", at)?,
            max_properties: u64_of(s, "maxProperties", at)?,
            format: s.get("format").and_then(Value::as_str).map(str::to_owned),
            int_or_string: bool_of(s, "x-kubernetes-int-or-string"),
            preserve_unknown: bool_of(s, "x-kubernetes-preserve-unknown-fields"),
            embedded_resource: bool_of(s, "x-kubernetes-embedded-resource"),
            unique_items: bool_of(s, "uniqueItems"),
            list_type: s
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_owned),
            list_map_keys,
            all_of: parse_list(s, "allOf", at)?,
            any_of: parse_list(s, "anyOf", at)?,
            one_of: parse_list(s, "oneOf", at)?,
            not,
            default: s.get("default").cloned(),
            rules: parse_rules(s),
        })
    }

    fn collect_unenforced(&self, out: &mut Vec<String>) {
        out.extend(
            self.rules
                .iter()
                .filter(|r| r.expr.is_none())
                .map(|r| r.rule.clone()),
        );
        for (_, p) in &self.properties {
            p.collect_unenforced(out);
        }
        if let Some(items) = &self.items {
            items.collect_unenforced(out);
        }
        if let Additional::Schema(a) = &self.additional {
            a.collect_unenforced(out);
        }
    }

    fn has_rules(&self) -> bool {
        !self.rules.is_empty()
            || self.properties.iter().any(|(_, p)| p.has_rules())
            || self.items.as_ref().is_some_and(|i| i.has_rules())
            || matches!(&self.additional, Additional::Schema(a) if a.has_rules())
    }

    /// Evaluates `x-kubernetes-validations` with `self` bound to each present value.
    fn validate_rules(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if value.is_null() {
            return;
        }
        for rule in &self.rules {
            let Some(expr) = &rule.expr else { continue };
            let mut env = vec![("self".to_owned(), value.clone())];
            let failure = match cel::eval(expr, &mut env) {
                Ok(Value::Bool(true)) => continue,
                Ok(Value::Bool(false)) => rule
                    .message
                    .clone()
                    .unwrap_or_else(|| format!("failed rule: {}", rule.rule)),
                Ok(other) => format!(
                    "rule evaluated to {other}, not a bool: failed rule: {}",
                    rule.rule
                ),
                Err(e) => format!("rule evaluation error: {e}: failed rule: {}", rule.rule),
            };
            let field = match rule.field_path.as_deref() {
                Some(extra) => {
                    let extra = extra.trim_start_matches('.');
                    join(path, extra)
                }
                None => path.to_owned(),
            };
            let type_name = self.type_.as_deref().unwrap_or_else(|| json_type(value));
            let (reason, message) = match rule.reason.as_deref() {
                Some("FieldValueRequired") => (
                    FieldErrorReason::Required,
                    format!("Required value: {failure}"),
                ),
                Some("FieldValueDuplicate") => (
                    FieldErrorReason::Duplicate,
                    format!("Duplicate value: \"{type_name}\": {failure}"),
                ),
                _ => (
                    FieldErrorReason::Invalid,
                    format!("Invalid value: \"{type_name}\": {failure}"),
                ),
            };
            errors.push(FieldError {
                reason,
                field,
                message,
            });
        }
        match value {
            Value::Object(map) => {
                for (name, child) in map {
                    if let Some(sub) = self.property(name) {
                        sub.validate_rules(child, &join(path, name), errors);
                    } else if let Additional::Schema(sub) = &self.additional {
                        sub.validate_rules(child, &join(path, name), errors);
                    }
                }
            }
            Value::Array(list) => {
                if let Some(items) = &self.items {
                    for (i, item) in list.iter().enumerate() {
                        items.validate_rules(item, &format!("{path}[{i}]"), errors);
                    }
                }
            }
            _ => {}
        }
    }

    fn property(&self, name: &str) -> Option<&Node> {
        self.properties
            .iter()
            .find_map(|(n, node)| (n == name).then_some(node))
    }

    /// Fills absent (or null, when not nullable) properties that carry a default, then
    /// recurses, so defaults inside a defaulted object apply too.
    fn apply_defaults(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                // As upstream, a null in a non-nullable field without a default is dropped
                // rather than rejected (PruneNonNullableNullsWithoutDefaults).
                map.retain(|name, child| {
                    let schema = self.property(name).or(match &self.additional {
                        Additional::Schema(sub) => Some(sub),
                        _ => None,
                    });
                    !(child.is_null() && schema.is_some_and(|s| !s.nullable && s.default.is_none()))
                });
                for (name, sub) in &self.properties {
                    if let Some(default) = &sub.default {
                        let missing = match map.get(name) {
                            None => true,
                            Some(Value::Null) => !sub.nullable,
                            Some(_) => false,
                        };
                        if missing {
                            map.insert(name.clone(), default.clone());
                        }
                    }
                    if let Some(child) = map.get_mut(name) {
                        sub.apply_defaults(child);
                    }
                }
                if let Additional::Schema(sub) = &self.additional {
                    for (name, child) in map.iter_mut() {
                        if self.property(name).is_none() {
                            if child.is_null()
                                && !sub.nullable
                                && let Some(default) = &sub.default
                            {
                                *child = default.clone();
                            }
                            sub.apply_defaults(child);
                        }
                    }
                }
            }
            Value::Array(list) => {
                if let Some(items) = &self.items {
                    for item in list.iter_mut() {
                        if item.is_null()
                            && !items.nullable
                            && let Some(default) = &items.default
                        {
                            *item = default.clone();
                        }
                        items.apply_defaults(item);
                    }
                }
            }
            _ => {}
        }
    }

    /// Removes fields the schema does not declare. `keep_type_meta` is true at the root and in
    /// embedded resources, where `apiVersion`, `kind` and `metadata` always survive.
    fn prune(&self, value: &mut Value, keep_type_meta: bool) {
        match value {
            Value::Object(map) => {
                let keep_meta = keep_type_meta || self.embedded_resource;
                let prunes_unknown = !self.preserve_unknown
                    && !matches!(
                        self.additional,
                        Additional::Schema(_) | Additional::Bool(true)
                    );
                if prunes_unknown {
                    map.retain(|name, _| {
                        self.property(name).is_some()
                            || (keep_meta
                                && matches!(name.as_str(), "apiVersion" | "kind" | "metadata"))
                    });
                }
                for (name, child) in map.iter_mut() {
                    // ObjectMeta is the server's, not the schema's: `metadata: {type: object}`
                    // must not strip the name and labels.
                    if keep_meta && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    if let Some(sub) = self.property(name) {
                        sub.prune(child, false);
                    } else if let Additional::Schema(sub) = &self.additional {
                        sub.prune(child, false);
                    }
                }
            }
            Value::Array(list) => {
                if let Some(items) = &self.items {
                    for item in list.iter_mut() {
                        items.prune(item, false);
                    }
                }
            }
            _ => {}
        }
    }

    fn validate(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if value.is_null() {
            if self.nullable {
                return;
            }
            // An absent type (only combinators, or preserve-unknown-fields) accepts anything.
            if let Some(t) = &self.type_ {
                errors.push(type_error(path, t, value));
                return;
            }
        }
        if !self.check_type(value, path, errors) {
            return;
        }
        if let Some(allowed) = &self.enum_
            && !allowed.iter().any(|a| json_equal(a, value))
        {
            let supported: Vec<String> = allowed.iter().map(format_value).collect();
            errors.push(FieldError {
                reason: FieldErrorReason::NotSupported,
                field: path.to_owned(),
                message: format!(
                    "Unsupported value: {}: supported values: {}",
                    format_value(value),
                    supported.join(", ")
                ),
            });
        }
        match value {
            Value::String(s) => self.validate_string(s, value, path, errors),
            Value::Number(_) => self.validate_number(value, path, errors),
            Value::Array(list) => self.validate_array(list, value, path, errors),
            Value::Object(map) => self.validate_object(map, value, path, errors),
            _ => {}
        }
        self.validate_combinators(value, path, errors);
    }

    /// Returns false (after recording the error) when the value's JSON type is wrong, since
    /// no further check on it makes sense.
    fn check_type(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) -> bool {
        if self.int_or_string {
            if matches!(value, Value::String(_)) || is_integer(value) {
                return true;
            }
            errors.push(type_error(path, "integer-or-string", value));
            return false;
        }
        let Some(t) = &self.type_ else { return true };
        let ok = match t.as_str() {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => is_integer(value),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !ok {
            errors.push(type_error(path, t, value));
        }
        ok
    }

    fn validate_string(&self, s: &str, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        let chars = s.chars().count() as u64;
        if let Some(max) = self.max_length
            && chars > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            errors.push(FieldError {
                reason: FieldErrorReason::TooLong,
                field: path.to_owned(),
                message: format!("Too long: may not be more than {max} {unit}"),
            });
        }
        if let Some(min) = self.min_length
            && chars < min
        {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{} in body should be at least {min} chars long",
                    body_path(path)
                ),
            ));
        }
        if let Some((source, re)) = &self.pattern
            && !re.is_match(s)
        {
            errors.push(invalid(
                path,
                value,
                format!("{} in body should match '{source}'", body_path(path)),
            ));
        }
        if self.format.as_deref() == Some("date-time") && !is_date_time(s) {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{} in body must be of type date-time: {:?}",
                    body_path(path),
                    s
                ),
            ));
        }
    }

    fn validate_number(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        let Some(n) = value.as_f64() else { return };
        if let Some(min) = self.minimum {
            let (bad, words) = if self.exclusive_minimum {
                (n <= min, "greater than")
            } else {
                (n < min, "greater than or equal to")
            };
            if bad {
                errors.push(invalid(
                    path,
                    value,
                    format!(
                        "{} in body should be {words} {}",
                        body_path(path),
                        format_f64(min)
                    ),
                ));
            }
        }
        if let Some(max) = self.maximum {
            let (bad, words) = if self.exclusive_maximum {
                (n >= max, "less than")
            } else {
                (n > max, "less than or equal to")
            };
            if bad {
                errors.push(invalid(
                    path,
                    value,
                    format!(
                        "{} in body should be {words} {}",
                        body_path(path),
                        format_f64(max)
                    ),
                ));
            }
        }
    }

    fn validate_array(
        &self,
        list: &[Value],
        value: &Value,
        path: &str,
        errors: &mut Vec<FieldError>,
    ) {
        let len = list.len() as u64;
        if let Some(max) = self.max_items
            && len > max
        {
            errors.push(FieldError {
                reason: FieldErrorReason::TooMany,
                field: path.to_owned(),
                message: format!("Too many: {len}: must have at most {max} items"),
            });
        }
        if let Some(min) = self.min_items
            && len < min
        {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{} in body should have at least {min} items",
                    body_path(path)
                ),
            ));
        }
        match self.list_type.as_deref() {
            Some("map") if !self.list_map_keys.is_empty() => {
                let mut seen: Vec<Value> = Vec::new();
                for (i, item) in list.iter().enumerate() {
                    let Value::Object(obj) = item else { continue };
                    let key: Map<String, Value> = self
                        .list_map_keys
                        .iter()
                        .filter_map(|k| obj.get(k).map(|v| (k.clone(), v.clone())))
                        .collect();
                    let key = Value::Object(key);
                    if seen.contains(&key) {
                        errors.push(duplicate(&format!("{path}[{i}]"), &key));
                    } else {
                        seen.push(key);
                    }
                }
            }
            Some("set") => self.check_unique(list, path, errors),
            _ if self.unique_items => self.check_unique(list, path, errors),
            _ => {}
        }
        if let Some(items) = &self.items {
            for (i, item) in list.iter().enumerate() {
                items.validate(item, &format!("{path}[{i}]"), errors);
            }
        }
    }

    fn check_unique(&self, list: &[Value], path: &str, errors: &mut Vec<FieldError>) {
        for (i, item) in list.iter().enumerate() {
            if list[..i].iter().any(|earlier| json_equal(earlier, item)) {
                errors.push(duplicate(&format!("{path}[{i}]"), item));
            }
        }
    }

    fn validate_object(
        &self,
        map: &Map<String, Value>,
        value: &Value,
        path: &str,
        errors: &mut Vec<FieldError>,
    ) {
        for name in &self.required {
            if !map.contains_key(name) {
                errors.push(FieldError {
                    reason: FieldErrorReason::Required,
                    field: join(path, name),
                    message: "Required value".to_owned(),
                });
            }
        }
        let count = map.len() as u64;
        if let Some(max) = self.max_properties
            && count > max
        {
            errors.push(FieldError {
                reason: FieldErrorReason::TooMany,
                field: path.to_owned(),
                message: format!("Too many: {count}: must have at most {max} items"),
            });
        }
        if let Some(min) = self.min_properties
            && count < min
        {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{} in body should have at least {min} properties",
                    body_path(path)
                ),
            ));
        }
        let embedded = self.embedded_resource;
        for (name, child) in map {
            let child_path = join(path, name);
            if let Some(sub) = self.property(name) {
                sub.validate(child, &child_path, errors);
            } else {
                match &self.additional {
                    Additional::Schema(sub) => sub.validate(child, &child_path, errors),
                    Additional::Bool(false)
                        if !(path.is_empty() || embedded)
                            || !matches!(name.as_str(), "apiVersion" | "kind" | "metadata") =>
                    {
                        errors.push(FieldError {
                            reason: FieldErrorReason::Invalid,
                            field: child_path.clone(),
                            message: format!(
                                "Invalid value: {}: {} in body is a forbidden property",
                                format_value(child),
                                body_path(&child_path)
                            ),
                        });
                    }
                    _ => {}
                }
            }
        }
        if embedded {
            for key in ["apiVersion", "kind"] {
                if map
                    .get(key)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    errors.push(FieldError {
                        reason: FieldErrorReason::Required,
                        field: join(path, key),
                        message: "Required value: must not be empty".to_owned(),
                    });
                }
            }
        }
    }

    fn validate_combinators(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        for sub in &self.all_of {
            sub.validate(value, path, errors);
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|s| s.accepts(value, path)) {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{} in body must validate at least one schema (anyOf)",
                    body_path(path)
                ),
            ));
        }
        if !self.one_of.is_empty() {
            let matching = self
                .one_of
                .iter()
                .filter(|s| s.accepts(value, path))
                .count();
            if matching != 1 {
                errors.push(invalid(
                    path,
                    value,
                    format!(
                        "{} in body must validate one and only one schema (oneOf)",
                        body_path(path)
                    ),
                ));
            }
        }
        if let Some(not) = &self.not
            && not.accepts(value, path)
        {
            errors.push(invalid(
                path,
                value,
                format!(
                    "{} in body must not validate the schema (not)",
                    body_path(path)
                ),
            ));
        }
    }

    fn accepts(&self, value: &Value, path: &str) -> bool {
        let mut errors = Vec::new();
        self.validate(value, path, &mut errors);
        errors.is_empty()
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// The path go-openapi names inside its detail ("spec.size in body …"); the root is `body`.
fn body_path(path: &str) -> &str {
    if path.is_empty() { "body" } else { path }
}

fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Values the way Go's field errors print them: strings quoted, everything else as JSON.
fn format_value(value: &Value) -> String {
    value.to_string()
}

fn format_f64(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

fn type_error(path: &str, expected: &str, value: &Value) -> FieldError {
    let actual = json_type(value);
    FieldError {
        reason: FieldErrorReason::TypeInvalid,
        field: path.to_owned(),
        message: format!(
            "Invalid value: \"{actual}\": {} in body must be of type {expected}: \"{actual}\"",
            body_path(path)
        ),
    }
}

fn invalid(path: &str, value: &Value, detail: String) -> FieldError {
    FieldError {
        reason: FieldErrorReason::Invalid,
        field: path.to_owned(),
        message: format!("Invalid value: {}: {detail}", format_value(value)),
    }
}

fn duplicate(path: &str, value: &Value) -> FieldError {
    FieldError {
        reason: FieldErrorReason::Duplicate,
        field: path.to_owned(),
        message: format!("Duplicate value: {}", format_value(value)),
    }
}

/// RFC 3339 date-times, accepted loosely (any offset, optional fraction, `t`/`z` in any case).
fn is_date_time(s: &str) -> bool {
    s.to_ascii_uppercase().parse::<jiff::Timestamp>().is_ok()
}

/// A small evaluator for `x-kubernetes-validations` rules: the CEL subset CRD authors use
/// (field selection, `has()`, comparisons, `&&`/`||`/`!`, `size()`, string tests, `in`, and
/// the `all`/`exists`/`exists_one` macros). A rule outside the subset (or a transition rule
/// using `oldSelf`) does not compile and is skipped rather than guessed at.
mod cel {
    use regex::Regex;
    use serde_json::Value;

    #[derive(Debug, Clone, PartialEq)]
    enum Tok {
        Ident(String),
        Str(String),
        Int(i64),
        Double(f64),
        Op(&'static str),
    }

    #[derive(Debug, Clone)]
    pub enum Expr {
        Lit(Value),
        Ident(String),
        Select(Box<Expr>, String),
        Has(Box<Expr>, String),
        Index(Box<Expr>, Box<Expr>),
        Call(Option<Box<Expr>>, String, Vec<Expr>),
        Macro(Box<Expr>, &'static str, String, Box<Expr>),
        Unary(&'static str, Box<Expr>),
        Binary(&'static str, Box<Expr>, Box<Expr>),
        Cond(Box<Expr>, Box<Expr>, Box<Expr>),
        List(Vec<Expr>),
    }

    const OPS: [&str; 22] = [
        "||", "&&", "==", "!=", "<=", ">=", "<", ">", "!", "+", "-", "*", "/", "%", "(", ")", "[",
        "]", ".", ",", "?", ":",
    ];

    fn lex(src: &str) -> Option<Vec<Tok>> {
        let chars: Vec<char> = src.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_whitespace() {
                i += 1;
            } else if c == '\'' || c == '"' {
                let mut s = String::new();
                i += 1;
                loop {
                    let ch = *chars.get(i)?;
                    i += 1;
                    if ch == c {
                        break;
                    }
                    if ch == '\\' {
                        let esc = *chars.get(i)?;
                        i += 1;
                        s.push(match esc {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                    } else {
                        s.push(ch);
                    }
                }
                out.push(Tok::Str(s));
            } else if c.is_ascii_digit() {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                // `1u` unsigned literals read as ints.
                if chars.get(i) == Some(&'u') {
                    i += 1;
                }
                out.push(if text.contains('.') {
                    Tok::Double(text.parse().ok()?)
                } else {
                    Tok::Int(text.parse().ok()?)
                });
            } else if c.is_alphabetic() || c == '_' {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push(Tok::Ident(chars[start..i].iter().collect()));
            } else {
                let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
                let op = OPS
                    .iter()
                    .find(|op| op.len() == 2 && **op == two)
                    .or_else(|| OPS.iter().find(|op| op.len() == 1 && op.starts_with(c)))?;
                i += op.len();
                out.push(Tok::Op(op));
            }
        }
        Some(out)
    }

    struct Parser {
        toks: Vec<Tok>,
        pos: usize,
        depth: usize,
    }

    /// Bounds on a rule's size and nesting, so a hostile CRD cannot exhaust the stack.
    const MAX_TOKENS: usize = 512;
    const MAX_DEPTH: usize = 48;

    impl Parser {
        fn peek_op(&self, op: &str) -> bool {
            matches!(self.toks.get(self.pos), Some(Tok::Op(o)) if *o == op)
        }

        fn eat_op(&mut self, op: &str) -> bool {
            let hit = self.peek_op(op);
            if hit {
                self.pos += 1;
            }
            hit
        }

        fn expect_op(&mut self, op: &str) -> Option<()> {
            self.eat_op(op).then_some(())
        }

        fn ident(&mut self) -> Option<String> {
            match self.toks.get(self.pos) {
                Some(Tok::Ident(s)) => {
                    self.pos += 1;
                    Some(s.clone())
                }
                _ => None,
            }
        }

        fn expr(&mut self) -> Option<Expr> {
            self.depth += 1;
            let e = if self.depth > MAX_DEPTH {
                None
            } else {
                self.conditional()
            };
            self.depth -= 1;
            e
        }

        fn conditional(&mut self) -> Option<Expr> {
            let cond = self.binary(0)?;
            if self.eat_op("?") {
                let then = self.expr()?;
                self.expect_op(":")?;
                let otherwise = self.expr()?;
                return Some(Expr::Cond(
                    Box::new(cond),
                    Box::new(then),
                    Box::new(otherwise),
                ));
            }
            Some(cond)
        }

        /// Precedence climbing over `||` < `&&` < relations < `+ -` < `* / %`.
        fn binary(&mut self, level: usize) -> Option<Expr> {
            const LEVELS: [&[&str]; 5] = [
                &["||"],
                &["&&"],
                &["==", "!=", "<", "<=", ">", ">=", "in"],
                &["+", "-"],
                &["*", "/", "%"],
            ];
            if level == LEVELS.len() {
                return self.unary();
            }
            let mut left = self.binary(level + 1)?;
            loop {
                let op = LEVELS[level].iter().find(|op| {
                    if **op == "in" {
                        matches!(self.toks.get(self.pos), Some(Tok::Ident(s)) if s == "in")
                    } else {
                        self.peek_op(op)
                    }
                });
                let Some(op) = op else { break };
                self.pos += 1;
                let right = self.binary(level + 1)?;
                left = Expr::Binary(op, Box::new(left), Box::new(right));
            }
            Some(left)
        }

        fn unary(&mut self) -> Option<Expr> {
            for op in ["!", "-"] {
                if self.eat_op(op) {
                    self.depth += 1;
                    let inner = if self.depth > MAX_DEPTH {
                        None
                    } else {
                        self.unary()
                    };
                    self.depth -= 1;
                    return Some(Expr::Unary(op, Box::new(inner?)));
                }
            }
            self.member()
        }

        fn member(&mut self) -> Option<Expr> {
            let mut e = self.primary()?;
            loop {
                if self.eat_op(".") {
                    let name = self.ident()?;
                    if self.eat_op("(") {
                        if matches!(name.as_str(), "all" | "exists" | "exists_one") {
                            let var = self.ident()?;
                            self.expect_op(",")?;
                            let body = self.expr()?;
                            self.expect_op(")")?;
                            let kind = match name.as_str() {
                                "all" => "all",
                                "exists" => "exists",
                                _ => "exists_one",
                            };
                            e = Expr::Macro(Box::new(e), kind, var, Box::new(body));
                        } else {
                            let args = self.args(")")?;
                            e = Expr::Call(Some(Box::new(e)), name, args);
                        }
                    } else {
                        e = Expr::Select(Box::new(e), name);
                    }
                } else if self.eat_op("[") {
                    let index = self.expr()?;
                    self.expect_op("]")?;
                    e = Expr::Index(Box::new(e), Box::new(index));
                } else {
                    return Some(e);
                }
            }
        }

        fn args(&mut self, close: &str) -> Option<Vec<Expr>> {
            let mut args = Vec::new();
            if self.eat_op(close) {
                return Some(args);
            }
            loop {
                args.push(self.expr()?);
                if self.eat_op(close) {
                    return Some(args);
                }
                self.expect_op(",")?;
            }
        }

        fn primary(&mut self) -> Option<Expr> {
            let tok = self.toks.get(self.pos)?.clone();
            self.pos += 1;
            match tok {
                Tok::Str(s) => Some(Expr::Lit(Value::String(s))),
                Tok::Int(n) => Some(Expr::Lit(Value::from(n))),
                Tok::Double(f) => Some(Expr::Lit(Value::from(f))),
                Tok::Op("(") => {
                    let e = self.expr()?;
                    self.expect_op(")")?;
                    Some(e)
                }
                Tok::Op("[") => Some(Expr::List(self.args("]")?)),
                Tok::Ident(name) => match name.as_str() {
                    "true" => Some(Expr::Lit(Value::Bool(true))),
                    "false" => Some(Expr::Lit(Value::Bool(false))),
                    "null" => Some(Expr::Lit(Value::Null)),
                    // Transition rules need the old object, which admission here lacks.
                    "oldSelf" => None,
                    "has" => {
                        self.expect_op("(")?;
                        let arg = self.member()?;
                        self.expect_op(")")?;
                        match arg {
                            Expr::Select(target, field) => Some(Expr::Has(target, field)),
                            _ => None,
                        }
                    }
                    _ if self.eat_op("(") => {
                        let args = self.args(")")?;
                        Some(Expr::Call(None, name, args))
                    }
                    _ => Some(Expr::Ident(name)),
                },
                Tok::Op(_) => None,
            }
        }
    }

    /// Parses a rule; `None` when it uses anything outside the supported subset.
    pub fn compile(rule: &str) -> Option<Expr> {
        let toks = lex(rule)?;
        if toks.len() > MAX_TOKENS {
            return None;
        }
        let mut parser = Parser {
            toks,
            pos: 0,
            depth: 0,
        };
        let e = parser.expr()?;
        (parser.pos == parser.toks.len() && supported(&e)).then_some(e)
    }

    fn supported(e: &Expr) -> bool {
        match e {
            Expr::Lit(_) => true,
            Expr::Ident(_) => true,
            Expr::Select(t, _) | Expr::Has(t, _) | Expr::Unary(_, t) => supported(t),
            Expr::Index(a, b) | Expr::Binary(_, a, b) | Expr::Macro(a, _, _, b) => {
                supported(a) && supported(b)
            }
            Expr::Cond(a, b, c) => supported(a) && supported(b) && supported(c),
            Expr::List(items) => items.iter().all(supported),
            Expr::Call(target, name, args) => {
                let arity = match name.as_str() {
                    "size" => {
                        if target.is_some() {
                            0
                        } else {
                            1
                        }
                    }
                    "contains" | "startsWith" | "endsWith" | "matches" => 1,
                    "lowerAscii" | "upperAscii" | "trim" => 0,
                    _ => return false,
                };
                args.len() == arity
                    && target.as_deref().is_none_or(supported)
                    && args.iter().all(supported)
            }
        }
    }

    pub type Env = Vec<(String, Value)>;

    fn lookup(env: &Env, name: &str) -> Result<Value, String> {
        env.iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("undeclared reference to '{name}'"))
    }

    fn as_bool(v: &Value) -> Result<bool, String> {
        v.as_bool()
            .ok_or_else(|| format!("no such overload: expected a bool, got {v}"))
    }

    fn string(v: &Value) -> Result<&str, String> {
        v.as_str()
            .ok_or_else(|| format!("no such overload: expected a string, got {v}"))
    }

    fn equal(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            _ => a == b,
        }
    }

    fn size(v: &Value) -> Result<Value, String> {
        Ok(Value::from(match v {
            Value::String(s) => s.chars().count() as i64,
            Value::Array(a) => a.len() as i64,
            Value::Object(m) => m.len() as i64,
            other => return Err(format!("no such overload: size({other})")),
        }))
    }

    fn arith(op: &str, a: &Value, b: &Value) -> Result<Value, String> {
        if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
            let r = match op {
                "+" => x.checked_add(y),
                "-" => x.checked_sub(y),
                "*" => x.checked_mul(y),
                "/" => x.checked_div(y),
                _ => x.checked_rem(y),
            };
            return r
                .map(Value::from)
                .ok_or_else(|| "integer overflow or division by zero".to_owned());
        }
        if let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) {
            let r = match op {
                "+" => x + y,
                "-" => x - y,
                "*" => x * y,
                "/" => x / y,
                _ => return Err("no such overload: % on doubles".to_owned()),
            };
            return Ok(Value::from(r));
        }
        match (op, a, b) {
            ("+", Value::String(x), Value::String(y)) => Ok(Value::String(format!("{x}{y}"))),
            ("+", Value::Array(x), Value::Array(y)) => {
                Ok(Value::Array(x.iter().chain(y).cloned().collect()))
            }
            _ => Err(format!("no such overload: {a} {op} {b}")),
        }
    }

    fn compare(op: &str, a: &Value, b: &Value) -> Result<bool, String> {
        let ord = match (a, b) {
            (Value::Number(x), Value::Number(y)) => x
                .as_f64()
                .zip(y.as_f64())
                .and_then(|(x, y)| x.partial_cmp(&y)),
            (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
            (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
            _ => None,
        }
        .ok_or_else(|| format!("no such overload: {a} {op} {b}"))?;
        Ok(match op {
            "<" => ord.is_lt(),
            "<=" => ord.is_le(),
            ">" => ord.is_gt(),
            _ => ord.is_ge(),
        })
    }

    #[expect(
        clippy::too_many_lines,
        reason = "the CEL evaluator: one match arm per expression form"
    )]
    pub fn eval(e: &Expr, env: &mut Env) -> Result<Value, String> {
        match e {
            Expr::Lit(v) => Ok(v.clone()),
            Expr::Ident(name) => lookup(env, name),
            Expr::Select(target, field) => match eval(target, env)? {
                Value::Object(m) => m
                    .get(field)
                    .cloned()
                    .ok_or_else(|| format!("no such key: {field}")),
                other => Err(format!("no such key: {field} (on {other})")),
            },
            Expr::Has(target, field) => match eval(target, env)? {
                Value::Object(m) => Ok(Value::Bool(m.contains_key(field))),
                other => Err(format!("invalid type for field selection: {other}")),
            },
            Expr::Index(target, index) => {
                let target = eval(target, env)?;
                let index = eval(index, env)?;
                match (&target, &index) {
                    (Value::Object(m), Value::String(k)) => {
                        m.get(k).cloned().ok_or_else(|| format!("no such key: {k}"))
                    }
                    (Value::Array(a), Value::Number(n)) => n
                        .as_i64()
                        .and_then(|i| usize::try_from(i).ok())
                        .and_then(|i| a.get(i).cloned())
                        .ok_or_else(|| format!("index out of range: {n}")),
                    _ => Err(format!("no such overload: {target}[{index}]")),
                }
            }
            Expr::Unary(op, inner) => {
                let v = eval(inner, env)?;
                if *op == "!" {
                    Ok(Value::Bool(!as_bool(&v)?))
                } else {
                    arith("-", &Value::from(0), &v)
                }
            }
            Expr::Binary(op, a, b) => match *op {
                // CEL's logical operators are commutative over errors: a decided side wins.
                "||" | "&&" => {
                    let decisive = *op == "||";
                    let left = eval(a, env).and_then(|v| as_bool(&v));
                    if left == Ok(decisive) {
                        return Ok(Value::Bool(decisive));
                    }
                    let right = eval(b, env).and_then(|v| as_bool(&v));
                    match (left, right) {
                        (_, Ok(r)) if r == decisive => Ok(Value::Bool(decisive)),
                        (Ok(_), Ok(_)) => Ok(Value::Bool(!decisive)),
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    }
                }
                _ => {
                    let x = eval(a, env)?;
                    let y = eval(b, env)?;
                    match *op {
                        "==" => Ok(Value::Bool(equal(&x, &y))),
                        "!=" => Ok(Value::Bool(!equal(&x, &y))),
                        "<" | "<=" | ">" | ">=" => compare(op, &x, &y).map(Value::Bool),
                        "in" => match &y {
                            Value::Array(items) => {
                                Ok(Value::Bool(items.iter().any(|i| equal(i, &x))))
                            }
                            Value::Object(m) => {
                                Ok(Value::Bool(x.as_str().is_some_and(|k| m.contains_key(k))))
                            }
                            other => Err(format!("no such overload: in {other}")),
                        },
                        _ => arith(op, &x, &y),
                    }
                }
            },
            Expr::Cond(c, t, f) => {
                if as_bool(&eval(c, env)?)? {
                    eval(t, env)
                } else {
                    eval(f, env)
                }
            }
            Expr::List(items) => Ok(Value::Array(
                items
                    .iter()
                    .map(|i| eval(i, env))
                    .collect::<Result<_, _>>()?,
            )),
            Expr::Macro(target, kind, var, body) => {
                let elements: Vec<Value> = match eval(target, env)? {
                    Value::Array(a) => a,
                    Value::Object(m) => m.keys().map(|k| Value::String(k.clone())).collect(),
                    other => return Err(format!("no such overload: {other}.{kind}()")),
                };
                let mut matches = 0usize;
                for element in elements {
                    env.push((var.clone(), element));
                    let result = eval(body, env).and_then(|v| as_bool(&v));
                    env.pop();
                    match (*kind, result?) {
                        ("all", false) => return Ok(Value::Bool(false)),
                        ("exists", true) => return Ok(Value::Bool(true)),
                        (_, true) => matches += 1,
                        _ => {}
                    }
                }
                Ok(Value::Bool(match *kind {
                    "all" => true,
                    "exists" => false,
                    _ => matches == 1,
                }))
            }
            Expr::Call(target, name, args) => {
                let receiver = match target {
                    Some(t) => Some(eval(t, env)?),
                    None => None,
                };
                let args: Vec<Value> = args
                    .iter()
                    .map(|a| eval(a, env))
                    .collect::<Result<_, _>>()?;
                match (name.as_str(), receiver.as_ref(), args.as_slice()) {
                    ("size", Some(v), []) | ("size", None, [v]) => size(v),
                    ("contains", Some(s), [sub]) => {
                        Ok(Value::Bool(string(s)?.contains(string(sub)?)))
                    }
                    ("startsWith", Some(s), [p]) => {
                        Ok(Value::Bool(string(s)?.starts_with(string(p)?)))
                    }
                    ("endsWith", Some(s), [p]) => Ok(Value::Bool(string(s)?.ends_with(string(p)?))),
                    ("matches", Some(s), [re]) => {
                        let re = Regex::new(string(re)?).map_err(|e| e.to_string())?;
                        Ok(Value::Bool(re.is_match(string(s)?)))
                    }
                    ("lowerAscii", Some(s), []) => {
                        Ok(Value::String(string(s)?.to_ascii_lowercase()))
                    }
                    ("upperAscii", Some(s), []) => {
                        Ok(Value::String(string(s)?.to_ascii_uppercase()))
                    }
                    ("trim", Some(s), []) => Ok(Value::String(string(s)?.trim().to_owned())),
                    _ => Err(format!("no such overload: {name}")),
                }
            }
        }
    }
}
