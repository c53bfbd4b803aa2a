//! Whisper's `EnglishTextNormalizer`, which the reference's `accuracy_eval.py` runs on every
//! hypothesis and reference before counting word errors: lowercasing, bracketed and filler words
//! removed, contractions and titles spelled out, symbols and diacritics dropped, spelled-out
//! numbers and currencies written as digits ([`NumberNormalizer`]), British spellings made
//! American ([`english.json`](english.json)).
//!
//! Ported from the openai-whisper package (PyPI `openai-whisper` 20250625,
//! `whisper/normalizers/english.py` sha256 2898e467..., `basic.py` sha256 4742eaa0...), step for
//! step and in the same order. `english.json` is that package's spelling map, copied unchanged
//! (sha256 a6607f94...; its source is tysto.com's UK/US spelling list).
//!
//! Python's `re` on `str` is Unicode-aware (`\b`, `\s`, `\d`), and so is the regex crate that runs
//! the patterns here. Python's integers are unbounded: so are the values here ([`BigInt`]).
//! Digits other than ASCII's, which `\d` also matches, are read as text rather than numbers; the
//! scorer never meets them, since answers and transcripts are spelled in the reference's
//! 42-symbol alphabet.

use fancy_regex::{Captures, Regex};
use num_bigint::BigInt;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// A pattern of this file (all are literals, checked by the tests).
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a pattern of the whisper normalizer")
}

/// `re.sub(pattern, with, s)`: every leftmost non-overlapping match replaced.
fn sub(pattern: &Regex, with: &str, s: &str) -> String {
    pattern.replace_all(s, with).into_owned()
}

/// The whole normalizer: `EnglishTextNormalizer()(s)`.
pub fn normalize(s: &str) -> String {
    static STEPS: LazyLock<TextSteps> = LazyLock::new(TextSteps::new);
    STEPS.apply(s)
}

struct TextSteps {
    brackets: Regex,
    parentheses: Regex,
    fillers: Regex,
    space_before_apostrophe: Regex,
    replacers: Vec<(Regex, &'static str)>,
    digit_commas: Regex,
    periods: Regex,
    lone_prefix_symbols: Regex,
    lone_percent: Regex,
    spaces: Regex,
}

/// `EnglishTextNormalizer.replacers`, in the order Python's dict keeps them.
const REPLACERS: &[(&str, &str)] = &[
    // common contractions
    (r"\bwon't\b", "will not"),
    (r"\bcan't\b", "can not"),
    (r"\blet's\b", "let us"),
    (r"\bain't\b", "aint"),
    (r"\by'all\b", "you all"),
    (r"\bwanna\b", "want to"),
    (r"\bgotta\b", "got to"),
    (r"\bgonna\b", "going to"),
    (r"\bi'ma\b", "i am going to"),
    (r"\bimma\b", "i am going to"),
    (r"\bwoulda\b", "would have"),
    (r"\bcoulda\b", "could have"),
    (r"\bshoulda\b", "should have"),
    (r"\bma'am\b", "madam"),
    // contractions in titles/prefixes
    (r"\bmr\b", "mister "),
    (r"\bmrs\b", "missus "),
    (r"\bst\b", "saint "),
    (r"\bdr\b", "doctor "),
    (r"\bprof\b", "professor "),
    (r"\bcapt\b", "captain "),
    (r"\bgov\b", "governor "),
    (r"\bald\b", "alderman "),
    (r"\bgen\b", "general "),
    (r"\bsen\b", "senator "),
    (r"\brep\b", "representative "),
    (r"\bpres\b", "president "),
    (r"\brev\b", "reverend "),
    (r"\bhon\b", "honorable "),
    (r"\basst\b", "assistant "),
    (r"\bassoc\b", "associate "),
    (r"\blt\b", "lieutenant "),
    (r"\bcol\b", "colonel "),
    (r"\bjr\b", "junior "),
    (r"\bsr\b", "senior "),
    (r"\besq\b", "esquire "),
    // perfect tenses
    (r"'d been\b", " had been"),
    (r"'s been\b", " has been"),
    (r"'d gone\b", " had gone"),
    (r"'s gone\b", " has gone"),
    (r"'d done\b", " had done"),
    (r"'s got\b", " has got"),
    // general contractions
    (r"n't\b", " not"),
    (r"'re\b", " are"),
    (r"'s\b", " is"),
    (r"'d\b", " would"),
    (r"'ll\b", " will"),
    (r"'t\b", " not"),
    (r"'ve\b", " have"),
    (r"'m\b", " am"),
];

impl TextSteps {
    fn new() -> TextSteps {
        TextSteps {
            brackets: re(r"[<\[][^>\]]*[>\]]"),
            parentheses: re(r"\(([^)]+?)\)"),
            fillers: re(r"\b(hmm|mm|mhm|mmm|uh|um)\b"),
            space_before_apostrophe: re(r"\s+'"),
            replacers: REPLACERS.iter().map(|(p, r)| (re(p), *r)).collect(),
            digit_commas: re(r"(\d),(\d)"),
            periods: re(r"\.([^0-9]|$)"),
            lone_prefix_symbols: re(r"[.$¢€£]([^0-9])"),
            lone_percent: re(r"([^0-9])%"),
            spaces: re(r"\s+"),
        }
    }

    fn apply(&self, s: &str) -> String {
        let mut s = s.to_lowercase();
        s = sub(&self.brackets, "", &s);
        s = sub(&self.parentheses, "", &s);
        s = sub(&self.fillers, "", &s);
        s = sub(&self.space_before_apostrophe, "'", &s);
        for (pattern, with) in &self.replacers {
            s = sub(pattern, with, &s);
        }
        s = sub(&self.digit_commas, "${1}${2}", &s);
        s = sub(&self.periods, " ${1}", &s);
        s = remove_symbols_and_diacritics(&s, ".%$¢€£");
        s = NUMBERS.normalize(&s);
        s = standardize_spellings(&s);
        s = sub(&self.lone_prefix_symbols, " ${1}", &s);
        s = sub(&self.lone_percent, "${1} ", &s);
        sub(&self.spaces, " ", &s)
    }
}

/// basic.py's `ADDITIONAL_DIACRITICS`: letters NFKD does not split.
fn additional_diacritic(c: char) -> Option<&'static str> {
    Some(match c {
        'œ' => "oe",
        'Œ' => "OE",
        'ø' => "o",
        'Ø' => "O",
        'æ' => "ae",
        'Æ' => "AE",
        'ß' => "ss",
        'ẞ' => "SS",
        'đ' => "d",
        'Đ' => "D",
        'ð' => "d",
        'Ð' => "D",
        'þ' => "th",
        'Þ' => "th",
        'ł' => "l",
        'Ł' => "L",
        _ => return None,
    })
}

/// basic.py's `remove_symbols_and_diacritics`: after NFKD, marks, symbols and punctuation become a
/// space, nonspacing marks (`Mn`) vanish, the letters above are spelled out; `keep` stays.
pub fn remove_symbols_and_diacritics(s: &str, keep: &str) -> String {
    use GeneralCategory as G;
    let mut out = String::with_capacity(s.len());
    for c in s.nfkd() {
        if keep.contains(c) {
            out.push(c);
        } else if let Some(spelled) = additional_diacritic(c) {
            out.push_str(spelled);
        } else {
            match get_general_category(c) {
                G::NonspacingMark => {}
                G::SpacingMark
                | G::EnclosingMark
                | G::MathSymbol
                | G::CurrencySymbol
                | G::ModifierSymbol
                | G::OtherSymbol
                | G::ConnectorPunctuation
                | G::DashPunctuation
                | G::OpenPunctuation
                | G::ClosePunctuation
                | G::InitialPunctuation
                | G::FinalPunctuation
                | G::OtherPunctuation => out.push(' '),
                _ => out.push(c),
            }
        }
    }
    out
}

/// `EnglishSpellingNormalizer`: each word through the British-to-American map.
fn standardize_spellings(s: &str) -> String {
    static MAP: LazyLock<HashMap<String, String>> = LazyLock::new(|| serde_json::from_str(include_str!("english.json")).expect("english.json is a JSON object of strings"));
    s.split_whitespace().map(|w| MAP.get(w).map_or(w, String::as_str)).collect::<Vec<_>>().join(" ")
}

static NUMBERS: LazyLock<NumberNormalizer> = LazyLock::new(NumberNormalizer::new);

/// A number being read: Python keeps it as an `int` while arithmetic applies and as a `str` once
/// digits are only concatenated (`one oh one`, decimals).
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Int(BigInt),
    Str(String),
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Str(s) => s.clone(),
        }
    }

    /// `str(value or "")`: zero and the empty string are false.
    fn text_or_empty(value: &Option<Value>) -> String {
        match value {
            Some(Value::Int(i)) if *i == BigInt::from(0) => String::new(),
            Some(v) => v.text(),
            None => String::new(),
        }
    }
}

/// `Fraction(s)` of the decimal strings the normalizer builds (`12`, `1.5`, `12.`, `.5`): a
/// numerator and a power-of-ten denominator, or None where Python raises `ValueError`.
fn decimal_fraction(s: &str) -> Option<(BigInt, BigInt)> {
    let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || (whole.is_empty() && fraction.is_empty()) {
        return None;
    }
    let numerator: BigInt = format!("{whole}{fraction}").parse().ok()?;
    Some((numerator, BigInt::from(10).pow(fraction.len() as u32)))
}

/// `Fraction(value) * multiplier` when it is whole.
fn whole_product(value: &Value, multiplier: &BigInt) -> Option<BigInt> {
    let (numerator, denominator) = match value {
        Value::Int(i) => (i.clone(), BigInt::from(1)),
        Value::Str(s) => decimal_fraction(s)?,
    };
    let product = numerator * multiplier;
    (&product % &denominator == BigInt::from(0)).then(|| product / denominator)
}

/// `EnglishNumberNormalizer`: spelled-out numbers to digits, keeping suffixes (`1960s`, `32nd`),
/// currencies after the number (`$20`), `one` and `ones` spelled, single digits in a row read as
/// one number (`one oh one` is 101).
pub struct NumberNormalizer {
    zeros: HashSet<&'static str>,
    ones: HashMap<String, u32>,
    ones_suffixed: HashMap<String, (u32, &'static str)>,
    tens: HashMap<&'static str, u32>,
    tens_suffixed: HashMap<String, (u32, &'static str)>,
    multipliers: HashMap<&'static str, BigInt>,
    multipliers_suffixed: HashMap<String, (BigInt, &'static str)>,
    decimals: HashSet<String>,
    preceding_prefixers: HashMap<&'static str, &'static str>,
    following_prefixers: HashMap<&'static str, &'static str>,
    prefixes: HashSet<char>,
    words: HashSet<String>,
    and_a_half: Regex,
    letter_digit: Regex,
    digit_letter: Regex,
    digit_suffix: Regex,
    numeric: Regex,
    cents: Regex,
    only_cents: Regex,
    one: Regex,
}

const ONES: [&str; 19] = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [(&str, u32); 8] = [("twenty", 20), ("thirty", 30), ("forty", 40), ("fifty", 50), ("sixty", 60), ("seventy", 70), ("eighty", 80), ("ninety", 90)];
const MULTIPLIERS: [&str; 12] =
    ["hundred", "thousand", "million", "billion", "trillion", "quadrillion", "quintillion", "sextillion", "septillion", "octillion", "nonillion", "decillion"];
const SPECIALS: [&str; 4] = ["and", "double", "triple", "point"];
const SUFFIXERS: [&str; 2] = ["per", "percent"];

/// What a word of a number is, in the order `process_words` asks.
enum Word<'a> {
    Zero,
    One(u32),
    OneSuffixed(u32, &'static str),
    Ten(u32),
    TenSuffixed(u32, &'static str),
    Multiplier(&'a BigInt),
    MultiplierSuffixed(&'a BigInt, &'static str),
    PrecedingPrefixer(&'static str),
    FollowingPrefixer(&'static str),
    Suffixer,
    Special,
}

impl NumberNormalizer {
    fn new() -> NumberNormalizer {
        let ones: HashMap<String, u32> = ONES.iter().zip(1..).map(|(n, v)| (n.to_string(), v)).collect();
        let mut ones_suffixed: HashMap<String, (u32, &'static str)> =
            ONES.iter().zip(1..).map(|(n, v)| (if *n == "six" { "sixes".to_string() } else { format!("{n}s") }, (v, "s"))).collect();
        ones_suffixed.extend(
            [("zeroth", 0, "th"), ("first", 1, "st"), ("second", 2, "nd"), ("third", 3, "rd"), ("fifth", 5, "th"), ("twelfth", 12, "th")].map(|(n, v, s)| (n.to_string(), (v, s))),
        );
        for (name, value) in ONES.iter().zip(1u32..) {
            if value > 3 && value != 5 && value != 12 {
                ones_suffixed.insert(format!("{name}{}", if name.ends_with('t') { "h" } else { "th" }), (value, "th"));
            }
        }
        let tens: HashMap<&'static str, u32> = TENS.into_iter().collect();
        let mut tens_suffixed: HashMap<String, (u32, &'static str)> = TENS.iter().map(|(n, v)| (n.replace('y', "ies"), (*v, "s"))).collect();
        tens_suffixed.extend(TENS.iter().map(|(n, v)| (n.replace('y', "ieth"), (*v, "th"))));
        let multipliers: HashMap<&'static str, BigInt> =
            MULTIPLIERS.iter().zip([2u32, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33]).map(|(n, e)| (*n, BigInt::from(10).pow(e))).collect();
        let mut multipliers_suffixed: HashMap<String, (BigInt, &'static str)> = multipliers.iter().map(|(n, v)| (format!("{n}s"), (v.clone(), "s"))).collect();
        multipliers_suffixed.extend(multipliers.iter().map(|(n, v)| (format!("{n}th"), (v.clone(), "th"))));
        let zeros: HashSet<&'static str> = ["o", "oh", "zero"].into();
        let preceding_prefixers: HashMap<&'static str, &'static str> = [("minus", "-"), ("negative", "-"), ("plus", "+"), ("positive", "+")].into();
        let following_prefixers: HashMap<&'static str, &'static str> =
            [("pound", "£"), ("pounds", "£"), ("euro", "€"), ("euros", "€"), ("dollar", "$"), ("dollars", "$"), ("cent", "¢"), ("cents", "¢")].into();
        let prefixes = preceding_prefixers.values().chain(following_prefixers.values()).filter_map(|p| p.chars().next()).collect();
        let decimals: HashSet<String> = ones.keys().cloned().chain(tens.keys().map(|t| t.to_string())).chain(zeros.iter().map(|z| z.to_string())).collect();
        let mut words: HashSet<String> = decimals.clone();
        words.extend(ones_suffixed.keys().cloned());
        words.extend(tens_suffixed.keys().cloned());
        words.extend(multipliers.keys().map(|m| m.to_string()));
        words.extend(multipliers_suffixed.keys().cloned());
        words.extend(preceding_prefixers.keys().chain(following_prefixers.keys()).chain(SUFFIXERS.iter()).chain(SPECIALS.iter()).map(|w| w.to_string()));
        NumberNormalizer {
            zeros,
            ones,
            ones_suffixed,
            tens,
            tens_suffixed,
            multipliers,
            multipliers_suffixed,
            decimals,
            preceding_prefixers,
            following_prefixers,
            prefixes,
            words,
            and_a_half: re(r"\band\s+a\s+half\b"),
            letter_digit: re(r"([a-z])([0-9])"),
            digit_letter: re(r"([0-9])([a-z])"),
            digit_suffix: re(r"([0-9])\s+(st|nd|rd|th|s)\b"),
            numeric: re(r"^\d+(\.\d+)?$"),
            cents: re(r"([€£$])([0-9]+) (?:and )?¢([0-9]{1,2})\b"),
            only_cents: re(r"[€£$]0.([0-9]{1,2})\b"),
            one: re(r"\b1(s?)\b"),
        }
    }

    /// `EnglishNumberNormalizer()(s)`.
    pub fn normalize(&self, s: &str) -> String {
        let s = self.preprocess(s);
        let words: Vec<&str> = s.split_whitespace().collect();
        self.postprocess(&self.process_words(&words).join(" "))
    }

    fn is_numeric(&self, word: &str) -> bool {
        self.numeric.is_match(word).unwrap_or(false)
    }

    /// The number after a word worth `ones` (one to nineteen): a string number or one after a
    /// single digit gets it appended (replacing the zero of a preceding `twenty`), an int gets it
    /// added where that fills a zero.
    fn after_digits(&self, value: Option<Value>, ones: u32, prev: Option<&str>) -> Value {
        let prev_is = |set: &dyn Fn(&str) -> bool| prev.is_some_and(set);
        match value {
            None => Value::Int(ones.into()),
            Some(value) if matches!(value, Value::Str(_)) || prev_is(&|p| self.ones.contains_key(p)) => {
                let text = value.text();
                if prev_is(&|p| self.tens.contains_key(p)) && ones < 10 {
                    let mut chars = text.chars();
                    chars.next_back();
                    Value::Str(format!("{}{ones}", chars.as_str()))
                } else {
                    Value::Str(format!("{text}{ones}"))
                }
            }
            Some(Value::Int(v)) => add_or_append(v, ones),
            Some(value) => value,
        }
    }

    fn classify(&self, word: &str) -> Option<Word<'_>> {
        Some(if self.zeros.contains(word) {
            Word::Zero
        } else if let Some(&v) = self.ones.get(word) {
            Word::One(v)
        } else if let Some(&(v, s)) = self.ones_suffixed.get(word) {
            Word::OneSuffixed(v, s)
        } else if let Some(&v) = self.tens.get(word) {
            Word::Ten(v)
        } else if let Some(&(v, s)) = self.tens_suffixed.get(word) {
            Word::TenSuffixed(v, s)
        } else if let Some(v) = self.multipliers.get(word) {
            Word::Multiplier(v)
        } else if let Some((v, s)) = self.multipliers_suffixed.get(word) {
            Word::MultiplierSuffixed(v, s)
        } else if let Some(p) = self.preceding_prefixers.get(word) {
            Word::PrecedingPrefixer(p)
        } else if let Some(p) = self.following_prefixers.get(word) {
            Word::FollowingPrefixer(p)
        } else if SUFFIXERS.contains(&word) {
            Word::Suffixer
        } else if SPECIALS.contains(&word) {
            Word::Special
        } else {
            return None;
        })
    }

    /// `process_words`: one pass over the words with the number read so far (`value`) and a sign
    /// or currency waiting for it (`prefix`), as the Python generator does.
    fn process_words(&self, words: &[&str]) -> Vec<String> {
        let mut reader = Reader { out: Vec::new(), prefix: None, value: None };
        let mut skip = false;
        for (i, &current) in words.iter().enumerate() {
            if skip {
                skip = false;
                continue;
            }
            let prev = if i == 0 { None } else { Some(words[i - 1]) };
            let next = words.get(i + 1).copied();
            let next_in_words = next.is_some_and(|n| self.words.contains(n));
            let next_is_numeric = next.is_some_and(|n| self.is_numeric(n));
            let first = current.chars().next();
            let has_prefix = first.is_some_and(|c| self.prefixes.contains(&c));
            let without_prefix = if has_prefix { &current[first.map_or(0, char::len_utf8)..] } else { current };
            if self.is_numeric(without_prefix) {
                // arabic numbers, perhaps with a sign or currency and a fraction
                let Some((numerator, denominator)) = decimal_fraction(without_prefix) else {
                    // digits other than ASCII's: kept as a word (see the module's note)
                    reader.flush();
                    reader.emit(current.to_string());
                    continue;
                };
                if let Some(value) = &reader.value {
                    if let Value::Str(text) = value
                        && text.ends_with('.')
                    {
                        // decimals and IP addresses, concatenated
                        reader.value = Some(Value::Str(format!("{text}{current}")));
                        continue;
                    }
                    reader.flush();
                }
                if has_prefix {
                    reader.prefix = first.map(String::from);
                }
                reader.value = Some(if &numerator % &denominator == BigInt::from(0) { Value::Int(numerator / denominator) } else { Value::Str(without_prefix.to_string()) });
                continue;
            }
            let Some(word) = self.classify(current) else {
                reader.flush();
                reader.emit(current.to_string());
                continue;
            };
            match word {
                Word::Zero => reader.value = Some(Value::Str(format!("{}0", Value::text_or_empty(&reader.value)))),
                Word::One(ones) => {
                    let text = self.after_digits(reader.value.take(), ones, prev);
                    reader.value = Some(text);
                }
                Word::OneSuffixed(ones, suffix) => {
                    let text = self.after_digits(reader.value.take(), ones, prev).text();
                    reader.emit(format!("{text}{suffix}"));
                }
                Word::Ten(tens) => {
                    reader.value = Some(match reader.value.take() {
                        None => Value::Int(tens.into()),
                        Some(Value::Str(s)) => Value::Str(format!("{s}{tens}")),
                        Some(Value::Int(v)) => {
                            if &v % 100u32 == BigInt::from(0) {
                                Value::Int(v + tens)
                            } else {
                                Value::Str(format!("{v}{tens}"))
                            }
                        }
                    })
                }
                Word::TenSuffixed(tens, suffix) => {
                    let text = match reader.value.take() {
                        None => format!("{tens}{suffix}"),
                        Some(Value::Str(s)) => format!("{s}{tens}{suffix}"),
                        Some(Value::Int(v)) => {
                            if &v % 100u32 == BigInt::from(0) {
                                format!("{}{suffix}", v + tens)
                            } else {
                                format!("{v}{tens}{suffix}")
                            }
                        }
                    };
                    reader.emit(text);
                }
                Word::Multiplier(multiplier) => {
                    reader.value = Some(match reader.value.take() {
                        None => Value::Int(multiplier.clone()),
                        Some(value @ Value::Str(_)) => match whole_product(&value, multiplier) {
                            Some(p) => Value::Int(p),
                            None => {
                                reader.emit(value.text());
                                Value::Int(multiplier.clone())
                            }
                        },
                        Some(Value::Int(v)) if v == BigInt::from(0) => Value::Int(BigInt::from(0)),
                        Some(Value::Int(v)) => Value::Int(scale(v, multiplier)),
                    });
                }
                Word::MultiplierSuffixed(multiplier, suffix) => {
                    match reader.value.take() {
                        None => reader.emit(format!("{multiplier}{suffix}")),
                        Some(value @ Value::Str(_)) => match whole_product(&value, multiplier) {
                            Some(p) => reader.emit(format!("{p}{suffix}")),
                            None => {
                                reader.emit(value.text());
                                reader.emit(format!("{multiplier}{suffix}"));
                            }
                        },
                        Some(Value::Int(v)) => reader.emit(format!("{}{suffix}", scale(v, multiplier))),
                    }
                    reader.value = None;
                }
                Word::PrecedingPrefixer(prefix) => {
                    // a sign, only before a number
                    reader.flush();
                    if next_in_words || next_is_numeric {
                        reader.prefix = Some(prefix.to_string());
                    } else {
                        reader.emit(current.to_string());
                    }
                }
                Word::FollowingPrefixer(prefix) => {
                    // a currency, only after a number
                    if reader.value.is_some() {
                        reader.prefix = Some(prefix.to_string());
                        reader.flush();
                    } else {
                        reader.emit(current.to_string());
                    }
                }
                Word::Suffixer => match reader.value.take() {
                    Some(value) if current == "per" => {
                        if next == Some("cent") {
                            reader.emit(format!("{}%", value.text()));
                            skip = true;
                        } else {
                            reader.emit(value.text());
                            reader.emit(current.to_string());
                        }
                    }
                    Some(value) => reader.emit(format!("{}%", value.text())),
                    None => reader.emit(current.to_string()),
                },
                Word::Special => {
                    if !next_in_words && !next_is_numeric {
                        // only before a word that can be part of a number
                        reader.flush();
                        reader.emit(current.to_string());
                    } else if current == "and" {
                        // "and" after hundreds, thousands, ... is dropped
                        if !prev.is_some_and(|p| self.multipliers.contains_key(p)) {
                            reader.flush();
                            reader.emit(current.to_string());
                        }
                    } else if current == "double" || current == "triple" {
                        match next.filter(|n| self.ones.contains_key(*n) || self.zeros.contains(n)) {
                            Some(n) => {
                                let repeats = if current == "double" { 2 } else { 3 };
                                let digit = self.ones.get(n).copied().unwrap_or(0).to_string();
                                reader.value = Some(Value::Str(format!("{}{}", Value::text_or_empty(&reader.value), digit.repeat(repeats))));
                                skip = true;
                            }
                            None => {
                                reader.flush();
                                reader.emit(current.to_string());
                            }
                        }
                    } else if next.is_some_and(|n| self.decimals.contains(n)) || next_is_numeric {
                        // "point"
                        reader.value = Some(Value::Str(format!("{}.", Value::text_or_empty(&reader.value))));
                    }
                }
            }
        }
        reader.flush();
        reader.out
    }

    /// `preprocess`: "<number> and a half" read as "point five", spaces between digits and
    /// letters except before a suffix (`1960s`, `21st`).
    fn preprocess(&self, s: &str) -> String {
        let segments: Vec<&str> = split(&self.and_a_half, s);
        let mut results: Vec<&str> = Vec::new();
        for (i, segment) in segments.iter().enumerate() {
            if segment.trim().is_empty() {
                continue;
            }
            results.push(segment);
            if i + 1 < segments.len() {
                let last_word = segment.split_whitespace().next_back().unwrap_or("");
                results.push(if self.decimals.contains(last_word) || self.multipliers.contains_key(last_word) { "point five" } else { "and a half" });
            }
        }
        let s = results.join(" ");
        let s = sub(&self.letter_digit, "${1} ${2}", &s);
        let s = sub(&self.digit_letter, "${1} ${2}", &s);
        sub(&self.digit_suffix, "${1}${2}", &s)
    }

    /// `postprocess`: "$2 and ¢7" as "$2.07", "$0.07" as "¢7", and `1` / `1s` spelled out.
    fn postprocess(&self, s: &str) -> String {
        let s = self.cents.replace_all(s, |c: &Captures| match c[3].parse::<u32>() {
            Ok(cents) => format!("{}{}.{cents:02}", &c[1], &c[2]),
            Err(_) => c[0].to_string(),
        });
        let s = self.only_cents.replace_all(&s, |c: &Captures| match c[1].parse::<u32>() {
            Ok(cents) => format!("¢{cents}"),
            Err(_) => c[0].to_string(),
        });
        sub(&self.one, "one${1}", &s)
    }
}

/// `re.split(pattern, s)` of a pattern without groups.
fn split<'s>(pattern: &Regex, s: &'s str) -> Vec<&'s str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for m in pattern.find_iter(s).flatten() {
        parts.push(&s[start..m.start()]);
        start = m.end();
    }
    parts.push(&s[start..]);
    parts
}

/// A digit after an int: added where it fills a zero (`twenty` `one`, `hundred` `eleven`), else
/// appended (`nineteen` `one` is 191).
fn add_or_append(value: BigInt, ones: u32) -> Value {
    let modulus = if ones < 10 { 10u32 } else { 100 };
    if &value % modulus == BigInt::from(0) { Value::Int(value + ones) } else { Value::Str(format!("{value}{ones}")) }
}

/// `before + residual * multiplier`: the last three digits scaled (`two thousand five hundred`).
fn scale(value: BigInt, multiplier: &BigInt) -> BigInt {
    let thousand = BigInt::from(1000);
    let before = &value / &thousand * &thousand;
    let residual = &value % &thousand;
    before + residual * multiplier
}

/// The number being read and the words written so far.
struct Reader {
    out: Vec<String>,
    prefix: Option<String>,
    value: Option<Value>,
}

impl Reader {
    /// `yield output(result)`: the waiting prefix goes in front; value and prefix are cleared.
    fn emit(&mut self, result: String) {
        let text = match self.prefix.take() {
            Some(prefix) => format!("{prefix}{result}"),
            None => result,
        };
        self.value = None;
        self.out.push(text);
    }

    /// `if value is not None: yield output(value)`.
    fn flush(&mut self) {
        if let Some(value) = self.value.take() {
            self.emit(value.text());
        }
    }
}

#[cfg(test)]
#[path = "normalizer_tests.rs"]
mod tests;
