//! Our `accuracy.txt` lines against the submission checker's own patterns (`ACC_PATTERN`, copied
//! into the round table `rounds/v6.1.toml` `[accuracy_patterns]`), applied the way
//! `accuracy_check.py` applies them: `re.match(pattern, line)` on each line, group 1 parsed as the
//! accuracy.
//!
//! The patterns are Python `re` syntax, so the test carries a small backtracking matcher for the
//! subset they use (anchors, literals and escapes, `.`, `\d \s \w`, classes, groups, alternation,
//! `* + ?`; a `{` that opens no `{m,n}` is literal, as in Python). It is test code only.

use super::bert::accuracy::SquadScore;
use super::resnet50::accuracy::ImagenetScore;

#[derive(Debug, Clone)]
enum Node {
    Char(char),
    Any,
    Class(Vec<(char, char)>, Vec<char>, bool),
    Start,
    End,
    Group(Box<Node>, Option<usize>),
    Alt(Vec<Node>),
    Concat(Vec<Node>),
    Repeat(Box<Node>, usize, Option<usize>),
}

struct Parser {
    s: Vec<char>,
    i: usize,
    groups: usize,
}

impl Parser {
    fn alt(&mut self) -> Node {
        let mut options = vec![self.concat()];
        while self.s.get(self.i) == Some(&'|') {
            self.i += 1;
            options.push(self.concat());
        }
        if options.len() == 1 { options.pop().unwrap() } else { Node::Alt(options) }
    }

    fn concat(&mut self) -> Node {
        let mut items = Vec::new();
        while let Some(&c) = self.s.get(self.i) {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom();
            items.push(self.quantified(atom));
        }
        Node::Concat(items)
    }

    fn quantified(&mut self, atom: Node) -> Node {
        let (min, max) = match self.s.get(self.i) {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            _ => return atom,
        };
        self.i += 1;
        Node::Repeat(Box::new(atom), min, max)
    }

    fn escape(c: char) -> Node {
        match c {
            'd' => Node::Class(vec![('0', '9')], vec![], false),
            's' => Node::Class(vec![], vec![' ', '\t', '\n', '\r', '\x0b', '\x0c'], false),
            'w' => Node::Class(vec![('a', 'z'), ('A', 'Z'), ('0', '9')], vec!['_'], false),
            c => Node::Char(c),
        }
    }

    fn atom(&mut self) -> Node {
        let c = self.s[self.i];
        self.i += 1;
        match c {
            '^' => Node::Start,
            '$' => Node::End,
            '.' => Node::Any,
            '\\' => {
                let e = self.s[self.i];
                self.i += 1;
                Parser::escape(e)
            }
            '(' => {
                let index = if self.s[self.i..].starts_with(&['?', ':']) {
                    self.i += 2;
                    None
                } else {
                    self.groups += 1;
                    Some(self.groups)
                };
                let inner = self.alt();
                assert_eq!(self.s.get(self.i), Some(&')'), "unbalanced group");
                self.i += 1;
                Node::Group(Box::new(inner), index)
            }
            '[' => {
                let negated = self.s[self.i] == '^';
                if negated {
                    self.i += 1;
                }
                let (mut ranges, mut singles) = (Vec::new(), Vec::new());
                while self.s[self.i] != ']' {
                    let mut c = self.s[self.i];
                    self.i += 1;
                    if c == '\\' {
                        match Parser::escape(self.s[self.i]) {
                            Node::Class(r, s, _) => {
                                ranges.extend(r);
                                singles.extend(s);
                                self.i += 1;
                                continue;
                            }
                            Node::Char(e) => c = e,
                            _ => unreachable!(),
                        }
                        self.i += 1;
                    }
                    if self.s[self.i] == '-' && self.s[self.i + 1] != ']' {
                        ranges.push((c, self.s[self.i + 1]));
                        self.i += 2;
                    } else {
                        singles.push(c);
                    }
                }
                self.i += 1;
                Node::Class(ranges, singles, negated)
            }
            c => Node::Char(c),
        }
    }
}

type Caps = Vec<Option<(usize, usize)>>;

fn matches(node: &Node, s: &[char], pos: usize, caps: &mut Caps, k: &mut dyn FnMut(usize, &mut Caps) -> bool) -> bool {
    match node {
        Node::Char(c) => s.get(pos) == Some(c) && k(pos + 1, caps),
        Node::Any => s.get(pos).is_some_and(|&c| c != '\n') && k(pos + 1, caps),
        Node::Class(ranges, singles, negated) => match s.get(pos) {
            Some(&c) => {
                let inside = ranges.iter().any(|&(a, b)| a <= c && c <= b) || singles.contains(&c);
                inside != *negated && k(pos + 1, caps)
            }
            None => false,
        },
        Node::Start => pos == 0 && k(pos, caps),
        Node::End => (pos == s.len() || (pos + 1 == s.len() && s[pos] == '\n')) && k(pos, caps),
        Node::Group(inner, index) => matches(inner, s, pos, caps, &mut |end, caps: &mut Caps| {
            let saved = index.map(|i| caps[i]);
            if let Some(i) = index {
                caps[*i] = Some((pos, end));
            }
            if k(end, caps) {
                return true;
            }
            if let (Some(i), Some(old)) = (index, saved) {
                caps[*i] = old;
            }
            false
        }),
        Node::Alt(options) => options.iter().any(|o| matches(o, s, pos, caps, k)),
        Node::Concat(items) => concat(items, s, pos, caps, k),
        Node::Repeat(inner, min, max) => repeat(inner, *min, *max, 0, s, pos, caps, k),
    }
}

fn concat(items: &[Node], s: &[char], pos: usize, caps: &mut Caps, k: &mut dyn FnMut(usize, &mut Caps) -> bool) -> bool {
    match items.split_first() {
        None => k(pos, caps),
        Some((first, rest)) => matches(first, s, pos, caps, &mut |p, caps: &mut Caps| concat(rest, s, p, caps, k)),
    }
}

#[allow(clippy::too_many_arguments)]
fn repeat(inner: &Node, min: usize, max: Option<usize>, count: usize, s: &[char], pos: usize, caps: &mut Caps, k: &mut dyn FnMut(usize, &mut Caps) -> bool) -> bool {
    // Greedy: one more repetition first (if it consumes input), then stop.
    if max.is_none_or(|m| count < m) && matches(inner, s, pos, caps, &mut |p, caps: &mut Caps| p > pos && repeat(inner, min, max, count + 1, s, p, caps, k)) {
        return true;
    }
    count >= min && k(pos, caps)
}

/// `re.match(pattern, line).group(1)`.
fn re_match_group1(pattern: &str, line: &str) -> Option<String> {
    let mut p = Parser { s: pattern.chars().collect(), i: 0, groups: 0 };
    let ast = p.alt();
    assert_eq!(p.i, p.s.len(), "pattern {pattern} not fully parsed");
    let s: Vec<char> = line.chars().collect();
    let mut caps: Caps = vec![None; p.groups + 1];
    let mut found = None;
    if matches(&ast, &s, 0, &mut caps, &mut |_, caps: &mut Caps| {
        found = caps.get(1).copied().flatten();
        true
    }) {
        found.map(|(a, b)| s[a..b].iter().collect())
    } else {
        None
    }
}

fn round_patterns() -> toml::Table {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rounds/v6.1.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let round: toml::Table = text.parse().unwrap();
    round["accuracy_patterns"].as_table().expect("[accuracy_patterns]").clone()
}

#[test]
fn the_matcher_behaves_like_python_re() {
    assert_eq!(re_match_group1(r"^a(b+)c", "abbbc..."), Some("bbb".into()));
    assert_eq!(re_match_group1(r"^(?:x|ab)(\d+)", "ab42z"), Some("42".into()));
    assert_eq!(re_match_group1(r#"^{[\"\']k[\"\']\:\s*([\d\.]+)}"#, "{'k': 1.5}"), Some("1.5".into()));
    assert_eq!(re_match_group1(r"^a(\d)", "b1"), None);
    // Backtracking into a greedy repeat.
    assert_eq!(re_match_group1(r"^(.*)=(\d)", "a=b=3"), Some("a=b".into()));
}

#[test]
fn imagenet_lines_match_the_checkers_acc_pattern() {
    let pattern = round_patterns()["acc"].as_str().unwrap().to_string();
    for (good, total) in [(38228, 50000), (0, 0), (50000, 50000), (1, 3)] {
        let score = ImagenetScore { good, total, entries: total, mistakes: vec![] };
        let txt = score.accuracy_txt();
        let line = txt.lines().next().unwrap();
        let got = re_match_group1(&pattern, line).unwrap_or_else(|| panic!("{pattern} does not match {line}"));
        assert_eq!(got.parse::<f64>().unwrap(), format!("{:.3}", score.accuracy_percent()).parse::<f64>().unwrap(), "{line}");
    }
    // The checker's resnet target (76.46 x 0.99) against a real-looking line.
    let line = ImagenetScore { good: 38228, total: 50000, entries: 50000, mistakes: vec![] }.accuracy_line();
    assert!(re_match_group1(&pattern, &line).unwrap().parse::<f64>().unwrap() >= 76.46 * 0.99);
}

#[test]
fn squad_lines_match_the_checkers_f1_pattern() {
    let pattern = round_patterns()["F1"].as_str().unwrap().to_string();
    for (em, f1) in [(83.67076631977294, 90.87487229720105), (100.0 / 3.0, 60.0), (0.0, 0.0), (100.0, 100.0)] {
        let score = SquadScore { exact_match: em, f1, questions: 1, features_logged: 1, features_total: 1, entries: 1, predictions: vec![] };
        let txt = score.accuracy_txt();
        let line = txt.lines().next().unwrap();
        let got = re_match_group1(&pattern, line).unwrap_or_else(|| panic!("{pattern} does not match {line}"));
        assert_eq!(got.parse::<f64>().unwrap(), f1, "{line}");
    }
}

#[test]
fn summarization_lines_match_the_checkers_llm_patterns() {
    use super::llm::summarization::{ResultStyle, SummarizationScore};
    let patterns = round_patterns();
    let score = SummarizationScore { rouge1: 44.4465, rouge2: 22.0638, rouge_l: 28.625, rouge_lsum: 42.0251, gen_len: 29614748, gen_num: 24576, gen_tok_len: 7399575 };
    for style in [ResultStyle::Llama2, ResultStyle::Llama31] {
        let scored = score.scored(style);
        let line = scored.text.lines().find(|l| l.starts_with('{')).unwrap();
        for (metric, value) in &scored.metrics {
            let pattern = patterns[metric.as_str()].as_str().unwrap();
            let got = re_match_group1(pattern, line).unwrap_or_else(|| panic!("{metric}: {pattern} does not match {line}"));
            assert_eq!(got.parse::<f64>().unwrap(), *value, "{metric} in {line}");
        }
        assert_eq!(scored.metrics.iter().any(|(m, _)| m == "TOKENS_PER_SAMPLE"), style == ResultStyle::Llama2);
    }
    assert!(score.scored(ResultStyle::Llama2).metrics.contains(&("TOKENS_PER_SAMPLE".to_string(), 301.1)));
}
