//! The Kind path as far as a machine without Kind allows: the config the harness writes, the
//! argv it runs, the Helm invocation (insta snapshots), and the error when `kind` is missing.

use std::path::PathBuf;

use rehearsal::backend::Arch;
use rehearsal::backend::kind::{Kind, KindOptions};
use rehearsal::deploy::helm::{GameplaneImages, HelmConfig, HelmInstall};

fn options(arch: &str) -> KindOptions {
    let mut o = KindOptions::new("rehearsal", "/var/tmp/rehearsal-state");
    o.arch = Arch::normalize(arch);
    o.kind_program = "kind".into();
    o.backup_repo_dir = Some(PathBuf::from("/var/tmp/rehearsal-backups"));
    // Independent of the environment this test runs in.
    o.registry = None;
    o
}

#[test]
fn kind_config_amd64() {
    insta::assert_snapshot!(options("x86_64").render_config().unwrap());
}

/// With a local registry the node's containerd reads per-registry hosts.toml files from
/// /etc/containerd/certs.d (kind's local-registry pattern); without one the config is as before.
#[test]
fn kind_config_with_a_local_registry() {
    use rehearsal::backend::kind::KindRegistry;
    let mut o = options("amd64");
    let registry = KindRegistry::from_env(|k| {
        (k == "REHEARSAL_REGISTRY").then(|| "127.0.0.1:5001".to_string())
    });
    o.registry = registry.clone().map(Box::new);
    assert_eq!(
        registry,
        Some(KindRegistry {
            host_addr: "127.0.0.1:5001".into(),
            container: Some("rehearsal-registry".into()),
            node_endpoint: "http://rehearsal-registry:5000".into(),
            network: "kind".into(),
        })
    );
    insta::assert_snapshot!(o.render_config().unwrap());
    assert!(
        !options("amd64")
            .render_config()
            .unwrap()
            .contains("containerd")
    );
    // Without REHEARSAL_REGISTRY there is none; an empty container name means "reachable
    // already" (nothing to connect), and the endpoint can be named.
    assert_eq!(KindRegistry::from_env(|_| None), None);
    let r = KindRegistry::from_env(|k| match k {
        "REHEARSAL_REGISTRY" => Some("127.0.0.1:5002".into()),
        "REHEARSAL_REGISTRY_CONTAINER" => Some(String::new()),
        "REHEARSAL_REGISTRY_ENDPOINT" => Some("http://172.18.0.1:5002".into()),
        "KIND_EXPERIMENTAL_DOCKER_NETWORK" => Some("kind-ci".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(r.container, None);
    assert_eq!(r.node_endpoint, "http://172.18.0.1:5002");
    assert_eq!(r.network, "kind-ci");
}

#[test]
fn kind_config_arm64_pins_the_same_release() {
    // Both architectures use the node image of the same pinned Kind release.
    assert_eq!(
        options("aarch64").render_config().unwrap(),
        options("amd64").render_config().unwrap()
    );
}

#[test]
fn kind_config_refuses_an_unpinned_architecture() {
    let err = options("riscv64").render_config().unwrap_err().to_string();
    assert!(
        err.contains("riscv64") && err.contains("--embedded"),
        "{err}"
    );
}

#[test]
fn kind_argv() {
    let mut o = options("amd64");
    o.keep_on_failure = true;
    let argv = serde_json::json!({
        "create": o.create_argv(),
        "export_kubeconfig": o.export_kubeconfig_argv(),
        "export_logs": o.export_logs_argv(std::path::Path::new("/bundle/kind-logs")),
        "delete": o.delete_argv(),
        "context": o.context(),
    });
    insta::assert_json_snapshot!(argv);
}

/// Gameplane's chart installed with the values its own e2e sets, under the chart's real keys
/// (Helm ignores unknown keys silently: `controller.image`/`agent.image` did nothing).
#[test]
fn helm_invocation() {
    let config = HelmConfig::gameplane(
        "/src/gameplane/charts/gameplane",
        &GameplaneImages {
            registry: "gameplane-test".into(),
            tag: "e2e-4f1c2e9".into(),
            agent: "gameplane-test/agent:e2e-4f1c2e9".into(),
        },
    );
    let mut install = HelmInstall::new(config, "/state/kubeconfig".as_ref(), "kind-rehearsal");
    install.helm_program = "helm".into();
    let argv = install.argv();
    // Only keys of Gameplane's chart (charts/gameplane values.yaml).
    const CHART_KEYS: &[&str] = &[
        "image.registry",
        "image.tag",
        "operator.agentImage",
        "ingress.enabled",
        "web.enabled",
        "defaultModuleSource.enabled",
        "operator.leaderElect",
    ];
    let set: Vec<&str> = argv
        .windows(2)
        .filter(|w| w[0] == "--set" || w[0] == "--set-string")
        .map(|w| w[1].split_once('=').unwrap().0)
        .collect();
    assert_eq!(set, CHART_KEYS);
    assert!(
        !argv.iter().any(|a| a == "--values"),
        "no values file that does not exist"
    );
    insta::assert_json_snapshot!(argv);
}

#[test]
fn helm_config_parses_from_yaml_and_rejects_unknown_keys() {
    let ok: HelmConfig =
        serde_yaml::from_str("chart: charts/gameplane\nvalues: [a.yaml]\n").unwrap();
    assert_eq!(ok.release, "gameplane");
    assert_eq!(ok.timeout_secs, 300);
    let bad = serde_yaml::from_str::<HelmConfig>("chart: x\nvaluez: []\n").unwrap_err();
    assert!(bad.to_string().contains("valuez"), "{bad}");
}

#[tokio::test]
async fn missing_kind_is_one_line_naming_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = KindOptions::new("rehearsal", dir.path());
    o.kind_program = dir.path().join("kind").display().to_string();
    let err = Kind::up(o).await.unwrap_err().to_string();
    assert!(!err.contains('\n'), "{err}");
    assert!(
        err.contains("install kind") && err.contains("--embedded"),
        "{err}"
    );
}

#[tokio::test]
async fn missing_helm_is_one_line_naming_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let config: HelmConfig = serde_yaml::from_str("chart: charts/gameplane\n").unwrap();
    let mut install = HelmInstall::new(config, &dir.path().join("kubeconfig"), "kind-x");
    install.helm_program = dir.path().join("helm").display().to_string();
    let err = install
        .run(&rehearsal::process::ProcessLog::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains('\n') && err.contains("helm"), "{err}");
}

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k| {
        vars.iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| v.to_string())
    }
}

/// A scenario test process on Kind attaches through the kubeconfig the setup script exported
/// (it never runs `kind`; see core_podman.rs for the run against a real node container).
#[test]
fn scenario_processes_on_kind_read_the_exported_kubeconfig() {
    use rehearsal::run::Cluster;
    let cluster = Cluster::from_nextest_env(env(&[
        ("REHEARSAL_CLUSTER", "kind"),
        ("REHEARSAL_KIND_CLUSTER", "ci"),
        ("REHEARSAL_KUBECONFIG", "/state/ci/rehearsal.kubeconfig"),
        ("REHEARSAL_CONTEXT", "kind-ci"),
    ]))
    .unwrap();
    let Cluster::Kind(options) = cluster else {
        panic!("expected Kind, got {cluster:?}")
    };
    assert_eq!(
        options.exported_kubeconfig.as_deref(),
        Some(std::path::Path::new("/state/ci/rehearsal.kubeconfig"))
    );
    assert_eq!(options.context(), "kind-ci");
    assert_eq!(options.state_dir, std::path::Path::new("/state/ci"));

    // Without the setup script's export the process refuses instead of exporting on its own.
    let err = Cluster::from_nextest_env(env(&[
        ("REHEARSAL_CLUSTER", "kind"),
        ("REHEARSAL_CONTEXT", "kind-rehearsal"),
    ]))
    .unwrap_err();
    assert!(
        err.starts_with("REHEARSAL_KUBECONFIG is unset")
            && err.contains("--profile")
            && !err.contains('\n'),
        "{err}"
    );
    // A context that is not this cluster's is never used.
    let err = Cluster::from_nextest_env(env(&[
        ("REHEARSAL_CLUSTER", "kind"),
        ("REHEARSAL_KUBECONFIG", "/k"),
        ("REHEARSAL_CONTEXT", "prod-eu"),
    ]))
    .unwrap_err();
    assert!(
        err.contains("prod-eu") && err.contains("kind-rehearsal"),
        "{err}"
    );
    assert!(matches!(
        Cluster::from_nextest_env(env(&[])),
        Ok(Cluster::Embedded)
    ));
}

#[tokio::test]
async fn attaching_without_the_exported_kubeconfig_names_the_setup_script() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = KindOptions::new("rehearsal", dir.path());
    o.exported_kubeconfig = Some(dir.path().join("missing.kubeconfig"));
    let err = Kind::attach(o).await.unwrap_err().to_string();
    assert!(
        err.contains("missing.kubeconfig") && err.contains("kind-cluster") && !err.contains('\n'),
        "{err}"
    );
}

/// Defect: `--backup-repo` was mounted at a node path no repository used, so the mount was
/// dead. It now covers the directory the Kind REST server stores the cases' repositories in.
#[test]
fn the_backup_repo_mount_is_where_the_cases_keep_their_repositories() {
    use rehearsal::backend::kind::NODE_BACKUP_REPO;
    let config = options("amd64").render_config().unwrap();
    assert!(
        config.contains(&format!("containerPath: {NODE_BACKUP_REPO}\n")),
        "{config}"
    );
    let docs = rehearsal::backend::rest_server::kind_manifests().unwrap();
    let storage = &docs[1]["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["path"];
    assert_eq!(
        storage, NODE_BACKUP_REPO,
        "the REST server stores at {storage}"
    );
}

/// Without the tag and agent of the Gameplane images that were built and loaded, the chart
/// would silently run its published images: refused, naming the flags.
#[test]
fn cluster_up_with_the_chart_needs_the_gameplane_images() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args([
            "cluster",
            "up",
            "--kind",
            "--helm-chart",
            "charts/gameplane",
        ])
        .arg("--state-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--gameplane-tag") && stderr.contains("--gameplane-agent-image"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// Defect: the workflow wrote REHEARSAL_OPERATOR but nothing read it, so every bundle said
/// "reference-operator" even when Gameplane's chart ran. Now the variable names the profile the
/// cluster must run (the operator and version in a bundle are read from the cluster), every
/// value the workflow writes is a profile, and the Gameplane job checks out Gameplane, builds
/// its images and installs its chart through `rehearse` with the e2e values.
#[test]
fn the_workflow_names_operator_profiles_and_installs_gameplane_through_rehearse() {
    use rehearsal::deploy::profile::OperatorProfile;
    let workflow = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.github/workflows/rehearsal.yml"),
    )
    .unwrap();
    let mut written: Vec<&str> = workflow
        .lines()
        .filter_map(|l| {
            l.split("echo \"REHEARSAL_OPERATOR=")
                .nth(1)
                .or_else(|| l.trim().strip_prefix("REHEARSAL_OPERATOR: "))
        })
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    written.sort();
    assert_eq!(written, ["gameplane", "reference"], "{workflow}");
    for value in written {
        value
            .parse::<OperatorProfile>()
            .unwrap_or_else(|e| panic!("the workflow writes REHEARSAL_OPERATOR={value}: {e}"));
    }
    assert!(
        !workflow.contains("REHEARSAL_OPERATOR_VERSION"),
        "versions are read from the cluster"
    );
    let job = &workflow[workflow.find("\n  gameplane:\n").expect("a gameplane job")..];
    let job = &job[..job[1..].find("\n  report:\n").unwrap()];
    for needed in [
        "repository: ${{ inputs.gameplane-repository }}",
        "ref: ${{ inputs.gameplane-ref }}",
        "--helm-chart \"$GAMEPLANE_SRC/charts/gameplane\"",
        "--gameplane-agent-image \"rehearsal.local/gameplane-test/agent:$GAMEPLANE_TAG\"",
        "scripts/build-gameplane-images.sh --engine docker --src \"$GAMEPLANE_SRC\"",
        "if: github.event_name == 'workflow_dispatch'",
    ] {
        assert!(
            job.contains(needed),
            "the gameplane job lacks {needed:?}:\n{job}"
        );
    }
}
