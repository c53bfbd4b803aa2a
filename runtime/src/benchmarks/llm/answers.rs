//! Answer extraction of the reasoning benchmarks' evaluations, as the reference scripts parse a
//! decoded answer (mlcommons/inference b66003e1): `language/deepseek-r1/eval_accuracy.py` and
//! `language/gpt-oss-120b/eval_accuracy.py` (which `eval_mlperf_accuracy.py` calls). The two
//! scripts share the AIME and boxed-math parsers but differ in multiple choice (gpt-oss reads the
//! harmony `final` channel first) and in code extraction.
//!
//! Python's `re` on `str` is Unicode-aware; the patterns here are run by `fancy_regex` (which
//! backtracks as `re` does) with Python's `\s` spelled out ([`S`]: `str.isspace()` adds
//! U+001C..U+001F to Unicode White_Space) and `str.strip()` as [`py_strip`]. `$` without
//! MULTILINE is written `\z`: every text is stripped first, so "end, or before a final newline"
//! and "end" agree.

use crate::accuracy::punkt::py_space;
use fancy_regex::Regex;
use std::sync::LazyLock;

/// Python's `\s` in a `str` pattern.
const S: &str = r"[\s\x1c-\x1f]";

/// `str(x).strip()`.
pub fn py_strip(text: &str) -> &str {
    text.trim_matches(py_space)
}

fn regex(pattern: &str) -> Regex {
    Regex::new(&pattern.replace(r"\s", S)).expect("answer pattern compiles")
}

/// Every match's first group, in order (`re.finditer`).
fn groups<'t>(re: &Regex, text: &'t str) -> Vec<&'t str> {
    re.captures_iter(text).filter_map(|c| c.ok()?.get(1).map(|m| m.as_str())).collect()
}

/// `\b(?:ANSWER|FINAL\s*ANSWER)\b\s*[:=]?\s*(?:\(?\s*([A-M])\s*\)?)(?:\s*$|[^A-Za-z])`, IGNORECASE:
/// deepseek-r1's multiple-choice pattern and gpt-oss's last resort, per highest letter.
fn answer_letter_pattern(max: char) -> Regex {
    regex(&format!(r"(?i)\b(?:ANSWER|FINAL\s*ANSWER)\b\s*[:=]?\s*(?:\(?\s*([A-{max}])\s*\)?)(?:\s*\z|[^A-Za-z])"))
}

static ANSWER_D: LazyLock<Regex> = LazyLock::new(|| answer_letter_pattern('D'));
static ANSWER_J: LazyLock<Regex> = LazyLock::new(|| answer_letter_pattern('J'));
static LONE_LETTER_J: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)\b([A-J])\b"));

/// The options of a multiple-choice sub-benchmark: GPQA's A..D, MMLU(-Pro)'s A..J.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choices {
    UpToD,
    UpToJ,
}

impl Choices {
    pub fn valid(self) -> &'static str {
        match self {
            Choices::UpToD => "ABCD",
            Choices::UpToJ => "ABCDEFGHIJ",
        }
    }

    fn answer_pattern(self) -> &'static Regex {
        match self {
            Choices::UpToD => &ANSWER_D,
            Choices::UpToJ => &ANSWER_J,
        }
    }

    fn last_letter(self) -> char {
        self.valid().chars().last().unwrap()
    }
}

/// The shared clean-up of the multiple-choice parsers: a `['...']` list artefact unwrapped, and
/// literal `\n` and `\'` escapes turned into what they stand for.
fn unescape_artifacts(text: &str) -> String {
    let listed = (text.starts_with("['") || text.starts_with("[\"")) && (text.ends_with("']") || text.ends_with("\"]"));
    // The reference slices two characters off each end; a two- or three-character text like `['`
    // passes its test and slices to nothing.
    let text = if listed { text.get(2..text.len().saturating_sub(2).max(2)).map(py_strip).unwrap_or("") } else { text };
    text.replace("\\n", "\n").replace("\\'", "'")
}

/// The letter a multiple-choice answer gives, upper-cased, as deepseek-r1's
/// `parse_multiple_choice` reads it: the last `Answer: X` (or `FINAL ANSWER = (X)`), and for
/// A..J, failing that, the last lone letter.
pub fn deepseek_choice(text: &str, choices: Choices) -> Option<char> {
    let text = py_strip(text);
    if text.is_empty() {
        return None;
    }
    let text = unescape_artifacts(text);
    let letter = groups(choices.answer_pattern(), &text).last().copied().or_else(|| match choices {
        Choices::UpToJ => groups(&LONE_LETTER_J, &text).last().copied(),
        Choices::UpToD => None,
    });
    letter.and_then(upper_letter)
}

static FINAL_CHANNEL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?s)<\|channel\|>final[^<]*<\|message\|>(.*?)(?:<\|return\|>|\z)").unwrap());
static MARKDOWN_BOLD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\*\*([^*]+)\*\*").unwrap());

/// gpt-oss's `extract_final_section`: the harmony `final` channel's message (up to `<|return|>`
/// or the end), stripped; the whole stripped text when there is none.
pub fn final_section(text: &str) -> &str {
    let text = py_strip(text);
    match FINAL_CHANNEL.captures(text).ok().flatten().and_then(|c| c.get(1)) {
        Some(m) => py_strip(m.as_str()),
        None => text,
    }
}

fn leading_letter_pattern(max: char) -> Regex {
    regex(&format!(r"(?i)^[^a-zA-Z]*([A-{max}])(?:[^a-zA-Z]|\z)"))
}
fn answer_colon_pattern(max: char) -> Regex {
    regex(&format!(r"(?i)\b(?:Answer|ANSWER)\s*[:.]?\s*([A-{max}])\b"))
}
static LEADING_D: LazyLock<Regex> = LazyLock::new(|| leading_letter_pattern('D'));
static LEADING_J: LazyLock<Regex> = LazyLock::new(|| leading_letter_pattern('J'));
static COLON_D: LazyLock<Regex> = LazyLock::new(|| answer_colon_pattern('D'));
static COLON_J: LazyLock<Regex> = LazyLock::new(|| answer_colon_pattern('J'));

/// The letter as gpt-oss's `parse_multiple_choice` reads it: in the final channel (markdown bold
/// removed) a leading letter, else the first `Answer: X`; else the last `ANSWER: X` anywhere in
/// the answer (reasoning included); for A..J, finally, the final channel's last lone letter.
pub fn gpt_oss_choice(text: &str, choices: Choices) -> Option<char> {
    let text = py_strip(text);
    if text.is_empty() {
        return None;
    }
    let section = MARKDOWN_BOLD.replace_all(final_section(text), "$1").into_owned();
    let section = unescape_artifacts(&section);
    let (leading, colon): (&Regex, &Regex) = match choices {
        Choices::UpToD => (&LEADING_D, &COLON_D),
        Choices::UpToJ => (&LEADING_J, &COLON_J),
    };
    let first = |re: &Regex, t: &str| re.captures(t).ok().flatten().and_then(|c| c.get(1)).and_then(|m| upper_letter(m.as_str()));
    if let Some(letter) = first(leading, py_strip(&section)).or_else(|| first(colon, &section)) {
        return Some(letter);
    }
    let full = text.replace("\\n", "\n").replace("\\'", "'");
    if let Some(letter) = groups(choices.answer_pattern(), &full).last().and_then(|l| upper_letter(l)) {
        return Some(letter);
    }
    match choices {
        Choices::UpToJ => groups(&LONE_LETTER_J, &section).last().and_then(|l| upper_letter(l)),
        Choices::UpToD => None,
    }
}

/// Python's `str.upper()` of a one-letter match (`(?i)[A-J]` also matches `ı` and `ſ`, whose upper
/// cases are `I` and `S`).
fn upper_letter(letter: &str) -> Option<char> {
    let mut upper = letter.chars().flat_map(char::to_uppercase);
    upper.next()
}

/// `evaluate_multiple_choice`: correct when the parsed letter is an option and equals the ground
/// truth upper-cased (the ground truth is not stripped).
pub fn choice_is_correct(parsed: Option<char>, ground_truth: &str, choices: Choices) -> bool {
    match parsed {
        Some(letter) if !ground_truth.is_empty() => choices.valid().contains(letter) && ground_truth.to_uppercase() == letter.to_string() && letter <= choices.last_letter(),
        _ => false,
    }
}

static BOXED_INTEGER: LazyLock<Regex> = LazyLock::new(|| regex(r"\\boxed\{\s*(\d+)\s*\}"));
static ANSWER_INTEGER: LazyLock<Regex> = LazyLock::new(|| regex(r"(?im)Answer:\s*(\d+)(?!\.)\b"));

/// `parse_aime_answer` (both scripts): the last `\boxed{N}`, else the last `Answer: N` not followed
/// by a period; the value when it is 0..=999, otherwise none (no fallback to an earlier one).
pub fn aime_answer(text: &str) -> Option<u32> {
    let text = py_strip(text);
    if text.is_empty() {
        return None;
    }
    let boxed = groups(&BOXED_INTEGER, text);
    let digits = match boxed.last() {
        Some(d) => *d,
        None => *groups(&ANSWER_INTEGER, text).last()?,
    };
    python_int(digits).filter(|v| *v <= 999).map(|v| v as u32)
}

/// `int(s)` of a run of `\d` (any Unicode decimal digit).
fn python_int(digits: &str) -> Option<u64> {
    digits.chars().try_fold(0u64, |acc, c| acc.checked_mul(10)?.checked_add(u64::from(digit_value(c)?)))
}

/// The value of a Unicode decimal digit (`\d`): its offset in its script's run of ten, which
/// Unicode keeps contiguous and starting at zero.
fn digit_value(c: char) -> Option<u32> {
    static DIGIT: LazyLock<regex_automata::meta::Regex> = LazyLock::new(|| regex_automata::meta::Regex::new(r"^\d$").unwrap());
    let is_digit = |c: char| {
        let mut buf = [0u8; 4];
        DIGIT.is_match(c.encode_utf8(&mut buf).as_bytes())
    };
    match c.to_digit(10) {
        Some(v) => Some(v),
        None if is_digit(c) => Some((1..).take_while(|k| char::from_u32(c as u32 - k).is_some_and(is_digit)).count() as u32 % 10),
        None => None,
    }
}

/// Python's `float(str)`: surrounding white space, any Unicode decimal digits, single `_` between
/// digits, and the forms Rust's parser shares with it (sign, exponent, `inf`, `nan`).
pub fn python_float(text: &str) -> Option<f64> {
    let t = py_strip(text);
    let chars: Vec<char> = t.chars().collect();
    let mut ascii = String::with_capacity(t.len());
    let digit_at = |i: usize| chars.get(i).is_some_and(|&c| digit_value(c).is_some());
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            if i == 0 || !digit_at(i - 1) || !digit_at(i + 1) {
                return None;
            }
            continue;
        }
        ascii.push(digit_value(c).and_then(|v| char::from_digit(v, 10)).unwrap_or(c));
    }
    ascii.parse().ok()
}

/// `evaluate_aime`: `int(ground_truth) == parsed`; a ground truth `int()` refuses scores nothing.
pub fn aime_is_correct(parsed: Option<u32>, ground_truth: &str) -> bool {
    match (parsed, python_int_literal(ground_truth)) {
        (Some(p), Some(g)) => g == i128::from(p),
        _ => false,
    }
}

/// Python's `int(str)`: surrounding white space, a sign, digits with single `_` between them.
fn python_int_literal(text: &str) -> Option<i128> {
    let t = py_strip(text);
    let (negative, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    let value = python_int(&digits.replace('_', ""))? as i128;
    Some(if negative { -value } else { value })
}

/// `parse_boxed_math` (both scripts): the content of the last `\boxed{`, braces balanced, stripped;
/// none when it never closes.
pub fn boxed_math(text: &str) -> Option<&str> {
    let text = py_strip(text);
    let start = text.rfind("\\boxed{")? + "\\boxed{".len();
    let mut depth = 0usize;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(py_strip(&text[start..start + i])),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

static PYTHON_FENCE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?s)```python(.*?)```").unwrap());
static ANY_FENCE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?s)```(.*?)```").unwrap());
static LANGUAGE_TAG: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)^(?:python|py)\s*\n"));

/// deepseek-r1's `parse_code`: the first ```` ```python ```` block anywhere, stripped.
pub fn deepseek_code(text: &str) -> Option<String> {
    groups(&PYTHON_FENCE, text).first().map(|code| py_strip(code).to_string())
}

/// gpt-oss's `parse_code`: in the final channel, then in the whole answer, the last
/// ```` ```python ```` block, else the last fenced block with a leading `python`/`py` tag removed.
pub fn gpt_oss_code(text: &str) -> Option<String> {
    let text = py_strip(text);
    if text.is_empty() {
        return None;
    }
    let fenced = |t: &str| {
        if let Some(code) = groups(&PYTHON_FENCE, t).last() {
            return Some(py_strip(code).to_string());
        }
        let code = py_strip(groups(&ANY_FENCE, t).last()?);
        Some(LANGUAGE_TAG.replace(code, "").into_owned())
    };
    let section = final_section(text);
    (if section != text { fenced(section) } else { None }).or_else(|| fenced(text))
}
