//! No two public types share a name across the crate (and its workspace
//! crates): a reader meeting `Session` or `Config` knows which it is without
//! looking at the imports. A type is public when it is declared `pub` (not
//! `pub(crate)` or `pub(super)`) outside a test module.

use std::collections::BTreeMap;

use super::{code_only, sources};

/// Each public type's name and the files that declare it.
fn public_types(files: &[(String, String)]) -> BTreeMap<String, Vec<String>> {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, text) in files {
        let code = code_only(text);
        // Test modules come last in a file: what follows `#[cfg(test)]` is not
        // the crate's.
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        for line in code.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(at) = words.iter().position(|w| *w == "pub") else {
                continue;
            };
            let (Some(kind), Some(name)) = (words.get(at + 1), words.get(at + 2)) else {
                continue;
            };
            if !matches!(*kind, "struct" | "enum" | "type" | "trait") {
                continue;
            }
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.starts_with(char::is_uppercase) {
                by_name.entry(name).or_default().push(file.clone());
            }
        }
    }
    by_name
}

/// The names declared in more than one file, with their files.
fn clashes(files: &[(String, String)]) -> Vec<String> {
    public_types(files)
        .into_iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect()
}

#[test]
fn no_two_public_types_share_a_name() {
    let found = clashes(&sources());
    assert!(
        found.is_empty(),
        "{} public type names are declared more than once (name each after what it is):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn a_name_clash_is_found_and_shown() {
    let files = vec![
        ("src/a.rs".to_string(), "pub struct Session {\n}\n".to_string()),
        (
            "src/b.rs".to_string(),
            "/// pub struct Session\npub(crate) struct Session;\npub enum Session { A }\n".to_string(),
        ),
        (
            "src/c.rs".to_string(),
            "pub struct Other;\n#[cfg(test)]\nmod tests {\n    pub struct Session;\n}\n".to_string(),
        ),
    ];
    assert_eq!(clashes(&files), ["Session: src/a.rs, src/b.rs"]);
}
