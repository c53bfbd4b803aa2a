#!/usr/bin/env python3
"""Runs the official deepseek-r1 and gpt-oss-120b accuracy evaluations on generated answers and
records what they print, for runtime/src/accuracy/reasoning_tests.rs to compare with.

The official scripts (mlcommons/inference b66003e1: language/deepseek-r1/eval_accuracy.py,
language/gpt-oss-120b/eval_mlperf_accuracy.py and eval_accuracy.py; openai/prm800k 7ecc794 for
MATH500 grading) are run unmodified, end to end through their main(), on:
  - a dataset pickle (deepseek-r1) and a parquet file (gpt-oss-120b) with the columns the
    published files have (tok_input, dataset, ground_truth, question);
  - a LoadGen-format accuracy log of int32 token ids (with a repeated sample, and one past the
    dataset);
  - in place of the models' tokenizers (Hugging Face downloads), a stand-in `transformers`
    module whose tokenizer decodes an answer's ids to the text `answers.json` holds for its first
    id: the evaluations' parsing and grading see exactly those texts.
LiveCodeBench rows are left out (the official path needs lcb_runner and the Hugging Face
dataset); the Rust tests cover them with their own judge.

Needs: pandas, numpy, pyarrow, sympy, pylatexenc 2.10, tqdm.
Usage: make_reasoning_fixtures.py --inference <checkout> --prm800k <checkout> --out <dir>
"""
import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import types

import numpy as np
import pandas as pd

# (sub-benchmark, answer text, ground truth). Each row is one dataset sample.
DEEPSEEK = [
    ("gpqa", "Reasoning...\nAnswer: B", "B"),
    ("gpqa", "answer:  A)", "A"),
    ("gpqa", "The answer is (B)", "B"),
    ("gpqa", "**Answer:** C", "C"),
    ("gpqa", "final answer = (d)", "D"),
    ("gpqa", "Answer: E", "E"),
    ("gpqa", "Answer: A\nwait, Answer: C.", "C"),
    ("mmlu_pro", "The answer is (B)", "B"),
    ("mmlu_pro", "a guess", "A"),
    ("mmlu_pro", "Answer: J", "J"),
    ("mmlu_pro", "['Answer: H']", "H"),
    ("aime", "so \\boxed{70}", 70),
    ("aime", "Answer: 42.", "42"),
    ("aime", "\\boxed{ 033 }", "33"),
    ("aime", "Answer: 7\nlater Answer: 9", "9"),
    ("aime", "\\boxed{1000} Answer: 5", "5"),
    ("math500", "\\boxed{0.5}", "\\frac{1}{2}"),
    ("math500", "\\boxed{\\dfrac12}", "\\frac{1}{2}"),
    ("math500", "\\boxed{(1, 2)}", "\\left( 1, 2 \\right)"),
    ("math500", "\\boxed{2\\sqrt{2}}", "\\sqrt{8}"),
    ("math500", "\\boxed{x+1}", "1+x"),
    ("math500", "\\boxed{2/4}", "\\frac{1}{2}"),
    ("math500", "\\boxed{5 \\text{ cm}}", "5"),
    ("math500", "\\boxed{\\text{(B)}}", "\\text{(B)}"),
    ("math500", "\\boxed{10^\\circ}", "10"),
    ("math500", "\\boxed{1,234}", "1234"),
    ("math500", "\\boxed{\\pi/2}", "\\frac{\\pi}{2}"),
    ("math500", "\\boxed{4}", "2+2"),
    ("math500", "\\boxed{[1,2)}", "(1,2)"),
    ("math500", "\\boxed{3}", "4"),
    ("math500", "\\boxed{3", "3"),
    ("math500", "\\boxed{\\$5.00}", "5"),
    ("math500", "\\boxed{7 \\frac{3}{4}}", "\\frac{31}{4}"),
]


def harmony(analysis, final):
    return f"<|channel|>analysis<|message|>{analysis}<|end|><|start|>assistant<|channel|>final<|message|>{final}<|return|>"


GPT_OSS = [
    ("gpqa_diamond", harmony("Answer: A", "**C**"), "C"),
    ("gpqa_diamond", harmony("Answer: A", "(b) because"), "B"),
    ("gpqa_diamond", harmony("Answer: A", "Final answer: D"), "D"),
    ("gpqa_diamond", harmony("ANSWER: A", "I pick the second one"), "A"),
    ("gpqa_diamond", harmony("nothing", "The answer is C"), "C"),
    ("gpqa_diamond", "1. D) foo", "D"),
    ("gpqa_diamond", harmony("x", "B"), "A"),
    ("gpqa_diamond", "<|channel|>final 明<|message|>A", "A"),
    ("aime25", harmony("maybe \\boxed{12}", "\\boxed{70}"), "70"),
    ("aime25", harmony("", "Answer: 42."), "42"),
    ("aime25", harmony("", "Answer: 123"), "123"),
    ("aime25", harmony("", "no idea"), "5"),
]


def stub_transformers(texts):
    """A `transformers` module whose AutoTokenizer decodes ids to texts[ids[0]]."""

    class Tokenizer:
        def decode(self, ids, skip_special_tokens=False):
            ids = list(ids)
            return texts[int(ids[0])] if ids else ""

        def batch_decode(self, batch, skip_special_tokens=False):
            return [self.decode(ids, skip_special_tokens) for ids in batch]

    class AutoTokenizer:
        @staticmethod
        def from_pretrained(*args, **kwargs):
            return Tokenizer()

    module = types.ModuleType("transformers")
    module.AutoTokenizer = AutoTokenizer
    sys.modules["transformers"] = module


def case_frame(cases, prompt_column, first_id):
    """A dataset of `cases` in the published columns (prompts of three ids, distinct per row);
    the stand-in tokenizer decodes each row's answer ids to the row's text."""
    stub_transformers([t for _, t, _ in cases])
    return pd.DataFrame({
        prompt_column: [np.array([first_id - 2, first_id - 1, first_id + i], dtype=np.int64) for i in range(len(cases))],
        "ground_truth": [g for _, _, g in cases],
        "dataset": [d for d, _, _ in cases],
    })


def write_log(path, rows):
    """LoadGen's mlperf_log_accuracy.json: one entry per (qsl_idx, ids)."""
    with open(path, "w") as f:
        f.write("[\n")
        entries = []
        for seq, (qsl, ids) in enumerate(rows):
            data = np.array(ids, dtype=np.int32).tobytes().hex().upper()
            entries.append(f'{{ "seq_id" : {seq}, "qsl_idx" : {qsl}, "data" : "{data}", "token_count" : {len(ids)} }}')
        f.write(",\n".join(entries))
        f.write("\n]\n")


def log_rows(n):
    """Sample i answered with text i, 3 + i % 5 tokens; sample 0 again; one sample past the end."""
    rows = [(i, [i] * (3 + i % 5)) for i in range(n)]
    rows.insert(2, (0, [1, 1]))
    rows.append((n + 3, [0]))
    return rows


def run_main(script_dir, module_name, argv):
    sys.path.insert(0, script_dir)
    cwd = os.getcwd()
    try:
        module = __import__(module_name)
        sys.argv = [module_name + ".py"] + argv
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            module.main()
        return out.getvalue()
    finally:
        os.chdir(cwd)
        sys.path.remove(script_dir)
        sys.modules.pop(module_name, None)
        sys.modules.pop("eval_accuracy", None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inference", required=True)
    ap.add_argument("--prm800k", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp()

    # deepseek-r1: its script finds PRM800K under its own submodules/ directory.
    ds_dir = os.path.join(work, "deepseek-r1")
    os.makedirs(os.path.join(ds_dir, "submodules"))
    shutil.copy(os.path.join(args.inference, "language/deepseek-r1/eval_accuracy.py"), ds_dir)
    shutil.copytree(args.prm800k, os.path.join(ds_dir, "submodules/prm800k"))
    frame = case_frame(DEEPSEEK, "tok_input", 3)
    frame["question"] = [f"question {i}" for i in range(len(DEEPSEEK))]
    frame.to_pickle(os.path.join(out, "deepseek_dataset.pkl"))
    write_log(os.path.join(out, "deepseek_log.json"), log_rows(len(DEEPSEEK)))
    printed = run_main(ds_dir, "eval_accuracy", ["--input-file", os.path.join(out, "deepseek_log.json"), "--dataset-file", os.path.join(out, "deepseek_dataset.pkl"), "--output-file", os.path.join(work, "ds_evaluated.pkl")])
    with open(os.path.join(out, "deepseek_accuracy.txt"), "w") as f:
        f.write(printed)
    # Each scored row (the log's first answer per sample, in log order): right or not.
    graded = pd.read_pickle(os.path.join(work, "ds_evaluated.pkl"))
    with open(os.path.join(out, "deepseek_graded.json"), "w") as f:
        json.dump([[row["model_output"], bool(row["prompt_accuracy"] == 100.0)] for _, row in graded.iterrows()], f, indent=0, ensure_ascii=False)

    # gpt-oss-120b.
    go_dir = os.path.join(work, "gpt-oss-120b")
    os.makedirs(go_dir)
    for name in ["eval_accuracy.py", "eval_mlperf_accuracy.py"]:
        shutil.copy(os.path.join(args.inference, "language/gpt-oss-120b", name), go_dir)
    case_frame(GPT_OSS, "input_tokens", 7).to_parquet(os.path.join(out, "gpt_oss_dataset.parquet"))
    write_log(os.path.join(out, "gpt_oss_log.json"), log_rows(len(GPT_OSS)))
    printed = run_main(go_dir, "eval_mlperf_accuracy", ["--mlperf-log", os.path.join(out, "gpt_oss_log.json"), "--reference-data", os.path.join(out, "gpt_oss_dataset.parquet"), "--tokenizer", "stand-in"])
    with open(os.path.join(out, "gpt_oss_accuracy.txt"), "w") as f:
        f.write(printed)

    # A TEST07 compliance set of the published structure: 990 GPQA rows; 90 of them have a ground
    # truth outside A..D, which no answer can match (a stand-in answering every question right
    # then scores 900/990 = 90.909).
    letters = ["A", "B", "C", "D"]
    frame = pd.DataFrame({
        "input_tokens": [np.array([7, 8, i], dtype=np.int64) for i in range(990)],
        "dataset": ["gpqa_diamond"] * 990,
        "ground_truth": ["E" if i % 11 == 10 else letters[i % 4] for i in range(990)],
    })
    frame.to_parquet(os.path.join(out, "gpt_oss_test07_set.parquet"))

    with open(os.path.join(out, "answers.json"), "w") as f:
        json.dump({"deepseek-r1": [t for _, t, _ in DEEPSEEK], "gpt-oss-120b": [t for _, t, _ in GPT_OSS]}, f, indent=1, ensure_ascii=False)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
