//! Services on the embedded node: cluster IPs allocated and validated by the API server,
//! EndpointSlices kept from the selected pods' readiness, traffic to `ClusterIP:port` reaching
//! a ready endpoint (and following endpoint changes), and the cluster DNS answering from the
//! host and, through the generated resolv.conf, from inside a busybox pod (`nslookup`, `wget`).

mod common;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::{AttachParams, DeleteParams, ListParams, LogParams, PostParams};
use rehearsal_embedded::EmbeddedCluster;
use rehearsal_embedded::network::dns;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Polls `probe` until it gives a value; on timeout panics with the last observation.
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + common::WAIT;
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => last = seen,
        }
        // Sockets and DNS have no watch; a short poll bounded by WAIT.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{what}: not within {:?}; last observed: {last}",
        common::WAIT
    )
}

/// A busybox httpd on the pod IP serving its own name, Ready when `/tmp/ready` exists.
fn web_spec(ready: bool) -> serde_json::Value {
    json!({
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "httpd", "image": "busybox:1.36",
            "command": ["sh", "-c", format!(
                "mkdir -p /tmp/www && echo served-by-$HOSTNAME > /tmp/www/index.html && {} exec httpd -f -p $(POD_IP):8080 -h /tmp/www",
                if ready { "touch /tmp/ready &&" } else { "" })],
            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            "ports": [{"name": "http", "containerPort": 8080}],
            "readinessProbe": {"exec": {"command": ["test", "-e", "/tmp/ready"]}, "periodSeconds": 1}}]
    })
}

fn web_pod(name: &str, ready: bool) -> Pod {
    common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": web_spec(ready)
    }))
}

async fn http_get(addr: SocketAddr) -> Result<String, String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .write_all(b"GET /index.html HTTP/1.0\r\n\r\n")
        .await
        .map_err(|e| format!("write {addr}: {e}"))?;
    let mut body = String::new();
    stream
        .read_to_string(&mut body)
        .await
        .map_err(|e| format!("read {addr}: {e}"))?;
    Ok(body)
}

async fn resolve(cluster: &EmbeddedCluster, name: &str) -> (u8, Vec<Ipv4Addr>) {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let server = SocketAddr::from((cluster.dns_address(), 53));
    socket
        .send_to(&dns::query(42, name, 1), server)
        .await
        .unwrap();
    let mut buf = vec![0u8; 1500];
    let (n, _) = tokio::time::timeout(common::WAIT, socket.recv_from(&mut buf))
        .await
        .unwrap_or_else(|_| panic!("no DNS answer from {server} for {name}"))
        .unwrap();
    dns::parse_response(&buf[..n]).expect("a well-formed DNS response")
}

async fn slices_of(cluster: &EmbeddedCluster, service: &str) -> Vec<EndpointSlice> {
    let api: Api<EndpointSlice> = Api::namespaced(cluster.client(), "default");
    api.list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await
        .unwrap()
        .items
}

/// (address, ready) of every endpoint of the Service's slices, sorted.
async fn endpoints_of(cluster: &EmbeddedCluster, service: &str) -> Vec<(String, bool, u16)> {
    let mut out = Vec::new();
    for slice in slices_of(cluster, service).await {
        let port = slice
            .ports
            .iter()
            .flatten()
            .find_map(|p| p.port)
            .unwrap_or(0) as u16;
        for e in slice.endpoints.iter().flatten() {
            let ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false);
            out.extend(e.addresses.iter().map(|a| (a.clone(), ready, port)));
        }
    }
    out.sort();
    out
}

fn pod_ip(pod: &Pod) -> String {
    pod.status.as_ref().unwrap().pod_ip.clone().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn cluster_ips_endpoints_proxy_and_dns_follow_ready_pods() {
    let cluster = common::start().await;
    let client = cluster.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");

    pods.create(&PostParams::default(), &web_pod("web-a", true))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &web_pod("web-b", false))
        .await
        .unwrap();
    let a = common::wait_for(&pods, "web-a", "web-a Ready", common::pod_ready()).await;
    let b = common::wait_for(&pods, "web-b", "web-b has an IP", |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref())
            .and_then(|s| s.pod_ip.as_ref())
            .is_some()
    })
    .await;
    let (ip_a, ip_b) = (pod_ip(&a), pod_ip(&b));

    // A Service with a named target port; the cluster IP comes from the cluster's range.
    let svc: Service = common::json(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}
    }));
    let svc = services.create(&PostParams::default(), &svc).await.unwrap();
    let cluster_ip: Ipv4Addr = svc
        .spec
        .as_ref()
        .unwrap()
        .cluster_ip
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        cluster.service_range().contains(cluster_ip),
        "{cluster_ip} outside {}",
        cluster.service_range()
    );
    assert_ne!(cluster_ip, cluster.dns_address());

    // Slices: both pods, only web-a ready, the named port resolved to 8080.
    let want = {
        let mut v = vec![(ip_a.clone(), true, 8080), (ip_b.clone(), false, 8080)];
        v.sort();
        v
    };
    eventually(
        "web's slices list web-a ready and web-b not ready",
        || async {
            let got = endpoints_of(&cluster, "web").await;
            if got == want {
                Ok(())
            } else {
                Err(format!("{got:?}"))
            }
        },
    )
    .await;

    // Traffic to ClusterIP:80 reaches the ready endpoint only.
    let service_addr = SocketAddr::from((cluster_ip, 80));
    for _ in 0..4 {
        let body = eventually("GET through the cluster IP", || http_get(service_addr)).await;
        assert!(body.contains("served-by-web-a"), "{body}");
    }

    // DNS from the host: the Service's name; NXDOMAIN for others.
    assert_eq!(
        resolve(&cluster, "web.default.svc.cluster.local").await,
        (0, vec![cluster_ip])
    );
    assert_eq!(
        resolve(&cluster, "nothing.default.svc.cluster.local")
            .await
            .0,
        3,
        "NXDOMAIN"
    );

    // web-b becomes Ready; web-a goes away: traffic follows to web-b.
    let mut touch = pods
        .exec(
            "web-b",
            ["touch", "/tmp/ready"],
            &AttachParams::default().stderr(false),
        )
        .await
        .unwrap();
    let status = touch.take_status().unwrap().await;
    assert_eq!(status.and_then(|s| s.status).as_deref(), Some("Success"));
    common::wait_for(&pods, "web-b", "web-b Ready", common::pod_ready()).await;
    pods.delete("web-a", &DeleteParams::default())
        .await
        .unwrap();
    common::wait_deleted(&pods, "web-a", "web-a gone").await;
    eventually("web's slices list only web-b, ready", || async {
        let got = endpoints_of(&cluster, "web").await;
        if got == vec![(ip_b.clone(), true, 8080)] {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;
    let body = eventually("GET reaches web-b", || async {
        let body = http_get(service_addr).await?;
        if body.contains("served-by-web-b") {
            Ok(body)
        } else {
            Err(body)
        }
    })
    .await;
    assert!(body.contains("200 OK"), "{body}");

    // Headless with publishNotReadyAddresses: every selected pod's IP, ready or not.
    pods.create(&PostParams::default(), &web_pod("web-c", false))
        .await
        .unwrap();
    let c = common::wait_for(&pods, "web-c", "web-c has an IP", |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref())
            .and_then(|s| s.pod_ip.as_ref())
            .is_some()
    })
    .await;
    let headless: Service = common::json(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "peers"},
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": true, "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 8080}]}
    }));
    let headless = services
        .create(&PostParams::default(), &headless)
        .await
        .unwrap();
    assert_eq!(
        headless.spec.as_ref().unwrap().cluster_ip.as_deref(),
        Some("None")
    );
    let mut both: Vec<Ipv4Addr> = vec![ip_b.parse().unwrap(), pod_ip(&c).parse().unwrap()];
    both.sort();
    eventually("peers resolves to both pods", || async {
        let (code, mut ips) = resolve(&cluster, "peers.default.svc.cluster.local").await;
        ips.sort();
        if code == 0 && ips == both {
            Ok(())
        } else {
            Err(format!("rcode {code}, {ips:?}"))
        }
    })
    .await;

    // StatefulSet pod DNS: <pod>.<service>.<ns>.svc.cluster.local.
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let set: StatefulSet = common::json(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"serviceName": "peers", "replicas": 1,
            "selector": {"matchLabels": {"app": "web", "role": "db"}},
            "template": {"metadata": {"labels": {"app": "web", "role": "db"}}, "spec": web_spec(true)}}
    }));
    sets.create(&PostParams::default(), &set).await.unwrap();
    let db0 = common::wait_for(&pods, "db-0", "db-0 Ready", common::pod_ready()).await;
    let db0_ip: Ipv4Addr = pod_ip(&db0).parse().unwrap();
    eventually("db-0.peers resolves to the pod", || async {
        let got = resolve(&cluster, "db-0.peers.default.svc.cluster.local").await;
        if got == (0, vec![db0_ip]) {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;

    // Inside a pod: busybox nslookup through the search path and wget by Service name.
    let client_pod: Pod = common::json(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "client"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c", "cat /etc/resolv.conf; \
                nslookup web; nslookup web.default.svc.cluster.local; \
                nslookup db-0.peers.default.svc.cluster.local; nslookup missing || echo lookup-failed-as-expected; \
                echo short=$(wget -q -O - http://web/index.html); \
                echo namespaced=$(wget -q -O - http://web.default/index.html); \
                echo full=$(wget -q -O - http://web.default.svc.cluster.local/index.html); \
                echo pod=$(wget -q -O - http://db-0.peers:8080/index.html); \
                echo client-done"]}]}
    }));
    pods.create(&PostParams::default(), &client_pod)
        .await
        .unwrap();
    let log = common::wait_for_log(&pods, "client", &LogParams::default(), "client-done").await;
    assert!(
        log.contains("search default.svc.cluster.local svc.cluster.local cluster.local"),
        "{log}"
    );
    assert!(log.contains("options ndots:5"), "{log}");
    assert!(
        log.contains(&format!("nameserver {}", cluster.dns_address())),
        "{log}"
    );
    // busybox's nslookup applies the search path to a name without dots (and only then, so
    // `<svc>.<ns>` is checked through wget, which resolves with glibc and ndots:5).
    assert!(
        log.matches(&format!("Address: {cluster_ip}")).count() >= 2,
        "web and the full name resolve to {cluster_ip}: {log}"
    );
    assert!(log.contains(&format!("Address: {db0_ip}")), "{log}");
    assert!(log.contains("lookup-failed-as-expected"), "{log}");
    // web-b and db-0 (its labels include app=web) are web's ready endpoints now.
    for form in ["short", "namespaced", "full"] {
        assert!(
            log.contains(&format!("{form}=served-by-web-b"))
                || log.contains(&format!("{form}=served-by-db-0")),
            "wget by the {form} name: {log}"
        );
    }
    assert!(log.contains("pod=served-by-db-0"), "{log}");

    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one embedded cluster scenario: its steps share the cluster and read in order"
)]
async fn cluster_ips_are_validated_unique_and_immutable() {
    let cluster = common::start().await;
    let services: Api<Service> = Api::namespaced(cluster.client(), "default");
    let svc = |name: &str, extra: serde_json::Value| -> Service {
        let mut spec = json!({"selector": {"app": name}, "ports": [{"port": 80}]});
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        common::json(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name}, "spec": spec}))
    };
    let message = |e: kube::Error| match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("expected an API error, got {other}"),
    };

    let first = services
        .create(&PostParams::default(), &svc("one", json!({})))
        .await
        .unwrap();
    let ip = first.spec.clone().unwrap().cluster_ip.unwrap();
    let second = services
        .create(&PostParams::default(), &svc("two", json!({})))
        .await
        .unwrap();
    assert_ne!(second.spec.clone().unwrap().cluster_ip.unwrap(), ip);

    let (code, text) = message(
        services
            .create(
                &PostParams::default(),
                &svc("taken", json!({"clusterIP": ip})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(text.contains("provided IP is already allocated"), "{text}");
    let (code, text) = message(
        services
            .create(
                &PostParams::default(),
                &svc("far", json!({"clusterIP": "10.0.0.1"})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(text.contains("is not in the valid range"), "{text}");
    let (_, text) = message(
        services
            .create(
                &PostParams::default(),
                &svc("bad", json!({"clusterIP": "not-an-ip"})),
            )
            .await
            .unwrap_err(),
    );
    assert!(text.contains("must be a valid IP address"), "{text}");
    let (_, text) = message(
        services
            .create(
                &PostParams::default(),
                &common::json(json!({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "noports"}, "spec": {"selector": {"app": "x"}}})),
            )
            .await
            .unwrap_err(),
    );
    assert!(text.contains("spec.ports: Required value"), "{text}");

    // Immutable: a new address is refused; leaving it out keeps the allocated one.
    let mut changed = first.clone();
    let free = cluster.service_range().nth(4000).to_string();
    changed.spec.as_mut().unwrap().cluster_ip = Some(free.clone());
    changed.spec.as_mut().unwrap().cluster_ips = Some(vec![free]);
    let (code, text) = message(
        services
            .replace("one", &PostParams::default(), &changed)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(text.contains("may not change once set"), "{text}");
    let mut omitted = first.clone();
    omitted.spec.as_mut().unwrap().cluster_ip = None;
    omitted.spec.as_mut().unwrap().cluster_ips = None;
    omitted.metadata.labels = Some([("edited".to_string(), "yes".to_string())].into());
    let kept = services
        .replace("one", &PostParams::default(), &omitted)
        .await
        .unwrap();
    assert_eq!(kept.spec.unwrap().cluster_ip.as_deref(), Some(ip.as_str()));

    // A deleted Service's address can be asked for again.
    services
        .delete("one", &DeleteParams::default())
        .await
        .unwrap();
    common::wait_deleted(&services, "one", "service one gone").await;
    let again = services
        .create(
            &PostParams::default(),
            &svc("again", json!({"clusterIP": ip})),
        )
        .await
        .unwrap();
    assert_eq!(again.spec.unwrap().cluster_ip.as_deref(), Some(ip.as_str()));
    cluster.shutdown().await;
}
