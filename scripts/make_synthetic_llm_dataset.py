#!/usr/bin/env python3
"""A full-size llama2-70b dataset of the official structure with made-up text, and a tokenizer
for it, to rehearse the LLM submission chain end to end (scripts/submission_chain.sh) where
neither the OpenOrca file nor the Llama 2 tokenizer can be had.

  python scripts/make_synthetic_llm_dataset.py OUT_DIR [SAMPLES]     (needs pandas)

writes OUT_DIR/open_orca_gpt4_tokenized_llama.sampled_24576.pkl, a pandas DataFrame pickle with
the OpenOrca file's columns (id, system_prompt, question, input, tok_input, output, tok_output;
SAMPLES rows, default 24,576), and OUT_DIR/tokenizer.json, a Hugging Face word-level tokenizer
of 32,000 made-up words. Each reference answer (`output`) is 190 to 399 of those words, so it
tokenizes to as many ids (mean 294.5, as the official file's 294.45 tokens per sample) and
decodes back to itself: a stand-in answering with the references
(`mlperf serve_stand_in --reference_answers=... --tokenizer=...`) scores ROUGE 100 and the
official tokens-per-sample. Prompts (`tok_input`) are 64 to 512 random ids after BOS 1 (the question text is their start).
Deterministic for a given SAMPLES.
"""
import json
import os
import random
import sys

import pandas as pd

SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "fu", "ga", "hi", "jo", "ke", "lu", "ma",
             "no", "pi", "ru", "se", "to", "va", "we", "yo", "za", "bi", "co", "da", "el", "fo", "gu", "in"]
VOCAB = 32000
SPECIALS = ["<unk>", "<s>", "</s>"]


def word(k):
    a, b, c = k % 32, (k // 32) % 32, (k // 1024) % 32
    return SYLLABLES[c] + SYLLABLES[b] + SYLLABLES[a]


def main():
    out = sys.argv[1]
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 24576
    os.makedirs(out, exist_ok=True)
    words = [word(k) for k in range(VOCAB - len(SPECIALS))]
    vocab = {t: i for i, t in enumerate(SPECIALS + words)}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)
    rng = random.Random(20261125)
    rows = []
    for i in range(samples):
        prompt = [1] + [rng.randrange(len(SPECIALS), VOCAB) for _ in range(rng.randint(64, 512))]
        answer = [rng.randrange(len(SPECIALS), VOCAB) for _ in range(rng.randint(190, 399))]
        question = f"Question {i}: " + " ".join(words[t - len(SPECIALS)] for t in prompt[1:9])
        rows.append({
            "id": f"synthetic.{i}",
            "system_prompt": "",
            "question": question,
            "input": f"<s>[INST] {question} [/INST]",
            "tok_input": prompt,
            "output": " ".join(words[t - len(SPECIALS)] for t in answer),
            "tok_output": answer,
        })
    pd.DataFrame(rows).to_pickle(os.path.join(out, "open_orca_gpt4_tokenized_llama.sampled_24576.pkl"))


if __name__ == "__main__":
    main()
