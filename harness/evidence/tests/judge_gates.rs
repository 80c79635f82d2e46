//! The qualification's decisions on recorded observations: each gate passes exactly when what
//! it observed meets the contract, a rollback's problems name each claim that is wrong, the
//! fleet is cut into batches without losing or repeating a member, and the first failed gate
//! of a batch halts the rollout with the batches promoted before it.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rehearsal_evidence::judge::gates::{
    self, ClaimRead, EMPTY_DIGEST, after_batch, batches, candidate_digest, halted,
};
use rehearsal_evidence::qualification::gates as gates_names;
use rehearsal_evidence::qualification::{
    Gate, GateEvidence, ImageEvidence, ModuleEvidence, Observed, Outcome, SaveEvidence,
    TemplateComparison,
};

const PIN: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn image_evidence(image_id: &str) -> ImageEvidence {
    ImageEvidence {
        pod_uid: Some("uid-1".into()),
        image_id: image_id.into(),
        pinned: format!("registry.local/game@{PIN}"),
        spec_image: format!("registry.local/game@{PIN}"),
        waiting_reason: Some("ImagePullBackOff".into()),
        gameserver_phase: Some("Failed".into()),
        gameserver_ready_reason: Some("ImagePullFailed".into()),
    }
}

#[test]
fn a_pinned_image_is_its_digest() {
    assert_eq!(candidate_digest(&format!("r/g@{PIN}")), PIN);
    assert_eq!(candidate_digest("r/g:1.0"), "r/g:1.0");
    assert_eq!(candidate_digest("a@b@c"), "c");
}

#[test]
fn the_image_gate_passes_only_a_running_container_of_the_pinned_digest() {
    let ok = gates::image(&image_evidence(&format!("docker.io/g@{PIN}")), Ok(()));
    assert!(ok.passed);
    let other = gates::image(&image_evidence(&format!("docker.io/g@{OTHER}")), Ok(()));
    assert!(!other.passed);
    assert_eq!(
        other.reason,
        format!(
            "the game container runs imageID \"docker.io/g@{OTHER}\", not the pinned digest {PIN} (pod spec image registry.local/game@{PIN})"
        )
    );
    // Never ran: no imageID at all, whatever is pinned.
    assert!(!gates::image(&image_evidence(""), Ok(())).passed);
    // The digest is right but the container did not run.
    let stuck = gates::image(
        &image_evidence(&format!("docker.io/g@{PIN}")),
        Err("timed out after 90 s"),
    );
    assert!(!stuck.passed);
    assert_eq!(
        stuck.reason,
        "the game container did not run: waiting reason ImagePullBackOff; GameServer phase Failed (ImagePullFailed); timed out after 90 s"
    );
    let mut bare = image_evidence("");
    bare.waiting_reason = None;
    bare.gameserver_phase = None;
    bare.gameserver_ready_reason = None;
    assert_eq!(
        gates::image(&bare, Err("e")).reason,
        "the game container did not run: waiting reason none; GameServer phase none (no Ready reason); e"
    );
}

#[test]
fn the_save_gate_wants_the_game_to_say_it_saved() {
    let s = |r: &[&str]| gates::save(&r.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    assert!(s(&["Saving the game", "Saved the game"]).passed);
    assert!(s(&["Saved the game (flush)"]).passed);
    assert!(!s(&[]).passed);
    assert!(!s(&["saved the game"]).passed);
    let failed = s(&["Unknown command"]);
    assert!(!failed.passed);
    assert_eq!(
        failed.reason,
        "the game replied [\"Unknown command\"], not \"Saved the game\""
    );
}

fn module_evidence(
    served: Option<&str>,
    phase: Option<&str>,
    applied: Option<&str>,
) -> ModuleEvidence {
    ModuleEvidence {
        reference: "127.0.0.1:5000/mods:1".into(),
        pinned: PIN.into(),
        served: served.map(str::to_owned),
        module: "mc-canary-mods".into(),
        phase: phase.map(str::to_owned),
        ready_reason: Some("Applied".into()),
        ready_message: Some("installed".into()),
        applied_digest: applied.map(str::to_owned),
        template: Some(Box::new(comparison(
            Some("sha256:t1"),
            Some("sha256:t1"),
            &[],
        ))),
    }
}

fn comparison(
    pinned: Option<&str>,
    installed: Option<&str>,
    differs: &[&str],
) -> TemplateComparison {
    TemplateComparison {
        name: "mc-canary-mods".into(),
        pinned: pinned.map(str::to_owned),
        unread: pinned.is_none().then(|| "GET layer: HTTP 404".into()),
        installed: installed.map(str::to_owned),
        differs: differs.iter().map(|d| d.to_string()).collect(),
    }
}

#[test]
fn the_module_gate_wants_the_installed_template_to_be_the_pinned_bundles() {
    let with = |t: Option<TemplateComparison>| {
        let mut e = module_evidence(Some(PIN), Some("Ready"), Some(PIN));
        e.template = t.map(Box::new);
        gates::module(&e, PIN)
    };
    let reported = "module bundle 127.0.0.1:5000/mods:1: the operator reports the pinned sha256:";
    for (t, says) in [
        (
            Some(comparison(
                Some("sha256:t1"),
                Some("sha256:t2"),
                &["displayName"],
            )),
            "GameTemplate mc-canary-mods is not the pinned bundle's template (differs in displayName)",
        ),
        (
            Some(comparison(Some("sha256:t1"), Some("sha256:t2"), &[])),
            "GameTemplate mc-canary-mods is not the pinned bundle's template (differs in its spec)",
        ),
        (
            Some(comparison(Some("sha256:t1"), None, &[])),
            "no GameTemplate mc-canary-mods was installed",
        ),
        (
            Some(comparison(None, None, &[])),
            "the pinned bundle's template could not be read to compare GameTemplate mc-canary-mods with (GET layer: HTTP 404)",
        ),
        (
            Some(TemplateComparison {
                unread: None,
                ..comparison(None, Some("sha256:t1"), &[])
            }),
            "could not be read to compare GameTemplate mc-canary-mods with (no reason recorded)",
        ),
        (
            None,
            "the installed GameTemplate was not compared with the pinned bundle",
        ),
    ] {
        let (passed, reason) = with(t.clone());
        assert!(!passed, "{t:?}");
        let reason = reason.unwrap();
        assert!(reason.starts_with(reported), "{reason}");
        assert!(reason.contains(says), "{reason}");
        assert!(
            reason.ends_with("the operator's Module mc-canary-mods is Ready (Applied: installed)"),
            "{reason}"
        );
    }
    assert!(comparison(Some("a"), Some("a"), &[]).matches());
    assert!(!comparison(None, None, &[]).matches());
    assert!(!comparison(Some("a"), Some("b"), &[]).matches());
}

#[test]
fn the_module_gate_wants_the_pinned_bundle_served_and_installed() {
    let (passed, reason) =
        gates::module(&module_evidence(Some(PIN), Some("Ready"), Some(PIN)), PIN);
    assert!(passed);
    assert_eq!(reason, None);
    let (passed, reason) = gates::module(
        &module_evidence(Some(OTHER), Some("Ready"), Some(OTHER)),
        PIN,
    );
    assert!(!passed);
    assert_eq!(
        reason.unwrap(),
        format!(
            "module bundle 127.0.0.1:5000/mods:1: the registry serves {OTHER}, but the candidate pins {PIN}; the operator's Module mc-canary-mods is Ready (Applied: installed)"
        )
    );
    let (passed, reason) = gates::module(&module_evidence(None, None, None), PIN);
    assert!(!passed);
    assert!(reason.unwrap().contains("serves no such tag"));
    for (phase, applied) in [
        (Some("Ready"), Some(OTHER)),
        (Some("Ready"), None),
        (Some("Failed"), Some(PIN)),
        (None, Some(PIN)),
    ] {
        let (passed, reason) = gates::module(&module_evidence(Some(PIN), phase, applied), PIN);
        assert!(!passed, "{phase:?} {applied:?}");
        let reason = reason.unwrap();
        assert!(
            reason.contains("the operator did not install exactly it"),
            "{reason}"
        );
        assert!(
            reason.contains(&format!("(applied {})", applied.unwrap_or("nothing"))),
            "{reason}"
        );
    }
    let mut bare = module_evidence(Some(PIN), None, None);
    bare.ready_reason = None;
    bare.ready_message = None;
    let (_, reason) = gates::module(&bare, PIN);
    assert!(
        reason.unwrap().ends_with(
            "the operator's Module mc-canary-mods is without a phase (no Ready reason: )"
        )
    );
}

fn read(digest: &str, files: u64, torn: bool) -> ClaimRead {
    ClaimRead {
        digest: digest.into(),
        files,
        torn,
        problem: torn.then(|| "region generation 3, manifest 2".into()),
        kind: serde_json::json!("world"),
        format: Some(1),
        candidate_marker: false,
    }
}

fn claims(c: &[(&str, ClaimRead)]) -> BTreeMap<String, ClaimRead> {
    c.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn names(c: &[&str]) -> Vec<String> {
    c.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_read_back_gate_wants_every_claim_read_whole() {
    let before = claims(&[
        ("mc-data", read("d1", 3, false)),
        ("mc-extra-n", read("e1", 2, false)),
    ]);
    let now = claims(&[
        ("mc-data", read("d2", 4, false)),
        ("mc-extra-n", read("e1", 2, false)),
    ]);
    let (d, rows) = gates::read_back(&names(&["mc-data", "mc-extra-n"]), &before, &now);
    assert!(d.passed, "{}", d.reason);
    let data = &rows["mc-data"];
    assert_eq!(data.digest_before.as_deref(), Some("d1"));
    assert_eq!(data.files_before, Some(3));
    assert_eq!(data.digest, "d2");
    assert_eq!(data.files, 4);
    assert_eq!(data.changed, Some(true));
    assert_eq!(data.kind, serde_json::json!("world"));
    assert_eq!(data.format, Some(1));
    assert!(!data.candidate_marker);
    assert_eq!(rows["mc-extra-n"].changed, Some(false));

    // A claim not read, emptied, or torn fails the gate, each named.
    let now = claims(&[
        ("mc-data", read("d0", 0, false)),
        ("mc-extra-n", read("e1", 2, true)),
    ]);
    let (d, rows) = gates::read_back(
        &names(&["mc-data", "mc-extra-n", "mc-extra-e"]),
        &before,
        &now,
    );
    assert!(!d.passed);
    assert_eq!(
        d.reason,
        "world claims did not read back: mc-data holds no files under the candidate (3 before); \
         mc-extra-n is torn: region generation 3, manifest 2; mc-extra-e was not read"
    );
    assert_eq!(rows.len(), 2, "a claim not read has no row");

    // A claim empty before may stay empty; a claim new since the baseline has nothing to
    // compare with.
    let before = claims(&[("mc-data", read(EMPTY_DIGEST, 0, false))]);
    let now = claims(&[
        ("mc-data", read(EMPTY_DIGEST, 0, false)),
        ("mc-new", read("n", 1, false)),
    ]);
    let (d, rows) = gates::read_back(&names(&["mc-data", "mc-new"]), &before, &now);
    assert!(d.passed, "{}", d.reason);
    assert_eq!(rows["mc-new"].changed, None);
    assert_eq!(rows["mc-new"].digest_before, None);

    // Nothing read at all is no pass, even when no claim was asked for.
    let (d, _) = gates::read_back(&[], &before, &BTreeMap::new());
    assert!(!d.passed);
    // A torn claim without a problem still says why.
    let mut torn = read("d", 1, true);
    torn.problem = None;
    let (d, _) = gates::read_back(
        &names(&["mc-data"]),
        &BTreeMap::new(),
        &claims(&[("mc-data", torn)]),
    );
    assert_eq!(
        d.reason,
        "world claims did not read back: mc-data is torn: the save is inconsistent"
    );
}

#[test]
fn a_rollback_names_each_claim_it_left_wrong() {
    let claim_names = names(&["mc-canary-data", "mc-canary-extra-n", "other-data"]);
    let source: BTreeMap<String, String> = [
        ("mc-data".to_string(), "s1".to_string()),
        ("mc-extra-n".to_string(), EMPTY_DIGEST.to_string()),
    ]
    .into();
    // The seeding restore left the primary claim empty while the source holds data there;
    // the extra claim is empty on the source too; `other-data` is not the clone's.
    let restored = claims(&[("mc-canary-data", read(EMPTY_DIGEST, 0, false))]);
    assert_eq!(
        gates::unseeded_claims(&claim_names, "mc-canary", "mc", Some(&source), &restored),
        vec![
            "mc-canary-data: the snapshot restored no files, but the source's mc-data holds data (the backup does not cover it)"
                .to_string()
        ]
    );
    assert!(gates::unseeded_claims(&claim_names, "mc-canary", "mc", None, &restored).is_empty());
    let seeded = claims(&[("mc-canary-data", read("s1", 2, false))]);
    assert!(
        gates::unseeded_claims(&claim_names, "mc-canary", "mc", Some(&source), &seeded).is_empty()
    );

    let snapshot = claims(&[
        ("mc-canary-data", read("aaaaaaaaaaaaaaaa", 2, false)),
        ("mc-canary-extra-n", read("e", 1, false)),
    ]);
    let back = claims(&[
        ("mc-canary-data", read("bbbbbbbbbbbbbbbb", 2, false)),
        ("mc-canary-extra-n", read("e", 1, false)),
    ]);
    let two = names(&["mc-canary-data", "mc-canary-extra-n", "mc-canary-extra-x"]);
    assert_eq!(
        gates::restore_mismatches(&two, &snapshot, &back),
        vec![
            "mc-canary-data: digest bbbbbbbbbbbb after the rollback restore, not the snapshot's aaaaaaaaaaaa (the claim does not hold exactly the snapshot)".to_string()
        ],
        "a claim read on neither side is no mismatch"
    );
    let missing = claims(&[("mc-canary-extra-n", read("e", 1, false))]);
    assert_eq!(
        gates::restore_mismatches(&two, &snapshot, &missing),
        vec![
            "mc-canary-data: digest (not read) after the rollback restore, not the snapshot's aaaaaaaaaaaa (the claim does not hold exactly the snapshot)".to_string()
        ]
    );

    let after = claims(&[
        ("mc-canary-data", read("x", 0, false)),
        ("mc-canary-extra-n", read("e", 1, true)),
    ]);
    assert_eq!(
        gates::unsound_after_rollback(&two, &snapshot, &after),
        names(&[
            "mc-canary-data holds no files after the rollback",
            "mc-canary-extra-n is torn after the rollback: region generation 3, manifest 2",
            "mc-canary-extra-x was not read after the rollback",
        ])
    );
    assert!(gates::unsound_after_rollback(&two[..2], &snapshot, &snapshot).is_empty());
    // Empty in the snapshot and empty now is sound.
    let empty = claims(&[("mc-canary-data", read(EMPTY_DIGEST, 0, false))]);
    assert!(gates::unsound_after_rollback(&two[..1], &empty, &empty).is_empty());
    assert_eq!(gates::short(Some("0123456789abcdef")), "0123456789ab");
    assert_eq!(gates::short(None), "(not read)");
}

fn gate(server: &str, passed: bool, reason: Option<&str>) -> Gate {
    let mut g = Gate::new(
        server,
        GateEvidence::Save(Observed::Read(SaveEvidence { replies: vec![] })),
        passed,
        reason.map(str::to_owned),
    );
    g.reason = reason.map(str::to_owned);
    g
}

const SAVE: &[&str] = &[gates_names::SAVE];

#[test]
fn the_first_failed_gate_of_a_batch_halts_the_rollout() {
    let two = names(&["mc-1", "mc-2"]);
    let passed = [gate("mc-1", true, None), gate("mc-2", true, None)];
    assert_eq!(
        after_batch("promotion batch 1", &two, SAVE, &passed, 0),
        Ok(1)
    );
    assert_eq!(
        after_batch("promotion batch 3", &two, SAVE, &passed, 2),
        Ok(3)
    );
    assert_eq!(after_batch("promotion batch 1", &[], SAVE, &[], 0), Ok(1));
    let failed = [
        gate("mc-1", true, None),
        gate("mc-2", false, Some("no save")),
        gate("mc-3", false, Some("later")),
    ];
    assert_eq!(
        after_batch(
            "promotion batch 2",
            &names(&["mc-1", "mc-2", "mc-3"]),
            SAVE,
            &failed,
            1
        ),
        Err(Outcome::Halted {
            gate: "promotion batch 2: a save succeeds".into(),
            server: Some("mc-2".into()),
            reason: "no save".into(),
            batches_promoted: 1,
        })
    );
}

#[test]
fn a_batch_member_that_was_never_gated_is_not_promoted() {
    // mc-2's gates were stopped (or skipped) although nothing failed: the batch halts on it.
    let only_one = [gate("mc-1", true, None)];
    assert_eq!(
        after_batch(
            "promotion batch 1",
            &names(&["mc-1", "mc-2"]),
            SAVE,
            &only_one,
            0
        ),
        Err(Outcome::Halted {
            gate: "promotion batch 1: a save succeeds".into(),
            server: Some("mc-2".into()),
            reason: "mc-2 was not gated: its gate \"a save succeeds\" never ran".into(),
            batches_promoted: 0,
        })
    );
    // A gate passed on another server does not count for this one.
    assert!(
        after_batch(
            "promotion batch 1",
            &names(&["mc-1"]),
            SAVE,
            &[gate("mc-9", true, None)],
            0
        )
        .is_err()
    );
    // Every required gate is needed: a member with only its save gate lacks its image gate.
    assert!(
        after_batch(
            "promotion batch 1",
            &names(&["mc-1"]),
            &[gates_names::IMAGE, gates_names::SAVE],
            &only_one,
            0
        )
        .is_err()
    );
}

#[test]
fn a_failed_gate_halts_before_unrun_gates_are_named() {
    // mc-1 failed while mc-2's gates were stopped: the halt is mc-1's failure.
    let halt = after_batch(
        "promotion batch 1",
        &names(&["mc-1", "mc-2"]),
        SAVE,
        &[gate("mc-1", false, Some("no save"))],
        0,
    );
    assert!(
        matches!(&halt, Err(Outcome::Halted { server: Some(s), reason, .. }) if s == "mc-1" && reason == "no save"),
        "{halt:?}"
    );
    assert_eq!(
        halted(&gate("", false, None), 0),
        Outcome::Halted {
            gate: "a save succeeds".into(),
            server: None,
            reason: "the gate failed".into(),
            batches_promoted: 0,
        }
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// For any fleet and batch size: the batches, in order, are the fleet (nothing lost or
    /// repeated), every batch but the last is full, and none is empty.
    #[test]
    fn batches_cover_the_fleet_in_order(n in 0usize..40, size in 0usize..12) {
        let fleet: Vec<String> = (0..n).map(|i| format!("mc-{i}")).collect();
        let b = batches(&fleet, size);
        let flat: Vec<String> = b.iter().flatten().cloned().collect();
        prop_assert_eq!(&flat, &fleet);
        let size = size.max(1);
        prop_assert_eq!(b.len(), n.div_ceil(size));
        for (i, batch) in b.iter().enumerate() {
            prop_assert!(!batch.is_empty());
            if i + 1 < b.len() {
                prop_assert_eq!(batch.len(), size);
            }
        }
    }

    /// For any sequence of batches: the rollout promotes batches until the first with a failed
    /// gate, which halts it naming that batch, that gate's server and reason, and the count of
    /// batches promoted before it.
    #[test]
    fn a_rollout_promotes_until_its_first_failed_gate(
        spec in prop::collection::vec(prop::collection::vec(any::<bool>(), 0..4), 0..6),
    ) {
        let mut promoted = 0;
        let mut outcome = None;
        for (i, batch) in spec.iter().enumerate() {
            let gates: Vec<Gate> = batch
                .iter()
                .enumerate()
                .map(|(j, p)| gate(&format!("mc-{i}-{j}"), *p, (!p).then_some("bad")))
                .collect();
            let members: Vec<String> = gates.iter().map(|g| g.server.clone()).collect();
            match after_batch(&format!("promotion batch {}", i + 1), &members, SAVE, &gates, promoted) {
                Ok(next) => {
                    prop_assert_eq!(next, promoted + 1);
                    promoted = next;
                }
                Err(o) => {
                    outcome = Some((i, o));
                    break;
                }
            }
        }
        let first_failed = spec.iter().position(|b| b.iter().any(|p| !p));
        match (first_failed, outcome) {
            (None, None) => prop_assert_eq!(promoted, spec.len()),
            (Some(f), Some((i, Outcome::Halted { gate, server, reason, batches_promoted }))) => {
                prop_assert_eq!(i, f);
                prop_assert_eq!(batches_promoted, f);
                prop_assert_eq!(gate, format!("promotion batch {}: a save succeeds", f + 1));
                let j = spec[f].iter().position(|p| !p).unwrap();
                prop_assert_eq!(server, Some(format!("mc-{f}-{j}")));
                prop_assert_eq!(reason, "bad");
            }
            (f, o) => prop_assert!(false, "first failed {:?}, outcome {:?}", f, o),
        }
    }
}

#[test]
fn the_preflight_refuses_a_fleet_it_cannot_qualify_naming_the_members() {
    use gates::{Member, fleet_refusal};
    let m = |v: &[(&str, Member)]| -> Vec<(String, Member)> {
        v.iter().map(|(n, m)| (n.to_string(), m.clone())).collect()
    };
    let pins = |v: &str| Member::Pins(v.into());
    assert_eq!(
        fleet_refusal(
            "games",
            "2.0",
            &m(&[("a", pins("1.0")), ("b", pins("1.0"))]),
            false
        ),
        None
    );
    assert_eq!(
        fleet_refusal(
            "games",
            "2.0",
            &m(&[
                ("a", Member::Missing),
                ("b", pins("")),
                ("c", Member::Missing)
            ]),
            false
        )
        .unwrap(),
        "GameServer(s) a, c do not exist in namespace games; name the fleet's members with --fleet and --source",
        "a missing member comes first"
    );
    let floating = m(&[("a", pins("1.0")), ("b", pins("")), ("c", pins(""))]);
    assert_eq!(
        fleet_refusal("games", "2.0", &floating, false).unwrap(),
        "fleet member(s) b, c track the template's default version and would adopt the candidate automatically; pin spec.version on each"
    );
    assert_eq!(fleet_refusal("games", "2.0", &floating, true), None);
    assert_eq!(
        fleet_refusal(
            "games",
            "2.0",
            &m(&[("a", pins("2.0")), ("b", pins("2.0"))]),
            false
        )
        .unwrap(),
        "nothing to promote: every fleet member (a, b) already runs version 2.0; a candidate must differ from the version the fleet runs"
    );
    assert_eq!(
        fleet_refusal(
            "games",
            "2.0",
            &m(&[("a", pins("1.0")), ("b", pins("2.0"))]),
            false
        )
        .unwrap(),
        "fleet member(s) b already run version 2.0 (the candidate): a rollback to it or a promotion to it proves nothing; leave them out of --fleet and pick a --source on the version the fleet runs"
    );
    // The empty version is "tracks the default", never "on the candidate".
    assert_eq!(
        fleet_refusal("games", "", &m(&[("a", pins(""))]), true),
        None
    );
    assert_eq!(fleet_refusal("games", "2.0", &[], false), None);
}

#[test]
fn the_preflight_wants_a_repository_reached_over_the_network() {
    use gates::repository_refusal;
    let s = "games/repo";
    assert_eq!(
        repository_refusal(s, Some("rest:http://10.0.0.1:8000/r"), Some("pw")),
        None
    );
    assert_eq!(
        repository_refusal(s, Some("rest:https://h/r"), Some("pw")),
        None
    );
    assert_eq!(
        repository_refusal(s, None, None).unwrap(),
        "repository Secret games/repo lacks key(s) repo, password: it needs repo (rest:http://HOST:PORT/PATH) and password"
    );
    assert_eq!(
        repository_refusal(s, Some("rest:http://h/r"), Some("")).unwrap(),
        "repository Secret games/repo lacks key(s) password: it needs repo (rest:http://HOST:PORT/PATH) and password"
    );
    assert_eq!(
        repository_refusal(s, Some(""), Some("pw")).unwrap(),
        "repository Secret games/repo lacks key(s) repo: it needs repo (rest:http://HOST:PORT/PATH) and password"
    );
    for repo in [
        "/var/lib/restic",
        "s3:http://h/b",
        "rest:ftp://h",
        "http://h/r",
    ] {
        assert_eq!(
            repository_refusal(s, Some(repo), Some("pw")).unwrap(),
            format!(
                "repository Secret games/repo has repo {repo:?}, not a restic REST URL: the copy Jobs reach the repository over the network; use rest:http://HOST:PORT/PATH"
            )
        );
    }
}

fn member(
    digests: &[(&str, &str)],
    pvcs: &[(&str, &str)],
) -> rehearsal_evidence::qualification::MemberBaseline {
    rehearsal_evidence::qualification::MemberBaseline {
        server: "mc".into(),
        version: Some("1.0".into()),
        pod_uid: Some("pod".into()),
        pvcs: pvcs
            .iter()
            .map(|(c, u)| (c.to_string(), u.to_string()))
            .collect(),
        digests: digests
            .iter()
            .map(|(c, d)| (c.to_string(), d.to_string()))
            .collect(),
    }
}

fn put_back(
    before: Option<rehearsal_evidence::qualification::MemberBaseline>,
    after: Option<rehearsal_evidence::qualification::MemberBaseline>,
) -> rehearsal_evidence::qualification::PutBack {
    rehearsal_evidence::qualification::PutBack {
        batch: 1,
        server: "mc".into(),
        version: "1.0".into(),
        why: "halted".into(),
        error: None,
        before,
        on_candidate: None,
        after,
    }
}

#[test]
fn a_world_is_put_back_only_when_every_claim_and_pvc_is_as_before() {
    let pvcs = [("data-mc", "u1"), ("world-mc-nether", "u2")];
    let digests = [("data-mc", "aaaa"), ("world-mc-nether", "bbbb")];
    let before = member(&digests, &pvcs);
    assert_eq!(
        gates::world_put_back(&put_back(Some(before.clone()), Some(before.clone()))),
        Ok(())
    );
    // One claim's digest differs: named.
    let changed = member(&[("data-mc", "aaaa"), ("world-mc-nether", "cccc")], &pvcs);
    let e = gates::world_put_back(&put_back(Some(before.clone()), Some(changed))).unwrap_err();
    assert!(e.contains("world-mc-nether") && e.contains("cccc"), "{e}");
    // A claim not read after the put-back.
    let missing = member(&[("data-mc", "aaaa")], &pvcs);
    let e = gates::world_put_back(&put_back(Some(before.clone()), Some(missing))).unwrap_err();
    assert!(
        e.contains("world-mc-nether") && e.contains("(not read)"),
        "{e}"
    );
    // A claim read after but not before.
    let more = member(
        &[("data-mc", "aaaa"), ("world-mc-nether", "bbbb"), ("x", "d")],
        &pvcs,
    );
    let e = gates::world_put_back(&put_back(Some(before.clone()), Some(more))).unwrap_err();
    assert!(e.contains("claim x"), "{e}");
    // A recreated PVC.
    let recreated = member(&digests, &[("data-mc", "u9"), ("world-mc-nether", "u2")]);
    let e = gates::world_put_back(&put_back(Some(before.clone()), Some(recreated))).unwrap_err();
    assert!(
        e.contains("PVC UIDs changed") && e.contains("data-mc was u1, is u9"),
        "{e}"
    );
    let gone = member(&digests, &[("world-mc-nether", "u2")]);
    let e = gates::world_put_back(&put_back(Some(before.clone()), Some(gone))).unwrap_err();
    assert!(e.contains("data-mc was u1, is gone"), "{e}");
    // The candidate's own new claim (its mods) may stay.
    let added = member(
        &digests,
        &[
            ("data-mc", "u1"),
            ("world-mc-nether", "u2"),
            ("mods-mc-2", "u3"),
        ],
    );
    assert_eq!(
        gates::world_put_back(&put_back(Some(before.clone()), Some(added))),
        Ok(())
    );
    // Never read, or read with no claim: not proof.
    assert!(
        gates::world_put_back(&put_back(None, Some(before.clone())))
            .unwrap_err()
            .contains("before")
    );
    assert!(
        gates::world_put_back(&put_back(Some(before.clone()), None))
            .unwrap_err()
            .contains("after")
    );
    let empty = member(&[], &pvcs);
    assert!(gates::world_put_back(&put_back(Some(empty.clone()), Some(empty))).is_err());
}

proptest! {
    /// Any single changed digest is a difference; the same digests are none.
    #[test]
    fn any_changed_claim_digest_is_seen(
        digests in proptest::collection::btree_map("[a-z]{1,6}", "[0-9a-f]{8}", 1..6),
        pick in any::<prop::sample::Index>(),
    ) {
        let pairs: Vec<(&str, &str)> = digests.iter().map(|(c, d)| (c.as_str(), d.as_str())).collect();
        let before = member(&pairs, &[]);
        prop_assert_eq!(gates::world_put_back(&put_back(Some(before.clone()), Some(before.clone()))), Ok(()));
        let mut after = before.clone();
        let claim = pick.get(&pairs).0.to_string();
        after.digests.insert(claim.clone(), "changed".into());
        let e = gates::world_put_back(&put_back(Some(before), Some(after))).unwrap_err();
        prop_assert!(e.contains(&claim));
    }
}
