//! The reference operator on the embedded cluster runs as its own ServiceAccount, held to the
//! RBAC of images/reference-operator/deploy: with its manifests it becomes ready; with one
//! rule taken away its log carries the Forbidden error of the API server (not silence).

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;
use rehearsal::backend::Backend;
use rehearsal::backend::embedded::{Embedded, EmbeddedOptions};
use rehearsal::deploy::embedded::EmbeddedDeploy;
use rehearsal_embedded::EmbeddedConfig;
use serde_json::{Value, json};

fn options(rules: Option<Value>, ready: Duration) -> EmbeddedOptions {
    EmbeddedOptions {
        cluster: EmbeddedConfig {
            shutdown_grace: Duration::from_secs(2),
            ..EmbeddedConfig::default()
        },
        deploy: EmbeddedDeploy {
            rules,
            ready,
            ..EmbeddedDeploy::reference_operator(None)
        }
        .shared(),
        ..Default::default()
    }
}

/// The ClusterRole's rules as the operator's manifests declare them.
fn manifest_rules() -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../images/reference-operator/deploy/10-rbac.yaml"
    ))
    .unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .find_map(|doc: Value| (doc["kind"] == "ClusterRole").then(|| doc["rules"].clone()))
        .and_then(|r| r.as_array().cloned())
        .expect("10-rbac.yaml has a ClusterRole with rules")
}

async fn can(client: &kube::Client, verb: &str, group: &str, resource: &str) -> bool {
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some("system:serviceaccount:gameplane-system:reference-operator".into()),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:gameplane-system".into(),
                "system:authenticated".into(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("any".into()),
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    reviews
        .create(&PostParams::default(), &review)
        .await
        .unwrap()
        .status
        .unwrap()
        .allowed
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_runs_under_its_service_account_and_a_missing_rule_is_forbidden() {
    // With its manifests: ready, and held to exactly them.
    let backend = Embedded::up(options(None, Duration::from_secs(30)))
        .await
        .expect("the operator starts under its RBAC");
    let client = backend.client();
    assert!(can(&client, "watch", "gameplane.local", "gameservers").await);
    assert!(can(&client, "create", "apps", "statefulsets").await);
    assert!(!can(&client, "delete", "apps", "statefulsets").await);
    assert!(!can(&client, "create", "", "secrets").await);
    let kubeconfig = std::fs::read_to_string(
        backend
            .cluster()
            .state_dir()
            .join("reference-operator.kubeconfig"),
    )
    .unwrap();
    assert!(
        kubeconfig.contains("token: "),
        "the operator's kubeconfig carries its token"
    );
    Box::new(backend).teardown(false).await.unwrap();

    // Without the rule on GameServers, Backups and Restores its caches never sync: it is not
    // ready, and the reason is the API server's Forbidden, in its log.
    let rules: Vec<Value> = manifest_rules()
        .into_iter()
        .filter(|r| r["resources"] != json!(["gameservers", "backups", "restores"]))
        .collect();
    assert_eq!(
        rules.len() + 1,
        manifest_rules().len(),
        "exactly one rule taken away"
    );
    let err = Embedded::up(options(Some(Value::Array(rules)), Duration::from_secs(8)))
        .await
        .expect_err("the operator cannot become ready without watching its objects");
    // The log shows the Status in Debug form (quotes escaped).
    let text = err.to_string().replace('\\', "");
    // One line: the log's last line, the Forbidden list of one of the three.
    assert!(
        ["gameservers", "backups", "restores"].iter().any(|r| text.contains(&format!(
            "User \"system:serviceaccount:gameplane-system:reference-operator\" cannot list resource \"{r}\" in API group \"gameplane.local\" at the cluster scope"
        ))),
        "the operator's log names the Forbidden error: {text}"
    );
    assert!(!text.contains('\n'), "one line: {text}");
}
