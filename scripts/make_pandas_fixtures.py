#!/usr/bin/env python3
"""pandas DataFrame pickles of every layout the dataset reader reads (runtime/src/dataset/pandas.rs).

Run once per pandas line, each in an environment of its own, from the repository root:

  pandas 1.5.3, numpy 1.24.4:  python scripts/make_pandas_fixtures.py frame_pandas1.pkl
  pandas 2.2.3, numpy 2.1.3:   python scripts/make_pandas_fixtures.py frame_pandas2.pkl open_orca_tiny.pkl
                               python scripts/make_pandas_fixtures.py --protocol 4 frame_pandas2_protocol4.pkl.gz
  pandas 3.1.1, numpy 2.4.6:   python scripts/make_pandas_fixtures.py frame_pandas3.pkl
  pandas 3.1.1, numpy 2.4.6, no pyarrow (a fresh `python3 -m venv /tmp/p3 && /tmp/p3/bin/pip install
  'pandas>=3'`; `import pyarrow` fails there):
                               python scripts/make_pandas_fixtures.py frame_pandas3_no_pyarrow.pkl

frame_*.pkl: one small frame with a column of each kind the LLM datasets hold (strings, token
lists as Python lists and as numpy arrays, integers, floats, booleans, a missing string, an
int64 past 32 bits); pandas 1 and 2 write object blocks of numpy arrays, pandas 3 Arrow-backed
strings with pyarrow and, without it, StringArrays (StringDtype(storage="python")) over object
arrays, pickled as pandas._libs.arrays.__pyx_unpickle_NDArrayBacked. Written with DataFrame.to_pickle (pickle protocol 5, or the one given).

open_orca_tiny.pkl: four samples with the columns of the llama2-70b OpenOrca file
(open_orca_gpt4_tokenized_llama.sampled_24576.pkl, written by the reference's processorca.py):
id, system_prompt, question, input (the Llama 2 chat prompt), tok_input (its token ids, a list,
BOS 1 first), output (the GPT-4 answer) and tok_output. Text and ids are made up: the reader
does not re-tokenize.
"""
import random
import sys

import numpy as np
import pandas as pd

OUT = "tests/fixtures/datasets/"


def frame():
    return pd.DataFrame({
        "system_prompt": ["You are a helpful assistant.", "Ü ünïcode ✓", ""],
        "question": ["What is 2+2?", "Say hi.", None],
        "tok_input": [[1, 32000, 2], [1, 2], np.array([1, -5, 70000], dtype=np.int64)],
        "output": ["4", "hi", "x"],
        "tok_len": [3, 2, 3],
        "score": [0.5, 1.0, -0.25],
        "flag": [False, True, False],
        "ids": np.array([-(1 << 40), 7, 8], dtype=np.int64),
    })


def open_orca():
    rng = random.Random(20261125)
    rows = []
    samples = [
        ("You are an AI assistant. Answer briefly.", "What is the capital of France?", "The capital of France is Paris."),
        ("", "Translate 'good morning' to German.", "Guten Morgen."),
        ("You are a helpful assistant, who always provide explanation.", "Why is the sky blue?",
         "Sunlight is scattered by the air. Blue light scatters most, so the sky looks blue."),
        ("You are an AI assistant that follows instruction extremely well.", "List two prime numbers.", "2 and 3."),
    ]
    for i, (system, question, answer) in enumerate(samples):
        prompt = f"<s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{question} [/INST]"
        rows.append({
            "id": f"cot.{1000 + i}",
            "system_prompt": system,
            "question": question,
            "input": prompt,
            "tok_input": [1] + [rng.randrange(3, 32000) for _ in range(8 + len(prompt) // 6)],
            "output": answer,
            "tok_output": [rng.randrange(3, 32000) for _ in range(2 + len(answer) // 5)],
        })
    return pd.DataFrame(rows)


def main():
    args = sys.argv[1:]
    protocol = 5
    if args[:1] == ["--protocol"]:
        protocol, args = int(args[1]), args[2:]
    for name in args:
        df = open_orca() if name.startswith("open_orca") else frame()
        df.to_pickle(OUT + name, protocol=protocol)


if __name__ == "__main__":
    main()
