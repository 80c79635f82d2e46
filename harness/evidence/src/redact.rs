//! Keeps secrets out of receipts: receipts are uploaded as CI artifacts and pasted into reports.
//!
//! The rule, applied to every observed value before it is hashed and written:
//! 1. An object key whose lowercase form contains `password`, `passwd`, `token`, `secret`,
//!    `passphrase`, `credential`, `apikey`, `api_key` or `private_key` has its value replaced by
//!    `"[redacted]"`, unless the key ends in `ref`/`Ref`/`name`/`Name` (a reference such as
//!    `passwordSecretRef` or `secretName` names a Secret; it is not one).
//! 2. In an object whose `kind` is `"Secret"`, every value under `data` and `stringData` is
//!    replaced by `"[redacted]"` (the keys stay, so a receipt still shows which keys existed).
//! 3. In an environment entry `{name, value}` whose `name` matches rule 1 (for example
//!    `RESTIC_PASSWORD`), `value` is replaced by `"[redacted]"`.
//!
//! Redaction is visible: a reviewer sees `"[redacted]"`, never a silently missing field.

use serde_json::Value;

/// The replacement written where a secret was.
pub const REDACTED: &str = "[redacted]";

const SENSITIVE: &[&str] = &[
    "password",
    "passwd",
    "token",
    "secret",
    "passphrase",
    "credential",
    "apikey",
    "api_key",
    "private_key",
];

/// Whether a key (or an env var name) names a secret value under the module's rule.
pub fn is_sensitive_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    if lower.ends_with("ref") || lower.ends_with("name") {
        return false;
    }
    SENSITIVE.iter().any(|word| lower.contains(word))
}

/// Redacts `value` in place; returns how many values were replaced.
pub fn redact(value: &mut Value) -> usize {
    match value {
        Value::Object(map) => {
            let mut count = 0;
            let is_secret = map.get("kind").and_then(Value::as_str) == Some("Secret");
            let env_name_sensitive = map
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(is_sensitive_key);
            for (key, child) in map.iter_mut() {
                let whole = is_sensitive_key(key)
                    || (env_name_sensitive && key == "value")
                    || (is_secret && (key == "data" || key == "stringData") && !child.is_object());
                if whole {
                    if !is_redacted(child) {
                        *child = Value::String(REDACTED.into());
                        count += 1;
                    }
                } else if is_secret && (key == "data" || key == "stringData") {
                    if let Value::Object(entries) = child {
                        for entry in entries.values_mut() {
                            if !is_redacted(entry) {
                                *entry = Value::String(REDACTED.into());
                                count += 1;
                            }
                        }
                    }
                } else {
                    count += redact(child);
                }
            }
            count
        }
        Value::Array(items) => items.iter_mut().map(redact).sum(),
        _ => 0,
    }
}

fn is_redacted(value: &Value) -> bool {
    value.as_str() == Some(REDACTED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_kept_values_are_not() {
        let mut v = json!({
            "rcon": {"passwordSecretRef": {"name": "rcon", "key": "password"}, "password": "hunter2"},
            "env": [{"name": "RESTIC_PASSWORD", "value": "pw"}, {"name": "EULA", "value": "true"}],
            "secret": {"kind": "Secret", "data": {"repo": "cmVwbw==", "password": "cHc="}},
            "secretName": "restic-repo"
        });
        let n = redact(&mut v);
        assert_eq!(v["rcon"]["passwordSecretRef"]["name"], "rcon");
        assert_eq!(v["rcon"]["password"], REDACTED);
        assert_eq!(v["env"][0]["value"], REDACTED);
        assert_eq!(v["env"][1]["value"], "true");
        // `secret` itself is a sensitive key, so the whole object goes.
        assert_eq!(v["secret"], REDACTED);
        assert_eq!(v["secretName"], "restic-repo");
        assert_eq!(n, 3);
    }

    #[test]
    fn secret_objects_keep_their_keys() {
        let mut v = json!({"object": {"kind": "Secret", "metadata": {"name": "repo"},
            "data": {"repo": "cmVwbw==", "password": "cHc="}, "stringData": {"x": "y"}}});
        redact(&mut v);
        assert_eq!(v["object"]["data"]["repo"], REDACTED);
        assert_eq!(v["object"]["data"]["password"], REDACTED);
        assert_eq!(v["object"]["stringData"]["x"], REDACTED);
        assert_eq!(v["object"]["metadata"]["name"], "repo");
    }
}
