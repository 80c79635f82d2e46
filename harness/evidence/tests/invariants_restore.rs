//! The restore invariants on recorded shapes of observation: a correct restore (succeeded,
//! failed, removed by a user) holds every invariant, and each broken promise — a hidden file
//! not restored, a post-backup file left behind, a failed restore that emptied a claim, mods
//! touched, a claim replaced, the run state lost, a worker pod outliving its Restore, a Restore
//! that never ends — is named by its invariant.

use std::collections::BTreeMap;

use rehearsal_evidence::catalogue::{Fault, Operation};
use rehearsal_evidence::invariants::restore::{
    ClaimState, Contents, DATA, RestoreCommitted, RestoreState, RestoreSubject, RestoreTrace,
    first_difference, parse_listing,
};
use rehearsal_evidence::invariants::{CopyPodState, DRAIN, LIVENESS, Violation};

const WORLD: &str = "mc-data";
const EXTRA: &str = "mc-extra-nether";
const MODS: &str = "mc-mods-1-0";

fn at(ms: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(1_700_000_000_000 + ms).unwrap()
}

fn contents(entries: &[(&str, &str)]) -> Contents {
    entries
        .iter()
        .map(|(p, d)| (p.to_string(), d.to_string()))
        .collect()
}

/// The world as the snapshot holds it: nested directories and a hidden file.
fn snapshot_world() -> Contents {
    contents(&[
        ("./level.dat", "file aa"),
        ("./region", "dir"),
        ("./region/r.0.0.mca", "file bb"),
        ("./.hidden", "file cc"),
        ("./latest", "link region/r.0.0.mca"),
    ])
}

/// The world after the backup: a value changed, a file and a hidden file added.
fn later_world() -> Contents {
    let mut c = snapshot_world();
    c.insert("./level.dat".into(), "file a2".into());
    c.insert("./after-backup.txt".into(), "file dd".into());
    c.insert("./region/.later".into(), "file ee".into());
    c
}

fn claims(world: &Contents, mods: &Contents) -> BTreeMap<String, ClaimState> {
    [
        (WORLD, world.clone()),
        (EXTRA, world.clone()),
        (MODS, mods.clone()),
    ]
    .into_iter()
    .map(|(name, contents)| {
        (
            name.to_string(),
            ClaimState {
                uid: format!("uid-{name}"),
                contents,
            },
        )
    })
    .collect()
}

fn mods() -> Contents {
    contents(&[("./mod.jar", "file 11"), ("./.config", "file 12")])
}

struct Build {
    trace: RestoreTrace,
}

impl Build {
    fn new() -> Self {
        Self {
            trace: RestoreTrace {
                restore: "back".into(),
                changes: Vec::new(),
                snapshot: [(WORLD, snapshot_world()), (EXTRA, snapshot_world())]
                    .into_iter()
                    .map(|(n, c)| (n.to_string(), c))
                    .collect(),
                before: claims(&later_world(), &mods()),
                after: None,
                mods: vec![MODS.into()],
                run_state_before: "suspend=absent asleep=true".into(),
                run_state_after: Some("suspend=absent asleep=true".into()),
                faults_stopped_at: None,
                bound_ms: 30_000,
                observed_until: at(100_000),
                perturbation: None,
                reference_end: None,
            },
        }
    }

    fn change(&mut self, ms: i64, subject: RestoreSubject) -> &mut Self {
        let rv = self.trace.changes.len() as u64 + 1;
        self.trace.changes.push(RestoreCommitted {
            rv,
            at: at(ms),
            subject,
        });
        self
    }

    fn restore(&mut self, ms: i64, phase: &str, reason: Option<&str>) -> &mut Self {
        self.change(
            ms,
            RestoreSubject::Restore(RestoreState {
                phase: Some(phase.into()),
                completed_reason: reason.map(str::to_string),
                ..Default::default()
            }),
        )
    }

    fn deleting(&mut self, ms: i64, phase: &str, finalizers: &[&str]) -> &mut Self {
        self.change(
            ms,
            RestoreSubject::Restore(RestoreState {
                phase: Some(phase.into()),
                deleting: true,
                finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
                ..Default::default()
            }),
        )
    }

    fn removed(&mut self, ms: i64, phase: &str) -> &mut Self {
        self.change(
            ms,
            RestoreSubject::Restore(RestoreState {
                phase: Some(phase.into()),
                deleting: true,
                gone: true,
                ..Default::default()
            }),
        )
    }

    fn worker(&mut self, ms: i64, phase: &str) -> &mut Self {
        self.change(
            ms,
            RestoreSubject::WorkerPod(CopyPodState {
                name: "restore-back-x".into(),
                phase: Some(phase.into()),
                gone: false,
            }),
        )
    }

    /// A restore through every phase, its worker pod running from 30 to 60 ms.
    fn through(&mut self, end: &str, reason: &str) -> &mut Self {
        self.restore(0, "Pending", None)
            .restore(10, "Suspending", None)
            .restore(20, "Running", None)
            .worker(30, "Pending")
            .worker(40, "Running")
            .worker(
                60,
                if end == "Succeeded" {
                    "Succeeded"
                } else {
                    "Failed"
                },
            )
            .restore(70, "Resuming", None)
            .restore(80, end, Some(reason))
    }

    fn after(&mut self, world: Contents) -> &mut Self {
        self.trace.after = Some(claims(&world, &mods()));
        self
    }

    fn violations(&self) -> Vec<Violation> {
        self.trace.violations()
    }
}

fn of(violations: &[Violation], invariant: &str) -> Vec<String> {
    violations
        .iter()
        .filter(|v| v.invariant == invariant)
        .map(|v| v.found.clone())
        .collect()
}

#[test]
fn a_correct_restore_holds_every_invariant_succeeded_failed_or_removed() {
    let mut ok = Build::new();
    ok.through("Succeeded", "Succeeded").after(snapshot_world());
    assert_eq!(ok.violations(), vec![], "succeeded");

    let mut failed = Build::new();
    failed.through("Failed", "CopyFailed").after(later_world());
    assert_eq!(failed.violations(), vec![], "failed");

    // Removed while its worker had not started: the claims are as they were.
    let mut removed = Build::new();
    removed
        .restore(0, "Pending", None)
        .restore(10, "Running", None)
        .worker(20, "Failed")
        .removed(30, "Running")
        .after(later_world());
    assert_eq!(removed.violations(), vec![], "removed before it wrote");

    // Removed once the worker had restored everything.
    let mut removed_late = Build::new();
    removed_late
        .restore(0, "Running", None)
        .worker(20, "Succeeded")
        .removed(30, "Running")
        .after(snapshot_world());
    assert_eq!(removed_late.violations(), vec![], "removed after it wrote");
}

#[test]
fn a_succeeded_restore_must_hold_exactly_the_snapshot_every_path() {
    let mut hidden = snapshot_world();
    hidden.remove("./.hidden");
    let mut b = Build::new();
    b.through("Succeeded", "Succeeded").after(hidden);
    let found = of(&b.violations(), DATA);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("./.hidden missing"), "{found:?}");

    // An overlay: what was made after the backup survives the restore.
    let mut overlay = snapshot_world();
    overlay.insert("./region/.later".into(), "file ee".into());
    let mut b = Build::new();
    b.through("Succeeded", "Succeeded").after(overlay);
    let found = of(&b.violations(), DATA);
    assert!(
        found[0].contains("./region/.later (file ee) should not be there"),
        "{found:?}"
    );

    // Nested: a file's digest in a directory.
    let mut nested = snapshot_world();
    nested.insert("./region/r.0.0.mca".into(), "file zz".into());
    let mut b = Build::new();
    b.through("Succeeded", "Succeeded").after(nested);
    assert!(
        of(&b.violations(), DATA)[0].contains("./region/r.0.0.mca is file zz, expected file bb")
    );

    // Only the primary restored (the extra claim skipped).
    let mut b = Build::new();
    b.through("Succeeded", "Succeeded").after(snapshot_world());
    let after = b.trace.after.as_mut().unwrap();
    after.get_mut(EXTRA).unwrap().contents = later_world();
    let found = of(&b.violations(), DATA);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains(EXTRA), "{found:?}");
}

#[test]
fn a_failed_restore_must_leave_every_claim_as_it_was() {
    let mut b = Build::new();
    b.through("Failed", "CopyFailed").after(Contents::new());
    let found = of(&b.violations(), DATA);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("is not as it was before"), "{found:?}");
}

#[test]
fn mods_claims_uids_and_the_run_state_are_never_changed() {
    let mut b = Build::new();
    b.through("Succeeded", "Succeeded").after(snapshot_world());
    let after = b.trace.after.as_mut().unwrap();
    after.get_mut(MODS).unwrap().contents.remove("./.config");
    assert!(of(&b.violations(), DATA)[0].contains("touched mods claim"));

    let mut b = Build::new();
    b.through("Succeeded", "Succeeded").after(snapshot_world());
    b.trace.after.as_mut().unwrap().get_mut(WORLD).unwrap().uid = "uid-new".into();
    assert!(of(&b.violations(), DATA)[0].contains("was replaced: UID uid-mc-data before, uid-new"));

    let mut b = Build::new();
    b.through("Succeeded", "Succeeded").after(snapshot_world());
    b.trace.after.as_mut().unwrap().remove(EXTRA);
    assert!(of(&b.violations(), DATA)[0].contains("is gone after the restore"));

    let mut b = Build::new();
    b.through("Failed", "CopyFailed").after(later_world());
    b.trace.run_state_after = Some("suspend=true asleep=true".into());
    let found = of(&b.violations(), DATA);
    assert_eq!(
        found,
        [
            "the server's run state was suspend=absent asleep=true before the restore and is suspend=true asleep=true after it"
        ]
    );

    // Unread evidence is a violation, never a pass.
    let mut b = Build::new();
    b.through("Succeeded", "Succeeded");
    assert!(of(&b.violations(), DATA)[0].contains("could not be read"));
    let mut b = Build::new();
    b.through("Succeeded", "Succeeded").after(snapshot_world());
    b.trace.run_state_after = None;
    assert!(of(&b.violations(), DATA)[0].contains("server could not be read"));
}

#[test]
fn a_removed_restore_never_leaves_a_mix() {
    let mut b = Build::new();
    b.restore(0, "Running", None)
        .worker(20, "Running")
        .removed(30, "Running")
        .after(snapshot_world());
    b.trace
        .after
        .as_mut()
        .unwrap()
        .get_mut(EXTRA)
        .unwrap()
        .contents = later_world();
    let found = of(&b.violations(), DATA);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("neither as they were nor as the snapshot"),
        "{found:?}"
    );
    // And its worker pod outlived it.
    let drain = of(&b.violations(), DRAIN);
    assert_eq!(
        drain,
        ["the Restore had been removed at rv 3 while worker pod restore-back-x was still Running"]
    );
}

#[test]
fn no_worker_runs_once_the_restore_ended_and_none_stays_behind_a_finalizer() {
    let mut b = Build::new();
    b.restore(0, "Running", None)
        .worker(20, "Running")
        .restore(30, "Failed", Some("CopyFailed"))
        .worker(40, "Failed")
        .after(later_world());
    assert_eq!(
        of(&b.violations(), DRAIN),
        ["the Restore had ended at rv 3 while worker pod restore-back-x was still Running"]
    );

    let mut b = Build::new();
    b.through("Succeeded", "Succeeded")
        .deleting(90, "Succeeded", &["gameplane.local/restore-cleanup"])
        .after(snapshot_world());
    assert_eq!(
        of(&b.violations(), DRAIN),
        [
            "the Restore was deleted and is still there, phase Succeeded, finalizer(s) gameplane.local/restore-cleanup"
        ]
    );
}

#[test]
fn a_restore_ends_with_a_reason_once_faults_stop() {
    let mut b = Build::new();
    b.restore(0, "Pending", None).restore(10, "Running", None);
    b.trace.faults_stopped_at = Some(at(5));
    let found = of(&b.violations(), LIVENESS);
    assert_eq!(found.len(), 1);
    assert!(found[0].contains("last phase Running"), "{found:?}");
    // Nothing else is judged before it ended.
    assert_eq!(b.violations().len(), 1);

    let mut b = Build::new();
    b.through("Succeeded", "").after(snapshot_world());
    assert_eq!(
        of(&b.violations(), LIVENESS),
        ["the Restore ended Succeeded without a Completed reason"]
    );
}

#[test]
fn a_listing_is_read_whole_or_refused() {
    let claims = vec![WORLD.to_string(), MODS.to_string()];
    let text = format!(
        "{WORLD}\tdir\t./region\n{WORLD}\tfile\t./region/a b.mca\tabc\n{WORLD}\tlink\t./latest\tregion/a b.mca\n{WORLD}\tend\n{MODS}\tend\nother\tfile\t./x\t1\n"
    );
    let read = parse_listing(&text, &claims).unwrap();
    assert_eq!(
        read[WORLD],
        contents(&[
            ("./region", "dir"),
            ("./region/a b.mca", "file abc"),
            ("./latest", "link region/a b.mca"),
        ])
    );
    assert_eq!(read[MODS], Contents::new(), "an empty claim is listed");
    let cut = text.split(&format!("{MODS}\tend")).next().unwrap();
    assert!(
        parse_listing(cut, &claims)
            .unwrap_err()
            .contains(&format!("no end line for {MODS}"))
    );
    assert!(
        !read.contains_key("other"),
        "a claim not asked for is not read"
    );
    let empty_digest = format!("{WORLD}\tfile\t./x\t\n{WORLD}\tend\n{MODS}\tend\n");
    assert!(parse_listing(&empty_digest, &claims).is_err());
    let bad = format!("{WORLD}\tfile\t./x\n{WORLD}\tend\n{MODS}\tend\n");
    assert!(parse_listing(&bad, &claims).unwrap_err().contains("line 1"));
    let late = format!("{WORLD}\tend\n{WORLD}\tdir\t./x\n{MODS}\tend\n");
    assert!(
        parse_listing(&late, &claims)
            .unwrap_err()
            .contains("after its end line")
    );
}

#[test]
fn the_first_difference_is_named() {
    let a = snapshot_world();
    assert_eq!(first_difference(&a, &a), None);
    let mut b = a.clone();
    b.insert("./z".into(), "dir".into());
    assert_eq!(
        first_difference(&a, &b).as_deref(),
        Some("./z (dir) should not be there")
    );
}

/// Each restore invariant answers held, violated or unknown; without the structure it reads it
/// says why, or the absence is the violation.
#[test]
fn every_restore_invariant_answers_without_its_structure() {
    use rehearsal_evidence::invariants::Judgement;
    use rehearsal_evidence::invariants::outcome::Perturbation;
    let verdicts = |b: &Build| -> Vec<&'static str> {
        b.trace
            .judge()
            .iter()
            .map(|j| j.judgement.as_str())
            .collect()
    };
    let unrecorded = |b: &mut Build| {
        b.trace.perturbation = Some(Perturbation {
            operation: Operation::parse("restore").unwrap(),
            fault: None,
        });
    };
    let mut ok = Build::new();
    ok.through("Succeeded", "Succeeded").after(snapshot_world());
    unrecorded(&mut ok);
    assert_eq!(verdicts(&ok), ["held", "held", "held", "held"]);
    // Never ended: data and drain are unknown, liveness violated.
    let mut stuck = Build::new();
    stuck.restore(0, "Running", None).worker(10, "Running");
    unrecorded(&mut stuck);
    assert_eq!(
        verdicts(&stuck),
        ["unknown", "unknown", "violated", "violated"]
    );
    let judged = stuck.trace.judge();
    assert!(
        matches!(&judged[0].judgement, Judgement::Unknown { why } if why.contains("never ended")),
        "{judged:?}"
    );
    // The claims before it were not read: data is unknown.
    let mut blind = Build::new();
    blind
        .through("Succeeded", "Succeeded")
        .after(snapshot_world());
    unrecorded(&mut blind);
    blind.trace.before.clear();
    assert_eq!(verdicts(&blind)[0], "unknown");
    // Nothing recorded of what was done: the outcome is unknown.
    let mut plain = Build::new();
    plain
        .through("Succeeded", "Succeeded")
        .after(snapshot_world());
    assert_eq!(verdicts(&plain), ["held", "held", "held", "unknown"]);
}

/// A restore's end state (its phase, finalizers, removal, the run state after) is what the
/// differential oracle compares with the reference run's: after a transparent fault a
/// difference is a violation naming the field.
#[test]
fn a_restore_ends_as_its_reference_run_after_a_transparent_fault() {
    use rehearsal_evidence::invariants::outcome::{EndState, Ending, Perturbation};
    let mut ok = Build::new();
    ok.through("Succeeded", "Succeeded").after(snapshot_world());
    let end = ok.trace.end_state();
    assert_eq!(
        end,
        EndState {
            ending: Some(Ending {
                phase: Some("Succeeded".into()),
                consistency: None,
                reason: None,
            }),
            finalizers: Vec::new(),
            removed: false,
            run_state: Some("suspend=absent asleep=true".into()),
            // Each claim relative to the run's own snapshot and before: the world claims as the
            // snapshot holds them, the mods claim as it was, none replaced.
            claims: Some(
                [
                    (EXTRA, "as the snapshot, same UID"),
                    (MODS, "as before, same UID"),
                    (WORLD, "as the snapshot, same UID"),
                ]
                .into_iter()
                .map(|(c, r)| (c.to_string(), r.to_string()))
                .collect()
            ),
            snapshot_holds: None,
        }
    );
    ok.trace.perturbation = Some(Perturbation {
        operation: Operation::parse("restore").unwrap(),
        fault: Some(Fault::parse("operator-restart").unwrap()),
    });
    ok.trace.reference_end = Some(end.clone());
    assert_eq!(ok.violations(), vec![]);
    ok.trace.reference_end = Some(EndState {
        removed: true,
        ..end.clone()
    });
    let found = of(&ok.violations(), "outcome");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains(
            "the restore ended with removed false, where the reference run ended with true"
        ),
        "{found:?}"
    );
    // A transparent fault after which the world claim is left as it was before the Restore
    // (the run's own digests differ from the reference's; the relation is what is compared):
    // the claim is named.
    let mut kept = Build::new();
    kept.through("Succeeded", "Succeeded").after(later_world());
    kept.trace.perturbation = ok.trace.perturbation.clone();
    kept.trace.reference_end = Some(end);
    let found = of(&kept.violations(), "outcome");
    assert!(
        found.iter().any(|f| f.contains(&format!(
            "with a claim's contents {WORLD}: as before, same UID, where the reference run ended with {WORLD}: as the snapshot, same UID"
        ))),
        "{found:#?}"
    );
}
