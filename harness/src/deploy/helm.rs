//! `helm upgrade --install` of Gameplane's chart, with the kube context pinned and the chart
//! path, values files and image overrides taken from configuration.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::process::{Cmd, ProcessError, ProcessLog, ProcessRecord};

/// What to install, as configured (e.g. a `[deploy.helm]` table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelmConfig {
    /// Release name.
    #[serde(default = "default_release")]
    pub release: String,
    /// Path to the chart directory (e.g. a Gameplane checkout's `charts/gameplane`).
    pub chart: PathBuf,
    /// Values files, in order (later ones win).
    #[serde(default)]
    pub values: Vec<PathBuf>,
    /// Image overrides: chart value key → image reference (set with `--set-string`).
    #[serde(default)]
    pub images: Vec<ImageOverride>,
    /// How long `--wait` may take, in seconds.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

/// One image override: `key` is the chart value (e.g. `controller.image`), `reference` the image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageOverride {
    pub key: String,
    pub reference: String,
}

fn default_release() -> String {
    "gameplane".into()
}
fn default_timeout_secs() -> u64 {
    300
}

/// A Helm install pinned to one kubeconfig context.
#[derive(Debug, Clone)]
pub struct HelmInstall {
    pub config: HelmConfig,
    pub kubeconfig: PathBuf,
    pub context: String,
    pub namespace: String,
    /// The `helm` program (name or path; `REHEARSAL_HELM` overrides the default).
    pub helm_program: String,
}

impl HelmInstall {
    /// An install of `config` into [`super::SYSTEM_NAMESPACE`] via `context` of `kubeconfig`.
    pub fn new(config: HelmConfig, kubeconfig: &Path, context: &str) -> Self {
        Self {
            config,
            kubeconfig: kubeconfig.to_path_buf(),
            context: context.to_string(),
            namespace: super::SYSTEM_NAMESPACE.to_string(),
            helm_program: std::env::var("REHEARSAL_HELM").unwrap_or_else(|_| "helm".into()),
        }
    }

    /// The exact argv run.
    pub fn argv(&self) -> Vec<String> {
        let c = &self.config;
        let mut argv = vec![
            self.helm_program.clone(),
            "upgrade".into(),
            "--install".into(),
            c.release.clone(),
            c.chart.display().to_string(),
            "--kubeconfig".into(),
            self.kubeconfig.display().to_string(),
            "--kube-context".into(),
            self.context.clone(),
            "--namespace".into(),
            self.namespace.clone(),
            "--create-namespace".into(),
            "--wait".into(),
            "--timeout".into(),
            format!("{}s", c.timeout_secs),
        ];
        for values in &c.values {
            argv.push("--values".into());
            argv.push(values.display().to_string());
        }
        for image in &c.images {
            argv.push("--set-string".into());
            argv.push(format!("{}={}", image.key, image.reference));
        }
        argv
    }

    /// Runs the install; a failure carries helm's output.
    pub async fn run(&self, log: &ProcessLog) -> Result<ProcessRecord, ProcessError> {
        let argv = self.argv();
        Cmd::new(argv[0].clone())
            .args(argv[1..].iter().cloned())
            .timeout(Duration::from_secs(self.config.timeout_secs + 60))
            .run_checked(log)
            .await
    }
}
