//! Rendered manifests and command lines the harness produces (insta snapshots): the world
//! read-back pod, the reference operator's process argv and its Kind `kubectl apply` argv.

use std::path::Path;

use rehearsal::deploy::reference_operator::{apply_argv, process_argv};
use rehearsal::probe::readback::{parse_output, readback_pod};

#[test]
fn readback_pod_manifest() {
    let pod = readback_pod(
        "readback-mc",
        "rehearsal.local/fixture-game:1.0",
        &["mc-data".to_string(), "mc-extra-nether".to_string()],
    );
    insta::assert_yaml_snapshot!(pod);
}

#[test]
fn reference_operator_command_lines() {
    let argv = serde_json::json!({
        "embedded": process_argv(
            "/work/target/debug/reference-operator",
            Path::new("/state/kubeconfig"),
            "rehearsal-embedded",
            Some("ignore-incarnation"),
        ),
        "kind_apply": apply_argv(
            Path::new("/opt/rehearsal-kubectl/bin/kubectl"),
            Path::new("/state/kubeconfig"),
            "kind-rehearsal",
            Path::new("images/reference-operator/deploy"),
        ),
    });
    insta::assert_json_snapshot!(argv);
}

#[test]
fn readback_output_is_matched_to_claims_in_order_and_checked() {
    let line = |marker: &str| {
        format!(
            r#"{{"path":"/inspect/x","kind":"world","digest":"{}","files":3,"marker":"{marker}","format":1,"candidate_marker":false,"torn":false,"generation":4,"written_by":"1.0","problem":null}}"#,
            "a".repeat(64)
        )
    };
    let claims = ["mc-data".to_string(), "mc-extra-nether".to_string()];
    let output = format!("{}\n{}\n", line("primary"), line("nether"));
    let parsed = parse_output("ns", "p", &claims, &output).unwrap();
    assert_eq!(parsed["mc-data"].marker.as_deref(), Some("primary"));
    assert_eq!(parsed["mc-extra-nether"].marker.as_deref(), Some("nether"));

    let err = parse_output("ns", "p", &claims, &line("primary"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 inspections for 2 claims"), "{err}");
    let err = parse_output("ns", "p", &claims[..1], "{\"path\": 3}")
        .unwrap_err()
        .to_string();
    assert!(err.contains("not an inspection"), "{err}");
}

/// `rehearse run --cluster kind` installs the CRDs before the operator and waits for both; the
/// argv is what runs (context pinned, the rollout rather than a possibly stale Available).
#[test]
fn kind_install_command_lines() {
    use rehearsal::deploy::reference_operator::KindInstall;
    let install = KindInstall::for_cases(Path::new(""));
    let argv = serde_json::json!({
        "images": install.images,
        "kubectl": install.kubectl_argvs(
            Path::new("/opt/rehearsal-kubectl/bin/kubectl"),
            Path::new("/state/kubeconfig"),
            "kind-rehearsal",
        ),
    });
    insta::assert_json_snapshot!(argv);
}

/// Every locally built image a case fixture references is loaded into Kind's nodes: a template
/// version or agent added without being loaded would make its pods try a pull on Kind.
#[test]
fn kind_loads_every_image_the_case_fixtures_reference() {
    use rehearsal::fixture::{self, AgentKind, FixtureOptions};
    let loaded = rehearsal::deploy::images::for_cases();
    let mut referenced = std::collections::BTreeSet::new();
    for agent in [AgentKind::Current, AgentKind::Legacy] {
        let template = fixture::template(
            "t",
            &FixtureOptions {
                agent,
                ..Default::default()
            },
        );
        collect_local_images(&serde_json::to_value(&template).unwrap(), &mut referenced);
    }
    referenced.insert(rehearsal::probe::readback::INSPECT_IMAGE.to_string());
    referenced.insert(rehearsal::deploy::reference_operator::IMAGE.to_string());
    let missing: Vec<&String> = referenced.iter().filter(|i| !loaded.contains(i)).collect();
    assert!(
        missing.is_empty(),
        "referenced but never loaded into Kind: {missing:?}"
    );
    assert!(
        referenced.len() >= 7,
        "the fixtures reference the game versions, both agents and the operator: {referenced:?}"
    );
}

/// `rehearsal.local/…` references by tag (a digest-pinned candidate resolves through a registry,
/// not a load; the unpullable candidate is meant to fail).
fn collect_local_images(value: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match value {
        serde_json::Value::String(s)
            if s.starts_with("rehearsal.local/") && s.contains(':') && !s.contains("@sha256:") =>
        {
            out.insert(s.clone());
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_local_images(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| collect_local_images(v, out)),
        _ => {}
    }
}

/// Gameplane's GameTemplate `rcon.protocol` enum (charts/gameplane CRD, Aug 2026).
const GAMEPLANE_RCON_PROTOCOLS: &[&str] = &[
    "source",
    "telnet",
    "websocket",
    "battleye",
    "satisfactory",
    "palworld",
    "nuclearoption",
    "none",
];

/// Defect: the fixture template said `rcon.protocol: minecraft`, which Gameplane's CRD rejects;
/// Minecraft's RCON is the Source RCON protocol.
#[test]
fn the_fixture_template_names_an_rcon_protocol_gameplane_accepts() {
    use rehearsal::fixture::{self, FixtureOptions};
    let template = fixture::template("t", &FixtureOptions::default());
    let protocol = template
        .spec
        .rcon
        .as_ref()
        .and_then(|r| r.protocol.as_deref())
        .unwrap_or("(unset)");
    assert!(
        GAMEPLANE_RCON_PROTOCOLS.contains(&protocol),
        "rcon.protocol {protocol:?} is not in Gameplane's enum {GAMEPLANE_RCON_PROTOCOLS:?}"
    );
    assert_eq!(
        protocol, "source",
        "Minecraft's RCON is the Source RCON protocol"
    );
}
