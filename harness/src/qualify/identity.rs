//! Who is being qualified, by whom, where: the operator under test as the cluster runs it (its
//! Deployment's image and the imageID digest its pods report) or as `--operator NAME@VERSION`
//! names it, the harness's own version and build commit, and the cluster context.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde::Serialize;

/// The harness's version (Cargo).
pub const HARNESS_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit the harness was built from (`GITHUB_SHA` or git, at build time; see build.rs).
pub const HARNESS_COMMIT: &str = env!("REHEARSAL_BUILD_COMMIT");

/// The operator under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperatorIdentity {
    /// The operator's name: the Deployment's (or the name given with `--operator`).
    pub name: String,
    /// The image reference (tag or digest) or the version given with `--operator`.
    pub version: String,
    /// `sha256:…` the running pods report, when read from the cluster.
    pub digest: Option<String>,
    /// `--operator` or `deployment <ns>/<name>`.
    pub source: String,
}

/// Parses `NAME@VERSION`.
pub fn parse_operator(arg: &str) -> Result<OperatorIdentity, String> {
    match arg.split_once('@') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => Ok(OperatorIdentity {
            name: name.into(),
            version: version.into(),
            digest: None,
            source: "--operator".into(),
        }),
        _ => Err(format!(
            "--operator {arg:?} is not NAME@VERSION; name the operator under test, e.g. --operator gameplane@0.9.1"
        )),
    }
}

/// Reads the operator from Deployment `namespace/name`: its first container's image, and the
/// imageID its running pods report. `Ok(None)`: no such Deployment.
pub async fn from_deployment(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<OperatorIdentity>, kube::Error> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let Some(d) = deployments.get_opt(name).await? else {
        return Ok(None);
    };
    let spec = d.spec;
    let image = spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let selector = spec
        .selector
        .match_labels
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let digest = if selector.is_empty() {
        None
    } else {
        pods.list(&ListParams::default().labels(&selector))
            .await?
            .items
            .iter()
            .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref()?.first())
            .filter_map(|c| c.image_id.rsplit_once('@').map(|(_, d)| d.to_string()))
            .next()
    };
    Ok(Some(OperatorIdentity {
        name: image
            .rsplit('/')
            .next()
            .and_then(|n| n.split([':', '@']).next())
            .unwrap_or(name)
            .to_string(),
        version: image,
        digest,
        source: format!("deployment {namespace}/{name}"),
    }))
}

/// The label of the ConfigMap an embedded cluster (`rehearse cluster up --embedded`) writes
/// where the operator's Deployment would be: it runs the reference operator as a host process,
/// with no Deployment or pods to read, so it records the binary's own `--version` there.
pub const EMBEDDED_RECORD_LABEL: &str = "rehearsal.local/embedded-operator";

/// Writes (or replaces) ConfigMap `namespace/name` recording the operator an embedded cluster
/// runs: keys `name`, `version` and `source` (how it was read), labelled
/// [`EMBEDDED_RECORD_LABEL`]. Creates the namespace if needed.
pub async fn publish_embedded(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    operator: &OperatorIdentity,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Patch, PatchParams};
    let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    let params = PatchParams::apply("rehearsal").force();
    Api::<Namespace>::all(client.clone())
        .patch(namespace, &params, &Patch::Apply(&ns))
        .await?;
    let cm = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {EMBEDDED_RECORD_LABEL: "true"}},
        "data": {"name": operator.name, "version": operator.version, "source": operator.source},
    });
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .patch(name, &params, &Patch::Apply(&cm))
        .await?;
    Ok(())
}

/// Reads the operator an embedded cluster recorded in ConfigMap `namespace/name`
/// ([`publish_embedded`]). `Ok(None)`: no such ConfigMap, or one without the label.
pub async fn from_embedded_record(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<OperatorIdentity>, kube::Error> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let Some(cm) = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await?
    else {
        return Ok(None);
    };
    let labelled = cm
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.get(EMBEDDED_RECORD_LABEL).is_some_and(|v| v == "true"));
    let data = cm.data.unwrap_or_default();
    let (Some(op), Some(version), true) = (data.get("name"), data.get("version"), labelled) else {
        return Ok(None);
    };
    Ok(Some(OperatorIdentity {
        name: op.clone(),
        version: version.clone(),
        digest: None,
        source: format!(
            "embedded cluster record configmap {namespace}/{name} ({})",
            data.get("source")
                .map(String::as_str)
                .unwrap_or("no source")
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_flag_is_name_at_version() {
        let o = parse_operator("gameplane@0.9.1").unwrap();
        assert_eq!(
            (o.name.as_str(), o.version.as_str()),
            ("gameplane", "0.9.1")
        );
        assert!(parse_operator("gameplane").is_err());
        assert!(parse_operator("@1").is_err());
    }

    #[test]
    fn the_harness_commit_comes_from_the_build() {
        assert!(!HARNESS_COMMIT.is_empty());
    }
}
