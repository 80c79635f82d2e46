//! Configuration purely through environment variables, as a pod spec supplies it.

mod support;

use std::time::Duration;

use fixture_game::inspect::Kind;
use fixture_game::rcon::RconClient;

#[tokio::test]
async fn serve_and_agent_take_every_setting_from_the_environment() {
    let data = tempfile::tempdir().unwrap();
    let nether = tempfile::tempdir().unwrap();
    let end = tempfile::tempdir().unwrap();
    let mods = tempfile::tempdir().unwrap();
    let password_file = data.path().join("rcon-password");
    std::fs::write(&password_file, format!("{}\n", support::PASSWORD)).unwrap();
    let extras = format!(
        "nether={},end={}",
        nether.path().display(),
        end.path().display()
    );
    let mut cmd = support::command(&["serve"]);
    cmd.env("FIXTURE_DATA_DIR", data.path())
        .env("POD_IP", "127.0.0.1")
        .env("FIXTURE_GAME_PORT", "0")
        .env("FIXTURE_RCON_PORT", "0")
        .env("RCON_PASSWORD_FILE", &password_file)
        .env("FIXTURE_EXTRA_WORLDS", &extras)
        .env("FIXTURE_MODS_DIR", mods.path())
        .env("FIXTURE_MODE", "compat")
        .env("FIXTURE_GAME_VERSION", "1.1")
        .env("FIXTURE_WORLD_MARKER", "env-primary")
        .env("FIXTURE_EXTRA_MARKER", "env-extra")
        .env("FIXTURE_MODS_MARKER", "env-mods");
    let mut proc = support::Proc::spawn(cmd);
    let line = proc.wait_line("the listening line", support::START, |l| {
        l.contains("\"event\":\"listening\"")
    });
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    let rcon: std::net::SocketAddr = v["rcon"].as_str().unwrap().parse().unwrap();

    let reports = support::inspect(&[data.path(), nether.path(), end.path(), mods.path()]);
    let seen: Vec<(Kind, Option<&str>, Option<&str>)> = reports
        .iter()
        .map(|r| (r.kind, r.marker.as_deref(), r.written_by.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (Kind::World, Some("env-primary"), Some("1.1")),
            (Kind::World, Some("env-extra"), Some("1.1")),
            (Kind::World, Some("env-extra"), Some("1.1")),
            (Kind::Mods, Some("env-mods"), Some("1.1")),
        ]
    );

    // The legacy agent, configured by environment only.
    let mut cmd = support::command(&["agent"]);
    cmd.env("POD_IP", "127.0.0.1")
        .env("FIXTURE_AGENT_PORT", "0")
        .env("FIXTURE_RCON_ADDR", rcon.to_string())
        .env("RCON_PASSWORD", support::PASSWORD)
        .env("POD_UID", "pod-env")
        .env("FIXTURE_AGENT_LEGACY", "1");
    let mut agent = support::Proc::spawn(cmd);
    let line = agent.wait_line("the agent's listening line", support::START, |l| {
        l.contains("\"event\":\"listening\"")
    });
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["legacy"], true);
    let addr = v["agent"].as_str().unwrap().parse().unwrap();
    let (status, _) = support::http(addr, "GET", "/pods/pod-env/identity").await;
    assert_eq!(status, 404);
    let (status, _) = support::http(addr, "POST", "/quiesce").await;
    assert_eq!(status, 200);

    let mut rcon = RconClient::connect(rcon, support::PASSWORD).await.unwrap();
    rcon.command("stop").await.unwrap();
    assert!(proc.wait_exit(Duration::from_secs(20)).success());
}
