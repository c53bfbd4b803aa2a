#!/usr/bin/env python3
"""Generate sentence-splitting fixtures from NLTK 3.8.1's Punkt tokenizer.

The MLPerf LLM accuracy scripts split every reference and every model answer
into sentences with

    "\\n".join(nltk.sent_tokenize(text.strip()))

before computing ROUGE-Lsum, and the MLPerf reference evaluation pins
``nltk==3.8.1`` (mlcommons/inference, language/llama3.1-8b/requirements.txt).
In NLTK 3.8.1, ``nltk.sent_tokenize(text)`` (language "english", the default)
loads the pickled ``punkt`` model (``tokenizers/punkt/english.pickle``) and
returns ``PunktSentenceTokenizer.tokenize(text)``; its Punkt code compiles
every regular expression with the standard-library ``re``.  This script
records what that call returns, for the Rust re-implementation to test
against.  It must be run with NLTK 3.8.1 and refuses to run with any other
version.

The pickled ``punkt`` model cannot be downloaded here (``nltk.download``
needs GitHub).  The tokenizer is therefore built from the English
``punkt_tab`` files (the tab-separated form of the Punkt models that NLTK
3.9+ loads instead of the pickle): a ``PunktParameters`` filled exactly as
NLTK 3.9+'s ``nltk.tokenize.punkt.load_punkt_params`` fills it

    collocations  = {tuple(line.split("\\t")) for line in collocations.tab}
    sent_starters = {line for line in sent_starters.txt}
    abbrev_types  = {line for line in abbrev_types.txt}
    ortho_context = defaultdict(int, {word: int(flags) for word, flags in
                                      ortho_context.tab})

(each line read in text mode, minus one trailing "\\n"), then
``PunktSentenceTokenizer(params).tokenize(text)``.  The punkt_tab files were
converted by the NLTK maintainers from the same Punkt models that the 3.8.1
pickles hold; that the English punkt_tab parameters equal those of
``english.pickle`` is ASSUMED, NOT VERIFIED here, since the pickle is not
available on this machine.

What it makes (in tests/fixtures/accuracy/):

  sent_tokenize.jsonl
      One JSON object per line, UTF-8 (non-ASCII written literally, except
      U+0085, U+2028 and U+2029, which are written as \\u escapes so that no
      line-splitting routine can cut a record in two):
          {"text": str, "sentences": [str, ...]}
      with ``sentences == PunktSentenceTokenizer(params).tokenize(text)``
      (NLTK 3.8.1, params as above) for the text exactly as stored (no
      strip(); leading/trailing whitespace is part of some texts on
      purpose).  The script also checks that the sentences are the slices
      ``text[s:e]`` of ``span_tokenize(text)``.
  punkt_tab/english/{abbrev_types.txt, collocations.tab, ortho_context.tab,
                     sent_starters.txt}
      The English Punkt parameters, byte-for-byte as NLTK 3.9+ loads them
      (rewritten only if their bytes differ, which the SHA-256 checks below
      rule out).
  punkt_tab/README
      The punkt_tab package's README (origin of the models; it holds no
      licence text).
  README.md
      The section "## `sent_tokenize.jsonl` and `punkt_tab/`" (provenance,
      format, SHA-256 of the data files) is appended, or replaced when it is
      already there; the sections above it are left as they are.

Packages (from PyPI): nltk 3.8.1 in /tmp/nltk381-venv, run under CPython
3.11.7.  (nltk 3.8.1 depends on the third-party ``regex`` package, but its
Punkt module uses only the stdlib ``re``.)

Comparison with a newer NLTK (optional, ``--compare-python``): the script
also runs ``nltk.sent_tokenize(text)`` of another interpreter's NLTK (by
default /tmp/rouge-venv/bin/python, nltk 3.10.4 with regex 2026.11.19),
pointed at the same punkt_tab files, on every text, checks that it loads
the same parameters, and writes into the README how many texts it splits
differently.  NLTK 3.10.4 differs from 3.8.1 in two ways that matter here:
it adds the curly quotes and guillemets (U+2018, U+2019, U+201C, U+201D,
U+00AB, U+00BB) to Punkt's non-word characters and to the boundary
realignment class, and it compiles Punkt's expressions with the ``regex``
module (``nltk.redos``), whose ``\\s`` does not include U+001C..U+001F
(``re``'s ``\\s`` is ``str.isspace()``, which does) and whose ``\\w`` differs
from ``re``'s (``re`` takes ``str.isalnum()`` characters such as U+00B2
SUPERSCRIPT TWO as ``\\w``, ``regex`` does not).  On the committed texts
3.10.4 splits 25 texts differently (23 with curly quotes or guillemets,
1 with U+001F, 1 with U+00B2 SUPERSCRIPT TWO).

Where the punkt_tab data comes from:
  ``nltk.download("punkt_tab")`` fetches from GitHub, which is not reachable
  from the machine that made the fixtures.  The same data is bundled in the
  PyPI wheel of llama-index-core:
      llama_index_core-0.14.25-py3-none-any.whl
      (SHA-256 caa7d9c5ac9b13dc33400cf8d5e92e689b6d1e4497eb9bfa50d6f52ca2eb22a1,
       from PyPI, e.g. ``pip download llama-index-core==0.14.25 --no-deps``)
  under
      llama_index/core/_static/nltk_cache/tokenizers/punkt_tab/english/*
      llama_index/core/_static/nltk_cache/tokenizers/punkt_tab/README
  The wheel also carries the nltk_data archive
  ``.../nltk_cache/tokenizers/punkt_tab.zip`` (entries dated 2024-07-09);
  its english/* files and README are byte-identical to the unpacked ones.
  The script reads the files out of the wheel with ``zipfile``, checks their
  SHA-256 against the values below and copies them into the fixture
  directory.  Without the wheel (``--wheel`` path missing) it falls back to
  the committed copies in tests/fixtures/accuracy/punkt_tab/, checked against
  the same SHA-256 values.  For the comparison run the files are also written
  to a temporary NLTK data directory, the only one the other NLTK searches.

Texts (deterministic: random.Random(SEED), inputs read in sorted order; the
same texts as the earlier, nltk-3.10.4-based version of this file):
  * prose: paragraphs of module/class/function docstrings of the top-level
    *.py files of the running interpreter's standard library
    (os.path.dirname(os.__file__)), in groups of 1-8 sentences, with the
    original line wrapping, re-flowed onto one line, or with newlines / blank
    lines between paragraphs -- so the fixture depends on the Python version
    (3.11.7 here);
  * hand-written cases: abbreviations, initials, ellipses ("..." and
    ". . ."), numbers, ordinals, decimals, enumerations, quotes and brackets
    after sentence ends, ? and !, lowercase sentence starts, URLs, e-mail
    addresses, odd whitespace (tabs, runs of spaces, \\r\\n, NBSP, U+2028,
    U+001C..U+001F which str.isspace() accepts but regex's \\s does not),
    Unicode letters, curly quotes and guillemets, dashes, empty and
    whitespace-only texts, texts with no final punctuation;
  * cases built from the data files: every abbreviation of abbrev_types.txt
    followed by capitalised, lowercase and sentence-starter words; every
    collocation of collocations.tab; every word of sent_starters.txt after
    abbreviations, initials, numbers and ordinary words; a matrix of
    left contexts (abbreviation, initial, number, ellipsis, ordinary word)
    times next words chosen by their ortho_context.tab flags, so that every
    branch of the orthographic heuristic is taken;
  * news-style summaries (CNN/DailyMail articles and highlights, including the
    " ." tokenised style and "By . Daily Mail Reporter ." by-lines) and
    chatbot-style answers (numbered lists, "- " bullets, markdown, code);
  * random token soups mixing all of the above with random whitespace.

Command that made the committed files (from the repository root):

    /tmp/nltk381-venv/bin/python scripts/make_punkt_fixtures.py \\
        --wheel /tmp/pipli/llama_index_core-0.14.25-py3-none-any.whl \\
        --compare-python /tmp/rouge-venv/bin/python
"""

import argparse
import ast
import glob
import hashlib
import io
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from collections import defaultdict

import nltk

REQUIRED_NLTK = "3.8.1"
if nltk.__version__ != REQUIRED_NLTK:
    sys.exit(
        f"make_punkt_fixtures.py needs nltk {REQUIRED_NLTK} (the version the "
        f"MLPerf reference pins), but {sys.executable} has nltk "
        f"{nltk.__version__} ({os.path.dirname(nltk.__file__)}).\n"
        f"Run it as: /tmp/nltk381-venv/bin/python scripts/make_punkt_fixtures.py"
        f"  (create that venv with: python3.11 -m venv /tmp/nltk381-venv && "
        f"/tmp/nltk381-venv/bin/pip install nltk=={REQUIRED_NLTK})")

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer  # noqa: E402

SEED = 20261126
FIXTURE_DATE = "2026-11-25"
WHEEL_NAME = "llama_index_core-0.14.25-py3-none-any.whl"
WHEEL_DEFAULT = "/tmp/pipli/" + WHEEL_NAME
WHEEL_SHA256 = "caa7d9c5ac9b13dc33400cf8d5e92e689b6d1e4497eb9bfa50d6f52ca2eb22a1"
WHEEL_PREFIX = "llama_index/core/_static/nltk_cache/"

# NLTK data path -> (fixture path relative to tests/fixtures/accuracy, SHA-256)
DATA_FILES = {
    "tokenizers/punkt_tab/english/abbrev_types.txt": (
        "punkt_tab/english/abbrev_types.txt",
        "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779"),
    "tokenizers/punkt_tab/english/collocations.tab": (
        "punkt_tab/english/collocations.tab",
        "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf"),
    "tokenizers/punkt_tab/english/ortho_context.tab": (
        "punkt_tab/english/ortho_context.tab",
        "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c"),
    "tokenizers/punkt_tab/english/sent_starters.txt": (
        "punkt_tab/english/sent_starters.txt",
        "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac"),
    "tokenizers/punkt_tab/README": (
        "punkt_tab/README",
        "d3251cae66a9359bd68c039e3a46172a05ca9df0b27dcdfa23ae594d68d27ec4"),
}

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(REPO_ROOT, "tests", "fixtures", "accuracy")
from stdlib_text import STDLIB_DIR, docstrings  # noqa: E402,F401
README_HEADING = "## `sent_tokenize.jsonl` and `punkt_tab/`"
MAX_BYTES = 700_000


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------
# punkt_tab data
# ---------------------------------------------------------------------------

def read_data_files(wheel):
    """{nltk data path: bytes}, from the wheel if it exists, else from the
    committed fixture copies; every file's SHA-256 is checked."""
    out = {}
    if os.path.exists(wheel):
        source = f"wheel {wheel}"
        with open(wheel, "rb") as f:
            wheel_sha = sha256(f.read())
        if wheel_sha != WHEEL_SHA256:
            print(f"warning: {wheel} has SHA-256 {wheel_sha}, expected "
                  f"{WHEEL_SHA256}; the data files are checked anyway",
                  file=sys.stderr)
        with zipfile.ZipFile(wheel) as z:
            for rel in DATA_FILES:
                out[rel] = z.read(WHEEL_PREFIX + rel)
    else:
        source = "committed copies in tests/fixtures/accuracy/punkt_tab"
        for rel, (fixture_rel, _) in DATA_FILES.items():
            with open(os.path.join(OUT_DIR, fixture_rel), "rb") as f:
                out[rel] = f.read()
    for rel, data in out.items():
        want = DATA_FILES[rel][1]
        got = sha256(data)
        if got != want:
            sys.exit(f"{rel}: SHA-256 {got}, expected {want} ({source})")
    return out, source


def install_data(files, root=None):
    """Copy the data files into the fixture directory (only where the bytes
    differ) and, when root is given, under root (a temporary NLTK data
    directory for the comparison run)."""
    for rel, data in files.items():
        dest = os.path.join(OUT_DIR, DATA_FILES[rel][0])
        old = None
        if os.path.exists(dest):
            with open(dest, "rb") as f:
                old = f.read()
        if old != data:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(data)
        if root is not None:
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)


def parse_data(files):
    """The parameters as NLTK 3.9+'s ``load_punkt_params`` reads them
    (nltk/tabdata.py, ``PunktDecoder``): the file opened as UTF-8 text
    (universal newlines), each line minus one trailing "\\n" (``rm_nl``),
    tab-separated fields split with ``str.split("\\t")``."""
    def lines(rel):
        # the same line iteration as open(path, encoding="utf-8")
        with io.TextIOWrapper(io.BytesIO(files[rel]), encoding="utf-8") as f:
            return list(f)

    def rm_nl(s):
        return s[:-1] if s[-1] == "\n" else s

    base = "tokenizers/punkt_tab/english/"
    abbrevs = {rm_nl(x) for x in lines(base + "abbrev_types.txt")}
    starters = {rm_nl(x) for x in lines(base + "sent_starters.txt")}
    collocs = {tuple(rm_nl(x).split("\t"))
               for x in lines(base + "collocations.tab")}
    ortho = {}
    for x in lines(base + "ortho_context.tab"):
        k, v = rm_nl(x).split("\t")
        ortho[k] = int(v)
    return abbrevs, starters, collocs, ortho


def build_tokenizer(abbrevs, starters, collocs, ortho):
    """NLTK 3.8.1's PunktSentenceTokenizer with the punkt_tab parameters,
    filled as ``load_punkt_params`` fills them."""
    params = PunktParameters()
    params.collocations = set(collocs)
    params.sent_starters = set(starters)
    params.abbrev_types = set(abbrevs)
    params.ortho_context = defaultdict(int, ortho)
    return PunktSentenceTokenizer(params)


# ---------------------------------------------------------------------------
# Comparison with another (newer) NLTK
# ---------------------------------------------------------------------------

# Run by the other interpreter: {"root": NLTK data dir, "texts": [...]} on
# stdin (JSON), nltk.sent_tokenize of every text on stdout (ASCII JSON).
COMPARE_CHILD = r'''
import json, os, platform, sys
from importlib import metadata
import nltk, nltk.data, nltk.tokenize
req = json.loads(sys.stdin.buffer.read())
get = getattr(nltk.tokenize, "_get_punkt_tokenizer", None)
if get is None:
    sys.exit("nltk %s has no punkt_tab loader (needs nltk >= 3.9)"
             % nltk.__version__)
nltk.data.path[:] = [req["root"]]
get.cache_clear()
found = str(nltk.data.find("tokenizers/punkt_tab/english/"))
assert os.path.realpath(found).startswith(os.path.realpath(req["root"])), found
p = get("english")._params
try:
    regex_version = metadata.version("regex")
except Exception:
    regex_version = None
out = {
    "python": platform.python_version(),
    "nltk": nltk.__version__,
    "regex": regex_version,
    "params": {
        "abbrevs": sorted(p.abbrev_types),
        "starters": sorted(p.sent_starters),
        "collocs": sorted(list(t) for t in p.collocations),
        "ortho": dict(p.ortho_context),
    },
    "sentences": [nltk.sent_tokenize(t) for t in req["texts"]],
}
sys.stdout.buffer.write(json.dumps(out, ensure_ascii=True).encode("ascii"))
'''

CURLY = "\u2018\u2019\u201c\u201d\u00ab\u00bb"
SEP_CONTROLS = "\x1c\x1d\x1e\x1f"


def compare_other_nltk(python, files, params, texts, sentences):
    """Split every text with the other interpreter's nltk.sent_tokenize
    (pointed at the same punkt_tab files); return a summary dict."""
    abbrevs, starters, collocs, ortho = params
    with tempfile.TemporaryDirectory(prefix="punkt_nltk_data_") as root:
        for rel, data in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        req = json.dumps({"root": root, "texts": texts}).encode("ascii")
        env = {k: v for k, v in os.environ.items() if k != "NLTK_DATA"}
        proc = subprocess.run([python, "-c", COMPARE_CHILD], input=req,
                              capture_output=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"comparison run with {python} failed:\n"
                 + proc.stderr.decode("utf-8", "replace"))
    res = json.loads(proc.stdout)
    got = res["params"]
    assert got["abbrevs"] == sorted(abbrevs), "abbrev_types differ"
    assert got["starters"] == sorted(starters), "sent_starters differ"
    assert got["collocs"] == sorted(list(t) for t in collocs), "collocations"
    assert got["ortho"] == ortho, "ortho_context differs"
    assert len(res["sentences"]) == len(texts)
    differ = [t for t, mine, other in zip(texts, sentences, res["sentences"])
              if mine != other]
    curly = [t for t in differ if any(c in t for c in CURLY)]
    controls = [t for t in differ if t not in curly
                and any(c in t for c in SEP_CONTROLS)]
    rest = [t for t in differ if t not in curly and t not in controls]
    rest_chars = sorted({c for t in rest for c in t if ord(c) > 0x7e})
    return {
        "python": python, "python_version": res["python"],
        "nltk": res["nltk"], "regex": res["regex"],
        "n": len(differ), "curly": len(curly), "controls": len(controls),
        "rest": len(rest), "rest_chars": rest_chars,
        "controls_chars": sorted({c for t in controls for c in t
                                  if c in SEP_CONTROLS}),
    }


# ---------------------------------------------------------------------------
# Orthographic classes (flag bits as in nltk/tokenize/punkt.py)
# ---------------------------------------------------------------------------

BEG_UC, MID_UC, UNK_UC, BEG_LC, MID_LC, UNK_LC = (1 << i for i in range(1, 7))
ORTHO_UC = BEG_UC | MID_UC | UNK_UC
ORTHO_LC = BEG_LC | MID_LC | UNK_LC


def ortho_classes(ortho):
    """Word lists (plain [a-z]+ words, sorted) by the answer the orthographic
    heuristic gives for the capitalised / lowercase form."""
    plain = sorted(w for w in ortho if re.fullmatch(r"[a-z]{3,12}", w))
    cls = {
        # Capitalised: LC seen, MID_UC never -> heuristic says "starts a
        # sentence" (True).
        "upper_true": [w for w in plain if ortho[w] & ORTHO_LC
                       and not ortho[w] & MID_UC],
        # Capitalised, only ever upper case -> "unknown", and for an initial
        # before it the special heuristic (no LC flag) applies.
        "upper_only": [w for w in plain if not ortho[w] & ORTHO_LC],
        # Capitalised, seen both, MID_UC seen -> "unknown".
        "upper_mixed": [w for w in plain if ortho[w] & ORTHO_LC
                        and ortho[w] & MID_UC],
        # Lowercase with UC seen or BEG_LC never seen -> False.
        "lower_false": [w for w in plain if (ortho[w] & ORTHO_UC)
                        or not ortho[w] & BEG_LC],
        # Lowercase, BEG_LC seen and no UC -> "unknown".
        "lower_unknown": sorted(w for w in ortho if ortho[w] & BEG_LC
                                and not ortho[w] & ORTHO_UC),
    }
    return cls


# ---------------------------------------------------------------------------
# Standard-library docstring prose
# ---------------------------------------------------------------------------

def docstring_paragraphs():
    """Lists of prose paragraphs (original line wrapping kept), one list per
    docstring, in file order."""
    docs = []
    for doc in docstrings():
        paras = []
        for para in re.split(r"\n\s*\n", doc):
            para = para.strip("\n")
            lines = para.split("\n")
            if not para.strip() or len(para) > 1200:
                continue
            if any(ln.startswith((" ", "\t")) or ln.lstrip().startswith(
                    (">>>", "...", "$ ", "%")) for ln in lines):
                continue
            if not para.isprintable() and not all(
                    ln.isprintable() for ln in lines):
                continue
            words = para.split()
            if len(words) < 5:
                continue
            alpha = sum(c.isalpha() or c.isspace() for c in para)
            if alpha / len(para) < 0.85:
                continue
            if not re.search(r"[.!?]\s", para + " "):
                continue
            paras.append(para)
        if paras:
            docs.append(paras)
    return docs


def naive_sentence_count(text):
    return max(1, len(re.findall(r"[.!?](?:\s|$)", text)))


def reflow(para):
    return " ".join(para.split())


def prose_texts(rng, n_random=70, n_abbrev=20):
    # all prose paragraphs in file order; a text is a run of consecutive
    # paragraphs (possibly spanning several docstrings of a module)
    flat = [para for paras in docstring_paragraphs() for para in paras]
    runs = list(range(len(flat)))
    abbrev_re = re.compile(
        r"\b(?:e\.g|i\.e|etc|vs|Mr|Mrs|Dr|No|St|cf|approx|ca|Inc|Ltd|"
        r"[A-Z]\.[A-Z]|\d+\.\d+)\.?\s")
    with_abbrev = [r for r in runs if abbrev_re.search(flat[r])]
    chosen = rng.sample(runs, n_random) + rng.sample(with_abbrev, n_abbrev)
    texts = []
    for p in chosen:
        target = rng.randint(1, 8)
        paras = []
        count = 0
        for para in flat[p:p + 12]:
            paras.append(para)
            count += naive_sentence_count(para)
            if count >= target:
                break
        if len(paras) == 1 and count > target:
            # cut a single long paragraph down to about `target` sentences
            parts = re.split(r"(?<=[.!?])(\s+)", paras[0])
            keep = "".join(parts[: 2 * target - 1])
            paras = [keep]
        style = rng.choice(["wrap_blank", "wrap_blank", "flow_space",
                            "flow_newline", "flow_blank", "wrap_newline",
                            "wrap_crlf", "wrap_indent"])
        if style == "wrap_blank":
            text = "\n\n".join(paras)
        elif style == "flow_space":
            text = " ".join(reflow(x) for x in paras)
        elif style == "flow_newline":
            text = "\n".join(reflow(x) for x in paras)
        elif style == "flow_blank":
            text = "\n\n".join(reflow(x) for x in paras)
        elif style == "wrap_newline":
            text = "\n".join(paras)
        elif style == "wrap_crlf":
            text = "\r\n\r\n".join(x.replace("\n", "\r\n") for x in paras)
        else:  # wrap_indent: docstring-like indentation of continuation lines
            text = "\n\n    ".join(x.replace("\n", "\n    ") for x in paras)
        texts.append(text)
    return texts


# ---------------------------------------------------------------------------
# Hand-written cases
# ---------------------------------------------------------------------------

HAND = [
    # the brief's smoke test and basics
    "Mr. Smith went to Washington. He arrived at 5 p.m. on Jan. 3rd.",
    "Hello world.",
    "Hello world",
    "Hello world. ",
    "  Hello world.  How are you?  ",
    "\n\nHello world.\n\nHow are you?\n\n",
    "",
    " ",
    "\n",
    "\t \n \r\n ",
    "\u00a0",
    "\u3000 \u2003\u2009",
    ".",
    "..",
    "...",
    "?",
    "!",
    "!!!",
    "?!",
    "!?",
    ". . .",
    ". .",
    "a.",
    "A.",
    "Mr.",
    "U.S.",
    "5.",
    "3.14",
    "e.g.",
    "etc.",
    "Hi. Bye.",
    "A. B. C.",
    "a. b. c.",
    "One. Two. Three. Four. Five.",
    "Hello.World. Again.",
    "Hello.  World.",
    "Hello.\tWorld.",
    "Hello.\nWorld.",
    "Hello.\n\nWorld.",
    "Hello.\r\nWorld.\r\n",
    "Hello.\rWorld.",
    "Hello.\u00a0World.",
    "Hello.\u2028World.",
    "Hello.\u2029World.",
    "Hello.\u3000World.",
    "Hello.\x0bWorld.\x0cAgain.",
    "Hello.\x85World.",
    "Hello.\x1fWorld.",
    "Hello. World.\x1c",
    "Hello.\x1e\x1dWorld. Again.\x1f",
    "Hello.\u200bWorld. Again.",
    "Hello. World.\u00a0\u00a0",
    "Hello world.\u00a0 Mr. Smith came. He sat.",
    "It was late.\u00a0Mr.\u00a0Smith came. He sat.",
    "Hello. world.",
    "It costs 5 dollars. then it costs 6.",
    "the first sentence is lowercase. so is the second. and the third.",
    "i am here. i am there. I am everywhere.",
    # abbreviations
    "I woke up at 7 a.m. and left at 9 a.m. The bus was late.",
    "The meeting is at 3 p.m. Please be on time.",
    "The meeting is at 3 p.m. please be on time.",
    "The meeting ends at 3 p.m.",
    "Mrs. Jones and Dr. Brown met Prof. White at St. Mary's.",
    "Acme Inc. reported a loss. Widgets Ltd. did not.",
    "Acme Inc. Reported a loss.",
    "The deal closed on Jan. 5. It was signed on Feb. 12 by both sides.",
    "It happened in Jan. Nobody noticed. In Feb. everyone did.",
    "The U.S. is large. The U.K. is smaller. The U.S.A. has 50 states.",
    "The U.S. economy grew 2.5% in Q3. Analysts at J.P. Morgan Chase & Co. "
    "expected 2.1%.",
    "This is e.g. the case. And i.e. this one.",
    "Use e.g. Python. It works.",
    "Apples, pears, etc. Then more fruit.",
    "Apples, pears, etc. and more fruit.",
    "Apples, pears, etc., and more fruit.",
    "Apples, pears, etc.; then more.",
    "Apples, pears, etc.: the list goes on.",
    "It was Smith vs. Jones. Smith won.",
    "It was Smith vs. jones. smith won.",
    "She lives on Main St. in Springfield. He lives on Elm St. Nobody else does.",
    "Item No. 5 is missing. No. 6 is here.",
    "See Fig. 3 for details. The results are clear.",
    "See fig. 3. The results are clear.",
    "Gen. Patton and Col. Klink met Sgt. Schultz and Lt. Dan.",
    "Sen. Kennedy (D-Mass.) and Rep. Smith (R-Calif.) spoke. They agreed.",
    "He moved to Calif. Then he moved to Wash. and later to N.Y. "
    "He likes Tenn. best.",
    "The firm, Smith Bros. Inc., was founded in 1901. It closed in 1990.",
    "Messrs. Smith and Jones arrived. Mmes. Dupont did not.",
    "I met Dr. Who. He said hi.",
    "I met Dr. Smith. He said hi.",
    "I met the dr. yesterday. The dr. was kind.",
    "MR. SMITH WENT TO WASHINGTON. HE ARRIVED AT 5 P.M. ON JAN. 3RD.",
    "mr. smith went to washington. he arrived at 5 p.m. on jan. 3rd.",
    "non-U.S. Sales rose.",
    "non-U.S. sales rose. Ex-Gov. Smith said so.",
    "The ex-Sen. Jones agreed. The pro-U.S.S.R. camp did not.",
    "He has a Ph.D. in physics. She has an M.B.A. from Harvard.",
    "He has a Ph.D. She has an M.B.A.",
    "Mt. Everest is high. Ft. Knox is rich. Ave. Foch is wide.",
    "Prof. Dr. Müller und Dr. med. Schmidt kamen. Sie gingen.",
    "Approx. 5 people came, i.e. almost nobody. Cf. the last meeting.",
    "Jr. and Sr. are suffixes: John Smith Jr. arrived. John Smith Sr. left.",
    "Martin Luther King Jr. Was a leader.",
    "Martin Luther King Jr. was a leader.",
    "The Co. was sold. The Corp. was not. Cos. were merged.",
    # initials and names
    "J. R. R. Tolkien wrote it. John F. Kennedy read it.",
    "J.R.R. Tolkien wrote it. W.E.B. Du Bois read it.",
    "The author is J. K. Rowling. She lives in Scotland.",
    "Ulysses S. Grant was president. So was Harry S. Truman.",
    "e. e. cummings wrote poems. T. S. Eliot did too.",
    "This is Johann S. Bach. He composed music.",
    "I saw J. Smith. then I left.",
    "Plan B. It never works.",
    "Vitamin C. Take it daily.",
    "Option A. The best one. Option B. the worst one.",
    "He was born in the U.S. He moved to the U.K. in 2001.",
    "The letter ends with a P. S. and a P.P.S. Nothing more.",
    "Section 3.2.1. Introduction. The section covers a lot.",
    "_. is an odd token. So is é. and Ü. Really.",
    # ellipses
    "Wait... What happened?",
    "Wait... what happened?",
    "Wait...what happened?",
    "Wait ... What happened?",
    "Wait . . . What happened?",
    "Wait . . . what happened?",
    "word . . . Next word",
    "word... Next word. And...then",
    "He paused.... Then he spoke.",
    "He paused.. Then he spoke.",
    "I don't know… Maybe tomorrow.",
    "The list goes on . . . and on . . . and on.",
    "Well.... I guess so.",
    "To be continued...",
    # numbers
    "Pi is 3.14. E is 2.718. Both are irrational.",
    "The value is .5. The other value is -2.5.",
    "It rose 1,000. Then it fell 2,000.",
    "The 5th. Then the 6th. Then the 7th.",
    "the 5th. Then",
    "He finished 1st. She finished 2nd. They finished 3rd.",
    "Version 1.2.3. Released today.",
    "Version 1.2.3. released today.",
    "It costs $3.50. That is cheap.",
    "It costs $3. That is cheap.",
    "It cost 5. Then it cost 6.",
    "It cost 5. then it cost 6.",
    "In 1999. Nobody knew. In 2000. everybody knew.",
    "The date is 12.05.2020. The time is 10.30.",
    "Call 555-1234. Or call 555-5678.",
    "About 50%. Maybe 60%.",
    "Chapter 11. The company filed.",
    "See page 42. the end.",
    "The score was 3-2. The crowd cheered.",
    "There are -5. degrees outside.",
    "He bought 2. Widgets.",
    # enumerations
    "1. First item 2. Second item 3. Third item",
    "1. first item 2. second item 3. third item",
    "Steps: 1. Open the box. 2. Take it out. 3. Enjoy.",
    "1) First. 2) Second. 3) Third.",
    "(1) First. (2) Second. (3) Third.",
    "a. apples b. bananas c. cherries",
    "A. Apples B. Bananas C. Cherries",
    "i. one ii. two iii. three iv. four",
    "I. Introduction II. Methods III. Results",
    "1.\tFirst\n2.\tSecond\n3.\tThird",
    # quotes, brackets
    'He said "Stop." Then he left.',
    'He said "Stop." then he left.',
    'He said, "Stop!" Then he left.',
    'He asked, "Why?" She did not answer.',
    "He said 'Stop.' Then he left.",
    "He said \u201cStop.\u201d Then he left.",
    "He said \u2018Stop.\u2019 Then he left.",
    "Il a dit \u00abStop.\u00bb Puis il est parti.",
    "Il a dit \u00ab Stop. \u00bb Puis il est parti.",
    "(See above.) Next one.",
    "(see above.) Next one.",
    "[See note 3.] The note is long.",
    "{Braces.} Then text.",
    "He left (finally). Then she arrived.",
    "He left (finally.) Then she arrived.",
    '"(And the same with this one.)" (\'And this one!\') "(\'(And (this)) \'?)"',
    "(How does it deal with this parenthesis?)  \"It should be part of the\n"
    "previous sentence.\" \"(And the same with this one.)\" ('And this one!')\n"
    "\"('(And (this)) '?)\" [(and this. )]",
    'She wrote: "It ended." "It began again," he replied.',
    'The sign read "CLOSED." It was.',
    "He said \"Stop.\"Then he left.",
    "It ended.\" Then it began.",
    "It ended.)) Then it began.",
    "It ended.'\" Then it began.",
    "It ended.\"--Then it began.",
    "It ended.--Then it began.",
    "It ended. -- Then it began.",
    "It ended.\u2014Then it began.",
    "It ended \u2014 then it began. Really \u2013 it did.",
    "He said: \u201cI\u2019m done.\u201d \u201cReally?\u201d she asked.",
    "\u201cReally?\u201d she asked. \u201cYes!\u201d he said.",
    # ? and !
    "Really? Yes. No!",
    "Really?! Yes!!! \"Why?\" she asked.",
    "What?!? No way!!",
    "Is it? is it not? It is!",
    "Who knows?? Nobody!!",
    "Stop! stop! STOP!",
    "Why? Because.",
    "Why ? Because .",
    "Hmm?No.",
    "Very bad acting!!! I promise.",
    "Is this the U.S.? Yes. Is that Dr. Who? No!",
    # URLs, e-mails, code-ish
    "Visit www.example.com. Then sign up.",
    "Visit https://example.com/a.b/c.html?x=1. Then sign up.",
    "Visit http://x.org/a.b. Done.",
    "e-mail me at a.b@c.com. Then visit http://x.org/. Done.",
    "Mail john.smith@example.co.uk. He replies fast.",
    "Open file.txt. Then edit config.yaml and run main.py.",
    "The file is named README.md. It explains everything.",
    "Call os.path.join(). Then call f.close().",
    "Use obj.method(). it returns None.",
    "Set x = 1.5; y = 2. Then print(x).",
    "The regex is [a-z]+\\. Escape the dot.",
    "Run `make test`. Then run `make install`.",
    # whitespace
    "First sentence.    Second sentence.\t\tThird sentence.",
    "First sentence.\n\n\n\nSecond sentence.",
    "First sentence.\n \n \nSecond sentence.",
    "   \n  First sentence.  \n  Second sentence.  \n   ",
    "\tTabbed sentence.\tAnother one.\t",
    "Line one\nline two\nline three.",
    "Line one.\nline two.\nLine three.",
    "No final period here",
    "No final period here. And none here either",
    "Ends with a question?",
    "Ends with spaces.   ",
    "Ends with newline.\n",
    "Ends with an abbreviation etc.",
    "Ends with an initial J.",
    "Ends with a number 5.",
    # unicode
    "Caf\u00e9 au lait. \u00c9mile Zola wrote books. \u00dcber alles.",
    "\u00c9t\u00e9 was hot. \u00e9t\u00e9 was hot.",
    "Stra\u00dfe. Fu\u00dfball. Gr\u00fc\u00dfe.",
    "\u041f\u0440\u0438\u0432\u0435\u0442. \u041a\u0430\u043a "
    "\u0434\u0435\u043b\u0430? \u0425\u043e\u0440\u043e\u0448\u043e!",
    "\u0391\u0398\u0397\u039d\u0391. \u039f\u0394\u039f\u03a3. "
    "\u03b1\u03b8\u03ae\u03bd\u03b1.",
    "\u4f60\u597d\u3002\u6211\u5f88\u597d\u3002 This is English. \u8c22\u8c22!",
    "\u65e5\u672c\u8a9e\u306e\u6587\u3002English sentence. "
    "\u3082\u3046\u4e00\u3064\u3002",
    "Emoji \U0001f600. Rocket \U0001f680! Thumbs \U0001f44d\U0001f3fd.",
    "\u01c5ungla is titlecase. \u01c6ungla is lower.",
    "The \u2160. chapter. The \u2161. chapter.",
    "Number \u0663. Arabic-Indic digit. Number \u00b2. superscript.",
    "Full-width\uff0e Not a period\uff0e Really.",
    "\u0130stanbul. \u0131stanbul. Istanbul.",
    "The \ufb01le. The \ufb02ow.",
    "na\u00efve. Na\u00efve. NA\u00cfVE.",
    "e\u0301te\u0301. E\u0301te\u0301 was hot.",
    "Ka\u0308se. Ka\u0308se ist gut.",
    # misc
    "A sentence (with a parenthetical remark. And another.) Ends here.",
    "Items: apples; pears. Prices: high; low.",
    "He said so . She agreed .",
    "Tokenised text , with spaces before punctuation . Another sentence .",
    "Hello ! How are you ? Fine .",
    ".Leading period. Another.",
    "...Leading ellipsis. Another.",
    "?Leading question. Another.",
    "Sentence one.Sentence two.Sentence three.",
    "Mixed.Case. mixed.case. MIXED.CASE.",
    "a.b.c. d.e.f. G.H.I. Next.",
    "Hyphen- ated. Dash -- dash. Em\u2014dash.",
    "#hashtag. @mention. *bold*. &amp. -minus. ,comma.",
    "End. #hashtag follows. End. @user follows. End. *star follows.",
    "End. (paren follows) End. [bracket follows] End. {brace follows}",
    "End. `backtick follows` End. :colon follows. End. ;semicolon follows.",
    "End. -dash follows. End. ,comma follows. End. &amp follows.",
    # quirks of the context window / word tokenizer / realignment
    "I saw Dr. What?No way.",
    "It is e.g. (Foo)?Bar baz.",
    "He said yes. (No)!Really.",
    "What?!abc. Next one.",
    "a!b. C",
    'Hi. "',
    'Hi."',
    'Hi. " ',
    'Hi. ")',
    "Hello M. Then it went.",
    "Hello M. then it went.",
    "Hello J. Then it went.",
    " Hello. World.",
    "\tHello. World.",
    "\u00a0Hello. World.",
    "\x1fHello. World.",
]


def hand_texts():
    return list(HAND)


# ---------------------------------------------------------------------------
# Cases built from the data files
# ---------------------------------------------------------------------------

def cap(word):
    return word[:1].upper() + word[1:]


def abbrev_forms(abbrev, rng):
    """The written form of an abbreviation type (without its final period)."""
    style = rng.choice(["title", "title", "upper", "lower"])
    if style == "upper" or ("." in abbrev and style == "title"):
        return abbrev.upper()
    if style == "title":
        return cap(abbrev)
    return abbrev


def abbrev_texts(abbrevs, starters, cls, rng):
    """Every abbreviation of abbrev_types.txt in three contexts: before a
    capitalised word, a lowercase word and a capitalised sentence starter;
    four contexts per text, sentence-final use included."""
    items = sorted(abbrevs)
    contexts = []
    for ab in items:
        form = abbrev_forms(ab, rng)
        up = cap(rng.choice(cls["upper_true"] + cls["upper_only"]
                            + cls["upper_mixed"]))
        low = rng.choice(cls["lower_false"])
        st = cap(rng.choice(sorted(starters)))
        contexts.append(f"They mentioned {form}. {up} came later.")
        contexts.append(f"the note said {form}. {low} was written after it.")
        contexts.append(f"Everyone knew {form}. {st} nobody said it.")
        if rng.random() < 0.3:
            contexts.append(f"It was signed by {form}.")
    rng.shuffle(contexts)
    texts = []
    i = 0
    while i < len(contexts):
        k = rng.randint(5, 7)
        sep = rng.choice([" ", " ", " ", "\n", "  "])
        texts.append(sep.join(contexts[i:i + k]))
        i += k
    return texts


def collocation_texts(collocs, cls, rng):
    """Each collocation (first, second) of collocations.tab, with the first
    word as written before a period and the second word capitalised and in
    lower case; plus a non-collocation control."""
    texts = []
    numbers = ["1987", "5", "12", "3.5", "1,200", "42"]
    for first, second in sorted(collocs):
        if first == "##number##":
            left = rng.choice(numbers)
        else:
            left = first.upper() if len(first) == 1 else cap(first)
        other = cap(rng.choice(cls["upper_only"]))
        texts.append(
            f"It was listed under {left}. {cap(second)} said so. "
            f"Then {left}. {second} followed. And {left}. {other} "
            f"closed it.")
    return texts


def starter_texts(starters, abbrevs, rng):
    """Every frequent sentence starter after an abbreviation (capitalised and
    lower case), an initial, a number, an ellipsis and an ordinary word."""
    texts = []
    abbr_list = sorted(a for a in abbrevs if re.fullmatch(r"[a-z]{2,5}", a))
    for st in sorted(starters):
        ab = cap(rng.choice(abbr_list))
        ab2 = rng.choice(sorted(a for a in abbrevs if "." in a)).upper()
        ini = rng.choice("ABCDEFGHJKLMNOPRSTW")
        num = rng.choice(["5", "1990", "3.5", "12", "100"])
        parts = [
            f"We saw {ab}. {cap(st)} the rest stayed.",
            f"We saw {ab}. {st} the rest stayed.",
            f"The firm moved to the {ab2}. {cap(st)} prices rose.",
            f"It was 9 p.m. {cap(st)} it ended.",
            f"Signed by {ini}. {cap(st)} it was filed.",
            f"In {num}. {cap(st)} it was done.",
            f"In {num}. {st} it was done.",
            f"It trailed off... {cap(st)} it went on.",
            f"He stopped. {st} it went on.",
            f"He stopped . . . {cap(st)} it went on.",
        ]
        texts.append(rng.choice([" ", " ", "\n"]).join(parts))
    return texts


def ortho_matrix_texts(cls, abbrevs, rng):
    """Left contexts that reach the second pass (abbreviation, initial,
    number, ellipsis, ordinary word, known multi-period abbreviation) times
    next words from each orthographic class, plus words never seen in the
    data; three occurrences per text."""
    plain_abbrevs = sorted(a for a in abbrevs if re.fullmatch(r"[a-z]{2,5}", a))
    dotted_abbrevs = sorted(a for a in abbrevs if "." in a and a != ". . ")
    unseen = ["Zorblax", "Quuxley", "Flimbo", "Vexnor", "Trazzle", "Grumbit"]
    unseen_lower = [w.lower() for w in unseen]
    lefts = {
        "abbr": lambda: cap(rng.choice(plain_abbrevs)),
        "dotted": lambda: rng.choice(dotted_abbrevs).upper(),
        "initial": lambda: rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
        "number": lambda: rng.choice(["5", "17", "1989", "2.5", "-3", "1,000",
                                      ".75", "10-12"]),
        "ordinal": lambda: rng.choice(["5th", "1st", "22nd", "3rd"]),
        "ellipsis": lambda: rng.choice(["wait...", "well....", "hmm..",
                                        "so . . ."]),
        "word": lambda: rng.choice(["ended", "stopped", "finished", "left"]),
    }
    nexts = {
        "upper_true": lambda: cap(rng.choice(cls["upper_true"])),
        "upper_only": lambda: cap(rng.choice(cls["upper_only"])),
        "upper_mixed": lambda: cap(rng.choice(cls["upper_mixed"])),
        "lower_false": lambda: rng.choice(cls["lower_false"]),
        "lower_unknown": lambda: rng.choice(cls["lower_unknown"]),
        "upper_unseen": lambda: rng.choice(unseen),
        "lower_unseen": lambda: rng.choice(unseen_lower),
        "punct": lambda: rng.choice([",", ";", ":", "-", "(x)", "'quoted'",
                                     '"quoted"', "[1]", "5", "$5"]),
    }
    texts = []
    for lname in lefts:
        for nname in nexts:
            parts = []
            for _ in range(3):
                left = lefts[lname]()
                nxt = nexts[nname]()
                if lname == "ellipsis":
                    parts.append(f"It was {left} {nxt} went on.")
                else:
                    parts.append(f"It was {left}. {nxt} went on.")
            texts.append(" ".join(parts))
    return texts


# ---------------------------------------------------------------------------
# News-style summaries and chatbot answers
# ---------------------------------------------------------------------------

NEWS = [
    "Harry Potter star Daniel Radcliffe gets \u00a320M fortune as he turns 18 "
    "Monday .\nYoung actor says he has no plans to fritter his cash away .\n"
    "Radcliffe's earnings from first five Potter films have been held in "
    "trust fund .",
    "By . Daily Mail Reporter . PUBLISHED: . 12:53 EST, 10 January 2013 . | . "
    "UPDATED: . 14:07 EST, 10 January 2013 . The man was arrested on Tuesday "
    "night. Police said he was 23.",
    "(CNN) -- The U.S. Supreme Court on Monday agreed to hear a case about "
    "free speech. The justices will hear arguments in Oct. and rule by June. "
    "\"This is a big deal,\" said Prof. Jane Doe of Yale Law School.",
    "WASHINGTON (CNN) -- Sen. John McCain, R-Ariz., said Sunday that the "
    "U.S. should act. \"We cannot wait,\" he told CNN's \"State of the "
    "Union.\" The White House declined to comment.",
    "LONDON, England (Reuters) -- Shares of Acme Corp. rose 5.3% on Tuesday "
    "after the company beat estimates. Acme Inc.'s rival, Widget Co., fell "
    "2.1 percent. Trading volume was 1.2 million shares.",
    "Police say the suspect, 23, was arrested at 2:30 a.m. Sunday .\n"
    "He faces charges of burglary and assault .\nThe victim, a 67-year-old "
    "woman, is in stable condition at St. Luke's Hospital .",
    "NEW: The death toll rises to 15, officials say .\nThe quake struck at "
    "4:15 p.m. local time .\nIt had a magnitude of 6.1, the U.S. Geological "
    "Survey says .",
    "The team won 3-1 on Saturday. Striker J. Rodriguez scored twice. "
    "Coach Mike O'Neil said: 'We were brilliant.' The club is now 2nd in the "
    "league, three points behind Man. United.",
    "Apple Inc. unveiled the iPhone 15 on Tuesday. It costs $799. Pre-orders "
    "start Sept. 15, with deliveries from Sept. 22. Analysts at Morgan "
    "Stanley expect sales of 80 million units.",
    "Former President George W. Bush spoke at the event. He praised "
    "Gen. David H. Petraeus. Mrs. Laura Bush did not attend.",
    "A 6.2-magnitude earthquake hit central Italy early Wednesday. At least "
    "38 people died, officials said. Rescuers worked through the night in "
    "Amatrice, about 100 km (60 mi.) north-east of Rome.",
    "The company, based in St. Louis, Mo., employs 5,000 people. Its CEO, "
    "Dr. Anne Lee, Ph.D., took over in Jan. 2019. Revenue rose to $4.5 bn. "
    "last year.",
    "Scientists say the comet will pass within 0.1 AU of Earth. It was "
    "discovered by amateur astronomer T. Nakamura . It will be visible "
    "without a telescope in Nov.",
    "Officials: \"No evidence of foul play.\" Family: \"We want answers.\" "
    "The investigation continues.",
    "The jury deliberated for 12 hrs. It found the defendant not guilty. "
    "The judge, Hon. Mary K. Smith, thanked the jurors.",
    "Manchester City beat Chelsea 2-0 .\nKevin De Bruyne scored in the 34th "
    "minute .\nSergio Aguero added a second after the break .\nCity are now "
    "top of the Premier League .",
    "Hurricane Katrina hit New Orleans on Aug. 29, 2005. More than 1,800 "
    "people died. The U.S. government was criticised for its slow response.",
    "The NHS said waiting times rose by 12.5 per cent. Health Secretary "
    "Jeremy Hunt called the figures \u201cdisappointing\u201d. Labour "
    "blamed cuts.",
    "Mr. and Mrs. Smith, of 12 Oak Ave., celebrated their 50th anniversary. "
    "They met in 1969 at a dance in St. Paul, Minn.",
    "The report (pp. 12-15) lists three causes. First, poor training. "
    "Second, old equipment. Third, bad luck.",
]

CHAT = [
    "Here are the steps:\n\n1. Install Python 3.11.\n2. Run `pip install "
    "nltk`.\n3. Call `nltk.sent_tokenize(text)`.\n\n- Note: it needs "
    "punkt_tab.\n- Done.",
    "Sure! Here's a summary of the article:\n\n- The U.S. economy grew 2.5% "
    "in Q3.\n- Unemployment fell to 3.8%.\n- Analysts expect the Fed to hold "
    "rates steady.\n\nLet me know if you need more details.",
    "**Answer:** The capital of France is Paris. It has about 2.1 million "
    "residents. The metro area has over 12 million.",
    "To fix the error, do the following:\n1. Open `config.yaml`.\n2. Set "
    "`timeout: 30`.\n3. Restart the service (e.g. `systemctl restart app`).\n"
    "That should resolve it.",
    "## Summary\n\nThe study found three things. First, sleep matters. "
    "Second, diet matters.\n\n## Conclusion\n\nMore research is needed.",
    "```python\ndef f(x):\n    return x + 1.\n```\nThe function above adds "
    "one. Call it with f(2). It returns 3.",
    "I'm sorry, but I can't help with that. However, I can suggest some "
    "resources. Would you like that?",
    "Great question! The answer depends on several factors:\n\n* Budget.\n"
    "* Timeline.\n* Team size.\n\nIn short: it depends.",
    "Step 1. Preheat the oven to 180\u00b0C.\nStep 2. Mix the flour, sugar "
    "and eggs.\nStep 3. Bake for 25 min. or until golden.",
    "The main points are: (a) cost, (b) speed and (c) quality. Of these, "
    "cost is the most important. Speed is second.",
    "Q: What is 2+2?\nA: It is 4.\nQ: And 3.5 * 2?\nA: 7.0.",
    "1. **Python** \u2013 easy to learn.\n2. **Rust** \u2013 fast and safe.\n"
    "3. **Go** \u2013 simple concurrency.",
    "The answer is 42. (See *The Hitchhiker's Guide to the Galaxy*, ch. 27.) "
    "Douglas Adams chose it as a joke.",
    "In summary, the article says that the company's revenue grew by 15% "
    "year over year, driven by strong demand in Asia, while costs rose only "
    "5%",
    "Translation: \u00abBonjour, comment \u00e7a va?\u00bb means \"Hello, how "
    "are you?\" in French. It's a common greeting.",
    "- item one\n- item two\n- item three",
    "Use the `--verbose` flag. For example: `app --verbose run`. It prints "
    "more output, e.g. timings, etc. You can also set VERBOSE=1.",
    "The formula is E = mc^2. Here, m is mass and c is approx. 3.0 x 10^8 "
    "m/s. Einstein published it in 1905.",
    "Yes.",
    "No, that's not correct. The Earth orbits the Sun, not vice versa. This "
    "was shown by Copernicus (1473\u20131543).",
]

NEWS_NAMES = ["John Smith", "Maria Garcia", "Li Wei", "Anna M\u00fcller",
              "James O'Brien", "Dr. Sarah Connor", "Prof. Alan Grant",
              "Gen. Mark Milley", "Sen. Elizabeth Warren", "J. Robert Oppenheimer"]
NEWS_PLACES = ["Washington, D.C.", "St. Louis", "New York", "the U.K.",
               "Los Angeles, Calif.", "Mt. Vernon", "Paris", "S\u00e3o Paulo",
               "the U.S.", "Ft. Worth, Texas"]
NEWS_VERBS = ["said", "told reporters", "announced", "confirmed", "denied",
              "wrote in a statement"]
NEWS_WHEN = ["on Monday", "late Tuesday", "at 9 a.m. Wednesday",
             "on Jan. 5", "in Feb. 2021", "at 3:30 p.m. ET", "last week",
             "on Sept. 11", "early Sunday"]
NEWS_FACTS = ["the deal is worth $2.5 billion",
              "sales fell 3.2% in the 2nd quarter",
              "the vote was 52-48",
              "about 1,200 people were evacuated",
              "the company will cut 5,000 jobs",
              "the law takes effect Oct. 1",
              "inflation hit 9.1%, a 40-year high",
              "the U.S. and the E.U. agreed on new rules",
              "Acme Corp. bought Widgets Inc. for $300 mln.",
              "the suspect, 34, was charged with murder"]


def news_templated(rng, n):
    texts = []
    for _ in range(n):
        k = rng.randint(2, 5)
        sents = []
        for _ in range(k):
            name = rng.choice(NEWS_NAMES)
            form = rng.choice(["plain", "quote", "highlight", "place"])
            fact = rng.choice(NEWS_FACTS)
            if form == "plain":
                sents.append(f"{name} {rng.choice(NEWS_VERBS)} "
                             f"{rng.choice(NEWS_WHEN)} that {fact}.")
            elif form == "quote":
                q = cap(fact)
                qo, qc = rng.choice([('"', '"'), ("\u201c", "\u201d"),
                                     ("'", "'")])
                sents.append(f"{qo}{q}.{qc} {name} {rng.choice(NEWS_VERBS)}.")
            elif form == "highlight":
                sents.append(f"{cap(fact)} , {name} says .")
            else:
                sents.append(f"In {rng.choice(NEWS_PLACES)}, {fact}.")
        sep = rng.choice([" ", "\n", " ", "\n\n"])
        texts.append(sep.join(sents))
    return texts


def chat_templated(rng, n):
    topics = ["Python", "Rust", "the U.S. Constitution", "photosynthesis",
              "the French Revolution", "machine learning", "tax law",
              "Dr. Seuss", "St. Petersburg", "version 3.11"]
    facts = ["it was created in 1991", "it is used e.g. in web servers",
             "it has approx. 300 pages", "it was written by J. Madison",
             "the first release was v0.1. It was buggy",
             "costs are about $5.99/mo.", "see Fig. 2 for details",
             "it runs at 3 p.m. daily", "it depends on the No. of users",
             "results vary, i.e. no guarantee"]
    texts = []
    for _ in range(n):
        topic = rng.choice(topics)
        k = rng.randint(2, 5)
        picks = rng.sample(facts, k)
        form = rng.choice(["numbered", "bullets", "prose", "markdown"])
        if form == "numbered":
            body = "\n".join(f"{i + 1}. {cap(f)}." for i, f in enumerate(picks))
            text = f"Here is what I know about {topic}:\n\n{body}"
        elif form == "bullets":
            body = "\n".join(f"- {cap(f)}" + rng.choice([".", "", "!"])
                             for f in picks)
            text = f"Key facts about {topic}:\n{body}\nHope this helps!"
        elif form == "prose":
            text = f"Regarding {topic}: " + " ".join(
                f"{cap(f)}." for f in picks)
        else:
            body = "\n".join(f"* **{cap(f)}**." for f in picks)
            text = f"### {topic}\n\n{body}\n\n> Note: details may vary."
        texts.append(text)
    return texts


# ---------------------------------------------------------------------------
# Random token soups
# ---------------------------------------------------------------------------

def soup_texts(rng, n, cls, abbrevs, starters, prose_words):
    abbr = sorted(abbrevs - {". . "})
    pieces = {
        "word": lambda: rng.choice(prose_words),
        "Word": lambda: cap(rng.choice(prose_words)),
        "ortho": lambda: rng.choice(cls[rng.choice(sorted(cls))]),
        "Ortho": lambda: cap(rng.choice(cls[rng.choice(sorted(cls))])),
        "starter": lambda: rng.choice([cap, str])(rng.choice(sorted(starters))),
        "abbr": lambda: rng.choice([cap, str.upper, str])(rng.choice(abbr)) + ".",
        "initial": lambda: rng.choice("ABCDEFGHIJKLMNOPRSTUVWXYZabcx") + ".",
        "number": lambda: rng.choice(["5", "5.", "3.14", "1,000", "-2", "2nd",
                                      "1990s", "10.", "0.5.", "7th."]),
        "end": lambda: rng.choice(prose_words) + rng.choice(
            [".", ".", ".", "?", "!", "...", ".)", '."', ".\u201d", "?!",
             ".'", "!)", ".]", "..", "....", "?\""]),
        "punct": lambda: rng.choice([",", ";", ":", "(", ")", '"', "'", "-",
                                     "--", "\u2014", "...", ". . .", ".", "?",
                                     "!", "\u201c", "\u201d", "[", "]",
                                     "\u00ab", "\u00bb", "*", "#", "@", "&"]),
        "unicode": lambda: rng.choice(["caf\u00e9", "\u00c9cole", "\u00fcber",
                                       "\u00dcbung", "na\u00efve.",
                                       "\u4e2d\u6587", "\U0001f600",
                                       "\u041c\u043e\u0441\u043a\u0432\u0430.",
                                       "\u0130z.", "\u00e9."]),
    }
    weights = {"word": 30, "Word": 8, "ortho": 6, "Ortho": 6, "starter": 5,
               "abbr": 8, "initial": 5, "number": 5, "end": 14, "punct": 8,
               "unicode": 2}
    names = list(weights)
    wts = [weights[k] for k in names]
    seps = [" "] * 30 + ["  ", "\n", "\n\n", "\t", " \n ", "\u00a0", "\r\n",
                         "", "\n \n"]
    texts = []
    for _ in range(n):
        k = rng.randint(8, 60)
        out = []
        for i in range(k):
            kind = rng.choices(names, wts)[0]
            out.append(pieces[kind]())
            out.append(rng.choice(seps) if i < k - 1 else "")
        text = "".join(out)
        if rng.random() < 0.2:
            text = rng.choice([" ", "\n", "  \n", "\t"]) + text
        if rng.random() < 0.2:
            text = text + rng.choice([" ", "\n", "\n\n", "  "])
        texts.append(text)
    return texts


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def dump_line(obj):
    s = json.dumps(obj, ensure_ascii=False)
    # JSON allows these raw inside strings, but line splitters (Python's
    # str.splitlines, some editors) treat them as line ends.
    for ch in ("\x85", "\u2028", "\u2029"):
        s = s.replace(ch, "\\u%04x" % ord(ch))
    return s


def write_readme_section(counts, n_lines, size, jsonl_sha, source, cmp_info,
                         command):
    path = os.path.join(OUT_DIR, "README.md")
    with open(path, encoding="utf-8") as f:
        old = f.read()
    idx = old.find("\n" + README_HEADING + "\n")
    base = old if idx < 0 else old[:idx]
    # exactly one blank line before the section, however often it is rewritten
    base = base.rstrip("\n") + "\n"
    sha_rows = "\n".join(
        f"| `{DATA_FILES[rel][0]}` | {len(data)} | `{sha256(data)}` |"
        for rel, data in sorted(counts["data"].items(),
                                key=lambda kv: DATA_FILES[kv[0]][0]))
    c = counts
    if cmp_info is None:
        compare = """\
The comparison with a newer NLTK was not run for this version of the file
(pass `--compare-python` with an interpreter that has nltk >= 3.9)."""
    else:
        k = cmp_info
        rest_chars = ", ".join(f"U+{ord(ch):04X}" for ch in k["rest_chars"])
        ctl_chars = ", ".join(f"U+{ord(ch):04X}" for ch in k["controls_chars"])
        compare = f"""\
Measured by this script (`--compare-python {k['python']}`: nltk
{k['nltk']}, regex {k['regex']}, CPython {k['python_version']}; its
`nltk.sent_tokenize` pointed at these same punkt_tab files, loaded
parameters checked equal): **{k['n']} of the {n_lines} texts are split
differently by nltk {k['nltk']}**. {k['curly']} of them contain curly quotes
or guillemets, {k['controls']} contain{'s' if k['controls'] == 1 else ''}
U+001C..U+001F ({ctl_chars or 'none'}) and no such quote, and {k['rest']}
contain{'s' if k['rest'] == 1 else ''} neither (non-ASCII characters in
{'it' if k['rest'] == 1 else 'them'}: {rest_chars or 'none'}). The reasons:
nltk 3.10.4 adds U+2018, U+2019, U+201C, U+201D, U+00AB and U+00BB to
Punkt's non-word characters and to its boundary-realignment class (so a
period directly before or after one is handled like one next to an ASCII
quote); and it compiles Punkt's expressions with the third-party `regex`
module (`nltk.redos`) instead of `re`: `regex`'s `\\s` leaves out
U+001C..U+001F (which `re`'s `\\s`, i.e. `str.isspace()`, includes), and
its `\\w` differs from `re`'s (`re` counts `str.isalnum()` characters such
as U+00B2 SUPERSCRIPT TWO as `\\w`, so `².` is an initial for 3.8.1 and
not for 3.10.4)."""
        compare = textwrap.fill(" ".join(compare.split()), width=76,
                                break_long_words=False,
                                break_on_hyphens=False)
    section = f"""
{README_HEADING}

Reference outputs of NLTK's sentence splitter, used to test the Rust
re-implementation of `nltk.sent_tokenize(text)` (English Punkt). The MLPerf
LLM accuracy scripts call it as `"\\n".join(nltk.sent_tokenize(text.strip()))`
before ROUGE-Lsum, and the MLPerf reference evaluation pins `nltk==3.8.1`
(`mlcommons/inference`, `language/llama3.1-8b/requirements.txt`), so the
expected sentences come from **nltk {nltk.__version__}**.

nltk 3.8.1's `sent_tokenize` loads the pickled `punkt` model
(`tokenizers/punkt/english.pickle`), which cannot be downloaded here. The
tokenizer is instead built from the English `punkt_tab` files below (the
tab-separated form of the Punkt models, which NLTK 3.9+ loads): a
`nltk.tokenize.punkt.PunktParameters` filled exactly as NLTK 3.9+'s
`load_punkt_params` fills it (`collocations.tab` -> set of tuples split on
tab; `sent_starters.txt`, `abbrev_types.txt` -> sets of lines, one trailing
`\\n` removed; `ortho_context.tab` -> `defaultdict(int)` of word -> int),
then `PunktSentenceTokenizer(params).tokenize(text)` of nltk 3.8.1 (whose
Punkt code uses the stdlib `re`). The punkt_tab files were converted by the
NLTK maintainers from the same Punkt models that the 3.8.1 pickles hold;
**that the English punkt_tab parameters equal those of `english.pickle` is
assumed, not verified here**, since the pickle is not available.

Generated on {FIXTURE_DATE} by

    {command}

with nltk {nltk.__version__} installed from PyPI into `/tmp/nltk381-venv`
(`pip install nltk=={REQUIRED_NLTK}`; the script refuses to run with any
other nltk version).
Python: {platform.python_implementation()} {platform.python_version()}.
Random seed: {SEED}.

### `punkt_tab/`

The English model of NLTK's `punkt_tab` data package (the tab-separated
successor of the pickled `punkt` model), byte-for-byte as NLTK 3.9+ reads it
from `<nltk_data>/tokenizers/punkt_tab/english/`, and the package's `README`
(origin of the models: "Pretrained Punkt Models -- Jan Strunk"; the English
model is listed as trained on Wall Street Journal text of the Penn Treebank
(LDC), ~469,000 tokens, by Jan Strunk / Tibor Kiss; the README has no licence
text).
`nltk.download("punkt_tab")` needs GitHub; the files were instead taken from
the PyPI wheel `{WHEEL_NAME}` (SHA-256 `{WHEEL_SHA256}`),
paths `llama_index/core/_static/nltk_cache/tokenizers/punkt_tab/english/*`
and `.../punkt_tab/README`. The same wheel carries the nltk_data archive
`.../tokenizers/punkt_tab.zip` (entries dated 2024-07-09), whose English files
and README are identical to these.

| file | bytes | SHA-256 |
|------|-------|---------|
{sha_rows}

Formats (UTF-8, `\\n` line ends, no newline after the last line; NLTK strips
one trailing `\\n` per line and nothing else):

* `abbrev_types.txt`: one abbreviation type per line, lower case, without
  its final period (`mr`, `u.s`, `p.m`). {c['abbrevs']} entries; one of them is
  `". . "` (dot, space, dot, space), which makes the token `. . .` an
  abbreviation.
* `collocations.tab`: `first<TAB>second` per line, {c['collocs']} pairs of
  word types where a period-final first word is not a sentence end
  (`##number##` stands for any number).
* `sent_starters.txt`: one frequent sentence starter per line, lower case
  ({c['starters']} words).
* `ortho_context.tab`: `type<TAB>flags` per line ({c['ortho']} types); flags
  are OR-ed bits BEG_UC=2, MID_UC=4, UNK_UC=8, BEG_LC=16, MID_LC=32,
  UNK_LC=64 (`nltk/tokenize/punkt.py`, `_ORTHO_*`). Types may end in a
  period (`mr.`) or contain digits, hyphens or other punctuation.

### `sent_tokenize.jsonl`

{n_lines} lines ({size} bytes, SHA-256 `{jsonl_sha}`), UTF-8 with non-ASCII
written literally except U+0085, U+2028 and U+2029 (written as `\\u`
escapes), one JSON object each:

    {{"text": str, "sentences": [str, ...]}}

where `sentences = PunktSentenceTokenizer(params).tokenize(text)` (nltk
{nltk.__version__}, `params` from punkt_tab as above; what nltk 3.8.1's
`sent_tokenize(text)` returns if the pickle holds the same parameters) for
the stored `text` exactly (no `strip()` is applied, some texts carry leading
or trailing whitespace on purpose). Each sentence is the slice `text[s:e]`
of `span_tokenize(text)` (checked by the script), so sentences keep their
inner whitespace and newlines. Empty and whitespace-only texts give `[]`.

Texts, in this order (the same texts as the earlier, nltk-3.10.4-based
version of this file; only expected sentences changed):

* {c['prose']} texts of real English prose: paragraphs of docstrings of the
  top-level `*.py` files of the stdlib (as for the ROUGE fixtures), 1-8
  sentences each, with the original wrapping, re-flowed, or with newlines,
  blank lines, `\\r\\n` or indentation between paragraphs;
* {c['hand']} hand-written cases: abbreviations (Mr., Mrs., Dr., Prof., Inc.,
  Ltd., Jan., Feb., U.S., e.g., i.e., etc., vs., St., No., Fig., p.m., a.m.),
  initials (J. R. R. Tolkien, John F. Kennedy), ellipses (`...`, `. . .`,
  `\u2026`), numbers, decimals, ordinals, enumerations, quotes and brackets
  after sentence ends (ASCII, curly, guillemets), `?`/`!` runs, lowercase
  sentence starts, URLs and e-mail addresses, tabs, runs of spaces, `\\r\\n`,
  NBSP, U+2028, U+001C..U+001F (whitespace to `str.isspace` and `re`'s
  `\\s`, but not to the `regex` engine's `\\s`), non-ASCII letters and
  digits, dashes, empty and whitespace-only texts, texts with no final
  punctuation;
* {c['abbrev']} texts that use every abbreviation of `abbrev_types.txt` before a
  capitalised word, a lowercase word and a capitalised sentence starter;
* {c['colloc']} texts, one per collocation of `collocations.tab`;
* {c['starter']} texts with every sentence starter of `sent_starters.txt` after
  abbreviations, initials, numbers, ellipses and ordinary words;
* {c['matrix']} texts crossing left contexts (abbreviation, dotted abbreviation,
  initial, number, ordinal, ellipsis, ordinary word) with next words picked
  by their `ortho_context.tab` flags (every answer of the orthographic
  heuristic), unseen words and punctuation;
* {c['news']} news-style texts (CNN/DailyMail articles and highlights, `" ."`
  tokenised style, "By . Daily Mail Reporter ." by-lines) and {c['chat']}
  chatbot-style answers (numbered lists, `- ` bullets, markdown, code);
* {c['soup']} random token soups of all of the above with random whitespace.

Version note (nltk 3.8.1 vs. newer NLTK, same parameters):
{compare}

Punkt data source for this run: {source}.
"""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(base + section)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel", default=WHEEL_DEFAULT,
                    help="llama-index-core wheel carrying the punkt_tab data")
    ap.add_argument("--compare-python", default=None, metavar="PYTHON",
                    help="interpreter with a newer nltk (>= 3.9, e.g. "
                         "/tmp/rouge-venv/bin/python with nltk 3.10.4) whose "
                         "sent_tokenize is compared on every text; the "
                         "count of differences goes into the README")
    args = ap.parse_args()

    files, source = read_data_files(args.wheel)
    install_data(files)
    params = parse_data(files)
    abbrevs, starters, collocs, ortho = params
    tok = build_tokenizer(abbrevs, starters, collocs, ortho)
    p = tok._params
    assert p.abbrev_types == abbrevs and p.sent_starters == starters
    assert p.collocations == collocs and dict(p.ortho_context) == ortho

    cls = ortho_classes(ortho)
    for name, words in cls.items():
        assert words, name
    groups = [
        ("prose", prose_texts(random.Random(SEED + 1))),
        ("hand", hand_texts()),
        ("abbrev", abbrev_texts(abbrevs, starters, cls,
                                random.Random(SEED + 2))),
        ("colloc", collocation_texts(collocs, cls, random.Random(SEED + 3))),
        ("starter", starter_texts(starters, abbrevs,
                                  random.Random(SEED + 4))),
        ("matrix", ortho_matrix_texts(cls, abbrevs, random.Random(SEED + 5))),
        ("news", NEWS + news_templated(random.Random(SEED + 6), 10)),
        ("chat", CHAT + chat_templated(random.Random(SEED + 7), 10)),
    ]
    prose_words = sorted({w for t in groups[0][1]
                          for w in re.findall(r"[a-z]{2,10}", t)})
    groups.append(("soup", soup_texts(random.Random(SEED + 8), 30, cls,
                                      abbrevs, starters, prose_words)))

    counts = {}
    seen = set()
    lines = []
    all_texts = []
    all_sents = []
    for name, texts in groups:
        n = 0
        for text in texts:
            if text in seen:
                continue
            seen.add(text)
            sents = tok.tokenize(text)
            spans = list(tok.span_tokenize(text))
            assert sents == [text[s:e] for s, e in spans], text
            lines.append(dump_line({"text": text, "sentences": sents}))
            all_texts.append(text)
            all_sents.append(sents)
            n += 1
        counts[name] = n

    cmp_info = None
    if args.compare_python:
        cmp_info = compare_other_nltk(args.compare_python, files, params,
                                      all_texts, all_sents)

    data = ("\n".join(lines) + "\n").encode("utf-8")
    assert len(data) <= MAX_BYTES, len(data)
    out = os.path.join(OUT_DIR, "sent_tokenize.jsonl")
    with open(out, "wb") as f:
        f.write(data)
    counts.update(abbrevs=len(abbrevs), collocs=len(collocs),
                  starters=len(starters), ortho=len(ortho), data=files)
    command = "/tmp/nltk381-venv/bin/python scripts/make_punkt_fixtures.py"
    if os.path.exists(args.wheel):
        command += f" \\\n        --wheel {args.wheel}"
    if args.compare_python:
        command += f" \\\n        --compare-python {args.compare_python}"
    write_readme_section(counts, len(lines), len(data), sha256(data), source,
                         cmp_info, command)

    print(f"python {platform.python_version()}, nltk {nltk.__version__}; "
          f"punkt_tab from {source}")
    print(f"sent_tokenize.jsonl: {len(lines)} texts, {len(data)} bytes, "
          f"sha256 {sha256(data)}")
    print("  " + ", ".join(f"{k} {counts[k]}" for k, _ in groups))
    if cmp_info is not None:
        k = cmp_info
        print(f"nltk {k['nltk']} ({k['python']}) splits {k['n']} texts "
              f"differently: {k['curly']} with curly quotes/guillemets, "
              f"{k['controls']} with U+001C..U+001F, {k['rest']} other "
              f"({', '.join(f'U+{ord(c):04X}' for c in k['rest_chars'])})")


if __name__ == "__main__":
    main()
