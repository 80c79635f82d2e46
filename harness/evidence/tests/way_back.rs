//! A qualification's way back and its report's truth, judged against a fresh read of the
//! cluster (`rehearsal_evidence::invariants::way_back`): the shapes the release manager's findings left —
//! a second signal during a restore-required batch whose clean-up deleted the way back, a report
//! that said nothing was promoted while members ran the candidate — are each named; a correct
//! end holds both.

use std::collections::BTreeMap;

use rehearsal_evidence::invariants::way_back::{
    BackupNow, FleetRead, ServerNow, TRUTH, TakenBackup, WAY_BACK, left_on_candidate,
    taken_from_receipts, truth, verified_back, way_back,
};
use rehearsal_evidence::judge::gates::{MemberState, did_not_run, member_state_refusal};
use rehearsal_evidence::qualification::{
    Interruption, MemberBaseline, Outcome, Plan, Qualification, Rollback, WayBack,
};
use rehearsal_evidence::report::qualification::{Meta, QualificationReport, way_back_commands};

const FLEET: [&str; 4] = ["a", "b", "c", "d"];

fn member(server: &str, version: &str) -> MemberBaseline {
    MemberBaseline {
        server: server.into(),
        version: Some(version.into()),
        pod_uid: Some(format!("pod-{server}")),
        pvcs: BTreeMap::from([(format!("world-{server}"), format!("uid-{server}"))]),
        digests: BTreeMap::new(),
    }
}

fn server(name: &str, version: &str, phase: &str) -> ServerNow {
    ServerNow {
        server: name.into(),
        version: Some(version.into()),
        suspend: None,
        phase: Some(phase.into()),
        pod_uid: Some(format!("pod-{name}")),
        pvcs: BTreeMap::from([(format!("world-{name}"), format!("uid-{name}"))]),
    }
}

/// Four members in batches of two, restore-required; `promoted` batches promoted.
fn qualification(promoted: usize) -> Qualification {
    Qualification {
        plan: Plan {
            template: "t".into(),
            source: "a".into(),
            fleet: FLEET.map(String::from).to_vec(),
            batch_size: 2,
            candidate: "2.0".into(),
            rollback: Rollback::RestoreRequired,
            run_id: "run".into(),
            repo_secret: "restic-repo".into(),
            module: None,
            keep_failed_batch: false,
            gate_concurrency: 4,
        },
        clone: "a-canary".into(),
        candidate_image: None,
        previous: Some("1.0".into()),
        baseline: FLEET.iter().map(|m| member(m, "1.0")).collect(),
        after: vec![],
        snapshot: None,
        gates: vec![],
        clone_pvcs_before: vec![],
        clone_pvcs_after: vec![],
        promotion_receipts: promoted,
        put_back: vec![],
        way_back: vec![],
        backed_up: vec![],
        outcome: Outcome::Promoted { batches: promoted },
        interrupted: None,
    }
}

fn taken(member: &str, snapshot: Option<&str>) -> TakenBackup {
    TakenBackup {
        member: member.into(),
        backup: format!("qualify-{member}-pre-x"),
        previous: Some("1.0".into()),
        snapshot: snapshot.map(str::to_string),
    }
}

fn backup(member: &str, snapshot: &str) -> BackupNow {
    BackupNow {
        name: format!("qualify-{member}-pre-x"),
        server: member.into(),
        phase: Some("Succeeded".into()),
        snapshot: Some(snapshot.into()),
    }
}

/// Batch 1 (a, b) promoted; a second signal stopped batch 2 with c and d on the candidate.
fn cut_short() -> (Qualification, Vec<TakenBackup>) {
    let mut q = qualification(1);
    q.interrupted = Some(Interruption {
        signal: "SIGINT".into(),
        at_once: true,
        left_on_candidate: vec!["c".into(), "d".into()],
        before_step: None,
    });
    let taken = vec![
        taken("a", Some("snap-a")),
        taken("b", Some("snap-b")),
        taken("c", Some("snap-c")),
        taken("d", None),
    ];
    (q, taken)
}

fn on_candidate_read() -> FleetRead {
    FleetRead {
        servers: FLEET.iter().map(|m| server(m, "2.0", "Running")).collect(),
        backups: vec![
            backup("a", "snap-a"),
            backup("b", "snap-b"),
            backup("c", "snap-c"),
        ],
        snapshots: Some(vec!["snap-a".into(), "snap-b".into(), "snap-c".into()]),
    }
}

#[test]
fn a_member_is_back_only_on_its_version_running_and_resumed() {
    let running = server("a", "1.0", "Running");
    assert_eq!(verified_back(Some("1.0"), Some(&running)), Ok(()));
    for (now, why) in [
        (server("a", "2.0", "Running"), "pins 2.0, not 1.0"),
        (server("a", "1.0", "Failed"), "is Failed on 1.0"),
        (
            ServerNow {
                suspend: Some(true),
                ..server("a", "1.0", "Suspended")
            },
            "suspended",
        ),
    ] {
        let err = verified_back(Some("1.0"), Some(&now)).unwrap_err();
        assert!(err.contains(why), "{err}");
    }
    assert!(
        verified_back(Some("1.0"), None)
            .unwrap_err()
            .contains("no longer exists")
    );
    // The template's default is a version too.
    let default = ServerNow {
        version: None,
        ..server("a", "", "Running")
    };
    assert_eq!(verified_back(None, Some(&default)), Ok(()));
    assert!(verified_back(Some("1.0"), Some(&default)).is_err());
}

#[test]
fn a_way_back_kept_for_every_member_left_on_the_candidate_holds() {
    let (q, mut taken) = cut_short();
    // d's backup had not succeeded: d has no way back unless its Backup ends; give it one.
    taken[3].snapshot = Some("snap-d".into());
    let mut read = on_candidate_read();
    read.backups.push(backup("d", "snap-d"));
    read.snapshots.as_mut().unwrap().push("snap-d".into());
    assert_eq!(left_on_candidate(&q, &read), vec!["c", "d"]);
    assert!(way_back(&q, &taken, &read).is_empty());
}

/// Finding 1: the clean-up deleted the pre-promotion Backups of members left on the candidate
/// and forgot their snapshots.
#[test]
fn a_deleted_or_forgotten_way_back_of_a_member_not_back_is_a_violation() {
    let (q, taken) = cut_short();
    let read = FleetRead {
        backups: vec![backup("a", "snap-a"), backup("b", "snap-b")],
        snapshots: Some(vec!["snap-a".into(), "snap-b".into()]),
        ..on_candidate_read()
    };
    let v = way_back(&q, &taken, &read);
    assert!(v.iter().all(|v| v.invariant == WAY_BACK), "{v:?}");
    let found: Vec<&str> = v.iter().map(|v| v.found.as_str()).collect();
    assert!(
        found
            .iter()
            .any(|f| f.contains("qualify-c-pre-x of c was deleted")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.contains("snapshot snap-c") && f.contains("forgotten")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.contains("d runs the candidate outside a promoted batch")),
        "{found:?}"
    );
    // A promoted batch's members need no Backup.
    assert!(
        !found
            .iter()
            .any(|f| f.starts_with("a ") || f.starts_with("b "))
    );
}

#[test]
fn a_repository_that_could_not_be_listed_never_shows_a_way_back() {
    let (q, taken) = cut_short();
    let read = FleetRead {
        snapshots: None,
        ..on_candidate_read()
    };
    let v = way_back(&q, &taken, &read);
    assert!(
        v.iter().any(|v| v.found.contains("was not listed")),
        "{v:?}"
    );
}

#[test]
fn a_member_back_on_its_version_may_lose_its_backup() {
    let (q, taken) = cut_short();
    let read = FleetRead {
        servers: vec![
            server("a", "2.0", "Running"),
            server("b", "2.0", "Running"),
            server("c", "1.0", "Running"),
            server("d", "1.0", "Running"),
        ],
        backups: vec![backup("a", "snap-a"), backup("b", "snap-b")],
        snapshots: Some(vec!["snap-a".into(), "snap-b".into()]),
    };
    assert!(way_back(&q, &taken, &read).is_empty());
}

#[test]
fn a_compatible_candidate_left_on_a_member_needs_the_version_it_ran() {
    let (mut q, _) = cut_short();
    q.plan.rollback = Rollback::Compatible;
    assert!(way_back(&q, &[], &on_candidate_read()).is_empty());
    q.baseline[2].version = None;
    let v = way_back(&q, &[], &on_candidate_read());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("c runs the candidate"), "{v:?}");
}

fn meta() -> Meta {
    Meta {
        run_id: "run".into(),
        operator: "op".into(),
        operator_version: "1".into(),
        harness_version: "0".into(),
        harness_commit: "c".into(),
        backend: "existing".into(),
        context: "ctx".into(),
        namespace: "games".into(),
    }
}

/// Finding 2: after a second signal the report said `promote 0 batches`, every pod `gone`,
/// while members ran the candidate on the same pods and claims.
#[test]
fn a_report_that_says_gone_or_promoted_while_members_run_the_candidate_is_untrue() {
    let (mut q, _) = cut_short();
    let read = on_candidate_read();
    // What the old procedure wrote: nothing read after, no interruption, outcome untouched.
    q.interrupted = None;
    q.outcome = Outcome::Promoted { batches: 0 };
    let untrue = QualificationReport::new(meta(), &q, None);
    assert_eq!(untrue.decision, "promote 0 batches");
    let v = truth(&q, &untrue, &read);
    assert!(v.iter().all(|v| v.invariant == TRUTH));
    let found: Vec<&str> = v.iter().map(|v| v.found.as_str()).collect();
    assert!(
        found
            .iter()
            .any(|f| f.contains("a's pod as none (gone)") && f.contains("pod-a")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.contains("claim world-c of c")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.contains("the report says promoted")),
        "{found:?}"
    );

    // What it writes now: the fleet re-read, the interruption named with who is left.
    let (mut q, _) = cut_short();
    q.after = FLEET.iter().map(|m| member(m, "2.0")).collect();
    let told = QualificationReport::new(meta(), &q, None);
    assert!(!told.promoted);
    assert_eq!(
        told.decision,
        "not qualified: interrupted by SIGINT (a second signal stopped it at once); promoted 1 batch, then interrupted: a, b stay on the candidate; left on the candidate, not put back: c, d (see Way back)"
    );
    assert_eq!(truth(&q, &told, &read), vec![]);
    let md = rehearsal_evidence::report::qualification::markdown(&told);
    assert!(md.contains("| c | `1.0` | `2.0` |"), "{md}");
}

/// Finding 3: one signal during batch 2: the decision says batch 1 stays promoted.
#[test]
fn an_interrupt_in_a_later_batch_says_which_batches_stay_promoted() {
    let mut q = qualification(1);
    q.interrupted = Some(Interruption {
        signal: "SIGTERM".into(),
        at_once: false,
        left_on_candidate: vec![],
        before_step: None,
    });
    assert_eq!(
        q.interrupted_decision().unwrap(),
        "not qualified: interrupted by SIGTERM; promoted 1 batch, then interrupted: a, b stay on the candidate"
    );
    let mut q = qualification(0);
    q.interrupted = Some(Interruption {
        signal: "SIGINT".into(),
        at_once: false,
        left_on_candidate: vec![],
        before_step: None,
    });
    assert_eq!(
        q.interrupted_decision().unwrap(),
        "not qualified: interrupted by SIGINT; nothing was promoted"
    );
}

/// Finding 5: the way back pins the previous version (suspended) before it restores.
#[test]
fn the_way_back_commands_pin_the_previous_version_before_the_restore() {
    let w = WayBack {
        server: "c".into(),
        backup: "qualify-c-pre-x".into(),
        snapshot: "snap-c".into(),
        succeeded_unix_ms: None,
        previous: Some("1.0".into()),
        kept_because: Some("c pins 2.0".into()),
    };
    let commands = way_back_commands("games", &w);
    let pin = commands
        .iter()
        .position(|c| c.contains(r#""version":"1.0""#) && c.contains(r#""suspend":true"#))
        .expect("a pin of 1.0, suspended");
    let restore = commands
        .iter()
        .position(|c| c.contains("kind: Restore") && c.contains("name: qualify-c-pre-x"))
        .expect("a Restore of the way back");
    let resume = commands
        .iter()
        .position(|c| c.contains(r#""suspend":null"#))
        .expect("a resume");
    assert!(pin < restore && restore < resume, "{commands:#?}");
    assert!(commands.iter().all(|c| c.starts_with("kubectl -n games ")));
}

#[test]
fn the_journal_names_every_pre_promotion_backup_created() {
    use rehearsal_evidence::receipts::Receipt;
    let receipt = |kind: &str, step: &str, observed: serde_json::Value| Receipt {
        seq: 0,
        time: jiff::Timestamp::UNIX_EPOCH,
        run_id: "run".into(),
        case: Some("qualify-2.0".into()),
        step: step.into(),
        arch: "amd64".into(),
        kind: kind.into(),
        observed,
        prev: String::new(),
        sha256: String::new(),
    };
    let receipts = vec![
        receipt(
            "step",
            rehearsal_evidence::invariants::way_back::WAY_BACK_CREATED_STEP,
            serde_json::json!({"member": "c", "backup": "qualify-c-pre-x", "previous": "1.0"}),
        ),
        receipt(
            "step",
            rehearsal_evidence::invariants::way_back::WAY_BACK_CREATED_STEP,
            serde_json::json!({"member": "d", "backup": "qualify-d-pre-x", "previous": null}),
        ),
        receipt(
            "restic-snapshot",
            "back up batch 2",
            serde_json::json!({"snapshot_id": "snap-c", "details": {"backup": "qualify-c-pre-x", "server": "c"}}),
        ),
        // Another step with the same fields, and another kind under the step's name: neither
        // is a Backup created.
        receipt(
            "step",
            "pre-promotion backup awaited",
            serde_json::json!({"member": "e", "backup": "qualify-e-pre-x", "previous": "1.0"}),
        ),
        receipt(
            "gate",
            rehearsal_evidence::invariants::way_back::WAY_BACK_CREATED_STEP,
            serde_json::json!({"member": "f", "backup": "qualify-f-pre-x", "previous": "1.0"}),
        ),
    ];
    assert_eq!(
        taken_from_receipts(&receipts),
        vec![
            taken("c", Some("snap-c")),
            TakenBackup {
                previous: None,
                ..taken("d", None)
            }
        ]
    );
}

/// Finding 7: a suspended member and a member whose image override means it can never run
/// the candidate are refused, each named with its fix.
#[test]
fn the_preflight_refuses_members_that_can_never_run_the_candidate() {
    let ok = MemberState {
        name: "a".into(),
        ..Default::default()
    };
    assert_eq!(
        member_state_refusal("games", std::slice::from_ref(&ok)),
        None
    );
    let suspended = MemberState {
        name: "b".into(),
        suspended: true,
        ..Default::default()
    };
    let r = member_state_refusal("games", &[ok.clone(), suspended.clone()]).unwrap();
    assert!(r.contains("b in namespace games are suspended"), "{r}");
    assert!(r.contains("or leave it out of --fleet"), "{r}");
    assert!(!r.contains("override"), "{r}");
    let overriding = MemberState {
        name: "c".into(),
        image_override: Some("game:1.0".into()),
        ..Default::default()
    };
    let r = member_state_refusal("games", &[ok.clone(), overriding.clone()]).unwrap();
    assert!(
        r.contains("c (spec.image game:1.0) in namespace games override their image"),
        "{r}"
    );
    assert!(r.contains("can never run the candidate"), "{r}");
    assert!(r.contains(r#"{"spec":{"image":null}}"#), "{r}");
    assert!(!r.contains("suspended"), "{r}");
    let r = member_state_refusal("games", &[suspended, overriding]).unwrap();
    assert!(r.contains("b in namespace games are suspended"), "{r}");
    assert!(r.contains("c (spec.image game:1.0)"), "{r}");
    // An empty override is no override.
    let empty = MemberState {
        name: "d".into(),
        image_override: Some(String::new()),
        ..Default::default()
    };
    assert_eq!(member_state_refusal("games", &[ok, empty]), None);
}

/// Finding 7: the image gate's reason names the bound it really used — its whole wait — not
/// only the pod's own bound ("within 60s" after two minutes).
#[test]
fn the_image_gate_says_how_long_it_waited_in_all() {
    use std::time::Duration;
    let r = did_not_run(
        "pod games/mc-b did not run within 60s",
        Duration::from_secs(127),
        Duration::from_secs(60),
        Duration::from_secs(60),
    );
    assert!(
        r.starts_with("pod games/mc-b did not run within 60s"),
        "{r}"
    );
    assert!(r.contains("waited 127 s in all"), "{r}");
    assert!(r.contains("the pod up to 60 s"), "{r}");
    assert!(r.contains("the GameServer's verdict up to 60 s"), "{r}");
}

/// An annotation that records the previous version: empty means the template's default.
#[test]
fn the_previous_version_is_read_from_its_annotation() {
    use rehearsal_evidence::invariants::way_back::previous_from_annotation;
    assert_eq!(previous_from_annotation(""), None);
    assert_eq!(previous_from_annotation("1.0"), Some("1.0"));
}
