//! The gates. Before the candidate reaches the clone, a candidate that carries a module bundle
//! passes [`module`] (the bundle served and installed is exactly the pinned one). Then the gates a
//! server passes once it runs the candidate, in order: the pinned image runs
//! ([`image`]), a real join reaches play ([`join`]), a save succeeds ([`save`]), and on the clone
//! the world claims read back whole ([`read_back`]). Each writes a typed `gate` receipt (and, on
//! the `rehearse qualify` console, a progress line); the first failure stops the rest and
//! [`halt`]s the qualification. [`pods`] is the one rule every wait on a pod follows.

pub mod image;
pub mod join;
pub mod module;
pub mod pods;
pub mod read_back;
pub mod save;

/// The gates' names, as the evidence records them.
pub use crate::evidence::qualification::gates::{
    IMAGE, JOIN, MODULE, PREFLIGHT, READ_BACK, ROLLBACK, SAVE,
};

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::context::{CaseContext, CaseError};
use crate::evidence::qualification::{
    Gate, GateError, GateEvidence, Observed, Plan, Qualification, short_reason,
};
use crate::probe::readback::Readback;
use crate::qualify::access::Access;
use crate::qualify::gates::image::image_gate;
use crate::qualify::gates::join::join_gate;
use crate::qualify::gates::read_back::read_back_gate;
use crate::qualify::gates::save::save_gate;

/// Whether each gate prints a progress line on stdout as it ends (the `rehearse qualify`
/// console; cases run quietly).
pub(super) static PROGRESS: AtomicBool = AtomicBool::new(false);

/// Turns the per-gate progress line on or off for this process.
pub fn set_progress(on: bool) {
    PROGRESS.store(on, Ordering::SeqCst);
    crate::context::set_step_progress(on);
}

pub(in crate::qualify) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A gate being judged: when it started.
pub(super) struct Timer {
    unix_ms: u64,
    started: Instant,
}

impl Timer {
    pub(super) fn start() -> Self {
        Self {
            unix_ms: unix_ms(),
            started: Instant::now(),
        }
    }
}

/// Ends the qualification at `gate`, recording how many batches were promoted before it.
pub(super) fn halt(q: &mut Qualification, gate: &Gate, batches_promoted: usize) {
    q.outcome = crate::evidence::judge::gates::halted(gate, batches_promoted);
}

/// Writes a gate's typed receipt (kind `gate`, step `gate: <name> (<server>)`) and, on the
/// `rehearse qualify` console, its progress line.
pub(super) fn record(ctx: &CaseContext<'_>, gate: &Gate) -> Result<(), CaseError> {
    let step = if gate.server.is_empty() {
        format!("gate: {}", gate.name)
    } else {
        format!("gate: {} ({})", gate.name, gate.server)
    };
    ctx.recorder.gate(&step, gate)?;
    if PROGRESS.load(Ordering::SeqCst) {
        println!("{}", progress_line(gate));
    }
    Ok(())
}

/// `  passed  <gate> · <server> · 1.2 s` or `  FAILED  <gate> · <server> · 1.2 s: <reason>`, the
/// reason made short (the report has it whole).
pub fn progress_line(gate: &Gate) -> String {
    let mut line = format!(
        "  {}  {}",
        if gate.passed { "passed" } else { "FAILED" },
        gate.name
    );
    if !gate.server.is_empty() {
        line.push_str(&format!(" · {}", gate.server));
    }
    line.push_str(&format!(
        " · {}",
        crate::report::model::format_duration(gate.duration_ms)
    ));
    if let Some(reason) = gate.reason.as_ref().filter(|_| !gate.passed) {
        line.push_str(&format!(": {}", short_reason(reason)));
    }
    line
}

pub(super) fn gate(
    server: &str,
    evidence: GateEvidence,
    passed: bool,
    reason: Option<String>,
) -> Gate {
    Gate::new(server, evidence, passed, reason)
}

/// A gate's `{"error": …}` evidence.
pub(super) fn gate_error<T>(e: impl ToString) -> Observed<T> {
    Observed::Error(GateError {
        error: e.to_string(),
    })
}

/// Stamps a gate with when it started and how long it took.
pub(super) fn finish(timer: Timer, mut g: Gate) -> Gate {
    g.started_unix_ms = timer.unix_ms;
    g.duration_ms = timer.started.elapsed().as_millis() as u64;
    g
}

/// A server's gates after it was moved to the candidate: the pinned image runs, a real join
/// reaches play, a save succeeds, and (on the clone, given the digests read `before` the
/// candidate ran) the world claims read back whole. Each writes a receipt; the first failure
/// stops the rest (they would only repeat it). Members of a batch gated together share `batch`:
/// a failure raises it, and a member that sees it raised starts no further gate.
#[allow(clippy::too_many_arguments)]
pub(super) async fn server_gates(
    ctx: &CaseContext<'_>,
    plan: &Plan,
    access: &Access,
    server: &str,
    image: &str,
    generation: Option<i64>,
    before: Option<(&Readback, &[String])>,
    batch: Option<&BatchStop>,
) -> Result<Vec<Gate>, CaseError> {
    let mut out = Vec::new();
    // Whether to start `gate`: not after an interrupt (an error), nor once the batch failed.
    let at = |gate: &str| -> Result<bool, CaseError> {
        crate::context::boundary(&format!("gate: {gate} ({server})"))?;
        Ok(!batch.is_some_and(BatchStop::raised))
    };
    let judged = |out: &mut Vec<Gate>, g: Gate| -> Result<bool, CaseError> {
        record(ctx, &g)?;
        let passed = g.passed;
        if let Some(b) = batch {
            b.judged(&g);
            if !passed {
                b.raise();
            }
        }
        out.push(g);
        Ok(passed)
    };
    if !at("image")? {
        return Ok(out);
    }
    let timer = Timer::start();
    let g = finish(timer, image_gate(ctx, server, image, generation).await?);
    if !judged(&mut out, g)? || !at("join")? {
        return Ok(out);
    }
    let g = join_gate(ctx, access, server).await?;
    if !judged(&mut out, g)? || !at("save")? {
        return Ok(out);
    }
    let timer = Timer::start();
    let g = finish(timer, save_gate(ctx, access, server).await);
    let passed = judged(&mut out, g)?;
    let Some((restored, claims)) = before.filter(|_| passed) else {
        return Ok(out);
    };
    if !at("read-back")? {
        return Ok(out);
    }
    let g = read_back_gate(ctx, plan, access, server, restored, claims).await;
    judged(&mut out, g)?;
    Ok(out)
}

/// Shared by the members of a batch gated together: raised by the first failed gate, after
/// which no member starts another gate (the batch is decided and put back). It also keeps every
/// gate judged, in the order they ended, so a batch an interrupt ends still reports the gates
/// that finished.
#[derive(Debug, Default)]
pub(in crate::qualify) struct BatchStop {
    raised: std::sync::atomic::AtomicBool,
    judged: std::sync::Mutex<Vec<Gate>>,
}

impl BatchStop {
    fn raise(&self) {
        self.raised.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn raised(&self) -> bool {
        self.raised.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn judged(&self, gate: &Gate) {
        self.judged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(gate.clone());
    }

    /// Every gate judged so far, in the order they ended.
    pub(in crate::qualify) fn gates(&self) -> Vec<Gate> {
        self.judged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
