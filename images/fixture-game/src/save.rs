//! Saving: the periodic two-step autosave while saving is on, and the synchronous full save
//! behind `save-all flush`, `stop` and SIGTERM.
//!
//! One lock covers every save, so a full save never interleaves with an autosave: it asks a
//! running autosave to skip the rest of its gap, waits for it to finish step 2, then writes a
//! complete save of its own. After `save-off` no new autosave starts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{Mutex, Notify};

use crate::world::{World, WorldError};

/// What a world looks like right now (for `fixture-status` and the HTTP-only marker page).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorldSummary {
    /// World name (`world` for the primary world).
    pub name: String,
    /// Format version.
    pub format: u32,
    /// Marker value.
    pub marker: String,
    /// Generation of the last completed save.
    pub generation: u64,
}

/// Owns the worlds and every write to them.
pub struct Saver {
    worlds: Mutex<Vec<World>>,
    /// A copy of the world states readable while an autosave holds `worlds` through its gap.
    published: std::sync::Mutex<Vec<WorldSummary>>,
    game_version: String,
    save_on: AtomicBool,
    /// Set by the server's last save: no autosave writes after it (one that was waiting for the
    /// lock would otherwise write step 1 and be cut off in its gap when the server exits,
    /// leaving a torn world behind a clean stop).
    closed: AtomicBool,
    /// Wakes an autosave waiting between its two steps when a full save wants the lock.
    hurry: Notify,
    /// Full saves waiting for the lock (a count, not a stored permit, so no stale wake-up
    /// cuts a later autosave's gap short).
    full_saves_waiting: AtomicUsize,
    interval: Duration,
    gap: Duration,
    /// Print a JSON line per save step (`--log-saves`), so tests can wait on steps.
    log_steps: bool,
}

impl Saver {
    /// Take ownership of the opened worlds (the primary world first).
    pub fn new(worlds: Vec<World>, game_version: &str, interval: Duration, gap: Duration) -> Self {
        Self::with_step_log(worlds, game_version, interval, gap, false)
    }

    /// Like [`Saver::new`], printing `{"event":"save-step",…}` lines to stdout when `log_steps`.
    pub fn with_step_log(
        worlds: Vec<World>,
        game_version: &str,
        interval: Duration,
        gap: Duration,
        log_steps: bool,
    ) -> Self {
        Saver {
            published: std::sync::Mutex::new(summarize(&worlds)),
            worlds: Mutex::new(worlds),
            game_version: game_version.to_owned(),
            save_on: AtomicBool::new(true),
            closed: AtomicBool::new(false),
            hurry: Notify::new(),
            full_saves_waiting: AtomicUsize::new(0),
            interval,
            gap,
            log_steps,
        }
    }

    /// Whether autosave is on.
    pub fn save_on(&self) -> bool {
        self.save_on.load(Ordering::SeqCst)
    }

    /// Turn autosave on or off; returns the previous setting.
    pub fn set_save_on(&self, on: bool) -> bool {
        self.save_on.swap(on, Ordering::SeqCst)
    }

    /// Write a complete, consistent save of every world (both steps back to back).
    pub async fn save_all(&self) -> Result<(), WorldError> {
        self.full_save(false, true).await
    }

    /// The server's last word on its worlds: a complete save when `save` (as [`Saver::save_all`]),
    /// and no autosave writes anything after it, so the world on disk is exactly this save
    /// (or, without `save`, exactly the last one) whenever the process ends.
    pub async fn finish(&self, save: bool) -> Result<(), WorldError> {
        self.full_save(true, save).await
    }

    async fn full_save(&self, close: bool, save: bool) -> Result<(), WorldError> {
        self.full_saves_waiting.fetch_add(1, Ordering::SeqCst);
        self.hurry.notify_waiters();
        let mut worlds = self.worlds.lock().await;
        self.full_saves_waiting.fetch_sub(1, Ordering::SeqCst);
        if close {
            self.closed.store(true, Ordering::SeqCst);
        }
        if save {
            for world in worlds.iter_mut() {
                world.save_step_region(&self.game_version).await?;
                self.log_step("full", "region", world);
                world.save_step_manifest().await?;
                self.log_step("full", "manifest", world);
            }
            self.publish(&worlds);
        }
        Ok(())
    }

    fn publish(&self, worlds: &[World]) {
        *self.published.lock().expect("summary lock") = summarize(worlds);
    }

    /// One autosave: region files of every world, the gap, then every manifest.
    async fn autosave_once(&self) -> Result<(), WorldError> {
        let mut worlds = self.worlds.lock().await;
        // `save-off` or the server's last save may have arrived while this autosave waited for
        // the lock.
        if !self.save_on() || self.closed.load(Ordering::SeqCst) {
            return Ok(());
        }
        for world in worlds.iter_mut() {
            world.save_step_region(&self.game_version).await?;
            self.log_step("autosave", "region", world);
        }
        if !self.gap.is_zero() {
            // A full save waiting for the lock cuts the gap short. Register for the wake-up
            // before checking the count, so a full save arriving in between is not missed.
            let hurry = self.hurry.notified();
            tokio::pin!(hurry);
            hurry.as_mut().enable();
            if self.full_saves_waiting.load(Ordering::SeqCst) == 0 {
                let _ = tokio::time::timeout(self.gap, hurry).await;
            }
        }
        for world in worlds.iter_mut() {
            world.save_step_manifest().await?;
            self.log_step("autosave", "manifest", world);
        }
        self.publish(&worlds);
        Ok(())
    }

    fn log_step(&self, save: &str, step: &str, world: &World) {
        if self.log_steps {
            println!(
                "{}",
                serde_json::json!({
                    "event": "save-step",
                    "save": save,
                    "step": step,
                    "world": world.name(),
                    "generation": world.state().generation,
                })
            );
        }
    }

    /// Autosave every interval while saving is on; runs until the task is dropped.
    pub async fn run_autosave(self: Arc<Self>) {
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if !self.save_on() {
                continue;
            }
            if let Err(e) = self.autosave_once().await {
                tracing::error!("autosave failed: {e}");
            }
        }
    }

    /// Set the marker of the named world (written by the next save); false if no such world.
    pub async fn set_marker(&self, world: &str, marker: &str) -> bool {
        let mut worlds = self.worlds.lock().await;
        match worlds.iter_mut().find(|w| w.name() == world) {
            Some(w) => {
                w.set_marker(marker);
                self.publish(&worlds);
                true
            }
            None => false,
        }
    }

    /// The state of every world as of the last completed save or marker change.
    pub fn summary(&self) -> Vec<WorldSummary> {
        self.published.lock().expect("summary lock").clone()
    }
}

fn summarize(worlds: &[World]) -> Vec<WorldSummary> {
    worlds
        .iter()
        .map(|w| WorldSummary {
            name: w.name().to_owned(),
            format: w.state().format,
            marker: w.state().marker.clone(),
            generation: w.state().generation,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn saver(dir: &std::path::Path) -> Saver {
        let (world, _) = World::open_or_create("world", dir, "m", "1.0")
            .await
            .unwrap();
        Saver::new(vec![world], "1.0", Duration::from_millis(1), Duration::ZERO)
    }

    #[tokio::test]
    async fn no_autosave_writes_after_the_last_save() {
        let dir = tempfile::tempdir().unwrap();
        let saver = saver(dir.path()).await;
        saver.finish(true).await.unwrap();
        let last = saver.summary();
        // An autosave that was waiting for the lock gets it now: it must write nothing (its
        // step 1 would be left without step 2 when the process exits).
        saver.autosave_once().await.unwrap();
        assert_eq!(saver.summary(), last);
        let (reopened, _) = World::open_or_create("world", dir.path(), "m", "1.0")
            .await
            .unwrap();
        assert_eq!(reopened.state().generation, last[0].generation);
    }

    #[tokio::test]
    async fn before_the_last_save_an_autosave_writes() {
        let dir = tempfile::tempdir().unwrap();
        let saver = saver(dir.path()).await;
        let before = saver.summary()[0].generation;
        saver.autosave_once().await.unwrap();
        assert_eq!(saver.summary()[0].generation, before + 1);
    }
}
