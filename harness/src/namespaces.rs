//! Per-case namespaces: `rh-<case>-<short run id>`, labelled with the run id and its owner
//! (host, pid) and annotated with the creation time, so a later run can tell leftovers of a
//! crashed run from namespaces of a run still in progress.
//!
//! [`sweep`] runs at startup and deletes rehearsal namespaces whose owner process is gone (same
//! host) or that are older than a bound (any host).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};

/// Label holding the run id.
pub const RUN_ID_LABEL: &str = "rehearsal.local/run-id";
/// Label holding the owner host name (sanitised for a label value).
pub const OWNER_HOST_LABEL: &str = "rehearsal.local/owner-host";
/// Label holding the owner process id.
pub const OWNER_PID_LABEL: &str = "rehearsal.local/owner-pid";
/// Label holding the case name.
pub const CASE_LABEL: &str = "rehearsal.local/case";
/// Annotation holding the creation time (RFC 3339).
pub const CREATED_AT_ANNOTATION: &str = "rehearsal.local/created-at";

/// Why a namespace operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    /// A Kubernetes call about one namespace failed.
    #[error("cannot {what} namespace {name}: {}", crate::kube_error::line(source))]
    Kube {
        /// The operation: `create`, `delete`, `read`.
        what: &'static str,
        /// The namespace.
        name: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// Listing the rehearsal namespaces (for the sweep) failed.
    #[error("cannot list rehearsal namespaces: {}", crate::kube_error::line(.0))]
    List(#[source] kube::Error),
}

/// Who owns a namespace: the run and the process that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The run's id: hashed into the namespace name's suffix and stored in [`RUN_ID_LABEL`].
    pub run_id: String,
    /// Host name as a label value ([`this_host`]); the sweep trusts `pid` only on this host.
    pub host: String,
    /// Process id of the `rehearse` (or test) process that created the namespace.
    pub pid: u32,
}

impl Owner {
    /// This process, for `run_id`.
    pub fn current(run_id: impl Into<String>) -> Self {
        Self {
            run_id: run_id.into(),
            host: this_host(),
            pid: std::process::id(),
        }
    }
}

/// This machine's host name as a label value.
pub fn this_host() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    label_value(raw.trim())
}

/// Makes `raw` a valid label value: `[A-Za-z0-9._-]`, at most 63, alphanumeric at both ends.
pub fn label_value(raw: &str) -> String {
    let mapped: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.is_empty() {
        "unknown".into()
    } else {
        trimmed.to_string()
    }
}

/// The namespace name for `case` in run `run_id`: `rh-<case>-<8 hex of the run id's SHA-256>`, a
/// valid DNS label (lowercase, at most 63 characters), distinct for every run id — two runs of
/// one day, or the self-test's concurrent runs of one case, never share a namespace (nor the
/// host paths named after it, such as the case's restic repository).
pub fn namespace_name(case: &str, run_id: &str) -> String {
    use sha2::Digest;
    let short: String = hex::encode(sha2::Sha256::digest(run_id.as_bytes()))[..8].to_string();
    let mut case: String = case
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    // "rh-" + case + "-" + short ≤ 63
    let room = 63 - 3 - 1 - short.len();
    case.truncate(room);
    let case = case.trim_matches('-');
    let mut name = format!("rh-{case}-{short}");
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    name
}

/// Creates the case's namespace (an existing one of the same name is reused as is).
pub async fn create(
    client: &kube::Client,
    case: &str,
    owner: &Owner,
) -> Result<Namespace, NamespaceError> {
    let name = namespace_name(case, &owner.run_id);
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(BTreeMap::from([
                (RUN_ID_LABEL.to_string(), label_value(&owner.run_id)),
                (OWNER_HOST_LABEL.to_string(), owner.host.clone()),
                (OWNER_PID_LABEL.to_string(), owner.pid.to_string()),
                (CASE_LABEL.to_string(), label_value(case)),
            ])),
            annotations: Some(BTreeMap::from([(
                CREATED_AT_ANNOTATION.to_string(),
                jiff::Timestamp::now().to_string(),
            )])),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &ns).await {
        Ok(created) => Ok(created),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            api.get(&name).await.map_err(|source| NamespaceError::Kube {
                what: "read",
                name,
                source,
            })
        }
        Err(source) => Err(NamespaceError::Kube {
            what: "create",
            name,
            source,
        }),
    }
}

/// Why the sweep removed (or kept) a namespace.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum SweepReason {
    /// Its owner process on this host no longer exists.
    OwnerGone {
        /// The owner's process id, no longer running on this host.
        pid: u32,
    },
    /// It is older than the bound (owner on another host, or unknown).
    TooOld {
        /// Seconds since the namespace's creation-time annotation.
        age_secs: u64,
    },
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepReport {
    /// Namespaces deleted, each with the reason it counted as a leftover.
    pub deleted: Vec<(String, SweepReason)>,
    /// Rehearsal namespaces left alone: owner alive, or not old enough.
    pub kept: Vec<String>,
}

/// Decides whether one rehearsal namespace is a leftover. Pure, for testing.
pub fn leftover_reason(
    ns: &Namespace,
    host: &str,
    now: jiff::Timestamp,
    max_age: Duration,
    pid_alive: impl Fn(u32) -> bool,
) -> Option<SweepReason> {
    let labels = ns.metadata.labels.clone().unwrap_or_default();
    let pid = labels
        .get(OWNER_PID_LABEL)
        .and_then(|p| p.parse::<u32>().ok());
    if labels.get(OWNER_HOST_LABEL).map(String::as_str) == Some(host)
        && let Some(pid) = pid
        && !pid_alive(pid)
    {
        return Some(SweepReason::OwnerGone { pid });
    }
    let created = ns
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CREATED_AT_ANNOTATION))
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .or_else(|| {
            ns.metadata
                .creation_timestamp
                .as_ref()
                .and_then(|t| t.0.to_string().parse().ok())
        })?;
    let age = now.duration_since(created);
    let age_secs = age.as_secs().max(0) as u64;
    (age_secs > max_age.as_secs()).then_some(SweepReason::TooOld { age_secs })
}

/// Whether a process with `pid` exists on this host.
pub fn pid_alive(pid: u32) -> bool {
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None) {
        Ok(()) => true,
        Err(nix::errno::Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// Deletes rehearsal namespaces left by crashed runs (owner gone on this host, or older than
/// `max_age`). Namespaces of the current process are never touched.
pub async fn sweep(
    client: &kube::Client,
    max_age: Duration,
) -> Result<SweepReport, NamespaceError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels(RUN_ID_LABEL))
        .await
        .map_err(NamespaceError::List)?;
    let host = this_host();
    let me = std::process::id();
    let now = jiff::Timestamp::now();
    let mut report = SweepReport::default();
    for ns in list.items {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let mine = ns.metadata.labels.as_ref().is_some_and(|l| {
            l.get(OWNER_HOST_LABEL) == Some(&host)
                && l.get(OWNER_PID_LABEL) == Some(&me.to_string())
        });
        let reason = if mine {
            None
        } else {
            leftover_reason(&ns, &host, now, max_age, pid_alive)
        };
        match reason {
            Some(reason) => {
                match api.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(source) => {
                        return Err(NamespaceError::Kube {
                            what: "delete",
                            name,
                            source,
                        });
                    }
                }
                report.deleted.push((name, reason));
            }
            None => report.kept.push(name),
        }
    }
    Ok(report)
}

/// Deletes the case's namespace (absent is fine).
pub async fn delete(client: &kube::Client, name: &str) -> Result<(), NamespaceError> {
    let api: Api<Namespace> = Api::all(client.clone());
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(NamespaceError::Kube {
            what: "delete",
            name: name.to_string(),
            source,
        }),
    }
}
