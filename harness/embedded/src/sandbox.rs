//! Sandboxed processes: the only place the embedded node spawns anything (sandboxes, and
//! processes entering a running sandbox's namespaces for `kubectl exec`).
//!
//! A container is a `bwrap` process tree: the outer `bwrap` (our child), its PID-namespace init,
//! and the container's command (PID 2 inside). The host's `/usr` and `/etc` form a read-only root,
//! the image's executable and each volume are bound at their paths, and `--die-with-parent`
//! ends the tree when the process running the cluster dies. Every outer `bwrap` PID is recorded
//! in `<state>/sandboxes/<pid>` so a later start can end what a crashed run left behind.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::sync::watch;

/// Environment variable set in every sandbox; its value (the state directory) on the `bwrap`
/// command line lets a later run recognise the process as one of ours.
pub const STATE_MARKER_ENV: &str = "REHEARSAL_EMBEDDED_STATE";

/// A host path bound into the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bind {
    /// Host path.
    pub source: PathBuf,
    /// Path inside the sandbox.
    pub dest: String,
    /// `--ro-bind` instead of `--bind`.
    pub read_only: bool,
}

/// Everything needed to start one sandboxed process.
#[derive(Clone, Debug, Default)]
pub struct SandboxSpec {
    /// Host executables bound read-only at their own paths (outside `/usr`).
    pub executables: Vec<PathBuf>,
    /// A host directory that becomes `/bin` (instead of the `/usr/bin` symlink).
    pub bin_dir: Option<PathBuf>,
    /// The command and its arguments; a bare name is looked up in the sandbox's `PATH`.
    pub argv: Vec<String>,
    /// The complete environment.
    pub env: Vec<(String, String)>,
    /// Volume binds, applied in order (parents before children).
    pub binds: Vec<Bind>,
    /// Working directory inside the sandbox.
    pub workdir: Option<String>,
    /// A host directory bound at `/tmp` (default: a private tmpfs). The kubelet gives each
    /// container one so exec probes, which run in a fresh sandbox, see the same `/tmp`.
    pub tmp_dir: Option<PathBuf>,
    /// The hostname in a UTS namespace of its own (the pod's hostname); `None` shares the host's.
    pub hostname: Option<String>,
    /// A file bound read-only over `/etc/resolv.conf` (the pod's cluster DNS settings);
    /// `None` keeps the host's.
    pub resolv_conf: Option<PathBuf>,
}

/// Where `/etc/resolv.conf` really is: a host whose file is a symlink (systemd-resolved's
/// `../run/systemd/resolve/stub-resolv.conf`) gets the bind at the link's target, which bwrap
/// creates inside the sandbox.
fn resolv_conf_dest() -> PathBuf {
    let link = Path::new("/etc/resolv.conf");
    match std::fs::read_link(link) {
        Ok(target) if target.is_absolute() => target,
        Ok(target) => {
            // Normalise `../run/…` against /etc without touching the file system.
            let mut out = PathBuf::from("/etc");
            for part in target.components() {
                match part {
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    std::path::Component::Normal(p) => out.push(p),
                    _ => {}
                }
            }
            out
        }
        Err(_) => link.to_path_buf(),
    }
}

/// Why a sandbox could not be started or run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `bwrap` could not be executed.
    #[error("cannot start bwrap for {argv:?}: {source} (install Debian package `bubblewrap`)")]
    Spawn {
        /// The container command.
        argv: Vec<String>,
        /// The OS error.
        source: std::io::Error,
    },
    /// The log file could not be opened.
    #[error("cannot open log file {path}: {source}")]
    Log {
        /// The log file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The container command is empty.
    #[error("container has no command: neither the image nor the pod spec gives one")]
    NoCommand,
    /// The node is shutting down: every sandbox has been ended and none may start.
    #[error("the node is shutting down: no sandbox may start")]
    Closed,
}

/// The result of a command run to completion (exec probes).
#[derive(Debug)]
pub struct ExecOutput {
    /// Exit code (128 + signal when killed); `None` when the timeout hit.
    pub exit_code: Option<i32>,
    /// Combined output, for probe failure messages.
    pub output: String,
}

/// Starts sandboxes and keeps the set of live ones, so the cluster can end them all.
#[derive(Clone, Debug)]
pub struct Sandboxes {
    state_dir: PathBuf,
    live: Arc<Mutex<Live>>,
}

/// The outer `bwrap` PIDs of running sandboxes and exec probes, and whether the node has
/// closed: once [`Sandboxes::kill_all`] has run, nothing new starts. Starting and recording
/// happen under one lock, so a sandbox is either recorded before `kill_all` takes the set (and
/// killed by it) or refused.
#[derive(Debug, Default)]
struct Live {
    pids: HashSet<u32>,
    closed: bool,
}

/// A running sandbox. Dropping the handle does not stop it; [`Sandboxes::kill_all`] does.
#[derive(Clone, Debug)]
pub struct SandboxHandle {
    /// PID of the outer `bwrap`.
    pub pid: u32,
    exit: watch::Receiver<Option<i32>>,
}

impl SandboxHandle {
    /// Waits for the process to end and returns its exit code (128 + signal when killed).
    pub async fn wait(&self) -> i32 {
        let mut exit = self.exit.clone();
        loop {
            if let Some(code) = *exit.borrow_and_update() {
                return code;
            }
            if exit.changed().await.is_err() {
                // The waiter task ended without a code: the runtime is shutting down.
                return 137;
            }
        }
    }

    /// The exit code, if the process has ended.
    pub fn exit_code(&self) -> Option<i32> {
        *self.exit.borrow()
    }

    /// Sends `signal` to the container's command (PID 2 inside). Returns false when the
    /// command does not exist (yet): `bwrap` is still setting the sandbox up, or it ended.
    /// The outer `bwrap` is never signalled this way: if it died before its namespace init,
    /// the init and the command would be left running.
    pub fn signal(&self, signal: Signal) -> bool {
        if self.exit_code().is_some() {
            return false;
        }
        match command_pid(self.pid) {
            Some(target) => kill(Pid::from_raw(target as i32), signal).is_ok(),
            None => false,
        }
    }

    /// Ends the process like a container runtime: SIGTERM, up to `grace`, then SIGKILL of the
    /// whole tree. Returns the exit code.
    pub async fn stop(&self, grace: Duration) -> i32 {
        if let Some(code) = self.exit_code() {
            return code;
        }
        if !grace.is_zero() {
            let deadline = tokio::time::Instant::now() + grace;
            // A sandbox stopped right after its start may not have its command yet.
            while !self.signal(Signal::SIGTERM)
                && self.exit_code().is_none()
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            if let Ok(code) = tokio::time::timeout_at(deadline, self.wait()).await {
                return code;
            }
        }
        // Kill the tree only once bwrap has created its namespace init (or ended): killed
        // during set-up, the init it is about to create would outlive it.
        let settle = tokio::time::Instant::now() + Duration::from_millis(500);
        while self.exit_code().is_none()
            && children_of(self.pid).is_empty()
            && tokio::time::Instant::now() < settle
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if self.exit_code().is_none() {
            kill_tree(self.pid);
        }
        self.wait().await
    }
}

/// SIGKILLs a sandbox: its PID-namespace init first (the kernel then kills every process in
/// the namespace), then the outer `bwrap`. Killing only the outer one is not enough: its init
/// does not reliably die with it and would be left running with the container under it.
fn kill_tree(bwrap_pid: u32) {
    for child in children_of(bwrap_pid) {
        let _ = kill(Pid::from_raw(child as i32), Signal::SIGKILL);
    }
    let _ = kill(Pid::from_raw(bwrap_pid as i32), Signal::SIGKILL);
}

fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The host PID of the container command: the child of bwrap's namespace init.
fn command_pid(bwrap_pid: u32) -> Option<u32> {
    let children = |pid: u32| -> Option<u32> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
        text.split_whitespace().next()?.parse().ok()
    };
    let init = children(bwrap_pid)?;
    children(init)
}

/// Whether `pid` is a `bwrap` we started for `state_dir` (its command line carries the marker).
pub(crate) fn is_our_sandbox(pid: u32, state_dir: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let is_bwrap = args.first().is_some_and(|a| a.ends_with(b"bwrap"));
    let state = state_dir.as_os_str().as_encoded_bytes();
    let marked = args
        .windows(2)
        .any(|w| w[0] == STATE_MARKER_ENV.as_bytes() && w[1] == state);
    is_bwrap && marked
}

/// The state directory named by the marker on a `bwrap` command line, if `pid` is one of ours.
pub(crate) fn sandbox_state_dir(pid: u32) -> Option<PathBuf> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    if !args.first()?.ends_with(b"bwrap") {
        return None;
    }
    let value = args
        .windows(2)
        .find(|w| w[0] == STATE_MARKER_ENV.as_bytes())?[1];
    Some(PathBuf::from(String::from_utf8_lossy(value).into_owned()))
}

/// Every live process carrying `state_dir`'s marker: the outer `bwrap` of each sandbox and
/// exec probe of that node, and each namespace init (a fork of `bwrap`, same command line).
pub(crate) fn marked_processes(state_dir: &Path) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| sandbox_state_dir(*pid).as_deref() == Some(state_dir))
        .collect()
}

impl Sandboxes {
    /// Sandboxes recorded under `<state_dir>/sandboxes/`.
    pub fn new(state_dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(state_dir.join("sandboxes"))?;
        Ok(Self {
            state_dir: state_dir.to_path_buf(),
            live: Arc::default(),
        })
    }

    /// PIDs of the outer `bwrap` of every live sandbox.
    pub fn live_pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.lock().pids.iter().copied().collect();
        pids.sort();
        pids
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Spawns `cmd` and records its PID, under the lock `kill_all` takes (see [`Live`]).
    fn start(
        &self,
        cmd: &mut tokio::process::Command,
        argv: &[String],
    ) -> Result<(tokio::process::Child, u32), SandboxError> {
        let mut live = self.lock();
        if live.closed {
            return Err(SandboxError::Closed);
        }
        let child = cmd.spawn().map_err(|source| SandboxError::Spawn {
            argv: argv.to_vec(),
            source,
        })?;
        let pid = child.id().unwrap_or_default();
        live.pids.insert(pid);
        Ok((child, pid))
    }

    fn command(&self, spec: &SandboxSpec) -> Result<tokio::process::Command, SandboxError> {
        if spec.argv.is_empty() {
            return Err(SandboxError::NoCommand);
        }
        let mut cmd = tokio::process::Command::new("bwrap");
        cmd.args([
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-ipc",
            "--new-session",
            "--ro-bind",
            "/usr",
            "/usr",
        ]);
        match &spec.bin_dir {
            Some(dir) => {
                cmd.arg("--ro-bind").arg(dir).arg("/bin");
            }
            None => {
                cmd.args(["--symlink", "usr/bin", "/bin"]);
            }
        }
        cmd.args(["--symlink", "usr/lib", "/lib"]);
        if Path::new("/lib64").exists() {
            cmd.args(["--symlink", "usr/lib64", "/lib64"]);
        }
        cmd.args([
            "--symlink",
            "usr/sbin",
            "/sbin",
            "--ro-bind",
            "/etc",
            "/etc",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
        ]);
        match &spec.tmp_dir {
            Some(dir) => {
                cmd.arg("--bind").arg(dir).arg("/tmp");
            }
            None => {
                cmd.args(["--tmpfs", "/tmp"]);
            }
        }
        if let Some(hostname) = &spec.hostname {
            cmd.args(["--unshare-uts", "--hostname"]).arg(hostname);
        }
        for exe in &spec.executables {
            if !exe.starts_with("/usr") {
                cmd.arg("--ro-bind").arg(exe).arg(exe);
            }
        }
        for bind in &spec.binds {
            let flag = if bind.read_only {
                "--ro-bind"
            } else {
                "--bind"
            };
            cmd.arg(flag).arg(&bind.source).arg(&bind.dest);
        }
        if let Some(file) = &spec.resolv_conf {
            cmd.arg("--ro-bind").arg(file).arg(resolv_conf_dest());
        }
        cmd.arg("--chdir")
            .arg(spec.workdir.as_deref().unwrap_or("/"));
        cmd.arg("--setenv")
            .arg(STATE_MARKER_ENV)
            .arg(&self.state_dir);
        cmd.arg("--").args(&spec.argv);
        cmd.env_clear();
        cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::null());
        cmd.kill_on_drop(false);
        Ok(cmd)
    }

    /// Starts `spec` with stdout and stderr appended to `log`.
    pub fn spawn(&self, spec: &SandboxSpec, log: &Path) -> Result<SandboxHandle, SandboxError> {
        let mut cmd = self.command(spec)?;
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).map_err(|source| SandboxError::Log {
                path: log.to_path_buf(),
                source,
            })?;
        }
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|source| SandboxError::Log {
                path: log.to_path_buf(),
                source,
            })?;
        let err = out.try_clone().map_err(|source| SandboxError::Log {
            path: log.to_path_buf(),
            source,
        })?;
        cmd.stdout(out).stderr(err);
        let (mut child, pid) = self.start(&mut cmd, &spec.argv)?;
        let record = self.state_dir.join("sandboxes").join(pid.to_string());
        let _ = std::fs::write(&record, spec.argv.join(" "));
        let (tx, rx) = watch::channel(None);
        let live = self.live.clone();
        tokio::spawn(async move {
            let code = match child.wait().await {
                Ok(status) => exit_code(status),
                Err(_) => 137,
            };
            live.lock()
                .unwrap_or_else(|e| e.into_inner())
                .pids
                .remove(&pid);
            let _ = std::fs::remove_file(&record);
            let _ = tx.send(Some(code));
        });
        tracing::debug!(pid, argv = ?spec.argv, "sandbox started");
        Ok(SandboxHandle { pid, exit: rx })
    }

    /// Runs `spec` to completion (an exec probe), killing it after `timeout`.
    pub async fn exec(
        &self,
        spec: &SandboxSpec,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        let mut cmd = self.command(spec)?;
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        // Not tokio's kill-on-drop: it would SIGKILL only the outer `bwrap`, and its namespace
        // init does not reliably die with it. The guard kills the tree (init first).
        cmd.kill_on_drop(false);
        let (child, pid) = self.start(&mut cmd, &spec.argv)?;
        let mut guard = ProbeGuard {
            pid,
            live: self.live.clone(),
            reaped: false,
        };
        let waited = tokio::time::timeout(timeout, child.wait_with_output()).await;
        guard.reaped = matches!(waited, Ok(Ok(_)));
        drop(guard);
        match waited {
            Ok(Ok(output)) => {
                let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&output.stderr));
                Ok(ExecOutput {
                    exit_code: Some(exit_code(output.status)),
                    output: text,
                })
            }
            Ok(Err(source)) => Err(SandboxError::Spawn {
                argv: spec.argv.clone(),
                source,
            }),
            // The guard has killed the tree.
            Err(_) => Ok(ExecOutput {
                exit_code: None,
                output: format!("command timed out after {timeout:?}"),
            }),
        }
    }

    /// Starts `argv` inside a running sandbox, in its mount, UTS, IPC and PID namespaces, with
    /// its root, the container's environment and working directory (what `kubectl exec`
    /// gets from a container runtime). The process tree ends when the returned
    /// [`EnteredProcess`] is dropped before it exits.
    pub fn enter(
        &self,
        handle: &SandboxHandle,
        spec: &SandboxSpec,
        argv: &[String],
        stdio: EnterStdio,
    ) -> Result<EnteredProcess, EnterError> {
        if argv.is_empty() {
            return Err(EnterError::NoCommand);
        }
        // bwrap's PID-namespace init holds every namespace of the container.
        let init = match handle.exit_code() {
            Some(_) => None,
            None => children_of(handle.pid).first().copied(),
        }
        .ok_or(EnterError::NotRunning)?;
        let mut cmd = tokio::process::Command::new("nsenter");
        cmd.arg(format!("--target={init}"))
            .args(["--mount", "--uts", "--ipc", "--pid", "--root"])
            .arg(format!("--wdns={}", spec.workdir.as_deref().unwrap_or("/")))
            .arg("--")
            .args(argv);
        cmd.env_clear();
        cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
        cmd.env(STATE_MARKER_ENV, &self.state_dir);
        let piped = |wanted: bool| {
            if wanted {
                Stdio::piped()
            } else {
                Stdio::null()
            }
        };
        let spawn_error = |source| EnterError::Spawn {
            argv: argv.to_vec(),
            source,
        };
        cmd.stdin(piped(stdio.stdin));
        // With a TTY the client gets one stream; without a PTY here, one pipe stands in.
        let output = if stdio.merged_output {
            let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
            cmd.stdout(writer.try_clone().map_err(spawn_error)?)
                .stderr(writer);
            Some(reader)
        } else {
            cmd.stdout(piped(stdio.stdout)).stderr(piped(stdio.stderr));
            None
        };
        cmd.kill_on_drop(true);
        let child = cmd.spawn().map_err(spawn_error)?;
        // Our copies of the pipe's write end must close, or the reader never sees its end.
        drop(cmd);
        let merged_output = output
            .map(|reader| {
                tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))
            })
            .transpose()
            .map_err(spawn_error)?;
        let pid = child.id().unwrap_or_default();
        tracing::debug!(
            pid,
            sandbox = handle.pid,
            ?argv,
            "process entered a sandbox"
        );
        Ok(EnteredProcess {
            tree: TreeGuard { root: Some(pid) },
            child,
            merged_output,
        })
    }

    /// SIGKILLs every live sandbox and exec probe now (Drop of the cluster; no grace), and
    /// refuses every later start.
    ///
    /// A sandbox killed while `bwrap` was still setting it up can leave its namespace init
    /// behind (it keeps `bwrap`'s command line, marker included), so the recorded PIDs are
    /// followed by sweeps of every process carrying this node's marker.
    pub fn kill_all(&self) {
        let pids: Vec<u32> = {
            let mut live = self.lock();
            live.closed = true;
            live.pids.drain().collect()
        };
        for pid in pids {
            if is_our_sandbox(pid, &self.state_dir) {
                kill_tree(pid);
            }
            let _ = std::fs::remove_file(self.state_dir.join("sandboxes").join(pid.to_string()));
        }
        // SIGKILL stops any further fork, so what a sweep finds is all there will be; a few
        // rounds cover a process caught mid-fork by the previous one.
        for _ in 0..3 {
            let left = marked_processes(&self.state_dir);
            if left.is_empty() {
                break;
            }
            for pid in left {
                tracing::debug!(pid, "killing a sandbox process the recorded PIDs missed");
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
        }
    }
}

/// An exec probe's outer `bwrap`: its tree is killed when the probe is dropped (timeout, or
/// the kubelet task aborted) before it was reaped, and its PID leaves the live set either way.
struct ProbeGuard {
    pid: u32,
    live: Arc<Mutex<Live>>,
    reaped: bool,
}

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        // Still in the set: `kill_all` has not taken it, so it is ours to end.
        if live.pids.remove(&self.pid) && !self.reaped {
            kill_tree(self.pid);
        }
    }
}

/// Which standard streams an entered process gets as pipes (the others are `/dev/null`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnterStdio {
    /// A pipe into the process's stdin.
    pub stdin: bool,
    /// A pipe from the process's stdout.
    pub stdout: bool,
    /// A pipe from the process's stderr.
    pub stderr: bool,
    /// stdout and stderr into one pipe ([`EnteredProcess::merged_output`]), as a terminal
    /// would merge them (`kubectl exec -t`); `stdout` and `stderr` are then ignored.
    pub merged_output: bool,
}

/// Why a process could not be started inside a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum EnterError {
    /// The sandbox has ended (or has not set its namespaces up yet).
    #[error("the container is not running")]
    NotRunning,
    /// No command was given.
    #[error("no command given")]
    NoCommand,
    /// `nsenter` could not be executed.
    #[error("cannot start nsenter for {argv:?}: {source} (install Debian package `util-linux`)")]
    Spawn {
        /// The `nsenter` command line.
        argv: Vec<String>,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A process started inside a sandbox by [`Sandboxes::enter`]. Dropping it before
/// [`EnteredProcess::wait`] returns kills it and every process it started.
#[derive(Debug)]
pub struct EnteredProcess {
    // Dropped first (fields drop in order): the tree is walked while `nsenter` still holds
    // it; killing `nsenter` first (the child's kill-on-drop) would orphan its descendants.
    tree: TreeGuard,
    /// The `nsenter` child (its pipes are the process's standard streams).
    pub child: tokio::process::Child,
    /// stdout and stderr together, when [`EnterStdio::merged_output`] was asked for.
    pub merged_output: Option<tokio::net::unix::pipe::Receiver>,
}

impl EnteredProcess {
    /// Waits for the process to end: its exit code (128 + signal when killed).
    pub async fn wait(mut self) -> std::io::Result<i32> {
        let status = self.child.wait().await?;
        // Reaped: the PID may be reused, so the guard must not kill by it any more.
        self.tree.root = None;
        Ok(exit_code(status))
    }
}

/// Kills a process and all its descendants on drop (unless disarmed).
#[derive(Debug)]
struct TreeGuard {
    root: Option<u32>,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if let Some(root) = self.root.take() {
            kill_descendants_and(root);
        }
    }
}

/// SIGKILLs `root` and every descendant. The tree is collected first and the processes are
/// stopped before they are killed, so none is reparented (and lost) half-way.
fn kill_descendants_and(root: u32) {
    let mut tree = vec![root];
    let mut seen = 0;
    // Stop what is found, then look again: a process forking meanwhile is found next round.
    while seen < tree.len() {
        let batch: Vec<u32> = tree[seen..].to_vec();
        seen = tree.len();
        for pid in batch {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGSTOP);
            for child in all_children_of(pid) {
                if !tree.contains(&child) {
                    tree.push(child);
                }
            }
        }
    }
    for pid in tree {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
}

/// Children of every thread of `pid`.
fn all_children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|c| c.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(255)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(script: &str) -> SandboxSpec {
        SandboxSpec {
            argv: vec![
                "/usr/bin/busybox".into(),
                "sh".into(),
                "-c".into(),
                script.into(),
            ],
            env: vec![("GREETING".into(), "hello".into())],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn runs_binds_and_reports_exit_codes() {
        let state = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let sandboxes = Sandboxes::new(state.path()).unwrap();
        let mut s = spec("echo $GREETING > /data/out; cd /data && pwd; exit 3");
        s.binds.push(Bind {
            source: data.path().to_path_buf(),
            dest: "/data".into(),
            read_only: false,
        });
        let log = state.path().join("log/0.log");
        let handle = sandboxes.spawn(&s, &log).unwrap();
        assert_eq!(handle.wait().await, 3);
        assert_eq!(
            std::fs::read_to_string(data.path().join("out")).unwrap(),
            "hello\n"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "/data\n");
        assert!(sandboxes.live_pids().is_empty());
    }

    #[tokio::test]
    async fn read_only_bind_refuses_writes() {
        let state = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let sandboxes = Sandboxes::new(state.path()).unwrap();
        let mut s = spec("echo x > /data/out");
        s.binds.push(Bind {
            source: data.path().to_path_buf(),
            dest: "/data".into(),
            read_only: true,
        });
        let out = sandboxes.exec(&s, Duration::from_secs(10)).await.unwrap();
        assert_ne!(out.exit_code, Some(0), "write to read-only bind succeeded");
        assert!(!data.path().join("out").exists());
    }

    #[tokio::test]
    async fn stop_sends_sigterm_then_sigkill() {
        let state = tempfile::tempdir().unwrap();
        let sandboxes = Sandboxes::new(state.path()).unwrap();
        let log = state.path().join("a.log");
        // Handles SIGTERM: exits 0 after a message.
        let polite = sandboxes
            .spawn(
                &spec("trap 'echo bye; exit 0' TERM; echo up; while true; do sleep 0.1; done"),
                &log,
            )
            .unwrap();
        wait_for_log(&log, "up").await;
        assert_eq!(polite.stop(Duration::from_secs(10)).await, 0);
        assert!(std::fs::read_to_string(&log).unwrap().contains("bye"));
        // Ignores SIGTERM: killed after the grace period.
        let log2 = state.path().join("b.log");
        let stubborn = sandboxes
            .spawn(
                &spec("trap '' TERM; echo up; while true; do sleep 0.1; done"),
                &log2,
            )
            .unwrap();
        wait_for_log(&log2, "up").await;
        assert_eq!(stubborn.stop(Duration::from_millis(300)).await, 137);
        assert!(
            std::fs::read_dir(state.path().join("sandboxes"))
                .unwrap()
                .next()
                .is_none()
        );
    }

    /// Live processes carrying `state` as their sandbox marker (outer bwrap and init).
    fn marked(state: &Path) -> Vec<u32> {
        let needle = state.as_os_str().as_encoded_bytes();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
                    && std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == needle))
            })
            .collect()
    }

    #[tokio::test]
    async fn stopping_right_after_the_start_leaves_no_process() {
        let state = tempfile::tempdir().unwrap();
        let sandboxes = Sandboxes::new(state.path()).unwrap();
        for grace in [Duration::ZERO, Duration::from_secs(2)] {
            let handle = sandboxes
                .spawn(&spec("exec sleep 3600"), &state.path().join("x.log"))
                .unwrap();
            handle.stop(grace).await;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !marked(state.path()).is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            marked(state.path()),
            Vec::<u32>::new(),
            "sandbox processes left running"
        );
    }

    /// Polls `check` (bounded, 30 s) until it holds; panics with the last observation.
    async fn eventually(what: &str, mut check: impl FnMut() -> (bool, String)) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let (done, seen) = check();
            if done {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what} not observed within 30 s; last observed: {seen}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn kill_all_ends_every_sandbox_and_probe_and_refuses_new_ones() {
        let state = tempfile::tempdir().unwrap();
        let sandboxes = Sandboxes::new(state.path()).unwrap();
        let forever = "echo up; while true; do sleep 0.1; done";
        let log = state.path().join("a.log");
        let running = sandboxes.spawn(&spec(forever), &log).unwrap();
        wait_for_log(&log, "up").await;
        let probing = sandboxes.clone();
        let probe =
            tokio::spawn(
                async move { probing.exec(&spec(forever), Duration::from_secs(600)).await },
            );
        eventually("the probe recorded beside the sandbox", || {
            let live = sandboxes.live_pids();
            (live.len() == 2, format!("live {live:?}"))
        })
        .await;
        // One more, killed while `bwrap` is most likely still setting it up.
        let fresh = sandboxes
            .spawn(&spec(forever), &state.path().join("b.log"))
            .unwrap();
        sandboxes.kill_all();

        assert!(matches!(
            sandboxes.spawn(&spec("true"), &state.path().join("c.log")),
            Err(SandboxError::Closed)
        ));
        assert!(matches!(
            sandboxes.exec(&spec("true"), Duration::from_secs(5)).await,
            Err(SandboxError::Closed)
        ));
        assert_eq!(running.wait().await, 137);
        fresh.wait().await;
        let probed = probe.await.unwrap().unwrap();
        assert_eq!(probed.exit_code, Some(137), "{probed:?}");
        eventually("every process carrying the node's marker ending", || {
            let left = marked_processes(state.path());
            (left.is_empty(), format!("still running: {left:?}"))
        })
        .await;
        assert!(sandboxes.live_pids().is_empty());
    }

    #[tokio::test]
    async fn a_probe_dropped_mid_run_ends_its_whole_tree() {
        let state = tempfile::tempdir().unwrap();
        let sandboxes = Sandboxes::new(state.path()).unwrap();
        let marker = state.path().join("started");
        let mut s = spec("touch /state/started; while true; do sleep 0.1; done");
        s.binds.push(Bind {
            source: state.path().to_path_buf(),
            dest: "/state".into(),
            read_only: false,
        });
        let probing = sandboxes.clone();
        let probe = tokio::spawn(async move { probing.exec(&s, Duration::from_secs(600)).await });
        eventually("the probe's command starting", || {
            (marker.exists(), "no marker file yet".into())
        })
        .await;
        probe.abort();
        assert!(probe.await.unwrap_err().is_cancelled());
        eventually("the aborted probe's processes ending", || {
            let left = marked_processes(state.path());
            (left.is_empty(), format!("still running: {left:?}"))
        })
        .await;
        assert!(sandboxes.live_pids().is_empty());
    }

    async fn wait_for_log(path: &Path, needle: &str) {
        for _ in 0..200 {
            if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "log {} never contained {needle:?}; it holds {:?}",
            path.display(),
            std::fs::read_to_string(path)
        );
    }
}
