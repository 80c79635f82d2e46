//! The committed `fixtures/crds/*.yaml` equal the CRDs generated from the types.

use std::path::PathBuf;

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/crds")
}

#[test]
fn committed_crd_fixtures_match_the_types() {
    let dir = fixtures_dir();
    let update = std::env::var_os("UPDATE_CRDS").is_some();
    if update {
        std::fs::create_dir_all(&dir).expect("create fixtures/crds");
    }
    let mut stale = Vec::new();
    for crd in gameplane_api::crds::all() {
        let path = dir.join(gameplane_api::crds::file_name(&crd));
        let generated = gameplane_api::crds::to_yaml(&crd).expect("render CRD");
        if update {
            std::fs::write(&path, &generated).expect("write CRD fixture");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(committed) if committed == generated => {}
            Ok(_) => stale.push(format!("{} differs from the types", path.display())),
            Err(e) => stale.push(format!("{} unreadable: {e}", path.display())),
        }
    }
    assert!(
        stale.is_empty(),
        "CRD fixtures are stale:\n  {}\nRegenerate them with `UPDATE_CRDS=1 cargo test -p gameplane-api` and commit fixtures/crds/.",
        stale.join("\n  ")
    );
}

#[test]
fn fixtures_round_trip_through_serde() {
    let dir = fixtures_dir();
    for crd in gameplane_api::crds::all() {
        let path = dir.join(gameplane_api::crds::file_name(&crd));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue; // the comparison test reports missing files
        };
        let parsed: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
            serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            parsed,
            crd,
            "{} parses back to the generated CRD",
            path.display()
        );
    }
}
