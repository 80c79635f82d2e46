//! The Module controller against a real OCI registry (Debian's docker-registry): a pinned bundle
//! installs its GameTemplate; a moved tag, a missing source, a plain-HTTP source not marked
//! insecure, a missing tag and a bundle of another module each fail with their reason and write
//! no template.

mod common;

use common::*;
use gameplane_api::GameTemplate;
use gameplane_api::conditions;
use gameplane_api::module::{
    BUNDLE_ARTIFACT_TYPE, BUNDLE_LAYER_MEDIA_TYPE, BundleDocument, DIGEST_MISMATCH, INSTALLED,
    Module, ModulePhase, ModuleRef, ModuleSource, ModuleSourceSpec, ModuleSpec, OciSource,
    PULL_FAILED, SourceRef,
};
use kube::api::{Api, PostParams};
use kube::runtime::wait::Condition;
use rehearsal::registry::{LocalRegistry, push_artifact};

/// A registry, and a ModuleSource `src` (insecure, as a local registry is) serving under it.
struct Bundles {
    registry: LocalRegistry,
    _dir: tempfile::TempDir,
}

impl Bundles {
    async fn start(rig: &Rig, insecure: bool) -> Bundles {
        let dir = tempfile::tempdir().expect("registry tempdir");
        let registry = LocalRegistry::start(dir.path(), &Default::default())
            .await
            .expect("start docker-registry (scripts/setup.sh installs it)");
        let source = ModuleSource {
            metadata: meta("src"),
            spec: ModuleSourceSpec {
                type_: "oci".into(),
                oci: Some(OciSource {
                    url: format!("{}/modules", registry.addr()),
                    insecure: Some(insecure),
                    modules: vec![ModuleRef { name: "mc".into() }],
                }),
            },
        };
        Api::<ModuleSource>::all(rig.client.clone())
            .create(&PostParams::default(), &source)
            .await
            .expect("create ModuleSource");
        Bundles {
            registry,
            _dir: dir,
        }
    }

    /// Pushes a bundle of module `name` as `modules/mc:<tag>`; returns its manifest digest.
    async fn push(&self, tag: &str, name: &str, display_name: &str) -> String {
        let mut template = template("unused", None).spec;
        template.display_name = display_name.into();
        let doc = BundleDocument {
            name: name.into(),
            version: tag.into(),
            template,
        };
        push_artifact(
            &self.registry.addr().to_string(),
            "modules/mc",
            tag,
            BUNDLE_ARTIFACT_TYPE,
            BUNDLE_LAYER_MEDIA_TYPE,
            &serde_json::to_vec(&doc).unwrap(),
        )
        .await
        .expect("push the bundle")
    }
}

fn module(name: &str, source: &str, version: &str, digest: Option<&str>) -> Module {
    Module {
        metadata: meta(name),
        spec: ModuleSpec {
            source: SourceRef {
                name: source.into(),
            },
            name: "mc".into(),
            version: Some(version.into()),
            digest: digest.map(str::to_string),
        },
        status: None,
    }
}

/// The operator's verdict on a Module: Ready or Failed.
fn judged() -> impl Condition<Module> {
    |m: Option<&Module>| {
        m.and_then(|m| m.status.as_ref())
            .and_then(|s| s.phase)
            .is_some_and(|p| matches!(p, ModulePhase::Ready | ModulePhase::Failed))
    }
}

async fn install(rig: &Rig, m: Module) -> Module {
    let api = Api::<Module>::all(rig.client.clone());
    let name = m.metadata.name.clone().unwrap();
    api.create(&PostParams::default(), &m)
        .await
        .expect("create Module");
    wait_for(&api, &name, "judged", judged()).await
}

/// `(phase, Ready reason, Ready message)` of a judged Module.
fn verdict(m: &Module) -> (Option<ModulePhase>, String, String) {
    let status = m.status.clone().unwrap_or_default();
    let ready = conditions::find(&status.conditions, conditions::types::READY);
    (
        status.phase,
        ready.map(|c| c.reason.clone()).unwrap_or_default(),
        ready.map(|c| c.message.clone()).unwrap_or_default(),
    )
}

async fn template_of(rig: &Rig, name: &str) -> Option<GameTemplate> {
    Api::<GameTemplate>::all(rig.client.clone())
        .get_opt(name)
        .await
        .expect("get GameTemplate")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_bundle_installs_and_a_moved_tag_is_refused_naming_both_digests() {
    let rig = Rig::start(None).await;
    let bundles = Bundles::start(&rig, true).await;
    let pinned = bundles.push("1.1", "mc", "first").await;

    let ok = install(&rig, module("pinned", "src", "1.1", Some(&pinned))).await;
    let (phase, reason, _) = verdict(&ok);
    assert_eq!(phase, Some(ModulePhase::Ready), "{}", dump(&ok));
    assert_eq!(reason, INSTALLED);
    let status = ok.status.clone().unwrap();
    assert_eq!(status.applied_digest.as_deref(), Some(pinned.as_str()));
    assert_eq!(status.applied_version.as_deref(), Some("1.1"));
    let t = template_of(&rig, "pinned")
        .await
        .expect("the bundle's template");
    assert_eq!(t.spec.display_name, "first");
    let owner = &t.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Module", "pinned")
    );

    let moved = bundles.push("1.1", "mc", "second").await;
    assert_ne!(moved, pinned);
    let refused = install(&rig, module("moved", "src", "1.1", Some(&pinned))).await;
    let (phase, reason, message) = verdict(&refused);
    assert_eq!(phase, Some(ModulePhase::Failed), "{}", dump(&refused));
    assert_eq!(reason, DIGEST_MISMATCH);
    assert!(
        message.contains(&pinned) && message.contains(&moved),
        "{message}"
    );
    let status = refused.status.clone().unwrap();
    assert_eq!(status.applied_digest, None);
    assert_eq!(status.last_error.as_deref(), Some(message.as_str()));
    assert!(template_of(&rig, "moved").await.is_none());

    // Unpinned, the tag's current content installs.
    let unpinned = install(&rig, module("unpinned", "src", "1.1", None)).await;
    assert_eq!(
        unpinned.status.unwrap().applied_digest.as_deref(),
        Some(moved.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_that_cannot_be_pulled_fails_with_its_reason_and_writes_no_template() {
    let rig = Rig::start(None).await;
    let bundles = Bundles::start(&rig, true).await;
    bundles.push("other", "not-mc", "wrong module").await;

    let cases = [
        (
            "no-source",
            module("no-source", "absent", "1.1", None),
            "does not exist",
        ),
        ("no-tag", module("no-tag", "src", "9.9", None), "HTTP 404"),
        (
            "other-module",
            module("other-module", "src", "other", None),
            "not \"mc\"",
        ),
    ];
    for (name, m, needle) in cases {
        let failed = install(&rig, m).await;
        let (phase, reason, message) = verdict(&failed);
        assert_eq!(
            phase,
            Some(ModulePhase::Failed),
            "{name}: {}",
            dump(&failed)
        );
        assert_eq!(reason, PULL_FAILED, "{name}");
        assert!(message.contains(needle), "{name}: {message}");
        assert!(template_of(&rig, name).await.is_none(), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_source_not_marked_insecure_is_refused() {
    let rig = Rig::start(None).await;
    let bundles = Bundles::start(&rig, false).await;
    let digest = bundles.push("1.1", "mc", "first").await;
    let failed = install(&rig, module("secure", "src", "1.1", Some(&digest))).await;
    let (phase, reason, message) = verdict(&failed);
    assert_eq!(phase, Some(ModulePhase::Failed));
    assert_eq!(reason, PULL_FAILED);
    assert!(message.contains("insecure: true"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundle_digest_unchecked_mutant_installs_a_moved_tag() {
    let rig = Rig::start(Some("bundle-digest-unchecked")).await;
    let bundles = Bundles::start(&rig, true).await;
    let pinned = bundles.push("1.1", "mc", "first").await;
    let moved = bundles.push("1.1", "mc", "second").await;
    let m = install(&rig, module("moved", "src", "1.1", Some(&pinned))).await;
    assert_eq!(verdict(&m).0, Some(ModulePhase::Ready), "{}", dump(&m));
    assert_eq!(
        m.status.unwrap().applied_digest.as_deref(),
        Some(moved.as_str())
    );
}

/// Judged at generation `generation`: Ready or Failed for that spec.
fn judged_at(generation: i64) -> impl Condition<Module> {
    move |m: Option<&Module>| {
        m.and_then(|m| m.status.as_ref()).is_some_and(|s| {
            s.observed_generation == Some(generation)
                && matches!(s.phase, Some(ModulePhase::Ready | ModulePhase::Failed))
        })
    }
}

async fn repin(rig: &Rig, name: &str, digest: &str, generation: i64) -> Module {
    let api = Api::<Module>::all(rig.client.clone());
    api.patch(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"digest": digest}})),
    )
    .await
    .expect("re-pin the Module");
    wait_for(&api, name, "judged again", judged_at(generation)).await
}

/// A spec change after a verdict is judged again: a re-pin to the tag's new content installs
/// it (the old digest kept as `previousDigest`), and a re-pin to content nobody serves fails
/// while the installed template and `appliedDigest` stay as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repinned_module_is_judged_again_and_a_failed_upgrade_keeps_the_installed_bundle() {
    let rig = Rig::start(None).await;
    let bundles = Bundles::start(&rig, true).await;
    let first = bundles.push("1.1", "mc", "first").await;
    let m = install(&rig, module("m", "src", "1.1", Some(&first))).await;
    assert_eq!(verdict(&m).0, Some(ModulePhase::Ready), "{}", dump(&m));

    let second = bundles.push("1.1", "mc", "second").await;
    let m = repin(&rig, "m", &second, 2).await;
    let status = m.status.clone().unwrap();
    assert_eq!(status.phase, Some(ModulePhase::Ready), "{}", dump(&m));
    assert_eq!(status.applied_digest.as_deref(), Some(second.as_str()));
    assert_eq!(status.previous_digest.as_deref(), Some(first.as_str()));
    assert_eq!(
        template_of(&rig, "m").await.unwrap().spec.display_name,
        "second"
    );

    let nobody = format!("sha256:{}", "0".repeat(64));
    let m = repin(&rig, "m", &nobody, 3).await;
    let (phase, reason, message) = verdict(&m);
    assert_eq!(
        (phase, reason.as_str()),
        (Some(ModulePhase::Failed), DIGEST_MISMATCH)
    );
    assert!(
        message.contains(&nobody) && message.contains(&second),
        "{message}"
    );
    let status = m.status.unwrap();
    assert_eq!(status.applied_digest.as_deref(), Some(second.as_str()));
    assert_eq!(
        template_of(&rig, "m").await.unwrap().spec.display_name,
        "second"
    );
}
