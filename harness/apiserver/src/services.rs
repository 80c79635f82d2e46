//! Services: ClusterIP allocation from the server's service range and the validation a real
//! API server applies to a Service (ports, types, immutable cluster IPs), with its messages.
//!
//! Allocation reads the addresses of the Services in the store, so a deleted Service's address
//! is free again at once and two Services never share one. The first [`RESERVED`] addresses of
//! the range are never handed out: the node keeps them for itself (its DNS server listens on
//! the range's base + 10, as kube-dns does on 10.96.0.10).

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use crate::registry::ResourceInfo;
use crate::schema::{FieldError, FieldErrorReason};
use crate::status::ApiError;

/// Where Services live in the store.
pub const STORAGE: &str = "/services";

/// Addresses at the start of the range that are never allocated (the node's own).
pub const RESERVED: u32 = 16;

/// The range ClusterIPs are allocated from (`--service-cluster-ip-range`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceRange {
    /// The network address.
    pub base: Ipv4Addr,
    /// The prefix length (at most 28, so there is something to allocate past the reserved).
    pub prefix: u8,
}

impl Default for ServiceRange {
    /// kube-apiserver's default, 10.96.0.0/12 (a standalone server's Services are never
    /// reached; the embedded cluster sets a loopback range its node proxies).
    fn default() -> Self {
        ServiceRange {
            base: Ipv4Addr::new(10, 96, 0, 0),
            prefix: 12,
        }
    }
}

impl std::fmt::Display for ServiceRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.base, self.prefix)
    }
}

impl ServiceRange {
    fn size(&self) -> u32 {
        1u32 << (32 - u32::from(self.prefix.min(28)))
    }

    /// Whether `ip` is in the range.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let offset = u32::from(ip).wrapping_sub(u32::from(self.base));
        u32::from(ip) >= u32::from(self.base) && offset < self.size()
    }

    /// The address `offset` past the base.
    pub fn nth(&self, offset: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.base) + offset)
    }
}

/// The cluster IP of the `kubernetes` Service in `default`: the range's first address, as
/// 10.96.0.1 in 10.96.0.0/12 (one of the reserved ones, never allocated to another Service).
pub fn kubernetes_service_ip(range: ServiceRange) -> Ipv4Addr {
    range.nth(1)
}

fn err(
    reason: FieldErrorReason,
    field: impl Into<String>,
    message: impl Into<String>,
) -> FieldError {
    FieldError {
        reason,
        field: field.into(),
        message: message.into(),
    }
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

/// The cluster IPs held by `services` (headless and ExternalName Services hold none).
pub fn used_ips<'a>(services: impl Iterator<Item = &'a Value>) -> HashSet<Ipv4Addr> {
    services
        .filter_map(|s| str_at(s, "/spec/clusterIP")?.parse().ok())
        .collect()
}

/// IANA_SVC_NAME: at most 15 lowercase letters, digits and '-', with a letter, no '-' at
/// either end and no "--".
fn valid_port_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 15
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn validate_spec(spec: &Value, errors: &mut Vec<FieldError>) {
    let type_ = str_at(spec, "/type").unwrap_or("ClusterIP");
    const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if !TYPES.contains(&type_) {
        errors.push(err(
            FieldErrorReason::NotSupported,
            "spec.type",
            format!(
                "Unsupported value: \"{type_}\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
            ),
        ));
    }
    let headless = str_at(spec, "/clusterIP") == Some("None");
    if headless && matches!(type_, "NodePort" | "LoadBalancer") {
        errors.push(err(
            FieldErrorReason::Invalid,
            "spec.clusterIPs[0]",
            format!("Invalid value: \"None\": may not be set to 'None' for {type_} services"),
        ));
    }
    if type_ == "ExternalName" && str_at(spec, "/externalName").is_none_or(str::is_empty) {
        errors.push(err(
            FieldErrorReason::Required,
            "spec.externalName",
            "Required value",
        ));
    }
    let ports = spec
        .get("ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if ports.is_empty() && !headless && type_ != "ExternalName" {
        errors.push(err(
            FieldErrorReason::Required,
            "spec.ports",
            "Required value",
        ));
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        validate_port(i, port, ports.len(), &mut names, errors);
    }
}

/// One entry of `spec.ports`: its name (unique, and required when there are several), port,
/// protocol and target port.
fn validate_port<'a>(
    i: usize,
    port: &'a Value,
    port_count: usize,
    names: &mut HashSet<&'a str>,
    errors: &mut Vec<FieldError>,
) {
    let path = format!("spec.ports[{i}]");
    match port
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        Some(name) => {
            if !valid_port_name(name) {
                errors.push(err(
                    FieldErrorReason::Invalid,
                    format!("{path}.name"),
                    format!(
                        "Invalid value: \"{name}\": must contain only lowercase alphanumeric characters or '-', at most 15 characters, at least one letter, and not begin or end with '-'"
                    ),
                ));
            }
            if !names.insert(name) {
                errors.push(err(
                    FieldErrorReason::Duplicate,
                    format!("{path}.name"),
                    format!("Duplicate value: \"{name}\""),
                ));
            }
        }
        None if port_count > 1 => {
            errors.push(err(
                FieldErrorReason::Required,
                format!("{path}.name"),
                "Required value",
            ));
        }
        None => {}
    }
    let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&number) {
        errors.push(err(
            FieldErrorReason::Invalid,
            format!("{path}.port"),
            format!("Invalid value: {number}: must be between 1 and 65535, inclusive"),
        ));
    }
    let protocol = port
        .get("protocol")
        .and_then(Value::as_str)
        .unwrap_or("TCP");
    if !["SCTP", "TCP", "UDP"].contains(&protocol) {
        errors.push(err(
            FieldErrorReason::NotSupported,
            format!("{path}.protocol"),
            format!(
                "Unsupported value: \"{protocol}\": supported values: \"SCTP\", \"TCP\", \"UDP\""
            ),
        ));
    }
    match port.get("targetPort") {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errors.push(err(
                    FieldErrorReason::Invalid,
                    format!("{path}.targetPort"),
                    format!("Invalid value: {n}: must be between 1 and 65535, inclusive"),
                ));
            }
        }
        Some(Value::String(s)) if !valid_port_name(s) => {
            errors.push(err(
                FieldErrorReason::Invalid,
                format!("{path}.targetPort"),
                format!(
                    "Invalid value: \"{s}\": must contain only lowercase alphanumeric characters or '-', at most 15 characters, at least one letter, and not begin or end with '-'"
                ),
            ));
        }
        _ => {}
    }
}

/// Validates a new Service and gives it its cluster IP: the one it asks for (in the range and
/// free) or the next free one after `cursor`.
pub fn admit_create(
    range: ServiceRange,
    used: &HashSet<Ipv4Addr>,
    cursor: &mut u32,
    info: &ResourceInfo,
    name: &str,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    validate_spec(&spec, &mut errors);
    let type_ = str_at(&spec, "/type").unwrap_or("ClusterIP");
    let asked_ip = str_at(&spec, "/clusterIP").filter(|s| !s.is_empty());
    let asked_ips = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if let (Some(ip), Some(first)) = (asked_ip, asked_ips)
        && ip != first
    {
        errors.push(err(
            FieldErrorReason::Invalid,
            "spec.clusterIPs[0]",
            format!("Invalid value: \"{first}\": must match clusterIP when both are specified"),
        ));
    }
    let asked = asked_ip.or(asked_ips);
    let mut allocate = false;
    match asked {
        _ if type_ == "ExternalName" => {}
        Some("None") => {}
        Some(text) => match text.parse::<Ipv4Addr>() {
            Err(_) => errors.push(err(
                FieldErrorReason::Invalid,
                "spec.clusterIPs[0]",
                format!(
                    "Invalid value: \"{text}\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
                ),
            )),
            Ok(ip) if !range.contains(ip) => errors.push(err(
                FieldErrorReason::Invalid,
                "spec.clusterIPs",
                format!(
                    "Invalid value: []string{{\"{ip}\"}}: failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}"
                ),
            )),
            Ok(ip) if used.contains(&ip) => errors.push(err(
                FieldErrorReason::Invalid,
                "spec.clusterIPs",
                format!(
                    "Invalid value: []string{{\"{ip}\"}}: failed to allocate IP {ip}: provided IP is already allocated"
                ),
            )),
            Ok(_) => {}
        },
        None => allocate = true,
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid(info, name, &errors));
    }
    let spec = obj
        .as_object_mut()
        .expect("admission runs on objects")
        .entry("spec")
        .or_insert_with(|| json!({}));
    if type_ == "ExternalName" {
        if let Some(spec) = spec.as_object_mut() {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        return Ok(());
    }
    let ip = if allocate {
        let span = range.size() - RESERVED;
        let found = (0..span)
            .map(|i| range.nth(RESERVED + (*cursor + i) % span))
            .find(|ip| !used.contains(ip));
        let Some(ip) = found else {
            return Err(ApiError::new(
                500,
                "InternalError",
                format!(
                    "Internal error occurred: failed to allocate a serviceIP: range is full ({range})"
                ),
            ));
        };
        *cursor = (u32::from(ip) - u32::from(range.base) - RESERVED + 1) % span;
        ip.to_string()
    } else {
        asked.unwrap_or("None").to_string()
    };
    spec["clusterIP"] = json!(ip);
    spec["clusterIPs"] = json!([ip]);
    Ok(())
}

/// Validates an update: cluster IPs may not change once set (an update that leaves them out
/// keeps the allocated ones, as kube-apiserver does), and the spec is checked as on create.
pub fn admit_update(
    info: &ResourceInfo,
    name: &str,
    old: &Value,
    new: &mut Value,
) -> Result<(), ApiError> {
    let old_ip = str_at(old, "/spec/clusterIP").map(str::to_string);
    let new_type = str_at(new, "/spec/type").unwrap_or("ClusterIP").to_string();
    let mut errors = Vec::new();
    if let Some(old_ip) = old_ip
        && new_type != "ExternalName"
    {
        let spec = new
            .as_object_mut()
            .expect("admission runs on objects")
            .entry("spec")
            .or_insert_with(|| json!({}));
        match spec.get("clusterIP").and_then(Value::as_str) {
            None | Some("") => {
                spec["clusterIP"] = json!(old_ip);
                if let Some(ips) = old.pointer("/spec/clusterIPs") {
                    spec["clusterIPs"] = ips.clone();
                }
            }
            Some(ip) if ip != old_ip => errors.push(err(
                FieldErrorReason::Invalid,
                "spec.clusterIPs[0]",
                format!("Invalid value: \"{ip}\": may not change once set"),
            )),
            Some(_) => {
                let first = spec
                    .get("clusterIPs")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str);
                match first {
                    None | Some("") => spec["clusterIPs"] = json!([old_ip]),
                    Some(ip) if ip != old_ip => errors.push(err(
                        FieldErrorReason::Invalid,
                        "spec.clusterIPs[0]",
                        format!("Invalid value: \"{ip}\": may not change once set"),
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    let spec = new.get("spec").cloned().unwrap_or_else(|| json!({}));
    validate_spec(&spec, &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(info, name, &errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_contain_their_addresses_only() {
        let r = ServiceRange {
            base: Ipv4Addr::new(127, 20, 192, 0),
            prefix: 18,
        };
        assert!(r.contains(Ipv4Addr::new(127, 20, 192, 0)));
        assert!(r.contains(Ipv4Addr::new(127, 20, 255, 255)));
        assert!(!r.contains(Ipv4Addr::new(127, 20, 191, 255)));
        assert!(!r.contains(Ipv4Addr::new(127, 21, 0, 0)));
    }

    #[test]
    fn port_names_follow_iana_svc_name() {
        for good in ["http", "agent", "a-1", "mc25565"] {
            assert!(valid_port_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "8090", "Http", "sixteen-chars-xx"] {
            assert!(!valid_port_name(bad), "{bad}");
        }
    }
}
