//! Diagnostics rendered like rustc's: code, message, `--> file:line:col`, the source line with the
//! offending text underlined, then notes and a suggestion.

use std::fmt::Write;

/// Index of a file in [`Sources`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub usize);

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub file: FileId,
    pub start: usize,
    pub end: usize,
}

/// Every file read during one compilation, by id; paths are shown relative to the project root.
#[derive(Default, Debug, Clone)]
pub struct Sources {
    files: Vec<(String, String)>,
}

impl Sources {
    pub fn add(&mut self, path: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push((path.into(), text.into()));
        FileId(self.files.len() - 1)
    }

    pub fn path(&self, id: FileId) -> &str {
        &self.files[id.0].0
    }

    pub fn text(&self, id: FileId) -> &str {
        &self.files[id.0].1
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, id: FileId, offset: usize) -> (usize, usize) {
        let text = self.text(id);
        let offset = offset.min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, text[line_start..offset].chars().count() + 1)
    }

    /// `path:line:col` of a span's start.
    pub fn location(&self, span: Span) -> String {
        let (line, col) = self.line_col(span.file, span.start);
        format!("{}:{line}:{col}", self.path(span.file))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub text: String,
}

/// One finding. `code` names the rule (README "What each error means" lists them all).
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub primary: Option<Label>,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Error, code, message: message.into(), primary: None, secondary: vec![], notes: vec![], help: None }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(code, message) }
    }

    pub fn at(mut self, span: Span, label: impl Into<String>) -> Self {
        self.primary = Some(Label { span, text: label.into() });
        self
    }

    pub fn also(mut self, span: Span, label: impl Into<String>) -> Self {
        self.secondary.push(Label { span, text: label.into() });
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders the diagnostic as plain text (no colour: cargo captures build-script output).
    pub fn render(&self, sources: &Sources) -> String {
        let mut out = String::new();
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(out, "{kind}[{}]: {}", self.code, self.message);
        let labels: Vec<&Label> = self.primary.iter().chain(self.secondary.iter()).collect();
        let gutter = labels.iter().map(|l| sources.line_col(l.span.file, l.span.start).0.to_string().len()).max().unwrap_or(1);
        let pad = " ".repeat(gutter);
        for (i, label) in labels.iter().enumerate() {
            let (line, col) = sources.line_col(label.span.file, label.span.start);
            let arrow = if i == 0 { "-->" } else { ":::" };
            let _ = writeln!(out, "{pad}{arrow} {}:{line}:{col}", sources.path(label.span.file));
            let text = sources.text(label.span.file);
            let src_line = text.lines().nth(line - 1).unwrap_or("");
            let line_chars = src_line.chars().count();
            let start_char = col - 1;
            let span_text = &text[label.span.start.min(text.len())..label.span.end.min(text.len())];
            let span_chars = span_text.split('\n').next().unwrap_or("").chars().count().max(1);
            let width = span_chars.min(line_chars.saturating_sub(start_char).max(1));
            let mark = if i == 0 { '^' } else { '-' };
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{line:>gutter$} | {src_line}");
            let _ = writeln!(out, "{pad} | {}{} {}", " ".repeat(start_char), mark.to_string().repeat(width), label.text);
        }
        if !labels.is_empty() && (!self.notes.is_empty() || self.help.is_some()) {
            let _ = writeln!(out, "{pad} |");
        }
        for note in &self.notes {
            let _ = writeln!(out, "{pad} = note: {note}");
        }
        if let Some(help) = &self.help {
            let _ = writeln!(out, "{pad} = help: {help}");
        }
        out
    }
}

/// The closest candidate by edit distance, if it is close enough to be a plausible typo.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates.into_iter().map(|c| (levenshtein(word, c), c)).filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1)).min().map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_underline_under_the_span() {
        let mut sources = Sources::default();
        let text = "[default]\ngpu_batch_sizes = 3\n";
        let id = sources.add("configs/x.toml", text);
        let start = text.find("gpu").unwrap();
        let d = Diagnostic::error("C0102", "unknown key `gpu_batch_sizes`")
            .at(Span { file: id, start, end: start + "gpu_batch_sizes".len() }, "not a config field")
            .help("did you mean `gpu_batch_size`?");
        let r = d.render(&sources);
        assert!(r.contains("--> configs/x.toml:2:1"), "{r}");
        assert!(r.contains("2 | gpu_batch_sizes = 3"), "{r}");
        assert!(r.contains("  | ^^^^^^^^^^^^^^^ not a config field"), "{r}");
    }

    #[test]
    fn suggestions_only_for_near_misses() {
        assert_eq!(did_you_mean("gpu_batch_sizes", ["gpu_batch_size", "precision"]), Some("gpu_batch_size"));
        assert_eq!(did_you_mean("zzz", ["gpu_batch_size"]), None);
    }
}
