//! `rehearse qualify --cluster existing` as a user runs it: a fleet set up by hand through
//! kube-rs (a GameTemplate with digest-pinned versions, its own RCON password Secret, two
//! GameServers and a backup repository Secret — no fixture helpers, no fixture world markers) on
//! `rehearse cluster up --embedded`, then the real binary, every candidate twice in a row in the
//! same namespace: an unpullable one (halted at the image gate, the reason printed), a
//! compatible one (promoted, its report shows every gate), an HTTP-only one (halted at the join
//! gate), a restore-required one (promoted with rollback evidence: every world claim held
//! exactly the snapshot's digest again); then a downgrade that cannot read the migrated worlds
//! and a fleet member that does not exist (refused at the preflight). Every object a run creates
//! is gone afterwards, `--keep` keeps and names them, the next run removes what a kept run left,
//! and a name held by an object the harness did not make is refused in one line.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gameplane_api::gameserver::GameServer;
use gameplane_api::gametemplate::GameTemplate;
use gameplane_api::restore::Restore;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret};
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::json;

const REHEARSE: &str = env!("CARGO_BIN_EXE_rehearse");
const CONTEXT: &str = "rehearsal-embedded";
const NS: &str = "games";
const TEMPLATE: &str = "minecraft-qualify";
const BOUND: Duration = Duration::from_secs(120);
const IMAGE_GATE: &str = "pod runs the pinned image";
const JOIN_GATE: &str = "real Minecraft join reaches play";
const SAVE_GATE: &str = "a save succeeds";
const READ_BACK_GATE: &str = "world data reads back (digests before and after)";
const RUN_LABEL: &str = "rehearsal.local/qualify-run";
const REPO: &str = "rehearsal.local/fixture-game";

/// `rehearse cluster up --embedded` in the background; SIGTERM (then, after a bound, SIGKILL)
/// when dropped — also when the test panics — so the cluster and its operator always end.
struct ClusterUp {
    child: Option<Child>,
    /// The restic REST server the cluster serves repositories on (`rest:http://127.0.0.1:PORT`).
    repo_base: String,
}

impl ClusterUp {
    fn start(kubeconfig: &Path, state: &Path) -> Self {
        let mut child = Command::new(REHEARSE)
            .args(["cluster", "up", "--embedded", "--kubeconfig"])
            .arg(kubeconfig)
            .arg("--state-dir")
            .arg(state)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start rehearse cluster up");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut guard = Self {
            child: Some(child),
            repo_base: String::new(),
        };
        let (tx, rx) = mpsc::channel();
        // Keeps draining stdout after the first line, so the server never blocks on it.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        loop {
            match rx.recv_timeout(BOUND) {
                Ok(line) if line.contains("embedded cluster up") => {
                    guard.repo_base = line
                        .split("restic repositories ")
                        .nth(1)
                        .and_then(|rest| rest.split("/<name>").next())
                        .unwrap_or_else(|| panic!("no repository base in {line:?}"))
                        .to_string();
                    return guard;
                }
                Ok(_) => continue,
                Err(e) => panic!("no `embedded cluster up` line within {BOUND:?}: {e}"),
            }
        }
    }
}

impl Drop for ClusterUp {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        if rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = rx.recv_timeout(Duration::from_secs(10));
        }
    }
}

fn credential(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/credentials")
        .join(name);
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

fn from_json<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

/// Reads the digest each tag resolves to as the node reports it (`imageID`), by running the
/// images once — what a user does with `kubectl run` to pin a version.
async fn digests(client: &kube::Client, tags: &[&str]) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let containers: Vec<_> = tags
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"name": format!("v{i}"), "image": format!("{REPO}:{t}"), "args": ["--help"]}))
        .collect();
    let pod: Pod = from_json(json!({
        "metadata": {"name": "resolve-digests"},
        "spec": {"restartPolicy": "Never", "containers": containers},
    }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let done = tokio::time::timeout(
        BOUND,
        await_condition(pods.clone(), "resolve-digests", |p: Option<&Pod>| {
            p.and_then(|p| p.status.as_ref()?.phase.clone()).as_deref() == Some("Succeeded")
        }),
    )
    .await
    .expect("the digest pod finishes")
    .unwrap()
    .unwrap();
    pods.delete("resolve-digests", &Default::default())
        .await
        .unwrap();
    let statuses = done.status.unwrap().container_statuses.unwrap();
    (0..tags.len())
        .map(|i| {
            let id = &statuses
                .iter()
                .find(|c| c.name == format!("v{i}"))
                .unwrap()
                .image_id;
            let digest = id.rsplit_once('@').expect("imageID with a digest").1;
            format!("{REPO}@{digest}")
        })
        .collect()
}

async fn set_up_fleet(client: &kube::Client, repo: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": NS}})),
        )
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    for (name, data) in [
        // The fleet's own password, not the fixture's: qualify must read it from the Secret the
        // template names.
        ("rcon", json!({"password": "hand-made-fleet-rcon"})),
        (
            "restic-repo",
            json!({"repo": repo, "password": credential("restic-password")}),
        ),
    ] {
        let secret: Secret = from_json(json!({"metadata": {"name": name}, "stringData": data}));
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    let pinned = digests(client, &["1.0", "1.1-compat", "http-only", "2.0-format"]).await;
    let version = |id: &str, image: &str, default: bool| {
        json!({"id": id, "displayName": format!("Minecraft {id}"), "image": image,
               "default": default, "gameVersion": "26.1"})
    };
    let template: GameTemplate = from_json(json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "GameTemplate",
        "metadata": {"name": TEMPLATE},
        "spec": {
            "displayName": "Minecraft (hand-made fleet)",
            "game": "minecraft-java",
            "version": "1.0",
            "image": pinned[0],
            "versions": [
                version("1.0", &pinned[0], true),
                version("1.1-compat", &pinned[1], false),
                version("http-only", &pinned[2], false),
                version("2.0-format", &pinned[3], false),
                version("unpullable", &format!("{REPO}@sha256:{}", "0".repeat(61) + "bad"), false),
                // Pinned by tag only: a qualification of it is refused at the preflight.
                version("by-tag", &format!("{REPO}:1.1-compat"), false),
            ],
            "env": [
                {"name": "FIXTURE_EXTRA_WORLDS", "value": "nether=/worlds/nether"},
                {"name": "FIXTURE_MODS_DIR", "value": "/mods"},
            ],
            "ports": [{"name": "minecraft", "containerPort": 25565, "protocol": "TCP"}],
            "rcon": {"protocol": "source", "port": 25575,
                     "passwordSecretRef": {"name": "rcon", "key": "password"}},
            "capabilities": {"quiesce": {"quiesce": ["save-off", "save-all flush"],
                                         "unquiesce": ["save-on"]}},
            "agent": {"image": "rehearsal.local/fixture-agent:1.0"},
        },
    }));
    Api::<GameTemplate>::all(client.clone())
        .create(&PostParams::default(), &template)
        .await
        .unwrap();
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    for name in ["survival", "creative"] {
        let gs: GameServer = from_json(json!({
            "apiVersion": "gameplane.local/v1alpha1", "kind": "GameServer",
            "metadata": {"name": name},
            "spec": {
                "templateRef": {"name": TEMPLATE},
                "version": "1.0",
                "storage": {"size": "1Gi",
                            "extra": [{"name": "nether", "mountPath": "/worlds/nether", "size": "1Gi"}]},
            },
        }));
        servers.create(&PostParams::default(), &gs).await.unwrap();
    }
    for name in ["survival", "creative"] {
        tokio::time::timeout(
            BOUND,
            await_condition(servers.clone(), name, |gs: Option<&GameServer>| {
                gs.and_then(|g| g.status.as_ref()?.phase)
                    .is_some_and(|p| p.as_str() == "Running")
            }),
        )
        .await
        .unwrap_or_else(|_| panic!("GameServer {NS}/{name} Running within {BOUND:?}"))
        .unwrap();
    }
}

fn qualify(kubeconfig: &Path, reports: &Path, candidate: &str, extra: &[&str]) -> Output {
    qualify_as(
        kubeconfig,
        reports,
        candidate,
        &[extra, &["--operator", "reference-operator@embedded-test"]].concat(),
    )
}

fn qualify_as(kubeconfig: &Path, reports: &Path, candidate: &str, extra: &[&str]) -> Output {
    Command::new(REHEARSE)
        .args(["qualify", "--cluster", "existing", "--kubeconfig"])
        .arg(kubeconfig)
        .args([
            "--context",
            CONTEXT,
            "--namespace",
            NS,
            "--template",
            TEMPLATE,
        ])
        .args(["--source", "survival"])
        // The whole fleet unless the caller names the members (`--fleet` adds up).
        .args(if extra.contains(&"--fleet") {
            &[][..]
        } else {
            &["--fleet", "survival,creative"][..]
        })
        .args(["--candidate", candidate, "--reports"])
        .arg(reports)
        .args(extra)
        .output()
        .expect("run rehearse qualify")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Names of the objects in the namespace that carry the run label, by kind.
async fn labelled(client: &kube::Client) -> Vec<String> {
    let lp = ListParams::default().labels(RUN_LABEL);
    let mut out = Vec::new();
    for gs in Api::<GameServer>::namespaced(client.clone(), NS)
        .list(&lp)
        .await
        .unwrap()
    {
        out.push(format!("GameServer {}", gs.metadata.name.unwrap()));
    }
    for b in Api::<gameplane_api::backup::Backup>::namespaced(client.clone(), NS)
        .list(&lp)
        .await
        .unwrap()
    {
        out.push(format!("Backup {}", b.metadata.name.unwrap()));
    }
    for r in Api::<Restore>::namespaced(client.clone(), NS)
        .list(&lp)
        .await
        .unwrap()
    {
        out.push(format!("Restore {}", r.metadata.name.unwrap()));
    }
    for p in Api::<Pod>::namespaced(client.clone(), NS)
        .list(&lp)
        .await
        .unwrap()
    {
        out.push(format!("Pod {}", p.metadata.name.unwrap()));
    }
    out
}

/// The tags of each snapshot in `repo` (all of them, or only those carrying every tag of
/// `filter`), read with the host's restic from the cluster's REST server.
fn snapshot_tags(repo: &str, filter: Option<&str>) -> Vec<Vec<String>> {
    let mut cmd = Command::new("restic");
    cmd.args(["--no-cache", "-r", repo, "snapshots", "--json"])
        .env("RESTIC_PASSWORD", credential("restic-password"));
    if let Some(f) = filter {
        cmd.args(["--tag", f]);
    }
    let out = cmd.output().expect("run restic");
    assert!(
        out.status.success(),
        "restic snapshots: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    list.iter()
        .map(|s| {
            s["tags"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

/// The snapshots qualifications took that are still in `repo`.
fn qualification_snapshots(repo: &str) -> Vec<Vec<String>> {
    snapshot_tags(repo, Some("rehearsal,qualify"))
}

/// The fleet's own backup of `server`, taken before any qualification: no tidy-up may forget it.
async fn fleet_backup(client: &kube::Client, server: &str) {
    let backups: Api<gameplane_api::backup::Backup> = Api::namespaced(client.clone(), NS);
    let name = format!("{server}-own");
    let b = from_json(json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "Backup",
        "metadata": {"name": name},
        "spec": {"serverRef": {"name": server}, "repoRef": {"name": "restic-repo", "key": "repo"},
                 "quiesce": true, "tags": ["fleet-own"]},
    }));
    backups.create(&PostParams::default(), &b).await.unwrap();
    tokio::time::timeout(
        BOUND,
        await_condition(
            backups,
            &name,
            |b: Option<&gameplane_api::backup::Backup>| {
                b.and_then(gameplane_api::backup::Backup::phase)
                    == Some(gameplane_api::backup::BackupPhase::Succeeded)
            },
        ),
    )
    .await
    .unwrap_or_else(|_| panic!("Backup {NS}/{name} Succeeded within {BOUND:?}"))
    .unwrap();
}

async fn assert_tidy(client: &kube::Client, after: &str) {
    assert_eq!(
        labelled(client).await,
        Vec::<String>::new(),
        "after {after}: objects of a qualification run are left"
    );
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    assert!(
        servers.get_opt("survival-canary").await.unwrap().is_none(),
        "after {after}: the clone survival-canary is left"
    );
}

fn assert_halted_at_image_gate(out: &Output) {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let line = stderr.trim();
    assert_eq!(line.lines().count(), 1, "one line: {stderr}");
    assert!(
        line.contains(&format!("halted at gate {IMAGE_GATE:?} on survival-canary"))
            && (line.contains("ErrImagePull") || line.contains("ImagePullBackOff")),
        "the halt names the gate, the member and the pull failure: {line}"
    );
    assert!(!line.contains("Status {"), "no Debug dump: {line}");
    let (md, _, json) = report(&bundle_of(&text(out).0));
    assert!(
        json["decision"]
            .as_str()
            .is_some_and(|d| d.starts_with(&format!("halted at {IMAGE_GATE} on survival-canary"))),
        "{json}"
    );
    assert!(
        md.contains(&format!("## Failing gate: {IMAGE_GATE} on survival-canary")),
        "{md}"
    );
}

/// The qualification report the run wrote into its bundle (Markdown, HTML, JSON), with the
/// contract its gate section links to beside it.
fn report(bundle: &Path) -> (String, String, serde_json::Value) {
    let read = |f: &str| {
        std::fs::read_to_string(bundle.join(f))
            .unwrap_or_else(|e| panic!("{}: {e}", bundle.join(f).display()))
    };
    assert_eq!(
        read("contract.md"),
        rehearsal::report::qualification::CONTRACT
    );
    assert!(read("contract.html").contains(&format!(
        "id=\"{}\"",
        rehearsal::report::qualification::CONTRACT_ANCHOR
    )));
    let json = serde_json::from_str(&read("qualification.json")).unwrap();
    (read("qualification.md"), read("qualification.html"), json)
}

fn bundle_of(stdout: &str) -> PathBuf {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("bundle: "))
        .map(PathBuf::from)
        .expect("the bundle is named")
}

/// Every gate of a promoted run is in the report: the clone's five and the rollback, then the
/// image, join and save gates of each member of `fleet` (one batch each); each printed a
/// progress line as it ended.
fn assert_report_shows_every_gate(
    stdout: &str,
    candidate: &str,
    fleet: &[&str],
) -> serde_json::Value {
    let (md, html, json) = report(&bundle_of(stdout));
    let batches = fleet.len();
    let decision = if batches == 1 {
        "promote 1 batch".to_string()
    } else {
        format!("promote {batches} batches")
    };
    assert_eq!(json["decision"], decision, "{json}");
    assert_eq!(json["candidate"], candidate);
    assert!(
        json["candidate_digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:")),
        "{json}"
    );
    let mut expected = vec![
        ("preflight", ""),
        (IMAGE_GATE, "survival-canary"),
        (JOIN_GATE, "survival-canary"),
        (SAVE_GATE, "survival-canary"),
        (READ_BACK_GATE, "survival-canary"),
        ("rollback", "survival-canary"),
    ];
    for &member in fleet {
        expected.extend([
            (IMAGE_GATE, member),
            (JOIN_GATE, member),
            (SAVE_GATE, member),
        ]);
    }
    let gates: Vec<(String, String, String)> = json["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["gate"].as_str().unwrap().to_string(),
                g["member"].as_str().unwrap().to_string(),
                g["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        gates,
        expected
            .iter()
            .map(|(g, m)| (g.to_string(), m.to_string(), "passed".to_string()))
            .collect::<Vec<_>>(),
        "{json}"
    );
    for (gate, member) in &expected {
        let row = if member.is_empty() {
            format!("| {gate} | — | passed |")
        } else {
            format!("| {gate} | {member} | passed |")
        };
        assert!(
            md.contains(&row),
            "the Markdown gate table lacks {row}:\n{md}"
        );
        let progress = if member.is_empty() {
            format!("passed  {gate} · ")
        } else {
            format!("passed  {gate} · {member} · ")
        };
        assert!(
            stdout.contains(&progress),
            "no progress line {progress:?}:\n{stdout}"
        );
    }
    assert!(html.contains("<svg class=\"timeline\""), "{html}");
    assert!(md.contains("## PVC UIDs before and after") && md.contains("survival-canary-data"));
    json
}

fn assert_promoted(out: &Output, candidate: &str, fleet: &[&str]) -> serde_json::Value {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "promoted {candidate} in {} batch(es)",
            fleet.len()
        )),
        "{stdout}"
    );
    let json = assert_report_shows_every_gate(&stdout, candidate, fleet);
    let bundle = bundle_of(&stdout);
    let verify = Command::new(REHEARSE)
        .args(["receipts", "verify"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{:?}", text(&verify));
    // The bundle names the operator as given and the harness's build commit, not the git
    // repository of the directory the command ran in.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("bundle.json")).unwrap()).unwrap();
    assert_eq!(
        summary["operator"]["name"], "reference-operator",
        "{summary}"
    );
    assert_eq!(summary["operator"]["version"], "embedded-test", "{summary}");
    let commit = summary["commit"].as_str().unwrap_or_default();
    assert!(
        commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit()),
        "the harness's build commit: {summary}"
    );
    let journal = std::fs::read_to_string(bundle.join("receipts.jsonl")).unwrap();
    assert!(
        journal.contains(&format!("\"context\":\"{CONTEXT}\"")),
        "the identity receipt names the cluster context"
    );
    json
}

#[tokio::test(flavor = "multi_thread")]
#[expect(
    clippy::too_many_lines,
    reason = "one cluster scenario: two qualification runs in one namespace, the second reading what the first left"
)]
async fn qualify_a_hand_made_fleet_twice_in_one_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let reports = dir.path().join("reports");
    let cluster = ClusterUp::start(&kubeconfig, &dir.path().join("state"));
    // A repository on the cluster's restic REST server (a local path is refused: the copy Job
    // mounts none).
    let repo = format!("{}/qualify-fleet", cluster.repo_base);
    let client = rehearsal::backend::pinned_client(&kubeconfig, CONTEXT)
        .await
        .unwrap();
    set_up_fleet(&client, &repo).await;
    fleet_backup(&client, "survival").await;

    for round in 1..=2 {
        // An unpullable candidate halts on the clone; round 1 keeps what it made.
        let keep: &[&str] = if round == 1 { &["--keep"] } else { &[] };
        let halted = qualify(&kubeconfig, &reports, "unpullable", keep);
        assert_halted_at_image_gate(&halted);
        let (stdout, _) = text(&halted);
        if round == 1 {
            assert!(
                stdout.contains("kept") && stdout.contains(&format!("-l {RUN_LABEL}=")),
                "--keep names the objects and how to inspect them: {stdout}"
            );
            assert!(
                labelled(&client)
                    .await
                    .contains(&"GameServer survival-canary".to_string()),
                "--keep keeps the clone"
            );
            // ... and the snapshot its backup of the source took, saying so.
            let run = bundle_of(&stdout);
            let run = run.file_name().unwrap().to_string_lossy();
            assert!(
                stdout.contains("and 1 restic snapshot(s) of run"),
                "{stdout}"
            );
            let kept = qualification_snapshots(&repo);
            assert!(
                kept.len() == 1 && kept[0].contains(&format!("rehearsal-run={run}")),
                "--keep keeps the run's snapshot, tagged with its run id: {kept:?}"
            );
        } else {
            assert_tidy(&client, &format!("round {round}: the halted run")).await;
            assert!(
                stdout.contains("and forgot 1 restic snapshot(s) it took"),
                "{stdout}"
            );
            assert_eq!(qualification_snapshots(&repo), Vec::<Vec<String>>::new());
        }
        // The halt keeps its diagnostics, collected before the clone was removed.
        let artifacts = bundle_of(&stdout).join("cases/qualify-unpullable/artifacts");
        assert!(
            stdout.contains(&format!("diagnostics: {}", artifacts.display())),
            "{stdout}"
        );
        let events = std::fs::read_to_string(artifacts.join("events.json")).unwrap();
        assert!(events.contains("survival-canary"), "{events}");
        let pods = std::fs::read_to_string(artifacts.join("objects/pods.json")).unwrap();
        assert!(pods.contains("survival-canary-0"), "{pods}");
        assert!(artifacts.join("objects/gameservers.json").is_file());

        // A compatible candidate is promoted; in round 1 it first removes what was kept. In
        // round 2 the fleet already runs it: "nothing to promote", refused at the preflight.
        let promoted = qualify(&kubeconfig, &reports, "1.1-compat", &[]);
        if round == 2 {
            let (stdout, stderr) = text(&promoted);
            assert_eq!(promoted.status.code(), Some(1), "{stdout}\n{stderr}");
            assert!(
                stderr.contains("halted at gate \"preflight\"")
                    && stderr.contains("nothing to promote: every fleet member (survival, creative) already runs version 1.1-compat"),
                "{stderr}"
            );
            assert_tidy(&client, "round 2: the candidate the fleet already runs").await;
        } else {
            assert_promoted(&promoted, "1.1-compat", &["survival", "creative"]);
            let (stdout, _) = text(&promoted);
            assert!(
                stdout.contains("removing what earlier qualification runs left")
                    && stdout.contains("GameServer survival-canary"),
                "{stdout}"
            );
            // The kept run's snapshot is forgotten with its objects, and this run's own.
            assert!(
                stdout.contains("forgot 1 restic snapshot(s) those runs took")
                    && stdout.contains("and forgot 1 restic snapshot(s) it took"),
                "{stdout}"
            );
            assert_eq!(qualification_snapshots(&repo), Vec::<Vec<String>>::new());
            assert_tidy(&client, &format!("round {round}: the promoted run")).await;
        }

        // An HTTP-only candidate halts at the join gate, saying no Minecraft stage answered.
        let http = qualify(&kubeconfig, &reports, "http-only", &[]);
        let (stdout, stderr) = text(&http);
        assert_eq!(http.status.code(), Some(1), "{stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!("halted at gate {JOIN_GATE:?} on survival-canary"))
                && stderr.trim().lines().count() == 1,
            "{stderr}"
        );
        let (_, _, json) = report(&bundle_of(&stdout));
        assert!(
            json["decision"].as_str().is_some_and(
                |d| d.starts_with(&format!("halted at {JOIN_GATE} on survival-canary"))
            ),
            "{json}"
        );
        assert_tidy(&client, &format!("round {round}: the HTTP-only run")).await;
    }

    // A format-changing candidate rolled back as if it were compatible: the previous version
    // cannot read the migrated world and crash-loops on the clone. The rollback gate fails on
    // the crash loop (the rule of every gate that waits on a pod), not at the end of its bound.
    let wrong = qualify(
        &kubeconfig,
        &reports,
        "2.0-format",
        &["--rollback", "compatible", "--fleet", "creative"],
    );
    let (stdout, stderr) = text(&wrong);
    assert_eq!(wrong.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("halted at gate \"rollback\" on survival-canary")
            && stderr.contains("CrashLoopBackOff")
            && !stderr.contains("did not happen"),
        "{stderr}"
    );
    assert_tidy(&client, "the compatible rollback of a format change").await;

    // A format-changing candidate rolled back through a restore, twice in a row with the same
    // source (so the same clone, Backup and Restore names): promoted, with the rollback
    // evidence that every world claim held exactly the snapshot again. The first run promotes
    // creative, the second survival, so each clone migrates a world still in the old format.
    for fleet in [["creative"], ["survival"]] {
        let restore = qualify(
            &kubeconfig,
            &reports,
            "2.0-format",
            &["--rollback", "restore-required", "--fleet", fleet[0]],
        );
        // Shown with --no-capture: the console a user sees (progress lines, decision, files).
        println!("{}", text(&restore).0);
        let json = assert_promoted(&restore, "2.0-format", &fleet);
        let rollback = json["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["gate"] == "rollback")
            .unwrap();
        assert!(
            rollback["evidence"]
                .as_str()
                .is_some_and(|e| e.contains("restored snapshot")
                    && e.contains("2 of 2 claims hold exactly the snapshot")),
            "{rollback}"
        );
        let detail = &rollback["detail"];
        for claim in ["survival-canary-data", "survival-canary-extra-nether"] {
            assert_eq!(
                detail["digests_after_restore"][claim]["digest"],
                detail["snapshot_digests"][claim]["digest"],
                "{claim}: {detail}"
            );
        }
        let read = json["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["gate"] == READ_BACK_GATE)
            .unwrap();
        assert_eq!(
            read["detail"]["claims"]["survival-canary-data"]["changed"], true,
            "the candidate changed the world it migrated: {read}"
        );
        // The promoted member's backup from before its batch moved is its way back: named in
        // the report, the Backup kept (no longer the run's), its snapshot not forgotten.
        let way_back = &json["way_back"];
        assert_eq!(way_back[0]["server"], fleet[0], "{json}");
        let backup = way_back[0]["backup"].as_str().unwrap().to_string();
        let kept = Api::<gameplane_api::backup::Backup>::namespaced(client.clone(), NS)
            .get(&backup)
            .await
            .unwrap();
        assert_eq!(
            kept.status.and_then(|s| s.snapshot_id).as_deref(),
            way_back[0]["snapshot"].as_str(),
            "{backup}"
        );
        let tag = format!("rehearsal-backup={backup}");
        assert!(
            snapshot_tags(&repo, None).iter().any(|t| t.contains(&tag)),
            "the way back's snapshot is kept"
        );
        assert_tidy(
            &client,
            &format!("the restore-required run for {}", fleet[0]),
        )
        .await;
    }

    // The fleet now runs 2.0-format and its worlds are format 2: 1.1-compat cannot read them,
    // so on the clone its game exits at start and restarts. That is a halt at the image gate
    // naming the crash loop, quickly, with the fleet untouched — not a wait for Ready.
    let downgrade = qualify(&kubeconfig, &reports, "1.1-compat", &[]);
    let (stdout, stderr) = text(&downgrade);
    println!("{stdout}{stderr}");
    assert_eq!(downgrade.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("halted at gate {IMAGE_GATE:?} on survival-canary"))
            && stderr.contains("CrashLoopBackOff")
            && stderr.trim().lines().count() == 1,
        "{stderr}"
    );
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    for member in ["survival", "creative"] {
        let gs = servers.get(member).await.unwrap();
        assert_eq!(
            gs.spec.version.as_deref(),
            Some("2.0-format"),
            "{member} untouched"
        );
    }
    assert_tidy(&client, "the downgrade run").await;
    // Every qualification forgot what it took, except the promoted members' ways back; the
    // fleet's own backup is still there.
    assert_eq!(qualification_snapshots(&repo), Vec::<Vec<String>>::new());
    let kept = snapshot_tags(&repo, None)
        .into_iter()
        .filter(|t| t.contains(&"pre-promotion".to_string()))
        .count();
    assert_eq!(kept, 2, "one way back per restore-required promotion");
    let all = snapshot_tags(&repo, None);
    assert!(
        all.iter().any(|t| t.contains(&"fleet-own".to_string())),
        "the fleet's own snapshot is kept: {all:?}"
    );

    // What the fleet cannot offer is a failed preflight gate whose reason names it, on the
    // console and in the bundle's report; nothing is created.
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let version_of = async |name: &str| servers.get(name).await.unwrap().spec.version.unwrap();
    let (survival, creative) = (version_of("survival").await, version_of("creative").await);
    let on_current = if survival == creative {
        format!(
            "nothing to promote: every fleet member (survival, creative) already runs version {survival}"
        )
    } else {
        format!("fleet member(s) survival already run version {survival} (the candidate)")
    };
    let other = if survival == "http-only" {
        "1.1-compat"
    } else {
        "http-only"
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    for (name, data) in [
        (
            "local-path-repo",
            json!({"repo": "/var/lib/restic", "password": "pw"}),
        ),
        (
            "no-password-repo",
            json!({"repo": "rest:http://127.0.0.1:1/x"}),
        ),
    ] {
        let secret: Secret = from_json(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": NS}, "stringData": data,
        }));
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    for (candidate, extra, reason) in [
        (survival.as_str(), &[][..], on_current.as_str()),
        (
            other,
            &["--repo-secret", "no-such-repo"][..],
            "repository Secret games/no-such-repo does not exist",
        ),
        (
            other,
            &["--repo-secret", "local-path-repo"][..],
            "has repo \"/var/lib/restic\", not a restic REST URL",
        ),
        (
            other,
            &["--repo-secret", "no-password-repo"][..],
            "repository Secret games/no-password-repo lacks key(s) password",
        ),
        (
            "by-tag",
            &[][..],
            "candidate by-tag image rehearsal.local/fixture-game:1.1-compat is not pinned by digest",
        ),
    ] {
        let refused = qualify(&kubeconfig, &reports, candidate, extra);
        let (stdout, stderr) = text(&refused);
        assert_eq!(refused.status.code(), Some(1), "{stdout}\n{stderr}");
        assert!(
            stderr.contains("halted at gate \"preflight\"")
                && stderr.contains(reason)
                && stderr.trim().lines().count() == 1,
            "{reason}: {stderr}"
        );
        assert!(stdout.contains("FAILED  preflight · "), "{stdout}");
        let (md, _, json) = report(&bundle_of(&stdout));
        assert_eq!(json["gates"][0]["gate"], "preflight", "{json}");
        assert_eq!(json["gates"][0]["verdict"], "failed", "{json}");
        assert!(md.contains(reason), "{md}");
        // The refusal is a failed gate receipt in the journal, never a passed one.
        let journal =
            rehearsal::evidence::receipts::verify(bundle_of(&stdout).join("receipts.jsonl"))
                .unwrap()
                .receipts;
        let refusals: Vec<_> = journal
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                match rehearsal::evidence::observation::Observation::read(i + 1, r).unwrap() {
                    rehearsal::evidence::observation::Observation::Gate(g) => Some(g),
                    _ => None,
                }
            })
            .collect();
        assert!(
            refusals.iter().any(|g| g.name == "preflight"
                && !g.passed
                && g.reason.as_deref().is_some_and(|r| r.contains(reason))),
            "{refusals:?}"
        );
        assert_tidy(&client, &format!("the refused run of {candidate}")).await;
    }

    // A name the command line gives that does not exist is a usage error: one line, exit 2, no
    // bundle, nothing touched — like a wrong context, not a failed qualification.
    let bundles_before = std::fs::read_dir(&reports).map(|d| d.count()).unwrap_or(0);
    let named = |namespace: &str, template: &str, candidate: &str, fleet: &str| {
        Command::new(REHEARSE)
            .args(["qualify", "--cluster", "existing", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(["--context", CONTEXT, "--namespace", namespace])
            .args([
                "--template",
                template,
                "--source",
                "survival",
                "--fleet",
                fleet,
            ])
            .args(["--candidate", candidate, "--reports"])
            .arg(&reports)
            .args(["--operator", "reference-operator@embedded-test"])
            .output()
            .expect("run rehearse qualify")
    };
    for (out, says) in [
        (
            named(NS, TEMPLATE, "1.1-compat", "survival,ghost,phantom"),
            "GameServer(s) ghost, phantom do not exist in namespace games; name the fleet's members with --source and --fleet".to_string(),
        ),
        (
            named(NS, TEMPLATE, "9.9", "survival"),
            format!("GameTemplate {TEMPLATE} has no version \"9.9\" (it has "),
        ),
        (
            named(NS, "no-such-template", "1.1-compat", "survival"),
            "GameTemplate no-such-template does not exist (the cluster has ".to_string(),
        ),
        (
            named("no-such-namespace", TEMPLATE, "1.1-compat", "survival"),
            "namespace no-such-namespace does not exist in this cluster; name the fleet's namespace with --namespace".to_string(),
        ),
    ] {
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{says}: {stdout}\n{stderr}");
        assert!(
            stderr.contains(&says) && stderr.trim().lines().count() == 1,
            "{says}: {stderr}"
        );
        assert!(stdout.trim().is_empty(), "{says}: nothing ran: {stdout}");
    }
    assert_eq!(
        std::fs::read_dir(&reports).map(|d| d.count()).unwrap_or(0),
        bundles_before,
        "a usage error writes no bundle"
    );
    assert_tidy(&client, "the runs refused for names that do not exist").await;

    // Without --operator, the operator is read from its Deployment; the embedded cluster runs
    // it as a process and records it where the Deployment would be (a ConfigMap with the
    // binary's own --version), so the README's example runs as printed.
    let found = qualify_as(&kubeconfig, &reports, "unpullable", &[]);
    let (stdout, stderr) = text(&found);
    assert_eq!(found.status.code(), Some(1), "halted: {stdout}\n{stderr}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle_of(&stdout).join("bundle.json")).unwrap())
            .unwrap();
    assert_eq!(
        summary["operator"]["name"], "reference-operator",
        "{summary}"
    );
    assert_eq!(
        summary["operator"]["version"],
        env!("CARGO_PKG_VERSION"),
        "the running binary's --version: {summary}"
    );
    assert_tidy(&client, "the run that found the embedded operator").await;
    let bundles_before = std::fs::read_dir(&reports).map(|d| d.count()).unwrap_or(0);
    // With neither a Deployment nor the embedded cluster's record, the run is refused.
    Api::<ConfigMap>::namespaced(client.clone(), "gameplane-system")
        .delete("reference-operator", &Default::default())
        .await
        .unwrap();
    let refused = qualify_as(&kubeconfig, &reports, "unpullable", &[]);
    let (_, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert_eq!(
        std::fs::read_dir(&reports).map(|d| d.count()).unwrap_or(0),
        bundles_before,
        "a refused run writes no bundle"
    );
    assert!(
        stderr.contains("no Deployment gameplane-system/reference-operator")
            && stderr.contains("--operator NAME@VERSION")
            && stderr.trim().lines().count() == 1,
        "{stderr}"
    );
    // A name the run needs, held by an object it did not make, is refused — never deleted.
    let restores: Api<Restore> = Api::namespaced(client.clone(), NS);
    let foreign: Restore = from_json(json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "Restore",
        "metadata": {"name": "qualify-survival-rollback"},
        "spec": {"backupRef": {"name": "someone-elses"}, "serverRef": {"name": "creative"}},
    }));
    restores
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
    let refused = qualify(&kubeconfig, &reports, "1.1-compat", &[]);
    let (stdout, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("Restore games/qualify-survival-rollback")
            && stderr.contains("not made by rehearse qualify"),
        "{stderr}"
    );
    assert!(
        restores
            .get_opt("qualify-survival-rollback")
            .await
            .unwrap()
            .is_some(),
        "an object the harness did not make is never deleted"
    );
}

/// A case whose fault this cluster cannot place (its copy held at the repository, which only
/// the embedded cluster's own gate can do; then an in-place container restart, with no access
/// to the nodes' runtime on `--cluster existing`) is "not applicable on this cluster":
/// that verdict in the bundle, skipped in JUnit, said in the report, and the run exits 0 —
/// the operator is not blamed for a harness limit.
#[tokio::test(flavor = "multi_thread")]
async fn a_fault_the_cluster_cannot_inject_is_not_applicable() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let reports = dir.path().join("reports");
    let cluster = ClusterUp::start(&kubeconfig, &dir.path().join("state"));
    let out = Command::new(REHEARSE)
        // The REST server `cluster up --embedded` serves the cases' repositories on.
        .env("REHEARSAL_REPO_BASE", &cluster.repo_base)
        .args(["run", "--cluster", "existing", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--context", CONTEXT, "--reports"])
        .arg(&reports)
        .args(["--case", "live_backup_same_pod_game_restart"])
        // `cluster up --embedded` runs the operator beside the cluster, not as a Deployment.
        .args(["--operator-profile", "reference"])
        .output()
        .expect("run rehearse run");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("not-applicable live_backup_same_pod_game_restart")
            && stdout.contains("cannot hold the repository request POST snapshots"),
        "{stdout}"
    );
    let bundle = bundle_of(&stdout);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("bundle.json")).unwrap()).unwrap();
    assert_eq!(
        summary["cases"][0]["verdict"], "not-applicable",
        "{summary}"
    );
    let junit = std::fs::read_to_string(bundle.join("junit.xml")).unwrap();
    assert!(
        junit.contains("skipped=\"1\"")
            && junit.contains("failures=\"0\"")
            && junit.contains("<skipped message=\"not applicable on this cluster: existing backend cannot hold the repository request"),
        "{junit}"
    );
    let md = std::fs::read_to_string(bundle.join("report.md")).unwrap();
    assert!(
        md.contains("| Verdict | ⏭️ not applicable on this cluster |"),
        "{md}"
    );
    let verify = Command::new(REHEARSE)
        .args(["receipts", "verify"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{:?}", text(&verify));
}

/// `rehearse qualify` interrupted at every step and gate boundary before promotion (SIGINT and
/// SIGTERM in turn, and once with SIGINT inherited as ignored): each run exits 130, its bundle
/// verifies and its report renders with the interrupt recorded, nothing it created is left and
/// the fleet keeps its version.
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_qualification_leaves_a_verifiable_bundle_and_a_tidy_fleet() {
    use nix::sys::signal::Signal;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let reports = dir.path().join("reports");
    let cluster = ClusterUp::start(&kubeconfig, &dir.path().join("state"));
    let repo = format!("{}/qualify-fleet", cluster.repo_base);
    let client = rehearsal::backend::pinned_client(&kubeconfig, CONTEXT)
        .await
        .unwrap();
    set_up_fleet(&client, &repo).await;

    // One uninterrupted run names the progress lines (steps and gates) before promotion.
    let full = qualify(
        &kubeconfig,
        &reports,
        "1.1-compat",
        &["--fleet", "survival"],
    );
    let (stdout, _) = text(&full);
    assert!(full.status.success(), "{stdout}");
    let progress: Vec<&str> = stdout.lines().filter(|l| l.starts_with("  ")).collect();
    let before_promotion = progress
        .iter()
        .take_while(|l| !l.contains("promotion batch"))
        .count();
    assert!(
        before_promotion >= 20,
        "{before_promotion} points: {stdout}"
    );
    // Every point up to the promotion batch's last gate: the batch moves the member, gates
    // it, and an interrupt anywhere in it puts the member back. (A signal sent once the last
    // gate's line is out may arrive after the batch was decided: no sweep point there.)
    let batch_end = progress
        .iter()
        .position(|l| l.starts_with("  step    promotion batch 1"))
        .unwrap_or_else(|| panic!("no promotion batch line: {stdout}"));
    assert!(batch_end > before_promotion + 1, "{stdout}");
    // The fleet back on its version for the interrupted runs.
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    servers
        .patch(
            "survival",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"version": "1.0"}})),
        )
        .await
        .unwrap();

    for point in 1..batch_end {
        let (signal, ignored) = match point % 3 {
            0 => (Signal::SIGTERM, false),
            1 => (Signal::SIGINT, point == 1),
            _ => (Signal::SIGINT, false),
        };
        let (status, stdout, stderr) = interrupted_run(
            &kubeconfig,
            &reports,
            &["--candidate", "1.1-compat"],
            point,
            signal,
            ignored,
        );
        let what = format!("point {point} ({signal:?}, inherited ignored: {ignored})");
        let bundle = bundle_of(&stdout);
        rehearsal::evidence::receipts::verify(bundle.join("receipts.jsonl"))
            .unwrap_or_else(|e| panic!("{what}: the bundle does not verify: {e}"));
        let (md, _, json) = report(&bundle);
        assert_tidy(&client, &what).await;
        let survival = servers.get("survival").await.unwrap();
        let version = survival.spec.version.as_deref();
        if point > before_promotion && version == Some("1.1-compat") {
            // Only a signal that reached the process after the batch was decided (a test
            // descheduled between reading the line and sending it, on a busy machine) leaves
            // the member promoted: then the record says promoted, with nothing put back.
            assert!(
                matches!(status.code(), Some(0 | 130)),
                "{what}: {stdout}\n{stderr}"
            );
            assert_eq!(json["promoted"], true, "{what}: {md}");
            assert!(!md.contains("put back"), "{what}: {md}");
            servers
                .patch(
                    "survival",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(json!({"spec": {"version": "1.0"}})),
                )
                .await
                .unwrap();
            continue;
        }
        assert_eq!(status.code(), Some(130), "{what}: {stdout}\n{stderr}");
        let journal = std::fs::read_to_string(bundle.join("receipts.jsonl")).unwrap();
        assert!(
            journal.contains("\"interrupted\""),
            "{what}: no interrupt receipt"
        );
        assert!(md.to_lowercase().contains("interrupted"), "{what}: {md}");
        assert_eq!(version, Some("1.0"), "{what}: the fleet was promoted: {md}");
        let put_back = md.contains("| 1 | survival | interrupted by ");
        if point > before_promotion + 1 {
            // The batch had moved the member: the report says it was moved and put back.
            assert!(put_back, "{what}: no put-back row: {md}");
            assert!(md.contains("| put back on 1.0 |"), "{what}: {md}");
            assert!(!md.contains("NOT put back"), "{what}: {md}");
        }
        // The fleet's pod and claims are read at the end, even after an interrupt.
        assert!(!md.contains("| gone |"), "{what}: {md}");
    }
}

/// `rehearse qualify` of `survival` (source and fleet) with `args` in the background, its
/// output piped (with `ignored`, started from a script that inherits SIGINT as ignored).
fn spawn_qualify(kubeconfig: &Path, reports: &Path, args: &[&str], ignored: bool) -> Child {
    let mut cmd = if ignored {
        // A job started from a script: SIGINT inherited as ignored.
        let mut c = Command::new("sh");
        c.args(["-c", "trap '' INT; exec \"$@\"", "sh", REHEARSE]);
        c
    } else {
        Command::new(REHEARSE)
    };
    cmd.args(["qualify", "--cluster", "existing", "--kubeconfig"])
        .arg(kubeconfig)
        .args([
            "--context",
            CONTEXT,
            "--namespace",
            NS,
            "--template",
            TEMPLATE,
        ])
        .args(["--source", "survival", "--fleet", "survival"])
        .args(args)
        .arg("--reports")
        .arg(reports)
        .args(["--operator", "reference-operator@embedded-test"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` to end after `lines` (what it printed so far, the rest still to read):
/// its exit status, everything it printed, and its standard error.
fn finish(
    mut child: Child,
    mut seen: Vec<String>,
    lines: impl Iterator<Item = std::io::Result<String>>,
) -> (std::process::ExitStatus, String, String) {
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, seen.join("\n"), stderr)
}

/// [`spawn_qualify`], sent `signal` once it printed `point` progress lines.
fn interrupted_run(
    kubeconfig: &Path,
    reports: &Path,
    args: &[&str],
    point: usize,
    signal: nix::sys::signal::Signal,
    ignored: bool,
) -> (std::process::ExitStatus, String, String) {
    let mut child = spawn_qualify(kubeconfig, reports, args, ignored);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut progress = 0;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.starts_with("  ") {
            progress += 1;
        }
        seen.push(line);
        if progress == point {
            nix::sys::signal::kill(pid, signal).unwrap();
            break;
        }
    }
    finish(child, seen, lines)
}

/// [`spawn_qualify`], sent SIGINT as soon as the pre-promotion Backup of `survival` exists:
/// the member is stopped for it and has not moved.
async fn interrupted_during_backup(
    client: &kube::Client,
    kubeconfig: &Path,
    reports: &Path,
    args: &[&str],
) -> (std::process::ExitStatus, String, String) {
    use futures::StreamExt;
    use kube::runtime::WatchStreamExt;
    let mut child = spawn_qualify(kubeconfig, reports, args, false);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let backups: Api<gameplane_api::backup::Backup> = Api::namespaced(client.clone(), NS);
    let created = kube::runtime::watcher(backups, kube::runtime::watcher::Config::default())
        .applied_objects()
        .filter(|b| {
            // Labelled with a run: not a way back an earlier run kept.
            std::future::ready(b.as_ref().is_ok_and(|b| {
                b.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("qualify-survival-pre-"))
                    && b.metadata
                        .labels
                        .as_ref()
                        .is_some_and(|l| l.contains_key(RUN_LABEL))
            }))
        });
    tokio::time::timeout(BOUND, std::pin::pin!(created).next())
        .await
        .unwrap_or_else(|_| panic!("a pre-promotion Backup of survival within {BOUND:?}"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let seen = reader.join().unwrap();
    finish(child, seen, std::iter::empty())
}

/// A restore-required candidate interrupted at every point of its promotion batch — while the
/// member is stopped for its pre-promotion backup, while it moves, while it is gated: each run
/// exits 130 with the member on its version, running again, its bundle verifies, and the
/// report says it was put back; once the member had run the candidate, it was restored from
/// its own backup, so every world claim's digest after the put-back equals the one read before
/// the batch (and its PVC UIDs are the same).
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupted_restore_required_batch_puts_the_member_back_with_its_world() {
    use nix::sys::signal::Signal;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let reports = dir.path().join("reports");
    let cluster = ClusterUp::start(&kubeconfig, &dir.path().join("state"));
    let repo = format!("{}/qualify-fleet", cluster.repo_base);
    let client = rehearsal::backend::pinned_client(&kubeconfig, CONTEXT)
        .await
        .unwrap();
    set_up_fleet(&client, &repo).await;
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let args = [
        "--candidate",
        "2.0-format",
        "--rollback",
        "restore-required",
    ];
    let full = qualify(
        &kubeconfig,
        &reports,
        args[1],
        &[&args[2..], &["--fleet", "survival"]].concat(),
    );
    let (stdout, stderr) = text(&full);
    assert!(full.status.success(), "{stdout}\n{stderr}");
    let progress: Vec<&str> = stdout.lines().filter(|l| l.starts_with("  ")).collect();
    // From the last line before the batch's backup ends (the backup is running) to the
    // batch's last gate.
    let backup = progress
        .iter()
        .position(|l| l.contains("back up batch 1"))
        .unwrap_or_else(|| panic!("no back-up line: {stdout}"));
    let batch_end = progress
        .iter()
        .position(|l| l.starts_with("  step    promotion batch 1"))
        .unwrap_or_else(|| panic!("no promotion batch line: {stdout}"));
    assert!(batch_end > backup + 2, "{stdout}");
    // Back on 1.0, from the way back the promoted run kept.
    let (md, _, _) = report(&bundle_of(&stdout));
    restore_way_back(&client, &md).await;
    await_running(&servers, "survival").await;

    // The first point is while the member is stopped for its backup; then every line.
    let mut restored = 0;
    for point in (backup..batch_end).map(Some).chain([None]).rev() {
        let signal = if point.is_some_and(|p| p % 2 == 1) {
            Signal::SIGTERM
        } else {
            Signal::SIGINT
        };
        let (status, stdout, stderr) = match point {
            Some(point) => interrupted_run(&kubeconfig, &reports, &args, point, signal, false),
            None => interrupted_during_backup(&client, &kubeconfig, &reports, &args).await,
        };
        let what = format!("point {point:?} ({signal:?})");
        assert!(
            stdout.contains("bundle: "),
            "{what}: {status}: {stdout}\n{stderr}"
        );
        let bundle = bundle_of(&stdout);
        rehearsal::evidence::receipts::verify(bundle.join("receipts.jsonl"))
            .unwrap_or_else(|e| panic!("{what}: the bundle does not verify: {e}"));
        let (md, _, json) = report(&bundle);
        assert_tidy(&client, &what).await;
        let survival = servers.get("survival").await.unwrap();
        if survival.spec.version.as_deref() == Some("2.0-format") {
            // The signal reached the process after the batch was decided: promoted, nothing
            // put back (see the compatible sweep). Not expected here, where the batch is long.
            panic!("{what}: promoted despite the interrupt: {md}");
        }
        assert_eq!(status.code(), Some(130), "{what}: {stdout}\n{stderr}");
        assert_eq!(
            survival.spec.version.as_deref(),
            Some("1.0"),
            "{what}: {md}"
        );
        assert_ne!(
            survival.spec.suspend,
            Some(true),
            "{what}: left suspended: {md}"
        );
        if md.contains("before step \"back up batch 1\"") {
            // The signal arrived before the batch began: nothing was moved.
            assert!(!md.contains("put back"), "{what}: {md}");
            assert!(point.is_some(), "{what}: the backup had begun: {md}");
            continue;
        }
        assert!(
            md.contains("| 1 | survival | interrupted by "),
            "{what}: no put-back row: {md}"
        );
        assert!(!md.contains("NOT put back"), "{what}: {md}");
        if put_back_with_world(&what, &md, &json) {
            restored += 1;
        }
        assert!(!md.contains("| gone |"), "{what}: {md}");
        await_running(&servers, "survival").await;
    }
    // Points after the move: the member ran the candidate and was restored.
    assert!(restored >= 3, "{restored} points restored the member");
}

/// The Backup the report's way-back table names for `survival`.
fn way_back_backup(md: &str) -> String {
    md.lines()
        .find_map(|l| l.strip_prefix("| survival | "))
        .and_then(|rest| rest.split(" | ").next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no way-back row for survival: {md}"))
}

async fn await_running(servers: &Api<GameServer>, name: &str) {
    tokio::time::timeout(
        BOUND,
        await_condition(servers.clone(), name, |gs: Option<&GameServer>| {
            gs.and_then(|g| g.status.as_ref()?.phase)
                .is_some_and(|p| p.as_str() == "Running")
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("GameServer {NS}/{name} Running within {BOUND:?}"))
    .unwrap();
}

/// Puts `survival` back on 1.0 from the way back a promoted restore-required run kept (the
/// report `md` names its Backup): suspended, restored, re-pinned, running.
async fn restore_way_back(client: &kube::Client, md: &str) {
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    assert!(md.contains("## Way back"), "{md}");
    let way_back = "qualify-survival-restore-way-back";
    let restore: Restore = from_json(json!({
        "metadata": {"name": way_back},
        "spec": {"backupRef": {"name": way_back_backup(md)}, "serverRef": {"name": "survival"}},
    }));
    servers
        .patch(
            "survival",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    let restores: Api<Restore> = Api::namespaced(client.clone(), NS);
    restores
        .create(&PostParams::default(), &restore)
        .await
        .unwrap();
    tokio::time::timeout(
        BOUND,
        await_condition(restores.clone(), way_back, |r: Option<&Restore>| {
            r.and_then(|r| r.status.as_ref()?.phase)
                == Some(gameplane_api::restore::RestorePhase::Succeeded)
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("Restore {NS}/{way_back} Succeeded within {BOUND:?}"))
    .unwrap();
    servers
        .patch(
            "survival",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"version": "1.0", "suspend": null}})),
        )
        .await
        .unwrap();
    await_running(&servers, "survival").await;
}

/// The report's put-back record of `survival` (`json`, `md`): when it had run the candidate,
/// restored from its own backup with every world digest as before (`true`); its PVC UIDs
/// unchanged either way.
fn put_back_with_world(what: &str, md: &str, json: &serde_json::Value) -> bool {
    let put_back = &json["put_back"][0];
    let restored = !put_back["on_candidate"].is_null();
    if restored {
        // It ran the candidate: restored from its own backup, its world as before.
        assert_eq!(
            put_back["after"]["digests"], put_back["before"]["digests"],
            "{what}: {put_back}"
        );
        assert!(
            put_back["before"]["digests"]
                .as_object()
                .is_some_and(|d| d.len() == 2),
            "{what}: both world claims read: {put_back}"
        );
        assert!(md.contains("same as before"), "{what}: {md}");
    }
    for (claim, uid) in put_back["before"]["pvcs"].as_object().unwrap() {
        assert_eq!(&put_back["after"]["pvcs"][claim], uid, "{what}: {put_back}");
    }
    restored
}

/// [`spawn_qualify`] with fleet `fleet` (comma-separated) instead of `survival` alone.
fn spawn_qualify_fleet(kubeconfig: &Path, reports: &Path, fleet: &str, args: &[&str]) -> Child {
    Command::new(REHEARSE)
        .args(["qualify", "--cluster", "existing", "--kubeconfig"])
        .arg(kubeconfig)
        .args([
            "--context",
            CONTEXT,
            "--namespace",
            NS,
            "--template",
            TEMPLATE,
        ])
        .args(["--source", "survival", "--fleet", fleet])
        .args(args)
        .arg("--reports")
        .arg(reports)
        .args(["--operator", "reference-operator@embedded-test"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (bounded) until every one of `members` pins `version`, as a watch of the GameServers
/// shows it.
async fn await_pinned(client: &kube::Client, members: &[&str], version: &str) {
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    for m in members {
        tokio::time::timeout(
            BOUND,
            await_condition(servers.clone(), m, |gs: Option<&GameServer>| {
                gs.and_then(|g| g.spec.version.as_deref()) == Some(version)
            }),
        )
        .await
        .unwrap_or_else(|_| panic!("GameServer {NS}/{m} pins {version} within {BOUND:?}"))
        .unwrap();
    }
}

/// Runs `fleet` through `rehearse qualify` with `args`; once every one of `moved` pins
/// `candidate`, sends SIGINT, and with `second`, a second SIGINT as soon as the first one's
/// line is out. Returns the exit status, stdout and stderr.
async fn signalled_in_batch(
    client: &kube::Client,
    kubeconfig: &Path,
    reports: &Path,
    fleet: &str,
    args: &[&str],
    moved: &[&str],
    second: bool,
) -> (std::process::ExitStatus, String, String) {
    let mut child = spawn_qualify_fleet(kubeconfig, reports, fleet, args);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            seen.push(line);
        }
        seen
    });
    let candidate = args[1];
    await_pinned(client, moved, candidate).await;
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    if second {
        loop {
            match rx.recv_timeout(BOUND) {
                Ok(line) if line.starts_with("SIGINT: stopping") => break,
                Ok(_) => continue,
                Err(e) => panic!("no line for the first SIGINT within {BOUND:?}: {e}"),
            }
        }
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    }
    let seen = reader.join().unwrap();
    finish(child, seen, std::iter::empty())
}

/// The `sh` blocks of the report's Way back section, member by member, as the report gives them.
fn way_back_blocks(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(i) = rest.find("\nTo put ") {
        let after = &rest[i + "\nTo put ".len()..];
        let member = after.split(' ').next().unwrap().to_string();
        let start = after.find("```sh\n").unwrap() + "```sh\n".len();
        let end = after[start..].find("\n```").unwrap() + start;
        out.push((member, after[start..end].to_string()));
        rest = &after[end..];
    }
    out
}

/// The release manager's findings, each on the embedded cluster against the real binary:
///
/// 1. a second SIGINT during a restore-required batch of two: the members left on the candidate
///    keep their pre-promotion Backups (Succeeded, no longer labelled with the run) and their
///    snapshots; the report (and `qualification.json`) says what a fresh read shows — not
///    promoted, no pod or claim `gone`, every member left on the candidate named — and the
///    run's own invariants held (its receipt); then the report's Way back commands, run
///    literally with kubectl in the order given, bring each member back on 1.0, Running, with
///    the same claims;
/// 2. one SIGINT during batch 2 of a compatible candidate: the decision says batch 1 stays
///    promoted, naming its member, and the gates that finished after the signal are in the
///    report.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_signal_keeps_every_way_back_and_the_report_tells_the_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let reports = dir.path().join("reports");
    let cluster = ClusterUp::start(&kubeconfig, &dir.path().join("state"));
    let repo = format!("{}/qualify-fleet", cluster.repo_base);
    let client = rehearsal::backend::pinned_client(&kubeconfig, CONTEXT)
        .await
        .unwrap();
    set_up_fleet(&client, &repo).await;
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let pvcs_before = labelled_pvcs(&client).await;

    let args = [
        "--candidate",
        "2.0-format",
        "--rollback",
        "restore-required",
        "--batch-size",
        "2",
    ];
    let members = ["survival", "creative"];
    let (status, stdout, stderr) = signalled_in_batch(
        &client,
        &kubeconfig,
        &reports,
        "survival,creative",
        &args,
        &members,
        true,
    )
    .await;
    assert_eq!(status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stdout.contains("second signal"), "{stdout}");
    let bundle = bundle_of(&stdout);
    let journal = rehearsal::evidence::receipts::verify(bundle.join("receipts.jsonl"))
        .unwrap_or_else(|e| panic!("the bundle does not verify: {e}"));
    let own = journal
        .receipts
        .iter()
        .find(|r| r.step == "the qualification's own invariants")
        .unwrap_or_else(|| panic!("no receipt of the run's own invariants: {stdout}"));
    assert_eq!(own.observed["held"], true, "{}", own.observed);
    let (md, _, json) = report(&bundle);
    assert_eq!(json["promoted"], false, "{md}");
    assert!(!md.contains("| gone |"), "{md}");
    assert!(!md.contains("promote 0 batches"), "{md}");
    let left = assert_way_backs_kept(&client, &repo, &members, &md, &json).await;
    follow_way_back(&client, &kubeconfig, dir.path(), &md, &left).await;
    for m in members {
        await_running(&servers, m).await;
        assert_eq!(
            servers.get(m).await.unwrap().spec.version.as_deref(),
            Some("1.0")
        );
    }
    // Every claim the fleet had keeps its UID (the candidate's mods claims are new ones).
    let pvcs_after = labelled_pvcs(&client).await;
    for (claim, uid) in &pvcs_before {
        assert_eq!(pvcs_after.get(claim), Some(uid), "{claim}");
    }
    one_signal_in_batch_two(&client, &kubeconfig, &reports).await;
    refused_members(&client, &kubeconfig, &reports).await;
}

/// A member left suspended (as a killed run leaves it), and a member whose image override means
/// it can never run the candidate, are refused at the preflight, in one line naming each,
/// before anything moves.
async fn refused_members(client: &kube::Client, kubeconfig: &Path, reports: &Path) {
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let patch = |p: serde_json::Value| kube::api::Patch::Merge(p);
    servers
        .patch(
            "creative",
            &Default::default(),
            &patch(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    let out = qualify(kubeconfig, reports, "2.0-format", &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("FAILED  preflight"), "{stdout}");
    assert!(
        stderr.contains("creative in namespace games are suspended"),
        "{stderr}"
    );
    servers
        .patch(
            "creative",
            &Default::default(),
            &patch(json!({"spec": {"suspend": null, "image": "rehearsal.local/fixture-game:1.0"}})),
        )
        .await
        .unwrap();
    let generation = servers.get("creative").await.unwrap().metadata.generation;
    let out = qualify(kubeconfig, reports, "2.0-format", &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("FAILED  preflight"), "{stdout}");
    assert!(
        stderr.contains("creative (spec.image rehearsal.local/fixture-game:1.0) in namespace games override their image"),
        "{stderr}"
    );
    // Nothing moved: the member still pins its version, at the same generation.
    let gs = servers.get("creative").await.unwrap();
    assert_eq!(gs.metadata.generation, generation);
    assert_ne!(gs.spec.version.as_deref(), Some("2.0-format"));
    servers
        .patch(
            "creative",
            &Default::default(),
            &patch(json!({"spec": {"image": null}})),
        )
        .await
        .unwrap();
}

/// Each of `members` a fresh read shows on the candidate is named in the decision and still has
/// its pre-promotion Backup (no longer the run's) and its snapshot; returns them.
async fn assert_way_backs_kept<'a>(
    client: &kube::Client,
    repo: &str,
    members: &[&'a str],
    md: &str,
    json: &serde_json::Value,
) -> Vec<&'a str> {
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let backups: Api<gameplane_api::backup::Backup> = Api::namespaced(client.clone(), NS);
    let mut left = Vec::new();
    for &m in members {
        let gs = servers.get(m).await.unwrap();
        if gs.spec.version.as_deref() != Some("2.0-format") {
            continue;
        }
        left.push(m);
        assert!(
            json["decision"].as_str().unwrap().contains(m),
            "{m} runs the candidate, the decision does not say so: {md}"
        );
        // Its way back is there: Succeeded, no longer the run's, its snapshot in the repository.
        let way_back = backups
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|b| {
                b.spec.server_ref.name == m
                    && b.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with(&format!("qualify-{m}-pre-")))
            })
            .unwrap_or_else(|| panic!("{m}'s pre-promotion Backup was deleted: {md}"));
        let labels = way_back.metadata.labels.clone().unwrap_or_default();
        assert!(!labels.contains_key(RUN_LABEL), "{labels:?}");
        let name = way_back.metadata.name.clone().unwrap();
        let snapshots = snapshot_tags(repo, Some(&format!("rehearsal-backup={name}")));
        assert_eq!(snapshots.len(), 1, "{m}'s way back snapshot: {snapshots:?}");
        assert!(md.contains(&format!("| {m} | {name} |")), "{md}");
    }
    assert!(
        !left.is_empty(),
        "the second signal came after the put-back: nothing was left to judge: {md}"
    );
    left
}

/// The report's Way back, followed literally with kubectl (its current context the embedded
/// cluster's, as a user's would be): each member in `left` ends Running on 1.0.
async fn follow_way_back(
    client: &kube::Client,
    kubeconfig: &Path,
    dir: &Path,
    md: &str,
    left: &[&str],
) {
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let config = dir.join("kubeconfig-current");
    std::fs::copy(kubeconfig, &config).unwrap();
    let used = Command::new("kubectl")
        .args(["config", "use-context", CONTEXT, "--kubeconfig"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(used.status.success(), "{used:?}");
    let blocks = way_back_blocks(md);
    let mut named: Vec<&str> = blocks.iter().map(|(m, _)| m.as_str()).collect();
    named.sort_unstable();
    let mut left = left.to_vec();
    left.sort_unstable();
    assert_eq!(named, left, "{md}");
    for (member, script) in &blocks {
        let out = Command::new("sh")
            .args(["-euc", script])
            .env("KUBECONFIG", &config)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the way back of {member} failed as written:\n{script}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        await_running(&servers, member).await;
        let gs = servers.get(member).await.unwrap();
        assert_eq!(gs.spec.version.as_deref(), Some("1.0"), "{member}");
    }
}

/// One SIGINT during batch 2 of a compatible candidate: batch 1 stays promoted, and the
/// decision says so; every gate that finished is in the report.
async fn one_signal_in_batch_two(client: &kube::Client, kubeconfig: &Path, reports: &Path) {
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let members = ["survival", "creative"];
    let args = ["--candidate", "1.1-compat"];
    let (status, stdout, stderr) = signalled_in_batch(
        client,
        kubeconfig,
        reports,
        "survival,creative",
        &args,
        &members,
        false,
    )
    .await;
    assert_eq!(status.code(), Some(130), "{stdout}\n{stderr}");
    let (md, _, json) = report(&bundle_of(&stdout));
    let decision = json["decision"].as_str().unwrap();
    assert!(
        decision.contains("promoted 1 batch, then interrupted: survival stays on the candidate"),
        "{md}"
    );
    assert!(!stderr.contains("nothing further was promoted"), "{stderr}");
    assert_eq!(
        servers
            .get("survival")
            .await
            .unwrap()
            .spec
            .version
            .as_deref(),
        Some("1.1-compat")
    );
    assert_eq!(
        servers
            .get("creative")
            .await
            .unwrap()
            .spec
            .version
            .as_deref(),
        Some("1.0"),
        "{md}"
    );
    // Every gate that finished is in the report, the interrupted batch's too.
    let receipts = std::fs::read_to_string(bundle_of(&stdout).join("receipts.jsonl")).unwrap();
    let finished = receipts
        .lines()
        .filter(|l| l.contains("\"kind\":\"gate\""))
        .count();
    assert_eq!(
        json["gates"].as_array().unwrap().len(),
        finished,
        "every gate receipt in the report's table: {md}"
    );
}

/// Claim → PVC UID of the fleet's claims.
async fn labelled_pvcs(client: &kube::Client) -> std::collections::BTreeMap<String, String> {
    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(client.clone(), NS);
    claims
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| Some((c.metadata.name?, c.metadata.uid?)))
        .filter(|(n, _)| !n.contains("canary"))
        .collect()
}

/// The example fleet under `examples/fleet`, set up exactly as its README says — kubectl
/// applying its files, the template pinned by `rehearse cluster images --pin` — qualifies a
/// compatible candidate end to end (every batch promoted), and a bad one halts at the join gate.
#[tokio::test(flavor = "multi_thread")]
async fn the_example_fleet_qualifies_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let reports = dir.path().join("reports");
    let cluster = ClusterUp::start(&kubeconfig, &dir.path().join("state"));
    // `rest:http://127.0.0.1:PORT…`: the PORT the README has the reader copy.
    let port: String = cluster
        .repo_base
        .rsplit(':')
        .next()
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    assert!(
        cluster
            .repo_base
            .starts_with(&format!("rest:http://127.0.0.1:{port}")),
        "{}",
        cluster.repo_base
    );
    let config = dir.path().join("kubeconfig-current");
    std::fs::copy(&kubeconfig, &config).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fleet");
    let sh = |script: &str| {
        let out = Command::new("sh")
            .args(["-euc", script])
            .env("KUBECONFIG", &config)
            .env("PORT", &port)
            .env("REHEARSE", REHEARSE)
            .env("EXAMPLE", &example)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{script}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    sh(&format!("kubectl config use-context {CONTEXT}"));
    sh("kubectl apply -f \"$EXAMPLE/namespace.yaml\"");
    sh("sed \"s/PORT/$PORT/\" \"$EXAMPLE/secrets.yaml\" | kubectl apply -f -");
    sh("\"$REHEARSE\" cluster images --pin \"$EXAMPLE/template.yaml\" | kubectl apply -f -");
    sh("kubectl apply -f \"$EXAMPLE/servers.yaml\"");
    // A newcomer can ask the cluster what a field means (OpenAPI v3 schemas served).
    sh("kubectl explain gametemplate.spec | grep -q versions");
    sh("kubectl explain pods.spec.containers | grep -q 'Container image name'");
    let client = rehearsal::backend::pinned_client(&kubeconfig, CONTEXT)
        .await
        .unwrap();
    let servers: Api<GameServer> = Api::namespaced(client.clone(), "games");
    for m in ["survival", "creative"] {
        await_running(&servers, m).await;
    }
    let template: GameTemplate = Api::all(client.clone())
        .get("minecraft-example")
        .await
        .unwrap();
    assert!(
        template
            .spec
            .versions
            .iter()
            .all(|v| v.image.contains("@sha256:")),
        "{:?}",
        template.spec.versions
    );
    let run = |candidate: &str| {
        Command::new(REHEARSE)
            .args(["qualify", "--cluster", "existing", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(["--context", CONTEXT, "--namespace", "games"])
            .args(["--template", "minecraft-example", "--source", "survival"])
            .args(["--fleet", "survival,creative", "--candidate", candidate])
            .arg("--reports")
            .arg(&reports)
            .output()
            .unwrap()
    };
    let out = run("1.1-compat");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("promoted 1.1-compat in 2 batch(es)"),
        "{stdout}"
    );
    let out = run("http-only");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains(JOIN_GATE), "{stderr}");
}
