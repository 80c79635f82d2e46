//! Bollard node operations and a testcontainers service against a REAL container engine
//! (podman's Docker API; CI runs `scripts/start-podman.sh` and exports DOCKER_HOST).
//!
//! No image can be pulled here, so the test image is built from a rootfs tar (busybox and its
//! libraries from the host) imported through the engine API. A "node-like" container stands in
//! for a Kind node: its init supervises one "container" process and restarts it when it ends
//! (as the kubelet does), `crictl` in it stops that process by ID, and `ctr` in it is a
//! stand-in that records what it was asked to import (argv, archive digest and listing) — the
//! real containerd is not available in this image. Everything else is the real engine.

use std::path::Path;

mod podman_support;

use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptions, RemoveContainerOptionsBuilder,
    RemoveImageOptionsBuilder,
};
use bytes::Bytes;
use futures::StreamExt;
use rehearsal::backend::Arch;
use rehearsal::backend::node_engine::NodeEngine;
use rehearsal::process::{Cmd, ProcessLog};

const NODE_INIT: &str = r#"#!/bin/sh
# A node stand-in: runs the "game" container process and restarts it whenever it ends.
mkdir -p /run/cri /var/log
mkfifo /run/cri/restarted
n=0
while true; do
  sleep 3600 &
  echo $! > /run/cri/game.pid
  if [ "$n" -gt 0 ]; then
    echo "$n" > /run/cri/game.restarts
    # Blocks until the test reads it: the restart is observed, not timed.
    echo restarted > /run/cri/restarted
  fi
  wait $!
  n=$((n+1))
done
"#;

const CRICTL: &str = r#"#!/bin/sh
# crictl stand-in: `crictl stop ID` ends the container process with that ID.
[ "$1" = stop ] || { echo "crictl stand-in supports only: stop ID" >&2; exit 2; }
pid=$(cat "/run/cri/$2.pid") || { echo "no such container: $2" >&2; exit 1; }
kill "$pid"
echo "$2"
"#;

const CTR: &str = r#"#!/bin/sh
# ctr stand-in (no containerd in this image): records the import request and the archive.
for last; do :; done
{
  echo "argv: $*"
  sha256sum "$last"
  tar -tf "$last"
  tar -xOf "$last" manifest.json
  echo
} >> /var/log/ctr-imports.log
"#;

/// Fails (not skips) when no engine is configured: CI must provide one.
fn require_engine() {
    if std::env::var("DOCKER_HOST").is_err() {
        panic!(
            "DOCKER_HOST is not set: these tests need a real container engine; run `scripts/start-podman.sh` and export the DOCKER_HOST it prints"
        );
    }
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    )
}

/// A rootfs tar with busybox (+ its shared libraries) and the stand-in scripts.
async fn rootfs_tar(identity: &str) -> Vec<u8> {
    let busybox = Path::new("/usr/bin/busybox");
    let ldd = Cmd::new("ldd")
        .arg(busybox)
        .run_checked(&ProcessLog::default())
        .await
        .expect("ldd /usr/bin/busybox");
    let libs: Vec<String> = ldd
        .stdout
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
        .map(str::to_string)
        .collect();
    let applets = Cmd::new("/usr/bin/busybox")
        .arg("--list")
        .run_checked(&ProcessLog::default())
        .await
        .unwrap()
        .stdout;

    let mut tar = tar::Builder::new(Vec::new());
    let mut seen = std::collections::HashSet::new();
    let mut dir = |tar: &mut tar::Builder<Vec<u8>>, path: &str| {
        if !seen.insert(path.trim_end_matches('/').to_string()) {
            return;
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        h.set_cksum();
        tar.append_data(&mut h, path, std::io::empty()).unwrap();
    };
    for d in [
        "bin",
        "usr",
        "usr/local",
        "usr/local/bin",
        "tmp",
        "run",
        "var",
        "var/log",
        "etc",
        "proc",
        "sys",
        "dev",
        "www",
    ] {
        dir(&mut tar, d);
    }
    let file = |tar: &mut tar::Builder<Vec<u8>>, path: &str, bytes: &[u8], mode: u32| {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(mode);
        h.set_cksum();
        tar.append_data(&mut h, path.trim_start_matches('/'), bytes)
            .unwrap();
    };
    file(
        &mut tar,
        "bin/busybox",
        &std::fs::read(busybox).unwrap(),
        0o755,
    );
    for lib in &libs {
        let real = std::fs::canonicalize(lib).unwrap();
        let mut parents = String::new();
        for part in Path::new(lib).parent().unwrap().iter().skip(1) {
            parents.push_str(part.to_str().unwrap());
            parents.push('/');
            dir(&mut tar, &parents);
        }
        file(&mut tar, lib, &std::fs::read(real).unwrap(), 0o755);
    }
    let applets: std::collections::BTreeSet<&str> =
        applets.lines().filter(|a| *a != "busybox").collect();
    for applet in applets {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        h.set_mode(0o777);
        tar.append_link(&mut h, format!("bin/{applet}"), "busybox")
            .unwrap();
    }
    file(
        &mut tar,
        "usr/local/bin/node-init",
        NODE_INIT.as_bytes(),
        0o755,
    );
    file(&mut tar, "usr/local/bin/crictl", CRICTL.as_bytes(), 0o755);
    file(&mut tar, "usr/local/bin/ctr", CTR.as_bytes(), 0o755);
    file(&mut tar, "www/marker", b"world-marker=alpha-7\n", 0o644);
    // One layer per image: tests run in parallel and each removes its image when it ends; two
    // imports of the same bytes would share one layer, and podman then fails the import that
    // is still committing when the other test's cleanup deletes it ("layer not known").
    file(&mut tar, "etc/rehearsal-image", identity.as_bytes(), 0o644);
    tar.into_inner().unwrap()
}

/// Imports the rootfs as `repo:tag` through the engine API (`POST /images/create?fromSrc=-`).
async fn import_test_image(engine: &NodeEngine, repo: &str, tag: &str) {
    let options = CreateImageOptions {
        from_src: Some("-".into()),
        repo: Some(repo.into()),
        tag: Some(tag.into()),
        changes: vec!["ENV PATH=/usr/local/bin:/bin".into()],
        ..Default::default()
    };
    let mut stream = engine.docker().create_image(
        Some(options),
        Some(bollard::body_full(Bytes::from(
            rootfs_tar(&format!("{repo}:{tag} pid {}", std::process::id())).await,
        ))),
        None,
    );
    while let Some(item) = stream.next().await {
        item.expect("import rootfs");
    }
}

/// Removes the container and image when the test ends, also on panic.
struct Cleanup {
    engine: NodeEngine,
    containers: Vec<String>,
    images: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let engine = self.engine.clone();
        let containers = std::mem::take(&mut self.containers);
        let images = std::mem::take(&mut self.images);
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async move {
                for c in containers {
                    let _ = engine
                        .docker()
                        .remove_container(
                            &c,
                            Some(RemoveContainerOptionsBuilder::new().force(true).build()),
                        )
                        .await;
                }
                for i in images {
                    let _ = engine
                        .docker()
                        .remove_image(
                            &i,
                            Some(RemoveImageOptionsBuilder::new().force(true).build()),
                            None,
                        )
                        .await;
                }
            })
        });
    }
}

/// Starts a node-like container from `image`, labelled as a node of Kind cluster `cluster`.
async fn start_node(engine: &NodeEngine, image: &str, name: &str, cluster: &str) {
    engine
        .docker()
        .create_container(
            Some(CreateContainerOptionsBuilder::new().name(name).build()),
            ContainerCreateBody {
                image: Some(image.to_string()),
                cmd: Some(vec!["/usr/local/bin/node-init".into()]),
                env: Some(vec!["PATH=/usr/local/bin:/bin".into()]),
                labels: Some([("io.x-k8s.kind.cluster".to_string(), cluster.to_string())].into()),
                host_config: Some(HostConfig {
                    network_mode: Some("none".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .expect("create node container");
    engine
        .docker()
        .start_container(name, None)
        .await
        .expect("start node");
}

async fn exec_out(engine: &NodeEngine, c: &str, argv: &[&str]) -> String {
    engine
        .exec_checked(c, argv)
        .await
        .unwrap()
        .stdout
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_container_arch_exec_image_import_and_in_place_restart() {
    require_engine();
    let engine = NodeEngine::connect().await.expect("engine answers");
    // Podman's import ignores the tag parameter: the unique part goes into the repository.
    let repo = format!("rehearsal.local/{}", unique("test-node"));
    let repo = repo.as_str();
    let tag = "latest".to_string();
    let image = format!("{repo}:{tag}");
    let node = unique("rehearsal-node");
    let mut cleanup = Cleanup {
        engine: engine.clone(),
        containers: vec![],
        images: vec![image.clone()],
    };
    import_test_image(&engine, repo, &tag).await;

    start_node(&engine, &image, &node, &node).await;
    cleanup.containers.push(node.clone());

    // Discovery by the Kind cluster label, as the Kind backend finds its nodes.
    assert_eq!(
        engine
            .containers_with_label("io.x-k8s.kind.cluster", &node)
            .await
            .unwrap(),
        vec![node.clone()]
    );

    // Architecture as the node's kernel reports it.
    let arch = engine.node_arch(&node).await.unwrap();
    assert_eq!(arch, Arch::host());

    // Exec: output and exit code, and a failure carries stderr.
    let out = engine
        .exec(&node, &["sh", "-c", "echo hi; echo oops >&2; exit 4"])
        .await
        .unwrap();
    assert_eq!(
        (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(4), "hi\n", "oops\n")
    );
    let err = engine
        .exec_checked(&node, &["sh", "-c", "echo broken >&2; exit 1"])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("broken"), "{err}");

    // Save a single-platform archive of an image and import it into the node.
    let archive = engine
        .save_image(&image, &node, &arch)
        .await
        .expect("save image");
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&archive));
    engine
        .import_into_node(&node, "image-0.tar", archive, &arch)
        .await
        .expect("import into node");
    let log = exec_out(&engine, &node, &["cat", "/var/log/ctr-imports.log"]).await;
    assert!(log.contains(&format!("--platform linux/{arch}")), "{log}");
    assert!(log.contains("--namespace=k8s.io"), "{log}");
    assert!(log.contains(&digest), "archive digest differs: {log}");
    assert!(
        log.lines().any(|l| l.trim() == "manifest.json"),
        "not a docker-save archive: {log}"
    );
    // The staged archive is removed after the import.
    let staged = engine
        .exec(&node, &["test", "-e", "/tmp/rehearsal-images/image-0.tar"])
        .await
        .unwrap();
    assert_eq!(staged.exit_code, Some(1));

    // A wrong-arch request is refused before anything is saved.
    let other = Arch::normalize(if arch.as_str() == "amd64" {
        "arm64"
    } else {
        "amd64"
    });
    let err = engine
        .save_image(&image, &node, &other)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("--platform"), "{err}");

    // In-place restart: crictl stops the container process; the node's supervisor restarts it.
    let before = exec_out(&engine, &node, &["cat", "/run/cri/game.pid"]).await;
    engine
        .crictl_stop(&node, "game")
        .await
        .expect("crictl stop");
    // Reading the FIFO blocks until the supervisor has restarted the process (bounded).
    let signal = exec_out(
        &engine,
        &node,
        &["timeout", "30", "cat", "/run/cri/restarted"],
    )
    .await;
    assert_eq!(signal, "restarted");
    let after = exec_out(&engine, &node, &["cat", "/run/cri/game.pid"]).await;
    let restarts = exec_out(&engine, &node, &["cat", "/run/cri/game.restarts"]).await;
    assert_ne!(before, after, "the process was not replaced");
    assert_eq!(restarts, "1");
    // The node container itself is the same (the "pod" survived).
    let inspect = engine
        .docker()
        .inspect_container(&node, None)
        .await
        .unwrap();
    assert_eq!(inspect.state.and_then(|s| s.running), Some(true));
    drop(cleanup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn testcontainers_service_on_host_network_serves_the_marker() {
    require_engine();
    let engine = NodeEngine::connect().await.expect("engine answers");
    let repo = format!("rehearsal.local/{}", unique("test-httpd"));
    let repo = repo.as_str();
    let tag = "latest".to_string();
    let _cleanup = Cleanup {
        engine: engine.clone(),
        containers: vec![],
        images: vec![format!("{repo}:{tag}")],
    };
    import_test_image(&engine, repo, &tag).await;
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    // httpd daemonises; the container reports READY once it answers its own request.
    let script = format!(
        "httpd -p 127.0.0.1:{port} -h /www && until wget -q -O /dev/null http://127.0.0.1:{port}/marker; do usleep 20000; done; echo READY; exec sleep 3600"
    );
    let service = podman_support::HostService::start(&podman_support::HostServiceSpec {
        repository: repo.to_string(),
        tag: tag.clone(),
        cmd: vec!["sh".into(), "-c".into(), script.clone()],
        ready_line: "READY".into(),
        port,
    })
    .await
    .expect("start the service through testcontainers");
    let addr = service.addr();
    let outcome = rehearsal::probe::http_marker::probe(
        addr,
        "/marker",
        "world-marker=alpha-7",
        std::time::Duration::from_secs(10),
    )
    .await
    .expect("HTTP answer");
    assert!(outcome.ok, "{outcome:?}");
    let missing = rehearsal::probe::http_marker::probe(
        addr,
        "/marker",
        "world-marker=beta",
        std::time::Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert!(!missing.ok);
    let id = service.id().to_string();
    service.remove().await.unwrap();
    assert!(
        engine.docker().inspect_container(&id, None).await.is_err(),
        "container {id} left behind"
    );
}

/// A recording stand-in for `program` (it appends its argv to `<dir>/<program>-argv.log`).
fn recorder(dir: &Path, program: &str) -> std::path::PathBuf {
    let path = dir.join(program);
    let log = dir.join(format!("{program}-argv.log"));
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A `kind` stand-in that records its argv and writes the kubeconfig Kind would.
fn fake_kind(dir: &Path) -> std::path::PathBuf {
    let log = dir.join("kind-argv.log");
    let clusters = dir.join("kind-clusters");
    let script = format!(
        r#"#!/bin/sh
echo "$*" >> '{log}'
kubeconfig() {{
  name=""; kc=""
  while [ $# -gt 0 ]; do
    [ "$1" = --name ] && name="$2"
    [ "$1" = --kubeconfig ] && kc="$2"
    shift
  done
  cat > "$kc" <<EOF
apiVersion: v1
kind: Config
current-context: kind-$name
clusters:
- name: kind-$name
  cluster: {{server: "https://127.0.0.1:1"}}
users:
- name: kind-$name
  user: {{token: fake}}
contexts:
- name: kind-$name
  context: {{cluster: kind-$name, user: kind-$name}}
EOF
  echo "$name"
}}
case "$1 $2" in
  "get clusters") cat '{clusters}' 2>/dev/null; exit 0 ;;
  "create cluster") kubeconfig "$@" >> '{clusters}' ;;
  "export kubeconfig") kubeconfig "$@" > /dev/null ;;
  "delete cluster") : > '{clusters}' ;;
  "export logs") mkdir -p "$3" && echo "fake kind logs" > "$3/kind-version.txt" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"#,
        log = log.display(),
        clusters = clusters.display()
    );
    let path = dir.join("kind");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The recording kubectl in `dir` applied `fixtures/rest-server` and awaited its rollout, and
/// nothing else, on context `kind-<cluster>` of `kubeconfig`.
fn assert_rest_server_installed(dir: &Path, kubeconfig: &Path, cluster: &str) {
    let kubectl_argv = std::fs::read_to_string(dir.join("kubectl-argv.log")).unwrap();
    let rest = workspace()
        .join("fixtures/rest-server")
        .display()
        .to_string();
    let pinned = format!(
        "--kubeconfig {} --context kind-{cluster}",
        kubeconfig.display()
    );
    assert_eq!(
        kubectl_argv.lines().collect::<Vec<_>>(),
        [
            format!("{pinned} apply --server-side -f {rest}"),
            format!(
                "{pinned} --namespace rehearsal-repos rollout status deployment/rest-server --timeout 300s"
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kind_backend_flow_with_a_recording_kind_and_a_real_node_container() {
    use rehearsal::backend::Backend;
    use rehearsal::backend::kind::{Kind, KindOptions, Provenance};
    require_engine();
    let engine = NodeEngine::connect().await.expect("engine answers");
    let dir = tempfile::tempdir().unwrap();
    let kind = fake_kind(dir.path());
    let cluster = unique("rh");
    let repo = format!("rehearsal.local/{}", unique("test-kind-node"));
    let image = format!("{repo}:latest");
    let node = format!("{cluster}-control-plane");
    let _cleanup = Cleanup {
        engine: engine.clone(),
        containers: vec![node.clone()],
        images: vec![image.clone()],
    };
    import_test_image(&engine, &repo, "latest").await;
    start_node(&engine, &image, &node, &cluster).await;

    let mut options = KindOptions::new(&cluster, dir.path().join("state"));
    options.kind_program = kind.display().to_string();
    options.backup_repo_dir = Some(dir.path().join("backups"));
    // Gameplane's chart is installed through a recording `helm` once the cluster is up.
    let helm_log = dir.path().join("helm-argv.log");
    let helm = dir.path().join("helm");
    std::fs::write(
        &helm,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", helm_log.display()),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&helm, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut first = options.clone();
    first.deploy = rehearsal::deploy::kind::KindDeploy::Helm {
        config: serde_yaml::from_str(
            "chart: /src/gameplane/charts/gameplane\nvalues: [values-kind.yaml]\n",
        )
        .unwrap(),
        helm_program: helm.display().to_string(),
        rest_server: rehearsal::deploy::reference_operator::RestServerInstall {
            kubectl: Some(recorder(dir.path(), "kubectl")),
            ..rehearsal::deploy::reference_operator::RestServerInstall::for_cases(&workspace())
        },
    }
    .shared();
    let backend = Kind::up(first).await.expect("kind up");
    let helm_argv = std::fs::read_to_string(&helm_log).unwrap();
    assert_eq!(
        helm_argv.trim(),
        format!(
            "upgrade --install gameplane /src/gameplane/charts/gameplane --kubeconfig {} --kube-context kind-{cluster} --namespace gameplane-system --create-namespace --wait --timeout 300s --values values-kind.yaml",
            options.kubeconfig_path().display()
        )
    );
    // Then the restic REST server the cases' repositories live on, as on the operator's path.
    assert_rest_server_installed(dir.path(), &options.kubeconfig_path(), &cluster);
    assert_eq!(backend.provenance(), Provenance::Created);
    assert_eq!(backend.kubeconfig().1, format!("kind-{cluster}"));
    let written = std::fs::read_to_string(options.config_path()).unwrap();
    assert!(
        written.contains("kindest/node:v1.33.1@sha256:"),
        "{written}"
    );

    // Images go to every node of the cluster as single-platform archives.
    assert_eq!(backend.nodes().await.unwrap(), vec![node.clone()]);
    backend
        .load_images(std::slice::from_ref(&image))
        .await
        .expect("load images");
    let imports = exec_out(&engine, &node, &["cat", "/var/log/ctr-imports.log"]).await;
    assert!(
        imports.contains(&format!("--platform linux/{}", Arch::host())),
        "{imports}"
    );

    let logs = dir.path().join("bundle/kind-logs");
    backend.export_logs(&logs).await.expect("export logs");
    assert!(logs.join("kind-version.txt").exists());

    // A second `up` of the same name reuses the cluster.
    let again = Kind::up(options.clone()).await.expect("kind up again");
    assert_eq!(again.provenance(), Provenance::Reused);
    Box::new(again).teardown(true).await.unwrap();
    let records = backend.process_records();
    Box::new(backend).teardown(false).await.unwrap();

    let argv = std::fs::read_to_string(dir.path().join("kind-argv.log")).unwrap();
    let verbs: Vec<String> = argv
        .lines()
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        verbs,
        [
            "get clusters",
            "create cluster",
            "export logs",
            "get clusters",
            "export kubeconfig",
            "delete cluster"
        ],
        "{argv}"
    );
    assert!(!argv.contains("--retain"), "{argv}");
    assert!(records.iter().all(|r| r.success()), "{records:?}");
}

/// Defect: every scenario test process ran `kind get clusters` and `kind export kubeconfig`
/// into the one kubeconfig file the others were reading (kind's lock is create-exclusive and
/// does not retry), so concurrent cases failed at random. Now the setup script exports once
/// and the test processes — several at a time here — only read that kubeconfig: `kind` is not
/// run again, and an attached process never deletes the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenario_processes_attach_to_kind_without_running_kind() {
    use rehearsal::run::{self, Cluster};
    require_engine();
    let dir = tempfile::tempdir().unwrap();
    let kind = fake_kind(dir.path());
    let cluster = unique("rh");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let kubeconfig = state.join("rehearsal.kubeconfig");
    // The setup script's one export.
    let setup = std::process::Command::new(&kind)
        .args(["export", "kubeconfig", "--name", &cluster, "--kubeconfig"])
        .arg(&kubeconfig)
        .status()
        .unwrap();
    assert!(setup.success());

    let context = format!("kind-{cluster}");
    let vars = [
        ("REHEARSAL_CLUSTER", "kind".to_string()),
        ("REHEARSAL_KIND_CLUSTER", cluster.clone()),
        ("REHEARSAL_KIND_STATE", state.display().to_string()),
        ("REHEARSAL_KUBECONFIG", kubeconfig.display().to_string()),
        ("REHEARSAL_CONTEXT", context.clone()),
    ];
    let mut target =
        Cluster::from_nextest_env(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()))
            .unwrap();
    // Were `kind` run, the recording stand-in would log it.
    if let Cluster::Kind(options) = &mut target {
        options.kind_program = kind.display().to_string();
    }
    let backends =
        futures::future::join_all((0..4).map(|_| run::start_backend(&target, None))).await;
    for backend in backends {
        let backend = backend.expect("attach");
        assert_eq!(
            backend.kubeconfig(),
            (kubeconfig.as_path(), context.as_str())
        );
        backend.teardown(false).await.unwrap();
    }
    let argv = std::fs::read_to_string(dir.path().join("kind-argv.log")).unwrap();
    assert_eq!(
        argv.lines().collect::<Vec<_>>(),
        [format!(
            "export kubeconfig --name {cluster} --kubeconfig {}",
            kubeconfig.display()
        )],
        "only the setup script's export may run kind"
    );
}

/// The workspace root (the CRDs and the operator's manifests are read from the checkout).
fn workspace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Defect: Kind got only the operator's image and its manifests, not the CRDs nor the images
/// the cases use. Now every image of the install goes into the node (as a single-platform
/// archive, through the node's `ctr`), then the CRDs are applied and awaited, then the
/// operator is applied and its rollout awaited — in that order, context pinned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kind_with_the_reference_operator_loads_every_image_then_installs_crds_and_operator() {
    use rehearsal::backend::Backend;
    use rehearsal::backend::kind::{Kind, KindOptions};
    use rehearsal::deploy::kind::KindDeploy;
    use rehearsal::deploy::reference_operator::KindInstall;
    require_engine();
    let engine = NodeEngine::connect().await.expect("engine answers");
    let dir = tempfile::tempdir().unwrap();
    let kind = fake_kind(dir.path());
    let kubectl = recorder(dir.path(), "kubectl");
    let cluster = unique("rh");
    let node = format!("{cluster}-control-plane");
    // Unique names: the shared engine may hold the real rehearsal.local images of others.
    // (Podman's import ignores the tag: the unique part is in the repository.)
    let images: Vec<String> = ["game", "agent"]
        .iter()
        .map(|what| format!("rehearsal.local/{}:latest", unique(&format!("test-{what}"))))
        .collect();
    let _cleanup = Cleanup {
        engine: engine.clone(),
        containers: vec![node.clone()],
        images: images.clone(),
    };
    for image in &images {
        let (repo, tag) = image.split_once(':').unwrap();
        import_test_image(&engine, repo, tag).await;
    }
    start_node(&engine, &images[0], &node, &cluster).await;

    let mut options = KindOptions::new(&cluster, dir.path().join("state"));
    options.kind_program = kind.display().to_string();
    let mut install = KindInstall::for_cases(&workspace());
    install.images = images.clone();
    install.kubectl = Some(kubectl.clone());
    options.deploy = KindDeploy::ReferenceOperator(install.clone()).shared();
    let backend = Kind::up(options.clone())
        .await
        .expect("kind up with the operator");

    let imports = exec_out(&engine, &node, &["cat", "/var/log/ctr-imports.log"]).await;
    // One archive per image, each tagged as the image (its manifest.json's RepoTags).
    assert_eq!(imports.matches("argv: ").count(), images.len(), "{imports}");
    for image in &images {
        assert!(
            imports.contains(&format!("\"{image}\"")),
            "{image} was not imported into the node: {imports}"
        );
    }
    let context = format!("kind-{cluster}");
    let kubeconfig = options.kubeconfig_path();
    let ran: Vec<String> = std::fs::read_to_string(dir.path().join("kubectl-argv.log"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let expected: Vec<String> = install
        .kubectl_argvs(&kubectl, &kubeconfig, &context)
        .into_iter()
        .map(|argv| argv[1..].join(" "))
        .collect();
    assert_eq!(ran, expected);
    let crds = workspace().join("fixtures/crds").display().to_string();
    assert!(ran[0].contains(&format!(
        "--context {context} apply --server-side -f {crds}"
    )));
    assert!(ran[1].contains("wait --for condition=established"));
    assert!(ran[2].ends_with("images/reference-operator/deploy"));
    assert!(ran[3].contains("rollout status deployment/reference-operator"));
    Box::new(backend).teardown(false).await.unwrap();
}

/// `rehearse run --cluster kind` end to end with a stand-in `kind` (whose kubeconfig points at
/// no API server) and a stand-in kubectl: it installs the CRDs and the operator, then runs the
/// case to a verdict — failed, because the stand-in cluster has no API server — and writes the
/// bundle and report. (The image loads of the real names are covered above with unique
/// names; this cluster has no node container, so there is nothing to load into.)
#[test]
fn rehearse_run_on_kind_installs_the_operator_then_runs_the_case() {
    require_engine();
    let dir = tempfile::tempdir().unwrap();
    let kind = fake_kind(dir.path());
    let kubectl = recorder(dir.path(), "kubectl");
    let reports = dir.path().join("reports");
    let cluster = unique("rh");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(["run", "--cluster", "kind", "--kind-name", &cluster])
        .args(["--case", "unpullable_candidate", "--reports"])
        .arg(&reports)
        .current_dir(workspace())
        .env("REHEARSAL_KIND", &kind)
        .env("REHEARSAL_KUBECTL", &kubectl)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("1 case(s) failed: unpullable_candidate") && stderr.lines().count() == 1,
        "{stderr}"
    );
    let kind_log = std::fs::read_to_string(dir.path().join("kind-argv.log")).unwrap();
    assert!(
        kind_log.lines().any(|l| l.starts_with("create cluster")),
        "{kind_log}"
    );
    let kubectl_log = std::fs::read_to_string(dir.path().join("kubectl-argv.log")).unwrap();
    let verbs: Vec<&str> = kubectl_log
        .lines()
        .map(|l| {
            l.split(&format!("--context kind-{cluster} "))
                .nth(1)
                .unwrap_or(l)
        })
        .collect();
    assert_eq!(
        verbs,
        [
            "apply --server-side -f fixtures/crds",
            "wait --for condition=established --timeout 300s -f fixtures/crds",
            "apply --server-side -f images/reference-operator/deploy",
            "--namespace gameplane-system rollout status deployment/reference-operator --timeout 300s",
            "apply --server-side -f fixtures/rest-server",
            "--namespace rehearsal-repos rollout status deployment/rest-server --timeout 300s",
        ]
    );
    // The stand-in cluster cannot be asked which operator it runs: the bundle says so.
    let summary = std::fs::read_to_string(
        Path::new(
            stdout
                .lines()
                .find_map(|l| l.strip_prefix("bundle: "))
                .unwrap_or_default(),
        )
        .join("bundle.json"),
    )
    .unwrap_or_default();
    assert!(summary.contains("not read from the cluster"), "{summary}");
    // The case ran after the install and reached a verdict in its bundle.
    let bundle = stdout
        .lines()
        .find_map(|l| l.strip_prefix("bundle: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let loaded = rehearsal::report::load(Path::new(bundle)).expect("the bundle loads");
    let case = &loaded.summary.cases[0];
    assert_eq!(case.name, "unpullable_candidate");
    assert_eq!(case.verdict, rehearsal::evidence::bundle::Verdict::Failed);
    assert!(
        case.reason.as_deref().unwrap_or("").contains("namespace"),
        "{case:?}"
    );
}

/// Defect: a case's repository was deleted on the machine running the harness, while on Kind it
/// lives inside the node. The Kind backend removes it inside the node and leaves the host's
/// path of the same name alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kind_removes_a_case_repository_inside_the_node_not_on_the_host() {
    use rehearsal::backend::Backend;
    use rehearsal::backend::kind::{Kind, KindOptions};
    require_engine();
    let engine = NodeEngine::connect().await.expect("engine answers");
    let dir = tempfile::tempdir().unwrap();
    let cluster = unique("rh");
    let repo = format!("rehearsal.local/{}", unique("test-repo-node"));
    let image = format!("{repo}:latest");
    let node = format!("{cluster}-control-plane");
    let _cleanup = Cleanup {
        engine: engine.clone(),
        containers: vec![node.clone()],
        images: vec![image.clone()],
    };
    import_test_image(&engine, &repo, "latest").await;
    start_node(&engine, &image, &node, &cluster).await;
    let kind = fake_kind(dir.path());
    let kubeconfig = dir.path().join("rehearsal.kubeconfig");
    let export = std::process::Command::new(&kind)
        .args(["export", "kubeconfig", "--name", &cluster, "--kubeconfig"])
        .arg(&kubeconfig)
        .status()
        .unwrap();
    assert!(export.success());
    let mut options = KindOptions::new(&cluster, dir.path());
    options.exported_kubeconfig = Some(kubeconfig);
    let backend = Kind::attach(options).await.expect("attach");

    let name = unique("rh-case");
    let path = format!("{}/{name}", rehearsal::backend::kind::NODE_BACKUP_REPO);
    exec_out(
        &engine,
        &node,
        &["mkdir", "-p", &format!("{path}/snapshots")],
    )
    .await;
    // The host's path of the same name (what the old cleanup removed) must survive.
    let host_twin = dir.path().join("host-twin");
    std::fs::create_dir_all(&host_twin).unwrap();
    backend
        .remove_repository(&name)
        .await
        .expect("remove in the node");
    let gone = engine.exec(&node, &["test", "-e", &path]).await.unwrap();
    assert_eq!(gone.exit_code, Some(1), "{path} still exists in the node");
    // The repositories' root stays (other cases' repositories live there).
    let root = engine
        .exec(
            &node,
            &["test", "-d", rehearsal::backend::kind::NODE_BACKUP_REPO],
        )
        .await
        .unwrap();
    assert_eq!(root.exit_code, Some(0));
    assert!(host_twin.is_dir());
    for bad in ["/", "..", "a/b", ""] {
        assert!(backend.remove_repository(bad).await.is_err(), "{bad:?}");
    }
}

/// Defects 2 and 9: on Kind the digest-pinned candidates are pulled from a local registry
/// (kind's local-registry pattern), not loaded with `kind load`. With `REHEARSAL_REGISTRY` the
/// Kind backend writes the containerd `config_path` patch into the cluster config, connects the
/// registry container to the Kind network, gives every node the `hosts.toml` that sends
/// `rehearsal.local/…` to it, reads the registry's manifest digest (the one skopeo reads, not
/// the image id) for the cases to pin, and checks the images are in the registry instead of
/// importing archives — a missing one is named with the command that pushes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::too_many_lines,
    reason = "one Kind cluster scenario: registry, network, node configuration and digest checks share the cluster and read in order"
)]
async fn kind_pulls_from_a_local_registry_on_its_network_and_pins_the_manifest_digest() {
    use rehearsal::backend::Backend;
    use rehearsal::backend::kind::{Kind, KindOptions, KindRegistry};
    use rehearsal::registry::{self, LocalRegistry};
    require_engine();
    let engine = NodeEngine::connect().await.expect("engine answers");
    let dir = tempfile::tempdir().unwrap();
    let kind = fake_kind(dir.path());
    let cluster = unique("rh");
    let node = format!("{cluster}-control-plane");
    let repo = format!("rehearsal.local/{}", unique("test-pinned"));
    let image = format!("{repo}:latest");
    let registry_container = unique("rh-registry");
    let network = unique("rh-kind-net");
    engine
        .docker()
        .create_network(bollard::models::NetworkCreateRequest {
            name: network.clone(),
            ..Default::default()
        })
        .await
        .expect("create the kind network");
    // Removed after the containers on it (declared before their cleanup).
    let _network = Network(engine.clone(), network.clone());
    struct Network(NodeEngine, String);
    impl Drop for Network {
        fn drop(&mut self) {
            let (engine, name) = (self.0.clone(), self.1.clone());
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(async move {
                    let _ = engine.docker().remove_network(&name).await;
                })
            });
        }
    }
    let _cleanup = Cleanup {
        engine: engine.clone(),
        containers: vec![node.clone(), registry_container.clone()],
        images: vec![image.clone()],
    };
    import_test_image(&engine, &repo, "latest").await;
    start_node(&engine, &image, &node, &cluster).await;
    // The registry's container (a stand-in process; the registry itself runs on the host
    // below) on the engine's default network, as `docker run -p` puts it.
    engine
        .docker()
        .create_container(
            Some(
                CreateContainerOptionsBuilder::new()
                    .name(&registry_container)
                    .build(),
            ),
            ContainerCreateBody {
                image: Some(image.clone()),
                cmd: Some(vec!["sleep".into(), "3600".into()]),
                ..Default::default()
            },
        )
        .await
        .expect("create the registry container");
    engine
        .docker()
        .start_container(&registry_container, None)
        .await
        .expect("start the registry container");
    // A real registry holding the image, pushed the way scripts/build-images.sh pushes.
    let reg = LocalRegistry::start(&dir.path().join("registry"), &ProcessLog::default())
        .await
        .expect("docker-registry starts");
    let addr = reg.addr().to_string();
    let (path, _) = registry::registry_path(&image).unwrap();
    let pushed = std::process::Command::new("podman")
        .args(["push", "-q", "--tls-verify=false", &image])
        .arg(format!("docker://{addr}/{path}:latest"))
        .output()
        .unwrap();
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let skopeo = std::process::Command::new("skopeo")
        .args(["inspect", "--tls-verify=false", "--format", "{{.Digest}}"])
        .arg(format!("docker://{addr}/{path}:latest"))
        .output()
        .unwrap();
    assert!(skopeo.status.success());
    let skopeo_digest = String::from_utf8_lossy(&skopeo.stdout).trim().to_string();

    let mut options = KindOptions::new(&cluster, dir.path().join("state"));
    options.kind_program = kind.display().to_string();
    let endpoint = format!("http://{registry_container}:5000");
    options.registry = Some(Box::new(KindRegistry {
        host_addr: addr.clone(),
        container: Some(registry_container.clone()),
        node_endpoint: endpoint.clone(),
        network: network.clone(),
    }));
    let backend = Kind::up(options.clone()).await.expect("kind up");

    // The cluster config sets containerd's config_path (kind's documented patch).
    let config = std::fs::read_to_string(options.config_path()).unwrap();
    assert!(
        config.contains("containerdConfigPatches:")
            && config.contains("config_path = \"/etc/containerd/certs.d\""),
        "{config}"
    );
    // The registry container joined the Kind network; the node has the mirror.
    let networks = engine
        .container_networks(&registry_container)
        .await
        .unwrap();
    assert!(networks.contains(&network), "{networks:?}");
    let hosts = exec_out(
        &engine,
        &node,
        &["cat", "/etc/containerd/certs.d/rehearsal.local/hosts.toml"],
    )
    .await;
    assert_eq!(hosts, registry::hosts_toml(&endpoint).trim());

    // The digest a case pins is the registry's manifest digest.
    let digest = backend.image_digest(&image).await.unwrap();
    assert_eq!(digest.as_deref(), Some(skopeo_digest.as_str()));
    let id = engine.docker().inspect_image(&image).await.unwrap().id;
    assert_ne!(digest, id, "the manifest digest is not the image id");

    // Images are checked in the registry, not imported into the node.
    backend
        .load_images(std::slice::from_ref(&image))
        .await
        .expect("the image is in the registry");
    let imports = engine
        .exec(&node, &["test", "-e", "/var/log/ctr-imports.log"])
        .await
        .unwrap();
    assert_eq!(imports.exit_code, Some(1), "an archive was imported");
    let missing = format!("rehearsal.local/{}:1.0", unique("never-pushed"));
    let err = backend
        .load_images(std::slice::from_ref(&missing))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&missing)
            && err.contains(&format!("scripts/build-images.sh --push {addr}"))
            && !err.contains('\n'),
        "{err}"
    );
    let err = backend
        .image_digest(&missing)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("build-images.sh"), "{err}");

    // A reused cluster is configured again (idempotent: already connected is fine).
    let again = Kind::up(options.clone()).await.expect("kind up again");
    Box::new(again).teardown(true).await.unwrap();
    Box::new(backend).teardown(false).await.unwrap();
    reg.stop().await;
}

/// Defect: on the Gameplane chart path `rehearse cluster up --kind --helm-chart …` installed
/// the chart only, and the workflow applied the REST server with raw kubectl. Now the command
/// the workflow runs installs the chart, then the restic REST server (from the checkout in the
/// working directory) and waits for its rollout, in that order: one recording `helm` and one
/// recording kubectl write into the same log.
#[test]
fn cluster_up_with_the_chart_installs_the_rest_server_after_it() {
    require_engine();
    let dir = tempfile::tempdir().unwrap();
    let kind = fake_kind(dir.path());
    let log = dir.path().join("deploy-argv.log");
    let stand_in = |program: &str| {
        let path = dir.path().join(program);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{program} $*\" >> '{}'\n", log.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    };
    let (helm, kubectl) = (stand_in("helm"), stand_in("kubectl"));
    let cluster = unique("rh");
    let state = dir.path().join("state");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(["cluster", "up", "--kind", "--name", &cluster, "--state-dir"])
        .arg(&state)
        .args(["--helm-chart", "/src/gameplane/charts/gameplane"])
        .args(["--gameplane-registry", "rehearsal.local/gameplane-test"])
        .args(["--gameplane-tag", "rehearsal-0123456789ab"])
        .args([
            "--gameplane-agent-image",
            "rehearsal.local/gameplane-test/agent:rehearsal-0123456789ab",
        ])
        .current_dir(workspace())
        .env("REHEARSAL_KIND", &kind)
        .env("REHEARSAL_HELM", &helm)
        .env("REHEARSAL_KUBECTL", &kubectl)
        .env_remove("REHEARSAL_REGISTRY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let ran = std::fs::read_to_string(&log).unwrap();
    let context = format!("--context kind-{cluster} ");
    let verbs: Vec<String> = ran
        .lines()
        .map(|l| {
            let program = l.split(' ').next().unwrap();
            let rest = l
                .split(&context)
                .nth(1)
                .or_else(|| l.split(&format!("--kube-context kind-{cluster} ")).nth(1))
                .unwrap_or(l);
            format!("{program}: {rest}")
        })
        .collect();
    assert_eq!(verbs.len(), 3, "{ran}");
    assert!(
        verbs[0].starts_with("helm: --namespace gameplane-system --create-namespace --wait")
            && ran.contains("upgrade --install gameplane /src/gameplane/charts/gameplane ")
            && verbs[0].contains("--set-string image.tag=rehearsal-0123456789ab"),
        "{ran}"
    );
    assert_eq!(
        verbs[1..],
        [
            "kubectl: apply --server-side -f fixtures/rest-server",
            "kubectl: --namespace rehearsal-repos rollout status deployment/rest-server --timeout 300s",
        ],
        "{ran}"
    );
}

/// `rehearse run --cluster kind` with a registry that lacks the cases' images stops before
/// installing anything, in one line naming the missing images and the command that pushes
/// them (rather than letting every case fail later with ErrImagePull).
#[test]
fn rehearse_run_on_kind_refuses_a_registry_without_the_cases_images() {
    require_engine();
    let dir = tempfile::tempdir().unwrap();
    let kind = fake_kind(dir.path());
    let kubectl = recorder(dir.path(), "kubectl");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let reg = runtime
        .block_on(rehearsal::registry::LocalRegistry::start(
            &dir.path().join("registry"),
            &ProcessLog::default(),
        ))
        .expect("docker-registry starts");
    let addr = reg.addr().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rehearse"))
        .args(["run", "--cluster", "kind", "--kind-name", &unique("rh")])
        .args(["--case", "unpullable_candidate", "--reports"])
        .arg(dir.path().join("reports"))
        .current_dir(workspace())
        .env("REHEARSAL_KIND", &kind)
        .env("REHEARSAL_KUBECTL", &kubectl)
        .env("REHEARSAL_REGISTRY", &addr)
        // Nothing to connect: the registry runs on the host here.
        .env("REHEARSAL_REGISTRY_CONTAINER", "")
        .output()
        .unwrap();
    runtime.block_on(reg.stop());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    for image in rehearsal::deploy::images::for_cases() {
        assert!(stderr.contains(&image), "{image} not named: {stderr}");
    }
    assert!(
        stderr.contains(&format!("scripts/build-images.sh --push {addr}")),
        "{stderr}"
    );
    // Nothing was installed.
    assert!(!dir.path().join("kubectl-argv.log").exists());
}
