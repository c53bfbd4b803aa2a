//! The documents stay true: every `mlperf` command in a ```sh block of README.md and docs/*.md names
//! a subcommand the binary has and only flags that subcommand takes (its `--help`, or a config field
//! where the command takes `--<field>=<value>` overrides), every repository script such a block runs
//! exists, and every relative link of those documents points at a file that exists (and, with a
//! `#fragment` into a markdown file, at one of its headings).

use crate::repo_root;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The commands that take `--<config field>=<value>` overrides (`takes_overrides` in
/// src/cli/commands.rs).
const TAKES_OVERRIDES: &[&str] = &["run_harness", "run", "run_audit_harness", "generate_engines", "calibrate", "run_llm_server", "bench engine"];

/// README.md and every docs/*.md, as (path relative to the repository, text).
fn documents() -> Vec<(String, String)> {
    let root = repo_root();
    let mut paths = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| p.strip_prefix(&root).expect("under the root").to_path_buf())
        .collect();
    docs.sort();
    paths.extend(docs);
    paths.into_iter().map(|p| (p.to_string_lossy().into_owned(), std::fs::read_to_string(root.join(&p)).unwrap_or_else(|e| panic!("{}: {e}", p.display())))).collect()
}

/// Whether a line opens or closes a fenced code block, and the opening fence's language.
fn fence(line: &str) -> Option<&str> {
    line.trim_start().strip_prefix("```").map(str::trim)
}

/// The lines of ```sh blocks as (1-based line number, text), continuation lines (`\`) joined.
fn sh_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let (mut inside, mut sh) = (false, false);
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(lang) = fence(line) {
            sh = !inside && matches!(lang, "sh" | "bash" | "shell");
            inside = !inside;
            continue;
        }
        if !(inside && sh) {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        joined.push_str(line.trim());
        match joined.strip_suffix('\\') {
            Some(head) => pending = Some((start, format!("{} ", head.trim_end()))),
            None => out.push((start, joined)),
        }
    }
    out
}

/// The words of one shell command line: quotes and backslashes as the shell reads them, up to a
/// comment, a redirection, a pipe or the end of the command.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '#' if word.is_none() => break,
            '|' | '>' | '<' | ';' | '&' => break,
            '\'' => word.get_or_insert_default().extend(chars.by_ref().take_while(|&c| c != '\'')),
            '"' => word.get_or_insert_default().extend(chars.by_ref().take_while(|&c| c != '"')),
            '\\' => word.get_or_insert_default().extend(chars.next()),
            c => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    words
}

/// `mlperf --help` style text of a subcommand path, cached; None when the binary has no such command.
struct Helps(HashMap<Vec<String>, Option<String>>);

impl Helps {
    fn get(&mut self, path: &[String]) -> Option<&str> {
        self.0
            .entry(path.to_vec())
            .or_insert_with(|| {
                let out = Command::new(env!("CARGO_BIN_EXE_mlperf")).args(path).arg("--help").output().expect("mlperf runs");
                out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            })
            .as_deref()
    }
}

/// Whether `flag` (e.g. `--test_run`) is one of the flags a help text lists.
fn lists_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let before = help[..at].chars().next_back();
        let after = help[at + flag.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') && !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// The arguments of an `mlperf` command line (`mlperf ...`, `.../mlperf ...` or
/// `cargo run --release -- ...`), after any leading `VAR=value` words.
fn mlperf_args(words: &[String]) -> Option<&[String]> {
    let start = words.iter().position(|w| !w.contains('=') || w.starts_with('-'))?;
    let words = &words[start..];
    if words[0] == "mlperf" || words[0].ends_with("/mlperf") {
        return Some(&words[1..]);
    }
    if words.len() >= 2 && words[0] == "cargo" && words[1] == "run" {
        return words.iter().position(|w| w == "--").map(|i| &words[i + 1..]);
    }
    None
}

/// A script of this repository that a line runs (`scripts/x.sh ...`), when it names one.
fn repository_program(words: &[String]) -> Option<&str> {
    let program = words.iter().find(|w| !w.contains('='))?;
    (program.contains('/') && !program.starts_with(['.', '/', '~', '$']) && !program.ends_with("/mlperf")).then_some(program.as_str())
}

/// Checks one `mlperf` command's subcommand and flags; the mismatches found.
fn check_command(helps: &mut Helps, args: &[String]) -> Vec<String> {
    let mut path: Vec<String> = Vec::new();
    let mut wants_subcommand = true;
    let mut flags = Vec::new();
    for arg in args {
        if arg.starts_with('-') {
            flags.push(arg.as_str());
        } else if wants_subcommand {
            path.push(arg.clone());
            match helps.get(&path) {
                Some(help) => wants_subcommand = help.contains("\nCommands:\n"),
                None => return vec![format!("`mlperf {}` is not a command of the binary", path.join(" "))],
            }
        }
    }
    let takes_overrides = TAKES_OVERRIDES.contains(&path.join(" ").as_str());
    let help = helps.get(&path).expect("checked above").to_string();
    let mut mismatches = Vec::new();
    for flag in flags {
        let name = flag.split('=').next().expect("split has a first part");
        if lists_flag(&help, name) {
            continue;
        }
        let is_override = flag.contains('=') && name.strip_prefix("--").is_some_and(|field| mlperf_config::Settings::index_of(field).is_some());
        if is_override && takes_overrides {
            continue;
        }
        mismatches.push(match is_override {
            true => format!("`mlperf {}` takes no config overrides, and {name} is not one of its flags", path.join(" ")),
            false => format!("{name} is not a flag of `mlperf {}` (nor a config field)", path.join(" ")),
        });
    }
    mismatches
}

#[test]
fn every_documented_command_names_a_real_subcommand_and_its_flags() {
    let root = repo_root();
    let mut helps = Helps(HashMap::new());
    let (mut commands, mut scripts, mut mismatches) = (0, 0, Vec::new());
    for (file, text) in documents() {
        for (line, command) in sh_lines(&text) {
            let words = words(&command);
            if let Some(args) = mlperf_args(&words) {
                commands += 1;
                mismatches.extend(check_command(&mut helps, args).into_iter().map(|m| format!("{file}:{line}: {m}")));
            } else if let Some(program) = repository_program(&words) {
                scripts += 1;
                if !root.join(program).is_file() {
                    mismatches.push(format!("{file}:{line}: {program} does not exist"));
                }
            }
        }
    }
    println!("{commands} mlperf commands ({} distinct help texts) and {scripts} scripts checked", helps.0.len());
    assert!(mismatches.is_empty(), "{} mismatch(es) between the documents and the binary:\n{}", mismatches.len(), mismatches.join("\n"));
    assert!(commands >= 20, "only {commands} commands found: is the ```sh extraction broken?");
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
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

/// The anchors of a markdown text's headings (outside code blocks), repeated ones numbered as GitHub does.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if fence(line).is_some() {
            inside = !inside;
            continue;
        }
        let Some(heading) = line.strip_prefix('#').filter(|_| !inside) else { continue };
        let base = slug(heading.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_default();
        out.push(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// The targets of a markdown text's `[text](target)` links outside code blocks, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        if fence(line).is_some() {
            inside = !inside;
            continue;
        }
        if inside {
            continue;
        }
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            if let Some(end) = rest.find(')') {
                let target = rest[..end].split_whitespace().next().unwrap_or("");
                out.push((i + 1, target.to_string()));
            }
        }
    }
    out
}

#[test]
fn every_relative_link_points_at_a_file_and_heading_that_exist() {
    let root = repo_root();
    let (mut checked, mut broken) = (0, Vec::new());
    let mut texts: HashMap<PathBuf, Option<String>> = HashMap::new();
    for (file, text) in documents() {
        let dir = Path::new(&file).parent().expect("a document has a directory").to_path_buf();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, fragment) = target.split_once('#').map_or((target.as_str(), None), |(p, f)| (p, Some(f)));
            let relative = if path.is_empty() { PathBuf::from(&file) } else { normalize(&dir.join(path)) };
            if !root.join(&relative).exists() {
                broken.push(format!("{file}:{line}: {target}: {} does not exist", relative.display()));
                continue;
            }
            let Some(fragment) = fragment else { continue };
            let Some(target_text) = texts.entry(relative.clone()).or_insert_with(|| std::fs::read_to_string(root.join(&relative)).ok()).as_deref() else {
                continue;
            };
            if relative.extension().is_some_and(|e| e == "md") && !anchors(target_text).iter().any(|a| a == fragment) {
                broken.push(format!("{file}:{line}: {target}: {} has no heading #{fragment}", relative.display()));
            }
        }
    }
    println!("{checked} relative links checked");
    assert!(broken.is_empty(), "{} broken link(s):\n{}", broken.len(), broken.join("\n"));
}

/// `docs/../scripts/x` as `scripts/x` (the path stays relative to the repository).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            part => out.push(part),
        }
    }
    out
}

#[test]
fn the_checks_read_commands_and_links_as_written() {
    let w = |s: &str| words(s);
    assert_eq!(w("mlperf run --a=1 --b 'x y'   # comment"), ["mlperf", "run", "--a=1", "--b", "x y"]);
    assert_eq!(w("mlperf completions bash > ~/.x"), ["mlperf", "completions", "bash"]);
    assert_eq!(mlperf_args(&w("cargo run --release -- run --test_run")).unwrap(), ["run", "--test_run"]);
    assert_eq!(mlperf_args(&w("X=1 target/release/mlperf info")).unwrap(), ["info"]);
    assert_eq!(repository_program(&w("INFERENCE_REPO=/x scripts/submission_chain.sh target/release/mlperf")), Some("scripts/submission_chain.sh"));
    assert_eq!(sh_lines("```sh\nmlperf a \\\n  --b\n```\n```\nmlperf c\n```"), [(2, "mlperf a --b".to_string())]);
    assert!(lists_flag("  --audit_tests <X>", "--audit_tests") && !lists_flag("  --audit_tests <X>", "--audit_test"));
    assert_eq!(slug("The whole chain in one script: `scripts/submission_chain.sh`"), "the-whole-chain-in-one-script-scriptssubmission_chainsh");
    assert_eq!(anchors("# A\n```\n# not\n```\n## A\n"), ["a", "a-1"]);
    assert_eq!(links("[x](a.md#b) `c` [y](../d)"), [(1, "a.md#b".to_string()), (1, "../d".to_string())]);
    assert_eq!(normalize(Path::new("docs/../scripts/x.sh")), Path::new("scripts/x.sh"));
}
