//! Diagnostics rendered like rustc's: code, message, `--> file:line:col`, the source line with the
//! offending text underlined, then notes and a suggestion. The rendering is annotate-snippets',
//! the renderer rustc itself uses.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

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

    /// Renders the diagnostic as rustc does, through annotate-snippets (plain: cargo captures
    /// build-script output). Each file with a label is one snippet, the primary label's first;
    /// a label is underlined on its first line only.
    pub fn render(&self, sources: &Sources) -> String {
        let level = match self.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
        };
        let labels: Vec<(&Label, AnnotationKind)> =
            self.primary.iter().map(|l| (l, AnnotationKind::Primary)).chain(self.secondary.iter().map(|l| (l, AnnotationKind::Context))).collect();
        let mut files: Vec<FileId> = Vec::new();
        for (label, _) in &labels {
            if !files.contains(&label.span.file) {
                files.push(label.span.file);
            }
        }
        let mut group = Group::with_title(level.primary_title(&self.message).id(self.code));
        for file in files {
            let text = sources.text(file);
            let mut snippet = Snippet::source(text).path(sources.path(file));
            for (label, kind) in labels.iter().filter(|(l, _)| l.span.file == file) {
                snippet = snippet.annotation(kind.span(first_line(text, label.span)).label(&label.text));
            }
            group = group.element(snippet);
        }
        for note in &self.notes {
            group = group.element(Level::NOTE.message(note));
        }
        if let Some(help) = &self.help {
            group = group.element(Level::HELP.message(help));
        }
        Renderer::plain().render(&[group]) + "\n"
    }
}

/// The part of `span` on its first line (the whole span when it is on one line).
fn first_line(text: &str, span: Span) -> std::ops::Range<usize> {
    let start = span.start.min(text.len());
    let end = span.end.clamp(start, text.len());
    start..text[start..end].find('\n').map_or(end, |i| start + i)
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
