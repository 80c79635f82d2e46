//! The module graph of every crate in the workspace, read from its source: each top-level
//! module's `crate::…` paths are its edges. Fails on an import cycle between top-level modules
//! (a strongly connected component of more than one module) that is not in [`KNOWN_CYCLES`],
//! on a known cycle that is gone (so the list only shrinks), and on an upward edge: a cluster
//! backend that reaches into the deployment layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Crates and their source roots, relative to the workspace root (the scenarios crate is one
/// file).
const CRATES: &[(&str, &str)] = &[
    ("rehearsal", "harness/src"),
    ("rehearsal-evidence", "harness/evidence/src"),
    ("rehearsal-apiserver", "harness/apiserver/src"),
    ("rehearsal-embedded", "harness/embedded/src"),
    ("gameplane-api", "harness/gameplane-api/src"),
    ("fixture-game", "images/fixture-game/src"),
    ("reference-operator", "images/reference-operator/src"),
];

/// Cycles still to break, each with its crate and why it is still there. Remove an entry when
/// the cycle is gone (the test says so). Empty: every crate's module graph is acyclic, and any
/// new cycle fails the test.
const KNOWN_CYCLES: &[(&str, &[&str])] = &[];

/// Forbidden edges still present, each with its reason (the same rule: remove when gone).
/// Empty, as [`KNOWN_CYCLES`].
const KNOWN_FORBIDDEN: &[(&str, &str, &str)] = &[];

/// Edges that must not exist: (crate, from, to).
const FORBIDDEN: &[(&str, &str, &str)] = &[
    // Backends bring a cluster up; the `run` layer composes a backend with a deployment.
    ("rehearsal", "backend", "deploy"),
    // The case context sits below both the cases and the qualification procedure.
    ("rehearsal", "context", "cases"),
    ("rehearsal", "context", "qualify"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Code without `//` comments (doc links name modules without depending on them) and without
/// string literals.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if !in_str && c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' && prev != '\'' {
                in_str = !in_str;
                out.push(' ');
            } else if !in_str {
                out.push(c);
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
        }
        out.push('\n');
    }
    out
}

/// The top-level modules `crate::…` paths in `code` name, including each item of a
/// `crate::{a, b::c}` group.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut refs = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue; // `$crate::`, `other_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 0 => {
                        refs.insert(ident(&group[j..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            refs.insert(ident(rest));
        }
    }
    refs.retain(|r| !r.is_empty() && r != "self");
    refs
}

/// Top-level module → the other top-level modules it names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut refs: Vec<(String, BTreeSet<String>)> = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = first.trim_end_matches(".rs").to_string();
        if matches!(top.as_str(), "lib" | "main" | "bin") {
            continue;
        }
        modules.entry(top.clone()).or_default();
        // `super::` from a module directly below the crate root (`x.rs`, `x/mod.rs`) names the
        // root, as `super::super::` does from `x/y.rs`.
        let depth = rel.components().count() - usize::from(rel.ends_with("mod.rs"));
        let code = code_of(&std::fs::read_to_string(&file).unwrap())
            .replace(&"super::".repeat(depth), " crate::");
        refs.push((top, crate_refs(&code)));
    }
    for (top, names) in refs {
        for name in names {
            if name != top && modules.contains_key(&name) {
                modules.get_mut(&top).unwrap().insert(name);
            }
        }
    }
    modules
}

/// The directory modules whose own submodules are layered, each with its layers from the
/// bottom: (crate source root, module path below it, layers). A submodule may name only
/// submodules of a lower layer; `mod.rs` (declarations and re-exports) is not a node.
const LAYERED: &[(&str, &str, &[&[&str]])] = &[(
    "harness/src",
    "qualify",
    &[
        &["identity", "tidy"],
        &["access"],
        &["preflight", "gates", "fleet"],
        &["seed"],
        &["rollback", "promotion"],
        &["procedure"],
    ],
)];

/// Submodule → the other submodules of `module` (a directory module under `src`) it names,
/// through `crate::<module>::…` or `super::…` paths.
fn submodule_graph(src: &Path, module: &str) -> BTreeMap<String, BTreeSet<String>> {
    let dir = src.join(module);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut refs = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&dir).unwrap();
        if rel == Path::new("mod.rs") {
            continue;
        }
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        g.entry(top.clone()).or_default();
        // The module path of this file, from `module` down: `gates/image.rs` → [gates, image].
        let mut path: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if path.last().is_some_and(|l| l == "mod") {
            path.pop();
        }
        let mut code = code_of(&std::fs::read_to_string(&file).unwrap());
        // `super::` k times names the ancestor k levels up (the longest chain first).
        for k in (1..=path.len()).rev() {
            let ancestor: Vec<&str> = path[..path.len() - k].iter().map(String::as_str).collect();
            let mut abs = format!(" crate::{module}::");
            for a in ancestor {
                abs.push_str(a);
                abs.push_str("::");
            }
            code = code.replace(&"super::".repeat(k), &abs);
        }
        // Only paths into `module` count: `crate::<module>::x` becomes `crate::x`.
        let code = code
            .replace("crate::", "elsewhere::")
            .replace(&format!("elsewhere::{module}::"), "crate::");
        refs.push((top, crate_refs(&code)));
    }
    for (top, names) in refs {
        for name in names {
            if name != top && g.contains_key(&name) {
                g.get_mut(&top).unwrap().insert(name);
            }
        }
    }
    g
}

/// Edges of `g` that do not go to a strictly lower layer, and submodules no layer names.
fn layer_problems(
    module: &str,
    g: &BTreeMap<String, BTreeSet<String>>,
    layers: &[&[&str]],
) -> Vec<String> {
    let layer_of = |m: &str| layers.iter().position(|l| l.contains(&m));
    let mut out = Vec::new();
    for (from, tos) in g {
        let Some(lf) = layer_of(from) else {
            out.push(format!(
                "{module}::{from} is in no layer of LAYERED; add it where it belongs"
            ));
            continue;
        };
        for to in tos {
            if layer_of(to).is_some_and(|lt| lt >= lf) {
                out.push(format!(
                    "{module}: {from}→{to} does not go to a lower layer"
                ));
            }
        }
    }
    for layer in layers {
        for m in *layer {
            if !g.contains_key(*m) {
                out.push(format!(
                    "{module}::{m} is in LAYERED but not in the source; remove it"
                ));
            }
        }
    }
    out
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.graph[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// What is wrong with crate `name`'s module graph `g`, given the cycles and forbidden edges
/// still tolerated.
fn problems(
    name: &str,
    g: &BTreeMap<String, BTreeSet<String>>,
    known_cycles: &[(&str, &[&str])],
    known_forbidden: &[(&str, &str, &str)],
) -> Vec<String> {
    let mut problems = Vec::new();
    let found = cycles(g);
    let known: Vec<BTreeSet<String>> = known_cycles
        .iter()
        .filter(|(c, _)| *c == name)
        .map(|(_, m)| m.iter().map(|s| s.to_string()).collect())
        .collect();
    for cycle in &found {
        if !known.contains(cycle) {
            let edges: Vec<String> = cycle
                .iter()
                .flat_map(|m| {
                    g[m].iter()
                        .filter(|t| cycle.contains(*t))
                        .map(move |t| format!("{m}→{t}"))
                })
                .collect();
            problems.push(format!("{name}: import cycle {}", edges.join(", ")));
        }
    }
    for cycle in &known {
        if !found.contains(cycle) {
            problems.push(format!(
                "{name}: the known cycle {cycle:?} is gone; remove it from KNOWN_CYCLES"
            ));
        }
    }
    for (c, from, to) in FORBIDDEN {
        let present = *c == name && g.get(*from).is_some_and(|t| t.contains(*to));
        let known = known_forbidden.contains(&(*c, *from, *to));
        if present && !known {
            problems.push(format!("{name}: forbidden edge {from}→{to}"));
        }
        if *c == name && known && !present {
            problems.push(format!(
                "{name}: the known edge {from}→{to} is gone; remove it from KNOWN_FORBIDDEN"
            ));
        }
    }
    problems
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let mut all = Vec::new();
    for (name, src) in CRATES {
        let g = graph(&root().join(src));
        assert!(g.len() > 1, "{name}: no modules found under {src}");
        all.extend(problems(name, &g, KNOWN_CYCLES, KNOWN_FORBIDDEN));
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
}

/// A crate written to disk with a cycle through a directory module's `super::` path and a
/// backend that reaches into deploy: the reader finds both, and the check reports them (and a
/// tolerated cycle that is gone).
#[test]
fn a_new_cycle_or_upward_edge_in_source_files_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |path: &str, text: &str| {
        let path = src.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\nmod backend;\nmod deploy;\n");
    write("a.rs", "use crate::b::B;\n");
    write("b/mod.rs", "mod inner;\npub struct B;\n");
    write("b/inner.rs", "fn f() { super::super::a::g(); }\n");
    write("backend.rs", "use crate::deploy::helm;\n");
    write("deploy.rs", "// crate::a is only named in a comment\n");
    let g = graph(src);
    assert_eq!(
        g["b"],
        BTreeSet::from(["a".to_string()]),
        "`super::super::` from b/inner.rs names the crate root"
    );
    assert!(g["deploy"].is_empty(), "{g:?}");
    let found = problems("rehearsal", &g, &[], &[]);
    assert_eq!(
        found,
        [
            "rehearsal: import cycle a→b, b→a",
            "rehearsal: forbidden edge backend→deploy",
        ],
    );
    let tolerated = problems(
        "rehearsal",
        &g,
        &[("rehearsal", &["a", "b"]), ("rehearsal", &["a", "deploy"])],
        &[("rehearsal", "backend", "deploy")],
    );
    assert_eq!(
        tolerated,
        [r#"rehearsal: the known cycle {"a", "deploy"} is gone; remove it from KNOWN_CYCLES"#],
    );
}

#[test]
fn the_reader_sees_groups_paths_and_skips_comments() {
    let code = code_of(
        "use crate::{a::X, b, c::{d, e}};\n// crate::commented\nlet s = \"crate::quoted\";\nf(crate::g::h);\n$crate::macro_path\n",
    );
    let refs: Vec<String> = crate_refs(&code).into_iter().collect();
    assert_eq!(refs, ["a", "b", "c", "g"]);
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    let found = cycles(&g);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0],
        ["a", "b", "c"]
            .into_iter()
            .map(String::from)
            .collect::<BTreeSet<_>>()
    );
}

#[test]
fn layered_modules_depend_only_downwards() {
    let mut all = Vec::new();
    for (src, module, layers) in LAYERED {
        let g = submodule_graph(&root().join(src), module);
        assert!(
            g.len() > 1,
            "{module}: no submodules found under {src}/{module}"
        );
        all.extend(
            cycles(&g)
                .into_iter()
                .map(|c| format!("{module}: import cycle {c:?}")),
        );
        all.extend(layer_problems(module, &g, layers));
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
}

/// A directory module written to disk: `super::` chains and `crate::<module>::` groups are
/// read as edges between its submodules, an upward edge and an unlisted submodule are reported.
#[test]
fn an_upward_edge_between_submodules_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |path: &str, text: &str| {
        let path = src.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("q/mod.rs", "pub mod low;\npub mod high;\npub mod gates;\n");
    write("q/low.rs", "use super::high::H;\n");
    write(
        "q/high.rs",
        "use crate::q::{low::L, gates};\nuse crate::other::X;\n",
    );
    write("q/gates/mod.rs", "pub mod inner;\n");
    write(
        "q/gates/inner.rs",
        "fn f() { super::super::low::g(); super::sibling(); }\n",
    );
    write("q/stray.rs", "");
    let g = submodule_graph(src, "q");
    assert_eq!(g["gates"], BTreeSet::from(["low".to_string()]));
    assert_eq!(
        g["high"],
        BTreeSet::from(["gates".to_string(), "low".to_string()])
    );
    let layers: &[&[&str]] = &[&["low"], &["gates"], &["high"], &["gone"]];
    assert_eq!(
        layer_problems("q", &g, layers),
        [
            "q: low→high does not go to a lower layer",
            "q::stray is in no layer of LAYERED; add it where it belongs",
            "q::gone is in LAYERED but not in the source; remove it",
        ]
    );
}

/// The command modules (`harness/src/cli/*`) import no one another in a cycle: what `run` and
/// `explore` share lives in `cli/output.rs`, below both.
#[test]
fn no_import_cycle_between_the_cli_modules() {
    let g = submodule_graph(&root().join("harness/src"), "cli");
    assert!(g.contains_key("run") && g.contains_key("explore"), "{g:?}");
    assert!(g["explore"].contains("output"), "{g:?}");
    let found = cycles(&g);
    assert!(
        found.is_empty(),
        "import cycle(s) among cli modules: {found:?}"
    );
}
