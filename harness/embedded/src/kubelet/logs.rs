//! Container logs: one file per container start, `<state>/pods/<uid>/<container>/<n>.log`.
//!
//! The index remembers, per pod, how many times each container has started and whether its
//! latest instance runs, which is what `previous` and `follow` need.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;

/// Why logs cannot be served (the API server turns these into 404/400 Status bodies).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogLookupError {
    /// No such pod on this node.
    #[error("{0}")]
    NotFound(String),
    /// The request cannot be served (no container name, nothing started yet, no previous).
    #[error("{0}")]
    BadRequest(String),
}

#[derive(Debug, Clone, Default)]
struct ContainerLog {
    starts: u32,
    running: bool,
    waiting: Option<String>,
}

#[derive(Debug, Clone)]
struct PodLog {
    uid: String,
    dir: PathBuf,
    /// Container names in spec order (init containers first).
    names: Vec<String>,
    /// App container names (the default container is the first of them).
    app_names: Vec<String>,
    containers: HashMap<String, ContainerLog>,
}

/// What a log request asks for.
#[derive(Debug, Clone)]
pub struct LogQuery {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container whose log is read.
    pub container: String,
    /// The previous (terminated) instance's log instead of the current one.
    pub previous: bool,
    /// Only the last this many lines.
    pub tail_lines: Option<i64>,
    /// Keep reading as the container writes.
    pub follow: bool,
}

/// Per-node index of container log files.
#[derive(Debug, Clone, Default)]
pub struct LogIndex {
    pods: Arc<Mutex<HashMap<(String, String), PodLog>>>,
}

impl LogIndex {
    /// Registers a pod the kubelet runs.
    pub fn add_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        dir: PathBuf,
        init_names: Vec<String>,
        app_names: Vec<String>,
    ) {
        let names = init_names.iter().chain(app_names.iter()).cloned().collect();
        self.lock().insert(
            (namespace.to_string(), name.to_string()),
            PodLog {
                uid: uid.to_string(),
                dir,
                names,
                app_names,
                containers: HashMap::new(),
            },
        );
    }

    /// Forgets a pod (deleted).
    pub fn remove_pod(&self, namespace: &str, name: &str, uid: &str) {
        let mut pods = self.lock();
        let key = (namespace.to_string(), name.to_string());
        if pods.get(&key).is_some_and(|p| p.uid == uid) {
            pods.remove(&key);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), PodLog>> {
        self.pods.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(
        &self,
        namespace: &str,
        name: &str,
        container: &str,
        f: impl FnOnce(&mut ContainerLog),
    ) {
        if let Some(pod) = self
            .lock()
            .get_mut(&(namespace.to_string(), name.to_string()))
        {
            f(pod.containers.entry(container.to_string()).or_default());
        }
    }

    /// A container started: its output goes to the returned file.
    pub fn started(
        &self,
        namespace: &str,
        name: &str,
        container: &str,
        dir: &std::path::Path,
        start: u32,
    ) -> PathBuf {
        self.update(namespace, name, container, |c| {
            c.starts = start + 1;
            c.running = true;
            c.waiting = None;
        });
        dir.join(container).join(format!("{start}.log"))
    }

    /// A container's process ended.
    pub fn exited(&self, namespace: &str, name: &str, container: &str) {
        self.update(namespace, name, container, |c| c.running = false);
    }

    /// A container waits to start, with this reason.
    pub fn waiting(&self, namespace: &str, name: &str, container: &str, reason: &str) {
        self.update(namespace, name, container, |c| {
            c.waiting = Some(reason.to_string())
        });
    }

    fn resolve(&self, q: &LogQuery) -> Result<(PathBuf, Option<(u32, PodLog)>), LogLookupError> {
        let pods = self.lock();
        let Some(pod) = pods.get(&(q.namespace.clone(), q.pod.clone())) else {
            return Err(LogLookupError::NotFound(format!(
                "pod {:?} in namespace {:?} is not running on this node",
                q.pod, q.namespace
            )));
        };
        let container = if q.container.is_empty() {
            if pod.app_names.len() == 1 {
                pod.app_names[0].clone()
            } else {
                return Err(LogLookupError::BadRequest(format!(
                    "a container name must be specified for pod {}, choose one of: [{}]",
                    q.pod,
                    pod.app_names.join(" ")
                )));
            }
        } else {
            q.container.clone()
        };
        if !pod.names.contains(&container) {
            return Err(LogLookupError::BadRequest(format!(
                "container {container} is not valid for pod {}",
                q.pod
            )));
        }
        let state = pod.containers.get(&container).cloned().unwrap_or_default();
        let index = if q.previous {
            if state.starts < 2 {
                return Err(LogLookupError::BadRequest(format!(
                    "previous terminated container \"{container}\" in pod \"{}\" not found",
                    q.pod
                )));
            }
            state.starts - 2
        } else {
            if state.starts == 0 {
                let reason = state
                    .waiting
                    .unwrap_or_else(|| "ContainerCreating".to_string());
                return Err(LogLookupError::BadRequest(format!(
                    "container \"{container}\" in pod \"{}\" is waiting to start: {reason}",
                    q.pod
                )));
            }
            state.starts - 1
        };
        let path = pod.dir.join(&container).join(format!("{index}.log"));
        let follow = (q.follow && !q.previous).then(|| (index, pod.clone()));
        Ok((path, follow))
    }

    fn still_writing(&self, q: &LogQuery, uid: &str, container: &str, index: u32) -> bool {
        let pods = self.lock();
        pods.get(&(q.namespace.clone(), q.pod.clone()))
            .filter(|p| p.uid == uid)
            .and_then(|p| p.containers.get(container))
            .is_some_and(|c| c.running && c.starts == index + 1)
    }

    /// The log as a byte stream: the whole file or its last `tail_lines` lines, then, when
    /// following, what the running container writes until it ends.
    pub fn stream(
        &self,
        q: LogQuery,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>, LogLookupError> {
        let (path, follow) = self.resolve(&q)?;
        let content = std::fs::read(&path).unwrap_or_default();
        let start = match q.tail_lines {
            Some(n) if n >= 0 => tail_offset(&content, n as usize),
            _ => 0,
        };
        let head = Bytes::copy_from_slice(&content[start..]);
        let offset = content.len() as u64;
        let first = futures::stream::once(async move { Ok(head) });
        let Some((index, pod)) = follow else {
            return Ok(first.boxed());
        };
        let container = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let index_ref = self.clone();
        let rest = futures::stream::unfold((offset, false), move |(offset, done)| {
            let path = path.clone();
            let q = q.clone();
            let index_ref = index_ref.clone();
            let uid = pod.uid.clone();
            let container = container.clone();
            async move {
                if done {
                    return None;
                }
                loop {
                    let running = index_ref.still_writing(&q, &uid, &container, index);
                    let bytes = read_from(&path, offset);
                    if !bytes.is_empty() {
                        let next = offset + bytes.len() as u64;
                        return Some((Ok(Bytes::from(bytes)), (next, false)));
                    }
                    if !running {
                        return None;
                    }
                    // Log files have no change notification here; a short poll keeps
                    // `logs -f` responsive without inotify.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        Ok(first.chain(rest).boxed())
    }
}

fn read_from(path: &std::path::Path, offset: u64) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    if file.seek(SeekFrom::Start(offset)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    let _ = file.read_to_end(&mut buf);
    buf
}

/// Byte offset where the last `n` lines of `content` start.
pub(super) fn tail_offset(content: &[u8], n: usize) -> usize {
    if n == 0 {
        return content.len();
    }
    let mut end = content.len();
    if content.last() == Some(&b'\n') {
        end -= 1;
    }
    let mut seen = 0;
    for i in (0..end).rev() {
        if content[i] == b'\n' {
            seen += 1;
            if seen == n {
                return i + 1;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::tail_offset;

    #[test]
    fn tail_counts_lines_from_the_end() {
        let text = b"a\nb\nc\n";
        assert_eq!(&text[tail_offset(text, 2)..], b"b\nc\n");
        assert_eq!(&text[tail_offset(text, 5)..], b"a\nb\nc\n");
        assert_eq!(&text[tail_offset(text, 0)..], b"");
        assert_eq!(&b"a\nb"[tail_offset(b"a\nb", 1)..], b"b");
    }
}
