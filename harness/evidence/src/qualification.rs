//! What a rollout qualification records: its plan, each gate's result, the fleet before and
//! after, and how it ended. Plain data, written by the harness's `qualify` procedure into the
//! bundle (`qualification.json`) and rendered by [`crate::report::qualification`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::pvc_table::PvcObservation;
/// How the candidate must be rolled back on the clone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rollback {
    /// Re-pin the previous version; the save must be readable directly.
    Compatible,
    /// Restore the pre-candidate snapshot, then re-pin; the world claims must hold exactly the
    /// snapshot again (the same digests as before the candidate ran).
    RestoreRequired,
}

/// What to qualify.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// The GameTemplate holding the candidate version.
    pub template: String,
    /// The fleet member whose backup seeds the canary clone.
    pub source: String,
    /// Fleet members, promoted in this order.
    pub fleet: Vec<String>,
    /// Members per promotion batch (at least 1).
    pub batch_size: usize,
    /// The candidate version id (its image must be pinned by digest).
    pub candidate: String,
    /// How the clone is rolled back after the candidate ran on it.
    pub rollback: Rollback,
    /// Labels every object the run creates (the harness's run label); a valid label value.
    pub run_id: String,
    /// The Secret naming the restic repository the source's backup goes to (key `repo`).
    pub repo_secret: String,
    /// The module bundle the candidate carries, pinned by digest (CONTRACT C.8): verified at
    /// the module bundle gate before the candidate reaches the clone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<ModulePin>,
    /// Leave the members of a failed promotion batch on the candidate, for inspection
    /// (`--no-rollback`); by default they are put back on their version.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_failed_batch: bool,
    /// How many members of a promotion batch are gated at once (at least 1). A plan recorded
    /// before batches were gated together reads as 1, as they were.
    #[serde(default = "one")]
    pub gate_concurrency: usize,
}

fn one() -> usize {
    1
}

/// A module bundle pinned by digest: module `module` of ModuleSource `source` at `version`,
/// whose manifest must be `digest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModulePin {
    /// The ModuleSource the bundle is pulled from.
    pub source: String,
    /// The module's name in the source.
    pub module: String,
    /// The bundle version (its tag).
    pub version: String,
    /// The pinned manifest digest (`sha256:…`).
    pub digest: String,
}

impl std::str::FromStr for ModulePin {
    type Err = String;

    /// `SOURCE/MODULE:VERSION@sha256:<64 hex digits>`.
    fn from_str(s: &str) -> Result<Self, String> {
        let usage = |what: &str| {
            format!(
                "module bundle {s:?}: {what}; write it as SOURCE/MODULE:VERSION@sha256:<64 hex digits> (the ModuleSource, the module, its tag and the manifest digest it must have)"
            )
        };
        let (reference, digest) = s.split_once('@').ok_or_else(|| usage("no @digest"))?;
        let hex = digest
            .strip_prefix("sha256:")
            .ok_or_else(|| usage("the digest is not sha256:…"))?;
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return Err(usage("the digest is not 64 lower-case hex digits"));
        }
        let (source, rest) = reference
            .split_once('/')
            .ok_or_else(|| usage("no SOURCE/ before the module"))?;
        let (module, version) = rest
            .split_once(':')
            .ok_or_else(|| usage("no :VERSION after the module"))?;
        if [source, module, version].iter().any(|p| p.is_empty()) {
            return Err(usage("an empty part"));
        }
        Ok(ModulePin {
            source: source.into(),
            module: module.into(),
            version: version.into(),
            digest: digest.into(),
        })
    }
}

impl std::fmt::Display for ModulePin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}:{}@{}",
            self.source, self.module, self.version, self.digest
        )
    }
}

impl Plan {
    /// The Backup of the source that seeds the clone.
    pub fn backup_name(&self) -> String {
        format!("qualify-{}", self.source)
    }
    /// The Backup of `member` taken before its promotion batch moves it (restore-required
    /// candidates): named after the run (a short hash of its id), since a promoted member's is
    /// kept after it.
    pub fn pre_promotion_backup(&self, member: &str) -> String {
        format!("qualify-{member}-pre-{}", dns_part(&self.run_id))
    }
    /// The Restore that puts `member` back from its pre-promotion backup.
    pub fn put_back_restore(&self, member: &str) -> String {
        format!("qualify-{member}-put-back-{}", dns_part(&self.run_id))
    }
    /// The Restore that seeds the clone, and the one that rolls it back.
    pub fn restore_names(&self) -> [String; 2] {
        [
            format!("qualify-{}-clone", self.source),
            format!("qualify-{}-rollback", self.source),
        ]
    }
    /// The servers whose pods, claims and world digests are observed before and after: the
    /// fleet, then the source when it is not a member (its baseline is what the snapshot must
    /// seed).
    pub fn observed(&self) -> Vec<String> {
        let mut servers = self.fleet.clone();
        if !servers.contains(&self.source) {
            servers.push(self.source.clone());
        }
        servers
    }
}

/// The gates, by name (CONTRACT C.2, C.4, C.5).
pub mod gates {
    /// The plan can be carried out (fleet, template, a digest-pinned candidate, what the gates
    /// need), checked before anything is changed.
    pub const PREFLIGHT: &str = "preflight";
    /// The candidate's module bundle is served with the digest it is pinned to, and the
    /// operator installed exactly that bundle (CONTRACT C.8).
    pub const MODULE: &str = "module bundle matches its pin";
    /// The server's pod runs the candidate image by its pinned digest.
    pub const IMAGE: &str = "pod runs the pinned image";
    /// A real Minecraft client joins and reaches the play state.
    pub const JOIN: &str = "real Minecraft join reaches play";
    /// The game answers a save over RCON with "Saved the game".
    pub const SAVE: &str = "a save succeeds";
    /// The world claims' content digests read back, before and after the candidate ran.
    pub const READ_BACK: &str = "world data reads back (digests before and after)";
    /// The clone returns to the previous version (and, if required, its snapshot).
    pub const ROLLBACK: &str = "rollback";
}

/// One gate's result. Its evidence is typed by gate ([`GateEvidence`]); deserializing a gate
/// refuses evidence that is not its gate's (an unknown or missing field is named).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "GateRecord")]
pub struct Gate {
    /// One of [`gates`] (the gate its evidence belongs to).
    pub name: String,
    /// The server it was judged on (the clone or a fleet member).
    pub server: String,
    /// Whether the gate held.
    pub passed: bool,
    /// One line: what was observed that failed it.
    pub reason: Option<String>,
    /// What the gate observed (the report shows it beside the verdict).
    pub evidence: GateEvidence,
    /// When the gate started (Unix milliseconds).
    #[serde(default)]
    pub started_unix_ms: u64,
    /// How long the gate took, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
}

impl Gate {
    /// The gate its `evidence` belongs to, judged on `server` (a passed gate keeps no reason),
    /// not yet timed.
    pub fn new(server: &str, evidence: GateEvidence, passed: bool, reason: Option<String>) -> Self {
        Gate {
            name: evidence.gate().into(),
            server: server.into(),
            passed,
            reason: if passed { None } else { reason },
            evidence,
            started_unix_ms: 0,
            duration_ms: 0,
        }
    }
}

/// A [`Gate`] as written, before its evidence is read by its gate's type.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GateRecord {
    name: String,
    server: String,
    passed: bool,
    reason: Option<String>,
    evidence: Value,
    #[serde(default)]
    started_unix_ms: u64,
    #[serde(default)]
    duration_ms: u64,
}

impl TryFrom<GateRecord> for Gate {
    type Error = String;

    fn try_from(r: GateRecord) -> Result<Self, String> {
        let evidence = GateEvidence::parse(&r.name, r.evidence)
            .map_err(|e| format!("the evidence of gate {:?}: {e}", r.name))?;
        Ok(Gate {
            name: r.name,
            server: r.server,
            passed: r.passed,
            reason: r.reason,
            evidence,
            started_unix_ms: r.started_unix_ms,
            duration_ms: r.duration_ms,
        })
    }
}

/// How a qualification ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Every gate passed and every batch was promoted.
    Promoted {
        /// How many batches were promoted.
        batches: usize,
    },
    /// A gate failed: nothing (more) was promoted.
    Halted {
        /// One of [`gates`], or `promotion batch N: <gate>`.
        gate: String,
        /// The server the gate failed on (none for the preflight).
        server: Option<String>,
        /// What was observed, in one line.
        reason: String,
        /// Batches fully promoted before the halt.
        batches_promoted: usize,
    },
}

impl Outcome {
    /// `promoted in N batch(es)` or `halted at gate "<gate>" on <server> …: <reason>`, the
    /// reason made short ([`short_reason`]).
    pub fn line(&self) -> String {
        match self {
            Outcome::Promoted { batches } => format!("promoted in {batches} batch(es)"),
            Outcome::Halted {
                gate,
                server,
                reason,
                batches_promoted,
            } => format!(
                "halted at gate {gate:?}{} after {batches_promoted} promoted batch(es): {}",
                server
                    .as_ref()
                    .map(|s| format!(" on {s}"))
                    .unwrap_or_default(),
                short_reason(reason)
            ),
        }
    }

    /// The decision an approver reads: `promote N batches` or `halted at <gate> on <member>:
    /// <reason>`, the reason made short ([`short_reason`]).
    pub fn decision(&self) -> String {
        match self {
            Outcome::Promoted { batches } => format!(
                "promote {batches} batch{}",
                if *batches == 1 { "" } else { "es" }
            ),
            Outcome::Halted {
                gate,
                server,
                reason,
                ..
            } => format!(
                "halted at {gate}{}: {}",
                server
                    .as_ref()
                    .map(|s| format!(" on {s}"))
                    .unwrap_or_default(),
                short_reason(reason)
            ),
        }
    }
}

/// The longest reason a verdict line carries whole.
pub const SHORT_REASON_CHARS: usize = 240;

/// A gate's reason as a verdict line carries it: whole when it is short. Else, with the wait's
/// `; last observed: …` tail dropped and every SHA-256 digest cut to 12 hex digits: that, when
/// it fits in [`SHORT_REASON_CHARS`]; else its first clause (up to the first `; `, when that
/// fits and keeps at least 40 characters); else its first [`SHORT_REASON_CHARS`] cut at a
/// word. A cut reason ends with ` …`: the full reason is in the report once, in the failing
/// gate's section.
pub fn short_reason(reason: &str) -> String {
    let reason = reason.trim();
    if reason.chars().count() <= SHORT_REASON_CHARS {
        return reason.to_string();
    }
    let mut r = match reason.find("; last observed: ") {
        Some(i) => reason[..i].to_string(),
        None => reason.to_string(),
    };
    r = abbreviate_digests(&r);
    if r.chars().count() <= SHORT_REASON_CHARS {
        return format!("{r} …");
    }
    if let Some((first, _)) = r.split_once("; ")
        && (40..=SHORT_REASON_CHARS).contains(&first.chars().count())
    {
        return format!("{first} …");
    }
    let cut: String = r.chars().take(SHORT_REASON_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i >= 40 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{} …", cut.trim_end_matches([',', ';', ':', ' ']))
}

/// `sha256:` followed by more than 12 hex digits, cut to 12 and `…`.
fn abbreviate_digests(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("sha256:") {
        let (head, tail) = rest.split_at(i + "sha256:".len());
        out.push_str(head);
        let hex = tail.chars().take_while(char::is_ascii_hexdigit).count();
        if hex > 12 {
            out.push_str(&tail[..12]);
            out.push('…');
        } else {
            out.push_str(&tail[..hex]);
        }
        rest = &tail[hex..];
    }
    out.push_str(rest);
    out
}

/// The whole record of a qualification.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Qualification {
    /// What was asked for.
    pub plan: Plan,
    /// The canary clone of the source the candidate ran on ([`clone_name`]).
    pub clone: String,
    /// The candidate's image as the template pins it (`repo@sha256:…`), once the preflight read
    /// it.
    #[serde(default)]
    pub candidate_image: Option<String>,
    /// The version the source (and so the clone) ran before the candidate.
    #[serde(default)]
    pub previous: Option<String>,
    /// Fleet members when the qualification began.
    pub baseline: Vec<MemberBaseline>,
    /// Fleet members and the clone when the qualification ended.
    #[serde(default)]
    pub after: Vec<MemberBaseline>,
    /// The restic snapshot of the source's backup that seeded the clone, once taken.
    pub snapshot: Option<String>,
    /// Every gate judged, in order; the last one failed if the qualification halted.
    pub gates: Vec<Gate>,
    /// The clone's claims before the candidate ran.
    pub clone_pvcs_before: Vec<PvcObservation>,
    /// The clone's claims after the candidate (and any rollback).
    pub clone_pvcs_after: Vec<PvcObservation>,
    /// Promotion receipts written (one per batch promoted or attempted).
    pub promotion_receipts: usize,
    /// Members a promotion batch moved to the candidate and then put back on their version
    /// because the batch failed a gate, was interrupted or could not complete, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub put_back: Vec<PutBack>,
    /// For a restore-required candidate: each promoted member's backup taken before its batch
    /// moved, kept after the run as its way back to the previous save format.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub way_back: Vec<WayBack>,
    /// For a restore-required candidate: every member's backup taken before its batch moved
    /// (promoted, put back or not), with when the harness saw it succeed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backed_up: Vec<WayBack>,
    /// How it ended.
    pub outcome: Outcome,
    /// Set when a signal stopped it: which, how, and what a fresh read of the cluster showed
    /// left on the candidate afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interruption>,
}

/// A qualification a signal stopped.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Interruption {
    /// `SIGINT` or `SIGTERM`.
    pub signal: String,
    /// A second signal (or the grace running out) stopped the procedure at once, before it put
    /// back the batch under way.
    pub at_once: bool,
    /// Members a fresh read of the cluster showed on the candidate outside a promoted batch when
    /// the run ended, in fleet order.
    #[serde(default)]
    pub left_on_candidate: Vec<String>,
    /// The step the procedure did not start because of it, when it stopped at a step boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_step: Option<String>,
}

impl Qualification {
    /// Members of the batches promoted so far, in fleet order.
    pub fn promoted_members(&self) -> Vec<String> {
        let batches = match &self.outcome {
            Outcome::Promoted { batches } => *batches,
            Outcome::Halted {
                batches_promoted, ..
            } => *batches_promoted,
        };
        self.plan
            .fleet
            .iter()
            .take(batches.saturating_mul(self.plan.batch_size.max(1)))
            .cloned()
            .collect()
    }

    /// The decision of an interrupted qualification, from what it promoted (its receipts) and
    /// what a fresh read showed: `not qualified: interrupted by SIGINT after promoting 1 batch
    /// (it stays on the candidate: a); left on the candidate, not put back: b (see Way back)`;
    /// `None` when no signal stopped it.
    pub fn interrupted_decision(&self) -> Option<String> {
        let i = self.interrupted.as_ref()?;
        let batches = match &self.outcome {
            Outcome::Promoted { batches } => *batches,
            Outcome::Halted {
                batches_promoted, ..
            } => *batches_promoted,
        };
        let mut line = format!("not qualified: interrupted by {}", i.signal);
        if let Some(step) = &i.before_step {
            line.push_str(&format!(" before step {step:?}"));
        }
        if i.at_once {
            line.push_str(" (a second signal stopped it at once)");
        }
        if batches == 0 {
            line.push_str("; nothing was promoted");
        } else {
            line.push_str(&format!(
                "; promoted {batches} batch{}, then interrupted: {} stay{} on the candidate",
                if batches == 1 { "" } else { "es" },
                self.promoted_members().join(", "),
                if self.promoted_members().len() == 1 {
                    "s"
                } else {
                    ""
                }
            ));
        }
        if !i.left_on_candidate.is_empty() {
            line.push_str(&format!(
                "; left on the candidate, not put back: {} (see Way back)",
                i.left_on_candidate.join(", ")
            ));
        }
        Some(line)
    }
}

/// A member of a failed or unfinished promotion batch, moved to the candidate and put back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PutBack {
    /// The promotion batch (1-based).
    pub batch: usize,
    /// The GameServer's name.
    pub server: String,
    /// The version it was put back on (the one it ran before the batch).
    pub version: String,
    /// Why the batch was undone, in one line (`interrupted by SIGINT`, the halt, an error).
    pub why: String,
    /// Why putting it back failed, if it did: the member may still run the candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its pod UID, PVC UIDs and world digests before the batch moved it: for a
    /// restore-required candidate read while it was stopped for its pre-promotion backup (so
    /// exactly what that backup holds), else the baseline's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<MemberBaseline>,
    /// The same on the candidate, read before it was put back (`None`: it never ran it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_candidate: Option<MemberBaseline>,
    /// The same after it was put back: for a restore-required candidate the world digests are
    /// read right after the restore, before its game starts again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<MemberBaseline>,
}

/// A promoted member's backup from before its batch moved, kept as its way back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WayBack {
    /// The GameServer's name.
    pub server: String,
    /// The Backup object (kept in the namespace, no longer labelled with the run).
    pub backup: String,
    /// The restic snapshot it took.
    pub snapshot: String,
    /// When the harness saw the Backup succeed (Unix ms; `None`: it did not succeed). The
    /// member must not have moved before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded_unix_ms: Option<u64>,
    /// The version the member ran before its batch moved (`None`: the template's default, or
    /// not recorded): the version its way back pins again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// Why the clean-up kept it although its batch was not promoted: its member was not back on
    /// the version it ran before (`None`: kept as a promoted member's way back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_because: Option<String>,
}

/// One server at the start (or the end) of a qualification.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MemberBaseline {
    /// The GameServer's name.
    pub server: String,
    /// The version it ran, if it reported one.
    pub version: Option<String>,
    /// Its pod's UID, if it had a pod (a new UID means the pod was recreated).
    pub pod_uid: Option<String>,
    /// Claim → PVC UID.
    pub pvcs: BTreeMap<String, String>,
    /// World claim → content digest (empty when not read).
    pub digests: BTreeMap<String, String>,
}

/// A run id as part of an object name: the first 8 hex digits of its SHA-256 (a run id can be
/// 63 characters, and what the operator derives from a Backup's name must stay a valid label).
fn dns_part(run_id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(run_id.as_bytes());
    digest.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

/// The clone of `source` the candidate is rehearsed on.
pub fn clone_name(source: &str) -> String {
    format!("{source}-canary")
}

/// What a gate observed, by gate: the one definition the qualification writes (into its gate
/// receipts and `qualification.json`) and the report reads. Serialized as the gate's own
/// object (the gate's name, beside it in [`Gate`], says which); read back with
/// [`GateEvidence::parse`], which refuses an unknown or missing field instead of defaulting it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum GateEvidence {
    /// [`gates::PREFLIGHT`]: what the plan resolved to; `None` (JSON `null`) when it was
    /// refused (the gate's reason says why).
    Preflight(Option<PreflightEvidence>),
    /// [`gates::MODULE`].
    Module(Observed<ModuleEvidence>),
    /// [`gates::IMAGE`].
    Image(Observed<ImageEvidence>),
    /// [`gates::JOIN`].
    Join(JoinEvidence),
    /// [`gates::SAVE`].
    Save(Observed<SaveEvidence>),
    /// [`gates::READ_BACK`].
    ReadBack(Observed<ReadBackEvidence>),
    /// [`gates::ROLLBACK`].
    Rollback(Box<RollbackEvidence>),
}

impl GateEvidence {
    /// The name of the gate this evidence belongs to (one of [`gates`]).
    pub fn gate(&self) -> &'static str {
        match self {
            GateEvidence::Preflight(_) => gates::PREFLIGHT,
            GateEvidence::Module(_) => gates::MODULE,
            GateEvidence::Image(_) => gates::IMAGE,
            GateEvidence::Join(_) => gates::JOIN,
            GateEvidence::Save(_) => gates::SAVE,
            GateEvidence::ReadBack(_) => gates::READ_BACK,
            GateEvidence::Rollback(_) => gates::ROLLBACK,
        }
    }

    /// The module bundle gate's observation, if this is one and it observed.
    pub fn module(&self) -> Option<&ModuleEvidence> {
        match self {
            GateEvidence::Module(o) => o.read(),
            _ => None,
        }
    }

    /// The image gate's observation, if this is one and it observed.
    pub fn image(&self) -> Option<&ImageEvidence> {
        match self {
            GateEvidence::Image(o) => o.read(),
            _ => None,
        }
    }

    /// The join gate's evidence, if this is one.
    pub fn join(&self) -> Option<&JoinEvidence> {
        match self {
            GateEvidence::Join(e) => Some(e),
            _ => None,
        }
    }

    /// The read-back gate's observation, if this is one and it observed.
    pub fn read_back(&self) -> Option<&ReadBackEvidence> {
        match self {
            GateEvidence::ReadBack(o) => o.read(),
            _ => None,
        }
    }

    /// Reads the evidence of gate `name` out of `value`: an unknown gate, an unknown field or
    /// a missing one is refused with serde's message (which names the field).
    pub fn parse(name: &str, value: Value) -> Result<Self, String> {
        fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
            serde_json::from_value(value).map_err(|e| e.to_string())
        }
        Ok(match name {
            gates::PREFLIGHT => GateEvidence::Preflight(typed(value)?),
            gates::MODULE => GateEvidence::Module(typed(value)?),
            gates::IMAGE => GateEvidence::Image(typed(value)?),
            gates::JOIN => GateEvidence::Join(typed(value)?),
            gates::SAVE => GateEvidence::Save(typed(value)?),
            gates::READ_BACK => GateEvidence::ReadBack(typed(value)?),
            gates::ROLLBACK => GateEvidence::Rollback(typed(value)?),
            other => return Err(format!("unknown gate {other:?}")),
        })
    }
}

/// A gate's observation, or the error that kept it from observing (`{"error": "…"}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Observed<T> {
    /// What the gate read.
    Read(T),
    /// Why it could not read it.
    Error(GateError),
}

impl<T> Observed<T> {
    /// The observation, when the gate made one.
    pub fn read(&self) -> Option<&T> {
        match self {
            Observed::Read(t) => Some(t),
            Observed::Error(_) => None,
        }
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Observed<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        // An object holding only `error` is the error form; anything else must be the
        // observation (so its own unknown/missing fields are named, not an untagged miss).
        let only_error = value
            .as_object()
            .is_some_and(|m| m.len() == 1 && m.contains_key("error"));
        if only_error {
            serde_json::from_value(value)
                .map(Observed::Error)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(value)
                .map(Observed::Read)
                .map_err(D::Error::custom)
        }
    }
}

/// Why a gate could not observe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateError {
    /// The error, one line.
    pub error: String,
}

/// How the gates reach and save the fleet's servers (read from its template and Secret; the
/// password itself is never recorded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessEvidence {
    /// The template's game port.
    pub game_port: u16,
    /// The template's RCON port.
    pub rcon_port: u16,
    /// `<secret>/<key>` the RCON password was read from.
    pub rcon_secret: String,
    /// The quiesce console commands.
    pub quiesce: Vec<String>,
    /// The unquiesce console commands.
    pub unquiesce: Vec<String>,
}

/// The preflight's evidence: what the plan resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreflightEvidence {
    /// The candidate version id.
    pub candidate: String,
    /// Its image, pinned by digest.
    pub image: String,
    /// The version the source ran.
    pub previous: String,
    /// The fleet, every member pinned to a version.
    pub fleet_pinned: Vec<String>,
    /// Members tracking the template's default version (allowed only by a self-test mutant).
    pub tracking_default: Vec<String>,
    /// How the gates reach the servers.
    pub access: AccessEvidence,
}

/// The image gate's evidence: what the server's pod runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageEvidence {
    /// The pod's UID, if there was a pod.
    pub pod_uid: Option<String>,
    /// The game container's `imageID` (empty when it never ran).
    #[serde(rename = "imageID")]
    pub image_id: String,
    /// The image the candidate is pinned to.
    pub pinned: String,
    /// The image the StatefulSet's pod template asks for.
    pub spec_image: String,
    /// The game container's waiting reason, if it waits.
    pub waiting_reason: Option<String>,
    /// The GameServer's phase.
    pub gameserver_phase: Option<String>,
    /// The reason of its Ready condition.
    pub gameserver_ready_reason: Option<String>,
}

/// The module bundle gate's evidence: the digest pinned, the one the harness computed over
/// the manifest the registry serves, and what the operator made of the bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleEvidence {
    /// The bundle's reference as the harness read it (`HOST/REPOSITORY:TAG`).
    pub reference: String,
    /// The digest the candidate pins.
    pub pinned: String,
    /// The digest of the manifest served for the reference (computed over its bytes), `None`
    /// when the registry holds no such tag.
    pub served: Option<String>,
    /// The canary Module the operator installed the bundle from.
    pub module: String,
    /// Its `status.phase`.
    pub phase: Option<String>,
    /// Its `Ready` condition's reason and message.
    pub ready_reason: Option<String>,
    /// The `Ready` condition's message.
    pub ready_message: Option<String>,
    /// Its `status.appliedDigest`.
    pub applied_digest: Option<String>,
    /// The GameTemplate the operator installed, compared with the template the pinned bundle
    /// holds (absent in bundles written before the comparison existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Box<TemplateComparison>>,
}

/// The GameTemplate installed from a canary Module compared with the template the pinned
/// bundle holds, each as the SHA-256 of its spec's canonical JSON: what the gate needs not to
/// take the operator's word (`appliedDigest`) for what it installed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateComparison {
    /// The GameTemplate named after the canary Module.
    pub name: String,
    /// The pinned bundle's template, read by the harness from the registry (the pinned
    /// manifest's layer, its bytes hashed against the digest the manifest names); `None` when it
    /// could not be read.
    pub pinned: Option<String>,
    /// Why the pinned bundle's template could not be read, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<String>,
    /// The installed GameTemplate's spec; `None` when there is none.
    pub installed: Option<String>,
    /// The spec's top-level fields that differ between the two, when both were read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differs: Vec<String>,
}

impl TemplateComparison {
    /// The installed template is the pinned bundle's (both read, the same).
    pub fn matches(&self) -> bool {
        self.pinned.is_some() && self.installed == self.pinned
    }
}

/// The join gate's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinEvidence {
    /// The join verdict, one line.
    pub verdict: String,
    /// The join probe's verdict as it serialized it (stages reached, failed stage, …).
    pub detail: Value,
    /// What the game port answered over HTTP, when no Minecraft stage answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpAnswer>,
}

/// What a port answered to an HTTP `GET /`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpAnswer {
    /// The URL requested, `http://<addr><path>`.
    pub url: String,
    /// The HTTP status code of the answer.
    pub status: u16,
    /// The body (first 4 KiB, lossily decoded).
    pub body: String,
    /// The marker looked for.
    pub marker: String,
    /// True when the status is 2xx and the body contains the marker.
    pub ok: bool,
}

/// The save gate's evidence: the game's replies to `save-all flush`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveEvidence {
    /// The RCON replies, in order.
    pub replies: Vec<String>,
}

/// The read-back gate's evidence: each world claim before the candidate and now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadBackEvidence {
    /// Claim → what it held.
    pub claims: BTreeMap<String, ClaimReadBack>,
}

/// One world claim as the read-back gate saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimReadBack {
    /// Its content digest before the candidate ran (`None`: not read then).
    pub digest_before: Option<String>,
    /// Its file count before.
    pub files_before: Option<u64>,
    /// Its content digest now.
    pub digest: String,
    /// Its file count now.
    pub files: u64,
    /// Whether the digest changed (`None`: nothing to compare with).
    pub changed: Option<bool>,
    /// What the read-back tool recognised the data as, as it named it.
    pub kind: Value,
    /// The save format, when the tool knows it.
    pub format: Option<u32>,
    /// Whether the candidate's marker is in the data.
    pub candidate_marker: bool,
}

/// A claim's content digest and file count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimDigest {
    /// The content digest.
    pub digest: String,
    /// The file count.
    pub files: u64,
}

/// The rollback gate's evidence. The fields after `snapshot_digests` are there when the
/// rollback got that far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RollbackEvidence {
    /// How the clone was rolled back.
    pub rollback: Rollback,
    /// What the clone's claims held right after the seeding restore (the snapshot).
    pub snapshot_digests: BTreeMap<String, ClaimDigest>,
    /// The snapshot the rollback restored (restore-required rollbacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_snapshot: Option<String>,
    /// The claims right after that restore, before the game ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digests_after_restore: Option<BTreeMap<String, ClaimDigest>>,
    /// Why the previous version did not come back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The previous version's pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// The join verdict after the rollback, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<String>,
    /// The save after the rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save: Option<Observed<SaveEvidence>>,
    /// The claims after the rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digests_after_rollback: Option<BTreeMap<String, ClaimDigest>>,
    /// The whole read-back after the rollback, as the read-back tool reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readback: Option<Value>,
}

impl RollbackEvidence {
    /// The evidence of a `rollback` of a clone whose claims held `snapshot_digests` after the
    /// seeding restore, before anything else is known.
    pub fn new(rollback: Rollback, snapshot_digests: BTreeMap<String, ClaimDigest>) -> Self {
        RollbackEvidence {
            rollback,
            snapshot_digests,
            restored_snapshot: None,
            digests_after_restore: None,
            error: None,
            pod_uid: None,
            join: None,
            save: None,
            digests_after_rollback: None,
            readback: None,
        }
    }
}

#[cfg(test)]
mod module_pin_tests {
    use super::ModulePin;

    const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    #[test]
    fn a_pin_parses_and_prints_back() {
        let text = format!("modules/fixture-game:1.1@{DIGEST}");
        let pin: ModulePin = text.parse().unwrap();
        assert_eq!(
            pin,
            ModulePin {
                source: "modules".into(),
                module: "fixture-game".into(),
                version: "1.1".into(),
                digest: DIGEST.into(),
            }
        );
        assert_eq!(pin.to_string(), text);
    }

    #[test]
    fn a_pin_without_each_part_is_refused_naming_the_form() {
        for bad in [
            "modules/fixture-game:1.1".to_string(),
            format!("fixture-game:1.1@{DIGEST}"),
            format!("modules/fixture-game@{DIGEST}"),
            format!("/fixture-game:1.1@{DIGEST}"),
            "modules/fixture-game:1.1@sha256:ABC".to_string(),
            format!("modules/fixture-game:1.1@{}", DIGEST.to_uppercase()),
            "modules/fixture-game:1.1@md5:00".to_string(),
        ] {
            let err = bad.parse::<ModulePin>().unwrap_err();
            assert!(
                err.contains("SOURCE/MODULE:VERSION@sha256:"),
                "{bad}: {err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
