//! A real Minecraft 26.1 client (azalea-protocol, via `client::probe`) against the fixture.

mod support;

use std::time::Duration;

use fixture_game::client::{Depth, probe};

const PROBE: Duration = Duration::from_secs(10);

#[tokio::test]
async fn client_joins_to_play_and_status_reports_26_1() {
    let dir = tempfile::tempdir().unwrap();
    let game = support::serve(dir.path(), &["--game-version", "1.0"], &[]);

    let status = probe(game.game, Depth::Query, 775, PROBE).await.unwrap();
    assert_eq!(status.depth_reached, Depth::Query);
    assert_eq!(
        (status.version_name.as_str(), status.protocol),
        ("26.1", 775)
    );
    assert!(
        status.motd.contains("1.0"),
        "motd {:?} names the version",
        status.motd
    );

    let joined = probe(game.game, Depth::Play, 775, PROBE).await.unwrap();
    assert_eq!(joined.depth_reached, Depth::Play, "{joined:?}");
    assert_eq!(joined.disconnect_reason, None);
}

#[tokio::test]
async fn login_depth_stops_after_login_finished() {
    let dir = tempfile::tempdir().unwrap();
    let game = support::serve(dir.path(), &[], &[]);
    let outcome = probe(game.game, Depth::Login, 775, PROBE).await.unwrap();
    assert_eq!(outcome.depth_reached, Depth::Login, "{outcome:?}");
}

#[tokio::test]
async fn wrong_protocol_gets_the_outdated_client_disconnect() {
    let dir = tempfile::tempdir().unwrap();
    let game = support::serve(dir.path(), &[], &[]);
    let outcome = probe(game.game, Depth::Play, 769, PROBE).await.unwrap();
    assert_eq!(outcome.depth_reached, Depth::Query, "{outcome:?}");
    let reason = outcome.disconnect_reason.expect("a disconnect reason");
    assert!(
        reason.contains("26.1"),
        "reason {reason:?} names the server version"
    );
}

#[tokio::test]
async fn players_in_play_show_in_status_and_list() {
    use tokio::net::TcpStream;
    let dir = tempfile::tempdir().unwrap();
    let game = support::serve(dir.path(), &[], &[]);
    // Hold a player in play with a raw azalea connection while we look.
    let stream = TcpStream::connect(game.game).await.unwrap();
    let held = hold_in_play(stream, game.game).await;
    let status = probe(game.game, Depth::Query, 775, PROBE).await.unwrap();
    assert_eq!(status.players_online, 1, "{status:?}");
    let mut rcon = fixture_game::rcon::RconClient::connect(game.rcon, support::PASSWORD)
        .await
        .unwrap();
    assert_eq!(
        rcon.command("list").await.unwrap(),
        "There are 1 of a max of 20 players online: holder"
    );
    drop(held);
}

/// Log in as `holder` and stay in play until the returned connection is dropped.
async fn hold_in_play(
    stream: tokio::net::TcpStream,
    addr: std::net::SocketAddr,
) -> azalea_protocol::connect::Connection<
    azalea_protocol::packets::game::ClientboundGamePacket,
    azalea_protocol::packets::game::ServerboundGamePacket,
> {
    use azalea_protocol::connect::Connection;
    use azalea_protocol::packets::config::{
        ClientboundConfigPacket, ServerboundFinishConfiguration,
    };
    use azalea_protocol::packets::game::ClientboundGamePacket;
    use azalea_protocol::packets::handshake::ServerboundIntention;
    use azalea_protocol::packets::login::{
        ClientboundLoginPacket, ServerboundHello, ServerboundLoginAcknowledged,
    };
    use azalea_protocol::packets::{ClientIntention, PROTOCOL_VERSION};
    let mut conn = Connection::new_from_stream(stream).await.unwrap();
    conn.write(ServerboundIntention {
        protocol_version: PROTOCOL_VERSION,
        hostname: addr.ip().to_string(),
        port: addr.port(),
        intention: ClientIntention::Login,
    })
    .await
    .unwrap();
    let mut conn = conn.login();
    conn.write(ServerboundHello {
        name: "holder".into(),
        profile_id: azalea_crypto::offline::generate_uuid("holder"),
    })
    .await
    .unwrap();
    while !matches!(
        conn.read().await.unwrap(),
        ClientboundLoginPacket::LoginFinished(_)
    ) {}
    conn.write(ServerboundLoginAcknowledged).await.unwrap();
    let mut conn = conn.config();
    while !matches!(
        conn.read().await.unwrap(),
        ClientboundConfigPacket::FinishConfiguration(_)
    ) {}
    conn.write(ServerboundFinishConfiguration).await.unwrap();
    let mut conn = conn.game();
    while !matches!(conn.read().await.unwrap(), ClientboundGamePacket::Login(_)) {}
    conn
}

#[tokio::test]
async fn refuse_login_answers_status_then_refuses_the_login_with_a_reason() {
    use fixture_game::client::stage;
    use fixture_game::minecraft::REFUSED_LOGIN_REASON;
    let dir = tempfile::tempdir().unwrap();
    let game = support::serve(dir.path(), &["--mode", "refuse-login"], &[]);

    let status = probe(game.game, Depth::Query, 775, PROBE).await.unwrap();
    assert_eq!(
        (status.version_name.as_str(), status.protocol),
        ("26.1", 775)
    );
    let outcome = probe(game.game, Depth::Play, 775, PROBE).await.unwrap();
    assert_eq!(outcome.depth_reached, Depth::Query, "{outcome:?}");
    assert_eq!(outcome.disconnected_in.as_deref(), Some(stage::LOGIN));
    let reason = outcome.disconnect_reason.expect("a disconnect reason");
    assert!(reason.contains(REFUSED_LOGIN_REASON), "{reason:?}");

    // Otherwise a normal game: RCON answers.
    let mut rcon = fixture_game::rcon::RconClient::connect(game.rcon, support::PASSWORD)
        .await
        .unwrap();
    assert!(rcon.command("list").await.unwrap().contains("There are 0"));
}

#[tokio::test]
async fn stall_configuration_logs_in_and_never_finishes_configuration() {
    use fixture_game::client::{ProbeError, stage};
    let dir = tempfile::tempdir().unwrap();
    // Keep-alives well inside the probe's bound: the client answers them and still waits.
    let game = support::serve(
        dir.path(),
        &["--mode", "stall-configuration", "--keepalive-ms", "100"],
        &[],
    );

    let login = probe(game.game, Depth::Login, 775, PROBE).await.unwrap();
    assert_eq!(login.depth_reached, Depth::Login, "{login:?}");

    let bound = Duration::from_secs(2);
    let err = probe(game.game, Depth::Play, 775, bound).await.unwrap_err();
    assert!(matches!(err, ProbeError::Timeout { .. }), "{err}");
    assert_eq!(err.stage(), stage::CONFIGURATION, "{err}");
    assert_eq!(err.reached(), Some(Depth::Login), "{err}");
    let seen = err.progress().outcome.clone().expect("the status answer");
    assert_eq!(seen.protocol, 775);
    assert!(err.to_string().contains("configuration"), "{err}");
}

#[tokio::test]
async fn a_failed_probe_names_its_stage_and_depth() {
    use fixture_game::client::{ProbeError, stage};
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let err = probe(addr, Depth::Play, 775, PROBE).await.unwrap_err();
    assert!(matches!(err, ProbeError::Connect { .. }), "{err}");
    assert_eq!((err.stage(), err.reached()), (stage::STATUS, None));
    assert!(err.to_string().contains("cannot connect"), "{err}");
}
