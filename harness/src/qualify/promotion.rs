//! Step 6: the fleet moved to the candidate batch by batch, each member behind the same gates,
//! one `promotion` receipt per batch; the first failed batch halts the rest.

use std::sync::Mutex;

use futures::{StreamExt, TryStreamExt};
use gameplane_api::names;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::json;

use crate::context::{CaseContext, CaseError, HarnessMutant, interrupt_requested};
use crate::evidence::invariants::way_back;
use crate::evidence::judge::gates as judge;
use crate::evidence::qualification::{
    Gate, MemberBaseline, Outcome, Plan, PutBack, Qualification, Rollback, WayBack, gates,
};
use crate::qualify::access::{
    Access, await_server_phase, get_server, member_state, patch_server, pod_uid,
};
use crate::qualify::gates::pods::await_pod_running_image;
use crate::qualify::gates::unix_ms;
use crate::qualify::gates::{BatchStop, server_gates};
use crate::qualify::seed::{await_backup, create_backup, restore};
use crate::qualify::tidy;
use crate::wait::{await_condition, conditions};

/// The gates every member of a promoted batch must have passed.
const PROMOTION_GATES: &[&str] = &[gates::IMAGE, gates::JOIN, gates::SAVE];

/// A member a batch moved, as it was before.
struct Moved {
    member: String,
    /// The version it ran (`None`: it tracked the template's default).
    version: Option<String>,
    /// The image its game container ran, when it had a pod: what it must run again.
    image: Option<String>,
    /// Whether it was suspended (`spec.suspend`), to leave it so.
    suspend: Option<bool>,
    /// Its pre-promotion Backup (restore-required candidates): restored before it is re-pinned.
    backup: Option<String>,
    /// Its pod UID, PVC UIDs and world digests read while it was stopped for that backup.
    before: Option<MemberBaseline>,
    /// Whether the candidate was pinned on it (set before the patch is sent): a member only
    /// stopped for its backup is started again, not restored.
    on_candidate: bool,
    /// Whether the batch suspended it (for its backup): the move starts it again.
    suspended_here: bool,
}

impl Moved {
    /// `member` as it is now, before the batch changes anything.
    async fn as_it_is(ctx: &CaseContext<'_>, member: &str) -> Result<Moved, CaseError> {
        let gs = get_server(ctx, member).await?;
        Ok(Moved {
            member: member.to_string(),
            version: gs.spec.version,
            image: game_image(ctx, member).await?,
            suspend: gs.spec.suspend,
            backup: None,
            before: None,
            on_candidate: false,
            suspended_here: false,
        })
    }
}

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
        // A candidate that changes the save format: each member backed up before it moves,
        // the only way back once the candidate has rewritten its world.
        let backups = match plan.rollback {
            Rollback::RestoreRequired => {
                match back_up_batch(ctx, plan, i + 1, batch, &moved).await {
                    Ok(backups) => backups,
                    Err(e) => {
                        // Members stopped for their backups are started again as they were.
                        let moved = take(moved);
                        put_back(ctx, plan, q, i + 1, &moved, &unfinished(&e)).await?;
                        return Err(e);
                    }
                }
            }
            Rollback::Compatible => Vec::new(),
        };
        let stop = BatchStop::default();
        let ran = ctx
            .step(
                &name,
                move_and_gate(
                    ctx,
                    plan,
                    access,
                    candidate_image,
                    batch,
                    &moved,
                    &backups,
                    &stop,
                ),
            )
            .await;
        let moved = take(moved);
        let backups = backups_ended(ctx, backups).await;
        q.backed_up.extend(backups.iter().cloned());
        let member_gates = match ran {
            Ok(gates) => gates,
            Err(e) => {
                // The gates that finished before the batch ended are reported too.
                q.gates.extend(stop.gates());
                let interrupted = matches!(e, CaseError::Interrupted { .. });
                if interrupted || !plan.keep_failed_batch {
                    put_back(ctx, plan, q, i + 1, &moved, &unfinished(&e)).await?;
                }
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
        let decided = judge::after_batch(&name, batch, PROMOTION_GATES, &member_gates, promoted);
        ctx.recorder.step(
            &name,
            json!({"kind": "promotion", "batch": i + 1, "members": batch, "passed": decided.is_ok()}),
        )?;
        q.promotion_receipts += 1;
        q.gates.extend(member_gates);
        match decided {
            Ok(next) => {
                promoted = next;
                // The record says what is promoted so far: an interrupt later keeps it.
                q.outcome = Outcome::Promoted { batches: promoted };
                keep_way_back(ctx, plan, q, backups).await?;
            }
            Err(_) if ctx.harness_mutant(HarnessMutant::BatchHaltIgnored) => {
                // The defect: a failed batch does not stop the rollout.
                promoted += 1;
            }
            Err(halted) => {
                // The failed batch goes back, whole (`harness-failed-batch-kept`: it stays).
                if !plan.keep_failed_batch && !ctx.harness_mutant(HarnessMutant::FailedBatchKept) {
                    put_back(ctx, plan, q, i + 1, &moved, &halted.line()).await?;
                }
                q.outcome = halted;
                return Ok(());
            }
        }
    }
    q.outcome = Outcome::Promoted { batches: promoted };
    Ok(())
}

/// Moves `batch` to the candidate (each member recorded in `moved` as it was before), then
/// gates its members together, at most `plan.gate_concurrency` at once, in the batch's order;
/// the first failed gate stops the gates not yet started. An error (an interrupt) ends the
/// batch at once: the members' gates still running are dropped.
#[allow(clippy::too_many_arguments)]
async fn move_and_gate(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    access: &Access,
    candidate_image: &str,
    batch: &[String],
    moved: &Mutex<Vec<Moved>>,
    backups: &[WayBack],
    stop: &BatchStop,
) -> Result<Vec<Gate>, CaseError> {
    let mut generations = Vec::new();
    for member in batch {
        let known = lock(moved).iter().position(|m| &m.member == member);
        let at = match known {
            Some(at) => at,
            None => {
                let m = Moved::as_it_is(ctx, member).await?;
                let mut moved = lock(moved);
                moved.push(m);
                moved.len() - 1
            }
        };
        // Marked before the patch is sent: a patch cut short by an interrupt may have landed.
        let patch = {
            let mut moved = lock(moved);
            let m = &mut moved[at];
            m.on_candidate = true;
            m.backup = backups
                .iter()
                .find(|w| &w.server == member)
                .map(|w| w.backup.clone());
            if m.suspended_here {
                json!({"spec": {"version": plan.candidate, "suspend": m.suspend}})
            } else {
                json!({"spec": {"version": plan.candidate}})
            }
        };
        generations.push(patch_server(ctx, member, patch).await?);
    }
    let each: Vec<_> = batch
        .iter()
        .zip(generations)
        .map(|(member, generation)| {
            server_gates(
                ctx,
                plan,
                access,
                member,
                candidate_image,
                generation,
                None,
                Some(stop),
            )
        })
        .collect();
    // `harness-batch-gated-one-by-one` defect: the concurrency is ignored.
    let concurrency = if ctx.harness_mutant(HarnessMutant::BatchGatedOneByOne) {
        1
    } else {
        plan.gate_concurrency.max(1)
    };
    let per_member: Vec<Vec<Gate>> = futures::stream::iter(each)
        .buffered(concurrency)
        .try_collect()
        .await?;
    Ok(per_member.into_iter().flatten().collect())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn take<T>(m: Mutex<T>) -> T {
    m.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why a batch did not complete, in one line.
fn unfinished(e: &CaseError) -> String {
    match e {
        CaseError::Interrupted { signal, .. } => format!("interrupted by {signal}"),
        e => format!("the batch could not complete: {e}"),
    }
}

/// Puts every member a failed or unfinished batch moved back on the version it ran before, all
/// at once, and waits for each to run the image it ran before again (a member without a pod
/// then: for the spec alone). Runs after an interrupt too ([`CaseContext::repair_step`]).
/// Records one `put back batch N` receipt and a [`PutBack`] per member; a member that could
/// not be put back is recorded with why, never dropped.
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
    let baseline = &q.baseline;
    let outcomes = ctx
        .repair_step(&name, async {
            let each = moved.iter().map(|m| async move {
                let mut read = Read::default();
                let error = put_back_one(ctx, plan, m, &mut read)
                    .await
                    .err()
                    .map(|e| e.to_string());
                let before = m
                    .before
                    .clone()
                    .or_else(|| baseline.iter().find(|b| b.server == m.member).cloned());
                PutBack {
                    batch,
                    server: m.member.clone(),
                    version: m
                        .version
                        .clone()
                        .unwrap_or_else(|| "the template's default".into()),
                    why: why.to_string(),
                    error,
                    before,
                    on_candidate: read.on_candidate,
                    after: read.after,
                }
            });
            // Restores from the members' backups run one at a time: concurrent restic runs
            // against one repository wait on each other's locks (a 43 s restore was seen).
            if moved.iter().any(|m| m.backup.is_some()) {
                let mut out = Vec::new();
                for one in each {
                    out.push(one.await);
                }
                Ok(out)
            } else {
                Ok(futures::future::join_all(each).await)
            }
        })
        .await?;
    q.put_back.extend(outcomes);
    Ok(())
}

/// What a put-back read of one member: on the candidate, and after.
#[derive(Default)]
struct Read {
    on_candidate: Option<MemberBaseline>,
    after: Option<MemberBaseline>,
}

/// Puts one member back on the version it ran — for a restore-required candidate, suspended
/// and restored from its pre-promotion backup first, since the previous version cannot read
/// what the candidate wrote — and waits until its pod runs the image it ran before. A member
/// the batch only stopped for its backup is started again. Its pod, claims and world digests
/// are read on the candidate and after (for a restored member, the digests right after the
/// restore, before its game starts) into `read`, kept when a later step fails.
async fn put_back_one(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    m: &Moved,
    read: &mut Read,
) -> Result<(), CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let pod_name = names::pod(&m.member);
    let read_as = |what: &str| format!("rb-{}-{what}", m.member);
    if m.on_candidate {
        read.on_candidate =
            Some(member_state(ctx, plan, &m.member, read_as("candidate"), true).await?);
    }
    // `harness-put-back-repins-only` defect: a format-changing candidate is only re-pinned.
    let backup = m
        .backup
        .as_ref()
        .filter(|_| m.on_candidate && !ctx.harness_mutant(HarnessMutant::PutBackRepinsOnly));
    let mut restored = None;
    if let Some(backup) = backup {
        patch_server(
            ctx,
            &m.member,
            json!({"spec": {"version": m.version, "suspend": true}}),
        )
        .await?;
        await_server_phase(ctx, &m.member, "Suspended").await?;
        await_condition(&pods, &pod_name, conditions::deleted(), ctx.bounds.settle).await?;
        restore(
            ctx,
            plan,
            &plan.put_back_restore(&m.member),
            backup,
            &m.member,
        )
        .await?;
        // What the restore put back, before the game can save over it.
        let state = member_state(ctx, plan, &m.member, read_as("restored"), true).await?;
        restored = Some(state.digests.clone());
        read.after = Some(state);
        patch_server(ctx, &m.member, json!({"spec": {"suspend": m.suspend}})).await?;
    } else {
        let gs = get_server(ctx, &m.member).await?;
        if gs.spec.version != m.version || gs.spec.suspend != m.suspend {
            patch_server(
                ctx,
                &m.member,
                json!({"spec": {"version": m.version, "suspend": m.suspend}}),
            )
            .await?;
        }
    }
    if let Some(image) = &m.image {
        await_pod_running_image(ctx, &pods, &pod_name, image).await?;
        await_server_phase(ctx, &m.member, "Running").await?;
    }
    let mut now = member_state(ctx, plan, &m.member, read_as("after"), restored.is_none()).await?;
    if let Some(digests) = restored {
        now.digests = digests;
    }
    read.after = Some(now);
    Ok(())
}

/// Backs up every member of batch `batch`, one at a time, before it moves (step `back up batch
/// N`, one restic-snapshot receipt per member); returns each member's Backup and snapshot.
/// Each member is stopped for its backup and stays stopped until the batch moves it (the move
/// restarts it anyway): a backup of a stopped server holds exactly what is on its claims, read
/// just before, so the put-back can show the restore returned that very world. Recorded in
/// `moved` as it was before anything changed, so an unfinished step starts it again. One at a
/// time: concurrent copy Jobs into one repository were seen failing while saving their
/// snapshot (and concurrent restores taking 43 s).
async fn back_up_batch(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    batch: usize,
    members: &[String],
    moved: &Mutex<Vec<Moved>>,
) -> Result<Vec<WayBack>, CaseError> {
    let name = format!("back up batch {batch}");
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let taken = ctx
        .step(&name, async {
            let mut taken = Vec::new();
            for m in members {
                let mut was = Moved::as_it_is(ctx, m).await?;
                let previous = was.version.clone();
                let uid = pod_uid(ctx, m).await?;
                was.suspended_here = true;
                lock(moved).push(was);
                patch_server(ctx, m, json!({"spec": {"suspend": true}})).await?;
                await_server_phase(ctx, m, "Suspended").await?;
                await_condition(
                    &pods,
                    &names::pod(m),
                    conditions::deleted(),
                    ctx.bounds.settle,
                )
                .await?;
                let mut before = member_state(ctx, plan, m, format!("rb-{m}-before"), true).await?;
                before.pod_uid = uid;
                let backup = plan.pre_promotion_backup(m);
                let tags = tidy::pre_promotion_tags(&plan.run_id, &backup);
                // `harness-gated-before-backup-ended` defect: the backup is only started; the
                // batch moves while it runs and it is waited for after the gates.
                create_backup(ctx, plan, &backup, m, tags, Some(&previous)).await?;
                // In the journal before it is waited for: every way back is named there, even
                // one a second signal cuts short.
                ctx.recorder.step(
                    way_back::WAY_BACK_CREATED_STEP,
                    json!({"kind": "way-back", "member": m, "backup": backup, "previous": previous}),
                )?;
                let (snapshot, succeeded_unix_ms) =
                    if ctx.harness_mutant(HarnessMutant::GatedBeforeBackupEnded) {
                        (String::new(), None)
                    } else {
                        (await_backup(ctx, &backup).await?, Some(unix_ms()))
                    };
                if let Some(was) = lock(moved).iter_mut().find(|w| &w.member == m) {
                    was.before = Some(before);
                }
                taken.push(WayBack {
                    server: m.clone(),
                    backup,
                    snapshot,
                    succeeded_unix_ms,
                    previous,
                    kept_because: None,
                });
            }
            Ok(taken)
        })
        .await?;
    for w in taken.iter().filter(|w| w.succeeded_unix_ms.is_some()) {
        ctx.recorder.restic_snapshot(
            &name,
            &w.snapshot,
            json!({"backup": w.backup, "server": w.server}),
        )?;
    }
    Ok(taken)
}

/// The batch's pre-promotion backups, each waited for if it was not yet (only the
/// `harness-gated-before-backup-ended` defect leaves one running while its member moves); a
/// backup that did not succeed keeps no time and no snapshot.
async fn backups_ended(ctx: &CaseContext<'_>, mut backups: Vec<WayBack>) -> Vec<WayBack> {
    for w in backups.iter_mut().filter(|w| w.succeeded_unix_ms.is_none()) {
        if let Ok(snapshot) = await_backup(ctx, &w.backup).await {
            w.snapshot = snapshot;
            w.succeeded_unix_ms = Some(unix_ms());
        }
    }
    backups
}

/// A promoted batch's pre-promotion Backups are kept as its members' way back: no longer
/// labelled with the run (so the tidy-up leaves the object, and their own snapshot tags keep
/// the restic snapshot), recorded in the qualification.
async fn keep_way_back(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    q: &mut Qualification,
    backups: Vec<WayBack>,
) -> Result<(), CaseError> {
    let api: Api<gameplane_api::backup::Backup> =
        Api::namespaced(ctx.client.clone(), &ctx.namespace);
    for w in backups {
        let patch = json!({"metadata": {"labels": {
            tidy::RUN_LABEL: null,
            "rehearsal.local/way-back-of": plan.run_id,
        }}});
        api.patch(
            &w.backup,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .map_err(CaseError::kube(
            "label Backup as a way back",
            format!("{}/{}", ctx.namespace, w.backup),
        ))?;
        q.way_back.push(w);
    }
    Ok(())
}

/// The image `member`'s game container runs, if it has a pod.
async fn game_image(ctx: &CaseContext<'_>, member: &str) -> Result<Option<String>, CaseError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = names::pod(member);
    let pod = pods.get_opt(&name).await.map_err(CaseError::kube(
        "get Pod",
        format!("{}/{name}", ctx.namespace),
    ))?;
    Ok(pod
        .and_then(|p| p.spec)
        .and_then(|s| {
            s.containers
                .into_iter()
                .find(|c| c.name == names::containers::GAME)
        })
        .and_then(|c| c.image))
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
