//! The CI workflow agrees with the bucket manifest (a new bucket cannot be forgotten in CI) and
//! keeps its supply-chain rules: actions pinned by commit, least privilege, no untrusted input
//! interpolated into shell.

use std::path::{Path, PathBuf};

use rehearsal::buckets::Manifest;
use serde_yaml::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn workflow_text() -> String {
    std::fs::read_to_string(workspace().join(".github/workflows/rehearsal.yml"))
        .expect(".github/workflows/rehearsal.yml")
}

fn workflow() -> Value {
    serde_yaml::from_str(&workflow_text()).expect("workflow is YAML")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .unwrap_or_else(|| panic!("expected a list, got {v:?}"))
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect()
}

fn rehearse_matrix(wf: &Value) -> &Value {
    &wf["jobs"]["rehearse"]["strategy"]["matrix"]
}

#[test]
fn bucket_matrix_equals_the_manifest() {
    let manifest = Manifest::load(&workspace().join("scenarios/buckets.toml")).unwrap();
    let wf = workflow();
    assert_eq!(
        strings(&rehearse_matrix(&wf)["bucket"]),
        manifest.bucket_names(),
        "jobs.rehearse.strategy.matrix.bucket in .github/workflows/rehearsal.yml must list the buckets of scenarios/buckets.toml, in order"
    );
}

#[test]
fn every_bucket_runs_on_amd64_and_arm64_runners() {
    let wf = workflow();
    let matrix = rehearse_matrix(&wf);
    assert_eq!(
        strings(&matrix["runner"]),
        ["ubuntu-24.04", "ubuntu-24.04-arm"]
    );
    let arch_of: Vec<(String, String)> = matrix["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["runner"].as_str().unwrap().to_owned(),
                e["arch"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        arch_of,
        [
            ("ubuntu-24.04".to_owned(), "amd64".to_owned()),
            ("ubuntu-24.04-arm".to_owned(), "arm64".to_owned())
        ]
    );
    // The nextest archive and the image binaries exist for the same architectures.
    let arches: Vec<&str> = wf["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| e["arch"].as_str().unwrap())
        .collect();
    assert_eq!(arches, ["amd64", "arm64"], "job build");
}

#[test]
fn bucket_job_runs_the_bucket_profile_from_the_archive_and_always_uploads() {
    let wf = workflow();
    let job = &wf["jobs"]["rehearse"];
    assert_eq!(strings(&job["needs"]), ["build"]);
    assert_eq!(job["env"]["BUCKET"].as_str(), Some("${{ matrix.bucket }}"));
    assert_eq!(job["env"]["REHEARSAL_CLUSTER"].as_str(), Some("kind"));
    let steps = job["steps"].as_sequence().unwrap();
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    assert!(runs.iter().any(|r| r.contains("cluster up --kind")));
    assert!(
        runs.iter()
            .any(|r| r.contains("--archive-file") && r.contains("--profile \"$BUCKET\""))
    );
    let upload = steps
        .iter()
        .find(|s| s["name"].as_str() == Some("Upload bundle, JUnit and logs"))
        .expect("upload step");
    assert_eq!(upload["if"].as_str(), Some("always()"));
    let path = upload["with"]["path"].as_str().unwrap();
    assert!(
        path.contains("reports/") && path.contains("junit.xml"),
        "{path}"
    );
    let report = &wf["jobs"]["report"];
    assert_eq!(report["if"].as_str(), Some("always()"));
    assert!(
        report["steps"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|s| s["run"].as_str())
            .any(|r| r.contains("rehearse\" report") && r.contains("GITHUB_STEP_SUMMARY"))
    );
}

#[test]
fn third_party_actions_are_pinned_by_commit_with_a_version_comment() {
    let text = workflow_text();
    let mut seen = 0;
    for (n, line) in text.lines().enumerate() {
        let Some(rest) = line
            .trim_start()
            .trim_start_matches("- ")
            .strip_prefix("uses: ")
        else {
            continue;
        };
        seen += 1;
        let (action, comment) = rest.split_once(" # ").unwrap_or((rest, ""));
        let (_, reference) = action
            .split_once('@')
            .unwrap_or_else(|| panic!("line {}: `{action}` has no @ref", n + 1));
        assert!(
            reference.len() == 40 && reference.chars().all(|c| c.is_ascii_hexdigit()),
            "line {}: `{action}` must be pinned by a full commit SHA",
            n + 1
        );
        let version = comment.trim().trim_start_matches('v');
        let parts: Vec<&str> = version
            .split_whitespace()
            .next()
            .unwrap_or("")
            .split('.')
            .collect();
        assert!(
            parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()),
            "line {}: `{action}` needs a `# vX.Y.Z` comment naming the pinned version",
            n + 1
        );
    }
    assert!(seen >= 10, "found only {seen} `uses:` lines");
}

#[test]
fn permissions_are_read_only() {
    let wf = workflow();
    let top = wf["permissions"]
        .as_mapping()
        .expect("top-level permissions");
    assert_eq!(top.len(), 1);
    assert_eq!(wf["permissions"]["contents"].as_str(), Some("read"));
    for (name, job) in wf["jobs"].as_mapping().unwrap() {
        if let Some(p) = job.get("permissions") {
            for (scope, level) in p.as_mapping().unwrap() {
                assert_ne!(
                    level.as_str(),
                    Some("write"),
                    "job {name:?} asks for {scope:?}: write"
                );
            }
        }
    }
}

#[test]
fn no_expression_is_interpolated_into_shell() {
    let wf = workflow();
    for (name, job) in wf["jobs"].as_mapping().unwrap() {
        for step in job["steps"].as_sequence().unwrap() {
            if let Some(run) = step["run"].as_str() {
                assert!(
                    !run.contains("${{"),
                    "job {name:?}, step {:?}: pass values through `env:`, not `${{{{ }}}}` in `run:`",
                    step["name"]
                );
            }
        }
    }
    // The untrusted inputs only name what the `gameplane` job checks out (a `with:`, never a
    // shell line).
    let checkout = wf["jobs"]["gameplane"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["with"]["path"].as_str() == Some("gameplane-src"))
        .expect("the gameplane job checks Gameplane out");
    assert_eq!(
        checkout["with"]["repository"].as_str(),
        Some("${{ inputs.gameplane-repository }}")
    );
    assert_eq!(
        checkout["with"]["ref"].as_str(),
        Some("${{ inputs.gameplane-ref }}")
    );
}

#[test]
fn kind_is_pinned_like_the_harness_and_checksum_verified() {
    use rehearsal::backend::Arch;
    use rehearsal::backend::kind::{KIND_RELEASE, NodeImage};
    let wf = workflow();
    let env = &wf["env"];
    assert_eq!(
        env["KIND_VERSION"].as_str(),
        Some(KIND_RELEASE),
        "the workflow installs the kind release whose node image the harness pins"
    );
    for key in ["KIND_SHA256_AMD64", "KIND_SHA256_ARM64"] {
        let sum = env[key].as_str().unwrap();
        assert!(
            sum.len() == 64 && sum.chars().all(|c| c.is_ascii_hexdigit()),
            "{key}"
        );
    }
    let node = env["REHEARSAL_KIND_NODE_IMAGE"].as_str().unwrap();
    for arch in ["amd64", "arm64"] {
        let pinned = NodeImage::for_arch(&Arch(arch.into())).expect("pinned node image");
        assert_eq!(node, pinned.reference, "node image for {arch}");
    }
    assert!(node.contains("@sha256:"), "{node}");
    assert!(workflow_text().contains("sha256sum --check --strict"));
}

/// Defects 2, 9 and 10: the images are not loaded with `kind load` (a loaded image has no
/// repository digest, so digest-pinned candidates cannot be pulled, and Docker 29 breaks
/// `docker save`): the rehearse job builds them with the script the tests run here, pushes them
/// to the local registry container it starts, and tells `rehearse` (and through nextest every
/// case) where that registry is — the port the script publishes.
#[test]
fn images_reach_kind_through_the_local_registry_not_kind_load() {
    let wf = workflow();
    for (name, job) in wf["jobs"].as_mapping().unwrap() {
        for run in strings_of_runs(job) {
            assert!(!run.contains("kind load"), "job {name:?} runs `kind load`");
            assert!(
                !run.contains("docker save"),
                "job {name:?} runs `docker save`"
            );
        }
    }
    assert!(wf["jobs"].get("images").is_none(), "no images tarball job");
    let job = &wf["jobs"]["rehearse"];
    let registry = job["env"]["REHEARSAL_REGISTRY"]
        .as_str()
        .expect("REHEARSAL_REGISTRY");
    let port = registry
        .strip_prefix("127.0.0.1:")
        .expect("a loopback address");
    let steps = job["steps"].as_sequence().unwrap();
    let run_of = |needle: &str| -> usize {
        steps
            .iter()
            .position(|s| s["run"].as_str().is_some_and(|r| r.contains(needle)))
            .unwrap_or_else(|| panic!("no step runs {needle}"))
    };
    let build = run_of(&format!(
        "scripts/build-images.sh --engine docker --bin-dir \"$RUNNER_TEMP/build/bin\" --start-registry {port}"
    ));
    // The registry holds the images before the cluster (and the operator's pod) needs them.
    assert!(build < run_of("cluster up --kind"));
    // The registry container is the one `rehearse` connects to the Kind network by default.
    let script = std::fs::read_to_string(workspace().join("scripts/build-images.sh")).unwrap();
    assert!(script.contains(&format!(
        "registry_name={}",
        rehearsal::backend::kind::REGISTRY_CONTAINER
    )));
    // The build job ships the binaries the script reads from --bin-dir.
    let build_job = strings_of_runs(&wf["jobs"]["build"]);
    assert!(
        build_job.iter().any(|r| r
            .contains("cp target/release/fixture-game target/release/reference-operator out/bin/")),
        "{build_job:?}"
    );
    // Every image the cases use is one the script builds (images_registry.rs checks the
    // pushes; this checks the script's table against the harness's list).
    for image in rehearsal::deploy::images::for_cases() {
        let (repo, tag) = image.rsplit_once(':').unwrap();
        let made = match repo {
            "rehearsal.local/fixture-game" => script
                .lines()
                .any(|l| l.starts_with(&format!("game {tag} "))),
            "rehearsal.local/fixture-agent" => script
                .lines()
                .any(|l| l.starts_with(&format!("agent {tag} "))),
            _ => script.contains(&format!("\"$op_ctx/Dockerfile\" {image}")),
        };
        assert!(
            made,
            "{image} is used by the cases but scripts/build-images.sh does not build it"
        );
    }
}

fn strings_of_runs(job: &Value) -> Vec<String> {
    job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str().map(str::to_owned))
        .collect()
}

/// Defect (issue 13, item 8): nextest came from an install-action release older than nextest
/// 0.9.143 (v2.62.49, later v2.75.26), whose manifest does not list that version, so the
/// action fell back — to cargo-binstall's download, which no checksum verifies, or, with
/// `fallback: cargo-install`, to compiling nextest from crates.io — and its checksum-verified
/// path was never used. Every install-action step now pins the workflow's nextest version, a
/// release whose manifest lists it, and `fallback: none`: a version the pin does not list
/// fails the step rather than being fetched some other way.
///
/// What a release lists: install-action's `manifests/cargo-nextest.json` keeps the checksums of
/// every nextest release published before it. v2.87.19's release notes read "Update
/// `cargo-nextest@latest` to 0.9.146"; v2.87.20 is commit 9983c65e…aa172.
type Version = (u32, u32, u32);
/// (install-action release, the newest nextest its manifest lists).
const INSTALL_ACTION_LISTS: &[(Version, Version)] = &[((2, 87, 19), (0, 9, 146))];

#[test]
fn nextest_is_installed_only_through_checksum_verified_paths() {
    let wf = workflow();
    let text = workflow_text();
    let mut steps = 0;
    for (job, body) in wf["jobs"].as_mapping().unwrap() {
        for step in body["steps"].as_sequence().unwrap() {
            let Some(uses) = step["uses"].as_str() else {
                continue;
            };
            if !uses.starts_with("taiki-e/install-action@") {
                continue;
            }
            steps += 1;
            let job = job.as_str().unwrap();
            assert_eq!(
                step["with"]["tool"].as_str(),
                Some("nextest@${{ env.NEXTEST_VERSION }}"),
                "{job}"
            );
            let fallback = step["with"]["fallback"].as_str();
            assert_eq!(
                fallback,
                Some("none"),
                "{job}: install-action must not fall back (cargo-binstall downloads unverified; cargo-install compiles instead of using the checksummed release)"
            );
        }
    }
    assert!(steps >= 3, "verify, build and rehearse install nextest");
    let triple = |s: &str| -> Version {
        let p: Vec<u32> = s.split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(p.len(), 3, "{s}");
        (p[0], p[1], p[2])
    };
    let installed = triple(
        text.lines()
            .find_map(|l| l.trim().strip_prefix("NEXTEST_VERSION: "))
            .unwrap()
            .trim_matches('"'),
    );
    // The pinned release's manifest lists the nextest version the workflow installs.
    for line in text
        .lines()
        .filter(|l| l.contains("taiki-e/install-action@"))
    {
        let pin = triple(line.rsplit("# v").next().unwrap().trim());
        let listed = INSTALL_ACTION_LISTS
            .iter()
            .filter(|(release, _)| pin >= *release)
            .map(|(_, nextest)| *nextest)
            .max();
        assert!(
            listed.is_some_and(|newest| installed <= newest),
            "{line}: this install-action release is not known to list nextest {installed:?} in its manifest; pin a newer release (and add it to INSTALL_ACTION_LISTS)"
        );
    }
    // The version nextest.toml requires is at most the one installed.
    let config = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.config/nextest.toml"),
    )
    .unwrap();
    let required = config
        .lines()
        .find_map(|l| l.strip_prefix("nextest-version = { required = \""))
        .unwrap()
        .trim_end_matches("\" }");
    assert!(installed >= triple(required), "{installed:?} < {required}");
}

/// Issue 13 ("the workflow stays thin"): the rehearse job deploys the operator under test
/// through `rehearse cluster up --kind --reference-operator` — the same code `rehearse run
/// --cluster kind` runs and core_podman.rs exercises with a stand-in `kind` — not through
/// kubectl lines of its own, and it states the profile the cases must find on the cluster.
#[test]
fn the_rehearse_job_deploys_the_operator_through_rehearse() {
    let wf = workflow();
    let job = &wf["jobs"]["rehearse"];
    assert_eq!(job["env"]["REHEARSAL_OPERATOR"].as_str(), Some("reference"));
    let runs = strings_of_runs(job);
    for run in &runs {
        assert!(
            !run.lines().any(|l| l.trim_start().starts_with("kubectl")),
            "the rehearse job runs kubectl itself:\n{run}"
        );
    }
    let up = runs
        .iter()
        .find(|r| r.contains("cluster up --kind"))
        .expect("a cluster up step");
    assert!(
        up.contains("--reference-operator images/reference-operator/deploy")
            && up.contains("--crds fixtures/crds"),
        "{up}"
    );
    assert!(
        runs.iter()
            .any(|r| r.contains("REHEARSAL_KUBECTL=$(command -v kubectl)")),
        "the install's kubectl is named for rehearse"
    );
}

/// Issue 13 ("the workflow stays thin"): the gameplane job builds and pushes Gameplane's images
/// with `scripts/build-gameplane-images.sh` (images_registry.rs runs it against a stand-in
/// checkout and a real registry) and installs the chart and the restic REST server with one
/// `rehearse cluster up --kind --helm-chart` (core_podman.rs runs it with stand-in kind, helm
/// and kubectl): no raw kubectl, docker build, tag or push lines of its own.
#[test]
fn the_gameplane_job_builds_and_deploys_through_scripts_and_rehearse() {
    let wf = workflow();
    let job = &wf["jobs"]["gameplane"];
    let runs = strings_of_runs(job);
    for run in &runs {
        for line in run.lines().map(str::trim_start) {
            for raw in [
                "kubectl",
                "docker build",
                "docker tag",
                "docker push",
                "kind load",
            ] {
                assert!(
                    !line.starts_with(raw),
                    "the gameplane job runs `{raw}` itself:\n{run}"
                );
            }
        }
    }
    let step_of = |needle: &str| -> usize {
        runs.iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("no step of the gameplane job runs {needle}"))
    };
    let registry = job["env"]["REHEARSAL_REGISTRY"]
        .as_str()
        .expect("REHEARSAL_REGISTRY");
    let images = step_of(&format!(
        "scripts/build-gameplane-images.sh --engine docker --src \"$GAMEPLANE_SRC\" --tag \"$tag\" --push {registry}"
    ));
    let up = step_of("--helm-chart \"$GAMEPLANE_SRC/charts/gameplane\"");
    // The registry holds Gameplane's images before the chart's pods pull them.
    assert!(images < up);
    let up_run = &runs[up];
    for flag in [
        "--gameplane-registry rehearsal.local/gameplane-test",
        "--gameplane-tag \"$GAMEPLANE_TAG\"",
        "--gameplane-agent-image \"rehearsal.local/gameplane-test/agent:$GAMEPLANE_TAG\"",
    ] {
        assert!(up_run.contains(flag), "{flag} missing:\n{up_run}");
    }
    // The REST server's install after the chart runs the runner's kubectl.
    assert!(
        runs.iter()
            .any(|r| r.contains("REHEARSAL_KUBECTL=$(command -v kubectl)")),
        "the install's kubectl is named for rehearse"
    );
    // The script names the images as the chart values compose them.
    let script =
        std::fs::read_to_string(workspace().join("scripts/build-gameplane-images.sh")).unwrap();
    assert!(script.contains("repository=gameplane-test"));
    assert!(script.contains("components=(operator agent api)"));
}
