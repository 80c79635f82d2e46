//! Pod volumes on the host: what each volume of a pod is as a directory to bind.
//!
//! PVCs are the bound PV's directory; emptyDir is a directory under the pod's; configMap,
//! secret and downward API volumes are files the kubelet writes there when the pod starts.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, DownwardAPIVolumeFile, HostPathVolumeSource, KeyToPath,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod,
    ProjectedVolumeSource, Secret, SecretVolumeSource,
};
use kube::{Api, Client};

use super::container_spec::secret_data;
use super::fields::field_value;

/// Why the pod's volumes are not ready.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// Not yet: retry (an unbound claim, a missing config map).
    #[error("{0}")]
    Waiting(String),
    /// Cannot work as written.
    #[error("{0}")]
    Invalid(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> VolumeError + '_ {
    move |e| VolumeError::Invalid(format!("{}: {e}", path.display()))
}

fn write_file(dir: &Path, rel: &str, bytes: &[u8], mode: Option<i32>) -> Result<(), VolumeError> {
    if rel.split('/').any(|p| p == "..") || rel.starts_with('/') {
        return Err(VolumeError::Invalid(format!(
            "volume item path {rel:?} must be relative without '..'"
        )));
    }
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::write(&path, bytes).map_err(io(&path))?;
    let mode = mode.unwrap_or(0o644) as u32;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(io(&path))?;
    Ok(())
}

fn write_items(
    dir: &Path,
    data: &[(String, Vec<u8>)],
    items: &Option<Vec<KeyToPath>>,
    default_mode: Option<i32>,
    what: &str,
) -> Result<(), VolumeError> {
    match items {
        Some(items) => {
            for item in items {
                let Some((_, bytes)) = data.iter().find(|(k, _)| k == &item.key) else {
                    return Err(VolumeError::Waiting(format!(
                        "{what}: key {:?} not found",
                        item.key
                    )));
                };
                write_file(dir, &item.path, bytes, item.mode.or(default_mode))?;
            }
        }
        None => {
            for (key, bytes) in data {
                write_file(dir, key, bytes, default_mode)?;
            }
        }
    }
    Ok(())
}

fn config_map_data(cm: &ConfigMap) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = cm
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .collect();
    out.extend(
        cm.binary_data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.0.clone())),
    );
    out
}

fn write_downward(
    dir: &Path,
    pod: &Pod,
    pod_ip: &str,
    items: &[DownwardAPIVolumeFile],
    default_mode: Option<i32>,
) -> Result<(), VolumeError> {
    for item in items {
        let value = match (&item.field_ref, &item.resource_field_ref) {
            (Some(field), _) => field_value(pod, pod_ip, &field.field_path).ok_or_else(|| {
                VolumeError::Invalid(format!(
                    "downwardAPI: unsupported fieldRef {:?}",
                    field.field_path
                ))
            })?,
            (None, Some(_)) => "0".to_string(),
            (None, None) => String::new(),
        };
        write_file(
            dir,
            &item.path,
            value.as_bytes(),
            item.mode.or(default_mode),
        )?;
    }
    Ok(())
}

/// A token of the pod's ServiceAccount bound to the pod (TokenRequest), as the kubelet
/// projects it: it stops authenticating when the pod is deleted.
async fn pod_bound_token(
    client: &Client,
    pod: &Pod,
    sat: &k8s_openapi::api::core::v1::ServiceAccountTokenProjection,
) -> Result<String, VolumeError> {
    use k8s_openapi::api::authentication::v1::{
        BoundObjectReference, TokenRequest, TokenRequestSpec,
    };
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let sa = pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".into());
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: sat.audience.clone().map(|a| vec![a]),
            expiration_seconds: Some(sat.expiration_seconds.unwrap_or(3607)),
            bound_object_ref: Some(BoundObjectReference {
                kind: Some("Pod".into()),
                api_version: Some("v1".into()),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let answer = Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(client.clone(), ns)
        .create_token_request(&sa, &Default::default(), &request)
        .await
        .map_err(|e| VolumeError::Waiting(format!("token of serviceaccount {sa:?}: {e}")))?;
    Ok(answer.status.and_then(|s| s.token).unwrap_or_default())
}

/// Prepares every volume of `pod` under `pod_dir` and returns volume name → host directory.
pub async fn prepare(
    client: &Client,
    pod: &Pod,
    pod_ip: &str,
    pod_dir: &Path,
) -> Result<HashMap<String, PathBuf>, VolumeError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut out = HashMap::new();
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.clone())
        .unwrap_or_default();
    for volume in volumes {
        let own = pod_dir.join("volumes").join(&volume.name);
        let path = if let Some(claim) = &volume.persistent_volume_claim {
            claim_dir(client, ns, claim).await?
        } else if volume.empty_dir.is_some() {
            std::fs::create_dir_all(&own).map_err(io(&own))?;
            own
        } else if let Some(source) = &volume.config_map {
            std::fs::create_dir_all(&own).map_err(io(&own))?;
            config_map_volume(client, ns, source, &own).await?;
            own
        } else if let Some(source) = &volume.secret {
            std::fs::create_dir_all(&own).map_err(io(&own))?;
            secret_volume(client, ns, source, &own).await?;
            own
        } else if let Some(host) = &volume.host_path {
            host_path(host)?
        } else if let Some(source) = &volume.downward_api {
            std::fs::create_dir_all(&own).map_err(io(&own))?;
            write_downward(
                &own,
                pod,
                pod_ip,
                source.items.as_deref().unwrap_or_default(),
                source.default_mode,
            )?;
            own
        } else if let Some(projected) = &volume.projected {
            std::fs::create_dir_all(&own).map_err(io(&own))?;
            projected_volume(client, pod, pod_ip, projected, &own).await?;
            own
        } else {
            return Err(VolumeError::Invalid(format!(
                "volume {:?}: this volume type is not supported by the embedded node (use a PVC, emptyDir, configMap, secret, hostPath, downwardAPI or projected volume)",
                volume.name
            )));
        };
        out.insert(volume.name.clone(), path);
    }
    Ok(out)
}

/// An API read failed: the volume waits (the next attempt may succeed).
fn kube_err(what: String) -> impl FnOnce(kube::Error) -> VolumeError {
    move |e: kube::Error| VolumeError::Waiting(format!("{what}: {e}"))
}

/// The host directory of the PV bound to `claim` (created if missing).
async fn claim_dir(
    client: &Client,
    ns: &str,
    claim: &PersistentVolumeClaimVolumeSource,
) -> Result<PathBuf, VolumeError> {
    let pvc = Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns)
        .get_opt(&claim.claim_name)
        .await
        .map_err(kube_err(format!(
            "persistentvolumeclaim {:?}",
            claim.claim_name
        )))?
        .ok_or_else(|| {
            VolumeError::Waiting(format!(
                "persistentvolumeclaim {:?} not found",
                claim.claim_name
            ))
        })?;
    let Some(pv_name) = pvc.spec.as_ref().and_then(|s| s.volume_name.clone()) else {
        return Err(VolumeError::Waiting(format!(
            "persistentvolumeclaim {:?} is not bound yet",
            claim.claim_name
        )));
    };
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get_opt(&pv_name)
        .await
        .map_err(kube_err(format!("persistentvolume {pv_name:?}")))?
        .ok_or_else(|| VolumeError::Waiting(format!("persistentvolume {pv_name:?} not found")))?;
    let spec = pv.spec.unwrap_or_default();
    let dir = spec
        .host_path
        .map(|h| h.path)
        .or(spec.local.map(|l| l.path))
        .ok_or_else(|| {
            VolumeError::Invalid(format!(
                "persistentvolume {pv_name:?} has neither hostPath nor local: the embedded node cannot mount it"
            ))
        })?;
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    Ok(dir)
}

/// Writes a configMap volume's items into `own`.
async fn config_map_volume(
    client: &Client,
    ns: &str,
    source: &ConfigMapVolumeSource,
    own: &Path,
) -> Result<(), VolumeError> {
    let cm = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get_opt(&source.name)
        .await
        .map_err(kube_err(format!("configmap {:?}", source.name)))?;
    match cm {
        Some(cm) => write_items(
            own,
            &config_map_data(&cm),
            &source.items,
            source.default_mode,
            &format!("configmap {:?}", source.name),
        )?,
        None if source.optional == Some(true) => {}
        None => {
            return Err(VolumeError::Waiting(format!(
                "configmap {:?} not found",
                source.name
            )));
        }
    }
    Ok(())
}

/// Writes a secret volume's items into `own`.
async fn secret_volume(
    client: &Client,
    ns: &str,
    source: &SecretVolumeSource,
    own: &Path,
) -> Result<(), VolumeError> {
    let name = source.secret_name.clone().unwrap_or_default();
    let secret = Api::<Secret>::namespaced(client.clone(), ns)
        .get_opt(&name)
        .await
        .map_err(kube_err(format!("secret {name:?}")))?;
    match secret {
        Some(secret) => write_items(
            own,
            &secret_data(&secret),
            &source.items,
            source.default_mode,
            &format!("secret {name:?}"),
        )?,
        None if source.optional == Some(true) => {}
        None => return Err(VolumeError::Waiting(format!("secret {name:?} not found"))),
    }
    Ok(())
}

/// A hostPath volume's path, created for the `…OrCreate` types.
fn host_path(host: &HostPathVolumeSource) -> Result<PathBuf, VolumeError> {
    let path = PathBuf::from(&host.path);
    match host.type_.as_deref() {
        Some("DirectoryOrCreate") => std::fs::create_dir_all(&path).map_err(io(&path))?,
        Some("FileOrCreate") => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io(&path))?;
        }
        _ if !path.exists() => {
            return Err(VolumeError::Waiting(format!(
                "hostPath {} does not exist",
                path.display()
            )));
        }
        _ => {}
    }
    Ok(path)
}

/// Writes each source of a projected volume into `own`.
async fn projected_volume(
    client: &Client,
    pod: &Pod,
    pod_ip: &str,
    projected: &ProjectedVolumeSource,
    own: &Path,
) -> Result<(), VolumeError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    for source in projected.sources.iter().flatten() {
        if let Some(cm) = &source.config_map {
            let found = Api::<ConfigMap>::namespaced(client.clone(), ns)
                .get_opt(&cm.name)
                .await
                .map_err(kube_err(format!("configmap {:?}", cm.name)))?;
            if let Some(found) = found {
                write_items(
                    own,
                    &config_map_data(&found),
                    &cm.items,
                    projected.default_mode,
                    "configmap",
                )?;
            } else if cm.optional != Some(true) {
                return Err(VolumeError::Waiting(format!(
                    "configmap {:?} not found",
                    cm.name
                )));
            }
        }
        if let Some(s) = &source.secret {
            let found = Api::<Secret>::namespaced(client.clone(), ns)
                .get_opt(&s.name)
                .await
                .map_err(kube_err(format!("secret {:?}", s.name)))?;
            if let Some(found) = found {
                write_items(
                    own,
                    &secret_data(&found),
                    &s.items,
                    projected.default_mode,
                    "secret",
                )?;
            } else if s.optional != Some(true) {
                return Err(VolumeError::Waiting(format!(
                    "secret {:?} not found",
                    s.name
                )));
            }
        }
        if let Some(d) = &source.downward_api {
            write_downward(
                own,
                pod,
                pod_ip,
                d.items.as_deref().unwrap_or_default(),
                projected.default_mode,
            )?;
        }
        if let Some(sat) = &source.service_account_token {
            let token = pod_bound_token(client, pod, sat).await?;
            write_file(own, &sat.path, token.as_bytes(), projected.default_mode)?;
        }
    }
    Ok(())
}
