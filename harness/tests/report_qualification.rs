//! The qualification report `rehearse qualify` writes: insta snapshots of a promoted
//! (restore-required, two batches) and a halted (HTTP-only candidate, join gate) qualification
//! built in-test from the procedure's own record types; the gate timeline's labels are whole and
//! appear once each; and Debian chromium, headless, renders the HTML (screenshot and DOM).
//!
//! chromium is found at `REHEARSAL_CHROMIUM` or `/usr/bin/chromium` (CI installs the Debian
//! package); the browser test fails with that instruction when neither exists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use rehearsal::evidence::pvc_table::PvcObservation;
use rehearsal::qualify::{
    Gate, GateEvidence, MemberBaseline, Outcome, Plan, Qualification, Rollback, gates,
    progress_line,
};
use rehearsal::report::qualification::{self, Meta, QualificationReport};
use serde_json::{Value, json};

const T0: u64 = 1_764_600_000_000;
const PINNED: &str = "rehearsal.local/fixture-game@sha256:5b2f0c9a4e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b";

fn meta() -> Meta {
    Meta {
        run_id: "qualify-20261201-1".into(),
        operator: "reference-operator".into(),
        operator_version: "0.4.0 (sha256:aa11bb22cc33)".into(),
        harness_version: "0.1.0".into(),
        harness_commit: "4f1c2e9a7b3d5c8e0f6a1b2c3d4e5f60718293a4".into(),
        backend: "existing".into(),
        context: "prod-eu".into(),
        namespace: "games".into(),
    }
}

fn plan(candidate: &str, rollback: Rollback) -> Plan {
    Plan {
        template: "minecraft".into(),
        source: "survival".into(),
        fleet: vec!["survival".into(), "creative".into()],
        batch_size: 1,
        candidate: candidate.into(),
        rollback,
        run_id: "qualify-20261201-1".into(),
        repo_secret: "restic-repo".into(),
        module: None,
        keep_failed_batch: false,
        gate_concurrency: 1,
    }
}

/// A gate of `name` whose evidence, written as the gate writes it, is read by the gate's type
/// (so a fixture missing or misnaming a field fails here, as a receipt would).
fn gate(name: &str, server: &str, at: u64, ms: u64, reason: Option<&str>, evidence: Value) -> Gate {
    let evidence = GateEvidence::parse(name, evidence)
        .unwrap_or_else(|e| panic!("the {name} fixture's evidence: {e}"));
    let mut g = Gate::new(server, evidence, reason.is_none(), reason.map(Into::into));
    g.started_unix_ms = T0 + at;
    g.duration_ms = ms;
    g
}

fn member(server: &str, version: &str, pod: &str, claims: &[(&str, &str)]) -> MemberBaseline {
    MemberBaseline {
        server: server.into(),
        version: Some(version.into()),
        pod_uid: Some(pod.into()),
        pvcs: claims
            .iter()
            .map(|(c, u)| (c.to_string(), u.to_string()))
            .collect(),
        digests: BTreeMap::new(),
    }
}

fn fleet_before() -> Vec<MemberBaseline> {
    vec![
        member(
            "survival",
            "1.0",
            "pod-s-1",
            &[
                ("survival-data", "pvc-s-d"),
                ("survival-extra-nether", "pvc-s-n"),
            ],
        ),
        member(
            "creative",
            "1.0",
            "pod-c-1",
            &[
                ("creative-data", "pvc-c-d"),
                ("creative-extra-nether", "pvc-c-n"),
            ],
        ),
    ]
}

fn preflight(at: u64) -> Gate {
    gate(
        gates::PREFLIGHT,
        "",
        at,
        40,
        None,
        json!({"candidate": "2.0-format", "image": PINNED, "previous": "1.0",
               "fleet_pinned": ["survival", "creative"], "tracking_default": [],
               "access": {"rcon_secret": "rcon/password", "game_port": 25565, "rcon_port": 25575,
                          "quiesce": ["save-off", "save-all flush"], "unquiesce": ["save-on"]}}),
    )
}

fn image(server: &str, at: u64, pod: &str) -> Gate {
    gate(
        gates::IMAGE,
        server,
        at,
        2300,
        None,
        json!({"imageID": PINNED, "pinned": PINNED, "spec_image": PINNED, "pod_uid": pod,
               "waiting_reason": null, "gameserver_phase": "Running",
               "gameserver_ready_reason": "GameReady"}),
    )
}

fn join(server: &str, at: u64) -> Gate {
    gate(
        gates::JOIN,
        server,
        at,
        310,
        None,
        json!({"verdict": "reached play (status, login, configuration, play)",
               "detail": {"ok": true, "reached": "play"}}),
    )
}

fn save(server: &str, at: u64) -> Gate {
    gate(
        gates::SAVE,
        server,
        at,
        120,
        None,
        json!({"replies": ["Saving the game (this may take a moment!)\nSaved the game"]}),
    )
}

fn clone_pvcs() -> Vec<PvcObservation> {
    vec![
        PvcObservation::classify("survival-canary", "survival-canary-data", "pvc-k-d", None),
        PvcObservation::classify(
            "survival-canary",
            "survival-canary-extra-nether",
            "pvc-k-n",
            None,
        ),
    ]
}

/// A restore-required candidate that passed every gate and was promoted in two batches.
fn promoted() -> Qualification {
    let d = |c: &str| json!({"digest": format!("{c}0000000000000000"), "files": 3});
    let snapshot =
        json!({"survival-canary-data": d("a1"), "survival-canary-extra-nether": d("b2")});
    let mut after = vec![
        member(
            "survival",
            "2.0-format",
            "pod-s-2",
            &[
                ("survival-data", "pvc-s-d"),
                ("survival-extra-nether", "pvc-s-n"),
            ],
        ),
        member(
            "creative",
            "2.0-format",
            "pod-c-2",
            &[
                ("creative-data", "pvc-c-d"),
                ("creative-extra-nether", "pvc-c-n"),
            ],
        ),
    ];
    after.push(member(
        "survival-canary",
        "1.0",
        "pod-k-3",
        &[
            ("survival-canary-data", "pvc-k-d"),
            ("survival-canary-extra-nether", "pvc-k-n"),
            ("survival-canary-mods-2-0-format", "pvc-k-m"),
        ],
    ));
    Qualification {
        plan: plan("2.0-format", Rollback::RestoreRequired),
        clone: "survival-canary".into(),
        candidate_image: Some(PINNED.into()),
        previous: Some("1.0".into()),
        baseline: fleet_before(),
        after,
        snapshot: Some("9f8e7d6c5b4a39281706f5e4d3c2b1a0".into()),
        gates: vec![
            preflight(0),
            image("survival-canary", 6_000, "pod-k-1"),
            join("survival-canary", 8_400),
            save("survival-canary", 8_800),
            gate(
                gates::READ_BACK,
                "survival-canary",
                9_000,
                1_800,
                None,
                json!({"claims": {
                    "survival-canary-data": {"digest_before": "a10000000000000000", "digest": "c30000000000000000", "files": 4, "files_before": 3, "changed": true, "kind": "world", "format": 2, "candidate_marker": true},
                    "survival-canary-extra-nether": {"digest_before": "b20000000000000000", "digest": "d40000000000000000", "files": 3, "files_before": 3, "changed": true, "kind": "world", "format": 2, "candidate_marker": false},
                }}),
            ),
            gate(
                gates::ROLLBACK,
                "survival-canary",
                10_900,
                9_400,
                None,
                json!({"rollback": "restore-required", "restored_snapshot": "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
                       "snapshot_digests": snapshot, "digests_after_restore": snapshot,
                       "join": "reached play (status, login, configuration, play)"}),
            ),
            image("survival", 20_400, "pod-s-2"),
            join("survival", 22_800),
            save("survival", 23_200),
            image("creative", 23_400, "pod-c-2"),
            join("creative", 25_700),
            save("creative", 26_100),
        ],
        clone_pvcs_before: clone_pvcs(),
        clone_pvcs_after: clone_pvcs(),
        promotion_receipts: 2,
        put_back: vec![],
        way_back: vec![],
        backed_up: vec![],
        outcome: Outcome::Promoted { batches: 2 },
        interrupted: None,
    }
}

/// An HTTP-only candidate halted at the join gate on the clone; the fleet untouched.
fn halted() -> Qualification {
    let reason = "no Minecraft stage answered: status failed: the peer sent bytes that are not a Minecraft packet";
    let mut after = fleet_before();
    after.push(member(
        "survival-canary",
        "http-only",
        "pod-k-1",
        &[
            ("survival-canary-data", "pvc-k-d"),
            ("survival-canary-extra-nether", "pvc-k-n"),
        ],
    ));
    Qualification {
        plan: plan("http-only", Rollback::Compatible),
        clone: "survival-canary".into(),
        candidate_image: Some(PINNED.into()),
        previous: Some("1.0".into()),
        baseline: fleet_before(),
        after,
        snapshot: Some("9f8e7d6c5b4a39281706f5e4d3c2b1a0".into()),
        gates: vec![
            preflight(0),
            image("survival-canary", 6_000, "pod-k-1"),
            gate(
                gates::JOIN,
                "survival-canary",
                8_400,
                90,
                Some(reason),
                json!({"verdict": reason, "detail": {"ok": false, "reached": null, "failed": "status"},
                       "http": {"url": "http://127.0.0.1:25565/", "status": 200,
                                "body": "world marker world-seed", "marker": "", "ok": true}}),
            ),
        ],
        clone_pvcs_before: clone_pvcs(),
        clone_pvcs_after: vec![],
        promotion_receipts: 0,
        put_back: vec![],
        way_back: vec![],
        backed_up: vec![],
        outcome: Outcome::Halted {
            gate: gates::JOIN.into(),
            server: Some("survival-canary".into()),
            reason: reason.into(),
            batches_promoted: 0,
        },
        interrupted: None,
    }
}

fn report(q: &Qualification) -> QualificationReport {
    QualificationReport::new(meta(), q, None)
}

#[test]
fn promoted_report_snapshots() {
    let r = report(&promoted());
    insta::assert_snapshot!("promoted_markdown", qualification::markdown(&r));
    insta::assert_snapshot!("promoted_html", qualification::html(&r));
    insta::assert_snapshot!("promoted_json", qualification::json(&r));
}

#[test]
fn halted_report_snapshots() {
    let r = report(&halted());
    assert_eq!(
        r.decision,
        "halted at real Minecraft join reaches play on survival-canary: no Minecraft stage answered: status failed: the peer sent bytes that are not a Minecraft packet"
    );
    let md = qualification::markdown(&r);
    // The failing gate's evidence in full, not only its one-line summary.
    assert!(
        md.contains("## Failing gate: real Minecraft join reaches play on survival-canary")
            && md.contains("\"body\": \"world marker world-seed\""),
        "{md}"
    );
    insta::assert_snapshot!("halted_markdown", md);
    insta::assert_snapshot!("halted_html", qualification::html(&r));
}

/// An unpullable candidate's image-gate reason as the gate writes it: the waiting reason, the
/// GameServer's phase and the whole wait report (condition, bound, every state seen) — about
/// 700 characters.
fn long_pull_reason() -> String {
    let seen: Vec<String> = (1..=8)
        .map(|i| format!("{i}: pod survival-canary-0 Pending, container game waiting ErrImagePull (pull access denied for {PINNED})"))
        .collect();
    format!(
        "the game container did not run: waiting reason ImagePullBackOff; GameServer phase Failed (ImagePullFailed); pod games/survival-canary-0: expected pod of revision 5d8f and Ready within 10s, but it did not happen; last observed: {}",
        seen.join(", ")
    )
}

#[test]
fn a_long_halt_reason_is_short_in_the_verdict_lines_and_whole_once_in_the_report() {
    let reason = long_pull_reason();
    assert!(reason.len() > 600, "{}", reason.len());
    let mut q = halted();
    q.gates.truncate(1);
    q.gates.push(gate(
        gates::IMAGE,
        "survival-canary",
        6_000,
        10_000,
        Some(&reason),
        json!({"imageID": "", "pinned": PINNED, "spec_image": PINNED, "pod_uid": "pod-k-1",
               "waiting_reason": "ImagePullBackOff", "gameserver_phase": "Failed",
               "gameserver_ready_reason": "ImagePullFailed"}),
    ));
    q.outcome = Outcome::Halted {
        gate: gates::IMAGE.into(),
        server: Some("survival-canary".into()),
        reason: reason.clone(),
        batches_promoted: 0,
    };
    // The verdict lines: without the wait's list of every state seen, marked as cut.
    let short = "the game container did not run: waiting reason ImagePullBackOff; GameServer phase Failed (ImagePullFailed); pod games/survival-canary-0: expected pod of revision 5d8f and Ready within 10s, but it did not happen …";
    assert_eq!(
        q.outcome.line(),
        format!(
            "halted at gate \"pod runs the pinned image\" on survival-canary after 0 promoted batch(es): {short}"
        )
    );
    assert_eq!(
        progress_line(&q.gates[1]),
        format!("  FAILED  pod runs the pinned image · survival-canary · 10.0 s: {short}")
    );
    let r = report(&q);
    assert_eq!(
        r.decision,
        format!("halted at pod runs the pinned image on survival-canary: {short}")
    );
    // The report: the full reason once (the failing gate's section), short everywhere else.
    let md = qualification::markdown(&r);
    assert_eq!(md.matches(reason.as_str()).count(), 1, "{md}");
    assert!(
        md.contains(&format!("**Decision: {}**", r.decision)),
        "{md}"
    );
    let section = md.split("## Failing gate").nth(1).unwrap_or_default();
    assert!(section.contains(reason.as_str()), "{md}");
    let html = qualification::html(&r);
    // (The reason holds nothing HTML escapes.)
    assert_eq!(html.matches(reason.as_str()).count(), 1, "{html}");
    for line in md.lines().filter(|l| !l.contains(reason.as_str())) {
        assert!(
            line.chars().count() < 400,
            "a line of {} chars: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn short_reasons_keep_short_text_whole_and_cut_long_text_at_a_word() {
    use rehearsal::evidence::qualification::{SHORT_REASON_CHARS, short_reason};
    let whole = "fleet member(s) a track the template's default version and would adopt the candidate automatically; pin spec.version on each";
    assert_eq!(short_reason(whole), whole, "a short reason keeps its fix");
    // No `; ` early enough: cut at a word within the limit.
    let words = "word ".repeat(100);
    let cut = short_reason(&words);
    assert!(cut.ends_with("word …"), "{cut}");
    assert!(
        cut.chars().count() <= SHORT_REASON_CHARS + 2,
        "{}",
        cut.chars().count()
    );
    // A first clause too short to say anything (under 40 characters) is not taken alone.
    let tiny = format!("x; {}", "y ".repeat(200));
    assert!(
        short_reason(&tiny).starts_with("x; y y"),
        "{}",
        short_reason(&tiny)
    );
    // A first clause that fits is taken when the rest is long; digests are cut to 12 digits.
    let digest = format!("sha256:{}", "ab12".repeat(16));
    let clauses = format!(
        "the previous version did not come back: pod of image repo@{digest} is CrashLoopBackOff; {}",
        "then more ".repeat(30)
    );
    assert_eq!(
        short_reason(&clauses),
        "the previous version did not come back: pod of image repo@sha256:ab12ab12ab12… is CrashLoopBackOff …"
    );
    // Multi-byte text is cut on a character boundary.
    let wide = "é".repeat(500);
    assert_eq!(short_reason(&wide).chars().count(), SHORT_REASON_CHARS + 2);
}

#[test]
fn a_procedure_error_is_not_a_decision_to_promote() {
    let mut q = halted();
    q.outcome = Outcome::Promoted { batches: 0 };
    let r = QualificationReport::new(
        meta(),
        &q,
        Some("this cluster cannot port-forward to pod games/survival-canary-0 port 25565"),
    );
    assert!(!r.promoted);
    assert!(
        r.decision.starts_with(
            "not qualified: the procedure could not complete: this cluster cannot port-forward"
        ),
        "{}",
        r.decision
    );
}

#[test]
fn members_put_back_are_listed_with_what_became_of_them() {
    use rehearsal::evidence::qualification::PutBack;
    let mut q = promoted();
    q.outcome = Outcome::Promoted { batches: 1 };
    q.put_back = vec![
        PutBack {
            batch: 2,
            server: "creative".into(),
            version: "1.0".into(),
            why: "interrupted by SIGINT".into(),
            error: None,
            before: Some(state("pod-aaaa-1", "u-1", "d0d0d0d0d0d0d0")),
            on_candidate: Some(state("pod-bbbb-2", "u-1", "c1c1c1c1c1c1c1")),
            after: Some(state("pod-cccc-3", "u-1", "d0d0d0d0d0d0d0")),
        },
        PutBack {
            batch: 2,
            server: "lobby".into(),
            version: "1.0".into(),
            why: "interrupted by SIGINT".into(),
            error: Some("patch GameServer games/lobby: conflict".into()),
            before: None,
            on_candidate: None,
            after: None,
        },
    ];
    let r = QualificationReport::new(meta(), &q, Some("interrupted by SIGINT"));
    let md = qualification::markdown(&r);
    assert!(md.contains("## Members moved and put back"), "{md}");
    assert!(
        md.contains("| 2 | creative | interrupted by SIGINT | put back on 1.0 |"),
        "{md}"
    );
    assert!(
        md.contains("| 2 | lobby | interrupted by SIGINT | NOT put back on 1.0: patch GameServer games/lobby: conflict |"),
        "{md}"
    );
    // The member's pod, claims and world digests before, on the candidate and after; the
    // member never read (lobby) has no row.
    assert!(
        md.contains("| creative | pod-aaaa → pod-bbbb → pod-cccc | data-creative | u-1 | `d0d0d0d0d0d0` | `c1c1c1c1c1c1` | `d0d0d0d0d0d0` | same as before |"),
        "{md}"
    );
    assert!(!md.contains("| lobby | —"), "{md}");
    let html = qualification::html(&r);
    assert!(
        html.contains("<td>creative</td><td>interrupted by SIGINT</td><td>put back on 1.0</td>"),
        "{html}"
    );
    assert!(
        html.contains("<td><code>c1c1c1c1c1c1</code></td><td><code>d0d0d0d0d0d0</code></td><td>same as before</td>"),
        "{html}"
    );
    // The JSON carries them, and a report without any leaves the section out.
    let json: serde_json::Value = serde_json::from_str(&qualification::json(&r)).unwrap();
    assert_eq!(json["put_back"][1]["server"], "lobby");
    let plain = report(&promoted());
    assert!(!qualification::markdown(&plain).contains("put back"));
    assert!(!qualification::markdown(&plain).contains("Way back"));
    assert!(!qualification::json(&plain).contains("put_back"));
}

/// A member's pod UID, one claim's PVC UID and its digest.
fn state(pod: &str, pvc: &str, digest: &str) -> rehearsal::evidence::qualification::MemberBaseline {
    rehearsal::evidence::qualification::MemberBaseline {
        server: "creative".into(),
        version: Some("1.0".into()),
        pod_uid: Some(pod.into()),
        pvcs: [("data-creative".to_string(), pvc.to_string())].into(),
        digests: [("data-creative".to_string(), digest.to_string())].into(),
    }
}

#[test]
fn a_promoted_restore_required_candidate_names_each_members_way_back() {
    use rehearsal::evidence::qualification::WayBack;
    let mut q = promoted();
    q.way_back = vec![WayBack {
        server: "survival".into(),
        backup: "qualify-survival-pre-run-1".into(),
        snapshot: "0a1b2c3d".into(),
        succeeded_unix_ms: Some(1_700_000_000_000),
        previous: None,
        kept_because: None,
    }];
    let r = report(&q);
    let md = qualification::markdown(&r);
    assert!(md.contains("## Way back"), "{md}");
    assert!(
        md.contains("| survival | qualify-survival-pre-run-1 | 0a1b2c3d |"),
        "{md}"
    );
    let html = qualification::html(&r);
    assert!(
        html.contains("<td>survival</td><td><code>qualify-survival-pre-run-1</code></td><td><code>0a1b2c3d</code></td>"),
        "{html}"
    );
    let json: serde_json::Value = serde_json::from_str(&qualification::json(&r)).unwrap();
    assert_eq!(json["way_back"][0]["snapshot"], "0a1b2c3d");
}

#[test]
fn timeline_labels_are_whole_and_appear_once() {
    let r = report(&promoted());
    let svg = qualification::timeline(&r);
    for (i, g) in r.gates.iter().enumerate() {
        let label = qualification::timeline_label(i, g);
        let text = format!(">{}</text>", rehearsal::report::escape::escape(&label));
        assert_eq!(svg.matches(&text).count(), 1, "label {label:?} in:\n{svg}");
    }
    // Same gate on different members: distinct labels, each naming its member.
    assert_eq!(svg.matches("· survival</text>").count(), 3, "{svg}");
    assert_eq!(svg.matches("· creative</text>").count(), 3, "{svg}");
    // Same report, same bytes.
    assert_eq!(
        qualification::html(&r),
        qualification::html(&report(&promoted()))
    );
}

#[test]
fn progress_lines_name_gate_member_duration_and_reason() {
    let q = halted();
    assert_eq!(
        progress_line(&q.gates[1]),
        "  passed  pod runs the pinned image · survival-canary · 2.3 s"
    );
    assert_eq!(
        progress_line(&q.gates[2]),
        "  FAILED  real Minecraft join reaches play · survival-canary · 90 ms: no Minecraft stage answered: status failed: the peer sent bytes that are not a Minecraft packet"
    );
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("REHEARSAL_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.is_file(),
        "chromium not found at {}: install Debian's `chromium` (apt-get install -y chromium) or set REHEARSAL_CHROMIUM",
        path.display()
    );
    path
}

/// Kills the browser (and reaps it) if the test fails while it runs.
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run_chromium(profile: &Path, extra: &[String], url: &str) -> Output {
    let child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let mut guard = KillOnDrop(Some(child));
    let child = guard.0.take().unwrap();
    child.wait_with_output().expect("wait for chromium")
}

#[test]
fn chromium_renders_the_qualification_report() {
    let tmp = tempfile::tempdir().unwrap();
    let written = qualification::write(&report(&halted()), tmp.path()).unwrap();
    assert_eq!(written.len(), 3);
    let url = format!(
        "file://{}",
        tmp.path().join(qualification::HTML_FILE).display()
    );

    let png = tmp.path().join("q.png");
    let shot = run_chromium(
        &tmp.path().join("profile-shot"),
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1200,1600".into(),
        ],
        &url,
    );
    assert!(
        shot.status.success(),
        "chromium --screenshot exited {}: {}",
        shot.status,
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", png.display()));
    assert!(
        bytes.len() > 1000,
        "screenshot is only {} bytes",
        bytes.len()
    );
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG");
    if let Ok(keep) = std::env::var("REHEARSAL_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }

    let dom = run_chromium(
        &tmp.path().join("profile-dom"),
        &["--dump-dom".into()],
        &url,
    );
    assert!(
        dom.status.success(),
        "chromium --dump-dom exited {}",
        dom.status
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    for needle in [
        "<h1>Qualification of <code>http-only</code> on template <code>minecraft</code></h1>",
        "Decision: halted at real Minecraft join reaches play on survival-canary",
        "<h2>Gates</h2>",
        "<h2>Failing gate: real Minecraft join reaches play on survival-canary</h2>",
        "<h2>Pod UIDs before and after</h2>",
        "<h2>PVC UIDs before and after</h2>",
        "3. real Minecraft join reaches play · survival-canary</text>",
    ] {
        assert!(dom.contains(needle), "the rendered DOM lacks {needle}");
    }
    assert_eq!(dom.matches("<svg class=\"timeline\"").count(), 1);
}

/// Issue 17, item 7: the contract the help and the report cite is a document of the
/// repository (docs/contract.md), with the heading the report's link names — not "CONTRACT
/// part C" of a file users do not have.
#[test]
fn the_help_and_the_report_name_the_contract_the_repository_holds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let contract =
        std::fs::read_to_string(root.join("docs/contract.md")).expect("docs/contract.md");
    // The report carries the repository's contract, not an older copy.
    assert_eq!(qualification::CONTRACT, contract);
    for (link, file) in [
        (
            qualification::CONTRACT_DOC,
            qualification::CONTRACT_MARKDOWN_FILE,
        ),
        (
            qualification::CONTRACT_HTML_LINK,
            qualification::CONTRACT_HTML_FILE,
        ),
    ] {
        assert_eq!(link, format!("{file}#{}", qualification::CONTRACT_ANCHOR));
    }
    // GitHub's anchor of each heading: lower case, punctuation dropped, spaces to dashes.
    let anchors: Vec<String> = contract
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| {
            h.to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect();
    // The links the written reports hold resolve relative to the report file: the file exists
    // next to it, in a directory that is not the repository, and holds the anchor.
    let tmp = tempfile::tempdir().unwrap();
    qualification::write(&report(&halted()), tmp.path()).unwrap();
    let link_in = |file: &str, open: &str| -> String {
        let text = std::fs::read_to_string(tmp.path().join(file)).unwrap();
        let start = text
            .find(&format!("{open}contract."))
            .unwrap_or_else(|| panic!("{file} links no contract:\n{text}"))
            + open.len();
        let end = start + text[start..].find([')', '"']).unwrap();
        text[start..end].to_string()
    };
    let md_link = link_in(qualification::MARKDOWN_FILE, "](");
    let html_link = link_in(qualification::HTML_FILE, "href=\"");
    for (link, kind) in [(&md_link, "markdown"), (&html_link, "html")] {
        let (file, anchor) = link.split_once('#').unwrap();
        assert!(
            !file.contains('/'),
            "the {kind} report links {link}, not a file next to it"
        );
        let target = tmp.path().join(file);
        let text = std::fs::read_to_string(&target)
            .unwrap_or_else(|e| panic!("the {kind} report links {link}: {e}"));
        assert!(
            anchors.iter().any(|a| a == anchor),
            "{anchor} not in {anchors:?}"
        );
        if kind == "markdown" {
            assert_eq!(text, contract);
        } else {
            // A browser scrolls to an element with that id; the section's text follows it.
            let at = text
                .find(&format!("<h2 id=\"{anchor}\">"))
                .unwrap_or_else(|| panic!("{} has no id {anchor}", target.display()));
            assert!(text[at..].contains("<pre>"), "{text}");
            for heading in contract.lines().filter_map(|l| l.strip_prefix("## ")) {
                let id = qualification::heading_anchor(heading);
                assert!(text.contains(&format!("id=\"{id}\"")), "{id} missing");
            }
        }
    }
    for args in [&["--help"][..], &["qualify", "--help"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_rehearse"))
            .args(args)
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{help}");
        assert!(
            help.contains("docs/contract.md"),
            "rehearse {args:?}:\n{help}"
        );
        assert!(
            !help.contains("CONTRACT part"),
            "rehearse {args:?}:\n{help}"
        );
    }
}
