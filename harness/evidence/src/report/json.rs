//! The JSON summary for machines: verdicts and durations per case and architecture,
//! disagreements and totals. Keys are ordered as written here, so output is byte-stable.

use serde_json::{Map, Value, json};

use super::model::Report;

/// Renders the summary (pretty-printed, trailing newline).
pub fn render(report: &Report) -> String {
    let cases: Vec<Value> = report
        .cases
        .iter()
        .map(|case| {
            let mut results = Map::new();
            for (arch, r) in &case.results {
                let c = &r.case;
                results.insert(
                    arch.clone(),
                    json!({
                        "verdict": c.summary.verdict,
                        "duration_ms": c.summary.duration_ms,
                        "reason": c.summary.reason,
                        "evidence_used": c.summary.evidence_used,
                        "restic_snapshots": c.snapshots,
                        "restores": c.restores.iter().map(|x| json!({"restore_id": x.restore_id, "snapshot_id": x.snapshot_id})).collect::<Vec<_>>(),
                        "pvcs_unchanged": if c.pvc_table.is_empty() { Value::Null } else { json!(c.pvc_table.all_unchanged()) },
                        "receipts": {"href": r.receipts_href, "lines": [c.summary.lines.0, c.summary.lines.1]},
                    }),
                );
            }
            json!({"name": case.name, "bucket": case.bucket, "results": results})
        })
        .collect();
    let mut totals = Map::new();
    for arch in &report.arches {
        let t: Map<String, Value> = report
            .totals(arch)
            .into_iter()
            .map(|(v, n)| (v.as_str().to_owned(), json!(n)))
            .collect();
        totals.insert(arch.clone(), Value::Object(t));
    }
    let doc = json!({
        "commit": report.commit,
        "operators": report.operators,
        "architectures": report.arches,
        "runs": report.runs.iter().map(|r| json!({
            "arch": r.arch, "run_id": r.run_id, "started": r.started, "finished": r.finished,
            "interrupted": r.interrupted, "killed": r.killed, "entries": r.entries, "bundle": r.href,
        })).collect::<Vec<_>>(),
        "agree": report.disagreements.is_empty(),
        "disagreements": report.disagreements.iter().map(|d| json!({
            "case": d.case,
            "verdicts": d.verdicts.iter().map(|(a, v)| (a.clone(), json!(v))).collect::<Map<_, _>>(),
        })).collect::<Vec<_>>(),
        "totals": totals,
        "cases": cases,
        "kill_matrices": report.kill_matrices,
    });
    let mut text = serde_json::to_string_pretty(&doc).expect("summary serializes");
    text.push('\n');
    text
}
