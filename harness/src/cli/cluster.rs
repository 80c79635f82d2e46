//! `rehearse cluster`: start or remove a cluster for local rehearsals.
//!
//! - `rehearse cluster up --embedded --kubeconfig PATH [--state-dir DIR] [--mutant M]` serves
//!   the embedded cluster (with the reference operator) in the foreground until SIGINT/SIGTERM,
//!   then shuts it down cleanly. The kubeconfig written to PATH is removed at shutdown because
//!   it points at a server that no longer exists; a `--state-dir` is never removed (that is
//!   where volumes and logs are kept for inspection).
//! - `rehearse cluster up --kind [--name N] [--state-dir DIR] [--reference-operator DIR
//!   [--crds DIR] | --helm-chart CHART [--helm-values FILE…]]` creates (or reuses) a Kind
//!   cluster, deploys the operator under test (for the reference operator: every image the cases
//!   use, the CRDs, the operator; for the chart: `helm upgrade --install`), then the restic REST
//!   server of `fixtures/rest-server` (relative to the working directory), and returns;
//!   `rehearse cluster down --kind [--name N]` deletes it.

use std::path::PathBuf;
use std::time::Duration;

use super::CliError;
use crate::backend::Backend;
use crate::backend::embedded::{Embedded, EmbeddedOptions};
use crate::backend::kind::{Kind, KindOptions};
use crate::deploy::embedded::EmbeddedDeploy;
use crate::deploy::helm::{GameplaneImages, HelmConfig};
use crate::deploy::kind::KindDeploy;
use crate::deploy::reference_operator::KindInstall;
use crate::process::{Cmd, ProcessLog};

/// `rehearse cluster` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ClusterCommand {
    /// Start a cluster: --embedded (foreground until Ctrl-C) or --kind.
    Up(Box<UpArgs>),
    /// Delete a Kind cluster made by `cluster up --kind`.
    Down(DownArgs),
    /// The embedded cluster's image catalogue: every reference it resolves with the digest it
    /// pins (what a pod's `imageID` reports); with --pin FILE, FILE printed with each catalogue
    /// reference by tag (`rehearsal.local/fixture-game:2.0-format`) pinned by digest instead.
    Images(ImagesArgs),
}

/// `rehearse cluster images`: list the catalogue, or pin a file's references.
#[derive(Debug, clap::Args)]
pub struct ImagesArgs {
    /// A file (e.g. a GameTemplate manifest) to print with its catalogue references pinned.
    #[arg(long, value_name = "FILE")]
    pub pin: Option<PathBuf>,
}

/// `rehearse cluster up`: which cluster, where its state goes, and (Kind) the operator to deploy.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("backend").required(true).args(["embedded", "kind"])))]
pub struct UpArgs {
    /// The in-process cluster with the reference operator (needs bubblewrap).
    #[arg(long)]
    pub embedded: bool,
    /// A Kind cluster (needs kind and Docker/podman).
    #[arg(long)]
    pub kind: bool,
    /// Where to write the kubeconfig (embedded: required; removed again at shutdown).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Keep cluster state here (never removed).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Embedded: run the reference operator with this mutant.
    #[arg(long)]
    pub mutant: Option<String>,
    /// Embedded: your operator instead of the reference operator.
    #[command(flatten)]
    pub operator: super::operator::OperatorArgs,
    /// Embedded: do not start the reference operator.
    #[arg(long)]
    pub no_operator: bool,
    /// Kind: cluster name.
    #[arg(long, default_value = "rehearsal")]
    pub name: String,
    /// Kind: host directory mounted into the node where the cases' restic repositories live
    /// (/var/tmp/rehearsal-repos), so they can be inspected from the host.
    #[arg(long)]
    pub backup_repo: Option<PathBuf>,
    /// Kind: keep the nodes of a failed create for inspection.
    #[arg(long)]
    pub keep_on_failure: bool,
    /// Kind: deploy the reference operator from these manifests, after loading every image the
    /// cases use (they must be built) and installing the CRDs of --crds.
    #[arg(long, value_name = "DIR", conflicts_with = "helm_chart")]
    pub reference_operator: Option<PathBuf>,
    /// Kind: the CRDs installed with --reference-operator.
    #[arg(long, value_name = "DIR", default_value = "fixtures/crds")]
    pub crds: PathBuf,
    /// Kind: install Gameplane's Helm chart from this path (then, as with
    /// --reference-operator, the restic REST server of ./fixtures/rest-server).
    #[arg(long, value_name = "CHART")]
    pub helm_chart: Option<PathBuf>,
    /// Kind: values files for the chart (repeatable; the image values below still win).
    #[arg(long, value_name = "FILE", requires = "helm_chart")]
    pub helm_values: Vec<PathBuf>,
    /// Kind: the chart's `image.registry`, where the Gameplane images you built and loaded are
    /// named (Gameplane's e2e: gameplane-test).
    #[arg(
        long,
        value_name = "REGISTRY",
        requires = "helm_chart",
        default_value = "gameplane-test"
    )]
    pub gameplane_registry: String,
    /// Kind: the chart's `image.tag` of those images (required with --helm-chart).
    #[arg(long, value_name = "TAG", requires = "helm_chart")]
    pub gameplane_tag: Option<String>,
    /// Kind: the chart's `operator.agentImage` (required with --helm-chart).
    #[arg(long, value_name = "IMAGE", requires = "helm_chart")]
    pub gameplane_agent_image: Option<String>,
}

/// `rehearse cluster down`: which Kind cluster to delete.
#[derive(Debug, clap::Args)]
pub struct DownArgs {
    /// Delete a Kind cluster.
    #[arg(long, required = true)]
    pub kind: bool,
    /// Kind: cluster name.
    #[arg(long, default_value = "rehearsal")]
    pub name: String,
    /// The state directory used at `up` (holds its kubeconfig).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
}

fn default_kind_state(name: &str) -> PathBuf {
    PathBuf::from("reports").join(format!("kind-{name}"))
}

/// Runs a `cluster` subcommand.
pub async fn run(command: ClusterCommand) -> Result<(), CliError> {
    match command {
        ClusterCommand::Up(args) if args.embedded => up_embedded(*args).await,
        ClusterCommand::Up(args) => up_kind(*args).await,
        ClusterCommand::Down(args) => down_kind(args).await,
        ClusterCommand::Images(args) => images(&args),
    }
}

/// `cluster images`: the catalogue's references and digests, or `--pin FILE` pinned.
fn images(args: &ImagesArgs) -> Result<(), CliError> {
    let catalogue = rehearsal_embedded::images::ImageCatalogue::with_defaults();
    let pinned = |reference: &str| {
        catalogue
            .resolve(reference)
            .map(|r| r.image_id)
            .filter(|_| !reference.contains('*') && !reference.contains('@'))
    };
    let Some(path) = &args.pin else {
        for reference in catalogue.references() {
            match pinned(&reference) {
                Some(id) => println!("{reference}\t{id}"),
                None => println!("{reference}\t(any tag: the host's executable)"),
            }
        }
        return Ok(());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::usage(format!(
            "cannot read {}: {e}; name a file to pin with --pin FILE",
            path.display()
        ))
    })?;
    print!("{}", pin_references(&text, &catalogue.references(), pinned));
    Ok(())
}

/// `text` with every whole occurrence of a catalogue reference (`references`, by tag) replaced
/// by what `pinned` resolves it to; other text untouched.
pub fn pin_references(
    text: &str,
    references: &[String],
    pinned: impl Fn(&str) -> Option<String>,
) -> String {
    let mut by_length: Vec<&String> = references.iter().collect();
    // Longest first, so `repo:1.1-compat` is never cut at `repo:1`.
    by_length.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while !rest.is_empty() {
        for r in &by_length {
            if let Some(after) = rest.strip_prefix(r.as_str()) {
                let whole = after.chars().next().is_none_or(|c| {
                    !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@'))
                });
                if whole && let Some(id) = pinned(r) {
                    out.push_str(&id);
                    rest = after;
                    continue 'scan;
                }
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

async fn up_embedded(args: UpArgs) -> Result<(), CliError> {
    let Some(target) = args.kubeconfig.clone() else {
        return Err(CliError::usage(
            "cluster up --embedded needs --kubeconfig PATH (where to write the kubeconfig for kubectl and the harness)",
        ));
    };
    args.operator.apply(true)?;
    let mut options = EmbeddedOptions {
        deploy: if args.no_operator {
            None
        } else {
            EmbeddedDeploy::chosen(args.mutant.clone())
                .map_err(|e| CliError::usage(e.to_string()))?
                .shared()
        },
        ..Default::default()
    };
    options.cluster.state_dir = args.state_dir.clone();
    // Signals are hooked before starting so a Ctrl-C during start-up still shuts down cleanly.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| CliError::usage(format!("cannot watch SIGTERM: {e}")))?;
    let backend = Embedded::up(options)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    // `rehearse qualify` finds the operator under test by the Deployment where it would run;
    // this one runs as a host process, so the cluster records it there instead.
    if !args.no_operator {
        let found = crate::deploy::profile::detect_embedded()
            .await
            .map_err(|e| CliError::usage(e.to_string()))?;
        let operator = crate::qualify::identity::OperatorIdentity {
            name: found.name,
            version: found.version,
            digest: None,
            source: match args.mutant.as_deref() {
                Some(m) => format!("{} (mutant {m})", found.source),
                None => found.source,
            },
        };
        crate::qualify::identity::publish_embedded(
            &backend.client(),
            crate::deploy::SYSTEM_NAMESPACE,
            "reference-operator",
            &operator,
        )
        .await
        .map_err(|e| {
            CliError::usage(format!(
                "cannot record the reference operator in the embedded cluster: {}",
                crate::kube_error::line(&e)
            ))
        })?;
    }
    let (source, context) = backend.kubeconfig();
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::usage(format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::copy(source, &target).map_err(|e| {
        CliError::usage(format!(
            "cannot write the kubeconfig to {}: {e}",
            target.display()
        ))
    })?;
    println!(
        "embedded cluster up: kubeconfig {} context {context}; restic repositories {}/<name>; {} {}; stop with Ctrl-C",
        target.display(),
        backend.rest_server().base(),
        crate::deploy::embedded::operator_command()
            .map_or_else(|| "reference operator".to_string(), |c| c.describe()),
        if args.no_operator {
            "not started".to_string()
        } else {
            format!(
                "running{}",
                args.mutant
                    .as_deref()
                    .map(|m| format!(" (mutant {m})"))
                    .unwrap_or_default()
            )
        }
    );
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    let _ = std::fs::remove_file(&target);
    Box::new(backend)
        .teardown(args.state_dir.is_some())
        .await
        .map_err(|e| CliError::failed(format!("shutdown: {e}")))?;
    // stdout may be gone by now (a closed pipe must not turn a clean shutdown into a panic).
    use std::io::Write;
    let _ = writeln!(
        std::io::stdout(),
        "embedded cluster stopped; removed {}",
        target.display()
    );
    Ok(())
}

fn kind_options(name: &str, state_dir: Option<PathBuf>) -> KindOptions {
    KindOptions::new(name, state_dir.unwrap_or_else(|| default_kind_state(name)))
}

async fn up_kind(args: UpArgs) -> Result<(), CliError> {
    let mut options = kind_options(&args.name, args.state_dir.clone());
    options.backup_repo_dir = args.backup_repo.clone();
    options.keep_on_failure = args.keep_on_failure;
    if let Some(manifests) = &args.reference_operator {
        let mut install = KindInstall::for_cases(std::path::Path::new(""));
        install.manifests = manifests.clone();
        install.crds = args.crds.clone();
        options.deploy = KindDeploy::ReferenceOperator(install).shared();
    } else if let Some(chart) = &args.helm_chart {
        let (Some(tag), Some(agent)) = (&args.gameplane_tag, &args.gameplane_agent_image) else {
            return Err(CliError::usage(
                "--helm-chart needs --gameplane-tag TAG and --gameplane-agent-image IMAGE: the Gameplane images you built and loaded (Helm would silently fall back to the chart's published images)",
            ));
        };
        let mut config = HelmConfig::gameplane(
            chart.clone(),
            &GameplaneImages {
                registry: args.gameplane_registry.clone(),
                tag: tag.clone(),
                agent: agent.clone(),
            },
        );
        config.values = args.helm_values.clone();
        options.deploy = KindDeploy::helm(config).shared();
    }
    let backend = Kind::up(options.clone())
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    let kubeconfig = options.kubeconfig_path();
    if let Some(target) = &args.kubeconfig {
        std::fs::copy(&kubeconfig, target)
            .map_err(|e| CliError::usage(format!("cannot write {}: {e}", target.display())))?;
    }
    println!(
        "kind cluster {} {:?}: kubeconfig {} context {}",
        args.name,
        backend.provenance(),
        args.kubeconfig.as_ref().unwrap_or(&kubeconfig).display(),
        options.context()
    );
    Ok(())
}

async fn down_kind(args: DownArgs) -> Result<(), CliError> {
    let options = kind_options(&args.name, args.state_dir);
    let argv = options.delete_argv();
    Cmd::new(argv[0].clone())
        .args(argv[1..].iter().cloned())
        .timeout(Duration::from_secs(300))
        .run_checked(&ProcessLog::default())
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    println!("kind cluster {} deleted", args.name);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::pin_references;

    #[test]
    fn only_whole_catalogue_references_are_pinned() {
        let refs = vec!["repo:1".to_string(), "repo:1.1-compat".to_string()];
        let pinned = |r: &str| Some(format!("repo@sha256:{}", r.len()));
        let text =
            "image: repo:1\nimage: repo:1.1-compat\nimage: repo:10\nimage: repo:1@sha256:x\n";
        assert_eq!(
            pin_references(text, &refs, pinned),
            "image: repo@sha256:6\nimage: repo@sha256:15\nimage: repo:10\nimage: repo:1@sha256:x\n"
        );
    }
}
