//! GameServer phase and conditions, derived from the pod as CONTRACT A's phase rules say.

use gameplane_api::GameServerPhase;
use gameplane_api::conditions::reasons;
use gameplane_api::names::containers;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Crash loops at or above this restart count make a starting server `Failed`.
pub const CRASH_LOOP_RESTARTS: i32 = 3;

/// The derived state of a server.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// The phase.
    pub phase: GameServerPhase,
    /// `Ready` status, reason, message.
    pub ready: (bool, &'static str, String),
    /// `Healthy` status, reason, message.
    pub healthy: (bool, &'static str, String),
    /// When the running game container started.
    pub started_at: Option<Time>,
}

/// Why a server has no replica on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// It should run.
    Run,
    /// `spec.suspend: true`.
    Suspend,
    /// `status.idle.asleep: true`.
    Sleep,
}

fn game_status(pod: &Pod) -> Option<&ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == containers::GAME)
}

/// Whether the pod counts as a ready replica.
pub fn pod_ready(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let status = pod.status.as_ref();
    let ready_condition = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    match ready_condition {
        Some(c) => c.status == "True",
        None => game_status(pod).is_some_and(|g| g.ready),
    }
}

/// Derives phase and conditions from the intent and the pod `<gs>-0` (if any).
pub fn derive(intent: Intent, pod: Option<&Pod>) -> Derived {
    let ready = pod.is_some_and(pod_ready);
    let started_at = pod
        .and_then(game_status)
        .and_then(|g| g.state.as_ref()?.running.as_ref()?.started_at.clone());
    let healthy_ok = (true, reasons::RUNNING, String::new());
    match (intent, ready) {
        (Intent::Suspend, false) => Derived {
            phase: GameServerPhase::Suspended,
            ready: (false, reasons::SUSPENDED, "spec.suspend is true".into()),
            healthy: healthy_ok,
            started_at: None,
        },
        (Intent::Sleep, false) => Derived {
            phase: GameServerPhase::Stopped,
            ready: (
                false,
                reasons::IDLE_ASLEEP,
                "the server sleeps while idle".into(),
            ),
            healthy: healthy_ok,
            started_at: None,
        },
        (Intent::Suspend | Intent::Sleep, true) => Derived {
            phase: GameServerPhase::Stopping,
            ready: (true, reasons::RUNNING, "stopping the replica".into()),
            healthy: healthy_ok,
            started_at,
        },
        (Intent::Run, true) => Derived {
            phase: GameServerPhase::Running,
            ready: (true, reasons::RUNNING, String::new()),
            healthy: healthy_ok,
            started_at,
        },
        (Intent::Run, false) => match pod.and_then(game_status).and_then(failure) {
            Some((reason, message)) => Derived {
                phase: GameServerPhase::Failed,
                ready: (false, reason, message.clone()),
                healthy: (false, reason, message),
                started_at: None,
            },
            None => Derived {
                phase: GameServerPhase::Starting,
                ready: (false, reasons::STARTING, "no ready replica yet".into()),
                healthy: healthy_ok,
                started_at: None,
            },
        },
    }
}

/// The failure a starting game container shows, if any.
fn failure(game: &ContainerStatus) -> Option<(&'static str, String)> {
    let state = game.state.as_ref()?;
    if let Some(waiting) = &state.waiting {
        let reason = waiting.reason.as_deref().unwrap_or_default();
        let message = waiting.message.clone().unwrap_or_default();
        if reason == "ImagePullBackOff" || reason == "ErrImagePull" || reason == "InvalidImageName"
        {
            return Some((
                reasons::IMAGE_PULL_FAILED,
                format!(
                    "game image {} cannot be pulled: {reason} {message}",
                    game.image
                )
                .trim()
                .to_string(),
            ));
        }
        if reason == "CrashLoopBackOff" && game.restart_count >= CRASH_LOOP_RESTARTS {
            return Some((
                reasons::CRASH_LOOP,
                format!(
                    "game container crash loops (restartCount {})",
                    game.restart_count
                ),
            ));
        }
    }
    if let Some(terminated) = &state.terminated
        && terminated.exit_code != 0
    {
        return Some((
            reasons::CONTAINER_EXITED,
            format!("game container exited with code {}", terminated.exit_code),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
        PodCondition, PodStatus,
    };

    fn pod(state: ContainerState, restarts: i32, ready: bool) -> Pod {
        Pod {
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                container_statuses: Some(vec![ContainerStatus {
                    name: "game".into(),
                    image: "img".into(),
                    restart_count: restarts,
                    ready,
                    state: Some(state),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn waiting(reason: &str) -> ContainerState {
        ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn running() -> ContainerState {
        ContainerState {
            running: Some(ContainerStateRunning::default()),
            ..Default::default()
        }
    }

    fn exited(code: i32) -> ContainerState {
        ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: code,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn phase_rules_table() {
        use GameServerPhase::*;
        let cases: Vec<(&str, Intent, Option<Pod>, GameServerPhase, &str)> = vec![
            ("no pod yet", Intent::Run, None, Starting, reasons::STARTING),
            (
                "ready",
                Intent::Run,
                Some(pod(running(), 0, true)),
                Running,
                reasons::RUNNING,
            ),
            (
                "not ready",
                Intent::Run,
                Some(pod(running(), 0, false)),
                Starting,
                reasons::STARTING,
            ),
            (
                "pull backoff",
                Intent::Run,
                Some(pod(waiting("ImagePullBackOff"), 0, false)),
                Failed,
                reasons::IMAGE_PULL_FAILED,
            ),
            (
                "err image pull",
                Intent::Run,
                Some(pod(waiting("ErrImagePull"), 0, false)),
                Failed,
                reasons::IMAGE_PULL_FAILED,
            ),
            (
                "crash loop 2",
                Intent::Run,
                Some(pod(waiting("CrashLoopBackOff"), 2, false)),
                Starting,
                reasons::STARTING,
            ),
            (
                "crash loop 3",
                Intent::Run,
                Some(pod(waiting("CrashLoopBackOff"), 3, false)),
                Failed,
                reasons::CRASH_LOOP,
            ),
            (
                "exit 1",
                Intent::Run,
                Some(pod(exited(1), 0, false)),
                Failed,
                reasons::CONTAINER_EXITED,
            ),
            (
                "exit 0",
                Intent::Run,
                Some(pod(exited(0), 0, false)),
                Starting,
                reasons::STARTING,
            ),
            (
                "suspended, no pod",
                Intent::Suspend,
                None,
                Suspended,
                reasons::SUSPENDED,
            ),
            (
                "suspended, pod not ready",
                Intent::Suspend,
                Some(pod(exited(1), 0, false)),
                Suspended,
                reasons::SUSPENDED,
            ),
            (
                "suspended, still ready",
                Intent::Suspend,
                Some(pod(running(), 0, true)),
                Stopping,
                reasons::RUNNING,
            ),
            ("asleep", Intent::Sleep, None, Stopped, reasons::IDLE_ASLEEP),
        ];
        for (name, intent, p, phase, reason) in cases {
            let d = derive(intent, p.as_ref());
            assert_eq!((d.phase, d.ready.1), (phase, reason), "{name}");
        }
    }
}
