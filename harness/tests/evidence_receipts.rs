//! The receipt journal: chaining, durability rules, redaction, and detection of tampering,
//! reordering, removal and truncation, each naming the first bad entry.

use std::path::{Path, PathBuf};

use rehearsal::evidence::receipts::{
    self, GENESIS, Journal, JournalError, VerifyError, kind, verify, verify_prefix,
};
use serde_json::{Value, json};

fn journal_with(n: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.jsonl");
    let j = Journal::create(&path, "run-t", "amd64").unwrap();
    for i in 0..n {
        j.append(
            Some("case-a"),
            &format!("step-{i}"),
            kind::STEP,
            json!({"i": i, "pod": "gs-0"}),
        )
        .unwrap();
    }
    (dir, path)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_written_journal_verifies_and_chains_every_entry() {
    let (_d, path) = journal_with(5);
    let v = verify(&path).unwrap();
    assert_eq!(v.receipts.len(), 5);
    assert_eq!(v.receipts[0].prev, GENESIS);
    let raw = lines(&path);
    for i in 1..5 {
        assert_eq!(
            v.receipts[i].prev,
            receipts::sha256_hex(raw[i - 1].as_bytes())
        );
        assert_eq!(v.receipts[i].seq, i as u64);
    }
    assert_eq!(v.head, receipts::sha256_hex(raw[4].as_bytes()));
    // Every entry is one line of canonical JSON with the documented fields.
    let first: Value = serde_json::from_str(&raw[0]).unwrap();
    for field in [
        "seq", "time", "run_id", "case", "step", "arch", "kind", "observed", "prev", "sha256",
    ] {
        assert!(
            first.get(field).is_some(),
            "field {field} missing from {first}"
        );
    }
}

#[test]
fn an_edited_value_is_reported_as_tampered_at_its_line() {
    let (_d, path) = journal_with(5);
    let mut raw = lines(&path);
    raw[2] = raw[2].replace("\"pod\":\"gs-0\"", "\"pod\":\"gs-1\"");
    write_lines(&path, &raw);
    match verify(&path).unwrap_err() {
        VerifyError::Tampered { line, seq, .. } => assert_eq!((line, seq), (3, Some(2))),
        other => panic!("expected Tampered at line 3, got {other}"),
    }
}

#[test]
fn an_edited_and_rehashed_entry_breaks_the_next_link() {
    let (_d, path) = journal_with(5);
    let mut raw = lines(&path);
    let mut entry: serde_json::Map<String, Value> = serde_json::from_str(&raw[1]).unwrap();
    entry.insert("observed".into(), json!({"i": 1, "pod": "forged"}));
    entry.remove("sha256");
    let hash = receipts::sha256_hex(
        rehearsal::evidence::canonical::to_string(&Value::Object(entry.clone())).as_bytes(),
    );
    entry.insert("sha256".into(), json!(hash));
    raw[1] = rehearsal::evidence::canonical::to_string(&Value::Object(entry));
    write_lines(&path, &raw);
    match verify(&path).unwrap_err() {
        VerifyError::BrokenChain { line, seq, .. } => assert_eq!((line, seq), (3, 2)),
        other => panic!("expected BrokenChain at line 3, got {other}"),
    }
}

#[test]
fn swapped_entries_are_reported_as_reordered() {
    let (_d, path) = journal_with(5);
    let mut raw = lines(&path);
    raw.swap(2, 3);
    write_lines(&path, &raw);
    let err = verify(&path).unwrap_err();
    match &err {
        VerifyError::Reordered {
            line,
            expected,
            found,
            expected_at,
            ..
        } => assert_eq!((*line, *expected, *found, *expected_at), (3, 2, 3, Some(4))),
        other => panic!("expected Reordered at line 3, got {other}"),
    }
    assert!(err.to_string().contains("line 3"), "{err}");
}

#[test]
fn a_removed_entry_is_reported_as_missing() {
    let (_d, path) = journal_with(5);
    let mut raw = lines(&path);
    raw.remove(1);
    write_lines(&path, &raw);
    match verify(&path).unwrap_err() {
        VerifyError::Missing {
            line,
            expected,
            found,
            ..
        } => assert_eq!((line, expected, found), (2, 1, 2)),
        other => panic!("expected Missing at line 2, got {other}"),
    }
}

#[test]
fn reformatting_a_line_is_detected_even_when_its_hash_still_matches() {
    let (_d, path) = journal_with(3);
    let mut raw = lines(&path);
    let v: Value = serde_json::from_str(&raw[2]).unwrap();
    raw[2] = serde_json::to_string_pretty(&v).unwrap().replace('\n', " ");
    write_lines(&path, &raw);
    match verify(&path).unwrap_err() {
        VerifyError::NotCanonical { line, seq, .. } => assert_eq!((line, seq), (3, 2)),
        other => panic!("expected NotCanonical at line 3, got {other}"),
    }
}

#[test]
fn a_partial_last_line_fails_verify_but_its_prefix_verifies() {
    let (_d, path) = journal_with(4);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 17]).unwrap();
    match verify(&path).unwrap_err() {
        VerifyError::TruncatedTail { line, .. } => assert_eq!(line, 4),
        other => panic!("expected TruncatedTail at line 4, got {other}"),
    }
    let prefix = verify_prefix(&path).unwrap();
    assert_eq!(prefix.journal.receipts.len(), 3);
    assert_eq!(prefix.truncated_tail.unwrap().line, 4);
    // Appending after a partial line would fuse two entries: resuming is refused.
    match Journal::open_existing(&path).unwrap_err() {
        JournalError::TruncatedTail { line, .. } => assert_eq!(line, 4),
        other => panic!("expected TruncatedTail, got {other}"),
    }
}

#[test]
fn open_existing_resumes_the_chain() {
    let (_d, path) = journal_with(3);
    let j = Journal::open_existing(&path).unwrap();
    assert_eq!((j.run_id(), j.arch(), j.len()), ("run-t", "amd64", 3));
    let r = j
        .append(Some("case-b"), "after-restart", kind::STEP, json!({}))
        .unwrap();
    assert_eq!(r.seq, 3);
    drop(j);
    let v = verify(&path).unwrap();
    assert_eq!(v.receipts.len(), 4);
    assert_eq!(v.receipts[3], r);
}

#[test]
fn create_never_touches_an_existing_journal() {
    let (_d, path) = journal_with(2);
    let before = std::fs::read(&path).unwrap();
    assert!(matches!(
        Journal::create(&path, "run-x", "arm64").unwrap_err(),
        JournalError::AlreadyExists { .. }
    ));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_second_writer_is_refused_while_the_first_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.jsonl");
    let first = Journal::create(&path, "run-t", "amd64").unwrap();
    first.append(None, "a", kind::STEP, json!({})).unwrap();
    assert!(matches!(
        Journal::open_existing(&path).unwrap_err(),
        JournalError::InUse { .. }
    ));
    drop(first);
    assert_eq!(Journal::open_existing(&path).unwrap().len(), 1);
}

#[test]
fn secrets_never_reach_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.jsonl");
    let j = Journal::create(&path, "run-t", "amd64").unwrap();
    let r = j
        .append(
            Some("case-a"),
            "repo-secret",
            kind::STEP,
            json!({
                "object": {"kind": "Secret", "metadata": {"name": "restic-repo"},
                           "data": {"repo": "czM6Ly9yZXBv", "password": "c3VwZXItc2VjcmV0LXB3"}},
                "env": [{"name": "RESTIC_PASSWORD", "value": "super-secret-pw"}],
                "agent": {"token": "tok-123456", "passwordSecretRef": {"name": "rcon"}},
            }),
        )
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in [
        "c3VwZXItc2VjcmV0LXB3",
        "czM6Ly9yZXBv",
        "super-secret-pw",
        "tok-123456",
    ] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
    assert_eq!(r.observed["object"]["data"]["password"], "[redacted]");
    assert_eq!(r.observed["agent"]["passwordSecretRef"]["name"], "rcon");
    assert_eq!(r.observed["object"]["metadata"]["name"], "restic-repo");
    verify(&path).unwrap();
}

#[test]
fn errors_name_the_file_line_and_seq() {
    let (_d, path) = journal_with(3);
    let mut raw = lines(&path);
    raw[1] = raw[1].replace("step-1", "step-X");
    write_lines(&path, &raw);
    let msg = verify(&path).unwrap_err().to_string();
    assert!(msg.contains("receipts.jsonl line 2 (seq 1)"), "{msg}");
    assert!(msg.contains("tampered"), "{msg}");
}

#[test]
fn concurrent_appends_from_many_threads_form_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.jsonl");
    let j = Journal::create(&path, "run-t", "amd64").unwrap();
    std::thread::scope(|s| {
        for t in 0..6 {
            let j = &j;
            s.spawn(move || {
                for i in 0..25 {
                    j.append(
                        Some(&format!("case-{t}")),
                        &format!("step-{i}"),
                        kind::STEP,
                        json!({"t": t, "i": i}),
                    )
                    .unwrap();
                }
            });
        }
    });
    let v = verify(&path).unwrap();
    assert_eq!(v.receipts.len(), 150);
    // Each thread's own entries kept their order.
    for t in 0..6 {
        let mine: Vec<u64> = v
            .receipts
            .iter()
            .filter(|r| r.observed["t"] == json!(t))
            .map(|r| r.observed["i"].as_u64().unwrap())
            .collect();
        assert_eq!(mine, (0..25).collect::<Vec<u64>>());
    }
}
