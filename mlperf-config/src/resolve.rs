//! `extends` resolution with provenance.
//!
//! Every section of every config file is a node named `<file>#<section>`, where `<file>` is the path
//! under `configs/` without `.toml`. References: `"path#section"`, `"#section"` (same file), or
//! `"path"` (the same section name in that file).
//!
//! Precedence is Python's method resolution order (C3 linearization), the order NVIDIA's config
//! classes inherited in: a node, then its parents left to right, each ancestor once and after every
//! node that extends it. So `extends = ["a", "b"]` lets `a` win over `b`, and a shared ancestor (the
//! benchmark defaults, say) never overrides a more specific file that extends it. The node's own
//! values win over all. Every resolved value keeps the values it overrode.

use crate::diag::{Diagnostic, Span, did_you_mean};
use crate::raw::{ConfigFile, RawValue, Spanned};
use std::collections::{BTreeMap, HashMap};

/// A config file and its name under `configs/` (e.g. `resnet50/Offline`).
#[derive(Clone, Debug)]
pub struct ConfigUnit {
    pub name: String,
    pub file: ConfigFile,
}

/// One resolved node: for each field, every value set along the linearization, lowest precedence
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

/// A node: unit index and section index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeRef {
    pub unit: usize,
    pub section: usize,
}

pub fn node_id(unit: &ConfigUnit, section: usize) -> String {
    format!("{}#{}", unit.name, unit.file.sections[section].name.value)
}

/// Resolves every node of `units`. Returns the resolved values per node (indexed like `units` and
/// their sections) or the diagnostics for dangling references, cycles and inconsistent orders.
pub fn resolve_all(units: &[ConfigUnit]) -> Result<Vec<Vec<Resolved>>, Vec<Diagnostic>> {
    let mut index = HashMap::new();
    for (u, unit) in units.iter().enumerate() {
        for s in 0..unit.file.sections.len() {
            index.insert(node_id(unit, s), NodeRef { unit: u, section: s });
        }
    }
    let mut linearizer = Linearizer { units, index, done: HashMap::new(), visiting: Vec::new(), errors: Vec::new() };
    let nodes: Vec<NodeRef> = units.iter().enumerate().flat_map(|(u, unit)| (0..unit.file.sections.len()).map(move |s| NodeRef { unit: u, section: s })).collect();
    for &node in &nodes {
        linearizer.linearize(node);
    }
    if !linearizer.errors.is_empty() {
        return Err(linearizer.errors);
    }
    let mut out: Vec<Vec<Resolved>> = units.iter().map(|u| vec![Resolved::default(); u.file.sections.len()]).collect();
    for node in nodes {
        let order = &linearizer.done[&node];
        let resolved = &mut out[node.unit][node.section];
        for ancestor in order.iter().rev() {
            for (key, value) in &units[ancestor.unit].file.sections[ancestor.section].values {
                resolved.fields.entry(key.value.clone()).or_default().push(value.clone());
            }
        }
    }
    Ok(out)
}

struct Linearizer<'a> {
    units: &'a [ConfigUnit],
    index: HashMap<String, NodeRef>,
    /// Node -> its linearization (itself first).
    done: HashMap<NodeRef, Vec<NodeRef>>,
    /// The chain being linearized, with the `extends` span that led to each next node.
    visiting: Vec<(NodeRef, Span)>,
    errors: Vec<Diagnostic>,
}

impl Linearizer<'_> {
    /// The node a reference names, relative to the referring node.
    fn target(&self, from: NodeRef, reference: &str) -> String {
        let unit = &self.units[from.unit];
        match reference.split_once('#') {
            Some(("", section)) => format!("{}#{section}", unit.name),
            Some(_) => reference.to_string(),
            None => format!("{reference}#{}", unit.file.sections[from.section].name.value),
        }
    }

    fn id(&self, node: NodeRef) -> String {
        node_id(&self.units[node.unit], node.section)
    }

    fn linearize(&mut self, node: NodeRef) -> Option<Vec<NodeRef>> {
        if let Some(done) = self.done.get(&node) {
            return Some(done.clone());
        }
        let section = &self.units[node.unit].file.sections[node.section];
        let mut parents = Vec::new();
        let mut lists = Vec::new();
        let mut complete = true;
        for parent in &section.extends {
            let target = self.target(node, &parent.value);
            let Some(&parent_ref) = self.index.get(&target) else {
                self.errors.push(self.dangling(parent, &target));
                complete = false;
                continue;
            };
            if parent_ref == node || self.visiting.iter().any(|(n, _)| *n == parent_ref) {
                self.errors.push(self.cycle(node, parent, parent_ref));
                complete = false;
                continue;
            }
            self.visiting.push((node, parent.span));
            let list = self.linearize(parent_ref);
            self.visiting.pop();
            match list {
                Some(list) => {
                    parents.push((parent_ref, parent.span));
                    lists.push(list);
                }
                None => complete = false,
            }
        }
        if !complete {
            return None;
        }
        lists.push(parents.iter().map(|(p, _)| *p).collect());
        let mut order = vec![node];
        loop {
            lists.retain(|l| !l.is_empty());
            if lists.is_empty() {
                break;
            }
            // C3: the first head that is in no list's tail.
            let head = lists.iter().map(|l| l[0]).find(|h| lists.iter().all(|l| !l[1..].contains(h)));
            let Some(head) = head else {
                self.errors.push(self.inconsistent(node, &parents, &lists));
                return None;
            };
            order.push(head);
            for l in &mut lists {
                if l[0] == head {
                    l.remove(0);
                }
            }
        }
        self.done.insert(node, order.clone());
        Some(order)
    }

    fn dangling(&self, reference: &Spanned<String>, target: &str) -> Diagnostic {
        let (file, section) = target.split_once('#').unwrap_or((target, ""));
        let sections_of_file: Vec<&str> = self.units.iter().filter(|u| u.name == file).flat_map(|u| u.file.sections.iter().map(|s| s.name.value.as_str())).collect();
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
        let start = self.visiting.iter().position(|(n, _)| *n == back_to).unwrap_or(self.visiting.len());
        let mut chain: Vec<String> = self.visiting[start..].iter().map(|(n, _)| self.id(*n)).collect();
        chain.push(self.id(node));
        chain.push(self.id(back_to));
        let mut diag = Diagnostic::error("C0501", "`extends` forms a cycle").at(closing.span, "this reference closes the cycle");
        for (_, span) in &self.visiting[start..] {
            diag = diag.also(*span, "part of the cycle");
        }
        diag.note(format!("cycle: {}", chain.join(" -> "))).help("remove one of these `extends` so that inheritance ends at a defaults file")
    }

    fn inconsistent(&self, node: NodeRef, parents: &[(NodeRef, Span)], lists: &[Vec<NodeRef>]) -> Diagnostic {
        let heads: Vec<String> = lists.iter().map(|l| self.id(l[0])).collect();
        let section = &self.units[node.unit].file.sections[node.section];
        let span = parents.first().map_or(section.name.span, |(_, s)| *s);
        Diagnostic::error("C0503", format!("`extends` of `{}` has no consistent precedence order", self.id(node)))
            .at(span, "these parents disagree on the order of their ancestors")
            .note(format!("cannot order: {}", heads.join(", ")))
            .help("list parents so that a more specific file comes before the files it extends (as Python requires of base classes)")
    }
}
