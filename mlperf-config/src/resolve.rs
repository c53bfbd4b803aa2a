//! `extends` resolution with provenance.
//!
//! Every section of every config file is a node named `<file>#<section>`, where `<file>` is the path
//! under `configs/` without `.toml`. A node's values are its parents' values merged left to right,
//! then its own; the last writer wins, and every resolved value keeps the history of what it overrode.
//! References: `"path#section"`, `"#section"` (same file), or `"path"` (same section name).

use crate::diag::{did_you_mean, Diagnostic, Span};
use crate::raw::{ConfigFile, RawValue, Spanned};
use std::collections::{BTreeMap, HashMap};

/// A config file and its name under `configs/` (e.g. `resnet50/Offline`).
#[derive(Clone, Debug)]
pub struct ConfigUnit {
    pub name: String,
    pub file: ConfigFile,
}

/// One resolved node: for each field, every value that was set along the inheritance chain, oldest
/// first; the last entry is the effective value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resolved {
    pub fields: BTreeMap<String, Vec<Spanned<RawValue>>>,
}

impl Resolved {
    pub fn effective(&self, field: &str) -> Option<&Spanned<RawValue>> {
        self.fields.get(field).and_then(|h| h.last())
    }
}

/// Where a node comes from: unit index and section index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef {
    pub unit: usize,
    pub section: usize,
}

pub fn node_id(unit: &ConfigUnit, section: usize) -> String {
    format!("{}#{}", unit.name, unit.file.sections[section].name.value)
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Visiting,
    Done,
}

/// Resolves every node of `units`. Returns the resolved values per node (indexed like `units` and
/// their sections) or the diagnostics for dangling references and cycles.
pub fn resolve_all(units: &[ConfigUnit]) -> Result<Vec<Vec<Resolved>>, Vec<Diagnostic>> {
    let mut index = HashMap::new();
    for (u, unit) in units.iter().enumerate() {
        for s in 0..unit.file.sections.len() {
            index.insert(node_id(unit, s), NodeRef { unit: u, section: s });
        }
    }
    let mut resolver = Resolver {
        units,
        index,
        state: HashMap::new(),
        done: HashMap::new(),
        stack: Vec::new(),
        errors: Vec::new(),
    };
    for (u, unit) in units.iter().enumerate() {
        for s in 0..unit.file.sections.len() {
            resolver.visit(NodeRef { unit: u, section: s });
        }
    }
    if !resolver.errors.is_empty() {
        return Err(resolver.errors);
    }
    Ok(units
        .iter()
        .enumerate()
        .map(|(u, unit)| (0..unit.file.sections.len()).map(|s| resolver.done.remove(&(u, s)).unwrap_or_default()).collect())
        .collect())
}

struct Resolver<'a> {
    units: &'a [ConfigUnit],
    index: HashMap<String, NodeRef>,
    state: HashMap<(usize, usize), State>,
    done: HashMap<(usize, usize), Resolved>,
    stack: Vec<(NodeRef, Span)>,
    errors: Vec<Diagnostic>,
}

impl Resolver<'_> {
    /// The node a reference names, relative to the referring node.
    fn target(&self, from: NodeRef, reference: &str) -> String {
        let unit = &self.units[from.unit];
        match reference.split_once('#') {
            Some(("", section)) => format!("{}#{section}", unit.name),
            Some(_) => reference.to_string(),
            None => format!("{reference}#{}", unit.file.sections[from.section].name.value),
        }
    }

    fn visit(&mut self, node: NodeRef) -> Option<Resolved> {
        let key = (node.unit, node.section);
        match self.state.get(&key) {
            Some(State::Done) => return self.done.get(&key).cloned(),
            Some(State::Visiting) => return None, // reported by the caller that closed the cycle
            None => {}
        }
        self.state.insert(key, State::Visiting);
        let section = &self.units[node.unit].file.sections[node.section];
        let mut merged = Resolved::default();
        for parent in &section.extends {
            let target = self.target(node, &parent.value);
            let Some(&parent_ref) = self.index.get(&target) else {
                self.errors.push(self.dangling(parent, &target));
                continue;
            };
            if self.state.get(&(parent_ref.unit, parent_ref.section)) == Some(&State::Visiting) {
                self.errors.push(self.cycle(node, parent, parent_ref));
                continue;
            }
            self.stack.push((node, parent.span));
            let resolved = self.visit(parent_ref);
            self.stack.pop();
            if let Some(resolved) = resolved {
                for (field, history) in resolved.fields {
                    let mine = merged.fields.entry(field).or_default();
                    for value in history {
                        // A diamond brings the same origin twice: keep it once, at its latest place.
                        mine.retain(|v| v.span != value.span);
                        mine.push(value);
                    }
                }
            }
        }
        for (key_name, value) in &section.values {
            merged.fields.entry(key_name.value.clone()).or_default().push(value.clone());
        }
        self.state.insert(key, State::Done);
        self.done.insert(key, merged.clone());
        Some(merged)
    }

    fn dangling(&self, reference: &Spanned<String>, target: &str) -> Diagnostic {
        let (file, section) = target.split_once('#').unwrap_or((target, ""));
        let sections_of_file: Vec<&str> = self
            .units
            .iter()
            .filter(|u| u.name == file)
            .flat_map(|u| u.file.sections.iter().map(|s| s.name.value.as_str()))
            .collect();
        let diag = Diagnostic::error("C0502", format!("`extends` names `{target}`, which does not exist")).at(reference.span, "dangling reference");
        if sections_of_file.is_empty() {
            let files: Vec<&str> = self.units.iter().map(|u| u.name.as_str()).collect();
            match did_you_mean(file, files.iter().copied()) {
                Some(m) => diag.help(format!("no config file configs/{file}.toml; did you mean `{m}`?")),
                None => diag.help(format!("no config file configs/{file}.toml; references are `<path under configs/ without .toml>#<section>`")),
            }
        } else {
            let d = diag.note(format!("configs/{file}.toml has sections: {}", sections_of_file.join(", ")));
            match did_you_mean(section, sections_of_file.iter().copied()) {
                Some(m) => d.help(format!("did you mean `{file}#{m}`?")),
                None => d,
            }
        }
    }

    fn cycle(&self, node: NodeRef, closing: &Spanned<String>, back_to: NodeRef) -> Diagnostic {
        let start = self.stack.iter().position(|(n, _)| *n == back_to).unwrap_or(0);
        let mut chain: Vec<String> = self.stack[start..].iter().map(|(n, _)| node_id(&self.units[n.unit], n.section)).collect();
        chain.push(node_id(&self.units[node.unit], node.section));
        chain.push(node_id(&self.units[back_to.unit], back_to.section));
        let mut diag = Diagnostic::error("C0501", "`extends` forms a cycle").at(closing.span, "this reference closes the cycle");
        for (_, span) in &self.stack[start..] {
            diag = diag.also(*span, "part of the cycle");
        }
        diag.note(format!("cycle: {}", chain.join(" -> "))).help("remove one of these `extends` so that inheritance ends at a defaults file")
    }
}
