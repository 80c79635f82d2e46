//! Every object the cases create (Secrets, GameTemplates, GameServers, Backups, Restores) is
//! admitted by an API server that serves the project's own generated CRDs and, when present, the
//! real Gameplane CRDs (`../shared/reference/gameplane-crds`, or `GAMEPLANE_REFERENCE_CRDS`):
//! applied with `fieldValidation=Strict` (a field the schema does not know is an error, not
//! silently pruned) through the embedded API server's real schema validation (enums, patterns,
//! lengths, ranges). With `CI=true` a missing reference directory is a failure.
//!
//! Defect (issue 13, item 6): the fixture template said `rcon.protocol: minecraft`, which
//! Gameplane's enum rejects; nothing checked the fixtures against Gameplane's schemas.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use gameplane_api::{Backup, GameServer, GameTemplate, Restore};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use rehearsal::fixture::{self, AgentKind, FixtureOptions, Markers};
use rehearsal::wait::{await_condition, conditions};
use rehearsal_apiserver::{ApiServer, ApiServerConfig, DEFAULT_CONTEXT};
use serde::Serialize;
use serde::de::DeserializeOwned;

const NS: &str = "fixture-check";

fn reference_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("GAMEPLANE_REFERENCE_CRDS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference/gameplane-crds")
        });
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but the reference Gameplane CRDs are not at {}; provide them there or set GAMEPLANE_REFERENCE_CRDS",
        dir.display()
    );
    eprintln!(
        "reference CRDs not at {}: only the project's own CRDs were checked",
        dir.display()
    );
    None
}

/// The real CRDs of the kinds the project serves (controller-gen names: `<group>_<plural>.yaml`).
fn reference_crds(dir: &std::path::Path) -> Vec<CustomResourceDefinition> {
    gameplane_api::crds::all()
        .iter()
        .map(|ours| {
            let path = dir.join(format!(
                "{}_{}.yaml",
                ours.spec.group, ours.spec.names.plural
            ));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

struct Server {
    server: ApiServer,
    client: kube::Client,
    _dir: tempfile::TempDir,
}

async fn serve(crds: Vec<CustomResourceDefinition>) -> Server {
    let server = ApiServer::start(ApiServerConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let client = rehearsal::backend::pinned_client(&kubeconfig, DEFAULT_CONTEXT)
        .await
        .unwrap();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap();
        api.create(&PostParams::default(), &crd)
            .await
            .unwrap_or_else(|e| panic!("create CRD {name}: {e}"));
        await_condition(
            &api,
            &name,
            conditions::status_condition("Established", "True"),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).unwrap(),
        )
        .await
        .unwrap();
    Server {
        server,
        client,
        _dir: dir,
    }
}

/// Server-side applies `obj` with strict field validation; the error line if it is refused.
async fn apply<K>(api: &Api<K>, obj: &K) -> Result<(), String>
where
    K: kube::Resource + Serialize + DeserializeOwned + Clone + std::fmt::Debug,
    K::DynamicType: Default,
{
    let name = obj.meta().name.clone().unwrap();
    let params = PatchParams::apply("rehearsal-fixture-check").validation_strict();
    api.patch(&name, &params, &Patch::Apply(obj))
        .await
        .map(|_| ())
        .map_err(|e| format!("{} {name}: {e}", K::kind(&Default::default())))
}

/// Every object the cases create, applied; returns the refusals.
async fn apply_every_fixture(client: &kube::Client) -> Vec<String> {
    let mut refused = Vec::new();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let url = "rest:http://127.0.0.1:8000/rh-case-1";
    for s in fixture::secrets(url)
        .into_iter()
        .chain([fixture::bad_repo_secret(url)])
    {
        refused.extend(apply(&secrets, &s).await.err());
    }

    let templates: Api<GameTemplate> = Api::all(client.clone());
    let pinned: BTreeMap<String, String> = [
        fixture::VERSION_COMPAT,
        fixture::VERSION_FORMAT,
        fixture::VERSION_HTTP_ONLY,
    ]
    .iter()
    .map(|v| {
        (
            v.to_string(),
            format!("{}@sha256:{}", fixture::GAME_IMAGE_REPO, "ab".repeat(32)),
        )
    })
    .collect();
    let options = [
        ("fx-current", FixtureOptions::default()),
        (
            "fx-legacy",
            FixtureOptions {
                agent: AgentKind::Legacy,
                ..Default::default()
            },
        ),
        (
            "fx-pinned",
            FixtureOptions {
                pinned,
                ..Default::default()
            },
        ),
        (
            "fx-gameplane",
            FixtureOptions {
                provides_agent: false,
                ..Default::default()
            },
        ),
    ];
    for (name, options) in &options {
        refused.extend(
            apply(&templates, &fixture::template(name, options))
                .await
                .err(),
        );
    }

    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let versions = [
        fixture::VERSION_STABLE,
        fixture::VERSION_COMPAT,
        fixture::VERSION_FORMAT,
        fixture::VERSION_HTTP_ONLY,
        fixture::VERSION_UNPULLABLE,
        fixture::VERSION_REFUSE_LOGIN,
        fixture::VERSION_STALL_CONFIG,
    ];
    for (i, version) in versions.iter().enumerate() {
        for suspend in [false, true] {
            let name = format!("gs-{i}-{suspend}");
            let markers = Markers::for_server(NS, &name);
            let gs = fixture::server(&name, "fx-current", version, &markers, suspend);
            refused.extend(apply(&servers, &gs).await.err());
        }
    }

    let backups: Api<Backup> = Api::namespaced(client.clone(), NS);
    for (name, repo, quiesce) in [
        ("b-live", fixture::REPO_SECRET, true),
        ("b-plain", fixture::REPO_SECRET, false),
        ("b-wrong-password", fixture::BAD_REPO_SECRET, true),
    ] {
        refused.extend(
            apply(
                &backups,
                &fixture::backup(name, "gs-0-false", repo, quiesce),
            )
            .await
            .err(),
        );
    }
    let restores: Api<Restore> = Api::namespaced(client.clone(), NS);
    refused.extend(
        apply(&restores, &fixture::restore("r-1", "b-live", "gs-0-false"))
            .await
            .err(),
    );
    refused
}

/// The schemas are enforced, not just loaded: the defect's value and a bad version id fail.
async fn known_bad_values_are_refused(client: &kube::Client) {
    let templates: Api<GameTemplate> = Api::all(client.clone());
    let mut t = fixture::template("fx-bad-rcon", &FixtureOptions::default());
    t.spec.rcon.as_mut().unwrap().protocol = Some("minecraft".into());
    let err = apply(&templates, &t).await.unwrap_err();
    assert!(err.contains("rcon.protocol"), "{err}");
    let servers: Api<GameServer> = Api::namespaced(client.clone(), NS);
    let markers = Markers::for_server(NS, "gs-bad");
    let gs = fixture::server("gs-bad", "fx-current", "Not_An_Id", &markers, false);
    let err = apply(&servers, &gs).await.unwrap_err();
    assert!(err.contains("spec.version"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_object_validates_against_the_projects_crds() {
    let s = serve(gameplane_api::crds::all()).await;
    let refused = apply_every_fixture(&s.client).await;
    assert!(refused.is_empty(), "refused:\n  {}", refused.join("\n  "));
    known_bad_values_are_refused(&s.client).await;
    s.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_object_validates_against_the_real_gameplane_crds() {
    let Some(dir) = reference_dir() else {
        return;
    };
    let s = serve(reference_crds(&dir)).await;
    let refused = apply_every_fixture(&s.client).await;
    assert!(refused.is_empty(), "refused:\n  {}", refused.join("\n  "));
    known_bad_values_are_refused(&s.client).await;
    s.server.shutdown().await;
}

/// For Gameplane the template provides only the game container (Gameplane injects its own agent
/// over mutual TLS); for the reference operator it names the fixture agent. RCON is `source`.
#[test]
fn the_template_names_an_agent_only_for_the_reference_operator() {
    use rehearsal::deploy::profile::OperatorProfile;
    let reference = fixture::template("t", &FixtureOptions::default());
    assert_eq!(
        reference.spec.agent.and_then(|a| a.image).as_deref(),
        Some(fixture::AGENT_IMAGE)
    );
    assert!(OperatorProfile::Reference.template_provides_agent());
    assert!(!OperatorProfile::Gameplane.template_provides_agent());
    let gameplane = fixture::template(
        "t",
        &FixtureOptions {
            provides_agent: false,
            ..Default::default()
        },
    );
    assert_eq!(gameplane.spec.agent, None);
    assert_eq!(
        gameplane.spec.rcon.and_then(|r| r.protocol).as_deref(),
        Some("source")
    );
}
