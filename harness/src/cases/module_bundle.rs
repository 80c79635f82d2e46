//! The candidate's module bundle pinned by digest (CONTRACT C.8): `candidate_module_digest_mismatch`
//! and `candidate_module_layer_other_bytes`.
//!
//! The bundle is a real OCI artifact in a real registry (Debian's `docker-registry` on the
//! embedded cluster, the local registry on Kind), pulled by the operator from a ModuleSource.
//! The case publishes the bundle, pins its digest, proves the pin works (a control Module with
//! that pin is installed and the module bundle gate passes on it), then moves the bundle's tag to
//! other content — the attack a digest pin exists for — and qualifies a candidate that would
//! otherwise pass. The qualification must halt at the module bundle gate before any join, with
//! the fleet untouched, both digests in the gate's evidence, and the operator refusing the bundle
//! (`DigestMismatch`, no GameTemplate written).

use gameplane_api::GameTemplate;
use gameplane_api::conditions;
use gameplane_api::module::{DIGEST_MISMATCH, Module};
use kube::api::Api;
use serde_json::{Value, json};

use super::rollout;
use crate::context::{CaseContext, CaseError, Checks};
use crate::evidence::qualification::ModulePin;
use crate::fixture::fleet::{self, FleetSpec, OTHER, SOURCE};
use crate::fixture::module::*;
use crate::fixture::{self};
use crate::qualify::gates::module::{canary_module, module_gate};
use crate::qualify::{Rollback, gates};

/// Module bundle digest mismatch: halted at the module bundle gate before any join; fleet
/// untouched; both digests in the evidence; the operator refused the bundle.
pub async fn candidate_module_digest_mismatch(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    let (before, pin) = fleet_and_pinned_bundle(ctx).await?;
    let pinned = pin.digest.clone();
    // The control: with the tag still on the pinned content, the gate passes and the operator
    // installs exactly that bundle (an operator or gate that refuses every bundle fails here).
    let control_run = format!("{}-control", ctx.namespace);
    let control = ctx
        .step("the pinned bundle passes the module bundle gate", async {
            let g = module_gate(ctx, &control_run, &pin, &ctx.namespace).await?;
            Ok(serde_json::to_value(&g).unwrap_or_default())
        })
        .await?;
    let moved = ctx
        .step("move the bundle's tag to other content", async {
            move_tag(ctx).await
        })
        .await?;
    let (plan, q, mut checks, halted) = qualify_pinned(ctx, &members, &before, &pin).await?;
    ctx.uses("registry manifest digests");
    let canary = canary_module(&plan.run_id, &pin);
    let control_module = canary_module(&control_run, &pin);
    let modules: Api<Module> = Api::all(ctx.client.clone());
    let refused = modules
        .get_opt(&canary)
        .await
        .map_err(CaseError::kube("get Module", canary.clone()))?;
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    let from_bundle = templates
        .get_opt(&canary)
        .await
        .map_err(CaseError::kube("get GameTemplate", canary.clone()))?;
    let control_template = templates
        .get_opt(&control_module)
        .await
        .map_err(CaseError::kube("get GameTemplate", control_module.clone()))?;
    let evidence = Evidence {
        pinned: &pinned,
        moved: &moved,
        control: &control,
        control_template: control_template.as_ref(),
        refused: refused.as_ref(),
        from_bundle: from_bundle.is_some(),
    };
    check_module(ctx, &mut checks, &q, &evidence);
    tidy(ctx, &[canary, control_module]).await;
    ctx.assess(
        checks,
        json!({"halt": halted, "pinned": pinned, "moved": moved, "control": control,
               "canary_module": refused.and_then(|m| m.status)}),
    )
}

/// The fleet of two on the stable version with the compatible candidate pinned, and the
/// module bundle published and pinned by its digest: the fleet's pods and versions before, and
/// the pin.
async fn fleet_and_pinned_bundle(
    ctx: &CaseContext<'_>,
) -> Result<
    (
        std::collections::BTreeMap<String, Option<String>>,
        ModulePin,
    ),
    CaseError,
> {
    let before = fleet::fleet(
        ctx,
        &FleetSpec {
            candidates: &[fixture::VERSION_COMPAT],
            ..Default::default()
        },
    )
    .await?;
    let (source, pinned, _) = ctx.step("publish the module bundle", publish(ctx)).await?;
    let pin = ModulePin {
        source,
        module: MODULE.into(),
        version: BUNDLE_VERSION.into(),
        digest: pinned,
    };
    Ok((before, pin))
}

/// Qualifies the compatible candidate with `pin` and checks that it halted at the module
/// bundle gate with the fleet as it was `before`: the plan, the record, the checks so far and
/// the halt's observation.
async fn qualify_pinned(
    ctx: &CaseContext<'_>,
    members: &[&str],
    before: &std::collections::BTreeMap<String, Option<String>>,
    pin: &ModulePin,
) -> Result<
    (
        crate::qualify::Plan,
        crate::qualify::Qualification,
        Checks,
        Value,
    ),
    CaseError,
> {
    let mut plan = fleet::plan(ctx, members, fixture::VERSION_COMPAT, Rollback::Compatible);
    plan.module = Some(pin.clone());
    let q = fleet::run(ctx, &plan).await?;
    ctx.uses("Module status (phase, Ready reason, appliedDigest)");
    let mut checks = Checks::new();
    let halted =
        rollout::check_halted_untouched(ctx, &mut checks, &q, members, before, gates::MODULE)
            .await?;
    Ok((plan, q, checks, halted))
}

/// What the checks read.
struct Evidence<'a> {
    pinned: &'a str,
    moved: &'a str,
    control: &'a Value,
    control_template: Option<&'a GameTemplate>,
    refused: Option<&'a Module>,
    from_bundle: bool,
}

fn check_module(
    ctx: &CaseContext<'_>,
    checks: &mut Checks,
    q: &crate::qualify::Qualification,
    e: &Evidence<'_>,
) {
    let o = format!("qualification in {}", ctx.namespace);
    checks.check(
        "control-bundle-installed",
        e.control["passed"] == true
            && e.control_template.is_some_and(|t| {
                t.spec
                    .versions
                    .iter()
                    .any(|v| v.id == fixture::VERSION_COMPAT)
            }),
        &format!(
            "module bundle gate on the control Module in {}",
            ctx.namespace
        ),
        "gate verdict and the GameTemplate installed from the pinned bundle",
        "passed, and a GameTemplate holding the bundle's versions",
        json!({"gate": e.control, "template_versions": e.control_template
            .map(|t| t.spec.versions.iter().map(|v| v.id.clone()).collect::<Vec<_>>())}),
    );
    let joined = q
        .gates
        .iter()
        .filter(|g| g.name != gates::PREFLIGHT && g.name != gates::MODULE)
        .map(|g| g.name.clone())
        .collect::<Vec<_>>();
    checks.check(
        "no-gate-after-module",
        joined.is_empty(),
        &o,
        "gates judged after the module bundle gate",
        "none (no image, no join: the candidate never reached the clone)",
        &joined,
    );
    let gate = q
        .gates
        .iter()
        .find(|g| g.name == gates::MODULE && !g.passed);
    let module = gate.and_then(|g| g.evidence.module());
    let reason = gate.and_then(|g| g.reason.clone()).unwrap_or_default();
    checks.check(
        "both-digests-in-evidence",
        module.is_some_and(|m| m.pinned == e.pinned && m.served.as_deref() == Some(e.moved))
            && reason.contains(e.pinned)
            && reason.contains(e.moved),
        &o,
        "module bundle gate evidence (pinned, served) and reason",
        format!(
            "pinned {} and served {}, both named in the reason",
            e.pinned, e.moved
        ),
        json!({"evidence": module, "reason": reason}),
    );
    let status = e.refused.and_then(|m| m.status.clone()).unwrap_or_default();
    let ready = conditions::find(&status.conditions, conditions::types::READY);
    checks.check(
        "operator-refused-bundle",
        format!("{:?}", status.phase) == "Some(Failed)"
            && ready.is_some_and(|c| {
                c.status == "False"
                    && c.reason == DIGEST_MISMATCH
                    && c.message.contains(e.pinned)
                    && c.message.contains(e.moved)
            })
            && status.applied_digest.is_none(),
        &format!(
            "module {}",
            e.refused
                .map(|m| m.metadata.name.clone().unwrap_or_default())
                .unwrap_or_default()
        ),
        "status.phase, Ready condition, appliedDigest",
        "Failed; Ready False, reason DigestMismatch naming both digests; nothing applied",
        json!({"phase": status.phase, "ready": ready, "appliedDigest": status.applied_digest}),
    );
    checks.check(
        "no-template-from-refused-bundle",
        !e.from_bundle,
        &o,
        "GameTemplate named after the canary Module",
        "absent (a refused bundle writes no template)",
        e.from_bundle,
    );
}

/// Module bundle layer served with other bytes: the registry the operator pulls from serves the
/// pinned manifest honestly but other bytes for its layer (the gate in front of the embedded
/// cluster's registry; the harness reads the registry itself). The operator must hash the layer
/// and refuse it (`DigestMismatch` naming the layer's digest and the one served, no GameTemplate
/// written); the qualification halts at the module bundle gate before any join, fleet untouched.
/// Not applicable where the harness does not stand in front of the operator's registry.
pub async fn candidate_module_layer_other_bytes(ctx: &CaseContext<'_>) -> Result<(), CaseError> {
    let members = [SOURCE, OTHER];
    let (before, pin) = fleet_and_pinned_bundle(ctx).await?;
    let pinned = pin.digest.clone();
    let layer = crate::registry::content_digest(&bundle(ctx, false));
    let other_digest = crate::registry::content_digest(&other_layer_bytes(ctx));
    ctx.step(
        "serve other bytes for the bundle's layer",
        serve_other_layer_bytes(ctx),
    )
    .await?;
    let (plan, _, mut checks, halted) = qualify_pinned(ctx, &members, &before, &pin).await?;
    ctx.uses("registry manifest and layer digests");
    let canary = canary_module(&plan.run_id, &pin);
    let refused = Api::<Module>::all(ctx.client.clone())
        .get_opt(&canary)
        .await
        .map_err(CaseError::kube("get Module", canary.clone()))?;
    let from_bundle = Api::<GameTemplate>::all(ctx.client.clone())
        .get_opt(&canary)
        .await
        .map_err(CaseError::kube("get GameTemplate", canary.clone()))?;
    let served = ctx.backend.other_layer_bytes_served();
    checks.check(
        "other-bytes-served",
        served >= 1,
        &format!("module bundle registry of {}", ctx.namespace),
        "requests for the bundle's layer answered with other bytes",
        "at least one (the operator fetched the layer the pinned manifest names)",
        served,
    );
    let status = refused
        .as_ref()
        .and_then(|m| m.status.clone())
        .unwrap_or_default();
    let ready = conditions::find(&status.conditions, conditions::types::READY);
    checks.check(
        "operator-refused-bundle",
        format!("{:?}", status.phase) == "Some(Failed)"
            && ready.is_some_and(|c| {
                c.status == "False"
                    && c.reason == DIGEST_MISMATCH
                    && c.message.contains(&layer)
                    && c.message.contains(&other_digest)
            })
            && status.applied_digest.is_none(),
        &format!("module {canary}"),
        "status.phase, Ready condition, appliedDigest",
        format!(
            "Failed; Ready False, reason DigestMismatch naming the layer {layer} and the digest of the bytes served {other_digest}; nothing applied"
        ),
        json!({"phase": status.phase, "ready": ready, "appliedDigest": status.applied_digest}),
    );
    checks.check(
        "no-template-from-refused-bundle",
        from_bundle.is_none(),
        &format!("gametemplate {canary}"),
        "GameTemplate named after the canary Module",
        "absent (a refused bundle writes no template)",
        json!(from_bundle.map(|t| t.spec.display_name)),
    );
    tidy(ctx, &[canary]).await;
    ctx.assess(
        checks,
        json!({"halt": halted, "pinned": pinned, "layer": layer, "served_instead": other_digest,
               "canary_module": status}),
    )
}
