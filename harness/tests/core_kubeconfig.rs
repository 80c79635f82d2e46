//! Context pinning: no implicit current-context, unknown contexts refused, live tests guarded.

use rehearsal::backend::existing::Existing;
use rehearsal::backend::kubeconfig::{explicit_context, live_test_context};

const KUBECONFIG: &str = r#"apiVersion: v1
kind: Config
current-context: production
clusters:
- name: prod
  cluster: {server: "https://127.0.0.1:1"}
- name: rehearsal
  cluster: {server: "https://127.0.0.1:2"}
users:
- name: u
  user: {token: t}
contexts:
- name: production
  context: {cluster: prod, user: u}
- name: kind-rehearsal
  context: {cluster: rehearsal, user: u}
"#;

fn kubeconfig() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, KUBECONFIG).unwrap();
    (dir, path)
}

#[test]
fn no_context_is_refused_and_lists_the_available_ones() {
    let (_d, path) = kubeconfig();
    let err = explicit_context(&path, None).unwrap_err().to_string();
    assert!(err.contains("--context"), "{err}");
    assert!(err.contains("kind-rehearsal, production"), "{err}");
}

#[test]
fn an_unknown_context_is_refused() {
    let (_d, path) = kubeconfig();
    let err = explicit_context(&path, Some("staging"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("staging") && err.contains("kind-rehearsal"),
        "{err}"
    );
}

#[tokio::test]
async fn existing_backend_pins_the_named_context_not_the_current_one() {
    let (_d, path) = kubeconfig();
    let err = Existing::connect(&path, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("--context"), "{err}");
    let existing = Existing::connect(&path, Some("kind-rehearsal"))
        .await
        .unwrap();
    assert_eq!(existing.context(), "kind-rehearsal");
    use rehearsal::backend::Backend;
    assert_eq!(existing.kubeconfig().1, "kind-rehearsal");
}

#[test]
fn live_tests_refuse_a_context_not_named_in_rehearsal_context() {
    // Runs in its own process under nextest; REHEARSAL_CONTEXT is not set by CI.
    if std::env::var("REHEARSAL_CONTEXT").is_err() {
        let err = live_test_context("production").unwrap_err().to_string();
        assert!(
            err.contains("REHEARSAL_CONTEXT") && err.contains("unset"),
            "{err}"
        );
    } else {
        let allowed = std::env::var("REHEARSAL_CONTEXT").unwrap();
        assert!(live_test_context(&allowed).is_ok());
        assert!(live_test_context(&format!("{allowed}-other")).is_err());
    }
}

#[tokio::test]
async fn live_test_connection_refuses_other_contexts() {
    // Without REHEARSAL_CONTEXT (CI's default run) nothing is allowed.
    if std::env::var("REHEARSAL_CONTEXT").is_err() {
        let err = Existing::for_live_test(Some("kind-rehearsal"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("REHEARSAL_CONTEXT"), "{err}");
    } else {
        let err = Existing::for_live_test(Some("definitely-not-the-live-context"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing"), "{err}");
    }
}
