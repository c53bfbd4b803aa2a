#!/usr/bin/env python3
"""Writes the whisper family's test data and records what the official scorer says about it.

1. tests/fixtures/whisper/: a few small 16 kHz mono 16-bit WAVs (generated tones and noise, about a
   second each) and `dev-all-repack.json`, a manifest in the format the reference's
   speech2text/utils/repackage_librispeech.py writes (transcript, files[] with fname and speed,
   original_duration, original_num_samples; fnames as its Docker run writes them,
   /data/dev-all-repack/<speaker>-<chapter>_<n>.wav), with one entry over 30 s that the reference's
   Manifest filters out (so the indices after it shift, as LoadGen's do).
2. tests/fixtures/accuracy/whisper/normalizer_cases.json: [input, EnglishTextNormalizer()(input)]
   pairs, hand-picked per rule and generated from a seeded word pool.
3. tests/fixtures/accuracy/whisper/{manifest.json, mlperf_log_accuracy.json}: references with
   numbers, currencies, contractions, British spellings and split or joined words, and hypotheses
   encoded as the reference SUT does (lowercased, stripped, the 42-symbol vocabulary's indices as
   int64); accuracy_eval.txt is what the unmodified speech2text/accuracy_eval.py prints for them.

The official script runs unmodified (mlcommons/inference b66003e1, speech2text/ extracted with
git show); `whisper.normalizers` comes from PyPI openai-whisper 20250625 (its sdist, unpacked): the
directory given as --normalizers holds whisper/__init__.py (empty) and whisper/normalizers/ as
the package ships it, so the script imports the normalizer without torch. Needs `regex` and
`more_itertools` (what the normalizers import).

Usage: make_whisper_fixtures.py --speech2text <dir> --normalizers <dir> [--python <venv python>]
"""
import argparse
import array
import json
import math
import os
import random
import struct
import subprocess
import sys
import wave

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASET = os.path.join(ROOT, "tests/fixtures/whisper")
SCORING = os.path.join(ROOT, "tests/fixtures/accuracy/whisper")
SR = 16000

# reference_SUT.py's `labels`
LABELS = [" "] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["'"] + [str(d) for d in range(10)] + ["$", "%", "+", "-"]

# (file, seconds, tone Hz, transcript) of the dataset fixture; transcripts as convert_librispeech.py
# writes them (lowercase) and repackage_librispeech.py joins them (one space).
CLIPS = [
    ("1272-128104_0", 1.0, 440.0, "mister quilter is the apostle of the middle classes"),
    ("1272-128104_1", 0.75, 660.0, "he paid twenty dollars for the colour grey"),
    ("2078-142845_0", 1.25, None, "we'll meet at half past two o'clock"),
    ("3752-4944_0", 0.5, 880.0, "one hundred and five"),
]


def tone(seconds, hz, seed):
    rng = random.Random(seed)
    n = int(seconds * SR)
    out = []
    for i in range(n):
        v = 0.3 * math.sin(2 * math.pi * hz * i / SR) if hz else 0.0
        v += rng.uniform(-0.05, 0.05)
        out.append(max(-32768, min(32767, int(round(v * 32767)))))
    return out


def sample_json(transcript, fname, samples):
    return {
        "transcript": transcript,
        "files": [
            {
                "channels": 1,
                "sample_rate": float(SR),
                "bitdepth": 16,
                "bitrate": 256000.0,
                "duration": float(samples / SR),
                "num_samples": int(samples),
                "encoding": "Signed Integer PCM",
                "silent": False,
                "fname": fname,
                "speed": 1,
            }
        ],
        "original_duration": float(samples / SR),
        "original_num_samples": int(samples),
    }


def write_dataset():
    wav_dir = os.path.join(DATASET, "dev-all-repack")
    os.makedirs(wav_dir, exist_ok=True)
    manifest = []
    for i, (name, seconds, hz, transcript) in enumerate(CLIPS):
        samples = tone(seconds, hz, i)
        with wave.open(os.path.join(wav_dir, name + ".wav"), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(SR)
            w.writeframes(struct.pack("<%dh" % len(samples), *samples))
        manifest.append(sample_json(transcript, "/data/dev-all-repack/%s.wav" % name, len(samples)))
        if i == 1:
            # over 30 s: the reference's Manifest skips it (no file is read for it)
            manifest.append(sample_json("a clip too long to keep", "/data/dev-all-repack/long_0.wav", 31 * SR))
    with open(os.path.join(DATASET, "dev-all-repack.json"), "w") as f:
        json.dump(manifest, f, indent=2)


HAND_CASES = [
    "Mr. Smith paid twenty dollars",
    "one two three",
    "two thousand five hundred and six",
    "one oh one",
    "three and a half million",
    "and a half",
    "twenty first of may",
    "the nineteen sixties",
    "$20 million",
    "seventy two point five percent",
    "fifty per cent",
    "five per",
    "he won't go; they can't, i'm sure",
    "let's say y'all gonna wanna see",
    "it's been done, she'd gone, he's got it",
    "nineteen ninety",
    "double five triple oh",
    "double trouble",
    "one two point three four",
    "point five",
    "point",
    "minus twelve",
    "minus sign",
    "plus one",
    "two dollars and seven cents",
    "zero point oh seven dollars",
    "$0.07",
    "£5 and ¢50",
    "one hundred twenty three thousand four hundred fifty six",
    "a hundred thousand",
    "twelve hundred",
    "first second third fourth fifth twelfth twentieth",
    "ones and sixes",
    "the 1960s and 21 st",
    "1,000,000 people",
    "192.168.1.1",
    "one point two point three",
    "hmm um uh well [noise] (laughs) <unk> mm",
    "Café naïve façade Œuvre straße þorn",
    "a—b…c “quoted” ‘single’ #hash @at",
    "st. john and dr. jones, esq. jr.",
    "the colour of grey aeroplanes and centre theatres",
    "organise organised organising realise",
    "zero",
    "o",
    "one",
    "ones",
    "one's own",
    "1s and 1",
    "eleventh hour",
    "ninety ninth",
    "a million millionths",
    "five thousandth",
    "seven hundred and",
    "three point",
    "twenty five point five million dollars",
    "fifty cents",
    "euro twenty",
    "ten euros",
    "two pounds fifty",
    "it costs 3 dollars",
    "100 percent",
    "ten % off",
    "twenty-five",
    "forty-two point oh",
    "nineteen oh five",
    "thirty three and a third",
    "i'll we've you're they'd",
    "ma'am i'ma go",
    "capt gen sen rep pres rev hon asst assoc lt col sr prof gov ald",
    "   spaced    out   ",
    "",
]

POOL = (
    "one two three four five six seven eight nine ten eleven twelve thirteen nineteen twenty thirty forty ninety "
    "hundred thousand million billion first second third fifth twelfth twentieth hundredth thousands "
    "oh zero o point and double triple a half minus plus dollars dollar cents pounds euros per cent percent "
    "won't can't it's he's we'll they've i'm she'd mr mrs dr st colour grey centre organise theatre "
    "the of to in is was apostle middle classes 1 2 10 25 100 1960s 3rd 2nd $ % + - ' 0 5 7 $5 -3 +2 1.5"
).split()


def generated_cases(n):
    rng = random.Random(38)
    return [" ".join(rng.choice(POOL) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def write_normalizer_cases(normalizers, python):
    cases = HAND_CASES + generated_cases(400)
    code = "import json,sys\nfrom whisper.normalizers import EnglishTextNormalizer\nn=EnglishTextNormalizer()\n" "print(json.dumps([[s, n(s)] for s in json.load(sys.stdin)], ensure_ascii=False, indent=0))"
    env = dict(os.environ, PYTHONPATH=normalizers)
    out = subprocess.run([python, "-c", code], input=json.dumps(cases), capture_output=True, text=True, env=env, check=True).stdout
    with open(os.path.join(SCORING, "normalizer_cases.json"), "w") as f:
        f.write(out)


# (reference transcript, hypothesis as the engine might answer it)
PAIRS = [
    ("mister quilter is the apostle of the middle classes", " Mr. Quilter is the apostle of the middle classes."),
    ("he paid twenty dollars for it", " He paid $20 for it."),
    ("the colour grey", " The color gray."),
    ("i can't go and won't go", " I cannot go and will not go."),
    ("some thing new under the sun", " Something new under the sun."),
    ("anybody home", " Any body home?"),
    ("nineteen ninety two was a year", " 1992 was a year."),
    ("three and a half percent", " 3.5%"),
    ("the cat sat on the mat", " The cat sat on a hat."),
    ("a quick brown fox", " A quick fox jumped."),
    ("one hundred and five", " 105"),
    ("it's been a long day", " It has been a long day"),
    ("we'll meet at half past two", " We will meet at half past 2."),
    ("she said hmm and left", " She said, left."),
    ("twenty first century", " 21st century"),
    ("the organisation realised", " The organization realized."),
    ("double o seven", " 007"),
    ("five pounds fifty", " £5.50"),
    ("minus forty degrees", " -40 degrees"),
    ("every thing in its place", " Everything in it's place."),
]


def encode(text):
    index = {c: i for i, c in enumerate(LABELS)}
    return [index[c] for c in text.lower().strip() if c in index]


def write_scoring(speech2text, normalizers, python):
    manifest, log = [], []
    for i, (reference, hypothesis) in enumerate(PAIRS):
        manifest.append(sample_json(reference, "/data/dev-all-repack/pair_%d.wav" % i, SR))
    # over 30 s: filtered, so qsl indices skip it
    manifest.insert(5, sample_json("filtered out", "/data/dev-all-repack/long.wav", 45 * SR))
    order = list(range(len(PAIRS)))
    random.Random(5).shuffle(order)
    for seq, i in enumerate(order):
        data = array.array("q", encode(PAIRS[i][1])).tobytes().hex().upper()
        log.append({"seq_id": seq, "qsl_idx": i, "data": data})
    # a repeated answer counts again, as the script reads every entry
    log.append({"seq_id": len(order), "qsl_idx": 8, "data": array.array("q", encode(PAIRS[8][1])).tobytes().hex().upper()})
    with open(os.path.join(SCORING, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    with open(os.path.join(SCORING, "mlperf_log_accuracy.json"), "w") as f:
        json.dump(log, f, indent=4)
    env = dict(os.environ, PYTHONPATH=normalizers)
    cmd = [python, os.path.join(speech2text, "accuracy_eval.py"), "--log_dir", SCORING, "--dataset_dir", "/data", "--manifest", os.path.join(SCORING, "manifest.json")]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=speech2text, check=True).stdout
    with open(os.path.join(SCORING, "accuracy_eval.txt"), "w") as f:
        f.write(out)
    print(out, end="")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--speech2text", required=True, help="the reference's speech2text/ directory")
    p.add_argument("--normalizers", required=True, help="a directory holding whisper/__init__.py and whisper/normalizers/")
    p.add_argument("--python", default=sys.executable, help="the Python that has regex and more_itertools")
    a = p.parse_args()
    os.makedirs(SCORING, exist_ok=True)
    write_dataset()
    write_normalizer_cases(a.normalizers, a.python)
    write_scoring(a.speech2text, a.normalizers, a.python)


if __name__ == "__main__":
    main()
