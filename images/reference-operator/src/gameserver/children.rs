//! The objects a GameServer owns, built from the server, its template and the selected version
//! (CONTRACT A "Children of GameServer"). Pure functions: the reconciler only creates or
//! patches what these return.

use std::collections::BTreeMap;

use gameplane_api::names::{self, containers, labels, ports};
use gameplane_api::{GameServer, GameTemplate, GameVersion};
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, ObjectFieldSelector, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Probe,
    SecretKeySelector, Service, ServicePort, ServiceSpec, TCPSocketAction, Volume, VolumeMount,
    VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ObjectMeta;

/// Pod template annotation naming the version the pod runs.
pub const VERSION_ANNOTATION: &str = "gameplane.local/version";
/// StatefulSet annotation with a digest of the desired spec, so unchanged specs are not
/// patched (a patch would wake every watcher).
pub const SPEC_HASH_ANNOTATION: &str = "gameplane.local/spec-hash";
/// Default claim size when neither server nor template gives one.
pub const DEFAULT_SIZE: &str = "1Gi";
/// Grace period of the game pod: long enough for a save on SIGTERM.
pub const TERMINATION_GRACE_SECONDS: i64 = 15;

/// Everything a GameServer owns.
#[derive(Clone, Debug)]
pub struct Children {
    /// World, extra and mods claims, in that order.
    pub pvcs: Vec<PersistentVolumeClaim>,
    /// `<gs>` and `<gs>-agent`.
    pub services: Vec<Service>,
    /// `<gs>`.
    pub statefulset: StatefulSet,
}

/// Inputs of [`build`].
pub struct Inputs<'a> {
    /// The server.
    pub server: &'a GameServer,
    /// Its template.
    pub template: &'a GameTemplate,
    /// The selected version (None: the template's top-level image, version id = template
    /// `spec.version`).
    pub version: Option<&'a GameVersion>,
    /// The controller owner reference to the server.
    pub owner: OwnerReference,
    /// Agent image when the template names none.
    pub default_agent_image: &'a str,
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_string(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Appends `add` to `env`, replacing an earlier variable of the same name in place.
fn merge_env(env: &mut Vec<EnvVar>, add: impl IntoIterator<Item = EnvVar>) {
    for var in add {
        match env.iter_mut().find(|e| e.name == var.name) {
            Some(existing) => *existing = var,
            None => env.push(var),
        }
    }
}

/// The RCON password variable for the agent (and the game, which the fixture reads as
/// `RCON_PASSWORD` too), from the template's `rcon` settings.
fn rcon_password(template: &GameTemplate, game_env: &[EnvVar]) -> Option<EnvVar> {
    let rcon = template.spec.rcon.as_ref()?;
    if let Some(secret) = &rcon.password_secret_ref {
        return Some(EnvVar {
            name: "RCON_PASSWORD".into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret.name.clone(),
                    key: secret.key.clone(),
                    optional: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    let from = rcon.password_env.as_deref().unwrap_or("RCON_PASSWORD");
    game_env.iter().find(|e| e.name == from).map(|e| EnvVar {
        name: "RCON_PASSWORD".into(),
        ..e.clone()
    })
}

fn quantity(q: Option<&Quantity>) -> Quantity {
    q.cloned()
        .unwrap_or_else(|| Quantity(DEFAULT_SIZE.to_string()))
}

/// The version id the mods claim is named after.
pub fn version_id(template: &GameTemplate, version: Option<&GameVersion>) -> String {
    version
        .map(|v| v.id.clone())
        .unwrap_or_else(|| template.spec.version.clone())
}

fn pvc(
    name: String,
    namespace: &str,
    owner: &OwnerReference,
    size: Quantity,
    class: Option<String>,
) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_string()),
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: class,
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_string(), size)])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn claim_volume(volume: &str, claim: String) -> Volume {
    Volume {
        name: volume.to_string(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim,
            read_only: None,
        }),
        ..Default::default()
    }
}

fn mount(volume: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: volume.to_string(),
        mount_path: path.to_string(),
        ..Default::default()
    }
}

/// The pod labels (also the StatefulSet selector).
pub fn pod_labels(gs: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (labels::SERVER.to_string(), gs.to_string()),
        (labels::COMPONENT.to_string(), "game".to_string()),
        (
            labels::MANAGED_BY_KEY.to_string(),
            labels::MANAGED_BY.to_string(),
        ),
    ])
}

/// The extra world names of a server: its own `storage.extra`, else its template's.
pub fn extra_names(server: &GameServer, template: Option<&GameTemplate>) -> Vec<String> {
    let own = server.extra_names();
    if !own.is_empty() {
        return own;
    }
    template
        .and_then(|t| t.spec.storage.as_ref())
        .map(|s| s.extra.iter().map(|e| e.name.clone()).collect())
        .unwrap_or_default()
}

/// Builds the children of a server.
pub fn build(inputs: &Inputs<'_>) -> Children {
    let server = inputs.server;
    let template = inputs.template;
    let gs = server.metadata.name.clone().unwrap_or_default();
    let ns = server.metadata.namespace.clone().unwrap_or_default();
    let vid = version_id(template, inputs.version);
    let (pvcs, volumes, mounts) = claims(inputs, &gs, &ns, &vid);
    let (game_env, agent_env) = environments(inputs);
    let image = server
        .spec
        .image
        .clone()
        .or_else(|| inputs.version.map(|v| v.image.clone()))
        .unwrap_or_else(|| template.spec.image.clone());
    let game = game_container(template, image, game_env, mounts);
    let agent = agent_container(inputs, agent_env);
    let labels = pod_labels(&gs);
    let replicas = if server.wants_stopped() { 0 } else { 1 };
    let owner = &inputs.owner;
    let statefulset = StatefulSet {
        metadata: ObjectMeta {
            name: Some(names::statefulset(&gs)),
            namespace: Some(ns.clone()),
            owner_references: Some(vec![owner.clone()]),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: StatefulSetSpec {
            replicas: Some(replicas),
            service_name: Some(names::game_service(&gs)),
            pod_management_policy: Some("Parallel".into()),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    annotations: Some(BTreeMap::from([(VERSION_ANNOTATION.to_string(), vid)])),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    // A template with its agent disabled runs the game alone (CONTRACT B5).
                    containers: if template.agent_disabled() {
                        vec![game]
                    } else {
                        vec![game, agent]
                    },
                    volumes: Some(volumes),
                    termination_grace_period_seconds: Some(TERMINATION_GRACE_SECONDS),
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    };

    let services = services(template, owner, &gs, &ns, &labels);
    Children {
        pvcs,
        services,
        statefulset,
    }
}

/// The world, extra and mods claims with the pod volumes and game mounts that use them.
fn claims(
    inputs: &Inputs<'_>,
    gs: &str,
    ns: &str,
    vid: &str,
) -> (Vec<PersistentVolumeClaim>, Vec<Volume>, Vec<VolumeMount>) {
    let (server, template, owner) = (inputs.server, inputs.template, &inputs.owner);
    let tstorage = template.spec.storage.clone().unwrap_or_default();
    let sstorage = server.spec.storage.clone().unwrap_or_default();
    let class = sstorage.storage_class_name.clone();
    let data_path = sstorage
        .mount_path
        .clone()
        .or(tstorage.mount_path.clone())
        .unwrap_or_else(|| names::DEFAULT_DATA_MOUNT_PATH.to_string());
    let extras = if sstorage.extra.is_empty() {
        tstorage.extra.clone()
    } else {
        sstorage.extra.clone()
    };
    let mut pvcs = vec![pvc(
        names::data_pvc(gs),
        ns,
        owner,
        quantity(sstorage.size.as_ref().or(tstorage.size.as_ref())),
        class.clone(),
    )];
    let mut volumes = vec![claim_volume("data", names::data_pvc(gs))];
    let mut mounts = vec![mount("data", &data_path)];
    for extra in &extras {
        let volume = format!("extra-{}", extra.name);
        pvcs.push(pvc(
            names::extra_pvc(gs, &extra.name),
            ns,
            owner,
            extra.size.clone(),
            class.clone(),
        ));
        volumes.push(claim_volume(&volume, names::extra_pvc(gs, &extra.name)));
        mounts.push(mount(&volume, &extra.mount_path));
    }
    pvcs.push(pvc(
        names::mods_pvc(gs, vid),
        ns,
        owner,
        quantity(None),
        class,
    ));
    volumes.push(claim_volume("mods", names::mods_pvc(gs, vid)));
    mounts.push(mount("mods", names::MODS_MOUNT_PATH));

    (pvcs, volumes, mounts)
}

/// The game's environment (template, version, server, then `POD_IP` and the RCON password)
/// and the agent's (`POD_IP`, `POD_UID` and the RCON password).
fn environments(inputs: &Inputs<'_>) -> (Vec<EnvVar>, Vec<EnvVar>) {
    let (server, template) = (inputs.server, inputs.template);
    let mut game_env = template.spec.env.clone();
    merge_env(
        &mut game_env,
        inputs.version.map(|v| v.env.clone()).unwrap_or_default(),
    );
    merge_env(&mut game_env, server.spec.env.clone());
    let password = rcon_password(template, &game_env);
    merge_env(&mut game_env, [field_env("POD_IP", "status.podIP")]);
    if let Some(p) = &password
        && !game_env.iter().any(|e| e.name == "RCON_PASSWORD")
    {
        game_env.push(p.clone());
    }
    let mut agent_env = vec![
        field_env("POD_IP", "status.podIP"),
        field_env("POD_UID", "metadata.uid"),
    ];
    agent_env.extend(password);

    (game_env, agent_env)
}

/// The game container: its ports, its probes and the mounts.
///
/// The template's `probes` are used as given; without a readiness probe the operator's default
/// is a TCP probe on the first declared port every second (Ready means the game accepts
/// connections, not merely that the process exists: backups and joins act on a Ready pod).
fn game_container(
    template: &GameTemplate,
    image: String,
    game_env: Vec<EnvVar>,
    mounts: Vec<VolumeMount>,
) -> Container {
    let game_ports: Vec<ContainerPort> = template
        .spec
        .ports
        .iter()
        .map(|p| ContainerPort {
            name: Some(p.name.clone()),
            container_port: p.container_port,
            protocol: p.protocol.clone(),
            ..Default::default()
        })
        .collect();
    let probes = template.spec.probes.clone().unwrap_or_default();
    let readiness_probe = probes.readiness.or_else(|| {
        game_ports.first().map(|p| Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::Int(p.container_port),
                ..Default::default()
            }),
            period_seconds: Some(1),
            ..Default::default()
        })
    });
    Container {
        name: containers::GAME.to_string(),
        image: Some(image),
        env: Some(game_env),
        readiness_probe,
        liveness_probe: probes.liveness,
        startup_probe: probes.startup,
        ports: (!game_ports.is_empty()).then_some(game_ports),
        volume_mounts: Some(mounts),
        ..Default::default()
    }
}

/// The agent sidecar.
fn agent_container(inputs: &Inputs<'_>, agent_env: Vec<EnvVar>) -> Container {
    let template = inputs.template;
    let agent_image = template
        .spec
        .agent
        .as_ref()
        .and_then(|a| a.image.clone())
        .unwrap_or_else(|| inputs.default_agent_image.to_string());
    Container {
        name: containers::AGENT.to_string(),
        image: Some(agent_image),
        env: Some(agent_env),
        ports: Some(vec![ContainerPort {
            name: Some("agent".into()),
            container_port: i32::from(ports::AGENT),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// The game's Service and the agent's.
fn services(
    template: &GameTemplate,
    owner: &OwnerReference,
    gs: &str,
    ns: &str,
    labels: &BTreeMap<String, String>,
) -> Vec<Service> {
    let mut service_ports: Vec<ServicePort> = template
        .spec
        .ports
        .iter()
        .map(|p| ServicePort {
            name: Some(p.name.clone()),
            port: p.container_port,
            target_port: Some(IntOrString::Int(p.container_port)),
            protocol: p.protocol.clone(),
            ..Default::default()
        })
        .collect();
    if service_ports.is_empty() {
        service_ports.push(ServicePort {
            name: Some("game".into()),
            port: 25565,
            target_port: Some(IntOrString::Int(25565)),
            ..Default::default()
        });
    }
    let service = |name: String, ports: Vec<ServicePort>| Service {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(ns.to_owned()),
            owner_references: Some(vec![owner.clone()]),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(labels.clone()),
            ports: Some(ports),
            ..Default::default()
        }),
        ..Default::default()
    };
    // The operator calls the agent through its Service by name. The agent answers (and must
    // be reachable, e.g. to quiesce or to refuse) whether or not the game is Ready, so the
    // Service publishes the pod as soon as it has an address.
    let mut agent_service = service(
        names::agent_service(gs),
        vec![ServicePort {
            name: Some("agent".into()),
            port: i32::from(ports::AGENT),
            target_port: Some(IntOrString::Int(i32::from(ports::AGENT))),
            ..Default::default()
        }],
    );
    if let Some(spec) = agent_service.spec.as_mut() {
        spec.publish_not_ready_addresses = Some(true);
    }
    vec![
        service(names::game_service(gs), service_ports),
        agent_service,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use gameplane_api::{
        ExtraVolume, GameServerSpec, GameTemplateSpec, RconSpec, StorageSpec, TemplateRef,
    };

    fn inputs_fixture(suspend: bool) -> (GameServer, GameTemplate) {
        let mut server = GameServer::new(
            "lobby",
            GameServerSpec {
                template_ref: TemplateRef { name: "mc".into() },
                version: Some("1.21.4".into()),
                suspend: Some(suspend),
                storage: Some(StorageSpec {
                    extra: vec![ExtraVolume {
                        name: "nether".into(),
                        mount_path: "/worlds/nether".into(),
                        size: Quantity("2Gi".into()),
                    }],
                    ..Default::default()
                }),
                env: vec![EnvVar {
                    name: "MOTD".into(),
                    value: Some("server".into()),
                    ..Default::default()
                }],
                ..Default::default()
            },
        );
        server.metadata.namespace = Some("games".into());
        let template = GameTemplate::new(
            "mc",
            GameTemplateSpec {
                image: "top:1".into(),
                version: "t1".into(),
                env: vec![
                    EnvVar {
                        name: "MOTD".into(),
                        value: Some("template".into()),
                        ..Default::default()
                    },
                    EnvVar {
                        name: "RCON_PASSWORD".into(),
                        value: Some("pw".into()),
                        ..Default::default()
                    },
                ],
                versions: vec![GameVersion {
                    id: "1.21.4".into(),
                    image: "game:1.21.4".into(),
                    ..Default::default()
                }],
                rcon: Some(RconSpec {
                    password_env: Some("RCON_PASSWORD".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
        (server, template)
    }

    fn children(suspend: bool) -> Children {
        let (server, template) = inputs_fixture(suspend);
        let version = template
            .select_version(server.spec.version.as_deref())
            .cloned();
        build(&Inputs {
            server: &server,
            template: &template,
            version: version.as_ref(),
            owner: OwnerReference {
                name: "lobby".into(),
                uid: "u".into(),
                controller: Some(true),
                ..Default::default()
            },
            default_agent_image: "agent:1",
        })
    }

    #[test]
    fn claims_are_named_by_the_contract_and_owned() {
        let c = children(false);
        let names: Vec<_> = c
            .pvcs
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(
            names,
            ["lobby-data", "lobby-extra-nether", "lobby-mods-1-21-4"]
        );
        assert!(
            c.pvcs[0].metadata.labels.is_none(),
            "the world PVC has no labels"
        );
        for p in &c.pvcs {
            assert_eq!(
                p.metadata.owner_references.as_ref().unwrap()[0].controller,
                Some(true)
            );
        }
        let svc: Vec<_> = c
            .services
            .iter()
            .map(|s| s.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(svc, ["lobby", "lobby-agent"]);
    }

    #[test]
    fn pod_template_has_game_then_agent_with_downward_env() {
        let c = children(false);
        let spec = c.statefulset.spec;
        assert_eq!(spec.replicas, Some(1));
        let pod = spec.template.spec.unwrap();
        let names: Vec<_> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["game", "agent"]);
        let game = &pod.containers[0];
        assert_eq!(game.image.as_deref(), Some("game:1.21.4"));
        let env = game.env.as_ref().unwrap();
        let motd = env.iter().find(|e| e.name == "MOTD").unwrap();
        assert_eq!(
            motd.value.as_deref(),
            Some("server"),
            "server env overrides the template's"
        );
        assert!(env.iter().any(|e| e.name == "POD_IP"));
        let agent_env = pod.containers[1].env.as_ref().unwrap();
        let path = |n: &str| {
            agent_env.iter().find(|e| e.name == n).and_then(|e| {
                e.value_from
                    .as_ref()?
                    .field_ref
                    .as_ref()
                    .map(|f| f.field_path.clone())
            })
        };
        assert_eq!(path("POD_IP").as_deref(), Some("status.podIP"));
        assert_eq!(path("POD_UID").as_deref(), Some("metadata.uid"));
        let pw = agent_env
            .iter()
            .find(|e| e.name == "RCON_PASSWORD")
            .unwrap();
        assert_eq!(pw.value.as_deref(), Some("pw"));
        let mounts: Vec<_> = game
            .volume_mounts
            .as_ref()
            .unwrap()
            .iter()
            .map(|m| m.mount_path.as_str())
            .collect();
        assert_eq!(mounts, ["/data", "/worlds/nether", "/mods"]);
    }

    #[test]
    fn readiness_is_the_templates_probe_else_tcp_on_the_first_port() {
        let (server, mut template) = inputs_fixture(false);
        template.spec.ports = vec![gameplane_api::GamePort {
            name: "minecraft".into(),
            container_port: 25565,
            protocol: None,
        }];
        let game = |template: &GameTemplate| {
            let version = template
                .select_version(server.spec.version.as_deref())
                .cloned();
            let c = build(&Inputs {
                server: &server,
                template,
                version: version.as_ref(),
                owner: OwnerReference::default(),
                default_agent_image: "agent:1",
            });
            let pod = c.statefulset.spec.template.spec.unwrap();
            pod.containers[0].clone()
        };
        let default = game(&template);
        let tcp = default.readiness_probe.expect("a default readiness probe");
        assert_eq!(
            tcp.tcp_socket.map(|t| t.port),
            Some(IntOrString::Int(25565))
        );
        assert_eq!(tcp.period_seconds, Some(1));
        assert!(default.liveness_probe.is_none() && default.startup_probe.is_none());

        let exec = Probe {
            exec: Some(k8s_openapi::api::core::v1::ExecAction {
                command: Some(vec!["fixture-game".into(), "ready".into()]),
            }),
            period_seconds: Some(10),
            timeout_seconds: Some(2),
            ..Default::default()
        };
        let liveness = Probe {
            period_seconds: Some(30),
            ..exec.clone()
        };
        template.spec.probes = Some(gameplane_api::TemplateProbes {
            readiness: Some(exec.clone()),
            liveness: Some(liveness.clone()),
            startup: None,
        });
        let chosen = game(&template);
        assert_eq!(chosen.readiness_probe, Some(exec));
        assert_eq!(chosen.liveness_probe, Some(liveness));
        assert_eq!(chosen.startup_probe, None);
    }

    #[test]
    fn suspend_scales_to_zero() {
        assert_eq!(children(true).statefulset.spec.replicas, Some(0));
    }
}
