//! Optional check against the real Gameplane CRDs (`../shared/reference/gameplane-crds/`, or
//! `GAMEPLANE_REFERENCE_CRDS`): where our schema and theirs share a field, the names and types
//! agree, every field we add is a known Part B addition, and the validation Gameplane's schema
//! puts on a shared field (enum, pattern, lengths, range) is ours too. The reference files are
//! not part of the project: without them the check reports that it did not run and passes,
//! except with `CI=true`, where their absence is a failure.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

fn reference_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("GAMEPLANE_REFERENCE_CRDS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/reference/gameplane-crds")
        });
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but the reference Gameplane CRDs are not at {}; provide them there or set GAMEPLANE_REFERENCE_CRDS",
        dir.display()
    );
    None
}

/// Validation keywords compared field by field.
const CONSTRAINTS: &[&str] = &[
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
];

/// Subtrees whose schema is a Kubernetes core type (k8s-openapi's `EnvVar`, `Condition`): the
/// API server validates those itself, and k8s-openapi's schemas carry no such keywords.
const CORE_TYPES: &[&str] = &[".env[]", ".conditions[]"];

/// Flattens a schema into `path -> {keyword: value}` for [`CONSTRAINTS`] (numbers as f64, so
/// `5` and `5.0` agree).
fn constraints(schema: &Value, path: String, out: &mut BTreeMap<String, BTreeMap<String, Value>>) {
    let mut here = BTreeMap::new();
    for key in CONSTRAINTS {
        if let Some(v) = schema.get(*key) {
            let v = match v.as_f64() {
                Some(n) => serde_json::json!(n),
                None => v.clone(),
            };
            here.insert(key.to_string(), v);
        }
    }
    out.insert(path.clone(), here);
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            constraints(v, format!("{path}.{k}"), out);
        }
    }
    if let Some(items) = schema.get("items") {
        constraints(items, format!("{path}[]"), out);
    }
}

fn constraints_of(crd: &Value) -> BTreeMap<String, BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    constraints(
        &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        String::new(),
        &mut out,
    );
    out
}

#[test]
fn shared_fields_carry_gameplanes_enums_and_patterns() {
    let Some(dir) = reference_dir() else {
        eprintln!(
            "reference CRDs not found: comparison not run (set GAMEPLANE_REFERENCE_CRDS to run it)"
        );
        return;
    };
    let mut problems = Vec::new();
    let mut compared = 0;
    for crd in gameplane_api::crds::all() {
        let kind = crd.spec.names.kind.clone();
        let path = dir.join(format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let theirs: Value =
            serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let ours = constraints_of(&serde_json::to_value(&crd).unwrap());
        let theirs = constraints_of(&theirs);
        for (field, mine) in &ours {
            if CORE_TYPES.iter().any(|c| field.contains(c)) {
                continue;
            }
            let Some(real) = theirs.get(field) else {
                continue;
            };
            if !real.is_empty() {
                compared += 1;
            }
            if mine != real {
                problems.push(format!(
                    "{kind}{field}: ours {}, Gameplane {}",
                    serde_json::to_string(mine).unwrap(),
                    serde_json::to_string(real).unwrap()
                ));
            }
        }
    }
    eprintln!("{compared} constrained fields agree with Gameplane's CRDs");
    assert!(
        compared >= 20,
        "only {compared} constrained fields compared: is {} the CRD directory?",
        dir.display()
    );
    assert!(
        problems.is_empty(),
        "validation differs from Gameplane's:\n  {}",
        problems.join("\n  ")
    );
}

/// Flattens a schema into `path -> type` (`x-kubernetes-int-or-string` counts as a type).
fn flatten(schema: &Value, path: String, out: &mut BTreeMap<String, String>) {
    let ty = if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        "int-or-string".to_string()
    } else {
        schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    out.insert(path.clone(), ty);
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            flatten(v, format!("{path}.{k}"), out);
        }
    }
    if let Some(items) = schema.get("items") {
        flatten(items, format!("{path}[]"), out);
    }
}

fn schema_of(crd: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    flatten(
        &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        String::new(),
        &mut out,
    );
    out
}

/// Fields this project adds on purpose (CONTRACT B), or that only exist in it.
const ADDITIONS: &[&str] = &[
    ".status.source",
    ".status.consistency",
    ".spec.agent.disabled",
];

/// Subtrees typed with a Kubernetes core type (`Probe`): k8s-openapi's schema is of a newer
/// Kubernetes than Gameplane's CRDs were generated against, so it may have fields theirs has
/// not (e.g. `grpc.mode`); every field both have must still agree.
const NEWER_CORE_TYPES: &[&str] = &[".spec.probes."];

#[test]
fn shared_fields_match_the_real_gameplane_crds() {
    let Some(dir) = reference_dir() else {
        eprintln!(
            "reference CRDs not found: comparison not run (set GAMEPLANE_REFERENCE_CRDS to run it)"
        );
        return;
    };
    let mut problems = Vec::new();
    let mut shared = 0;
    for crd in gameplane_api::crds::all() {
        let ours = serde_json::to_value(&crd).unwrap();
        // The real CRDs are named the controller-gen way: `<group>_<plural>.yaml`.
        let path = dir.join(format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let theirs: Value =
            serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let kind = crd.spec.names.kind.clone();
        assert_eq!(
            theirs["spec"]["scope"], ours["spec"]["scope"],
            "{kind} scope"
        );
        let (ours, theirs) = (schema_of(&ours), schema_of(&theirs));
        for (field, ty) in &ours {
            let added = ADDITIONS.iter().any(|a| field.starts_with(a))
                || NEWER_CORE_TYPES.iter().any(|c| field.starts_with(c));
            match theirs.get(field) {
                Some(t) if t == ty || t.is_empty() || ty.is_empty() => shared += 1,
                Some(t) => problems.push(format!("{kind}{field}: ours {ty}, Gameplane {t}")),
                None if added => {}
                None => problems.push(format!("{kind}{field}: not in Gameplane's CRD (misspelt, or a new Part B field to list in ADDITIONS)")),
            }
        }
    }
    eprintln!("{shared} fields shared with Gameplane's CRDs agree");
    assert!(
        shared > 50,
        "only {shared} shared fields compared: is {} the CRD directory?",
        dir.display()
    );
    assert!(
        problems.is_empty(),
        "schema differences:\n  {}",
        problems.join("\n  ")
    );
}
