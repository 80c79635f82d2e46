//! The journal verifier, judged on its own: for any journal, any single changed, removed,
//! reordered, re-serialized, duplicated or appended entry is refused, naming the first bad line;
//! a journal cut anywhere verifies exactly up to its last complete line.

mod support;

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use rehearsal_evidence::canonical;
use rehearsal_evidence::receipts::{
    GENESIS, TruncatedTail, VerifyError, sha256_hex, verify, verify_prefix,
};
use serde_json::Value;

const MAX: usize = 40;

/// One journal of [`MAX`] entries written by the real writer; every prefix of it is a journal.
fn base() -> &'static Vec<Vec<u8>> {
    static BASE: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        support::plain_journal(&dir.path().join("receipts.jsonl"), MAX)
    })
}

fn journal(n: usize) -> Vec<Vec<u8>> {
    base()[..n].to_vec()
}

fn check(lines: &[Vec<u8>]) -> Result<rehearsal_evidence::receipts::VerifiedJournal, VerifyError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.jsonl");
    support::write_lines(&path, lines);
    verify(&path)
}

fn parse(line: &[u8]) -> serde_json::Map<String, Value> {
    match serde_json::from_slice(line).unwrap() {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

/// The entry as a forger with the hash function would write it: `sha256` recomputed over the
/// edited content, the line in canonical form.
fn reseal(mut entry: serde_json::Map<String, Value>) -> Vec<u8> {
    entry.remove("sha256");
    let hash = sha256_hex(canonical::to_string(&Value::Object(entry.clone())).as_bytes());
    entry.insert("sha256".into(), Value::String(hash));
    canonical::to_string(&Value::Object(entry)).into_bytes()
}

/// The entry with `field` replaced and its stored hash left as it was.
fn edit(line: &[u8], field: &str, value: Value) -> Vec<u8> {
    let mut entry = parse(line);
    entry.insert(field.into(), value);
    canonical::to_string(&Value::Object(entry)).into_bytes()
}

fn line_of(result: Result<impl std::fmt::Debug, VerifyError>) -> (usize, VerifyError) {
    let e = result.expect_err("the journal must be refused");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("line {}", e.line())),
        "the message names the line: {msg}"
    );
    (e.line(), e)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn an_untouched_journal_verifies_with_its_head(n in 1..=MAX) {
        let lines = journal(n);
        let verified = check(&lines).unwrap();
        prop_assert_eq!(verified.receipts.len(), n);
        prop_assert_eq!(verified.head, sha256_hex(&lines[n - 1]));
        for (i, r) in verified.receipts.iter().enumerate() {
            prop_assert_eq!(r.seq, i as u64);
            let prev = if i == 0 { GENESIS.to_owned() } else { sha256_hex(&lines[i - 1]) };
            prop_assert_eq!(&r.prev, &prev);
        }
    }

    #[test]
    fn an_edited_entry_is_tampered_at_its_line(
        n in 1..=MAX, at in any::<prop::sample::Index>(), field in 0..5usize
    ) {
        let mut lines = journal(n);
        let i = at.index(n);
        let (name, value) = match field {
            0 => ("step", Value::String("edited".into())),
            1 => ("observed", serde_json::json!({"edited": true})),
            2 => ("time", Value::String("2030-01-01T00:00:00Z".into())),
            3 => ("case", Value::String("another-case".into())),
            _ => ("kind", Value::String("step-edited".into())),
        };
        lines[i] = edit(&lines[i], name, value);
        let (line, e) = line_of(check(&lines));
        prop_assert_eq!(line, i + 1);
        prop_assert!(matches!(e, VerifyError::Tampered { .. }), "{e}");
    }

    #[test]
    fn a_resealed_edit_breaks_the_chain_at_the_next_line(
        n in 2..=MAX, at in any::<prop::sample::Index>()
    ) {
        let mut lines = journal(n);
        let i = at.index(n - 1);
        let mut entry = parse(&lines[i]);
        entry.insert("step".into(), Value::String("forged".into()));
        lines[i] = reseal(entry);
        let (line, e) = line_of(check(&lines));
        prop_assert_eq!(line, i + 2);
        prop_assert!(matches!(e, VerifyError::BrokenChain { .. }), "{e}");
    }

    #[test]
    fn a_removed_entry_is_missing_at_its_line(n in 2..=MAX, at in any::<prop::sample::Index>()) {
        let mut lines = journal(n);
        let i = at.index(n - 1);
        lines.remove(i);
        let (line, e) = line_of(check(&lines));
        prop_assert_eq!(line, i + 1);
        match e {
            VerifyError::Missing { expected, found, .. } => {
                prop_assert_eq!(expected, i as u64);
                prop_assert_eq!(found, i as u64 + 1);
            }
            other => prop_assert!(false, "{other}"),
        }
    }

    #[test]
    fn swapped_entries_are_reordered_at_the_first(
        n in 2..=MAX, a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()
    ) {
        let (x, y) = (a.index(n), b.index(n));
        prop_assume!(x != y);
        let (i, j) = (x.min(y), x.max(y));
        let mut lines = journal(n);
        lines.swap(i, j);
        let (line, e) = line_of(check(&lines));
        prop_assert_eq!(line, i + 1);
        match e {
            VerifyError::Reordered { expected, found, expected_at, .. } => {
                prop_assert_eq!(expected, i as u64);
                prop_assert_eq!(found, j as u64);
                prop_assert_eq!(expected_at, Some(j + 1));
            }
            other => prop_assert!(false, "{other}"),
        }
    }

    #[test]
    fn a_replayed_entry_is_reordered_where_it_repeats(
        n in 1..=MAX, at in any::<prop::sample::Index>()
    ) {
        let mut lines = journal(n);
        let i = at.index(n);
        let copy = lines[i].clone();
        lines.insert(i + 1, copy);
        let (line, e) = line_of(check(&lines));
        prop_assert_eq!(line, i + 2);
        match e {
            VerifyError::Reordered { expected, found, expected_at, .. } => {
                prop_assert_eq!(expected, i as u64 + 1);
                prop_assert_eq!(found, i as u64);
                prop_assert_eq!(expected_at, None);
            }
            other => prop_assert!(false, "{other}"),
        }
    }

    #[test]
    fn a_rewritten_line_is_not_canonical(n in 1..=MAX, at in any::<prop::sample::Index>()) {
        let mut lines = journal(n);
        let i = at.index(n);
        // The same JSON, pretty-printed onto one line: it hashes the same, but it is not the
        // bytes the writer wrote.
        let spaced = serde_json::to_string(&Value::Object(parse(&lines[i])))
            .unwrap()
            .replacen(",\"", ", \"", 1);
        lines[i] = spaced.into_bytes();
        let (line, e) = line_of(check(&lines));
        prop_assert_eq!(line, i + 1);
        prop_assert!(matches!(e, VerifyError::NotCanonical { .. }), "{e}");
    }

    #[test]
    fn an_appended_entry_must_chain_and_belong_to_the_run(n in 1..=MAX, how in 0..4usize) {
        let mut lines = journal(n);
        let mut entry = parse(&lines[n - 1]);
        entry.insert("seq".into(), Value::from(n as u64));
        entry.insert("prev".into(), Value::String(sha256_hex(&lines[n - 1])));
        entry.insert("step".into(), Value::String("appended".into()));
        match how {
            0 => {}
            1 => { entry.insert("run_id".into(), Value::String("run-2".into())); }
            2 => { entry.insert("arch".into(), Value::String("arm64".into())); }
            _ => { entry.insert("prev".into(), Value::String(GENESIS.into())); }
        }
        lines.push(reseal(entry));
        let result = check(&lines);
        if how == 0 {
            // A well-formed continuation of the same run verifies: only the summary's anchor
            // (bundle tests) tells an entry added after the run finished.
            prop_assert_eq!(result.unwrap().receipts.len(), n + 1);
        } else {
            let (line, e) = line_of(result);
            prop_assert_eq!(line, n + 1);
            if how == 3 {
                prop_assert!(matches!(e, VerifyError::BrokenChain { .. }), "{e}");
            } else {
                prop_assert!(matches!(e, VerifyError::ForeignEntry { .. }), "{e}");
            }
        }
    }

    #[test]
    fn a_journal_cut_anywhere_verifies_up_to_its_last_complete_line(
        n in 1..=MAX, cut in any::<prop::sample::Index>()
    ) {
        let lines = journal(n);
        let mut bytes = Vec::new();
        for l in &lines {
            bytes.extend_from_slice(l);
            bytes.push(b'\n');
        }
        let at = cut.index(bytes.len() + 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("receipts.jsonl");
        std::fs::write(&path, &bytes[..at]).unwrap();
        let complete = bytes[..at].iter().filter(|b| **b == b'\n').count();
        let partial = at - bytes[..at].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let checked = verify_prefix(&path).unwrap();
        prop_assert_eq!(checked.journal.receipts.len(), complete);
        let head = if complete == 0 { GENESIS.to_owned() } else { sha256_hex(&lines[complete - 1]) };
        prop_assert_eq!(&checked.journal.head, &head);
        if partial == 0 {
            prop_assert_eq!(checked.truncated_tail, None);
            prop_assert_eq!(verify(&path).unwrap().receipts.len(), complete);
        } else {
            prop_assert_eq!(
                checked.truncated_tail,
                Some(TruncatedTail { line: complete + 1, bytes: partial })
            );
            let (line, e) = line_of(verify(&path));
            prop_assert_eq!(line, complete + 1);
            prop_assert!(
                matches!(e, VerifyError::TruncatedTail { bytes, .. } if bytes == partial),
                "{e}"
            );
        }
    }
}

#[test]
fn lines_that_are_not_receipts_are_unparsable_at_their_line() {
    let good = journal(3);
    for (bad, why) in [
        (b"not json".to_vec(), "not a JSON receipt"),
        (b"[1,2]".to_vec(), "not a JSON object"),
        (br#"{"seq":1}"#.to_vec(), "no sha256 field"),
    ] {
        let mut lines = good.clone();
        lines[1] = bad;
        let (line, e) = line_of(check(&lines));
        assert_eq!(line, 2);
        assert!(matches!(e, VerifyError::Unparsable { .. }), "{e}");
        assert!(e.to_string().contains(why), "{e}");
    }
    // An object that hashes right but lacks a receipt's fields.
    let mut lines = good.clone();
    let mut bare = serde_json::Map::new();
    bare.insert("seq".into(), Value::from(1));
    lines[1] = reseal(bare);
    let (line, e) = line_of(check(&lines));
    assert_eq!(line, 2);
    assert!(matches!(e, VerifyError::Unparsable { .. }), "{e}");
}

#[test]
fn a_missing_file_is_an_io_error_at_line_zero() {
    let e = verify(Path::new("/nonexistent/receipts.jsonl")).unwrap_err();
    assert!(matches!(e, VerifyError::Io { .. }), "{e}");
    assert_eq!(e.line(), 0);
    assert!(e.to_string().contains("cannot read"), "{e}");
}

#[test]
fn an_empty_journal_verifies_empty() {
    let verified = check(&[]).unwrap();
    assert!(verified.receipts.is_empty());
    assert_eq!(verified.head, GENESIS);
}

#[test]
fn a_missing_first_entry_is_named_even_when_the_rest_chains() {
    let mut lines = journal(5);
    lines.remove(0);
    let (line, e) = line_of(check(&lines));
    assert_eq!(line, 1);
    assert!(e.to_string().contains("missing entries: seq 0..1"), "{e}");
}

#[test]
fn a_reordered_message_says_where_the_missing_entry_is() {
    let mut lines = journal(6);
    lines.swap(1, 4);
    let e = check(&lines).unwrap_err();
    assert!(
        e.to_string()
            .contains("expected seq 1 here, found it at line 5"),
        "{e}"
    );
}

#[test]
fn a_tampered_message_names_the_seq_when_it_can_be_read() {
    let mut lines = journal(4);
    lines[2] = edit(&lines[2], "step", Value::String("edited".into()));
    let e = check(&lines).unwrap_err();
    assert!(e.to_string().contains("line 3 (seq 2): tampered"), "{e}");
    // An entry whose seq is gone says so by leaving it out.
    let mut lines = journal(4);
    let mut entry = parse(&lines[2]);
    entry.remove("seq");
    lines[2] = canonical::to_string(&Value::Object(entry)).into_bytes();
    let e = check(&lines).unwrap_err();
    assert!(e.to_string().contains("line 3: tampered"), "{e}");
}
