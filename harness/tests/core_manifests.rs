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
