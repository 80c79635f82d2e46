//! A qualification's gate receipts are typed by gate: a bundle whose gate evidence has a
//! renamed field is refused naming the receipt's line, by the loader and by `rehearse report`,
//! and a gate whose evidence is not its gate's never deserializes.

use std::path::{Path, PathBuf};

use rehearsal::evidence::bundle::{Bundle, BundleMeta, Verdict};
use rehearsal::evidence::observation::Observation;
use rehearsal::evidence::qualification::{
    Gate, GateEvidence, ImageEvidence, JoinEvidence, Observed, SaveEvidence, gates,
};
use rehearsal::evidence::receipts::{self, Journal, kind};
use rehearsal::report;
use serde_json::json;

fn image_gate() -> Gate {
    let mut g = Gate::new(
        "survival-canary",
        GateEvidence::Image(Observed::Read(ImageEvidence {
            pod_uid: Some("7d1c0e0a-0000-4000-8000-000000000001".into()),
            image_id: "rehearsal.local/fixture-game@sha256:1111".into(),
            pinned: "rehearsal.local/fixture-game@sha256:1111".into(),
            spec_image: "rehearsal.local/fixture-game@sha256:1111".into(),
            waiting_reason: None,
            gameserver_phase: Some("Running".into()),
            gameserver_ready_reason: Some("GameReady".into()),
        })),
        true,
        None,
    );
    g.started_unix_ms = 1_796_000_000_000;
    g.duration_ms = 1200;
    g
}

/// A bundle with one case that records a preflight-less gate sequence: image, join, save.
fn bundle_with_gates() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bundle");
    let meta = BundleMeta::new(
        "gate-run",
        "abc1234",
        "reference-operator",
        "0.3.0",
        "amd64",
    );
    let bundle = Bundle::create(&dir, meta).unwrap();
    let case = bundle.case("bad-candidate", "rollout").unwrap();
    case.step("baseline receipt", json!({"members": 1}))
        .unwrap();
    let gates = [
        image_gate(),
        Gate::new(
            "survival-canary",
            GateEvidence::Join(JoinEvidence {
                verdict: "joined: reached play".into(),
                detail: json!({"reached": "play", "failed_stage": null}),
                http: None,
            }),
            true,
            None,
        ),
        Gate::new(
            "survival-canary",
            GateEvidence::Save(Observed::Read(SaveEvidence {
                replies: vec!["Saved the game".into()],
            })),
            true,
            None,
        ),
    ];
    for g in &gates {
        case.gate(&format!("gate: {} ({})", g.name, g.server), g)
            .unwrap();
    }
    case.finish(Verdict::Passed).unwrap();
    bundle.finalize(false).unwrap();
    (root, dir)
}

/// Rewrites the journal with `edit` applied to each entry's observation, re-chaining every
/// hash and keeping every time, so the chain verifies and only the payload differs.
fn rewrite_payloads(dir: &Path, edit: impl Fn(&receipts::Receipt) -> serde_json::Value) {
    let path = dir.join("receipts.jsonl");
    let old = receipts::verify(&path).unwrap().receipts;
    std::fs::remove_file(&path).unwrap();
    let times = std::sync::Mutex::new(old.iter().map(|r| r.time).collect::<Vec<_>>());
    let clock: receipts::Clock = std::sync::Arc::new(move || times.lock().unwrap().remove(0));
    let j = Journal::create_with_clock(&path, &old[0].run_id, &old[0].arch, clock).unwrap();
    for r in &old {
        j.append(r.case.as_deref(), &r.step, &r.kind, edit(r))
            .unwrap();
    }
}

/// The 1-based line of the image gate's receipt.
fn image_gate_line(dir: &Path) -> usize {
    receipts::verify(dir.join("receipts.jsonl"))
        .unwrap()
        .receipts
        .iter()
        .position(|r| r.kind == kind::GATE && r.observed["name"] == gates::IMAGE)
        .expect("the bundle records the image gate")
        + 1
}

/// Renames the image gate's `imageID` evidence field to `imageId`, chain re-made.
fn rename_image_id(dir: &Path) {
    rewrite_payloads(dir, |r| {
        let mut observed = r.observed.clone();
        if r.kind == kind::GATE
            && observed["name"] == gates::IMAGE
            && let Some(id) = observed["evidence"]
                .as_object_mut()
                .unwrap()
                .remove("imageID")
        {
            observed["evidence"]["imageId"] = id;
        }
        observed
    });
    receipts::verify(dir.join("receipts.jsonl")).expect("the re-chained journal verifies");
}

#[test]
fn gate_receipts_load_typed_and_round_trip() {
    let (_r, dir) = bundle_with_gates();
    report::load(&dir).expect("an untouched bundle with gate receipts loads");
    let journal = receipts::verify(dir.join("receipts.jsonl")).unwrap();
    let line = image_gate_line(&dir);
    let read = Observation::read(line, &journal.receipts[line - 1]).unwrap();
    assert_eq!(read, Observation::Gate(image_gate()));
}

#[test]
fn a_renamed_gate_evidence_field_is_refused_naming_its_line() {
    let (_r, dir) = bundle_with_gates();
    let target = image_gate_line(&dir);
    rename_image_id(&dir);
    let msg = report::load(&dir).unwrap_err().to_string();
    assert!(
        msg.contains(&format!("line {target} ")) && msg.contains("malformed gate"),
        "{msg}"
    );
    assert!(msg.contains("imageId"), "names the field: {msg}");
}

#[test]
fn rehearse_report_refuses_a_bundle_with_a_renamed_gate_field() {
    let (root, dir) = bundle_with_gates();
    let target = image_gate_line(&dir);
    rename_image_id(&dir);
    let out = root.path().join("out");
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .arg("report")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!("line {target} ")) && stderr.contains("imageId"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one-line error: {stderr}");
    assert!(
        !out.exists(),
        "nothing may be rendered from a refused bundle"
    );
}

/// `qualification.json`'s gates (and any other reader of a [`Gate`]) read evidence by the
/// gate's type: a renamed, a missing or an extra field, or another gate's evidence, is refused.
#[test]
fn a_gate_refuses_evidence_that_is_not_its_gates() {
    let good = serde_json::to_value(image_gate()).unwrap();
    let back: Gate = serde_json::from_value(good.clone()).unwrap();
    assert_eq!(back, image_gate());

    let mut renamed = good.clone();
    let id = renamed["evidence"]
        .as_object_mut()
        .unwrap()
        .remove("imageID")
        .unwrap();
    renamed["evidence"]["imageId"] = id;
    let e = serde_json::from_value::<Gate>(renamed)
        .unwrap_err()
        .to_string();
    assert!(e.contains("imageId") && e.contains(gates::IMAGE), "{e}");

    let mut missing = good.clone();
    missing["evidence"]
        .as_object_mut()
        .unwrap()
        .remove("pinned");
    let e = serde_json::from_value::<Gate>(missing)
        .unwrap_err()
        .to_string();
    assert!(e.contains("pinned"), "{e}");

    let mut other = good;
    other["name"] = json!(gates::SAVE);
    let e = serde_json::from_value::<Gate>(other)
        .unwrap_err()
        .to_string();
    assert!(e.contains(gates::SAVE), "{e}");
}

/// The report's evidence line is read from the typed evidence: an image gate that could not
/// observe shows its error (not an empty `imageID`), a save shows the game's replies.
#[test]
fn the_evidence_line_reads_the_typed_evidence() {
    use rehearsal::evidence::qualification::GateError;
    use rehearsal::report::qualification::evidence_line;
    let failed = Gate::new(
        "survival-canary",
        GateEvidence::Image(Observed::Error(GateError {
            error: "status.observedGeneration >= 3 timed out".into(),
        })),
        false,
        Some("status.observedGeneration >= 3 timed out".into()),
    );
    assert_eq!(
        evidence_line(&failed),
        "status.observedGeneration >= 3 timed out"
    );
    assert_eq!(
        evidence_line(&image_gate()),
        "imageID sha256:1111 on pod 7d1c0e0a-0000-4000-8000-000000000001"
    );
    let save = Gate::new(
        "survival-canary",
        GateEvidence::Save(Observed::Read(SaveEvidence {
            replies: vec!["Saving…\nSaved the game".into()],
        })),
        true,
        None,
    );
    assert_eq!(
        evidence_line(&save),
        "RCON replied \"Saving… / Saved the game\""
    );
}
