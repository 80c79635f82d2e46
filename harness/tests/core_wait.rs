//! Wait conditions: what counts as met, pending and terminal, and how the last observed state is
//! described (pure; the watch itself is exercised against the embedded API server in
//! `core_wait_live.rs`).

use k8s_openapi::api::core::v1::Pod;
use rehearsal::wait::{Progress, conditions, describe};
use serde_json::json;

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

fn waiting(reason: &str) -> Pod {
    pod(json!({
        "metadata": {"name": "mc-0", "uid": "u1"},
        "status": {"phase": "Pending", "containerStatuses": [
            {"name": "game", "image": "rehearsal.local/unpullable@sha256:00", "imageID": "", "ready": false,
             "restartCount": 0, "state": {"waiting": {"reason": reason}}}
        ]}
    }))
}

fn running(uid: &str, id: &str, restarts: i32, ready: bool) -> Pod {
    pod(json!({
        "metadata": {"name": "mc-0", "uid": uid},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}],
            "containerStatuses": [
            {"name": "game", "image": "g", "imageID": "g@sha256:1", "ready": ready, "containerID": id,
             "restartCount": restarts, "state": {"running": {"startedAt": "2026-11-29T12:00:00Z"}}}
        ]}
    }))
}

#[test]
fn pod_ready_fails_fast_on_image_pull_backoff() {
    let c = conditions::pod_ready();
    let Progress::Terminal(reason) = c.check(Some(&waiting("ImagePullBackOff"))) else {
        panic!("expected terminal")
    };
    assert!(
        reason.contains("ImagePullBackOff") && reason.contains("game"),
        "{reason}"
    );
    assert_eq!(
        c.check(Some(&waiting("ContainerCreating"))),
        Progress::Pending
    );
    assert_eq!(c.check(None), Progress::Pending);
    assert_eq!(
        c.check(Some(&running("u1", "containerd://a", 0, false))),
        Progress::Pending
    );
    assert_eq!(
        c.check(Some(&running("u1", "containerd://a", 0, true))),
        Progress::Met
    );
}

#[test]
fn image_pull_failure_is_what_an_unpullable_candidate_must_show() {
    let c = conditions::pod_image_pull_failed();
    assert_eq!(c.check(Some(&waiting("ErrImagePull"))), Progress::Met);
    assert!(matches!(
        c.check(Some(&running("u1", "x", 0, true))),
        Progress::Terminal(_)
    ));
}

#[test]
fn container_restart_in_place_versus_pod_replacement() {
    let c = conditions::container_restarted("u1", "game", "containerd://a");
    assert_eq!(
        c.check(Some(&running("u1", "containerd://a", 0, true))),
        Progress::Pending
    );
    assert_eq!(
        c.check(Some(&running("u1", "containerd://b", 1, false))),
        Progress::Met
    );
    assert!(matches!(
        c.check(Some(&running("u2", "containerd://b", 0, true))),
        Progress::Terminal(_)
    ));
    let r = conditions::pod_replaced("u1");
    assert_eq!(
        r.check(Some(&running("u1", "a", 0, true))),
        Progress::Pending
    );
    assert_eq!(r.check(Some(&running("u2", "a", 0, true))), Progress::Met);
}

#[test]
fn phase_conditions_fail_fast_on_failed() {
    let backup = |phase: &str| json!({"metadata": {"name": "b"}, "status": {"phase": phase}});
    let c = conditions::succeeded::<serde_json::Value>();
    assert_eq!(c.check(Some(&backup("Running"))), Progress::Pending);
    assert_eq!(c.check(Some(&backup("Succeeded"))), Progress::Met);
    assert!(matches!(
        c.check(Some(&backup("Failed"))),
        Progress::Terminal(_)
    ));
    // Waiting for Failed itself is allowed.
    let f = conditions::gameserver_phase::<serde_json::Value>("Failed");
    assert_eq!(f.check(Some(&backup("Failed"))), Progress::Met);
    let cond = conditions::status_condition::<serde_json::Value>("Completed", "False");
    let obj = json!({"status": {"conditions": [{"type": "Completed", "status": "False", "reason": "SourceChanged"}]}});
    assert_eq!(cond.check(Some(&obj)), Progress::Met);
}

#[test]
fn job_failed_is_terminal() {
    let job: k8s_openapi::api::batch::v1::Job = serde_json::from_value(json!({
        "metadata": {"name": "b"},
        "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}
    })).unwrap();
    let Progress::Terminal(r) = conditions::job_complete().check(Some(&job)) else {
        panic!()
    };
    assert!(r.contains("BackoffLimitExceeded"));
}

#[test]
fn last_observed_state_names_phase_conditions_and_containers() {
    let d = describe(Some(&waiting("ImagePullBackOff")));
    assert_eq!(
        d,
        "uid=u1 phase=Pending containers=[game:waiting:ImagePullBackOff,restarts=0]"
    );
    let d = describe(Some(&running("u1", "containerd://a", 2, true)));
    assert_eq!(
        d,
        "uid=u1 phase=Running conditions=[Ready=True] containers=[game:running,ready,restarts=2]"
    );
    assert_eq!(describe::<Pod>(None), "absent");
}

#[tokio::test]
async fn an_unreachable_api_server_is_named_in_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    // Port 1 on loopback: nothing listens there.
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:1\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n",
    )
    .unwrap();
    let client = rehearsal::backend::pinned_client(&path, "x").await.unwrap();
    let pods: kube::Api<Pod> = kube::Api::namespaced(client, "ns");
    let err = rehearsal::wait::await_condition(
        &pods,
        "mc-0",
        conditions::pod_ready(),
        std::time::Duration::from_millis(500),
    )
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("pods ns/mc-0") && msg.contains("expected pod Ready"),
        "{msg}"
    );
    assert!(msg.contains("the first list did not complete"), "{msg}");
    assert!(msg.contains("last watch error"), "{msg}");
}

/// A wait inside `wait::logged` leaves a record for the step's profile: the object, what was
/// expected, how it ended and the last observed state (here: nothing, the list never completed).
#[tokio::test]
async fn a_logged_wait_records_how_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:1\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n",
    )
    .unwrap();
    let client = rehearsal::backend::pinned_client(&path, "x").await.unwrap();
    let pods: kube::Api<Pod> = kube::Api::namespaced(client, "ns");
    let (result, log) = rehearsal::wait::logged(async {
        rehearsal::wait::await_condition(
            &pods,
            "mc-0",
            conditions::pod_ready(),
            std::time::Duration::from_millis(300),
        )
        .await
    })
    .await;
    assert!(result.is_err());
    assert_eq!(log.len(), 1, "{log:?}");
    let w = &log[0];
    assert_eq!(w.object, "pods ns/mc-0");
    assert_eq!(w.expected, "pod Ready");
    assert_eq!(w.outcome, rehearsal::wait::WaitOutcome::TimedOut);
    assert!(
        w.woken_by.contains("the first list did not complete"),
        "{w:?}"
    );
    assert!(w.transitions.is_empty(), "{w:?}");
}
