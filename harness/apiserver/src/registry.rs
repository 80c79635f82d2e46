//! The resource registry: which group/version/resources this server serves, with the facts
//! discovery publishes about each (kind, scope, short names, subresources) and, for custom
//! resources, the schema and printer columns taken from their CustomResourceDefinition.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::schema::StructuralSchema;

/// Where objects of a resource live in the store, shared by all versions of that resource.
pub type StorageKey = Arc<str>;

/// One served resource at one version.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Serves a `status` subresource (and main writes ignore status).
    pub status: bool,
    /// Serves `log` (pods only).
    pub log: bool,
    /// Serves `scale` (`autoscaling/v1` Scale over `spec.replicas` for statefulsets, over the
    /// CRD's `subresources.scale` paths for custom resources).
    pub scale: bool,
    pub storage: StorageKey,
    /// Set for resources defined by a CustomResourceDefinition.
    pub custom: Option<CustomInfo>,
}

/// What a CRD version adds to a resource.
#[derive(Debug, Clone)]
pub struct CustomInfo {
    pub schema: Option<Arc<StructuralSchema>>,
    /// `additionalPrinterColumns` as written in the CRD.
    pub printer_columns: Vec<Value>,
    /// `subresources.scale` as written in the CRD (specReplicasPath, statusReplicasPath,
    /// labelSelectorPath).
    pub scale: Option<Value>,
    /// The version's `openAPIV3Schema` as written: what the OpenAPI v3 documents serve (for
    /// `kubectl explain`).
    pub raw_schema: Option<Arc<Value>>,
}

impl ResourceInfo {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods` or `gameservers.gameplane.local`, as error messages name a resource.
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Pod` or `GameServer.gameplane.local`, as 422 messages name a kind.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }

    /// A review (SelfSubjectAccessReview, TokenReview, …): answered, never stored.
    pub fn create_only(&self) -> bool {
        CREATE_ONLY
            .iter()
            .any(|(g, p)| *g == self.group && *p == self.plural)
    }

    /// Served but never written by clients (`componentstatuses`): only get and list.
    pub fn read_only(&self) -> bool {
        self.group.is_empty() && self.plural == "componentstatuses"
    }

    /// The verbs discovery publishes.
    pub fn verbs(&self) -> &'static [&'static str] {
        if self.create_only() {
            &["create"]
        } else if self.read_only() {
            &["get", "list"]
        } else {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }
}

pub fn storage_key(group: &str, plural: &str) -> StorageKey {
    Arc::from(format!("{group}/{plural}").as_str())
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
}

const BUILTINS: &[Builtin] = &[
    b(
        "",
        "v1",
        "namespaces",
        "Namespace",
        false,
        &["ns"],
        &[],
        true,
    ),
    b("", "v1", "pods", "Pod", true, &["po"], &["all"], true),
    b(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        &[],
        true,
    ),
    b(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["pv"],
        &[],
        true,
    ),
    b(
        "",
        "v1",
        "services",
        "Service",
        true,
        &["svc"],
        &["all"],
        true,
    ),
    b(
        "",
        "v1",
        "endpoints",
        "Endpoints",
        true,
        &["ep"],
        &[],
        false,
    ),
    b(
        "",
        "v1",
        "configmaps",
        "ConfigMap",
        true,
        &["cm"],
        &[],
        false,
    ),
    b("", "v1", "secrets", "Secret", true, &[], &[], false),
    b(
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        true,
        &["sa"],
        &[],
        false,
    ),
    b("", "v1", "events", "Event", true, &["ev"], &[], false),
    b("", "v1", "nodes", "Node", false, &["no"], &[], true),
    b(
        "",
        "v1",
        "componentstatuses",
        "ComponentStatus",
        false,
        &["cs"],
        &[],
        false,
    ),
    b(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        true,
        &["sts"],
        &["all"],
        true,
    ),
    b(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
        &["deploy"],
        &["all"],
        true,
    ),
    b(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        true,
        &["rs"],
        &["all"],
        true,
    ),
    b(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        true,
        &["ds"],
        &["all"],
        true,
    ),
    b(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
        &["rc"],
        &["all"],
        true,
    ),
    b(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        true,
        &[],
        &[],
        false,
    ),
    b(
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        true,
        &[],
        &[],
        false,
    ),
    b("batch", "v1", "jobs", "Job", true, &[], &["all"], true),
    b(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
        &["sc"],
        &[],
        false,
    ),
    b(
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        true,
        &[],
        &[],
        false,
    ),
    b(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        true,
        &["ev"],
        &[],
        false,
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        &["api-extensions"],
        true,
    ),
    // Authorization, authentication and API registration (see `rbac.rs`, `auth.rs`).
    b(
        RBAC,
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
        &[],
        false,
    ),
    b(
        RBAC,
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
        &[],
        false,
    ),
    b(RBAC, "v1", "roles", "Role", true, &[], &[], false),
    b(
        RBAC,
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        &[],
        &[],
        false,
    ),
    b(
        AUTHZ,
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        false,
        &[],
        &[],
        false,
    ),
    b(
        AUTHZ,
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        false,
        &[],
        &[],
        false,
    ),
    b(
        AUTHZ,
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        false,
        &[],
        &[],
        false,
    ),
    b(
        AUTHN,
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        false,
        &[],
        &[],
        false,
    ),
    b(
        AUTHN,
        "v1",
        "tokenreviews",
        "TokenReview",
        false,
        &[],
        &[],
        false,
    ),
    b(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        &[],
        true,
    ),
    b(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        false,
        &["csr"],
        &[],
        true,
    ),
    b(
        APIREG,
        "v1",
        "apiservices",
        "APIService",
        false,
        &[],
        &["api-extensions"],
        true,
    ),
];

const RBAC: &str = "rbac.authorization.k8s.io";
const AUTHZ: &str = "authorization.k8s.io";
const AUTHN: &str = "authentication.k8s.io";
const APIREG: &str = "apiregistration.k8s.io";

/// Resources that are requests answered at once, never stored: only `create`.
pub const CREATE_ONLY: &[(&str, &str)] = &[
    (AUTHZ, "selfsubjectaccessreviews"),
    (AUTHZ, "selfsubjectrulesreviews"),
    (AUTHZ, "subjectaccessreviews"),
    (AUTHN, "selfsubjectreviews"),
    (AUTHN, "tokenreviews"),
];

#[allow(clippy::too_many_arguments)]
const fn b(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        plural,
        kind,
        namespaced,
        short_names,
        categories,
        status,
    }
}

/// Built-in groups in the order real discovery lists them; CRD groups follow, sorted.
const GROUP_ORDER: &[&str] = &[
    "",
    APIREG,
    "apps",
    "events.k8s.io",
    AUTHN,
    AUTHZ,
    "batch",
    "policy",
    RBAC,
    "storage.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "apiextensions.k8s.io",
];

/// Whether `group` belongs to the built-in APIs (a CRD may not define resources in it).
pub fn is_builtin_group(group: &str) -> bool {
    GROUP_ORDER.contains(&group)
}

/// All served resources, keyed by (group, version, plural).
#[derive(Debug, Clone)]
pub struct Registry {
    resources: BTreeMap<(String, String, String), Arc<ResourceInfo>>,
    /// Bumped on every change, so published documents (openapi hashes) change with content.
    pub revision: u64,
}

impl Registry {
    pub fn with_builtins() -> Self {
        let mut resources = BTreeMap::new();
        for bi in BUILTINS {
            let info = ResourceInfo {
                group: bi.group.into(),
                version: bi.version.into(),
                plural: bi.plural.into(),
                singular: bi.kind.to_lowercase(),
                kind: bi.kind.into(),
                list_kind: format!("{}List", bi.kind),
                namespaced: bi.namespaced,
                short_names: bi.short_names.iter().map(|s| s.to_string()).collect(),
                categories: bi.categories.iter().map(|s| s.to_string()).collect(),
                status: bi.status,
                log: bi.plural == "pods" && bi.group.is_empty(),
                scale: matches!(
                    (bi.group, bi.plural),
                    ("apps", "statefulsets" | "deployments" | "replicasets")
                        | ("", "replicationcontrollers")
                ),
                storage: storage_key(bi.group, bi.plural),
                custom: None,
            };
            resources.insert(
                (
                    info.group.clone(),
                    info.version.clone(),
                    info.plural.clone(),
                ),
                Arc::new(info),
            );
        }
        Registry {
            resources,
            revision: 1,
        }
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.resources
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Replaces every version served for `group/plural` (one CRD) with `infos`.
    pub fn set_custom(&mut self, group: &str, plural: &str, infos: Vec<ResourceInfo>) {
        self.resources
            .retain(|(g, _, p), _| !(g == group && p == plural));
        for info in infos {
            self.resources.insert(
                (
                    info.group.clone(),
                    info.version.clone(),
                    info.plural.clone(),
                ),
                Arc::new(info),
            );
        }
        self.revision += 1;
    }

    pub fn remove_custom(&mut self, group: &str, plural: &str) {
        self.set_custom(group, plural, Vec::new());
    }

    /// Groups with their versions (preferred first) and resources, in discovery order.
    pub fn groups(&self) -> Vec<GroupView> {
        let mut by_group: BTreeMap<&str, BTreeMap<&str, Vec<Arc<ResourceInfo>>>> = BTreeMap::new();
        for ((g, v, _), info) in &self.resources {
            by_group
                .entry(g.as_str())
                .or_default()
                .entry(v.as_str())
                .or_default()
                .push(info.clone());
        }
        let mut groups: Vec<GroupView> = by_group
            .into_iter()
            .map(|(g, versions)| {
                let mut versions: Vec<(String, Vec<Arc<ResourceInfo>>)> = versions
                    .into_iter()
                    .map(|(v, r)| (v.to_string(), r))
                    .collect();
                versions.sort_by(|a, b| compare_versions(&a.0, &b.0));
                GroupView {
                    name: g.to_string(),
                    versions,
                }
            })
            .collect();
        groups.sort_by(|a, b| {
            let pa = GROUP_ORDER
                .iter()
                .position(|g| *g == a.name)
                .unwrap_or(usize::MAX);
            let pb = GROUP_ORDER
                .iter()
                .position(|g| *g == b.name)
                .unwrap_or(usize::MAX);
            pa.cmp(&pb).then_with(|| a.name.cmp(&b.name))
        });
        groups
    }

    pub fn group(&self, name: &str) -> Option<GroupView> {
        self.groups().into_iter().find(|g| g.name == name)
    }
}

/// One API group as discovery shows it.
#[derive(Debug, Clone)]
pub struct GroupView {
    pub name: String,
    /// Preferred version first.
    pub versions: Vec<(String, Vec<Arc<ResourceInfo>>)>,
}

pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Kubernetes version priority: GA before beta before alpha, higher numbers first, other
/// names alphabetically — the order of kube's `kube::core::Version::priority` (checked against
/// it below; the API server does not link kube, so discovery does not wait on its build).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn key(v: &str) -> (u8, u64, u64, String) {
        static VERSION: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r"^v(\d+)(?:(alpha|beta)(\d+))?$").expect("static regex")
        });
        match VERSION.captures(v) {
            Some(c) => {
                let major: u64 = c[1].parse().unwrap_or(0);
                let (stage, minor) = match c.get(2).map(|m| m.as_str()) {
                    None => (0, 0),
                    Some("beta") => (1, c[3].parse().unwrap_or(0)),
                    Some(_) => (2, c[3].parse().unwrap_or(0)),
                };
                (stage, u64::MAX - major, u64::MAX - minor, String::new())
            }
            None => (3, 0, 0, v.to_string()),
        }
    }
    key(a).cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;

    use kube::core::Version;

    use super::compare_versions;

    #[test]
    fn versions_sort_in_kubes_priority_order() {
        // The example list of the CRD versioning docs, shuffled, plus GA and beta neighbours.
        let shuffled = [
            "v3beta1",
            "foo10",
            "v1",
            "v11alpha2",
            "v10",
            "v2beta1",
            "v12alpha1",
            "foo1",
            "v10beta3",
            "v2",
            "v11beta2",
            "v1alpha1",
            "v1beta1",
        ];
        let mut ours = shuffled.to_vec();
        ours.sort_by(|a, b| compare_versions(a, b));
        let mut kubes = shuffled.to_vec();
        kubes.sort_by_key(|v| Reverse(Version::parse(v).priority()));
        assert_eq!(ours, kubes);
        assert_eq!(
            ours,
            [
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v2beta1",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
    }
}
