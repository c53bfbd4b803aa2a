#!/usr/bin/env python3
"""Generate ROUGE accuracy fixtures from the official Python libraries.

What it makes (in tests/fixtures/accuracy/):

  porter_nltk.tsv   One line per word, ``word<TAB>stem``, sorted and unique.
                    Stems come from ``nltk.stem.porter.PorterStemmer()``, i.e.
                    the default mode ``PorterStemmer.NLTK_EXTENSIONS``.
  rouge_score.jsonl One JSON object per line:
                    {"target", "prediction", "rouge1", "rouge2", "rougeL",
                     "rougeLsum"}, each score a [precision, recall, fmeasure]
                    list, computed by
                    ``rouge_score.rouge_scorer.RougeScorer(
                        ["rouge1", "rouge2", "rougeL", "rougeLsum"],
                        use_stemmer=True).score(target, prediction)``.
  README.md         Provenance and format description.

Packages (from PyPI, installed into /tmp/rouge-venv):
  rouge_score 0.1.2, nltk 3.10.4 (with absl-py 2.5.1, numpy 2.4.6, six 1.17.0),
  run under CPython 3.11.7. The script writes the versions it actually ran
  with into README.md, so re-running with other versions shows up in the
  README diff.

Which stemmer rouge_score uses (read from the installed package):
  rouge_score/tokenizers.py, line 47 (class DefaultTokenizer.__init__):
      self._stemmer = porter.PorterStemmer() if use_stemmer else None
  with ``from nltk.stem import porter`` (line 22).  No ``mode`` argument is
  passed, so NLTK's default ``mode=NLTK_EXTENSIONS`` applies
  (nltk/stem/porter.py line 87: ``def __init__(self, mode=NLTK_EXTENSIONS)``).
  rouge_score/tokenize.py (function ``tokenize``) lower-cases the text,
  replaces every run of characters outside [a-z0-9] by a space, splits on
  whitespace, stems only tokens with ``len(x) > 3`` and finally keeps only
  tokens matching ``^[a-z0-9]+$``.  The Porter fixture nevertheless records
  the stemmer's output for every word, short ones included.

Determinism: all random choices use random.Random(SEED); inputs are the
top-level *.py files of the standard library of the interpreter running this
script (os.path.dirname(os.__file__)), read in sorted order.  The fixtures
therefore depend on the exact Python version (3.11.7 here).  No NLTK data
downloads are needed (split_summaries is left False, so nltk.sent_tokenize is
never called).

Command that made the committed files (from the repository root):

    /tmp/rouge-venv/bin/python scripts/make_rouge_fixtures.py
"""

import ast
import glob
import json
import os
import platform
import random
import re
import sys
from importlib import metadata

import nltk
from nltk.stem import porter
from rouge_score import rouge_scorer

SEED = 20261125
FIXTURE_DATE = "2026-11-25"
WORD_CAP = 25_000
N_PAIRS = 400
ROUGE_TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(REPO_ROOT, "tests", "fixtures", "accuracy")
from stdlib_text import STDLIB_DIR, docstrings, read_text, stdlib_files  # noqa: E402,F401


# ---------------------------------------------------------------------------
# Part a: Porter stemmer word list
# ---------------------------------------------------------------------------

# Suffixes that matter to one or more Porter steps (1a, 1b, 1c, 2, 3, 4, 5).
SUFFIXES = [
    "s", "es", "ies", "ied", "ing", "ed", "eed", "ational", "tional", "enci",
    "anci", "izer", "bli", "alli", "entli", "eli", "ousli", "ization", "ation",
    "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti",
    "biliti", "logi", "fulli", "lessli", "icate", "ative", "alize", "iciti",
    "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able", "ible",
    "ant", "ement", "ment", "ent", "sion", "tion", "ou", "ism", "ate", "iti",
    "ous", "ive", "ize", "e", "ll", "y",
    # a few extra endings that interact with the rules above
    "sses", "ss", "abli", "ally", "ly", "eli", "ies", "ys", "yed", "ying",
]

# Base words chosen to cover measures m = 0, 1, 2, 3+, stems ending in
# vowels / consonants / doubled consonants / 'y' / cvc patterns, and stems from
# the examples in Porter's paper.
BASES = [
    "a", "b", "tr", "sk", "by", "sy", "hop", "fil", "tan", "plot", "mat",
    "rat", "fail", "fizz", "hiss", "roll", "fall", "sav", "siz", "bled",
    "sing", "cri", "happ", "hope", "good", "geo", "theo", "archaeo", "analog",
    "conflat", "troubl", "relat", "condit", "valen", "hesit", "digit",
    "conform", "radic", "differ", "vietnam", "predic", "triplic", "formal",
    "electr", "adopt", "adjust", "depend", "activ", "bowdler", "homolog",
    "commun", "effect", "irrit", "replac", "gener", "oscil", "feud", "decis",
    "angul", "sens", "callous", "toy", "play", "agree", "feed", "control",
    "generaliz", "oper", "nation", "ration", "sensitiv", "vile", "abl",
]

# A few common English words whose inflections exercise the same rules.
COMMON = [
    "caresses", "ponies", "ties", "caress", "cats", "feed", "agreed",
    "plastered", "bled", "motoring", "sing", "conflated", "troubled", "sized",
    "hopping", "tanned", "falling", "hissing", "fizzed", "failing", "filing",
    "happy", "sky", "relational", "conditional", "rational", "valenci",
    "hesitanci", "digitizer", "conformabli", "radicalli", "differentli",
    "vileli", "analogousli", "vietnamization", "predication", "operator",
    "feudalism", "decisiveness", "hopefulness", "callousness", "formaliti",
    "sensitiviti", "sensibiliti", "triplicate", "formative", "formalize",
    "electriciti", "electrical", "hopeful", "goodness", "revival",
    "allowance", "inference", "airliner", "gyroscopic", "adjustable",
    "defensible", "irritant", "replacement", "adjustment", "dependent",
    "adoption", "homologou", "communism", "activate", "angulariti",
    "homologous", "effective", "bowdlerize", "probate", "rate", "cease",
    "controll", "roll", "dies", "died", "lies", "lied", "ties", "tied",
    "spied", "spies", "flies", "cried", "cries", "generously", "oed", "sis",
    "ied", "ies", "eed", "ing", "ed", "s", "ss", "sss",
]

# Words with digits: rouge_score's tokenizer keeps [a-z0-9] runs and stems
# any token longer than 3 characters, so alphanumeric tokens reach the
# stemmer too (digits count as consonants in Porter's definition).
ALNUM = [
    "1990s", "2000s", "mp3s", "mp3", "covid19", "h2o", "h2os", "3ies",
    "4ied", "x11", "utf8", "abc123", "123abc", "12ing", "9ed", "0000",
    "1234", "42nd", "21st", "3rd", "ipv6", "win32ness", "b2bational",
    "a1b2c3", "z9y8", "e2e", "l10n", "i18n", "k8s", "5ful", "7ly",
]


def irregular_words():
    """The irregular-forms pool used by NLTK_EXTENSIONS, read from the stemmer.

    nltk/stem/porter.py builds ``self.pool`` (form -> stem) in __init__ from
    its ``irregular_forms`` table; we take both the forms and the stems, plus
    close variants (plural/singular, uppercase handled elsewhere).
    """
    pool = porter.PorterStemmer().pool
    words = set(pool) | set(pool.values())
    expected = {
        "sky", "skies", "dying", "lying", "tying", "news", "innings", "inning",
        "outings", "outing", "cannings", "canning", "howe", "proceed",
        "exceed", "succeed", "die", "lie", "tie",
    }
    assert expected <= words, sorted(expected - words)
    variants = set()
    for w in words:
        variants.update({w + "s", w + "ed", w + "ing", w + "ings", w[:-1]})
    # near misses: words that contain a pool word but are not in the pool
    variants.update({"proceeds", "proceeded", "exceeds", "succeeded",
                     "skying", "skyed", "newsy", "howes", "dyings", "lyings"})
    return words | {v for v in variants if v}


def short_words(rng):
    """All 1- and 2-letter words, plus a sample of 3-letter words.

    3-letter words that look like Porter suffixes (ies, ied, eed, ...), that
    end in s/e/y/d/g/l/z or form cvc patterns are kept in full for a few
    letters; the rest is a random sample.
    """
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = set(letters)
    out.update(a + b for a in letters for b in letters)
    three = [a + b + c for a in letters for b in letters for c in letters]
    # every 3-letter word whose first letter is a vowel or 'y' and ends in
    # s/e/d/y/l (these hit step 1a/1b/1c/5 edge cases), plus a random sample
    special = [w for w in three if w[0] in "aeiouy" and w[2] in "sedyl"]
    out.update(special)
    out.update(rng.sample(three, 1500))
    return out


def systematic_words(rng):
    out = set(COMMON)
    for base in BASES:
        out.add(base)
        for suf in SUFFIXES:
            out.add(base + suf)
    # two-suffix combinations (e.g. relat+ional+s, hope+ful+ness+es), sampled
    combos = sorted({b + s1 + s2 for b in BASES for s1 in SUFFIXES
                     for s2 in SUFFIXES})
    out.update(rng.sample(combos, 2500))
    return out


def stdlib_words():
    """Distinct lowercase [a-z]+ tokens of the top-level stdlib *.py files."""
    words = set()
    for path in stdlib_files():
        words.update(re.findall(r"[a-z]+", read_text(path).lower()))
    return words


def make_porter_fixture(rng):
    stemmer = porter.PorterStemmer()  # exactly what rouge_score constructs
    assert stemmer.mode == porter.PorterStemmer.NLTK_EXTENSIONS

    must_keep = (irregular_words() | systematic_words(rng) | short_words(rng)
                 | set(ALNUM))
    from_stdlib = stdlib_words() - must_keep
    room = WORD_CAP - len(must_keep)
    assert room > 0
    if len(from_stdlib) > room:
        # deterministic sample of the stdlib words
        from_stdlib = set(rng.sample(sorted(from_stdlib), room))
    words = sorted(must_keep | from_stdlib)

    # Every word must be a plain token that rouge_score's tokenizer could emit.
    for w in words:
        assert re.fullmatch(r"[a-z0-9]+", w), w

    path = os.path.join(OUT_DIR, "porter_nltk.tsv")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for w in words:
            stem = stemmer.stem(w)
            assert "\t" not in stem and "\n" not in stem
            f.write(f"{w}\t{stem}\n")
    return len(words), len(from_stdlib)


# ---------------------------------------------------------------------------
# Part b: ROUGE score pairs
# ---------------------------------------------------------------------------

def docstring_sentences():
    """English sentences from docstrings of the top-level stdlib modules.

    Module, class and function docstrings are collected with ``ast`` in file
    order, split into sentences at ``. ! ?`` followed by whitespace, and
    whitespace-normalised.  Only sentences of 4..40 words made of printable
    ASCII are kept; doctest lines (``>>>``) are skipped.
    """
    sents = []
    seen = set()
    for doc in docstrings():
        # Drop doctest / code lines, then join the rest into prose.
        lines = [ln for ln in doc.splitlines()
                 if not ln.strip().startswith((">>>", "..."))]
        prose = " ".join(" ".join(lines).split())
        for s in re.split(r"(?<=[.!?])\s+", prose):
            n = len(s.split())
            if 4 <= n <= 40 and s.isascii() and s.isprintable() \
                    and s not in seen:
                seen.add(s)
                sents.append(s)
    return sents


# Inflections / derivations used to create stemming-equivalent variants.
def inflect(word, rng):
    endings = ["s", "es", "ed", "ing", "ly", "ness", "ation", "ational",
               "ize", "izer", "ful", "ment", "able", "ies", "ied"]
    return word + rng.choice(endings)


NON_ASCII_SNIPPETS = [
    "café", "naïve", "über", "Müller", "crème brûlée", "中文", "汉字测试",
    "日本語", "😀", "👍🏽", "🚀 launch", "Ελληνικά", "русский", "İstanbul",
    "\u212a" + "elvin",      # KELVIN SIGN lower-cases to ASCII 'k'
    "\u212b" + "ngstrom",    # ANGSTROM SIGN lower-cases to 'å' (non-ASCII)
    "stra\u00dfe", "ﬁle",    # sharp s, 'fi' ligature (stays non-ASCII)
    "e\u0301t\u00e9",        # combining acute accent
    "\u00a0nbsp\u00a0", "tab\tsep", "zero\u200bwidth",
]

PUNCT_SNIPPETS = [
    "...", "!!!", "?", "(see above)", "[1]", "{x}", "--", "—", "'quoted'",
    "\"double\"", "a/b", "e.g.", "i.e.,", "#42", "$3.50", "50%", "x=y+1",
    "foo_bar", "C++", "http://example.com/path?q=1", "user@example.org",
]

DIGIT_SNIPPETS = [
    "1990s", "3.14159", "42", "2026-11-25", "covid-19", "mp3s", "v1.2.3",
    "100,000", "0", "007", "x86_64", "utf-8", "ipv6", "1st", "22nd",
]

SHORT_WORDS = ["a", "an", "the", "is", "it", "to", "of", "in", "on", "at",
               "by", "we", "go", "do", "be", "cat", "dog", "run", "sky", "ies",
               "sss", "eed", "ing", "yes", "no", "ok", "x", "i", "u"]


def words_of(text):
    return text.split()


def mutate_words(words, rng, n_ops):
    """Apply n_ops random word-level edits (drop/swap/dup/replace/inflect)."""
    words = list(words)
    for _ in range(n_ops):
        if not words:
            break
        op = rng.choice(["drop", "swap", "dup", "replace", "inflect", "case",
                         "punct", "move"])
        i = rng.randrange(len(words))
        if op == "drop" and len(words) > 1:
            del words[i]
        elif op == "swap" and len(words) > 1:
            j = min(i + 1, len(words) - 1) if rng.random() < 0.7 \
                else rng.randrange(len(words))
            words[i], words[j] = words[j], words[i]
        elif op == "dup":
            words.insert(i, words[i])
        elif op == "replace":
            words[i] = rng.choice(SHORT_WORDS + ["function", "object",
                                                 "module", "value", "returns"])
        elif op == "inflect":
            core = re.sub(r"[^A-Za-z]", "", words[i])
            if core:
                words[i] = inflect(core, rng)
        elif op == "case":
            words[i] = rng.choice([str.upper, str.lower, str.title,
                                   str.swapcase])(words[i])
        elif op == "punct":
            words[i] = words[i] + rng.choice([",", ".", ";", "!", "?", ":"])
        elif op == "move" and len(words) > 2:
            w = words.pop(i)
            words.insert(rng.randrange(len(words) + 1), w)
    return words


def join_sentences(sents, rng, messy=False):
    """Join sentences with newlines (rougeLsum splits on '\\n').

    With messy=True the separators vary: blank lines, '\\r\\n', trailing
    spaces, leading/trailing newlines, or a plain space (single line).
    """
    if not messy:
        return "\n".join(sents)
    out = ""
    if rng.random() < 0.2:
        out += "\n"
    for k, s in enumerate(sents):
        if k:
            out += rng.choice(["\n", "\n\n", "\r\n", " \n", "\n \n", " ",
                               "\n\t", "\n.\n"])
        out += s
    if rng.random() < 0.2:
        out += rng.choice(["\n", "\n\n", " "])
    return out


def make_pairs(sents, rng):
    """Build (target, prediction) pairs with deliberate variety."""
    pairs = []

    def pick(k):
        return [rng.choice(sents) for _ in range(k)]

    # 1. Hand-written edge cases: empty / whitespace / punctuation / short.
    fixed = [
        ("", ""),
        ("", "the cat sat on the mat"),
        ("the cat sat on the mat", ""),
        (" ", " "),
        ("\n", "\n"),
        ("\n\n\n", "word"),
        ("word", "\n\n\n"),
        ("...", "!!!"),
        ("... !!!\n???", "hello world"),
        ("hello world", "... !!!\n???"),
        ("a", "a"),
        ("a", "b"),
        ("cat", "cats"),
        ("cats", "cats"),
        ("running", "runs"),
        ("runner", "running"),
        ("the", "the the the"),
        ("the the the", "the"),
        ("a b c", "c b a"),
        ("a b c d e", "a c e"),
        ("is it", "it is"),
        ("dies", "die"),
        ("skies", "sky"),
        ("news", "new"),
        ("flies lying dying", "fly lie die"),
        ("1990s 2000s", "1990 2000"),
        ("mp3s and mp3", "mp3 and mp3s"),
        ("café", "cafe"),
        ("中文", "中文"),
        ("😀", "😀"),
        ("😀 smile", "smile 😀"),
        ("İstanbul", "i stanbul"),
        ("\u212aelvin scale", "kelvin scale"),
        ("CamelCaseWord", "camelcaseword"),
        ("Hello, World!", "hello world"),
        ("x", "x\nx"),
        ("a\nb\nc", "c\nb\na"),
        ("a b\nb a", "a b a b"),
        ("a a a\nb b b", "a b\na b\na b"),
        ("one two three four", "one two\nthree four"),
        ("one two\nthree four", "one two three four"),
        ("the cat\n\nthe dog\n", "\nthe dog\nthe cat"),
        ("Policy generalization operational", "policies general operation"),
        ("abc123 123abc", "abc123 123 abc"),
        ("foo_bar-baz", "foo bar baz"),
        ("tab\tseparated\twords", "tab separated words"),
        ("\r\n\r\n", "\r\n"),
        ("a\r\nb", "a\nb"),
        ("sss eed ies ing", "sss eed ies ing"),
        ("is in on at by", "by at on in is"),
    ]
    pairs.extend(fixed)

    # 2. Identical pairs (single- and multi-sentence).
    for _ in range(25):
        s = pick(rng.randint(1, 4))
        t = join_sentences(s, rng, messy=rng.random() < 0.5)
        pairs.append((t, t))

    # 3. Mutated copies: word edits inside sentences, sentence reordering,
    #    sentence drop/duplication, newline layout changes.
    for _ in range(150):
        k = rng.randint(1, 5)
        s = pick(k)
        target = join_sentences(s, rng, messy=rng.random() < 0.3)
        p_sents = [" ".join(mutate_words(words_of(x), rng, rng.randint(0, 5)))
                   for x in s]
        r = rng.random()
        if r < 0.25:
            rng.shuffle(p_sents)                      # reorder sentences
        elif r < 0.35 and len(p_sents) > 1:
            del p_sents[rng.randrange(len(p_sents))]  # drop a sentence
        elif r < 0.45:
            p_sents.insert(rng.randrange(len(p_sents) + 1),
                           rng.choice(p_sents))       # duplicate a sentence
        elif r < 0.55:
            p_sents.append(rng.choice(sents))         # add an unrelated one
        if rng.random() < 0.2:
            # merge everything into one line, or split one sentence in two
            pred = " ".join(p_sents) if rng.random() < 0.5 else \
                join_sentences(
                    [w for x in p_sents for w in
                     (x[:len(x) // 2], x[len(x) // 2:])], rng)
        else:
            pred = join_sentences(p_sents, rng, messy=rng.random() < 0.3)
        if rng.random() < 0.5:
            pairs.append((target, pred))
        else:
            pairs.append((pred, target))

    # 4. Unrelated pairs.
    for _ in range(40):
        a = join_sentences(pick(rng.randint(1, 3)), rng)
        b = join_sentences(pick(rng.randint(1, 3)), rng)
        pairs.append((a, b))

    # 5. Texts sprinkled with non-ASCII, punctuation and digits.
    for _ in range(50):
        s = pick(rng.randint(1, 3))
        ws = [words_of(x) for x in s]
        for sent in ws:
            for _ in range(rng.randint(1, 4)):
                pool = rng.choice([NON_ASCII_SNIPPETS, PUNCT_SNIPPETS,
                                   DIGIT_SNIPPETS])
                sent.insert(rng.randrange(len(sent) + 1), rng.choice(pool))
        target = join_sentences([" ".join(w) for w in ws], rng, messy=True)
        pred_ws = [mutate_words(w, rng, rng.randint(0, 3)) for w in ws]
        pred = join_sentences([" ".join(w) for w in pred_ws], rng, messy=True)
        pairs.append((target, pred) if rng.random() < 0.5 else (pred, target))

    # 6. Very short texts (1..4 words, mostly <= 3 letters).
    for _ in range(30):
        a = " ".join(rng.choice(SHORT_WORDS) for _ in range(rng.randint(1, 4)))
        b = " ".join(rng.choice(SHORT_WORDS) for _ in range(rng.randint(1, 4)))
        pairs.append((a, b))

    # 7. Tiny-vocabulary multi-line texts: many equal tokens, so LCS ties and
    #    the backtracking order (and union-LCS / hit counting of rougeLsum)
    #    matter.
    vocab = ["a", "b", "c", "d", "cat", "cats"]
    for _ in range(45):
        def rand_text():
            lines = []
            for _ in range(rng.randint(1, 4)):
                lines.append(" ".join(rng.choice(vocab)
                                      for _ in range(rng.randint(0, 7))))
            return "\n".join(lines)
        pairs.append((rand_text(), rand_text()))

    # 8. A few long texts (many sentences) against mutated versions.
    for _ in range(10):
        s = pick(rng.randint(8, 14))
        target = join_sentences(s, rng)
        p = [" ".join(mutate_words(words_of(x), rng, rng.randint(0, 6)))
             for x in s]
        rng.shuffle(p)
        pairs.append((target, join_sentences(p[: len(p) - rng.randint(0, 3)],
                                             rng)))

    # Fill up to N_PAIRS with more mutated single/multi-line pairs.
    while len(pairs) < N_PAIRS:
        s = pick(rng.randint(1, 3))
        t = join_sentences(s, rng)
        p = join_sentences([" ".join(mutate_words(words_of(x), rng, 3))
                            for x in s], rng)
        pairs.append((t, p))
    return pairs[:N_PAIRS]


def make_rouge_fixture(rng):
    sents = docstring_sentences()
    assert len(sents) > 1000, len(sents)
    pairs = make_pairs(sents, rng)
    scorer = rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=True)

    path = os.path.join(OUT_DIR, "rouge_score.jsonl")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for target, prediction in pairs:
            scores = scorer.score(target, prediction)  # target first!
            rec = {"target": target, "prediction": prediction}
            for rt in ROUGE_TYPES:
                sc = scores[rt]
                # rouge_score returns the int 0 (not 0.0) for some empty
                # inputs; float() makes the JSON uniform without changing
                # any value.  json writes floats with repr (round-trip) digits.
                rec[rt] = [float(sc.precision), float(sc.recall),
                           float(sc.fmeasure)]
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return len(pairs), len(sents)


# ---------------------------------------------------------------------------
# Part c: README
# ---------------------------------------------------------------------------

def write_readme(n_words, n_stdlib_words, n_pairs, n_sents):
    versions = {p: metadata.version(p) for p in
                ["rouge_score", "nltk", "absl-py", "numpy", "six"]}
    text = f"""# ROUGE accuracy fixtures

Reference outputs of Google's `rouge_score` package (with NLTK's Porter
stemmer), used to test the Rust re-implementation of ROUGE.

Generated on {FIXTURE_DATE} by

    /tmp/rouge-venv/bin/python scripts/make_rouge_fixtures.py

with packages installed from PyPI into `/tmp/rouge-venv`:

| package     | version |
|-------------|---------|
| rouge_score | {versions['rouge_score']} |
| nltk        | {versions['nltk']} |
| absl-py     | {versions['absl-py']} |
| numpy       | {versions['numpy']} |
| six         | {versions['six']} |

Python: {platform.python_implementation()} {platform.python_version()}.
Random seed: {SEED}. No NLTK data downloads are used.

Inputs are taken from the top-level `*.py` files of that Python's standard
library (`os.path.dirname(os.__file__)`), so regenerating with another Python
version gives a different (but equally valid) word list and text set.

## `porter_nltk.tsv`

{n_words} lines, sorted by word (byte order), unique, UTF-8, `\\n` line ends.
Each line is

    word<TAB>stem

where `stem = nltk.stem.porter.PorterStemmer().stem(word)`, i.e. the default
mode `PorterStemmer.NLTK_EXTENSIONS`. This is the stemmer rouge_score builds
(`rouge_score/tokenizers.py`: `porter.PorterStemmer() if use_stemmer else
None`).

Words (all match `[a-z0-9]+`):

* {n_stdlib_words} distinct lowercase `[a-z]+` tokens of the stdlib sources
  (text lower-cased first; not already in the groups below);
* systematic words: a few dozen base words with each Porter-relevant suffix
  attached (s, es, ies, ied, ing, ed, eed, ational, tional, enci, anci, izer,
  bli, alli, entli, eli, ousli, ization, ation, ator, alism, iveness, fulness,
  ousness, aliti, iviti, biliti, logi, fulli, lessli, icate, ative, alize,
  iciti, ical, ful, ness, al, ance, ence, er, ic, able, ible, ant, ement, ment,
  ent, sion, tion, ou, ism, ate, iti, ous, ive, ize, e, ll, y, ...), a sample
  of two-suffix combinations, and the examples of Porter's paper;
* the irregular forms of NLTK_EXTENSIONS (`self.pool` in
  `nltk/stem/porter.py`: sky, skies, dying, lying, tying, news, innings,
  inning, outings, outing, cannings, canning, howe, proceed, exceed, succeed)
  and their stems and near variants;
* every 1- and 2-letter word and many 3-letter words;
* a few alphanumeric tokens (`1990s`, `mp3s`, `covid19`, ...), because
  rouge_score's tokenizer keeps `[a-z0-9]+` runs and passes any token longer
  than 3 characters, digits included, to the stemmer.

rouge_score itself only stems tokens with `len > 3`; this file nevertheless
lists the stemmer's output for every word, short ones included (NLTK returns
words of length <= 2 unchanged, except pool entries).

## `rouge_score.jsonl`

{n_pairs} lines, UTF-8 (non-ASCII written literally), one JSON object each:

    {{"target": str, "prediction": str,
      "rouge1": [p, r, f], "rouge2": [p, r, f],
      "rougeL": [p, r, f], "rougeLsum": [p, r, f]}}

computed as

    scorer = rouge_scorer.RougeScorer(
        ["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
    scores = scorer.score(target, prediction)   # target (reference) first
    p, r, f = scores[t].precision, scores[t].recall, scores[t].fmeasure

`p` is precision (w.r.t. prediction tokens), `r` recall (w.r.t. target
tokens), `f` the F1 measure `2*p*r/(p+r)` (0.0 when `p+r == 0`). Numbers are
Python floats written by `json` with full round-trip precision; rouge_score
returns the int `0` for some empty inputs, written here as `0.0`.
`split_summaries` is False: rougeLsum splits texts on `"\\n"` only and drops
empty lines (a line of only punctuation or `"\\r"` is *not* dropped; it just
has no tokens).

Texts are built from {n_sents} English sentences taken from docstrings of
the stdlib: identical pairs, mutated copies (words dropped, swapped,
duplicated, moved, re-cased, inflected; sentences reordered, dropped,
duplicated, merged or split), unrelated pairs, multi-line texts with blank
lines / `\\r\\n` / leading and trailing newlines, punctuation, digits,
non-ASCII (é, ü, 中文, emoji, `İ`, KELVIN SIGN, ...), very short texts, texts
over a tiny vocabulary (many LCS ties), a few long texts, and empty or
whitespace-only strings on either side.
"""
    with open(os.path.join(OUT_DIR, "README.md"), "w", encoding="utf-8",
              newline="\n") as f:
        f.write(text)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    # Separate generators so that changing one fixture does not reshuffle the
    # other.
    n_words, n_std = make_porter_fixture(random.Random(SEED))
    n_pairs, n_sents = make_rouge_fixture(random.Random(SEED + 1))
    write_readme(n_words, n_std, n_pairs, n_sents)
    print(f"python {sys.version.split()[0]}, nltk {nltk.__version__}, "
          f"rouge_score {metadata.version('rouge_score')}")
    print(f"porter_nltk.tsv: {n_words} words ({n_std} from stdlib only)")
    print(f"rouge_score.jsonl: {n_pairs} pairs from {n_sents} sentences")


if __name__ == "__main__":
    main()
