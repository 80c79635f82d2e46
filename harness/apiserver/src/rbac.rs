//! RBAC authorization as kube-apiserver does it: request attributes derived from the URL and
//! method, rules from the stored Role/ClusterRole/RoleBinding/ClusterRoleBinding objects, the
//! `system:masters` group allowed everything, and the `Forbidden` Status worded as real
//! clusters word it. The default roles and bindings a real cluster bootstraps (cluster-admin,
//! system:discovery, system:basic-user, system:public-info-viewer, admin/edit/view) are
//! created at start as ordinary objects ([`crate::rbac_defaults`]).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::meta;
use crate::rbac_defaults::GROUP;
use crate::state::State;
use crate::status::ApiError;
use crate::user::{MASTERS_GROUP, UserInfo, parse_service_account_user, service_account_user};

/// What a request does, as the authorizer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    /// `Some` for resource requests.
    pub resource: Option<ResourceAttributes>,
    /// The URL path of non-resource requests.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceAttributes {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Attributes {
    pub fn resource(
        verb: &str,
        group: &str,
        resource: &str,
        subresource: &str,
        namespace: &str,
        name: &str,
    ) -> Self {
        Attributes {
            verb: verb.into(),
            resource: Some(ResourceAttributes {
                group: group.into(),
                resource: resource.into(),
                subresource: subresource.into(),
                namespace: namespace.into(),
                name: name.into(),
            }),
            path: String::new(),
        }
    }

    pub fn non_resource(verb: &str, path: &str) -> Self {
        Attributes {
            verb: verb.into(),
            resource: None,
            path: path.into(),
        }
    }

    /// From a request, as kube-apiserver's RequestInfoFactory derives them: `/api/v1/...` and
    /// `/apis/G/V/...` are resource requests, anything else (discovery, `/healthz`,
    /// `/version`, `/openapi`) a non-resource request with the lowercase HTTP method as verb.
    pub fn of_request(
        method: &http::Method,
        path: &str,
        segs: &[&str],
        watch: bool,
        field_selector: Option<&str>,
    ) -> Self {
        let http_verb = method.as_str().to_ascii_lowercase();
        let (group, rest) = match segs {
            ["api", "v1", rest @ ..] if !rest.is_empty() => ("", rest),
            ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
            _ => return Attributes::non_resource(&http_verb, path),
        };
        let (namespace, parts): (&str, &[&str]) = match rest {
            ["namespaces", ns, more @ ..]
                if !more.is_empty() && !matches!(more, ["status" | "finalize"]) =>
            {
                (ns, more)
            }
            ["namespaces", ns, ..] => (ns, rest),
            _ => ("", rest),
        };
        let resource = parts.first().copied().unwrap_or("");
        let name = parts.get(1).copied().unwrap_or("");
        let subresource = parts.get(2).copied().unwrap_or("");
        let mut verb = match *method {
            http::Method::POST => "create",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => "delete",
            _ => "get",
        }
        .to_string();
        let mut name = name.to_string();
        if parts.len() == 1 {
            verb = match *method {
                http::Method::GET | http::Method::HEAD if watch => "watch".into(),
                http::Method::GET | http::Method::HEAD => "list".into(),
                http::Method::DELETE => "deletecollection".into(),
                _ => verb,
            };
            // A list or watch of one object by name is authorised for that name.
            if let Some(selected) = field_selector.and_then(|s| {
                s.split(',')
                    .find_map(|term| term.strip_prefix("metadata.name="))
                    .or_else(|| {
                        s.split(',')
                            .find_map(|term| term.strip_prefix("metadata.name=="))
                    })
            }) {
                name = selected.to_string();
            }
        }
        // Since 1.31 a WebSocket GET of exec/attach/portforward needs `create`, as a POST does.
        if matches!(subresource, "exec" | "attach" | "portforward") {
            verb = "create".into();
        }
        Attributes::resource(&verb, group, resource, subresource, namespace, &name)
    }
}

/// An authorization decision with the reason kube-apiserver's RBAC authorizer gives.
#[derive(Debug, Clone)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

fn appliesto(subject: &Value, user: &UserInfo, binding_ns: &str) -> bool {
    let name = subject["name"].as_str().unwrap_or("");
    match subject["kind"].as_str().unwrap_or("") {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = subject["namespace"]
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or(binding_ns);
            user.name == service_account_user(ns, name)
        }
        _ => false,
    }
}

fn has(list: &Value, wanted: &str, wildcard: &str) -> bool {
    list.as_array().is_some_and(|l| {
        l.iter()
            .any(|v| v.as_str() == Some(wildcard) || v.as_str() == Some(wanted))
    })
}

/// Whether one PolicyRule allows `attrs` (RBAC's RuleAllows).
pub fn rule_allows(rule: &Value, attrs: &Attributes) -> bool {
    if !has(&rule["verbs"], &attrs.verb, "*") {
        return false;
    }
    match &attrs.resource {
        Some(r) => {
            if !has(&rule["apiGroups"], &r.group, "*") {
                return false;
            }
            let combined = if r.subresource.is_empty() {
                r.resource.clone()
            } else {
                format!("{}/{}", r.resource, r.subresource)
            };
            let resource_ok = rule["resources"].as_array().is_some_and(|l| {
                l.iter().filter_map(Value::as_str).any(|rr| {
                    rr == "*"
                        || rr == combined
                        || (!r.subresource.is_empty()
                            && rr.strip_prefix("*/") == Some(r.subresource.as_str()))
                })
            });
            if !resource_ok {
                return false;
            }
            match rule["resourceNames"].as_array() {
                Some(names) if !names.is_empty() => {
                    names.iter().any(|n| n.as_str() == Some(r.name.as_str()))
                }
                _ => true,
            }
        }
        None => rule["nonResourceURLs"].as_array().is_some_and(|l| {
            l.iter().filter_map(Value::as_str).any(|u| {
                u == "*"
                    || u == attrs.path
                    || u.strip_suffix('*')
                        .is_some_and(|prefix| attrs.path.starts_with(prefix))
            })
        }),
    }
}

/// One binding that applies to the user; its description (for the audit reason) is built
/// only when it decides a request.
struct Grant<'a> {
    binding: &'a Value,
    subject: &'a Value,
    /// `None` for a ClusterRoleBinding.
    namespace: Option<&'a str>,
}

impl Grant<'_> {
    fn describe(&self, user: &UserInfo) -> String {
        let binding_ns = meta::meta_str(self.binding, "namespace").unwrap_or("");
        let role_kind = self.binding["roleRef"]["kind"].as_str().unwrap_or("");
        let role_name = self.binding["roleRef"]["name"].as_str().unwrap_or("");
        let who = match self.subject["kind"].as_str() {
            Some("Group") => format!("Group \"{}\"", self.subject["name"].as_str().unwrap_or("")),
            _ if parse_service_account_user(&user.name).is_some() => {
                format!("ServiceAccount \"{}\"", user.name)
            }
            _ => format!("User \"{}\"", user.name),
        };
        let (binding_kind, binding_name) = match self.namespace {
            Some(_) => (
                "RoleBinding",
                format!("{binding_ns}/{}", meta::name(self.binding)),
            ),
            None => ("ClusterRoleBinding", meta::name(self.binding).to_string()),
        };
        let role_desc = if role_kind == "Role" {
            format!("{binding_ns}/{role_name}")
        } else {
            role_name.to_string()
        };
        format!(
            "allowed by {binding_kind} \"{binding_name}\" of {role_kind} \"{role_desc}\" to {who}"
        )
    }
}

/// The role a binding names, if it exists.
fn bound_role(state: &State, binding: &Value) -> Option<Arc<Value>> {
    let kind = binding["roleRef"]["kind"].as_str().unwrap_or("");
    let name = binding["roleRef"]["name"].as_str().unwrap_or("");
    let (plural, ns) = if kind == "ClusterRole" {
        ("clusterroles", "")
    } else {
        ("roles", meta::meta_str(binding, "namespace").unwrap_or(""))
    };
    let info = state.registry.get(GROUP, "v1", plural)?;
    state.get(&info, ns, name)
}

/// Visits the bindings (cluster-wide, then those of `namespace`) that apply to `user`, with the
/// rules of the role each names, until `visit` returns `Some`. Nothing is copied: this runs on
/// every request of a user outside `system:masters` (the operator's every call).
fn find_grant<T>(
    state: &State,
    user: &UserInfo,
    namespace: &str,
    mut visit: impl FnMut(&Grant<'_>, &[Value]) -> Option<T>,
) -> Option<T> {
    let mut scopes = vec![("clusterrolebindings", None)];
    if !namespace.is_empty() {
        scopes.push(("rolebindings", Some(namespace)));
    }
    for (plural, ns) in scopes {
        let Some(info) = state.registry.get(GROUP, "v1", plural) else {
            continue;
        };
        for binding in state.list(&info, ns) {
            let binding_ns = meta::meta_str(&binding, "namespace").unwrap_or("");
            let Some(subject) = binding["subjects"]
                .as_array()
                .and_then(|subjects| subjects.iter().find(|s| appliesto(s, user, binding_ns)))
            else {
                continue;
            };
            let role = bound_role(state, &binding);
            let rules = role
                .as_ref()
                .and_then(|r| r["rules"].as_array())
                .map(Vec::as_slice)
                .unwrap_or_default();
            let grant = Grant {
                binding: &binding,
                subject,
                namespace: ns,
            };
            if let Some(found) = visit(&grant, rules) {
                return Some(found);
            }
        }
    }
    None
}

/// RBAC's decision on `attrs` for `user`.
pub fn authorize(state: &State, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.groups.iter().any(|g| g == MASTERS_GROUP) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let ns = attrs
        .resource
        .as_ref()
        .map(|r| r.namespace.as_str())
        .unwrap_or("");
    let allowed_by = find_grant(state, user, ns, |grant, rules| {
        rules
            .iter()
            .any(|rule| rule_allows(rule, attrs))
            .then(|| grant.describe(user))
    });
    match allowed_by {
        Some(describe) => Decision {
            allowed: true,
            reason: format!("RBAC: {describe}"),
        },
        None => Decision {
            allowed: false,
            reason: String::new(),
        },
    }
}

/// The rules `user` holds in `namespace` (SelfSubjectRulesReview): resource rules and
/// non-resource rules, as the bindings state them.
pub fn rules_for(state: &State, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<Value>) {
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    let mut push = |rule: &Value| {
        let verbs = rule["verbs"].clone();
        if rule["nonResourceURLs"]
            .as_array()
            .is_some_and(|l| !l.is_empty())
        {
            non_resource_rules
                .push(json!({"verbs": verbs, "nonResourceURLs": rule["nonResourceURLs"]}));
        }
        if rule["resources"].as_array().is_some_and(|l| !l.is_empty()) {
            let mut r = json!({"verbs": verbs, "apiGroups": rule["apiGroups"], "resources": rule["resources"]});
            if rule["resourceNames"]
                .as_array()
                .is_some_and(|l| !l.is_empty())
            {
                r["resourceNames"] = rule["resourceNames"].clone();
            }
            resource_rules.push(r);
        }
    };
    if user.groups.iter().any(|g| g == MASTERS_GROUP) {
        push(&json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        push(&json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
    }
    find_grant(state, user, namespace, |_, rules| {
        rules.iter().for_each(&mut push);
        None::<()>
    });
    (resource_rules, non_resource_rules)
}

/// The 403 kube-apiserver answers a denied request with.
pub fn forbidden(user: &UserInfo, attrs: &Attributes) -> ApiError {
    let Some(r) = &attrs.resource else {
        return ApiError::forbidden(format!(
            "forbidden: User \"{}\" cannot {} path \"{}\"",
            user.name, attrs.verb, attrs.path
        ));
    };
    let resource = if r.subresource.is_empty() {
        r.resource.clone()
    } else {
        format!("{}/{}", r.resource, r.subresource)
    };
    let why = if r.namespace.is_empty() {
        format!(
            "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" at the cluster scope",
            user.name, attrs.verb, r.group
        )
    } else {
        format!(
            "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" in the namespace \"{}\"",
            user.name, attrs.verb, r.group, r.namespace
        )
    };
    let qualified = if r.group.is_empty() {
        r.resource.clone()
    } else {
        format!("{}.{}", r.resource, r.group)
    };
    let message = match (qualified.is_empty(), r.name.is_empty()) {
        (true, _) => format!("forbidden: {why}"),
        (false, true) => format!("{qualified} is forbidden: {why}"),
        (false, false) => format!("{qualified} \"{}\" is forbidden: {why}", r.name),
    };
    let mut details = json!({"kind": r.resource});
    if !r.name.is_empty() {
        details["name"] = json!(r.name);
    }
    if !r.group.is_empty() {
        details["group"] = json!(r.group);
    }
    let mut e = ApiError::forbidden(message);
    e.details = Some(details);
    e
}
