//! Records the harness's own commit at build time (`REHEARSAL_BUILD_COMMIT`): `GITHUB_SHA` in
//! CI, else the commit of the repository being built, else "unknown" — so a bundle names the
//! harness that produced it, never the git repository the command happens to run in.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=GITHUB_SHA");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // Rebuild when HEAD moves (a worktree's HEAD and the shared refs both count).
    for path in [
        git(&["rev-parse", "--path-format=absolute", "--git-path", "HEAD"]),
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]).map(|d| d + "/refs"),
    ]
    .into_iter()
    .flatten()
    {
        println!("cargo:rerun-if-changed={path}");
    }
    let commit = std::env::var("GITHUB_SHA")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=REHEARSAL_BUILD_COMMIT={commit}");
}
