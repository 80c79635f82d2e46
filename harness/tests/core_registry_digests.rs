//! Issue 13, defect 2 on the embedded cluster: a digest-pinned candidate resolves only through
//! the registry's manifest digest, as on a Kind node pulling from a registry.
//!
//! The rollout cases pin `rehearsal.local/fixture-game@<digest>` with the digest
//! [`Backend::image_digest`] returns. At e184aa6 that was the image id (a digest the embedded
//! catalogue resolved while a real node, given only a loaded image, cannot pull it): a case
//! pinning the image id passed here and failed on Kind. Now the embedded node's catalogue
//! resolves a digest reference only through a manifest digest, so the image id pinned here
//! fails exactly as it would on Kind (ErrImagePull / ImagePullBackOff), and the manifest digest
//! `image_digest` returns runs and is what the node reports as `imageID`.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use rehearsal::backend::Backend;
use rehearsal::backend::embedded::{Embedded, EmbeddedOptions};
use rehearsal::fixture;
use rehearsal::wait::{await_object, conditions};
use rehearsal_embedded::{Backoff, EmbeddedConfig};
use serde_json::json;

const BOUND: Duration = Duration::from_secs(60);

async fn cluster() -> Embedded {
    Embedded::up(EmbeddedOptions {
        cluster: EmbeddedConfig {
            image_pull_backoff: Backoff {
                initial: Duration::from_millis(200),
                max: Duration::from_secs(2),
            },
            shutdown_grace: Duration::from_secs(2),
            ..EmbeddedConfig::default()
        },
        ..Default::default()
    })
    .await
    .expect("embedded backend starts")
}

fn pinned_pod(name: &str, image: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 2,
            "containers": [{"name": "game", "image": image, "args": ["--help"]}]
        }
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_pinned_by_its_image_id_fails_to_pull_and_the_manifest_digest_runs() {
    let backend = cluster().await;
    let tag = format!("{}:{}", fixture::GAME_IMAGE_REPO, fixture::VERSION_STABLE);
    let manifest = backend
        .image_digest(&tag)
        .await
        .unwrap()
        .expect("the embedded backend reads its image source");
    let resolved = backend.cluster().images().resolve(&tag).unwrap();
    let image_id = resolved.image.digest.clone();
    assert_eq!(manifest, resolved.manifest_digest);
    assert!(
        manifest.starts_with("sha256:") && manifest.len() == 71,
        "{manifest}"
    );
    assert_ne!(
        manifest, image_id,
        "the registry digest must not be the image id"
    );

    let pods: Api<Pod> = Api::namespaced(backend.client(), "default");
    // Pinned by the image id (what the rollout cases pinned at e184aa6): a failed pull.
    let wrong = format!("{}@{image_id}", fixture::GAME_IMAGE_REPO);
    pods.create(&PostParams::default(), &pinned_pod("by-image-id", &wrong))
        .await
        .unwrap();
    let failed = await_object(
        &pods,
        "by-image-id",
        conditions::pod_image_pull_failed(),
        BOUND,
    )
    .await
    .unwrap();
    let waiting = failed.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .waiting
        .unwrap();
    assert!(
        matches!(
            waiting.reason.as_deref(),
            Some("ErrImagePull" | "ImagePullBackOff")
        ),
        "{waiting:?}"
    );

    // Pinned by the manifest digest `image_digest` returned: it runs, and the node reports
    // that digest as the imageID the image gate compares.
    let right = format!("{}@{manifest}", fixture::GAME_IMAGE_REPO);
    pods.create(&PostParams::default(), &pinned_pod("by-manifest", &right))
        .await
        .unwrap();
    let done = await_object(&pods, "by-manifest", conditions::pod_succeeded(), BOUND)
        .await
        .unwrap();
    let status = &done.status.unwrap().container_statuses.unwrap()[0];
    assert_eq!(status.image_id, right);

    // By tag the node reports the same repository digest.
    pods.create(&PostParams::default(), &pinned_pod("by-tag", &tag))
        .await
        .unwrap();
    let done = await_object(&pods, "by-tag", conditions::pod_succeeded(), BOUND)
        .await
        .unwrap();
    assert_eq!(
        done.status.unwrap().container_statuses.unwrap()[0].image_id,
        right
    );
    Box::new(backend).teardown(false).await.unwrap();
}
