//! The controllers of the embedded cluster, each a kube-rs client of the API server: watch
//! into reflector stores, reconcile from the stores, write through the API (status via the
//! status subresource), exactly as they would against any API server.

pub mod daemonset;
pub mod deployment;
pub mod endpointslice;
pub mod job;
pub mod replicaset;
pub mod scheduler;
pub mod statefulset;
pub mod volumes;

use kube::Resource;

pub use crate::node::{NODE_NAME, PROVISIONER};
pub use crate::watch::{AbortOnDrop, reflect, run_loop};

/// The controller ownerReference of `owner`.
pub fn controller_ref<K: Resource<DynamicType = ()>>(
    owner: &K,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner.meta().name.clone().unwrap_or_default(),
        uid: owner.meta().uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Whether `obj` is controlled by the object with `uid`.
pub fn controlled_by<K: Resource>(obj: &K, uid: &str) -> bool {
    obj.meta()
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// Whether an API error is "already exists" / "not found" / "conflict" (benign races
/// between a stale store and the server).
pub fn benign(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(e) if e.code == 409 || e.code == 404)
}

/// Merges `status` into object `name`'s status subresource; a conflict or a vanished object is
/// benign (the next reconcile sees the newer object).
pub async fn merge_status<K>(
    api: &kube::Api<K>,
    name: &str,
    status: &impl serde::Serialize,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = serde_json::json!({ "status": status });
    match api
        .patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if benign(&e) => Ok(()),
        Err(e) => Err(e),
    }
}
