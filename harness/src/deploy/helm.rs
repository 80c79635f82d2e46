//! `helm upgrade --install` of Gameplane's chart, with the kube context pinned and the chart
//! path, values files and values taken from configuration.
//!
//! Helm ignores value keys the chart does not have, silently; [`HelmConfig::gameplane`] sets
//! only keys of Gameplane's chart (`charts/gameplane`), the ones its own e2e sets.

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
    /// Values set with `--set-string` (image references, tags), in order.
    #[serde(default)]
    pub set_string: Vec<HelmValue>,
    /// Values set with `--set` (booleans), in order.
    #[serde(default)]
    pub set: Vec<HelmValue>,
    /// How long `--wait` may take, in seconds.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

/// One chart value: `key` is its dotted path in the chart's values (e.g. `image.tag`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelmValue {
    /// The value's dotted path, e.g. `image.tag`.
    pub key: String,
    /// The value as `--set`/`--set-string` passes it.
    pub value: String,
}

impl HelmValue {
    /// Chart value `key` set to `value`.
    pub fn new(key: &str, value: &str) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// The Gameplane images a chart install runs: built from a Gameplane checkout and loaded into
/// the nodes (the chart composes `<registry>/<component>:<tag>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameplaneImages {
    /// `image.registry` (Gameplane's e2e builds into `gameplane-test`).
    pub registry: String,
    /// `image.tag`.
    pub tag: String,
    /// `operator.agentImage`: the agent sidecar the operator injects into game pods.
    pub agent: String,
}

impl HelmConfig {
    /// Gameplane's chart at `chart`, configured the way Gameplane's own e2e installs it: its
    /// locally built images, no ingress and no web UI (no controller or DNS in the cluster), no
    /// default module source (it would clone a git repository), and no leader election (one
    /// replica; a lease only delays start-up).
    pub fn gameplane(chart: impl Into<PathBuf>, images: &GameplaneImages) -> Self {
        Self {
            release: default_release(),
            chart: chart.into(),
            values: Vec::new(),
            set_string: vec![
                HelmValue::new("image.registry", &images.registry),
                HelmValue::new("image.tag", &images.tag),
                HelmValue::new("operator.agentImage", &images.agent),
            ],
            set: vec![
                HelmValue::new("ingress.enabled", "false"),
                HelmValue::new("web.enabled", "false"),
                HelmValue::new("defaultModuleSource.enabled", "false"),
                HelmValue::new("operator.leaderElect", "false"),
            ],
            timeout_secs: default_timeout_secs(),
        }
    }
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
    /// The release, chart and values to install.
    pub config: HelmConfig,
    /// The kubeconfig the install uses (`--kubeconfig`).
    pub kubeconfig: PathBuf,
    /// The context it is pinned to (`--kube-context`); never the file's current context.
    pub context: String,
    /// The namespace the release goes into (`--namespace`, created if missing).
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
        for (flag, values) in [("--set-string", &c.set_string), ("--set", &c.set)] {
            for v in values {
                argv.push(flag.into());
                argv.push(format!("{}={}", v.key, v.value));
            }
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
