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
}

impl StructuralSchema {
    /// Compiles an `openAPIV3Schema`. Fails, naming the path, on a malformed schema (a
    /// non-object node, an unknown type, an invalid regular expression).
    pub fn from_openapi_v3(schema: &Value) -> Result<Self, String> {
        Ok(Self {
            root: Node::parse(schema, "openAPIV3Schema")?,
        })
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

impl Node {
    fn parse(schema: &Value, at: &str) -> Result<Self, String> {
        let Value::Object(s) = schema else {
            return Err(format!("{at} must be an object, got {schema}"));
        };
        let type_ = match s.get("type") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => match t.as_str() {
                "object" | "array" | "string" | "integer" | "number" | "boolean" => Some(t.clone()),
                "" => None,
                other => return Err(format!("{at}.type: unsupported type {other:?}")),
            },
            Some(other) => return Err(format!("{at}.type must be a string, got {other}")),
        };
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
        let required = match s.get("required") {
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
        };
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
        let pattern = match s.get("pattern") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) => Some((
                p.clone(),
                Regex::new(p).map_err(|e| {
                    format!("{at}.pattern {p:?} is not a valid regular expression: {e}")
                })?,
            )),
            Some(_) => return Err(format!("{at}.pattern must be a string")),
        };
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
        })
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
