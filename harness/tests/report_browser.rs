//! The HTML report in a real browser: Debian chromium, headless, renders the two-architecture
//! report to a PNG and its DOM shows the expected headings.
//!
//! chromium is found at `REHEARSAL_CHROMIUM` or `/usr/bin/chromium` (CI installs the Debian
//! package); the test fails with that instruction when neither exists.

mod report_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use rehearsal::report::{self, Format, Report};
use report_support::{AMD64, ARM64, fixtures_dir};

fn chromium() -> PathBuf {
    let path = std::env::var_os("REHEARSAL_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.is_file(),
        "chromium not found at {}: install Debian's `chromium` (apt-get install -y chromium) or set REHEARSAL_CHROMIUM",
        path.display()
    );
    path
}

/// Kills the browser (and reaps it) if the test fails while it runs.
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run_chromium(profile: &Path, extra: &[String], url: &str) -> Output {
    let child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let mut guard = KillOnDrop(Some(child));
    let child = guard.0.take().unwrap();
    child.wait_with_output().expect("wait for chromium")
}

#[test]
fn chromium_renders_the_html_report() {
    let tmp = tempfile::tempdir().unwrap();
    // Write the report beside copies of the bundles so its relative links resolve too.
    let bundles = [&AMD64, &ARM64]
        .iter()
        .map(|v| report::load(fixtures_dir().join(format!("sample-{}", v.arch))).unwrap())
        .collect();
    let out = tmp.path().join("report");
    let r = Report::merge(bundles, &out).unwrap();
    report::write(&r, &[Format::Html], &out).unwrap();
    let url = format!("file://{}", out.join("report.html").display());

    let png = tmp.path().join("r.png");
    let shot = run_chromium(
        &tmp.path().join("profile-shot"),
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1200,2000".into(),
        ],
        &url,
    );
    assert!(
        shot.status.success(),
        "chromium --screenshot exited {}: {}",
        shot.status,
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", png.display()));
    assert!(
        bytes.len() > 1000,
        "screenshot is only {} bytes",
        bytes.len()
    );
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG");
    if let Ok(keep) = std::env::var("REHEARSAL_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }

    let dom = run_chromium(
        &tmp.path().join("profile-dom"),
        &["--dump-dom".into()],
        &url,
    );
    assert!(
        dom.status.success(),
        "chromium --dump-dom exited {}",
        dom.status
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    for heading in [
        "<h1>Qualification report: <code>4f1c2e9a7b3d5c8e0f6a1b2c3d4e5f60718293a4</code></h1>",
        "<h2>Verdicts</h2>",
        "<h2>Cases</h2>",
        "<h2>Mutant kill matrix</h2>",
        "Architectures disagree on 1 case(s):",
    ] {
        assert!(dom.contains(heading), "the rendered DOM lacks {heading}");
    }
    // Every case × arch timeline made it into the DOM as SVG.
    assert_eq!(dom.matches("<svg class=\"timeline\"").count(), 8);
}
