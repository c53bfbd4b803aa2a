//! The BERT tokenizer: basic tokenization (cleanup, CJK spacing, lower-casing, accent stripping,
//! punctuation splitting) followed by greedy longest-match-first WordPiece, as the MLPerf BERT
//! reference uses it.
//!
//! Two variants exist in the reference, and both are here:
//!
//! - [`BertTokenizer`] is `transformers.BertTokenizer(vocab_file)` (the Python "slow" tokenizer
//!   that `language/bert/accuracy-squad.py` and `create_squad_data.convert_examples_to_features`
//!   use to build the features): the special tokens `[UNK] [SEP] [PAD] [CLS] [MASK]` are split out of
//!   the text first and kept whole; the basic tokenizer NFC-normalises the text before splitting it.
//! - [`BasicTokenizer::google`] is the original `tokenization.BasicTokenizer(do_lower_case=True)`
//!   (Google BERT / NVIDIA DeepLearningExamples, imported by `accuracy-squad.py`'s `get_final_text`):
//!   no special tokens, no NFC step.
//!
//! Character classes follow Python's `unicodedata` (general categories: `Zs` whitespace, `C*`
//! control, `P*` punctuation plus all non-alphanumeric ASCII, `Mn` accents) and `str.split()` for
//! whitespace tokenization. Unicode tables are those of the `unicode-general-category` and
//! `unicode-normalization` crates; Python's differ by Unicode version, which only matters for
//! characters assigned in between (none occur in SQuAD v1.1).

use std::collections::HashMap;
use std::path::Path;

use super::error::BertError;

use unicode_general_category::get_general_category;
use unicode_normalization::UnicodeNormalization;

/// The token for words WordPiece cannot split.
pub const UNK: &str = "[UNK]";
/// The special tokens `transformers.BertTokenizer` never splits (`all_special_tokens`).
pub const SPECIAL_TOKENS: [&str; 5] = ["[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"];
/// Words longer than this many characters become `[UNK]` (`max_input_chars_per_word`).
pub const MAX_CHARS_PER_WORD: usize = 100;

/// A WordPiece vocabulary: one token per line, the line number is the id.
#[derive(Clone, Debug, Default)]
pub struct Vocab {
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Vocab {
    /// Tokens in id order. A token listed twice keeps its last id (as `load_vocab`'s dict does).
    pub fn from_tokens<I: IntoIterator<Item = S>, S: Into<String>>(tokens: I) -> Vocab {
        let tokens: Vec<String> = tokens.into_iter().map(Into::into).collect();
        let ids = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        Vocab { tokens, ids }
    }

    /// Reads `vocab.txt` (Python reads it in text mode: `\r\n` endings count as `\n`).
    pub fn load(path: &Path) -> Result<Vocab, BertError> {
        let text = std::fs::read_to_string(path).map_err(|source| BertError::ReadVocab { path: path.to_path_buf(), source })?;
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let vocab = Vocab::from_tokens(text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)));
        if vocab.id(UNK).is_none() {
            return Err(BertError::VocabWithout { path: path.to_path_buf(), token: UNK });
        }
        Ok(vocab)
    }

    pub fn id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn contains(&self, token: &str) -> bool {
        self.ids.contains_key(token)
    }
}

/// Python's `str.isspace()` (what `str.split()` and `str.strip()` split on): Unicode White_Space
/// plus the ASCII separators U+001C..U+001F.
pub fn py_is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn category(c: char) -> &'static str {
    get_general_category(c).abbreviation()
}

/// BERT's `_is_whitespace`: space, tab, newline, carriage return, or category Zs.
pub fn is_bert_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r') || category(c) == "Zs"
}

/// BERT's `_is_control`: a `C*` category other than tab, newline and carriage return.
pub fn is_bert_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && category(c).starts_with('C')
}

/// BERT's `_is_punctuation`: every non-alphanumeric printable ASCII character, or a `P*` category.
pub fn is_bert_punctuation(c: char) -> bool {
    let cp = c as u32;
    (33..=47).contains(&cp) || (58..=64).contains(&cp) || (91..=96).contains(&cp) || (123..=126).contains(&cp) || category(c).starts_with('P')
}

/// BERT's `_is_chinese_char`: the CJK Unified Ideographs blocks (not Hangul, Hiragana, Katakana).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// `whitespace_tokenize`: `text.strip().split()`.
pub fn whitespace_tokenize(text: &str) -> Vec<&str> {
    text.split(py_is_space).filter(|t| !t.is_empty()).collect()
}

/// The basic tokenizer (everything before WordPiece).
#[derive(Clone, Debug)]
pub struct BasicTokenizer {
    /// Lower-case and strip accents (`do_lower_case=True`, the only setting MLPerf uses).
    pub lower_case: bool,
    /// NFC-normalise the text first (transformers; the original BERT code does not).
    pub nfc: bool,
    /// Whitespace tokens passed through unchanged (transformers' `never_split`).
    pub never_split: Vec<String>,
}

impl BasicTokenizer {
    /// The original BERT `tokenization.BasicTokenizer(do_lower_case)`.
    pub fn google(lower_case: bool) -> BasicTokenizer {
        BasicTokenizer { lower_case, nfc: false, never_split: Vec::new() }
    }

    /// transformers' `BasicTokenizer` as `BertTokenizer` configures it.
    pub fn transformers(lower_case: bool) -> BasicTokenizer {
        BasicTokenizer { lower_case, nfc: true, never_split: SPECIAL_TOKENS.iter().map(|s| s.to_string()).collect() }
    }

    pub fn tokenize(&self, text: &str) -> Vec<String> {
        // _clean_text: drop NUL, U+FFFD and control characters; whitespace becomes a space.
        let mut cleaned = String::with_capacity(text.len());
        for c in text.chars() {
            if c == '\0' || c == '\u{FFFD}' || is_bert_control(c) {
                continue;
            }
            if is_bert_whitespace(c) {
                cleaned.push(' ');
            } else if is_cjk(c) {
                // _tokenize_chinese_chars: spaces around every CJK ideograph.
                cleaned.push(' ');
                cleaned.push(c);
                cleaned.push(' ');
            } else {
                cleaned.push(c);
            }
        }
        let text: String = if self.nfc { cleaned.nfc().collect() } else { cleaned };
        let mut split = Vec::new();
        for token in whitespace_tokenize(&text) {
            if self.never_split.iter().any(|s| s == token) {
                split.push(token.to_string());
                continue;
            }
            let token = if self.lower_case { strip_accents(&token.to_lowercase()) } else { token.to_string() };
            split_on_punctuation(&token, &mut split);
        }
        // whitespace_tokenize(" ".join(split_tokens)): drops the empty pieces.
        split.retain(|t| !t.is_empty() && !t.chars().all(py_is_space));
        split
    }
}

/// `_run_strip_accents`: NFD, then drop nonspacing marks (Mn).
pub fn strip_accents(text: &str) -> String {
    text.nfd().filter(|&c| category(c) != "Mn").collect()
}

/// `_run_split_on_punc`: every punctuation character is its own token.
fn split_on_punctuation(token: &str, out: &mut Vec<String>) {
    let mut current = String::new();
    for c in token.chars() {
        if is_bert_punctuation(c) {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            out.push(c.to_string());
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
}

/// Greedy longest-match-first WordPiece of one basic token into `out`: continuation pieces carry
/// `##`; a token with an unmatchable remainder, or longer than [`MAX_CHARS_PER_WORD`] characters,
/// becomes `[UNK]`.
pub fn wordpiece(vocab: &Vocab, token: &str, out: &mut Vec<String>) {
    let chars: Vec<(usize, char)> = token.char_indices().collect();
    if chars.len() > MAX_CHARS_PER_WORD {
        out.push(UNK.to_string());
        return;
    }
    let byte_at = |i: usize| if i == chars.len() { token.len() } else { chars[i].0 };
    let first = out.len();
    let mut start = 0;
    let mut piece = String::new();
    while start < chars.len() {
        let mut end = chars.len();
        let mut found = false;
        while start < end {
            piece.clear();
            if start > 0 {
                piece.push_str("##");
            }
            piece.push_str(&token[byte_at(start)..byte_at(end)]);
            if vocab.contains(&piece) {
                found = true;
                break;
            }
            end -= 1;
        }
        if !found {
            out.truncate(first);
            out.push(UNK.to_string());
            return;
        }
        out.push(piece.clone());
        start = end;
    }
}

/// `transformers.BertTokenizer(vocab_file)` with its defaults (`do_lower_case=True`,
/// `tokenize_chinese_chars=True`, accents stripped because lower-casing is on).
#[derive(Clone, Debug)]
pub struct BertTokenizer {
    pub vocab: Vocab,
    pub basic: BasicTokenizer,
    unk_id: u32,
}

impl BertTokenizer {
    pub fn new(vocab: Vocab) -> Result<BertTokenizer, BertError> {
        let unk_id = vocab.id(UNK).ok_or(BertError::NoToken(UNK))?;
        Ok(BertTokenizer { vocab, basic: BasicTokenizer::transformers(true), unk_id })
    }

    pub fn from_file(vocab: &Path) -> Result<BertTokenizer, BertError> {
        BertTokenizer::new(Vocab::load(vocab)?)
    }

    /// `tokenizer.tokenize(text)`: special tokens are cut out of the text and kept; the pieces
    /// between them are basic-tokenized, then WordPiece'd.
    pub fn tokenize(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = text;
        loop {
            // The leftmost special token (the longest on a tie), like transformers' trie split.
            let next = SPECIAL_TOKENS.iter().filter_map(|s| rest.find(s).map(|i| (i, s.len()))).min_by_key(|&(i, len)| (i, std::cmp::Reverse(len)));
            let (before, special, after) = match next {
                Some((i, len)) => (&rest[..i], Some(&rest[i..i + len]), &rest[i + len..]),
                None => (rest, None, ""),
            };
            for token in self.basic.tokenize(before) {
                wordpiece(&self.vocab, &token, &mut out);
            }
            match special {
                Some(s) => out.push(s.to_string()),
                None => return out,
            }
            rest = after;
        }
    }

    /// `convert_tokens_to_ids`: unknown tokens map to `[UNK]`'s id.
    pub fn convert_tokens_to_ids<S: AsRef<str>>(&self, tokens: &[S]) -> Vec<u32> {
        tokens.iter().map(|t| self.vocab.id(t.as_ref()).unwrap_or(self.unk_id)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocab {
        Vocab::from_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "un", "##aff", "##able", "want", "##ed", ",", "runn", "##ing", "cafe", ".", "中", "a"])
    }

    #[test]
    fn wordpiece_is_greedy_longest_match_first() {
        let v = vocab();
        let mut out = Vec::new();
        wordpiece(&v, "unaffable", &mut out);
        assert_eq!(out, ["un", "##aff", "##able"]);
        out.clear();
        wordpiece(&v, "unaffablex", &mut out); // remainder "x" matches nothing: the whole word is [UNK]
        assert_eq!(out, ["[UNK]"]);
        out.clear();
        wordpiece(&v, &"a".repeat(101), &mut out);
        assert_eq!(out, ["[UNK]"]);
    }

    #[test]
    fn basic_tokenizer_cleans_lowercases_strips_and_splits() {
        let b = BasicTokenizer::google(true);
        // Accents stripped after lower-casing, punctuation split, control chars dropped, U+00A0 is Zs.
        assert_eq!(b.tokenize(" Héllo,\u{0007}WORLD!\u{a0}Café's  "), ["hello", ",", "world", "!", "cafe", "'", "s"]);
        // ASCII symbols count as punctuation ($, ^, `); CJK ideographs become single tokens.
        assert_eq!(b.tokenize("a$b^c`d 中文x"), ["a", "$", "b", "^", "c", "`", "d", "中", "文", "x"]);
        // U+2028 (Zl) is not BERT whitespace but str.split() splits on it.
        assert_eq!(b.tokenize("ab\u{2028}cd"), ["ab", "cd"]);
        // Google's tokenizer splits special tokens like any text; transformers' keeps them whole.
        assert_eq!(b.tokenize("[SEP]"), ["[", "sep", "]"]);
        assert_eq!(BasicTokenizer::transformers(true).tokenize("x [SEP] y"), ["x", "[SEP]", "y"]);
    }

    #[test]
    fn bert_tokenizer_end_to_end() {
        let t = BertTokenizer::new(vocab()).unwrap();
        let toks = t.tokenize("UNwanted, running café.");
        // "unwanted": "un" matches, the remainder "##wanted" cannot, so the whole word is [UNK]
        // (transformers gives the same).
        assert_eq!(toks, ["[UNK]", ",", "runn", "##ing", "cafe", "."]);
        assert_eq!(t.convert_tokens_to_ids(&toks), vec![1, 11, 12, 13, 14, 15]);
        // Special tokens glued to text are cut out first and kept.
        assert_eq!(t.tokenize("the[SEP]the"), ["the", "[SEP]", "the"]);
        assert_eq!(t.convert_tokens_to_ids(&["nope"]), vec![1]);
    }

    #[test]
    fn vocab_files() {
        let dir = std::env::temp_dir().join(format!("mlperf-vocab-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("vocab.txt");
        std::fs::write(&path, "[PAD]\r\n[UNK]\r\nhello\r\n").unwrap();
        let v = Vocab::load(&path).unwrap();
        assert_eq!((v.len(), v.id("hello"), v.token(1)), (3, Some(2), Some("[UNK]")));
        std::fs::write(&path, "a\nb\n").unwrap();
        assert!(Vocab::load(&path).unwrap_err().to_string().contains("no [UNK]"));
    }
}
