//! The preflight (step 2): what the procedure refuses to start with, before anything is
//! changed, each refusal one line that names the fix: a missing member, a member tracking the
//! template's default or already on the candidate, a repository Secret that is missing or not a
//! REST URL, a missing template or version, a candidate not pinned by digest, a source or a
//! member that overrides its image or a member left suspended, and a template without what the
//! gates need.

use gameplane_api::gametemplate::GameTemplate;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

use crate::context::{CaseContext, CaseError, HarnessMutant};
use crate::evidence::judge::gates::{self as judge, Member};
use crate::evidence::qualification::{Plan, PreflightEvidence};
use crate::qualify::access::{Access, get_server, get_server_opt};

/// Why the preflight refuses, as one line.
#[derive(Debug, Clone)]
pub(super) struct Refusal(pub(super) String);

/// Refuses what the procedure cannot work with, naming it: a fleet member or the source that
/// does not exist, members that track the template default (they would adopt automatically), a
/// missing template or candidate version, a candidate whose image is not pinned by digest, and
/// a template without what the gates need (a Minecraft port, RCON with a password Secret).
pub(super) async fn preflight(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> Result<Result<(PreflightEvidence, Access, String), Refusal>, CaseError> {
    let mut servers = plan.fleet.clone();
    if !servers.contains(&plan.source) {
        servers.push(plan.source.clone());
    }
    let mut members = Vec::new();
    let mut states = Vec::new();
    for member in &servers {
        let read = match get_server_opt(ctx, member).await? {
            None => Member::Missing,
            Some(gs) => {
                if plan.fleet.contains(member) {
                    states.push(judge::MemberState {
                        name: member.clone(),
                        suspended: gs.spec.suspend == Some(true),
                        image_override: gs.spec.image.clone(),
                    });
                }
                Member::Pins(gs.spec.version.unwrap_or_default())
            }
        };
        members.push((member.clone(), read));
    }
    let tracking_allowed = ctx.harness_mutant(HarnessMutant::DefaultTrackingAllowed);
    if let Some(refusal) =
        judge::fleet_refusal(&ctx.namespace, &plan.candidate, &members, tracking_allowed)
            .or_else(|| judge::member_state_refusal(&ctx.namespace, &states))
    {
        return Ok(Err(Refusal(refusal)));
    }
    let floating: Vec<String> = members
        .iter()
        .filter(|(_, m)| matches!(m, Member::Pins(v) if v.is_empty()))
        .map(|(n, _)| n.clone())
        .collect();
    if let Err(refusal) = check_repository(ctx, plan).await? {
        return Ok(Err(refusal));
    }
    let templates: Api<GameTemplate> = Api::all(ctx.client.clone());
    let Some(t) = templates
        .get_opt(&plan.template)
        .await
        .map_err(CaseError::kube("get GameTemplate", plan.template.clone()))?
    else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} does not exist; name the template that holds the candidate",
            plan.template
        ))));
    };
    let Some(version) = t.spec.versions.iter().find(|v| v.id == plan.candidate) else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} has no version {:?}; add it to spec.versions",
            plan.template, plan.candidate
        ))));
    };
    if !version.image.contains("@sha256:") {
        return Ok(Err(Refusal(format!(
            "candidate {} image {} is not pinned by digest; reference it as repo@sha256:…",
            plan.candidate, version.image
        ))));
    }
    let source = get_server(ctx, &plan.source).await?;
    if source.spec.template_ref.name != plan.template {
        return Ok(Err(Refusal(format!(
            "source {} runs template {}, not {}; qualify the template the fleet runs",
            plan.source, source.spec.template_ref.name, plan.template
        ))));
    }
    if let Some(image) = source.spec.image.as_deref().filter(|i| !i.is_empty()) {
        return Ok(Err(Refusal(format!(
            "source {} overrides its image (spec.image {image}), so its clone would never run the candidate's image; pick a source without an override or remove it",
            plan.source
        ))));
    }
    let previous = source.spec.version.clone().unwrap_or_default();
    let access = match read_access(ctx, plan, &t).await? {
        Ok(access) => access,
        Err(refusal) => return Ok(Err(refusal)),
    };
    Ok(Ok((
        PreflightEvidence {
            candidate: plan.candidate.clone(),
            image: version.image.clone(),
            previous,
            fleet_pinned: plan.fleet.clone(),
            tracking_default: floating,
            access: access.evidence(),
        },
        access,
        version.image.clone(),
    )))
}

/// The repository Secret the source's backup needs (`--repo-secret`): present in the fleet's
/// namespace with the keys `repo` and `password`, and `repo` a restic REST URL (the copy Jobs
/// reach the repository over the network; a local path only works where pods share the host).
pub(super) async fn check_repository(
    ctx: &CaseContext<'_>,
    plan: &Plan,
) -> Result<Result<(), Refusal>, CaseError> {
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let name = &plan.repo_secret;
    let Some(secret) = secrets.get_opt(name).await.map_err(CaseError::kube(
        "get Secret",
        format!("{}/{name}", ctx.namespace),
    ))?
    else {
        return Ok(Err(Refusal(format!(
            "repository Secret {}/{name} does not exist: create it with keys repo (rest:http://HOST:PORT/PATH) and password, or name it with --repo-secret",
            ctx.namespace
        ))));
    };
    let value = |k: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(k))
            .map(|b| String::from_utf8_lossy(&b.0).trim().to_string())
            .or_else(|| secret.string_data.as_ref().and_then(|d| d.get(k)).cloned())
            .filter(|v| !v.is_empty())
    };
    let (repo, password) = (value("repo"), value("password"));
    let refusal = judge::repository_refusal(
        &format!("{}/{name}", ctx.namespace),
        repo.as_deref(),
        password.as_deref(),
    );
    Ok(refusal.map_or(Ok(()), |r| Err(Refusal(r))))
}

/// What the gates need from the fleet's template, or why it lacks it: the game port (the port
/// named `minecraft`, else the first TCP port), the RCON port and the password from its Secret,
/// and the quiesce commands.
pub(super) async fn read_access(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    t: &GameTemplate,
) -> Result<Result<Access, Refusal>, CaseError> {
    let game_port = t
        .spec
        .ports
        .iter()
        .find(|p| p.name == "minecraft")
        .or_else(|| {
            t.spec
                .ports
                .iter()
                .find(|p| p.protocol.as_deref().unwrap_or("TCP") == "TCP")
        })
        .and_then(|p| u16::try_from(p.container_port).ok());
    let Some(game_port) = game_port else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} declares no TCP game port (spec.ports); the join gate joins the game on it",
            plan.template
        ))));
    };
    let rcon = t.spec.rcon.clone().unwrap_or_default();
    let (Some(port), Some(secret_ref)) = (
        rcon.port.and_then(|p| u16::try_from(p).ok()),
        rcon.password_secret_ref.clone(),
    ) else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} declares no RCON port and password Secret (spec.rcon.port, spec.rcon.passwordSecretRef); the save gate and read-backs save the world over RCON",
            plan.template
        ))));
    };
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let secret = secrets
        .get_opt(&secret_ref.name)
        .await
        .map_err(CaseError::kube(
            "get Secret",
            format!("{}/{}", ctx.namespace, secret_ref.name),
        ))?;
    let password = secret
        .as_ref()
        .and_then(|s| s.data.as_ref()?.get(&secret_ref.key))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .or_else(|| {
            secret
                .as_ref()
                .and_then(|s| s.string_data.as_ref()?.get(&secret_ref.key).cloned())
        });
    let Some(password) = password else {
        return Ok(Err(Refusal(format!(
            "the RCON password Secret {}/{} has no key {:?} (GameTemplate {} spec.rcon.passwordSecretRef); create it where the fleet runs",
            ctx.namespace, secret_ref.name, secret_ref.key, plan.template
        ))));
    };
    let quiesce = t.spec.capabilities.as_ref().and_then(|c| c.quiesce.clone());
    let Some(quiesce) = quiesce.filter(|q| !q.quiesce.is_empty()) else {
        return Ok(Err(Refusal(format!(
            "GameTemplate {} declares no quiesce commands (spec.capabilities.quiesce); backups and read-backs need a whole save",
            plan.template
        ))));
    };
    Ok(Ok(Access {
        game_port,
        rcon_port: port,
        rcon_secret: format!("{}/{}", secret_ref.name, secret_ref.key),
        rcon_password: password,
        quiesce: quiesce.quiesce,
        unquiesce: quiesce.unquiesce,
    }))
}
