//! Shared by the evidence/report tests: builds the sample bundles with the real writer API from
//! realistic observations (the same shapes the scenarios record), on a scripted clock so the
//! bundles are byte-reproducible. The committed fixtures under `fixtures/bundles/` are the
//! output of [`write_sample`].

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rehearsal::evidence::bundle::{Bundle, BundleMeta, KillMatrix, Verdict};
use rehearsal::evidence::observation::{StateChange, WaitObserved, WaitOutcome};
use rehearsal::evidence::pvc_table::{PvcObservation, PvcPhase};
use serde_json::json;

pub const COMMIT: &str = "4f1c2e9a7b3d5c8e0f6a1b2c3d4e5f60718293a4";

/// `fixtures/bundles` in the workspace.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fixtures")
        .join("bundles")
}

/// A clock the test moves by hand.
#[derive(Clone)]
pub struct Script(Arc<Mutex<jiff::Timestamp>>);

impl Script {
    pub fn starting(at: &str) -> Self {
        Script(Arc::new(Mutex::new(at.parse().expect("valid timestamp"))))
    }
    pub fn clock(&self) -> rehearsal::evidence::receipts::Clock {
        let t = self.0.clone();
        Arc::new(move || *t.lock().unwrap())
    }
    pub fn advance(&self, ms: i64) {
        let mut t = self.0.lock().unwrap();
        *t = t
            .checked_add(jiff::SignedDuration::from_millis(ms))
            .expect("in range");
    }
}

/// A `wait` receipt's payload as the harness's watch wait writes it: `object` waited on until
/// `expected`, `elapsed_ms` long, ended by `outcome` with the state changes `changes`
/// (`(ms into the wait, state)`; the last one is what woke it).
pub fn waited(
    object: &str,
    expected: &str,
    elapsed_ms: i64,
    outcome: WaitOutcome,
    changes: &[(u64, &str)],
) -> WaitObserved {
    WaitObserved {
        object: object.into(),
        expected: expected.into(),
        started_ms: 0,
        elapsed_ms: elapsed_ms as u64,
        events: changes.len() as u32 + 1,
        outcome,
        woken_by: changes.last().map_or("absent", |c| c.1).into(),
        transitions: changes
            .iter()
            .map(|(at_ms, state)| StateChange {
                at_ms: *at_ms,
                state: (*state).into(),
            })
            .collect(),
    }
}

/// Per-architecture variation of the sample run.
pub struct Variant {
    pub arch: &'static str,
    pub run_id: &'static str,
    pub start: &'static str,
    /// Multiplies every step's duration (arm64 runners are slower).
    pub slow: f64,
    /// Prefix that makes UIDs differ per run.
    pub uid: &'static str,
    /// Whether the HTTP-only candidate case fails (the disagreeing verdict).
    pub http_only_fails: bool,
    pub kill_matrix: bool,
}

pub const AMD64: Variant = Variant {
    arch: "amd64",
    run_id: "run-20261129-amd64",
    start: "2026-11-29T20:00:00Z",
    slow: 1.0,
    uid: "a1",
    http_only_fails: false,
    kill_matrix: true,
};

pub const ARM64: Variant = Variant {
    arch: "arm64",
    run_id: "run-20261129-arm64",
    start: "2026-11-29T20:00:03Z",
    slow: 1.6,
    uid: "b7",
    http_only_fails: true,
    kill_matrix: false,
};

fn uid(v: &Variant, n: u32) -> String {
    format!(
        "{}{:06x}-5e2d-4c1b-9a7f-{:012x}",
        v.uid,
        n * 7919,
        n as u64 * 104729
    )
}

/// Writes the sample bundle for `v` into `dir` (which must not hold a run yet).
#[expect(
    clippy::too_many_lines,
    reason = "the sample bundle is one script: each case's receipts in the order the report snapshots pin"
)]
pub fn write_sample(dir: &Path, v: &Variant) -> rehearsal::evidence::bundle::BundleSummary {
    let script = Script::starting(v.start);
    let step_ms = |ms: u64| ((ms as f64) * v.slow).round() as i64;
    let meta = BundleMeta::new(v.run_id, COMMIT, "reference-operator", "0.3.0-dev", v.arch);
    let bundle = Bundle::create_with_clock(dir, meta, script.clock()).expect("create bundle");

    // Case 1: agent restart during a live backup must not invalidate it.
    script.advance(step_ms(40));
    let case = bundle.case("live-backup-agent-restart", "backups").unwrap();
    script.advance(step_ms(310));
    case.step(
        "baseline",
        json!({"pod": "survival-0", "podUID": uid(v, 1), "game": {"containerID": format!("bwrap://{}-game-1", v.uid), "restartCount": 0},
               "agent": {"containerID": format!("bwrap://{}-agent-1", v.uid), "restartCount": 0}}),
    )
    .unwrap();
    script.advance(step_ms(120));
    case.step("create-backup", json!({"backup": "survival-live-1", "spec": {"serverRef": {"name": "survival"}, "repoRef": {"name": "restic-repo", "key": "repo"}, "quiesce": true}}))
        .unwrap();
    script.advance(step_ms(85));
    case.step("restart-agent-in-place", json!({"container": "agent", "restartCount": 1, "containerID": format!("bwrap://{}-agent-2", v.uid)}))
        .unwrap();
    script.advance(step_ms(1840));
    case.wait(
        "await-backup-terminal",
        waited(
            &format!("backups rh-{}/survival-live-1", v.uid),
            "backup Succeeded",
            step_ms(1835),
            WaitOutcome::Met,
            &[
                (3, "phase=Running"),
                (1831, "phase=Succeeded conditions=[Completed=True]"),
            ],
        ),
    )
    .unwrap();
    script.advance(step_ms(45));
    case.restic_snapshot(
        "snapshot-recorded",
        "5c2f9e1d",
        json!({"paths": ["/data", "/extra/nether"], "hostname": "survival"}),
    )
    .unwrap();
    script.advance(step_ms(60));
    case.step("game-incarnation-unchanged", json!({"podUID": uid(v, 1), "game": {"containerID": format!("bwrap://{}-game-1", v.uid), "restartCount": 0}}))
        .unwrap();
    case.uses_evidence("pod UID");
    case.uses_evidence("game container ID and restart count");
    case.uses_evidence("Backup status.consistency");
    script.advance(step_ms(5));
    case.finish(Verdict::Passed).unwrap();

    // Case 2: same-pod game restart invalidates the capture.
    script.advance(step_ms(30));
    let case = bundle
        .case("live-backup-same-pod-game-restart", "backups")
        .unwrap();
    script.advance(step_ms(290));
    case.step("baseline", json!({"pod": "survival-0", "podUID": uid(v, 2), "game": {"containerID": format!("bwrap://{}-game-3", v.uid), "restartCount": 0},
        "rcon": {"passwordSecretRef": {"name": "rcon", "key": "password"}, "password": "fixture-only-rcon-pw"}}))
        .unwrap();
    script.advance(step_ms(140));
    case.step("create-backup", json!({"backup": "survival-live-2"}))
        .unwrap();
    script.advance(step_ms(95));
    case.step("restart-game-in-place", json!({"container": "game", "podUID": uid(v, 2), "restartCount": 1, "containerID": format!("bwrap://{}-game-4", v.uid)}))
        .unwrap();
    script.advance(step_ms(2210));
    case.wait(
        "await-backup-terminal",
        waited(
            &format!("backups rh-{}/survival-live-2", v.uid),
            "backup Succeeded",
            step_ms(2204),
            WaitOutcome::Terminal,
            &[
                (2, "phase=Running"),
                (
                    2201,
                    "phase=Failed conditions=[Completed=False(SourceChanged)]",
                ),
            ],
        ),
    )
    .unwrap();
    script.advance(step_ms(180));
    case.step(
        "rcon-audit-new-incarnation",
        json!({"incarnation": format!("bwrap://{}-game-4", v.uid), "commands": []}),
    )
    .unwrap();
    case.artifact("rcon-audit.log", format!("# incarnation bwrap://{}-game-3\nsave-off\nsave-all flush\n# incarnation bwrap://{}-game-4\n", v.uid, v.uid).as_bytes())
        .unwrap();
    case.uses_evidence("pod UID");
    case.uses_evidence("game container ID and restart count");
    case.uses_evidence("RCON audit log");
    script.advance(step_ms(5));
    case.finish(Verdict::Passed).unwrap();

    // Case 3: format-changing candidate rolled back through a restore.
    script.advance(step_ms(30));
    let case = bundle
        .case("format-change-restore-rollback", "rollout")
        .unwrap();
    let claims = |phase_uid_offset: u32| {
        vec![
            PvcObservation::classify(
                "clone",
                "clone-data",
                &uid(v, 10 + phase_uid_offset),
                Some(&format!("pvc-{}", uid(v, 20))),
            ),
            PvcObservation::classify(
                "clone",
                "clone-extra-nether",
                &uid(v, 11 + phase_uid_offset),
                Some(&format!("pvc-{}", uid(v, 21))),
            ),
            PvcObservation::classify(
                "clone",
                "clone-mods-1-21-4",
                &uid(v, 12 + phase_uid_offset),
                Some(&format!("pvc-{}", uid(v, 22))),
            ),
        ]
    };
    script.advance(step_ms(260));
    case.step("baseline-receipt", json!({"fleet": [{"server": "survival", "podUID": uid(v, 30), "version": "1.21.4"}], "digests": {"primary": "sha256:7d1e", "extra": "sha256:19ab"}}))
        .unwrap();
    script.advance(step_ms(1520));
    case.restic_snapshot(
        "backup-source",
        "8a41c0b7",
        json!({"backup": "survival-pre-candidate", "phase": "Succeeded"}),
    )
    .unwrap();
    script.advance(step_ms(980));
    case.restic_restore(
        "restore-into-clone",
        "restore-clone-1",
        "8a41c0b7",
        json!({"phase": "Succeeded"}),
    )
    .unwrap();
    script.advance(step_ms(70));
    case.observe_pvcs(PvcPhase::Before, &claims(0)).unwrap();
    script.advance(step_ms(3150));
    case.wait(
        "await-candidate-play",
        waited(
            &format!("pods rh-{}/survival-clone-0", v.uid),
            "pod Ready",
            step_ms(3141),
            WaitOutcome::Met,
            &[
                (4, "phase=Pending conditions=[Ready=False]"),
                (1210, "phase=Running conditions=[Ready=False] containers=[game:running,restarts=0]"),
                (3138, "phase=Running conditions=[Ready=True] containers=[game:running,ready,restarts=0]"),
            ],
        ),
    )
    .unwrap();
    script.advance(step_ms(640));
    case.restic_restore(
        "rollback-restore",
        "restore-clone-2",
        "8a41c0b7",
        json!({"phase": "Succeeded"}),
    )
    .unwrap();
    script.advance(step_ms(410));
    case.step("world-read-back", json!({"format": 1, "candidateMarker": null, "primary": "sha256:7d1e", "extra": "sha256:19ab", "mods": "clone-own"}))
        .unwrap();
    case.artifact(
        "inspect/clone-after-rollback.json",
        br#"{"format":1,"primary":"sha256:7d1e","extra":"sha256:19ab","mods":"clone-own"}"#,
    )
    .unwrap();
    script.advance(step_ms(50));
    case.observe_pvcs(PvcPhase::After, &claims(0)).unwrap();
    case.uses_evidence("PVC UIDs");
    case.uses_evidence("world data digests");
    case.uses_evidence("restic snapshot");
    script.advance(step_ms(5));
    case.finish(Verdict::Passed).unwrap();

    // Case 4: HTTP-only candidate must be blocked; on arm64 the join probe misbehaves.
    script.advance(step_ms(30));
    let case = bundle.case("http-only-candidate", "rollout").unwrap();
    script.advance(step_ms(240));
    case.step(
        "baseline-receipt",
        json!({"fleet": [{"server": "survival", "podUID": uid(v, 31)}]}),
    )
    .unwrap();
    script.advance(step_ms(900));
    case.step(
        "http-marker",
        json!({"status": 200, "marker": "world-7d1e"}),
    )
    .unwrap();
    if v.http_only_fails {
        script.advance(step_ms(30000));
        case.wait(
            "await-join-verdict",
            waited(
                &format!("pods rh-{}/survival-0", v.uid),
                "pod Ready",
                step_ms(30000),
                WaitOutcome::TimedOut,
                &[(
                    5,
                    "phase=Running conditions=[Ready=False] containers=[game:running,restarts=0]",
                )],
            ),
        )
        .unwrap();
        case.uses_evidence("Minecraft join depth");
        script.advance(step_ms(5));
        case.finish_with_reason(
            Verdict::Failed,
            Some("join probe stalled at LOGIN; expected a refused handshake"),
        )
        .unwrap();
    } else {
        script.advance(step_ms(420));
        case.wait(
            "await-join-verdict",
            waited(
                &format!("pods rh-{}/survival-0", v.uid),
                "pod Ready",
                step_ms(415),
                WaitOutcome::Met,
                &[(
                    3,
                    "phase=Running conditions=[Ready=True] containers=[game:running,ready,restarts=0]",
                )],
            ),
        )
        .unwrap();
        script.advance(step_ms(60));
        case.step(
            "journal-holds-only-baseline",
            json!({"receipts": ["baseline"], "promotion": false}),
        )
        .unwrap();
        case.uses_evidence("Minecraft join depth");
        case.uses_evidence("fleet pod UIDs");
        script.advance(step_ms(5));
        case.finish(Verdict::Passed).unwrap();
    }

    if v.kill_matrix {
        let mut m = KillMatrix::default();
        m.record(
            "skip-incarnation-check",
            "live-backup-same-pod-game-restart",
            true,
        );
        m.record("skip-incarnation-check", "live-backup-agent-restart", false);
        m.record(
            "unquiesce-successor-pod",
            "live-backup-same-pod-game-restart",
            true,
        );
        m.record("promote-without-gates", "http-only-candidate", true);
        m.record(
            "restore-recreates-pvcs",
            "format-change-restore-rollback",
            true,
        );
        bundle.kill_matrix(&m).unwrap();
    }
    script.advance(step_ms(20));
    bundle.finalize(false).unwrap()
}
