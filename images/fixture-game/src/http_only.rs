//! HTTP-only mode: the game port answers HTTP with the primary world's marker and speaks no
//! Minecraft, like a broken candidate image that serves a web page instead of the game. A
//! Minecraft handshake sent here gets an HTTP error or a closed connection.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use tokio::net::TcpListener;

use crate::save::Saver;

/// Serve `GET /` and `GET /marker` (both: the primary world's marker as plain text).
pub async fn run(listener: TcpListener, saver: Arc<Saver>) -> std::io::Result<()> {
    let app = Router::new()
        .route("/", get(marker))
        .route("/marker", get(marker))
        .with_state(saver);
    axum::serve(listener, app).await
}

async fn marker(State(saver): State<Arc<Saver>>) -> String {
    saver
        .summary()
        .into_iter()
        .next()
        .map(|w| w.marker)
        .unwrap_or_default()
}
