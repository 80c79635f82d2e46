//! In-cluster clients work unchanged, as on a real cluster: the ServiceAccount admission
//! mounts a `kube-api-access-*` volume (token, ca.crt, namespace) at the standard path unless
//! automounting is off, every container gets `KUBERNETES_SERVICE_HOST`/`_PORT`, and the
//! `kubernetes` Service in `default` reaches the API server over TLS through the node's
//! Service proxy. The reference operator, deployed from its own manifests with `kubectl
//! apply`, runs as a pod with kube-rs's in-cluster config under its ServiceAccount, and a rule
//! taken from its ClusterRole shows as the API server's Forbidden in its log.

mod common;

use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Api;
use kube::api::{ListParams, LogParams, Patch, PatchParams, PostParams};
use serde_json::json;

const TOKEN_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn busybox(name: &str, script: &str) -> serde_json::Value {
    json!({
        "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36",
                "command": ["sh", "-c", script]}]}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one pod's view of the API server, checked top to bottom"
)]
async fn pods_get_the_service_account_volume_and_reach_the_api_server_through_its_service() {
    let cluster = common::start().await;
    let client = cluster.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");

    // The kubernetes Service and the CA every namespace publishes.
    let svc: k8s_openapi::api::core::v1::Service = Api::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    let cluster_ip = svc.spec.unwrap().cluster_ip.unwrap();
    let root_ca: k8s_openapi::api::core::v1::ConfigMap =
        Api::namespaced(client.clone(), "kube-public")
            .get("kube-root-ca.crt")
            .await
            .unwrap();
    assert_eq!(root_ca.data.unwrap()["ca.crt"], cluster.ca_pem());

    // A pod of the default ServiceAccount: its token, the CA and its namespace at the standard
    // path, the Service's variables, and the API server over TLS by Service name (anonymous
    // /version is public; its token is held to RBAC: the default ServiceAccount may not list
    // pods).
    let script = format!(
        "echo host=$KUBERNETES_SERVICE_HOST port=$KUBERNETES_SERVICE_PORT https=$KUBERNETES_SERVICE_PORT_HTTPS; \
         echo files=$(ls {TOKEN_DIR} | tr '\\n' ,) ns=$(cat {TOKEN_DIR}/namespace); \
         wget -q -O - --no-check-certificate https://kubernetes.default.svc/version | tr -d '\\n '; echo; \
         wget -q -O - --no-check-certificate --header \"Authorization: Bearer $(cat {TOKEN_DIR}/token)\" \
           https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/default/pods \
           || echo pods-refused; \
         echo done"
    );
    pods.create(
        &PostParams::default(),
        &common::json(busybox("mounted", &script)),
    )
    .await
    .unwrap();
    let log = common::wait_for_log(&pods, "mounted", &LogParams::default(), "done").await;
    assert!(
        log.contains(&format!("host={cluster_ip} port=443 https=443")),
        "{log}"
    );
    assert!(
        log.contains("files=ca.crt,namespace,token, ns=default"),
        "{log}"
    );
    assert!(log.contains("\"gitVersion\":\"v1."), "{log}");
    assert!(log.contains("pods-refused"), "{log}");
    let pod = pods.get("mounted").await.unwrap();
    let spec = pod.spec.unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));
    let volume = spec
        .volumes
        .unwrap_or_default()
        .into_iter()
        .find(|v| v.name.starts_with("kube-api-access-"))
        .expect("the admission added a kube-api-access volume");
    let sources = volume.projected.unwrap().sources.unwrap();
    assert_eq!(
        sources[0]
            .service_account_token
            .as_ref()
            .unwrap()
            .expiration_seconds,
        Some(3607)
    );
    assert_eq!(
        sources[1].config_map.as_ref().unwrap().name,
        "kube-root-ca.crt"
    );
    let mount = &spec.containers[0].volume_mounts.as_ref().unwrap()[0];
    assert_eq!(
        (
            mount.name.as_str(),
            mount.mount_path.as_str(),
            mount.read_only
        ),
        (volume.name.as_str(), TOKEN_DIR, Some(true))
    );

    // The ca.crt the pod got verifies the server: the same CA.
    let ca_log = {
        pods.create(
            &PostParams::default(),
            &common::json(busybox(
                "ca",
                &format!("cat {TOKEN_DIR}/ca.crt; echo ca-end"),
            )),
        )
        .await
        .unwrap();
        common::wait_for_log(&pods, "ca", &LogParams::default(), "ca-end").await
    };
    assert!(ca_log.contains(cluster.ca_pem().trim()), "{ca_log}");

    // automountServiceAccountToken: false on the pod, or on its ServiceAccount: no volume.
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    sas.create(
        &PostParams::default(),
        &common::json(
            json!({"metadata": {"name": "quiet"}, "automountServiceAccountToken": false}),
        ),
    )
    .await
    .unwrap();
    let mut off = busybox("off", "true");
    off["spec"]["automountServiceAccountToken"] = json!(false);
    let mut by_sa = busybox("by-sa", "true");
    by_sa["spec"]["serviceAccountName"] = json!("quiet");
    for pod in [off, by_sa] {
        let created = pods
            .create(&PostParams::default(), &common::json(pod))
            .await
            .unwrap();
        let spec = created.spec.unwrap();
        assert!(
            spec.volumes.unwrap_or_default().is_empty()
                && spec.containers[0].volume_mounts.is_none(),
            "{:?} got a token volume",
            created.metadata.name
        );
    }

    // A ServiceAccount that does not exist: the admission's Forbidden.
    let mut missing = busybox("orphan", "true");
    missing["spec"]["serviceAccountName"] = json!("nobody");
    match pods
        .create(&PostParams::default(), &common::json(missing))
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(
            (s.code, s.message.as_str()),
            (
                403,
                "pods \"orphan\" is forbidden: error looking up service account default/nobody: serviceaccount \"nobody\" not found"
            )
        ),
        other => panic!("a pod of a missing ServiceAccount must be refused, got {other:?}"),
    }
    cluster.shutdown().await;
}

/// The operator's pod (the Deployment's only one), once it exists, other than `not`.
async fn operator_pod(pods: &Api<Pod>, not: Option<&str>) -> String {
    let deadline = tokio::time::Instant::now() + common::WAIT;
    let params = ListParams::default().labels("app.kubernetes.io/name=reference-operator");
    let mut last = Vec::new();
    while tokio::time::Instant::now() < deadline {
        last = pods
            .list(&params)
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .filter_map(|p| p.metadata.name)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(name) = last.iter().find(|n| Some(n.as_str()) != not) {
            return name.clone();
        }
        // The Deployment controller creates the pod; a short poll bounded by WAIT.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("no reference-operator pod (other than {not:?}) appeared; last seen: {last:?}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_operator_runs_as_a_pod_from_its_manifests_with_in_cluster_config() {
    assert!(
        rehearsal_embedded::locate_workspace_binary("reference-operator").is_some(),
        "the reference-operator binary is not built: run `cargo build -p reference-operator` (or set REHEARSAL_BIN_DIR)"
    );
    let cluster = common::start().await;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let crds = common::kubectl(
        &cluster,
        &["apply", "-f", &format!("{root}/fixtures/crds")],
        None,
    )
    .await;
    assert_eq!(crds.code, 0, "apply the CRDs: {crds:?}");
    let established = common::kubectl(
        &cluster,
        &[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=30s",
        ],
        None,
    )
    .await;
    assert_eq!(established.code, 0, "CRDs established: {established:?}");
    // The operator's own manifests, unchanged: namespace, ServiceAccount + RBAC, Deployment.
    let deploy = common::kubectl(
        &cluster,
        &[
            "apply",
            "-f",
            &format!("{root}/images/reference-operator/deploy"),
        ],
        None,
    )
    .await;
    assert_eq!(deploy.code, 0, "apply the operator's manifests: {deploy:?}");

    let pods: Api<Pod> = Api::namespaced(cluster.client(), "gameplane-system");
    let first = operator_pod(&pods, None).await;
    // The caches sync only once listing and watching its objects worked: the in-cluster
    // config (env + token + ca.crt) reached the API server over TLS as its ServiceAccount.
    let log = common::wait_for_log(
        &pods,
        &first,
        &LogParams::default(),
        "caches synced; reconciling",
    )
    .await;
    assert!(!log.contains("Forbidden"), "{log}");
    let pod = pods.get(&first).await.unwrap();
    let spec = pod.spec.unwrap();
    assert_eq!(
        spec.service_account_name.as_deref(),
        Some("reference-operator")
    );
    assert!(
        spec.volumes
            .unwrap_or_default()
            .iter()
            .any(|v| v.name.starts_with("kube-api-access-")),
        "the operator's pod has its ServiceAccount volume"
    );

    // Its RBAC holds: without the rule on GameServers, Backups and Restores a new pod's
    // lists are Forbidden, and its log says so.
    let roles: Api<ClusterRole> = Api::all(cluster.client());
    let role = roles.get("reference-operator").await.unwrap();
    let rules: Vec<_> = role
        .rules
        .unwrap_or_default()
        .into_iter()
        .filter(|r| {
            r.resources.as_deref()
                != Some(&["gameservers".into(), "backups".into(), "restores".into()][..])
        })
        .collect();
    roles
        .patch(
            "reference-operator",
            &PatchParams::default(),
            &Patch::Merge(json!({"rules": rules})),
        )
        .await
        .unwrap();
    pods.delete(&first, &Default::default()).await.unwrap();
    let second = operator_pod(&pods, Some(&first)).await;
    let log = common::wait_for_log(
        &pods,
        &second,
        &LogParams::default(),
        // Each watch fails on its own; wait for the GameServers one (the assertion's).
        "gameservers.gameplane.local is forbidden",
    )
    .await
    .replace('\\', "");
    assert!(
        log.contains(
            "User \"system:serviceaccount:gameplane-system:reference-operator\" cannot list resource \"gameservers\" in API group \"gameplane.local\" at the cluster scope"
        ),
        "the operator's log names the Forbidden error: {log}"
    );
    cluster.shutdown().await;
}
