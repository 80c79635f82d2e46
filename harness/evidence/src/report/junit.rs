//! JUnit XML for CI systems, serialized by [`quick_junit`] (nextest's own): one `<testsuite>`
//! per run (architecture), one `<testcase>` per case; `failed` → `<failure>`, `skipped` and
//! `not-applicable` (a fault the cluster cannot inject) → `<skipped>`, `interrupted` →
//! `<error type="interrupted">`.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::summary::{BundleSummary, CaseSummary, Verdict};

/// Renders the runs as one `<testsuites>` document, in the order given.
pub fn render(runs: &[&BundleSummary]) -> String {
    let mut report = Report::new("rehearsal");
    for run in runs {
        report.add_test_suite(suite(run));
    }
    report
        .to_string()
        .expect("JUnit XML serializes into a String")
}

fn suite(run: &BundleSummary) -> TestSuite {
    let mut suite = TestSuite::new(format!("rehearsal-{}", run.meta.arch));
    if let Some(started) = timestamp(run.started) {
        suite.set_timestamp(started);
    }
    let total_ms: u64 = run.cases.iter().map(|c| c.duration_ms).sum();
    suite.set_time(Duration::from_millis(total_ms));
    suite.add_properties([
        Property::new("run_id", run.meta.run_id.as_str()),
        Property::new("commit", run.meta.commit.as_str()),
        Property::new("operator", run.meta.operator.name.as_str()),
        Property::new("operator_version", run.meta.operator.version.as_str()),
        Property::new("arch", run.meta.arch.as_str()),
        Property::new(
            "interrupted",
            if run.interrupted { "true" } else { "false" },
        ),
    ]);
    suite.add_test_cases(run.cases.iter().map(|case| test_case(run, case)));
    suite
}

fn test_case(run: &BundleSummary, case: &CaseSummary) -> TestCase {
    let reason = case.reason.as_deref().unwrap_or("");
    let status = match case.verdict {
        Verdict::Passed => TestCaseStatus::success(),
        Verdict::Failed => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(reason);
            s
        }
        Verdict::Interrupted => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_type("interrupted").set_message(reason);
            s
        }
        Verdict::Skipped => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(reason);
            s
        }
        Verdict::NotApplicable => {
            let mut s = TestCaseStatus::skipped();
            if reason.starts_with("not applicable") {
                s.set_message(reason);
            } else {
                s.set_message(format!("not applicable on this cluster: {reason}"));
            }
            s
        }
    };
    let mut test_case = TestCase::new(case.name.as_str(), status);
    test_case
        .set_classname(format!("{}.{}", case.bucket, run.meta.arch))
        .set_time(Duration::from_millis(case.duration_ms));
    test_case
}

/// The run's start in the form quick-junit writes (`chrono`, UTC, milliseconds).
fn timestamp(t: jiff::Timestamp) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::from_timestamp(t.as_second(), t.subsec_nanosecond().max(0) as u32)
        .map(|utc| utc.fixed_offset())
}
