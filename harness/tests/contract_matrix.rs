//! The clause matrix (docs/contract.toml) agrees with the bucket manifest, and docs/contract.md
//! is exactly what it renders. `REHEARSAL_BLESS=1` rewrites docs/contract.md instead of failing.

use std::path::PathBuf;

use rehearsal::buckets::Manifest;
use rehearsal::contract::{Contract, DEFAULT_CONTRACT, DEFAULT_DOCUMENT};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn load() -> (Contract, Manifest) {
    let contract = Contract::load(&root().join(DEFAULT_CONTRACT)).expect("docs/contract.toml");
    let manifest = Manifest::load(&root().join("scenarios/buckets.toml")).expect("buckets.toml");
    (contract, manifest)
}

#[test]
fn every_clause_has_a_check_and_a_mutant_and_every_mutant_a_clause() {
    let (contract, manifest) = load();
    let problems: Vec<String> = contract
        .verify(&manifest)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        problems.is_empty(),
        "the clause matrix disagrees with scenarios/buckets.toml:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_failure_path_the_contract_names_has_a_clause() {
    let (contract, _) = load();
    // The failure sides the matrix must keep: a copy that fails, a restore that fails, a gate
    // that fails, an agent that is down rather than restarted, a game that is not running.
    let failure: Vec<&str> = contract
        .clauses()
        .filter(|(_, c)| c.side == rehearsal::contract::Side::Failure)
        .map(|(_, c)| c.text.as_str())
        .collect();
    for needle in [
        "copy that fails",
        "Restore whose copy fails",
        "halts at",
        "agent that is down",
        "not running yet",
    ] {
        assert!(
            failure.iter().any(|t| t.contains(needle)),
            "no failure-side clause mentions {needle:?}"
        );
    }
}

#[test]
fn the_builtin_matrix_is_the_file() {
    let on_disk = std::fs::read_to_string(root().join(DEFAULT_CONTRACT)).expect("read");
    let builtin = Contract::builtin().expect("builtin parses");
    let parsed = Contract::parse(DEFAULT_CONTRACT.as_ref(), &on_disk).expect("parses");
    assert_eq!(format!("{builtin:?}"), format!("{parsed:?}"));
}

#[test]
fn docs_contract_md_is_rendered_from_the_matrix() {
    let (contract, manifest) = load();
    let rendered = contract.render_markdown(&manifest);
    let path = root().join(DEFAULT_DOCUMENT);
    if std::env::var_os("REHEARSAL_BLESS").is_some() {
        std::fs::write(&path, &rendered).expect("write docs/contract.md");
        return;
    }
    let committed = std::fs::read_to_string(&path).expect("docs/contract.md");
    assert!(
        committed == rendered,
        "docs/contract.md is not what docs/contract.toml renders: run `rehearse contract render --write` (or this test with REHEARSAL_BLESS=1)"
    );
}
