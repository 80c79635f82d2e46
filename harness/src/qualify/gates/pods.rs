//! The one rule for every gate that waits on a pod (image gate, rollback): a pull failure or a
//! crash loop is terminal at once, with the container's last exit as the reason — never a wait
//! to the bound on a pod that cannot become Ready.

use std::time::Duration;

use gameplane_api::names;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use crate::context::{CaseContext, CaseError};
use crate::wait::{Condition, Progress, await_object, conditions};

/// Waits until the server's pod belongs to StatefulSet revision `revision` and is Ready (a
/// pull failure is terminal and surfaces within the pull-failure bound).
pub(in crate::qualify) async fn await_pod_of_revision(
    ctx: &CaseContext<'_>,
    pods: &Api<Pod>,
    pod_name: &str,
    revision: &str,
) -> Result<Pod, CaseError> {
    let ready = conditions::pod_ready();
    let wanted = revision.to_string();
    let condition = Condition::new(
        format!("pod of revision {wanted} and Ready"),
        move |pod: Option<&Pod>| {
            let of_revision = pod
                .and_then(|p| p.metadata.labels.as_ref())
                .and_then(|l| l.get("controller-revision-hash"))
                .is_some_and(|r| *r == wanted);
            if !of_revision {
                return Progress::Pending;
            }
            if let Some(reason) = pod.and_then(crash_loop) {
                return Progress::Terminal(reason);
            }
            ready.check(pod)
        },
    );
    let bound = ctx.bounds.pull_failure.max(Duration::from_secs(1));
    Ok(await_object(pods, pod_name, condition, bound).await?)
}

/// The game container restarts after exiting (`CrashLoopBackOff`, or terminated with a
/// restart already counted): the candidate's image ran but the game does not stay up — e.g. a
/// version that cannot read the world's format. Names the last exit.
pub(in crate::qualify) fn crash_loop(pod: &Pod) -> Option<String> {
    let c = pod
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == names::containers::GAME)?;
    let waiting = c.state.as_ref()?.waiting.as_ref()?.reason.as_deref()?;
    if waiting != "CrashLoopBackOff" {
        return None;
    }
    let last = c
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .map(|t| {
            format!(
                "; last exit code {}{}",
                t.exit_code,
                t.message
                    .as_deref()
                    .map(|m| format!(": {}", m.trim()))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_default();
    Some(format!(
        "container `{}` is CrashLoopBackOff after {} restart(s){last}",
        c.name, c.restart_count
    ))
}

/// Waits until the server's pod runs `image` in its game container and is Ready. The operator
/// first has to roll the StatefulSet, so an old Ready pod does not count; a pull failure is
/// terminal and surfaces within the pull-failure bound.
pub(in crate::qualify) async fn await_pod_running_image(
    ctx: &CaseContext<'_>,
    pods: &Api<Pod>,
    pod_name: &str,
    image: &str,
) -> Result<Pod, CaseError> {
    let ready = conditions::pod_ready();
    let wanted = image.to_string();
    let condition = Condition::new(
        format!("game container image {wanted} and Ready"),
        move |pod: Option<&Pod>| {
            // A pod being deleted is the one being replaced (its containers end as they are
            // stopped, its phase may turn Failed): wait for its successor, never judge it.
            if pod.is_some_and(|p| p.metadata.deletion_timestamp.is_some()) {
                return Progress::Pending;
            }
            let image = pod
                .and_then(|p| p.spec.as_ref())
                .and_then(|s| {
                    s.containers
                        .iter()
                        .find(|c| c.name == names::containers::GAME)
                })
                .and_then(|c| c.image.clone());
            if image.as_deref() != Some(wanted.as_str()) {
                return Progress::Pending;
            }
            // The rule of every gate that waits on a pod: a crash loop is terminal at once.
            if let Some(reason) = pod.and_then(crash_loop) {
                return Progress::Terminal(reason);
            }
            ready.check(pod)
        },
    );
    let bound = ctx.bounds.pull_failure.max(Duration::from_secs(1));
    Ok(await_object(pods, pod_name, condition, bound).await?)
}
