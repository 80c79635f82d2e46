//! The owner registry: which process runs which embedded cluster, so a start after a crash
//! can end the sandboxes the dead run left behind.
//!
//! `$TMPDIR/rehearsal-embedded/owners/<pid>-<n>` names the state directory of cluster `n` of
//! process `pid` and that process' start time (PIDs are reused). `bwrap --die-with-parent`
//! already ends sandboxes when their cluster dies; this sweep is the second line of defence,
//! for a sandbox that escaped it (for instance a re-parented one).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::sandbox::{is_our_sandbox, sandbox_state_dir};

/// The directory all embedded clusters of this machine share.
pub fn root_dir() -> PathBuf {
    std::env::temp_dir().join("rehearsal-embedded")
}

/// A registered owner record; removing it (on shutdown) unregisters the cluster.
#[derive(Debug)]
pub struct OwnerRecord {
    path: PathBuf,
}

impl OwnerRecord {
    /// Registers this process as the owner of `state_dir`.
    pub fn register(state_dir: &Path, remove_state: bool) -> std::io::Result<Self> {
        static SEQUENCE: AtomicU32 = AtomicU32::new(0);
        let dir = root_dir().join("owners");
        std::fs::create_dir_all(&dir)?;
        let pid = std::process::id();
        let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{pid}-{n}"));
        let start = start_time(pid).unwrap_or_default();
        std::fs::write(
            &path,
            format!(
                "{start}\n{}\n{}\n",
                if remove_state { "remove" } else { "keep" },
                state_dir.display()
            ),
        )?;
        Ok(Self { path })
    }

    /// Removes the record.
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What [`reap_dead_owners`] ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// Sandbox PIDs killed.
    pub killed: Vec<u32>,
    /// State directories removed.
    pub removed: Vec<PathBuf>,
}

/// The process' start time (field 22 of `/proc/<pid>/stat`), to tell a reused PID apart.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn owner_alive(pid: u32, start: u64) -> bool {
    if kill(Pid::from_raw(pid as i32), None).is_err() {
        return false;
    }
    start == 0 || start_time(pid) == Some(start)
}

/// Kills every marked sandbox process whose cluster is dead: the PID-namespace inits a dead
/// run's `bwrap` left behind (they keep the `bwrap` command line, marker included) and
/// anything not recorded in time. Dead means: the state directory of an owner found dead in
/// this sweep (`dead`), or a default state directory (under [`root_dir`]) no live owner
/// holds. A cluster registers its owner record before it starts any sandbox, so a live
/// cluster's processes are never touched, nor sandboxes started outside a cluster.
fn reap_orphans(dead: &[PathBuf], reaped: &mut Reaped) {
    let live: Vec<PathBuf> = live_owner_state_dirs();
    let root = root_dir();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in procs.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some(state) = sandbox_state_dir(pid)
            && !live.contains(&state)
            && (dead.contains(&state) || state.starts_with(&root))
            // Re-read the records: a cluster may have registered since the list was taken.
            && !live_owner_state_dirs().contains(&state)
        {
            tracing::warn!(pid, state = %state.display(), "killing sandbox process of a dead cluster");
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            reaped.killed.push(pid);
        }
    }
}

fn live_owner_state_dirs() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root_dir().join("owners")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').next()?.parse::<u32>().ok()?;
            let text = std::fs::read_to_string(entry.path()).ok()?;
            let mut lines = text.lines();
            let start: u64 = lines.next()?.parse().ok()?;
            let _mode = lines.next()?;
            let dir = PathBuf::from(lines.next()?);
            owner_alive(pid, start).then_some(dir)
        })
        .collect()
}

/// For every registered owner that is dead: kills its recorded sandboxes (after checking each
/// PID really is our `bwrap`), removes its state directory if it was a temporary one, and
/// drops the record.
pub fn reap_dead_owners() -> Reaped {
    let mut reaped = Reaped::default();
    let mut dead: Vec<PathBuf> = Vec::new();
    let Ok(entries) = std::fs::read_dir(root_dir().join("owners")) else {
        return reaped;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let mut lines = text.lines();
        let start: u64 = lines.next().and_then(|l| l.parse().ok()).unwrap_or(0);
        let remove_state = lines.next() == Some("remove");
        let Some(state_dir) = lines.next().map(PathBuf::from) else {
            continue;
        };
        if owner_alive(pid, start) {
            continue;
        }
        dead.push(state_dir.clone());
        if let Ok(records) = std::fs::read_dir(state_dir.join("sandboxes")) {
            for record in records.flatten() {
                let Ok(sandbox) = record.file_name().to_string_lossy().parse::<u32>() else {
                    continue;
                };
                if is_our_sandbox(sandbox, &state_dir) {
                    tracing::warn!(
                        sandbox,
                        owner = pid,
                        "killing sandbox left by a dead cluster"
                    );
                    let _ = kill(Pid::from_raw(sandbox as i32), Signal::SIGKILL);
                    reaped.killed.push(sandbox);
                }
                let _ = std::fs::remove_file(record.path());
            }
        }
        if remove_state && std::fs::remove_dir_all(&state_dir).is_ok() {
            reaped.removed.push(state_dir);
        }
        let _ = std::fs::remove_file(entry.path());
    }
    reap_orphans(&dead, &mut reaped);
    sweep_unowned(&root_dir(), &mut reaped);
    reaped
}

/// The creating process of a default directory under [`root_dir`] (`cluster-<pid>-<id>` of a
/// cluster, `rest-server-<pid>-<id>` of a process' shared REST server), from its name.
fn creator_of(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("cluster-")
        .or_else(|| name.strip_prefix("rest-server-"))?;
    let (pid, id) = rest.split_once('-')?;
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// Removes default directories under `root` whose creating process no longer exists and that
/// no owner record names any more (a process that died before its record was written, or
/// after it was removed). A directory of a live process, or of a PID now reused, is left.
fn sweep_unowned(root: &Path, reaped: &mut Reaped) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = creator_of(&name) else {
            continue;
        };
        if kill(Pid::from_raw(pid as i32), None) != Err(nix::errno::Errno::ESRCH) {
            continue;
        }
        let dir = entry.path();
        if std::fs::remove_dir_all(&dir).is_ok() {
            tracing::warn!(dir = %dir.display(), "removed the state of a dead process");
            reaped.removed.push(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_default_directory_names_name_a_creator() {
        assert_eq!(creator_of("cluster-4548-a94c04fc"), Some(4548));
        assert_eq!(creator_of("rest-server-17-0123abcd"), Some(17));
        for other in [
            "owners",
            "images",
            "ip-blocks",
            "cluster-x-ab",
            "cluster-12-",
            "cluster-12-zz",
            "mine",
        ] {
            assert_eq!(creator_of(other), None, "{other}");
        }
    }

    /// A dead process' directory goes; a live one's, and anything not named like a default
    /// directory, stay.
    #[test]
    fn directories_of_dead_processes_are_swept() {
        let root = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dead_dir = root.path().join(format!("cluster-{dead}-0123abcd"));
        let dead_rest = root.path().join(format!("rest-server-{dead}-0123abcd"));
        let live_dir = root
            .path()
            .join(format!("cluster-{}-0123abcd", std::process::id()));
        let other = root.path().join(format!("kept-{dead}-0123abcd"));
        for dir in [&dead_dir, &dead_rest, &live_dir, &other] {
            std::fs::create_dir_all(dir.join("sandboxes")).unwrap();
        }
        let mut reaped = Reaped::default();
        sweep_unowned(root.path(), &mut reaped);
        assert!(!dead_dir.exists() && !dead_rest.exists());
        assert!(live_dir.exists() && other.exists());
        reaped.removed.sort();
        assert_eq!(reaped.removed, vec![dead_dir, dead_rest]);
    }
}
