#!/usr/bin/env python3
"""Record what the MLPerf reference LLM summarisation evaluations print.

The MLPerf reference accuracy scripts

  * mlcommons/inference language/llama2-70b/evaluate-accuracy.py
    (read at commit 3ffcaf475ec7d0f47fb54716c1586d3ba9db443f), and
  * mlcommons/inference language/llama3.1-8b/evaluation.py
    (read at commit 53ae8230098c34120274572cd406b8248e738c85)

both decode an MLPerf accuracy log into answers and then, with HF evaluate's
rouge metric (use_stemmer=True, no aggregation): strip every answer and
target, put each of their sentences (nltk.sent_tokenize) on its own line,
score each pair's ROUGE-1/2/L/Lsum F-measures, and print a "Results" heading
and a dict.  llama2-70b's dict: each ROUGE mean times 100 rounded to 4 places
(numpy's round of np.mean), gen_len (characters of the processed answers),
gen_num, gen_tok_len (logged token ids of the deduplicated entries) and
tokens_per_sample (gen_tok_len / gen_num rounded to 1 place, Python's round).
llama3.1-8b's: the same ROUGE means as strings, gen_len and gen_num.

This script computes those lines the same way, with the same libraries, on a fixed
set of ~300 (prediction, reference, token count) triples, for the Rust port
to be compared against to four decimals.

What it makes: tests/fixtures/accuracy/summarization_eval.json

    {"pairs": [{"prediction": str, "reference": str, "tokens": int}, ...],
     "llama2":  "<exactly what llama2-70b's evaluate-accuracy.py prints>",
     "llama31": "<exactly what llama3.1-8b's evaluation.py prints>",
     "per_sample": [{"rouge1": f, "rouge2": f, "rougeL": f, "rougeLsum": f},
                    ...]}

``pairs[i]`` plays the i-th deduplicated accuracy-log entry: ``prediction``
is the decoded answer (before postprocess_text), ``reference`` the dataset
target, ``tokens`` the number of token ids in the log entry.  ``per_sample``
holds the unrounded ROUGE F-measures of each pair (after postprocess_text).
The printed texts include the leading "\\n" and the final "\\n" of print().
Written one pair / score dict per line, UTF-8 (non-ASCII literal; U+0085,
U+2028, U+2029 escaped, though the texts contain none).  The README section
"## `summarization_eval.json`" is appended, or replaced if present (the
other sections are kept).

Versions (PyPI, in /tmp/nltk381-venv, CPython 3.11.7): nltk 3.8.1 (the
version the MLPerf reference pins), rouge_score 0.1.2, numpy 1.26.4,
absl-py 2.5.1, six 1.17.0.  The script refuses any nltk but 3.8.1.

Command (from the repository root):

    /tmp/nltk381-venv/bin/python scripts/make_summarization_fixture.py

Deviations from running the reference scripts themselves:

  1. No accuracy log and no tokenizer: the reference scripts decode the
     logged token ids with the HF tokenizer (``batch_decode(...,
     skip_special_tokens=True)``) after deduplicating log entries by qsl_idx
     (first wins).  Here the decoded texts are given directly (one per
     qsl_idx, so deduplication is a no-op), and ``tokens`` stands for
     ``len(np.frombuffer(bytes.fromhex(entry["data"]), np.int64))``.
  2. ``evaluate.load("rouge")`` needs the Hugging Face hub, which is not
     reachable here.  The metric's ``_compute`` (huggingface/evaluate,
     metrics/rouge/rouge.py, read at commit 085121968c00e3adfff7ab1781a92d5e
     2e85d224) is, for these arguments,

         scorer = rouge_scorer.RougeScorer(
             rouge_types=["rouge1", "rouge2", "rougeL", "rougeLsum"],
             use_stemmer=True, tokenizer=None)
         scores = [scorer.score(ref, pred) for ref, pred in
                   zip(references, predictions)]
         result = {key: list(s[key].fmeasure for s in scores)
                   for key in scores[0]}

     and this script calls rouge_score exactly that way.  (evaluate passes
     the strings through an Arrow table first, which leaves them unchanged.)
  3. ``nltk.sent_tokenize`` (which in nltk 3.8.1 loads the pickled ``punkt``
     model, not downloadable here) is replaced by the ``.tokenize`` of
     ``PunktSentenceTokenizer(params)`` with params loaded from
     tests/fixtures/accuracy/punkt_tab/english, built by the functions of
     scripts/make_punkt_fixtures.py itself (``read_data_files``,
     ``parse_data``, ``build_tokenizer``; SHA-256 of every file checked).
     That these parameters equal english.pickle's is assumed, not verified
     (see that script).
  4. numpy scalars are converted to plain Python numbers (``float()`` for
     the np.float64 ROUGE means, ``int()`` for the np.int64 ``gen_len``)
     before printing, so that the dict repr is the one numpy 1.x prints
     (numpy >= 2 would print ``np.float64(44.4465)`` / ``np.int64(123)``).
     The values are computed exactly as the scripts do (``np.mean``, i.e.
     numpy's pairwise summation, and ``round(np.float64, 4)``, i.e.
     numpy's ``np.round``), the conversion only changes the repr.  Under
     numpy 1.x the script also prints the unconverted dicts and checks that
     they are identical.
"""

import contextlib
import hashlib
import importlib.util
import io
import json
import math
import os
import platform
import random
import sys
import textwrap
from importlib import metadata

import nltk

REQUIRED_NLTK = "3.8.1"
if nltk.__version__ != REQUIRED_NLTK:
    sys.exit(f"needs nltk {REQUIRED_NLTK}, {sys.executable} has "
             f"{nltk.__version__}; run it with /tmp/nltk381-venv/bin/python")

import numpy as np  # noqa: E402
from rouge_score import rouge_scorer  # noqa: E402

SEED = 20261127
FIXTURE_DATE = "2026-11-27"
ROUGE_TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
MAX_BYTES = 400_000

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(REPO_ROOT, "tests", "fixtures", "accuracy")
OUT_FILE = os.path.join(OUT_DIR, "summarization_eval.json")
README = os.path.join(OUT_DIR, "README.md")
README_HEADING = "## `summarization_eval.json`"


def load_punkt_module():
    path = os.path.join(REPO_ROOT, "scripts", "make_punkt_fixtures.py")
    spec = importlib.util.spec_from_file_location("make_punkt_fixtures", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sentence_tokenizer():
    """PunktSentenceTokenizer(params).tokenize, params from punkt_tab/english,
    loaded exactly as scripts/make_punkt_fixtures.py loads them."""
    mp = load_punkt_module()
    # a wheel path that does not exist -> the committed copies are read
    files, source = mp.read_data_files("/nonexistent/no-wheel.whl")
    tok = mp.build_tokenizer(*mp.parse_data(files))
    return tok.tokenize, source


# ---------------------------------------------------------------------------
# Texts
# ---------------------------------------------------------------------------

FIRST = ["John", "Maria", "David", "Angela", "Ahmed", "Chen", "Priya",
         "Jose", "Zoe", "Michael", "Sarah", "Oliver", "Fatima", "Hiroshi",
         "Emma", "Carlos", "Aisha", "Patrick", "Ingrid", "Samuel"]
LAST = ["Smith", "Garcia", "Cameron", "Merkel", "Hassan", "Wei", "Patel",
        "Mourinho", "Baker", "O'Brien", "Johnson", "Twist", "Khan", "Tanaka",
        "Watson", "Santos", "Bello", "McCarthy", "Larsen", "Okafor"]
TITLES = ["Mr.", "Mrs.", "Ms.", "Dr.", "Gov.", "Sen.", "Rep.", "Gen.",
          "Lt.", "Capt.", "Prof.", "Det.", "Sgt."]
PLACES = ["New York", "Washington, D.C.", "Los Angeles", "London",
          "St. Louis", "Ft. Lauderdale", "Mt. Vernon", "Kabul", "Zurich",
          "Sao Paulo", "Manchester", "Sydney", "Nairobi", "Baton Rouge, La.",
          "Portland, Ore.", "Austin, Texas", "Glasgow", "Mumbai"]
ORGS = ["the U.N.", "NASA", "the F.B.I.", "Apple Inc.", "Barclays plc",
        "the N.H.S.", "the E.U.", "Google", "the Pentagon",
        "the World Health Organization", "the Red Cross", "Boeing Co.",
        "the Metropolitan Police", "the U.S. Navy", "Acme Corp.",
        "the Federal Reserve"]
MONTHS = ["Jan.", "Feb.", "March", "April", "May", "June", "July", "Aug.",
          "Sept.", "Oct.", "Nov.", "Dec."]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
        "Sunday"]
EVENTS = ["a three-car crash", "a fire at a warehouse", "a late-night raid",
          "a row over pensions", "the storm", "a police chase",
          "a protest outside parliament", "a gas explosion",
          "a cyber attack", "the earthquake", "a stabbing", "the flood"]
THINGS = ["the new stadium", "the vaccine", "the merger", "the budget",
          "the bridge", "the satellite", "the peace deal", "the trial",
          "the election", "the new law", "the rescue mission",
          "the school"]
QUOTES = ["We are devastated and our thoughts are with the family",
          "This is a dark day for the city",
          "Nobody expected it to happen so fast",
          "We will not rest until those responsible are found",
          "It was like something out of a film",
          "I have never seen anything like it in 30 years",
          "The numbers simply do not add up",
          "We did everything we could",
          "Is this really the best we can do?",
          "Enough is enough!",
          "They told us to run, so we ran",
          "It's a great result for the club and the fans"]
VERBS_PAST = ["arrested", "injured", "rescued", "questioned", "honoured",
              "fined", "released", "charged", "sacked", "elected"]


def sentence(rng):
    """One news sentence with abbreviations, quotes and numbers."""
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    last = rng.choice(LAST)
    title = rng.choice(TITLES)
    place = rng.choice(PLACES)
    org = rng.choice(ORGS)
    month = rng.choice(MONTHS)
    day = rng.randint(1, 28)
    year = rng.randint(1998, 2024)
    num = rng.randint(2, 980)
    big = f"{rng.randint(1, 999):,}" + rng.choice(["", ",000", ",500"])
    pct = f"{rng.randint(1, 99)}.{rng.randint(0, 9)}"
    money = f"${rng.randint(1, 950)}" + rng.choice(
        ["", ".5", " million", " billion", ",000"])
    time = f"{rng.randint(1, 12)}:{rng.randint(0, 59):02d} " + rng.choice(
        ["a.m.", "p.m."])
    quote = rng.choice(QUOTES)
    event = rng.choice(EVENTS)
    thing = rng.choice(THINGS)
    verb = rng.choice(VERBS_PAST)
    dow = rng.choice(DAYS)
    age = rng.randint(3, 94)
    templates = [
        f"{name}, {age}, was {verb} on {dow} after {event} in {place}, "
        f"police said.",
        f"{title} {last} told reporters at {time} that {thing} would cost "
        f"{money}.",
        f"{org[0].upper() + org[1:]} said in a statement that it had \"no "
        f"plans\" to review {thing} before {month} {day}.",
        f"Shares in {org.replace('the ', '')} fell {pct}% to {money} in early "
        f"trading on {dow}.",
        f"\"{quote},\" {title} {last} said." if not quote.endswith(("?", "!"))
        else f"\"{quote}\" {title} {last} asked.",
        f"'{quote}' said {name}, who has lived in {place} since {year}.",
        f"About {big} people were affected by {event}, according to "
        f"{org}.",
        f"The incident happened at around {time} on {month} {day}, {year}, "
        f"near {place}.",
        f"{name} and {title} {last} met in {place} to discuss {thing}, which "
        f"has been delayed {rng.randint(2, 9)} times since {year}.",
        f"Officials in {place} confirmed {num} deaths and said the figure "
        f"was likely to rise.",
        f"The {age}-year-old was taken to hospital with serious injuries but "
        f"is in a stable condition.",
        f"{org[0].upper() + org[1:]} has been criticised for its handling of "
        f"{thing}, with one MP calling it \"a shambles\".",
        f"A spokesman for {org} declined to comment on the U.K. decision.",
        f"The figures, published on {dow}, show a rise of {pct} per cent "
        f"compared with {year}.",
        f"{name} scored twice as the team won {rng.randint(1, 5)}-"
        f"{rng.randint(0, 4)} in front of {big} fans.",
        f"It is the {rng.choice(['first', 'second', 'third', '10th', '21st'])}"
        f" time {org} has faced such claims in {rng.randint(2, 12)} years.",
        f"{title} {last} is expected to appear at {place} Crown Court on "
        f"{month} {day}.",
        f"Witnesses described hearing \"a loud bang\" before smoke filled "
        f"the street.",
        f"Temperatures reached {rng.randint(30, 48)}C (about "
        f"{rng.randint(86, 118)}F) in parts of {place} on {dow}.",
        f"The U.S. and U.K. governments are said to be \"monitoring the "
        f"situation closely.\"",
        f"Police have appealed for anyone with information to contact them "
        f"on 101, quoting crime ref. {rng.randint(1000, 9999)}/"
        f"{year % 100:02d}.",
        f"{name} earned {money} last year, up from {money.split(' ')[0]} in "
        f"{year}.",
    ]
    return rng.choice(templates)


def reference(rng):
    """News-like reference: 2-6 sentences in one of three layouts."""
    sents = [sentence(rng) for _ in range(rng.randint(2, 6))]
    style = rng.random()
    if style < 0.55:
        return " ".join(sents)
    if style < 0.85:
        # CNN/DailyMail highlights: one sentence per line
        return "\n".join(s.rstrip(".") + " ." if rng.random() < 0.4 else s
                         for s in sents)
    # " ." tokenised article style with a by-line
    body = " ".join(s[:-1] + " ." if s.endswith(".") else s for s in sents)
    return rng.choice(["By . Daily Mail Reporter . ",
                       "By . Press Association . ",
                       "(CNN) -- ", "PUBLISHED: . 10:33 EST, 5 March 2013 . ",
                       ""]) + body


SYNONYMS = {
    "said": ["stated", "says", "told reporters"], "police": ["officers",
    "the police"], "fell": ["dropped", "falling", "fallen"],
    "people": ["residents", "persons"], "statement": ["statements"],
    "deaths": ["death", "dead", "died"], "injuries": ["injured", "injury"],
    "arrested": ["arresting", "arrests"], "discuss": ["discussed",
    "discussing"], "cost": ["costs", "costing"], "hospital": ["hospitals"],
    "expected": ["expects", "expecting"], "confirmed": ["confirms"],
    "criticised": ["criticized", "criticism"], "affected": ["affecting",
    "hit"], "happened": ["happens", "occurred"], "rise": ["rising",
    "increase"], "government": ["governments"], "figures": ["figure",
    "numbers"], "team": ["teams", "side"], "scored": ["scoring", "scores"],
    "delayed": ["delays", "postponed"], "week": ["weeks"], "year": ["years"],
    "the": ["a", "the"], "was": ["is", "has been"], "about": ["around",
    "roughly"], "serious": ["seriously", "severe"],
}


def paraphrase(rng, text, p_syn=0.35, p_drop=0.1):
    out = []
    for w in text.split():
        core = w.strip(".,\"'")
        r = rng.random()
        if r < p_drop:
            continue
        if core.lower() in SYNONYMS and rng.random() < p_syn:
            rep = rng.choice(SYNONYMS[core.lower()])
            w = w.replace(core, rep, 1)
        out.append(w)
    return " ".join(out)


def split_simple(text):
    """Rough sentence split used only to build predictions."""
    parts, cur = [], []
    for w in text.replace("\n", " ").split():
        cur.append(w)
        if w.endswith((".", "!", "?", ".\"")) and len(cur) > 4:
            parts.append(" ".join(cur))
            cur = []
    if cur:
        parts.append(" ".join(cur))
    return parts


CHAT = [
    "I'm sorry, but I can't help with that request.",
    "Sure! Here's a recipe for banana bread: mix 3 ripe bananas, 1/3 cup "
    "melted butter and 1 tsp. baking soda. Bake at 350 F for 60 min.",
    "The mitochondria is the powerhouse of the cell. It produces ATP through "
    "oxidative phosphorylation.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))",
    "As an AI language model, I do not have personal opinions.",
    "1. Preheat the oven.\n2. Grease the pan.\n3. Pour the batter in.",
    "Paris is the capital of France. Its population is approx. 2.1 million.",
    "e.g. the U.S.A. vs. the U.K.: who wins? Nobody knows... yet!",
]


def prediction(rng, ref, other_ref, kind):
    sents = split_simple(ref)
    if kind == "exact":
        return ref
    if kind == "paraphrase":
        return paraphrase(rng, ref)
    if kind == "heavy":
        return paraphrase(rng, ref, p_syn=0.8, p_drop=0.35)
    if kind == "reorder":
        s = [paraphrase(rng, x, 0.2, 0.05) for x in sents]
        rng.shuffle(s)
        return " ".join(s)
    if kind == "trunc_chars":
        return ref[:rng.randint(1, max(1, len(ref) - 1))]
    if kind == "trunc_words":
        ws = paraphrase(rng, ref, 0.2, 0.05).split()
        return " ".join(ws[:rng.randint(1, max(1, len(ws) - 1))])
    if kind == "unrelated":
        return other_ref
    if kind == "chat":
        return rng.choice(CHAT)
    if kind == "empty":
        return ""
    if kind == "whitespace":
        return rng.choice([" ", "\n", "\n\n", "  \t ", " \n \n ", "\t"])
    if kind == "padded":
        body = paraphrase(rng, ref, 0.3, 0.1)
        return (rng.choice(["", " ", "\n", "  \n\n", "\t", " \n "]) + body
                + rng.choice([" ", "\n", "\n\n", "  ", "\t\n", " \n \n"]))
    if kind == "paragraphs":
        s = [paraphrase(rng, x, 0.3, 0.1) for x in sents]
        head = rng.choice(["Here is a summary of the article:",
                           "Summary:", "Sure! Here's a short summary.",
                           "The article reports the following."])
        if rng.random() < 0.5:
            body = "\n\n".join(s)
        elif rng.random() < 0.5:
            body = "\n".join(f"- {x}" for x in s)
        else:
            body = "\n".join(f"{i}. {x}" for i, x in enumerate(s, 1))
        tail = rng.choice(["", "\n\nLet me know if you need more details.",
                           "\n\nIn short, it was a busy week."])
        return head + "\n\n" + body + tail
    if kind == "upper":
        return paraphrase(rng, ref, 0.2, 0.05).upper()
    if kind == "repeat":
        s = sents[0] if sents else ref
        text = " ".join([s] * rng.randint(3, 12))
        return text[:rng.randint(len(s), len(text))]
    if kind == "mixed":
        s = sents[:max(1, len(sents) // 2)]
        o = split_simple(other_ref)
        return " ".join(s + o[:max(1, len(o) // 2)])
    if kind == "punct":
        return rng.choice(["...", "?!", ". . .", "-- --", "\"\"", "(.)"])
    if kind == "unicode":
        body = paraphrase(rng, ref, 0.3, 0.1)
        for a, b in [("\"", "\u201c"), ("'", "\u2019"), (" - ", " \u2014 "),
                     ("Jose", "Jos\u00e9"), ("Zurich", "Z\u00fcrich"),
                     ("Sao Paulo", "S\u00e3o Paulo"), ("Zoe", "Zo\u00eb")]:
            body = body.replace(a, b)
        return body + rng.choice(["", " \u2026", " \u00a0"])
    if kind == "numbers":
        body = paraphrase(rng, ref, 0.2, 0.05)
        for a, b in [("%", " percent"), ("$", "USD "), (",000", " thousand"),
                     (" million", "m"), ("a.m.", "am"), ("p.m.", "pm")]:
            body = body.replace(a, b)
        return body
    raise ValueError(kind)


KINDS = [("exact", 8), ("paraphrase", 50), ("heavy", 30), ("reorder", 20),
         ("trunc_chars", 20), ("trunc_words", 20), ("unrelated", 15),
         ("chat", 8), ("empty", 8), ("whitespace", 8), ("padded", 25),
         ("paragraphs", 30), ("upper", 6), ("repeat", 10), ("mixed", 12),
         ("punct", 5), ("unicode", 15), ("numbers", 10)]


def token_count(rng, pred, kind):
    """A plausible count of generated token ids (EOS included)."""
    if not pred.strip():
        return rng.randint(1, 3)
    n = round(len(pred) / rng.uniform(3.6, 4.6)) + rng.randint(0, 2)
    if kind in ("trunc_chars", "trunc_words", "repeat"):
        n = max(n, rng.choice([128, 256, n]))
    return max(1, n)


def make_pairs():
    rng = random.Random(SEED)
    kinds = [k for k, n in KINDS for _ in range(n)]
    rng.shuffle(kinds)
    refs = [reference(rng) for _ in kinds]
    # a few references with surrounding whitespace, as raw datasets have
    for i in rng.sample(range(len(refs)), 12):
        refs[i] = rng.choice([" ", "\n", "  "]) + refs[i] + rng.choice(
            [" ", "\n", " \n"])
    pairs = []
    for i, (kind, ref) in enumerate(zip(kinds, refs)):
        other = refs[(i + rng.randint(1, len(refs) - 1)) % len(refs)]
        pred = prediction(rng, ref.strip(), other.strip(), kind)
        pairs.append({"prediction": pred, "reference": ref,
                      "tokens": token_count(rng, pred, kind)})
    return pairs, kinds


# ---------------------------------------------------------------------------
# The reference computations
# ---------------------------------------------------------------------------

def postprocess_text(preds, targets, sent_tokenize):
    """Stripped texts, one sentence per line (what rougeLsum needs)."""
    def one_per_line(text):
        return "\n".join(sent_tokenize(text.strip()))
    return [one_per_line(p) for p in preds], [one_per_line(t) for t in targets]


def rouge_compute(predictions, references):
    """evaluate's rouge ``_compute`` with rouge_types=None,
    use_aggregator=False, use_stemmer=True, tokenizer=None."""
    rouge_types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    scorer = rouge_scorer.RougeScorer(rouge_types=rouge_types,
                                      use_stemmer=True, tokenizer=None)
    scores = []
    for ref, pred in zip(references, predictions):
        scores.append(scorer.score(ref, pred))
    result = {}
    for key in scores[0]:
        result[key] = list(score[key].fmeasure for score in scores)
    return result


def plain(d):
    """numpy scalars -> Python numbers (numpy 1.x repr)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, np.floating):
            v = float(v)
        elif isinstance(v, np.integer):
            v = int(v)
        out[k] = v
    return out


def printed(obj):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print("\nResults\n")
        print(obj)
    return buf.getvalue()


def rouge_means(rouge):
    """Each ROUGE type's mean F-measure in percent, rounded as numpy rounds
    an np.float64 (np.mean returns one)."""
    return {rouge_type: round(np.mean(scores) * 100, 4) for rouge_type, scores in rouge.items()}


def evaluate_llama2(rouge, preds, gen_tok_len):
    gen_num = len(preds)
    result = rouge_means(rouge)
    result["gen_len"] = np.sum([len(p) for p in preds])
    result["gen_num"] = gen_num
    result["gen_tok_len"] = gen_tok_len
    result["tokens_per_sample"] = round(gen_tok_len / gen_num, 1)
    return result


def evaluate_llama31(rouge, preds):
    result = {rouge_type: f"{mean}" for rouge_type, mean in rouge_means(rouge).items()}
    result["gen_len"] = np.sum([len(p) for p in preds])
    result["gen_num"] = len(preds)
    return result


# ---------------------------------------------------------------------------

def dump(pairs, llama2, llama31, per_sample):
    def enc(o):
        s = json.dumps(o, ensure_ascii=False)
        for c in ("\u0085", "\u2028", "\u2029"):
            s = s.replace(c, "\\u%04x" % ord(c))
        return s
    lines = ["{", '"pairs": [']
    lines.append(",\n".join(enc(p) for p in pairs))
    lines.append("],")
    lines.append(f'"llama2": {enc(llama2)},')
    lines.append(f'"llama31": {enc(llama31)},')
    lines.append('"per_sample": [')
    lines.append(",\n".join(enc(s) for s in per_sample))
    lines.append("]")
    lines.append("}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def indent(text, prefix="    "):
    return "\n".join(prefix + line if line else "" for line in
                     text.split("\n"))


def fill(text, prefix=""):
    return textwrap.fill(text, width=76, initial_indent=prefix,
                         subsequent_indent=prefix, break_long_words=False,
                         break_on_hyphens=False)


def write_readme(info):
    with open(README, encoding="utf-8") as f:
        old = f.read()
    start = old.find("\n" + README_HEADING + "\n")
    rest = ""
    if start >= 0:
        nxt = old.find("\n## ", start + 1 + len(README_HEADING))
        rest = "" if nxt < 0 else old[nxt:]
        old = old[:start]
    base = old.rstrip("\n") + "\n"
    section = f"""
{README_HEADING}

What the MLPerf reference LLM summarisation evaluations print, for the Rust
port of them to be compared against to four decimals:
`mlcommons/inference` `language/llama2-70b/evaluate-accuracy.py` (read at
commit `3ffcaf475ec7d0f47fb54716c1586d3ba9db443f`) and
`language/llama3.1-8b/evaluation.py` (read at commit
`53ae8230098c34120274572cd406b8248e738c85`). Both strip and sentence-split
(`"\\n".join(nltk.sent_tokenize(...))`) predictions and references
(`postprocess_text`), compute
`evaluate.load("rouge").compute(predictions=preds, references=targets,
use_stemmer=True, use_aggregator=False)`, and print `"\\nResults\\n"` and a
dict: llama2-70b `round(np.mean(v) * 100, 4)` per ROUGE type plus
`gen_len` (`np.sum` of the character lengths of the processed predictions),
`gen_num`, `gen_tok_len` (sum of the logged token counts) and
`tokens_per_sample` (`round(gen_tok_len / gen_num, 1)`); llama3.1-8b the
same means as strings (`f"{{round(np.mean(v) * 100, 4)}}"`) plus `gen_len`
and `gen_num`.

Generated on {FIXTURE_DATE} by

    /tmp/nltk381-venv/bin/python scripts/make_summarization_fixture.py

with packages from PyPI in `/tmp/nltk381-venv`:

| package     | version |
|-------------|---------|
{info['versions']}

Python: {info['python']}. Random seed: {SEED}.

Format (UTF-8 JSON, one pair / score dict per line):

    {{"pairs": [{{"prediction": str, "reference": str, "tokens": int}}, ...],
     "llama2": str, "llama31": str,
     "per_sample": [{{"rouge1": f, "rouge2": f, "rougeL": f, "rougeLsum": f}}, ...]}}

`pairs[i]` stands for the i-th deduplicated accuracy-log entry:
`prediction` is the decoded answer before `postprocess_text`, `reference`
the dataset target as stored (a few have leading/trailing whitespace),
`tokens` the number of token ids in the log entry (it feeds only
llama2-70b's `gen_tok_len`). `llama2` / `llama31` are the exact stdout of
the two scripts' final `print` calls, leading `"\\n"` and final newline
included. `per_sample[i]` are the unrounded ROUGE F-measures of pair i
(after `postprocess_text`), as `json.dumps` writes Python floats (shortest
round-trip repr).

Printed by llama2-70b (after a blank line):

{indent(info['llama2'].strip())}

Printed by llama3.1-8b (after a blank line):

{indent(info['llama31'].strip())}

{fill(f"Contents: {info['n']} pairs ({info['kinds']}).")}

References are synthetic news texts of 2-6 sentences (abbreviations such
as Mr., Dr., Sept., U.S., a.m.; quotes; numbers, money, percentages,
times), laid out as prose, as CNN/DailyMail highlights (one sentence per line, some ending `" ."`) or in
the `" ."` tokenised article style with by-lines. Predictions are
word-level paraphrases (synonym / inflection swaps and dropped words),
reordered sentences, truncations (mid-word and mid-sentence), unrelated
texts (another reference, chatbot answers), empty and whitespace-only
answers, answers with leading/trailing whitespace, multi-paragraph answers
(headings, blank lines, `- ` bullets, numbered lists), upper-cased text,
repetition loops, curly quotes and accented letters, punctuation-only
answers and number rewrites. {info['empty_after_strip']} predictions are
empty after `strip()`. `tokens` is a plausible count (about one token per
four characters, 1-3 for empty answers, some truncations at 128 or 256).

Deviations from running the reference scripts (see the script's docstring):

1. No accuracy log, no HF tokenizer: the decoded prediction texts are given
   directly, one per `qsl_idx` (so the first-wins deduplication is a no-op),
   and `tokens` stands for the length of the logged token-id array.
2. `evaluate.load("rouge")` needs the Hugging Face hub (unreachable here);
   its `_compute` (huggingface/evaluate `metrics/rouge/rouge.py`) is, for
   these arguments, `rouge_scorer.RougeScorer(rouge_types=["rouge1",
   "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)` and
   `scorer.score(ref, pred)` per pair, collecting `.fmeasure` per type; the
   script calls `rouge_score` exactly that way.
3. `nltk.sent_tokenize` (nltk 3.8.1 loads the `punkt` pickle, not
   downloadable here) is replaced by `PunktSentenceTokenizer(params).tokenize`
   with `params` loaded from `punkt_tab/english` by the functions of
   `scripts/make_punkt_fixtures.py` (same assumption as there: these
   parameters equal `english.pickle`'s).
4. numpy scalars (`np.float64` means, `np.int64` `gen_len`) are converted
   with `float()` / `int()` before printing, so the dict repr is what numpy
   1.x prints (`44.4465`, `123`); numpy >= 2 would print
   `np.float64(44.4465)` / `np.int64(123)`. The values themselves are
   computed as the scripts compute them (`np.mean`, which sums pairwise,
   then `round(np.float64, 4)`, i.e. `np.round`).
{fill(info['np1_check'], '   ')}

{fill("Summation and rounding: " + info['sum_check'])}

Regenerating: `scripts/make_punkt_fixtures.py` rewrites its README section
by cutting the file at its own heading, which drops every section after it,
this one included; run this script after it (it replaces its own section
in place and keeps the sections after it).

SHA-256 of `summarization_eval.json`: `{info['sha']}` ({info['size']} bytes).
"""
    new = base + section + rest
    with open(README, "w", encoding="utf-8") as f:
        f.write(new)


def main():
    sent_tokenize, punkt_source = sentence_tokenizer()
    pairs, kinds = make_pairs()

    preds_decoded_text = [p["prediction"] for p in pairs]
    target_required = [p["reference"] for p in pairs]
    gen_tok_len = 0
    for p in pairs:
        gen_tok_len += p["tokens"]

    preds, targets = postprocess_text(preds_decoded_text, target_required,
                                      sent_tokenize)
    rouge = rouge_compute(preds, targets)
    assert list(rouge) == ROUGE_TYPES, list(rouge)

    r2 = evaluate_llama2(rouge, preds, gen_tok_len)
    r31 = evaluate_llama31(rouge, preds)
    llama2 = printed(plain(r2))
    llama31 = printed(plain(r31))

    np_major = int(np.__version__.split(".")[0])
    if np_major < 2:
        assert printed(r2) == llama2, (printed(r2), llama2)
        assert printed(r31) == llama31, (printed(r31), llama31)
        np1_check = (f"With numpy {np.__version__} the script checked that "
                     "printing the unconverted dicts gives the same text.")
    else:
        np1_check = (f"(Run with numpy {np.__version__}; the numpy 1.x "
                     "check of the unconverted print was skipped.)")

    # How much the summation order matters for the printed values.
    diffs = []
    for k, v in rouge.items():
        ref4 = float(round(np.mean(v) * 100, 4))
        naive = 0.0
        for x in v:
            naive += x
        for name, m in (("left-to-right sum", naive / len(v)),
                        ("math.fsum", math.fsum(v) / len(v))):
            if float(round(np.float64(m) * 100, 4)) != ref4:
                diffs.append(f"{k} with {name}")
        # Python's correctly rounded round() instead of np.round
        if round(float(np.mean(v)) * 100, 4) != ref4:
            diffs.append(f"{k} with Python's round()")
    sum_check = ("for these data, the printed means come out the same when "
                 "the per-sample values are summed left to right or with "
                 "`math.fsum` instead of `np.mean`'s pairwise summation, and "
                 "when Python's `round(float, 4)` replaces `np.round`."
                 if not diffs else
                 "printed values differ from the reference's for: "
                 + ", ".join(diffs) + ".")

    per_sample = [{k: rouge[k][i] for k in ROUGE_TYPES}
                  for i in range(len(pairs))]
    data = dump(pairs, llama2, llama31, per_sample)
    if len(data) > MAX_BYTES:
        sys.exit(f"fixture too large: {len(data)} bytes")
    # round-trip check
    back = json.loads(data.decode("utf-8"))
    assert back["pairs"] == pairs and back["llama2"] == llama2
    assert back["per_sample"] == per_sample
    with open(OUT_FILE, "wb") as f:
        f.write(data)

    pkgs = ["rouge_score", "nltk", "numpy", "absl-py", "six"]
    versions = "\n".join(f"| {p:<11} | {metadata.version(p)} |" for p in pkgs)
    counts = {}
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
    info = {
        "versions": versions,
        "python": f"{platform.python_implementation()} "
                  f"{platform.python_version()}",
        "llama2": llama2, "llama31": llama31, "n": len(pairs),
        "kinds": ", ".join(f"{k} {counts[k]}" for k, _ in KINDS),
        "empty_after_strip": sum(1 for p in preds if not p),
        "np1_check": np1_check, "sum_check": sum_check,
        "sha": hashlib.sha256(data).hexdigest(), "size": len(data),
    }
    write_readme(info)
    print(f"punkt parameters: {punkt_source}", file=sys.stderr)
    print(f"wrote {OUT_FILE} ({len(data)} bytes, {len(pairs)} pairs)",
          file=sys.stderr)
    sys.stdout.write(llama2)
    sys.stdout.write(llama31)
    print(sum_check, file=sys.stderr)


if __name__ == "__main__":
    main()
