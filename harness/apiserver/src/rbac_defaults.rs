//! The default RBAC objects a real cluster bootstraps (cluster-admin, system:discovery,
//! system:basic-user, system:public-info-viewer, admin/edit/view and their bindings), which
//! the store creates at start as ordinary objects. Data only: the authorizer that reads them
//! is [`crate::rbac`].

use serde_json::{Value, json};

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    })
}

fn cluster_role_binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

/// The default ClusterRoles and ClusterRoleBindings of a real cluster (the subset that
/// matters here), as (plural, object).
pub fn bootstrap_objects() -> Vec<(&'static str, Value)> {
    let read = json!(["get", "list", "watch"]);
    let write = json!(["create", "delete", "deletecollection", "patch", "update"]);
    let core_view = json!([
        "configmaps",
        "endpoints",
        "persistentvolumeclaims",
        "persistentvolumeclaims/status",
        "pods",
        "pods/log",
        "pods/status",
        "replicationcontrollers",
        "replicationcontrollers/scale",
        "replicationcontrollers/status",
        "resourcequotas",
        "resourcequotas/status",
        "serviceaccounts",
        "services",
        "services/status",
        "bindings",
        "events",
        "limitranges",
        "namespaces/status",
        "pods/status",
        "namespaces"
    ]);
    let apps = json!([
        "controllerrevisions",
        "daemonsets",
        "daemonsets/status",
        "deployments",
        "deployments/scale",
        "deployments/status",
        "replicasets",
        "replicasets/scale",
        "replicasets/status",
        "statefulsets",
        "statefulsets/scale",
        "statefulsets/status"
    ]);
    let batch = json!(["cronjobs", "cronjobs/status", "jobs", "jobs/status"]);
    let view_rules = json!([
        {"apiGroups": [""], "resources": core_view, "verbs": read},
        {"apiGroups": ["apps"], "resources": apps, "verbs": read},
        {"apiGroups": ["batch"], "resources": batch, "verbs": read},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets", "poddisruptionbudgets/status"], "verbs": read},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": read},
    ]);
    let edit_rules = json!([
        {"apiGroups": [""], "resources": ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], "verbs": read},
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]},
        {"apiGroups": [""], "resources": ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], "verbs": write},
        {"apiGroups": [""], "resources": ["pods/eviction", "serviceaccounts/token"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
            "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"], "verbs": write},
        {"apiGroups": ["apps"], "resources": ["daemonsets", "deployments", "deployments/rollback", "deployments/scale",
            "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"], "verbs": write},
        {"apiGroups": ["batch"], "resources": ["cronjobs", "jobs"], "verbs": write},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": write},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]},
    ]);
    let mut edit = edit_rules.as_array().cloned().unwrap_or_default();
    edit.extend(view_rules.as_array().cloned().unwrap_or_default());
    let mut admin = edit.clone();
    admin.push(json!({"apiGroups": ["authorization.k8s.io"], "resources": ["localsubjectaccessreviews"], "verbs": ["create"]}));
    admin.push(json!({"apiGroups": [GROUP], "resources": ["rolebindings", "roles"],
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}));
    vec![
        (
            "clusterroles",
            cluster_role(
                "cluster-admin",
                json!([
                    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                    {"nonResourceURLs": ["*"], "verbs": ["*"]},
                ]),
            ),
        ),
        ("clusterroles", cluster_role("admin", Value::Array(admin))),
        ("clusterroles", cluster_role("edit", Value::Array(edit))),
        ("clusterroles", cluster_role("view", view_rules)),
        (
            "clusterroles",
            cluster_role(
                "system:discovery",
                json!([
                    {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                        "/openapi", "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]},
                ]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:basic-user",
                json!([
                    {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
                    {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
                ]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:public-info-viewer",
                json!([
                    {"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]},
                ]),
            ),
        ),
        (
            "clusterrolebindings",
            cluster_role_binding("cluster-admin", "cluster-admin", &["system:masters"]),
        ),
        (
            "clusterrolebindings",
            cluster_role_binding(
                "system:discovery",
                "system:discovery",
                &["system:authenticated"],
            ),
        ),
        (
            "clusterrolebindings",
            cluster_role_binding(
                "system:basic-user",
                "system:basic-user",
                &["system:authenticated"],
            ),
        ),
        (
            "clusterrolebindings",
            cluster_role_binding(
                "system:public-info-viewer",
                "system:public-info-viewer",
                &["system:authenticated", "system:unauthenticated"],
            ),
        ),
    ]
}
