//! The Rehearsal fixture game: a small server that speaks real Minecraft Java 26.1 (protocol
//! 775) and Minecraft RCON, keeps worlds that an unquiesced copy can tear, changes its save
//! format between versions, and ships a Gameplane-compatible agent and a volume inspector.
//!
//! The binary `fixture-game` has four subcommands: `serve` ([`serve`]), `agent` ([`agent`]),
//! `inspect` ([`inspect`]) and `ready` ([`ready`], the fixture templates' readiness probe). Other crates use [`client::probe`] (a real Minecraft client),
//! [`rcon::RconClient`] and the [`inspect`] and [`audit`] types.
//!
//! # Modes
//!
//! `serve --mode` (`FIXTURE_MODE`, [`mode::Mode`]) picks the kind of version: `normal`,
//! `compat` (reads and writes format 1 too), `format` (migrates to format 2), `http-only` (HTTP
//! on the game port), `crash` (exits 1), and two negative candidates for the join gate:
//! `refuse-login` (the status ping answers, every login gets a Login Disconnect) and
//! `stall-configuration` (login succeeds, the configuration phase never finishes). All but
//! `crash` keep RCON, saves and the agent working like `normal`.
//!
//! # On-disk layout
//!
//! ```text
//! <data>/                        the world volume (--data-dir, default /data)
//!   world/                       the primary world
//!     manifest.json              {format, marker, generation, region_sha256, written_by}
//!     region/r.0.0.dat           region data; first line "FXREGION format=F generation=G"
//!     candidate-only.marker      only after the format-changing version migrated the world
//!   logs/                        not world data: excluded from digests
//!     rcon-audit.jsonl           one JSON line per RCON command, per incarnation start
//!     incarnation                the running process's incarnation id
//!     listening.json             {"game","rcon","incarnation"} once both ports listen
//! <extra PATH>/                  each --extra-world NAME=PATH: manifest.json, region/, …
//! <mods-dir>/package.json        {name, marker, game_version}, installed on first start
//! ```
//!
//! A save writes `region/r.0.0.dat` (step 1) and then `manifest.json` (step 2), neither
//! atomically; a copy between them is torn: the region's generation or checksum disagrees with
//! the manifest. Format 1 is what versions 1.x read and write; the format-changing version
//! rewrites every world as format 2 and writes `candidate-only.marker`; normal and compatible
//! versions refuse a format-2 world at start with exit code 3.

pub mod agent;
pub mod audit;
pub mod cli;
pub mod client;
pub mod commands;
pub mod http_only;
pub mod inspect;
pub mod minecraft;
pub mod mode;
pub mod mods;
pub mod players;
pub mod rcon;
pub mod ready;
pub mod save;
pub mod serve;
pub mod world;
