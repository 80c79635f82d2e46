//! restic run by the harness inside the cluster, in a short-lived pod of the namespace that
//! holds the repository Secret (keys `repo` and `password`, the Secret the Backups name): the
//! pod reaches the repository the way the operator's copy Jobs do, which the harness's own host
//! may not (a real cluster's REST server is a cluster address).
//!
//! Used to read a snapshot's files (the cases) and to list and forget the snapshots a
//! qualification took (its tidy-up).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, Pod, PodSpec, SecretKeySelector,
};
use kube::api::{Api, DeleteParams, LogParams, ObjectMeta, PostParams};
use serde::Deserialize;

use crate::wait::{WaitError, await_condition, conditions};

/// restic (with `sh`): the image the operator's copy Jobs use, so the same repository format
/// is read and written.
pub const IMAGE: &str = "restic/restic:0.14.0";

/// Printed after a script's restic output, so output cut short is never read as complete.
pub const DONE: &str = "REHEARSAL-RESTIC-DONE";

/// A pod running `script` (after `set -e`, ending with [`DONE`]) with `RESTIC_REPOSITORY` and
/// `RESTIC_PASSWORD` from Secret `secret`'s keys `repo` and `password`.
pub fn pod(name: &str, secret: &str, script: &str, labels: &BTreeMap<String, String>) -> Pod {
    let secret_env = |var: &str, key: &str| EnvVar {
        name: var.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.into(),
                key: key.into(),
                optional: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut labels = labels.clone();
    labels.insert("rehearsal.local/role".into(), "restic-probe".into());
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            containers: vec![Container {
                name: "restic".into(),
                image: Some(IMAGE.into()),
                command: Some(vec![
                    "/bin/sh".into(),
                    "-c".into(),
                    format!("set -e\n{script}\necho {DONE}"),
                ]),
                env: Some(vec![
                    secret_env("RESTIC_REPOSITORY", "repo"),
                    secret_env("RESTIC_PASSWORD", "password"),
                ]),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Why a restic pod gave no output; the pod is deleted in every case.
#[derive(Debug, thiserror::Error)]
pub enum ResticPodError {
    /// A Kubernetes call about the pod failed.
    #[error(
        "restic pod {namespace}/{pod}: {what}: {}",
        crate::kube_error::line(source)
    )]
    Kube {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The call: `create` or `read logs`.
        what: &'static str,
        /// kube's error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The pod did not succeed within the bound (its last state is in the wait's error).
    #[error("restic pod {namespace}/{pod} did not finish: {source}")]
    Wait {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The wait's error, naming the pod's last observed state.
        #[source]
        source: Box<WaitError>,
    },
    /// The pod succeeded but its output does not end with [`DONE`].
    #[error("restic pod {namespace}/{pod} stopped before its script ended; output: {output}")]
    Cut {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// What it printed.
        output: String,
    },
}

/// Runs `pod` in `namespace` until it succeeds (within `bound`), returns what it printed before
/// [`DONE`], and deletes it whatever happened.
pub async fn run(
    client: &kube::Client,
    namespace: &str,
    pod: &Pod,
    bound: Duration,
) -> Result<String, ResticPodError> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let name = pod.metadata.name.clone().unwrap_or_default();
    let kube_err = |what: &'static str| {
        let (namespace, pod) = (namespace.to_string(), name.clone());
        move |source| ResticPodError::Kube {
            namespace,
            pod,
            what,
            source: Box::new(source),
        }
    };
    pods.create(&PostParams::default(), pod)
        .await
        .map_err(kube_err("create"))?;
    let out = async {
        await_condition(&pods, &name, conditions::pod_succeeded(), bound)
            .await
            .map_err(|source| ResticPodError::Wait {
                namespace: namespace.into(),
                pod: name.clone(),
                source: Box::new(source),
            })?;
        let logs = pods
            .logs(&name, &LogParams::default())
            .await
            .map_err(kube_err("read logs"))?;
        match logs.rsplit_once(DONE) {
            Some((before, _)) => Ok(before.to_string()),
            None => Err(ResticPodError::Cut {
                namespace: namespace.into(),
                pod: name.clone(),
                output: logs,
            }),
        }
    }
    .await;
    let _ = pods.delete(&name, &DeleteParams::default()).await;
    out
}

/// Quotes `s` for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A tag that no snapshot carries: `restic forget --keep-tag` with it keeps nothing of what the
/// tag filter selected.
pub const KEEP_NONE_TAG: &str = "rehearsal-keep-none";

/// The `--tag` filter selecting snapshots that carry every tag of any one of `groups` (restic:
/// tags in one `--tag` are ANDed, several `--tag` options ORed).
fn tag_filter(groups: &[Vec<String>]) -> String {
    groups
        .iter()
        .map(|g| format!(" --tag {}", sh_quote(&g.join(","))))
        .collect()
}

/// The script that lists (`forget: false`) or forgets the snapshots of `groups` as JSON.
pub fn snapshots_script(groups: &[Vec<String>], forget: bool) -> String {
    let filter = tag_filter(groups);
    if forget {
        format!("restic forget --no-cache --json{filter} --keep-tag {KEEP_NONE_TAG}\necho")
    } else {
        format!("restic snapshots --no-cache --json{filter}\necho")
    }
}

#[derive(Deserialize)]
struct Snapshot {
    id: String,
}

#[derive(Deserialize)]
struct ForgetGroup {
    #[serde(default)]
    remove: Option<Vec<Snapshot>>,
}

/// The snapshot ids in the output of [`snapshots_script`]: the snapshots listed, or those
/// `restic forget` removed. No output at all (no snapshot matched) is none.
pub fn parse_snapshots(output: &str, forget: bool) -> Result<Vec<String>, String> {
    let json = output.trim();
    if json.is_empty() {
        return Ok(vec![]);
    }
    let ids = if forget {
        serde_json::from_str::<Vec<ForgetGroup>>(json)
            .map_err(|e| format!("not restic forget's JSON ({e}): {json}"))?
            .into_iter()
            .flat_map(|g| g.remove.unwrap_or_default())
            .map(|s| s.id)
            .collect()
    } else {
        serde_json::from_str::<Vec<Snapshot>>(json)
            .map_err(|e| format!("not restic snapshots' JSON ({e}): {json}"))?
            .into_iter()
            .map(|s| s.id)
            .collect()
    };
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_ands_tags_of_a_group_and_ors_groups() {
        let groups = vec![
            vec!["rehearsal".to_string(), "run=a".to_string()],
            vec!["rehearsal".to_string(), "run=b'c".to_string()],
        ];
        assert_eq!(
            snapshots_script(&groups, true),
            "restic forget --no-cache --json --tag 'rehearsal,run=a' --tag 'rehearsal,run=b'\\''c' --keep-tag rehearsal-keep-none\necho"
        );
        assert!(
            snapshots_script(&groups, false)
                .starts_with("restic snapshots --no-cache --json --tag")
        );
    }

    #[test]
    fn forget_and_snapshots_output_is_read_as_ids() {
        let forget = r#"[{"tags":null,"host":"gameplane","paths":["/data"],"keep":null,"remove":[{"time":"2026-12-03T09:37:02Z","id":"aaed4eb0","short_id":"aaed4eb0"}],"reasons":null}]"#;
        assert_eq!(parse_snapshots(forget, true).unwrap(), ["aaed4eb0"]);
        assert_eq!(parse_snapshots("\n", true).unwrap(), Vec::<String>::new());
        let list = r#"[{"id":"a1","tags":["x"]},{"id":"b2"}]"#;
        assert_eq!(parse_snapshots(list, false).unwrap(), ["a1", "b2"]);
        let err = parse_snapshots("Fatal: unable to open repository", true).unwrap_err();
        assert!(err.contains("not restic forget's JSON"), "{err}");
    }
}
