//! The documentation a newcomer reads holds together: the README's first screen is the two
//! set-up commands and where to go next, and every relative link in every Markdown file of the
//! repository resolves — to a file that exists and, with a `#fragment`, to a heading of it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every tracked-looking Markdown file (build output, bundles and VCS data left out).
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !matches!(
                name.as_str(),
                "target" | "reports" | ".git" | "node_modules"
            ) {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// `(text, target)` of every inline link `[text](target)`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find("](") {
        let start = i + off + 2;
        let Some(len) = text[start..].find(')') else {
            break;
        };
        let target = &text[start..start + len];
        // A link, not prose like "f(x)](y": the target has no spaces.
        if !target.contains(char::is_whitespace) && bytes[i + off] == b']' {
            out.push(target.to_string());
        }
        i = start;
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with('#') {
            let base = slug(line.trim_start_matches('#'));
            // Repeated headings get -1, -2, … as on GitHub.
            let mut anchor = base.clone();
            let mut n = 0;
            while seen.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            seen.insert(anchor);
        }
    }
    seen
}

#[test]
fn every_relative_link_in_the_documentation_resolves() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.len() > 10, "found only {files:?}");
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in links(&prose(&text)) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            checked += 1;
            let rel = file.strip_prefix(&root).unwrap().display().to_string();
            if !resolved.exists() {
                broken.push(format!("{rel}: {target}: no such file"));
                continue;
            }
            if let Some(fragment) = fragment
                && resolved.extension().is_some_and(|e| e == "md")
            {
                let headings = anchors(&std::fs::read_to_string(&resolved).unwrap());
                if !headings.contains(fragment) {
                    broken.push(format!("{rel}: {target}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_opens_with_the_two_commands_and_where_to_go_next() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    // The first screen: what Rehearsal is, then the commands' block.
    let block = lines
        .iter()
        .position(|l| l.starts_with("```sh"))
        .expect("a shell block");
    assert!(block < 12, "the commands start at line {}", block + 1);
    let commands: Vec<&&str> = lines[block..]
        .iter()
        .take_while(|l| **l != "```" || l.starts_with("```sh"))
        .filter(|l| l.starts_with("scripts/setup.sh"))
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(commands[0].contains("rehearse run"), "{}", commands[0]);
    assert!(commands[1].contains("cargo nextest run"), "{}", commands[1]);
    // The test command is the one CI runs.
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l == *commands[1]),
        ".ci/run does not run the README's test command"
    );
    for page in [
        "docs/running.md",
        "docs/cases.md",
        "docs/qualify.md",
        "docs/clusters.md",
        "docs/benchmarks.md",
    ] {
        assert!(
            readme.contains(&format!("]({page})")),
            "README links {page}"
        );
    }
    assert!(
        lines.len() < 80,
        "the README is {} lines: detail belongs in docs/",
        lines.len()
    );
}

#[test]
fn anchors_and_links_parse_as_github_renders_them() {
    assert_eq!(
        slug(" The `quick` profile (2026-12-03, 2 cores)"),
        "the-quick-profile-2026-12-03-2-cores"
    );
    assert_eq!(
        anchors("# A\n## A\n```\n# not a heading\n```\n## B.c"),
        ["a", "a-1", "bc"].into_iter().map(String::from).collect()
    );
    assert_eq!(
        links(&prose(
            "see [x](a.md#b) and `[y](no.md)` and [z](http://h/) f(x)\n```\n[w](c.md)\n```\n"
        )),
        vec!["a.md#b".to_string(), "http://h/".to_string()]
    );
}
