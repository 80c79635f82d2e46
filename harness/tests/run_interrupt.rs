//! Ctrl-C during `rehearse run`: the run stops, every process it started ends, and the bundle
//! it leaves verifies and says it was interrupted.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Polls `check` every 20 ms until it returns `Some`, for at most `bound`; panics with `what`
/// and the last observation otherwise.
fn wait_for<T>(bound: Duration, what: &str, mut check: impl FnMut() -> (Option<T>, String)) -> T {
    let start = Instant::now();
    let mut last = String::new();
    let mut tick = std::time::Duration::from_millis(20);
    while start.elapsed() < bound {
        let (hit, seen) = check();
        if let Some(v) = hit {
            return v;
        }
        last = seen;
        // A short, fixed poll of a file another process writes; bounded above.
        std::thread::park_timeout(tick);
        tick = (tick * 2).min(Duration::from_millis(200));
    }
    panic!("{what} not observed within {bound:?}; last observed: {last}");
}

fn bundle_dir(reports: &Path) -> Option<PathBuf> {
    std::fs::read_dir(reports)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("receipts.jsonl").is_file())
}

/// PIDs of processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(needle)
        {
            out.push(pid);
        }
    }
    out
}

/// Each of `pids` as `/proc` shows it: its state, parent and command line (which process a
/// run left behind, and why it may not have ended).
fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid …`: the fields after the command's closing parenthesis.
            let after: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().take(2).collect())
                .unwrap_or_default();
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            format!("[{pid} state {after:?}: {}]", cmd.trim())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn ctrl_c_mid_run_cleans_up_and_leaves_an_interrupted_bundle() {
    let reports = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(["run", "--case", "stopped_server_backups", "--reports"])
        .arg(reports.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rehearse");
    let pid = child.id();
    let guard = scopeguard(pid);

    // Interrupt once the case is past its setup: a server is running.
    let dir = wait_for(
        Duration::from_secs(120),
        "the case creating its server",
        || {
            let dir = bundle_dir(reports.path());
            let journal = dir
                .as_ref()
                .and_then(|d| std::fs::read_to_string(d.join("receipts.jsonl")).ok())
                .unwrap_or_default();
            let hit = journal
                .contains("\"step\":\"create server\"")
                .then(|| dir.clone().unwrap());
            (hit, format!("{} journal lines", journal.lines().count()))
        },
    );
    let state_marker = format!("cluster-{pid}-");
    assert!(
        !processes_mentioning(&state_marker).is_empty(),
        "no sandbox of the run was seen before the interrupt"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = wait_for(
        Duration::from_secs(60),
        "rehearse exiting after SIGINT",
        || (child.try_wait().unwrap(), "still running".into()),
    );
    std::mem::forget(guard);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        !status.success(),
        "an interrupted run must exit non-zero; stderr: {stderr}"
    );
    assert!(
        stderr.contains("interrupted"),
        "stderr does not say interrupted: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    wait_for(
        Duration::from_secs(10),
        "every sandbox of the run ending",
        || {
            let left = processes_mentioning(&state_marker);
            (
                left.is_empty().then_some(()),
                format!("still running: {}", describe(&left)),
            )
        },
    );

    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("bundle.json")).expect("bundle.json written"),
    )
    .unwrap();
    assert_eq!(summary["interrupted"], serde_json::json!(true), "{summary}");
    assert_eq!(
        summary["cases"][0]["verdict"],
        serde_json::json!("interrupted"),
        "{summary}"
    );
    rehearsal::evidence::receipts::verify(dir.join("receipts.jsonl"))
        .expect("the journal verifies");
}

/// Kills the child if the test panics before it exits.
fn scopeguard(pid: u32) -> impl Drop {
    struct Kill(u32);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0 as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    Kill(pid)
}

/// `rehearse run` interrupted at 20 points across a case (after the k-th receipt of its
/// journal, SIGINT and SIGTERM in turn): every run exits 130, leaves no process behind, and
/// its bundle verifies and renders (`rehearse report`), the case recorded as interrupted.
#[test]
fn interrupted_at_any_point_the_bundle_verifies_and_renders() {
    let case = "live_backup_restore_round_trip";
    // One uninterrupted run counts the receipts the case writes.
    let reports = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(["run", "--case", case, "--reports"])
        .arg(reports.path())
        .output()
        .expect("run rehearse");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let total = std::fs::read_to_string(bundle_dir(reports.path()).unwrap().join("receipts.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert!(total >= 27, "the case writes {total} receipts");
    // 20 distinct points, from the first receipt to a few before the verdict (a signal that
    // lands once the last case has ended interrupts nothing: the run is complete).
    let points: Vec<usize> = (0..20).map(|i| 1 + i * (total - 8) / 19).collect();
    let mut interrupted = 0;
    for (i, point) in points.into_iter().enumerate() {
        let signal = if i % 2 == 0 {
            nix::sys::signal::Signal::SIGINT
        } else {
            nix::sys::signal::Signal::SIGTERM
        };
        let what = format!("{signal:?} after receipt {point} of {total}");
        let reports = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rehearse"))
            .args(["run", "--case", case, "--reports"])
            .arg(reports.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rehearse");
        let pid = child.id();
        let guard = scopeguard(pid);
        let dir = wait_for(Duration::from_secs(120), &what, || {
            let dir = bundle_dir(reports.path());
            let lines = dir
                .as_ref()
                .and_then(|d| std::fs::read_to_string(d.join("receipts.jsonl")).ok())
                .map_or(0, |j| j.lines().count());
            (
                (lines >= point).then(|| dir.clone().unwrap()),
                format!("{lines} receipts"),
            )
        });
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
        let status = wait_for(Duration::from_secs(60), "rehearse exiting", || {
            (child.try_wait().unwrap(), "still running".into())
        });
        std::mem::forget(guard);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        // A signal that lands after the last case has ended (the last few receipts are written
        // within milliseconds, faster than this loop polls) interrupts nothing: the run is
        // complete and exits 0. Anything else is an interrupted run: 130.
        let lines =
            std::fs::read_to_string(dir.join("receipts.jsonl")).map_or(0, |j| j.lines().count());
        let completed = status.code() == Some(0) && lines == total;
        if !completed {
            assert_eq!(
                status.code(),
                Some(130),
                "{what}: {lines} receipts: {stderr}"
            );
            interrupted += 1;
        }
        check_interrupted_bundle(&what, pid, &dir, &reports.path().join("report"), completed);
    }
    assert!(
        interrupted >= 15,
        "only {interrupted} of 20 signals landed mid-run: the points are too late in the run"
    );
}

/// After one interrupted (or, when the signal came late, `completed`) run of process `pid`:
/// no sandbox of it is left, its journal verifies, `rehearse report` renders its bundle into
/// `out`, and `bundle.json` says whether it was interrupted.
fn check_interrupted_bundle(what: &str, pid: u32, dir: &Path, out: &Path, completed: bool) {
    let marker = format!("cluster-{pid}-");
    wait_for(
        Duration::from_secs(10),
        "every sandbox of the run ending",
        || {
            let left = processes_mentioning(&marker);
            (
                left.is_empty().then_some(()),
                format!("{what}: still running: {}", describe(&left)),
            )
        },
    );
    rehearsal::evidence::receipts::verify(dir.join("receipts.jsonl"))
        .unwrap_or_else(|e| panic!("{what}: the journal does not verify: {e}"));
    let report = Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .arg("report")
        .arg(dir)
        .args(["--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{what}: rehearse report refuses the bundle: {}",
        String::from_utf8_lossy(&report.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("bundle.json")).unwrap()).unwrap();
    assert_eq!(
        summary["interrupted"],
        serde_json::json!(!completed),
        "{what}: {summary}"
    );
}
