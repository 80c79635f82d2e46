//! Protobuf bodies of `apps/v1` Deployments, as `kubectl create deployment` POSTs them (its
//! typed client sends protobuf only). The fields kubectl's generator sets, and the common
//! pod-spec fields, are mapped into the JSON the server stores; field numbers follow
//! `k8s.io/api/apps/v1/generated.proto` and `k8s.io/api/core/v1/generated.proto`.

use prost::Message;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

use super::ObjectMeta;

#[derive(Clone, PartialEq, Message)]
pub struct Deployment {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<DeploymentSpec>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DeploymentSpec {
    #[prost(int32, optional, tag = "1")]
    pub replicas: Option<i32>,
    #[prost(message, optional, tag = "2")]
    pub selector: Option<LabelSelector>,
    #[prost(message, optional, tag = "3")]
    pub template: Option<PodTemplateSpec>,
    #[prost(message, optional, tag = "4")]
    pub strategy: Option<DeploymentStrategy>,
    #[prost(int32, optional, tag = "5")]
    pub min_ready_seconds: Option<i32>,
    #[prost(int32, optional, tag = "6")]
    pub revision_history_limit: Option<i32>,
    #[prost(bool, optional, tag = "7")]
    pub paused: Option<bool>,
    #[prost(int32, optional, tag = "9")]
    pub progress_deadline_seconds: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct LabelSelector {
    #[prost(btree_map = "string, string", tag = "1")]
    pub match_labels: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "2")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Clone, PartialEq, Message)]
pub struct LabelSelectorRequirement {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub operator: String,
    #[prost(string, repeated, tag = "3")]
    pub values: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DeploymentStrategy {
    #[prost(string, tag = "1")]
    pub type_: String,
    #[prost(message, optional, tag = "2")]
    pub rolling_update: Option<RollingUpdate>,
}

#[derive(Clone, PartialEq, Message)]
pub struct RollingUpdate {
    #[prost(message, optional, tag = "1")]
    pub max_unavailable: Option<IntOrString>,
    #[prost(message, optional, tag = "2")]
    pub max_surge: Option<IntOrString>,
}

#[derive(Clone, PartialEq, Message)]
pub struct IntOrString {
    #[prost(int64, tag = "1")]
    pub type_: i64,
    #[prost(int32, tag = "2")]
    pub int_val: i32,
    #[prost(string, tag = "3")]
    pub str_val: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct PodTemplateSpec {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<PodSpec>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PodSpec {
    #[prost(message, repeated, tag = "2")]
    pub containers: Vec<Container>,
    #[prost(string, tag = "3")]
    pub restart_policy: String,
    #[prost(int64, optional, tag = "4")]
    pub termination_grace_period_seconds: Option<i64>,
    #[prost(string, tag = "6")]
    pub dns_policy: String,
    #[prost(btree_map = "string, string", tag = "7")]
    pub node_selector: BTreeMap<String, String>,
    #[prost(string, tag = "8")]
    pub service_account_name: String,
    #[prost(string, tag = "16")]
    pub hostname: String,
    #[prost(string, tag = "17")]
    pub subdomain: String,
    #[prost(string, tag = "19")]
    pub scheduler_name: String,
    #[prost(message, repeated, tag = "20")]
    pub init_containers: Vec<Container>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Container {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub image: String,
    #[prost(string, repeated, tag = "3")]
    pub command: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub args: Vec<String>,
    #[prost(string, tag = "5")]
    pub working_dir: String,
    #[prost(message, repeated, tag = "6")]
    pub ports: Vec<ContainerPort>,
    #[prost(message, repeated, tag = "7")]
    pub env: Vec<EnvVar>,
    #[prost(string, tag = "13")]
    pub termination_message_path: String,
    #[prost(string, tag = "14")]
    pub image_pull_policy: String,
    #[prost(string, tag = "20")]
    pub termination_message_policy: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct ContainerPort {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "2")]
    pub host_port: i32,
    #[prost(int32, tag = "3")]
    pub container_port: i32,
    #[prost(string, tag = "4")]
    pub protocol: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct EnvVar {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

fn put_str(map: &mut Map<String, Value>, key: &str, value: String) {
    if !value.is_empty() {
        map.insert(key.into(), Value::String(value));
    }
}

fn put_list(map: &mut Map<String, Value>, key: &str, value: Vec<Value>) {
    if !value.is_empty() {
        map.insert(key.into(), Value::Array(value));
    }
}

fn int_or_string(v: IntOrString) -> Value {
    if v.type_ == 1 {
        json!(v.str_val)
    } else {
        json!(v.int_val)
    }
}

fn container(c: Container) -> Value {
    let mut m = Map::new();
    put_str(&mut m, "name", c.name);
    put_str(&mut m, "image", c.image);
    if !c.command.is_empty() {
        m.insert("command".into(), json!(c.command));
    }
    if !c.args.is_empty() {
        m.insert("args".into(), json!(c.args));
    }
    put_str(&mut m, "workingDir", c.working_dir);
    let ports = c
        .ports
        .into_iter()
        .map(|p| {
            let mut o = Map::new();
            put_str(&mut o, "name", p.name);
            if p.host_port != 0 {
                o.insert("hostPort".into(), json!(p.host_port));
            }
            o.insert("containerPort".into(), json!(p.container_port));
            put_str(&mut o, "protocol", p.protocol);
            Value::Object(o)
        })
        .collect();
    put_list(&mut m, "ports", ports);
    let env = c
        .env
        .into_iter()
        .map(|e| json!({"name": e.name, "value": e.value}))
        .collect();
    put_list(&mut m, "env", env);
    m.insert("resources".into(), json!({}));
    put_str(&mut m, "terminationMessagePath", c.termination_message_path);
    put_str(
        &mut m,
        "terminationMessagePolicy",
        c.termination_message_policy,
    );
    put_str(&mut m, "imagePullPolicy", c.image_pull_policy);
    Value::Object(m)
}

fn pod_spec(s: PodSpec) -> Value {
    let mut m = Map::new();
    put_list(
        &mut m,
        "initContainers",
        s.init_containers.into_iter().map(container).collect(),
    );
    m.insert(
        "containers".into(),
        Value::Array(s.containers.into_iter().map(container).collect()),
    );
    put_str(&mut m, "restartPolicy", s.restart_policy);
    if let Some(g) = s.termination_grace_period_seconds {
        m.insert("terminationGracePeriodSeconds".into(), json!(g));
    }
    put_str(&mut m, "dnsPolicy", s.dns_policy);
    if !s.node_selector.is_empty() {
        m.insert("nodeSelector".into(), json!(s.node_selector));
    }
    put_str(&mut m, "serviceAccountName", s.service_account_name);
    put_str(&mut m, "hostname", s.hostname);
    put_str(&mut m, "subdomain", s.subdomain);
    put_str(&mut m, "schedulerName", s.scheduler_name);
    Value::Object(m)
}

fn selector(s: LabelSelector) -> Value {
    let mut m = Map::new();
    if !s.match_labels.is_empty() {
        m.insert("matchLabels".into(), json!(s.match_labels));
    }
    let expressions = s
        .match_expressions
        .into_iter()
        .map(|e| json!({"key": e.key, "operator": e.operator, "values": e.values}))
        .collect();
    put_list(&mut m, "matchExpressions", expressions);
    Value::Object(m)
}

/// A Deployment message as the JSON object model (without apiVersion and kind).
pub fn deployment(raw: &[u8]) -> Result<Map<String, Value>, String> {
    let d = Deployment::decode(raw)
        .map_err(|e| format!("protobuf body is not a valid Deployment: {e}"))?;
    let mut m = Map::new();
    m.insert(
        "metadata".into(),
        d.metadata.unwrap_or_default().into_json(),
    );
    let s = d.spec.unwrap_or_default();
    let mut spec = Map::new();
    if let Some(r) = s.replicas {
        spec.insert("replicas".into(), json!(r));
    }
    if let Some(sel) = s.selector {
        spec.insert("selector".into(), selector(sel));
    }
    let template = s.template.unwrap_or_default();
    spec.insert(
        "template".into(),
        json!({
            "metadata": template.metadata.unwrap_or_default().into_json(),
            "spec": pod_spec(template.spec.unwrap_or_default()),
        }),
    );
    if let Some(strategy) = s.strategy.filter(|s| !s.type_.is_empty()) {
        let mut o = Map::new();
        o.insert("type".into(), json!(strategy.type_));
        if let Some(r) = strategy.rolling_update {
            let mut ru = Map::new();
            if let Some(v) = r.max_unavailable {
                ru.insert("maxUnavailable".into(), int_or_string(v));
            }
            if let Some(v) = r.max_surge {
                ru.insert("maxSurge".into(), int_or_string(v));
            }
            o.insert("rollingUpdate".into(), Value::Object(ru));
        }
        spec.insert("strategy".into(), Value::Object(o));
    }
    if let Some(v) = s.min_ready_seconds.filter(|v| *v != 0) {
        spec.insert("minReadySeconds".into(), json!(v));
    }
    if let Some(v) = s.revision_history_limit {
        spec.insert("revisionHistoryLimit".into(), json!(v));
    }
    if s.paused == Some(true) {
        spec.insert("paused".into(), json!(true));
    }
    if let Some(v) = s.progress_deadline_seconds {
        spec.insert("progressDeadlineSeconds".into(), json!(v));
    }
    m.insert("spec".into(), Value::Object(spec));
    Ok(m)
}
