//! MATH500 grading as deepseek-r1's evaluation calls it: PRM800K's `grade_answer`
//! (openai/prm800k 7ecc794, `grading/grader.py` with `grading/math_normalize.py`). An answer is
//! right when it normalises to the ground truth's string under Hendrycks' MATH rules
//! ([`normalize_answer`], exact), or under the grader's rules ([`normalize`]), or, element by element
//! for tuples and intervals, when the difference of the two expressions is zero.
//!
//! Where PRM800K calls Python libraries this port is narrower, and says so here:
//! - LaTeX to text (`pylatexenc`'s `latex_to_text`) is done for the macros answers use: `\frac`,
//!   `\sqrt`, `\pi`, `\infty`, `\cup`, `\cdot`, `\times`, `\pm`, comparison signs, text macros
//!   (their content kept), spacing macros, escaped symbols and groups; other macros are dropped,
//!   as pylatexenc drops unknown ones.
//! - "sympy simplifies the difference to 0" is decided by evaluating the difference, parsed as
//!   sympy would (`^` as power, implicit multiplication, `sqrt`, `pi`), at three points for its at
//!   most two unknowns: zero at all of them is equal. Identities sympy cannot prove are equal here;
//!   an expression this parser does not know (functions other than `sqrt`) is unequal.

use super::answers::py_strip;
use crate::accuracy::punkt::py_space;
use fancy_regex::Regex;
use std::sync::LazyLock;

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("grader pattern compiles")
}

/// `re.sub(pattern, replacement, text)`.
fn sub(re: &Regex, replacement: &str, text: &str) -> String {
    re.replace_all(text, replacement).into_owned()
}

static TEXT_WRAPPED: LazyLock<Regex> = LazyLock::new(|| regex(r"^\\text\{(?P<text>.+?)\}\n?\z"));

/// Hendrycks' `normalize_answer`: the stripped answer, unwrapped from `\text{}`, through
/// `_strip_string`; where that raises (a units split in three, a `\sqrt` or `\frac` at the end),
/// the unwrapped answer as it is.
pub fn normalize_answer(answer: &str) -> String {
    let answer = py_strip(answer);
    let answer = match TEXT_WRAPPED.captures(answer).ok().flatten() {
        Some(c) => py_strip(c.name("text").unwrap().as_str()),
        None => answer,
    };
    strip_string(answer).unwrap_or_else(|| answer.to_string())
}

/// `_strip_string`; `None` where the Python raises.
fn strip_string(s: &str) -> Option<String> {
    let mut s = s.replace('\n', "").replace("\\!", "").replace("\\\\", "\\").replace("tfrac", "frac").replace("dfrac", "frac");
    for gone in ["\\left", "\\right", "^{\\circ}", "^\\circ", "\\$"] {
        s = s.replace(gone, "");
    }
    if s.contains("\\text{ ") {
        let parts: Vec<&str> = s.split("\\text{ ").collect();
        if parts.len() != 2 {
            return None;
        }
        s = parts[0].to_string();
    }
    s = s.replace("\\%", "").replace(" .", " 0.").replace("{.", "{0.");
    if s.is_empty() {
        return Some(s);
    }
    if s.starts_with('.') {
        s.insert(0, '0');
    }
    let sides: Vec<&str> = s.split('=').collect();
    if sides.len() == 2 && sides[0].chars().count() <= 2 {
        s = sides[1].to_string();
    }
    let s = fix_sqrt(&s)?.replace(' ', "");
    let s = fix_fracs(&s)?;
    let s = if s == "0.5" { "\\frac{1}{2}".to_string() } else { s };
    Some(fix_a_slash_b(&s))
}

/// `\sqrt3` -> `\sqrt{3}`.
fn fix_sqrt(s: &str) -> Option<String> {
    let mut parts = s.split("\\sqrt");
    let mut out = parts.next().unwrap().to_string();
    for part in parts {
        let first = part.chars().next()?;
        if first == '{' {
            out.push_str("\\sqrt");
            out.push_str(part);
        } else {
            out.push_str(&format!("\\sqrt{{{first}}}{}", &part[first.len_utf8()..]));
        }
    }
    Some(out)
}

/// `\frac12` -> `\frac{1}{2}`, `\frac1{72}` -> `\frac{1}{72}`; the input unchanged when a `\frac`
/// is followed by one character only.
fn fix_fracs(s: &str) -> Option<String> {
    let mut parts = s.split("\\frac");
    let mut out = parts.next().unwrap().to_string();
    for part in parts {
        out.push_str("\\frac");
        let mut chars = part.chars();
        let a = chars.next()?;
        if a == '{' {
            out.push_str(part);
            continue;
        }
        let Some(b) = chars.next() else { return Some(s.to_string()) };
        let rest = chars.as_str();
        if b == '{' {
            out.push_str(&format!("{{{a}}}{b}{rest}"));
        } else {
            out.push_str(&format!("{{{a}}}{{{b}}}{rest}"));
        }
    }
    Some(out)
}

/// `a/b` of two integers written as Python prints them -> `\frac{a}{b}`.
fn fix_a_slash_b(s: &str) -> String {
    static CANONICAL_INT: LazyLock<Regex> = LazyLock::new(|| regex(r"^(?:0|-?[1-9][0-9]*)\z"));
    let parts: Vec<&str> = s.split('/').collect();
    if parts.len() == 2 && parts.iter().all(|p| CANONICAL_INT.is_match(p).unwrap_or(false)) {
        return format!("\\frac{{{}}}{{{}}}", parts[0], parts[1]);
    }
    s.to_string()
}

static UNITS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    ["degree", "cm", "centimeter", "meter", "mile", "second", "minute", "hour", "day", "week", "month", "year", "foot", "feet", "inch", "yard"]
        .iter()
        .map(|unit| regex(&format!(r"{unit}(es)?(s)? *(\^[0-9]+)?")))
        .collect()
});
static CARET_CIRC: LazyLock<Regex> = LazyLock::new(|| regex(r"\^ *\\circ"));
static THIN_SPACE_COMMA: LazyLock<Regex> = LazyLock::new(|| regex(r",\\! *"));
static MINUS_SPACES: LazyLock<Regex> = LazyLock::new(|| regex(r"- *"));
static MIXED_NUMBER: LazyLock<Regex> = LazyLock::new(|| regex(r"([0-9]) +([0-9])"));
static PROPER_COMMA: LazyLock<Regex> = LazyLock::new(|| regex(r"(\d)(,)(\d\d\d)($|\D)"));

/// The grader's `_normalize`.
pub fn normalize(expr: &str) -> String {
    let mut e = match TEXT_WRAPPED.captures(expr).ok().flatten() {
        Some(c) => c.name("text").unwrap().as_str().to_string(),
        None => expr.to_string(),
    };
    e = e.replace("\\%", "%").replace("\\$", "$").replace(['$', '%'], "").replace(" or ", " , ").replace(" and ", " , ");
    e = e.replace("million", "*10^6").replace("billion", "*10^9").replace("trillion", "*10^12");
    for unit in UNITS.iter() {
        e = sub(unit, "", &e);
    }
    e = sub(&CARET_CIRC, "", &e);
    if e.starts_with('{') && e.ends_with('}') && !e.is_empty() {
        e = e[1..e.len() - 1].to_string();
    }
    e = sub(&THIN_SPACE_COMMA, "", &e);
    if let Some(x) = python_float(&e).filter(|x| is_int(*x)) {
        e = python_int_text(x.round_ties_even());
    }
    if e.contains('\\') {
        e = latex_to_text(&e);
    }
    e = sub(&MINUS_SPACES, "-", &e);
    e = sub(&MIXED_NUMBER, "$1+$2", &e);
    e = e.replace([' ', '{', '}'], "").to_lowercase();
    if let Some(x) = python_float(&e.replace(',', "")).filter(|_| str_is_int(&e)) {
        e = python_int_text(x.trunc());
    }
    e
}

/// Python's `float(text)`: surrounding white space, `_` between digits, `inf`/`nan` in any case.
fn python_float(text: &str) -> Option<f64> {
    let t = text.trim_matches(py_space);
    let bytes = t.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' && !(i > 0 && bytes[i - 1].is_ascii_digit() && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            return None;
        }
    }
    let t = t.replace('_', "");
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if body.len() + 1 < lower.len() || body.is_empty() {
        return None;
    }
    if ["inf", "infinity", "nan"].contains(&body) || body.bytes().all(|b| b.is_ascii_digit() || b"e.+-".contains(&b)) { t.parse().ok() } else { None }
}

/// `abs(x - int(round(x))) <= 1e-7` (false for infinities and NaN, where `int()` raises).
fn is_int(x: f64) -> bool {
    x.is_finite() && (x - x.round_ties_even()).abs() <= 1e-7
}

/// `str(int(x))` of a whole float.
fn python_int_text(x: f64) -> String {
    if x == 0.0 { "0".into() } else { format!("{x:.0}") }
}

/// `_strip_properly_formatted_commas`: `1,234,567` -> `1234567`, tuple commas kept.
fn strip_proper_commas(expr: &str) -> String {
    let mut e = expr.to_string();
    loop {
        let next = sub(&PROPER_COMMA, "$1$3$4", &e);
        if next == e {
            return e;
        }
        e = next;
    }
}

fn str_is_int(x: &str) -> bool {
    python_float(&strip_proper_commas(x)).is_some_and(is_int)
}

fn is_frac(expr: &str) -> bool {
    static FRAC: LazyLock<Regex> = LazyLock::new(|| regex(r"^-?[0-9]+.?/0*[1-9][0-9]*.?\n?\z"));
    FRAC.is_match(expr).unwrap_or(false)
}

/// `split_tuple`: the elements of `(a, b)` / `[a, b)` ..., else the expression itself.
fn split_tuple(expr: &str) -> Vec<String> {
    let e = strip_proper_commas(expr);
    let chars: Vec<char> = e.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let bracket = |c: char| "()[]".contains(c);
    if chars.len() > 2 && bracket(chars[0]) && bracket(chars[chars.len() - 1]) && !chars[1..chars.len() - 1].iter().any(|&c| bracket(c)) {
        let inner: String = chars[1..chars.len() - 1].iter().collect();
        return inner.split(',').map(|s| py_strip(s).to_string()).collect();
    }
    vec![e]
}

/// PRM800K's `grade_answer(given_answer, ground_truth)`.
pub fn grade_answer(given: &str, ground_truth: &str) -> bool {
    if normalize_answer(ground_truth) == normalize_answer(given) {
        return true;
    }
    let (truth, given) = (normalize(ground_truth), normalize(given));
    if truth == given {
        return true;
    }
    if given.is_empty() {
        return false;
    }
    let (truth_elems, given_elems) = (split_tuple(&truth), split_tuple(&given));
    if truth_elems.len() > 1 && (truth.chars().next() != given.chars().next() || truth.chars().last() != given.chars().last()) {
        return false;
    }
    if truth_elems.len() != given_elems.len() {
        return false;
    }
    truth_elems.iter().zip(&given_elems).all(|(t, g)| {
        if is_frac(t) && is_frac(g) {
            t == g
        } else if str_is_int(t) != str_is_int(g) {
            false
        } else {
            equal_as_expressions(t, g)
        }
    })
}

/// `are_equal_under_sympy`: `should_allow_eval` as PRM800K has it, then the difference evaluated.
fn equal_as_expressions(truth: &str, given: &str) -> bool {
    static BAD: LazyLock<Regex> = LazyLock::new(|| regex(r"\^[0-9]+\^|\^[0-9][0-9]+"));
    let expr = format!("({truth})-({given})");
    let letters: std::collections::HashSet<char> = expr.replace("sqrt", "").replace("frac", "").chars().filter(|c| c.is_alphabetic()).collect();
    if letters.len() > 2 || expr.contains("^{") || expr.contains("^(") || BAD.is_match(&expr).unwrap_or(true) {
        return false;
    }
    let Some(parsed) = expression::parse(&expr) else { return false };
    let mut symbols: Vec<char> = letters.into_iter().collect();
    symbols.sort_unstable();
    // Three points, none a small integer or a root of a low-degree polynomial by accident.
    const POINTS: [[f64; 2]; 3] = [[0.734_182_9, 1.913_275_3], [2.618_034_7, -0.577_215_6], [-1.414_135_2, 3.302_775_6]];
    POINTS.iter().all(|point| match parsed.eval(&|c| symbols.iter().position(|s| *s == c).map(|i| point[i])) {
        Some(v) => v.abs() <= 1e-9,
        None => false,
    })
}

/// pylatexenc's `latex_to_text` for the macros math answers use (see the module notes), after
/// PRM800K's own replacements (`\tfrac`/`\dfrac` as `\frac`, a space before `\frac`) and with
/// its character substitutions (`√` -> `sqrt`, `π` -> `pi`, ...).
fn latex_to_text(expr: &str) -> String {
    let expr = expr.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac").replace("\\frac", " \\frac");
    let text = latex::to_text(&expr);
    let text = text.replace('√', "sqrt").replace('π', "pi").replace('∞', "inf").replace('∪', "U").replace(['·', '×'], "*");
    py_strip(&text).to_string()
}

mod latex {
    /// Text of `expr`: groups unwrapped, macros replaced by their text.
    pub fn to_text(expr: &str) -> String {
        let chars: Vec<char> = expr.chars().collect();
        let mut at = 0;
        let mut out = String::new();
        while at < chars.len() {
            out.push_str(&node(&chars, &mut at));
        }
        out
    }

    /// The text of the node at `*at` (a group, a macro with its arguments, or a character).
    fn node(chars: &[char], at: &mut usize) -> String {
        let c = chars[*at];
        *at += 1;
        match c {
            '{' => {
                let mut out = String::new();
                while *at < chars.len() && chars[*at] != '}' {
                    out.push_str(&node(chars, at));
                }
                *at += 1;
                out
            }
            '\\' => macro_text(chars, at),
            c => c.to_string(),
        }
    }

    fn argument(chars: &[char], at: &mut usize) -> String {
        while *at < chars.len() && chars[*at] == ' ' {
            *at += 1;
        }
        if *at < chars.len() { node(chars, at) } else { String::new() }
    }

    fn macro_text(chars: &[char], at: &mut usize) -> String {
        let start = *at;
        while *at < chars.len() && chars[*at].is_ascii_alphabetic() {
            *at += 1;
        }
        if *at == start {
            // A one-character macro: `\,`, `\%`, `\{`, ...
            let Some(&c) = chars.get(*at) else { return String::new() };
            *at += 1;
            return match c {
                ',' | ';' | ':' | ' ' | '!' => " ".into(),
                c => c.to_string(),
            };
        }
        let name: String = chars[start..*at].iter().collect();
        let symbol = match name.as_str() {
            "frac" | "dfrac" | "tfrac" => {
                let (a, b) = (argument(chars, at), argument(chars, at));
                return format!("{a}/{b}");
            }
            "sqrt" => return format!("√({})", argument(chars, at)),
            "text" | "textbf" | "textit" | "textrm" | "mathrm" | "mathbf" | "mathit" | "mbox" | "operatorname" | "boxed" => return argument(chars, at),
            "pi" => "π",
            "infty" => "∞",
            "cup" => "∪",
            "cdot" => "·",
            "times" => "×",
            "pm" => "±",
            "le" | "leq" => "≤",
            "ge" | "geq" => "≥",
            "neq" | "ne" => "≠",
            "circ" => "∘",
            "quad" | "qquad" => " ",
            _ => "",
        };
        symbol.into()
    }
}

mod expression {
    //! Expressions as sympy's `parse_expr` with implicit multiplication reads the normalised
    //! answers: numbers, one-letter unknowns, `pi`, `sqrt(...)`, `+ - * / ^ **`, parentheses.

    pub enum Expr {
        Number(f64),
        Symbol(char),
        Neg(Box<Expr>),
        Binary(char, Box<Expr>, Box<Expr>),
        Sqrt(Box<Expr>),
    }

    impl Expr {
        pub fn eval(&self, symbol: &dyn Fn(char) -> Option<f64>) -> Option<f64> {
            let v = match self {
                Expr::Number(v) => *v,
                Expr::Symbol(c) => symbol(*c)?,
                Expr::Neg(e) => -e.eval(symbol)?,
                Expr::Sqrt(e) => e.eval(symbol)?.sqrt(),
                Expr::Binary(op, a, b) => {
                    let (a, b) = (a.eval(symbol)?, b.eval(symbol)?);
                    match op {
                        '+' => a + b,
                        '-' => a - b,
                        '*' => a * b,
                        '/' => a / b,
                        _ => a.powf(b),
                    }
                }
            };
            v.is_finite().then_some(v)
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    enum Token {
        Number(f64),
        Name(String),
        Op(char),
        Open,
        Close,
    }

    fn tokens(text: &str) -> Option<Vec<Token>> {
        let chars: Vec<char> = text.replace("**", "^").chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                    i += 1;
                }
                out.push(Token::Number(chars[start..i].iter().collect::<String>().parse().ok()?));
                continue;
            }
            i += 1;
            out.push(match c {
                c if c.is_alphabetic() => {
                    let start = i - 1;
                    while i < chars.len() && chars[i].is_alphabetic() {
                        i += 1;
                    }
                    Token::Name(chars[start..i].iter().collect())
                }
                '+' | '-' | '*' | '/' | '^' => Token::Op(c),
                '(' => Token::Open,
                ')' => Token::Close,
                c if c.is_whitespace() => continue,
                _ => return None,
            });
        }
        Some(out)
    }

    pub fn parse(text: &str) -> Option<Expr> {
        let tokens = tokens(text)?;
        let mut parser = Parser { tokens, at: 0 };
        let e = parser.sum()?;
        (parser.at == parser.tokens.len()).then_some(e)
    }

    struct Parser {
        tokens: Vec<Token>,
        at: usize,
    }

    impl Parser {
        fn peek(&self) -> Option<&Token> {
            self.tokens.get(self.at)
        }

        fn sum(&mut self) -> Option<Expr> {
            let mut e = self.product()?;
            while let Some(Token::Op(op @ ('+' | '-'))) = self.peek().cloned() {
                self.at += 1;
                e = Expr::Binary(op, Box::new(e), Box::new(self.product()?));
            }
            Some(e)
        }

        /// Factors joined by `*`, `/` or nothing (implicit multiplication).
        fn product(&mut self) -> Option<Expr> {
            let mut e = self.unary()?;
            loop {
                match self.peek() {
                    Some(Token::Op(op @ ('*' | '/'))) => {
                        let op = *op;
                        self.at += 1;
                        e = Expr::Binary(op, Box::new(e), Box::new(self.unary()?));
                    }
                    Some(Token::Number(_) | Token::Name(_) | Token::Open) => e = Expr::Binary('*', Box::new(e), Box::new(self.power()?)),
                    _ => return Some(e),
                }
            }
        }

        fn unary(&mut self) -> Option<Expr> {
            match self.peek() {
                Some(Token::Op('-')) => {
                    self.at += 1;
                    Some(Expr::Neg(Box::new(self.unary()?)))
                }
                Some(Token::Op('+')) => {
                    self.at += 1;
                    self.unary()
                }
                _ => self.power(),
            }
        }

        /// `a ^ b`, right-associative, binding tighter than a leading minus (`-2^2` is -4).
        fn power(&mut self) -> Option<Expr> {
            let base = self.atom()?;
            if let Some(Token::Op('^')) = self.peek() {
                self.at += 1;
                return Some(Expr::Binary('^', Box::new(base), Box::new(self.unary()?)));
            }
            Some(base)
        }

        fn atom(&mut self) -> Option<Expr> {
            let token = self.peek()?.clone();
            self.at += 1;
            match token {
                Token::Number(v) => Some(Expr::Number(v)),
                Token::Open => {
                    let e = self.sum()?;
                    (self.peek() == Some(&Token::Close)).then(|| self.at += 1)?;
                    Some(e)
                }
                Token::Name(name) => self.name(&name),
                _ => None,
            }
        }

        /// A name: `sqrt` applied to what follows, `pi`, else one unknown per letter (sympy's
        /// `split_symbols`).
        fn name(&mut self, name: &str) -> Option<Expr> {
            match name {
                "sqrt" => Some(Expr::Sqrt(Box::new(self.power()?))),
                "pi" => Some(Expr::Number(std::f64::consts::PI)),
                _ => {
                    let mut letters = name.chars().map(Expr::Symbol);
                    let first = letters.next()?;
                    Some(letters.fold(first, |e, s| Expr::Binary('*', Box::new(e), Box::new(s))))
                }
            }
        }
    }
}
