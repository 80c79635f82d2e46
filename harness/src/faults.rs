//! Fault injectors for the rehearsal cases. Each acts through the backend or kube, waits for the
//! cluster to show the fault took effect, and returns an observation (pod UID, container ID and
//! restart count before and after) that scenarios put into receipts.
//!
//! - [`restart_game_container`] / [`restart_agent_container`]: one container restarted in place
//!   (same pod UID, new container ID, restart count +1);
//! - [`replace_pod`]: the pod deleted and recreated by its StatefulSet (new pod UID);
//! - [`set_suspended`]: a GameServer suspended or resumed;
//! - [`point_at_unpullable`]: a GameServer's image set to one no node can pull.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde::Serialize;

use crate::backend::{Backend, BackendError};
use crate::wait::{WaitError, await_object, conditions};

/// The game container's name in a GameServer pod.
pub const GAME_CONTAINER: &str = "game";
/// The agent container's name in a GameServer pod.
pub const AGENT_CONTAINER: &str = "agent";
/// An image reference no registry serves (valid syntax, pinned by an all-zero digest).
pub const UNPULLABLE_IMAGE: &str = "rehearsal.local/unpullable@sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// Why a fault could not be injected or observed.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// The backend could not perform the fault (see [`FaultError::not_applicable`]).
    #[error(transparent)]
    Backend(Box<BackendError>),
    /// The fault was injected but the cluster did not show its effect within the bound.
    #[error(transparent)]
    Wait(Box<WaitError>),
    /// A Kubernetes call on the target object failed.
    #[error("{what} {namespace}/{name}: {}", crate::kube_error::line(source))]
    Kube {
        /// The call, e.g. `get pod`, `patch GameServer`.
        what: &'static str,
        /// The target's namespace.
        namespace: String,
        /// The target's name.
        name: String,
        /// kube's error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The pod's status does not (yet) show what the fault needs to compare, e.g. a container ID.
    #[error("pod {namespace}/{pod}: {what} is not observable yet (container `{container}`)")]
    NotObservable {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The container whose status was read.
        container: String,
        /// What was missing, e.g. `container ID after the restart`.
        what: &'static str,
    },
}

impl FaultError {
    /// Why this cluster cannot inject the fault at all (the backend does not support it, e.g.
    /// an in-place container restart where the harness cannot reach the nodes), as opposed to a
    /// fault that was injected and went wrong.
    pub fn not_applicable(&self) -> Option<String> {
        match self {
            FaultError::Backend(b) if matches!(**b, BackendError::Unsupported { .. }) => {
                Some(b.to_string())
            }
            _ => None,
        }
    }
}

// Boxed so the error stays small: callers put it in their own error enums.
impl From<BackendError> for FaultError {
    fn from(e: BackendError) -> Self {
        FaultError::Backend(Box::new(e))
    }
}

impl From<WaitError> for FaultError {
    fn from(e: WaitError) -> Self {
        FaultError::Wait(Box::new(e))
    }
}

fn kube_error(
    what: &'static str,
    namespace: &str,
    name: &str,
) -> impl FnOnce(kube::Error) -> FaultError {
    let (namespace, name) = (namespace.to_string(), name.to_string());
    move |source| FaultError::Kube {
        what,
        namespace,
        name,
        source: Box::new(source),
    }
}

/// One container's identity at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ContainerIncarnation {
    /// UID of the pod the container runs in; equal before and after an in-place restart.
    pub pod_uid: String,
    /// The container's name in the pod spec (`game`, `agent`).
    pub container: String,
    /// The runtime's container ID from the pod status (`containerd://…`); a new ID is a new process.
    pub container_id: String,
    /// The pod status's restart count for the container.
    pub restart_count: i32,
}

/// What an in-place restart changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RestartObservation {
    /// The pod's namespace.
    pub namespace: String,
    /// The restarted container's pod.
    pub pod: String,
    /// Read before the restart was asked for.
    pub before: ContainerIncarnation,
    /// Read once the container ran again under a new container ID.
    pub after: ContainerIncarnation,
}

impl RestartObservation {
    /// Same pod, new container ID, restart count +1 — the shape of an in-place restart.
    pub fn is_in_place(&self) -> bool {
        self.before.pod_uid == self.after.pod_uid
            && self.before.container_id != self.after.container_id
            && self.after.restart_count == self.before.restart_count + 1
    }
}

/// What a pod replacement changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ReplaceObservation {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod (`<server>-0`), same name before and after.
    pub pod: String,
    /// The deleted pod's UID.
    pub old_uid: String,
    /// The replacement pod's UID (differs from `old_uid`).
    pub new_uid: String,
}

/// A GameServer spec change and the pod identity before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecChangeObservation {
    /// The GameServer's namespace.
    pub namespace: String,
    /// The GameServer's name.
    pub server: String,
    /// The JSON merge patch applied to the GameServer.
    pub patch: serde_json::Value,
    /// The pod's UID before the change (`None` when there was no pod).
    pub pod_uid_before: Option<String>,
    /// The GameServer's generation after the change.
    pub generation_after: Option<i64>,
}

/// The pod `<server>-0` of a GameServer (StatefulSet ordinal 0).
pub fn server_pod(server: &str) -> String {
    format!("{server}-0")
}

/// Reads the incarnation of `container` from a pod.
pub fn incarnation(pod: &Pod, container: &str) -> Option<ContainerIncarnation> {
    let status = pod
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == container)?;
    Some(ContainerIncarnation {
        pod_uid: pod.metadata.uid.clone()?,
        container: container.to_string(),
        container_id: status.container_id.clone()?,
        restart_count: status.restart_count,
    })
}

async fn read_incarnation(
    pods: &Api<Pod>,
    namespace: &str,
    pod: &str,
    container: &str,
) -> Result<ContainerIncarnation, FaultError> {
    let p = pods
        .get(pod)
        .await
        .map_err(kube_error("get pod", namespace, pod))?;
    incarnation(&p, container).ok_or_else(|| FaultError::NotObservable {
        namespace: namespace.into(),
        pod: pod.into(),
        container: container.into(),
        what: "container ID",
    })
}

/// Restarts `container` of `pod` in place through the backend and waits until it runs again.
pub async fn restart_container_in_place(
    backend: &dyn Backend,
    namespace: &str,
    pod: &str,
    container: &str,
    bound: Duration,
) -> Result<RestartObservation, FaultError> {
    let pods: Api<Pod> = Api::namespaced(backend.client(), namespace);
    let before = read_incarnation(&pods, namespace, pod, container).await?;
    backend.restart_container(namespace, pod, container).await?;
    let condition =
        conditions::container_restarted(&before.pod_uid, container, &before.container_id);
    let p = await_object(&pods, pod, condition, bound).await?;
    let after = incarnation(&p, container).ok_or_else(|| FaultError::NotObservable {
        namespace: namespace.into(),
        pod: pod.into(),
        container: container.into(),
        what: "container ID after the restart",
    })?;
    Ok(RestartObservation {
        namespace: namespace.into(),
        pod: pod.into(),
        before,
        after,
    })
}

/// Restarts the game container of GameServer `server` in place.
pub async fn restart_game_container(
    backend: &dyn Backend,
    namespace: &str,
    server: &str,
    bound: Duration,
) -> Result<RestartObservation, FaultError> {
    restart_container_in_place(
        backend,
        namespace,
        &server_pod(server),
        GAME_CONTAINER,
        bound,
    )
    .await
}

/// Restarts the agent container of GameServer `server` in place.
pub async fn restart_agent_container(
    backend: &dyn Backend,
    namespace: &str,
    server: &str,
    bound: Duration,
) -> Result<RestartObservation, FaultError> {
    restart_container_in_place(
        backend,
        namespace,
        &server_pod(server),
        AGENT_CONTAINER,
        bound,
    )
    .await
}

/// Deletes the server's pod and waits until its StatefulSet has created a replacement.
pub async fn replace_pod(
    client: &kube::Client,
    namespace: &str,
    server: &str,
    bound: Duration,
) -> Result<ReplaceObservation, FaultError> {
    let pod = server_pod(server);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let kube_err = |what| kube_error(what, namespace, &pod);
    let old = pods.get(&pod).await.map_err(kube_err("get pod"))?;
    let old_uid = old.metadata.uid.clone().unwrap_or_default();
    pods.delete(&pod, &DeleteParams::default())
        .await
        .map_err(kube_err("delete pod"))?;
    let new = await_object(&pods, &pod, conditions::pod_replaced(&old_uid), bound).await?;
    Ok(ReplaceObservation {
        namespace: namespace.into(),
        pod,
        old_uid,
        new_uid: new.metadata.uid.unwrap_or_default(),
    })
}

/// The GameServer resource (`gameplane.local/v1alpha1`), addressed dynamically so faults work
/// against any operator build without compiling its types in.
pub fn gameserver_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("gameplane.local", "v1alpha1", "GameServer"),
        "gameservers",
    )
}

async fn patch_gameserver(
    client: &kube::Client,
    namespace: &str,
    server: &str,
    patch: serde_json::Value,
) -> Result<SpecChangeObservation, FaultError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pod_uid_before = pods
        .get_opt(&server_pod(server))
        .await
        .map_err(kube_error("get pod", namespace, &server_pod(server)))?
        .and_then(|p| p.metadata.uid);
    let servers: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &gameserver_resource());
    let patched = servers
        .patch(server, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(kube_error("patch GameServer", namespace, server))?;
    Ok(SpecChangeObservation {
        namespace: namespace.into(),
        server: server.into(),
        patch,
        pod_uid_before,
        generation_after: patched.metadata.generation,
    })
}

/// Suspends (`true`) or resumes (`false`) a GameServer.
pub async fn set_suspended(
    client: &kube::Client,
    namespace: &str,
    server: &str,
    suspended: bool,
) -> Result<SpecChangeObservation, FaultError> {
    patch_gameserver(
        client,
        namespace,
        server,
        serde_json::json!({ "spec": { "suspend": suspended } }),
    )
    .await
}

/// Puts a GameServer to sleep as an idle controller would: `spec.idle.enabled: true` (the intent)
/// and `status.idle.asleep: true` (the decision), without touching `spec.suspend`.
pub async fn set_idle_asleep(
    client: &kube::Client,
    namespace: &str,
    server: &str,
) -> Result<SpecChangeObservation, FaultError> {
    let change = patch_gameserver(
        client,
        namespace,
        server,
        serde_json::json!({ "spec": { "idle": { "enabled": true } } }),
    )
    .await?;
    let servers: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &gameserver_resource());
    servers
        .patch_status(
            server,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({
                "status": { "idle": { "asleep": true, "reason": "no players (rehearsal)" } }
            })),
        )
        .await
        .map_err(kube_error("patch GameServer status", namespace, server))?;
    Ok(change)
}

/// Points a GameServer at an image no node can pull ([`UNPULLABLE_IMAGE`] unless given).
pub async fn point_at_unpullable(
    client: &kube::Client,
    namespace: &str,
    server: &str,
    image: Option<&str>,
) -> Result<SpecChangeObservation, FaultError> {
    let image = image.unwrap_or(UNPULLABLE_IMAGE);
    patch_gameserver(
        client,
        namespace,
        server,
        serde_json::json!({ "spec": { "image": image } }),
    )
    .await
}
