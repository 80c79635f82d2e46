//! Wires the four controllers (GameServer, Backup, Restore, Module) to the cluster and runs them until shutdown.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use gameplane_api::names::labels;
use gameplane_api::{Backup, GameServer, Module, Restore};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};

use crate::context::Ctx;
use crate::error::Error;
use crate::settings::Settings;

fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

fn error_policy<K>(obj: Arc<K>, error: &Error, _ctx: Arc<Ctx>) -> Action
where
    K: kube::Resource<DynamicType = ()>,
{
    tracing::warn!(kind = %K::kind(&()), name = %obj.meta().name.as_deref().unwrap_or_default(), %error, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(1))
}

/// The unfinished Restores of GameServer `server` in `ns`.
fn unfinished_restores(
    store: &kube::runtime::reflector::Store<Restore>,
    ns: Option<String>,
    server: Option<String>,
) -> Vec<ObjectRef<Restore>> {
    let Some(server) = server else {
        return Vec::new();
    };
    store
        .state()
        .into_iter()
        .filter(|r| r.namespace() == ns && r.spec.server_ref.name == server)
        .filter(|r| {
            !r.status
                .as_ref()
                .and_then(|s| s.phase)
                .is_some_and(|p| p.is_terminal())
        })
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}

/// How every watch of this operator lists: as client-go's informers do, `resourceVersion=0`
/// (any version not older than the client's), which an API server answers from its watch cache,
/// lagging or not; its reads of one object and its own lists read the present.
fn informer() -> watcher::Config {
    // Unpaged: kube sends `resourceVersion=0` only on a list without a limit.
    watcher::Config {
        page_size: None,
        ..watcher::Config::default().any_semantic()
    }
}

fn game_pods() -> watcher::Config {
    informer().labels(labels::SERVER)
}

/// Writes the ready file, if one was asked for.
async fn write_ready(ready_file: Option<PathBuf>) {
    if let Some(path) = ready_file
        && let Err(error) = tokio::fs::write(&path, b"ready\n").await
    {
        tracing::error!(path = %path.display(), %error, "cannot write the ready file");
    }
}

/// The Module controller and its cache. Modules and their templates are cluster-scoped: watched
/// cluster-wide whatever namespace the other controllers watch.
fn module_controller(
    client: &Client,
    ctx: Arc<Ctx>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) -> (
    kube::runtime::reflector::Store<Module>,
    impl Future<Output = ()>,
) {
    let controller = Controller::new(Api::<Module>::all(client.clone()), informer());
    let store = controller.store();
    let run = controller
        .graceful_shutdown_on(stop)
        .run(crate::module::reconcile, error_policy, ctx)
        .for_each(|_| async {});
    (store, run)
}

/// Runs the GameServer, Backup and Restore controllers until `shutdown` resolves, then lets
/// in-flight reconciles finish.
///
/// `ready_file`, if given, is written once the GameServer, Backup and Restore caches have
/// their first full listing (the harness waits for it before it creates objects).
pub async fn run(
    client: Client,
    settings: Settings,
    namespace: Option<String>,
    ready_file: Option<PathBuf>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let ctx = Arc::new(Ctx::new(client.clone(), settings));
    let ns = namespace.as_deref();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let stop = move || {
        let mut rx = rx.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    };

    let server_controller = Controller::new(api::<GameServer>(&client, ns), informer());
    let server_store = server_controller.store();
    let servers = server_controller
        .owns(api::<StatefulSet>(&client, ns), informer())
        .owns(api::<PersistentVolumeClaim>(&client, ns), informer())
        .watches(api::<Pod>(&client, ns), game_pods(), |pod| {
            let server = pod.labels().get(labels::SERVER).cloned();
            let ns = pod.namespace();
            server
                .map(|s| ObjectRef::<GameServer>::new(&s).within(ns.as_deref().unwrap_or_default()))
        })
        .graceful_shutdown_on(stop())
        .run(crate::gameserver::reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});

    let backup_controller = Controller::new(api::<Backup>(&client, ns), informer())
        .owns(api::<Job>(&client, ns), informer());
    let store = backup_controller.store();
    let backup_store = store.clone();
    let backups = backup_controller
        .watches(api::<Pod>(&client, ns), game_pods(), move |pod| {
            // A game pod changed: every unfinished Backup of that server re-checks its source.
            let server = pod
                .labels()
                .get(labels::SERVER)
                .cloned()
                .unwrap_or_default();
            let ns = pod.namespace();
            store
                .state()
                .into_iter()
                .filter(|b| b.namespace() == ns && b.spec.server_ref.name == server)
                .filter(|b| !b.phase().is_some_and(|p| p.is_terminal()))
                .map(|b| ObjectRef::from_obj(b.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(stop())
        .run(crate::backup::reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});

    let restore_controller = Controller::new(api::<Restore>(&client, ns), informer());
    let restore_store = restore_controller.store();
    let (by_pod, by_claim) = (restore_store.clone(), restore_store.clone());
    let restores = restore_controller
        .owns(api::<Job>(&client, ns), informer())
        // A Restore waits for its server's pod to be gone (and, under the
        // `restore-recreates-pvc` defect, for new claims): those changes wake it, no polling.
        .watches(api::<Pod>(&client, ns), game_pods(), move |pod| {
            let server = pod.labels().get(labels::SERVER).cloned();
            unfinished_restores(&by_pod, pod.namespace(), server)
        })
        .watches(
            api::<PersistentVolumeClaim>(&client, ns),
            informer(),
            move |pvc| {
                let server = pvc
                    .owner_references()
                    .iter()
                    .find(|o| o.kind == "GameServer")
                    .map(|o| o.name.clone());
                unfinished_restores(&by_claim, pvc.namespace(), server)
            },
        )
        .graceful_shutdown_on(stop())
        .run(crate::restore::reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});

    let (module_store, modules) = module_controller(&client, ctx.clone(), stop());

    let trigger = async move {
        shutdown.await;
        let _ = tx.send(true);
    };
    let ready = async move {
        let synced = async {
            server_store.wait_until_ready().await?;
            backup_store.wait_until_ready().await?;
            module_store.wait_until_ready().await?;
            restore_store.wait_until_ready().await
        };
        if synced.await.is_err() {
            return;
        }
        tracing::info!("caches synced; reconciling");
        write_ready(ready_file).await;
    };
    tokio::join!(servers, backups, restores, modules, trigger, ready);
    tracing::info!("shut down: in-flight reconciles finished");
}
