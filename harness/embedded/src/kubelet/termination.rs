//! Termination messages, as the kubelet reads them when a container exits: the file at the
//! container's `terminationMessagePath` (bound into the sandbox, empty at each start), at most
//! 4096 bytes from its end; with `terminationMessagePolicy: FallbackToLogsOnError` and a
//! failed container whose file is empty, the tail of its log instead (the last 80 lines, then
//! of those the last 2048 bytes). All containers of a pod share 12 KiB: with more than three,
//! each gets an equal part.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Container;

use crate::sandbox::Bind;

/// The kubelet's per-container limit on the termination message file.
pub const MAX_CONTAINER_BYTES: usize = 4 * 1024;
/// The kubelet's limit on the termination messages of all containers of one pod.
pub const MAX_POD_BYTES: usize = 12 * 1024;
/// `FallbackToLogsOnError` reads at most this many lines from the end of the log ...
pub const MAX_LOG_LINES: usize = 80;
/// ... and of those, at most this many bytes from the end.
pub const MAX_LOG_BYTES: usize = 2048;

/// The API's default `terminationMessagePath`.
pub const DEFAULT_PATH: &str = "/dev/termination-log";

/// Where one container start's termination message lives, on the host and in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageFile {
    /// The host file, created empty before the container starts.
    pub host: PathBuf,
    /// Read the log when the file is empty and the container failed.
    pub fallback_to_logs: bool,
}

/// The per-container limit in a pod of `containers` containers (init containers included).
pub fn limit(containers: usize) -> usize {
    MAX_CONTAINER_BYTES.min(MAX_POD_BYTES / containers.max(1))
}

/// Creates the empty message file of start number `starts` of `container` under the pod's
/// directory and returns it with the bind that puts it at the container's path. A container
/// with an empty or relative path gets none (the API server rejects such paths; the kubelet
/// mounts nothing for them).
pub fn prepare(
    pod_dir: &Path,
    container: &Container,
    starts: u32,
) -> std::io::Result<Option<(MessageFile, Bind)>> {
    let path = container
        .termination_message_path
        .as_deref()
        .unwrap_or(DEFAULT_PATH);
    if !path.starts_with('/') {
        return Ok(None);
    }
    let dir = pod_dir.join(&container.name);
    std::fs::create_dir_all(&dir)?;
    let host = dir.join(format!("{starts}.termination-log"));
    std::fs::write(&host, b"")?;
    let fallback_to_logs =
        container.termination_message_policy.as_deref() == Some("FallbackToLogsOnError");
    let bind = Bind {
        source: host.clone(),
        dest: path.to_string(),
        read_only: false,
    };
    Ok(Some((
        MessageFile {
            host,
            fallback_to_logs,
        },
        bind,
    )))
}

/// The message of an exited container: its file's tail, or (fallback, failed, file empty)
/// its log's tail; `None` when there is nothing to report.
pub fn read(file: &MessageFile, log: &Path, exit_code: i32, limit: usize) -> Option<String> {
    let from_file = match read_tail(&file.host, limit.min(MAX_CONTAINER_BYTES)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Some(format!(
                "Error on reading termination log {}: {e}",
                file.host.display()
            ));
        }
    };
    let bytes = if from_file.is_empty() && file.fallback_to_logs && exit_code != 0 {
        log_tail(&std::fs::read(log).unwrap_or_default())
    } else {
        from_file
    };
    (!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned())
}

/// At most `max` bytes from the end of the file at `path`.
fn read_tail(path: &Path, max: usize) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max as u64);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    file.take(max as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The fallback message: the last [`MAX_LOG_LINES`] lines of `log`, then the last
/// [`MAX_LOG_BYTES`] bytes of those.
pub fn log_tail(log: &[u8]) -> Vec<u8> {
    let lines = &log[super::logs::tail_offset(log, MAX_LOG_LINES)..];
    lines[lines.len().saturating_sub(MAX_LOG_BYTES)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(path: Option<&str>, policy: Option<&str>) -> Container {
        Container {
            name: "main".into(),
            termination_message_path: path.map(str::to_string),
            termination_message_policy: policy.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn the_pod_limit_is_shared_once_there_are_more_than_three_containers() {
        assert_eq!(limit(1), 4096);
        assert_eq!(limit(3), 4096);
        assert_eq!(limit(4), 3072);
        assert_eq!(limit(12), 1024);
    }

    #[test]
    fn the_log_fallback_keeps_80_lines_then_2048_bytes() {
        let many: Vec<u8> = (0..200)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let tail = String::from_utf8(log_tail(&many)).unwrap();
        assert!(tail.starts_with("line 120\n"), "{tail}");
        assert!(tail.ends_with("line 199\n"));
        assert_eq!(tail.lines().count(), 80);
        let long = vec![b'x'; 5000];
        assert_eq!(log_tail(&long).len(), 2048);
    }

    #[test]
    fn file_tail_log_fallback_and_success_follow_the_policy() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("0.log");
        std::fs::write(&log, b"boom\n").unwrap();
        let (file, bind) = prepare(dir.path(), &container(None, None), 0)
            .unwrap()
            .unwrap();
        assert_eq!(bind.dest, DEFAULT_PATH);
        assert!(!file.fallback_to_logs);
        assert_eq!(
            read(&file, &log, 1, 4096),
            None,
            "File policy never reads the log"
        );
        let big: Vec<u8> = (0..5000u32).map(|i| b'a' + (i % 26) as u8).collect();
        std::fs::write(&file.host, &big).unwrap();
        let message = read(&file, &log, 0, 4096).unwrap();
        assert_eq!(
            message.as_bytes(),
            &big[5000 - 4096..],
            "the file's last 4096 bytes"
        );
        assert_eq!(read(&file, &log, 0, 1024).unwrap().len(), 1024);

        let (file, _) = prepare(
            dir.path(),
            &container(Some("/tmp/result"), Some("FallbackToLogsOnError")),
            1,
        )
        .unwrap()
        .unwrap();
        assert!(file.fallback_to_logs);
        assert_eq!(
            read(&file, &log, 0, 4096),
            None,
            "success never reads the log"
        );
        assert_eq!(read(&file, &log, 2, 4096).as_deref(), Some("boom\n"));
        std::fs::write(&file.host, b"from file").unwrap();
        assert_eq!(read(&file, &log, 2, 4096).as_deref(), Some("from file"));
        assert!(
            prepare(dir.path(), &container(Some("relative"), None), 2)
                .unwrap()
                .is_none()
        );
    }
}
