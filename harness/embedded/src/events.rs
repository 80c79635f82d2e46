//! Kubernetes Events (core/v1) from the node and the controllers: what `kubectl describe`
//! and `kubectl get events` show, and what a harness collects when a case fails.
//!
//! Events are best effort, as in Kubernetes: written in the background, failures only logged.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client, Resource, ResourceExt};

use crate::node::now as status_now;

/// Writes Events on behalf of one component (`kubelet`, `statefulset-controller`, …).
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    component: &'static str,
}

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something needs attention.
    Warning,
}

/// The reference to `obj` an Event is about (optionally one field, e.g. a container).
pub fn reference<K: Resource<DynamicType = ()>>(
    obj: &K,
    field_path: Option<String>,
) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: obj.meta().name.clone(),
        namespace: obj.meta().namespace.clone(),
        uid: obj.meta().uid.clone(),
        resource_version: obj.meta().resource_version.clone(),
        field_path,
    }
}

impl Recorder {
    /// A recorder for `component`.
    pub fn new(client: Client, component: &'static str) -> Self {
        Self { client, component }
    }

    /// Records an Event about `object` without waiting for the write.
    pub fn emit(&self, object: ObjectReference, type_: EventType, reason: &str, message: String) {
        let namespace = object.namespace.clone().unwrap_or_else(|| "default".into());
        let now = status_now();
        let name = format!(
            "{}.{}",
            object.name.clone().unwrap_or_default(),
            &uuid::Uuid::new_v4().simple().to_string()[..16]
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            involved_object: object,
            reason: Some(reason.to_string()),
            message: Some(message),
            type_: Some(
                match type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .into(),
            ),
            count: Some(1),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            source: Some(EventSource {
                component: Some(self.component.to_string()),
                host: Some(crate::node::NODE_NAME.to_string()),
            }),
            reporting_component: Some(self.component.to_string()),
            reporting_instance: Some(crate::node::NODE_NAME.to_string()),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        tokio::spawn(async move {
            if let Err(error) = api.create(&PostParams::default(), &event).await {
                tracing::warn!(%error, event = %event.name_any(), "cannot record event");
            }
        });
    }
}
