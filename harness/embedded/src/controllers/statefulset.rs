//! The StatefulSet controller: ordinal pods with stable names and claims, OrderedReady
//! scaling and RollingUpdate (highest ordinal first, each waiting for the previous to be
//! Ready, so a pod stuck on a broken revision blocks the rollout as on a real cluster).
//!
//! Revisions are named `<sts>-<hash of the pod template>`; ControllerRevision objects are
//! not kept, so a partitioned rollout recreates pods at the update revision.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, Volume,
};
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use super::{benign, controlled_by, controller_ref, reflect, run_loop};
use crate::events::{EventType, Recorder, reference};

/// Runs the StatefulSet controller until aborted.
pub async fn run(client: Client) {
    let wake = Arc::new(Notify::new());
    let (sets, _s) = reflect(Api::<StatefulSet>::all(client.clone()), wake.clone());
    let (pods, _p) = reflect(Api::<Pod>::all(client.clone()), wake.clone());
    let (claims, _c) = reflect(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        wake.clone(),
    );
    let _ = sets.wait_until_ready().await;
    let _ = pods.wait_until_ready().await;
    let _ = claims.wait_until_ready().await;
    let events = Recorder::new(client.clone(), "statefulset-controller");
    run_loop(wake, || async {
        let mut retry = None;
        for set in sets.state() {
            if let Err(error) = reconcile(&client, &events, &set, &pods, &claims).await {
                tracing::warn!(%error, statefulset = %set.name_any(), "reconcile failed; retrying");
                retry = Some(Duration::from_millis(500));
            }
        }
        retry
    })
    .await;
}

/// `<sts>-<hash>`: the revision a pod template is.
pub fn revision_name(set: &StatefulSet) -> String {
    let template = serde_json::to_string(&set.spec.template).unwrap_or_default();
    let hash = hex::encode(Sha256::digest(template.as_bytes()));
    format!("{}-{}", set.name_any(), &hash[..10])
}

fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn revision_of(pod: &Pod) -> Option<&str> {
    pod.labels()
        .get("controller-revision-hash")
        .map(String::as_str)
}

fn ordinal_of(set_name: &str, pod: &Pod) -> Option<i32> {
    pod.name_any()
        .strip_prefix(set_name)?
        .strip_prefix('-')?
        .parse()
        .ok()
}

async fn reconcile(
    client: &Client,
    events: &Recorder,
    set: &StatefulSet,
    pods: &Store<Pod>,
    claims: &Store<PersistentVolumeClaim>,
) -> Result<(), kube::Error> {
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let ns = set.namespace().unwrap_or_default();
    let name = set.name_any();
    let uid = set.uid().unwrap_or_default();
    let spec = &set.spec;
    let update_revision = revision_name(set);
    let current_revision = set
        .status
        .as_ref()
        .and_then(|s| s.current_revision.clone())
        .unwrap_or_else(|| update_revision.clone());
    let mut owned: BTreeMap<i32, Arc<Pod>> = BTreeMap::new();
    for pod in pods.state() {
        if pod.namespace().as_deref() == Some(ns.as_str())
            && controlled_by(pod.as_ref(), &uid)
            && let Some(ordinal) = ordinal_of(&name, &pod)
        {
            owned.insert(ordinal, pod);
        }
    }
    let pass = Pass {
        set,
        pod_api: Api::namespaced(client.clone(), &ns),
        replicas: spec.replicas.unwrap_or(1).max(0),
        ordered: spec.pod_management_policy.as_deref() != Some("Parallel"),
        name,
        owned,
        update_revision,
    };
    pass.replace_finished().await?;
    pass.create_missing(client, events, claims).await?;
    pass.scale_down().await?;
    pass.roll().await?;
    let status = pass.status(current_revision);
    if set.status.as_ref() != Some(&status) {
        let api: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
        match api
            .patch_status(
                &pass.name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": status})),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if benign(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One reconcile pass over a StatefulSet and the pods it owns (by ordinal).
struct Pass<'a> {
    set: &'a StatefulSet,
    name: String,
    pod_api: Api<Pod>,
    owned: BTreeMap<i32, Arc<Pod>>,
    replicas: i32,
    /// `OrderedReady` (not `Parallel`) pod management.
    ordered: bool,
    update_revision: String,
}

impl Pass<'_> {
    /// Failed pods are replaced.
    async fn replace_finished(&self) -> Result<(), kube::Error> {
        for pod in self.owned.values() {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            if matches!(phase, Some("Failed") | Some("Succeeded"))
                && pod.metadata.deletion_timestamp.is_none()
            {
                delete_pod(&self.pod_api, pod).await?;
            }
        }
        Ok(())
    }

    /// Create missing pods in ordinal order; OrderedReady waits for each to be Ready.
    async fn create_missing(
        &self,
        client: &Client,
        events: &Recorder,
        claims: &Store<PersistentVolumeClaim>,
    ) -> Result<(), kube::Error> {
        let (set, name) = (self.set, &self.name);
        for ordinal in 0..self.replicas {
            match self.owned.get(&ordinal) {
                None => {
                    ensure_claims(client, set, ordinal, claims).await?;
                    let pod = new_pod(set, ordinal, &self.update_revision);
                    match self.pod_api.create(&PostParams::default(), &pod).await {
                        Ok(_) => events.emit(
                            reference(set, None),
                            EventType::Normal,
                            "SuccessfulCreate",
                            format!("create Pod {name}-{ordinal} in StatefulSet {name} successful"),
                        ),
                        Err(e) if benign(&e) => {}
                        Err(e) => return Err(e),
                    }
                    if self.ordered {
                        break;
                    }
                }
                Some(pod) if self.ordered && !is_ready(pod) => break,
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Pods at or above `replicas`, highest ordinal first.
    fn condemned(&self) -> Vec<&Arc<Pod>> {
        self.owned
            .range(self.replicas..)
            .rev()
            .map(|(_, p)| p)
            .collect()
    }

    /// Whether every pod below `replicas` is Ready.
    fn healthy(&self) -> bool {
        self.owned.range(..self.replicas).all(|(_, p)| is_ready(p))
    }

    /// Scale down, highest ordinal first, one at a time, only while the rest are healthy.
    async fn scale_down(&self) -> Result<(), kube::Error> {
        let condemned = self.condemned();
        let healthy = self.healthy();
        if let Some(first) = condemned.first() {
            if !self.ordered {
                for pod in &condemned {
                    if pod.metadata.deletion_timestamp.is_none() {
                        delete_pod(&self.pod_api, pod).await?;
                    }
                }
            } else if first.metadata.deletion_timestamp.is_none() && healthy {
                delete_pod(&self.pod_api, first).await?;
            }
        }
        Ok(())
    }

    /// Rolling update: only when every replica exists and is Ready, highest ordinal first.
    async fn roll(&self) -> Result<(), kube::Error> {
        let spec = &self.set.spec;
        let (owned, replicas) = (&self.owned, self.replicas);
        let update_revision = &self.update_revision;
        let rolling = spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.type_.as_deref())
            .unwrap_or("RollingUpdate")
            == "RollingUpdate";
        let partition = spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.rolling_update.as_ref())
            .and_then(|r| r.partition)
            .unwrap_or(0);
        let all_there =
            (0..replicas).all(|o| owned.contains_key(&o)) && self.condemned().is_empty();
        if rolling && all_there && (!self.ordered || self.healthy()) {
            let stale = owned
                .range(partition.max(0)..replicas)
                .rev()
                .map(|(_, p)| p)
                .find(|p| revision_of(p) != Some(update_revision.as_str()));
            if let Some(pod) = stale
                && pod.metadata.deletion_timestamp.is_none()
            {
                tracing::debug!(pod = %pod.name_any(), revision = %update_revision, "rolling update");
                delete_pod(&self.pod_api, pod).await?;
            }
        }
        Ok(())
    }

    /// The status this pass observed; the current revision becomes the update revision once
    /// every replica runs it and is Ready.
    fn status(&self, current_revision: String) -> StatefulSetStatus {
        let (replicas, update_revision) = (self.replicas, &self.update_revision);
        let created: Vec<&Arc<Pod>> = self.owned.values().collect();
        let ready = created.iter().filter(|p| is_ready(p)).count() as i32;
        let live = |p: &&&Arc<Pod>| p.metadata.deletion_timestamp.is_none();
        let updated = created
            .iter()
            .filter(live)
            .filter(|p| revision_of(p) == Some(update_revision.as_str()))
            .count() as i32;
        let mut current = created
            .iter()
            .filter(live)
            .filter(|p| revision_of(p) == Some(current_revision.as_str()))
            .count() as i32;
        let mut current_revision = current_revision;
        let count = created.len() as i32;
        if updated == replicas && ready == replicas && count == replicas {
            current_revision = update_revision.clone();
            current = updated;
        }
        StatefulSetStatus {
            replicas: count,
            ready_replicas: Some(ready),
            available_replicas: Some(ready),
            current_replicas: Some(current),
            updated_replicas: Some(updated),
            current_revision: Some(current_revision),
            update_revision: Some(update_revision.clone()),
            observed_generation: self.set.metadata.generation,
            collision_count: Some(0),
            conditions: None,
        }
    }
}

async fn delete_pod(api: &Api<Pod>, pod: &Pod) -> Result<(), kube::Error> {
    match api.delete(&pod.name_any(), &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(e) if benign(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

fn claim_name(template: &str, set: &str, ordinal: i32) -> String {
    format!("{template}-{set}-{ordinal}")
}

async fn ensure_claims(
    client: &Client,
    set: &StatefulSet,
    ordinal: i32,
    claims: &Store<PersistentVolumeClaim>,
) -> Result<(), kube::Error> {
    let ns = set.namespace().unwrap_or_default();
    let spec = set.spec.clone();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    let delete_with_set = spec
        .persistent_volume_claim_retention_policy
        .as_ref()
        .and_then(|p| p.when_deleted.as_deref())
        == Some("Delete");
    for template in spec.volume_claim_templates.iter().flatten() {
        let tpl_name = template.metadata.name.clone().unwrap_or_default();
        let name = claim_name(&tpl_name, &set.name_any(), ordinal);
        if claims.get(&ObjectRef::new(&name).within(&ns)).is_some() {
            continue;
        }
        let mut labels = template.metadata.labels.clone().unwrap_or_default();
        labels.extend(spec.selector.match_labels.clone().unwrap_or_default());
        let claim = PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(ns.clone()),
                labels: Some(labels),
                annotations: template.metadata.annotations.clone(),
                owner_references: delete_with_set.then(|| {
                    let mut owner = controller_ref(set);
                    owner.block_owner_deletion = Some(true);
                    vec![owner]
                }),
                ..Default::default()
            },
            spec: template.spec.clone(),
            status: None,
        };
        match api.create(&PostParams::default(), &claim).await {
            Ok(_) => {}
            Err(e) if benign(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn new_pod(set: &StatefulSet, ordinal: i32, revision: &str) -> Pod {
    let spec = set.spec.clone();
    let set_name = set.name_any();
    let name = format!("{set_name}-{ordinal}");
    let template_meta = spec.template.metadata.clone().unwrap_or_default();
    let mut labels = template_meta.labels.clone().unwrap_or_default();
    labels.insert("controller-revision-hash".into(), revision.to_string());
    labels.insert("statefulset.kubernetes.io/pod-name".into(), name.clone());
    labels.insert("apps.kubernetes.io/pod-index".into(), ordinal.to_string());
    let mut pod_spec = spec.template.spec.clone().unwrap_or_default();
    pod_spec.hostname = Some(name.clone());
    if !spec.service_name.clone().unwrap_or_default().is_empty() {
        pod_spec.subdomain = spec.service_name.clone();
    }
    let mut volumes: Vec<Volume> = pod_spec.volumes.take().unwrap_or_default();
    for template in spec.volume_claim_templates.iter().flatten() {
        let tpl_name = template.metadata.name.clone().unwrap_or_default();
        volumes.retain(|v| v.name != tpl_name);
        volumes.push(Volume {
            name: tpl_name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(&tpl_name, &set_name, ordinal),
                read_only: None,
            }),
            ..Default::default()
        });
    }
    pod_spec.volumes = (!volumes.is_empty()).then_some(volumes);
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: set.namespace(),
            labels: Some(labels),
            annotations: template_meta.annotations,
            owner_references: Some(vec![controller_ref(set)]),
            ..Default::default()
        },
        spec: Some(pod_spec),
        status: None,
    }
}
