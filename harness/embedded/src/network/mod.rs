//! The node's Service network, without a network namespace: the Service range is a slice of
//! the cluster's loopback block (`127.B.192.0/18`, see [`crate::pod_ips`]), a userspace
//! [`proxy`] listens on every `ClusterIP:port`, and a [`dns`] server on the range's base + 10
//! answers for `cluster.local`. Both follow Services and their EndpointSlices (written by
//! [`crate::controllers::endpointslice`]) through watches, as kube-proxy and CoreDNS do.
//!
//! Pods with `dnsPolicy: ClusterFirst` (the default) get a `resolv.conf` naming that server,
//! with the namespace's search path and `ndots:5`, bound over the sandbox's `/etc/resolv.conf`.

pub mod dns;
pub mod proxy;

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Api, Client, ResourceExt};
use rehearsal_apiserver::ServiceRange;
use tokio::sync::Notify;

use crate::watch::{reflect, run_loop};

/// The cluster's DNS domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";
/// The label tying an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The node's DNS address in a Service range (base + 10, as kube-dns's 10.96.0.10).
pub fn dns_address(range: ServiceRange) -> Ipv4Addr {
    range.nth(10)
}

/// The names the DNS server answers for: lowercase FQDN without the trailing dot → addresses.
#[derive(Debug, Default)]
pub struct Records {
    names: RwLock<HashMap<String, Vec<Ipv4Addr>>>,
}

impl Records {
    /// The addresses of `name`; `None` when the name does not exist.
    pub fn lookup(&self, name: &str) -> Option<Vec<Ipv4Addr>> {
        self.names
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name.trim_end_matches('.'))
            .cloned()
    }

    /// Replaces every record.
    pub fn replace(&self, names: HashMap<String, Vec<Ipv4Addr>>) {
        *self.names.write().unwrap_or_else(|e| e.into_inner()) = names;
    }
}

/// Ready endpoint addresses of a slice (the `ready` condition; unset counts as ready).
fn ready_endpoints(slice: &EndpointSlice) -> impl Iterator<Item = (Ipv4Addr, Option<&str>)> {
    slice
        .endpoints
        .iter()
        .flatten()
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
        .flat_map(|e| {
            e.addresses
                .iter()
                .filter_map(|a| a.parse::<Ipv4Addr>().ok())
                .map(|ip| (ip, e.hostname.as_deref()))
                .collect::<Vec<_>>()
        })
}

/// DNS records and proxy table for the current Services and slices.
pub fn compute(
    services: &[Arc<Service>],
    slices: &[Arc<EndpointSlice>],
) -> (
    HashMap<String, Vec<Ipv4Addr>>,
    HashMap<SocketAddr, Vec<SocketAddr>>,
) {
    let mut by_service: HashMap<(String, String), Vec<&EndpointSlice>> = HashMap::new();
    for slice in slices {
        if slice.address_type != "IPv4" {
            continue;
        }
        if let Some(svc) = slice.labels().get(SERVICE_NAME_LABEL) {
            by_service
                .entry((slice.namespace().unwrap_or_default(), svc.clone()))
                .or_default()
                .push(slice);
        }
    }
    let mut records: HashMap<String, Vec<Ipv4Addr>> = HashMap::new();
    let mut table: HashMap<SocketAddr, Vec<SocketAddr>> = HashMap::new();
    for svc in services {
        let ns = svc.namespace().unwrap_or_default();
        let name = svc.name_any();
        let fqdn = format!("{name}.{ns}.svc.{CLUSTER_DOMAIN}");
        let spec = svc.spec.clone().unwrap_or_default();
        let slices = by_service
            .get(&(ns.clone(), name.clone()))
            .map(Vec::as_slice)
            .unwrap_or_default();
        match spec.cluster_ip.as_deref() {
            Some("None") => {
                let mut ips = Vec::new();
                for slice in slices {
                    for (ip, hostname) in ready_endpoints(slice) {
                        if !ips.contains(&ip) {
                            ips.push(ip);
                        }
                        if let Some(host) = hostname {
                            records
                                .entry(format!("{}.{fqdn}", host.to_ascii_lowercase()))
                                .or_default()
                                .push(ip);
                        }
                    }
                }
                records.insert(fqdn, ips);
            }
            Some(ip) => {
                let Ok(cluster_ip) = ip.parse::<Ipv4Addr>() else {
                    continue;
                };
                records.insert(fqdn, vec![cluster_ip]);
                for port in spec.ports.iter().flatten() {
                    if port.protocol.as_deref().unwrap_or("TCP") != "TCP" {
                        continue;
                    }
                    let mut endpoints = Vec::new();
                    for slice in slices {
                        // The slice's port of the same name carries the resolved target port.
                        let Some(target) = slice.ports.iter().flatten().find(|p| {
                            p.name.as_deref().unwrap_or("") == port.name.as_deref().unwrap_or("")
                                && p.protocol.as_deref().unwrap_or("TCP") == "TCP"
                        }) else {
                            continue;
                        };
                        let Some(target_port) = target.port.and_then(|p| u16::try_from(p).ok())
                        else {
                            continue;
                        };
                        for (ip, _) in ready_endpoints(slice) {
                            endpoints.push(SocketAddr::new(IpAddr::V4(ip), target_port));
                        }
                    }
                    let Ok(listen_port) = u16::try_from(port.port) else {
                        continue;
                    };
                    table.insert(
                        SocketAddr::new(IpAddr::V4(cluster_ip), listen_port),
                        endpoints,
                    );
                }
            }
            None => {}
        }
    }
    (records, table)
}

/// Keeps the DNS records and the proxy's listeners in step with Services and EndpointSlices
/// until aborted.
pub async fn run(client: Client, records: Arc<Records>) {
    let wake = Arc::new(Notify::new());
    let (services, _s) = reflect(Api::<Service>::all(client.clone()), wake.clone());
    let (slices, _e) = reflect(Api::<EndpointSlice>::all(client.clone()), wake.clone());
    let _ = services.wait_until_ready().await;
    let _ = slices.wait_until_ready().await;
    let mut proxy = proxy::Proxy::default();
    run_loop(wake, || {
        let (names, table) = compute(&services.state(), &slices.state());
        records.replace(names);
        proxy.sync(table);
        async { None::<Duration> }
    })
    .await;
}

/// Starts the DNS server on `range`'s DNS address; a failure (port 53 taken, no privilege to
/// bind it) is logged and leaves the cluster without DNS.
pub async fn start_dns(
    range: ServiceRange,
    records: Arc<Records>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let addr = SocketAddr::new(IpAddr::V4(dns_address(range)), 53);
    match dns::serve(addr, records).await {
        Ok(tasks) => tasks,
        Err(error) => {
            tracing::warn!(%addr, %error, "cannot start the cluster DNS server; pods will not resolve Service names");
            Vec::new()
        }
    }
}

/// Writes the resolv.conf of `pod` into `dir` and returns it, or `None` when the pod keeps
/// the host's (`dnsPolicy: Default`, or `ClusterFirst` with `hostNetwork`).
pub fn resolv_conf(pod: &Pod, dns: Ipv4Addr, dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let spec = pod.spec.clone().unwrap_or_default();
    let policy = spec.dns_policy.as_deref().unwrap_or("ClusterFirst");
    let host_network = spec.host_network == Some(true);
    let ns = pod.namespace().unwrap_or_else(|| "default".into());
    let cluster_first = match policy {
        "ClusterFirstWithHostNet" => true,
        "ClusterFirst" => !host_network,
        "None" => false,
        _ => return Ok(None),
    };
    let mut nameservers: Vec<String> = Vec::new();
    let mut searches: Vec<String> = Vec::new();
    let mut options: BTreeMap<String, Option<String>> = BTreeMap::new();
    if cluster_first {
        nameservers.push(dns.to_string());
        searches.extend([
            format!("{ns}.svc.{CLUSTER_DOMAIN}"),
            format!("svc.{CLUSTER_DOMAIN}"),
            CLUSTER_DOMAIN.to_string(),
        ]);
        options.insert("ndots".into(), Some("5".into()));
    } else if policy != "None" {
        return Ok(None);
    }
    if let Some(config) = &spec.dns_config {
        nameservers.extend(config.nameservers.iter().flatten().cloned());
        searches.extend(config.searches.iter().flatten().cloned());
        for option in config.options.iter().flatten() {
            if let Some(name) = &option.name {
                options.insert(name.clone(), option.value.clone());
            }
        }
    }
    let mut text = String::new();
    if !searches.is_empty() {
        text.push_str(&format!("search {}\n", searches.join(" ")));
    }
    for server in &nameservers {
        text.push_str(&format!("nameserver {server}\n"));
    }
    if !options.is_empty() {
        let rendered: Vec<String> = options
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}:{v}"),
                None => k.clone(),
            })
            .collect();
        text.push_str(&format!("options {}\n", rendered.join(" ")));
    }
    std::fs::create_dir_all(dir)?;
    let path = dir.join("resolv.conf");
    std::fs::write(&path, text)?;
    Ok(Some(path))
}

/// The target port a Service port selects in `pod`: a number as is, a name looked up among
/// the pod's container ports (`None` when no container has it).
pub fn target_port(port: &k8s_openapi::api::core::v1::ServicePort, pod: &Pod) -> Option<i32> {
    match port.target_port.as_ref() {
        None => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => {
            if let Ok(n) = name.parse::<i32>() {
                return Some(n);
            }
            let protocol = port.protocol.as_deref().unwrap_or("TCP");
            pod.spec
                .iter()
                .flat_map(|s| s.containers.iter())
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| {
                    p.name.as_deref() == Some(name.as_str())
                        && p.protocol.as_deref().unwrap_or("TCP") == protocol
                })
                .map(|p| p.container_port)
        }
    }
}
