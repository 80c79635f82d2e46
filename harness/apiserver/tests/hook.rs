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

/// The `dropped-event` fault: the next event about one object is withheld from the first watch
/// of the named user that would receive it; that watch goes on (it sees the next change), a
/// second watch sees the withheld event, and a drop for another user or object withholds
/// nothing.
#[tokio::test]
async fn a_dropped_event_is_withheld_from_one_watch_that_goes_on() {
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
    // One watch never saw "2"; the other saw both.
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
    let mut got = [a, b];
    got.sort();
    assert_eq!(
        got,
        ["2".to_string(), "3".to_string()],
        "one watch skipped 2"
    );
    // The drops for another user and another object are still armed.
    assert_eq!(server.events_to_drop(), 2);
}
