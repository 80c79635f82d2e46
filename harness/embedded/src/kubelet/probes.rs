//! Container probes: exec (a fresh sandbox with the container's binds), tcpSocket and httpGet
//! to the pod IP.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::sandbox::{SandboxSpec, Sandboxes};

/// A probe's outcome and, on failure, why (shown in events and logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeResult {
    /// The probe passed.
    Success,
    /// The probe failed, with the reason.
    Failure(String),
}

/// The probe's timing with Kubernetes' defaults.
pub struct Timing {
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: i32,
    pub failure_threshold: i32,
}

/// Timing of `probe` (defaults: no delay, every 10 s, 1 s timeout, thresholds 1 and 3).
pub fn timing(probe: &Probe) -> Timing {
    let secs =
        |v: Option<i32>, default: i32| Duration::from_secs(v.unwrap_or(default).max(0) as u64);
    Timing {
        initial_delay: secs(probe.initial_delay_seconds, 0),
        period: secs(probe.period_seconds, 10).max(Duration::from_secs(1)),
        timeout: secs(probe.timeout_seconds, 1).max(Duration::from_secs(1)),
        success_threshold: probe.success_threshold.unwrap_or(1).max(1),
        failure_threshold: probe.failure_threshold.unwrap_or(3).max(1),
    }
}

fn port_number(container: &Container, port: &IntOrString) -> Result<u16, String> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).map_err(|_| format!("invalid port {n}")),
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name))
            .and_then(|p| u16::try_from(p.container_port).ok())
            .ok_or_else(|| {
                format!(
                    "named port {name:?} is not defined by container {:?}",
                    container.name
                )
            }),
    }
}

/// Runs `probe` once against a container with IP `pod_ip`; `exec_base` is the container's
/// sandbox (its binds and env) for exec probes.
pub async fn run(
    probe: &Probe,
    container: &Container,
    pod_ip: &str,
    sandboxes: &Sandboxes,
    exec_base: &SandboxSpec,
) -> ProbeResult {
    let timeout = timing(probe).timeout;
    if let Some(exec) = &probe.exec {
        let mut spec = exec_base.clone();
        spec.argv = exec.command.clone().unwrap_or_default();
        return match sandboxes.exec(&spec, timeout).await {
            Ok(out) if out.exit_code == Some(0) => ProbeResult::Success,
            Ok(out) => ProbeResult::Failure(format!(
                "exec {:?} exited {:?}: {}",
                spec.argv,
                out.exit_code,
                out.output.trim()
            )),
            Err(e) => ProbeResult::Failure(e.to_string()),
        };
    }
    if let Some(tcp) = &probe.tcp_socket {
        let port = match port_number(container, &tcp.port) {
            Ok(p) => p,
            Err(e) => return ProbeResult::Failure(e),
        };
        let host = tcp.host.clone().unwrap_or_else(|| pod_ip.to_string());
        return match tokio::time::timeout(timeout, TcpStream::connect((host.as_str(), port))).await
        {
            Ok(Ok(_)) => ProbeResult::Success,
            Ok(Err(e)) => ProbeResult::Failure(format!("dial tcp {host}:{port}: {e}")),
            Err(_) => ProbeResult::Failure(format!("dial tcp {host}:{port}: i/o timeout")),
        };
    }
    if let Some(http) = &probe.http_get {
        let port = match port_number(container, &http.port) {
            Ok(p) => p,
            Err(e) => return ProbeResult::Failure(e),
        };
        if http
            .scheme
            .as_deref()
            .is_some_and(|s| s.eq_ignore_ascii_case("https"))
        {
            return ProbeResult::Failure(
                "httpGet with scheme HTTPS is not supported by the embedded node".into(),
            );
        }
        let host = http.host.clone().unwrap_or_else(|| pod_ip.to_string());
        let path = http.path.clone().unwrap_or_else(|| "/".to_string());
        let headers: String = http
            .http_headers
            .iter()
            .flatten()
            .map(|h| format!("{}: {}\r\n", h.name, h.value))
            .collect();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: kube-probe/1.37\r\nAccept: */*\r\nConnection: close\r\n{headers}\r\n"
        );
        let attempt = async {
            let mut stream = TcpStream::connect((host.as_str(), port)).await?;
            stream.write_all(request.as_bytes()).await?;
            let mut buf = vec![0u8; 1024];
            let mut len = 0;
            // The status line is all a probe needs.
            while len < buf.len() {
                let n = stream.read(&mut buf[len..]).await?;
                if n == 0 || buf[..len + n].contains(&b'\n') {
                    len += n;
                    break;
                }
                len += n;
            }
            Ok::<String, std::io::Error>(String::from_utf8_lossy(&buf[..len]).into_owned())
        };
        return match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(head)) => {
                let code: Option<u16> = head.split_whitespace().nth(1).and_then(|c| c.parse().ok());
                match code {
                    Some(code) if (200..400).contains(&code) => ProbeResult::Success,
                    Some(code) => {
                        ProbeResult::Failure(format!("HTTP probe failed with statuscode: {code}"))
                    }
                    None => ProbeResult::Failure(format!("malformed HTTP response: {head:?}")),
                }
            }
            Ok(Err(e)) => ProbeResult::Failure(format!("Get \"http://{host}:{port}{path}\": {e}")),
            Err(_) => ProbeResult::Failure(format!(
                "Get \"http://{host}:{port}{path}\": context deadline exceeded"
            )),
        };
    }
    ProbeResult::Failure(
        "probe has no exec, tcpSocket or httpGet handler (grpc is not supported)".into(),
    )
}
