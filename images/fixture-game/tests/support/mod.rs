//! Shared test support: spawn the real `fixture-game` binary on free ports in a tempdir, wait
//! for observable conditions with a bound, and kill every child on drop (and on our death).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub const PASSWORD: &str = "test-secret";
pub const START: Duration = Duration::from_secs(20);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fixture-game")
}

/// A `fixture-game` command whose child dies with the test process.
pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    // Settings come from flags only, never from the environment the tests run in.
    for (key, _) in std::env::vars() {
        if key.starts_with("FIXTURE_") {
            cmd.env_remove(key);
        }
    }
    cmd.args(args)
        .env("RUST_LOG", "warn")
        .env_remove("RCON_PASSWORD")
        .env_remove("RCON_PASSWORD_FILE")
        .env_remove("POD_IP")
        .env_remove("POD_UID")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; it only arranges SIGKILL when the parent dies.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

/// A running child with its stdout lines on a channel; killed on drop.
pub struct Proc {
    pub child: Child,
    lines: Receiver<String>,
    pub seen: Vec<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// The stderr reader, joined once the process exited so `stderr()` holds all of it.
    stderr_reader: Option<std::thread::JoinHandle<()>>,
}

impl Proc {
    pub fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd.spawn().expect("spawn fixture-game");
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr_text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr piped");
        let sink = stderr_text.clone();
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Proc {
            child,
            lines: rx,
            seen: Vec::new(),
            stderr: stderr_text,
            stderr_reader: Some(stderr_reader),
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait for a stdout line matching `pred`, reporting what was seen on timeout.
    pub fn wait_line(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no stdout line for {what} within {timeout:?}; stdout so far: {:?}; stderr: {}",
                    self.seen,
                    self.stderr()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "process exited before {what}; stdout: {:?}; stderr: {}",
                    self.seen,
                    self.stderr()
                ),
            }
        }
    }

    /// Wait for the process to exit (its stdout closes), bounded.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "process still running after {timeout:?}; stdout: {:?}; stderr: {}",
                    self.seen,
                    self.stderr()
                ),
            }
        }
        let status = self.child.wait().expect("wait for child");
        // The process is gone, so its stderr ends: read it to the end before anyone looks.
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
        status
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running game server.
pub struct Game {
    pub proc: Proc,
    pub data: PathBuf,
    pub game: SocketAddr,
    pub rcon: SocketAddr,
    pub incarnation: String,
}

/// Start `fixture-game serve` on free ports with `data` as its data directory.
pub fn serve(data: &Path, args: &[&str], envs: &[(&str, &str)]) -> Game {
    let mut cmd = serve_command(data, args, envs);
    cmd.env("RCON_PASSWORD", PASSWORD);
    let mut proc = Proc::spawn(cmd);
    let line = proc.wait_line("the listening line", START, |l| {
        l.contains("\"event\":\"listening\"")
    });
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    Game {
        game: v["game"].as_str().unwrap().parse().unwrap(),
        rcon: v["rcon"].as_str().unwrap().parse().unwrap(),
        incarnation: v["incarnation"].as_str().unwrap().to_owned(),
        data: data.to_owned(),
        proc,
    }
}

/// The `serve` command without spawning it (for tests that expect it to exit).
pub fn serve_command(data: &Path, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut cmd = command(&["serve"]);
    cmd.args(["--data-dir", data.to_str().unwrap()])
        .args([
            "--bind",
            "127.0.0.1",
            "--game-port",
            "0",
            "--rcon-port",
            "0",
        ])
        .args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

/// A running agent.
pub struct Agent {
    pub proc: Proc,
    pub addr: SocketAddr,
    pub incarnation: String,
}

/// Start `fixture-game agent` on a free port, talking RCON to `rcon`.
pub fn agent(rcon: SocketAddr, args: &[&str]) -> Agent {
    let mut cmd = command(&["agent", "--listen", "127.0.0.1", "--port", "0"]);
    cmd.args(["--rcon-addr", &rcon.to_string()])
        .args(args)
        .env("RCON_PASSWORD", PASSWORD)
        .env("FIXTURE_AGENT_RCON_TIMEOUT_MS", "3000");
    let mut proc = Proc::spawn(cmd);
    let line = proc.wait_line("the agent's listening line", START, |l| {
        l.contains("\"event\":\"listening\"")
    });
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    Agent {
        addr: v["agent"].as_str().unwrap().parse().unwrap(),
        incarnation: v["agentIncarnation"].as_str().unwrap().to_owned(),
        proc,
    }
}

/// Run `fixture-game inspect PATH…` and parse its JSON lines.
pub fn inspect(paths: &[&Path]) -> Vec<fixture_game::inspect::Inspection> {
    let out = Command::new(bin())
        .arg("inspect")
        .args(paths)
        .output()
        .expect("run inspect");
    assert!(
        out.status.success(),
        "inspect failed: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad inspect line {l:?}: {e}")))
        .collect()
}

/// Copy a directory tree (what a backup job does, without quiescing anything).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A tiny HTTP/1.1 client (one request per connection), enough for the agent and marker routes.
pub async fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw))
        .await
        .unwrap_or_else(|_| panic!("{method} {path} on {addr}: no complete response in 20s"))
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    (status, body.to_owned())
}
