//! The exploration hook: what lets a harness place a fault at an exact point of an operator's
//! work without changing the operator.
//!
//! [`RequestHook::before_write`] is called for every mutating request (create, update, patch,
//! delete, and the POSTs of subresources), after it was authenticated and authorised and before
//! anything is read or stored; the request waits for the future it returns. A hook that holds
//! the operator's k-th write until a fault has landed makes "the fault lands between the
//! operator's writes k-1 and k" a deterministic schedule.
//!
//! The future answers how the request goes on: [`Answer::Proceed`] applies it as sent;
//! [`Answer::Conflict`] refuses it with `409 Conflict` as if another writer had just updated the
//! object — the object is committed again with a new resourceVersion (its content unchanged), so
//! a client that re-reads sees it moved — the way a write loses an optimistic-concurrency race.
//!
//! [`RequestHook::committed`] is called for every change the store commits, in commit
//! (resourceVersion) order, under the store's lock, with the wall-clock time of the commit: one
//! totally ordered history of what every client (operator, kubelet, controllers, the harness)
//! made the cluster be, on the same clock as anything else the host writes (a game's audit
//! log). It must return quickly (record and go).

use futures::future::BoxFuture;
use serde_json::Value;

/// A mutating request, as the hook sees it before it is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRequest {
    /// The user the request acts as (after impersonation), e.g.
    /// `system:serviceaccount:gameplane-system:gameplane`.
    pub user: String,
    /// `create`, `update`, `patch`, `delete` or `deletecollection`.
    pub verb: String,
    /// The API group (empty for the core group).
    pub group: String,
    /// The resource's plural, e.g. `pods`, `backups`.
    pub resource: String,
    /// The subresource, e.g. `status`, `eviction`.
    pub subresource: Option<String>,
    /// The namespace (empty for cluster-scoped resources).
    pub namespace: String,
    /// The object's name (absent for a create or a deletecollection).
    pub name: Option<String>,
}

/// How a mutating request goes on once the hook's future resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Answer {
    /// Apply it as sent.
    #[default]
    Proceed,
    /// Refuse it with `409 Conflict`, the object's resourceVersion moved by another writer.
    Conflict,
}

/// One committed change.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    /// Its resourceVersion: the commit order.
    pub resource_version: u64,
    /// When it was committed (the host's clock).
    pub at: jiff::Timestamp,
    /// `<group>/<plural>`, e.g. `/pods`, `batch/jobs`, `gameplane.local/backups`.
    pub storage: &'a str,
    /// The object's namespace (empty when cluster-scoped).
    pub namespace: &'a str,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub kind: &'a str,
    /// The object as committed (its last state for a deletion).
    pub object: &'a Value,
}

/// What a harness attaches with [`crate::ApiServer::set_hook`].
pub trait RequestHook: Send + Sync + 'static {
    /// Called before a mutating request is applied; the request waits for the future, which
    /// answers how it goes on.
    fn before_write(&self, write: WriteRequest) -> BoxFuture<'static, Answer>;
    /// Called for every committed change, in commit order, under the store's lock.
    fn committed(&self, change: Change<'_>);
}

/// The verb of a mutating HTTP request: `None` for reads.
pub(crate) fn verb_of(method: &http::Method, has_name: bool) -> Option<&'static str> {
    match *method {
        http::Method::POST => Some("create"),
        http::Method::PUT => Some("update"),
        http::Method::PATCH => Some("patch"),
        http::Method::DELETE if has_name => Some("delete"),
        http::Method::DELETE => Some("deletecollection"),
        _ => None,
    }
}

/// A watch event withheld from one client (the exploration's `dropped-event` fault): the next
/// event about object `name` of `resource` in `namespace` that a watch opened by a user whose
/// name starts with `user_prefix` would receive is never sent to any watch of that user (as an
/// informer shared by its controllers would miss it); those watches go on, and every other
/// user's watches see the event. A client that never resyncs or requeues never learns of that
/// change from its watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropNextEvent {
    /// Whose watches, e.g. `system:serviceaccount:` (the operator under test).
    pub user_prefix: String,
    /// The resource's plural, e.g. `backups`.
    pub resource: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
}

impl DropNextEvent {
    /// Whether an event about `name` in `namespace` of `resource`, for a watch of `user`, is
    /// the one to withhold.
    pub fn matches(&self, user: &str, resource: &str, namespace: &str, name: &str) -> bool {
        user.starts_with(&self.user_prefix)
            && resource == self.resource
            && namespace == self.namespace
            && name == self.name
    }
}

/// A view of the cluster as it was, served to one client (the exploration's `stale-view`
/// fault), as an API server whose watch cache lags behind its storage serves it: while it
/// lasts, the lists of a user whose name starts with `user_prefix` that any version satisfies
/// (`resourceVersion=0`: an informer's list, a cached client's) are answered with the objects
/// as they were at resourceVersion `as_of` (and that resourceVersion), and its watches send
/// nothing. It lasts until that user's first write of one of `ends_on` (what it did on what it
/// read), or until the harness ends it; then its watches replay every change since where they started, and it
/// catches up by their events. Its reads of one object and its lists of the most recent
/// version are answered from storage, as a real API server answers them; everyone else sees
/// the present throughout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleView {
    /// Whose lists, e.g. `system:serviceaccount:` (the operator under test).
    pub user_prefix: String,
    /// The resourceVersion the lists are answered as of.
    pub as_of: u64,
    /// The resources (plurals, e.g. `backups`) whose write by that user ends the view; empty:
    /// any write.
    pub ends_on: Vec<String>,
}
