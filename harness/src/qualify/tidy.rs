//! What a qualification leaves in the fleet's namespace. Every object it creates (the clone
//! GameServer, its Backup and Restores, the read-back pods) carries [`RUN_LABEL`] with the run
//! id, so the run removes exactly its own objects at the end, `--keep` can name them, and a
//! later run finds what an earlier one (killed, or kept) left behind and removes it first.
//!
//! ```no_run
//! # async fn f(client: kube::Client) -> Result<(), rehearsal::qualify::tidy::TidyError> {
//! use rehearsal::qualify::tidy;
//! let leftovers = tidy::find(&client, "games", None).await?;
//! tidy::remove(&client, "games", &leftovers, std::time::Duration::from_secs(90)).await?;
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use gameplane_api::backup::Backup;
use gameplane_api::gameserver::GameServer;
use gameplane_api::restore::Restore;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, ListParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::evidence::invariants::way_back::PREVIOUS_VERSION_ANNOTATION;
use crate::wait::{WaitError, await_condition, conditions};

/// The label every object a qualification creates carries; its value is the run id.
pub const RUN_LABEL: &str = "rehearsal.local/qualify-run";

/// The label naming the namespace a qualification ran in, on the cluster-scoped objects it
/// creates (its canary Module), so a run's tidy-up finds only its own namespace's.
pub const NAMESPACE_LABEL: &str = "rehearsal.local/qualify-namespace";

/// The labels of objects created by run `run_id`.
pub fn labels(run_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(RUN_LABEL.to_string(), run_id.to_string())])
}

/// Whether `run_id` can be a label value (it labels every object the run creates).
pub fn check_run_id(run_id: &str) -> Result<(), String> {
    let ok_chars = run_id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if run_id.len() <= 63 && ok_chars && ends(run_id.chars().next()) && ends(run_id.chars().last())
    {
        Ok(())
    } else {
        Err(format!(
            "run id {run_id:?} cannot label the objects the run creates; use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        ))
    }
}

/// One object a qualification run created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Created {
    /// `Module` (cluster-scoped), `GameServer`, `Backup`, `Restore` or `Pod`.
    pub kind: &'static str,
    /// The object's name in the qualification namespace.
    pub name: String,
    /// The run that created it (its [`RUN_LABEL`] value).
    pub run: String,
}

impl std::fmt::Display for Created {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (run {})", self.kind, self.name, self.run)
    }
}

/// Why the namespace could not be tidied; each names the object and what to do.
#[derive(Debug, thiserror::Error)]
pub enum TidyError {
    #[error(
        "cannot list {kind}s in namespace {namespace}: {}; check the context's permissions",
        crate::kube_error::line(source)
    )]
    /// The objects of one kind could not be listed.
    List {
        /// The kind listed.
        kind: &'static str,
        /// The qualification namespace.
        namespace: String,
        /// kube's error.
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "cannot remove {object} from namespace {namespace}: {}; remove it with `kubectl -n {namespace} delete {} {}`, then rerun",
        crate::kube_error::line(source), object.kind.to_lowercase(), object.name
    )]
    /// Deleting a run's object failed.
    Delete {
        /// The object.
        object: Created,
        /// The qualification namespace.
        namespace: String,
        /// kube's error.
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "{object} in namespace {namespace} was deleted but is still there: {source}; look for a finalizer that is not released (`kubectl -n {namespace} get {} {} -o yaml`)",
        object.kind.to_lowercase(), object.name
    )]
    /// A deleted object is still there after the bound (usually a finalizer nobody releases).
    NotGone {
        /// The object.
        object: Created,
        /// The qualification namespace.
        namespace: String,
        /// The wait's error, naming the object's last observed state.
        #[source]
        source: Box<WaitError>,
    },
    /// The restic snapshots of a run could not be listed or forgotten.
    #[error(
        "cannot {verb} the restic snapshots of run(s) {runs} in the repository of Secret {namespace}/{secret}: {reason}; forget them by hand with `restic forget --tag {tags} --keep-tag {keep_none}` against that repository",
        keep_none = crate::probe::restic::KEEP_NONE_TAG
    )]
    Snapshots {
        /// `list` or `forget`.
        verb: &'static str,
        /// The runs, comma-separated.
        runs: String,
        /// The qualification namespace.
        namespace: String,
        /// The repository Secret the runs' Backups named.
        secret: String,
        /// The tag filter of the first run (`rehearsal,qualify,rehearsal-run=<id>`).
        tags: String,
        /// What went wrong.
        reason: String,
    },
    #[error(
        "{kind} {namespace}/{name} exists but was not made by rehearse qualify (it has no {RUN_LABEL} label), and the run needs that name; rename or remove it, then rerun"
    )]
    /// An object the run needs to create exists without the run label: someone else's, never deleted.
    Foreign {
        /// Its kind.
        kind: &'static str,
        /// The qualification namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

fn selector(run: Option<&str>) -> ListParams {
    ListParams::default().labels(&match run {
        Some(run) => format!("{RUN_LABEL}={run}"),
        None => RUN_LABEL.to_string(),
    })
}

async fn list<K>(
    api: &Api<K>,
    kind: &'static str,
    namespace: &str,
    run: Option<&str>,
) -> Result<Vec<Created>, TidyError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let items = api
        .list(&selector(run))
        .await
        .map_err(|e| TidyError::List {
            kind,
            namespace: namespace.to_string(),
            source: Box::new(e),
        })?
        .items;
    Ok(items
        .iter()
        .map(|o| Created {
            kind,
            name: o.name_any(),
            run: o.labels().get(RUN_LABEL).cloned().unwrap_or_default(),
        })
        .collect())
}

/// The objects in `namespace` labelled as a qualification's: run `run`'s, or every run's when
/// `None`. Ordered as they are removed: canary Modules, Restores, Backups, GameServers, then pods.
pub async fn find(
    client: &kube::Client,
    namespace: &str,
    run: Option<&str>,
) -> Result<Vec<Created>, TidyError> {
    // Cluster-scoped: the run's canary Modules, found by run and by the namespace they name.
    let modules = Api::<gameplane_api::Module>::all(client.clone());
    // A cluster without the Module CRD (404) has none.
    let listed = match modules.list(&selector(run)).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(s)) if s.code == 404 => vec![],
        Err(e) => {
            return Err(TidyError::List {
                kind: "Module",
                namespace: namespace.to_string(),
                source: Box::new(e),
            });
        }
    };
    let mut out: Vec<Created> = listed
        .iter()
        .filter(|m| m.labels().get(NAMESPACE_LABEL).map(String::as_str) == Some(namespace))
        .map(|m| Created {
            kind: "Module",
            name: m.name_any(),
            run: m.labels().get(RUN_LABEL).cloned().unwrap_or_default(),
        })
        .collect();
    out.extend(
        list(
            &Api::<Restore>::namespaced(client.clone(), namespace),
            "Restore",
            namespace,
            run,
        )
        .await?,
    );
    out.extend(
        list(
            &Api::<Backup>::namespaced(client.clone(), namespace),
            "Backup",
            namespace,
            run,
        )
        .await?,
    );
    out.extend(
        list(
            &Api::<GameServer>::namespaced(client.clone(), namespace),
            "GameServer",
            namespace,
            run,
        )
        .await?,
    );
    out.extend(
        list(
            &Api::<Pod>::namespaced(client.clone(), namespace),
            "Pod",
            namespace,
            run,
        )
        .await?,
    );
    Ok(out)
}

async fn delete_and_wait<K>(
    api: &Api<K>,
    object: &Created,
    namespace: &str,
    bound: Duration,
) -> Result<(), TidyError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
{
    match api.delete(&object.name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => {
            return Err(TidyError::Delete {
                object: object.clone(),
                namespace: namespace.to_string(),
                source: Box::new(e),
            });
        }
    }
    await_gone(api, object, namespace, bound).await
}

async fn await_gone<K>(
    api: &Api<K>,
    object: &Created,
    namespace: &str,
    bound: Duration,
) -> Result<(), TidyError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
{
    await_condition(api, &object.name, conditions::deleted(), bound)
        .await
        .map(|_| ())
        .map_err(|e| TidyError::NotGone {
            object: object.clone(),
            namespace: namespace.to_string(),
            source: Box::new(e),
        })
}

/// Deletes `objects` and waits (each within `bound`) until they are gone — for a GameServer
/// also its pod and the claims it owned, so the next run can create the same names at once.
pub async fn remove(
    client: &kube::Client,
    namespace: &str,
    objects: &[Created],
    bound: Duration,
) -> Result<(), TidyError> {
    for object in objects {
        match object.kind {
            "Module" => {
                let api = Api::<gameplane_api::Module>::all(client.clone());
                delete_and_wait(&api, object, namespace, bound).await?;
            }
            "Restore" => {
                let api = Api::<Restore>::namespaced(client.clone(), namespace);
                delete_and_wait(&api, object, namespace, bound).await?;
            }
            "Backup" => {
                let api = Api::<Backup>::namespaced(client.clone(), namespace);
                delete_and_wait(&api, object, namespace, bound).await?;
            }
            "GameServer" => remove_server(client, namespace, object, bound).await?,
            _ => {
                let api = Api::<Pod>::namespaced(client.clone(), namespace);
                delete_and_wait(&api, object, namespace, bound).await?;
            }
        }
    }
    Ok(())
}

/// The label a kept way back carries instead of [`RUN_LABEL`]: the run that took it.
pub const WAY_BACK_LABEL: &str = "rehearsal.local/way-back-of";

/// A pre-promotion Backup the clean-up found and kept: its member is not back on the version it
/// ran before, so the Backup (and its snapshot) is that member's way back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptWayBack {
    /// The Backup.
    pub backup: String,
    /// Its member.
    pub server: String,
    /// The version the member ran before (`None`: the template's default).
    pub previous: Option<String>,
    /// Its snapshot (empty: it had not succeeded).
    pub snapshot: String,
    /// Why it was kept: what a fresh read showed of its member.
    pub why: String,
    /// The run that took it.
    pub run: String,
}

/// Splits `objects` (a run's, or every run's leftovers) into what may be removed and the
/// pre-promotion Backups that must stay: one whose member a fresh read does not show back on
/// the version the Backup's [`PREVIOUS_VERSION_ANNOTATION`] names (see
/// [`crate::evidence::invariants::way_back::verified_back`]) is kept — relabelled [`WAY_BACK_LABEL`], so
/// neither this run nor a later one removes it or forgets its snapshot.
pub async fn hold_way_backs(
    client: &kube::Client,
    namespace: &str,
    objects: Vec<Created>,
) -> Result<(Vec<Created>, Vec<KeptWayBack>), TidyError> {
    use crate::evidence::invariants::way_back::{previous_from_annotation, verified_back};
    let backups = Api::<Backup>::namespaced(client.clone(), namespace);
    let servers = Api::<GameServer>::namespaced(client.clone(), namespace);
    let list_err = |kind: &'static str| {
        let namespace = namespace.to_string();
        move |e| TidyError::List {
            kind,
            namespace,
            source: Box::new(e),
        }
    };
    let mut removable = Vec::new();
    let mut kept = Vec::new();
    for object in objects {
        if object.kind != "Backup" {
            removable.push(object);
            continue;
        }
        let Some(b) = backups
            .get_opt(&object.name)
            .await
            .map_err(list_err("Backup"))?
        else {
            removable.push(object);
            continue;
        };
        let annotation = b.annotations().get(PREVIOUS_VERSION_ANNOTATION).cloned();
        let pre_promotion =
            annotation.is_some() || b.spec.tags.iter().any(|t| t == "pre-promotion");
        if !pre_promotion {
            removable.push(object);
            continue;
        }
        let member = b.spec.server_ref.name.clone();
        let previous = annotation
            .as_deref()
            .and_then(previous_from_annotation)
            .map(str::to_string);
        let now = servers
            .get_opt(&member)
            .await
            .map_err(list_err("GameServer"))?
            .map(|gs| server_now(&gs));
        let why = match (
            &annotation,
            verified_back(previous.as_deref(), now.as_ref()),
        ) {
            (Some(_), Ok(())) => {
                removable.push(object);
                continue;
            }
            (None, _) => "the version its member ran before was not recorded".to_string(),
            (Some(_), Err(why)) => why,
        };
        let patch = serde_json::json!({"metadata": {"labels": {
            RUN_LABEL: null,
            WAY_BACK_LABEL: object.run,
        }}});
        backups
            .patch(
                &object.name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
            .map_err(|e| TidyError::Delete {
                object: object.clone(),
                namespace: namespace.to_string(),
                source: Box::new(e),
            })?;
        kept.push(KeptWayBack {
            backup: object.name.clone(),
            server: member,
            previous,
            snapshot: b.status.and_then(|s| s.snapshot_id).unwrap_or_default(),
            why,
            run: object.run,
        });
    }
    Ok((removable, kept))
}

/// A GameServer as [`crate::evidence::invariants::way_back`] judges it (without its pod and claims).
pub fn server_now(gs: &GameServer) -> crate::evidence::invariants::way_back::ServerNow {
    crate::evidence::invariants::way_back::ServerNow {
        server: gs.name_any(),
        version: gs.spec.version.clone(),
        suspend: gs.spec.suspend,
        phase: gs
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .map(|p| format!("{p:?}")),
        pod_uid: None,
        pvcs: BTreeMap::new(),
    }
}

/// The restic tags every snapshot run `run_id` takes carries: its source Backup's tags.
pub fn snapshot_tags(run_id: &str) -> Vec<String> {
    vec![
        "rehearsal".into(),
        "qualify".into(),
        format!("rehearsal-run={run_id}"),
    ]
}

/// The restic tags of the snapshot pre-promotion Backup `backup` of run `run_id` takes: the
/// Backup's own (never the run's `qualify` tag), so forgetting the run's snapshots leaves a
/// promoted member's kept backup alone, and forgetting a leftover pre-promotion Backup's
/// snapshot touches no other.
pub fn pre_promotion_tags(run_id: &str, backup: &str) -> Vec<String> {
    vec![
        "rehearsal".into(),
        "pre-promotion".into(),
        format!("rehearsal-run={run_id}"),
        format!("rehearsal-backup={backup}"),
    ]
}

/// What became of the restic snapshots the runs of some Backups took.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Snapshots {
    /// The runs whose Backups were looked at.
    pub runs: Vec<String>,
    /// The snapshots (restic's ids) found: forgotten, or only listed when kept.
    pub ids: Vec<String>,
    /// Whether they were forgotten (`restic forget`) or kept.
    pub forgotten: bool,
}

/// Forgets (or, with `forget` false, only lists) the restic snapshots that the runs of the
/// Backups among `objects` took, found by [`snapshot_tags`] in the repository each Backup
/// named, with restic in a pod labelled with run `by` (deleted when it ends). Nothing else in
/// the repository is touched, and no pod runs when `objects` holds no Backup.
pub async fn snapshots(
    client: &kube::Client,
    namespace: &str,
    objects: &[Created],
    by: &str,
    forget: bool,
    bound: Duration,
) -> Result<Snapshots, TidyError> {
    use crate::probe::restic;
    let api = Api::<Backup>::namespaced(client.clone(), namespace);
    if forget {
        // `restic forget` needs the repository's exclusive lock, which a copy still running
        // holds against it (a killed run's pre-promotion Backup, kept as a way back, may be
        // copying yet): the namespace's Backups under way are let end first.
        await_copies_ended(&api, bound).await;
    }
    // Repository Secret → the runs whose Backups named it, and the tags each Backup gave its
    // snapshot (a pre-promotion backup's differ from the source's: see
    // [`pre_promotion_tags`]).
    let mut by_secret: BTreeMap<String, (Vec<String>, Vec<Vec<String>>)> = BTreeMap::new();
    for object in objects.iter().filter(|o| o.kind == "Backup") {
        let backup = api
            .get_opt(&object.name)
            .await
            .map_err(|e| TidyError::List {
                kind: "Backup",
                namespace: namespace.to_string(),
                source: Box::new(e),
            })?;
        let Some(backup) = backup else {
            continue;
        };
        let Some(secret) = backup.spec.repo_ref.map(|r| r.name) else {
            continue;
        };
        let (runs, groups) = by_secret.entry(secret).or_default();
        if !runs.contains(&object.run) {
            runs.push(object.run.clone());
        }
        let tags = if backup.spec.tags.is_empty() {
            snapshot_tags(&object.run)
        } else {
            backup.spec.tags
        };
        if !groups.contains(&tags) {
            groups.push(tags);
        }
    }
    let mut out = Snapshots {
        forgotten: forget,
        ..Default::default()
    };
    for (i, (secret, (runs, groups))) in by_secret.iter().enumerate() {
        let verb = if forget { "forget" } else { "list" };
        let failed = |reason: String| TidyError::Snapshots {
            verb,
            runs: runs.join(", "),
            namespace: namespace.to_string(),
            secret: secret.clone(),
            tags: groups[0].join(","),
            reason,
        };
        let pod = restic::pod(
            // A pod name is lowercase with `-` (a run id may hold capitals, `_` and `.`).
            &format!(
                "rehearsal-snapshots-{i}-{}",
                by.to_lowercase().replace(['_', '.'], "-")
            ),
            secret,
            &restic::snapshots_script(groups, forget),
            &labels(by),
        );
        let output = restic::run(client, namespace, &pod, bound)
            .await
            .map_err(|e| failed(e.to_string()))?;
        out.ids
            .extend(restic::parse_snapshots(&output, forget).map_err(failed)?);
        out.runs.extend(runs.iter().cloned());
    }
    Ok(out)
}

/// Waits (each within `bound`) until every Backup of `api` that is neither Succeeded nor Failed
/// has ended or is gone; one that does not is left to the `restic` call to report.
async fn await_copies_ended(api: &Api<Backup>, bound: Duration) {
    let Ok(list) = api.list(&ListParams::default()).await else {
        return;
    };
    let ended = || {
        crate::wait::Condition::new(
            "the Backup ended (Succeeded or Failed) or gone",
            |b: Option<&Backup>| {
                let phase = b.and_then(|b| b.status.as_ref()?.phase);
                match (b, phase.map(|p| format!("{p:?}"))) {
                    (None, _) => crate::wait::Progress::Met,
                    (Some(_), Some(p)) if p == "Succeeded" || p == "Failed" => {
                        crate::wait::Progress::Met
                    }
                    _ => crate::wait::Progress::Pending,
                }
            },
        )
    };
    for b in list.items {
        let phase = b
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .map(|p| format!("{p:?}"));
        if matches!(phase.as_deref(), Some("Succeeded" | "Failed")) {
            continue;
        }
        let _ = await_condition(api, &b.name_any(), ended(), bound).await;
    }
}

async fn remove_server(
    client: &kube::Client,
    namespace: &str,
    object: &Created,
    bound: Duration,
) -> Result<(), TidyError> {
    let servers = Api::<GameServer>::namespaced(client.clone(), namespace);
    let uid = servers
        .get_opt(&object.name)
        .await
        .ok()
        .flatten()
        .and_then(|gs| gs.metadata.uid);
    // Suspended first: with its pod gone and its StatefulSet at zero, no controller acting on
    // a stale view of the deleted objects can start another pod holding its claims.
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let pod = Created {
        kind: "Pod",
        name: gameplane_api::names::pod(&object.name),
        run: object.run.clone(),
    };
    if uid.is_some() {
        let suspend = serde_json::json!({"spec": {"suspend": true}});
        let _ = servers
            .patch(
                &object.name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&suspend),
            )
            .await;
        await_gone(&pods, &pod, namespace, bound).await?;
    }
    delete_and_wait(&servers, object, namespace, bound).await?;
    let Some(uid) = uid else {
        return Ok(());
    };
    // The garbage collector removes what the server owned; a reconcile that was already
    // running can still write a dependent after the server went, so what the gone server owned
    // is deleted explicitly too, and awaited, before the next run reuses the names.
    let owned = |kind: &'static str, name: String| Created {
        kind,
        name,
        run: object.run.clone(),
    };
    // Its StatefulSet and pod carry names derived from the server's, so they are the run's.
    let sets = Api::<StatefulSet>::namespaced(client.clone(), namespace);
    let mut set_names = owned_by(&sets, &uid).await;
    set_names.push(gameplane_api::names::statefulset(&object.name));
    set_names.dedup();
    for set in set_names {
        delete_and_wait(&sets, &owned("StatefulSet", set), namespace, bound).await?;
    }
    delete_and_wait(&pods, &pod, namespace, bound).await?;
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
    for claim in owned_by(&claims, &uid).await {
        delete_and_wait(
            &claims,
            &owned("PersistentVolumeClaim", claim),
            namespace,
            bound,
        )
        .await?;
    }
    Ok(())
}

/// Names of the objects of `api` with an ownerReference to `uid` (none when unlistable: the
/// waits that follow report what is left).
async fn owned_by<K>(api: &Api<K>, uid: &str) -> Vec<String>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|o| o.owner_references().iter().any(|r| r.uid == uid))
        .map(|o| o.name_any())
        .collect()
}

/// Refuses a name the run needs when an object not made by a qualification holds it (a
/// labelled one is a leftover, removed by [`remove`] first).
pub async fn check_free(
    client: &kube::Client,
    namespace: &str,
    server: &str,
    backups: &[&str],
    restores: &[&str],
) -> Result<(), TidyError> {
    let foreign = |kind: &'static str, name: &str| TidyError::Foreign {
        kind,
        namespace: namespace.to_string(),
        name: name.to_string(),
    };
    let unlabelled = |labels: &BTreeMap<String, String>| !labels.contains_key(RUN_LABEL);
    let get_err = |kind: &'static str| {
        let namespace = namespace.to_string();
        move |e| TidyError::List {
            kind,
            namespace,
            source: Box::new(e),
        }
    };
    let servers = Api::<GameServer>::namespaced(client.clone(), namespace);
    if let Some(gs) = servers
        .get_opt(server)
        .await
        .map_err(get_err("GameServer"))?
        && unlabelled(gs.labels())
    {
        return Err(foreign("GameServer", server));
    }
    let api = Api::<Backup>::namespaced(client.clone(), namespace);
    for name in backups {
        if let Some(b) = api.get_opt(name).await.map_err(get_err("Backup"))?
            && unlabelled(b.labels())
        {
            return Err(foreign("Backup", name));
        }
    }
    let api = Api::<Restore>::namespaced(client.clone(), namespace);
    for name in restores {
        if let Some(r) = api.get_opt(name).await.map_err(get_err("Restore"))?
            && unlabelled(r.labels())
        {
            return Err(foreign("Restore", name));
        }
    }
    Ok(())
}

/// The `kubectl` commands that show what run `run_id` kept.
pub fn inspect_commands(
    kubeconfig: &std::path::Path,
    context: &str,
    namespace: &str,
    run_id: &str,
) -> Vec<String> {
    let base = format!(
        "kubectl --kubeconfig {} --context {context} -n {namespace}",
        kubeconfig.display()
    );
    vec![
        format!("{base} get gameservers,backups,restores,pods -l {RUN_LABEL}={run_id}"),
        format!("{base} describe gameservers -l {RUN_LABEL}={run_id}"),
        format!(
            "{base} delete gameservers,backups,restores,pods -l {RUN_LABEL}={run_id}   # when done"
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_must_be_a_label_value() {
        assert!(check_run_id("20261201T161000Z-ab12cd").is_ok());
        assert!(check_run_id("qualify run").is_err());
        assert!(check_run_id("-x").is_err());
        assert!(check_run_id(&"a".repeat(64)).is_err());
    }
}
