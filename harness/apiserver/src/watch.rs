//! Watches: chunked, newline-terminated JSON events. A watch starts from the current state
//! (synthetic ADDED events), from a resourceVersion (replayed from history, or 410 Expired),
//! or as a watch-list (`sendInitialEvents=true`: ADDED events, then a bookmark annotated
//! `k8s.io/initial-events-end`), then follows the store's broadcast of live events.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::registry::ResourceInfo;
use crate::render::{render_value, view};
use crate::selector::{FieldSelector, LabelSelector};
use crate::shared::Shared;
use crate::state::{Event, EventType};
use crate::status::ApiError;
use crate::table::{self, Columns};

/// A parsed watch request.
pub struct WatchRequest {
    pub info: Arc<ResourceInfo>,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// `None` for unset or "0": start from the current state.
    pub resource_version: Option<u64>,
    pub send_initial_events: bool,
    pub bookmarks: bool,
    pub timeout: Option<Duration>,
    /// Set when the client asked for Table events (`kubectl get -w`).
    pub table: Option<Columns>,
    /// Set when the client asked for `PartialObjectMetadata` events.
    pub metadata_only: bool,
    /// Who opened it (after impersonation).
    pub user: String,
}

impl WatchRequest {
    fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    /// What this watcher sees of a store event, if anything: selector transitions turn a
    /// modification into ADDED or DELETED.
    fn transform(&self, ev: &Event) -> Option<(EventType, Arc<Value>)> {
        if ev.storage != self.info.storage {
            return None;
        }
        if let Some(ns) = &self.namespace
            && self.info.namespaced
            && &ev.namespace != ns
        {
            return None;
        }
        let now = self.matches(&ev.object);
        match ev.kind {
            EventType::Added | EventType::Deleted => now.then(|| (ev.kind, ev.object.clone())),
            EventType::Modified => {
                let before = ev.old.as_deref().is_some_and(|o| self.matches(o));
                match (before, now) {
                    (true, true) => Some((EventType::Modified, ev.object.clone())),
                    (false, true) => Some((EventType::Added, ev.object.clone())),
                    (true, false) => Some((EventType::Deleted, ev.object.clone())),
                    (false, false) => None,
                }
            }
        }
    }

    fn line(&self, kind: &str, obj: &Value) -> Bytes {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        match &self.table {
            Some(columns) => {
                let row = table::to_table_row_event(
                    columns,
                    &view(&self.info, obj),
                    jiff::Timestamp::now(),
                );
                out.extend_from_slice(&render_value(&row));
            }
            None if self.metadata_only => {
                out.extend_from_slice(&render_value(&crate::negotiate::partial_metadata(obj)))
            }
            None => out.extend_from_slice(&render_value(&view(&self.info, obj))),
        }
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = if self.metadata_only {
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata})
        } else {
            json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": metadata})
        };
        let mut out = b"{\"type\":\"BOOKMARK\",\"object\":".to_vec();
        out.extend_from_slice(&render_value(&obj));
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }
}

fn error_line(error: &ApiError) -> Bytes {
    let mut out = b"{\"type\":\"ERROR\",\"object\":".to_vec();
    out.extend_from_slice(&render_value(&error.to_status()));
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// Whether `ev` is withheld from this watch: the event a [`crate::DropNextEvent`] matched first
/// (it is then disarmed), withheld from every watch of that drop's user.
fn withheld(shared: &Shared, request: &WatchRequest, ev: &Event) -> bool {
    let mut dropped = shared.dropped.lock().unwrap_or_else(|p| p.into_inner());
    if dropped.armed.is_empty() && dropped.withheld.is_empty() {
        return false;
    }
    if dropped
        .withheld
        .iter()
        .any(|(user_prefix, rv)| *rv == ev.rv && request.user.starts_with(user_prefix))
    {
        return true;
    }
    let name = ev.object["metadata"]["name"].as_str().unwrap_or_default();
    let at = dropped
        .armed
        .iter()
        .position(|d| d.matches(&request.user, &request.info.plural, &ev.namespace, name));
    let Some(at) = at else {
        return false;
    };
    let drop = dropped.armed.remove(at);
    dropped.withheld.push((drop.user_prefix, ev.rv));
    shared.to_drop.send_replace(dropped.armed.len());
    true
}

/// What a watch sends first: the objects as they are (synthetic ADDED), or, from a
/// resourceVersion, every change since (410 Expired when history no longer reaches it); for a
/// client served a stale view (`lagging`: its resourceVersion) that asked for none, the objects
/// as they were then followed by every change since.
fn initial_events(
    shared: &Shared,
    state: &crate::state::State,
    request: &WatchRequest,
    lagging: Option<u64>,
) -> (Vec<(EventType, Arc<Value>)>, Option<ApiError>) {
    let mut initial: Vec<(EventType, Arc<Value>)> = Vec::new();
    let ns = request.namespace.as_deref();
    let from = match (request.resource_version, lagging) {
        (None, Some(as_of)) if !request.send_initial_events => {
            match state.list_as_of(&request.info, ns, as_of) {
                Ok(then) => initial.extend(
                    then.into_iter()
                        .filter(|o| request.matches(o))
                        .map(|o| (EventType::Added, o)),
                ),
                Err(e) => return (initial, Some(e)),
            }
            Some(as_of)
        }
        (rv, _) => rv,
    };
    match from {
        Some(rv) if !request.send_initial_events => match state.events_after(rv) {
            Ok(history) => initial.extend(
                history
                    .iter()
                    .filter_map(|ev| Some((request.transform(ev)?, ev)))
                    .filter(|(_, ev)| !withheld(shared, request, ev))
                    .map(|(seen, _)| seen),
            ),
            Err(e) => return (initial, Some(e)),
        },
        _ => initial.extend(
            state
                .list(&request.info, ns)
                .into_iter()
                .filter(|o| request.matches(o))
                .map(|o| (EventType::Added, o)),
        ),
    }
    (initial, None)
}

/// Starts a watch and answers with its event stream.
pub fn serve(shared: &Arc<Shared>, request: WatchRequest) -> Response<Body> {
    // A client served a stale view watches from the view's resourceVersion (also when it
    // asked for none) and receives nothing until the view ends.
    let lagging = shared.stale_as_of(&request.user);
    shared.watches.send_modify(|opened| {
        *opened
            .entry((request.user.clone(), request.info.plural.clone()))
            .or_default() += 1;
    });
    let (mut events, initial, start_rv, expired) = {
        let state = shared.state();
        let (initial, expired) = initial_events(shared, &state, &request, lagging);
        (
            state.subscribe(),
            initial,
            state.resource_version(),
            expired,
        )
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    let shutdown = shared.shutdown.clone();
    let bookmark_interval = shared.config.bookmark_interval;
    let shared = shared.clone();
    tokio::spawn(async move {
        if lagging.is_some() {
            let mut view = shared.stale.subscribe();
            let user = request.user.clone();
            tokio::select! {
                _ = crate::shared::stopped(shutdown.clone()) => return,
                _ = tx.closed() => return,
                _ = view.wait_for(|v| v.as_ref().is_none_or(|v| !user.starts_with(&v.user_prefix))) => {}
            }
        }
        if let Some(e) = expired {
            let _ = tx.send(Ok(error_line(&e))).await;
            return;
        }
        for (kind, obj) in &initial {
            if tx.send(Ok(request.line(kind.as_str(), obj))).await.is_err() {
                return;
            }
        }
        if request.send_initial_events
            && tx.send(Ok(request.bookmark(start_rv, true))).await.is_err()
        {
            return;
        }
        let mut last_rv = start_rv;
        let deadline = request.timeout.map(|t| tokio::time::Instant::now() + t);
        let mut ticks = tokio::time::interval_at(
            tokio::time::Instant::now() + bookmark_interval,
            bookmark_interval,
        );
        loop {
            let out = tokio::select! {
                // In this order: shutdown and a gone client end the watch even under a flood
                // of events, and events go before bookmarks so a bookmark covers them all.
                biased;
                _ = crate::shared::stopped(shutdown.clone()) => return,
                _ = tx.closed() => return,
                received = events.recv() => match received {
                    Ok(ev) => {
                        if ev.rv <= last_rv {
                            continue;
                        }
                        last_rv = ev.rv;
                        match request.transform(&ev) {
                            Some(_) if withheld(&shared, &request, &ev) => continue,
                            Some((kind, obj)) => request.line(kind.as_str(), &obj),
                            None => continue,
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let e = ApiError::expired(last_rv, last_rv + 1);
                        let _ = tx.send(Ok(error_line(&e))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => return,
                _ = ticks.tick(), if request.bookmarks => request.bookmark(last_rv, false),
            };
            if tx.send(Ok(out)).await.is_err() {
                return;
            }
        }
    });
    Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(ReceiverStream::new(rx)))
        .expect("static response parts")
}
