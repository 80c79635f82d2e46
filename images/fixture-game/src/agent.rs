//! `fixture-game agent`: a Gameplane-compatible sidecar on :8090 that quiesces the game over
//! RCON, plus the pod-bound routes of the newer contract (CONTRACT.md A "Agent", B1).
//!
//! | route | effect | replies |
//! |---|---|---|
//! | `GET /healthz` | none | 200 `{"ok":true}` |
//! | `POST /quiesce` | `save-off`, `save-all flush` | 200 `{"quiesced":true}`, 502 `{"error":…}` |
//! | `POST /unquiesce` | `save-on` | 200 `{"quiesced":false}`, 502 `{"error":…}` |
//! | `GET /pods/{uid}/identity` | `fixture-incarnation` over RCON | 200 `{"podUID","gameIncarnation","agentIncarnation"}` |
//! | `POST /pods/{uid}/quiesce`, `…/unquiesce` | as above, bound to the pod | as above |
//!
//! A pod-bound route for a UID that is not this pod's answers 409 with `{"error","podUID",
//! "requested"}` and sends nothing to the game; so does a pod-bound quiesce or unquiesce
//! whose optional `?gameIncarnation=` query no longer matches the running game (checked on
//! the same RCON connection that then carries the commands). A pod-bound unquiesce may name
//! the obligation it pays (`?obligation=`, e.g. the Backup's UID): the agent remembers each
//! obligation it paid for a game incarnation and answers a repeated one with 200
//! `{"quiesced":false,"alreadyPaid":true}` without sending `save-on` again, so an operator that
//! crashed between the agent's answer and its own record pays the obligation exactly once. The
//! game
//! incarnation is learned over RCON (the fixture-only `fixture-incarnation` command), so the
//! agent needs no access to the data volume. With `--legacy` the pod-bound routes do not
//! exist (404), like agents from before the identity contract.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use crate::rcon::{RconClient, RconError};

/// Settings of `fixture-game agent`; every flag has an environment twin.
#[derive(Clone, Debug, clap::Args)]
pub struct AgentArgs {
    /// Address to listen on (the pod IP from the downward API).
    #[arg(long, env = "POD_IP", default_value = "127.0.0.1")]
    pub listen: IpAddr,
    /// HTTP port; 0 picks a free port.
    #[arg(long, env = "FIXTURE_AGENT_PORT", default_value_t = 8090)]
    pub port: u16,
    /// The game's RCON address [default: <LISTEN>:25575].
    #[arg(long, env = "FIXTURE_RCON_ADDR")]
    pub rcon_addr: Option<SocketAddr>,
    /// RCON password.
    #[arg(long, env = "RCON_PASSWORD", hide_env_values = true)]
    pub rcon_password: Option<String>,
    /// File holding the RCON password (used when no password is given directly).
    #[arg(long, env = "RCON_PASSWORD_FILE")]
    pub rcon_password_file: Option<PathBuf>,
    /// This pod's UID (downward API `metadata.uid`); pod-bound routes refuse any other.
    #[arg(long, env = "POD_UID")]
    pub pod_uid: Option<String>,
    /// Behave like an older agent: no pod-bound routes.
    #[arg(long, env = "FIXTURE_AGENT_LEGACY", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub legacy: bool,
    /// Timeout of one RCON exchange.
    #[arg(long, env = "FIXTURE_AGENT_RCON_TIMEOUT_MS", default_value_t = 5000)]
    pub rcon_timeout_ms: u64,
}

/// Why the agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No RCON password configured.
    #[error("no RCON password: set RCON_PASSWORD (or --rcon-password, or --rcon-password-file)")]
    NoPassword,
    /// The password file could not be read.
    #[error("cannot read the RCON password file {path}: {source}")]
    PasswordFile {
        /// The password file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The HTTP port could not be bound.
    #[error("cannot listen on {addr}: {source} (is the port taken, or POD_IP not this host's?)")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The HTTP server failed.
    #[error("agent HTTP server failed: {0}")]
    Serve(std::io::Error),
}

struct Agent {
    /// Obligations already paid: (game incarnation named by the caller, obligation).
    paid: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
    rcon_addr: SocketAddr,
    password: String,
    pod_uid: Option<String>,
    incarnation: String,
    timeout: Duration,
}

#[derive(Debug, Deserialize)]
struct BoundQuery {
    #[serde(rename = "gameIncarnation")]
    game_incarnation: Option<String>,
    /// What an unquiesce pays (e.g. the Backup's UID): paid at most once per game incarnation.
    obligation: Option<String>,
}

/// Run the agent until the process ends.
pub async fn run(args: AgentArgs) -> Result<(), AgentError> {
    let password = match (&args.rcon_password, &args.rcon_password_file) {
        (Some(p), _) => p.clone(),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map(|p| p.trim_end_matches(['\r', '\n']).to_owned())
            .map_err(|source| AgentError::PasswordFile {
                path: path.clone(),
                source,
            })?,
        (None, None) => return Err(AgentError::NoPassword),
    };
    let agent = Arc::new(Agent {
        paid: std::sync::Mutex::default(),
        rcon_addr: args
            .rcon_addr
            .unwrap_or(SocketAddr::new(args.listen, 25575)),
        password,
        pod_uid: args.pod_uid.clone(),
        incarnation: uuid::Uuid::new_v4().to_string(),
        timeout: Duration::from_millis(args.rcon_timeout_ms.max(1)),
    });
    let mut app = Router::new()
        .route("/healthz", get(healthz))
        .route("/quiesce", post(quiesce))
        .route("/unquiesce", post(unquiesce));
    if !args.legacy {
        app = app
            .route("/pods/{uid}/identity", get(identity))
            .route("/pods/{uid}/quiesce", post(bound_quiesce))
            .route("/pods/{uid}/unquiesce", post(bound_unquiesce));
    }
    // Every call but the health probe is logged, so a case can tell from the agent's own log
    // whether anything called it (e.g. that a raw copy made no agent call).
    let app = app.layer(axum::middleware::from_fn(log_call));
    let addr = SocketAddr::new(args.listen, args.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| AgentError::Bind { addr, source })?;
    let bound = listener.local_addr().expect("bound socket has an address");
    println!(
        "{}",
        json!({
            "event": "listening",
            "agent": bound.to_string(),
            "agentIncarnation": agent.incarnation,
            "legacy": args.legacy,
            "rcon": agent.rcon_addr.to_string(),
        })
    );
    axum::serve(listener, app.with_state(agent))
        .await
        .map_err(AgentError::Serve)
}

/// Logs one line per call (`{"event":"call","method":…,"path":…}`) except `GET /healthz`.
async fn log_call(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if request.uri().path() != "/healthz" {
        println!(
            "{}",
            json!({
                "event": "call",
                "method": request.method().as_str(),
                "path": request.uri().path(),
            })
        );
    }
    next.run(request).await
}

/// A failed RCON step, answered with 502.
struct Upstream(String);

impl From<RconError> for Upstream {
    fn from(e: RconError) -> Self {
        Upstream(e.to_string())
    }
}

impl IntoResponse for Upstream {
    fn into_response(self) -> Response {
        (StatusCode::BAD_GATEWAY, Json(json!({ "error": self.0 }))).into_response()
    }
}

impl Agent {
    async fn session(&self) -> Result<RconClient, Upstream> {
        Ok(RconClient::connect_with_timeout(self.rcon_addr, &self.password, self.timeout).await?)
    }

    /// Run commands in order on `rcon`; a reply that reports failure stops it.
    async fn run_commands(&self, rcon: &mut RconClient, commands: &[&str]) -> Result<(), Upstream> {
        for command in commands {
            let reply = rcon.command(command).await?;
            if reply.starts_with("Unable to save") || reply.starts_with("Unknown or incomplete") {
                return Err(Upstream(format!(
                    "RCON command {command:?} at {} failed: {reply}",
                    self.rcon_addr
                )));
            }
        }
        Ok(())
    }

    /// `None` if `uid` is this pod's; otherwise the 409 refusal.
    fn refuse_foreign(&self, uid: &str) -> Option<Response> {
        let reason = match &self.pod_uid {
            Some(own) if own == uid => return None,
            Some(own) => {
                format!("this agent serves pod {own}, not {uid}; nothing was sent to the game")
            }
            None => format!(
                "this agent was not given its pod UID (set POD_UID from metadata.uid), so it cannot vouch for pod {uid}"
            ),
        };
        let body = json!({ "error": reason, "podUID": self.pod_uid, "requested": uid });
        Some((StatusCode::CONFLICT, Json(body)).into_response())
    }

    /// The pod-bound form of quiesce/unquiesce: refuse a foreign pod UID, and if the caller
    /// names a game incarnation, check it on the same RCON connection the commands then use, so
    /// they cannot reach a game process that replaced the one checked.
    async fn run_bound(
        &self,
        uid: &str,
        query: &BoundQuery,
        commands: &[&str],
    ) -> Result<Option<Response>, Upstream> {
        if let Some(refusal) = self.refuse_foreign(uid) {
            return Ok(Some(refusal));
        }
        let mut rcon = self.session().await?;
        if let Some(expected) = &query.game_incarnation {
            let current = rcon.command("fixture-incarnation").await?;
            if &current != expected {
                let body = json!({
                    "error": format!("the game now runs incarnation {current}, not {expected}; nothing was sent to the game"),
                    "gameIncarnation": current,
                    "requested": expected,
                });
                return Ok(Some((StatusCode::CONFLICT, Json(body)).into_response()));
            }
        }
        self.run_commands(&mut rcon, commands).await?;
        Ok(None)
    }
}

const QUIESCE: &[&str] = &["save-off", "save-all flush"];
const UNQUIESCE: &[&str] = &["save-on"];

async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "ok": true }))
}

async fn quiesce(State(agent): State<Arc<Agent>>) -> Result<Json<serde_json::Value>, Upstream> {
    let mut rcon = agent.session().await?;
    agent.run_commands(&mut rcon, QUIESCE).await?;
    Ok(Json(json!({ "quiesced": true })))
}

async fn unquiesce(State(agent): State<Arc<Agent>>) -> Result<Json<serde_json::Value>, Upstream> {
    let mut rcon = agent.session().await?;
    agent.run_commands(&mut rcon, UNQUIESCE).await?;
    Ok(Json(json!({ "quiesced": false })))
}

async fn identity(
    State(agent): State<Arc<Agent>>,
    Path(uid): Path<String>,
) -> Result<Response, Upstream> {
    if let Some(refusal) = agent.refuse_foreign(&uid) {
        return Ok(refusal);
    }
    let game = agent
        .session()
        .await?
        .command("fixture-incarnation")
        .await?;
    Ok(Json(json!({
        "podUID": uid,
        "gameIncarnation": game,
        "agentIncarnation": agent.incarnation,
    }))
    .into_response())
}

async fn bound_quiesce(
    State(agent): State<Arc<Agent>>,
    Path(uid): Path<String>,
    Query(query): Query<BoundQuery>,
) -> Result<Response, Upstream> {
    Ok(match agent.run_bound(&uid, &query, QUIESCE).await? {
        Some(refusal) => refusal,
        None => Json(json!({ "quiesced": true })).into_response(),
    })
}

async fn bound_unquiesce(
    State(agent): State<Arc<Agent>>,
    Path(uid): Path<String>,
    Query(query): Query<BoundQuery>,
) -> Result<Response, Upstream> {
    let key = query.obligation.clone().map(|obligation| {
        (
            query.game_incarnation.clone().unwrap_or_default(),
            obligation,
        )
    });
    let paid = |agent: &Agent| agent.paid.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(key) = &key
        && agent.refuse_foreign(&uid).is_none()
        && paid(&agent).contains(key)
    {
        return Ok(Json(json!({ "quiesced": false, "alreadyPaid": true })).into_response());
    }
    Ok(match agent.run_bound(&uid, &query, UNQUIESCE).await? {
        Some(refusal) => refusal,
        None => {
            if let Some(key) = key {
                agent
                    .paid
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key);
            }
            Json(json!({ "quiesced": false })).into_response()
        }
    })
}
