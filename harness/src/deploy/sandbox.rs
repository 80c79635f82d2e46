//! Your operator command in a sandbox, as a container of its Deployment would run: `bwrap` with
//! PID and IPC namespaces of its own, the host's filesystem read-only, writes only into the
//! cluster's state directory (its kubeconfig, its ready file, `TMPDIR`), and the Secret,
//! ConfigMap and `emptyDir` volumes its Deployment mounts (from `--operator-manifests`) at their
//! `mountPath`s — so a chart's flags such as `--agent-ca-bundle=/etc/gameplane/agent-ca/ca.crt`
//! work unchanged. Killing the outer `bwrap` (SIGKILL, as `operator-restart` does) ends the
//! operator with it (`--die-with-parent`).
//!
//! A mount path under a host directory that lacks it (`/etc/gameplane/…`) cannot be created on
//! a read-only bind, so that directory is rebuilt in the sandbox: a tmpfs holding a read-only
//! bind (or the symlink) of each of its host entries, and the new mount point beside them.

use std::path::{Path, PathBuf};

use super::manifests::{Mount, MountContent};

/// A directory or file bound into the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// On the host.
    pub source: PathBuf,
    /// In the sandbox.
    pub dest: String,
    /// Bound read-only.
    pub read_only: bool,
}

/// Writes each mount's content under `dir` (`<dir>/<volume>`, created afresh) and returns the
/// binds that put it at its mount path.
pub fn materialize(mounts: &[Mount], dir: &Path) -> std::io::Result<Vec<Bound>> {
    let mut out = Vec::new();
    for m in mounts {
        let root = dir.join(&m.volume);
        if root.exists() {
            std::fs::remove_dir_all(&root)?;
        }
        std::fs::create_dir_all(&root)?;
        if let MountContent::Files(files) = &m.content {
            for (path, bytes) in files {
                let file = root.join(path);
                if let Some(parent) = file.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(file, bytes)?;
            }
        }
        let source = match &m.sub_path {
            Some(sub) => root.join(sub),
            None => root,
        };
        out.push(Bound {
            source,
            dest: m.mount_path.clone(),
            read_only: m.read_only,
        });
    }
    Ok(out)
}

/// The `bwrap` arguments (up to and including `--`) that run a command in `cwd` with the host
/// read-only, `writable` bound read-write at its own path, and `binds` on top.
pub fn bwrap_args(writable: &Path, cwd: &Path, binds: &[Bound]) -> std::io::Result<Vec<String>> {
    let mut args: Vec<String> = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // The host's top-level entries, read-only (the root itself is bwrap's tmpfs, so a mount
    // path right under it can be created).
    let skip = ["/dev", "/proc"];
    args.extend(entries_of(Path::new("/"), &skip)?);
    // Directories a mount path must be created in: rebuilt as tmpfs + their entries.
    let mut rebuilt: Vec<PathBuf> = Vec::new();
    for b in binds {
        let dest = Path::new(&b.dest);
        let mut ancestor = dest.parent();
        while let Some(a) = ancestor {
            if a.exists() || a == Path::new("/") {
                break;
            }
            ancestor = a.parent();
        }
        let Some(existing) = ancestor else { continue };
        if dest.exists() || existing == Path::new("/") || rebuilt.iter().any(|r| r == existing) {
            continue;
        }
        rebuilt.push(existing.to_path_buf());
        args.extend(["--tmpfs".to_string(), display(existing)]);
        args.extend(entries_of(existing, &[])?);
    }
    args.extend(["--bind".to_string(), display(writable), display(writable)]);
    for b in binds {
        let flag = if b.read_only { "--ro-bind" } else { "--bind" };
        args.extend([flag.to_string(), display(&b.source), b.dest.clone()]);
    }
    args.extend(["--chdir".to_string(), display(cwd), "--".to_string()]);
    Ok(args)
}

/// `argv` as a command run in the sandbox of an operator whose state is `state`: `mounts`
/// (its Deployment's volumes) written under `<state>/operator-volumes` and bound at their
/// paths, `TMPDIR` at `<state>/operator-tmp`, started in this process' working directory.
pub fn command(
    argv: &[String],
    state: &Path,
    mounts: &[Mount],
) -> std::io::Result<crate::process::Cmd> {
    let binds = materialize(mounts, &state.join("operator-volumes"))?;
    let tmp = state.join("operator-tmp");
    std::fs::create_dir_all(&tmp)?;
    let cwd = std::env::current_dir()?;
    let args = bwrap_args(state, &cwd, &binds)?;
    Ok(crate::process::Cmd::new("bwrap")
        .args(args)
        .args(argv.iter().cloned())
        .env("TMPDIR", tmp))
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// A read-only bind (or the symlink) of each entry of host directory `dir`, but `skip`.
fn entries_of(dir: &Path, skip: &[&str]) -> std::io::Result<Vec<String>> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| !skip.iter().any(|s| Path::new(s) == p))
        .collect();
    names.sort();
    let mut args = Vec::new();
    for path in names {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)?;
            args.extend(["--symlink".to_string(), display(&target), display(&path)]);
        } else if meta.is_dir() || meta.is_file() {
            args.extend(["--ro-bind".to_string(), display(&path), display(&path)]);
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(volume: &str, path: &str, files: &[(&str, &str)]) -> Mount {
        Mount {
            volume: volume.into(),
            mount_path: path.into(),
            read_only: true,
            sub_path: None,
            content: MountContent::Files(
                files
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                    .collect(),
            ),
        }
    }

    /// A real `bwrap`: the Deployment's Secret is at its mount path under a directory the host
    /// lacks, the rest of `/etc` is still there, the host is read-only, the state directory is
    /// writable, and the command runs in its own PID namespace.
    #[test]
    fn the_command_sees_its_volumes_at_their_paths_and_writes_only_its_state() {
        if crate::process::find_program("bwrap").is_err() {
            assert!(
                std::env::var("CI").is_err(),
                "CI installs bubblewrap (scripts/setup.sh)"
            );
            return;
        }
        let state = tempfile::tempdir().unwrap();
        let mounts = [mount(
            "agent-ca",
            "/etc/rehearsal-test-operator/agent-ca",
            &[("ca.crt", "CERT")],
        )];
        let binds = materialize(&mounts, &state.path().join("volumes")).unwrap();
        let args = bwrap_args(state.path(), state.path(), &binds).unwrap();
        let script = "cat /etc/rehearsal-test-operator/agent-ca/ca.crt; echo; \
                      test -e /etc/passwd && echo etc-kept; \
                      touch /usr/rehearsal-nope 2>/dev/null || echo host-read-only; \
                      touch written && echo state-writable; \
                      echo pid $$";
        let out = std::process::Command::new("bwrap")
            .args(&args)
            .args(["sh", "-c", script])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            lines[..4],
            ["CERT", "etc-kept", "host-read-only", "state-writable"],
            "{stdout}"
        );
        let pid: u32 = lines[4].trim_start_matches("pid ").parse().unwrap();
        assert!(pid < 10, "its own PID namespace: pid {pid}");
        assert!(state.path().join("written").is_file());
    }

    #[test]
    fn a_sub_path_mount_binds_that_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = mount("cfg", "/etc/app/app.yaml", &[("app.yaml", "a: 1")]);
        m.sub_path = Some("app.yaml".into());
        let binds = materialize(&[m], dir.path()).unwrap();
        assert_eq!(binds[0].source, dir.path().join("cfg/app.yaml"));
        assert_eq!(std::fs::read_to_string(&binds[0].source).unwrap(), "a: 1");
    }
}
