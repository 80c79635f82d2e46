//! A throwaway cargo crate named like the scenarios package, listed and run with the real
//! cargo-nextest: proves the JSON format the bucket check parses and the nextest profiles'
//! behaviour without building the real (heavy) scenarios.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rehearsal::buckets::Manifest;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("harness/ has a parent")
        .to_owned()
}

pub fn real_manifest() -> Manifest {
    Manifest::load(&workspace().join("scenarios/buckets.toml")).expect("scenarios/buckets.toml")
}

/// Writes crate `rehearsal-scenarios` into `root`: one test binary per bucket with a test per
/// case (each printing the env vars the Kind setup hands over), minus `omit`, plus `extra`
/// tests in the first bucket's binary; and a lib unit test. Copies the workspace's
/// `.config/nextest.toml` when `with_config`.
pub fn tiny_scenarios_crate(
    root: &Path,
    manifest: &Manifest,
    omit: &[&str],
    extra: &[&str],
    with_config: bool,
) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"rehearsal-scenarios\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn helper() {}\n}\n",
    )
    .unwrap();
    let case_body = r#"{ let v = |k: &str| std::env::var(k).ok(); println!("ENV REHEARSAL_KUBECONFIG={:?} REHEARSAL_CONTEXT={:?} REHEARSAL_KIND_CLUSTER={:?} REHEARSAL_KIND_STATE={:?}", v("REHEARSAL_KUBECONFIG"), v("REHEARSAL_CONTEXT"), v("REHEARSAL_KIND_CLUSTER"), v("REHEARSAL_KIND_STATE")); }"#;
    for (i, bucket) in manifest.buckets.iter().enumerate() {
        let mut body = String::new();
        for case in &bucket.cases {
            if !omit.contains(&case.test.as_str()) {
                body.push_str(&format!("#[test]\nfn {}() {case_body}\n", case.test));
            }
        }
        if i == 0 {
            for name in extra {
                body.push_str(&format!("#[test]\n#[ignore]\nfn {name}() {{}}\n"));
            }
        }
        std::fs::write(root.join(format!("tests/{}.rs", bucket.name)), body).unwrap();
    }
    if with_config {
        std::fs::create_dir_all(root.join(".config")).unwrap();
        std::fs::copy(
            workspace().join(".config/nextest.toml"),
            root.join(".config/nextest.toml"),
        )
        .unwrap();
    }
}

/// `cargo nextest ARGS` in `root`, isolated from the outer nextest run and from any Kind
/// settings in this process's environment.
pub fn nextest(root: &Path, args: &[&str]) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("nextest")
        .args(args)
        .arg("--offline")
        .current_dir(root)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .stdin(std::process::Stdio::null());
    for (key, _) in std::env::vars_os() {
        let key_str = key.to_string_lossy();
        if key_str.starts_with("NEXTEST")
            || key_str.starts_with("REHEARSAL_")
            || key_str == "REHEARSE"
        {
            cmd.env_remove(&key);
        }
    }
    cmd
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn expect_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}
