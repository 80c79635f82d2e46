//! From a pod's container to a sandbox: environment, command line and volume binds.

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, EnvFromSource, EnvVar, EnvVarSource, Pod, Secret,
};
use kube::{Api, Client};

use super::fields::field_value;
use crate::images::ResolvedImage;
use crate::sandbox::{Bind, SandboxSpec};

/// Why a container's configuration cannot be built yet (`CreateContainerConfigError`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Expands `$(VAR)` references from `env`; `$$(VAR)` is a literal `$(VAR)`, unknown
/// references stay as written (Kubernetes' rules).
pub fn expand(input: &str, env: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(input.len());
    let bytes = input.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && i + 1 < bytes.len() {
            if bytes[i + 1] == b'$' {
                out.push('$');
                i += 2;
                continue;
            }
            if bytes[i + 1] == b'('
                && let Some(end) = input[i + 2..].find(')')
            {
                let name = &input[i + 2..i + 2 + end];
                match env.get(name) {
                    Some(value) => out.push_str(value),
                    None => out.push_str(&input[i..i + 3 + end]),
                }
                i += 3 + end;
                continue;
            }
        }
        let ch = input[i..].chars().next().unwrap_or('\u{fffd}');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

async fn config_map(
    client: &Client,
    ns: &str,
    name: &str,
) -> Result<Option<ConfigMap>, ConfigError> {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(|e| ConfigError(format!("configmap {name:?}: {e}")))
}

async fn secret(client: &Client, ns: &str, name: &str) -> Result<Option<Secret>, ConfigError> {
    Api::<Secret>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
        .map_err(|e| ConfigError(format!("secret {name:?}: {e}")))
}

/// A secret's data as text (`data` decoded, plus `stringData` if the server kept it).
pub fn secret_data(secret: &Secret) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect();
    for (k, v) in secret.string_data.iter().flatten() {
        out.retain(|(key, _)| key != k);
        out.push((k.clone(), v.clone().into_bytes()));
    }
    out
}

/// The variables a kubelet gives every container for the `kubernetes` Service (cluster IP
/// and port), in the Docker-links form service env vars have.
pub fn master_service_env(service: SocketAddrV4) -> Vec<(String, String)> {
    let (ip, port) = (service.ip(), service.port());
    let url = format!("tcp://{ip}:{port}");
    vec![
        ("KUBERNETES_SERVICE_HOST".into(), ip.to_string()),
        ("KUBERNETES_SERVICE_PORT".into(), port.to_string()),
        ("KUBERNETES_SERVICE_PORT_HTTPS".into(), port.to_string()),
        ("KUBERNETES_PORT".into(), url.clone()),
        (format!("KUBERNETES_PORT_{port}_TCP"), url),
        (format!("KUBERNETES_PORT_{port}_TCP_PROTO"), "tcp".into()),
        (format!("KUBERNETES_PORT_{port}_TCP_PORT"), port.to_string()),
        (format!("KUBERNETES_PORT_{port}_TCP_ADDR"), ip.to_string()),
    ]
}

/// The container's environment, in order: image env, the `kubernetes` Service's variables,
/// `envFrom`, `env` (with `$(VAR)`).
pub async fn environment(
    client: &Client,
    pod: &Pod,
    pod_ip: &str,
    container: &Container,
    image: &ResolvedImage,
    master_service: Option<SocketAddrV4>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut env = Environment::default();
    env.set("PATH".into(), DEFAULT_PATH.into());
    let hostname = pod
        .spec
        .as_ref()
        .and_then(|s| s.hostname.clone())
        .or_else(|| pod.metadata.name.clone())
        .unwrap_or_default();
    env.set("HOSTNAME".into(), hostname);
    // Container runtimes set HOME for the (root) user when the image does not.
    env.set("HOME".into(), "/root".into());
    for (k, v) in &image.image.env {
        env.set(k.clone(), v.clone());
    }
    for (k, v) in master_service.map(master_service_env).unwrap_or_default() {
        env.set(k, v);
    }
    for source in container.env_from.iter().flatten() {
        env_from(client, ns, source, &mut env).await?;
    }
    for var in container.env.iter().flatten() {
        let value = if let Some(from) = &var.value_from {
            match value_from(client, ns, pod, pod_ip, container, var, from).await? {
                Some(value) => value,
                None => continue,
            }
        } else {
            expand(var.value.as_deref().unwrap_or(""), &env.values)
        };
        env.set(var.name.clone(), value);
    }
    let Environment { order, mut values } = env;
    Ok(order
        .into_iter()
        .map(|k| {
            let v = values.remove(&k).unwrap_or_default();
            (k, v)
        })
        .collect())
}

/// Variables in the order they were first set; a later value replaces an earlier one.
#[derive(Default)]
struct Environment {
    order: Vec<String>,
    values: HashMap<String, String>,
}

impl Environment {
    fn set(&mut self, k: String, v: String) {
        if !self.values.contains_key(&k) {
            self.order.push(k.clone());
        }
        self.values.insert(k, v);
    }
}

/// One `envFrom` source: every key of its ConfigMap or Secret, with the prefix.
async fn env_from(
    client: &Client,
    ns: &str,
    source: &EnvFromSource,
    env: &mut Environment,
) -> Result<(), ConfigError> {
    let prefix = source.prefix.clone().unwrap_or_default();
    if let Some(r) = &source.config_map_ref {
        match config_map(client, ns, &r.name).await? {
            Some(cm) => {
                for (k, v) in cm.data.iter().flatten() {
                    env.set(format!("{prefix}{k}"), v.clone());
                }
            }
            None if r.optional == Some(true) => {}
            None => return Err(ConfigError(format!("configmap {:?} not found", r.name))),
        }
    }
    if let Some(r) = &source.secret_ref {
        match secret(client, ns, &r.name).await? {
            Some(s) => {
                for (k, v) in secret_data(&s) {
                    env.set(
                        format!("{prefix}{k}"),
                        String::from_utf8_lossy(&v).into_owned(),
                    );
                }
            }
            None if r.optional == Some(true) => {}
            None => return Err(ConfigError(format!("secret {:?} not found", r.name))),
        }
    }
    Ok(())
}

/// The value of an `env` entry's `valueFrom`; `None` for an optional key that is missing (the
/// variable is left out).
async fn value_from(
    client: &Client,
    ns: &str,
    pod: &Pod,
    pod_ip: &str,
    container: &Container,
    var: &EnvVar,
    from: &EnvVarSource,
) -> Result<Option<String>, ConfigError> {
    Ok(Some(if let Some(field) = &from.field_ref {
        field_value(pod, pod_ip, &field.field_path).ok_or_else(|| {
            ConfigError(format!(
                "env {:?}: unsupported fieldRef {:?}",
                var.name, field.field_path
            ))
        })?
    } else if let Some(key) = &from.secret_key_ref {
        let found = secret(client, ns, &key.name).await?;
        let value = found.as_ref().and_then(|s| {
            secret_data(s)
                .into_iter()
                .find(|(k, _)| k == &key.key)
                .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
        });
        match value {
            Some(v) => v,
            None if key.optional == Some(true) => return Ok(None),
            None if found.is_none() => {
                return Err(ConfigError(format!("secret {:?} not found", key.name)));
            }
            None => {
                return Err(ConfigError(format!(
                    "couldn't find key {} in Secret {ns}/{}",
                    key.key, key.name
                )));
            }
        }
    } else if let Some(key) = &from.config_map_key_ref {
        let found = config_map(client, ns, &key.name).await?;
        let value = found
            .as_ref()
            .and_then(|c| c.data.as_ref()?.get(&key.key).cloned());
        match value {
            Some(v) => v,
            None if key.optional == Some(true) => return Ok(None),
            None if found.is_none() => {
                return Err(ConfigError(format!("configmap {:?} not found", key.name)));
            }
            None => {
                return Err(ConfigError(format!(
                    "couldn't find key {} in ConfigMap {ns}/{}",
                    key.key, key.name
                )));
            }
        }
    } else if let Some(resource) = &from.resource_field_ref {
        // No resource accounting on this node: report the request/limit as written.
        resource_value(container, &resource.resource)
    } else {
        String::new()
    }))
}

fn resource_value(container: &Container, resource: &str) -> String {
    let resources = container.resources.as_ref();
    let (kind, name) = resource.split_once('.').unwrap_or(("limits", resource));
    let map = match kind {
        "requests" => resources.and_then(|r| r.requests.as_ref()),
        _ => resources.and_then(|r| r.limits.as_ref()),
    };
    map.and_then(|m| m.get(name))
        .map(|q| q.0.clone())
        .unwrap_or_else(|| "0".to_string())
}

/// The command line: `command` replaces the entrypoint (and drops the image's cmd), `args`
/// replaces cmd; `$(VAR)` is expanded in both.
pub fn argv(container: &Container, image: &ResolvedImage, env: &[(String, String)]) -> Vec<String> {
    let vars: HashMap<String, String> = env.iter().cloned().collect();
    let (command, args) = match (&container.command, &container.args) {
        (Some(command), Some(args)) => (command.clone(), args.clone()),
        (Some(command), None) => (command.clone(), vec![]),
        (None, Some(args)) => (image.image.entrypoint.clone(), args.clone()),
        (None, None) => (image.image.entrypoint.clone(), image.image.cmd.clone()),
    };
    command
        .iter()
        .chain(args.iter())
        .map(|a| expand(a, &vars))
        .collect()
}

/// The sandbox for `container`, given the host directory of each pod volume.
pub fn sandbox_spec(
    container: &Container,
    image: &ResolvedImage,
    env: Vec<(String, String)>,
    volumes: &HashMap<String, PathBuf>,
) -> Result<SandboxSpec, ConfigError> {
    let argv = argv(container, image, &env);
    let mut binds = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let Some(source) = volumes.get(&mount.name) else {
            return Err(ConfigError(format!(
                "volumeMount {:?} refers to volume {:?}, which the pod does not define",
                mount.mount_path, mount.name
            )));
        };
        let mut source = source.clone();
        if let Some(sub) = mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
            if sub.split('/').any(|part| part == "..") || sub.starts_with('/') {
                return Err(ConfigError(format!(
                    "subPath {sub:?} must be a relative path without '..'"
                )));
            }
            source = source.join(sub);
            // The kubelet creates a missing subPath as a directory.
            if !source.exists() {
                std::fs::create_dir_all(&source)
                    .map_err(|e| ConfigError(format!("subPath {}: {e}", source.display())))?;
            }
        }
        binds.push(Bind {
            source,
            dest: mount.mount_path.clone(),
            read_only: mount.read_only == Some(true),
        });
    }
    // Parents before children, so a mount inside another volume lands on top of it.
    binds.sort_by_key(|b| b.dest.trim_end_matches('/').matches('/').count());
    Ok(SandboxSpec {
        executables: vec![image.image.executable.clone()],
        bin_dir: image.image.bin_dir.clone(),
        argv,
        env,
        binds,
        workdir: container.working_dir.clone().filter(|w| !w.is_empty()),
        tmp_dir: None,
        hostname: None,
        resolv_conf: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_follows_kubernetes_rules() {
        let env: HashMap<String, String> =
            [("A".to_string(), "1".to_string())].into_iter().collect();
        assert_eq!(expand("x$(A)y", &env), "x1y");
        assert_eq!(expand("$$(A)", &env), "$(A)");
        assert_eq!(expand("$(B)", &env), "$(B)");
        assert_eq!(expand("$A ü", &env), "$A ü");
    }
}
