//! restic Jobs: the pod that copies claims into a repository or back, and how the operator
//! reads the result.
//!
//! How results travel: the backup script prints restic's JSON summary line to stdout and to
//! `/dev/termination-log`. The operator reads the container's termination message first and
//! falls back to the pod log through the API; once read, the snapshot id is persisted in the
//! Backup's status, so the Job pod is never needed again (it may be garbage collected).

use std::collections::BTreeMap;

use gameplane_api::names::{containers, labels};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, HostPathVolumeSource,
    PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, SecretKeySelector, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use serde::Deserialize;

/// Where the world claim is mounted in restic Jobs (CONTRACT A: read-only at `/data` for a
/// backup). Snapshot paths are therefore `/data` and `/extra/<name>` on every run.
pub const DATA_PATH: &str = "/data";
/// Parent of the extra claims' mount points in restic Jobs.
pub const EXTRA_ROOT: &str = "/extra";
/// Scratch space (restic cache, restore staging).
pub const SCRATCH: &str = "/scratch";
/// Grace period of restic Job pods (a drain waits for them to be gone).
pub const JOB_TERMINATION_GRACE_SECONDS: i64 = 1;
/// The Secret key of the repository password.
pub const PASSWORD_KEY: &str = "password";

/// Where restic finds the repository.
#[derive(Clone, Debug)]
pub struct Repo {
    /// The Secret holding `repo` and `password`.
    pub secret: String,
    /// The key of the repository URL: normally a restic URL the Job's pod reaches over the
    /// network (`rest:http://HOST:PORT/<name>`, what every rehearsal case uses; the Job then
    /// mounts no host path, like Gameplane's).
    pub key: String,
    /// The repository URL when it is a local path, mounted into the Job with hostPath at the
    /// same path. Only this crate's own integration tests use it: their gate holds restic at
    /// its key read with a FIFO in the repository directory, which a REST server cannot serve.
    pub local_path: Option<String>,
}

/// A claim mounted into the Job.
#[derive(Clone, Debug)]
pub struct Claim {
    /// PVC name.
    pub pvc: String,
    /// Mount path in the Job (`/data` or `/extra/<name>`).
    pub path: String,
}

/// The claims of a server as restic Jobs mount them.
pub fn claims(gs: &str, extras: &[String], include_extras: bool) -> Vec<Claim> {
    let mut out = vec![Claim {
        pvc: gameplane_api::names::data_pvc(gs),
        path: DATA_PATH.to_string(),
    }];
    if include_extras {
        out.extend(extras.iter().map(|e| Claim {
            pvc: gameplane_api::names::extra_pvc(gs, e),
            path: format!("{EXTRA_ROOT}/{e}"),
        }));
    }
    out
}

/// Quotes `s` for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

const PREAMBLE: &str = r#"set -eu
export RESTIC_CACHE_DIR=/scratch/cache
mkdir -p "$RESTIC_CACHE_DIR"
"#;

/// The backup script: initialise the repository if needed, back up `paths` with `tags`, print
/// the summary line.
///
/// `restic init` refuses an existing repository before it derives any key, so trying it on
/// every copy costs a stat; checking with `restic cat config` first would cost a full key
/// derivation (scrypt) per copy. A repository that is unusable for any other reason (wrong
/// password, unreachable) fails the `restic backup` that follows, with restic's own message.
pub fn backup_script(paths: &[String], tags: &[String]) -> String {
    let tags: String = tags
        .iter()
        .map(|t| format!(" --tag {}", sh_quote(t)))
        .collect();
    let paths: String = paths.iter().map(|p| format!(" {}", sh_quote(p))).collect();
    format!(
        r#"{PREAMBLE}restic init >/dev/null 2>&1 || true
restic backup --json --host gameplane{tags}{paths} >/scratch/backup.json
summary=$(grep '"message_type":"summary"' /scratch/backup.json | tail -n 1)
if [ -z "$summary" ]; then echo "restic printed no summary" >&2; cat /scratch/backup.json >&2; exit 1; fi
echo "$summary"
printf '%s' "$summary" >/dev/termination-log 2>/dev/null || true
"#
    )
}

/// Which snapshot a restore Job restores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection<'a> {
    /// The Backup's own snapshot, by id.
    Id(&'a str),
    /// The newest snapshot tagged `server=<name>` (the `restore-latest-snapshot` defect).
    LatestOfServer(&'a str),
}

impl Selection<'_> {
    /// The `restic restore` arguments that select the snapshot.
    fn args(self) -> String {
        match self {
            Selection::Id(id) => sh_quote(id),
            Selection::LatestOfServer(server) => {
                format!("latest --tag {}", sh_quote(&format!("server={server}")))
            }
        }
    }
}

/// The restore script: restore the selected snapshot into scratch, then make every path hold
/// exactly the snapshot's contents (`exact: false` only copies over: the `restore-overlays`
/// defect).
pub fn restore_script(
    snapshot: Selection<'_>,
    paths: &[String],
    exact: bool,
    clear_first: bool,
) -> String {
    let mut script = PREAMBLE.to_string();
    if clear_first {
        // The `restore-failure-wipes-claims` defect: the claims are cleared before restic has
        // read anything, so a restore that fails leaves them empty.
        for path in paths {
            let p = sh_quote(path);
            script.push_str(&format!(
                "find {p} -mindepth 1 -maxdepth 1 -exec rm -rf {{}} +\n"
            ));
        }
    }
    script.push_str(&format!(
        "rm -rf /scratch/restore\nmkdir -p /scratch/restore\nrestic restore {} --target /scratch/restore\n",
        snapshot.args()
    ));
    for path in paths {
        let p = sh_quote(path);
        let staged = sh_quote(&format!("/scratch/restore{path}"));
        let clear = if exact {
            format!("  find {p} -mindepth 1 -maxdepth 1 -exec rm -rf {{}} +\n")
        } else {
            String::new()
        };
        script.push_str(&format!(
            "if [ -d {staged} ]; then\n{clear}  cp -a {staged}/. {p}/\n  echo \"restored {path}\"\nelse\n  echo \"snapshot has no {path}: left unchanged\" >&2\nfi\n"
        ));
    }
    script
}

/// restic 0.14's backup summary (the fields the operator uses).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Summary {
    /// The short snapshot id.
    pub snapshot_id: String,
    /// Bytes added to the repository.
    #[serde(default)]
    pub data_added: u64,
    /// Bytes read from the source.
    #[serde(default)]
    pub total_bytes_processed: u64,
}

/// Finds the summary in a termination message or log text.
pub fn parse_summary(text: &str) -> Option<Summary> {
    text.lines().rev().find_map(|line| {
        let line = line.trim();
        if !line.contains("\"message_type\":\"summary\"") {
            return None;
        }
        serde_json::from_str(line).ok()
    })
}

/// A restic Job.
pub struct JobRequest<'a> {
    /// Job name.
    pub name: String,
    /// Namespace.
    pub namespace: &'a str,
    /// Owner (the Backup or Restore).
    pub owner: OwnerReference,
    /// Labels (also on the pod, to find it).
    pub labels: BTreeMap<String, String>,
    /// Image with restic and `sh`.
    pub image: &'a str,
    /// Repository access.
    pub repo: &'a Repo,
    /// Claims to mount.
    pub claims: Vec<Claim>,
    /// Mount the claims read-only (backups).
    pub read_only: bool,
    /// The script run by `sh -c`.
    pub script: String,
}

fn secret_env(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_string(),
                key: key.to_string(),
                optional: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Builds the Job: one pod, no retries (a failed copy is a verdict, not something to redo
/// behind the operator's back).
pub fn job(req: JobRequest<'_>) -> Job {
    let mut volumes = vec![Volume {
        name: "scratch".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    }];
    let mut mounts = vec![VolumeMount {
        name: "scratch".into(),
        mount_path: SCRATCH.into(),
        ..Default::default()
    }];
    for (i, claim) in req.claims.iter().enumerate() {
        let volume = format!("claim-{i}");
        volumes.push(Volume {
            name: volume.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.pvc.clone(),
                read_only: req.read_only.then_some(true),
            }),
            ..Default::default()
        });
        mounts.push(VolumeMount {
            name: volume,
            mount_path: claim.path.clone(),
            read_only: req.read_only.then_some(true),
            ..Default::default()
        });
    }
    if let Some(path) = &req.repo.local_path {
        volumes.push(Volume {
            name: "repo".into(),
            host_path: Some(HostPathVolumeSource {
                path: path.clone(),
                type_: Some("DirectoryOrCreate".into()),
            }),
            ..Default::default()
        });
        mounts.push(VolumeMount {
            name: "repo".into(),
            mount_path: path.clone(),
            ..Default::default()
        });
    }
    let container = Container {
        name: containers::RESTIC.into(),
        image: Some(req.image.to_string()),
        command: Some(vec!["/bin/sh".into(), "-c".into(), req.script]),
        env: Some(vec![
            secret_env("RESTIC_REPOSITORY", &req.repo.secret, &req.repo.key),
            secret_env("RESTIC_PASSWORD", &req.repo.secret, PASSWORD_KEY),
        ]),
        volume_mounts: Some(mounts),
        termination_message_path: Some("/dev/termination-log".into()),
        ..Default::default()
    };
    let mut labels = req.labels;
    labels.insert(labels::MANAGED_BY_KEY.into(), labels::MANAGED_BY.into());
    Job {
        metadata: ObjectMeta {
            name: Some(req.name),
            namespace: Some(req.namespace.to_string()),
            owner_references: Some(vec![req.owner]),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    volumes: Some(volumes),
                    restart_policy: Some("Never".into()),
                    // A copy worker has nothing to save: draining it takes a second at most.
                    termination_grace_period_seconds: Some(JOB_TERMINATION_GRACE_SECONDS),
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Whether the Job finished, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// Still running (or not started).
    Running,
    /// Completed successfully.
    Succeeded,
    /// Failed.
    Failed,
}

/// Reads a Job's outcome from its status.
pub fn outcome(job: &Job) -> JobOutcome {
    let Some(status) = &job.status else {
        return JobOutcome::Running;
    };
    let condition = |t: &str| {
        status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == t && c.status == "True")
    };
    if condition("Complete") || status.succeeded.unwrap_or(0) > 0 {
        JobOutcome::Succeeded
    } else if condition("Failed") || status.failed.unwrap_or(0) > 0 {
        JobOutcome::Failed
    } else {
        JobOutcome::Running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_found_among_status_lines() {
        let log = concat!(
            "{\"message_type\":\"status\",\"percent_done\":0.5}\n",
            "{\"message_type\":\"summary\",\"files_new\":3,\"data_added\":1234,\"total_bytes_processed\":99,\"snapshot_id\":\"1a2b3c4d\"}\n"
        );
        let s = parse_summary(log).unwrap();
        assert_eq!(s.snapshot_id, "1a2b3c4d");
        assert_eq!(s.data_added, 1234);
        assert!(parse_summary("no json here").is_none());
    }

    #[test]
    fn claims_exclude_mods_and_extras_on_request() {
        let all: Vec<_> = claims("gs", &["nether".into()], true)
            .into_iter()
            .map(|c| (c.pvc, c.path))
            .collect();
        assert_eq!(
            all,
            [
                ("gs-data".to_string(), "/data".to_string()),
                ("gs-extra-nether".into(), "/extra/nether".into())
            ]
        );
        assert_eq!(claims("gs", &["nether".into()], false).len(), 1);
    }

    #[test]
    fn restore_script_clears_only_when_exact() {
        let exact = restore_script(Selection::Id("abcd"), &["/data".into()], true, false);
        assert!(exact.contains("find '/data' -mindepth 1"), "{exact}");
        assert!(exact.contains("restic restore 'abcd' --target"), "{exact}");
        let overlay = restore_script(Selection::Id("abcd"), &["/data".into()], false, false);
        assert!(!overlay.contains("find "), "{overlay}");
        assert!(
            overlay.contains("cp -a '/scratch/restore/data'/. '/data'/"),
            "{overlay}"
        );
    }

    #[test]
    fn restore_script_selects_the_latest_snapshot_only_on_request() {
        let latest = restore_script(
            Selection::LatestOfServer("gs"),
            &["/data".into()],
            true,
            false,
        );
        assert!(
            latest.contains("restic restore latest --tag 'server=gs' --target"),
            "{latest}"
        );
    }

    #[test]
    fn backup_script_opens_the_repository_once() {
        let script = backup_script(&["/data".into()], &["gameplane".into()]);
        assert!(script.contains("restic init"), "{script}");
        assert!(!script.contains("cat config"), "{script}");
        assert_eq!(script.matches("restic backup").count(), 1, "{script}");
    }

    #[test]
    fn a_rest_repository_job_mounts_no_host_path_and_reads_the_repository_from_the_secret() {
        let repo = Repo {
            secret: "restic-repo".into(),
            key: "repo".into(),
            local_path: None,
        };
        let job = job(JobRequest {
            name: "b".into(),
            namespace: "ns",
            owner: OwnerReference::default(),
            labels: BTreeMap::new(),
            image: "restic/restic:0.14.0",
            repo: &repo,
            claims: claims("gs", &[], false),
            read_only: true,
            script: "true".into(),
        });
        let pod = job.spec.unwrap().template.spec.unwrap();
        assert!(
            pod.volumes.iter().flatten().all(|v| v.host_path.is_none()),
            "{:?}",
            pod.volumes
        );
        let env = pod.containers[0].env.clone().unwrap();
        let from = |name: &str| {
            let e = env.iter().find(|e| e.name == name).unwrap();
            let r = e.value_from.clone().unwrap().secret_key_ref.unwrap();
            (r.name, r.key)
        };
        assert_eq!(
            from("RESTIC_REPOSITORY"),
            ("restic-repo".into(), "repo".into())
        );
        assert_eq!(
            from("RESTIC_PASSWORD"),
            ("restic-repo".into(), "password".into())
        );
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
    }
}
