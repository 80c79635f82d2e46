//! The GameServer controller: children from the template version, phase from the pod.

pub mod children;
pub mod phase;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use gameplane_api::conditions::{self, reasons, types};
use gameplane_api::names;
use gameplane_api::{GameServer, GameServerPhase, GameServerStatus, GameTemplate};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::kubeutil::{self, create_if_absent, get_opt, now};
use children::{Inputs, SPEC_HASH_ANNOTATION};
use phase::Intent;

/// Reconciles one GameServer.
#[expect(
    clippy::too_many_lines,
    reason = "one reconcile read in order: children, then the phase's action, then status and requeue"
)]
pub async fn reconcile(cached: Arc<GameServer>, ctx: Arc<Ctx>) -> Result<Action> {
    let ns = kubeutil::namespace_of(cached.as_ref())?;
    let name = cached.name_any();
    let client = ctx.client.clone();
    let servers: Api<GameServer> = Api::namespaced(client.clone(), &ns);
    // The controller's cache may lag behind the API server (after a restart it may even be
    // served a list of the past): children built from a stale spec would roll the server back
    // to a version it left. Every pass starts from the GameServer as the API server has it.
    let Some(server) = kubeutil::latest(&servers, cached.as_ref()).await? else {
        return Ok(Action::await_change());
    };
    let server = Arc::new(server);
    let templates: Api<GameTemplate> = Api::all(client.clone());
    let template_name = &server.spec.template_ref.name;
    let Some(template) = get_opt(&templates, "", template_name).await? else {
        let message = format!(
            "GameTemplate {template_name} not found: create it or fix spec.templateRef.name"
        );
        write_status(
            &servers,
            &server,
            GameServerPhase::Pending,
            reasons::TEMPLATE_NOT_FOUND,
            &message,
        )
        .await?;
        return Ok(Action::requeue(Duration::from_secs(2)));
    };
    let requested = server.spec.version.as_deref();
    let version = template.select_version(requested);
    if version.is_none() && requested.is_some_and(|r| !r.is_empty()) {
        let message = format!(
            "GameTemplate {template_name} has no version {:?}: pick one of its versions[].id",
            requested.unwrap_or_default()
        );
        write_status(
            &servers,
            &server,
            GameServerPhase::Pending,
            reasons::TEMPLATE_NOT_FOUND,
            &message,
        )
        .await?;
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    let owner = server
        .controller_owner_ref(&())
        .ok_or_else(|| Error::MissingField {
            kind: "GameServer",
            name: name.clone(),
            field: "metadata.uid",
        })?;
    let desired = children::build(&Inputs {
        server: &server,
        template: &template,
        version,
        owner,
        default_agent_image: &ctx.settings.agent_image,
    });
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    for pvc in &desired.pvcs {
        // Claims are created once and never updated: their UIDs are evidence.
        create_if_absent(&pvcs, pvc).await?;
    }
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    for svc in &desired.services {
        create_if_absent(&services, svc).await?;
    }
    apply_statefulset(&client, &ns, desired.statefulset).await?;

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pod = get_opt(&pods, &ns, &names::pod(&name)).await?;
    let intent = if server.suspended() {
        Intent::Suspend
    } else if server.idle_asleep() {
        Intent::Sleep
    } else {
        Intent::Run
    };
    let mut derived = phase::derive(intent, pod.as_ref());
    if ctx.mutant(crate::mutant::Mutant::PullFailureUnreported)
        && derived.ready.1 == reasons::IMAGE_PULL_FAILED
    {
        // The defect: a pull failure is shown as a server still starting.
        derived = phase::Derived {
            phase: GameServerPhase::Starting,
            ready: (false, reasons::STARTING, "no ready replica yet".into()),
            healthy: (true, reasons::RUNNING, String::new()),
            started_at: None,
        };
    }
    let mut status = server.status.clone().unwrap_or_default();
    let generation = server.metadata.generation;
    let t = now();
    let mut changed = status.phase != Some(derived.phase)
        || status.observed_generation != generation
        || status.started_at != derived.started_at;
    status.phase = Some(derived.phase);
    status.observed_generation = generation;
    status.started_at = derived.started_at;
    let (ok, reason, msg) = &derived.ready;
    changed |= conditions::set(
        &mut status.conditions,
        types::READY,
        *ok,
        reason,
        msg,
        generation,
        t.clone(),
    );
    let (ok, reason, msg) = &derived.healthy;
    changed |= conditions::set(
        &mut status.conditions,
        types::HEALTHY,
        *ok,
        reason,
        msg,
        generation,
        t.clone(),
    );
    let progressing = derived.phase == GameServerPhase::Starting;
    changed |= conditions::set(
        &mut status.conditions,
        types::PROGRESSING,
        progressing,
        if progressing {
            reasons::STARTING
        } else {
            reasons::SUCCEEDED
        },
        "",
        generation,
        t,
    );
    if changed {
        // Idle sleep and the last backup time are written by others: a merge patch without
        // them never puts back a stale value from this reconcile's copy.
        status.idle = None;
        status.last_backup_time = None;
        kubeutil::patch_status(&servers, &ns, &name, &status).await?;
    }
    Ok(match derived.phase {
        // Pod events wake us; the requeue is a backstop for missed ones.
        GameServerPhase::Running | GameServerPhase::Suspended | GameServerPhase::Stopped => {
            Action::requeue(Duration::from_secs(30))
        }
        _ => Action::requeue(Duration::from_secs(2)),
    })
}

async fn write_status(
    servers: &Api<GameServer>,
    server: &GameServer,
    phase: GameServerPhase,
    reason: &str,
    message: &str,
) -> Result<()> {
    let mut status: GameServerStatus = server.status.clone().unwrap_or_default();
    let generation = server.metadata.generation;
    let changed = conditions::set(
        &mut status.conditions,
        types::READY,
        false,
        reason,
        message,
        generation,
        now(),
    ) || status.phase != Some(phase);
    status.phase = Some(phase);
    status.observed_generation = generation;
    status.idle = None;
    status.last_backup_time = None;
    if changed {
        let ns = server.namespace().unwrap_or_default();
        kubeutil::patch_status(servers, &ns, &server.name_any(), &status).await?;
    }
    Ok(())
}

/// Creates the StatefulSet, or patches it when the desired spec's digest changed.
async fn apply_statefulset(
    client: &kube::Client,
    ns: &str,
    mut desired: StatefulSet,
) -> Result<()> {
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
    let name = desired.name_any();
    let spec_json = serde_json::to_string(&desired.spec).map_err(|source| Error::Serialize {
        name: name.clone(),
        source,
    })?;
    let mut hasher = DefaultHasher::new();
    spec_json.hash(&mut hasher);
    let digest = format!("{:016x}", hasher.finish());
    desired
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(SPEC_HASH_ANNOTATION.to_string(), digest.clone());
    match get_opt(&api, ns, &name).await? {
        None => create_if_absent(&api, &desired).await,
        Some(existing) if existing.annotations().get(SPEC_HASH_ANNOTATION) == Some(&digest) => {
            Ok(())
        }
        Some(_) => {
            let patch = json!({
                "metadata": { "annotations": { SPEC_HASH_ANNOTATION: digest } },
                "spec": {
                    "replicas": desired.spec.replicas,
                    "template": &desired.spec.template,
                },
            });
            kubeutil::merge_patch(&api, ns, &name, patch).await
        }
    }
}
