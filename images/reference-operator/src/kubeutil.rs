//! Small, idempotent API steps the reconcilers are built from.

use std::collections::BTreeMap;
use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::error::{Error, KubeContext, Result};

/// The field manager of every write.
pub const MANAGER: &str = "gameplane-reference-operator";

/// Now, as a Kubernetes time.
pub fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// Now, formatted for an annotation.
pub fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

fn kind<K: Resource<DynamicType = ()>>() -> &'static str {
    // `K::kind(&())` borrows from a static string for typed resources.
    match K::kind(&()) {
        std::borrow::Cow::Borrowed(k) => k,
        std::borrow::Cow::Owned(_) => "object",
    }
}

/// `GET`, with 404 as `None`.
pub async fn get_opt<K>(api: &Api<K>, ns: &str, name: &str) -> Result<Option<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    api.get_opt(name).await.ctx("get", kind::<K>(), ns, name)
}

/// The API server's current copy of `obj` (`None` once it is gone).
///
/// A reconcile is triggered from the controller's cache, which may lag behind a status this
/// operator wrote moments ago; a phase machine that acts on a stale phase repeats a step that
/// already happened (e.g. re-judges a source after its copy began). Reading the object back
/// first makes every pass start from the phase last written.
pub async fn latest<K>(api: &Api<K>, obj: &K) -> Result<Option<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let ns = namespace_of(obj)?;
    get_opt(api, &ns, &obj.name_any()).await
}

/// Creates `obj` unless an object of that name exists (then leaves it untouched). Only a 409
/// whose reason is `AlreadyExists` says that: a 409 `Conflict` (the write lost a race with
/// another writer) created nothing, and is an error the reconcile retries.
pub async fn create_if_absent<K>(api: &Api<K>, obj: &K) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    create_unless(api, obj, |s| s.reason == "AlreadyExists").await
}

/// [`create_if_absent`] as mutant `conflict-taken-for-exists` has it: any 409 is taken for "it
/// exists already", also a `Conflict` that created nothing.
pub async fn create_taking_any_conflict_for_exists<K>(api: &Api<K>, obj: &K) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    create_unless(api, obj, |_| true).await
}

/// Creates `obj`; a 409 that `exists` says means the object is there is no error.
async fn create_unless<K>(
    api: &Api<K>,
    obj: &K,
    exists: impl Fn(&kube::core::Status) -> bool,
) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = obj.name_any();
    let ns = obj.namespace().unwrap_or_default();
    match api
        .create(
            &PostParams {
                field_manager: Some(MANAGER.into()),
                ..Default::default()
            },
            obj,
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 && exists(&s) => Ok(()),
        Err(e) => Err(e).ctx("create", kind::<K>(), &ns, &name),
    }
}

/// Merge-patches `status` of `name`.
pub async fn patch_status<K>(
    api: &Api<K>,
    ns: &str,
    name: &str,
    status: impl Serialize,
) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let patch = json!({ "status": status });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .ctx("patch status of", kind::<K>(), ns, name)
}

/// Merge-patches annotations of `name` (`None` removes one).
pub async fn annotate<K>(
    api: &Api<K>,
    ns: &str,
    name: &str,
    annotations: BTreeMap<&str, Option<String>>,
) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let patch = json!({ "metadata": { "annotations": annotations } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .ctx("annotate", kind::<K>(), ns, name)
}

/// Merge-patches `name` with `patch`.
pub async fn merge_patch<K>(
    api: &Api<K>,
    ns: &str,
    name: &str,
    patch: serde_json::Value,
) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .ctx("patch", kind::<K>(), ns, name)
}

/// Deletes `name` and its dependents in the background; a missing object is fine.
pub async fn delete_background<K>(api: &Api<K>, ns: &str, name: &str) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e).ctx("delete", kind::<K>(), ns, name),
    }
}

/// The namespace of a namespaced object.
pub fn namespace_of<K: Resource>(obj: &K) -> Result<String> {
    obj.meta()
        .namespace
        .clone()
        .ok_or_else(|| Error::MissingField {
            kind: "object",
            name: obj.meta().name.clone().unwrap_or_default(),
            field: "metadata.namespace",
        })
}
