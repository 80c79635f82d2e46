//! The Kind manifests under `deploy/` parse as the Kubernetes objects the harness expects.

use std::path::PathBuf;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use serde::Deserialize;

fn docs(file: &str) -> Vec<serde_yaml::Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| {
            serde_yaml::Value::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

#[test]
fn namespace_rbac_and_deployment_fit_together() {
    let ns: Namespace = serde_yaml::from_value(docs("00-namespace.yaml").remove(0)).unwrap();
    assert_eq!(ns.metadata.name.as_deref(), Some("gameplane-system"));

    let mut rbac = docs("10-rbac.yaml").into_iter();
    let sa: ServiceAccount = serde_yaml::from_value(rbac.next().unwrap()).unwrap();
    let role: ClusterRole = serde_yaml::from_value(rbac.next().unwrap()).unwrap();
    let binding: ClusterRoleBinding = serde_yaml::from_value(rbac.next().unwrap()).unwrap();
    let subject = &binding.subjects.as_ref().unwrap()[0];
    assert_eq!(
        (subject.name.as_str(), subject.namespace.as_deref()),
        ("reference-operator", Some("gameplane-system"))
    );
    assert_eq!(binding.role_ref.name, role.metadata.name.clone().unwrap());
    // Secrets are only read, one by one: never listed or watched.
    let secrets = role
        .rules
        .iter()
        .flatten()
        .find(|r| r.resources.iter().flatten().any(|x| x == "secrets"))
        .unwrap();
    assert_eq!(secrets.verbs, ["get"]);
    assert!(
        role.rules
            .iter()
            .flatten()
            .all(|r| !r.verbs.iter().any(|v| v == "*")),
        "no wildcard verbs"
    );

    let deployment: Deployment =
        serde_yaml::from_value(docs("20-deployment.yaml").remove(0)).unwrap();
    assert_eq!(
        deployment.metadata.name.as_deref(),
        Some("reference-operator")
    );
    assert_eq!(
        deployment.metadata.namespace.as_deref(),
        Some("gameplane-system")
    );
    let pod = deployment.spec.template.spec.unwrap();
    assert_eq!(
        pod.service_account_name.as_deref(),
        sa.metadata.name.as_deref()
    );
    assert_eq!(
        pod.containers[0].image.as_deref(),
        Some("rehearsal.local/reference-operator:dev")
    );
}
