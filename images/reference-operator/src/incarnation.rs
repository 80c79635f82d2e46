//! The game's incarnation: which pod and which run of its `game` container a live backup is
//! bound to, and how a later observation compares with the recorded one (CONTRACT B1).

use gameplane_api::names::containers;
use gameplane_api::{SourceRecord, SourceState};
use k8s_openapi::api::core::v1::Pod;

/// One running game process, as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Incarnation {
    /// `metadata.name` of the pod.
    pub pod_name: String,
    /// `metadata.uid` of the pod.
    pub pod_uid: String,
    /// `status.podIP`, where the agent listens.
    pub pod_ip: String,
    /// Where the operator calls the agent: its Service's name
    /// `<gs>-agent.<ns>.svc.cluster.local` (the pod IP for a pod without the server label).
    pub agent_host: String,
    /// The `game` container's `containerID`.
    pub container_id: String,
    /// The `game` container's `restartCount`.
    pub restart_count: i32,
}

impl Incarnation {
    /// The Part B source record of this incarnation.
    pub fn to_source(&self) -> SourceRecord {
        SourceRecord {
            state: SourceState::Live,
            pod_name: Some(self.pod_name.clone()),
            pod_uid: Some(self.pod_uid.clone()),
            game_container_id: Some(self.container_id.clone()),
            game_restart_count: Some(self.restart_count),
        }
    }
}

/// What the API shows about a server's game process right now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    /// No pod `<gs>-0`.
    NoPod,
    /// A pod exists but no game process can be named (not started, terminated, terminating,
    /// no IP yet); the string says which.
    NotRunning(String),
    /// A running game process.
    Running(Incarnation),
}

/// Observes `pod` (the server's `<gs>-0`, if any).
pub fn observe(pod: Option<&Pod>) -> Observation {
    let Some(pod) = pod else {
        return Observation::NoPod;
    };
    let name = pod.metadata.name.clone().unwrap_or_default();
    if pod.metadata.deletion_timestamp.is_some() {
        return Observation::NotRunning(format!("pod {name} is terminating"));
    }
    let Some(uid) = pod.metadata.uid.clone() else {
        return Observation::NotRunning(format!("pod {name} has no uid"));
    };
    let status = pod.status.as_ref();
    let game = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == containers::GAME));
    let Some(game) = game else {
        return Observation::NotRunning(format!("pod {name} reports no game container status yet"));
    };
    let running = game.state.as_ref().is_some_and(|s| s.running.is_some());
    let (Some(container_id), true) = (game.container_id.clone().filter(|c| !c.is_empty()), running)
    else {
        return Observation::NotRunning(format!(
            "game container of pod {name} is not running (restartCount {})",
            game.restart_count
        ));
    };
    let Some(pod_ip) = status
        .and_then(|s| s.pod_ip.clone())
        .filter(|ip| !ip.is_empty())
    else {
        return Observation::NotRunning(format!("pod {name} has no IP yet"));
    };
    let agent_host = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(gameplane_api::names::labels::SERVER))
        .map(|gs| {
            crate::agent::service_host(gs, pod.metadata.namespace.as_deref().unwrap_or("default"))
        })
        .unwrap_or_else(|| pod_ip.clone());
    Observation::Running(Incarnation {
        agent_host,
        pod_name: name,
        pod_uid: uid,
        pod_ip,
        container_id,
        restart_count: game.restart_count,
    })
}

/// How an observation relates to the recorded live source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Continuity {
    /// The same pod and the same game process.
    Same(Incarnation),
    /// Same pod, but the game container restarted (new container ID or restart count).
    GameRestarted {
        /// The incarnation serving now.
        now: Incarnation,
    },
    /// Another pod serves the server now.
    PodReplaced {
        /// The incarnation serving now.
        now: Incarnation,
    },
    /// No game process can be named any more (pod gone, terminating, container down).
    Unobservable(String),
}

impl Continuity {
    /// Whether the capture may continue.
    pub fn is_same(&self) -> bool {
        matches!(self, Continuity::Same(_))
    }

    /// One line for `status.message`.
    pub fn describe(&self, recorded: &SourceRecord) -> String {
        let pod = recorded.pod_uid.as_deref().unwrap_or("?");
        let cid = recorded.game_container_id.as_deref().unwrap_or("?");
        let rc = recorded.game_restart_count.unwrap_or(-1);
        match self {
            Continuity::Same(_) => {
                format!("game incarnation unchanged (pod {pod}, container {cid})")
            }
            Continuity::GameRestarted { now } => format!(
                "the game container restarted inside pod {pod}: container {cid} (restartCount {rc}) became {} (restartCount {})",
                now.container_id, now.restart_count
            ),
            Continuity::PodReplaced { now } => {
                format!("pod {pod} was replaced by pod {}", now.pod_uid)
            }
            Continuity::Unobservable(why) => {
                format!(
                    "the recorded game incarnation (pod {pod}, container {cid}) is no longer observable: {why}"
                )
            }
        }
    }
}

/// Compares `observed` with the `recorded` live source. With `pod_only` (the
/// `ignore-incarnation` mutant) a game restart inside the same pod goes unnoticed.
pub fn compare(recorded: &SourceRecord, observed: &Observation, pod_only: bool) -> Continuity {
    let now = match observed {
        Observation::NoPod => return Continuity::Unobservable("the pod is gone".to_string()),
        Observation::NotRunning(why) => return Continuity::Unobservable(why.clone()),
        Observation::Running(now) => now,
    };
    if recorded.pod_uid.as_deref() != Some(now.pod_uid.as_str()) {
        return Continuity::PodReplaced { now: now.clone() };
    }
    let same_process = recorded.game_container_id.as_deref() == Some(now.container_id.as_str())
        && recorded.game_restart_count == Some(now.restart_count);
    if same_process || pod_only {
        Continuity::Same(now.clone())
    } else {
        Continuity::GameRestarted { now: now.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateWaiting, ContainerStatus, PodStatus,
    };
    use kube::api::ObjectMeta;

    fn pod(uid: &str, cid: Option<&str>, restarts: i32, running: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("gs-0".into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            status: Some(PodStatus {
                pod_ip: Some("127.1.0.2".into()),
                container_statuses: Some(vec![
                    ContainerStatus {
                        name: "agent".into(),
                        container_id: Some("agent-1".into()),
                        restart_count: 7,
                        ..Default::default()
                    },
                    ContainerStatus {
                        name: "game".into(),
                        container_id: cid.map(String::from),
                        restart_count: restarts,
                        state: Some(if running {
                            ContainerState {
                                running: Some(ContainerStateRunning::default()),
                                ..Default::default()
                            }
                        } else {
                            ContainerState {
                                waiting: Some(ContainerStateWaiting::default()),
                                ..Default::default()
                            }
                        }),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn recorded() -> SourceRecord {
        match observe(Some(&pod("u1", Some("c1"), 0, true))) {
            Observation::Running(inc) => inc.to_source(),
            other => panic!("expected a running incarnation, observed {other:?}"),
        }
    }

    #[test]
    fn observation_needs_a_running_game_container_with_an_id() {
        assert_eq!(observe(None), Observation::NoPod);
        assert!(matches!(
            observe(Some(&pod("u1", None, 0, true))),
            Observation::NotRunning(_)
        ));
        assert!(matches!(
            observe(Some(&pod("u1", Some("c1"), 0, false))),
            Observation::NotRunning(_)
        ));
        let rec = recorded();
        assert_eq!(rec.pod_uid.as_deref(), Some("u1"));
        assert_eq!(rec.game_container_id.as_deref(), Some("c1"));
        assert_eq!(rec.game_restart_count, Some(0));
    }

    #[test]
    fn verdicts_table() {
        let rec = recorded();
        type Case = (&'static str, Pod, bool, fn(&Continuity) -> bool);
        let cases: [Case; 6] = [
            ("unchanged", pod("u1", Some("c1"), 0, true), false, |v| {
                v.is_same()
            }),
            (
                "same-pod game restart",
                pod("u1", Some("c2"), 1, true),
                false,
                |v| matches!(v, Continuity::GameRestarted { .. }),
            ),
            (
                "same-pod restart, pod_only mutant",
                pod("u1", Some("c2"), 1, true),
                true,
                |v| v.is_same(),
            ),
            (
                "replacement pod",
                pod("u2", Some("c9"), 0, true),
                false,
                |v| matches!(v, Continuity::PodReplaced { .. }),
            ),
            (
                "replacement pod, pod_only mutant",
                pod("u2", Some("c9"), 0, true),
                true,
                |v| matches!(v, Continuity::PodReplaced { .. }),
            ),
            (
                "game container down",
                pod("u1", Some("c1"), 0, false),
                false,
                |v| matches!(v, Continuity::Unobservable(_)),
            ),
        ];
        for (name, p, pod_only, expect) in cases {
            let v = compare(&rec, &observe(Some(&p)), pod_only);
            assert!(expect(&v), "{name}: got {v:?}");
        }
        assert!(matches!(
            compare(&rec, &Observation::NoPod, false),
            Continuity::Unobservable(_)
        ));
    }

    #[test]
    fn an_agent_restart_is_not_a_game_restart() {
        let rec = recorded();
        let mut p = pod("u1", Some("c1"), 0, true);
        let agent = &mut p
            .status
            .as_mut()
            .unwrap()
            .container_statuses
            .as_mut()
            .unwrap()[0];
        agent.container_id = Some("agent-2".into());
        agent.restart_count += 1;
        assert!(compare(&rec, &observe(Some(&p)), false).is_same());
    }
}
