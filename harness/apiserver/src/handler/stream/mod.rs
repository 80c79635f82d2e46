//! `pods/exec`, `pods/attach` and `pods/portforward`: the request is checked as
//! kube-apiserver checks it (pod, container, node, options — each failure a `Status` before
//! any upgrade), then upgraded to a WebSocket and served by the attached
//! [`PodStreams`](crate::PodStreams) in the channel protocol the client negotiated.

mod channel;
mod exec;
mod portforward;
mod spdy;
mod websocket;

use std::sync::Arc;

use super::*;
use crate::streams::{ExecRequest, PodStreams, PortForwardRequest};

/// Which streaming subresource was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Exec,
    Attach,
    PortForward,
}

impl Kind {
    pub fn parse(sub: &str) -> Option<Kind> {
        match sub {
            "exec" => Some(Kind::Exec),
            "attach" => Some(Kind::Attach),
            "portforward" => Some(Kind::PortForward),
            _ => None,
        }
    }
}

/// Every value of a repeated query parameter, in order (`command=sh&command=-c`).
fn query_all(raw: &str, key: &str) -> Vec<String> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k) == key).then(|| percent_decode(v))
        })
        .collect()
}

fn container_names(pod: &Value, list: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.get("name")?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The container an exec or attach targets, chosen as kube-apiserver chooses it.
fn pick_container(pod: &Value, name: &str, asked: Option<&String>) -> Result<String, ApiError> {
    let containers = container_names(pod, "containers");
    let init = container_names(pod, "initContainers");
    let ephemeral = container_names(pod, "ephemeralContainers");
    match asked.filter(|c| !c.is_empty()) {
        Some(c) if containers.contains(c) || init.contains(c) || ephemeral.contains(c) => {
            Ok(c.clone())
        }
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => match containers.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            many => {
                let mut message = format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    many.join(" ")
                );
                if !init.is_empty() {
                    message.push_str(&format!(
                        " or one of the init containers: [{}]",
                        init.join(" ")
                    ));
                }
                Err(ApiError::bad_request(message))
            }
        },
    }
}

/// The ports of a port-forward: `ports=80,443` and/or `ports=80&ports=443`.
fn parse_ports(raw: &str) -> Result<Vec<u16>, ApiError> {
    let mut ports = Vec::new();
    for value in query_all(raw, "ports") {
        for p in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let port: u16 = p.parse().map_err(|e| {
                ApiError::bad_request(format!("unable to parse \"{p}\" as a port: {e}"))
            })?;
            if port == 0 {
                return Err(ApiError::bad_request(format!("port \"{p}\" must be > 0")));
            }
            ports.push(port);
        }
    }
    if ports.is_empty() {
        return Err(ApiError::bad_request("at least 1 port must be specified"));
    }
    Ok(ports)
}

/// Serves one streaming request on a pod.
#[expect(
    clippy::too_many_lines,
    reason = "validates the streaming request, picks the protocol and starts the process before the upgrade, in that order"
)]
pub(super) async fn serve(
    call: &Call<'_>,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    kind: Kind,
) -> Result<Response<Body>, ApiError> {
    let pod = call
        .shared
        .state()
        .get(info, ns, name)
        .ok_or_else(|| ApiError::not_found(info, name))?;
    let uid = pod
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let exec_request = if kind == Kind::PortForward {
        None
    } else {
        let container = pick_container(&pod, name, call.query.get("container"))?;
        let command = query_all(call.raw_query, "command");
        if kind == Kind::Exec && command.is_empty() {
            return Err(ApiError::bad_request(
                "you must specify at least one command for the container",
            ));
        }
        let stdin = query_bool(call.query, "stdin")?;
        let stdout = query_bool(call.query, "stdout")?;
        let stderr = query_bool(call.query, "stderr")?;
        let tty = query_bool(call.query, "tty")?;
        if !stdin && !stdout && !stderr {
            return Err(ApiError::bad_request(
                "you must specify at least 1 of stdin, stdout, stderr",
            ));
        }
        Some(ExecRequest {
            namespace: ns.to_string(),
            pod: name.to_string(),
            uid: uid.clone(),
            container,
            command: if kind == Kind::Exec {
                command
            } else {
                Vec::new()
            },
            stdin,
            stdout,
            // With a TTY stderr is the terminal too (kubelet merges them).
            stderr: stderr && !tty,
            tty,
        })
    };
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let streams: Arc<dyn PodStreams> = call
        .shared
        .streams
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .ok_or_else(|| {
            ApiError::service_unavailable(format!(
                "no node serves streams for pod {name}: the API server has no pod stream source attached"
            ))
        })?;
    if !websocket::is_websocket(call.headers) {
        let why = if websocket::is_spdy(call.headers) {
            "SPDY/3.1 is not served by the embedded API server; upgrade with WebSocket \
             (v5.channel.k8s.io, v4.channel.k8s.io)"
        } else {
            "Upgrade request required"
        };
        return Err(ApiError::bad_request(why));
    }
    let accept = websocket::accept_key(&call.method, call.headers)?;
    let supported: &[&'static str] = match kind {
        Kind::PortForward => portforward::PROTOCOLS,
        Kind::Exec | Kind::Attach => exec::PROTOCOLS,
    };
    let protocol = websocket::negotiate(call.headers, supported)?;
    // SPDY names its ports in each stream's headers; the channel protocols in the query.
    let ports = if kind == Kind::PortForward && protocol != spdy::PROTOCOL {
        parse_ports(call.raw_query)?
    } else {
        Vec::new()
    };
    let upgrade = call
        .upgrade
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .ok_or_else(|| {
            ApiError::bad_request("unable to upgrade connection: the connection cannot be upgraded")
        })?;
    // The process starts (or the attachment begins) before the client hears 101, so what it
    // writes from then on reaches the client; a failure still arrives as the error channel's
    // Status, as from a real kubelet. If the upgrade never completes, dropping it ends it.
    let started = match &exec_request {
        Some(request) if kind == Kind::Exec => Some(streams.exec(request.clone()).await),
        Some(request) => Some(streams.attach(request.clone()).await),
        None => None,
    };
    let shutdown = call.shared.shutdown.clone();
    let (namespace, pod_name) = (ns.to_string(), name.to_string());
    tokio::spawn(async move {
        let Some(socket) = websocket::socket(upgrade).await else {
            return;
        };
        let stopped = Box::pin(crate::shared::stopped(shutdown));
        match (exec_request, started) {
            (Some(request), Some(started)) => {
                exec::session(socket, protocol, &request, started, stopped).await;
            }
            (Some(_), None) => unreachable!("an exec request always has a start"),
            (None, _) if protocol == spdy::PROTOCOL => {
                let base = PortForwardRequest {
                    namespace,
                    pod: pod_name,
                    uid,
                    port: 0,
                };
                spdy::session(socket, streams, base, stopped).await;
            }
            (None, _) => {
                let requests = ports
                    .iter()
                    .map(|&port| PortForwardRequest {
                        namespace: namespace.clone(),
                        pod: pod_name.clone(),
                        uid: uid.clone(),
                        port,
                    })
                    .collect();
                let codec = channel::Codec::of(protocol);
                portforward::session(socket, codec, streams, requests, stopped).await;
            }
        }
    });
    Ok(websocket::switching_protocols(&accept, protocol))
}
