//! NLTK's Punkt sentence splitter as `nltk.sent_tokenize(text)` runs it in NLTK 3.8.1, the version
//! the MLPerf reference evaluations pin (English, with the parameters of NLTK's `punkt_tab` files):
//! the LLM evaluations put each sentence of an answer and of its reference on its own line before
//! ROUGE-Lsum, so a boundary placed differently changes the score. Hand-written for exactness (no
//! Rust crate reproduces Punkt's decisions). Tested sentence for sentence against NLTK 3.8.1
//! (`tests/fixtures/accuracy/sent_tokenize.jsonl`). Later NLTK releases split some texts
//! differently (curly quotes count as closing punctuation there, and their `regex` engine's `\s`
//! is narrower); those are not followed.
//!
//! Python's `re` and `str.strip()` treat as white space what `str.isspace()` does ([`py_space`],
//! the patterns' `\s` likewise). The word patterns use `fancy_regex` for their lookaheads, which
//! backtracks as Python's `re` does.

use super::AccuracyError;
use fancy_regex::Regex;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Orthographic contexts a word type was seen in (`ortho_context.tab` flags).
const ORTHO_MID_UC: u32 = 1 << 2;
const ORTHO_BEG_LC: u32 = 1 << 4;
const ORTHO_UC: u32 = (1 << 1) | (1 << 2) | (1 << 3);
const ORTHO_LC: u32 = (1 << 4) | (1 << 5) | (1 << 6);

/// Python's `str.isspace()` (and `\s` in `re` str patterns): Unicode White_Space plus the four
/// information separators U+001C..U+001F.
pub fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `\s` and `\S` of Python's `re`.
const S: &str = r"[\s\x1c-\x1f]";
const NOT_S: &str = r"[^\s\x1c-\x1f]";
/// Characters that cannot appear within words (PunktLanguageVars._re_non_word_chars).
const NON_WORD: &str = r#"(?:[)";}\]*:@'({\[?!])"#;
const NON_WORD_CHARS: &str = r#")";}]*:@'({[?!"#;
/// Runs of hyphens or periods, and spaced ellipses.
const MULTI_CHAR: &str = r"(?:\-{2,}|\.{2,}|(?:\.[\s\x1c-\x1f]){2,}\.)";
const WORD_START: &str = r#"[^\("`{\[:;&\#\*@\)}\]\-,]"#;

/// A splitter loaded with one language's parameters.
pub struct Punkt {
    abbreviations: HashSet<String>,
    collocations: HashSet<(String, String)>,
    sentence_starters: HashSet<String>,
    ortho_context: HashMap<String, u32>,
    words: Regex,
    realign: Regex,
    numeric: Regex,
    decimal: Regex,
}

/// One word token with its first-pass and second-pass marks.
struct Token<'a> {
    tok: &'a str,
    kind: String,
    period_final: bool,
    sentbreak: bool,
    abbr: bool,
    ellipsis: bool,
}

impl Token<'_> {
    fn type_no_period(&self) -> &str {
        if self.kind.chars().count() > 1 && self.kind.ends_with('.') { &self.kind[..self.kind.len() - 1] } else { &self.kind }
    }

    fn type_no_sentperiod(&self) -> &str {
        if self.sentbreak { self.type_no_period() } else { &self.kind }
    }

    fn first_upper(&self) -> bool {
        self.tok.chars().next().is_some_and(char::is_uppercase)
    }

    fn first_lower(&self) -> bool {
        self.tok.chars().next().is_some_and(char::is_lowercase)
    }
}

/// Whether a token starts a sentence, from the contexts its type was seen in.
#[derive(PartialEq)]
enum Starter {
    Yes,
    No,
    Unknown,
}

/// NLTK's English `punkt_tab` model, where `nltk.data.find` looks: `$NLTK_DATA` (colon-separated),
/// `~/nltk_data`, then the system-wide data directories.
pub fn find_english_model() -> Result<std::path::PathBuf, AccuracyError> {
    let mut roots: Vec<std::path::PathBuf> = std::env::var_os("NLTK_DATA").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(Path::new(&home).join("nltk_data"));
    }
    roots.extend(["/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"].map(std::path::PathBuf::from));
    let model = Path::new("tokenizers/punkt_tab/english");
    roots.iter().map(|root| root.join(model)).find(|dir| dir.join("ortho_context.tab").is_file()).ok_or_else(|| {
        let looked: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        AccuracyError::PunktNotFound { model: model.to_path_buf(), looked }
    })
}

impl Punkt {
    /// Reads `<dir>/{abbrev_types.txt, collocations.tab, sent_starters.txt, ortho_context.tab}`
    /// (`nltk_data/tokenizers/punkt_tab/english`).
    pub fn load(dir: &Path) -> Result<Punkt, AccuracyError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| AccuracyError::PunktUnreadable { path, source })
        };
        let bad_line = |file: &str, line: &str, expected| AccuracyError::PunktLine { path: dir.join(file), line: line.to_string(), expected };
        // NLTK reads each file line by line and cuts one trailing newline per line.
        let lines = |text: String| text.lines().map(str::to_string).collect::<Vec<_>>();
        let mut collocations = HashSet::new();
        for line in lines(read("collocations.tab")?) {
            let (a, b) = line.split_once('\t').ok_or_else(|| bad_line("collocations.tab", &line, "two tab-separated words"))?;
            collocations.insert((a.to_string(), b.to_string()));
        }
        let mut ortho_context = HashMap::new();
        for line in lines(read("ortho_context.tab")?) {
            let flags = line.split_once('\t').and_then(|(word, flags)| Some((word.to_string(), flags.parse::<u32>().ok()?)));
            let (word, flags) = flags.ok_or_else(|| bad_line("ortho_context.tab", &line, "a word, a tab and a number"))?;
            ortho_context.insert(word, flags);
        }
        let regex = |pattern: &str| Regex::new(pattern).expect("a valid pattern");
        Ok(Punkt {
            abbreviations: lines(read("abbrev_types.txt")?).into_iter().collect(),
            collocations,
            sentence_starters: lines(read("sent_starters.txt")?).into_iter().collect(),
            ortho_context,
            words: regex(&format!(r"{MULTI_CHAR}|(?={WORD_START}){NOT_S}+?(?={S}|$|{NON_WORD}|{MULTI_CHAR}|,(?=$|{S}|{NON_WORD}|{MULTI_CHAR}))|{NOT_S}")),
            realign: regex(&format!(r#"(?m)\A["')\]}}]+?(?:{S}+|(?=--)|$)"#)),
            numeric: regex(r"^-?[\.,]?\d[\d,\.-]*\.?$"),
            decimal: regex(r"^\d$"),
        })
    }

    /// `nltk.sent_tokenize(text)`: the sentences of `text`, as slices of it.
    pub fn sentences<'a>(&self, text: &'a str) -> Vec<&'a str> {
        let slices = self.slices(text);
        // Realign: closing quotes and brackets after a break belong to the sentence before it.
        let mut out = Vec::new();
        let mut realign = 0;
        for (k, &(start, stop)) in slices.iter().enumerate() {
            let start = start + realign;
            let this = if start < stop { &text[start..stop] } else { "" };
            let Some(&(next_start, next_stop)) = slices.get(k + 1) else {
                if !this.is_empty() {
                    out.push(this);
                }
                continue;
            };
            let next = if next_start < next_stop { &text[next_start..next_stop] } else { "" };
            match self.realign.find(next).expect("the realignment pattern runs") {
                Some(m) => {
                    let end = next_start + m.as_str().trim_end_matches(py_space).len();
                    out.push(&text[start.min(end)..end]);
                    realign = m.end();
                }
                None => {
                    realign = 0;
                    if !this.is_empty() {
                        out.push(this);
                    }
                }
            }
        }
        out
    }

    /// Sentence spans before realignment (`_slices_from_text`).
    fn slices(&self, text: &str) -> Vec<(usize, usize)> {
        let mut slices = Vec::new();
        let mut last_break = 0;
        for (end, next_tok, context) in self.end_contexts(text) {
            if self.contains_sentbreak(&context) {
                slices.push((last_break, end));
                last_break = next_tok.unwrap_or(end);
            }
        }
        slices.push((last_break, text.trim_end_matches(py_space).len()));
        slices
    }

    /// Potential sentence ends (`.`, `?`, `!` followed by a non-word character or by white space
    /// and a token), each with the end of the match, where the next token starts, and the
    /// context Punkt decides on: the word before, the mark, and what follows
    /// (`_match_potential_end_contexts`, overlaps removed as it does).
    fn end_contexts(&self, text: &str) -> Vec<(usize, Option<usize>, String)> {
        let mut out = Vec::new();
        let mut previous: Option<(usize, usize, Option<usize>, usize)> = None; // (start, end, next_tok, after_end)
        let (mut slice_start, mut slice_stop) = (0usize, 0usize);
        for (start, c) in text.char_indices() {
            if !matches!(c, '.' | '?' | '!') {
                continue;
            }
            let end = start + 1;
            let rest = &text[end..];
            let Some((next_tok, after_end)) = after_token(rest).map(|(next, after)| (next.map(|n| end + n), end + after)) else { continue };
            let before = &text[slice_stop..start];
            // The last ASCII white space (Python's string.whitespace) before the mark; 0 when none.
            let last_space = before.bytes().rposition(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)).unwrap_or(0);
            let word_start = if last_space > 0 { last_space + slice_stop + 1 } else { slice_start };
            if let Some(p) = previous
                && slice_stop <= word_start
            {
                out.push(context(text, (slice_start, slice_stop), p));
            }
            previous = Some((start, end, next_tok, after_end));
            (slice_start, slice_stop) = (word_start, start);
        }
        if let Some(p) = previous {
            out.push(context(text, (slice_start, slice_stop), p));
        }
        out
    }

    /// Whether a token other than the context's last ends a sentence (`text_contains_sentbreak`).
    fn contains_sentbreak(&self, context: &str) -> bool {
        let mut tokens: Vec<Token> = Vec::new();
        for line in context.split('\n').filter(|line| !line.trim_matches(py_space).is_empty()) {
            for m in self.words.find_iter(line) {
                tokens.push(self.first_pass(m.expect("the word pattern runs").as_str()));
            }
        }
        for i in 0..tokens.len().saturating_sub(1) {
            let (head, tail) = tokens.split_at_mut(i + 1);
            self.second_pass(&mut head[i], &tail[0]);
        }
        tokens.iter().rev().skip(1).any(|t| t.sentbreak)
    }

    fn first_pass<'a>(&self, tok: &'a str) -> Token<'a> {
        let lower = tok.to_lowercase();
        let kind = if self.numeric.is_match(&lower).expect("the number pattern runs") { "##number##".to_string() } else { lower };
        let mut t = Token { tok, kind, period_final: tok.ends_with('.'), sentbreak: false, abbr: false, ellipsis: false };
        if matches!(tok, "." | "?" | "!") {
            t.sentbreak = true;
        } else if tok.len() >= 2 && tok.bytes().all(|b| b == b'.') {
            t.ellipsis = true;
        } else if t.period_final && !tok.ends_with("..") {
            let word = tok[..tok.len() - 1].to_lowercase();
            let last_part = word.rsplit('-').next().unwrap_or_default();
            if self.abbreviations.contains(&word) || self.abbreviations.contains(last_part) {
                t.abbr = true;
            } else {
                t.sentbreak = true;
            }
        }
        t
    }

    /// `[^\W\d]\.` of Python's `re`: one word character (`str.isalnum()` or `_`) that is not a
    /// decimal digit, then the period.
    fn is_initial(&self, tok: &str) -> bool {
        let mut chars = tok.chars();
        match (chars.next(), chars.next(), chars.next()) {
            (Some(c), Some('.'), None) => (c.is_alphanumeric() || c == '_') && !self.decimal.is_match(c.encode_utf8(&mut [0; 4])).expect("the digit pattern runs"),
            _ => false,
        }
    }

    fn ortho(&self, kind: &str) -> u32 {
        self.ortho_context.get(kind).copied().unwrap_or(0)
    }

    /// The orthographic heuristic: does `t` start a sentence?
    fn starts_sentence(&self, t: &Token) -> Starter {
        if matches!(t.tok, ";" | ":" | "," | "." | "!" | "?") {
            return Starter::No;
        }
        let context = self.ortho(t.type_no_sentperiod());
        if t.first_upper() && context & ORTHO_LC != 0 && context & ORTHO_MID_UC == 0 {
            return Starter::Yes;
        }
        if t.first_lower() && (context & ORTHO_UC != 0 || context & ORTHO_BEG_LC == 0) {
            return Starter::No;
        }
        Starter::Unknown
    }

    /// Decides on a period-final token from the one after it (`_second_pass_annotation`).
    fn second_pass(&self, t: &mut Token, next: &Token) {
        if !t.period_final {
            return;
        }
        let kind = t.type_no_period().to_string();
        let next_kind = next.type_no_sentperiod();
        let initial = self.is_initial(t.tok);
        if self.collocations.contains(&(kind.clone(), next_kind.to_string())) {
            t.sentbreak = false;
            t.abbr = true;
            return;
        }
        if (t.abbr || t.ellipsis) && !initial {
            if self.starts_sentence(next) == Starter::Yes {
                t.sentbreak = true;
                return;
            }
            if next.first_upper() && self.sentence_starters.contains(next_kind) {
                t.sentbreak = true;
                return;
            }
        }
        if initial || kind == "##number##" {
            let starter = self.starts_sentence(next);
            if starter == Starter::No {
                t.sentbreak = false;
                t.abbr = true;
                return;
            }
            if starter == Starter::Unknown && initial && next.first_upper() && self.ortho(next_kind) & ORTHO_LC == 0 {
                t.sentbreak = false;
                t.abbr = true;
            }
        }
    }
}

/// What may follow a sentence-end mark: one non-word character (no next token), or white space
/// and a token. Returns (the next token's offset, the end of what follows), offsets into `rest`.
fn after_token(rest: &str) -> Option<(Option<usize>, usize)> {
    let mut chars = rest.char_indices();
    let (_, first) = chars.next()?;
    if NON_WORD_CHARS.contains(first) {
        return Some((None, first.len_utf8()));
    }
    let token = rest.find(|c: char| !py_space(c))?;
    if token == 0 {
        return None;
    }
    let end = rest[token..].find(py_space).map_or(rest.len(), |n| token + n);
    Some((Some(token), end))
}

/// The context of a match: the word before it, the mark, and what follows.
fn context(text: &str, (word_start, word_stop): (usize, usize), (start, end, next_tok, after_end): (usize, usize, Option<usize>, usize)) -> (usize, Option<usize>, String) {
    let word = if word_start < word_stop { &text[word_start..word_stop] } else { "" };
    (end, next_tok, format!("{word}{}{}", &text[start..end], &text[end..after_end]))
}

#[cfg(test)]
#[path = "punkt_tests.rs"]
mod tests;
