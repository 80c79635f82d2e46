//! `rehearse buckets`: show the bucket manifest, print a bucket's nextest filter, and verify the
//! manifest against `cargo nextest list` (the CI gate).

use std::path::{Path, PathBuf};

use super::CliError;
use crate::buckets::{
    DEFAULT_MANIFEST, Manifest, NextestList, VerifyError, check_nextest_config, verify,
};

/// Where nextest reads its config, relative to the workspace root.
const NEXTEST_CONFIG: &str = ".config/nextest.toml";

/// `rehearse buckets` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BucketsCommand {
    /// Prove that every scenario case is in exactly one bucket and every bucket entry exists.
    Verify {
        /// The manifest to read.
        #[command(flatten)]
        manifest: ManifestArg,
        /// Read `cargo nextest list --message-format json` output from FILE (`-`: stdin)
        /// instead of running it.
        #[arg(long, value_name = "FILE")]
        nextest_list_json: Option<PathBuf>,
        /// The nextest config whose bucket profiles must match the manifest
        /// [default: .config/nextest.toml of the manifest's workspace].
        #[arg(long, value_name = "PATH")]
        nextest_config: Option<PathBuf>,
    },
    /// Print each bucket and its cases.
    List {
        /// The manifest to read.
        #[command(flatten)]
        manifest: ManifestArg,
        /// Print the manifest as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the nextest filterset that selects BUCKET's cases (its profile's default-filter).
    NextestFilter {
        /// Bucket name, e.g. `backup`.
        bucket: String,
        /// The manifest to read.
        #[command(flatten)]
        manifest: ManifestArg,
    },
}

/// `--manifest PATH`: which bucket manifest a `buckets` subcommand reads.
#[derive(Debug, clap::Args)]
pub struct ManifestArg {
    /// The bucket manifest [default: scenarios/buckets.toml in this or a parent directory].
    #[arg(
        long = "manifest",
        value_name = "PATH",
        env = "REHEARSAL_BUCKET_MANIFEST"
    )]
    path: Option<PathBuf>,
}

impl ManifestArg {
    fn load(&self) -> Result<Manifest, CliError> {
        let path = match &self.path {
            Some(p) => p.clone(),
            None => find_default_manifest(),
        };
        Manifest::load(&path).map_err(|e| CliError::usage(e.to_string()))
    }
}

/// `scenarios/buckets.toml` in the current directory or the nearest ancestor that has one, so
/// the command works from anywhere in the workspace; the plain relative path otherwise (its
/// read error then names it).
fn find_default_manifest() -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            cwd.ancestors()
                .map(|dir| dir.join(DEFAULT_MANIFEST))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_MANIFEST))
}

/// Runs a `buckets` subcommand: a manifest that disagrees with nextest's list or config exits
/// 1; a manifest, list or config that cannot be read exits 2.
pub async fn run(command: BucketsCommand) -> Result<(), CliError> {
    match command {
        BucketsCommand::Verify {
            manifest,
            nextest_list_json,
            nextest_config,
        } => verify_manifest(&manifest, nextest_list_json, nextest_config).await,
        BucketsCommand::List { manifest, json } => list(&manifest, json),
        BucketsCommand::NextestFilter { bucket, manifest } => {
            let manifest = manifest.load()?;
            let filter = manifest
                .nextest_filter(&bucket)
                .map_err(|e| CliError::usage(e.to_string()))?;
            println!("{filter}");
            Ok(())
        }
    }
}

/// `buckets verify`: the manifest against nextest's list (read from a file, stdin, or
/// `cargo nextest list`) and against the bucket profiles of the nextest config; prints every
/// problem on its own line before the one-line verdict.
async fn verify_manifest(
    manifest: &ManifestArg,
    nextest_list_json: Option<PathBuf>,
    nextest_config: Option<PathBuf>,
) -> Result<(), CliError> {
    let manifest = manifest.load()?;
    let list = match nextest_list_json {
        Some(file) if file.as_os_str() == "-" => {
            let mut json = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut json).map_err(|e| {
                CliError::usage(format!("cannot read the nextest list from stdin: {e}"))
            })?;
            NextestList::from_json("stdin", &json).map_err(|e| CliError::usage(e.to_string()))?
        }
        Some(file) => NextestList::load(&file).map_err(|e| CliError::usage(e.to_string()))?,
        None => run_nextest_list(&manifest).await?,
    };
    let config =
        nextest_config.unwrap_or_else(|| workspace_of(&manifest.path).join(NEXTEST_CONFIG));
    let config_text = std::fs::read_to_string(&config).map_err(|e| {
        CliError::usage(format!(
            "cannot read the nextest config {}: {e}; run from the workspace root or pass --nextest-config PATH",
            config.display()
        ))
    })?;
    let config_problems = check_nextest_config(&manifest, &config, &config_text);
    let (summary, mut problems) = match verify(&manifest, &list) {
        Ok(summary) => (Some(summary), Vec::new()),
        Err(e) => (None, e.problems),
    };
    problems.extend(config_problems);
    match summary {
        Some(summary) if problems.is_empty() => {
            println!("{summary}; {} agrees", config.display());
            Ok(())
        }
        _ => {
            // One line per problem first, so a long list stays readable; then the
            // one-line verdict.
            for problem in &problems {
                eprintln!("rehearse: {problem}");
            }
            let e = VerifyError {
                manifest: manifest.path.clone(),
                problems,
            };
            Err(CliError::failed(e.to_string()))
        }
    }
}

/// `buckets list`: each bucket with its cases and the mutants they catch, or the manifest as JSON.
fn list(manifest: &ManifestArg, json: bool) -> Result<(), CliError> {
    let manifest = manifest.load()?;
    if json {
        let text = serde_json::to_string_pretty(&manifest)
            .map_err(|e| CliError::failed(format!("cannot render the manifest: {e}")))?;
        println!("{text}");
    } else {
        for bucket in &manifest.buckets {
            println!(
                "{} ({} cases): {}",
                bucket.name,
                bucket.cases.len(),
                bucket.description
            );
            for case in &bucket.cases {
                let mutants = if case.mutants.is_empty() {
                    String::new()
                } else {
                    format!(
                        " [catches: {}]",
                        case.mutants
                            .iter()
                            .map(|m| format!("{} on {}", m.name, m.check))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                println!(
                    "  {}::{}  {}{}",
                    case.binary, case.test, case.contract, mutants
                );
            }
        }
    }
    Ok(())
}

/// Runs `cargo nextest list -p <package> --message-format json` in the manifest's workspace.
///
/// A plain `std::process::Command` on purpose: `crate::process` records cluster-facing
/// processes as evidence, and this build-time listing is not evidence; cargo's own progress
/// goes straight to the user's terminal (stderr inherited). It builds with the cargo profile
/// the running `rehearse` came from ([`cargo_profile_of`]), so it reuses that build.
async fn run_nextest_list(manifest: &Manifest) -> Result<NextestList, CliError> {
    let workspace = workspace_of(&manifest.path);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let package = manifest.package.clone();
    let profile = std::env::current_exe()
        .ok()
        .and_then(|exe| cargo_profile_of(&exe));
    let output = tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(&cargo);
        cmd.args(["nextest", "list", "-p", &package, "--message-format", "json"]);
        if let Some(profile) = &profile {
            cmd.args(["--cargo-profile", profile]);
        }
        cmd
            .current_dir(&workspace)
            // A profile chosen in the environment could carry a default-filter that hides
            // cases; the check must see every test.
            .env_remove("NEXTEST_PROFILE")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .output()
    })
    .await
    .map_err(|e| CliError::failed(format!("cargo nextest list did not finish: {e}")))?
    .map_err(|e| {
        CliError::usage(format!(
            "cannot run `cargo nextest list`: {e}; install cargo-nextest (cargo install cargo-nextest --locked) or pass --nextest-list-json FILE"
        ))
    })?;
    if !output.status.success() {
        return Err(CliError::failed(format!(
            "`cargo nextest list -p {} --message-format json` failed ({}); fix the build or config error shown above, or pass --nextest-list-json FILE",
            manifest.package, output.status
        )));
    }
    let json = String::from_utf8_lossy(&output.stdout);
    NextestList::from_json("`cargo nextest list` output", &json)
        .map_err(|e| CliError::failed(e.to_string()))
}

/// The cargo profile an executable at `<target>/<dir>/<name>` was built with: `dev` for
/// `debug`, else the directory's name; `None` outside a cargo target directory (an installed
/// binary), where cargo's default applies. (Tests that run cargo themselves pass it on, so the
/// inner build reuses the outer one.)
pub fn cargo_profile_of(exe: &Path) -> Option<String> {
    let dir = exe.parent()?;
    let target = dir.parent()?;
    let is_target = target.join("CACHEDIR.TAG").is_file() || target.ends_with("target");
    if !is_target {
        return None;
    }
    let name = dir.file_name()?.to_str()?;
    Some(if name == "debug" { "dev" } else { name }.to_string())
}

/// The workspace root for a manifest at `<root>/scenarios/buckets.toml`; the current directory
/// when the manifest lives elsewhere.
fn workspace_of(manifest: &Path) -> PathBuf {
    let abs = std::path::absolute(manifest).unwrap_or_else(|_| manifest.to_owned());
    if abs.ends_with(DEFAULT_MANIFEST) {
        abs.parent()
            .and_then(Path::parent)
            .map(Path::to_owned)
            .unwrap_or_else(|| PathBuf::from("."))
    } else {
        PathBuf::from(".")
    }
}

#[cfg(test)]
mod tests {
    use super::cargo_profile_of;
    use std::path::Path;

    #[test]
    fn the_listing_uses_the_profile_rehearse_was_built_with() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        for sub in ["debug", "quick", "release"] {
            std::fs::create_dir_all(target.join(sub)).unwrap();
        }
        let of = |sub: &str| cargo_profile_of(&target.join(sub).join("rehearse"));
        assert_eq!(of("debug").as_deref(), Some("dev"));
        assert_eq!(of("quick").as_deref(), Some("quick"));
        assert_eq!(of("release").as_deref(), Some("release"));
        // A custom CARGO_TARGET_DIR is recognised by cargo's CACHEDIR.TAG.
        let custom = dir.path().join("build-here");
        std::fs::create_dir_all(custom.join("quick")).unwrap();
        std::fs::write(
            custom.join("CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        assert_eq!(
            cargo_profile_of(&custom.join("quick").join("rehearse")).as_deref(),
            Some("quick")
        );
        // An installed binary: cargo's default profile.
        assert_eq!(cargo_profile_of(Path::new("/usr/local/bin/rehearse")), None);
    }
}
