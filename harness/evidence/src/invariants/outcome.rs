//! The oracle beside the invariants: the end state compared with the unperturbed run, where
//! the contract allows only one outcome.
//!
//! The invariants say what must hold *whichever* way an operation ends; they cannot see an
//! operator that gives up when it need not. So a schedule also records what was done to it (its
//! [`Perturbation`]), and [`expected`] names the one outcome the contract allows when that is
//! a single one:
//! - the unperturbed run (the reference, or a schedule whose point was never reached) ends as
//!   the operation is meant to: a backup of a running server `Succeeded`, consistency
//!   `Quiesced` (also when it was created before the game ran: preparation waits for it); of a
//!   stopped one `Succeeded`, `Stopped`; a restore `Succeeded`;
//! - a Backup of a server whose agent is older (no identity route) ends `Failed`, reason
//!   `IdentityPreflightFailed`; a Backup an older operator left mid-preparation ends `Failed`,
//!   reason `LegacyPreparation`;
//! - a fault that changes neither the game, the repository nor the object under way ends the
//!   same way: the agent restarted (the game it serves is the same process), the operator
//!   restarted (its progress is in the API server, not in its memory);
//! - the agent held down across a point never invalidates the capture (the game did not
//!   change): the Backup may fail because the agent could not be reached to quiesce, but never
//!   with consistency `Invalidated`.
//!
//! Every other fault (the game restarted, the pod replaced, the server started, the object
//! deleted, the repository unreachable) leaves more than one ending allowed; the invariants
//! judge those.

use serde::{Deserialize, Serialize};

use super::Violation;

/// Invariant `outcome`: where the contract allows one ending, the operation ends that way.
pub const OUTCOME: &str = "outcome";

/// What was done to one run of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perturbation {
    /// The operation (`backup`, `stopped-backup`, `idle-backup`, `restore`).
    pub operation: String,
    /// The fault that landed, `None` when none did (the reference run, or a point the run never
    /// reached).
    pub fault: Option<String>,
}

/// How an operation's object ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ending {
    /// `status.phase` (`None`: it never had one, or the object was removed).
    pub phase: Option<String>,
    /// `status.consistency`, for a Backup.
    pub consistency: Option<String>,
    /// The `Completed` condition's reason, for a Backup.
    #[serde(default)]
    pub reason: Option<String>,
}

impl Ending {
    fn new(phase: &str, consistency: Option<&str>) -> Self {
        Self {
            phase: Some(phase.to_string()),
            consistency: consistency.map(str::to_string),
            reason: None,
        }
    }

    /// `Failed` for `reason` (any consistency).
    fn failed(reason: &str) -> Self {
        Self {
            reason: Some(reason.to_string()),
            ..Self::new("Failed", None)
        }
    }

    fn describe(&self) -> String {
        let mut out = match (&self.phase, &self.consistency) {
            (None, _) => "without a phase (or removed)".to_string(),
            (Some(p), None) => p.clone(),
            (Some(p), Some(c)) => format!("{p}, consistency {c}"),
        };
        if let Some(r) = &self.reason {
            out.push_str(&format!(", reason {r}"));
        }
        out
    }

    /// `self` is what `want` names (what it leaves out may be anything).
    fn matches(&self, want: &Ending) -> bool {
        let field = |want: &Option<String>, got: &Option<String>| want.is_none() || want == got;
        self.phase == want.phase
            && field(&want.consistency, &self.consistency)
            && field(&want.reason, &self.reason)
    }
}

/// What one run of an operation left, as the differential oracle compares it with the
/// reference run's: how its object ended, the finalizers it kept, whether it was removed, and
/// the server's run state once it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndState {
    /// Its object's ending (`None`: it never had a state).
    pub ending: Option<Ending>,
    /// The finalizers on its object's last state, sorted.
    pub finalizers: Vec<String>,
    /// Its object was removed.
    pub removed: bool,
    /// The server's run state once it ended (`None`: not read).
    pub run_state: Option<String>,
}

/// The differential oracle (invariant [`OUTCOME`]): unperturbed, or after a fault the
/// catalogue calls transparent ([`TRANSPARENT_FAULTS`]: it changes neither the game, the
/// repository nor the object under way), a run ends as the reference run of its operation
/// ended, field by field; each field that differs is a violation naming it, with both values.
/// Other faults may end otherwise (the invariants judge those). Without a reference run's end
/// state (the reference run itself, a replay) there is nothing to compare: the stated endings
/// ([`expected`]) still judge it.
pub fn differential(
    perturbation: Option<&Perturbation>,
    reference: Option<&EndState>,
    end: &EndState,
) -> Vec<Violation> {
    let (Some(p), Some(r)) = (perturbation, reference) else {
        return Vec::new();
    };
    if !p
        .fault
        .as_deref()
        .is_none_or(|f| TRANSPARENT_FAULTS.contains(&f))
    {
        return Vec::new();
    }
    let field = |e: &Option<Ending>, f: fn(&Ending) -> &Option<String>| {
        e.as_ref()
            .and_then(|e| f(e).clone())
            .unwrap_or_else(|| "-".into())
    };
    let mut differences: Vec<(&str, String, String)> = Vec::new();
    for (name, of) in [
        (
            "status.phase",
            (|e| &e.phase) as fn(&Ending) -> &Option<String>,
        ),
        ("status.consistency", |e| &e.consistency),
        ("the Completed condition's reason", |e| &e.reason),
    ] {
        let (want, got) = (field(&r.ending, of), field(&end.ending, of));
        if want != got {
            differences.push((name, want, got));
        }
    }
    if r.finalizers != end.finalizers {
        differences.push((
            "metadata.finalizers",
            format!("{:?}", r.finalizers),
            format!("{:?}", end.finalizers),
        ));
    }
    if r.removed != end.removed {
        differences.push(("removed", r.removed.to_string(), end.removed.to_string()));
    }
    if let (Some(want), Some(got)) = (&r.run_state, &end.run_state)
        && want != got
    {
        differences.push(("the server's run state", want.clone(), got.clone()));
    }
    let after = match &p.fault {
        Some(f) => format!(
            "after fault {f}, which changes neither the game, the repository nor the object,"
        ),
        None => "unperturbed,".to_string(),
    };
    differences
        .into_iter()
        .map(|(name, want, got)| {
            Violation::new(
                OUTCOME,
                "the end state beside the reference run's",
                format!(
                    "{after} the {} ended with {name} {got}, where the reference run ended with {want}",
                    p.operation
                ),
            )
        })
        .collect()
}

/// Faults that change neither the game, the repository nor the object under way.
pub const TRANSPARENT_FAULTS: &[&str] = &["agent-restart", "operator-restart"];

/// Faults that leave the game as it was, so a capture they interrupt is never `Invalidated`.
pub const SOURCE_KEEPING_FAULTS: &[&str] = &["agent-down"];

/// What the contract allows after a perturbation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// Exactly this ending.
    Only(Ending),
    /// Any ending but consistency `Invalidated` (the source did not change).
    NotInvalidated,
}

/// The ending(s) the contract allows after `perturbation`, when it narrows them.
pub fn expected(perturbation: &Perturbation) -> Option<Allowed> {
    let fault = perturbation.fault.as_deref();
    // Refused whatever the game does meanwhile, and an agent held down changes nothing of it.
    let refused = match perturbation.operation.as_str() {
        // The older agent cannot name the game it would quiesce: refused at the preflight.
        "old-agent-backup" => Some("IdentityPreflightFailed"),
        // Nothing says which game the older operator quiesced: never bound to whichever runs.
        "legacy-backup" => Some("LegacyPreparation"),
        _ => None,
    };
    if let Some(reason) = refused
        && fault
            .is_none_or(|f| TRANSPARENT_FAULTS.contains(&f) || SOURCE_KEEPING_FAULTS.contains(&f))
    {
        return Some(Allowed::Only(Ending::failed(reason)));
    }
    if fault.is_some_and(|f| SOURCE_KEEPING_FAULTS.contains(&f)) {
        return Some(Allowed::NotInvalidated);
    }
    if !fault.is_none_or(|f| TRANSPARENT_FAULTS.contains(&f)) {
        return None;
    }
    match perturbation.operation.as_str() {
        "backup" | "early-backup" => Some(Ending::new("Succeeded", Some("Quiesced"))),
        "raw-backup" => Some(Ending::new("Succeeded", Some("Unquiesced"))),
        "stopped-backup" | "idle-backup" => Some(Ending::new("Succeeded", Some("Stopped"))),
        "restore" => Some(Ending::new("Succeeded", None)),
        _ => None,
    }
    .map(Allowed::Only)
}

/// Invariant [`OUTCOME`] for a run whose object ended as `ended` (its last state before any
/// removal; `None` when it never had one).
pub fn judge(perturbation: Option<&Perturbation>, ended: Option<Ending>) -> Vec<Violation> {
    let Some(p) = perturbation else {
        return Vec::new();
    };
    let Some(allowed) = expected(p) else {
        return Vec::new();
    };
    let got = ended.unwrap_or(Ending {
        phase: None,
        consistency: None,
        reason: None,
    });
    let fault = p.fault.as_deref().unwrap_or("-");
    let found = match allowed {
        Allowed::NotInvalidated if got.consistency.as_deref() == Some("Invalidated") => format!(
            "after fault {fault}, which leaves the game as it was, the {} ended {} (a capture of an unchanged source is never Invalidated)",
            p.operation,
            got.describe()
        ),
        Allowed::NotInvalidated => return Vec::new(),
        // A restore has no consistency: compare what the contract names.
        Allowed::Only(want) if got.matches(&want) => return Vec::new(),
        Allowed::Only(want) => format!(
            "{} the {} ended {} (the contract allows only {})",
            if p.fault.is_some() {
                format!(
                    "after fault {fault}, which changes neither the game, the repository nor the object,"
                )
            } else {
                "unperturbed,".to_string()
            },
            p.operation,
            got.describe(),
            want.describe()
        ),
    };
    vec![Violation::new(
        OUTCOME,
        "the operation's final status",
        found,
    )]
}
