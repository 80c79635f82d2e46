//! The Gameplane-compatible agent against a real game: quiesce over RCON, pod-bound routes,
//! refusal of a foreign pod UID, the legacy variant, and RCON failure.

mod support;

use fixture_game::audit::read_audit;
use serde_json::{Value, json};

const POD: &str = "0b6f6a2e-pod-a";

fn audited_commands(data: &std::path::Path) -> Vec<String> {
    read_audit(&data.join("logs/rcon-audit.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|l| l.command)
        .collect()
}

fn body(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON: {text:?}: {e}"))
}

#[tokio::test]
async fn quiesce_unquiesce_and_identity_reach_the_game() {
    let data = tempfile::tempdir().unwrap();
    let game = support::serve(data.path(), &[], &[]);
    let agent = support::agent(game.rcon, &["--pod-uid", POD]);

    let (status, text) = support::http(agent.addr, "GET", "/healthz").await;
    assert_eq!(status, 200, "{text}");

    let (status, text) = support::http(agent.addr, "POST", "/quiesce").await;
    assert_eq!((status, body(&text)), (200, json!({"quiesced": true})));
    let (status, text) = support::http(agent.addr, "POST", "/unquiesce").await;
    assert_eq!((status, body(&text)), (200, json!({"quiesced": false})));

    let (status, text) = support::http(agent.addr, "GET", &format!("/pods/{POD}/identity")).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        body(&text),
        json!({"podUID": POD, "gameIncarnation": game.incarnation, "agentIncarnation": agent.incarnation})
    );

    let bound = format!("/pods/{POD}/quiesce?gameIncarnation={}", game.incarnation);
    let (status, text) = support::http(agent.addr, "POST", &bound).await;
    assert_eq!((status, body(&text)), (200, json!({"quiesced": true})));
    let (status, text) = support::http(agent.addr, "POST", &format!("/pods/{POD}/unquiesce")).await;
    assert_eq!((status, body(&text)), (200, json!({"quiesced": false})));

    assert_eq!(
        audited_commands(data.path()),
        [
            "save-off",
            "save-all flush",
            "save-on",
            "fixture-incarnation",
            "fixture-incarnation",
            "save-off",
            "save-all flush",
            "save-on"
        ]
    );
}

#[tokio::test]
async fn an_obligation_is_paid_once_per_game_incarnation() {
    let data = tempfile::tempdir().unwrap();
    let game = support::serve(data.path(), &[], &[]);
    let agent = support::agent(game.rcon, &["--pod-uid", POD]);
    let inc = &game.incarnation;
    let pay = |obligation: &str| {
        format!("/pods/{POD}/unquiesce?gameIncarnation={inc}&obligation={obligation}")
    };
    let (status, text) = support::http(agent.addr, "POST", &pay("backup-uid-1")).await;
    assert_eq!((status, body(&text)), (200, json!({"quiesced": false})));
    // The operator crashed before recording the answer and asks again: no second save-on.
    let (status, text) = support::http(agent.addr, "POST", &pay("backup-uid-1")).await;
    assert_eq!(
        (status, body(&text)),
        (200, json!({"quiesced": false, "alreadyPaid": true}))
    );
    // Another Backup's obligation is its own.
    let (status, text) = support::http(agent.addr, "POST", &pay("backup-uid-2")).await;
    assert_eq!((status, body(&text)), (200, json!({"quiesced": false})));
    let save_ons = audited_commands(data.path())
        .into_iter()
        .filter(|c| c == "save-on")
        .count();
    assert_eq!(save_ons, 2, "one save-on per obligation");
}

#[tokio::test]
async fn foreign_pod_uid_and_stale_incarnation_are_refused_without_touching_the_game() {
    let data = tempfile::tempdir().unwrap();
    let game = support::serve(data.path(), &[], &[]);
    let agent = support::agent(game.rcon, &["--pod-uid", POD]);

    for (method, route) in [
        ("GET", "identity"),
        ("POST", "quiesce"),
        ("POST", "unquiesce"),
    ] {
        let (status, text) =
            support::http(agent.addr, method, &format!("/pods/other-pod/{route}")).await;
        assert_eq!(status, 409, "{route}: {text}");
        let reply = body(&text);
        assert_eq!(reply["podUID"], POD);
        assert_eq!(reply["requested"], "other-pod");
        assert!(
            reply["error"].as_str().unwrap().contains("other-pod"),
            "{reply}"
        );
    }
    assert_eq!(audited_commands(data.path()), Vec::<String>::new());

    let stale = format!("/pods/{POD}/unquiesce?gameIncarnation=an-earlier-incarnation");
    let (status, text) = support::http(agent.addr, "POST", &stale).await;
    assert_eq!(status, 409, "{text}");
    assert_eq!(body(&text)["gameIncarnation"], game.incarnation);
    assert_eq!(
        audited_commands(data.path()),
        ["fixture-incarnation"],
        "no save-on was sent"
    );
}

#[tokio::test]
async fn legacy_agent_has_no_pod_bound_routes() {
    let data = tempfile::tempdir().unwrap();
    let game = support::serve(data.path(), &[], &[]);
    let agent = support::agent(game.rcon, &["--pod-uid", POD, "--legacy"]);
    for (method, route) in [
        ("GET", "identity"),
        ("POST", "quiesce"),
        ("POST", "unquiesce"),
    ] {
        let (status, _) = support::http(agent.addr, method, &format!("/pods/{POD}/{route}")).await;
        assert_eq!(status, 404, "{route}");
    }
    assert_eq!(
        audited_commands(data.path()),
        Vec::<String>::new(),
        "no save-off was sent"
    );
    let (status, text) = support::http(agent.addr, "POST", "/quiesce").await;
    assert_eq!((status, body(&text)), (200, json!({"quiesced": true})));
}

#[tokio::test]
async fn game_down_is_a_502_with_a_reason() {
    let data = tempfile::tempdir().unwrap();
    let mut game = support::serve(data.path(), &[], &[]);
    let rcon = game.rcon;
    game.proc.signal(libc::SIGTERM);
    assert!(game.proc.wait_exit(support::START).success());
    let agent = support::agent(rcon, &["--pod-uid", POD]);

    for (method, path) in [
        ("POST", "/quiesce".to_owned()),
        ("POST", "/unquiesce".to_owned()),
        ("GET", format!("/pods/{POD}/identity")),
    ] {
        let (status, text) = support::http(agent.addr, method, &path).await;
        assert_eq!(status, 502, "{path}: {text}");
        let reason = body(&text)["error"].as_str().unwrap().to_owned();
        assert!(
            reason.contains(&rcon.to_string()),
            "{path}: reason names the RCON address: {reason}"
        );
    }
    let (status, _) = support::http(agent.addr, "GET", "/healthz").await;
    assert_eq!(status, 200, "the agent itself stays healthy");
}
