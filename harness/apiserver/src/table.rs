//! Server-side printing: `meta.k8s.io/v1` `Table` responses for `kubectl get`.
//!
//! kubectl prints a Table's cells verbatim, so the server formats them as the upstream printers
//! do (`pkg/printers/internalversion/printers.go` for built-in kinds, apiextensions'
//! tableconvertor for custom resources): humanized ages, `READY 1/1`, a Pod's aggregate status,
//! `<none>` placeholders. Every column is produced; kubectl hides `priority > 0` columns unless
//! `-o wide`. Each row carries the object's full metadata as `PartialObjectMetadata`, which
//! kubectl needs for the `-A` NAMESPACE column.

use serde_json::{Map, Value, json};
use std::time::Duration;

/// Which printer renders a resource's rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Columns {
    /// A built-in kind (`Pod`, `Service`, …); unknown kinds print `Name`, `Age`.
    Builtin { kind: String },
    /// A custom resource: `Name`, then the CRD version's `additionalPrinterColumns` (or `Age`
    /// when it declares none).
    Crd { columns: Vec<PrinterColumn> },
}

/// One `additionalPrinterColumns` entry of a CRD version.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    pub format: Option<String>,
    pub description: String,
    pub priority: i32,
    /// A simple JSONPath such as `.status.phase` or `.spec.ports[0].name`.
    pub json_path: String,
}

impl PrinterColumn {
    /// Reads one `additionalPrinterColumns` entry; `None` when `name`, `type` or `jsonPath` is
    /// missing.
    pub fn from_crd(v: &Value) -> Option<Self> {
        Some(Self {
            name: v.get("name")?.as_str()?.to_owned(),
            type_: v.get("type")?.as_str()?.to_owned(),
            format: v.get("format").and_then(Value::as_str).map(str::to_owned),
            description: v
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            priority: v.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32,
            json_path: v.get("jsonPath")?.as_str()?.to_owned(),
        })
    }

    fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format.clone().unwrap_or_default(),
            "description": self.description,
            "priority": self.priority,
        })
    }

    fn cell(&self, object: &Value, now: jiff::Timestamp) -> Value {
        let Some(value) = json_path(object, &self.json_path) else {
            return Value::Null;
        };
        match (self.type_.as_str(), value) {
            (_, Value::Null) => Value::Null,
            ("string", Value::String(s)) => Value::String(s.clone()),
            // jsonpath prints non-strings in a string column too.
            ("string", other) => Value::String(other.to_string()),
            ("integer", Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .map_or(Value::Null, Value::from),
            ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
            ("boolean", Value::Bool(b)) => Value::Bool(*b),
            ("date", Value::String(s)) => match s.parse::<jiff::Timestamp>() {
                Ok(t) => Value::String(age_since(t, now)),
                Err(_) => Value::String("<invalid>".to_owned()),
            },
            _ => Value::Null,
        }
    }
}

/// The `Table` for a list (or a single get), `metadata.resourceVersion` set to `resource_version`.
pub fn to_table(
    columns: &Columns,
    objects: &[&Value],
    resource_version: &str,
    now: jiff::Timestamp,
) -> Value {
    let rows: Vec<Value> = objects.iter().map(|o| row(columns, o, now)).collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": column_definitions(columns),
        "rows": rows,
    })
}

/// The `Table` with one row that a watch event carries when kubectl watches with the Table
/// Accept header; its `metadata.resourceVersion` is the object's own.
pub fn to_table_row_event(columns: &Columns, object: &Value, now: jiff::Timestamp) -> Value {
    let rv = object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    to_table(columns, &[object], rv, now)
}

/// kubectl's `HumanDuration`: `45s`, `3m20s`, `60m`, `5h30m`, `30h`, `3d4h`, `400d`, `2y30d`.
pub fn human_duration(d: Duration) -> String {
    human_seconds(d.as_secs() as i64)
}

fn human_seconds(seconds: i64) -> String {
    // Up to 2 s in the future counts as now, to tolerate clock skew (as upstream does).
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

fn age_since(t: jiff::Timestamp, now: jiff::Timestamp) -> String {
    human_seconds(now.as_second() - t.as_second())
}

/// `translateTimestampSince`: `<unknown>` for an absent timestamp.
fn age_of(timestamp: Option<&Value>, now: jiff::Timestamp) -> String {
    match timestamp
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    {
        Some(t) => age_since(t, now),
        None => "<unknown>".to_owned(),
    }
}

fn row(columns: &Columns, object: &Value, now: jiff::Timestamp) -> Value {
    let cells = match columns {
        Columns::Crd { columns } => {
            let mut cells = vec![json!(name_of(object))];
            if columns.is_empty() {
                cells.push(json!(age_of(
                    object.pointer("/metadata/creationTimestamp"),
                    now
                )));
            } else {
                cells.extend(columns.iter().map(|c| c.cell(object, now)));
            }
            cells
        }
        Columns::Builtin { kind } => builtin_cells(kind, object, now),
    };
    json!({
        "cells": cells,
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
        },
    })
}

const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

fn col(name: &str, type_: &str, priority: i32, description: &str) -> Value {
    let format = if name == "Name" { "name" } else { "" };
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

fn name_col() -> Value {
    col("Name", "string", 0, NAME_DOC)
}

fn column_definitions(columns: &Columns) -> Vec<Value> {
    match columns {
        Columns::Crd { columns } if columns.is_empty() => {
            vec![name_col(), col("Age", "date", 0, AGE_DOC)]
        }
        Columns::Crd { columns } => std::iter::once(name_col())
            .chain(columns.iter().map(PrinterColumn::definition))
            .collect(),
        Columns::Builtin { kind } => builtin_columns(kind),
    }
}

/// A printer column of a built-in kind, as kube-apiserver's printers declare it.
struct BuiltinColumn {
    name: &'static str,
    type_: &'static str,
    priority: i32,
    description: &'static str,
}

impl BuiltinColumn {
    fn definition(&self) -> Value {
        col(self.name, self.type_, self.priority, self.description)
    }
}

/// A `string` column.
const fn column(name: &'static str, priority: i32, description: &'static str) -> BuiltinColumn {
    BuiltinColumn {
        name,
        type_: "string",
        priority,
        description,
    }
}

const NAME: BuiltinColumn = column("Name", 0, NAME_DOC);
const AGE: BuiltinColumn = column("Age", 0, AGE_DOC);
const CREATED_AT: BuiltinColumn = BuiltinColumn {
    name: "Created At",
    type_: "date",
    priority: 0,
    description: AGE_DOC,
};

/// The columns of a kind this table does not list.
const DEFAULT_COLUMNS: &[BuiltinColumn] = &[NAME, AGE];

/// The printer columns of each built-in kind (kinds sharing a printer share a row).
static BUILTIN_COLUMNS: &[(&[&str], &[BuiltinColumn])] = &[
    (
        &["Pod"],
        &[
            NAME,
            column(
                "Ready",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            column(
                "Status",
                0,
                "The aggregate status of the containers in this pod.",
            ),
            column(
                "Restarts",
                0,
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            AGE,
            column(
                "IP",
                1,
                "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            ),
            column(
                "Node",
                1,
                "NodeName indicates in which node this pod is scheduled.",
            ),
            column(
                "Nominated Node",
                1,
                "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
            ),
            column(
                "Readiness Gates",
                1,
                "If specified, all readiness gates will be evaluated for pod readiness.",
            ),
        ],
    ),
    (
        &["Namespace"],
        &[
            NAME,
            column("Status", 0, "The status of the namespace"),
            AGE,
        ],
    ),
    (
        &["ConfigMap"],
        &[
            NAME,
            column("Data", 0, "Data contains the configuration data"),
            AGE,
        ],
    ),
    (
        &["Secret"],
        &[
            NAME,
            column(
                "Type",
                0,
                "Used to facilitate programmatic handling of secret data.",
            ),
            column("Data", 0, "Data contains the secret data."),
            AGE,
        ],
    ),
    (
        &["Service"],
        &[
            NAME,
            column("Type", 0, "type determines how the Service is exposed."),
            column(
                "Cluster-IP",
                0,
                "clusterIP is the IP address of the service and is usually assigned randomly.",
            ),
            column(
                "External-IP",
                0,
                "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
            ),
            column(
                "Port(s)",
                0,
                "The list of ports that are exposed by this service.",
            ),
            AGE,
            column(
                "Selector",
                1,
                "Route service traffic to pods with label keys and values matching this selector.",
            ),
        ],
    ),
    (
        &["PersistentVolumeClaim"],
        &[
            NAME,
            column(
                "Status",
                0,
                "status represents the current information/status of a persistent volume claim.",
            ),
            column(
                "Volume",
                0,
                "volumeName is the binding reference to the PersistentVolume backing this claim.",
            ),
            column(
                "Capacity",
                0,
                "capacity represents the actual resources of the underlying volume.",
            ),
            column(
                "Access Modes",
                0,
                "accessModes contains the actual access modes the volume backing the PVC has.",
            ),
            column(
                "StorageClass",
                0,
                "storageClassName is the name of the StorageClass required by the claim.",
            ),
            column(
                "VolumeAttributesClass",
                0,
                "volumeAttributesClassName may be used to set the VolumeAttributesClass used by this claim.",
            ),
            AGE,
            column(
                "VolumeMode",
                1,
                "volumeMode defines what type of volume is required by the claim.",
            ),
        ],
    ),
    (
        &["PersistentVolume"],
        &[
            NAME,
            column(
                "Capacity",
                0,
                "capacity is the description of the persistent volume's resources and capacity.",
            ),
            column(
                "Access Modes",
                0,
                "accessModes contains all ways the volume can be mounted.",
            ),
            column(
                "Reclaim Policy",
                0,
                "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
            ),
            column(
                "Status",
                0,
                "phase indicates if a volume is available, bound to a claim, or released by a claim.",
            ),
            column(
                "Claim",
                0,
                "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.",
            ),
            column(
                "StorageClass",
                0,
                "storageClassName is the name of StorageClass to which this persistent volume belongs.",
            ),
            column(
                "VolumeAttributesClass",
                0,
                "Name of VolumeAttributesClass to which this persistent volume belongs.",
            ),
            column(
                "Reason",
                0,
                "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
            ),
            AGE,
            column(
                "VolumeMode",
                1,
                "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
            ),
        ],
    ),
    (
        &["StatefulSet"],
        &[
            NAME,
            column("Ready", 0, "Number of the pod with ready state"),
            AGE,
            column("Containers", 1, "Names of each container in the template."),
            column(
                "Images",
                1,
                "Images referenced by each container in the template.",
            ),
        ],
    ),
    (
        &["Job"],
        &[
            NAME,
            column("Status", 0, "Status of the job."),
            column("Completions", 0, "The completion status of the job."),
            column("Duration", 0, "Time required to complete the job."),
            AGE,
            column("Containers", 1, "Names of each container in the template."),
            column(
                "Images",
                1,
                "Images referenced by each container in the template.",
            ),
            column(
                "Selector",
                1,
                "A label query over pods that should match the pod count.",
            ),
        ],
    ),
    (
        &["StorageClass"],
        &[
            NAME,
            column(
                "Provisioner",
                0,
                "provisioner indicates the type of the provisioner.",
            ),
            column(
                "ReclaimPolicy",
                0,
                "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.",
            ),
            column(
                "VolumeBindingMode",
                0,
                "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.",
            ),
            column(
                "AllowVolumeExpansion",
                0,
                "allowVolumeExpansion shows whether the storage class allow volume expand.",
            ),
            AGE,
        ],
    ),
    (&["CustomResourceDefinition"], &[NAME, CREATED_AT]),
    (
        &["Event"],
        &[
            column(
                "Last Seen",
                0,
                "The time at which the most recent occurrence of this event was recorded.",
            ),
            column(
                "Type",
                0,
                "Type of this event (Normal, Warning), new types could be added in the future",
            ),
            column(
                "Reason",
                0,
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            ),
            column("Object", 0, "The object that this event is about."),
            column(
                "Subobject",
                1,
                "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.",
            ),
            column(
                "Source",
                1,
                "The component reporting this event. Should be a short machine understandable string.",
            ),
            column(
                "Message",
                0,
                "A human-readable description of the status of this operation.",
            ),
            column(
                "First Seen",
                1,
                "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
            ),
            column("Count", 1, "The number of times this event has occurred."),
            column("Name", 1, NAME_DOC),
        ],
    ),
    (
        &["ServiceAccount"],
        &[
            NAME,
            column(
                "Secrets",
                0,
                "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
            ),
            AGE,
        ],
    ),
    (
        &["Endpoints"],
        &[
            NAME,
            column(
                "Endpoints",
                0,
                "Endpoints is the list of endpoints in the object.",
            ),
            AGE,
        ],
    ),
    (
        &["Node"],
        &[
            NAME,
            column("Status", 0, "The status of the node"),
            column("Roles", 0, "The roles of the node"),
            AGE,
            column("Version", 0, "Kubelet Version reported by the node."),
            column("Internal-IP", 1, "List of addresses reachable to the node."),
            column("External-IP", 1, "List of addresses reachable to the node."),
            column(
                "OS-Image",
                1,
                "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
            ),
            column(
                "Kernel-Version",
                1,
                "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
            ),
            column(
                "Container-Runtime",
                1,
                "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
            ),
        ],
    ),
    (
        &["ComponentStatus"],
        &[
            NAME,
            column("Status", 0, "Status of the component conditions"),
            column("Message", 0, "Message of the component conditions"),
            column("Error", 0, "Error of the component conditions"),
        ],
    ),
    (
        &["APIService"],
        &[
            NAME,
            column(
                "Service",
                0,
                "The reference to the service that hosts this API endpoint.",
            ),
            column("Available", 0, "Whether this service is available."),
            AGE,
        ],
    ),
    (&["Role", "ClusterRole"], &[NAME, CREATED_AT]),
    (
        &["RoleBinding", "ClusterRoleBinding"],
        &[
            NAME,
            column("Role", 0, "Role that this binding refers to."),
            AGE,
            column("Users", 1, "Users in the binding."),
            column("Groups", 1, "Groups in the binding."),
            column("ServiceAccounts", 1, "ServiceAccounts in the binding."),
        ],
    ),
];

fn builtin_columns(kind: &str) -> Vec<Value> {
    BUILTIN_COLUMNS
        .iter()
        .find(|(kinds, _)| kinds.contains(&kind))
        .map_or(DEFAULT_COLUMNS, |(_, columns)| columns)
        .iter()
        .map(BuiltinColumn::definition)
        .collect()
}

/// Subjects of one kind in a binding, comma-separated (`ns/name` for ServiceAccounts).
fn binding_subjects(o: &Value, kind: &str) -> String {
    o["subjects"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter(|s| s["kind"] == kind)
                .map(|s| {
                    let name = s["name"].as_str().unwrap_or("");
                    match s["namespace"].as_str() {
                        Some(ns) if kind == "ServiceAccount" => format!("{ns}/{name}"),
                        _ => name.to_string(),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn builtin_cells(kind: &str, o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let name = json!(name_of(o));
    let age = json!(age_of(o.pointer("/metadata/creationTimestamp"), now));
    match kind {
        "Pod" => pod_cells(o, now),
        "Namespace" => vec![name, json!(str_at(o, "/status/phase")), age],
        "ConfigMap" => {
            let count = len_at(o, "/data") + len_at(o, "/binaryData");
            vec![name, json!(count), age]
        }
        "Secret" => vec![
            name,
            json!(str_at(o, "/type")),
            json!(len_at(o, "/data") + len_at(o, "/stringData")),
            age,
        ],
        "Service" => service_cells(o, name, age),
        "PersistentVolumeClaim" => pvc_cells(o, name, age),
        "PersistentVolume" => pv_cells(o, name, age),
        "StatefulSet" => {
            let ready = format!(
                "{}/{}",
                int_at(o, "/status/readyReplicas"),
                o.pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(1)
            );
            let (containers, images) = template_containers(o);
            vec![name, json!(ready), age, json!(containers), json!(images)]
        }
        "Job" => job_cells(o, name, age, now),
        "StorageClass" => storage_class_cells(o, age),
        "CustomResourceDefinition" => vec![name, json!(str_at(o, "/metadata/creationTimestamp"))],
        "Event" => event_cells(o, now),
        "ServiceAccount" => vec![name, json!(len_at(o, "/secrets")), age],
        "Endpoints" => vec![name, json!(format_endpoints(o)), age],
        "Node" => node_cells(o, name, age),
        "APIService" => api_service_cells(o, name, age),
        "ComponentStatus" => component_status_cells(o, name),
        "Role" | "ClusterRole" => vec![name, json!(str_at(o, "/metadata/creationTimestamp"))],
        "RoleBinding" | "ClusterRoleBinding" => vec![
            name,
            json!(format!(
                "{}/{}",
                o.pointer("/roleRef/kind")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                o.pointer("/roleRef/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            )),
            age,
            json!(binding_subjects(o, "User")),
            json!(binding_subjects(o, "Group")),
            json!(binding_subjects(o, "ServiceAccount")),
        ],
        _ => vec![name, age],
    }
}

/// kubectl's StorageClass row: the name marked `(default)` for the default class.
fn storage_class_cells(o: &Value, age: Value) -> Vec<Value> {
    let default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|a| {
        o.pointer(&format!("/metadata/annotations/{}", a.replace('/', "~1")))
            .and_then(Value::as_str)
            == Some("true")
    });
    let shown = if default {
        format!("{} (default)", name_of(o))
    } else {
        name_of(o).to_owned()
    };
    vec![
        json!(shown),
        json!(str_at(o, "/provisioner")),
        json!(str_or(o, "/reclaimPolicy", "Delete")),
        json!(str_or(o, "/volumeBindingMode", "Immediate")),
        json!(
            o.get("allowVolumeExpansion")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        age,
    ]
}

/// The ComponentStatus row: Healthy or Unhealthy from the `Healthy` condition, its message and
/// error.
fn component_status_cells(o: &Value, name: Value) -> Vec<Value> {
    let healthy = o
        .pointer("/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Healthy"));
    let status = match healthy.and_then(|c| c["status"].as_str()) {
        Some("True") => "Healthy",
        Some(_) => "Unhealthy",
        None => "Unknown",
    };
    let field = |k: &str| json!(healthy.and_then(|c| c[k].as_str()).unwrap_or(""));
    vec![name, json!(status), field("message"), field("error")]
}

/// kubectl's APIService row: the backing Service (or `Local`) and its availability.
fn api_service_cells(o: &Value, name: Value, age: Value) -> Vec<Value> {
    let service = match o.pointer("/spec/service") {
        Some(svc) if svc.is_object() => format!(
            "{}/{}",
            svc["namespace"].as_str().unwrap_or(""),
            svc["name"].as_str().unwrap_or("")
        ),
        _ => "Local".into(),
    };
    let available = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Available"))
        .map(|c| {
            let status = c["status"].as_str().unwrap_or("Unknown");
            match c["reason"].as_str() {
                Some(r) if status != "True" => format!("{status} ({r})"),
                _ => status.to_string(),
            }
        })
        .unwrap_or_else(|| "Unknown".into());
    vec![name, json!(service), json!(available), age]
}

fn name_of(o: &Value) -> &str {
    str_at(o, "/metadata/name")
}

fn str_at<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn str_or<'a>(o: &'a Value, pointer: &str, fallback: &'a str) -> &'a str {
    match str_at(o, pointer) {
        "" => fallback,
        s => s,
    }
}

fn int_at(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn len_at(o: &Value, pointer: &str) -> usize {
    match o.pointer(pointer) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

fn list_at<'a>(o: &'a Value, pointer: &str) -> &'a [Value] {
    o.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn none_if_empty(s: String) -> String {
    if s.is_empty() { "<none>".to_owned() } else { s }
}

fn has_true_condition(o: &Value, type_: &str) -> bool {
    list_at(o, "/status/conditions").iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(type_)
            && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

fn timestamp(v: Option<&Value>) -> Option<jiff::Timestamp> {
    v.and_then(Value::as_str)?.parse().ok()
}

/// The upstream `printPod` rules: init containers first, then main containers from last to
/// first, a waiting or terminated reason winning over the phase; `Terminating` while deleted.
fn pod_cells(pod: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let init_specs = list_at(pod, "/spec/initContainers");
    let total = list_at(pod, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
            .count();
    let phase = str_at(pod, "/status/phase");
    let mut tally = PodTally {
        reason: pod_reason(pod, phase),
        ready: 0,
        restarts: 0,
        last_restart: None,
    };
    let init = tally_init_containers(pod, &mut tally);
    if !init.initializing || has_true_condition(pod, "Initialized") {
        tally.restarts = init.sidecar_restarts;
        tally.last_restart = init.sidecar_last_restart;
        tally_containers(pod, &mut tally);
    }
    let PodTally {
        mut reason,
        ready,
        restarts,
        last_restart,
    } = tally;
    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null());
    if deleting && str_at(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_owned();
    }
    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", age_since(t, now)),
        _ => restarts.to_string(),
    };
    let ip = list_at(pod, "/status/podIPs")
        .first()
        .and_then(|p| p.get("ip"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| str_at(pod, "/status/podIP"));
    vec![
        json!(name_of(pod)),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_cell),
        json!(age_of(pod.pointer("/metadata/creationTimestamp"), now)),
        json!(none_if_empty(ip.to_owned())),
        json!(none_if_empty(str_at(pod, "/spec/nodeName").to_owned())),
        json!(none_if_empty(
            str_at(pod, "/status/nominatedNodeName").to_owned()
        )),
        json!(readiness_gates_cell(pod)),
    ]
}

/// What `printPod` adds up from the container statuses: the Ready count, the Restarts and
/// the Status reason.
struct PodTally {
    reason: String,
    ready: i32,
    restarts: i64,
    last_restart: Option<jiff::Timestamp>,
}

/// What the init containers leave for the main containers' pass.
struct InitTally {
    /// An init container has not completed: the reason is its `Init:` state.
    initializing: bool,
    /// Restarts of restartable init containers (sidecars), which count with the main ones.
    sidecar_restarts: i64,
    sidecar_last_restart: Option<jiff::Timestamp>,
}

/// The reason before the containers are looked at: the status reason, else the phase, and
/// `SchedulingGated` for a gated pod.
fn pod_reason(pod: &Value, phase: &str) -> String {
    let mut reason = match str_at(pod, "/status/reason") {
        "" => phase.to_owned(),
        r => r.to_owned(),
    };
    if list_at(pod, "/status/conditions").iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("PodScheduled")
            && c.get("reason").and_then(Value::as_str) == Some("SchedulingGated")
    }) {
        reason = "SchedulingGated".to_owned();
    }
    reason
}

/// Keeps the latest `lastState.terminated.finishedAt` in `last`.
fn note_restart(last: &mut Option<jiff::Timestamp>, status: &Value) {
    if let Some(t) = timestamp(status.pointer("/lastState/terminated/finishedAt"))
        && last.is_none_or(|l| l < t)
    {
        *last = Some(t);
    }
}

/// The init containers in order, up to the first that has not completed (whose state becomes
/// the reason); started sidecars count as ready when they are.
fn tally_init_containers(pod: &Value, tally: &mut PodTally) -> InitTally {
    let init_specs = list_at(pod, "/spec/initContainers");
    let restartable = |name: &str| {
        init_specs.iter().any(|c| {
            c.get("name").and_then(Value::as_str) == Some(name)
                && c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
        })
    };
    let mut init = InitTally {
        initializing: false,
        sidecar_restarts: 0,
        sidecar_last_restart: None,
    };
    let init_statuses = list_at(pod, "/status/initContainerStatuses");
    for (i, status) in init_statuses.iter().enumerate() {
        let count = status
            .get("restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        tally.restarts += count;
        note_restart(&mut tally.last_restart, status);
        let name = status
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let is_sidecar = restartable(name);
        if is_sidecar {
            init.sidecar_restarts += count;
            note_restart(&mut init.sidecar_last_restart, status);
        }
        let terminated = status.pointer("/state/terminated");
        let waiting_reason = str_at(status, "/state/waiting/reason");
        if terminated.is_some_and(|t| t.get("exitCode").and_then(Value::as_i64) == Some(0)) {
            continue;
        }
        if is_sidecar && status.get("started").and_then(Value::as_bool) == Some(true) {
            if status.get("ready").and_then(Value::as_bool) == Some(true) {
                tally.ready += 1;
            }
            continue;
        }
        tally.reason = if let Some(t) = terminated {
            match str_at(t, "/reason") {
                "" => match t.get("signal").and_then(Value::as_i64).unwrap_or(0) {
                    0 => format!("Init:ExitCode:{}", int_at(t, "/exitCode")),
                    signal => format!("Init:Signal:{signal}"),
                },
                r => format!("Init:{r}"),
            }
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        init.initializing = true;
        break;
    }
    init
}

/// The main containers from last to first: a waiting or terminated reason wins, ready running
/// containers count; `Completed` with one still running reads `Running` or `NotReady`.
fn tally_containers(pod: &Value, tally: &mut PodTally) {
    let mut has_running = false;
    for status in list_at(pod, "/status/containerStatuses").iter().rev() {
        tally.restarts += status
            .get("restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        note_restart(&mut tally.last_restart, status);
        let waiting = str_at(status, "/state/waiting/reason");
        let terminated = status.pointer("/state/terminated");
        if !waiting.is_empty() {
            tally.reason = waiting.to_owned();
        } else if let Some(t) = terminated {
            tally.reason = match str_at(t, "/reason") {
                "" => match t.get("signal").and_then(Value::as_i64).unwrap_or(0) {
                    0 => format!("ExitCode:{}", int_at(t, "/exitCode")),
                    signal => format!("Signal:{signal}"),
                },
                r => r.to_owned(),
            };
        } else if status.get("ready").and_then(Value::as_bool) == Some(true)
            && status.pointer("/state/running").is_some()
        {
            has_running = true;
            tally.ready += 1;
        }
    }
    if tally.reason == "Completed" && has_running {
        tally.reason = if has_true_condition(pod, "Ready") {
            "Running".to_owned()
        } else {
            "NotReady".to_owned()
        };
    }
}

/// `met/total` readiness gates, `<none>` without gates.
fn readiness_gates_cell(pod: &Value) -> String {
    let gates = list_at(pod, "/spec/readinessGates");
    if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let met = gates
            .iter()
            .filter(|g| {
                let t = g
                    .get("conditionType")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                has_true_condition(pod, t)
            })
            .count();
        format!("{met}/{}", gates.len())
    }
}

fn format_labels(map: Option<&Value>) -> String {
    let Some(Value::Object(map)) = map else {
        return String::new();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// `metav1.FormatLabelSelector`: `matchLabels` as `k=v`, expressions as `k in (a,b)`.
fn format_label_selector(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| s.is_object()) else {
        return "<none>".to_owned();
    };
    let mut parts = Vec::new();
    if let Some(Value::Object(labels)) = selector.get("matchLabels") {
        let mut keys: Vec<&String> = labels.keys().collect();
        keys.sort();
        for k in keys {
            parts.push(format!("{k}={}", labels[k].as_str().unwrap_or_default()));
        }
    }
    for expr in list_at(selector, "/matchExpressions") {
        let key = str_at(expr, "/key");
        let values: Vec<&str> = list_at(expr, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match str_at(expr, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        });
    }
    if parts.is_empty() {
        "<none>".to_owned()
    } else {
        parts.join(",")
    }
}

fn service_cells(svc: &Value, name: Value, age: Value) -> Vec<Value> {
    let type_ = str_or(svc, "/spec/type", "ClusterIP");
    let cluster_ip = none_if_empty(str_at(svc, "/spec/clusterIP").to_owned());
    let external: Vec<&str> = list_at(svc, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external_ip = match type_ {
        "ExternalName" => str_at(svc, "/spec/externalName").to_owned(),
        "LoadBalancer" => {
            let mut ips: Vec<&str> = list_at(svc, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| {
                    i.get("ip")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .or_else(|| i.get("hostname").and_then(Value::as_str))
                })
                .collect();
            ips.extend(external.iter());
            if ips.is_empty() {
                "<pending>".to_owned()
            } else {
                ips.join(",")
            }
        }
        _ => none_if_empty(external.join(",")),
    };
    let ports: Vec<String> = list_at(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let port = int_at(p, "/port");
            let protocol = str_or(p, "/protocol", "TCP");
            match int_at(p, "/nodePort") {
                0 => format!("{port}/{protocol}"),
                node_port => format!("{port}:{node_port}/{protocol}"),
            }
        })
        .collect();
    vec![
        name,
        json!(type_),
        json!(cluster_ip),
        json!(external_ip),
        json!(none_if_empty(ports.join(","))),
        age,
        json!(none_if_empty(format_labels(svc.pointer("/spec/selector")))),
    ]
}

fn access_modes(modes: &[Value]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for (mode, short) in [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ] {
        if modes.iter().any(|m| m.as_str() == Some(mode)) {
            out.push(short);
        }
    }
    out.join(",")
}

fn deleting(o: &Value) -> bool {
    o.pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null())
}

fn pvc_cells(pvc: &Value, name: Value, age: Value) -> Vec<Value> {
    let phase = if deleting(pvc) {
        "Terminating"
    } else {
        str_at(pvc, "/status/phase")
    };
    let volume = str_at(pvc, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            str_at(pvc, "/status/capacity/storage").to_owned(),
            access_modes(list_at(pvc, "/status/accessModes")),
        )
    };
    let class = match str_at(pvc, "/spec/storageClassName") {
        "" => str_at(
            pvc,
            "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
        ),
        c => c,
    };
    vec![
        name,
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(str_or(pvc, "/spec/volumeAttributesClassName", "<unset>")),
        age,
        json!(str_or(pvc, "/spec/volumeMode", "<unset>")),
    ]
}

fn pv_cells(pv: &Value, name: Value, age: Value) -> Vec<Value> {
    let claim = match pv.pointer("/spec/claimRef") {
        Some(r) if r.is_object() => format!("{}/{}", str_at(r, "/namespace"), str_at(r, "/name")),
        _ => String::new(),
    };
    let phase = if deleting(pv) {
        "Terminating"
    } else {
        str_at(pv, "/status/phase")
    };
    vec![
        name,
        json!(str_at(pv, "/spec/capacity/storage")),
        json!(access_modes(list_at(pv, "/spec/accessModes"))),
        json!(str_at(pv, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase),
        json!(claim),
        json!(str_at(pv, "/spec/storageClassName")),
        json!(str_or(pv, "/spec/volumeAttributesClassName", "<unset>")),
        json!(str_at(pv, "/status/reason")),
        age,
        json!(str_or(pv, "/spec/volumeMode", "<unset>")),
    ]
}

fn template_containers(o: &Value) -> (String, String) {
    let containers = list_at(o, "/spec/template/spec/containers");
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, "/image")).collect();
    (names.join(","), images.join(","))
}

fn job_cells(job: &Value, name: Value, age: Value, now: jiff::Timestamp) -> Vec<Value> {
    let status = if has_true_condition(job, "Complete") {
        "Complete"
    } else if has_true_condition(job, "Failed") {
        "Failed"
    } else if deleting(job) {
        "Terminating"
    } else if has_true_condition(job, "Suspended") {
        "Suspended"
    } else if has_true_condition(job, "FailureTarget") {
        "FailureTarget"
    } else if has_true_condition(job, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let succeeded = int_at(job, "/status/succeeded");
    let completions = match job.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match job
            .pointer("/spec/parallelism")
            .and_then(Value::as_i64)
            .unwrap_or(0)
        {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (
        timestamp(job.pointer("/status/startTime")),
        timestamp(job.pointer("/status/completionTime")),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => age_since(start, now),
        (Some(start), Some(end)) => age_since(start, end),
    };
    let (containers, images) = template_containers(job);
    vec![
        name,
        json!(status),
        json!(completions),
        json!(duration),
        age,
        json!(containers),
        json!(images),
        json!(format_label_selector(job.pointer("/spec/selector"))),
    ]
}

fn event_cells(ev: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let first = match ev.get("firstTimestamp").filter(|v| !v.is_null()) {
        Some(t) => age_of(Some(t), now),
        None => age_of(ev.get("eventTime"), now),
    };
    let mut last = match ev.get("lastTimestamp").filter(|v| !v.is_null()) {
        Some(t) => age_of(Some(t), now),
        None => first.clone(),
    };
    let mut count = ev.get("count").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = ev.get("series").filter(|s| s.is_object()) {
        last = age_of(series.get("lastObservedTime"), now);
        count = int_at(series, "/count");
    } else if count == 0 {
        count = 1;
    }
    let kind = str_at(ev, "/involvedObject/kind").to_lowercase();
    let target = match str_at(ev, "/involvedObject/name") {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let component = str_at(ev, "/source/component");
    let source = if component.is_empty() {
        let controller = str_at(ev, "/reportingComponent");
        match str_at(ev, "/reportingInstance") {
            "" => controller.to_owned(),
            i => format!("{controller}, {i}"),
        }
    } else {
        match str_at(ev, "/source/host") {
            "" => component.to_owned(),
            h => format!("{component}, {h}"),
        }
    };
    vec![
        json!(last),
        json!(str_at(ev, "/type")),
        json!(str_at(ev, "/reason")),
        json!(target),
        json!(str_at(ev, "/involvedObject/fieldPath")),
        json!(source),
        json!(str_at(ev, "/message").trim()),
        json!(first),
        json!(count),
        json!(name_of(ev)),
    ]
}

/// `formatEndpoints`: up to three `ip:port` pairs, then `+ N more...`.
fn format_endpoints(ep: &Value) -> String {
    let subsets = list_at(ep, "/subsets");
    if subsets.is_empty() {
        return "<none>".to_owned();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut count = 0;
    let mut more = false;
    for subset in subsets {
        let addresses = list_at(subset, "/addresses");
        let ports = list_at(subset, "/ports");
        if ports.is_empty() {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(str_at(a, "/ip").to_owned());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                let ip = str_at(a, "/ip");
                let p = int_at(port, "/port");
                list.push(if ip.contains(':') {
                    format!("[{ip}]:{p}")
                } else {
                    format!("{ip}:{p}")
                });
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

fn node_cells(node: &Value, name: Value, age: Value) -> Vec<Value> {
    let mut status: Vec<&str> = Vec::new();
    match list_at(node, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == "Ready")
    {
        Some(c) if str_at(c, "/status") == "True" => status.push("Ready"),
        Some(_) => status.push("NotReady"),
        None => status.push("Unknown"),
    }
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    let mut roles: Vec<String> = Vec::new();
    if let Some(Value::Object(labels)) = node.pointer("/metadata/labels") {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.push(role.to_owned());
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.push(v.to_owned());
            }
        }
    }
    roles.sort();
    roles.dedup();
    let address = |type_: &str| {
        list_at(node, "/status/addresses")
            .iter()
            .find(|a| str_at(a, "/type") == type_)
            .map(|a| str_at(a, "/address").to_owned())
            .unwrap_or_else(|| "<none>".to_owned())
    };
    vec![
        name,
        json!(status.join(",")),
        json!(none_if_empty(roles.join(","))),
        age,
        json!(str_at(node, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(str_or(node, "/status/nodeInfo/osImage", "<unknown>")),
        json!(str_or(node, "/status/nodeInfo/kernelVersion", "<unknown>")),
        json!(str_or(
            node,
            "/status/nodeInfo/containerRuntimeVersion",
            "<unknown>"
        )),
    ]
}

/// Evaluates the simple JSONPath subset CRD printer columns use: `.a.b`, `.a[0].b`, `.a[*].b`
/// (first match), `.a['b.c']`, optionally wrapped in `{}`.
fn json_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let path = path.strip_prefix('$').unwrap_or(path);
    let mut current = object;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let (key, tail) = after.split_at(end);
            if !key.is_empty() {
                current = current
                    .as_object()
                    .and_then(|m: &Map<String, Value>| m.get(key))?;
            }
            rest = tail;
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let (index, tail) = (&after[..end], &after[end + 1..]);
            let quoted = index
                .strip_prefix('\'')
                .and_then(|i| i.strip_suffix('\''))
                .or_else(|| index.strip_prefix('"').and_then(|i| i.strip_suffix('"')));
            current = match quoted {
                Some(key) => current.get(key)?,
                None if index == "*" => current.as_array()?.first()?,
                None => {
                    let i: i64 = index.parse().ok()?;
                    let list = current.as_array()?;
                    let i = if i < 0 { list.len() as i64 + i } else { i };
                    list.get(usize::try_from(i).ok()?)?
                }
            };
            rest = tail;
        } else {
            return None;
        }
    }
    Some(current)
}
