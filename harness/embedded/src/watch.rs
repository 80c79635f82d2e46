//! The watch-and-reconcile plumbing the controllers and the node's network share: reflector
//! stores that wake a loop on every change, and the loop itself (a leaf: it imports neither).

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

/// Aborts the task when dropped, so a controller's watches end with the controller.
pub struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Mirrors every object of `api` into a store and wakes `wake` on each change; the watch
/// runs until the returned guard is dropped.
pub fn reflect<K>(api: Api<K>, wake: Arc<Notify>) -> (Store<K>, AbortOnDrop)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    );
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => wake.notify_one(),
                Err(error) => {
                    tracing::warn!(%error, kind = %K::kind(&()), "watch failed; retrying")
                }
            }
        }
    });
    (reader, AbortOnDrop(task))
}

/// Runs `reconcile` whenever `wake` fires, or after the delay it asks for.
pub async fn run_loop<F, Fut>(wake: Arc<Notify>, mut reconcile: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<Duration>>,
{
    loop {
        match reconcile().await {
            Some(delay) => {
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = tokio::time::sleep(delay) => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
