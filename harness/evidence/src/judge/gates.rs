//! The qualification's decisions, as pure functions over what its gates observed: whether each
//! gate passed and why not, what a rollback left wrong, how the fleet is cut into batches, and
//! what a batch's gates mean for the rollout. The harness reads the cluster and calls these;
//! nothing here reaches a cluster, so each decision is tested on recorded observations.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::qualification::{ClaimReadBack, Gate, ImageEvidence, ModuleEvidence, Outcome};

/// A gate's decision: whether it passed, and the reason it gives when it did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the gate passed.
    pub passed: bool,
    /// Why it did not (the gate records it; for a pass it says what a failure would have been).
    pub reason: String,
}

/// A world claim as a read-back saw it (the fields the gates judge).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRead {
    /// Content digest (hex SHA-256 over the claim's files).
    pub digest: String,
    /// Number of files in the digest.
    pub files: u64,
    /// Whether the save is torn (region and manifest disagree, or one is unreadable).
    pub torn: bool,
    /// Why it is torn or unreadable, when it is.
    pub problem: Option<String>,
    /// What the read-back tool recognised the data as, as it names it.
    pub kind: Value,
    /// The save format, when the tool knows it.
    pub format: Option<u32>,
    /// Whether the candidate-only marker is in the data.
    pub candidate_marker: bool,
}

/// The digest of a claim without any file (SHA-256 of nothing).
pub const EMPTY_DIGEST: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The digest part of a digest-pinned image (`repo@sha256:…` → `sha256:…`); the whole string
/// when it has no `@`.
pub fn candidate_digest(image: &str) -> &str {
    image.rsplit_once('@').map(|(_, d)| d).unwrap_or(image)
}

/// The image gate: the game container ran (`ran`: `Err` with why it did not) and its
/// `imageID` ends with the digest the candidate is pinned to.
pub fn image(evidence: &ImageEvidence, ran: Result<(), &str>) -> Decision {
    let digest = candidate_digest(&evidence.pinned);
    let matches = !evidence.image_id.is_empty() && evidence.image_id.ends_with(digest);
    let reason = match ran {
        Err(e) => format!(
            "the game container did not run: waiting reason {}; GameServer phase {} ({}); {e}",
            evidence.waiting_reason.as_deref().unwrap_or("none"),
            evidence.gameserver_phase.as_deref().unwrap_or("none"),
            evidence
                .gameserver_ready_reason
                .as_deref()
                .unwrap_or("no Ready reason"),
        ),
        Ok(()) => format!(
            "the game container runs imageID {:?}, not the pinned digest {digest} (pod spec image {})",
            evidence.image_id, evidence.spec_image
        ),
    };
    Decision {
        passed: ran.is_ok() && matches,
        reason,
    }
}

/// Why the image gate's pod did not run, with the bound it really used: the pod's wait names
/// its own bound (`error`), but the gate waited for the generation and the StatefulSet's
/// revision before it and for the GameServer's verdict after it, so the reason says how long
/// it waited in all (`waited`) and each bound.
pub fn did_not_run(
    error: &str,
    waited: std::time::Duration,
    pod_bound: std::time::Duration,
    verdict_bound: std::time::Duration,
) -> String {
    format!(
        "{error} (the image gate waited {} s in all: the generation and the StatefulSet's revision, then the pod up to {} s, then the GameServer's verdict up to {} s)",
        waited.as_secs(),
        pod_bound.as_secs(),
        verdict_bound.as_secs()
    )
}

/// The save gate: one of the game's RCON replies says "Saved the game".
pub fn save(replies: &[String]) -> Decision {
    Decision {
        passed: replies.iter().any(|r| r.contains("Saved the game")),
        reason: format!("the game replied {replies:?}, not \"Saved the game\""),
    }
}

/// The module gate: the registry serves exactly the pinned digest for the bundle's reference,
/// and the operator's Module is Ready with exactly that digest applied. `pinned` is the digest
/// compared against (the evidence's pin, unless the self-test weakens the gate). The reason is
/// `None` when both hold.
pub fn module(evidence: &ModuleEvidence, pinned: &str) -> (bool, Option<String>) {
    let served_ok = evidence.served.as_deref() == Some(pinned);
    let operator_ok = evidence.phase.as_deref() == Some("Ready")
        && evidence.applied_digest.as_deref() == Some(pinned);
    let template_ok = evidence.template.as_ref().is_some_and(|t| t.matches());
    let operator = format!(
        "the operator's Module {} is {} ({}: {})",
        evidence.module,
        evidence.phase.as_deref().unwrap_or("without a phase"),
        evidence
            .ready_reason
            .as_deref()
            .unwrap_or("no Ready reason"),
        evidence.ready_message.as_deref().unwrap_or(""),
    );
    let reason = if !served_ok {
        Some(format!(
            "module bundle {}: the registry serves {}, but the candidate pins {}; {operator}",
            evidence.reference,
            evidence.served.as_deref().unwrap_or("no such tag"),
            evidence.pinned,
        ))
    } else if !operator_ok {
        Some(format!(
            "module bundle {}: the registry serves the pinned {}, but the operator did not install exactly it (applied {}); {operator}",
            evidence.reference,
            evidence.pinned,
            evidence.applied_digest.as_deref().unwrap_or("nothing"),
        ))
    } else if !template_ok {
        Some(format!(
            "module bundle {}: the operator reports the pinned {} installed, but {}; {operator}",
            evidence.reference,
            evidence.pinned,
            template_mismatch(evidence.template.as_deref()),
        ))
    } else {
        None
    };
    (served_ok && operator_ok && template_ok, reason)
}

/// Why the installed GameTemplate is not known to be the pinned bundle's.
fn template_mismatch(t: Option<&crate::qualification::TemplateComparison>) -> String {
    let Some(t) = t else {
        return "the installed GameTemplate was not compared with the pinned bundle".into();
    };
    match (&t.pinned, &t.installed) {
        (None, _) => format!(
            "the pinned bundle's template could not be read to compare GameTemplate {} with ({})",
            t.name,
            t.unread.as_deref().unwrap_or("no reason recorded")
        ),
        (Some(_), None) => format!("no GameTemplate {} was installed", t.name),
        (Some(_), Some(_)) => format!(
            "GameTemplate {} is not the pinned bundle's template (differs in {})",
            t.name,
            if t.differs.is_empty() {
                "its spec".to_string()
            } else {
                t.differs.join(", ")
            }
        ),
    }
}

/// The read-back gate: every claim in `claims` was read `now`, is not torn, and holds files
/// if it held files `before` the candidate ran; and something was read at all. Returns the
/// decision and each read claim's row for the evidence.
pub fn read_back(
    claims: &[String],
    before: &BTreeMap<String, ClaimRead>,
    now: &BTreeMap<String, ClaimRead>,
) -> (Decision, BTreeMap<String, ClaimReadBack>) {
    let mut bad = Vec::new();
    let mut rows = BTreeMap::new();
    for claim in claims {
        let was = before.get(claim);
        let Some(read) = now.get(claim) else {
            bad.push(format!("{claim} was not read"));
            continue;
        };
        if read.files == 0 && was.is_some_and(|w| w.files > 0) {
            bad.push(format!(
                "{claim} holds no files under the candidate ({} before)",
                was.map(|w| w.files).unwrap_or(0)
            ));
        }
        if read.torn {
            bad.push(format!(
                "{claim} is torn: {}",
                read.problem
                    .as_deref()
                    .unwrap_or("the save is inconsistent")
            ));
        }
        rows.insert(
            claim.clone(),
            ClaimReadBack {
                digest_before: was.map(|w| w.digest.clone()),
                files_before: was.map(|w| w.files),
                digest: read.digest.clone(),
                files: read.files,
                changed: was.map(|w| w.digest != read.digest),
                kind: read.kind.clone(),
                format: read.format,
                candidate_marker: read.candidate_marker,
            },
        );
    }
    let decision = Decision {
        passed: bad.is_empty() && !now.is_empty(),
        reason: format!("world claims did not read back: {}", bad.join("; ")),
    };
    (decision, rows)
}

/// A digest shortened for a reason line (`(not read)` when there is none).
pub fn short(digest: Option<&str>) -> String {
    match digest {
        Some(d) => d.chars().take(12).collect(),
        None => "(not read)".into(),
    }
}

/// What the seeding restore left empty: a clone claim (`<clone><suffix>`) that restored no file
/// while the source's claim of the same suffix holds data (its baseline digest is not the empty
/// one). `source_digests` is the source's baseline (none: nothing to compare with).
pub fn unseeded_claims(
    claims: &[String],
    clone: &str,
    source: &str,
    source_digests: Option<&BTreeMap<String, String>>,
    restored: &BTreeMap<String, ClaimRead>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for claim in claims {
        let Some(suffix) = claim.strip_prefix(clone) else {
            continue;
        };
        let source_claim = format!("{source}{suffix}");
        let source_has_data = source_digests
            .and_then(|d| d.get(&source_claim))
            .is_some_and(|d| d != EMPTY_DIGEST);
        let restored_files = restored.get(claim).map(|i| i.files).unwrap_or(0);
        if source_has_data && restored_files == 0 {
            problems.push(format!(
                "{claim}: the snapshot restored no files, but the source's {source_claim} holds data (the backup does not cover it)"
            ));
        }
    }
    problems
}

/// A restore-required rollback: every claim holds exactly the snapshot's digest (`snapshot`:
/// what the claims held right after the seeding restore; `back`: after the rollback restore).
pub fn restore_mismatches(
    claims: &[String],
    snapshot: &BTreeMap<String, ClaimRead>,
    back: &BTreeMap<String, ClaimRead>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for claim in claims {
        let want = snapshot.get(claim).map(|i| i.digest.as_str());
        let got = back.get(claim).map(|i| i.digest.as_str());
        if want != got {
            problems.push(format!(
                "{claim}: digest {} after the rollback restore, not the snapshot's {} (the claim does not hold exactly the snapshot)",
                short(got),
                short(want)
            ));
        }
    }
    problems
}

/// After a rollback every claim reads back, is not torn, and holds files where the snapshot
/// (`restored`) did.
pub fn unsound_after_rollback(
    claims: &[String],
    restored: &BTreeMap<String, ClaimRead>,
    readback: &BTreeMap<String, ClaimRead>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for claim in claims {
        match readback.get(claim) {
            None => problems.push(format!("{claim} was not read after the rollback")),
            Some(i) if i.torn => problems.push(format!(
                "{claim} is torn after the rollback: {}",
                i.problem.as_deref().unwrap_or("the save is inconsistent")
            )),
            Some(i) if i.files == 0 && restored.get(claim).is_some_and(|w| w.files > 0) => {
                problems.push(format!("{claim} holds no files after the rollback"))
            }
            Some(_) => {}
        }
    }
    problems
}

/// A fleet member as the preflight read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Member {
    /// No such GameServer.
    Missing,
    /// It pins this version (`spec.version`); empty when it tracks the template's default.
    Pins(String),
}

/// How a fleet member stands apart from its version, as the preflight reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberState {
    /// Its name.
    pub name: String,
    /// `spec.suspend` is true: it has no pod, so no gate can run on it.
    pub suspended: bool,
    /// `spec.image`, when set: it runs that image whatever version it pins.
    pub image_override: Option<String>,
}

/// The preflight's refusal of members that can never pass a promotion batch's gates: one left
/// suspended (an earlier run killed while it was stopped for its backup leaves it so), and one
/// whose `spec.image` overrides its version (it runs that image whatever version it pins, so
/// it can never run the candidate). `None` when every member can run the candidate.
pub fn member_state_refusal(namespace: &str, members: &[MemberState]) -> Option<String> {
    let suspended: Vec<&str> = members
        .iter()
        .filter(|m| m.suspended)
        .map(|m| m.name.as_str())
        .collect();
    let overriding: Vec<String> = members
        .iter()
        .filter_map(|m| {
            let image = m.image_override.as_deref().filter(|i| !i.is_empty())?;
            Some(format!("{} (spec.image {image})", m.name))
        })
        .collect();
    let mut refusals = Vec::new();
    if !suspended.is_empty() {
        refusals.push(format!(
            "fleet member(s) {} in namespace {namespace} are suspended (spec.suspend: true), so no gate can run on them; resume each (`kubectl -n {namespace} patch gameserver NAME --type merge -p '{{\"spec\":{{\"suspend\":null}}}}'`) or leave it out of --fleet",
            suspended.join(", ")
        ));
    }
    if !overriding.is_empty() {
        refusals.push(format!(
            "fleet member(s) {} in namespace {namespace} override their image, so they run it whatever version they pin and can never run the candidate; remove the override (`kubectl -n {namespace} patch gameserver NAME --type merge -p '{{\"spec\":{{\"image\":null}}}}'`) or leave them out of --fleet",
            overriding.join(", ")
        ));
    }
    (!refusals.is_empty()).then(|| refusals.join("; and "))
}

/// The preflight's refusal of the fleet (`members`: each server of the fleet and the source,
/// as read), or `None`: a member that does not exist; a member that tracks the template's
/// default version (it would adopt the candidate by itself) unless `tracking_allowed` (the
/// self-test's weakened gate); members already on the candidate ("nothing to promote" when
/// that is every member).
pub fn fleet_refusal(
    namespace: &str,
    candidate: &str,
    members: &[(String, Member)],
    tracking_allowed: bool,
) -> Option<String> {
    let names = |want: &dyn Fn(&Member) -> bool| -> Vec<String> {
        members
            .iter()
            .filter(|(_, m)| want(m))
            .map(|(n, _)| n.clone())
            .collect()
    };
    let missing = names(&|m| *m == Member::Missing);
    if !missing.is_empty() {
        return Some(format!(
            "GameServer(s) {} do not exist in namespace {namespace}; name the fleet's members with --fleet and --source",
            missing.join(", ")
        ));
    }
    let floating = names(&|m| matches!(m, Member::Pins(v) if v.is_empty()));
    if !floating.is_empty() && !tracking_allowed {
        return Some(format!(
            "fleet member(s) {} track the template's default version and would adopt the candidate automatically; pin spec.version on each",
            floating.join(", ")
        ));
    }
    let on_candidate = names(&|m| matches!(m, Member::Pins(v) if !v.is_empty() && v == candidate));
    if on_candidate.is_empty() {
        None
    } else if on_candidate.len() == members.len() {
        Some(format!(
            "nothing to promote: every fleet member ({}) already runs version {candidate}; a candidate must differ from the version the fleet runs",
            on_candidate.join(", ")
        ))
    } else {
        Some(format!(
            "fleet member(s) {} already run version {candidate} (the candidate): a rollback to it or a promotion to it proves nothing; leave them out of --fleet and pick a --source on the version the fleet runs",
            on_candidate.join(", ")
        ))
    }
}

/// The preflight's refusal of the repository Secret `secret` (`repo` and `password`: its keys'
/// values, `None` when absent or empty), or `None`: both keys present and `repo` a restic REST
/// URL (the copy Jobs reach the repository over the network).
pub fn repository_refusal(
    secret: &str,
    repo: Option<&str>,
    password: Option<&str>,
) -> Option<String> {
    let missing: Vec<&str> = [("repo", repo), ("password", password)]
        .into_iter()
        .filter(|(_, v)| v.is_none_or(str::is_empty))
        .map(|(k, _)| k)
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "repository Secret {secret} lacks key(s) {}: it needs repo (rest:http://HOST:PORT/PATH) and password",
            missing.join(", ")
        ));
    }
    let repo = repo.unwrap_or_default();
    if repo.starts_with("rest:http://") || repo.starts_with("rest:https://") {
        None
    } else {
        Some(format!(
            "repository Secret {secret} has repo {repo:?}, not a restic REST URL: the copy Jobs reach the repository over the network; use rest:http://HOST:PORT/PATH"
        ))
    }
}

/// The fleet in promotion order, cut into batches of `size` members (a size of 0 counts as 1);
/// the last batch holds the rest.
pub fn batches(fleet: &[String], size: usize) -> Vec<Vec<String>> {
    fleet.chunks(size.max(1)).map(<[String]>::to_vec).collect()
}

/// The qualification halted at `gate` after `batches_promoted` batches were promoted.
pub fn halted(gate: &Gate, batches_promoted: usize) -> Outcome {
    Outcome::Halted {
        gate: gate.name.clone(),
        server: (!gate.server.is_empty()).then(|| gate.server.clone()),
        reason: gate
            .reason
            .clone()
            .unwrap_or_else(|| "the gate failed".into()),
        batches_promoted,
    }
}

/// What a promotion batch's gates decide, `promoted` batches having passed before it: every
/// member of the batch passed every `required` gate, so `promoted + 1` batches are promoted and
/// the rollout goes on (`Ok`). Otherwise it halts (`Err`), `<batch>: <gate>` naming the first
/// failed gate in `gates` or, when none failed, the first required gate a member never passed
/// (a member whose gates were stopped or skipped is not promoted ungated).
pub fn after_batch(
    batch: &str,
    members: &[String],
    required: &[&str],
    gates: &[Gate],
    promoted: usize,
) -> Result<usize, Outcome> {
    if let Some(failed) = gates.iter().find(|g| !g.passed) {
        let mut outcome = halted(failed, promoted);
        if let Outcome::Halted { gate, .. } = &mut outcome {
            *gate = format!("{batch}: {}", failed.name);
        }
        return Err(outcome);
    }
    for member in members {
        for name in required {
            if !gates
                .iter()
                .any(|g| &g.server == member && g.name == *name && g.passed)
            {
                return Err(Outcome::Halted {
                    gate: format!("{batch}: {name}"),
                    server: Some(member.clone()),
                    reason: format!("{member} was not gated: its gate \"{name}\" never ran"),
                    batches_promoted: promoted,
                });
            }
        }
    }
    Ok(promoted + 1)
}

/// Whether a member put back from its pre-promotion backup holds exactly the world it had
/// before its batch moved: the same PVC UIDs for every claim it had (never recreated; a claim
/// the candidate added, such as its mods, may stay), and every world claim's digest
/// after the put-back equal to the one read before (while it was stopped for its backup).
/// `Err` names the first difference, or what was never read.
pub fn world_put_back(p: &crate::qualification::PutBack) -> Result<(), String> {
    let (Some(before), Some(after)) = (&p.before, &p.after) else {
        return Err(format!(
            "{}: its world was not read {} the put-back",
            p.server,
            if p.before.is_none() {
                "before"
            } else {
                "after"
            }
        ));
    };
    if before.digests.is_empty() {
        return Err(format!("{}: no world claim was read before", p.server));
    }
    // A claim the candidate added (its mods) may stay; none the member had may change.
    for (claim, uid) in &before.pvcs {
        let now = after.pvcs.get(claim);
        if now != Some(uid) {
            return Err(format!(
                "{}: PVC UIDs changed: claim {claim} was {uid}, is {}",
                p.server,
                now.map_or("gone", String::as_str)
            ));
        }
    }
    for (claim, digest) in &before.digests {
        let now = after.digests.get(claim);
        if now != Some(digest) {
            return Err(format!(
                "{}: claim {claim} holds {} after the put-back, {} before",
                p.server,
                short(now.map(String::as_str)),
                short(Some(digest))
            ));
        }
    }
    if let Some(extra) = after
        .digests
        .keys()
        .find(|c| !before.digests.contains_key(*c))
    {
        return Err(format!(
            "{}: claim {extra} was read after the put-back but not before",
            p.server
        ));
    }
    Ok(())
}
