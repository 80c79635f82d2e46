//! JUnit XML for CI systems: one `<testsuite>` per run (architecture), one `<testcase>` per
//! case; `failed` → `<failure>`, `skipped` and `not-applicable` (a fault the cluster cannot
//! inject) → `<skipped>`, `interrupted` → `<error>`.

use crate::bundle::{BundleSummary, Verdict};

/// Renders the runs as one `<testsuites>` document, in the order given.
pub fn render(runs: &[&BundleSummary]) -> String {
    let count = |v: Verdict| -> usize {
        runs.iter()
            .flat_map(|r| &r.cases)
            .filter(|c| c.verdict == v)
            .count()
    };
    let tests: usize = runs.iter().map(|r| r.cases.len()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"rehearsal\" tests=\"{tests}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
        count(Verdict::Failed),
        count(Verdict::Interrupted),
        count(Verdict::Skipped) + count(Verdict::NotApplicable),
    ));
    for run in runs {
        let n = |v: Verdict| run.cases.iter().filter(|c| c.verdict == v).count();
        let total_ms: u64 = run.cases.iter().map(|c| c.duration_ms).sum();
        out.push_str(&format!(
            "  <testsuite name=\"rehearsal-{arch}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\">\n",
            run.cases.len(),
            n(Verdict::Failed),
            n(Verdict::Interrupted),
            n(Verdict::Skipped) + n(Verdict::NotApplicable),
            seconds(total_ms),
            escape(&run.started.to_string()),
            arch = escape(&run.meta.arch),
        ));
        out.push_str("    <properties>\n");
        for (name, value) in [
            ("run_id", run.meta.run_id.as_str()),
            ("commit", run.meta.commit.as_str()),
            ("operator", run.meta.operator.name.as_str()),
            ("operator_version", run.meta.operator.version.as_str()),
            ("arch", run.meta.arch.as_str()),
            (
                "interrupted",
                if run.interrupted { "true" } else { "false" },
            ),
        ] {
            out.push_str(&format!(
                "      <property name=\"{name}\" value=\"{}\"/>\n",
                escape(value)
            ));
        }
        out.push_str("    </properties>\n");
        for case in &run.cases {
            let open = format!(
                "    <testcase name=\"{}\" classname=\"{}.{}\" time=\"{}\"",
                escape(&case.name),
                escape(&case.bucket),
                escape(&run.meta.arch),
                seconds(case.duration_ms),
            );
            let reason = escape(case.reason.as_deref().unwrap_or(""));
            match case.verdict {
                Verdict::Passed => out.push_str(&format!("{open}/>\n")),
                Verdict::Failed => out.push_str(&format!(
                    "{open}>\n      <failure message=\"{reason}\"/>\n    </testcase>\n"
                )),
                Verdict::Skipped => out.push_str(&format!(
                    "{open}>\n      <skipped message=\"{reason}\"/>\n    </testcase>\n"
                )),
                Verdict::NotApplicable => out.push_str(&format!(
                    "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                    if reason.starts_with("not applicable") {
                        reason.clone()
                    } else {
                        format!("not applicable on this cluster: {reason}")
                    }
                )),
                Verdict::Interrupted => out.push_str(&format!(
                    "{open}>\n      <error type=\"interrupted\" message=\"{reason}\"/>\n    </testcase>\n"
                )),
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Escapes text for XML attribute values and content.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // XML 1.0 cannot carry most control characters at all.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}
