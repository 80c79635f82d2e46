//! The SVG timeline of one case on one architecture: a bar per receipt from the previous
//! receipt to this one, so a slow or stuck step is the long bar (it is also outlined).

use std::fmt::Write;

use crate::receipts::kind;

use super::escape::escape;
use super::load::LoadedCase;
use super::model::format_duration;

const LABEL_W: u64 = 230;
const BAR_W: u64 = 520;
const TAIL_W: u64 = 90;
const ROW_H: u64 = 20;
const TOP: u64 = 24;

/// Fill colour per receipt kind; the legend in the page uses the same.
pub fn colour(receipt_kind: &str) -> &'static str {
    match receipt_kind {
        kind::WAIT => "#e8a33d",
        kind::PVC_OBSERVATION => "#5a9e4b",
        kind::ARTIFACT => "#9b6bb5",
        kind::RESTIC_SNAPSHOT | kind::RESTIC_RESTORE => "#3a9ca6",
        kind::CASE_FINISHED => "#6b7280",
        _ => "#4c78a8",
    }
}

/// Renders the timeline as an inline `<svg>` element.
pub fn render(case: &LoadedCase, arch: &str) -> String {
    let total = case.summary.duration_ms.max(1);
    let slowest = case
        .steps
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.took_ms, std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    let height = TOP + ROW_H * case.steps.len() as u64 + 8;
    let width = LABEL_W + BAR_W + TAIL_W;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{} on {} timeline\">",
        escape(&case.summary.name),
        escape(arch)
    );
    // Axis: start, middle and end of the case.
    for frac in [0u64, 1, 2] {
        let x = LABEL_W + BAR_W * frac / 2;
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#d0d4da\"/>",
            TOP - 6,
            height - 4
        );
        let _ = writeln!(
            out,
            "<text x=\"{x}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            TOP - 10,
            format_duration(total * frac / 2)
        );
    }
    for (i, step) in case.steps.iter().enumerate() {
        let y = TOP + ROW_H * i as u64;
        let start = step.at_ms.saturating_sub(step.took_ms);
        let x = LABEL_W + BAR_W * start / total;
        // A step that took no measurable time still gets a visible sliver.
        let w = (BAR_W * step.took_ms / total).max(2);
        let is_slowest = Some(i) == slowest && step.took_ms > 0;
        let stroke = if is_slowest {
            " stroke=\"#c0392b\" stroke-width=\"2\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\" fill=\"#222\">{}</text>",
            LABEL_W - 8,
            y + 14,
            escape(&truncate(&step.step, 32))
        );
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"{}\" width=\"{w}\" height=\"{}\" rx=\"2\" fill=\"{}\"{stroke}><title>{} ({}): {} · receipts line {}</title></rect>",
            y + 3,
            ROW_H - 6,
            colour(&step.kind),
            escape(&step.step),
            escape(&step.kind),
            format_duration(step.took_ms),
            step.line
        );
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{}\">{}{}</text>",
            (x + w + 6).min(LABEL_W + BAR_W + 4),
            y + 14,
            if is_slowest { "#c0392b" } else { "#555" },
            format_duration(step.took_ms),
            if is_slowest { " slowest" } else { "" }
        );
    }
    out.push_str("</svg>\n");
    out
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}
