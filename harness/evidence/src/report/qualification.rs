//! The qualification report `rehearse qualify` writes into its bundle: what an approver needs to
//! promote a candidate (or to see why it was halted) on one page — the candidate and its digest,
//! the template, fleet and batches, a gate table (gate, member, verdict, evidence, duration),
//! the failing gate's evidence in full, the pod and PVC UID tables before and after, and the
//! decision. Markdown, self-contained HTML (with an SVG gate timeline) and JSON, rendered by
//! pure functions of a [`QualificationReport`] like the run report: no clock, no cluster,
//! byte-identical for the same input.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::escape::escape;
use super::model::format_duration;
use crate::qualification::{
    Gate, GateEvidence, Observed, Outcome, PutBack, Qualification, RollbackEvidence, WayBack,
    short_reason,
};

/// The Markdown report's file name inside the bundle.
pub const MARKDOWN_FILE: &str = "qualification.md";
/// The HTML report's file name inside the bundle.
pub const HTML_FILE: &str = "qualification.html";
/// The JSON report's file name inside the bundle.
pub const JSON_FILE: &str = "qualification.json";

/// The repository's `docs/contract.md` (what each case and gate proves, from what evidence),
/// embedded at build time: [`write`] puts a copy next to the report, so the report's link
/// resolves wherever the report is read — a bundle directory, an unpacked artifact — offline.
pub const CONTRACT: &str = include_str!("../../../../docs/contract.md");
/// The contract's copy next to the report, as written (Markdown).
pub const CONTRACT_MARKDOWN_FILE: &str = "contract.md";
/// The contract's copy next to the report, as a page a browser shows with heading anchors.
pub const CONTRACT_HTML_FILE: &str = "contract.html";
/// The section of the contract the report links to (its heading's anchor).
pub const CONTRACT_ANCHOR: &str = "the-qualification-procedure-rehearsalqualify-rehearse-qualify";
/// Where the Markdown report links for what each gate proves, relative to the report file.
pub const CONTRACT_DOC: &str =
    "contract.md#the-qualification-procedure-rehearsalqualify-rehearse-qualify";
/// Where the HTML report links, relative to the report file.
pub const CONTRACT_HTML_LINK: &str =
    "contract.html#the-qualification-procedure-rehearsalqualify-rehearse-qualify";

/// A Markdown heading's anchor as GitHub derives it: lower case, punctuation other than `-` and
/// `_` dropped, spaces turned into dashes.
pub fn heading_anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// [`CONTRACT`] as a self-contained page: each heading an `<hN id="anchor">` (the anchors
/// GitHub gives the Markdown), the text between headings verbatim in wrapped `<pre>` blocks.
pub fn contract_html() -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>What Rehearsal proves, and from what</title>\n<style>body{font-family:sans-serif;max-width:60em;margin:1em auto;padding:0 1em}pre{white-space:pre-wrap;font-family:inherit}</style>\n</head>\n<body>\n",
    );
    let mut block: Vec<&str> = Vec::new();
    let flush = |block: &mut Vec<&str>, out: &mut String| {
        let text = block.join("\n");
        if !text.trim().is_empty() {
            let _ = writeln!(out, "<pre>{}</pre>", escape(text.trim_matches('\n')));
        }
        block.clear();
    };
    for line in CONTRACT.lines() {
        let level = line.chars().take_while(|c| *c == '#').count();
        match line[level..].strip_prefix(' ') {
            Some(heading) if (1..=6).contains(&level) => {
                flush(&mut block, &mut out);
                let _ = writeln!(
                    out,
                    "<h{level} id=\"{}\">{}</h{level}>",
                    escape(&heading_anchor(heading)),
                    escape(heading)
                );
            }
            _ => block.push(line),
        }
    }
    flush(&mut block, &mut out);
    out.push_str("</body>\n</html>\n");
    out
}

/// Who and what ran the qualification (the run's identity receipt).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Meta {
    /// The qualification's run id (it labels every object the run created).
    pub run_id: String,
    /// The operator the cluster runs.
    pub operator: String,
    /// Its version.
    pub operator_version: String,
    /// The version of the Rehearsal that qualified it.
    pub harness_version: String,
    /// The commit of that Rehearsal.
    pub harness_commit: String,
    /// `existing`, `kind` or `embedded`.
    pub backend: String,
    /// The kubeconfig context the qualification ran against.
    pub context: String,
    /// The namespace the fleet lives in.
    pub namespace: String,
}

/// One row of the gate table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateRow {
    /// The gate's name (one of [`crate::qualification::gates`]).
    pub gate: String,
    /// The server it was judged on; empty for the preflight.
    pub member: String,
    /// `passed` or `failed`.
    pub verdict: String,
    /// One line: what the gate read.
    pub evidence: String,
    /// Why it failed, when it did.
    pub reason: Option<String>,
    /// How long the gate took.
    pub duration_ms: u64,
    /// Milliseconds after the first gate started.
    pub offset_ms: u64,
    /// The gate's whole evidence.
    pub detail: Value,
}

/// One server's UIDs before and after (pods or PVCs).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct UidRow {
    /// The GameServer.
    pub server: String,
    /// The claim, for PVC rows; empty for pod rows.
    pub object: String,
    /// The UID when the qualification began (`None`: not there then).
    pub before: Option<String>,
    /// The UID when it ended (`None`: gone by then).
    pub after: Option<String>,
}

impl UidRow {
    /// `same`, `changed`, `new` or `gone`.
    pub fn change(&self) -> &'static str {
        match (&self.before, &self.after) {
            (Some(a), Some(b)) if a == b => "same",
            (Some(_), Some(_)) => "changed",
            (None, Some(_)) => "new",
            (Some(_), None) => "gone",
            (None, None) => "none",
        }
    }
}

/// One server's pinned version before and after (`spec.version`; `None`: the template's
/// default, or the server was not there).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct VersionRow {
    /// The GameServer.
    pub server: String,
    /// When the qualification began.
    pub before: Option<String>,
    /// As a fresh read showed it when the qualification ended.
    pub after: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QualificationReport {
    /// Who and what ran it.
    pub meta: Meta,
    /// The candidate version id.
    pub candidate: String,
    /// The candidate's image as pinned (`repo@sha256:…`), once the preflight read it.
    pub candidate_image: Option<String>,
    /// The digest part of that image.
    pub candidate_digest: Option<String>,
    /// The GameTemplate holding the candidate.
    pub template: String,
    /// The version the source ran before the candidate.
    pub previous: Option<String>,
    /// `compatible` or `restore-required`.
    pub rollback: String,
    /// The fleet member whose backup seeded the clone.
    pub source: String,
    /// The canary clone the candidate ran on first.
    pub clone: String,
    /// The fleet, in promotion order.
    pub fleet: Vec<String>,
    /// The promotion batches, in order.
    pub batches: Vec<Vec<String>>,
    /// The restic snapshot that seeded the clone.
    pub snapshot: Option<String>,
    /// Every gate judged, in order.
    pub gates: Vec<GateRow>,
    /// Index into `gates` of the gate the qualification halted at.
    pub failing: Option<usize>,
    /// Each server's pod UID before and after.
    pub pods: Vec<UidRow>,
    /// Each server's PVC UIDs before and after, claim by claim.
    pub pvcs: Vec<UidRow>,
    /// Each fleet member's (and the source's) pinned version before and after.
    #[serde(default)]
    pub versions: Vec<VersionRow>,
    /// `promote N batches`, `halted at <gate> on <member>: <reason>` or `not qualified: the
    /// procedure could not complete: …`.
    pub decision: String,
    /// Whether every batch was promoted.
    pub promoted: bool,
    /// Members of an unfinished batch that were moved to the candidate and put back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub put_back: Vec<PutBack>,
    /// For a restore-required candidate: the promoted members' pre-promotion backups, kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub way_back: Vec<WayBack>,
}

impl QualificationReport {
    /// Builds the report of a qualification that ran (`Ok`) or could not complete (`Err`, the
    /// error line, with what it had recorded so far).
    pub fn new(meta: Meta, q: &Qualification, error: Option<&str>) -> Self {
        let first = q
            .gates
            .iter()
            .map(|g| g.started_unix_ms)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(0);
        let gates: Vec<GateRow> = q.gates.iter().map(|g| row(g, first)).collect();
        let failing = match (&q.outcome, error) {
            (Outcome::Halted { .. }, None) => q.gates.iter().rposition(|g| !g.passed),
            _ => None,
        };
        let (decision, promoted) = match (q.interrupted_decision(), error, &q.outcome) {
            (Some(d), _, _) => (d, false),
            (None, Some(e), _) => (
                format!("not qualified: the procedure could not complete: {e}"),
                false,
            ),
            (None, None, o @ Outcome::Promoted { .. }) => (o.decision(), true),
            (None, None, o) => (o.decision(), false),
        };
        let after: BTreeMap<&str, _> = q.after.iter().map(|m| (m.server.as_str(), m)).collect();
        let versions = q
            .baseline
            .iter()
            .map(|b| VersionRow {
                server: b.server.clone(),
                before: b.version.clone(),
                after: after.get(b.server.as_str()).and_then(|m| m.version.clone()),
            })
            .collect();
        let mut pods = Vec::new();
        let mut pvcs = Vec::new();
        let mut servers: Vec<&str> = q.baseline.iter().map(|m| m.server.as_str()).collect();
        if !servers.contains(&q.clone.as_str()) && after.contains_key(q.clone.as_str()) {
            servers.push(q.clone.as_str());
        }
        for server in servers {
            let before = q.baseline.iter().find(|m| m.server == server);
            let now = after.get(server);
            pods.push(UidRow {
                server: server.to_string(),
                object: String::new(),
                before: before.and_then(|m| m.pod_uid.clone()),
                after: now.and_then(|m| m.pod_uid.clone()),
            });
            let mut claims: BTreeSet<&String> = BTreeSet::new();
            claims.extend(before.iter().flat_map(|m| m.pvcs.keys()));
            claims.extend(now.iter().flat_map(|m| m.pvcs.keys()));
            if server == q.clone {
                claims.extend(q.clone_pvcs_before.iter().map(|p| &p.claim));
                claims.extend(q.clone_pvcs_after.iter().map(|p| &p.claim));
            }
            for claim in claims {
                let uid_before = before.and_then(|m| m.pvcs.get(claim).cloned()).or_else(|| {
                    (server == q.clone)
                        .then(|| q.clone_pvcs_before.iter().find(|p| &p.claim == claim))
                        .flatten()
                        .map(|p| p.uid.clone())
                });
                let uid_after = now.and_then(|m| m.pvcs.get(claim).cloned());
                pvcs.push(UidRow {
                    server: server.to_string(),
                    object: claim.clone(),
                    before: uid_before,
                    after: uid_after,
                });
            }
        }
        let candidate_digest = q
            .candidate_image
            .as_ref()
            .and_then(|i| i.rsplit_once('@'))
            .map(|(_, d)| d.to_string());
        QualificationReport {
            meta,
            candidate: q.plan.candidate.clone(),
            candidate_image: q.candidate_image.clone(),
            candidate_digest,
            template: q.plan.template.clone(),
            previous: q.previous.clone(),
            rollback: match q.plan.rollback {
                crate::qualification::Rollback::Compatible => "compatible".into(),
                crate::qualification::Rollback::RestoreRequired => "restore-required".into(),
            },
            source: q.plan.source.clone(),
            clone: q.clone.clone(),
            fleet: q.plan.fleet.clone(),
            batches: crate::judge::gates::batches(&q.plan.fleet, q.plan.batch_size),
            snapshot: q.snapshot.clone().filter(|s| !s.is_empty()),
            gates,
            failing,
            pods,
            pvcs,
            versions,
            decision,
            promoted,
            put_back: q.put_back.clone(),
            way_back: q.way_back.clone(),
        }
    }
}

/// The Markdown section listing the members put back (empty when none was).
fn put_back_markdown(r: &QualificationReport) -> String {
    let mut out = String::new();
    if r.put_back.is_empty() {
        return out;
    }
    out.push_str("\n## Members moved and put back\n\nThe batch failed or did not complete, so every member it had moved to the candidate was put back on the version it ran before.\n\n| Batch | Member | Why | Outcome |\n|---|---|---|---|\n");
    for p in &r.put_back {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            p.batch,
            cell(&p.server),
            cell(&p.why),
            cell(&put_back_outcome(p))
        );
    }
    out
}

/// The HTML section listing the members put back (empty when none was).
fn put_back_html(r: &QualificationReport) -> String {
    let mut out = String::new();
    if r.put_back.is_empty() {
        return out;
    }
    out.push_str("<h2>Members moved and put back</h2>\n<p>The batch failed or did not complete, so every member it had moved to the candidate was put back on the version it ran before.</p>\n<table class=\"put-back\">\n<tr><th>Batch</th><th>Member</th><th>Why</th><th>Outcome</th></tr>\n");
    for p in &r.put_back {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            p.batch,
            escape(&p.server),
            escape(&p.why),
            escape(&put_back_outcome(p))
        );
    }
    out.push_str("</table>\n");
    out
}

/// What the put-back worlds sections say above their table.
const PUT_BACK_WORLDS_TEXT: &str = "Each member's pod UID, PVC UIDs and world digests before its batch moved, on the candidate, and after it was put back. A candidate that changes the save format is undone by restoring the member's own pre-promotion backup: *before* is read while the member was stopped for that backup and *after* right after the restore, before its game starts, so the two must be equal. A compatible candidate is undone by pinning the previous version again, and the game has saved since, so its digests differ. PVC UIDs never change.";

/// One row of the put-back worlds table: a member's claim.
struct WorldRow {
    member: String,
    pods: String,
    claim: String,
    pvc: String,
    before: String,
    candidate: String,
    after: String,
    same: &'static str,
}

/// The put-back worlds table's rows: one per member and world claim (claims from any reading).
fn world_rows(r: &QualificationReport) -> Vec<WorldRow> {
    let mut rows = Vec::new();
    for p in &r.put_back {
        let states = [&p.before, &p.on_candidate, &p.after];
        if states.iter().all(|s| s.is_none()) {
            continue;
        }
        let uid = |s: &Option<crate::qualification::MemberBaseline>| {
            s.as_ref()
                .and_then(|m| m.pod_uid.as_deref())
                .map_or_else(|| "—".to_string(), |u| u.chars().take(8).collect())
        };
        let pods = format!(
            "{} → {} → {}",
            uid(&p.before),
            uid(&p.on_candidate),
            uid(&p.after)
        );
        let claims: BTreeSet<&String> = states
            .iter()
            .filter_map(|s| s.as_ref())
            .flat_map(|m| m.digests.keys().chain(m.pvcs.keys()))
            .collect();
        for claim in claims {
            let digest = |s: &Option<crate::qualification::MemberBaseline>| {
                s.as_ref()
                    .and_then(|m| m.digests.get(claim))
                    .map_or_else(|| "—".to_string(), |d| d.chars().take(12).collect())
            };
            let pvc = |s: &Option<crate::qualification::MemberBaseline>| {
                s.as_ref().and_then(|m| m.pvcs.get(claim)).cloned()
            };
            let pvc = match (pvc(&p.before), pvc(&p.after)) {
                (Some(a), Some(b)) if a == b => a,
                (a, b) => format!(
                    "{} → {}",
                    a.as_deref().unwrap_or("—"),
                    b.as_deref().unwrap_or("—")
                ),
            };
            let before = p.before.as_ref().and_then(|m| m.digests.get(claim));
            let after = p.after.as_ref().and_then(|m| m.digests.get(claim));
            let same = match (before, after) {
                (Some(a), Some(b)) if a == b => "same as before",
                (Some(_), Some(_)) => "changed",
                _ => "—",
            };
            rows.push(WorldRow {
                member: p.server.clone(),
                pods: pods.clone(),
                claim: claim.clone(),
                pvc,
                before: digest(&p.before),
                candidate: digest(&p.on_candidate),
                after: digest(&p.after),
                same,
            });
        }
    }
    rows
}

/// The Markdown table of the put-back members' worlds (empty when none was read).
fn put_back_worlds_markdown(r: &QualificationReport) -> String {
    let rows = world_rows(r);
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n### Worlds before, on the candidate and after the put-back\n\n{PUT_BACK_WORLDS_TEXT}\n\n| Member | Pod UID (before → candidate → after) | Claim | PVC UID | Before | On the candidate | After | |\n|---|---|---|---|---|---|---|---|"
    );
    for w in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | `{}` | `{}` | `{}` | {} |",
            cell(&w.member),
            cell(&w.pods),
            cell(&w.claim),
            cell(&w.pvc),
            w.before,
            w.candidate,
            w.after,
            w.same
        );
    }
    out
}

/// The HTML table of the put-back members' worlds (empty when none was read).
fn put_back_worlds_html(r: &QualificationReport) -> String {
    let rows = world_rows(r);
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "<h3>Worlds before, on the candidate and after the put-back</h3>\n<p>{}</p>\n<table class=\"put-back-worlds\">\n<tr><th>Member</th><th>Pod UID (before → candidate → after)</th><th>Claim</th><th>PVC UID</th><th>Before</th><th>On the candidate</th><th>After</th><th></th></tr>",
        escape(PUT_BACK_WORLDS_TEXT)
    );
    for w in rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
            escape(&w.member),
            escape(&w.pods),
            escape(&w.claim),
            escape(&w.pvc),
            escape(&w.before),
            escape(&w.candidate),
            escape(&w.after),
            w.same
        );
    }
    out.push_str("</table>\n");
    out
}

/// What the way-back sections say above their table.
const WAY_BACK_TEXT: &str = "The candidate changes the save format, so pinning the previous version again is not enough, and restoring under the candidate is not either (the candidate would rewrite the restored world as soon as it starts): each member below was backed up before its batch moved, and that Backup is kept as its way back. To go back, in this order: pin the previous version with the server suspended, wait until it is Suspended, restore the Backup, wait until the Restore Succeeded, then resume the server. The commands below do exactly that for each member.";

/// The `kubectl` commands that put `w`'s member back from its way back, in the order that works
/// (the previous version pinned while suspended, then the restore, then resumed), for namespace
/// `namespace`. One command per line; the Restore is created from a here-document.
pub fn way_back_commands(namespace: &str, w: &WayBack) -> Vec<String> {
    let version = match &w.previous {
        Some(v) => serde_json::Value::String(v.clone()),
        None => serde_json::Value::Null,
    };
    let k = format!("kubectl -n {namespace}");
    let restore = format!("{}-way-back", w.server);
    vec![
        format!(
            "{k} patch gameserver {} --type merge -p '{}'",
            w.server,
            serde_json::json!({"spec": {"version": version, "suspend": true}})
        ),
        format!(
            "{k} wait gameserver/{} --for=jsonpath='{{.status.phase}}'=Suspended --timeout=10m",
            w.server
        ),
        format!(
            "{k} create -f - <<'EOF'\napiVersion: gameplane.local/v1alpha1\nkind: Restore\nmetadata:\n  name: {restore}\nspec:\n  backupRef:\n    name: {}\n  serverRef:\n    name: {}\nEOF",
            w.backup, w.server
        ),
        format!(
            "{k} wait restore/{restore} --for=jsonpath='{{.status.phase}}'=Succeeded --timeout=10m"
        ),
        format!(
            "{k} patch gameserver {} --type merge -p '{}'",
            w.server,
            serde_json::json!({"spec": {"suspend": null}})
        ),
    ]
}

/// The Markdown section naming each kept way back and how to use it (empty when none was kept).
fn way_back_markdown(r: &QualificationReport) -> String {
    let mut out = String::new();
    if r.way_back.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n## Way back\n\n{WAY_BACK_TEXT}\n\n| Member | Backup | Snapshot | Kept because |\n|---|---|---|---|"
    );
    for w in &r.way_back {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&w.server),
            cell(&w.backup),
            cell(&w.snapshot),
            cell(
                w.kept_because
                    .as_deref()
                    .unwrap_or("its batch was promoted")
            )
        );
    }
    for w in &r.way_back {
        let _ = writeln!(
            out,
            "\nTo put {} back on {}:\n\n```sh\n{}\n```",
            w.server,
            w.previous.as_deref().unwrap_or("the template's default"),
            way_back_commands(&r.meta.namespace, w).join("\n")
        );
    }
    out
}

/// The HTML section naming each kept way back and how to use it (empty when none was kept).
fn way_back_html(r: &QualificationReport) -> String {
    let mut out = String::new();
    if r.way_back.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "<h2>Way back</h2>\n<p>{}</p>\n<table class=\"way-back\">\n<tr><th>Member</th><th>Backup</th><th>Snapshot</th><th>Kept because</th></tr>",
        escape(WAY_BACK_TEXT)
    );
    for w in &r.way_back {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
            escape(&w.server),
            escape(&w.backup),
            escape(&w.snapshot),
            escape(
                w.kept_because
                    .as_deref()
                    .unwrap_or("its batch was promoted")
            )
        );
    }
    out.push_str("</table>\n");
    for w in &r.way_back {
        let _ = writeln!(
            out,
            "<p>To put {} back on {}:</p>\n<pre>{}</pre>",
            escape(&w.server),
            escape(w.previous.as_deref().unwrap_or("the template's default")),
            escape(&way_back_commands(&r.meta.namespace, w).join("\n"))
        );
    }
    out
}

/// The Markdown table of each member's version before and after (empty when none was read).
fn versions_markdown(r: &QualificationReport) -> String {
    let mut out = String::new();
    if r.versions.is_empty() {
        return out;
    }
    out.push_str("\n## Versions before and after\n\n| Server | Before | After |\n|---|---|---|\n");
    for v in &r.versions {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            cell(&v.server),
            cell(&or_dash(v.before.as_deref())),
            cell(&or_dash(v.after.as_deref()))
        );
    }
    out
}

/// The HTML table of each member's version before and after (empty when none was read).
fn versions_html(r: &QualificationReport) -> String {
    let mut out = String::new();
    if r.versions.is_empty() {
        return out;
    }
    out.push_str("<h2>Versions before and after</h2>\n<table class=\"versions\">\n<tr><th>Server</th><th>Before</th><th>After</th></tr>\n");
    for v in &r.versions {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&v.server),
            escape(v.before.as_deref().unwrap_or("—")),
            escape(v.after.as_deref().unwrap_or("—"))
        );
    }
    out.push_str("</table>\n");
    out
}

/// What became of a member put back: `put back on <version>` or why that failed.
fn put_back_outcome(p: &PutBack) -> String {
    match &p.error {
        None => format!("put back on {}", p.version),
        Some(e) => format!("NOT put back on {}: {e}", p.version),
    }
}

fn row(g: &Gate, first: u64) -> GateRow {
    GateRow {
        gate: g.name.clone(),
        member: g.server.clone(),
        verdict: if g.passed { "passed" } else { "failed" }.into(),
        evidence: evidence_line(g),
        reason: g.reason.clone(),
        duration_ms: g.duration_ms,
        offset_ms: g.started_unix_ms.saturating_sub(first),
        detail: serde_json::to_value(&g.evidence).unwrap_or(Value::Null),
    }
}

/// A failed gate's table cell: its reason made short, and what it read when that says more
/// than the reason (`None` for a gate that passed). The full reason is written once, in the
/// failing gate's section.
fn failed_cell(g: &GateRow) -> Option<(String, Option<String>)> {
    if g.verdict != "failed" {
        return None;
    }
    let reason = g.reason.as_deref().unwrap_or("the gate failed");
    if g.evidence.starts_with(reason) || reason.starts_with(g.evidence.as_str()) {
        return Some((short_reason(&g.evidence), None));
    }
    Some((short_reason(reason), Some(short_reason(&g.evidence))))
}

fn none(v: Option<&str>) -> &str {
    v.unwrap_or("none")
}

fn abbrev(digest: &str) -> String {
    match digest.split_once(':') {
        Some((alg, hex)) => format!("{alg}:{}", hex.chars().take(12).collect::<String>()),
        None => digest.chars().take(12).collect(),
    }
}

/// What a gate read, in one line (the full evidence is in the JSON and, for the failing gate,
/// in its own section), from the gate's typed evidence.
pub fn evidence_line(g: &Gate) -> String {
    match &g.evidence {
        GateEvidence::Preflight(Some(e)) if g.passed => format!(
            "candidate image {}; previous version {}; RCON password from Secret {}",
            e.image, e.previous, e.access.rcon_secret
        ),
        GateEvidence::Preflight(_) => g.reason.clone().unwrap_or_else(|| "none".into()),
        GateEvidence::Module(Observed::Read(e)) => format!(
            "{} served {} for the pin {}; operator: Module {} {} ({})",
            e.reference,
            e.served.as_deref().map_or_else(|| "nothing".into(), abbrev),
            abbrev(&e.pinned),
            e.module,
            none(e.phase.as_deref()),
            none(e.ready_reason.as_deref()),
        ),
        GateEvidence::Image(Observed::Read(e)) => {
            let digest = e.image_id.rsplit_once('@').map(|(_, d)| abbrev(d));
            match (digest, &e.waiting_reason) {
                (_, Some(w)) => format!(
                    "game container waiting: {w}; GameServer phase {}",
                    none(e.gameserver_phase.as_deref())
                ),
                (Some(d), None) => {
                    format!("imageID {d} on pod {}", none(e.pod_uid.as_deref()))
                }
                (None, None) => format!("imageID {:?}", e.image_id),
            }
        }
        GateEvidence::Join(e) => {
            let mut line = e.verdict.clone();
            if let Some(http) = &e.http {
                line.push_str(&format!("; the port answers HTTP {}", http.status));
            }
            line
        }
        GateEvidence::Save(Observed::Read(e)) => format!(
            "RCON replied {}",
            e.replies
                .iter()
                .map(|x| format!("{:?}", x.replace('\n', " / ")))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        GateEvidence::ReadBack(Observed::Read(e)) => e
            .claims
            .iter()
            .map(|(c, v)| {
                format!(
                    "{c}: {} files, {} → {}",
                    v.files,
                    abbrev(none(v.digest_before.as_deref())),
                    abbrev(&v.digest)
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        GateEvidence::Image(Observed::Error(e))
        | GateEvidence::Module(Observed::Error(e))
        | GateEvidence::Save(Observed::Error(e))
        | GateEvidence::ReadBack(Observed::Error(e)) => e.error.clone(),
        GateEvidence::Rollback(e) => rollback_line(e),
    }
}

fn rollback_line(e: &RollbackEvidence) -> String {
    let rollback = match e.rollback {
        crate::qualification::Rollback::Compatible => "compatible",
        crate::qualification::Rollback::RestoreRequired => "restore-required",
    };
    let mut parts = vec![format!("{rollback} rollback")];
    if let Some(id) = &e.restored_snapshot {
        parts.push(format!("restored snapshot {}", abbrev(id)));
    }
    if let Some(after) = &e.digests_after_restore {
        let same = after
            .iter()
            .filter(|(c, v)| {
                e.snapshot_digests
                    .get(c.as_str())
                    .is_some_and(|s| s.digest == v.digest)
            })
            .count();
        parts.push(format!(
            "{same} of {} claims hold exactly the snapshot",
            after.len()
        ));
    }
    if let Some(j) = &e.join {
        parts.push(format!("then {j}"));
    }
    parts.join("; ")
}

/// Markdown table cells: no pipes, no newlines.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn or_dash(v: Option<&str>) -> String {
    v.map(|s| format!("`{s}`")).unwrap_or_else(|| "—".into())
}

fn batches_line(batches: &[Vec<String>]) -> String {
    batches
        .iter()
        .enumerate()
        .map(|(i, b)| format!("{}: {}", i + 1, b.join(", ")))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The facts table as (label, value) pairs; values are plain text.
fn facts(r: &QualificationReport) -> Vec<(&'static str, String)> {
    let m = &r.meta;
    vec![
        ("Candidate", r.candidate.clone()),
        (
            "Candidate image",
            r.candidate_image.clone().unwrap_or_else(|| "—".into()),
        ),
        (
            "Candidate digest",
            r.candidate_digest.clone().unwrap_or_else(|| "—".into()),
        ),
        ("Template", r.template.clone()),
        (
            "Previous version",
            r.previous.clone().unwrap_or_else(|| "—".into()),
        ),
        ("Rollback", r.rollback.clone()),
        ("Fleet", r.fleet.join(", ")),
        ("Batches", batches_line(&r.batches)),
        ("Canary", format!("{} (a clone of {})", r.clone, r.source)),
        ("Snapshot", r.snapshot.clone().unwrap_or_else(|| "—".into())),
        ("Operator", format!("{} {}", m.operator, m.operator_version)),
        (
            "Harness",
            format!(
                "rehearse {} (commit {})",
                m.harness_version, m.harness_commit
            ),
        ),
        ("Cluster", format!("{} · context {}", m.backend, m.context)),
        ("Namespace", m.namespace.clone()),
        ("Run", m.run_id.clone()),
    ]
}

/// The report as Markdown.
pub fn markdown(r: &QualificationReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Qualification of `{}` on template `{}`\n",
        r.candidate, r.template
    );
    let _ = writeln!(out, "**Decision: {}**\n", cell(&r.decision));
    out.push_str("| | |\n|---|---|\n");
    for (k, v) in facts(r) {
        let _ = writeln!(out, "| {k} | {} |", cell(&v));
    }
    let _ = writeln!(
        out,
        "\n## Gates\n\nWhat each gate proves and reads: [the contract]({CONTRACT_DOC}).\n"
    );
    out.push_str("| # | Gate | Member | Verdict | Evidence | Duration |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for (i, g) in r.gates.iter().enumerate() {
        let evidence = match failed_cell(g) {
            Some((reason, Some(read))) => format!("{reason} ({read})"),
            Some((reason, None)) => reason,
            None => g.evidence.clone(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            i + 1,
            cell(&g.gate),
            if g.member.is_empty() {
                "—".to_string()
            } else {
                cell(&g.member)
            },
            g.verdict,
            cell(&evidence),
            format_duration(g.duration_ms)
        );
    }
    if let Some(g) = r.failing.and_then(|i| r.gates.get(i)) {
        let _ = writeln!(
            out,
            "\n## Failing gate: {}{}\n",
            g.gate,
            if g.member.is_empty() {
                String::new()
            } else {
                format!(" on {}", g.member)
            }
        );
        let _ = writeln!(
            out,
            "{}\n",
            g.reason.as_deref().unwrap_or("the gate failed")
        );
        let _ = writeln!(
            out,
            "```json\n{}\n```",
            serde_json::to_string_pretty(&g.detail).unwrap_or_default()
        );
    }
    out.push_str(&put_back_markdown(r));
    out.push_str(&put_back_worlds_markdown(r));
    out.push_str(&way_back_markdown(r));
    out.push_str(&versions_markdown(r));
    out.push_str("\n## Pod UIDs before and after\n\n| Server | Before | After | Change |\n|---|---|---|---|\n");
    for p in &r.pods {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            p.server,
            or_dash(p.before.as_deref()),
            or_dash(p.after.as_deref()),
            p.change()
        );
    }
    out.push_str("\n## PVC UIDs before and after\n\n| Server | Claim | Before | After | Change |\n|---|---|---|---|---|\n");
    for p in &r.pvcs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            p.server,
            p.object,
            or_dash(p.before.as_deref()),
            or_dash(p.after.as_deref()),
            p.change()
        );
    }
    out
}

const CSS: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1f2328;margin:24px auto;max-width:1100px;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
code,pre{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f3f4f6;border-radius:4px}code{padding:1px 4px}
pre{padding:10px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #d0d7de;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f6f8fa}.v-passed{color:#1a7f37;font-weight:600}.v-failed{color:#cf222e;font-weight:600}
.decision{padding:10px 14px;margin:16px 0;font-weight:600}.promote{border-left:4px solid #1a7f37;background:#dafbe1}.halt{border-left:4px solid #cf222e;background:#ffebe9}
.timeline{display:block;margin:6px 0 14px;border:1px solid #eaeef2;background:#fcfcfd}
";

fn verdict_html(v: &str) -> String {
    let text = if v == "passed" {
        "✓ passed"
    } else {
        "✗ failed"
    };
    format!("<span class=\"v-{v}\">{text}</span>")
}

/// The timeline label of a gate row: `<n>. <gate> · <member>`, never shortened.
pub fn timeline_label(i: usize, g: &GateRow) -> String {
    if g.member.is_empty() {
        format!("{}. {}", i + 1, g.gate)
    } else {
        format!("{}. {} · {}", i + 1, g.gate, g.member)
    }
}

/// One SVG row per gate: its whole label on the left (the label column is as wide as the
/// longest label), a bar from its start for its duration on a shared time axis.
pub fn timeline(r: &QualificationReport) -> String {
    const ROW: usize = 22;
    const CHAR: usize = 7;
    const BAR: usize = 520;
    let labels: Vec<String> = r
        .gates
        .iter()
        .enumerate()
        .map(|(i, g)| timeline_label(i, g))
        .collect();
    let label_w = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) * CHAR + 16;
    let end = r
        .gates
        .iter()
        .map(|g| g.offset_ms + g.duration_ms)
        .max()
        .unwrap_or(0)
        .max(1);
    let width = label_w + BAR + 90;
    let height = ROW * r.gates.len() + 8;
    let mut out = format!(
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"gate timeline\">\n"
    );
    for (i, (g, label)) in r.gates.iter().zip(&labels).enumerate() {
        let y = 4 + i * ROW;
        let x = label_w + (g.offset_ms as usize * BAR) / end as usize;
        let w = ((g.duration_ms as usize * BAR) / end as usize).max(2);
        let color = if g.verdict == "passed" {
            "#2da44e"
        } else {
            "#cf222e"
        };
        let _ = writeln!(
            out,
            "<text x=\"6\" y=\"{}\" font-size=\"12\" font-family=\"ui-monospace,monospace\">{}</text>",
            y + 14,
            escape(label)
        );
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"{}\" width=\"{w}\" height=\"14\" rx=\"2\" fill=\"{color}\"><title>{}</title></rect>",
            y + 3,
            escape(&format!("{label}: {}", format_duration(g.duration_ms)))
        );
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#57606a\">{}</text>",
            x + w + 4,
            y + 14,
            escape(&format_duration(g.duration_ms))
        );
    }
    out.push_str("</svg>\n");
    out
}

/// The report as one self-contained HTML document (inline CSS and SVG, no scripts).
pub fn html(r: &QualificationReport) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(
        out,
        "<title>Qualification of {} on {}</title>",
        escape(&r.candidate),
        escape(&r.template)
    );
    let _ = writeln!(out, "<style>\n{CSS}</style>\n</head>\n<body>");
    let _ = writeln!(
        out,
        "<h1>Qualification of <code>{}</code> on template <code>{}</code></h1>",
        escape(&r.candidate),
        escape(&r.template)
    );
    let _ = writeln!(
        out,
        "<div class=\"decision {}\">Decision: {}</div>",
        if r.promoted { "promote" } else { "halt" },
        escape(&r.decision)
    );
    out.push_str("<table class=\"facts\">\n");
    for (k, v) in facts(r) {
        let _ = writeln!(out, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    out.push_str("</table>\n<h2>Gates</h2>\n");
    let _ = writeln!(
        out,
        "<p>What each gate proves and reads: <a href=\"{}\">the contract</a>.</p>",
        escape(CONTRACT_HTML_LINK)
    );
    out.push_str(&timeline(r));
    out.push_str("<table class=\"gates\">\n<tr><th>#</th><th>Gate</th><th>Member</th><th>Verdict</th><th>Evidence</th><th>Duration</th></tr>\n");
    for (i, g) in r.gates.iter().enumerate() {
        let evidence = match failed_cell(g) {
            Some((reason, Some(read))) => {
                format!("<strong>{}</strong><br>{}", escape(&reason), escape(&read))
            }
            Some((reason, None)) => format!("<strong>{}</strong>", escape(&reason)),
            None => escape(&g.evidence),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{evidence}</td><td>{}</td></tr>",
            i + 1,
            escape(&g.gate),
            if g.member.is_empty() {
                "—".to_string()
            } else {
                escape(&g.member)
            },
            verdict_html(&g.verdict),
            escape(&format_duration(g.duration_ms))
        );
    }
    out.push_str("</table>\n");
    if let Some(g) = r.failing.and_then(|i| r.gates.get(i)) {
        let _ = writeln!(
            out,
            "<h2>Failing gate: {}{}</h2>\n<p>{}</p>\n<pre>{}</pre>",
            escape(&g.gate),
            if g.member.is_empty() {
                String::new()
            } else {
                format!(" on {}", escape(&g.member))
            },
            escape(g.reason.as_deref().unwrap_or("the gate failed")),
            escape(&serde_json::to_string_pretty(&g.detail).unwrap_or_default())
        );
    }
    out.push_str(&put_back_html(r));
    out.push_str(&put_back_worlds_html(r));
    out.push_str(&way_back_html(r));
    out.push_str(&versions_html(r));
    out.push_str("<h2>Pod UIDs before and after</h2>\n<table class=\"pods\">\n<tr><th>Server</th><th>Before</th><th>After</th><th>Change</th></tr>\n");
    for p in &r.pods {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
            escape(&p.server),
            escape(p.before.as_deref().unwrap_or("—")),
            escape(p.after.as_deref().unwrap_or("—")),
            p.change()
        );
    }
    out.push_str("</table>\n<h2>PVC UIDs before and after</h2>\n<table class=\"pvcs\">\n<tr><th>Server</th><th>Claim</th><th>Before</th><th>After</th><th>Change</th></tr>\n");
    for p in &r.pvcs {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
            escape(&p.server),
            escape(&p.object),
            escape(p.before.as_deref().unwrap_or("—")),
            escape(p.after.as_deref().unwrap_or("—")),
            p.change()
        );
    }
    out.push_str("</table>\n</body>\n</html>\n");
    out
}

/// The report as pretty JSON.
pub fn json(r: &QualificationReport) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes the three report files into `dir`, and beside them the contract they link to
/// ([`CONTRACT_MARKDOWN_FILE`], [`CONTRACT_HTML_FILE`]); each to a temporary name, then renamed.
/// Returns the report files (the contract copies are not reports).
pub fn write(r: &QualificationReport, dir: &Path) -> Result<Vec<PathBuf>, super::WriteError> {
    let mut written = Vec::new();
    for (name, text) in [
        (CONTRACT_MARKDOWN_FILE, CONTRACT.to_string()),
        (CONTRACT_HTML_FILE, contract_html()),
        (MARKDOWN_FILE, markdown(r)),
        (HTML_FILE, html(r)),
        (JSON_FILE, json(r)),
    ] {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).map_err(|source| super::WriteError {
            path: tmp.clone(),
            action: "write",
            source,
        })?;
        std::fs::rename(&tmp, &path).map_err(|source| super::WriteError {
            path: path.clone(),
            action: "rename into place",
            source,
        })?;
        if ![CONTRACT_MARKDOWN_FILE, CONTRACT_HTML_FILE].contains(&name) {
            written.push(path);
        }
    }
    Ok(written)
}
