//! The harness's side of the API server's request hook: it numbers the operator's writes and
//! the kubelet's reports of the operation's worker pods (started, running, ended) in a
//! schedule's namespace (the **points** of a schedule), holds the one write a schedule places
//! its fault before, and keeps every committed change of the objects the invariants read.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use rehearsal_embedded::{Answer, Change, RequestHook, WriteRequest};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{oneshot, watch};

/// Users whose writes are points: the operator under test authenticates as a ServiceAccount
/// (the reference operator's and Gameplane's alike); the harness, the kubelet and the
/// controllers act as the cluster's admin.
const OPERATOR_USERS: &str = "system:serviceaccount:";

/// One write of the operator: a point a fault can be placed before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Point {
    /// Its 0-based number among the operator's writes in the schedule's namespace.
    pub index: usize,
    /// `<verb> <resource>[/<subresource>] [<name>]`, e.g. `patch backups/status live`.
    pub label: String,
}

impl Point {
    /// The point of write `w`; a worker pod's generated name reads `<job>-*`, and an object
    /// of the operation outside any namespace (`<namespace>-<name>`, as the canary Module is
    /// named after its run) reads `<name>`, so the same write has the same label in every run.
    fn of(index: usize, w: &WriteRequest, workers: Option<&str>, namespace: &str) -> Self {
        let resource = match &w.subresource {
            Some(sub) => format!("{}/{sub}", w.resource),
            None => w.resource.clone(),
        };
        let name = w.name.as_deref().map(|n| match workers {
            Some(prefix) if w.resource == "pods" && n.starts_with(prefix) => format!("{prefix}*"),
            _ => match run_object(namespace, w) {
                Some(name) => name.to_string(),
                None => n.to_string(),
            },
        });
        let label = match name {
            Some(name) => format!("{} {resource} {name}", w.verb),
            None => format!("{} {resource}", w.verb),
        };
        Self { index, label }
    }
}

/// The name within its run of `w`'s object when it is one of the run's outside any namespace:
/// cluster-scoped, named `<namespace>-<name>` (the canary Module of a qualification in
/// `namespace`).
fn run_object<'w>(namespace: &str, w: &'w WriteRequest) -> Option<&'w str> {
    if !w.namespace.is_empty() {
        return None;
    }
    w.name
        .as_deref()?
        .strip_prefix(namespace)?
        .strip_prefix('-')
        .filter(|n| !n.is_empty())
}

pub use crate::evidence::invariants::history::Recorded;

#[derive(Default)]
struct Inner {
    namespace: Option<String>,
    /// Points are no longer numbered (the operation is over).
    frozen: bool,
    /// The resources whose writes are the operation's points (the server's own upkeep —
    /// claims, services, its status — is not).
    resources: &'static [&'static str],
    points: Vec<Point>,
    hold_at: Option<crate::evidence::place::Place>,
    reached: Option<oneshot::Sender<Point>>,
    /// `<job>-`: the operation's worker pods, whose status writes (the kubelet reporting them
    /// started, running, ended) are points too.
    workers: Option<String>,
    /// The held write: its namespace (empty outside any), resource and name (`None` for a
    /// create).
    held: Option<(String, String, Option<String>)>,
    changes: Vec<Recorded>,
    /// The cluster's resourceVersion: the last change committed (anywhere).
    last_rv: u64,
    /// It when the points began to be numbered (before the operation's object existed).
    begun_rv: u64,
    /// It when each point's write arrived (before the write was applied), by point.
    rv_at: Vec<u64>,
}

/// The hook one schedule's cluster runs with.
pub struct Observer {
    inner: Mutex<Inner>,
    /// `true` once the held write may go; reset by [`Observer::begin`].
    released: watch::Sender<bool>,
    /// `true` once a change of the held write's object was committed after its release.
    applied: watch::Sender<bool>,
    /// How the held write goes on once released.
    answer: watch::Sender<Answer>,
}

impl Default for Observer {
    fn default() -> Self {
        Self {
            inner: Mutex::default(),
            released: watch::Sender::new(false),
            applied: watch::Sender::new(false),
            answer: watch::Sender::new(Answer::Proceed),
        }
    }
}

impl Observer {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts recording the committed changes of `namespace` (from before the operation's
    /// server exists, so the trace holds every state of its pod).
    pub fn watch(&self, namespace: &str) {
        let mut inner = self.inner();
        inner.namespace = Some(namespace.to_string());
        inner.changes.clear();
        inner.points.clear();
        inner.resources = &[];
    }

    /// Starts numbering the operator's writes to `resources` in the watched namespace (the
    /// points); with `hold_at`, that write waits until [`Self::release`], and the receiver
    /// says when it arrived.
    pub fn begin(
        &self,
        resources: &'static [&'static str],
        workers: &str,
        hold_at: Option<crate::evidence::place::Place>,
    ) -> oneshot::Receiver<Point> {
        let (tx, rx) = oneshot::channel();
        let mut inner = self.inner();
        inner.workers = Some(format!("{workers}-"));
        inner.points.clear();
        inner.rv_at.clear();
        inner.begun_rv = inner.last_rv;
        inner.frozen = false;
        inner.resources = resources;
        inner.hold_at = hold_at;
        inner.reached = Some(tx);
        inner.held = None;
        self.answer.send_replace(Answer::Proceed);
        self.released.send_replace(false);
        self.applied.send_replace(false);
        rx
    }

    /// Makes the held write, once released, be refused with `409 Conflict` (the object's
    /// resourceVersion moved by another writer): the `write-conflict` fault.
    pub fn refuse_with_conflict(&self) {
        self.answer.send_replace(Answer::Conflict);
    }

    /// Lets the held write go (a no-op when none is held).
    pub fn release(&self) {
        self.inner().hold_at = None;
        self.released.send_replace(true);
    }

    /// Waits until the held write, released, was applied (a change of its object committed),
    /// at most `bound`; whether it was.
    pub async fn await_applied(&self, bound: std::time::Duration) -> bool {
        let mut applied = self.applied.subscribe();
        tokio::time::timeout(bound, applied.wait_for(|a| *a))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Stops numbering points: the operation is over (its later writes are not its own).
    pub fn freeze(&self) {
        self.inner().frozen = true;
    }

    /// The resourceVersion the cluster had just before the operator's first write of the
    /// operation arrived (its object created, nothing of the operator's work on it yet), or,
    /// before that write, when the points began: the view the `stale-view` fault serves the
    /// restarted operator, as a cache whose watches stopped when the operation began.
    pub fn as_of_operation_start(&self) -> u64 {
        let inner = self.inner();
        inner.rv_at.first().copied().unwrap_or(inner.begun_rv)
    }

    /// The operator's writes so far.
    pub fn points(&self) -> Vec<Point> {
        self.inner().points.clone()
    }

    /// Every recorded change so far, in commit order.
    pub fn changes(&self) -> Vec<Recorded> {
        self.inner().changes.clone()
    }
}

/// Releases the held write when dropped: a schedule that ends early (an error, a timeout, a
/// panic) never leaves the operator waiting on the API server.
pub struct ReleaseOnDrop(pub Arc<Observer>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl Observer {
    /// Marks the held write applied when `change`, committed after its release, is of its
    /// object.
    fn note_applied(&self, change: &Change<'_>) {
        if !*self.released.borrow() || *self.applied.borrow() {
            return;
        }
        let inner = self.inner();
        let Some((namespace, resource, name)) = &inner.held else {
            return;
        };
        let same_resource = change.storage.rsplit('/').next() == Some(resource.as_str());
        let same_name = name.as_deref().is_none_or(|n| {
            change
                .object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                == Some(n)
        });
        if namespace == change.namespace && same_resource && same_name {
            self.applied.send_replace(true);
        }
    }
}

impl Observer {
    /// Numbers `point` (of `object`: namespace, resource, name) and holds it when it is the
    /// schedule's: the answer once released (what the fault set while it was held).
    fn number(
        &self,
        mut inner: std::sync::MutexGuard<'_, Inner>,
        point: Point,
        object: (String, String, Option<String>),
    ) -> BoxFuture<'static, Answer> {
        inner.points.push(point.clone());
        let rv = inner.last_rv;
        inner.rv_at.push(rv);
        let held = inner.hold_at.as_ref().is_some_and(|at| {
            at.label == point.label
                && inner
                    .points
                    .iter()
                    .filter(|p| p.label == point.label)
                    .count()
                    == at.occurrence
        });
        if !held {
            return futures::future::ready(Answer::Proceed).boxed();
        }
        if let Some(tx) = inner.reached.take() {
            let _ = tx.send(point);
        }
        inner.held = Some(object);
        drop(inner);
        // The flag keeps its value, so a release that comes before the wait cannot be missed.
        let mut released = self.released.subscribe();
        let answer = self.answer.subscribe();
        async move {
            let _ = released.wait_for(|go| *go).await;
            // Read once released: the fault sets it while the write is held.
            *answer.borrow()
        }
        .boxed()
    }
}

impl crate::backend::registry_gate::RegistryHook for Observer {
    /// The operator reading a bundle's manifest from the module registry is a point of an
    /// operation whose points include its Modules: `get bundle <module>` (the repository
    /// `<namespace>/<module>` of the watched namespace).
    fn before_pull(&self, repository: &str) -> BoxFuture<'static, ()> {
        let inner = self.inner();
        let module = inner
            .namespace
            .as_deref()
            .and_then(|ns| repository.strip_prefix(ns)?.strip_prefix('/'))
            .filter(|m| !m.is_empty() && !m.contains('/'))
            .map(str::to_string);
        let Some(module) = module.filter(|_| !inner.frozen && inner.resources.contains(&"modules"))
        else {
            return futures::future::ready(()).boxed();
        };
        let point = Point {
            index: inner.points.len(),
            label: format!("{} {module}", crate::evidence::catalogue::BUNDLE_PULLED),
        };
        let object = (String::new(), "bundle".to_string(), Some(module));
        self.number(inner, point, object).map(|_| ()).boxed()
    }
}

impl RequestHook for Observer {
    fn before_write(&self, write: WriteRequest) -> BoxFuture<'static, Answer> {
        let inner = self.inner();
        let operator_write = write.user.starts_with(OPERATOR_USERS)
            && inner.resources.contains(&write.resource.as_str());
        // The kubelet reporting a worker pod's lifecycle (its status writes).
        let worker_change = write.resource == "pods"
            && write.subresource.as_deref() == Some("status")
            && inner
                .workers
                .as_deref()
                .zip(write.name.as_deref())
                .is_some_and(|(prefix, name)| name.starts_with(prefix));
        let Some(namespace) = inner.namespace.clone() else {
            return futures::future::ready(Answer::Proceed).boxed();
        };
        let of_run = namespace == write.namespace || run_object(&namespace, &write).is_some();
        if !of_run || inner.frozen || !(operator_write || worker_change) {
            return futures::future::ready(Answer::Proceed).boxed();
        }
        let point = Point::of(
            inner.points.len(),
            &write,
            inner.workers.as_deref(),
            &namespace,
        );
        let object = (
            write.namespace.clone(),
            write.resource.clone(),
            write.name.clone(),
        );
        self.number(inner, point, object)
    }

    fn committed(&self, change: Change<'_>) {
        self.note_applied(&change);
        {
            let mut inner = self.inner();
            inner.last_rv = inner.last_rv.max(change.resource_version);
        }
        let resource = match change.storage {
            "/pods" => "pods",
            "batch/jobs" => "jobs",
            "gameplane.local/backups" => "backups",
            "gameplane.local/restores" => "restores",
            _ => return,
        };
        let mut inner = self.inner();
        if inner.namespace.as_deref() != Some(change.namespace) {
            return;
        }
        inner.changes.push(Recorded {
            rv: change.resource_version,
            at: change.at,
            resource: resource.to_string(),
            gone: change.kind == "DELETED",
            object: change.object.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(
        namespace: &str,
        resource: &str,
        sub: Option<&str>,
        name: Option<&str>,
    ) -> WriteRequest {
        WriteRequest {
            user: "system:serviceaccount:gameplane:operator".into(),
            verb: "patch".into(),
            group: "gameplane.local".into(),
            resource: resource.into(),
            subresource: sub.map(str::to_string),
            namespace: namespace.into(),
            name: name.map(str::to_string),
        }
    }

    #[test]
    fn an_object_of_the_run_outside_any_namespace_is_labelled_by_its_name_in_the_run() {
        let module = write("", "modules", Some("status"), Some("ns-7-fixture-game"));
        assert_eq!(run_object("ns-7", &module), Some("fixture-game"));
        assert_eq!(
            Point::of(3, &module, None, "ns-7").label,
            "patch modules/status fixture-game"
        );
        // Another run's, a namespaced one, or one named just like the namespace: not the run's.
        assert_eq!(run_object("ns-8", &module), None);
        assert_eq!(
            run_object("ns-7", &write("", "modules", None, Some("ns-7"))),
            None
        );
        assert_eq!(
            run_object("ns-7", &write("", "modules", None, Some("ns-7-"))),
            None
        );
        let namespaced = write("ns-7", "gameservers", None, Some("ns-7-x"));
        assert_eq!(run_object("ns-7", &namespaced), None);
        assert_eq!(
            Point::of(0, &namespaced, None, "ns-7").label,
            "patch gameservers ns-7-x"
        );
        assert_eq!(run_object("ns-7", &write("", "modules", None, None)), None);
    }
}
