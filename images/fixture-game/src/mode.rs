//! The fixture game's modes: one per kind of template version the rehearsal cases need.

use std::fmt;

use crate::world::{FORMAT_V1, FORMAT_V2};

/// How this process behaves (`--mode` / `FIXTURE_MODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// A 1.x version: reads and writes world format 1, refuses format 2 (exit 3).
    Normal,
    /// A compatible upgrade: a newer version that still reads and writes format 1.
    Compat,
    /// A format-changing upgrade: migrates every world to format 2 and writes the
    /// candidate-only marker file.
    Format,
    /// Serves the world marker over HTTP on the game port and speaks no Minecraft.
    HttpOnly,
    /// Exits 1 right after start.
    Crash,
    /// Answers the status ping like `normal` but refuses every login (Login Disconnect).
    RefuseLogin,
    /// Logs players in but never finishes the configuration phase (no Finish Configuration).
    StallConfiguration,
}

impl Mode {
    /// The newest world format this mode reads.
    pub fn supported_format(self) -> u32 {
        match self {
            Mode::Format => FORMAT_V2,
            Mode::Normal
            | Mode::Compat
            | Mode::HttpOnly
            | Mode::Crash
            | Mode::RefuseLogin
            | Mode::StallConfiguration => FORMAT_V1,
        }
    }

    /// The name used on the command line and in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::Compat => "compat",
            Mode::Format => "format",
            Mode::HttpOnly => "http-only",
            Mode::Crash => "crash",
            Mode::RefuseLogin => "refuse-login",
            Mode::StallConfiguration => "stall-configuration",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
