//! Which operator the cases rehearse, and what each one needs of them.
//!
//! - [`OperatorProfile::Reference`]: the project's reference operator. The fixture template
//!   names the fixture agent image (the reference operator runs the template's agent).
//! - [`OperatorProfile::Gameplane`]: Gameplane from its chart. It injects its own agent over
//!   mutual TLS, so the template provides only the game container; its write permissions are a
//!   Role in the games namespace, which the harness copies into each case namespace (the
//!   chart's own "multi-namespace install" pattern: more RoleBindings, same Role), so cases
//!   keep their per-case namespaces.
//!
//! The profile and the operator's version are read from the cluster ([`detect`]): the
//! Deployment in [`super::SYSTEM_NAMESPACE`] and its image (or, on the embedded cluster, the
//! reference operator binary it runs). `--operator-profile` / `REHEARSAL_OPERATOR` only states
//! what the caller expects: a mismatch is an error, never a label.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use kube::api::{ListParams, PostParams};

use crate::backend::{Backend, BackendError, BackendKind};

/// The variable naming the expected profile (the workflow's deploy step sets it).
pub const ENV: &str = "REHEARSAL_OPERATOR";
/// Gameplane's operator Deployment (chart `templates/operator.yaml`).
pub const GAMEPLANE_DEPLOYMENT: &str = crate::backend::operator_pod::GAMEPLANE_DEPLOYMENT;
/// The operator's container in that Deployment.
pub const GAMEPLANE_CONTAINER: &str = "manager";
/// Gameplane's operator ServiceAccount (in [`super::SYSTEM_NAMESPACE`]).
pub const GAMEPLANE_SERVICE_ACCOUNT: &str = "gameplane-operator";
/// The chart's games namespace (`gamesNamespace`), where its write Role lives.
pub const GAMEPLANE_GAMES_NAMESPACE: &str = "gameplane-games";
/// The chart's write Role, `<release>-operator-manage` for release `gameplane`.
pub const GAMEPLANE_MANAGE_ROLE: &str = "gameplane-operator-manage";

/// Which operator the cases rehearse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperatorProfile {
    /// The workspace's reference operator (`reference-operator`), deployed by the harness.
    Reference,
    /// Gameplane, installed from its Helm chart.
    Gameplane,
}

impl std::str::FromStr for OperatorProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "reference" => Ok(Self::Reference),
            // `gameplane-chart`: the value the workflow's deploy step has always written.
            "gameplane" | "gameplane-chart" => Ok(Self::Gameplane),
            other => Err(format!(
                "operator profile {other:?} is not one of reference, gameplane; name the operator the cluster runs"
            )),
        }
    }
}

impl std::fmt::Display for OperatorProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Reference => "reference",
            Self::Gameplane => "gameplane",
        })
    }
}

impl OperatorProfile {
    /// The expected profile from [`ENV`] (`lookup` reads a variable); unset or empty: none.
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        match lookup(ENV).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|e: String| format!("{ENV}: {e}")),
        }
    }

    /// Whether the fixture template names its own agent image (the reference operator runs
    /// it); Gameplane injects its own agent.
    pub fn template_provides_agent(self) -> bool {
        self == Self::Reference
    }
}

/// The operator a cluster runs, as read from it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OperatorIdentity {
    /// Which operator that is.
    pub profile: OperatorProfile,
    /// `reference-operator` or `gameplane`.
    pub name: String,
    /// The image tag (or digest) the Deployment runs, or the binary's own version.
    pub version: String,
    /// Where the version was read.
    pub source: String,
}

/// The version in an image reference: its digest if pinned, else its tag; none for a bare
/// repository (which would mean "whatever latest was": not a version).
pub fn image_version(image: &str) -> Option<String> {
    if let Some((_, digest)) = image.split_once('@') {
        return Some(digest.to_string());
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, tag)| tag.to_string())
}

/// The operator among the Deployments of the system namespace: Gameplane's (container
/// `manager`) or the reference operator's.
pub fn identity_from_deployments(deployments: &[Deployment]) -> Result<OperatorIdentity, String> {
    let find = |name: &str| {
        deployments
            .iter()
            .find(|d| d.metadata.name.as_deref() == Some(name))
    };
    let (profile, name, deployment, container) = if let Some(d) = find(GAMEPLANE_DEPLOYMENT) {
        (
            OperatorProfile::Gameplane,
            "gameplane",
            d,
            Some(GAMEPLANE_CONTAINER),
        )
    } else if let Some(d) = find(super::reference_operator::DEPLOYMENT) {
        (OperatorProfile::Reference, "reference-operator", d, None)
    } else {
        return Err(format!(
            "no operator Deployment in namespace {}: neither {GAMEPLANE_DEPLOYMENT} nor {}; deploy the operator under test first",
            super::SYSTEM_NAMESPACE,
            super::reference_operator::DEPLOYMENT
        ));
    };
    let dname = deployment.metadata.name.clone().unwrap_or_default();
    let containers = deployment
        .spec
        .template
        .spec
        .as_ref()
        .map(|p| p.containers.clone())
        .unwrap_or_default();
    let chosen = match container {
        Some(c) => containers.iter().find(|x| x.name == c),
        None => containers.first(),
    };
    let image = chosen.and_then(|c| c.image.clone()).ok_or_else(|| {
        format!(
            "Deployment {}/{dname} has no container image to read the operator's version from",
            super::SYSTEM_NAMESPACE
        )
    })?;
    let version = image_version(&image).ok_or_else(|| {
        format!(
            "Deployment {}/{dname} runs {image:?}, which has no tag or digest: pin the operator image so the report can name its version",
            super::SYSTEM_NAMESPACE
        )
    })?;
    Ok(OperatorIdentity {
        profile,
        name: name.into(),
        version,
        source: format!(
            "image {image} of Deployment {}/{dname}",
            super::SYSTEM_NAMESPACE
        ),
    })
}

/// Reads the operator the backend's cluster runs. The embedded cluster runs the reference
/// operator binary as a host process: its `--version` is asked.
pub async fn detect(backend: &dyn Backend) -> Result<OperatorIdentity, BackendError> {
    if backend.kind() == BackendKind::Embedded {
        return detect_embedded().await;
    }
    let api: Api<Deployment> = Api::namespaced(backend.client(), super::SYSTEM_NAMESPACE);
    let list = api.list(&ListParams::default()).await.map_err(|e| {
        BackendError::kube(
            format!("list Deployments in {}", super::SYSTEM_NAMESPACE),
            e,
        )
    })?;
    identity_from_deployments(&list.items).map_err(BackendError::Setup)
}

/// The reference operator binary the embedded cluster runs ([`super::reference_operator::program`]),
/// by its `--version`.
pub async fn detect_embedded() -> Result<OperatorIdentity, BackendError> {
    if let Some(command) = super::embedded::operator_command() {
        return detect_command(&command).await;
    }
    let program = super::reference_operator::program();
    let record = crate::process::Cmd::new(program.clone())
        .arg("--version")
        .timeout(std::time::Duration::from_secs(10))
        .run_checked(&crate::process::ProcessLog::default())
        .await?;
    let version = record
        .stdout
        .split_whitespace()
        .nth(1)
        .map(str::to_string)
        .ok_or_else(|| {
            BackendError::Setup(format!(
                "`{program} --version` printed {:?}, not `reference-operator VERSION`",
                record.stdout.trim()
            ))
        })?;
    Ok(OperatorIdentity {
        profile: OperatorProfile::Reference,
        name: "reference-operator".into(),
        version,
        source: format!("`{program} --version`"),
    })
}

/// The operator an `--operator-command` runs: as `--operator NAME@VERSION` named it, else by
/// the first line of `PROGRAM --version` (`NAME … VERSION`: its first and last words; one word
/// is the version of the program's file name). The reference operator's name is its profile;
/// any other operator is taken for Gameplane's.
pub async fn detect_command(
    command: &super::embedded::OperatorCommand,
) -> Result<OperatorIdentity, BackendError> {
    let program = &command.argv[0];
    let (name, version, source) = match &command.named {
        Some((name, version)) => (name.clone(), version.clone(), "--operator".to_string()),
        None => {
            let record = crate::process::Cmd::new(program.clone())
                .arg("--version")
                .timeout(std::time::Duration::from_secs(10))
                .run_checked(&crate::process::ProcessLog::default())
                .await
                .map_err(|e| {
                    BackendError::Setup(format!(
                        "cannot read the version of {}: {e}; name it with --operator NAME@VERSION",
                        command.describe()
                    ))
                })?;
            let (name, version) = name_version(program, &record.stdout).ok_or_else(|| {
                BackendError::Setup(format!(
                    "`{program} --version` printed nothing to name the operator by; name it with --operator NAME@VERSION"
                ))
            })?;
            (name, version, format!("`{program} --version`"))
        }
    };
    let profile = if name == "reference-operator" {
        OperatorProfile::Reference
    } else {
        OperatorProfile::Gameplane
    };
    Ok(OperatorIdentity {
        profile,
        name,
        version,
        source: format!("{source} of {}", command.describe()),
    })
}

/// Name and version from the first line of a `--version` output.
fn name_version(program: &str, stdout: &str) -> Option<(String, String)> {
    let words: Vec<&str> = stdout.lines().next()?.split_whitespace().collect();
    match words.as_slice() {
        [] => None,
        [version] => {
            let file = std::path::Path::new(program)
                .file_name()
                .map_or(program.to_string(), |f| f.to_string_lossy().into_owned());
            Some((file, (*version).to_string()))
        }
        [name, .., version] => Some(((*name).to_string(), (*version).to_string())),
    }
}

/// What a bundle names when the cluster could not be asked (its API server does not answer):
/// the operator as unread, with the reason, never a guessed name or version. The cases of such
/// a run fail on their own first API call.
pub fn unread(reason: &str) -> crate::evidence::bundle::Operator {
    crate::evidence::bundle::Operator {
        name: "unread".into(),
        version: format!("not read from the cluster: {reason}"),
    }
}

/// Refuses a run whose expected profile is not the one the cluster runs.
pub fn check_expected(
    expected: Option<OperatorProfile>,
    found: &OperatorIdentity,
) -> Result<(), String> {
    match expected {
        Some(p) if p != found.profile => Err(format!(
            "the operator profile {p} was requested but the cluster runs {} ({}); deploy that operator or drop --operator-profile/{ENV}",
            found.profile, found.source
        )),
        _ => Ok(()),
    }
}

pub use super::manifests::WriteGrant;

/// What Gameplane's chart installs: [`GAMEPLANE_MANAGE_ROLE`] in [`GAMEPLANE_GAMES_NAMESPACE`],
/// bound to [`GAMEPLANE_SERVICE_ACCOUNT`].
pub fn gameplane_chart_grant() -> WriteGrant {
    WriteGrant {
        namespace: GAMEPLANE_GAMES_NAMESPACE.into(),
        role: GAMEPLANE_MANAGE_ROLE.into(),
        service_account: (
            super::SYSTEM_NAMESPACE.into(),
            GAMEPLANE_SERVICE_ACCOUNT.into(),
        ),
    }
}

/// The write grants a case namespace needs on a cluster of `kind` whose operator is `profile`:
/// on the embedded cluster those of `--operator-manifests` (none without them); elsewhere, for
/// Gameplane, its chart's.
pub fn write_grants(
    kind: BackendKind,
    profile: OperatorProfile,
) -> Result<Vec<WriteGrant>, String> {
    if kind == BackendKind::Embedded {
        let manifests = super::embedded::operator_command().and_then(|c| c.manifests);
        return match manifests {
            Some(m) => Ok(m.grants.clone()),
            None if profile == OperatorProfile::Gameplane => Err(NEEDS_MANIFESTS.into()),
            None => Ok(Vec::new()),
        };
    }
    Ok(if profile == OperatorProfile::Gameplane {
        vec![gameplane_chart_grant()]
    } else {
        Vec::new()
    })
}

/// Why an operator taken for Gameplane's cannot run on the embedded cluster without its
/// chart's manifests.
pub const NEEDS_MANIFESTS: &str = "an operator other than reference-operator is taken for Gameplane's, which writes only where its chart's Role lets it: pass --operator-manifests FILE (helm template gameplane charts/gameplane --namespace gameplane-system > FILE), or name it reference-operator@VERSION to run under the reference operator's RBAC";

/// Lets the operator write in case namespace `namespace`: reads `grant`'s Role and creates its
/// copy and binding there.
pub async fn grant_writes(
    client: &kube::Client,
    namespace: &str,
    grant: &WriteGrant,
) -> Result<(), BackendError> {
    let source: Api<Role> = Api::namespaced(client.clone(), &grant.namespace);
    let chart_role = source.get(&grant.role).await.map_err(|e| {
        BackendError::kube(
            format!(
                "read the operator's Role {}/{} (installed by its chart)",
                grant.namespace, grant.role
            ),
            e,
        )
    })?;
    let (role, binding) = grant.copy_into(namespace, chart_role.rules.unwrap_or_default());
    let roles: Api<Role> = Api::namespaced(client.clone(), namespace);
    roles
        .create(&PostParams::default(), &role)
        .await
        .map_err(|e| BackendError::kube(format!("create Role {namespace}/{}", grant.role), e))?;
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), namespace);
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .map_err(|e| {
            BackendError::kube(format!("create RoleBinding {namespace}/{}", grant.role), e)
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_version_line_names_the_operator() {
        assert_eq!(
            name_version("/x/reference-operator", "reference-operator 0.1.0\n"),
            Some(("reference-operator".into(), "0.1.0".into()))
        );
        assert_eq!(
            name_version("/x/manager", "gameplane version v0.9.1\nbuilt …\n"),
            Some(("gameplane".into(), "v0.9.1".into()))
        );
        assert_eq!(
            name_version("/x/manager", "v0.9.1"),
            Some(("manager".into(), "v0.9.1".into()))
        );
        assert_eq!(name_version("/x/manager", ""), None);
        assert_eq!(name_version("/x/manager", "\n"), None);
    }
    use super::*;

    fn deployment(name: &str, containers: &[(&str, &str)]) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "gameplane-system"},
            "spec": {
                "selector": {},
                "template": {"spec": {"containers": containers.iter().map(|(n, i)| serde_json::json!({"name": n, "image": i})).collect::<Vec<_>>()}}
            }
        }))
        .unwrap()
    }

    #[test]
    fn gameplanes_version_is_its_managers_image_tag() {
        let found = identity_from_deployments(&[
            deployment("unrelated", &[("x", "x:1")]),
            deployment(
                "gameplane-operator",
                &[
                    ("sidecar", "s:9"),
                    ("manager", "gameplane-test/operator:e2e-4f2a"),
                ],
            ),
        ])
        .unwrap();
        assert_eq!(found.profile, OperatorProfile::Gameplane);
        assert_eq!(
            (found.name.as_str(), found.version.as_str()),
            ("gameplane", "e2e-4f2a")
        );
        assert!(found.source.contains("gameplane-test/operator:e2e-4f2a"));
    }

    #[test]
    fn the_reference_operators_version_is_its_image_tag_or_digest() {
        let found = identity_from_deployments(&[deployment(
            "reference-operator",
            &[("operator", "rehearsal.local/reference-operator@sha256:abcd")],
        )])
        .unwrap();
        assert_eq!(found.profile, OperatorProfile::Reference);
        assert_eq!(found.version, "sha256:abcd");
        assert_eq!(
            image_version("127.0.0.1:5000/ns/op:1.2"),
            Some("1.2".into())
        );
        assert_eq!(image_version("127.0.0.1:5000/ns/op"), None);
    }

    #[test]
    fn no_operator_or_no_version_is_an_error_not_a_default() {
        let err = identity_from_deployments(&[]).unwrap_err();
        assert!(
            err.contains("deploy the operator") && !err.contains('\n'),
            "{err}"
        );
        let err = identity_from_deployments(&[deployment(
            "gameplane-operator",
            &[("manager", "gameplane-test/operator")],
        )])
        .unwrap_err();
        assert!(err.contains("no tag or digest"), "{err}");
    }

    #[test]
    fn the_expected_profile_must_be_the_one_running() {
        let found =
            identity_from_deployments(&[deployment("reference-operator", &[("operator", "r:1")])])
                .unwrap();
        assert!(check_expected(None, &found).is_ok());
        assert!(check_expected(Some(OperatorProfile::Reference), &found).is_ok());
        let err = check_expected(Some(OperatorProfile::Gameplane), &found).unwrap_err();
        assert!(err.contains("cluster runs reference"), "{err}");
        let env = |v: &'static str| move |k: &str| (k == ENV).then(|| v.to_string());
        assert_eq!(
            OperatorProfile::from_env(env("gameplane-chart")).unwrap(),
            Some(OperatorProfile::Gameplane)
        );
        assert_eq!(OperatorProfile::from_env(env("")).unwrap(), None);
        assert!(OperatorProfile::from_env(env("gameplane-v2")).is_err());
    }

    #[test]
    fn case_namespaces_get_the_chart_role_on_kind_and_your_manifests_roles_on_embedded() {
        use crate::backend::BackendKind::{Embedded, Existing, Kind};
        use OperatorProfile::{Gameplane, Reference};
        super::super::embedded::set_operator_command(None);
        assert_eq!(
            write_grants(Kind, Gameplane).unwrap(),
            vec![gameplane_chart_grant()]
        );
        assert_eq!(write_grants(Existing, Reference).unwrap(), vec![]);
        assert_eq!(write_grants(Embedded, Reference).unwrap(), vec![]);
        // Taken for Gameplane's on the embedded cluster, with no manifests to say its RBAC.
        let e = write_grants(Embedded, Gameplane).unwrap_err();
        assert!(e.contains("pass --operator-manifests FILE"), "{e}");

        let mut command =
            super::super::embedded::OperatorCommand::parse("/bin/op", Some("gameplane@1")).unwrap();
        let text = "kind: ServiceAccount\napiVersion: v1\nmetadata: {name: op, namespace: sys}\n---\n\
                    kind: Role\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: w, namespace: games}\n---\n\
                    kind: RoleBinding\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: w, namespace: games}\n\
                    roleRef: {kind: Role, name: w}\nsubjects: [{kind: ServiceAccount, name: op, namespace: sys}]\n";
        command.manifests =
            Some(super::super::manifests::OperatorManifests::parse(text, "f", "sys").unwrap());
        super::super::embedded::set_operator_command(Some(command));
        let want = vec![WriteGrant {
            namespace: "games".into(),
            role: "w".into(),
            service_account: ("sys".into(), "op".into()),
        }];
        assert_eq!(write_grants(Embedded, Gameplane).unwrap(), want);
        assert_eq!(write_grants(Embedded, Reference).unwrap(), want);
        super::super::embedded::set_operator_command(None);
    }

    #[test]
    fn the_write_grant_binds_the_charts_rules_to_gameplanes_service_account() {
        let rules = vec![k8s_openapi::api::rbac::v1::PolicyRule {
            api_groups: Some(vec!["batch".into()]),
            resources: Some(vec!["jobs".into()]),
            verbs: vec!["create".into()],
            ..Default::default()
        }];
        let (role, binding) = gameplane_chart_grant().copy_into("rh-case-1", rules.clone());
        assert_eq!(role.metadata.namespace.as_deref(), Some("rh-case-1"));
        assert_eq!(role.rules, Some(rules));
        assert_eq!(binding.role_ref.name, role.metadata.name.unwrap());
        let subject = &binding.subjects.unwrap()[0];
        assert_eq!(
            (
                subject.kind.as_str(),
                subject.name.as_str(),
                subject.namespace.as_deref()
            ),
            (
                "ServiceAccount",
                "gameplane-operator",
                Some("gameplane-system")
            )
        );
    }
}
