//! World read-back: a short-lived pod runs `fixture-game inspect` over a server's PVCs (each
//! mounted read-only at `/inspect/<claim>`), the harness parses its JSON-lines output into
//! [`Inspection`]s and deletes the pod. This reads the data the way the game would, from inside
//! the cluster, on every backend.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodSpec, Volume,
    VolumeMount,
};
use kube::Api;
use kube::api::{DeleteParams, ListParams, LogParams, ObjectMeta, PostParams};

pub use fixture_game::inspect::{Inspection, Kind as VolumeKind};

use crate::evidence::judge::gates::ClaimRead;
use crate::wait::{WaitError, await_condition, conditions};

/// The image that carries `fixture-game` (its entrypoint; `inspect …` is passed as args).
pub const INSPECT_IMAGE: &str = "rehearsal.local/fixture-game:1.0";
/// Where each claim is mounted in the read-back pod.
pub const MOUNT_ROOT: &str = "/inspect";

/// Why a read-back failed; the pod is deleted in every case.
#[derive(Debug, thiserror::Error)]
pub enum ReadbackError {
    #[error(
        "read-back pod {namespace}/{pod}: {what}: {}",
        crate::kube_error::line(source)
    )]
    /// A Kubernetes call about the read-back pod failed.
    Kube {
        /// The pod's namespace.
        namespace: String,
        /// The read-back pod.
        pod: String,
        /// The call: `create` or `read logs`.
        what: &'static str,
        /// kube's error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The pod did not run to completion within the bound.
    #[error("read-back pod {namespace}/{pod} did not finish: {source}")]
    Wait {
        /// The pod's namespace.
        namespace: String,
        /// The read-back pod.
        pod: String,
        /// The wait's error, naming the pod's last observed state.
        #[source]
        source: Box<WaitError>,
    },
    #[error(
        "read-back pod {namespace}/{pod} printed {found} inspections for {expected} claims; output:\n{output}"
    )]
    /// The pod printed fewer or more inspections than claims it was given.
    Incomplete {
        /// The pod's namespace.
        namespace: String,
        /// The read-back pod.
        pod: String,
        /// Claims given to the pod.
        expected: usize,
        /// Inspections it printed.
        found: usize,
        /// Its whole output, for the cause.
        output: String,
    },
    #[error(
        "read-back pod {namespace}/{pod} printed a line that is not an inspection ({reason}): {line}"
    )]
    /// An output line is not an inspection as `fixture-game inspect` prints it.
    Parse {
        /// The pod's namespace.
        namespace: String,
        /// The read-back pod.
        pod: String,
        /// The offending line.
        line: String,
        /// serde_json's message.
        reason: String,
    },
}

/// What was read from each claim.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Readback {
    /// The read-back pod's name (deleted by the time the read-back returns).
    pub pod: String,
    /// Claim name → inspection.
    pub claims: BTreeMap<String, Inspection>,
}

impl Readback {
    /// Each claim as the judgement reads it ([`crate::evidence::judge::gates`]).
    pub fn claim_reads(&self) -> BTreeMap<String, ClaimRead> {
        self.claims
            .iter()
            .map(|(claim, i)| (claim.clone(), claim_read(i)))
            .collect()
    }
}

/// One inspection as the judgement reads it.
pub fn claim_read(i: &Inspection) -> ClaimRead {
    ClaimRead {
        digest: i.digest.clone(),
        files: i.files as u64,
        torn: i.torn,
        problem: i.problem.clone(),
        kind: serde_json::json!(i.kind),
        format: i.format,
        candidate_marker: i.candidate_marker,
    }
}

/// The read-back pod for `claims` (pure; tested without a cluster).
pub fn readback_pod(name: &str, image: &str, claims: &[String]) -> Pod {
    let mut args = vec!["inspect".to_string()];
    args.extend(claims.iter().map(|c| format!("{MOUNT_ROOT}/{c}")));
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([(
                "rehearsal.local/role".to_string(),
                "readback".to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            containers: vec![Container {
                name: "inspect".into(),
                image: Some(image.to_string()),
                args: Some(args),
                volume_mounts: Some(
                    claims
                        .iter()
                        .enumerate()
                        .map(|(i, c)| VolumeMount {
                            name: format!("claim-{i}"),
                            mount_path: format!("{MOUNT_ROOT}/{c}"),
                            read_only: Some(true),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }],
            volumes: Some(
                claims
                    .iter()
                    .enumerate()
                    .map(|(i, c)| Volume {
                        name: format!("claim-{i}"),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                            claim_name: c.clone(),
                            read_only: Some(true),
                        }),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Parses `fixture-game inspect` output (one JSON object per line) for `claims`, in order.
pub fn parse_output(
    namespace: &str,
    pod: &str,
    claims: &[String],
    output: &str,
) -> Result<BTreeMap<String, Inspection>, ReadbackError> {
    let mut found = Vec::new();
    for line in output.lines().filter(|l| l.trim_start().starts_with('{')) {
        let inspection: Inspection =
            serde_json::from_str(line).map_err(|e| ReadbackError::Parse {
                namespace: namespace.into(),
                pod: pod.into(),
                line: line.into(),
                reason: e.to_string(),
            })?;
        found.push(inspection);
    }
    if found.len() != claims.len() {
        return Err(ReadbackError::Incomplete {
            namespace: namespace.into(),
            pod: pod.into(),
            expected: claims.len(),
            found: found.len(),
            output: output.into(),
        });
    }
    Ok(claims.iter().cloned().zip(found).collect())
}

/// Runs a read-back pod over `claims` in `namespace`, bounded by `bound`, and deletes it.
pub async fn read_back(
    client: &kube::Client,
    namespace: &str,
    pod_name: &str,
    claims: &[String],
    bound: Duration,
) -> Result<Readback, ReadbackError> {
    read_back_labelled(client, namespace, pod_name, claims, bound, &BTreeMap::new()).await
}

/// [`read_back`] with extra `labels` on the pod (a qualification labels what it creates with
/// its run id, so a pod a killed run left behind can be found).
pub async fn read_back_labelled(
    client: &kube::Client,
    namespace: &str,
    pod_name: &str,
    claims: &[String],
    bound: Duration,
    labels: &BTreeMap<String, String>,
) -> Result<Readback, ReadbackError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut pod = readback_pod(pod_name, INSPECT_IMAGE, claims);
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(labels.clone());
    let kube_err = |what: &'static str| {
        let (namespace, pod) = (namespace.to_string(), pod_name.to_string());
        move |source| ReadbackError::Kube {
            namespace,
            pod,
            what,
            source: Box::new(source),
        }
    };
    pods.create(&PostParams::default(), &pod)
        .await
        .map_err(kube_err("create"))?;
    let result = async {
        await_condition(&pods, pod_name, conditions::pod_succeeded(), bound)
            .await
            .map_err(|source| ReadbackError::Wait {
                namespace: namespace.into(),
                pod: pod_name.into(),
                source: Box::new(source),
            })?;
        let logs = pods
            .logs(pod_name, &LogParams::default())
            .await
            .map_err(kube_err("read logs"))?;
        parse_output(namespace, pod_name, claims, &logs)
    }
    .await;
    // Deleted whatever happened: a read-back pod must not keep holding the claims.
    let _ = pods.delete(pod_name, &DeleteParams::default()).await;
    Ok(Readback {
        pod: pod_name.to_string(),
        claims: result?,
    })
}

/// Names of the PVCs in `namespace` whose ownerReference points at `owner_uid` (how the
/// contract says a server's claims are found — not by labels), sorted.
pub async fn claims_owned_by(
    client: &kube::Client,
    namespace: &str,
    owner_uid: &str,
) -> Result<Vec<String>, kube::Error> {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let mut names: Vec<String> = pvcs
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|p| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == owner_uid)
        })
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    Ok(names)
}
