//! Issue 57: an arbiter's decision is one value from every door to the
//! journal, and outside the doors' own name tables no code matches a decision
//! by its method's name: everything else matches on the value
//! (`docs/ARCHITECTURE.md`, "A decision's path, from each door"). The test
//! reads every `.rs` file under `src/` and `crates/*/src/` (as the layers'
//! graph does), keeps what the daemon runs (no comments, no `#[cfg(test)]`
//! items, no test modules of their own) and fails on a decision's method name
//! spelt as a string anywhere but in [`NAME_TABLES`].

use eboard_bridge::rules::Decision;

use super::{root, sources};

/// Files that may spell a decision's method name as a string: the doors'
/// own name tables, and the one writer and reader of each journal's
/// records.
const NAME_TABLES: [(&str, &str); 5] = [
    (
        "crates/eboard-core/src/rules/decision.rs",
        "Decision::BOARD_METHODS, method(), from_record: the journal's and every door's names",
    ),
    ("src/bus/mod.rs", "D-Bus's method names (CHANGING_METHODS)"),
    ("src/ctl/client.rs", "the Manager1 methods ctl calls on D-Bus"),
    (
        "src/daemon/delay.rs",
        "the delays' journal's own record, written and read by one function each",
    ),
    (
        "crates/eboard-core/src/drive/calls.rs",
        "the driver's calls, written as a door's caller writes them",
    ),
];

/// The code of a Rust source outside its `#[cfg(test)]` items, without
/// comments (string literals kept, lines where they were): what the
/// daemon runs.
fn running_code(text: &str) -> String {
    #[derive(PartialEq)]
    enum In {
        Code,
        LineComment,
        BlockComment(u32),
        Str,
        RawStr(usize),
    }
    let c: Vec<char> = text.chars().collect();
    let ident = |i: usize| i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
    let (mut out, mut state, mut depth) = (String::new(), In::Code, 0usize);
    // Skipping a `#[cfg(test)]` item: the depth it began at, and whether
    // its body is open.
    let mut skip: Option<(usize, bool)> = None;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        let rest = |s: &str| c[i..].iter().take(s.chars().count()).copied().eq(s.chars());
        let mut emit = true;
        match state {
            In::Code => {
                if rest("//") {
                    state = In::LineComment;
                    emit = false;
                } else if rest("/*") {
                    state = In::BlockComment(1);
                    emit = false;
                    i += 1;
                } else if skip.is_none() && rest("#[cfg(test)]") {
                    skip = Some((depth, false));
                } else if ch == '"' {
                    state = In::Str;
                } else if ch == 'r'
                    && (!ident(i) || (c[i - 1] == 'b' && !ident(i - 1)))
                    && matches!(c.get(i + 1), Some('"' | '#'))
                {
                    let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
                    if c.get(i + 1 + hashes) == Some(&'"') {
                        out.extend(&c[i..=i + 1 + hashes]);
                        i += 2 + hashes;
                        state = In::RawStr(hashes);
                        continue;
                    }
                } else if ch == '\'' && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'')) {
                    // A char literal (`'{'`, `'\n'`, `'\''`), not a lifetime.
                    let from = if c[i + 1] == '\\' { i + 3 } else { i + 2 };
                    let end = c
                        .get(from..)
                        .and_then(|rest| rest.iter().position(|&q| q == '\''))
                        .map_or(c.len(), |p| from + p);
                    i = end + 1;
                    continue;
                } else if ch == '{' {
                    depth += 1;
                    if let Some((d, open)) = &mut skip {
                        if depth == *d + 1 {
                            *open = true;
                        }
                    }
                } else if ch == '}' {
                    depth = depth.saturating_sub(1);
                    if skip.is_some_and(|(d, open)| open && depth == d) {
                        skip = None;
                        emit = false;
                    }
                } else if ch == ';' && skip.is_some_and(|(d, open)| !open && depth == d) {
                    skip = None;
                    emit = false;
                }
            }
            In::LineComment => {
                emit = ch == '\n';
                if emit {
                    state = In::Code;
                }
            }
            In::BlockComment(n) => {
                emit = ch == '\n';
                if rest("*/") {
                    state = if n == 1 { In::Code } else { In::BlockComment(n - 1) };
                    i += 1;
                } else if rest("/*") {
                    state = In::BlockComment(n + 1);
                    i += 1;
                }
            }
            In::Str => {
                if ch == '\\' {
                    if skip.is_none() {
                        out.extend(c.get(i..=i + 1).unwrap_or_default());
                    }
                    i += 2;
                    continue;
                }
                if ch == '"' {
                    state = In::Code;
                }
            }
            In::RawStr(n) => {
                if ch == '"' && c[i + 1..].iter().take(n).filter(|&&h| h == '#').count() == n {
                    if skip.is_none() {
                        out.extend(&c[i..=i + n]);
                    }
                    i += n + 1;
                    state = In::Code;
                    continue;
                }
            }
        }
        // Lines kept, to say where a name is.
        if emit && (skip.is_none() || ch == '\n') {
            out.push(ch);
        }
        i += 1;
    }
    out
}

/// Where the running code spells a decision's method name as a string
/// outside [`NAME_TABLES`]: `(file, line, name)`.
fn names_outside_the_tables(files: &[(String, String)]) -> Vec<(String, usize, String)> {
    let mut names: Vec<String> = Decision::BOARD_METHODS.iter().map(|m| m.to_string()).collect();
    names.push(Decision::SetLichessRound(1, String::new()).method().to_string());
    // The delays' journal's own record: `daemon::delay` only.
    names.push("SetBroadcastDelay".into());
    let mut found = Vec::new();
    for (rel, text) in files {
        // A test module of its own (`tests.rs`, `tests/`) is not the daemon's.
        let test_module = rel.ends_with("/tests.rs") || rel.contains("/tests/");
        if test_module || NAME_TABLES.iter().any(|(t, _)| t == rel) {
            continue;
        }
        let code = running_code(text);
        for (n, line) in code.lines().enumerate() {
            for name in &names {
                if line.contains(&format!("\"{name}\"")) {
                    found.push((rel.clone(), n + 1, name.clone()));
                }
            }
        }
    }
    found
}

/// Issue 57: outside the doors' own name tables, no code matches a
/// decision by its method's name; everything else matches on the value.
#[test]
fn no_code_matches_decisions_by_name_outside_the_doors_tables() {
    let files = sources();
    assert!(
        files.len() > 100,
        "the sources were not found under {}",
        root().display()
    );
    let found = names_outside_the_tables(&files);
    assert!(
        found.is_empty(),
        "method names spelt outside the doors' tables ({:?}): {found:?}",
        NAME_TABLES.map(|(f, _)| f)
    );
    // The tables are where they say they are, and spell the names.
    for (f, why) in NAME_TABLES {
        let text = std::fs::read_to_string(root().join(f)).unwrap_or_default();
        assert!(
            running_code(&text).contains("\"Set"),
            "{f} ({why}) spells no method name: take it off the list"
        );
    }
}

/// The scan sees what the daemon runs: a name in running code is found;
/// in a comment, or a `#[cfg(test)]` item, it is not.
#[test]
fn the_scan_finds_a_name_in_running_code_only() {
    let code = running_code(
        "fn a(m: &str) -> bool { m == \"Undo\" } // \"SetClock\"\n\
         /* \"AddTime\" */ const C: char = '{'; const Q: char = '\\''; const S: &str = \"}\";\n\
         #[cfg(test)]\nmod tests { fn b() { let _ = \"NewGame\"; let _ = r#\"}\"#; } }\n\
         #[cfg(test)]\nmod more;\n\
         fn c() -> &'static str { \"SetTags\" }\n",
    );
    assert!(
        code.contains("\"Undo\"") && code.contains("\"SetTags\""),
        "{code}"
    );
    for hidden in ["SetClock", "AddTime", "NewGame", "mod more"] {
        assert!(!code.contains(hidden), "{hidden}: {code}");
    }
}
