//! An object as the server writes it: at the version it is served at, as JSON bytes. Used by
//! the request handlers and the watches alike.

use std::borrow::Cow;

use serde_json::Value;

use crate::registry::ResourceInfo;

/// An object's JSON bytes.
pub fn render_value(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("JSON values serialise")
}

/// An object as served at `info`'s version (custom resources may be stored at another).
pub fn view<'a>(info: &ResourceInfo, obj: &'a Value) -> Cow<'a, Value> {
    let wanted = info.api_version();
    if obj.get("apiVersion").and_then(Value::as_str) == Some(wanted.as_str()) {
        Cow::Borrowed(obj)
    } else {
        let mut o = obj.clone();
        o["apiVersion"] = Value::String(wanted);
        Cow::Owned(o)
    }
}
