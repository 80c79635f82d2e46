//! Canonical JSON: the one byte form a receipt is hashed and written in.
//!
//! Object keys are sorted (byte order) at every depth and nothing is indented, so the same
//! receipt always hashes the same however its fields were inserted (the workspace enables
//! serde_json's `preserve_order`, which would otherwise keep insertion order).

use serde_json::Value;

/// Serializes `value` canonically: sorted keys, compact separators, serde_json's number and
/// string escaping.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write(&map[key.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        // Scalars have exactly one serde_json form already.
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(s: &str, out: &mut String) {
    // serde_json's escaping, without copying the string into a Value first.
    out.push_str(&serde_json::to_string(s).expect("a str always serializes"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_at_every_depth() {
        let v = json!({"b": 1, "a": {"z": [true, null], "y": "x\"q"}});
        assert_eq!(to_string(&v), r#"{"a":{"y":"x\"q","z":[true,null]},"b":1}"#);
    }
}
