//! Your operator's own install manifests on the embedded cluster (`--operator-manifests FILE`):
//! the identity and RBAC your chart gives your operator, so the command runs with exactly the
//! credentials and permissions it has in production.
//!
//! The file is what `helm template` renders (any multi-document YAML of Kubernetes objects).
//! Of it the embedded cluster creates the objects an operator process needs to run as itself —
//! [`APPLIED_KINDS`]: namespaces, ServiceAccounts, Secrets, ConfigMaps and RBAC — and skips the
//! rest, by name: the operator's Deployment (the command is the operator), CRDs (the embedded
//! cluster serves the contract's), Services, NetworkPolicies, hooks.
//!
//! Three things are read from it:
//! - **the identity**: the ServiceAccount the operator's Deployment runs as (the Deployment
//!   named [`GAMEPLANE_DEPLOYMENT`](crate::backend::operator_pod::GAMEPLANE_DEPLOYMENT), else the file's only
//!   Deployment, else its only ServiceAccount). The command's `{kubeconfig}` holds a token of
//!   that ServiceAccount;
//! - **the write grants**: every Role that identity is bound to outside its own namespace (the
//!   chart's `gameplane-operator-manage` in its games namespace). As on Kind, each case
//!   namespace gets a copy of it bound to the identity — the chart's own pattern for more
//!   namespaces — and nothing more;
//! - the namespaces its objects name, created when the file does not create them.

use serde::Deserialize;
use serde_json::{Value, json};

use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::ObjectMeta;

/// The kinds created from the file, in the order they are created.
pub const APPLIED_KINDS: &[&str] = &[
    "Namespace",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
];

/// The cluster-scoped kinds among [`APPLIED_KINDS`].
const CLUSTER_SCOPED: &[&str] = &["Namespace", "ClusterRole", "ClusterRoleBinding"];

/// A ServiceAccount, by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A volume of the operator's Deployment, mounted into the command's sandbox at its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The volume's name.
    pub volume: String,
    /// Where the container mounts it.
    pub mount_path: String,
    /// Mounted read-only (Secrets and ConfigMaps always are).
    pub read_only: bool,
    /// The volume's file or directory mounted instead of its root.
    pub sub_path: Option<String>,
    /// What it holds.
    pub content: MountContent,
}

/// What a mounted volume holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountContent {
    /// A Secret's or ConfigMap's keys as files (path within the volume, bytes).
    Files(Vec<(String, Vec<u8>)>),
    /// An `emptyDir`.
    Empty,
}

/// Your operator's manifests as the embedded cluster uses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorManifests {
    /// Where they were read (the file's path), for messages.
    pub source: String,
    /// The objects to create, in [`APPLIED_KINDS`] order, namespaced ones with their namespace.
    pub objects: Vec<Value>,
    /// The objects not created, as `Kind namespace/name`.
    pub skipped: Vec<String>,
    /// The ServiceAccount the operator runs as.
    pub identity: ServiceAccountRef,
    /// The Roles the identity is bound to outside its own namespace.
    pub grants: Vec<WriteGrant>,
    /// The volumes the operator's container mounts (Secrets, ConfigMaps, `emptyDir`s).
    pub mounts: Vec<Mount>,
    /// Its container's plain `env` values.
    pub env: Vec<(String, String)>,
    /// Its volume mounts the sandbox cannot give it, as `mountPath (kind)`.
    pub unmounted: Vec<String>,
}

/// A Role the operator may write with in one namespace, copied into each case namespace and
/// bound there to the operator's ServiceAccount (the chart's own pattern for more namespaces:
/// more RoleBindings, same Role).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteGrant {
    /// The namespace the Role is read from (the chart's games namespace).
    pub namespace: String,
    /// The Role's name.
    pub role: String,
    /// The ServiceAccount it is bound to: namespace and name.
    pub service_account: (String, String),
}

impl WriteGrant {
    /// The grant's Role copied into case namespace `namespace` with `rules` (the Role's), and
    /// its binding to the ServiceAccount.
    pub fn copy_into(&self, namespace: &str, rules: Vec<PolicyRule>) -> (Role, RoleBinding) {
        let meta = ObjectMeta {
            name: Some(self.role.clone()),
            namespace: Some(namespace.into()),
            ..Default::default()
        };
        let role = Role {
            metadata: meta.clone(),
            rules: Some(rules),
        };
        let binding = RoleBinding {
            metadata: meta,
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "Role".into(),
                name: self.role.clone(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: self.service_account.1.clone(),
                namespace: Some(self.service_account.0.clone()),
                ..Default::default()
            }]),
        };
        (role, binding)
    }
}

/// `Kind namespace/name` (or `Kind name`) of an object.
fn describe(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("?");
    let name = obj["metadata"]["name"].as_str().unwrap_or("?");
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

impl OperatorManifests {
    /// The manifests in `text` (read from `source`); objects of a namespaced kind without a
    /// namespace are in `namespace` (what `helm template --namespace` means). A one-line error
    /// names the document and the fix.
    pub fn parse(text: &str, source: &str, namespace: &str) -> Result<Self, String> {
        let docs = parse_documents(text, source, namespace)?;
        let of_kind = |kind: &str| -> Vec<&Value> {
            docs.iter()
                .filter(|d| d["kind"].as_str() == Some(kind))
                .collect()
        };
        let deployment = operator_deployment(&of_kind("Deployment"));
        let identity = identity(deployment, &of_kind("ServiceAccount"), source)?;
        let (mounts, unmounted) = match deployment {
            Some(d) => mounts_of(d, &docs, source)?,
            None => (Vec::new(), Vec::new()),
        };
        let env = deployment.map(env_of).unwrap_or_default();
        let mut grants: Vec<WriteGrant> = Vec::new();
        for binding in of_kind("RoleBinding") {
            let ns = binding["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default();
            let binds_identity = binding["subjects"].as_array().is_some_and(|subjects| {
                subjects.iter().any(|s| {
                    s["kind"] == "ServiceAccount"
                        && s["name"].as_str() == Some(&identity.name)
                        && s["namespace"].as_str().unwrap_or(ns) == identity.namespace
                })
            });
            if !binds_identity || ns == identity.namespace || binding["roleRef"]["kind"] != "Role" {
                continue;
            }
            let role = binding["roleRef"]["name"].as_str().unwrap_or_default();
            let created = of_kind("Role").iter().any(|r| {
                r["metadata"]["name"].as_str() == Some(role)
                    && r["metadata"]["namespace"].as_str() == Some(ns)
            });
            if !created {
                return Err(format!(
                    "--operator-manifests {source}: {} binds Role {ns}/{role}, which the file does not create: render the chart's templates together (helm template … > FILE)",
                    describe(binding)
                ));
            }
            let grant = WriteGrant {
                namespace: ns.to_string(),
                role: role.to_string(),
                service_account: (identity.namespace.clone(), identity.name.clone()),
            };
            if !grants.iter().any(|g| g.role == grant.role) {
                grants.push(grant);
            }
        }
        let (mut objects, skipped): (Vec<Value>, Vec<Value>) = docs
            .into_iter()
            .partition(|d| APPLIED_KINDS.contains(&d["kind"].as_str().unwrap_or_default()));
        let mut namespaces: Vec<String> = objects
            .iter()
            .filter_map(|o| o["metadata"]["namespace"].as_str().map(str::to_string))
            .collect();
        namespaces.sort();
        namespaces.dedup();
        for ns in namespaces {
            let created = objects.iter().any(|o| {
                o["kind"] == "Namespace" && o["metadata"]["name"].as_str() == Some(ns.as_str())
            });
            if !created {
                objects.push(
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                );
            }
        }
        objects.sort_by_key(|o| {
            APPLIED_KINDS
                .iter()
                .position(|k| o["kind"].as_str() == Some(k))
                .unwrap_or(usize::MAX)
        });
        Ok(Self {
            source: source.to_string(),
            objects,
            skipped: skipped.iter().map(describe).collect(),
            identity,
            grants,
            mounts,
            env,
            unmounted,
        })
    }

    /// One line for the console: what is created and what is skipped.
    pub fn summary(&self) -> String {
        let skipped = if self.skipped.is_empty() {
            String::new()
        } else {
            format!(
                "; skipped (the command or the embedded cluster stands in for them): {}",
                self.skipped.join(", ")
            )
        };
        let grants = if self.grants.is_empty() {
            "no Role outside its namespace (it writes only where its ClusterRoles let it)"
                .to_string()
        } else {
            let roles: Vec<String> = self
                .grants
                .iter()
                .map(|g| format!("{}/{}", g.namespace, g.role))
                .collect();
            format!("{} copied into each case namespace", roles.join(", "))
        };
        let mut mounted = String::new();
        if !self.mounts.is_empty() {
            let paths: Vec<&str> = self.mounts.iter().map(|m| m.mount_path.as_str()).collect();
            mounted = format!("; its Deployment's volumes at {}", paths.join(", "));
        }
        if !self.unmounted.is_empty() {
            mounted.push_str(&format!(
                "; not mounted (the sandbox holds Secrets, ConfigMaps and emptyDirs): {}",
                self.unmounted.join(", ")
            ));
        }
        format!(
            "--operator-manifests {}: the operator runs as ServiceAccount {}, {grants}{mounted}; {} objects created{skipped}",
            self.source,
            self.identity,
            self.objects.len()
        )
    }
}

/// The file's objects as JSON, with the default namespace filled in.
fn parse_documents(text: &str, source: &str, namespace: &str) -> Result<Vec<Value>, String> {
    let mut docs = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let n = i + 1;
        let mut value = Value::deserialize(doc).map_err(|e| {
            format!("--operator-manifests {source}: document {n} is not YAML ({e}): give the output of `helm template`")
        })?;
        if value.is_null() {
            continue;
        }
        let (Some(kind), Some(_)) = (
            value["kind"].as_str().map(str::to_string),
            value["metadata"]["name"].as_str(),
        ) else {
            return Err(format!(
                "--operator-manifests {source}: document {n} is not a Kubernetes object (no kind or metadata.name): give the output of `helm template`"
            ));
        };
        if value["metadata"]["namespace"].is_null() && !is_cluster_scoped(&kind) {
            value["metadata"]["namespace"] = json!(namespace);
        }
        docs.push(value);
    }
    if docs.is_empty() {
        return Err(format!(
            "--operator-manifests {source}: holds no object: give the output of `helm template`"
        ));
    }
    Ok(docs)
}

/// Whether `kind` is cluster-scoped (the applied ones, and the other cluster-scoped kinds a
/// chart renders; they are skipped, but must not be given a namespace in messages).
fn is_cluster_scoped(kind: &str) -> bool {
    CLUSTER_SCOPED.contains(&kind)
        || matches!(
            kind,
            "CustomResourceDefinition"
                | "PriorityClass"
                | "StorageClass"
                | "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "IngressClass"
                | "ClusterIssuer"
        )
}

/// The operator's Deployment: the one Gameplane's chart names, else the file's only one.
fn operator_deployment<'a>(deployments: &[&'a Value]) -> Option<&'a Value> {
    let named = |d: &Value| {
        d["metadata"]["name"].as_str() == Some(crate::backend::operator_pod::GAMEPLANE_DEPLOYMENT)
    };
    deployments
        .iter()
        .find(|d| named(d))
        .or_else(|| (deployments.len() == 1).then(|| &deployments[0]))
        .copied()
}

/// The operator's container in `deployment`: `manager` (the chart's), else the first.
fn container_of(deployment: &Value) -> &Value {
    let containers = &deployment["spec"]["template"]["spec"]["containers"];
    containers
        .as_array()
        .and_then(|cs| {
            cs.iter()
                .find(|c| c["name"] == "manager")
                .or_else(|| cs.first())
        })
        .unwrap_or(&Value::Null)
}

/// The plain `env` values of the operator's container (`valueFrom` ones are the sandbox's own:
/// `POD_NAMESPACE`).
fn env_of(deployment: &Value) -> Vec<(String, String)> {
    container_of(deployment)["env"]
        .as_array()
        .map(|env| {
            env.iter()
                .filter_map(|e| {
                    Some((
                        e["name"].as_str()?.to_string(),
                        e["value"].as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The volumes the operator's container mounts that the sandbox can give it (Secrets and
/// ConfigMaps the file creates, `emptyDir`s), and the mounts it cannot (other kinds).
fn mounts_of(
    deployment: &Value,
    docs: &[Value],
    source: &str,
) -> Result<(Vec<Mount>, Vec<String>), String> {
    let pod = &deployment["spec"]["template"]["spec"];
    let ns = deployment["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default();
    let volumes = pod["volumes"].as_array().cloned().unwrap_or_default();
    let mut mounts = Vec::new();
    let mut unmounted = Vec::new();
    let empty = Vec::new();
    for vm in container_of(deployment)["volumeMounts"]
        .as_array()
        .unwrap_or(&empty)
    {
        let (Some(name), Some(path)) = (vm["name"].as_str(), vm["mountPath"].as_str()) else {
            continue;
        };
        let Some(volume) = volumes.iter().find(|v| v["name"].as_str() == Some(name)) else {
            return Err(format!(
                "--operator-manifests {source}: the operator's container mounts volume {name:?}, which its Deployment does not declare: render the chart again"
            ));
        };
        let object = |kind: &str, field: &str| -> Result<Option<Value>, String> {
            let Some(wanted) = volume[field][if kind == "Secret" {
                "secretName"
            } else {
                "name"
            }]
            .as_str() else {
                return Ok(None);
            };
            docs.iter()
                .find(|d| {
                    d["kind"].as_str() == Some(kind)
                        && d["metadata"]["name"].as_str() == Some(wanted)
                        && d["metadata"]["namespace"].as_str() == Some(ns)
                })
                .cloned()
                .map(Some)
                .ok_or_else(|| format!(
                    "--operator-manifests {source}: the operator mounts {kind} {ns}/{wanted} at {path}, which the file does not create: render the chart's templates together, or create it in the file"
                ))
        };
        let content = if let Some(secret) = object("Secret", "secret")? {
            MountContent::Files(files_of(
                &secret,
                &volume["secret"],
                "data",
                "stringData",
                source,
            )?)
        } else if let Some(map) = object("ConfigMap", "configMap")? {
            MountContent::Files(files_of(
                &map,
                &volume["configMap"],
                "binaryData",
                "data",
                source,
            )?)
        } else if volume.get("emptyDir").is_some() {
            MountContent::Empty
        } else {
            let kind = volume
                .as_object()
                .and_then(|o| o.keys().find(|k| *k != "name").cloned())
                .unwrap_or_else(|| "?".into());
            unmounted.push(format!("{path} ({kind})"));
            continue;
        };
        let read_only =
            vm["readOnly"].as_bool().unwrap_or(false) || matches!(content, MountContent::Files(_));
        mounts.push(Mount {
            volume: name.to_string(),
            mount_path: path.to_string(),
            read_only,
            sub_path: vm["subPath"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            content,
        });
    }
    Ok((mounts, unmounted))
}

/// A Secret's or ConfigMap's keys as files: `encoded` values are base64, `plain` ones text;
/// `volume.items` picks keys and their paths.
fn files_of(
    object: &Value,
    volume: &Value,
    encoded: &str,
    plain: &str,
    source: &str,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    use base64::Engine as _;
    let mut all: Vec<(String, Vec<u8>)> = Vec::new();
    for (key, value) in object[encoded].as_object().into_iter().flatten() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap_or_default())
            .map_err(|e| {
                format!(
                    "--operator-manifests {source}: {} key {key:?} is not base64 ({e}): give the output of `helm template`",
                    describe(object)
                )
            })?;
        all.push((key.clone(), bytes));
    }
    for (key, value) in object[plain].as_object().into_iter().flatten() {
        all.push((
            key.clone(),
            value.as_str().unwrap_or_default().as_bytes().to_vec(),
        ));
    }
    let Some(items) = volume["items"].as_array() else {
        return Ok(all);
    };
    Ok(items
        .iter()
        .filter_map(|i| {
            let key = i["key"].as_str()?;
            let path = i["path"].as_str().unwrap_or(key);
            let bytes = all.iter().find(|(k, _)| k == key)?.1.clone();
            Some((path.to_string(), bytes))
        })
        .collect())
}

/// The ServiceAccount the operator runs as: its Deployment's ([`operator_deployment`]), else
/// the file's only ServiceAccount.
fn identity(
    deployment: Option<&Value>,
    accounts: &[&Value],
    source: &str,
) -> Result<ServiceAccountRef, String> {
    let account = match deployment {
        Some(d) => {
            let spec = &d["spec"]["template"]["spec"];
            let name = spec["serviceAccountName"]
                .as_str()
                .or_else(|| spec["serviceAccount"].as_str())
                .unwrap_or("default");
            ServiceAccountRef {
                namespace: d["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                name: name.to_string(),
            }
        }
        None => match accounts {
            [one] => ServiceAccountRef {
                namespace: one["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                name: one["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            },
            [] => {
                return Err(format!(
                    "--operator-manifests {source}: creates no ServiceAccount for the operator to run as: render the template that holds the operator's ServiceAccount and RBAC too"
                ));
            }
            many => {
                let names: Vec<String> = many.iter().map(|a| describe(a)).collect();
                return Err(format!(
                    "--operator-manifests {source}: cannot tell which ServiceAccount the operator runs as ({}; no Deployment names one): render only the operator's templates (helm template … --show-only templates/operator.yaml)",
                    names.join(", ")
                ));
            }
        },
    };
    let created = accounts.iter().any(|a| {
        a["metadata"]["name"].as_str() == Some(&account.name)
            && a["metadata"]["namespace"].as_str() == Some(&account.namespace)
    });
    if !created {
        return Err(format!(
            "--operator-manifests {source}: the operator runs as ServiceAccount {account}, which the file does not create: render the template that holds it too"
        ));
    }
    Ok(account)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of a chart's operator template: its ServiceAccount, cluster-wide reads, writes
    /// in the games namespace only, a leader-election Role in its own namespace, its
    /// Deployment, a CRD and a Service.
    const CHART: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: gameplane-operator, namespace: gameplane-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: gameplane-api, namespace: gameplane-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gameplane-operator-watch}
rules: [{apiGroups: ["gameplane.local"], resources: [gameservers], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: gameplane-operator-manage, namespace: gameplane-games}
rules: [{apiGroups: ["batch"], resources: [jobs], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: gameplane-operator-manage, namespace: gameplane-games}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gameplane-operator-manage}
subjects: [{kind: ServiceAccount, name: gameplane-operator, namespace: gameplane-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: gameplane-operator-leader-election}
rules: [{apiGroups: ["coordination.k8s.io"], resources: [leases], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: gameplane-operator-leader-election}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gameplane-operator-leader-election}
subjects: [{kind: ServiceAccount, name: gameplane-operator, namespace: gameplane-system}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: gameplane-api, namespace: gameplane-system}
spec: {template: {spec: {serviceAccountName: gameplane-api}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: gameplane-operator, namespace: gameplane-system}
spec: {template: {spec: {serviceAccountName: gameplane-operator}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gameservers.gameplane.local}
---
apiVersion: v1
kind: Service
metadata: {name: gameplane-api}
"#;

    #[test]
    fn a_charts_identity_is_its_operator_deployments_service_account() {
        let m = OperatorManifests::parse(CHART, "chart.yaml", "gameplane-system").unwrap();
        assert_eq!(
            m.identity,
            ServiceAccountRef {
                namespace: "gameplane-system".into(),
                name: "gameplane-operator".into()
            }
        );
        // Only the Role outside its own namespace is a write grant: the leader-election Role
        // (defaulted into gameplane-system) is not copied into case namespaces.
        assert_eq!(
            m.grants,
            vec![WriteGrant {
                namespace: "gameplane-games".into(),
                role: "gameplane-operator-manage".into(),
                service_account: ("gameplane-system".into(), "gameplane-operator".into()),
            }]
        );
        assert_eq!(
            m.skipped,
            vec![
                "Deployment gameplane-system/gameplane-api",
                "Deployment gameplane-system/gameplane-operator",
                "CustomResourceDefinition gameservers.gameplane.local",
                "Service gameplane-system/gameplane-api",
            ]
        );
    }

    #[test]
    fn objects_are_created_namespaces_first_and_rbac_last() {
        let m = OperatorManifests::parse(CHART, "chart.yaml", "gameplane-system").unwrap();
        let kinds: Vec<String> = m.objects.iter().map(describe).collect();
        assert_eq!(
            kinds,
            vec![
                "Namespace gameplane-games",
                "Namespace gameplane-system",
                "ServiceAccount gameplane-system/gameplane-operator",
                "ServiceAccount gameplane-system/gameplane-api",
                "ClusterRole gameplane-operator-watch",
                "Role gameplane-games/gameplane-operator-manage",
                "Role gameplane-system/gameplane-operator-leader-election",
                "RoleBinding gameplane-games/gameplane-operator-manage",
                "RoleBinding gameplane-system/gameplane-operator-leader-election",
            ]
        );
        assert!(m.summary().contains(
            "runs as ServiceAccount gameplane-system/gameplane-operator, gameplane-games/gameplane-operator-manage copied into each case namespace"
        ), "{}", m.summary());
    }

    #[test]
    fn the_operators_secret_configmap_and_emptydir_mounts_are_read_with_their_files() {
        let text = r#"
kind: ServiceAccount
apiVersion: v1
metadata: {name: op, namespace: sys}
---
kind: Secret
apiVersion: v1
metadata: {name: ca, namespace: sys}
data: {ca.crt: Q0VSVA==, ca.key: S0VZ}
---
kind: ConfigMap
apiVersion: v1
metadata: {name: cfg, namespace: sys}
data: {app.yaml: "a: 1"}
---
kind: Deployment
apiVersion: apps/v1
metadata: {name: op, namespace: sys}
spec:
  template:
    spec:
      serviceAccountName: op
      containers:
        - name: sidecar
        - name: manager
          env: [{name: LOG, value: debug}, {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]
          volumeMounts:
            - {name: ca, mountPath: /etc/op/ca}
            - {name: cfg, mountPath: /etc/op/app.yaml, subPath: app.yaml}
            - {name: scratch, mountPath: /work}
            - {name: data, mountPath: /data}
      volumes:
        - {name: ca, secret: {secretName: ca, items: [{key: ca.crt, path: bundle.pem}]}}
        - {name: cfg, configMap: {name: cfg}}
        - {name: scratch, emptyDir: {}}
        - {name: data, persistentVolumeClaim: {claimName: d}}
"#;
        let m = OperatorManifests::parse(text, "f", "sys").unwrap();
        assert_eq!(m.env, vec![("LOG".to_string(), "debug".to_string())]);
        let files = |i: usize| match &m.mounts[i].content {
            MountContent::Files(f) => f.clone(),
            MountContent::Empty => vec![],
        };
        assert_eq!(m.mounts.len(), 3, "{:?}", m.mounts);
        assert_eq!(
            (m.mounts[0].mount_path.as_str(), m.mounts[0].read_only),
            ("/etc/op/ca", true)
        );
        assert_eq!(files(0), vec![("bundle.pem".to_string(), b"CERT".to_vec())]);
        assert_eq!(m.mounts[1].sub_path.as_deref(), Some("app.yaml"));
        assert_eq!(files(1), vec![("app.yaml".to_string(), b"a: 1".to_vec())]);
        assert_eq!(
            (&m.mounts[2].content, m.mounts[2].read_only),
            (&MountContent::Empty, false)
        );
        assert_eq!(m.unmounted, vec!["/data (persistentVolumeClaim)"]);
        assert!(m.summary().contains("its Deployment's volumes at /etc/op/ca, /etc/op/app.yaml, /work; not mounted (the sandbox holds Secrets, ConfigMaps and emptyDirs): /data (persistentVolumeClaim)"), "{}", m.summary());

        let missing = text.replace(
            "name: ca, namespace: sys}\ndata",
            "name: other, namespace: sys}\ndata",
        );
        let e = OperatorManifests::parse(&missing, "f", "sys").unwrap_err();
        assert!(
            e.contains(
                "the operator mounts Secret sys/ca at /etc/op/ca, which the file does not create"
            ),
            "{e}"
        );
    }

    #[test]
    fn without_a_deployment_the_only_service_account_is_the_identity() {
        let text = "kind: ServiceAccount\napiVersion: v1\nmetadata: {name: op}\n";
        let m = OperatorManifests::parse(text, "f", "ops").unwrap();
        assert_eq!(m.identity.to_string(), "ops/op");
        assert!(m.grants.is_empty());
    }

    #[test]
    fn bad_manifests_are_one_line_naming_the_cause_and_the_fix() {
        let cases = [
            ("a: [", "document 1 is not YAML"),
            ("---\nfoo: bar\n", "document 1 is not a Kubernetes object"),
            ("", "holds no object"),
            (
                "kind: ConfigMap\napiVersion: v1\nmetadata: {name: c}\n",
                "creates no ServiceAccount",
            ),
            (
                "kind: ServiceAccount\napiVersion: v1\nmetadata: {name: a}\n---\nkind: ServiceAccount\napiVersion: v1\nmetadata: {name: b}\n",
                "cannot tell which ServiceAccount the operator runs as (ServiceAccount ns/a, ServiceAccount ns/b",
            ),
            (
                "kind: Deployment\napiVersion: apps/v1\nmetadata: {name: gameplane-operator}\nspec: {template: {spec: {serviceAccountName: x}}}\n",
                "runs as ServiceAccount ns/x, which the file does not create",
            ),
            (
                "kind: ServiceAccount\napiVersion: v1\nmetadata: {name: x}\n---\nkind: RoleBinding\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: b, namespace: games}\nroleRef: {kind: Role, name: manage}\nsubjects: [{kind: ServiceAccount, name: x, namespace: ns}]\n",
                "binds Role games/manage, which the file does not create",
            ),
        ];
        for (text, want) in cases {
            let e = OperatorManifests::parse(text, "f.yaml", "ns").unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.starts_with("--operator-manifests f.yaml: "), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
