//! The architecture test: the crate's imports against the layer table of `docs/architecture.md`.
//!
//! Every `crate::...` and `super::...` path of `runtime/src` (in `use` lines, expressions and
//! macro arguments alike) is an import of the module it names. Two rules hold:
//!
//! - **Layers**: a top-level module imports only modules of its own layer or of layers below it,
//!   as the table orders them (top row highest); every top-level module is in the table.
//! - **No circles**: among the modules of one folder (the children of one module), the imports
//!   form no cycle. A module importing its parent's items, or a parent its children, is not an
//!   edge.
//!
//! Test code (`#[cfg(test)]` modules, inline or in their own files) is left out: tests may reach
//! across layers to check how they fit together.
//!
//! The source is scanned as text rather than parsed with `syn`, because macro arguments
//! (`format!`, `matches!`) hold paths too and `syn` leaves them as tokens.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path below the crate root (`["engines", "gpu", "exec"]`); empty for the root.
type ModPath = Vec<String>;

/// One source file as the test sees it.
struct Source {
    file: PathBuf,
    module: ModPath,
    text: String,
}

/// An import found in the code: `from` names `to` (a path that starts at the crate root).
#[derive(Debug)]
struct Import {
    file: PathBuf,
    line: usize,
    from: ModPath,
    to: Vec<String>,
}

/// The layers of the table, top row first, each a set of top-level modules.
fn layers(doc: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let section = doc.split("\n## ").find(|s| s.starts_with("Layers")).ok_or("docs/architecture.md has no `## Layers` section")?;
    let rows: Vec<(String, Vec<String>)> = section
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| layer"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let modules = cells.get(2).unwrap_or(&"").split('`').skip(1).step_by(2).map(str::to_string).collect();
            (cells.get(1).unwrap_or(&"").to_string(), modules)
        })
        .collect();
    if rows.is_empty() { Err("the Layers section of docs/architecture.md has no table".into()) } else { Ok(rows) }
}

/// Comments, string and character literals blanked (newlines kept, so lines still count).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| out.extend(s.iter().map(|&c| if c == b'\n' { '\n' } else { ' ' }));
    while i < b.len() {
        let rest = &b[i..];
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let end = if rest.starts_with(b"//") {
            rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            rest.windows(2).position(|w| w == b"*/").map_or(rest.len(), |p| p + 2)
        } else if rest[0] == b'r' && !ident_before && rest.get(1).is_some_and(|&c| c == b'"' || c == b'#') {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let body = 2 + hashes;
            rest[body..].windows(close.len()).position(|w| w == close.as_slice()).map_or(rest.len(), |p| body + p + close.len())
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' && !ident_before {
            // A character literal ('a', '\n', '\u{7f}'), not a lifetime ('a).
            match rest.iter().skip(1).position(|&c| c == b'\'') {
                Some(p) if p <= 10 && (rest[1] == b'\\' || p == 1 || !rest[1].is_ascii()) => p + 2,
                _ => 1,
            }
        } else {
            out.push(rest[0] as char);
            i += 1;
            continue;
        };
        let end = end.min(rest.len());
        blank(&mut out, &rest[..end]);
        i += end;
    }
    out
}

/// The text with every `#[cfg(test)]` item blanked (an inline `mod tests { ... }`, a `use`, a
/// helper): to its `;` or through its braces, whichever comes first.
fn without_inline_tests(text: &str) -> String {
    let mut out = text.to_string();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|p| p + from) {
        let body = at + "#[cfg(test)]".len();
        let mut end = out.len();
        let mut depth = 0;
        for (k, c) in out[body..].char_indices() {
            match c {
                ';' if depth == 0 => {
                    end = body + k + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let blanked: String = out[at..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
        out.replace_range(at..end, &blanked);
        from = end;
    }
    out
}

/// Files that `#[cfg(test)] mod x;` declarations make test code (with or without `#[path]`).
fn test_files(sources: &[Source]) -> BTreeSet<PathBuf> {
    let mut tests = BTreeSet::new();
    for s in sources {
        let dir = s.file.parent().unwrap();
        let own_dir = match s.file.file_stem().and_then(|n| n.to_str()) {
            Some("mod" | "lib") => dir.to_path_buf(),
            Some(stem) => dir.join(stem),
            None => continue,
        };
        let lines: Vec<&str> = s.text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if *line != "#[cfg(test)]" {
                continue;
            }
            let mut path = None;
            for next in &lines[i + 1..] {
                if let Some(p) = next.strip_prefix("#[path = \"").and_then(|p| p.strip_suffix("\"]")) {
                    path = Some(dir.join(p));
                } else if let Some(name) = next.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
                    tests.insert(path.unwrap_or_else(|| own_dir.join(format!("{name}.rs"))));
                    tests.insert(own_dir.join(name).join("mod.rs"));
                    break;
                } else {
                    break;
                }
            }
        }
    }
    tests
}

fn module_of(root: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: ModPath = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn read_sources(root: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files.into_iter().map(|file| Source { module: module_of(root, &file), text: std::fs::read_to_string(&file).unwrap(), file }).collect()
}

/// Every path of `text` that starts with `crate::` or `super::`, as segments from the crate root,
/// with its line. `use` trees (`crate::a::{b, c::d}`) give one path per leaf.
fn paths(text: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    #[derive(PartialEq)]
    enum Tok<'a> {
        Word(&'a str),
        Sep,
        Open,
        Close,
        Comma,
        Other,
    }
    let mut toks = Vec::new();
    let mut line = 1;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            toks.push((line, Tok::Word(&text[start..i])));
        } else {
            let tok = match c {
                b':' if b.get(i + 1) == Some(&b':') => {
                    i += 1;
                    Tok::Sep
                }
                b'{' => Tok::Open,
                b'}' => Tok::Close,
                b',' => Tok::Comma,
                _ => Tok::Other,
            };
            toks.push((line, tok));
            i += 1;
        }
    }
    // One use tree from token `i` under `prefix`; returns the index after it.
    fn tree(toks: &[(usize, Tok)], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<(usize, Vec<String>)>) -> usize {
        loop {
            match toks.get(i) {
                Some((_, Tok::Open)) => {
                    i += 1;
                    while i < toks.len() && toks[i].1 != Tok::Close {
                        i = tree(toks, i, prefix.clone(), out);
                        if toks.get(i).is_some_and(|t| t.1 == Tok::Comma) {
                            i += 1;
                        }
                    }
                    return i + 1;
                }
                Some((line, Tok::Word(w))) => {
                    prefix.push(w.to_string());
                    i += 1;
                    if toks.get(i).is_some_and(|t| t.1 == Tok::Sep) {
                        i += 1;
                        continue;
                    }
                    out.push((*line, prefix));
                    return i;
                }
                Some((line, _)) => {
                    out.push((*line, prefix));
                    return i;
                }
                None => return i,
            }
        }
    }
    let mut raw = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let starts = matches!(toks[i].1, Tok::Word("crate" | "super")) && toks.get(i + 1).is_some_and(|t| t.1 == Tok::Sep) && (i == 0 || toks[i - 1].1 != Tok::Sep);
        i = if starts { tree(&toks, i, Vec::new(), &mut raw) } else { i + 1 };
    }
    raw.into_iter()
        .filter_map(|(line, p)| {
            let mut base: Vec<String> = module.to_vec();
            let mut rest = p.as_slice();
            if rest.first().is_some_and(|s| s == "crate") {
                base.clear();
                rest = &rest[1..];
            } else {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            base.extend(rest.iter().filter(|s| *s != "self").cloned());
            Some((line, base))
        })
        .collect()
}

fn imports(sources: &[Source]) -> Vec<Import> {
    let tests = test_files(sources);
    let mut out = Vec::new();
    for s in sources.iter().filter(|s| !tests.contains(&s.file)) {
        for (line, to) in paths(&without_inline_tests(&strip(&s.text)), &s.module) {
            out.push(Import { file: s.file.clone(), line, from: s.module.clone(), to });
        }
    }
    out
}

/// What breaks the rules, one line each (`file:line: ...`).
fn violations(sources: &[Source], doc: &str) -> Vec<String> {
    let tests = test_files(sources);
    let modules: BTreeSet<ModPath> = sources.iter().filter(|s| !tests.contains(&s.file)).map(|s| s.module.clone()).collect();
    let mut problems = Vec::new();
    let table = match layers(doc) {
        Ok(t) => t,
        Err(e) => return vec![e],
    };
    let mut rank = BTreeMap::new();
    for (i, (layer, mods)) in table.iter().enumerate() {
        for m in mods {
            if rank.insert(m.clone(), (table.len() - i, layer.clone())).is_some() {
                problems.push(format!("docs/architecture.md: `{m}` is in two layers"));
            }
            if !modules.contains(&vec![m.clone()]) {
                problems.push(format!("docs/architecture.md: layer {layer} names `{m}`, which is no module of runtime/src"));
            }
        }
    }
    for m in modules.iter().filter(|m| m.len() == 1) {
        if !rank.contains_key(&m[0]) {
            problems.push(format!("runtime/src/{}: a top-level module that docs/architecture.md's layer table does not place", m[0]));
        }
    }
    // Sibling edges under each parent module.
    let mut edges: BTreeMap<ModPath, Graph> = BTreeMap::new();
    for imp in imports(sources) {
        let common = imp.from.iter().zip(&imp.to).take_while(|(a, b)| a == b).count();
        if common == imp.from.len() || common == imp.to.len() {
            continue;
        }
        let parent = imp.from[..common].to_vec();
        let mut target = parent.clone();
        target.push(imp.to[common].clone());
        if !modules.contains(&target) {
            continue; // an item of the common parent, not a sibling module
        }
        let (a, b) = (imp.from[common].clone(), imp.to[common].clone());
        if common == 0
            && let (Some((ra, la)), Some((rb, lb))) = (rank.get(&a), rank.get(&b))
            && rb > ra
        {
            problems.push(format!("{}:{}: `{a}` (layer {la}) imports `{}`, of layer {lb} above it", imp.file.display(), imp.line, imp.to.join("::")));
        }
        edges.entry(parent).or_default().entry(a).or_default().entry(b).or_insert((imp.file, imp.line));
    }
    for (parent, graph) in &edges {
        for cycle in cycles(graph) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let (file, line) = &graph[&w[0]][&w[1]];
                    format!("{} -> {} ({}:{line})", w[0], w[1], file.display())
                })
                .collect();
            let at = if parent.is_empty() { "the crate root".to_string() } else { parent.join("::") };
            problems.push(format!("import circle among the modules of {at}: {}", steps.join(", ")));
        }
    }
    problems
}

/// Imports among the children of one module: child -> child -> where the first such import is.
type Graph = BTreeMap<String, BTreeMap<String, (PathBuf, usize)>>;

/// One shortest circle through each module that lies on one, as a closed walk; a module already on
/// a reported circle starts none of its own.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for start in graph.keys() {
        if seen.contains(start) {
            continue;
        }
        // Breadth-first from `start` back to itself: the shortest circle through it.
        let mut prev: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closed = None;
        while let Some(node) = queue.pop_front() {
            for next in graph.get(node).into_iter().flat_map(|n| n.keys()) {
                if next == start {
                    closed = Some(node);
                    break;
                }
                if !prev.contains_key(next) {
                    prev.insert(next, node);
                    queue.push_back(next);
                }
            }
            if closed.is_some() {
                break;
            }
        }
        if let Some(mut node) = closed {
            let mut walk = vec![start.clone(), node.clone()];
            while node != start {
                node = prev[node];
                walk.push(node.clone());
            }
            walk.reverse();
            seen.extend(walk.iter().cloned());
            found.push(walk);
        }
    }
    found
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn architecture_doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn imports_follow_the_layer_table_and_form_no_circle() {
    let problems = violations(&read_sources(&root()), &architecture_doc());
    assert!(problems.is_empty(), "the code and docs/architecture.md disagree:\n{}", problems.join("\n"));
}

/// The same check on the real tree with one line planted, so the test above is known to fail when
/// the code breaks a rule.
#[test]
fn a_planted_upward_import_or_circle_is_found() {
    let planted = |file: &str, line: &str| {
        let mut sources = read_sources(&root());
        let s = sources.iter_mut().find(|s| s.file.ends_with(file)).unwrap();
        s.text = format!("{line}\n{}", s.text);
        violations(&sources, &architecture_doc())
    };
    let upward = planted("engines/io.rs", "use crate::harness::run_all;");
    assert!(upward.iter().any(|p| p.contains("engines/io.rs:1: `engines`") && p.contains("imports `harness::run_all`")), "{upward:?}");
    let circle = planted("engines/gpu/device.rs", "use super::exec::DeviceModel;");
    assert!(circle.iter().any(|p| p.contains("import circle among the modules of engines::gpu") && p.contains("device -> exec")), "{circle:?}");
    let in_a_string = planted("engines/io.rs", "const NOT_AN_IMPORT: &str = \"crate::harness::run_all\"; // crate::harness");
    assert!(in_a_string.is_empty(), "{in_a_string:?}");
    let in_a_test = planted("engines/io.rs", "#[cfg(test)]\nmod planted {\n    use crate::harness::run_all;\n}");
    assert!(in_a_test.is_empty(), "{in_a_test:?}");
}

#[test]
fn use_trees_and_relative_paths_resolve_from_the_crate_root() {
    let module = vec!["engines".to_string(), "gpu".to_string(), "exec".to_string()];
    let got: Vec<String> =
        paths("use super::device::{self, A, b::{C, D}};\nlet x = crate::fsutil::write_atomic(p);", &module).into_iter().map(|(l, p)| format!("{l}:{}", p.join("::"))).collect();
    assert_eq!(got, ["1:engines::gpu::device", "1:engines::gpu::device::A", "1:engines::gpu::device::b::C", "1:engines::gpu::device::b::D", "2:fsutil::write_atomic"]);
    assert_eq!(
        strip("let s = \"crate::x\"; let c = '\"'; // crate::y\nlet r = r#\"crate::z\"#; 'a: loop {}"),
        // A lifetime's quote is blanked too: harmless.
        "let s =           ; let c =    ;            \nlet r =              ;  a: loop {}"
    );
}
