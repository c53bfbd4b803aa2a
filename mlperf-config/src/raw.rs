//! Config files parsed into span-carrying raw values, before any typing or inheritance.

use crate::diag::{Diagnostic, FileId, Sources, Span};
use toml::de::{DeTable, DeValue};

/// A TOML value with the span of every nested value kept.
#[derive(Clone, Debug, PartialEq)]
pub enum RawValue {
    String(String),
    Integer(i128),
    Float(f64),
    Bool(bool),
    Array(Vec<Spanned<RawValue>>),
    Table(Vec<(Spanned<String>, Spanned<RawValue>)>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl RawValue {
    pub fn type_name(&self) -> &'static str {
        match self {
            RawValue::String(_) => "a string",
            RawValue::Integer(_) => "an integer",
            RawValue::Float(_) => "a float",
            RawValue::Bool(_) => "a boolean",
            RawValue::Array(_) => "an array",
            RawValue::Table(_) => "a table",
        }
    }

    /// The value written back as TOML text (for provenance listings and `config show`).
    pub fn to_toml(&self) -> String {
        match self {
            RawValue::String(s) => format!("{s:?}"),
            RawValue::Integer(i) => i.to_string(),
            RawValue::Float(f) => format!("{f:?}"),
            RawValue::Bool(b) => b.to_string(),
            RawValue::Array(items) => {
                format!("[{}]", items.iter().map(|i| i.value.to_toml()).collect::<Vec<_>>().join(", "))
            }
            RawValue::Table(entries) => format!("{{ {} }}", entries.iter().map(|(k, v)| format!("{} = {}", toml_key(&k.value), v.value.to_toml())).collect::<Vec<_>>().join(", ")),
        }
    }
}

/// A key written bare when TOML allows it, quoted otherwise.
pub fn toml_key(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') { key.to_string() } else { format!("{key:?}") }
}

/// One `[section]` of a config file: a workload (`default`, `maxq`, ...) or, in defaults files, any name.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub name: Spanned<String>,
    pub extends: Vec<Spanned<String>>,
    pub values: Vec<(Spanned<String>, Spanned<RawValue>)>,
}

/// A parsed config file: its id in [`Sources`] and its sections in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigFile {
    pub file: FileId,
    pub sections: Vec<Section>,
}

fn convert(file: FileId, value: &toml::Spanned<DeValue<'_>>) -> Spanned<RawValue> {
    let range = value.span();
    let span = Span { file, start: range.start, end: range.end };
    let raw = match value.get_ref() {
        DeValue::String(s) => RawValue::String(s.to_string()),
        DeValue::Integer(i) => RawValue::Integer(i128::from_str_radix(&i.as_str().replace('_', ""), i.radix()).unwrap_or(i128::MAX)),
        DeValue::Float(f) => RawValue::Float(f.as_str().replace('_', "").parse().unwrap_or(f64::NAN)),
        DeValue::Boolean(b) => RawValue::Bool(*b),
        DeValue::Datetime(d) => RawValue::String(d.to_string()),
        DeValue::Array(items) => RawValue::Array(items.iter().map(|i| convert(file, i)).collect()),
        DeValue::Table(t) => RawValue::Table(convert_table(file, t)),
    };
    Spanned { value: raw, span }
}

fn convert_table(file: FileId, table: &DeTable<'_>) -> Vec<(Spanned<String>, Spanned<RawValue>)> {
    let mut entries: Vec<_> = table
        .iter()
        .map(|(k, v)| {
            let r = k.span();
            (Spanned { value: k.get_ref().to_string(), span: Span { file, start: r.start, end: r.end } }, convert(file, v))
        })
        .collect();
    // Keep file order whatever the map's iteration order is.
    entries.sort_by_key(|(k, _)| k.span.start);
    entries
}

/// The top-level entries of a TOML document: key and value, each with its span.
pub type Entries = Vec<(Spanned<String>, Spanned<RawValue>)>;

/// Parses one TOML document into span-carrying raw values (`C0101` on syntax errors).
// A diagnostic is made at most once per file read, off any hot path: boxing it buys nothing.
#[allow(clippy::result_large_err)]
pub fn parse_toml(sources: &Sources, file: FileId) -> Result<Entries, Diagnostic> {
    let text = sources.text(file);
    match DeTable::parse(text) {
        Ok(table) => Ok(convert_table(file, table.get_ref())),
        Err(e) => {
            let range = e.span().unwrap_or(0..0);
            let end = range.end.max(range.start + 1).min(text.len().max(range.start));
            Err(Diagnostic::error("C0101", "invalid TOML")
                .at(Span { file, start: range.start, end }, e.message().trim().to_string())
                .help("fix the TOML syntax; https://toml.io/en/v1.0.0 describes it"))
        }
    }
}

/// Parses a config file: every top-level item must be a `[section]` table; `extends` is a string or
/// an array of strings; everything else in a section is a field, checked later.
pub fn parse_config_file(sources: &Sources, file: FileId) -> Result<ConfigFile, Vec<Diagnostic>> {
    let entries = parse_toml(sources, file).map_err(|d| vec![d])?;
    let mut errors = Vec::new();
    let mut sections = Vec::new();
    for (name, value) in entries {
        let RawValue::Table(items) = value.value else {
            errors.push(
                Diagnostic::error("C0103", format!("`{}` is outside any workload section", name.value))
                    .at(name.span, "fields must be inside a section")
                    .help("put it under a section header such as `[default]`, `[high_accuracy]` or `[maxq]`"),
            );
            continue;
        };
        let mut section = Section { name, extends: Vec::new(), values: Vec::new() };
        for (key, v) in items {
            if key.value == "extends" {
                match v.value {
                    RawValue::String(s) => section.extends.push(Spanned { value: s, span: v.span }),
                    RawValue::Array(list) => {
                        for item in list {
                            match item.value {
                                RawValue::String(s) => section.extends.push(Spanned { value: s, span: item.span }),
                                other => errors.push(extends_type_error(item.span, &other)),
                            }
                        }
                    }
                    other => errors.push(extends_type_error(v.span, &other)),
                }
            } else {
                section.values.push((key, v));
            }
        }
        sections.push(section);
    }
    if errors.is_empty() { Ok(ConfigFile { file, sections }) } else { Err(errors) }
}

fn extends_type_error(span: Span, found: &RawValue) -> Diagnostic {
    Diagnostic::error("C0104", format!("`extends` must be a string or an array of strings, found {}", found.type_name()))
        .at(span, "expected a reference like \"resnet50/Offline#default\"")
}
