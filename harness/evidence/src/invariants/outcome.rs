//! The oracle beside the invariants: the end state compared with the unperturbed run, and
//! with the ending the catalogue states where the contract allows only one.
//!
//! The invariants say what must hold *whichever* way an operation ends; they cannot see an
//! operator that gives up when it need not. So a schedule also records what was done to it (its
//! [`Perturbation`]), and two judgements follow:
//! - [`judge`]: the ending the catalogue states for the operation ([`crate::catalogue::Ends`],
//!   [`crate::catalogue::Operation::allowed`]) after no fault or a transparent one — a Backup of
//!   a running server `Succeeded`, `Quiesced`; an older agent's refused at the preflight — and,
//!   after a fault that keeps the source (the agent held down), never `Invalidated`;
//! - [`differential`]: after no fault or a transparent one, the end state field by field
//!   against the reference run's.
//!
//! After a fault that changes something (the game restarted, the pod replaced, the server
//! started, the object deleted, the repository unreachable) more than one ending is allowed;
//! the invariants judge those.

use serde::{Deserialize, Serialize};

use super::Violation;
use crate::catalogue::{Allowed, Ends, Fault, FaultClass, Operation, class_of};

/// Invariant `outcome`: where the contract allows one ending, the operation ends that way.
pub const OUTCOME: &str = "outcome";

/// What was done to one run of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perturbation {
    /// The operation.
    pub operation: Operation,
    /// The fault that landed, `None` when none did (the reference run, or a point the run never
    /// reached).
    pub fault: Option<Fault>,
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
    /// The ending the catalogue states, for an object with a phase (`None`: a qualification's).
    fn stated(ends: Ends) -> Option<Self> {
        let (phase, consistency, reason) = match ends {
            Ends::Succeeded(consistency) => ("Succeeded", consistency, None),
            // Any consistency.
            Ends::Refused(reason) => ("Failed", None, Some(reason)),
            Ends::Promoted | Ends::HaltedOnClone(_) => return None,
        };
        Some(Self {
            phase: Some(phase.to_string()),
            consistency: consistency.map(str::to_string),
            reason: reason.map(str::to_string),
        })
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
    /// What each claim holds once it ended, relative to what the run itself had (each run
    /// writes its own world, so raw digests differ between runs; the relation does not): for a
    /// restore `as the snapshot` / `as before` / `other`, each with `same UID` or `new UID`.
    /// `None`: not read, or the operation changes no claim.
    #[serde(default)]
    pub claims: Option<std::collections::BTreeMap<String, String>>,
    /// What the repository holds for it: for a backup, the claims whose planted marker its
    /// snapshot lists, sorted. `None`: no snapshot was read (none taken, or unreadable; the
    /// `data` invariant judges those).
    #[serde(default)]
    pub snapshot_holds: Option<Vec<String>>,
}

/// The differential oracle (invariant [`OUTCOME`]): unperturbed, or after a fault the
/// catalogue calls transparent ([`FaultClass::Transparent`]: it changes neither the game, the
/// repository nor the object under way), a run ends as the reference run of its operation
/// ended, field by field; each field that differs is a violation naming it, with both values.
/// Other faults may end otherwise (the invariants judge those). Without a reference run's end
/// state (the reference run itself, a replay) there is nothing to compare: the stated endings
/// ([`judge`]) still judge it.
pub fn differential(
    perturbation: Option<&Perturbation>,
    reference: Option<&EndState>,
    end: &EndState,
) -> Vec<Violation> {
    let (Some(p), Some(r)) = (perturbation, reference) else {
        return Vec::new();
    };
    if class_of(p.fault) != FaultClass::Transparent {
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
    if let (Some(want), Some(got)) = (&r.claims, &end.claims) {
        let names: std::collections::BTreeSet<&String> = want.keys().chain(got.keys()).collect();
        for name in names {
            let (w, g) = (want.get(name), got.get(name));
            if w != g {
                differences.push((
                    "a claim's contents",
                    format!("{name}: {}", w.map_or("absent", String::as_str)),
                    format!("{name}: {}", g.map_or("absent", String::as_str)),
                ));
            }
        }
    }
    if let (Some(want), Some(got)) = (&r.snapshot_holds, &end.snapshot_holds)
        && want != got
    {
        differences.push((
            "the claims its snapshot holds",
            format!("{want:?}"),
            format!("{got:?}"),
        ));
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

/// Invariant [`OUTCOME`] for a run whose object ended as `ended` (its last state before any
/// removal; `None` when it never had one).
pub fn judge(perturbation: Option<&Perturbation>, ended: Option<Ending>) -> Vec<Violation> {
    let Some(p) = perturbation else {
        return Vec::new();
    };
    let Some(allowed) = p.operation.allowed(p.fault) else {
        return Vec::new();
    };
    let got = ended.unwrap_or(Ending {
        phase: None,
        consistency: None,
        reason: None,
    });
    let fault = p.fault.map_or("-", Fault::as_str);
    let found = match allowed {
        Allowed::NotInvalidated if got.consistency.as_deref() == Some("Invalidated") => format!(
            "after fault {fault}, which leaves the game as it was, the {} ended {} (a capture of an unchanged source is never Invalidated)",
            p.operation,
            got.describe()
        ),
        Allowed::NotInvalidated => return Vec::new(),
        Allowed::Only(ends) => {
            // A qualification's ending is judged by the qualification invariant.
            let Some(want) = Ending::stated(ends) else {
                return Vec::new();
            };
            // A restore has no consistency: compare what the contract names.
            if got.matches(&want) {
                return Vec::new();
            }
            format!(
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
            )
        }
    };
    vec![Violation::new(
        OUTCOME,
        "the operation's final status",
        found,
    )]
}
