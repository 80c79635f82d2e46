//! Step 6: the fleet moved to the candidate batch by batch, each member behind the same gates,
//! one `promotion` receipt per batch; the first failed batch halts the rest.

use std::sync::Mutex;

use gameplane_api::names;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::json;

use crate::context::{CaseContext, CaseError, HarnessMutant, interrupt_requested};
use crate::evidence::judge::gates as judge;
use crate::evidence::qualification::{Outcome, Plan, PutBack, Qualification};
use crate::qualify::access::{Access, await_server_phase, get_server, patch_server, version_image};
use crate::qualify::gates::pods::await_pod_running_image;
use crate::qualify::gates::server_gates;

/// A member a batch moved: its name and the version it ran before (`None`: it tracked the
/// template's default).
type Moved = (String, Option<String>);

/// Step 6 of the procedure: moves the fleet to the candidate batch by batch, each member behind
/// its gates, and halts at the first failed batch (unless the self-test's `BatchHaltIgnored`
/// harness mutant is on); records one `promotion` receipt per batch.
pub(super) async fn promote(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
    access: &Access,
    candidate_image: &str,
) -> Result<(), CaseError> {
    let mut promoted = 0;
    for (i, batch) in judge::batches(&plan.fleet, plan.batch_size)
        .iter()
        .enumerate()
    {
        let name = format!("promotion batch {}", i + 1);
        // Who this batch has moved so far, kept outside the step: an unfinished batch puts
        // exactly these back.
        let moved: Mutex<Vec<Moved>> = Mutex::new(Vec::new());
        let ran = ctx
            .step(&name, async {
                let mut generations = Vec::new();
                for member in batch {
                    let before = get_server(ctx, member).await?.spec.version;
                    let generation =
                        patch_server(ctx, member, json!({"spec": {"version": plan.candidate}}))
                            .await?;
                    lock(&moved).push((member.clone(), before));
                    generations.push(generation);
                }
                let mut all = Vec::new();
                for (member, generation) in batch.iter().zip(generations) {
                    all.extend(
                        server_gates(ctx, plan, access, member, candidate_image, generation, None)
                            .await?,
                    );
                }
                Ok(all)
            })
            .await;
        let moved = moved
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let member_gates = match ran {
            Ok(gates) => gates,
            Err(e) => {
                put_back(ctx, plan, q, i + 1, &moved, &unfinished(&e)).await?;
                return Err(e);
            }
        };
        // A signal that arrived while the batch ran is seen here at the latest: the batch is
        // not promoted, its members go back (an interrupt stops the rollout, it never leaves
        // it half done).
        if let Some(signal) = interrupt_requested() {
            q.gates.extend(member_gates);
            put_back(
                ctx,
                plan,
                q,
                i + 1,
                &moved,
                &format!("interrupted by {signal}"),
            )
            .await?;
            return Err(CaseError::Interrupted {
                signal,
                step: format!("the decision on {name}"),
            });
        }
        let decided = judge::after_batch(&name, &member_gates, promoted);
        ctx.recorder.step(
            &name,
            json!({"kind": "promotion", "batch": i + 1, "members": batch, "passed": decided.is_ok()}),
        )?;
        q.promotion_receipts += 1;
        q.gates.extend(member_gates);
        match decided {
            Ok(next) => promoted = next,
            Err(_) if ctx.harness_mutant(HarnessMutant::BatchHaltIgnored) => {
                // The defect: a failed batch does not stop the rollout.
                promoted += 1;
            }
            Err(halted) => {
                q.outcome = halted;
                return Ok(());
            }
        }
    }
    q.outcome = Outcome::Promoted { batches: promoted };
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why a batch did not complete, in one line.
fn unfinished(e: &CaseError) -> String {
    match e {
        CaseError::Interrupted { signal, .. } => format!("interrupted by {signal}"),
        e => format!("the batch could not complete: {e}"),
    }
}

/// Puts every member an unfinished batch moved back on the version it ran before, all at
/// once, and waits for each to run that version's image again (a suspended member: for the
/// spec alone). Runs after an interrupt too ([`CaseContext::repair_step`]). Records one
/// `put back batch N` receipt and a [`PutBack`] per member; a member that could not be put
/// back is recorded with why, never dropped.
async fn put_back(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
    batch: usize,
    moved: &[Moved],
    why: &str,
) -> Result<(), CaseError> {
    if moved.is_empty() {
        return Ok(());
    }
    let name = format!("put back batch {batch}");
    let outcomes = ctx
        .repair_step(&name, async {
            let each = moved.iter().map(|(member, version)| async move {
                let error = put_back_one(ctx, plan, member, version.as_deref())
                    .await
                    .err()
                    .map(|e| e.to_string());
                PutBack {
                    batch,
                    server: member.clone(),
                    version: version
                        .clone()
                        .unwrap_or_else(|| "the template's default".into()),
                    why: why.to_string(),
                    error,
                }
            });
            Ok(futures::future::join_all(each).await)
        })
        .await?;
    q.put_back.extend(outcomes);
    Ok(())
}

/// Re-pins one member on `version` and waits until it runs it.
async fn put_back_one(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    member: &str,
    version: Option<&str>,
) -> Result<(), CaseError> {
    let gs = get_server(ctx, member).await?;
    if gs.spec.version.as_deref() != version {
        patch_server(ctx, member, json!({"spec": {"version": version}})).await?;
    }
    if gs.spec.suspend == Some(true) {
        return Ok(());
    }
    let Some(version) = version else {
        return Ok(());
    };
    let image = version_image(ctx, &plan.template, version).await?;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    await_pod_running_image(ctx, &pods, &names::pod(member), &image).await?;
    await_server_phase(ctx, member, "Running").await?;
    Ok(())
}

/// The `harness-canary-promotion-receipt` defect: the first batch's promotion decision is
/// recorded before the canary's gates were judged (nothing without the mutant).
pub(super) fn premature_promotion_receipt(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
) -> Result<(), CaseError> {
    if ctx.harness_mutant(HarnessMutant::CanaryPromotionReceipt) {
        let batch = judge::batches(&plan.fleet, plan.batch_size)
            .into_iter()
            .next()
            .unwrap_or_default();
        ctx.recorder.step(
            "promotion batch 1",
            json!({"kind": "promotion", "batch": 1, "members": batch, "passed": true}),
        )?;
        q.promotion_receipts += 1;
    }
    Ok(())
}
