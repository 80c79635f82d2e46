//! `kill -9` of a journal writer mid-run: the journal verifies up to its last complete entry,
//! and every entry the writer acknowledged is in that prefix.
//!
//! The writer is this test binary re-executed with `REHEARSAL_KILL_CHILD_JOURNAL` set: it
//! appends large entries in a loop and prints `appended <seq>` after each durable append.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rehearsal::evidence::receipts::{Journal, kind, verify_prefix};
use serde_json::json;

const CHILD_ENV: &str = "REHEARSAL_KILL_CHILD_JOURNAL";
const TEST_NAME: &str = "sigkill_mid_write_leaves_a_journal_that_verifies_up_to_its_last_entry";
/// Entries the parent waits to see acknowledged before killing.
const MIN_ENTRIES: u64 = 3;

/// Kills and reaps the child even when an assertion fails first.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_child_writer(path: &str) -> ! {
    let journal = Journal::create(path, "run-kill", "amd64").expect("child creates journal");
    // Multi-megabyte entries make a kill inside `write_all` likely rather than merely possible
    // (the page cache fills in large folios, so a small write completes before the signal).
    let filler = "x".repeat(4 * 1024 * 1024);
    let stdout = std::io::stdout();
    for seq in 0.. {
        journal
            .append(
                Some("case-k"),
                "loop",
                kind::STEP,
                json!({"seq": seq, "filler": filler}),
            )
            .expect("child appends");
        let mut out = stdout.lock();
        writeln!(out, "appended {seq}").unwrap();
        out.flush().unwrap();
    }
    unreachable!()
}

#[test]
fn sigkill_mid_write_leaves_a_journal_that_verifies_up_to_its_last_entry() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        run_child_writer(&path);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("receipts.jsonl");
    let exe = std::env::current_exe().unwrap();
    let child = Command::new(exe)
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("re-exec the test binary as the writer");
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().unwrap();
    let mut acknowledged: Option<u64> = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read child stdout");
        if let Some(seq) = line.strip_prefix("appended ") {
            let seq: u64 = seq.parse().unwrap();
            acknowledged = Some(seq);
            if seq + 1 >= MIN_ENTRIES {
                break;
            }
        }
    }
    let acknowledged = acknowledged
        .unwrap_or_else(|| panic!("the writer exited before acknowledging {MIN_ENTRIES} entries"));
    assert!(
        acknowledged + 1 >= MIN_ENTRIES,
        "writer stopped at seq {acknowledged}"
    );
    // Aim the kill inside a write: wait until the file grows past what was acknowledged (the
    // next entry's bytes are arriving), bounded, then SIGKILL. Landing between writes is also
    // valid; the assertions below hold either way.
    let acked_len = std::fs::metadata(&path).unwrap().len();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut observed_len = acked_len;
    while observed_len == acked_len && Instant::now() < deadline {
        std::thread::yield_now();
        observed_len = std::fs::metadata(&path).unwrap().len();
    }
    assert!(
        observed_len > acked_len,
        "the writer stopped writing: the journal stayed at {acked_len} bytes for 30 s"
    );
    child.0.kill().expect("SIGKILL the writer");
    let status = child.0.wait().unwrap();
    assert!(
        !status.success(),
        "the writer was killed, not finished: {status}"
    );

    let checked = verify_prefix(&path).unwrap_or_else(|e| panic!("prefix must verify: {e}"));
    let complete = checked.journal.receipts.len() as u64;
    assert!(
        complete > acknowledged,
        "entry {acknowledged} was acknowledged but only {complete} entries are in the journal"
    );
    if let Some(tail) = checked.truncated_tail {
        assert_eq!(tail.line as u64, complete + 1);
        eprintln!(
            "killed mid-write: {complete} complete entries, partial line {} ({} bytes)",
            tail.line, tail.bytes
        );
    } else {
        eprintln!("killed between writes: {complete} complete entries");
    }
    for (i, r) in checked.journal.receipts.iter().enumerate() {
        assert_eq!(r.observed["seq"], json!(i));
    }
}
