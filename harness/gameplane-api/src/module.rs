//! `Module` and `ModuleSource`: a game's template shipped as a module bundle (an OCI artifact),
//! installed by reference and pinned by digest (CONTRACT C.8).
//!
//! A `ModuleSource` names where bundles are pulled from (here: an OCI registry); a `Module`
//! installs one bundle from it (`<oci.url>/<name>:<version>`) and the operator keeps a
//! GameTemplate named after the Module from the bundle's content. With `spec.digest` set, the
//! operator resolves the reference, and when the served manifest's digest differs from the pin
//! (a tag moved to new content) the install fails with reason `DigestMismatch` naming both
//! digests, and no GameTemplate is written or changed.
//!
//! The types cover the fields the harness and the reference operator use; their names and
//! types follow Gameplane's CRDs (checked by `tests/reference_crds.rs` when those are present).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The media type of a module bundle's one layer: the bundle document ([`BundleDocument`]) as
/// JSON.
pub const BUNDLE_LAYER_MEDIA_TYPE: &str = "application/vnd.gameplane.module.bundle.v1+json";
/// The artifact type a module bundle's manifest declares.
pub const BUNDLE_ARTIFACT_TYPE: &str = "application/vnd.gameplane.module.v1";
/// The condition reason of a bundle whose served digest differs from the pin.
pub const DIGEST_MISMATCH: &str = "DigestMismatch";
/// The condition reason of a bundle that could not be fetched or read.
pub const PULL_FAILED: &str = "PullFailed";
/// The condition reason of an installed bundle.
pub const INSTALLED: &str = "Installed";

/// One installed module bundle.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[kube(
    group = "gameplane.local",
    version = "v1alpha1",
    kind = "Module",
    shortname = "mod",
    status = "ModuleStatus",
    doc = "Module is an installed instance of a Gameplane module bundle; the operator maintains a GameTemplate owned by it.",
    printcolumn(name = "Source", type_ = "string", json_path = ".spec.source.name"),
    printcolumn(name = "Module", type_ = "string", json_path = ".spec.name"),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.appliedVersion"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ModuleSpec {
    /// The ModuleSource the bundle is pulled from.
    pub source: SourceRef,
    /// The module's name within the source (the OCI repository below the source's URL).
    #[schemars(length(min = 1))]
    pub name: String,
    /// The bundle version (the OCI tag).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The pinned bundle content: the OCI manifest digest (`sha256:…`). A served bundle with
    /// another digest fails the install with [`DIGEST_MISMATCH`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A reference to a ModuleSource by name.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
pub struct SourceRef {
    /// The ModuleSource's name.
    #[serde(default)]
    pub name: String,
}

/// Observed state of a Module.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleStatus {
    /// Coarse summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ModulePhase>,
    /// The manifest digest of the bundle that produced the current GameTemplate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_digest: Option<String>,
    /// The bundle version materialised into the GameTemplate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_version: Option<String>,
    /// The digest that backed the previously applied bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_digest: Option<String>,
    /// The GameTemplate this Module owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_template: Option<String>,
    /// The last failed reconcile, for humans (cleared on success).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// `Ready` (reason [`INSTALLED`], [`DIGEST_MISMATCH`] or [`PULL_FAILED`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Module phase.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
pub enum ModulePhase {
    /// Not resolved yet.
    Pending,
    /// The bundle is being pulled.
    Pulling,
    /// The GameTemplate is current with the pinned bundle.
    Ready,
    /// See the conditions and `lastError`.
    Failed,
}

/// Where module bundles are pulled from.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[kube(
    group = "gameplane.local",
    version = "v1alpha1",
    kind = "ModuleSource",
    shortname = "msrc",
    shortname = "modsource",
    doc = "ModuleSource is a store that Gameplane pulls module bundles from.",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ModuleSourceSpec {
    /// The kind of store; the reference operator pulls from `oci` sources only.
    #[serde(rename = "type", default = "default_type")]
    #[schemars(extend("enum" = ["oci", "git", "http", "local", "upload"]))]
    pub type_: String,
    /// An OCI registry holding module bundle artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<OciSource>,
}

fn default_type() -> String {
    "oci".into()
}

/// An OCI source: bundles are `<url>/<module name>:<version>`.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciSource {
    /// The registry/repository prefix, e.g. `127.0.0.1:5000/gameplane-modules`.
    #[schemars(length(min = 1))]
    pub url: String,
    /// Plain HTTP (a local registry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// The modules this source exposes.
    pub modules: Vec<ModuleRef>,
}

/// A module within a source, by name.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
pub struct ModuleRef {
    /// The module's name.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// What a module bundle's layer holds: the module's name and version and the GameTemplate spec
/// it installs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleDocument {
    /// The module's name (matches the source's module name).
    pub name: String,
    /// The bundle's version.
    pub version: String,
    /// The GameTemplate the bundle installs.
    pub template: crate::GameTemplateSpec,
}

impl OciSource {
    /// The `(registry host, repository)` of module `name` in this source.
    pub fn repository(&self, name: &str) -> (String, String) {
        let url = self
            .url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_start_matches("oci://")
            .trim_end_matches('/');
        match url.split_once('/') {
            Some((host, prefix)) => (host.to_string(), format!("{prefix}/{name}")),
            None => (url.to_string(), name.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_splits_host_and_prefix() {
        let oci = |url: &str| OciSource {
            url: url.into(),
            ..Default::default()
        };
        assert_eq!(
            oci("127.0.0.1:5000/gameplane-modules").repository("fixture-game"),
            (
                "127.0.0.1:5000".into(),
                "gameplane-modules/fixture-game".into()
            )
        );
        assert_eq!(
            oci("oci://registry:5000/").repository("m"),
            ("registry:5000".into(), "m".into())
        );
    }
}
