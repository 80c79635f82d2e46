//! The module bundle gate (CONTRACT C.8): a candidate that carries a module bundle pinned by
//! digest runs on the canary only once the bundle served is exactly the pinned one.
//!
//! Two independent observations are compared with the pin:
//! - the harness's own read of the registry: the digest computed over the manifest bytes the
//!   ModuleSource's registry serves for `<oci.url>/<module>:<version>` (never a header);
//! - the operator's: a canary Module (`<run id>-<module>`, labelled with the run) that pins the
//!   same digest, and what the operator made of it (`status.phase`, its `Ready` reason,
//!   `status.appliedDigest`).
//!
//! - the GameTemplate the operator installed from the canary Module, compared with the template
//!   the pinned bundle holds as the harness reads it (the pinned manifest's layer, its bytes
//!   hashed against the digest the manifest names): `appliedDigest` is the operator's word, the
//!   template is what it did.
//!
//! The gate passes only when the registry serves the pinned digest and the operator installed
//! exactly it: Ready, `appliedDigest` the pin, and its GameTemplate the pinned bundle's. A tag moved to other content fails the gate, naming both digests, before the
//! candidate reaches the clone — so before any join.
//!
//! The gate verifies the bundle; the candidate version the clone then runs is still the one the
//! plan names in the fleet's GameTemplate.

use gameplane_api::GameTemplate;
use gameplane_api::conditions;
use gameplane_api::module::{
    BUNDLE_LAYER_MEDIA_TYPE, BundleDocument, Module, ModulePhase, ModuleSource, ModuleSpec,
    SourceRef,
};
use kube::api::{Api, ObjectMeta, PostParams};

use crate::context::{CaseContext, CaseError, HarnessMutant};
use crate::evidence::qualification::{
    Gate, GateEvidence, ModuleEvidence, ModulePin, Observed, TemplateComparison,
};
use crate::qualify::gates::{gate, gate_error};
use crate::qualify::tidy;
use crate::wait::{Condition, Progress, await_object};

/// The canary Module's name for `pin` in run `run_id`: a DNS subdomain, unique per run.
pub fn canary_module(run_id: &str, pin: &ModulePin) -> String {
    let name: String = format!("{run_id}-{}", pin.module)
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(253)
        .collect();
    name.trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// The operator has judged the Module's current generation: Ready or Failed.
fn judged() -> Condition<Module> {
    Condition::new(
        "the operator's verdict on the current generation (phase Ready or Failed)",
        |m: Option<&Module>| {
            let Some(m) = m else {
                return Progress::Pending;
            };
            let status = m.status.as_ref();
            let current = status.and_then(|s| s.observed_generation) == m.metadata.generation;
            match status.and_then(|s| s.phase) {
                Some(ModulePhase::Ready | ModulePhase::Failed) if current => Progress::Met,
                _ => Progress::Pending,
            }
        },
    )
}

/// Where the harness reads the registry that `host` names: the backend's bundle registry when
/// the operator reaches it under that name, else `host` itself.
async fn harness_addr(ctx: &CaseContext<'_>, host: &str) -> String {
    match ctx.backend.bundle_registry().await {
        Ok(r) if r.pull_host == host => r.addr,
        _ => host.to_string(),
    }
}

/// The module bundle gate on `server` (the canary clone).
pub(crate) async fn module_gate(
    ctx: &CaseContext<'_>,
    run_id: &str,
    pin: &ModulePin,
    server: &str,
) -> Result<Gate, CaseError> {
    let evidence = match observe(ctx, run_id, pin).await {
        Ok(e) => e,
        Err(e) => {
            let reason = format!("module bundle {pin}: {e}");
            return Ok(gate(
                server,
                GateEvidence::Module(gate_error(&reason)),
                false,
                Some(reason),
            ));
        }
    };
    // `harness-module-gate-trusts-tag` defect: the pin never reaches the comparison, so
    // whatever the tag serves (and the operator installs) passes.
    let pinned = if ctx.harness_mutant(HarnessMutant::ModuleGateTrustsTag) {
        evidence.served.clone().unwrap_or_default()
    } else {
        evidence.pinned.clone()
    };
    let (passed, reason) = crate::evidence::judge::gates::module(&evidence, &pinned);
    Ok(gate(
        server,
        GateEvidence::Module(Observed::Read(evidence)),
        passed,
        reason,
    ))
}

/// Reads the registry, creates the canary Module and waits for the operator's verdict.
async fn observe(
    ctx: &CaseContext<'_>,
    run_id: &str,
    pin: &ModulePin,
) -> Result<ModuleEvidence, String> {
    let sources: Api<ModuleSource> = Api::all(ctx.client.clone());
    let source = sources
        .get_opt(&pin.source)
        .await
        .map_err(|e| format!("cannot read ModuleSource {}: {e}", pin.source))?
        .ok_or_else(|| {
            format!(
                "ModuleSource {} does not exist; create it, or name the source the fleet's modules come from",
                pin.source
            )
        })?;
    let oci = source.spec.oci.as_ref().ok_or_else(|| {
        format!(
            "ModuleSource {} is of type {:?}: the gate reads OCI sources (spec.oci) only",
            pin.source, source.spec.type_
        )
    })?;
    let (host, repository) = oci.repository(&pin.module);
    let reference = format!("{host}/{repository}:{}", pin.version);
    let addr = harness_addr(ctx, &host).await;
    let manifest = crate::registry::fetch_manifest(&addr, &repository, &pin.version)
        .await
        .map_err(|e| e.to_string())?;
    let served = manifest.as_ref().map(|(digest, _)| digest.clone());

    let name = canary_module(run_id, pin);
    let digest = if ctx.harness_mutant(HarnessMutant::ModuleGateTrustsTag) {
        None
    } else {
        Some(pin.digest.clone())
    };
    let module = Module {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some({
                let mut labels = tidy::labels(run_id);
                labels.insert(tidy::NAMESPACE_LABEL.into(), ctx.namespace.clone());
                labels
            }),
            ..Default::default()
        },
        spec: ModuleSpec {
            source: SourceRef {
                name: pin.source.clone(),
            },
            name: pin.module.clone(),
            version: Some(pin.version.clone()),
            digest,
        },
        status: None,
    };
    let modules: Api<Module> = Api::all(ctx.client.clone());
    modules
        .create(&PostParams::default(), &module)
        .await
        .map_err(|e| format!("cannot create the canary Module {name}: {e}"))?;
    let judged = await_object(&modules, &name, judged(), ctx.bounds.settle)
        .await
        .map_err(|e| format!("the operator never judged the canary Module: {e}"))?;
    let status = judged.status.unwrap_or_default();
    let ready = conditions::find(&status.conditions, conditions::types::READY);
    // The template is read from the manifest the gate compares with: the pinned one (under
    // the `harness-module-gate-trusts-tag` defect, whatever the tag serves).
    let compared = if ctx.harness_mutant(HarnessMutant::ModuleGateTrustsTag) {
        served.clone().unwrap_or_default()
    } else {
        pin.digest.clone()
    };
    let pinned_manifest = manifest
        .filter(|(digest, _)| *digest == compared)
        .map(|(_, bytes)| bytes);
    let template = compare_template(ctx, &addr, &repository, pinned_manifest, &name).await?;
    Ok(ModuleEvidence {
        reference,
        pinned: pin.digest.clone(),
        served,
        module: name,
        phase: status.phase.map(|p| format!("{p:?}")),
        ready_reason: ready.map(|c| c.reason.clone()),
        ready_message: ready.map(|c| c.message.clone()),
        applied_digest: status.applied_digest,
        template: Some(Box::new(template)),
    })
}

/// SHA-256 of a template spec's canonical JSON.
fn spec_digest(spec: &serde_json::Value) -> String {
    crate::registry::content_digest(crate::evidence::canonical::to_string(spec).as_bytes())
}

/// The template the pinned manifest's layer holds, read from the registry at `addr` (the
/// layer's bytes hashed against the digest the manifest names), as a spec.
async fn pinned_template(
    addr: &str,
    repository: &str,
    manifest: Option<bytes::Bytes>,
) -> Result<serde_json::Value, String> {
    let manifest = manifest.ok_or("the registry does not serve the pinned manifest")?;
    let manifest: serde_json::Value = serde_json::from_slice(&manifest)
        .map_err(|e| format!("the pinned manifest is not JSON: {e}"))?;
    let layer = manifest["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["mediaType"] == BUNDLE_LAYER_MEDIA_TYPE)
        .and_then(|l| l["digest"].as_str())
        .ok_or_else(|| format!("the pinned manifest has no {BUNDLE_LAYER_MEDIA_TYPE} layer"))?;
    let blob = crate::registry::fetch_blob(addr, repository, layer)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|got| format!("the registry serves layer {layer} as bytes of digest {got}"))?;
    let doc: BundleDocument = serde_json::from_slice(&blob)
        .map_err(|e| format!("the pinned bundle document does not parse: {e}"))?;
    serde_json::to_value(&doc.template).map_err(|e| e.to_string())
}

/// The GameTemplate named `name` (the canary Module's) compared with the pinned bundle's.
async fn compare_template(
    ctx: &CaseContext<'_>,
    addr: &str,
    repository: &str,
    manifest: Option<bytes::Bytes>,
    name: &str,
) -> Result<TemplateComparison, String> {
    let pinned = pinned_template(addr, repository, manifest).await;
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    let installed = templates
        .get_opt(name)
        .await
        .map_err(|e| format!("cannot read GameTemplate {name}: {e}"))?
        .map(|t| serde_json::to_value(&t.spec).unwrap_or_default());
    let differs = match (&pinned, &installed) {
        (Ok(serde_json::Value::Object(a)), Some(serde_json::Value::Object(b))) => a
            .keys()
            .chain(b.keys().filter(|k| !a.contains_key(*k)))
            .filter(|k| a.get(*k) != b.get(*k))
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    Ok(TemplateComparison {
        name: name.to_string(),
        pinned: pinned.as_ref().ok().map(spec_digest),
        unread: pinned.err(),
        installed: installed.as_ref().map(spec_digest),
        differs,
    })
}
