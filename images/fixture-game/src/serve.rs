//! `fixture-game serve`: open or seed the worlds, then run the game port (Minecraft or, in
//! HTTP-only mode, HTTP), RCON and autosave until `stop` or SIGTERM.
//!
//! Exit codes: 0 after `stop` or SIGTERM, 1 in crash mode, 2 for a configuration or volume
//! problem, 3 when a world's format is newer than this version reads.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::audit::{AuditError, AuditLog, LOG_DIR};
use crate::commands::GameCommands;
use crate::minecraft::{Join, MinecraftServer};
use crate::mode::Mode;
use crate::mods::{self, ModsError};
use crate::players::Players;
use crate::rcon::RconServer;
use crate::save::Saver;
use crate::world::{FORMAT_V2, World, WorldError};

/// The primary world's directory under the data directory.
pub const PRIMARY_WORLD_DIR: &str = "world";
/// Written under `<data>/logs/` once both ports listen: `{"game":…,"rcon":…}`.
pub const LISTENING_FILE: &str = "listening.json";

/// An extra world: `NAME=PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraWorld {
    /// The world's name (used by `fixture-marker` and in status output).
    pub name: String,
    /// Its directory (the extra volume's mount path).
    pub path: PathBuf,
}

impl FromStr for ExtraWorld {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('=') {
            Some((name, path))
                if !name.is_empty() && !path.is_empty() && name != PRIMARY_WORLD_DIR =>
            {
                Ok(ExtraWorld {
                    name: name.into(),
                    path: path.into(),
                })
            }
            _ => Err(format!(
                "extra world {s:?} is not NAME=PATH (NAME not empty and not \"world\"), e.g. nether=/extra/nether"
            )),
        }
    }
}

fn parse_extra_world(s: &str) -> Result<Option<ExtraWorld>, String> {
    if s.trim().is_empty() {
        return Ok(None);
    }
    s.trim().parse().map(Some)
}

/// Settings of `fixture-game serve`; every flag has an environment twin.
#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// Data directory (the world volume); the primary world lives in `<data>/world/`.
    #[arg(long, env = "FIXTURE_DATA_DIR", default_value = "/data")]
    pub data_dir: PathBuf,
    /// Address to bind both ports to (the pod IP from the downward API).
    #[arg(long, env = "POD_IP", default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Minecraft (or, in HTTP-only mode, HTTP) port; 0 picks a free port.
    #[arg(long, env = "FIXTURE_GAME_PORT", default_value_t = 25565)]
    pub game_port: u16,
    /// RCON port; 0 picks a free port.
    #[arg(long, env = "FIXTURE_RCON_PORT", default_value_t = 25575)]
    pub rcon_port: u16,
    /// RCON password.
    #[arg(long, env = "RCON_PASSWORD", hide_env_values = true)]
    pub rcon_password: Option<String>,
    /// File holding the RCON password (used when no password is given directly).
    #[arg(long, env = "RCON_PASSWORD_FILE")]
    pub rcon_password_file: Option<PathBuf>,
    /// Extra world as NAME=PATH; repeatable (environment: comma-separated list; empty
    /// entries are ignored, so an empty variable means none).
    #[arg(long = "extra-world", env = "FIXTURE_EXTRA_WORLDS", value_delimiter = ',', value_parser = parse_extra_world)]
    pub extra_worlds: Vec<Option<ExtraWorld>>,
    /// Mods directory; `package.json` is installed there on first start.
    #[arg(long, env = "FIXTURE_MODS_DIR")]
    pub mods_dir: Option<PathBuf>,
    /// Behaviour of this version.
    #[arg(long, env = "FIXTURE_MODE", value_enum, default_value_t = Mode::Normal)]
    pub mode: Mode,
    /// The fixture game's own version (the template version id, e.g. 1.0).
    #[arg(long, env = "FIXTURE_GAME_VERSION", default_value = "1.0")]
    pub game_version: String,
    /// Refuse every login (as `refuse-login` does) when running one of these game versions: a
    /// server-specific incompatibility with a version, e.g. a plugin it cannot load, set on one
    /// server while the template's versions stay the same for all.
    #[arg(long, env = "FIXTURE_REFUSE_LOGIN_UNDER", value_delimiter = ',')]
    pub refuse_login_under: Vec<String>,
    /// Fail to start, reading this server's primary world, when running one of these game
    /// versions (exit 2, nothing written): a world only this server has that a version cannot
    /// read, e.g. a chunk its migration does not know, while other servers' worlds load.
    #[arg(long, env = "FIXTURE_UNREADABLE_WORLD_UNDER", value_delimiter = ',')]
    pub unreadable_world_under: Vec<String>,
    /// Marker value a new primary world is seeded with.
    #[arg(long, env = "FIXTURE_WORLD_MARKER", default_value = "world-seed")]
    pub world_marker: String,
    /// Marker value new extra worlds are seeded with [default: extra-seed-<NAME>].
    #[arg(long, env = "FIXTURE_EXTRA_MARKER")]
    pub extra_marker: Option<String>,
    /// Marker value of a newly installed mods package [default: mods-<GAME_VERSION>].
    #[arg(long, env = "FIXTURE_MODS_MARKER")]
    pub mods_marker: Option<String>,
    /// Autosave interval while saving is on.
    #[arg(long, env = "FIXTURE_AUTOSAVE_INTERVAL_MS", default_value_t = 500)]
    pub autosave_interval_ms: u64,
    /// Pause between the two autosave steps (region, then manifest); a copy in it is torn.
    #[arg(long, env = "FIXTURE_AUTOSAVE_GAP_MS", default_value_t = 20)]
    pub autosave_gap_ms: u64,
    /// Print a JSON line for every save step (lets tests wait for the torn window).
    #[arg(long, env = "FIXTURE_LOG_SAVES", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub log_saves: bool,
    /// Keep-alive interval in the play state.
    #[arg(long, env = "FIXTURE_KEEPALIVE_MS", default_value_t = 10_000)]
    pub keepalive_ms: u64,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
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
    /// A port could not be bound.
    #[error(
        "cannot listen on {addr} for {what}: {source} (is the port taken, or POD_IP not this host's?)"
    )]
    Bind {
        /// Which listener (game, RCON).
        what: &'static str,
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A world is newer than this version reads.
    #[error("{0}")]
    NewerFormat(WorldError),
    /// This server's world cannot be read by this version (`FIXTURE_UNREADABLE_WORLD_UNDER`).
    #[error(
        "{path}: this world cannot be read by game version {version} (a chunk its loader does not know); run the version that wrote it, or restore a backup"
    )]
    Unreadable {
        /// The primary world's directory.
        path: PathBuf,
        /// The game version that cannot read it.
        version: String,
    },
    /// A world could not be read or written.
    #[error(transparent)]
    World(#[from] WorldError),
    /// The mods directory could not be prepared.
    #[error(transparent)]
    Mods(#[from] ModsError),
    /// The audit log could not be written.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// Writing the listening file failed.
    #[error("cannot write {path}: {source}")]
    Listening {
        /// The listening file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl ServeError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            ServeError::NewerFormat(_) => 3,
            _ => 2,
        }
    }
}

/// Why the server stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopCause {
    /// The RCON `stop` command.
    StopCommand,
    /// SIGTERM or SIGINT.
    Signal,
}

/// How the server stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// What asked it to stop.
    pub cause: StopCause,
    /// Whether it wrote a final save (not after a signal while saving was off).
    pub saved: bool,
}

fn password(args: &ServeArgs) -> Result<String, ServeError> {
    if let Some(p) = &args.rcon_password {
        return Ok(p.clone());
    }
    match &args.rcon_password_file {
        Some(path) => std::fs::read_to_string(path)
            .map(|p| p.trim_end_matches(['\r', '\n']).to_owned())
            .map_err(|source| ServeError::PasswordFile {
                path: path.clone(),
                source,
            }),
        None => Err(ServeError::NoPassword),
    }
}

async fn bind(what: &'static str, ip: IpAddr, port: u16) -> Result<TcpListener, ServeError> {
    let addr = SocketAddr::new(ip, port);
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { what, addr, source })
}

async fn open_worlds(args: &ServeArgs) -> Result<Vec<World>, ServeError> {
    let primary = args.data_dir.join(PRIMARY_WORLD_DIR);
    if args.unreadable_world_under.contains(&args.game_version) && primary.exists() {
        return Err(ServeError::Unreadable {
            path: primary,
            version: args.game_version.clone(),
        });
    }
    let mut specs = vec![(
        PRIMARY_WORLD_DIR.to_owned(),
        args.data_dir.join(PRIMARY_WORLD_DIR),
        args.world_marker.clone(),
    )];
    for extra in args.extra_worlds.iter().flatten() {
        let marker = args
            .extra_marker
            .clone()
            .unwrap_or_else(|| format!("extra-seed-{}", extra.name));
        specs.push((extra.name.clone(), extra.path.clone(), marker));
    }
    let mut worlds = Vec::new();
    for (name, dir, marker) in specs {
        let (mut world, _) =
            World::open_or_create(&name, &dir, &marker, &args.game_version).await?;
        world
            .check_format(args.mode.supported_format())
            .map_err(ServeError::NewerFormat)?;
        if args.mode == Mode::Format && world.state().format < FORMAT_V2 {
            world.migrate(FORMAT_V2, &args.game_version).await?;
        }
        worlds.push(world);
    }
    Ok(worlds)
}

/// Run the server until it stops; errors are start-up failures.
pub async fn serve(args: ServeArgs) -> Result<Stopped, ServeError> {
    // Installed first, so a SIGTERM at any point after start-up still saves and exits 0.
    let signals = Signals::install();
    let password = password(&args)?;
    let worlds = open_worlds(&args).await?;
    if let Some(dir) = &args.mods_dir {
        let marker = args
            .mods_marker
            .clone()
            .unwrap_or_else(|| format!("mods-{}", args.game_version));
        mods::ensure_package(dir, &marker, &args.game_version)?;
    }
    let incarnation = uuid::Uuid::new_v4().to_string();
    let audit = Arc::new(AuditLog::open(
        &args.data_dir,
        &incarnation,
        &args.game_version,
        args.mode.as_str(),
    )?);
    let saver = Arc::new(Saver::with_step_log(
        worlds,
        &args.game_version,
        Duration::from_millis(args.autosave_interval_ms.max(1)),
        Duration::from_millis(args.autosave_gap_ms),
        args.log_saves,
    ));
    // A complete save at start writes a migrated world in its new format.
    saver.save_all().await?;

    let game_listener = bind("the game", args.bind, args.game_port).await?;
    let rcon_listener = bind("RCON", args.bind, args.rcon_port).await?;
    let game_addr = game_listener
        .local_addr()
        .expect("bound socket has an address");
    let rcon_addr = rcon_listener
        .local_addr()
        .expect("bound socket has an address");

    let players = Arc::new(Players::default());
    let stop = Arc::new(Notify::new());
    let commands = Arc::new(GameCommands {
        saver: saver.clone(),
        audit: audit.clone(),
        players: players.clone(),
        stop: stop.clone(),
    });
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(RconServer::new(rcon_listener, &password, commands).run());
    tasks.spawn(saver.clone().run_autosave());
    if args.mode == Mode::HttpOnly {
        let saver = saver.clone();
        tasks.spawn(async move {
            if let Err(e) = crate::http_only::run(game_listener, saver).await {
                tracing::error!("HTTP server failed: {e}");
            }
        });
    } else {
        let motd = format!(
            "Rehearsal fixture game {} ({})",
            args.game_version, args.mode
        );
        let join = match args.mode {
            _ if args.refuse_login_under.contains(&args.game_version) => Join::RefuseLogin,
            Mode::RefuseLogin => Join::RefuseLogin,
            Mode::StallConfiguration => Join::StallConfiguration,
            _ => Join::Complete,
        };
        let server = Arc::new(MinecraftServer {
            motd,
            players,
            keepalive: Duration::from_millis(args.keepalive_ms.max(1)),
            join,
        });
        tasks.spawn(server.run(game_listener));
    }
    announce(&args.data_dir, game_addr, rcon_addr, &incarnation)?;

    let cause = signals.wait_for_stop(&stop).await;
    // `stop` always saves, like vanilla; a signal saves only if saving is on, so a quiesced
    // world stays exactly as the last flush left it.
    let saved = cause == StopCause::StopCommand || saver.save_on();
    saver.finish(saved).await?;
    tasks.abort_all();
    Ok(Stopped { cause, saved })
}

fn announce(
    data_dir: &Path,
    game: SocketAddr,
    rcon: SocketAddr,
    incarnation: &str,
) -> Result<(), ServeError> {
    let line = serde_json::json!({
        "event": "listening",
        "game": game.to_string(),
        "rcon": rcon.to_string(),
        "incarnation": incarnation,
    })
    .to_string();
    let path = data_dir.join(LOG_DIR).join(LISTENING_FILE);
    std::fs::write(&path, format!("{line}\n"))
        .map_err(|source| ServeError::Listening { path, source })?;
    println!("{line}");
    Ok(())
}

struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            term: signal(SignalKind::terminate()).expect("install SIGTERM handler"),
            int: signal(SignalKind::interrupt()).expect("install SIGINT handler"),
        }
    }

    async fn wait_for_stop(mut self, stop: &Notify) -> StopCause {
        tokio::select! {
            _ = stop.notified() => StopCause::StopCommand,
            _ = self.term.recv() => StopCause::Signal,
            _ = self.int.recv() => StopCause::Signal,
        }
    }
}
