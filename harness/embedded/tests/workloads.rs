//! Controllers on the embedded node: StatefulSets with claims and rolling updates, Jobs.

mod common;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use rehearsal_embedded::Image;
use serde_json::json;

fn statefulset(name: &str, image: &str, replicas: i32) -> StatefulSet {
    common::json(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 2,
                    "containers": [{"name": "main", "image": image,
                    "command": ["sh", "-c", "if [ -f /data/marker ]; then echo found $(cat /data/marker); else echo $POD_UID > /data/marker; echo wrote $POD_UID; fi; echo version=$VERSION; touch /tmp/ready; exec sleep 3600"],
                    "env": [{"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}],
                    "readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    }))
}

fn sts_status(
    pred: impl Fn(&StatefulSet) -> bool,
) -> impl kube::runtime::wait::Condition<StatefulSet> {
    move |s: Option<&StatefulSet>| s.is_some_and(&pred)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn pvc_survives_pod_recreation_by_its_statefulset() {
    let cluster = common::start().await;
    let client = cluster.client();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    sets.create(
        &PostParams::default(),
        &statefulset("game", "busybox:1.36", 1),
    )
    .await
    .unwrap();
    let first = common::wait_for(&pods, "game-0", "pod game-0 Ready", common::pod_ready()).await;
    let first_uid = first.metadata.uid.clone().unwrap();
    let labels = first.metadata.labels.clone().unwrap();
    assert_eq!(
        labels
            .get("statefulset.kubernetes.io/pod-name")
            .map(String::as_str),
        Some("game-0")
    );
    assert!(
        labels
            .get("controller-revision-hash")
            .is_some_and(|h| h.starts_with("game-"))
    );
    let owner = &first.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("StatefulSet", Some(true))
    );
    common::wait_for_log(
        &pods,
        "game-0",
        &LogParams::default(),
        &format!("wrote {first_uid}"),
    )
    .await;

    let claim = common::wait_for(
        &claims,
        "data-game-0",
        "claim Bound",
        |c: Option<&PersistentVolumeClaim>| {
            c.and_then(|c| c.status.as_ref()?.phase.clone()).as_deref() == Some("Bound")
        },
    )
    .await;
    let claim_uid = claim.metadata.uid.clone().unwrap();
    let pv_name = claim.spec.as_ref().unwrap().volume_name.clone().unwrap();
    assert_eq!(pv_name, format!("pvc-{claim_uid}"));
    assert_eq!(
        claim.spec.as_ref().unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
    let pv = volumes.get(&pv_name).await.unwrap();
    assert_eq!(pv.status.as_ref().unwrap().phase.as_deref(), Some("Bound"));
    let host_dir = std::path::PathBuf::from(
        pv.spec
            .as_ref()
            .unwrap()
            .host_path
            .as_ref()
            .unwrap()
            .path
            .clone(),
    );
    assert_eq!(
        std::fs::read_to_string(host_dir.join("marker"))
            .unwrap()
            .trim(),
        first_uid
    );

    pods.delete("game-0", &DeleteParams::default())
        .await
        .unwrap();
    let second = common::wait_for(
        &pods,
        "game-0",
        "pod game-0 recreated and Ready",
        common::pod_ready_replaced(first_uid.clone()),
    )
    .await;
    let log = common::wait_for_log(&pods, "game-0", &LogParams::default(), "found").await;
    assert!(
        log.starts_with(&format!("found {first_uid}")),
        "recreated pod {:?} log: {log:?}",
        second.metadata.uid
    );
    let claim_after = claims.get("data-game-0").await.unwrap();
    assert_eq!(
        claim_after.metadata.uid.as_deref(),
        Some(claim_uid.as_str()),
        "the claim was replaced"
    );

    // Scale to zero keeps the claim; deleting the claim reclaims the volume and its directory.
    sets.patch(
        "game",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 0}})),
    )
    .await
    .unwrap();
    common::wait_deleted(&pods, "game-0", "pod game-0 after scale to 0").await;
    common::wait_for(
        &sets,
        "game",
        "status replicas 0",
        sts_status(|s| s.status.as_ref().is_some_and(|st| st.replicas == 0)),
    )
    .await;
    let kept = claims.get("data-game-0").await.unwrap();
    assert!(
        kept.metadata.deletion_timestamp.is_none(),
        "scale down deleted the claim"
    );
    assert!(
        kept.metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"kubernetes.io/pvc-protection".to_string())
    );

    // Scale up again: the same claim and data; deleting the claim while its pod runs leaves it
    // Terminating (pvc-protection) with the data in place until the pod is gone.
    sets.patch(
        "game",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    common::wait_for(&pods, "game-0", "pod game-0 back", common::pod_ready()).await;
    claims
        .delete("data-game-0", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = common::wait_for(
        &claims,
        "data-game-0",
        "claim Terminating",
        |c: Option<&PersistentVolumeClaim>| {
            c.is_some_and(|c| c.metadata.deletion_timestamp.is_some())
        },
    )
    .await;
    assert_eq!(
        terminating.metadata.uid.as_deref(),
        Some(claim_uid.as_str())
    );
    assert!(
        host_dir.join("marker").exists(),
        "data removed while the pod still uses the claim"
    );
    assert!(volumes.get_opt(&pv_name).await.unwrap().is_some());
    sets.patch(
        "game",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 0}})),
    )
    .await
    .unwrap();
    common::wait_deleted(&claims, "data-game-0", "claim released by its last pod").await;
    common::wait_deleted(&volumes, &pv_name, "PV of the deleted claim").await;
    assert!(
        !host_dir.exists(),
        "volume directory {} survived its claim",
        host_dir.display()
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn statefulset_rolls_to_another_image_and_a_broken_revision_blocks() {
    let cluster = common::start().await;
    let busybox = cluster.images().resolve("busybox:1").unwrap().image;
    for version in ["1", "2"] {
        let mut image = Image::new(
            busybox.executable.clone(),
            busybox.entrypoint.clone(),
            busybox.cmd.clone(),
            [
                busybox.env.clone(),
                vec![("VERSION".to_string(), version.to_string())],
            ]
            .concat(),
        )
        .unwrap();
        image.bin_dir = busybox.bin_dir.clone();
        cluster
            .images()
            .insert(&format!("example.local/app:{version}"), image);
    }
    let v2_id = cluster
        .images()
        .resolve("example.local/app:2")
        .unwrap()
        .image_id;
    let client = cluster.client();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    sets.create(
        &PostParams::default(),
        &statefulset("app", "example.local/app:1", 2),
    )
    .await
    .unwrap();
    let settled = |s: &StatefulSet| {
        s.status.as_ref().is_some_and(|st| {
            st.ready_replicas == Some(2)
                && st.updated_replicas == Some(2)
                && st.current_revision.is_some()
                && st.current_revision == st.update_revision
                && st.observed_generation == s.metadata.generation
        })
    };
    let v1 = common::wait_for(&sets, "app", "2 ready replicas at v1", sts_status(settled)).await;
    let v1_revision = v1.status.unwrap().current_revision.unwrap();
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "example.local/app:2"}]}}}});
    sets.patch("app", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let v2 = common::wait_for(
        &sets,
        "app",
        "rolled to v2",
        sts_status(move |s| {
            settled(s)
                && s.status.as_ref().unwrap().current_revision.as_deref()
                    != Some(v1_revision.as_str())
        }),
    )
    .await;
    let v2_revision = v2.status.unwrap().update_revision.unwrap();
    for name in ["app-0", "app-1"] {
        let pod = pods.get(name).await.unwrap();
        let status = &pod
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0];
        assert_eq!(status.image_id, v2_id, "{name} runs {}", status.image);
        assert_eq!(
            pod.metadata.labels.as_ref().unwrap()["controller-revision-hash"],
            v2_revision
        );
        common::wait_for_log(&pods, name, &LogParams::default(), "version=2").await;
    }

    // A broken revision: the highest ordinal is replaced first and never gets Ready, so the
    // rollout stops there and app-0 keeps running the old revision.
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "example.local/app:broken"}]}}}});
    sets.patch("app", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    common::wait_for(
        &pods,
        "app-1",
        "app-1 stuck in ImagePullBackOff",
        |p: Option<&Pod>| {
            p.and_then(|p| {
                p.status.as_ref()?.container_statuses.as_ref()?[0]
                    .state
                    .as_ref()?
                    .waiting
                    .as_ref()?
                    .reason
                    .clone()
            })
            .as_deref()
                == Some("ImagePullBackOff")
        },
    )
    .await;
    let stuck = common::wait_for(
        &sets,
        "app",
        "update revision recorded",
        sts_status(move |s| {
            s.status.as_ref().is_some_and(|st| {
                st.update_revision.as_deref() != Some(v2_revision.as_str())
                    && st.updated_replicas == Some(1)
            })
        }),
    )
    .await;
    let app0 = pods.get("app-0").await.unwrap();
    assert!(common::is_pod_ready(&app0));
    assert_eq!(
        app0.metadata.labels.as_ref().unwrap()["controller-revision-hash"],
        stuck
            .status
            .as_ref()
            .unwrap()
            .current_revision
            .clone()
            .unwrap(),
        "app-0 was updated although app-1 never became Ready"
    );
    assert_eq!(stuck.status.as_ref().unwrap().ready_replicas, Some(1));
    cluster.shutdown().await;
}

fn job(name: &str, script: &str, backoff_limit: i32) -> Job {
    common::json(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox:1.36", "command": ["sh", "-c", script]}]}}
        }
    }))
}

fn job_condition(job: &Job, type_: &str) -> Option<(String, Option<String>)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .map(|c| (c.type_.clone(), c.reason.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_succeeds() {
    let cluster = common::start().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    jobs.create(&PostParams::default(), &job("once", "echo done", 2))
        .await
        .unwrap();
    let done = common::wait_for(&jobs, "once", "Job Complete", |j: Option<&Job>| {
        j.and_then(|j| job_condition(j, "Complete")).is_some()
    })
    .await;
    let status = done.status.clone().unwrap();
    assert_eq!(
        (status.succeeded, status.failed, status.active),
        (Some(1), Some(0), Some(0))
    );
    assert!(status.start_time.is_some() && status.completion_time.is_some());
    assert!(job_condition(&done, "SuccessCriteriaMet").is_some());
    let listed = pods
        .list(&ListParams::default().labels("job-name=once"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let pod = &listed.items[0];
    assert!(pod.metadata.name.as_ref().unwrap().starts_with("once-"));
    assert_eq!(
        pod.status.as_ref().unwrap().phase.as_deref(),
        Some("Succeeded")
    );
    let labels = pod.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["batch.kubernetes.io/job-name"], "once");
    assert_eq!(labels["controller-uid"], done.metadata.uid.clone().unwrap());
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_exhausts_its_backoff_limit() {
    let cluster = common::start().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    jobs.create(
        &PostParams::default(),
        &job("doomed", "echo trying; exit 3", 1),
    )
    .await
    .unwrap();
    let failed = common::wait_for(&jobs, "doomed", "Job Failed", |j: Option<&Job>| {
        j.and_then(|j| job_condition(j, "Failed")).is_some()
    })
    .await;
    assert_eq!(
        job_condition(&failed, "Failed").unwrap().1.as_deref(),
        Some("BackoffLimitExceeded")
    );
    assert!(job_condition(&failed, "FailureTarget").is_some());
    let status = failed.status.clone().unwrap();
    assert_eq!(
        (status.failed, status.succeeded, status.active),
        (Some(2), Some(0), Some(0))
    );
    let listed = pods
        .list(&ListParams::default().labels("job-name=doomed"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 2, "backoffLimit 1 allows two pods");
    for pod in &listed.items {
        let status = pod.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        let terminated = status.container_statuses.as_ref().unwrap()[0]
            .state
            .as_ref()
            .unwrap()
            .terminated
            .clone()
            .unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.reason.as_deref()),
            (3, Some("Error"))
        );
    }
    cluster.shutdown().await;
}
