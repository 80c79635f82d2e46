//! `GameTemplate`: a cluster-scoped catalogue entry for one game and its versions (CONTRACT A).

use k8s_openapi::api::core::v1::{EnvVar, Probe};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gameserver::ExtraVolume;

/// What a game is and how to run it.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[kube(
    group = "gameplane.local",
    version = "v1alpha1",
    kind = "GameTemplate",
    shortname = "gt",
    shortname = "gtmpl",
    category = "gameplane",
    doc = "GameTemplate describes a game, its versions and how to run and quiesce it.",
    printcolumn(name = "Game", type_ = "string", json_path = ".spec.game"),
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.version"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct GameTemplateSpec {
    /// Human-readable name.
    #[schemars(length(min = 1))]
    pub display_name: String,
    /// Game identifier, e.g. `minecraft-java`.
    #[schemars(length(min = 1))]
    pub game: String,
    /// The template's own version label.
    #[schemars(length(min = 1))]
    pub version: String,
    /// Image used when no `versions[]` entry applies.
    #[schemars(length(min = 1))]
    pub image: String,
    /// Selectable game versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<GameVersion>,
    /// Environment for every version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Ports the game listens on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<GamePort>,
    /// Storage defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<TemplateStorage>,
    /// How to reach the game's console.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcon: Option<RconSpec>,
    /// What the agent can do with the game.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<TemplateCapabilities>,
    /// The agent sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentSpec>,
    /// Default readiness, liveness and startup probes of the game container; the operator
    /// supplies its own defaults for those unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<TemplateProbes>,
}

/// One selectable version.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GameVersion {
    /// The id a GameServer's `spec.version` names (dots allowed).
    #[schemars(extend("pattern" = crate::VERSION_ID_PATTERN, "maxLength" = 40))]
    pub id: String,
    /// Human-readable name.
    #[schemars(length(min = 1, max = 128))]
    pub display_name: String,
    /// Game image of this version.
    #[schemars(length(min = 1))]
    pub image: String,
    /// Environment of this version (after the template's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// The entry used when a server names no version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// The game's own version string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 32))]
    pub game_version: Option<String>,
}

/// A port of the game container.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GamePort {
    /// Port name (also the Service port name).
    #[schemars(length(min = 1))]
    pub name: String,
    /// Container port.
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: i32,
    /// `TCP` or `UDP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["TCP", "UDP"]))]
    pub protocol: Option<String>,
}

/// Storage defaults of a template.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateStorage {
    /// Default world claim size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = crate::QUANTITY_PATTERN))]
    pub size: Option<Quantity>,
    /// World mount path (default `/data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_path: Option<String>,
    /// Default extra world claims.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<ExtraVolume>,
}

/// Console access.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RconSpec {
    /// `source` for Minecraft RCON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = crate::RCON_PROTOCOLS))]
    pub protocol: Option<String>,
    /// RCON port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// Secret key holding the RCON password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret_ref: Option<SecretKeyRef>,
    /// Name of a game env var holding the RCON password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
}

/// A key in a Secret of the same namespace.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
pub struct SecretKeyRef {
    /// Secret name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Key in the Secret.
    #[schemars(length(min = 1))]
    pub key: String,
}

/// Capabilities of a game.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateCapabilities {
    /// Console commands that make the world consistent on disk and back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiesce: Option<QuiesceCapability>,
}

/// Quiesce commands (Minecraft: `[save-off, "save-all flush"]` / `[save-on]`).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuiesceCapability {
    /// Commands run by `POST /quiesce`.
    pub quiesce: Vec<String>,
    /// Commands run by `POST /unquiesce`.
    pub unquiesce: Vec<String>,
    /// A regex on command output that marks a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_pattern: Option<String>,
}

/// The agent sidecar.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    /// Agent image; the operator's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Run no agent sidecar (CONTRACT B5): the game cannot be quiesced, so its backups are raw
    /// copies whatever `spec.quiesce` asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// The game container's probes (Kubernetes' own `Probe` type, as in Gameplane's CRD).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateProbes {
    /// Readiness probe: a Ready game pod accepts connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness: Option<Probe>,
    /// Liveness probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness: Option<Probe>,
    /// Startup probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup: Option<Probe>,
}

impl GameTemplate {
    /// Whether the template runs no agent sidecar (`spec.agent.disabled`).
    pub fn agent_disabled(&self) -> bool {
        self.spec
            .agent
            .as_ref()
            .and_then(|a| a.disabled)
            .unwrap_or(false)
    }

    /// The version a server runs: `requested` by id, else the `default: true` entry, else the
    /// first entry; `None` when `requested` names no entry (or there are no entries).
    pub fn select_version(&self, requested: Option<&str>) -> Option<&GameVersion> {
        let versions = &self.spec.versions;
        match requested.filter(|r| !r.is_empty()) {
            Some(id) => versions.iter().find(|v| v.id == id),
            None => versions
                .iter()
                .find(|v| v.default == Some(true))
                .or_else(|| versions.first()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(versions: &[(&str, bool)]) -> GameTemplate {
        GameTemplate::new(
            "mc",
            GameTemplateSpec {
                versions: versions
                    .iter()
                    .map(|(id, default)| GameVersion {
                        id: id.to_string(),
                        image: format!("img:{id}"),
                        default: Some(*default),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
        )
    }

    #[test]
    fn version_selection_follows_the_contract() {
        let t = template(&[("1.0", false), ("1.1", true), ("2.0", false)]);
        let id = |r: Option<&str>| t.select_version(r).map(|v| v.id.clone());
        assert_eq!(id(None).as_deref(), Some("1.1"), "default entry");
        assert_eq!(
            id(Some("")).as_deref(),
            Some("1.1"),
            "empty = default entry"
        );
        assert_eq!(id(Some("2.0")).as_deref(), Some("2.0"), "explicit pin");
        assert_eq!(id(Some("9.9")), None, "unknown id");
        let no_default = template(&[("a", false), ("b", false)]);
        assert_eq!(
            no_default.select_version(None).unwrap().id,
            "a",
            "first entry"
        );
        assert!(template(&[]).select_version(None).is_none());
    }
}
