//! Authentication and RBAC on the embedded API server, through kube-rs: ServiceAccount tokens
//! from TokenRequest (bound, audience, expiry), the default ServiceAccount, Roles and bindings
//! enforced on verbs, subresources and resourceNames with the Forbidden message real clusters
//! give, the default discovery rules, access reviews, impersonation, eviction and APIServices.

mod common;

use common::{client_with_token, start, status_of};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kube::api::{Api, DynamicObject, EvictParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use rehearsal_apiserver::ApiServer;
use serde_json::{Value, json};

async fn create<K>(api: &Api<K>, v: Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(v).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap()
}

fn dynamic(
    client: &kube::Client,
    g: &str,
    v: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(g, v, kind), plural);
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

async fn token_for(
    admin: &kube::Client,
    ns: &str,
    sa: &str,
    spec: TokenRequestSpec,
) -> Result<String, kube::Error> {
    let api: Api<ServiceAccount> = Api::namespaced(admin.clone(), ns);
    let req = TokenRequest {
        spec: Some(spec),
        ..Default::default()
    };
    let answer = api
        .create_token_request(sa, &PostParams::default(), &req)
        .await?;
    Ok(answer.status.and_then(|s| s.token).expect("a token"))
}

async fn setup(server: &ApiServer, admin: &kube::Client) -> kube::Client {
    let nss: Api<Namespace> = Api::all(admin.clone());
    for ns in ["team", "other"] {
        create(&nss, json!({"metadata": {"name": ns}})).await;
    }
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "team");
    create(&sas, json!({"metadata": {"name": "robot"}})).await;
    let token = token_for(admin, "team", "robot", TokenRequestSpec::default())
        .await
        .unwrap();
    client_with_token(server, Some(&token))
}

#[tokio::test(flavor = "multi_thread")]
#[expect(
    clippy::too_many_lines,
    reason = "one server and a sequence of role grants whose effects build on each other"
)]
async fn service_account_tokens_are_held_to_their_roles() {
    let (server, admin) = start().await;
    // Every namespace gets its default ServiceAccount.
    let default_sa: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    default_sa.get("default").await.unwrap();
    let robot = setup(&server, &admin).await;
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "team");
    sas.get("default").await.unwrap();

    // Nothing granted: the Forbidden message of a real cluster.
    let pods: Api<Pod> = Api::namespaced(robot.clone(), "team");
    let denied = status_of(pods.list(&ListParams::default()).await);
    assert_eq!(denied.code, 403);
    assert_eq!(denied.reason, "Forbidden");
    assert_eq!(
        denied.message,
        "pods is forbidden: User \"system:serviceaccount:team:robot\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\""
    );

    // A Role and RoleBinding (created like any object) grant exactly their rules.
    let roles = dynamic(
        &admin,
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        Some("team"),
    );
    roles
        .create(&PostParams::default(), &serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "reader"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["allowed"], "verbs": ["get"]},
            ],
        })).unwrap())
        .await
        .unwrap();
    let bindings = dynamic(
        &admin,
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        Some("team"),
    );
    bindings
        .create(&PostParams::default(), &serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "robot-reads"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "team"}],
        })).unwrap())
        .await
        .unwrap();
    pods.list(&ListParams::default()).await.unwrap();
    let admin_pods: Api<Pod> = Api::namespaced(admin.clone(), "team");
    create(
        &admin_pods,
        json!({"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .await;
    pods.get("p1").await.unwrap();
    // Verbs not granted, another namespace, a subresource, a name outside resourceNames.
    let delete = status_of(pods.delete("p1", &Default::default()).await);
    assert_eq!(
        delete.message,
        "pods \"p1\" is forbidden: User \"system:serviceaccount:team:robot\" cannot delete resource \"pods\" in API group \"\" in the namespace \"team\""
    );
    let elsewhere: Api<Pod> = Api::namespaced(robot.clone(), "other");
    assert_eq!(
        status_of(elsewhere.list(&ListParams::default()).await).code,
        403
    );
    let log = status_of(pods.logs("p1", &Default::default()).await);
    assert_eq!(
        log.message,
        "pods \"p1\" is forbidden: User \"system:serviceaccount:team:robot\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"team\""
    );
    let status = status_of(
        pods.patch_status(
            "p1",
            &Default::default(),
            &kube::api::Patch::Merge(json!({"status": {}})),
        )
        .await,
    );
    assert!(
        status
            .message
            .contains("cannot patch resource \"pods/status\""),
        "{status:?}"
    );
    let admin_cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "team");
    for name in ["allowed", "secret-one"] {
        create(&admin_cms, json!({"metadata": {"name": name}})).await;
    }
    let cms: Api<ConfigMap> = Api::namespaced(robot.clone(), "team");
    cms.get("allowed").await.unwrap();
    let named = status_of(cms.get("secret-one").await);
    assert_eq!(
        named.message,
        "configmaps \"secret-one\" is forbidden: User \"system:serviceaccount:team:robot\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"team\""
    );
    assert_eq!(status_of(cms.list(&ListParams::default()).await).code, 403);
    // Cluster-scoped resources: "at the cluster scope".
    let nss: Api<Namespace> = Api::all(robot.clone());
    assert_eq!(
        status_of(nss.list(&ListParams::default()).await).message,
        "namespaces is forbidden: User \"system:serviceaccount:team:robot\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
    // Discovery is open to every authenticated user (system:discovery).
    robot.apiserver_version().await.unwrap();
    robot.list_core_api_versions().await.unwrap();
    robot.list_api_groups().await.unwrap();

    // SelfSubjectAccessReview answers what the user may do.
    let review = |verb: &str, resource: &str, name: Option<&str>| SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("team".into()),
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                name: name.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let ssar: Api<SelfSubjectAccessReview> = Api::all(robot.clone());
    for (verb, resource, name, allowed) in [
        ("list", "pods", None, true),
        ("delete", "pods", None, false),
        ("get", "configmaps", Some("allowed"), true),
        ("get", "configmaps", Some("secret-one"), false),
    ] {
        let answer = ssar
            .create(&PostParams::default(), &review(verb, resource, name))
            .await
            .unwrap();
        assert_eq!(
            answer.status.unwrap().allowed,
            allowed,
            "{verb} {resource} {name:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_are_bound_checked_and_unknown_credentials_are_401() {
    let (server, admin) = start().await;
    let robot = setup(&server, &admin).await;
    robot.apiserver_version().await.unwrap();
    // A token for another audience, a forged one and garbage are 401 Unauthorized.
    let other_audience = token_for(
        &admin,
        "team",
        "robot",
        TokenRequestSpec {
            audiences: Some(vec!["vault".into()]),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut forged = other_audience.clone();
    forged.push('x');
    for token in [other_audience.as_str(), forged.as_str(), "not-a-token"] {
        let client = client_with_token(&server, Some(token));
        let pods: Api<Pod> = Api::namespaced(client, "team");
        let s = status_of(pods.list(&ListParams::default()).await);
        assert_eq!(
            (s.code, s.reason.as_str(), s.message.as_str()),
            (401, "Unauthorized", "Unauthorized")
        );
    }
    // The shortest expiry a real server accepts is 10 minutes.
    let short = token_for(
        &admin,
        "team",
        "robot",
        TokenRequestSpec {
            expiration_seconds: Some(60),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(status_of(short).code, 422);
    // Bound to the ServiceAccount's uid: deleting it (even recreating the name) ends the token.
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "team");
    sas.delete("robot", &Default::default()).await.unwrap();
    create(&sas, json!({"metadata": {"name": "robot"}})).await;
    let pods: Api<Pod> = Api::namespaced(robot.clone(), "team");
    assert_eq!(status_of(pods.list(&ListParams::default()).await).code, 401);
    // A pod-bound token ends with the pod.
    let admin_pods: Api<Pod> = Api::namespaced(admin.clone(), "team");
    let pod = create(
        &admin_pods,
        json!({"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .await;
    let bound = token_for(
        &admin,
        "team",
        "robot",
        TokenRequestSpec {
            bound_object_ref: Some(k8s_openapi::api::authentication::v1::BoundObjectReference {
                kind: Some("Pod".into()),
                api_version: Some("v1".into()),
                name: Some("p1".into()),
                uid: pod.metadata.uid.clone(),
            }),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let bound_client = client_with_token(&server, Some(&bound));
    bound_client.apiserver_version().await.unwrap();
    admin_pods.delete("p1", &Default::default()).await.unwrap();
    assert_eq!(status_of(bound_client.apiserver_version().await).code, 401);

    // A credential-less request is system:anonymous, never a superuser: public paths only,
    // and a real Forbidden for reads and writes of resources.
    let anonymous = client_with_token(&server, None);
    anonymous.apiserver_version().await.unwrap();
    let s = status_of(anonymous.list_core_api_versions().await);
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "forbidden: User \"system:anonymous\" cannot get path \"/api\""
    );
    let anonymous_pods: Api<Pod> = Api::namespaced(anonymous, "team");
    let s = status_of(anonymous_pods.list(&ListParams::default()).await);
    assert_eq!(
        (s.code, s.message.as_str()),
        (
            403,
            "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\""
        )
    );
    let s = status_of(
        anonymous_pods
            .delete("p1", &Default::default())
            .await
            .map(|_| ()),
    );
    assert_eq!(s.code, 403, "{s:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn impersonation_needs_the_impersonate_verb() {
    let (server, admin) = start().await;
    let robot = setup(&server, &admin).await;
    let mut config = kube::Config::new(server.url().parse().unwrap());
    config.root_cert = Some(vec![server.ca_der()]);
    config.auth_info.token = Some(server.admin_token().to_string().into());
    config.auth_info.impersonate = Some("system:serviceaccount:team:robot".into());
    let as_robot = kube::Client::try_from(config).unwrap();
    let pods: Api<Pod> = Api::namespaced(as_robot, "team");
    assert_eq!(
        status_of(pods.list(&ListParams::default()).await).message,
        "pods is forbidden: User \"system:serviceaccount:team:robot\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\""
    );
    // The robot may not impersonate anyone.
    let mut config = kube::Config::new(server.url().parse().unwrap());
    config.root_cert = Some(vec![server.ca_der()]);
    let token = token_for(&admin, "team", "robot", TokenRequestSpec::default())
        .await
        .unwrap();
    config.auth_info.token = Some(token.into());
    config.auth_info.impersonate = Some("kubernetes-admin".into());
    let escalate = kube::Client::try_from(config).unwrap();
    let s = status_of(escalate.apiserver_version().await);
    assert_eq!(
        s.message,
        "users \"kubernetes-admin\" is forbidden: User \"system:serviceaccount:team:robot\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    drop(robot);
}

#[tokio::test(flavor = "multi_thread")]
async fn eviction_respects_disruption_budgets_and_apiservices_are_listed() {
    let (server, admin) = start().await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    for name in ["a", "b"] {
        create(&pods, json!({"metadata": {"name": name, "labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "x"}]}})).await;
    }
    let pdbs = dynamic(
        &admin,
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        Some("default"),
    );
    pdbs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep-b"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "b"}}},
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    // Pod b runs (no kubelet here: its status is set as one would); a Pending pod is evicted
    // whatever its budgets say, as by kube-apiserver, so b must run to be protected.
    pods.patch_status(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
    common::within("the eviction", pods.evict("a", &EvictParams::default()))
        .await
        .unwrap();
    assert!(
        pods.get_opt("a").await.unwrap().is_none(),
        "evicted pod a is gone"
    );
    // Clients retry a 429 (kube-rs and kubectl drain alike): ask once, on the wire.
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "b", "namespace": "default"}});
    let reply = common::raw(
        server.addr(),
        &common::request(
            "POST",
            "/api/v1/namespaces/default/pods/b/eviction",
            Some("application/json"),
            &serde_json::to_vec(&eviction).unwrap(),
        ),
    )
    .await;
    let s = reply.status();
    assert_eq!(
        (reply.code, s["reason"].as_str()),
        (429, Some("TooManyRequests")),
        "{s}"
    );
    assert_eq!(
        s["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    pods.get("b").await.unwrap();

    let apiservices = dynamic(
        &admin,
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        None,
    );
    let names: Vec<String> = apiservices
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|a| a.metadata.name)
        .collect();
    for wanted in [
        "v1.",
        "v1.apps",
        "v1.rbac.authorization.k8s.io",
        "v1.apiregistration.k8s.io",
    ] {
        assert!(
            names.iter().any(|n| n == wanted),
            "{wanted} missing from {names:?}"
        );
    }
    let core = apiservices.get("v1.apps").await.unwrap();
    assert_eq!(core.data["status"]["conditions"][0]["reason"], "Local");
}
