//! Stopping, starting and restarting the operator under test where it runs as a Deployment
//! (Kind and existing clusters): the default of [`super::Backend::stop_operator`],
//! [`super::Backend::start_operator`] and [`super::Backend::restart_operator`].
//!
//! A restart deletes the operator's pod with no grace period (as a node or OOM kill would) and
//! lets the Deployment bring a new one; a stop scales the Deployment to zero first, so nothing
//! replaces the pod until [`start`] scales it back to one.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::BackendError;
use crate::wait::conditions;

/// The namespace the operator under test runs in (the chart's `gameplane-system`); the
/// deployment layer installs into it (`deploy::SYSTEM_NAMESPACE` is this).
pub const SYSTEM_NAMESPACE: &str = "gameplane-system";
/// Gameplane's operator Deployment (`deploy::profile::GAMEPLANE_DEPLOYMENT` is this).
pub const GAMEPLANE_DEPLOYMENT: &str = "gameplane-operator";
/// The reference operator's Deployment (`deploy::reference_operator::DEPLOYMENT` is this).
pub const REFERENCE_DEPLOYMENT: &str = "reference-operator";

/// How long the operator may take to go or to come back.
const BOUND: Duration = Duration::from_secs(120);

/// The operator's Deployment in [`SYSTEM_NAMESPACE`] (Gameplane's or the reference operator's).
async fn deployment(client: &kube::Client) -> Result<Deployment, BackendError> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    for name in [GAMEPLANE_DEPLOYMENT, REFERENCE_DEPLOYMENT] {
        if let Some(d) = api.get_opt(name).await.map_err(|e| {
            BackendError::kube(format!("get Deployment {SYSTEM_NAMESPACE}/{name}"), e)
        })? {
            return Ok(d);
        }
    }
    Err(BackendError::Setup(format!(
        "no operator Deployment in namespace {SYSTEM_NAMESPACE}: deploy the operator under test first"
    )))
}

/// The label selector of `d`'s pods.
fn selector(d: &Deployment) -> String {
    d.spec
        .selector
        .match_labels
        .as_ref()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

async fn pods(client: &kube::Client, d: &Deployment) -> Result<Vec<Pod>, BackendError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let list = api
        .list(&ListParams::default().labels(&selector(d)))
        .await
        .map_err(|e| BackendError::kube(format!("list operator pods in {SYSTEM_NAMESPACE}"), e))?;
    Ok(list.items)
}

fn uids(pods: &[Pod]) -> Vec<String> {
    pods.iter().filter_map(|p| p.metadata.uid.clone()).collect()
}

async fn delete_pods(client: &kube::Client, pods: &[Pod]) -> Result<(), BackendError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &now).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(BackendError::kube(
                    format!("delete operator pod {SYSTEM_NAMESPACE}/{name}"),
                    e,
                ));
            }
        }
        crate::wait::await_condition(&api, &name, conditions::deleted(), BOUND)
            .await
            .map_err(|e| BackendError::Setup(e.to_string()))?;
    }
    Ok(())
}

async fn scale(client: &kube::Client, d: &Deployment, replicas: i32) -> Result<(), BackendError> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let name = d.metadata.name.clone().unwrap_or_default();
    let patch = json!({"spec": {"replicas": replicas}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| {
            BackendError::kube(format!("scale Deployment {SYSTEM_NAMESPACE}/{name}"), e)
        })?;
    Ok(())
}

fn ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Waits until a ready operator pod that `old` does not name exists; returns the pods' UIDs.
/// Pods of a Deployment have generated names, so this polls the list (every 100 ms) rather
/// than watching one object.
async fn await_ready(
    client: &kube::Client,
    d: &Deployment,
    old: Vec<String>,
) -> Result<Vec<String>, BackendError> {
    let start = std::time::Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let now = pods(client, d).await?;
        let fresh = now
            .iter()
            .any(|p| ready(p) && p.metadata.uid.as_ref().is_some_and(|u| !old.contains(u)));
        if fresh {
            return Ok(uids(&now));
        }
        if start.elapsed() > BOUND {
            return Err(BackendError::Setup(format!(
                "no ready operator pod other than {old:?} in {SYSTEM_NAMESPACE} within {BOUND:?}; pods now: {:?}",
                uids(&now)
            )));
        }
    }
}

/// Kills the operator: scale to zero, delete its pods with no grace.
pub async fn stop(client: kube::Client) -> Result<Value, BackendError> {
    let d = deployment(&client).await?;
    let before = pods(&client, &d).await?;
    scale(&client, &d, 0).await?;
    delete_pods(&client, &before).await?;
    Ok(json!({"deployment": d.metadata.name, "stopped_pods": uids(&before)}))
}

/// Scales the operator back to one replica and waits until it is available.
pub async fn start(client: kube::Client) -> Result<Value, BackendError> {
    let d = deployment(&client).await?;
    scale(&client, &d, 1).await?;
    let now = await_ready(&client, &d, Vec::new()).await?;
    Ok(json!({"deployment": d.metadata.name, "pods": now}))
}

/// Deletes the operator's pods with no grace and waits for the Deployment's replacement.
pub async fn restart(client: kube::Client) -> Result<Value, BackendError> {
    let d = deployment(&client).await?;
    let before = pods(&client, &d).await?;
    delete_pods(&client, &before).await?;
    let old = uids(&before);
    let now = await_ready(&client, &d, old.clone()).await?;
    Ok(json!({"deployment": d.metadata.name, "old_pods": old, "new_pods": now}))
}
