//! The kubelet projects a ServiceAccount token bound to the pod (TokenRequest) at the standard
//! path: the token authenticates as the pod's ServiceAccount, names the pod, and stops
//! working once the pod is gone.

mod common;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::Api;
use kube::api::{LogParams, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn projected_token_is_the_pods_service_account_until_the_pod_is_gone() {
    let cluster = common::start().await;
    let sas: Api<ServiceAccount> = Api::namespaced(cluster.client(), "default");
    sas.create(
        &PostParams::default(),
        &common::json(json!({"metadata": {"name": "robot"}})),
    )
    .await
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let dir = "/var/run/secrets/kubernetes.io/serviceaccount";
    let pod: Pod = common::json(json!({
        "metadata": {"name": "holder"},
        "spec": {"terminationGracePeriodSeconds": 1, "serviceAccountName": "robot",
            "containers": [{"name": "main", "image": "busybox:1.36",
                "command": ["sh", "-c", format!("echo ns=$(cat {dir}/namespace) token=$(cat {dir}/token) end; exec sleep 3600")],
                "volumeMounts": [{"name": "kube-api-access", "mountPath": dir, "readOnly": true}]}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ]}}]}
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let log = common::wait_for_log(&pods, "holder", &LogParams::default(), " end").await;
    let token = log
        .split_whitespace()
        .find_map(|w| w.strip_prefix("token="))
        .expect("the pod printed its token")
        .to_string();
    assert!(log.contains("ns=default"), "{log}");

    let mut config = kube::Config::new(cluster.api_url().parse().unwrap());
    config.root_cert = Some(vec![cluster.ca_der()]);
    config.auth_info.token = Some(token.into());
    let as_pod = kube::Client::try_from(config).unwrap();
    let reviews: Api<SelfSubjectReview> = Api::all(as_pod.clone());
    let me = reviews
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let user = me.status.unwrap().user_info.unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    assert_eq!(
        user.extra.unwrap()["authentication.kubernetes.io/pod-name"],
        ["holder".to_string()]
    );

    pods.delete("holder", &Default::default()).await.unwrap();
    common::wait_deleted(&pods, "holder", "pod holder removed").await;
    match reviews
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 401, "{s:?}"),
        other => panic!("a token of a deleted pod must be refused, got {other:?}"),
    }
}
