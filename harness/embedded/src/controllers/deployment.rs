//! The Deployment controller: one ReplicaSet per pod template (`<deploy>-<pod-template-hash>`,
//! the hash also a label of its pods), revisions in the `deployment.kubernetes.io/revision`
//! annotation (a template seen before gets its ReplicaSet back with the next revision, as
//! `kubectl rollout undo` expects), Recreate and RollingUpdate (`maxSurge`, `maxUnavailable`
//! with kube-controller-manager's rounding and scale-up / scale-down steps), old ReplicaSets
//! pruned past `revisionHistoryLimit`, and the `Progressing` / `Available` conditions
//! `kubectl rollout status` reads, including `ProgressDeadlineExceeded`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use super::{benign, controlled_by, controller_ref, reflect, run_loop};
use crate::events::{EventType, Recorder, reference};

/// The revision annotation of Deployments and their ReplicaSets.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// The label tying pods and ReplicaSets to a template.
pub const TEMPLATE_HASH: &str = "pod-template-hash";

/// Runs the controller until aborted.
pub async fn run(client: Client) {
    let wake = Arc::new(Notify::new());
    let (deployments, _d) = reflect(Api::<Deployment>::all(client.clone()), wake.clone());
    let (sets, _s) = reflect(Api::<ReplicaSet>::all(client.clone()), wake.clone());
    let _ = deployments.wait_until_ready().await;
    let _ = sets.wait_until_ready().await;
    let events = Recorder::new(client.clone(), "deployment-controller");
    run_loop(wake, || async {
        let mut retry: Option<Duration> = None;
        let all_sets = sets.state();
        for d in deployments.state() {
            match reconcile(&client, &events, &d, &all_sets).await {
                Ok(Some(wait)) => retry = Some(retry.map_or(wait, |r| r.min(wait))),
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, deployment = %d.name_any(), "reconcile failed; retrying");
                    retry = Some(Duration::from_millis(500));
                }
            }
        }
        retry
    })
    .await;
}

/// The pod-template-hash of a Deployment's template (a valid label value).
pub fn template_hash(d: &Deployment) -> String {
    let template = serde_json::to_string(&d.spec.template).unwrap_or_default();
    hex::encode(Sha256::digest(template.as_bytes()))[..10].to_string()
}

fn revision(rs: &ReplicaSet) -> i64 {
    rs.annotations()
        .get(REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn spec_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.replicas.unwrap_or(1)
}

fn available(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

/// An IntOrString of `total` (percentages rounded up for surge, down for unavailable).
fn scaled(value: Option<&IntOrString>, total: i32, round_up: bool, default: i32) -> i32 {
    match value {
        None => default,
        Some(IntOrString::Int(n)) => *n,
        Some(IntOrString::String(s)) => {
            let percent: f64 = s.trim_end_matches('%').parse().unwrap_or(0.0);
            let exact = percent * f64::from(total) / 100.0;
            if round_up {
                exact.ceil() as i32
            } else {
                exact.floor() as i32
            }
        }
    }
}

/// `(maxSurge, maxUnavailable)` for `replicas`; both zero becomes one unavailable.
pub fn surge_and_unavailable(d: &Deployment, replicas: i32) -> (i32, i32) {
    let rolling = d
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref());
    let surge = scaled(
        rolling.and_then(|r| r.max_surge.as_ref()),
        replicas,
        true,
        (replicas as f64 * 0.25).ceil() as i32,
    );
    let unavailable = scaled(
        rolling.and_then(|r| r.max_unavailable.as_ref()),
        replicas,
        false,
        replicas / 4,
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge.max(0), unavailable.max(0))
    }
}

async fn scale(
    api: &Api<ReplicaSet>,
    events: &Recorder,
    d: &Deployment,
    rs: &ReplicaSet,
    replicas: i32,
    annotations: BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    let current = spec_replicas(rs);
    let changed_annotations = annotations
        .iter()
        .any(|(k, v)| rs.annotations().get(k) != Some(v));
    if current == replicas && !changed_annotations {
        return Ok(());
    }
    let patch = json!({"metadata": {"annotations": annotations}, "spec": {"replicas": replicas}});
    match api
        .patch(
            &rs.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => {}
        Err(e) if benign(&e) => return Ok(()),
        Err(e) => return Err(e),
    }
    if current != replicas {
        let direction = if replicas > current { "up" } else { "down" };
        events.emit(
            reference(d, None),
            EventType::Normal,
            "ScalingReplicaSet",
            format!(
                "Scaled {direction} replica set {} from {current} to {replicas}",
                rs.name_any()
            ),
        );
    }
    Ok(())
}

async fn reconcile(
    client: &Client,
    events: &Recorder,
    d: &Deployment,
    sets: &[Arc<ReplicaSet>],
) -> Result<Option<Duration>, kube::Error> {
    if d.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let ns = d.namespace().unwrap_or_default();
    let name = d.name_any();
    let uid = d.uid().unwrap_or_default();
    let replicas = d.spec.replicas.unwrap_or(1).max(0);
    let hash = template_hash(d);
    let mut owned: Vec<&Arc<ReplicaSet>> = sets
        .iter()
        .filter(|rs| {
            rs.namespace().as_deref() == Some(ns.as_str()) && controlled_by(rs.as_ref(), &uid)
        })
        .collect();
    owned.sort_by_key(|rs| {
        (
            revision(rs),
            rs.metadata.creation_timestamp.as_ref().map(|t| t.0),
        )
    });
    let new_rs = owned
        .iter()
        .find(|rs| rs.labels().get(TEMPLATE_HASH) == Some(&hash))
        .map(|rs| (**rs).clone());
    let olds: Vec<&Arc<ReplicaSet>> = owned
        .iter()
        .copied()
        .filter(|rs| rs.labels().get(TEMPLATE_HASH) != Some(&hash))
        .collect();
    let (surge, max_unavailable) = surge_and_unavailable(d, replicas);
    let pass = Rollout {
        api: Api::namespaced(client.clone(), &ns),
        events,
        d,
        max_old_revision: olds.iter().map(|rs| revision(rs)).max().unwrap_or(0),
        paused: d.spec.paused == Some(true),
        recreate: d.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate"),
        ns,
        name,
        replicas,
        hash,
        olds,
        surge,
        max_unavailable,
    };
    let (new_rs, created_new) = match pass.new_replica_set(new_rs).await? {
        NewReplicaSet::Ready { rs, created } => (rs, created),
        NewReplicaSet::Retry(after) => return Ok(Some(after)),
    };
    if !pass.paused
        && let Some(new_rs) = &new_rs
    {
        let rev = revision(new_rs).max(pass.max_old_revision + 1);
        if pass.recreate {
            pass.scale_recreate(new_rs, rev).await?;
        } else {
            pass.scale_rolling(new_rs, rev).await?;
        }
        pass.prune_history().await?;
    }
    let (status, recheck) = pass.status(new_rs.as_ref(), created_new);
    pass.publish(client, new_rs.as_ref(), &status).await?;
    Ok(recheck)
}

/// One reconcile pass over a Deployment and its ReplicaSets.
struct Rollout<'a> {
    api: Api<ReplicaSet>,
    events: &'a Recorder,
    d: &'a Deployment,
    ns: String,
    name: String,
    replicas: i32,
    /// The current template's `pod-template-hash`.
    hash: String,
    /// The ReplicaSets of other templates, oldest revision first.
    olds: Vec<&'a Arc<ReplicaSet>>,
    max_old_revision: i64,
    paused: bool,
    surge: i32,
    max_unavailable: i32,
    recreate: bool,
}

/// The ReplicaSet of the current template, or when to look again.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per pass and unpacked at once; boxing buys nothing"
)]
enum NewReplicaSet {
    /// `rs` is `None` while paused without one; `created` when this pass created it.
    Ready {
        rs: Option<ReplicaSet>,
        created: bool,
    },
    /// Creating it met a conflict (the store lags): look again after this delay.
    Retry(Duration),
}

impl Rollout<'_> {
    /// The revision, desired- and max-replicas annotations of the new ReplicaSet.
    fn annotations(&self, rev: i64) -> BTreeMap<String, String> {
        let replicas = self.replicas;
        BTreeMap::from([
            (REVISION.to_string(), rev.to_string()),
            (
                "deployment.kubernetes.io/desired-replicas".to_string(),
                replicas.to_string(),
            ),
            (
                "deployment.kubernetes.io/max-replicas".to_string(),
                (replicas + if self.recreate { 0 } else { self.surge }).to_string(),
            ),
        ])
    }

    /// The ReplicaSet of the current template, created (or revived with the next revision).
    async fn new_replica_set(
        &self,
        existing: Option<Arc<ReplicaSet>>,
    ) -> Result<NewReplicaSet, kube::Error> {
        let rs = match existing {
            Some(rs) => {
                let rev = revision(&rs);
                if rev <= self.max_old_revision && !self.paused {
                    let rev = self.max_old_revision + 1;
                    scale(
                        &self.api,
                        self.events,
                        self.d,
                        &rs,
                        spec_replicas(&rs),
                        self.annotations(rev),
                    )
                    .await?;
                    let mut rs = (*rs).clone();
                    rs.annotations_mut()
                        .insert(REVISION.into(), rev.to_string());
                    Some(rs)
                } else {
                    Some((*rs).clone())
                }
            }
            None if self.paused => None,
            None => return self.create_replica_set().await,
        };
        Ok(NewReplicaSet::Ready { rs, created: false })
    }

    /// Creates the current template's ReplicaSet: empty while old pods remain (or with
    /// Recreate), else at full scale.
    async fn create_replica_set(&self) -> Result<NewReplicaSet, kube::Error> {
        let hash = &self.hash;
        let mut template = self.d.spec.template.clone();
        let mut meta = template.metadata.clone().unwrap_or_default();
        let mut labels = meta.labels.clone().unwrap_or_default();
        labels.insert(TEMPLATE_HASH.into(), self.hash.clone());
        meta.labels = Some(labels.clone());
        template.metadata = Some(meta);
        let mut selector = self.d.spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(TEMPLATE_HASH.into(), self.hash.clone());
        let any_old_pods = self.olds.iter().any(|rs| spec_replicas(rs) > 0);
        let start = if any_old_pods || self.recreate {
            0
        } else {
            self.replicas
        };
        let rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(format!("{}-{hash}", self.name)),
                namespace: Some(self.ns.clone()),
                labels: Some(labels),
                annotations: Some(self.annotations(self.max_old_revision + 1)),
                owner_references: Some(vec![controller_ref(self.d)]),
                ..Default::default()
            },
            spec: ReplicaSetSpec {
                replicas: Some(start),
                min_ready_seconds: self.d.spec.min_ready_seconds,
                selector,
                template: Some(template),
            },
            status: None,
        };
        match self.api.create(&PostParams::default(), &rs).await {
            Ok(created) => {
                self.events.emit(
                    reference(self.d, None),
                    EventType::Normal,
                    "ScalingReplicaSet",
                    format!(
                        "Scaled up replica set {} from 0 to {start}",
                        created.name_any()
                    ),
                );
                Ok(NewReplicaSet::Ready {
                    rs: Some(created),
                    created: true,
                })
            }
            Err(e) if benign(&e) => Ok(NewReplicaSet::Retry(Duration::from_millis(200))),
            Err(e) => Err(e),
        }
    }

    /// Recreate: old ReplicaSets to zero, the new one up once their pods are gone.
    async fn scale_recreate(&self, new_rs: &ReplicaSet, rev: i64) -> Result<(), kube::Error> {
        let old_pods: i32 = self
            .olds
            .iter()
            .map(|rs| spec_replicas(rs) + rs.status.as_ref().map_or(0, |s| s.replicas))
            .sum();
        for old in &self.olds {
            scale(&self.api, self.events, self.d, old, 0, BTreeMap::new()).await?;
        }
        if old_pods == 0 {
            scale(
                &self.api,
                self.events,
                self.d,
                new_rs,
                self.replicas,
                self.annotations(rev),
            )
            .await?;
        }
        Ok(())
    }

    /// RollingUpdate: the new ReplicaSet up within the surge, old ones down while
    /// availability allows.
    async fn scale_rolling(&self, new_rs: &ReplicaSet, rev: i64) -> Result<(), kube::Error> {
        let old_total: i32 = self.olds.iter().map(|rs| spec_replicas(rs)).sum();
        let new_replicas = spec_replicas(new_rs);
        if old_total == 0 {
            return scale(
                &self.api,
                self.events,
                self.d,
                new_rs,
                self.replicas,
                self.annotations(rev),
            )
            .await;
        }
        // Scale up the new ReplicaSet within the surge.
        let all_total = old_total + new_replicas;
        let max_total = self.replicas + self.surge;
        let mut new_target = new_replicas;
        if all_total < max_total && new_replicas < self.replicas {
            new_target = (new_replicas + (max_total - all_total)).min(self.replicas);
        } else if new_replicas > self.replicas {
            new_target = self.replicas;
        }
        scale(
            &self.api,
            self.events,
            self.d,
            new_rs,
            new_target,
            self.annotations(rev),
        )
        .await?;
        // Scale down old ReplicaSets while availability allows.
        let min_available = self.replicas - self.max_unavailable;
        let new_unavailable = (new_target - available(new_rs)).max(0);
        let mut max_down = (old_total + new_target) - min_available - new_unavailable;
        let mut targets: Vec<i32> = self.olds.iter().map(|rs| spec_replicas(rs)).collect();
        // First the old replicas that are not available anyway.
        for (i, old) in self.olds.iter().enumerate() {
            if max_down <= 0 {
                break;
            }
            let unhealthy = (targets[i] - available(old)).max(0).min(max_down);
            targets[i] -= unhealthy;
            max_down -= unhealthy;
        }
        // Then available ones, down to the minimum availability.
        let all_available: i32 =
            self.olds.iter().map(|rs| available(rs)).sum::<i32>() + available(new_rs);
        let mut removable = (all_available - min_available).max(0);
        for (i, old) in self.olds.iter().enumerate() {
            if removable <= 0 {
                break;
            }
            let cut = targets[i].min(removable).min(available(old));
            targets[i] -= cut;
            removable -= cut;
        }
        for (i, old) in self.olds.iter().enumerate() {
            if targets[i] != spec_replicas(old) {
                scale(
                    &self.api,
                    self.events,
                    self.d,
                    old,
                    targets[i],
                    BTreeMap::new(),
                )
                .await?;
            }
        }
        Ok(())
    }

    /// Old ReplicaSets past the history limit, oldest first, once they are empty.
    async fn prune_history(&self) -> Result<(), kube::Error> {
        let limit = self.d.spec.revision_history_limit.unwrap_or(10).max(0) as usize;
        let empty: Vec<&&Arc<ReplicaSet>> = self
            .olds
            .iter()
            .filter(|rs| {
                spec_replicas(rs) == 0 && rs.status.as_ref().map_or(0, |s| s.replicas) == 0
            })
            .collect();
        if empty.len() > limit {
            for rs in empty.iter().take(empty.len() - limit) {
                match self
                    .api
                    .delete(&rs.name_any(), &DeleteParams::default())
                    .await
                {
                    Ok(_) => {}
                    Err(e) if benign(&e) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Status from the ReplicaSets as the store has them, and when to check the progress
    /// deadline again.
    fn status(
        &self,
        new_rs: Option<&ReplicaSet>,
        created_new: bool,
    ) -> (DeploymentStatus, Option<Duration>) {
        let (d, replicas) = (self.d, self.replicas);
        let mut all: Vec<&ReplicaSet> = self.olds.iter().map(|rs| rs.as_ref()).collect();
        if let Some(rs) = new_rs {
            all.push(rs);
        }
        let sum = |f: &dyn Fn(&ReplicaSet) -> i32| all.iter().map(|rs| f(rs)).sum::<i32>();
        let total = sum(&|rs| rs.status.as_ref().map_or(0, |s| s.replicas));
        let ready = sum(&|rs| {
            rs.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0)
        });
        let available_all = sum(&|rs| available(rs));
        let updated = new_rs
            .and_then(|rs| rs.status.as_ref())
            .map_or(0, |s| s.replicas);
        let new_name = new_rs.map(|rs| rs.name_any()).unwrap_or_default();
        let complete = updated == replicas
            && total == replicas
            && available_all == replicas
            && new_rs.is_some_and(|rs| available(rs) == replicas);
        let old_status = d.status.clone().unwrap_or_default();
        let conditions = Conditions {
            old: old_status.conditions.clone().unwrap_or_default(),
            now: Time(jiff::Timestamp::now()),
        };
        let available_condition = if available_all >= replicas - self.max_unavailable {
            conditions.condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.".into(),
                false,
            )
        } else {
            conditions.condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.".into(),
                false,
            )
        };
        let progress_made = old_status.updated_replicas.unwrap_or(0) != updated
            || old_status.available_replicas.unwrap_or(0) != available_all
            || old_status.replicas.unwrap_or(0) != total
            || old_status.ready_replicas.unwrap_or(0) != ready
            || d.metadata.generation != old_status.observed_generation;
        let (progressing, recheck) =
            self.progressing(&conditions, complete, progress_made, created_new, &new_name);
        let status = DeploymentStatus {
            observed_generation: d.metadata.generation,
            replicas: Some(total),
            updated_replicas: Some(updated),
            ready_replicas: Some(ready),
            available_replicas: Some(available_all),
            unavailable_replicas: Some((replicas - available_all).max(0)),
            conditions: Some(vec![available_condition, progressing]),
            collision_count: None,
            terminating_replicas: None,
        };
        (status, recheck)
    }

    /// The `Progressing` condition, with `ProgressDeadlineExceeded` once no progress was made
    /// within `progressDeadlineSeconds`, and when to check that deadline again.
    fn progressing(
        &self,
        conditions: &Conditions,
        complete: bool,
        progress_made: bool,
        created_new: bool,
        new_name: &str,
    ) -> (DeploymentCondition, Option<Duration>) {
        let now = &conditions.now;
        let previous = |t: &str| conditions.previous(t);
        let condition =
            |t: &str, status: &str, reason: &str, message: String, bump_update: bool| {
                conditions.condition(t, status, reason, message, bump_update)
            };
        let deadline = self.d.spec.progress_deadline_seconds.unwrap_or(600);
        let mut recheck = None;
        let progressing = if self.paused {
            condition(
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused".into(),
                false,
            )
        } else if complete {
            condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                format!("ReplicaSet \"{new_name}\" has successfully progressed."),
                false,
            )
        } else {
            let prev = previous("Progressing");
            let timed_out =
                prev.as_ref().and_then(|c| c.reason.as_deref()) == Some("ProgressDeadlineExceeded");
            let last_progress = prev
                .as_ref()
                .and_then(|c| c.last_update_time.as_ref())
                .map(|t| t.0)
                .unwrap_or(now.0);
            let due = last_progress + jiff::SignedDuration::from_secs(i64::from(deadline));
            if !progress_made && (timed_out || now.0 >= due) {
                condition(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    format!("ReplicaSet \"{new_name}\" has timed out progressing."),
                    false,
                )
            } else {
                let reason = if created_new {
                    "NewReplicaSetCreated"
                } else {
                    "ReplicaSetUpdated"
                };
                let message = if created_new {
                    format!("Created new replica set \"{new_name}\"")
                } else {
                    format!("ReplicaSet \"{new_name}\" is progressing.")
                };
                let c = condition("Progressing", "True", reason, message, progress_made);
                let since = c.last_update_time.as_ref().map(|t| t.0).unwrap_or(now.0);
                let due = since + jiff::SignedDuration::from_secs(i64::from(deadline));
                recheck = Some(
                    Duration::try_from(now.0.duration_until(due)).unwrap_or(Duration::from_secs(1))
                        + Duration::from_millis(50),
                );
                c
            }
        };
        (progressing, recheck)
    }

    /// Writes the status (and the revision annotation when it is stale) if they changed.
    async fn publish(
        &self,
        client: &Client,
        new_rs: Option<&ReplicaSet>,
        status: &DeploymentStatus,
    ) -> Result<(), kube::Error> {
        let (d, ns, name) = (self.d, &self.ns, &self.name);
        let old_status = d.status.clone().unwrap_or_default();
        let strip_times = |s: &DeploymentStatus| {
            let mut s = s.clone();
            for c in s.conditions.iter_mut().flatten() {
                c.last_update_time = None;
                c.last_transition_time = None;
            }
            s
        };
        let revision_now = new_rs.map(revision).filter(|r| *r > 0);
        let annotation_stale =
            revision_now.is_some_and(|r| d.annotations().get(REVISION) != Some(&r.to_string()));
        if strip_times(status) != strip_times(&old_status) || annotation_stale {
            let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
            if let Some(rev) = revision_now.filter(|_| annotation_stale) {
                let patch = json!({"metadata": {"annotations": {REVISION: rev.to_string()}}});
                match deployments
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {}
                    Err(e) if benign(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            super::merge_status(&deployments, name, status).await?;
        }
        Ok(())
    }
}

/// The conditions a status replaces, and the time of this pass.
struct Conditions {
    old: Vec<DeploymentCondition>,
    now: Time,
}

impl Conditions {
    fn previous(&self, t: &str) -> Option<DeploymentCondition> {
        self.old
            .iter()
            .find(|c| c.type_.as_deref() == Some(t))
            .cloned()
    }

    /// A condition that keeps its transition time while its status holds, and its update
    /// time while status and reason hold (unless `bump_update`).
    fn condition(
        &self,
        t: &str,
        status: &str,
        reason: &str,
        message: String,
        bump_update: bool,
    ) -> DeploymentCondition {
        let now = &self.now;
        let prev = self.previous(t);
        let same_status = prev.as_ref().and_then(|c| c.status.as_deref()) == Some(status);
        let same = same_status && prev.as_ref().and_then(|c| c.reason.as_deref()) == Some(reason);
        DeploymentCondition {
            type_: Some(t.into()),
            status: Some(status.into()),
            reason: Some(reason.into()),
            message: Some(message),
            last_transition_time: if same_status {
                prev.as_ref().and_then(|c| c.last_transition_time.clone())
            } else {
                Some(now.clone())
            },
            last_update_time: if same && !bump_update {
                prev.as_ref().and_then(|c| c.last_update_time.clone())
            } else {
                Some(now.clone())
            },
        }
    }
}
