//! The exploration hook over real HTTP: a held write waits until the hook lets it go (and a
//! read does not pass through it), every mutating verb is seen with its user and target, and
//! committed changes arrive in resourceVersion order with their commit time.

mod common;

use std::sync::{Arc, Mutex};

use common::{start, within};
use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use rehearsal_apiserver::{Answer, Change, RequestHook, WriteRequest};
use serde_json::json;
use tokio::sync::{Notify, oneshot};

/// A committed change as recorded: resourceVersion, time, storage, kind, name.
type Seen = (u64, jiff::Timestamp, String, String, String);

/// Holds the first write to a ConfigMap named `held` until released; records everything.
#[derive(Default)]
struct Recorder {
    writes: Mutex<Vec<WriteRequest>>,
    changes: Mutex<Vec<Seen>>,
    arrived: Mutex<Option<oneshot::Sender<()>>>,
    release: Arc<Notify>,
}

impl RequestHook for Recorder {
    fn before_write(&self, write: WriteRequest) -> BoxFuture<'static, Answer> {
        let hold = write.name.as_deref() == Some("held") && write.verb == "patch";
        let conflict = write.name.as_deref() == Some("conflicted") && write.verb == "patch";
        self.writes.lock().unwrap().push(write);
        if conflict {
            return futures::future::ready(Answer::Conflict).boxed();
        }
        if !hold {
            return futures::future::ready(Answer::Proceed).boxed();
        }
        if let Some(tx) = self.arrived.lock().unwrap().take() {
            let _ = tx.send(());
        }
        let release = self.release.clone();
        async move {
            release.notified().await;
            Answer::Proceed
        }
        .boxed()
    }

    fn committed(&self, change: Change<'_>) {
        let name = change.object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.changes.lock().unwrap().push((
            change.resource_version,
            change.at,
            change.storage.to_string(),
            change.kind.to_string(),
            name,
        ));
    }
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "1"}})).unwrap()
}

#[tokio::test]
async fn a_held_write_waits_for_its_release_and_reads_pass() {
    let (server, client) = start().await;
    let (tx, arrived) = oneshot::channel();
    let hook = Arc::new(Recorder {
        arrived: Mutex::new(Some(tx)),
        ..Recorder::default()
    });
    server.set_hook(Some(hook.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &configmap("held"))
        .await
        .unwrap();
    let patching = tokio::spawn({
        let cms = cms.clone();
        async move {
            cms.patch(
                "held",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"a": "2"}})),
            )
            .await
        }
    });
    within("the held patch to reach the hook", arrived)
        .await
        .unwrap();
    // Held: reads pass the hook and still see the old data; the patch has not returned.
    let seen = within("a read while the write is held", cms.get("held"))
        .await
        .unwrap();
    assert_eq!(seen.data.unwrap()["a"], "1", "the held write was applied");
    assert!(
        !patching.is_finished(),
        "the held patch returned before its release"
    );
    hook.release.notify_one();
    let patched = within("the released patch", patching)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(patched.data.unwrap()["a"], "2");
    let writes = hook.writes.lock().unwrap().clone();
    let verbs: Vec<(&str, Option<&str>)> = writes
        .iter()
        .map(|w| (w.verb.as_str(), w.name.as_deref()))
        .collect();
    assert_eq!(verbs, vec![("create", None), ("patch", Some("held"))]);
    assert!(writes.iter().all(|w| w.resource == "configmaps"
        && w.namespace == "default"
        && w.group.is_empty()
        && w.user == "kubernetes-admin"));
}

#[tokio::test]
async fn committed_changes_arrive_in_order_with_their_time() {
    let (server, client) = start().await;
    let hook = Arc::new(Recorder::default());
    server.set_hook(Some(hook.clone()));
    let before = jiff::Timestamp::now();
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &configmap("one"))
        .await
        .unwrap();
    cms.patch(
        "one",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "2"}})),
    )
    .await
    .unwrap();
    cms.delete("one", &DeleteParams::default()).await.unwrap();
    let after = jiff::Timestamp::now();
    let changes: Vec<_> = hook
        .changes
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.4 == "one")
        .cloned()
        .collect();
    let kinds: Vec<&str> = changes.iter().map(|c| c.3.as_str()).collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    assert!(changes.iter().all(|c| c.2 == "/configmaps"));
    assert!(
        changes
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1)
    );
    assert!(changes.iter().all(|c| before <= c.1 && c.1 <= after));
    // Detached: nothing more is recorded.
    server.set_hook(None);
    let n = hook.changes.lock().unwrap().len();
    cms.create(&PostParams::default(), &configmap("two"))
        .await
        .unwrap();
    assert_eq!(hook.changes.lock().unwrap().len(), n);
}

/// A write the hook answers `Conflict` is refused with 409, as if another writer had just
/// updated the object: its resourceVersion moved (a MODIFIED change committed, everyone
/// watching sees it), its content did not, and the write is not applied.
#[tokio::test]
async fn a_conflicted_write_is_refused_and_the_object_moves_on() {
    let (server, client) = start().await;
    let hook = Arc::new(Recorder::default());
    server.set_hook(Some(hook.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = cms
        .create(&PostParams::default(), &configmap("conflicted"))
        .await
        .unwrap();
    let refused = cms
        .patch(
            "conflicted",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "2"}})),
        )
        .await
        .unwrap_err();
    match refused {
        kube::Error::Api(e) => {
            assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"), "{e:?}");
            assert!(e.message.contains("has been modified"), "{e:?}");
        }
        other => panic!("not a 409: {other:?}"),
    }
    let now = cms.get("conflicted").await.unwrap();
    assert_eq!(now.data, created.data, "the refused write was not applied");
    let (before, after): (u64, u64) = (
        created.metadata.resource_version.unwrap().parse().unwrap(),
        now.metadata.resource_version.unwrap().parse().unwrap(),
    );
    assert!(
        after > before,
        "the resourceVersion moved: {before} -> {after}"
    );
    let changes = hook.changes.lock().unwrap().clone();
    assert!(
        changes.iter().any(|(rv, _, _, kind, name)| *rv == after
            && kind == "MODIFIED"
            && name == "conflicted"),
        "{changes:?}"
    );
}

/// The `dropped-event` fault: the next event about one object is withheld from every watch of
/// the named user; those watches go on (they see the next change), and a drop for another user
/// or object withholds nothing.
#[tokio::test]
async fn a_dropped_event_is_withheld_from_the_users_watches_that_go_on() {
    use futures::{StreamExt, TryStreamExt};
    use kube::runtime::{WatchStreamExt, watcher};
    let (server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &configmap("watched"))
        .await
        .unwrap();
    // Two watches of the admin's, each from now on.
    let seen = |cms: Api<ConfigMap>| {
        watcher::watcher(
            cms,
            watcher::Config::default().fields("metadata.name=watched"),
        )
        .touched_objects()
        .map_ok(|cm| {
            cm.data
                .and_then(|d| d.get("a").cloned())
                .unwrap_or_default()
        })
        .boxed()
    };
    let mut first = seen(cms.clone());
    let mut second = seen(cms.clone());
    // Each starts with the object as it is.
    assert_eq!(
        within("the first watch's start", first.next())
            .await
            .unwrap()
            .unwrap(),
        "1"
    );
    assert_eq!(
        within("the second watch's start", second.next())
            .await
            .unwrap()
            .unwrap(),
        "1"
    );
    let drop = |user: &str, name: &str| rehearsal_apiserver::DropNextEvent {
        user_prefix: user.into(),
        resource: "configmaps".into(),
        namespace: "default".into(),
        name: name.into(),
    };
    server.drop_next_event(drop("system:serviceaccount:", "watched"));
    server.drop_next_event(drop("kubernetes-admin", "other"));
    server.drop_next_event(drop("kubernetes-admin", "watched"));
    let patch = |v: &str| Patch::Merge(json!({"data": {"a": v}}));
    cms.patch("watched", &PatchParams::default(), &patch("2"))
        .await
        .unwrap();
    cms.patch("watched", &PatchParams::default(), &patch("3"))
        .await
        .unwrap();
    // Neither of the admin's watches saw "2"; both go on with "3".
    let (a, b) = (
        within("the first watch's next event", first.next())
            .await
            .unwrap()
            .unwrap(),
        within("the second watch's next event", second.next())
            .await
            .unwrap()
            .unwrap(),
    );
    assert_eq!([a, b], ["3".to_string(), "3".to_string()], "both skipped 2");
    // The drops for another user and another object are still armed.
    assert_eq!(server.events_to_drop(), 2);
}

/// The `stale-view` fault: while it lasts, a user's lists are answered as the cluster was at
/// an earlier resourceVersion (objects changed, created and deleted since are as they were)
/// and its watches send nothing; its first write ends it, and its watch from the stale list's
/// resourceVersion then replays every change since, so it catches up; its lists are the present
/// again. Another user's view changes nothing for this one.
#[tokio::test]
async fn a_stale_view_serves_the_past_until_its_client_writes() {
    use futures::StreamExt;
    use kube::api::ListParams;
    use kube::runtime::watcher;
    let (server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    for name in ["kept", "gone"] {
        cms.create(&PostParams::default(), &configmap(name))
            .await
            .unwrap();
    }
    let then = cms.list(&ListParams::default()).await.unwrap();
    let as_of: u64 = then.metadata.resource_version.unwrap().parse().unwrap();
    let patch = Patch::Merge(json!({"data": {"a": "2"}}));
    cms.patch("kept", &PatchParams::default(), &patch)
        .await
        .unwrap();
    cms.create(&PostParams::default(), &configmap("born"))
        .await
        .unwrap();
    cms.delete("gone", &DeleteParams::default()).await.unwrap();
    let view = |user: &str| {
        Some(rehearsal_apiserver::StaleView {
            user_prefix: user.into(),
            as_of,
            ends_on: vec!["configmaps".into()],
        })
    };
    // Another user's view: the admin sees the present.
    server.serve_stale_view(view("system:serviceaccount:"));
    let now = cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(names_and_a(&now), ["born=1", "kept=2"]);
    assert!(!server.await_stale_list(std::time::Duration::ZERO).await);
    // The admin's view: its lists from the cache (any version) are the past, as of its
    // resourceVersion, list after list; its lists of the most recent are the present.
    server.serve_stale_view(view("kubernetes-admin"));
    for _ in 0..2 {
        let stale = cms.list(&ListParams::default().match_any()).await.unwrap();
        assert_eq!(names_and_a(&stale), ["gone=1", "kept=1"]);
        assert_eq!(stale.metadata.resource_version, Some(as_of.to_string()));
    }
    assert!(server.await_stale_list(std::time::Duration::ZERO).await);
    let now = cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(names_and_a(&now), ["born=1", "kept=2"]);
    // An informer lists the past; its watch from there waits for the view to end.
    // (Unpaged: kube sends `resourceVersion=0` only on a list without a limit.)
    let informer = watcher::Config {
        page_size: None,
        ..watcher::Config::default().any_semantic()
    };
    let mut events = watcher::watcher(cms.clone(), informer).boxed();
    let mut listed = Vec::new();
    loop {
        match within("the watcher's list", events.next())
            .await
            .unwrap()
            .unwrap()
        {
            watcher::Event::InitApply(cm) => listed.push(cm.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    listed.sort();
    assert_eq!(listed, ["gone", "kept", "kube-root-ca.crt"], "the past");
    assert_eq!(
        server
            .await_stale_view_ended(std::time::Duration::ZERO)
            .await,
        None
    );
    // A write of another resource leaves it; the admin's write of a ConfigMap ends it, and
    // the watch replays every change since.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(cms.clone().into_client(), "default");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "elsewhere"}})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        server
            .await_stale_view_ended(std::time::Duration::ZERO)
            .await,
        None
    );
    cms.create(&PostParams::default(), &configmap("written"))
        .await
        .unwrap();
    assert_eq!(
        server
            .await_stale_view_ended(std::time::Duration::ZERO)
            .await
            .as_deref(),
        Some("create configmaps"),
        "the write that ended it"
    );
    let seen = changes_until(&mut events, "apply written").await;
    assert_eq!(
        seen,
        ["apply kept=2", "apply born", "delete gone", "apply written"],
        "every change since, in order"
    );
    let now = cms.list(&ListParams::default().match_any()).await.unwrap();
    assert_eq!(names_and_a(&now), ["born=1", "kept=2", "written=1"]);
}

/// Each ConfigMap of `list` as `name=<data.a>` (but the namespace's `kube-root-ca.crt`).
fn names_and_a(list: &kube::core::ObjectList<ConfigMap>) -> Vec<String> {
    list.items
        .iter()
        .filter(|cm| cm.metadata.name.as_deref() != Some("kube-root-ca.crt"))
        .map(|cm| {
            let a = cm.data.as_ref().and_then(|d| d.get("a")).cloned();
            format!(
                "{}={}",
                cm.metadata.name.clone().unwrap(),
                a.unwrap_or_default()
            )
        })
        .collect()
}

/// The changes a watcher reports (`apply NAME`, `apply NAME=2` when `data.a` is 2,
/// `delete NAME`) up to and including `last`.
async fn changes_until(
    events: &mut futures::stream::BoxStream<
        'static,
        Result<kube::runtime::watcher::Event<ConfigMap>, kube::runtime::watcher::Error>,
    >,
    last: &str,
) -> Vec<String> {
    use futures::StreamExt;
    use kube::runtime::watcher::Event;
    let mut seen = Vec::new();
    while seen.last().map(String::as_str) != Some(last) {
        let line = match within("the watcher's catching up", events.next())
            .await
            .unwrap()
            .unwrap()
        {
            Event::Apply(cm) => {
                let two = cm.data.and_then(|d| d.get("a").cloned()) == Some("2".into());
                format!(
                    "apply {}{}",
                    cm.metadata.name.unwrap(),
                    if two { "=2" } else { "" }
                )
            }
            Event::Delete(cm) => format!("delete {}", cm.metadata.name.unwrap()),
            _ => continue,
        };
        seen.push(line);
    }
    seen
}
