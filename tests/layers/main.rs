//! The shape of the code (`docs/ARCHITECTURE.md`): the top-level modules'
//! import graph has no cycle, no module refers to one above it (the daemon to
//! the arbiter's command, the arbiter's command to a sink but the bus, a sink
//! to another sink); no two public types share a name (`names`); no running
//! code outside the doors' name tables spells a decision's method name
//! (`decisions`). How long a
//! file is, is not checked: a file holds one job, and is split where its jobs
//! part, never to pass a count (`docs/ARCHITECTURE.md`).
//!
//! `cargo test --test suite layers::` reads every `.rs` file under `src/` and
//! `crates/*/src/`, maps each file to its top-level module (a workspace crate's
//! modules count under the names `src/lib.rs` re-exports them as), and takes
//! as an edge every reference to another top-level module: `crate::X`,
//! `eboard_bridge::X` (or a workspace crate's name), `super::` that climbs out
//! of the module, and each name of a `use crate::{a, b}` group. Comments and
//! string literals are not read.

mod decisions;
mod names;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where one module refers to another: the first place seen.
#[derive(Debug, Clone)]
struct Use {
    file: String,
    line: usize,
    path: String,
}

/// Top-level module → the modules it refers to, each with where.
type Graph = BTreeMap<String, BTreeMap<String, Use>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, its path relative to the repository.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

/// The source files the graph is made of: `src/` and each `crates/*/src/`.
fn sources() -> Vec<(String, String)> {
    let root = root();
    let mut dirs = vec![root.join("src")];
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        let mut c: Vec<PathBuf> = crates
            .filter_map(|e| e.ok().map(|e| e.path().join("src")))
            .collect();
        c.sort();
        dirs.extend(c);
    }
    let mut files = Vec::new();
    for d in dirs {
        rust_files(&d, &mut files);
    }
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let rel = p
                .strip_prefix(&root)
                .unwrap_or(&p)
                .to_string_lossy()
                .replace('\\', "/");
            (rel, text)
        })
        .collect()
}

/// The module path of a file (`src/net/arbiter/api.rs` → `net`, `arbiter`,
/// `api`); empty for the crate's root (`lib.rs`, `main.rs`).
fn module_path(file: &str) -> Vec<String> {
    let inner = match file.split_once("/src/") {
        Some((prefix, rest)) if prefix.starts_with("crates/") => rest,
        _ => file.strip_prefix("src/").unwrap_or(file),
    };
    let mut parts: Vec<String> = inner.split('/').map(str::to_string).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    let root = parts.is_empty() && matches!(stem, "lib" | "main");
    if !root && stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// `text` with its comments and string and character literals blanked out
/// (newlines kept, so that lines still count).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r' && (next == Some('"') || next == Some('#')) && raw_start(&c, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            let mut k = j + 1;
            while k < c.len() && !(c[k] == '"' && (0..hashes).all(|h| c.get(k + 1 + h) == Some(&'#'))) {
                k += 1;
            }
            let end = (k + 1 + hashes).min(c.len());
            out.extend(c[i..end].iter().map(|&ch| blank(ch)));
            i = end;
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && (c.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A character literal ('x', '\n', '\u{..}'); a lifetime has no closing quote.
            let mut k = i + 1;
            if next == Some('\\') {
                k += 2;
            }
            while k < c.len() && c[k] != '\'' {
                k += 1;
            }
            let end = (k + 1).min(c.len());
            out.extend(c[i..end].iter().map(|&ch| blank(ch)));
            i = end;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Whether the `r` at `i` starts a raw string (`r"`, `br"`), not ends a word.
fn raw_start(c: &[char], i: usize) -> bool {
    let before = |k: usize| i.checked_sub(k).and_then(|j| c.get(j));
    !ident_char(before(1)) || before(1) == Some(&'b') && !ident_char(before(2))
}

/// The words and punctuation of code, each with its line.
fn tokens(code: &str) -> Vec<(String, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        if c[i] == '\n' {
            line += 1;
            i += 1;
        } else if c[i].is_whitespace() {
            i += 1;
        } else if c[i].is_alphanumeric() || c[i] == '_' {
            let s = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((c[s..i].iter().collect(), line));
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push(("::".into(), line));
            i += 2;
        } else {
            out.push((c[i].to_string(), line));
            i += 1;
        }
    }
    out
}

/// The names a `{ ... }` group starting at `open` names at its top level
/// (`{a, b::c, d as e}` → a, b, d), and the index past its `}`.
fn group(t: &[(String, usize)], open: usize) -> (Vec<(String, usize)>, usize) {
    let (mut depth, mut i, mut names, mut first) = (0, open, Vec::new(), true);
    while i < t.len() {
        match t[i].0.as_str() {
            "{" => {
                depth += 1;
                first = true;
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return (names, i + 1);
                }
            }
            "," => first = depth == 1,
            w if depth == 1 && first => {
                if w.chars().all(|ch| ch.is_alphanumeric() || ch == '_') && w != "self" {
                    names.push(t[i].clone());
                }
                first = false;
            }
            _ => {}
        }
        i += 1;
    }
    (names, i)
}

/// The import graph of `files` (path, text) among `modules`.
fn graph(files: &[(String, String)], crate_names: &[&str]) -> Graph {
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|(f, _)| module_path(f).first().cloned())
        .collect();
    let mut g = Graph::new();
    for (file, text) in files {
        let path = module_path(file);
        let Some(from) = path.first().cloned() else {
            continue;
        };
        let t = tokens(&code_only(text));
        let mut add = |to: &str, line: usize, how: String| {
            if to != from && modules.contains(to) {
                g.entry(from.clone())
                    .or_default()
                    .entry(to.to_string())
                    .or_insert(Use {
                        file: file.clone(),
                        line,
                        path: how,
                    });
            }
        };
        // Inline modules (`mod tests { ... }`) open at these brace depths.
        let (mut braces, mut inline): (usize, Vec<usize>) = (0, Vec::new());
        let mut i = 0;
        while i < t.len() {
            let w = t[i].0.as_str();
            match w {
                "{" => braces += 1,
                "}" => {
                    braces = braces.saturating_sub(1);
                    if inline.last() == Some(&braces) {
                        inline.pop();
                    }
                }
                "mod" if t.get(i + 2).is_some_and(|x| x.0 == "{") => {
                    inline.push(braces);
                }
                _ => {}
            }
            let after_path = |j: usize| t.get(j).is_some_and(|x| x.0 == "::");
            // The crate's root, reached by `crate::`, a crate name or `super::`s.
            let at_root = if (w == "crate" || crate_names.contains(&w)) && after_path(i + 1) {
                Some((i + 2, format!("{w}::")))
            } else if w == "super" && (i == 0 || t[i - 1].0 != "::") {
                let mut j = i;
                let mut ups = 0;
                while t.get(j).is_some_and(|x| x.0 == "super") && after_path(j + 1) {
                    ups += 1;
                    j += 2;
                }
                (ups >= path.len() + inline.len()).then(|| (j, "super::".repeat(ups)))
            } else {
                None
            };
            if let Some((j, prefix)) = at_root {
                match t.get(j) {
                    Some((open, _)) if open == "{" => {
                        let (names, _) = group(&t, j);
                        for (name, line) in names {
                            add(&name, line, format!("{prefix}{{{name}, ..}}"));
                        }
                    }
                    Some((name, line)) => {
                        let sub = match (t.get(j + 1), t.get(j + 2)) {
                            (Some((sep, _)), Some((s, _))) if sep == "::" => format!("::{s}"),
                            _ => String::new(),
                        };
                        add(name, *line, format!("{prefix}{name}{sub}"));
                    }
                    None => {}
                }
            }
            i += 1;
        }
    }
    g
}

/// Each cycle of the graph (one per set of modules that reach each other),
/// written `a -> b -> a (where a uses b; where b uses a)`.
fn cycles(g: &Graph) -> Vec<String> {
    let nodes: BTreeSet<&String> = g.keys().chain(g.values().flat_map(|e| e.keys())).collect();
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(n) = todo.pop() {
            for to in g.get(n).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(to) {
                    todo.push(to);
                }
            }
        }
        seen
    };
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for n in nodes {
        if done.contains(n) || !reach(n).contains(n) {
            continue;
        }
        // The shortest way from `n` back to itself.
        let mut back: BTreeMap<&String, &String> = BTreeMap::new();
        let mut todo = std::collections::VecDeque::from([n]);
        'search: while let Some(m) = todo.pop_front() {
            for to in g.get(m).into_iter().flat_map(|e| e.keys()) {
                if to == n {
                    back.insert(n, m);
                    break 'search;
                }
                if !back.contains_key(to) {
                    back.insert(to, m);
                    todo.push_back(to);
                }
            }
        }
        let mut cycle = vec![n];
        let mut at = back[n];
        while at != n {
            cycle.push(at);
            at = back[at];
        }
        cycle.push(n);
        cycle.reverse();
        let names: Vec<&str> = cycle.iter().map(|s| s.as_str()).collect();
        let why: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                let u = &g[w[0]][w[1]];
                format!("{}:{} uses {}", u.file, u.line, u.path)
            })
            .collect();
        found.push(format!("{} ({})", names.join(" -> "), why.join("; ")));
        done.extend(reach(n).into_iter().filter(|m| reach(m).contains(n)));
    }
    found
}

#[test]
fn the_modules_import_graph_has_no_cycle() {
    let files = sources();
    assert!(files.len() > 50, "only {} source files found", files.len());
    let mut names = vec!["eboard_bridge".to_string()];
    if let Ok(crates) = std::fs::read_dir(root().join("crates")) {
        names.extend(
            crates
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().replace('-', "_")),
        );
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let g = graph(&files, &names);
    assert!(
        g.get("daemon").is_some_and(|e| e.contains_key("bus")),
        "the graph misses daemon -> bus: {g:?}"
    );
    let found = cycles(&g);
    assert!(
        found.is_empty(),
        "the import graph has cycles:\n{}",
        found.join("\n")
    );
}

/// Where a module must not refer to another: the daemon to the arbiter's
/// command (`ctl` is a client of the daemon: what both need lives below them,
/// as `pairings`, `arbiters` and `api`), the arbiter's command to a sink but
/// the bus it calls, and a sink to another sink (each takes the publications
/// on its own, and one down never holds up another).
const SINKS: [&str; 5] = ["bus", "lichess", "mqtt", "net", "output"];

fn crossings(g: &Graph) -> Vec<String> {
    let mut rules: Vec<(&str, &str)> = vec![("daemon", "ctl")];
    for a in SINKS {
        if a != "bus" {
            rules.push(("ctl", a));
        }
        for b in SINKS {
            if a != b {
                rules.push((a, b));
            }
        }
    }
    rules
        .into_iter()
        .filter_map(|(from, to)| {
            let u = g.get(from)?.get(to)?;
            Some(format!("{from} -> {to} ({}:{} uses {})", u.file, u.line, u.path))
        })
        .collect()
}

#[test]
fn no_module_refers_to_one_above_it_or_beside_it() {
    let files = sources();
    let g = graph(&files, &["eboard_bridge", "eboard_core"]);
    assert!(g.contains_key("daemon") && g.contains_key("mqtt"), "{g:?}");
    let found = crossings(&g);
    assert!(
        found.is_empty(),
        "modules that refer where they must not:\n{}",
        found.join("\n")
    );
}

/// The check can fail: the daemon using `ctl`, `ctl` a sink other than the
/// bus, and a sink another sink.
#[test]
fn a_crossing_is_found_and_shown() {
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let files = [
        file(
            "src/lib.rs",
            "pub mod daemon;\npub mod ctl;\npub mod mqtt;\npub mod lichess;\npub mod net;\npub mod bus;\n",
        ),
        file("src/daemon/config.rs", "use crate::ctl::pairings::read;\n"),
        file("src/mqtt/mod.rs", "fn f() { crate::lichess::push(); }\n"),
        file("src/lichess/mod.rs", "use crate::api::Sink;\n"),
        file(
            "src/ctl/mod.rs",
            "use crate::api::Sink;\nuse crate::bus::Board1Proxy;\n",
        ),
        file(
            "src/ctl/passwd.rs",
            "fn f() { crate::net::arbiter::auth::passwd_line(); }\n",
        ),
        file("src/net/mod.rs", "use crate::api::Sink;\n"),
        file("src/bus/mod.rs", "use crate::api::Sink;\n"),
        file("src/api/mod.rs", "pub trait Sink {}\n"),
    ];
    let found = crossings(&graph(&files, &["eboard_bridge"]));
    assert_eq!(
        found,
        [
            "daemon -> ctl (src/daemon/config.rs:1 uses crate::ctl::pairings)",
            "mqtt -> lichess (src/mqtt/mod.rs:1 uses crate::lichess::push)",
            "ctl -> net (src/ctl/passwd.rs:1 uses crate::net::arbiter)",
        ]
    );
}

/// The check can fail: a cycle through `super::` and a `use crate::{..}` group
/// is found and shown with where it is, and references in comments and strings
/// are not edges.
#[test]
fn a_cycle_is_found_and_shown() {
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let files = [
        file("src/lib.rs", "pub mod daemon;\npub mod net;\npub mod api;\n"),
        file("src/daemon/mod.rs", "use crate::{api, net::Server};\n"),
        file("src/net/mod.rs", "use crate::api::BoardRef;\nmod x;\n"),
        file(
            "src/net/x.rs",
            "// crate::daemon in a comment\nconst S: &str = \"crate::daemon\";\nmod inner {\n    use super::super::super::daemon::hub;\n}\n",
        ),
        file(
            "src/api/mod.rs",
            "use super::super::nothing;\nfn f() { let c = '{'; }\n",
        ),
    ];
    let g = graph(&files, &["eboard_bridge"]);
    let found = cycles(&g);
    assert_eq!(
        found,
        [
            "daemon -> net -> daemon (src/daemon/mod.rs:1 uses crate::{net, ..}; src/net/x.rs:4 uses super::super::super::daemon::hub)"
        ],
        "{g:?}"
    );
    assert!(g["daemon"].contains_key("api") && g["net"].contains_key("api"));
    assert!(!g.contains_key("api"), "{g:?}");

    // Without the inner module's reference there is none.
    let mut fixed = files.clone();
    fixed[3].1 = "use super::Server;\nuse crate::api;\n".into();
    assert!(cycles(&graph(&fixed, &["eboard_bridge"])).is_empty());
}

#[test]
fn module_paths_are_the_files_modules() {
    assert_eq!(module_path("src/lib.rs"), Vec::<String>::new());
    assert_eq!(module_path("src/main.rs"), Vec::<String>::new());
    assert_eq!(module_path("src/demo.rs"), ["demo"]);
    assert_eq!(module_path("src/net/mod.rs"), ["net"]);
    assert_eq!(module_path("src/net/arbiter/api.rs"), ["net", "arbiter", "api"]);
    assert_eq!(module_path("crates/eboard-core/src/lib.rs"), Vec::<String>::new());
    assert_eq!(module_path("crates/eboard-core/src/rules/mod.rs"), ["rules"]);
}
