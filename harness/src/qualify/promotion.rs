//! Step 6: the fleet moved to the candidate batch by batch, each member behind the same gates,
//! one `promotion` receipt per batch; the first failed batch halts the rest.

use serde_json::json;

use crate::context::{CaseContext, CaseError, HarnessMutant};
use crate::evidence::judge::gates as judge;
use crate::evidence::qualification::{Outcome, Plan, Qualification};
use crate::qualify::access::{Access, patch_server};
use crate::qualify::gates::server_gates;

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
        let member_gates = ctx
            .step(&name, async {
                let mut generations = Vec::new();
                for member in batch {
                    generations.push(
                        patch_server(ctx, member, json!({"spec": {"version": plan.candidate}}))
                            .await?,
                    );
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
            .await?;
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
