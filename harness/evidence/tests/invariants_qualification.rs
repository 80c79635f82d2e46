//! The qualification invariant on recorded qualifications: a correct promotion and a correct
//! halt hold it; a promotion past a failed gate, a member left on the candidate, a member
//! outside the promoted batches touched, and a missing promotion receipt are each named.

use std::collections::BTreeMap;

use rehearsal_evidence::catalogue::{Fault, Operation};
use rehearsal_evidence::invariants::outcome::{OUTCOME, Perturbation};
use rehearsal_evidence::invariants::qualification::{QUALIFICATION, judge};
use rehearsal_evidence::qualification::{
    Gate, GateEvidence, MemberBaseline, Outcome, Plan, Qualification, Rollback,
};

const FLEET: [&str; 3] = ["mc-a", "mc-b", "mc-c"];

fn member(server: &str, version: &str, pod: &str) -> MemberBaseline {
    MemberBaseline {
        server: server.into(),
        version: Some(version.into()),
        pod_uid: Some(pod.into()),
        pvcs: BTreeMap::from([(format!("{server}-data"), format!("uid-{server}"))]),
        digests: BTreeMap::from([(format!("{server}-data"), "sha-1".to_string())]),
    }
}

fn gate(server: &str, passed: bool) -> Gate {
    Gate::new(
        server,
        GateEvidence::Preflight(None),
        passed,
        (!passed).then(|| "refused".to_string()),
    )
}

/// A fleet of three in batches of one; `promoted` batches moved to `candidate` (new pods), the
/// rest untouched; every gate passed.
fn qualification(promoted: usize) -> Qualification {
    let plan = Plan {
        template: "t".into(),
        source: "mc-a".into(),
        fleet: FLEET.map(String::from).to_vec(),
        batch_size: 1,
        candidate: "candidate".into(),
        rollback: Rollback::Compatible,
        run_id: "run".into(),
        repo_secret: "restic-repo".into(),
        module: None,
        keep_failed_batch: false,
        gate_concurrency: 4,
    };
    let baseline: Vec<MemberBaseline> = FLEET
        .iter()
        .map(|m| member(m, "stable", &format!("pod-{m}")))
        .collect();
    let after = FLEET
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if i < promoted {
                MemberBaseline {
                    digests: BTreeMap::new(),
                    ..member(m, "candidate", &format!("pod-{m}-2"))
                }
            } else {
                member(m, "stable", &format!("pod-{m}"))
            }
        })
        .collect();
    let mut gates = vec![gate("", true), gate("mc-a-canary", true)];
    gates.extend(FLEET.iter().take(promoted).map(|m| gate(m, true)));
    Qualification {
        plan,
        clone: "mc-a-canary".into(),
        candidate_image: None,
        previous: Some("stable".into()),
        baseline,
        after,
        snapshot: None,
        gates,
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

/// `q` halted at a failed gate on `server` after `promoted` batches.
fn halted_at(mut q: Qualification, server: &str, promoted: usize) -> Qualification {
    q.gates.push(gate(server, false));
    q.outcome = Outcome::Halted {
        gate: "preflight".into(),
        server: Some(server.into()),
        reason: "refused".into(),
        batches_promoted: promoted,
    };
    q
}

fn found(q: &Qualification) -> Vec<String> {
    judge(q, None, None).into_iter().map(|v| v.found).collect()
}

#[test]
fn a_full_promotion_and_an_honest_halt_hold() {
    assert_eq!(found(&qualification(3)), Vec::<String>::new());
    // Halted at mc-b's gate (batch 2) after batch 1: mc-b put back, mc-c untouched.
    let mut q = halted_at(qualification(1), "mc-b", 1);
    q.after[1] = member("mc-b", "stable", "pod-mc-b-3");
    assert_eq!(found(&q), Vec::<String>::new());
    // Halted at the canary: nothing promoted, the whole fleet as it was.
    let q = halted_at(qualification(0), "mc-a-canary", 0);
    assert_eq!(found(&q), Vec::<String>::new());
}

#[test]
fn promotion_past_a_failed_gate_is_named() {
    // A canary gate failed, yet the qualification reports a promotion.
    let mut q = qualification(3);
    q.gates.insert(1, gate("mc-a-canary", false));
    let v = found(&q);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].contains("failed, yet the qualification reports"),
        "{}",
        v[0]
    );
    // mc-b's gate failed (batch 2) but two batches are reported promoted.
    let q = halted_at(qualification(2), "mc-b", 2);
    let v = found(&q);
    assert!(
        v.iter().any(|f| f.contains("only batches before 2 may be")),
        "{v:?}"
    );
    // Halted, but no gate failed.
    let mut q = qualification(1);
    q.outcome = Outcome::Halted {
        gate: "join".into(),
        server: Some("mc-b".into()),
        reason: "-".into(),
        batches_promoted: 1,
    };
    q.after[1] = member("mc-b", "stable", "pod-mc-b");
    assert!(
        found(&q)
            .iter()
            .any(|f| f.contains("every recorded gate passed")),
        "{:?}",
        found(&q)
    );
}

#[test]
fn the_fleet_outside_the_promoted_batches_is_as_it_was() {
    // The failed batch's member left on the candidate.
    let mut q = halted_at(qualification(1), "mc-b", 1);
    q.after[1] = member("mc-b", "candidate", "pod-mc-b-3");
    let v = judge(&q, None, None);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].invariant, QUALIFICATION);
    assert!(
        v[0].found.contains("of failed batch 2 runs"),
        "{}",
        v[0].found
    );
    // A member after the failed batch touched: pod, claims and world digests each named.
    for touch in ["pod", "claims", "world digests"] {
        let mut q = halted_at(qualification(0), "mc-a-canary", 0);
        let c = &mut q.after[2];
        match touch {
            "pod" => c.pod_uid = Some("pod-mc-c-2".into()),
            "claims" => c.pvcs = BTreeMap::from([("mc-c-data".into(), "uid-new".into())]),
            _ => c.digests = BTreeMap::from([("mc-c-data".into(), "sha-2".into())]),
        }
        let v = found(&q);
        assert_eq!(v.len(), 1, "{touch}: {v:?}");
        assert!(v[0].contains("never promoted) changed"), "{}", v[0]);
        assert!(v[0].contains(touch), "{touch}: {}", v[0]);
    }
    // A promoted member not on the candidate, and a missing promotion receipt.
    let mut q = qualification(3);
    q.after[0].version = Some("stable".into());
    q.promotion_receipts = 2;
    let v = found(&q);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v.iter().any(|f| f.contains("not the candidate")), "{v:?}");
    assert!(
        v.iter().any(|f| f.contains("2 promotion receipt(s)")),
        "{v:?}"
    );
}

#[test]
fn a_good_candidate_unperturbed_is_promoted_in_every_batch() {
    let p = |fault: Option<&str>| Perturbation {
        operation: Operation::parse("qualify").unwrap(),
        fault: fault.map(|f| Fault::parse(f).unwrap()),
    };
    assert_eq!(judge(&qualification(3), None, Some(&p(None))), Vec::new());
    // Halted with nothing wrong with the candidate, or stopped on an error: the oracle says so.
    let halted = halted_at(qualification(0), "mc-a-canary", 0);
    for fault in [None, Some("operator-restart")] {
        let v = judge(&halted, None, Some(&p(fault)));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, OUTCOME);
        assert!(
            v[0].found.contains("promoted in 3 batch(es)"),
            "{}",
            v[0].found
        );
    }
    let stopped = qualification(0);
    let v = judge(&stopped, Some("back up the source: Failed"), Some(&p(None)));
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains("stopped on an error"), "{}", v[0].found);
    // After a fault that may change the ending (the source's game restarted) the invariant
    // judges alone: an error that left the fleet as it was holds.
    assert_eq!(
        judge(&stopped, Some("e"), Some(&p(Some("game-restart")))),
        Vec::new()
    );
}

#[test]
fn an_unpullable_candidate_halts_on_the_canary_with_the_pull_failure_reported() {
    use rehearsal_evidence::qualification::{ImageEvidence, Observed, gates};
    let p = |operation: &str| Perturbation {
        operation: Operation::parse(operation).unwrap(),
        fault: None,
    };
    let image_gate = |phase: &str, reason: &str| {
        let mut g = Gate::new(
            "mc-a-canary",
            GateEvidence::Image(Observed::Read(ImageEvidence {
                pod_uid: Some("pod-canary".into()),
                image_id: String::new(),
                pinned: "fixture@sha256:bad".into(),
                spec_image: "fixture@sha256:bad".into(),
                waiting_reason: Some("ErrImagePull".into()),
                gameserver_phase: Some(phase.into()),
                gameserver_ready_reason: Some(reason.into()),
            })),
            false,
            Some("image pull failed".into()),
        );
        g.server = "mc-a-canary".into();
        g
    };
    let halted = |g: Gate| {
        let mut q = qualification(0);
        q.outcome = Outcome::Halted {
            gate: g.name.clone(),
            server: Some(g.server.clone()),
            reason: "image pull failed".into(),
            batches_promoted: 0,
        };
        q.gates.push(g);
        q
    };
    let reported = halted(image_gate("Failed", "ImagePullFailed"));
    assert_eq!(
        judge(&reported, None, Some(&p("qualify-unpullable"))),
        Vec::new()
    );
    // The pull failure not reported on the GameServer: only the oracle can tell.
    let unreported = halted(image_gate("Starting", "Starting"));
    let v = judge(&unreported, None, Some(&p("qualify-unpullable")));
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].invariant, OUTCOME);
    assert!(v[0].found.contains("ImagePullFailed"), "{}", v[0].found);
    // A moved bundle tag must halt at the module gate: a promotion is the wrong ending, and so
    // is a halt at another gate.
    let v = judge(&qualification(3), None, Some(&p("qualify-module-moved")));
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].found.contains(gates::MODULE), "{}", v[0].found);
    let v = judge(&reported, None, Some(&p("qualify-module-moved")));
    assert_eq!(v.len(), 1, "{v:?}");
    // The bundle served as pinned: promoted in every batch.
    assert_eq!(
        judge(&qualification(3), None, Some(&p("qualify-module"))),
        Vec::new()
    );
    // Failed for another reason is not the pull failure.
    let other = halted(image_gate("Failed", "CrashLoop"));
    let v = judge(&other, None, Some(&p("qualify-unpullable")));
    assert_eq!(v.len(), 1, "{v:?}");
    // A passed gate of the same name before the failed one is not the gate that halted it.
    let mut retried = halted(image_gate("Failed", "ImagePullFailed"));
    let mut passed = image_gate("Running", "Ready");
    passed.passed = true;
    retried.gates.insert(2, passed);
    assert_eq!(
        judge(&retried, None, Some(&p("qualify-unpullable"))),
        Vec::new()
    );
    // A halt at another gate on the canary is the wrong ending, named as the halt it must be.
    let mut join = image_gate("Failed", "ImagePullFailed");
    join.name = gates::JOIN.into();
    let v = judge(&halted(join), None, Some(&p("qualify-unpullable")));
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].found.ends_with(&format!(
            "(the contract allows only halted at gate {:?} on the canary mc-a-canary)",
            gates::IMAGE
        )),
        "{}",
        v[0].found
    );
}

/// A member whose world was not read back after the qualification (no digests) is judged on
/// what was read: its version, pod and claims.
#[test]
fn an_unread_world_digest_is_not_a_change() {
    let mut q = halted_at(qualification(0), "mc-a-canary", 0);
    q.after[2].digests.clear();
    assert_eq!(found(&q), Vec::<String>::new());
    q.after[2].digests = BTreeMap::from([("mc-c-data".to_string(), "sha-2".to_string())]);
    assert_eq!(found(&q).len(), 1, "{:?}", found(&q));
}

#[test]
fn a_moved_bundle_tag_halts_at_the_module_gate_with_the_operator_refusing_it() {
    use rehearsal_evidence::qualification::{ModuleEvidence, Observed};
    let p = Perturbation {
        operation: Operation::parse("qualify-module-moved").unwrap(),
        fault: Some(Fault::parse("operator-restart").unwrap()),
    };
    let halted = |phase: &str, reason: &str| {
        let g = Gate::new(
            "",
            GateEvidence::Module(Observed::Read(ModuleEvidence {
                reference: "127.0.0.1:5000/ns/fixture-game:1.1".into(),
                pinned: "sha256:aaa".into(),
                served: Some("sha256:bbb".into()),
                module: "run-fixture-game".into(),
                phase: Some(phase.into()),
                ready_reason: Some(reason.into()),
                ready_message: None,
                applied_digest: None,
                template: None,
            })),
            false,
            Some("served sha256:bbb, pinned sha256:aaa".into()),
        );
        let mut q = qualification(0);
        q.outcome = Outcome::Halted {
            gate: g.name.clone(),
            server: None,
            reason: "digest mismatch".into(),
            batches_promoted: 0,
        };
        q.gates.push(g);
        q
    };
    assert_eq!(
        judge(&halted("Failed", "DigestMismatch"), None, Some(&p)),
        Vec::new()
    );
    // The gate saw the mismatch, but the operator installed the bundle anyway.
    let v = judge(&halted("Ready", "Installed"), None, Some(&p));
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].invariant, OUTCOME);
    assert!(v[0].found.contains("DigestMismatch"), "{}", v[0].found);
}

/// Batches are the fleet in order, `batch_size` members each: a promotion of one batch of two
/// moved exactly the first two members.
#[test]
fn a_batch_of_two_moves_its_two_members() {
    let mut q = qualification(2);
    q.plan.batch_size = 2;
    q.outcome = Outcome::Promoted { batches: 1 };
    q.promotion_receipts = 1;
    assert_eq!(found(&q), Vec::<String>::new());
}

/// A qualification that stopped on an error after promoting batch 1 is judged with batch 2 as
/// the one cut short: batch 1 stays on the candidate.
#[test]
fn a_stopped_qualification_cut_short_the_batch_after_its_promoted_ones() {
    // Batch 2 (mc-b) was moved and put back: a new pod on its version, as a put-back leaves it
    // (an untouched member would keep its pod).
    let mut q = qualification(1);
    q.after[1] = member("mc-b", "stable", "pod-mc-b-3");
    let found: Vec<String> = judge(&q, Some("stopped on an error"), None)
        .into_iter()
        .filter(|v| v.invariant == QUALIFICATION)
        .map(|v| v.found)
        .collect();
    assert_eq!(found, Vec::<String>::new());
}

/// The Restore of the source after a halt: Succeeded holds; Failed breaks the outcome; anything
/// else (never ended, or no phase) breaks liveness, naming the last phase.
#[test]
fn the_restore_after_a_halt_must_succeed() {
    use rehearsal_evidence::invariants::LIVENESS;
    use rehearsal_evidence::invariants::qualification::restore_after_halt;
    assert_eq!(restore_after_halt(Some("Succeeded")), Vec::new());
    let failed = restore_after_halt(Some("Failed"));
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].invariant, OUTCOME);
    let pending = restore_after_halt(Some("Pending"));
    assert_eq!(pending[0].invariant, LIVENESS);
    assert!(
        pending[0].found.ends_with("last phase Pending"),
        "{pending:?}"
    );
    assert!(
        restore_after_halt(None)[0]
            .found
            .ends_with("last phase none")
    );
}
