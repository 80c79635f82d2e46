//! Strategic merge patch (`application/strategic-merge-patch+json`) for the built-in kinds.
//!
//! `kubectl apply` (the second time), `kubectl patch` and the Python client send strategic
//! merge patches for built-in kinds. They differ from JSON merge patches in that lists of
//! objects are merged item by item on a *merge key* (containers by `name`, volumeMounts by
//! `mountPath`, …) and in a handful of `$` directives. Upstream reads the merge keys from Go
//! struct tags; k8s-openapi does not carry them, so [`list_strategy`] is a table of the fields
//! of the kinds this server serves. Lists not in the table are replaced, as upstream does for
//! fields without a patch strategy.

use serde_json::{Map, Value};

/// Applies `patch` to `original` as kube-apiserver does for an object of `kind`.
///
/// Supported: nested map merge, `null` deletes a key, `$patch: replace|delete|merge` on maps
/// and list items, `$retainKeys`, `$setElementOrder/<list>`, `$deleteFromPrimitiveList/<list>`,
/// merge keys per field and merged primitive lists (`metadata.finalizers`).
pub fn strategic_merge(original: &Value, patch: &Value, kind: &str) -> Result<Value, String> {
    let Value::Object(patch) = patch else {
        return Err(format!(
            "a strategic merge patch must be a JSON object, got {}",
            type_name(patch)
        ));
    };
    let original = match original {
        Value::Object(o) => o.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(format!(
                "cannot apply a strategic merge patch to {}",
                type_name(other)
            ));
        }
    };
    let ctx = Ctx {
        kind,
        path: Vec::new(),
    };
    merge_map(original, patch.clone(), &ctx)
}

/// How a list field is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// The patch's list replaces the original (fields without a patch strategy).
    Replace,
    /// Items are objects merged on this key.
    MergeKey(&'static str),
    /// A list of scalars that is unioned (`metadata.finalizers`).
    MergePrimitive,
}

/// The patch strategy of list `field` inside the object at `path` (the object keys from the
/// root, list indices left out) of a `kind` object.
pub fn list_strategy(kind: &str, path: &[&str], field: &str) -> ListStrategy {
    let parent = path.last().copied().unwrap_or_default();
    let in_container = matches!(
        parent,
        "containers" | "initContainers" | "ephemeralContainers"
    );
    match field {
        // ObjectMeta's tags, wherever an ObjectMeta sits (pod templates too).
        "finalizers" if parent == "metadata" => ListStrategy::MergePrimitive,
        "ownerReferences" if parent == "metadata" => ListStrategy::MergeKey("uid"),
        "containers" | "initContainers" | "ephemeralContainers" => ListStrategy::MergeKey("name"),
        "env" if in_container => ListStrategy::MergeKey("name"),
        "volumeMounts" if in_container => ListStrategy::MergeKey("mountPath"),
        "volumeDevices" if in_container => ListStrategy::MergeKey("devicePath"),
        "ports" if in_container => ListStrategy::MergeKey("containerPort"),
        "ports" if kind == "Service" && path == ["spec"] => ListStrategy::MergeKey("port"),
        "volumes" if parent == "spec" => ListStrategy::MergeKey("name"),
        "imagePullSecrets" | "schedulingGates" | "resourceClaims" => ListStrategy::MergeKey("name"),
        "claims" if parent == "resources" => ListStrategy::MergeKey("name"),
        "hostAliases" => ListStrategy::MergeKey("ip"),
        "topologySpreadConstraints" => ListStrategy::MergeKey("topologyKey"),
        "conditions" if parent == "status" => ListStrategy::MergeKey("type"),
        "podIPs" | "hostIPs" if parent == "status" => ListStrategy::MergeKey("ip"),
        "addresses" if kind == "Node" && parent == "status" => ListStrategy::MergeKey("type"),
        _ => ListStrategy::Replace,
    }
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";

struct Ctx<'a> {
    kind: &'a str,
    path: Vec<String>,
}

impl Ctx<'_> {
    fn child(&self, field: &str) -> Ctx<'_> {
        let mut path = self.path.clone();
        path.push(field.to_owned());
        Ctx {
            kind: self.kind,
            path,
        }
    }

    fn strategy(&self, field: &str) -> ListStrategy {
        let path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        list_strategy(self.kind, &path, field)
    }

    fn at(&self, field: &str) -> String {
        let mut p = self.path.join(".");
        if !p.is_empty() {
            p.push('.');
        }
        p.push_str(field);
        p
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    ctx: &Ctx,
) -> Result<Value, String> {
    match patch.remove(DIRECTIVE) {
        None => {}
        Some(Value::String(d)) if d == "replace" => {
            // Still run through the merge so nested directives do not reach storage.
            return merge_map(Map::new(), patch, ctx);
        }
        Some(Value::String(d)) if d == "delete" => return Ok(Value::Object(Map::new())),
        Some(Value::String(d)) if d == "merge" => {}
        Some(other) => {
            return Err(format!(
                "unknown patch type {other} in {}: use replace, delete or merge",
                display_path(&ctx.path)
            ));
        }
    }
    if let Some(retain) = patch.remove(RETAIN_KEYS) {
        let Value::Array(keys) = retain else {
            return Err(format!(
                "$retainKeys in {} must be a list of field names",
                display_path(&ctx.path)
            ));
        };
        let keys: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
        original.retain(|k, _| keys.contains(&k.as_str()));
    }

    let directive_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with('$'))
        .cloned()
        .collect();
    for key in directive_keys
        .iter()
        .filter(|k| k.starts_with(DELETE_PRIMITIVE))
    {
        let field = &key[DELETE_PRIMITIVE.len()..];
        let Some(Value::Array(remove)) = patch.remove(key) else {
            return Err(format!(
                "{key} in {} must be a list",
                display_path(&ctx.path)
            ));
        };
        if let Some(Value::Array(list)) = original.get_mut(field) {
            list.retain(|v| !remove.contains(v));
        }
    }
    for key in directive_keys.iter().filter(|k| k.starts_with(SET_ORDER)) {
        let field = key[SET_ORDER.len()..].to_owned();
        let Some(Value::Array(order)) = patch.remove(key) else {
            return Err(format!(
                "{key} in {} must be a list",
                display_path(&ctx.path)
            ));
        };
        let patch_list = match patch.remove(&field) {
            None | Some(Value::Null) => None,
            Some(Value::Array(list)) => Some(list),
            Some(other) => {
                return Err(format!(
                    "{} must be a list to go with {key}, got {}",
                    ctx.at(&field),
                    type_name(&other)
                ));
            }
        };
        let original_list = match original.remove(&field) {
            Some(Value::Array(list)) => list,
            _ => Vec::new(),
        };
        let strategy = ctx.strategy(&field);
        let child = ctx.child(&field);
        let merged = match patch_list {
            Some(p) => merge_list(original_list.clone(), p, strategy, &child)?,
            None => original_list.clone(),
        };
        let key_of = KeyOf(strategy);
        let (patch_items, server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|item| key_of.index(&order, item).is_some());
        let ordered = normalize_order(patch_items, server_only, &order, &original_list, key_of);
        original.insert(field, Value::Array(ordered));
    }

    for (key, value) in patch {
        if key.starts_with('$') {
            return Err(format!(
                "unknown directive {key} in {}",
                display_path(&ctx.path)
            ));
        }
        if value.is_null() {
            original.remove(&key);
            continue;
        }
        let current = original.remove(&key).unwrap_or(Value::Null);
        let merged = merge_value(current, value, &key, ctx)?;
        original.insert(key, merged);
    }
    Ok(Value::Object(original))
}

fn merge_value(original: Value, patch: Value, field: &str, ctx: &Ctx) -> Result<Value, String> {
    match (original, patch) {
        (Value::Object(o), Value::Object(p)) => merge_map(o, p, &ctx.child(field)),
        (_, Value::Object(p)) => merge_map(Map::new(), p, &ctx.child(field)),
        (Value::Array(o), Value::Array(p)) => Ok(Value::Array(merge_list(
            o,
            p,
            ctx.strategy(field),
            &ctx.child(field),
        )?)),
        (_, Value::Array(p)) => Ok(Value::Array(merge_list(
            Vec::new(),
            p,
            ctx.strategy(field),
            &ctx.child(field),
        )?)),
        (_, p) => Ok(p),
    }
}

/// Strips directives from a value that has nothing to merge into.
fn clean(value: Value, ctx: &Ctx) -> Result<Value, String> {
    match value {
        Value::Object(p) => merge_map(Map::new(), p, ctx),
        other => Ok(other),
    }
}

fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    strategy: ListStrategy,
    ctx: &Ctx,
) -> Result<Vec<Value>, String> {
    let key = match strategy {
        ListStrategy::Replace => {
            return patch
                .into_iter()
                .filter(|item| item.get(DIRECTIVE).is_none())
                .map(|item| clean(item, ctx))
                .collect();
        }
        ListStrategy::MergePrimitive => {
            let mut merged = original.clone();
            for item in &patch {
                if !merged.contains(item) {
                    merged.push(item.clone());
                }
            }
            let key_of = KeyOf(strategy);
            let (patch_items, server_only): (Vec<Value>, Vec<Value>) =
                merged.into_iter().partition(|item| patch.contains(item));
            return Ok(normalize_order(
                patch_items,
                server_only,
                &patch,
                &original,
                key_of,
            ));
        }
        ListStrategy::MergeKey(key) => key,
    };
    if patch.iter().chain(original.iter()).any(|v| !v.is_object()) {
        // Not a list of objects after all: nothing to merge on.
        return patch.into_iter().map(|item| clean(item, ctx)).collect();
    }
    let server_order = original.clone();
    let mut merged = original;
    let mut plain = Vec::new();
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE).and_then(Value::as_str) {
            None if item.get(DIRECTIVE).is_some() => {
                return Err(format!(
                    "{}: $patch must be a string",
                    display_path(&ctx.path)
                ));
            }
            None => plain.push(item),
            Some("delete") => {
                let Some(k) = item.get(key) else {
                    return Err(format!(
                        "{}: a $patch: delete item must carry the merge key {key:?}",
                        display_path(&ctx.path)
                    ));
                };
                merged.retain(|o| o.get(key) != Some(k));
            }
            Some("replace") => replace = true,
            Some("merge") => {}
            Some(other) => {
                return Err(format!(
                    "{}: unknown patch type {other:?}: use replace, delete or merge",
                    display_path(&ctx.path)
                ));
            }
        }
    }
    if replace {
        return plain.into_iter().map(|item| clean(item, ctx)).collect();
    }
    for item in &plain {
        let Some(k) = item.get(key) else {
            return Err(format!(
                "{}: item {item} does not contain the merge key {key:?}",
                display_path(&ctx.path)
            ));
        };
        let Value::Object(p) = item.clone() else {
            continue;
        };
        match merged.iter().position(|o| o.get(key) == Some(k)) {
            Some(i) => {
                let o = match std::mem::take(&mut merged[i]) {
                    Value::Object(o) => o,
                    _ => Map::new(),
                };
                merged[i] = merge_map(o, p, ctx)?;
            }
            None => merged.push(merge_map(Map::new(), p, ctx)?),
        }
    }
    let key_of = KeyOf(strategy);
    let (patch_items, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| key_of.index(&plain, item).is_some());
    Ok(normalize_order(
        patch_items,
        server_only,
        &plain,
        &server_order,
        key_of,
    ))
}

/// How list items are identified: by a merge key, or (primitives) by value.
#[derive(Clone, Copy)]
struct KeyOf(ListStrategy);

impl KeyOf {
    fn index(&self, list: &[Value], item: &Value) -> Option<usize> {
        match self.0 {
            ListStrategy::MergeKey(key) => {
                let k = item.get(key)?;
                list.iter().position(|v| v.get(key) == Some(k))
            }
            _ => list.iter().position(|v| v == item),
        }
    }
}

/// Upstream's `normalizeElementOrder`: patch items follow `order`, items only the server has
/// keep their original order, and the two are interleaved by their positions in the original.
fn normalize_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    order: &[Value],
    server_order: &[Value],
    key_of: KeyOf,
) -> Vec<Value> {
    patch_items.sort_by_key(|item| key_of.index(order, item).unwrap_or(usize::MAX));
    server_only.sort_by_key(|item| key_of.index(server_order, item).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (key_of.index(server_order, l), key_of.index(server_order, r)) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

fn display_path(path: &[String]) -> String {
    if path.is_empty() {
        "the patch".to_owned()
    } else {
        path.join(".")
    }
}
