//! The Module controller: installs a module bundle pulled from its ModuleSource by reference,
//! verifying the pinned digest first (CONTRACT C.8).
//!
//! A bundle is an OCI artifact `<oci.url>/<name>:<version>` whose one layer is the bundle
//! document (the GameTemplate it installs). The manifest's digest is computed over the bytes
//! served; with `spec.digest` set and different, the Module ends `Failed` with reason
//! `DigestMismatch` naming both digests, and no GameTemplate is written or changed. Otherwise the
//! layer is fetched and its bytes hashed: bytes other than the digest the manifest names (a
//! registry or proxy that serves the pinned manifest but other content) fail the same way,
//! `DigestMismatch` naming both. Only then is the GameTemplate named after the Module (owned by
//! it) created or updated from it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gameplane_api::conditions;
use gameplane_api::module::{
    BUNDLE_LAYER_MEDIA_TYPE, BundleDocument, DIGEST_MISMATCH, INSTALLED, Module, ModulePhase,
    ModuleSource, ModuleStatus, PULL_FAILED,
};
use gameplane_api::{GameTemplate, GameTemplateSpec};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ObjectMeta};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::context::Ctx;
use crate::error::Result;
use crate::kubeutil;
use crate::mutant::Mutant;

/// The manifest media types asked for.
const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json";
/// The bound of one registry request.
const FETCH_BOUND: Duration = Duration::from_secs(20);

/// Why a bundle cannot be installed (the Module's `Ready` reason and message).
struct Refusal {
    reason: &'static str,
    message: String,
}

fn pull_failed(message: String) -> Refusal {
    Refusal {
        reason: PULL_FAILED,
        message,
    }
}

/// `sha256:<hex>` of `bytes`.
fn digest_of(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// `GET http://<host>/v2/<path>` within [`FETCH_BOUND`].
async fn fetch(host: &str, path: &str) -> Result<Bytes, Refusal> {
    let url = format!("http://{host}/v2/{path}");
    let client = HttpClient::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let request = http::Request::get(&url)
        .header(http::header::ACCEPT, ACCEPT)
        .body(Empty::new())
        .map_err(|e| pull_failed(format!("GET {url}: {e}")))?;
    let answer = tokio::time::timeout(FETCH_BOUND, async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok::<_, String>((status, body))
    })
    .await
    .map_err(|_| pull_failed(format!("GET {url}: no answer within {FETCH_BOUND:?}")))?
    .map_err(|e| pull_failed(format!("GET {url}: {e}")))?;
    match answer {
        (http::StatusCode::OK, body) => Ok(body),
        (status, _) => Err(pull_failed(format!("GET {url}: HTTP {status}"))),
    }
}

/// What the pull resolved: the served manifest digest, and the bundle when it may be installed.
struct Pulled {
    reference: String,
    served: String,
    bundle: Result<BundleDocument, Refusal>,
}

/// Resolves the Module's bundle in its source and, unless the pin refuses it, reads the bundle.
async fn pull(ctx: &Ctx, module: &Module) -> Result<Result<Pulled, Refusal>> {
    let sources: Api<ModuleSource> = Api::all(ctx.client.clone());
    let source_name = &module.spec.source.name;
    let Some(source) = kubeutil::get_opt(&sources, "", source_name).await? else {
        return Ok(Err(pull_failed(format!(
            "ModuleSource {source_name:?} does not exist"
        ))));
    };
    let oci = match (&*source.spec.type_, &source.spec.oci) {
        ("oci", Some(oci)) => oci,
        (other, _) => {
            return Ok(Err(pull_failed(format!(
                "ModuleSource {source_name:?} is of type {other:?}: the reference operator pulls from oci sources (spec.oci) only"
            ))));
        }
    };
    if oci.insecure != Some(true) {
        return Ok(Err(pull_failed(format!(
            "ModuleSource {source_name:?}: the reference operator pulls over plain HTTP only (set spec.oci.insecure: true)"
        ))));
    }
    let (host, repository) = oci.repository(&module.spec.name);
    let tag = module.spec.version.as_deref().unwrap_or("latest");
    let reference = format!("{host}/{repository}:{tag}");
    let manifest = match fetch(&host, &format!("{repository}/manifests/{tag}")).await {
        Ok(m) => m,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let served = digest_of(&manifest);
    // `bundle-pin-against-layer` defect: the pin is compared with the bundle layer's digest
    // instead of the manifest's, so every pinned bundle looks moved.
    let compared = if ctx.mutant(Mutant::BundlePinAgainstLayer) {
        layer_digest(&manifest).unwrap_or_default()
    } else {
        served.clone()
    };
    if let Some(pin) = &module.spec.digest
        && *pin != compared
        // `bundle-digest-unchecked` defect: the pin is never compared with what was served.
        && !ctx.mutant(Mutant::BundleDigestUnchecked)
    {
        let message = format!(
            "bundle {reference} resolved to {compared}, but the Module pins {pin}: refusing content the pin does not name"
        );
        return Ok(Ok(Pulled {
            reference,
            served,
            bundle: Err(Refusal {
                reason: DIGEST_MISMATCH,
                message,
            }),
        }));
    }
    let layer_checked = !ctx.mutant(Mutant::LayerHashSkipped);
    let bundle = read_bundle(&host, &repository, &reference, &manifest, layer_checked).await;
    Ok(Ok(Pulled {
        reference,
        served,
        bundle,
    }))
}

/// The digest of the manifest's bundle layer.
fn layer_digest(manifest: &[u8]) -> Option<String> {
    let manifest: serde_json::Value = serde_json::from_slice(manifest).ok()?;
    manifest["layers"]
        .as_array()?
        .iter()
        .find(|l| l["mediaType"] == BUNDLE_LAYER_MEDIA_TYPE)?["digest"]
        .as_str()
        .map(str::to_string)
}

/// The bundle document the manifest's layer holds, its digest checked (unless `checked` is
/// false: the `layer-hash-skipped` defect). Bytes that do not hash to the digest the manifest
/// names are not the pinned bundle: refused as `DigestMismatch`, naming both digests.
async fn read_bundle(
    host: &str,
    repository: &str,
    reference: &str,
    manifest: &[u8],
    checked: bool,
) -> Result<BundleDocument, Refusal> {
    let manifest: serde_json::Value = serde_json::from_slice(manifest)
        .map_err(|e| pull_failed(format!("{reference}: the manifest is not JSON: {e}")))?;
    let layer = manifest["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["mediaType"] == BUNDLE_LAYER_MEDIA_TYPE)
        .and_then(|l| l["digest"].as_str())
        .ok_or_else(|| {
            pull_failed(format!(
                "{reference}: the manifest has no {BUNDLE_LAYER_MEDIA_TYPE} layer"
            ))
        })?;
    let blob = fetch(host, &format!("{repository}/blobs/{layer}")).await?;
    let got = digest_of(&blob);
    if checked && got != layer {
        return Err(Refusal {
            reason: DIGEST_MISMATCH,
            message: format!(
                "bundle {reference}: its manifest names layer {layer}, but the bytes served for it have digest {got}: refusing content the pin does not name"
            ),
        });
    }
    serde_json::from_slice(&blob).map_err(|e| {
        pull_failed(format!(
            "{reference}: the bundle document does not parse: {e}"
        ))
    })
}

/// Creates or updates the GameTemplate named after `module` from `template`, owned by it.
async fn install(ctx: &Ctx, module: &Module, template: GameTemplateSpec) -> Result<()> {
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    let name = module.name_any();
    let owner = OwnerReference {
        api_version: Module::api_version(&()).to_string(),
        kind: Module::kind(&()).to_string(),
        name: name.clone(),
        uid: module.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let object = GameTemplate {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        },
        spec: template.clone(),
    };
    if kubeutil::get_opt(&templates, "", &name).await?.is_none() {
        kubeutil::create_if_absent(&templates, &object).await?;
    }
    let spec =
        serde_json::to_value(&template).map_err(|source| crate::error::Error::Serialize {
            name: name.clone(),
            source,
        })?;
    kubeutil::merge_patch(
        &templates,
        "",
        &name,
        json!({"metadata": {"ownerReferences": [owner]}, "spec": spec}),
    )
    .await
}

/// Reconciles one Module: pull, verify, install, report.
pub async fn reconcile(module: Arc<Module>, ctx: Arc<Ctx>) -> Result<Action> {
    let modules: Api<Module> = Api::all(ctx.client.clone());
    let Some(module) = kubeutil::get_opt(&modules, "", &module.name_any()).await? else {
        return Ok(Action::await_change());
    };
    let generation = module.metadata.generation;
    let status = module.status.clone().unwrap_or_default();
    if status.observed_generation == generation
        && matches!(status.phase, Some(ModulePhase::Ready | ModulePhase::Failed))
    {
        return Ok(Action::await_change());
    }
    let name = module.name_any();
    let mut next = ModuleStatus {
        observed_generation: generation,
        ..status
    };
    let outcome = match pull(&ctx, &module).await? {
        Err(refusal) => Err(refusal),
        Ok(Pulled {
            reference,
            served,
            bundle,
        }) => match bundle {
            Err(refusal) => Err(refusal),
            Ok(doc) if doc.name != module.spec.name => Err(pull_failed(format!(
                "{reference}: the bundle is module {:?}, not {:?}",
                doc.name, module.spec.name
            ))),
            Ok(doc) => {
                install(&ctx, &module, doc.template).await?;
                Ok((reference, served, doc.version))
            }
        },
    };
    let (ready, reason, message) = match outcome {
        Ok((reference, served, version)) => {
            if next.applied_digest.as_deref() != Some(served.as_str()) {
                next.previous_digest = next.applied_digest.take();
            }
            next.phase = Some(ModulePhase::Ready);
            next.applied_digest = Some(served.clone());
            next.applied_version = Some(version);
            next.applied_template = Some(name.clone());
            next.last_error = None;
            (true, INSTALLED, format!("installed {reference} ({served})"))
        }
        Err(Refusal { reason, message }) => {
            next.phase = Some(ModulePhase::Failed);
            next.last_error = Some(message.clone());
            (false, reason, message)
        }
    };
    conditions::set(
        &mut next.conditions,
        conditions::types::READY,
        ready,
        reason,
        &message,
        generation,
        kubeutil::now(),
    );
    // Merge patch: `lastError` is cleared explicitly on success.
    let mut patch =
        serde_json::to_value(&next).map_err(|source| crate::error::Error::Serialize {
            name: name.clone(),
            source,
        })?;
    if next.last_error.is_none() {
        patch["lastError"] = serde_json::Value::Null;
    }
    kubeutil::patch_status(&modules, "", &name, patch).await?;
    Ok(Action::await_change())
}
