//! Your operator instead of the reference operator: `--operator-command`, `--operator`,
//! `--operator-manifests` and `--image`, shared by the commands that start embedded clusters
//! (docs/clusters.md, "Your own operator").

use std::path::PathBuf;

use super::CliError;

/// Your operator instead of the reference operator (embedded cluster only).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OperatorArgs {
    /// Run this command as the embedded cluster's operator instead of the reference operator:
    /// `PROGRAM ARGS…`, split as a shell would, `{kubeconfig}` standing for the kubeconfig of
    /// the operator's own ServiceAccount (also in `KUBECONFIG`). It is started, killed and
    /// started again as the reference operator is; it is ready when it writes the file
    /// `REHEARSAL_READY_FILE` names or watches GameServers, Backups and Restores. See
    /// docs/clusters.md, "Your own operator".
    #[arg(long, env = "REHEARSAL_OPERATOR_COMMAND", value_name = "COMMAND")]
    pub operator_command: Option<String>,
    /// The operator under test as NAME@VERSION, for bundles and reports: your command's
    /// (default: the first line of `PROGRAM --version`), or for `qualify` the one the cluster
    /// runs (default: read from --operator-deployment).
    #[arg(long = "operator", value_name = "NAME@VERSION")]
    pub operator_named: Option<String>,
    /// Map an image reference your operator puts in pods (its agent, a game) to the executable
    /// the embedded node runs for it (repeatable; `repo:*` maps every tag). See
    /// docs/clusters.md, "Your own operator".
    #[arg(long = "image", value_name = "REF=EXECUTABLE")]
    pub images: Vec<String>,
    /// A file of `REF=EXECUTABLE` lines (`#` comments), as `--image` each.
    #[arg(long = "images", value_name = "FILE")]
    pub images_file: Option<PathBuf>,
    /// Your operator's install manifests as `helm template` renders them: your command runs as
    /// the ServiceAccount your operator's Deployment names, with the RBAC they grant (each
    /// case namespace gets a copy of the Role it holds in its games namespace). See
    /// docs/clusters.md, "Your own operator".
    #[arg(long, env = "REHEARSAL_OPERATOR_MANIFESTS", value_name = "FILE")]
    pub operator_manifests: Option<PathBuf>,
}

impl OperatorArgs {
    /// Makes embedded clusters run the command, when one was given (`embedded`: the run is on
    /// the embedded cluster; a command elsewhere is refused).
    pub fn apply(&self, embedded: bool) -> Result<(), CliError> {
        let mut images = match &self.images_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    CliError::usage(format!("--images {}: cannot read it: {e}", path.display()))
                })?;
                crate::backend::images::ImageMapping::parse_file(&text)
                    .map_err(|e| CliError::usage(format!("--images {}: {e}", path.display())))?
            }
            None => Vec::new(),
        };
        for m in &self.images {
            images.push(crate::backend::images::ImageMapping::parse(m).map_err(CliError::usage)?);
        }
        if !images.is_empty() && !embedded {
            return Err(CliError::usage(
                "--image maps images for the embedded cluster's node only: on Kind or an existing cluster push your images to a registry its nodes pull from, or drop --cluster",
            ));
        }
        crate::backend::images::set_image_mappings(images);
        let Some(command) = &self.operator_command else {
            crate::deploy::embedded::set_operator_command(None);
            if self.operator_manifests.is_some() {
                return Err(CliError::usage(
                    "--operator-manifests gives your operator command its identity and RBAC: pass --operator-command too",
                ));
            }
            return Ok(());
        };
        if !embedded {
            return Err(CliError::usage(
                "--operator-command runs your operator on the embedded cluster only: on Kind or an existing cluster deploy it there (its Deployment names its version), or drop --cluster",
            ));
        }
        let command = crate::deploy::embedded::OperatorCommand::parse(
            command,
            self.operator_named.as_deref(),
        )
        .map_err(CliError::usage)?;
        check_program(&command.argv[0])?;
        let mut command = command;
        if let Some(path) = &self.operator_manifests {
            let text = std::fs::read_to_string(path).map_err(|e| {
                CliError::usage(format!(
                    "--operator-manifests {}: cannot read it ({e}): render your chart with `helm template … > FILE` and give that file",
                    path.display()
                ))
            })?;
            let manifests = crate::deploy::manifests::OperatorManifests::parse(
                &text,
                &path.display().to_string(),
                crate::deploy::SYSTEM_NAMESPACE,
            )
            .map_err(CliError::usage)?;
            eprintln!("{}", manifests.summary());
            command.manifests = Some(manifests);
        }
        crate::deploy::embedded::set_operator_command(Some(command));
        Ok(())
    }
}

/// With an operator command: starts it once on an embedded cluster of its own and waits until
/// it is ready, so a command that exits at once or never serves is one line naming it, exit 2,
/// before anything runs.
pub async fn preflight_operator() -> Result<(), CliError> {
    let Some(command) = crate::deploy::embedded::operator_command() else {
        return Ok(());
    };
    let deploy = crate::deploy::embedded::EmbeddedDeploy::chosen(None)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let backend =
        crate::backend::embedded::Embedded::up(crate::backend::embedded::EmbeddedOptions {
            deploy: deploy.shared(),
            ..Default::default()
        })
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    let _ = crate::backend::Backend::teardown(Box::new(backend), false).await;
    // An operator taken for Gameplane's needs its chart's RBAC: said before any case runs.
    let named = crate::deploy::profile::detect_command(&command)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    crate::deploy::profile::write_grants(crate::backend::BackendKind::Embedded, named.profile)
        .map_err(|e| CliError::usage(format!("{} ({}): {e}", named.name, named.source)))?;
    Ok(())
}

/// An operator command's program must exist: a path that is a file, or a name on PATH.
fn check_program(program: &str) -> Result<(), CliError> {
    let found = if program.contains('/') {
        std::path::Path::new(program).is_file()
    } else {
        crate::process::find_program(program).is_ok()
    };
    if found {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "--operator-command: program {program:?} not found: give its path (e.g. ./bin/manager after `go build -o bin/manager`) or put it on PATH"
        )))
    }
}
