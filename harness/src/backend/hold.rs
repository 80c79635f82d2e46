//! Holding one write of any client until a case has placed its fault: the embedded API
//! server's request hook, shared by the exploration (one hook for a whole cluster) and by cases
//! that run side by side on one cluster (each holds a write in its own namespace).
//!
//! A case asks for the next write that matches ([`WriteMatch`]) in its namespace; the API
//! server holds that write before anything is read or stored and tells the case
//! ([`WriteHold::reached`]); the case changes the cluster; then the write goes on
//! ([`WriteHold::release`], or dropping the hold, also on panic and timeout). So "the fault lands
//! just before the write" holds every time, on any machine, with no sleep and no race.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use rehearsal_embedded::{Answer, Change, RequestHook, WriteRequest};
use tokio::sync::oneshot;

/// The write a case holds: its verb, resource, object name, and whether the operator under
/// test (a ServiceAccount) or any other client (the harness, an administrator) makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteMatch {
    /// `create`, `update`, `patch`, `delete`.
    pub verb: &'static str,
    /// The resource's plural, e.g. `gameservers`.
    pub resource: &'static str,
    /// The subresource (`status`), or `None` for the object itself.
    pub subresource: Option<&'static str>,
    /// The object's name; `None` for any (a create names no object in its path).
    pub name: Option<String>,
    /// The operator under test makes it (`true`), or any other client (`false`).
    pub by_operator: bool,
    /// Which matching write is held, counting from 1 (the ones before it go on).
    pub occurrence: usize,
}

impl WriteMatch {
    /// The operator's `occurrence`-th write labelled `label` as the exploration labels writes
    /// (`<verb> <resource>[/<subresource>] [<name>]`, e.g. `create jobs`, `patch
    /// backups/status live`); `None` for a label not of that shape.
    pub fn operator_write(label: &'static str, occurrence: usize) -> Option<Self> {
        let mut words = label.split(' ');
        let verb = words.next().filter(|v| !v.is_empty())?;
        let (resource, subresource) = match words.next()?.split_once('/') {
            Some((r, sub)) => (r, Some(sub)),
            None => (label.split(' ').nth(1)?, None),
        };
        let name = words.next().map(str::to_string);
        (words.next().is_none() && occurrence >= 1).then_some(Self {
            verb,
            resource,
            subresource,
            name,
            by_operator: true,
            occurrence,
        })
    }

    fn matches(&self, w: &WriteRequest) -> bool {
        w.verb == self.verb
            && w.resource == self.resource
            && w.subresource.as_deref() == self.subresource
            && self
                .name
                .as_ref()
                .is_none_or(|n| w.name.as_deref() == Some(n.as_str()))
            && w.user.starts_with("system:serviceaccount:") == self.by_operator
    }

    /// How a report names it: `patch gameservers mc-b (not the operator)`.
    pub fn label(&self) -> String {
        let resource = match self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.to_string(),
        };
        let by = if self.by_operator {
            "the operator"
        } else {
            "not the operator"
        };
        let name = self.name.as_deref().unwrap_or("(any)");
        let nth = match self.occurrence {
            1 => String::new(),
            n => format!("write #{n} of "),
        };
        format!("{nth}{} {resource} {name} ({by})", self.verb)
    }
}

struct Pending {
    namespace: String,
    matches: WriteMatch,
    /// Matching writes seen so far (the `occurrence`-th is held).
    seen: usize,
    waiting: Waiting<WriteRequest>,
}

/// The one hook the embedded API server calls: the exploration's hook when one is attached,
/// then the holds cases asked for.
#[derive(Default)]
pub(crate) struct Holds {
    exploration: Mutex<Option<Arc<dyn RequestHook>>>,
    pending: Mutex<Vec<Pending>>,
}

impl Holds {
    pub(crate) fn set_exploration(&self, hook: Option<Arc<dyn RequestHook>>) {
        *self.exploration.lock().unwrap_or_else(|p| p.into_inner()) = hook;
    }

    /// Holds the next write in `namespace` that `matches`.
    pub(crate) fn hold(&self, namespace: &str, matches: WriteMatch) -> WriteHold {
        let (hold, waiting) = Hold::open(matches.label());
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Pending {
                namespace: namespace.to_string(),
                matches,
                seen: 0,
                waiting,
            });
        hold
    }
}

impl RequestHook for Holds {
    fn before_write(&self, write: WriteRequest) -> BoxFuture<'static, Answer> {
        let exploration = self
            .exploration
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .map(|h| h.before_write(write.clone()));
        let held = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            // A hold whose case went away holds nothing.
            pending.retain(|p| !p.waiting.abandoned());
            // The first hold this write matches counts it; it is held at its occurrence.
            let at = pending
                .iter()
                .position(|p| p.namespace == write.namespace && p.matches.matches(&write))
                .filter(|&i| {
                    pending[i].seen += 1;
                    pending[i].seen == pending[i].matches.occurrence
                });
            at.map(|i| pending.remove(i))
        };
        let held = held.map(|p| p.waiting.arrive(write));
        async move {
            let mut answer = match exploration {
                Some(f) => f.await,
                None => Answer::Proceed,
            };
            // A case's hold may refuse the write too.
            if let Some(released) = held
                && released.await
            {
                answer = Answer::Conflict;
            }
            answer
        }
        .boxed()
    }

    fn committed(&self, change: Change<'_>) {
        let exploration = self
            .exploration
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(h) = exploration {
            h.committed(change);
        }
    }
}

/// Something a case holds until its fault has landed — a write in the API server
/// ([`WriteHold`]), a request to the repository ([`super::rest_gate::RequestHold`]) — and what
/// it learns when it arrives (`T`). Dropping it lets it go.
pub struct Hold<T> {
    label: String,
    reached: Option<oneshot::Receiver<T>>,
    /// `true`: let it go on refused.
    release: Option<oneshot::Sender<bool>>,
}

impl<T> Hold<T> {
    /// A hold named `label` and the other end, kept where the held thing passes.
    pub(crate) fn open(label: String) -> (Self, Waiting<T>) {
        let (reached_tx, reached) = oneshot::channel();
        let (release, release_rx) = oneshot::channel();
        let hold = Self {
            label,
            reached: Some(reached),
            release: Some(release),
        };
        (
            hold,
            Waiting {
                reached: reached_tx,
                release: release_rx,
            },
        )
    }

    /// What it waits for, as reports name it.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Waits until it arrives and is held; `None` when it can never arrive (the cluster went
    /// away) or was already awaited.
    pub async fn reached(&mut self) -> Option<T> {
        self.reached.take()?.await.ok()
    }

    /// Lets it go on.
    pub fn release(&mut self) {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(false);
        }
    }

    /// Lets it go on refused: a held write is answered `409 Conflict`, as if another writer
    /// had just updated its object (the `write-conflict` fault). (A repository request goes on
    /// as released.)
    pub fn refuse_with_conflict(&mut self) {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(true);
        }
    }
}

/// A write held (or waited for) by a case.
pub type WriteHold = Hold<WriteRequest>;

/// Where a [`Hold`]'s thing passes: told it arrived, it waits for the release.
pub(crate) struct Waiting<T> {
    reached: oneshot::Sender<T>,
    release: oneshot::Receiver<bool>,
}

impl<T> Waiting<T> {
    /// The case that asked for the hold went away: it holds nothing.
    pub(crate) fn abandoned(&self) -> bool {
        self.reached.is_closed()
    }

    /// Tells the case `what` arrived; the returned future ends once the case releases it (or
    /// drops its hold, or already had): the held thing goes on either way, refused (`true`)
    /// only when the case said so.
    pub(crate) fn arrive(self, what: T) -> impl std::future::Future<Output = bool> {
        let told = self.reached.send(what).is_ok();
        let release = self.release;
        async move { told && release.await.unwrap_or(false) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(user: &str, verb: &str, name: &str) -> WriteRequest {
        WriteRequest {
            user: user.into(),
            verb: verb.into(),
            group: "gameplane.local".into(),
            resource: "gameservers".into(),
            subresource: None,
            namespace: "ns".into(),
            name: Some(name.into()),
        }
    }

    fn wanted() -> WriteMatch {
        WriteMatch {
            verb: "patch",
            resource: "gameservers",
            subresource: None,
            name: Some("mc-b".into()),
            by_operator: false,
            occurrence: 1,
        }
    }

    #[tokio::test]
    async fn a_hold_without_a_name_holds_the_operators_next_create_of_the_resource() {
        let holds = Holds::default();
        let mut hold = holds.hold(
            "ns",
            WriteMatch {
                verb: "create",
                resource: "gameservers",
                subresource: None,
                name: None,
                by_operator: true,
                occurrence: 1,
            },
        );
        assert_eq!(hold.label(), "create gameservers (any) (the operator)");
        let mut create = write("system:serviceaccount:gp:op", "create", "x");
        create.name = None;
        holds.before_write(write("admin", "create", "x")).await;
        let first = holds.before_write(create);
        assert!(hold.reached().await.is_some());
        hold.release();
        first.await;
    }

    #[tokio::test]
    async fn the_first_matching_write_waits_until_released_and_the_next_goes_through() {
        let holds = Holds::default();
        let mut hold = holds.hold("ns", wanted());
        assert_eq!(hold.label(), "patch gameservers mc-b (not the operator)");
        // Other namespaces, names, verbs and the operator's writes are not held.
        let mut other = write("admin", "patch", "mc-b");
        other.namespace = "elsewhere".into();
        holds.before_write(other).await;
        holds.before_write(write("admin", "patch", "mc-a")).await;
        holds.before_write(write("admin", "update", "mc-b")).await;
        holds
            .before_write(write("system:serviceaccount:gp:op", "patch", "mc-b"))
            .await;
        let mut first = holds.before_write(write("admin", "patch", "mc-b"));
        assert!((&mut first).now_or_never().is_none(), "held");
        let reached = hold.reached().await.expect("reached");
        assert_eq!(reached.name.as_deref(), Some("mc-b"));
        // The case's own write of the same object goes through while the first waits.
        holds.before_write(write("admin", "patch", "mc-b")).await;
        assert!((&mut first).now_or_never().is_none(), "still held");
        hold.release();
        assert_eq!(first.await, Answer::Proceed);
    }

    #[test]
    fn an_operator_write_is_named_by_the_explorations_label() {
        let m = WriteMatch::operator_write("patch backups/status live", 2).unwrap();
        assert_eq!(
            (m.verb, m.resource, m.subresource, m.name.as_deref()),
            ("patch", "backups", Some("status"), Some("live"))
        );
        assert!(m.by_operator);
        assert_eq!(
            m.label(),
            "write #2 of patch backups/status live (the operator)"
        );
        let m = WriteMatch::operator_write("create jobs", 1).unwrap();
        assert_eq!((m.resource, m.subresource, m.name), ("jobs", None, None));
        assert_eq!(WriteMatch::operator_write("create", 1), None);
        assert_eq!(WriteMatch::operator_write("create jobs", 0), None);
        assert_eq!(WriteMatch::operator_write("patch a b c", 1), None);
    }

    #[tokio::test]
    async fn a_hold_at_an_occurrence_lets_the_writes_before_it_go() {
        let holds = Holds::default();
        let op = "system:serviceaccount:gp:op";
        let mut hold = holds.hold(
            "ns",
            WriteMatch::operator_write("patch gameservers mc-b", 2).unwrap(),
        );
        assert_eq!(
            holds.before_write(write(op, "patch", "mc-b")).await,
            Answer::Proceed
        );
        let mut second = holds.before_write(write(op, "patch", "mc-b"));
        assert!((&mut second).now_or_never().is_none(), "the 2nd is held");
        assert!(hold.reached().await.is_some());
        hold.release();
        assert_eq!(second.await, Answer::Proceed);
        assert_eq!(
            holds.before_write(write(op, "patch", "mc-b")).await,
            Answer::Proceed
        );
    }

    #[tokio::test]
    async fn a_refused_hold_answers_its_write_with_a_conflict() {
        let holds = Holds::default();
        let mut hold = holds.hold("ns", wanted());
        let first = holds.before_write(write("admin", "patch", "mc-b"));
        assert!(hold.reached().await.is_some());
        hold.refuse_with_conflict();
        assert_eq!(first.await, Answer::Conflict);
        // Only that write: the next goes on.
        assert_eq!(
            holds.before_write(write("admin", "patch", "mc-b")).await,
            Answer::Proceed
        );
    }

    #[tokio::test]
    async fn a_dropped_hold_lets_its_write_go_and_holds_nothing_later() {
        let holds = Holds::default();
        let mut hold = holds.hold("ns", wanted());
        let first = holds.before_write(write("admin", "patch", "mc-b"));
        assert!(hold.reached().await.is_some());
        drop(hold);
        first.await;
        let never = holds.hold("ns", wanted());
        drop(never);
        holds.before_write(write("admin", "patch", "mc-b")).await;
    }
}
