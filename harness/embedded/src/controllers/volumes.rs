//! The volume controller: local-path style provisioning for the `standard` StorageClass.
//!
//! A claim of a class provisioned by [`PROVISIONER`] is bound when it may be (at once for
//! `Immediate`, once the scheduler marked it with its selected node for
//! `WaitForFirstConsumer`): PV `pvc-<claim uid>` backed by `<state>/volumes/pvc-<claim uid>`,
//! `claimRef`, both `Bound`. A claim without a class gets the default class first, as the
//! DefaultStorageClass admission plugin does. When a claim goes away, its PV and directory go
//! with it (reclaim `Delete`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, Pod, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::sync::Notify;

use super::{NODE_NAME, PROVISIONER, benign, reflect, run_loop};

/// Runs the volume controller until aborted.
pub async fn run(client: Client, state_dir: PathBuf) {
    let wake = Arc::new(Notify::new());
    let (claims, _c) = reflect(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        wake.clone(),
    );
    let (volumes, _v) = reflect(Api::<PersistentVolume>::all(client.clone()), wake.clone());
    let (classes, _s) = reflect(Api::<StorageClass>::all(client.clone()), wake.clone());
    let (pods, _p) = reflect(Api::<Pod>::all(client.clone()), wake.clone());
    let _ = pods.wait_until_ready().await;
    let _ = claims.wait_until_ready().await;
    let _ = volumes.wait_until_ready().await;
    let _ = classes.wait_until_ready().await;
    run_loop(wake, || {
        reconcile(&client, &state_dir, &claims, &volumes, &classes, &pods)
    })
    .await;
}

fn default_class(classes: &Store<StorageClass>) -> Option<Arc<StorageClass>> {
    classes.state().into_iter().find(|c| {
        c.annotations()
            .get("storageclass.kubernetes.io/is-default-class")
            .is_some_and(|v| v == "true")
    })
}

/// The directory backing the PV of claim `uid`.
pub fn volume_dir(state_dir: &Path, claim_uid: &str) -> PathBuf {
    state_dir.join("volumes").join(format!("pvc-{claim_uid}"))
}

async fn reconcile(
    client: &Client,
    state_dir: &Path,
    claims: &Store<PersistentVolumeClaim>,
    volumes: &Store<PersistentVolume>,
    classes: &Store<StorageClass>,
    pods: &Store<Pod>,
) -> Option<Duration> {
    let mut retry = None;
    for claim in claims.state() {
        if let Err(error) = protect(client, &claim, pods).await {
            tracing::warn!(%error, claim = %claim.name_any(), "pvc-protection update failed; retrying");
            retry = Some(Duration::from_millis(500));
        }
        if claim.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if let Some(after) = bind(client, state_dir, &claim, volumes, classes).await {
            retry = Some(after);
        }
    }
    // Reclaim: a provisioned PV whose claim is gone goes, with its directory.
    let pv_api: Api<PersistentVolume> = Api::all(client.clone());
    for pv in volumes.state() {
        if let Some(after) = reclaim(client, state_dir, &pv_api, &pv, claims).await {
            retry = Some(after);
        }
    }
    retry
}

/// Gives a claim without a class the default one, or provisions and binds a claim of a
/// class this controller provisions; returns when to retry after a failure.
async fn bind(
    client: &Client,
    state_dir: &Path,
    claim: &PersistentVolumeClaim,
    volumes: &Store<PersistentVolume>,
    classes: &Store<StorageClass>,
) -> Option<Duration> {
    let ns = claim.namespace().unwrap_or_default();
    let name = claim.name_any();
    let uid = claim.uid().unwrap_or_default();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    let spec = claim.spec.clone().unwrap_or_default();
    let class = match &spec.storage_class_name {
        Some(name) => classes.get(&ObjectRef::new(name)),
        None => {
            if let Some(default) = default_class(classes) {
                let patch = json!({"spec": {"storageClassName": default.name_any()}});
                if let Err(error) = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    && !benign(&error)
                {
                    tracing::warn!(%error, claim = %name, "cannot set the default storage class");
                }
            }
            return None;
        }
    };
    let class = class?;
    if class.provisioner != PROVISIONER {
        return None;
    }
    let pv_name = format!("pvc-{uid}");
    let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
    if spec.volume_name.is_some() && phase == Some("Bound") {
        return None;
    }
    let wffc = class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer");
    if wffc
        && !claim
            .annotations()
            .contains_key("volume.kubernetes.io/selected-node")
    {
        if phase != Some("Pending") {
            let patch = json!({"status": {"phase": "Pending"}});
            let _ = api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
        }
        return None;
    }
    if let Err(error) = provision(client, state_dir, claim, &class, &pv_name, volumes).await {
        tracing::warn!(%error, claim = %name, "provisioning failed; retrying");
        return Some(Duration::from_millis(500));
    }
    let storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage").cloned())
        .unwrap_or_else(|| Quantity("1Gi".into()));
    let bind = json!({
        "metadata": {"annotations": {
            "pv.kubernetes.io/bind-completed": "yes",
            "pv.kubernetes.io/bound-by-controller": "yes",
            "volume.beta.kubernetes.io/storage-provisioner": PROVISIONER,
            "volume.kubernetes.io/storage-provisioner": PROVISIONER,
        }},
        "spec": {"volumeName": pv_name},
    });
    if let Err(error) = api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&bind))
        .await
    {
        if !benign(&error) {
            tracing::warn!(%error, claim = %name, "cannot bind claim");
            return Some(Duration::from_millis(500));
        }
        return None;
    }
    let status = json!({"status": {
        "phase": "Bound",
        "accessModes": spec.access_modes.clone().unwrap_or_else(|| vec!["ReadWriteOnce".into()]),
        "capacity": {"storage": storage},
    }});
    if let Err(error) = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        && !benign(&error)
    {
        tracing::warn!(%error, claim = %name, "cannot set claim status");
        return Some(Duration::from_millis(500));
    }
    None
}

/// Deletes (reclaim `Delete`, with its directory) or releases a provisioned PV whose claim is
/// gone; returns when to retry after a failure.
async fn reclaim(
    client: &Client,
    state_dir: &Path,
    pv_api: &Api<PersistentVolume>,
    pv: &PersistentVolume,
    claims: &Store<PersistentVolumeClaim>,
) -> Option<Duration> {
    let spec = pv.spec.clone().unwrap_or_default();
    let provisioned = pv
        .annotations()
        .get("pv.kubernetes.io/provisioned-by")
        .is_some_and(|p| p == PROVISIONER);
    if !provisioned || pv.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let claim_ref = spec.claim_ref?;
    let key = ObjectRef::new(claim_ref.name.as_deref().unwrap_or_default())
        .within(claim_ref.namespace.as_deref().unwrap_or_default());
    // A terminating claim still held by pvc-protection keeps its volume.
    let claim_alive = claims.get(&key).is_some_and(|c| c.uid() == claim_ref.uid);
    if claim_alive {
        return None;
    }
    // The store may lag a fresh claim: confirm with the server before deleting data.
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(
        client.clone(),
        claim_ref.namespace.as_deref().unwrap_or_default(),
    );
    match claims_api
        .get_opt(claim_ref.name.as_deref().unwrap_or_default())
        .await
    {
        Ok(Some(c)) if c.uid() == claim_ref.uid => return None,
        Ok(_) => {}
        Err(error) => {
            tracing::warn!(%error, "cannot check claim of a volume");
            return Some(Duration::from_secs(1));
        }
    }
    if spec.persistent_volume_reclaim_policy.as_deref() == Some("Delete") {
        let name = pv.name_any();
        if let Some(path) = spec.host_path.as_ref().map(|h| PathBuf::from(&h.path))
            && path.starts_with(state_dir)
        {
            let _ = std::fs::remove_dir_all(&path);
        }
        match pv_api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracing::debug!(pv = %name, "reclaimed volume of deleted claim"),
            Err(error) if benign(&error) => {}
            Err(error) => {
                tracing::warn!(%error, pv = %name, "cannot delete released volume");
                return Some(Duration::from_secs(1));
            }
        }
    } else if pv.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Released") {
        let patch = json!({"status": {"phase": "Released"}});
        let _ = pv_api
            .patch_status(
                &pv.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await;
    }
    None
}

/// The finalizer that keeps a claim (and so its data) while a pod still uses it.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";

/// Whether a pod that has not finished uses `claim`.
fn in_use(claim: &PersistentVolumeClaim, pods: &Store<Pod>) -> bool {
    let ns = claim.namespace();
    let name = claim.name_any();
    pods.state().iter().any(|pod| {
        pod.namespace() == ns
            && !matches!(
                pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded") | Some("Failed")
            )
            && pod
                .spec
                .as_ref()
                .and_then(|s| s.volumes.as_ref())
                .is_some_and(|vs| {
                    vs.iter().any(|v| {
                        v.persistent_volume_claim
                            .as_ref()
                            .is_some_and(|c| c.claim_name == name)
                    })
                })
    })
}

/// pvc-protection as in Kubernetes: every claim carries the finalizer; a deleted claim loses
/// it (and goes) only once no unfinished pod uses it.
async fn protect(
    client: &Client,
    claim: &PersistentVolumeClaim,
    pods: &Store<Pod>,
) -> Result<(), kube::Error> {
    let finalizers = claim.finalizers().to_vec();
    let has = finalizers.iter().any(|f| f == PVC_PROTECTION);
    let deleting = claim.metadata.deletion_timestamp.is_some();
    let wanted: Vec<String> = if !deleting && !has {
        finalizers
            .iter()
            .cloned()
            .chain([PVC_PROTECTION.to_string()])
            .collect()
    } else if deleting && has && !in_use(claim, pods) {
        finalizers
            .iter()
            .filter(|f| *f != PVC_PROTECTION)
            .cloned()
            .collect()
    } else {
        return Ok(());
    };
    let api: Api<PersistentVolumeClaim> =
        Api::namespaced(client.clone(), &claim.namespace().unwrap_or_default());
    // The resourceVersion makes this a compare-and-swap on the finalizer list.
    let patch = json!({"metadata": {
        "finalizers": wanted,
        "resourceVersion": claim.resource_version(),
    }});
    match api
        .patch(
            &claim.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if benign(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn provision(
    client: &Client,
    state_dir: &Path,
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    pv_name: &str,
    volumes: &Store<PersistentVolume>,
) -> Result<(), kube::Error> {
    let api: Api<PersistentVolume> = Api::all(client.clone());
    let uid = claim.uid().unwrap_or_default();
    let dir = volume_dir(state_dir, &uid);
    if let Err(error) = std::fs::create_dir_all(&dir) {
        tracing::warn!(%error, dir = %dir.display(), "cannot create volume directory");
    }
    if volumes.get(&ObjectRef::new(pv_name)).is_none() && api.get_opt(pv_name).await?.is_none() {
        let spec = claim.spec.clone().unwrap_or_default();
        let storage = spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage").cloned())
            .unwrap_or_else(|| Quantity("1Gi".into()));
        let pv = PersistentVolume {
            metadata: ObjectMeta {
                name: Some(pv_name.to_string()),
                annotations: Some(BTreeMap::from([
                    (
                        "pv.kubernetes.io/provisioned-by".to_string(),
                        PROVISIONER.to_string(),
                    ),
                    (
                        "local.path.provisioner/selected-node".to_string(),
                        NODE_NAME.to_string(),
                    ),
                ])),
                finalizers: None,
                ..Default::default()
            },
            spec: Some(PersistentVolumeSpec {
                access_modes: Some(
                    spec.access_modes
                        .clone()
                        .unwrap_or_else(|| vec!["ReadWriteOnce".into()]),
                ),
                capacity: Some(BTreeMap::from([("storage".to_string(), storage)])),
                claim_ref: Some(ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("PersistentVolumeClaim".into()),
                    name: claim.metadata.name.clone(),
                    namespace: claim.metadata.namespace.clone(),
                    uid: Some(uid.clone()),
                    resource_version: claim.metadata.resource_version.clone(),
                    ..Default::default()
                }),
                host_path: Some(HostPathVolumeSource {
                    path: dir.to_string_lossy().into_owned(),
                    type_: Some("DirectoryOrCreate".into()),
                }),
                node_affinity: Some(VolumeNodeAffinity {
                    required: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: Some(vec![NodeSelectorRequirement {
                                key: "kubernetes.io/hostname".into(),
                                operator: "In".into(),
                                values: Some(vec![NODE_NAME.into()]),
                            }]),
                            ..Default::default()
                        }],
                    }),
                }),
                persistent_volume_reclaim_policy: Some(
                    class
                        .reclaim_policy
                        .clone()
                        .unwrap_or_else(|| "Delete".into()),
                ),
                storage_class_name: Some(class.name_any()),
                volume_mode: Some(
                    spec.volume_mode
                        .clone()
                        .unwrap_or_else(|| "Filesystem".into()),
                ),
                ..Default::default()
            }),
            status: None,
        };
        match api.create(&PostParams::default(), &pv).await {
            Ok(_) => {}
            Err(error) if benign(&error) => {}
            Err(error) => return Err(error),
        }
    }
    let status = json!({"status": {"phase": "Bound"}});
    api.patch_status(pv_name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}
