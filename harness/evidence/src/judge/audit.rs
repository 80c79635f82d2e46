//! The game's RCON audit log, judged: which game processes started, which commands each
//! received, and whether every `save-off` was answered by a `save-on`.
//!
//! Absence counts only when its source was read and covers the moment in question: a missing
//! or empty log, a line that is not JSON, or a log with no start line is [`Absent`], never an
//! empty list that would pass a "no such command" check.

use serde::{Deserialize, Serialize};

/// Where the fixture game keeps its RCON audit log, relative to its world claim.
pub const AUDIT_LOG: &str = "logs/rcon-audit.jsonl";

/// What the probe prints instead of the log when the file does not exist.
pub const MISSING_MARKER: &str = "REHEARSAL-AUDIT-LOG-MISSING";

/// One line of the audit log, as the fixture game writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditLine {
    /// `start` for the first line of a game process, `command` for an RCON command.
    pub event: String,
    /// RFC 3339 time.
    pub time: String,
    /// The game process (incarnation) that wrote the line.
    pub incarnation: String,
    /// The RCON client (commands only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The command text (commands only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The reply sent (commands only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// The fixture game version (start lines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game_version: Option<String>,
    /// The mode (start lines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// Evidence a judgement needed was not there: what it would come from, and why it cannot
/// speak to the moment in question.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("evidence absent: {what}: {why}")]
pub struct Absent {
    /// The evidence or the object it would come from, e.g. `pvc ns/data-mc logs/rcon-audit.jsonl`.
    pub what: String,
    /// Why it is absent, and what to do.
    pub why: String,
}

/// The game's RCON audit log, as read from its world claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditLog {
    /// The claim the log was read from.
    pub claim: String,
    /// Its lines in file order, one per RCON command or game start.
    pub lines: Vec<AuditLine>,
}

impl AuditLog {
    /// What the probe printed for the audit log of `claim` in `namespace`, judged: the
    /// missing-file marker, a line that is not one JSON object, or a log without a start line
    /// is [`Absent`] (naming the claim and the line). Blank lines are skipped.
    pub fn parse(namespace: &str, claim: String, out: &str) -> Result<Self, Absent> {
        let what = |line: Option<usize>| match line {
            Some(n) => format!("pvc {namespace}/{claim} {AUDIT_LOG} line {n}"),
            None => format!("pvc {namespace}/{claim} {AUDIT_LOG}"),
        };
        if out.trim() == MISSING_MARKER {
            return Err(Absent {
                what: what(None),
                why: "the game's RCON audit log does not exist, so no absence of a command can be shown".into(),
            });
        }
        let mut lines = Vec::new();
        for (i, line) in out.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let parsed = serde_json::from_str(line).map_err(|e| Absent {
                what: what(Some(i + 1)),
                why: format!("not one JSON object per line ({e}): {line}"),
            })?;
            lines.push(parsed);
        }
        if !lines.iter().any(|l: &AuditLine| l.event == "start") {
            return Err(Absent {
                what: what(None),
                why: "the audit log holds no start line, so it covers no incarnation".into(),
            });
        }
        Ok(Self { claim, lines })
    }

    /// The incarnations that started, oldest first (one `start` line each).
    pub fn starts(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.event == "start")
            .map(|l| l.incarnation.clone())
            .collect()
    }

    /// The RCON commands incarnation `incarnation` received, in order.
    pub fn commands_of(&self, incarnation: &str) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.event == "command" && l.incarnation == incarnation)
            .filter_map(|l| l.command.clone())
            .collect()
    }

    /// When incarnation `incarnation` received its first `save-on` after its `nth` (0-based)
    /// `save-off`; `None` when it never did (or the time does not parse).
    pub fn save_on_after(&self, incarnation: &str, nth: usize) -> Option<jiff::Timestamp> {
        let mut offs = 0;
        let mut armed = false;
        for l in self
            .lines
            .iter()
            .filter(|l| l.event == "command" && l.incarnation == incarnation)
        {
            match l.command.as_deref() {
                Some("save-off") => {
                    armed = offs == nth;
                    offs += 1;
                }
                Some("save-on") if armed => return l.time.parse().ok(),
                _ => {}
            }
        }
        None
    }

    /// Every RCON command any incarnation received, in order.
    pub fn all_commands(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.event == "command")
            .filter_map(|l| l.command.clone())
            .collect()
    }

    /// The `n`-th newest incarnation (0 = newest), or [`Absent`] when fewer started; `why` says
    /// what the caller needed it for.
    pub fn nth_newest(&self, n: usize, why: &str) -> Result<String, Absent> {
        let starts = self.starts();
        starts
            .len()
            .checked_sub(n + 1)
            .map(|i| starts[i].clone())
            .ok_or_else(|| Absent {
                what: format!("{} {AUDIT_LOG}", self.claim),
                why: format!(
                    "{why}: {} incarnation(s) wrote a start line, {} needed",
                    starts.len(),
                    n + 1
                ),
            })
    }
}

/// Whether every `save-off` in `commands` was followed by a `save-on`, and there was at least
/// one `save-off`: cleanup reached this incarnation after each quiesce.
pub fn save_on_after_each_save_off(commands: &[String]) -> bool {
    let mut quiesced = 0;
    let mut pending = false;
    for c in commands {
        match c.as_str() {
            "save-off" => {
                quiesced += 1;
                pending = true;
            }
            "save-on" => pending = false,
            _ => {}
        }
    }
    quiesced > 0 && !pending
}

/// The number of `save-off` commands in `commands`.
pub fn save_offs(commands: &[String]) -> usize {
    commands.iter().filter(|c| *c == "save-off").count()
}
