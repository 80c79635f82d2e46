//! The EndpointSlice controller: for every Service with a selector, the pods it selects as
//! `discovery.k8s.io/v1` EndpointSlices labelled `kubernetes.io/service-name`, owned by the
//! Service. An endpoint is `ready` when its pod is Ready and not terminating, or always with
//! `publishNotReadyAddresses`; pods that ended or have no IP yet are left out. Named target
//! ports are resolved from each pod's container ports, so pods resolving them differently
//! land in different slices (one per port mapping), as on a real cluster. A pod with
//! `spec.hostname` and a `spec.subdomain` naming the Service gives its endpoint that hostname
//! (the StatefulSet pod DNS name).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client, ResourceExt};
use tokio::sync::Notify;

use super::{benign, controlled_by, controller_ref, reflect, run_loop};
use crate::network::{SERVICE_NAME_LABEL, target_port};

/// The `endpointslice.kubernetes.io/managed-by` value of the slices this controller owns.
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";

/// Runs the controller until aborted.
pub async fn run(client: Client) {
    let wake = Arc::new(Notify::new());
    let (services, _s) = reflect(Api::<Service>::all(client.clone()), wake.clone());
    let (pods, _p) = reflect(Api::<Pod>::all(client.clone()), wake.clone());
    let (slices, _e) = reflect(Api::<EndpointSlice>::all(client.clone()), wake.clone());
    let _ = services.wait_until_ready().await;
    let _ = pods.wait_until_ready().await;
    let _ = slices.wait_until_ready().await;
    run_loop(wake, || async {
        let mut retry = None;
        let pods = pods.state();
        let slices = slices.state();
        for svc in services.state() {
            if let Err(error) = reconcile(&client, &svc, &pods, &slices).await {
                tracing::warn!(%error, service = %svc.name_any(), "endpointslice reconcile failed; retrying");
                retry = Some(Duration::from_millis(300));
            }
        }
        retry
    })
    .await;
}

fn selects(selector: &BTreeMap<String, String>, pod: &Pod) -> bool {
    let labels = pod.labels();
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The endpoint of `pod` for `svc`, or `None` when the pod is not an endpoint at all.
fn endpoint(svc: &Service, pod: &Pod) -> Option<Endpoint> {
    let status = pod.status.as_ref()?;
    if matches!(status.phase.as_deref(), Some("Succeeded") | Some("Failed")) {
        return None;
    }
    let ip = status.pod_ip.clone().filter(|ip| !ip.is_empty())?;
    let spec = svc.spec.as_ref()?;
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let publish = spec.publish_not_ready_addresses == Some(true);
    let ready = publish || (pod_ready(pod) && !terminating);
    let pod_spec = pod.spec.as_ref();
    let hostname = pod_spec
        .and_then(|s| s.hostname.clone())
        .filter(|_| pod_spec.and_then(|s| s.subdomain.as_deref()) == svc.metadata.name.as_deref());
    Some(Endpoint {
        addresses: vec![ip],
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(pod_ready(pod)),
            terminating: Some(terminating),
        }),
        hostname,
        node_name: pod_spec.and_then(|s| s.node_name.clone()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.namespace(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn ports_of(svc: &Service, pod: &Pod) -> Vec<EndpointPort> {
    svc.spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .filter_map(|p| {
            Some(EndpointPort {
                name: Some(p.name.clone().unwrap_or_default()),
                port: Some(target_port(p, pod)?),
                protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: p.app_protocol.clone(),
            })
        })
        .collect()
}

#[expect(
    clippy::too_many_lines,
    reason = "one reconcile pass: desired slices, then update, reuse, create and delete against the same existing set"
)]
async fn reconcile(
    client: &Client,
    svc: &Service,
    pods: &[Arc<Pod>],
    slices: &[Arc<EndpointSlice>],
) -> Result<(), kube::Error> {
    let Some(selector) = svc
        .spec
        .as_ref()
        .and_then(|s| s.selector.clone())
        .filter(|s| !s.is_empty())
    else {
        return Ok(());
    };
    if svc.metadata.deletion_timestamp.is_some()
        || svc.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("ExternalName")
    {
        return Ok(());
    }
    let ns = svc.namespace().unwrap_or_default();
    let name = svc.name_any();
    let uid = svc.uid().unwrap_or_default();

    // Desired: endpoints grouped by their port mapping, ordered for stable comparison.
    let mut groups: BTreeMap<String, (Vec<EndpointPort>, Vec<Endpoint>)> = BTreeMap::new();
    let mut selected: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(ns.as_str()) && selects(&selector, p))
        .collect();
    selected.sort_by_key(|p| p.name_any());
    for pod in selected {
        let Some(endpoint) = endpoint(svc, pod) else {
            continue;
        };
        let ports = ports_of(svc, pod);
        let key = serde_json::to_string(&ports).unwrap_or_default();
        groups
            .entry(key)
            .or_insert_with(|| (ports, Vec::new()))
            .1
            .push(endpoint);
    }
    if groups.is_empty() {
        // A placeholder slice with no endpoints, as the real controller keeps.
        groups.insert(String::new(), (Vec::new(), Vec::new()));
    }

    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), &ns);
    let mut existing: Vec<&Arc<EndpointSlice>> = slices
        .iter()
        .filter(|s| {
            s.namespace().as_deref() == Some(ns.as_str())
                && controlled_by(s.as_ref(), &uid)
                && s.labels().get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY)
        })
        .collect();
    existing.sort_by_key(|s| s.name_any());
    let mut unused: Vec<&Arc<EndpointSlice>> = Vec::new();
    let mut remaining = groups;
    for slice in existing {
        let key =
            serde_json::to_string(slice.ports.as_deref().unwrap_or_default()).unwrap_or_default();
        match remaining.remove(&key) {
            Some((ports, endpoints)) => {
                let want_ports = (!ports.is_empty()).then_some(ports);
                if slice.endpoints.as_deref().unwrap_or_default() != endpoints.as_slice()
                    || slice.ports != want_ports
                {
                    let mut updated = (**slice).clone();
                    updated.endpoints = Some(endpoints);
                    updated.ports = want_ports;
                    match api
                        .replace(&slice.name_any(), &PostParams::default(), &updated)
                        .await
                    {
                        Ok(_) => {}
                        Err(e) if benign(&e) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            None => unused.push(slice),
        }
    }
    // New mappings reuse an unused slice when there is one, else get a new one.
    for (_, (ports, endpoints)) in remaining {
        let want_ports = (!ports.is_empty()).then_some(ports);
        if let Some(slice) = unused.pop() {
            let mut updated = (**slice).clone();
            updated.endpoints = Some(endpoints);
            updated.ports = want_ports;
            match api
                .replace(&slice.name_any(), &PostParams::default(), &updated)
                .await
            {
                Ok(_) => {}
                Err(e) if benign(&e) => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        let slice = EndpointSlice {
            metadata: ObjectMeta {
                generate_name: Some(format!("{name}-")),
                namespace: Some(ns.clone()),
                labels: Some(BTreeMap::from([
                    (SERVICE_NAME_LABEL.to_string(), name.clone()),
                    (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
                ])),
                owner_references: Some(vec![controller_ref(svc)]),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            endpoints: Some(endpoints),
            ports: want_ports,
        };
        match api.create(&PostParams::default(), &slice).await {
            Ok(_) => {}
            Err(e) if benign(&e) => {}
            Err(e) => return Err(e),
        }
    }
    for slice in unused {
        match api
            .delete(&slice.name_any(), &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(e) if benign(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
