//! Per-case namespace names and the leftover decision of the startup sweep.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::ObjectMeta;
use rehearsal::namespaces::*;

#[test]
fn names_are_dns_labels() {
    let name = namespace_name("live-backup-agent-restart", "0f3a9c1e-77aa");
    assert!(name.starts_with("rh-live-backup-agent-restart-"), "{name}");
    assert_eq!(
        name.len(),
        "rh-live-backup-agent-restart-".len() + 8,
        "{name}"
    );
    assert_eq!(
        name,
        namespace_name("live-backup-agent-restart", "0f3a9c1e-77aa")
    );
    // Runs of the same day (same leading characters) get different namespaces.
    assert_ne!(
        namespace_name("c", "20261201T151747Z-e6dc10"),
        namespace_name("c", "20261201T151835Z-97bc2b")
    );
    let long = namespace_name(&"Very_Long Case Name ".repeat(10), "ABCDEF0123456789");
    assert!(long.len() <= 63, "{long}");
    assert!(long.starts_with("rh-very-long-case-name"), "{long}");
    assert!(
        long.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    );
    assert!(!long.contains("--"));
}

#[test]
fn label_values_are_valid() {
    assert_eq!(label_value("host.example:1"), "host.example-1");
    assert_eq!(label_value("--"), "unknown");
    assert!(label_value(&"h".repeat(100)).len() <= 63);
}

fn ns(host: &str, pid: u32, created: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some("rh-x-1".into()),
            labels: Some(BTreeMap::from([
                (RUN_ID_LABEL.into(), "1".into()),
                (OWNER_HOST_LABEL.into(), host.into()),
                (OWNER_PID_LABEL.into(), pid.to_string()),
            ])),
            annotations: Some(BTreeMap::from([(
                CREATED_AT_ANNOTATION.into(),
                created.into(),
            )])),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn leftover_when_the_owner_on_this_host_is_gone() {
    let now: jiff::Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
    let fresh = "2026-11-29T11:59:00Z";
    let bound = Duration::from_secs(3600);
    assert_eq!(
        leftover_reason(&ns("me", 42, fresh), "me", now, bound, |_| false),
        Some(SweepReason::OwnerGone { pid: 42 })
    );
    assert_eq!(
        leftover_reason(&ns("me", 42, fresh), "me", now, bound, |_| true),
        None
    );
    // Another host's process cannot be checked: only age decides.
    assert_eq!(
        leftover_reason(&ns("other", 42, fresh), "me", now, bound, |_| false),
        None
    );
    assert_eq!(
        leftover_reason(
            &ns("other", 42, "2026-11-29T10:00:00Z"),
            "me",
            now,
            bound,
            |_| true
        ),
        Some(SweepReason::TooOld { age_secs: 7200 })
    );
}

#[test]
fn pid_alive_sees_this_process_and_not_a_reaped_one() {
    assert!(pid_alive(std::process::id()));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!pid_alive(pid));
}
