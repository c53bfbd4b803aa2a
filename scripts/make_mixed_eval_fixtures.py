#!/usr/bin/env python3
"""Runs the official mixtral-8x7b and llama3.1-405b accuracy evaluations on generated answers and
records what they print, for the Rust re-implementations of them to compare with.

The official scripts (mlcommons/inference b66003e1: language/mixtral-8x7b/evaluate-accuracy.py and
evaluate_mbxp.py, language/llama3.1-405b/evaluate-accuracy.py) are run unmodified, end to end
through their main(), on:
  - dataset pickles with the columns the published files have; the MBXP rows are real problems
    (prompt, test code, entry point, canonical solution) of amazon-science/mxeval e09974f9, whose
    executor (mxeval.execution, installed from that checkout) the mixtral evaluation imports;
  - LoadGen-format accuracy logs of int32 token ids (sample i answered with i, 3 + i % 5 tokens;
    sample 0 answered twice);
  - stand-ins for what would need the Hugging Face hub:
      * `transformers` (make_reasoning_fixtures.py's): the tokenizer decodes an answer's ids to the
        text `answers.json` holds for its first id;
      * `evaluate`: load("rouge").compute is HF evaluate 0.4.0's metrics/rouge/rouge.py `_compute`
        (read at tag v0.4.0, commit ec46ca2cbb77433622057a74cabe611defae669d, which is the
        revision evaluate 0.4.0's load() fetches) for single references and use_aggregator=False:
        rouge_score's RougeScorer(rouge_types, use_stemmer) scores each (reference, prediction)
        pair, giving {type: [fmeasure per pair]};
      * nltk.download is a no-op; NLTK_DATA points at a copy of tests/fixtures/accuracy/punkt_tab
        (nltk 3.9.1's sent_tokenize reads tokenizers/punkt_tab/english/).
Both scripts evaluate in worker processes (multiprocessing with the fork start method, so the
workers inherit the stand-ins); stdout is caught at file descriptor 1 so that what the workers
print is kept too. evaluate_mbxp writes evaluated_test.json into the working directory: the
scripts run from a temporary copy of their directory.

MBXP answers run as answer + test code: python, cpp (g++) and javascript (node; the tests require
lodash, which must resolve from the mxeval checkout, e.g. `npm i --save lodash` in it, as the
official Dockerfile.eval's language_setup does). The script checks every MBXP verdict against the
expected one in MBXP below.

Needs: pandas 2.2.3, numpy 2.x, rouge-score 0.1.2, nltk 3.9.1, absl-py, tqdm, mxeval (e09974f9).
Usage: make_mixed_eval_fixtures.py --inference <checkout> --mxeval <checkout> --out <dir>
"""
import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import types

import numpy as np
import pandas as pd

from make_reasoning_fixtures import stub_transformers, write_log

# OpenOrca rows: (question, reference, answer).
OPENORCA = [
    ("Where is the Eiffel Tower and when was it built?",
     "The Eiffel Tower is located in Paris, France. It was completed in 1889 for the World's Fair. Today it is one of the most visited monuments in the world.",
     "The Eiffel Tower is located in Paris, France. It was completed in 1889 for the World's Fair. Today it is one of the most visited monuments in the world."),
    ("Explain photosynthesis in two sentences.",
     "Photosynthesis converts light energy into chemical energy. Plants use carbon dioxide and water to produce glucose and oxygen.",
     "Plants turn light into chemical energy through photosynthesis. They combine water and carbon dioxide to make glucose, releasing oxygen."),
    ("Summarize: Dr. Smith moved to the U.S. in 1998 and opened a clinic.",
     "Dr. Smith moved to the U.S. in 1998. She founded a small clinic in Boston. The clinic now has twelve doctors.",
     "Dr. Smith moved to the U.S. in 1998 and founded a clinic in Boston."),
    ("What is the sentiment of this review: 'Great acting and a wonderful soundtrack.'",
     "The sentiment of the review is positive. The reviewer praises the acting and the soundtrack.",
     "Positive."),
    ("How do you make tea?",
     "To make tea, boil water and pour it over the leaves. Let it steep for three minutes. Then remove the leaves and serve.",
     "  \n\nFirst, boil some water.\nPour the water over the tea leaves and let it steep for three minutes.\n\nFinally, remove the leaves and serve the tea.  \n"),
    ("What is the capital of Australia?",
     "The capital of Australia is Canberra. Many people mistakenly believe it is Sydney.",
     ""),
    ("Premise: The man ran to the station. Hypothesis: The man moved. Does the hypothesis follow?",
     "Yes. The statement follows logically from the premise because both describe the same event.",
     "No, the statement does not follow from the premise."),
    ("What caused the French Revolution?",
     "The main causes of the French Revolution were financial crisis, social inequality and Enlightenment ideas. The monarchy could not resolve the debt.",
     "The French Revolution had several causes. Social inequality was severe. The monarchy faced a debt it could not resolve. Enlightenment ideas spread widely. Financial crisis made things worse."),
    ("At what temperature does water boil?",
     "Water boils at 100 degrees Celsius at sea level. At higher altitudes it boils at a lower temperature.",
     "WATER BOILS AT 100 DEGREES CELSIUS AT SEA LEVEL."),
    ("Translate to English: Le chat dort sur le canape.",
     "The translation of the sentence is: The cat is sleeping on the sofa.",
     "The cat is sleeping on the sofa. The cat is sleeping on the sofa. The cat is sleeping on the sofa."),
]

# GSM8K rows: (question, ground truth, answer).
GSM8K = [
    ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether?",
     "72", "Natalia sold 48 / 2 = 24 clips in May.\nAltogether she sold 48 + 24 = 72 clips.\nThe answer is 72."),
    ("A company pays 7 workers $800 each per month. How much does it pay in total per month?",
     "5600", "7 * 800 = 5,600. The answer is 5,600."),
    ("Sam had 50 apples and gave away 8. How many are left?",
     "42", "50 - 8 = 40. The answer is 40. Let me recheck: 50 - 8 = 42. The answer is 42 apples, not 43."),
    ("Tom walks 3 miles in the morning and 4 miles in the evening. How many miles does he walk?",
     "7", "He walks 3 miles and then 4 more, 7 in total. The answer is seven."),
    ("A baker makes 3 batches of 4 cakes. How many cakes does he make?",
     "12", "3 * 4 = 12. The answer is 12.\nQ: A farmer has 5 cows and buys 4 more. How many cows does he have?\nA: 5 + 4 = 9. The answer is 9."),
    ("Ann has 2 pens and buys 1 more. How many pens does she have?",
     "3", "I am not sure how to solve this problem."),
    ("The temperature is 4 degrees and drops by 6 degrees. What is the temperature now?",
     "-2", "4 - 6 = -2. The answer is -2."),
    ("Juice costs $1.75 per bottle. How much do 2 bottles cost?",
     "3.5", "2 * 1.75 = 3.50. The answer is $3.50"),
    ("A box holds 6 eggs. How many eggs are in 3 boxes?",
     "18", "The answer is 18.0"),
    ("How many legs does the table have?",
     "n/a", "The answer is 4."),
    ("A pen costs 10 dollars and a pencil 5 dollars less. How much more does the pen cost?",
     "15", "The price is between 10-15 dollars."),
    ("Ben has 5 marbles and wins 3. How many marbles does he have?",
     "8", "The answer is 9."),
]

# MBXP rows: (language, MBXP problem number, answer made from the problem's prompt and canonical
# solution, whether evaluate_mbxp passes it; None: a language it does not evaluate).
MBXP_FILES = {
    "python": ("mbpp_release_v1.jsonl", "MBPP"),
    "cpp": ("mbcpp_release_v1.2.jsonl", "MBCPP"),
    "javascript": ("mbjsp_release_v1.2.jsonl", "MBJSP"),
    "java": ("mbjp_release_v1.2.jsonl", "MBJP"),
    "go": ("mbgp_release_v1.1.jsonl", "MBGP"),
}
MBXP = [
    ("java", 17, lambda p, c: p + c, None),
    ("python", 3, lambda p, c: p + c, True),  # the prompt starts with "\n\n"
    ("cpp", 17, lambda p, c: p + c, True),
    ("python", 17, lambda p, c: p + "  perimeter = 2 * a\n  return perimeter", False),
    ("javascript", 8, lambda p, c: p + c, True),
    ("python", 24, lambda p, c: p + c + "\n```\n\nThe loop reads the digits from the right, weighting each by a power of two.", True),
    ("cpp", 14, lambda p, c: p + "    return l * b * h;\n}\n", False),
    ("python", 21, lambda p, c: (p + c).replace("_", "\\_"), True),
    ("go", 17, lambda p, c: p + "\treturn 4 * a\n}\n", None),
    ("python", 19, lambda p, c: p + "    return arraynums.has_duplicates()", False),  # raises
    ("cpp", 8, lambda p, c: p + "    vector<int> out;\n    for (int n : nums) out.push_back(n * n)\n    return out;\n}\n", False),  # does not compile
    ("javascript", 14, lambda p, c: p + "  return l * b * h;\n}", False),
    ("python", 8, lambda p, c: " \n\t\n" + p.lstrip() + c, True),
    ("cpp", 3, lambda p, c: p + "    if (n < 2) return true;\n    for (int i = 2; i * i <= n; i++) {\n        if (n % i == 0) return true;\n    }\n    return false;\n}\n", True),
    ("python", 11, lambda p, c: "```python\n" + p.lstrip() + c + "\n```", False),  # cut to nothing at the opening fence
]

# llama3.1-405b rows: (metric, ground truth, answer).
ROUGE = [
    ("The report reviews federal spending on highway maintenance. It finds that costs rose by 12 percent between 2015 and 2020. The agency recommends better tracking of project delays.",
     "The report reviews federal spending on highway maintenance. It finds that costs rose by 12 percent between 2015 and 2020. The agency recommends better tracking of project delays."),
    ("The study examines hospital staffing in rural areas. Nurses left at higher rates than doctors. The authors suggest higher pay and housing support.",
     "This study looks at staffing of rural hospitals, where nurses quit more often than doctors. Higher pay and help with housing are proposed."),
    ("GAO found that the program lacked clear goals. Officials could not measure outcomes. Congress may wish to require annual reporting.",
     "GAO found that the program lacked clear goals."),
    ("The memo describes new rules for water quality testing in schools.",
     "Quarterly revenue increased due to strong sales of consumer electronics."),
    ("The committee approved the budget after a long debate.", ""),
    ("Farm subsidies grew in 2019. Most payments went to large producers.",
     "\n\n  Farm subsidies grew in 2019.\n\nMost payments went to large producers.  \n"),
    ("The inspector general reviewed the agency's contracts and found weak oversight.",
     "THE INSPECTOR GENERAL REVIEWED THE AGENCY'S CONTRACTS AND FOUND WEAK OVERSIGHT."),
    ("The bill expands broadband access in remote regions.",
     "The bill expands broadband. The bill expands broadband. The bill expands broadband. The bill expands broadband."),
]
UUID_A = "4f3c2a1b-9d8e-4c7b-a6f5-0e1d2c3b4a59"
UUID_B = "b7e6d5c4-1a2b-4c3d-8e9f-a0b1c2d3e4f5"
UUID_C = "90a1b2c3-d4e5-4f60-9a8b-7c6d5e4f3a21"
NIAH = [
    (UUID_A, f"The special magic uuid is {UUID_A}."),
    (UUID_A, f"The special magic uuid is {UUID_B}."),
    (UUID_A, f"The special magic uuid is {UUID_A[:9]}0000-0000-0000-000000000000."),
    (UUID_A, f"The uuids are {UUID_A} and {UUID_B}."),
    (f"{UUID_B}, {UUID_C}", f"They are {UUID_C} and {UUID_B}."),
    (UUID_A, "I could not find a special magic uuid in the text."),
    (UUID_A, f"The special magic uuid is {UUID_A.upper()}."),
    (f"{UUID_B}, {UUID_C}", f"The first one is {UUID_B}."),
]
QA = [
    ("Paris|City of Paris", "Answer: Paris"),
    ("Paris|City of Paris", "The answer is paris, of course."),
    ("Paris|City of Paris", "Answer: London. Wait, that is wrong. Answer: Paris"),
    ("New York City|NYC", "Answer:  new   york City"),
    ("42|forty-two", "Answer: 41"),
    ("Mount Everest|Everest", ""),
    ("Mount Everest|Everest", "Answer:everest"),
    ("George Washington|Washington", "Answer: Wash"),
]
LLAMA_DATASETS = {"rouge": "GovReport", "niah_em": "Ruler", "qa_em": "LongBench"}


def interleave(*groups):
    """Round-robin over the groups until all are used up."""
    rows, queues = [], [list(g) for g in groups]
    while any(queues):
        for q in queues:
            if q:
                rows.append(q.pop(0))
    return rows


def log_rows(n):
    """Sample i answered with text i, 3 + i % 5 tokens; sample 0 again (ids of text 1)."""
    rows = [(i, [i] * (3 + i % 5)) for i in range(n)]
    rows.insert(2, (0, [1, 1]))
    return rows


def load_mbxp(mxeval_dir):
    """MBXP problems by (language, problem number)."""
    problems = {}
    for lang, (name, prefix) in MBXP_FILES.items():
        with open(os.path.join(mxeval_dir, "data/mbxp", name)) as f:
            for line in f:
                p = json.loads(line)
                if p["task_id"].startswith(prefix + "/"):
                    problems[lang, int(p["task_id"].split("/")[1])] = p
    return problems


def mixtral_frame(mxeval_dir):
    """The mixtral dataset (published columns), each row's answer, and the expected MBXP verdicts
    by evaluate_mbxp's key."""
    problems = load_mbxp(mxeval_dir)
    rows = []
    for question, reference, answer in OPENORCA:
        rows.append(dict(dataset="OpenOrca", question=question, input=f"<s> [INST] {question} [/INST]",
                         ref_output=reference, gt_output=reference, answer=answer))
    gsm8k = []
    for question, truth, answer in GSM8K:
        gsm8k.append(dict(dataset="GSM8K", question=question, input=f"<s> [INST] {question} [/INST]",
                          ref_output=f"The answer is {truth}.", gt_output=truth, answer=answer))
    mbxp, expected = [], {}
    for lang, number, make_answer, passes in MBXP:
        p = problems[lang, number]
        key = f"{lang}_{p['entry_point']}"
        if passes is not None:
            expected[key] = passes
        mbxp.append(dict(dataset="MBXP", id=key, question=p["prompt"], input=p["prompt"],
                         ref_output=p["canonical_solution"] or "", gt_output=p["test"],
                         answer=make_answer(p["prompt"], p["canonical_solution"] or "")))
    rows = interleave(rows, gsm8k, mbxp)
    is_mbxp = [r["dataset"] == "MBXP" for r in rows]
    frame = pd.DataFrame({
        "dataset": [r["dataset"] for r in rows],
        "id": [r.get("id", f"{r['dataset'].lower()}.{i}") for i, r in enumerate(rows)],
        "question": [r["question"] for r in rows],
        "input": [r["input"] for r in rows],
        "ref_output": [r["ref_output"] for r in rows],
        "gt_output": [r["gt_output"] for r in rows],
        "tok_input": [np.array([1, 733, 1000 + i], dtype=np.int64) for i in range(len(rows))],
        "tok_ref_output": [np.array([2000 + i] * (2 + i % 3), dtype=np.int64) for i in range(len(rows))],
        "stop_sequence": ["\n```\n" if m else "</s>" for m in is_mbxp],
        "tok_stop_sequence": [[13, 13940, 28832, 13] if m else [2] for m in is_mbxp],
    })
    frame["tok_input_len"] = frame["tok_input"].apply(len)
    frame["tok_ref_output_len"] = frame["tok_ref_output"].apply(len)
    return frame, [r["answer"] for r in rows], expected


def llama_frame():
    """The llama3.1-405b dataset and each row's answer."""
    rows = interleave([("rouge",) + r for r in ROUGE], [("niah_em",) + r for r in NIAH], [("qa_em",) + r for r in QA])
    frame = pd.DataFrame({
        "dataset": [LLAMA_DATASETS[m] for m, _, _ in rows],
        "input": [f"<|begin_of_text|>long context {i} ..." for i in range(len(rows))],
        "tok_input": [np.array([128000, 4930, 3000 + i], dtype=np.int64) for i in range(len(rows))],
        "gt_output": [g for _, g, _ in rows],
        "metric": [m for m, _, _ in rows],
    })
    frame["tok_input_len"] = frame["tok_input"].apply(len)
    return frame, [a for _, _, a in rows]


def stub_evaluate():
    """An `evaluate` module whose load("rouge") computes as HF evaluate 0.4.0's rouge metric."""
    from rouge_score import rouge_scorer

    class Rouge:
        def compute(self, predictions, references, rouge_types=None, use_aggregator=True, use_stemmer=False, tokenizer=None):
            if use_aggregator or tokenizer is not None or isinstance(references[0], list):
                raise NotImplementedError("only single references, no aggregation, default tokenizer")
            if rouge_types is None:
                rouge_types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
            scorer = rouge_scorer.RougeScorer(rouge_types=rouge_types, use_stemmer=use_stemmer, tokenizer=None)
            scores = [scorer.score(ref, pred) for ref, pred in zip(references, predictions)]
            return {key: [score[key].fmeasure for score in scores] for key in scores[0]}

    def load(name):
        if name != "rouge":
            raise ValueError(f"no stand-in for metric {name!r}")
        return Rouge()

    module = types.ModuleType("evaluate")
    module.load = load
    sys.modules["evaluate"] = module


def run_main(script_dir, module_name, argv):
    """Runs script_dir/module_name.py's main() with argv, in script_dir, and returns what it (and
    the processes it starts) printed to stdout."""
    sys.path.insert(0, script_dir)
    cwd = os.getcwd()
    os.chdir(script_dir)
    saved_stdout = os.dup(1)
    try:
        module = __import__(module_name)
        sys.argv = [module_name + ".py"] + argv
        with tempfile.TemporaryFile("w+") as out:
            sys.stdout.flush()
            os.dup2(out.fileno(), 1)
            try:
                module.main()
                sys.stdout.flush()
            finally:
                os.dup2(saved_stdout, 1)
            out.seek(0)
            return out.read()
    finally:
        os.close(saved_stdout)
        os.chdir(cwd)
        sys.path.remove(script_dir)
        for name, loaded in list(sys.modules.items()):
            if (getattr(loaded, "__file__", None) or "").startswith(script_dir + os.sep):
                del sys.modules[name]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inference", required=True)
    ap.add_argument("--mxeval", required=True)
    ap.add_argument("--punkt-tab", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../tests/fixtures/accuracy/punkt_tab"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp()
    assert multiprocessing.get_start_method() == "fork", "the workers must inherit the stand-in modules"

    shutil.copytree(args.punkt_tab, os.path.join(work, "nltk_data/tokenizers/punkt_tab"))
    os.environ["NLTK_DATA"] = os.path.join(work, "nltk_data")
    import nltk
    nltk.download = lambda *args, **kwargs: True
    stub_evaluate()

    # mixtral-8x7b.
    mx_dir = os.path.join(work, "mixtral-8x7b")
    os.makedirs(mx_dir)
    for name in ["evaluate-accuracy.py", "evaluate_mbxp.py"]:
        shutil.copy(os.path.join(args.inference, "language/mixtral-8x7b", name), mx_dir)
    frame, mixtral_answers, expected = mixtral_frame(args.mxeval)
    stub_transformers(mixtral_answers)
    frame.to_pickle(os.path.join(out, "mixtral_dataset.pkl"))
    write_log(os.path.join(out, "mixtral_log.json"), log_rows(len(frame)))
    printed = run_main(mx_dir, "evaluate-accuracy", ["--checkpoint-path", "stand-in", "--mlperf-accuracy-file", os.path.join(out, "mixtral_log.json"), "--dataset-file", os.path.join(out, "mixtral_dataset.pkl"), "--dtype", "int32", "--n_workers", "2"])
    with open(os.path.join(out, "mixtral_accuracy.txt"), "w") as f:
        f.write(printed)
    with open(os.path.join(mx_dir, "evaluated_test.json")) as f:
        verdicts = {key: v["passed"] for key, v in json.load(f).items()}
    if verdicts != expected:
        sys.exit(f"MBXP verdicts {verdicts} differ from the expected {expected} (toolchains, lodash?)")
    with open(os.path.join(out, "mixtral_mbxp.json"), "w") as f:
        json.dump(dict(sorted(verdicts.items())), f, indent=1)

    # llama3.1-405b.
    ll_dir = os.path.join(work, "llama3.1-405b")
    os.makedirs(ll_dir)
    shutil.copy(os.path.join(args.inference, "language/llama3.1-405b/evaluate-accuracy.py"), ll_dir)
    frame, llama_answers = llama_frame()
    stub_transformers(llama_answers)
    frame.to_pickle(os.path.join(out, "llama3_405b_dataset.pkl"))
    write_log(os.path.join(out, "llama3_405b_log.json"), log_rows(len(frame)))
    printed = run_main(ll_dir, "evaluate-accuracy", ["--checkpoint-path", "stand-in", "--mlperf-accuracy-file", os.path.join(out, "llama3_405b_log.json"), "--dataset-file", os.path.join(out, "llama3_405b_dataset.pkl"), "--dtype", "int32"])
    with open(os.path.join(out, "llama3_405b_accuracy.txt"), "w") as f:
        f.write(printed)

    with open(os.path.join(out, "answers.json"), "w") as f:
        json.dump({"mixtral-8x7b": mixtral_answers, "llama3.1-405b": llama_answers}, f, indent=1, ensure_ascii=False)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
