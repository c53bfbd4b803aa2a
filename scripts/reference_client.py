#!/usr/bin/env python3
"""Runs the MLCommons reference llama2-70b client, unmodified, for a short Offline run against a
serving endpoint (`mlperf serve_stand_in`, or any vLLM-compatible server), and prints one JSON
object with what its LoadGen summary says: samples/s, tokens/s, the verdict, and the run's
provenance (the reference checkout's commit, the packages the client imported).

The client is `language/llama2-70b/main.py --vllm` with `SUT_API.py` and `dataset.py`, copied
byte for byte from the reference checkout into the work directory (main.py imports its SUT from
the working directory). What this script makes is only the client's inputs, as a user would:
- the dataset pickle (pandas, column `tok_input`) from `--prompts` (a JSON list of token-id lists),
  or from generated prompts;
- the "model" directory the client loads its tokenizer from: the server's `tokenizer.json` and a
  `tokenizer_config.json` naming PreTrainedTokenizerFast (the client re-tokenizes the text answers
  with it);
- a user.conf for a short run (`min_duration`, `min_query_count`, `target_qps`, the performance
  sample count), read by LoadGen after its built-in mlperf.conf, as main.py does.

The reference checkout (`--reference_dir`, default `$MLPERF_REFERENCE_DIR`) is a work tree of
github.com/mlcommons/inference or a bare clone of it (read with `git archive`); nothing is
fetched. Its Python needs what SUT_API.py imports: mlcommons-loadgen, torch, transformers,
datasets, pandas, numpy, requests, more_itertools, tqdm.
"""
import argparse
import importlib.metadata
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import io
from pathlib import Path

CLIENT_DIR = "language/llama2-70b"
CLIENT_FILES = ("main.py", "SUT_API.py", "dataset.py", "SUT.py")
PACKAGES = ("mlcommons-loadgen", "torch", "transformers", "tokenizers", "datasets", "pandas", "numpy", "requests")


def fail(message):
    print(f"reference_client.py: {message}", file=sys.stderr)
    sys.exit(2)


def git(reference, *args):
    """Runs git on a work tree or a bare clone; None when it is neither."""
    for flag in (["-C", str(reference)], [f"--git-dir={reference}"]):
        r = subprocess.run(["git", *flag, *args], capture_output=True)
        if r.returncode == 0:
            return r.stdout
    return None


def copy_client(reference, dest):
    """The client's files, unmodified, and the commit they came from."""
    commit = (git(reference, "rev-parse", "HEAD") or b"unknown").decode().strip()
    work_tree = reference / CLIENT_DIR / "main.py"
    if work_tree.is_file():
        for name in CLIENT_FILES:
            shutil.copyfile(reference / CLIENT_DIR / name, dest / name)
        return commit
    archive = git(reference, "archive", "--format=tar", "HEAD", *(f"{CLIENT_DIR}/{n}" for n in CLIENT_FILES))
    if archive is None:
        fail(f"{reference} is neither a work tree with {CLIENT_DIR}/main.py nor a git clone of the inference repository "
             "(set --reference_dir or MLPERF_REFERENCE_DIR)")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for name in CLIENT_FILES:
            member = tar.extractfile(f"{CLIENT_DIR}/{name}")
            (dest / name).write_bytes(member.read())
    return commit


def write_inputs(args, work):
    import pandas as pd

    if args.prompts:
        prompts = json.loads(Path(args.prompts).read_text())
    else:
        rng = random.Random(0)
        prompts = [[rng.randrange(args.vocab) for _ in range(rng.randint(128, 1024))] for _ in range(args.samples)]
    if not prompts or not all(isinstance(p, list) and p for p in prompts):
        fail(f"{args.prompts}: expected a non-empty JSON list of non-empty token-id lists")
    dataset = work / "dataset.pkl"
    pd.DataFrame({"tok_input": prompts}).to_pickle(dataset)

    model = work / "model"
    model.mkdir(exist_ok=True)
    shutil.copyfile(args.tokenizer_json, model / "tokenizer.json")
    # The word-level tokenizer has no special tokens; the client sets pad = eos.
    (model / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1024}))

    user_conf = work / "user.conf"
    user_conf.write_text(
        "".join(
            f"llama2-70b.Offline.{k} = {v}\n"
            for k, v in (
                ("min_duration", int(args.min_duration * 1000)),
                ("min_query_count", args.samples),
                ("target_qps", args.expected_qps),
                ("performance_sample_count_override", len(prompts)),
            )
        )
    )
    return dataset, model, user_conf, len(prompts)


def read_summary(logs):
    text = (logs / "mlperf_log_summary.txt").read_text()
    issued = re.search(r'"key": "generated_samples_per_query", "value": (\d+)', (logs / "mlperf_log_detail.txt").read_text())

    def value(label):
        m = re.search(rf"^{re.escape(label)}\s*:\s*(\S+)", text, re.M)
        return m.group(1) if m else None

    number = lambda label: float(value(label)) if value(label) is not None else None
    return {
        "samples_per_s": number("Samples per second"),
        "tokens_per_s": number("Tokens per second"),
        "result": value("Result is"),
        "samples": int(issued.group(1)) if issued else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference_dir", default=os.environ.get("MLPERF_REFERENCE_DIR"),
                    help="the mlcommons/inference checkout (work tree or bare clone); default $MLPERF_REFERENCE_DIR")
    ap.add_argument("--api_server", required=True, help="the server's root, e.g. http://127.0.0.1:30000 (no /v1)")
    ap.add_argument("--model", default="stand-in", help="the model name the server lists at /v1/models")
    ap.add_argument("--tokenizer_json", required=True, help="the served model's tokenizer.json")
    ap.add_argument("--prompts", help="JSON list of token-id lists (default: --samples generated prompts)")
    ap.add_argument("--vocab", type=int, default=32000, help="vocabulary of the generated prompts")
    ap.add_argument("--samples", type=int, default=1024, help="LoadGen's min_query_count (and generated prompts)")
    ap.add_argument("--min_duration", type=float, default=0.0, help="LoadGen's min_duration, seconds")
    ap.add_argument("--expected_qps", type=float, default=1.0, help="LoadGen's Offline target_qps")
    ap.add_argument("--accuracy", action="store_true", help="an AccuracyOnly run (main.py --accuracy): every answer logged")
    ap.add_argument("--work", required=True, help="work directory (created; its old contents are kept)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before the client is stopped")
    args = ap.parse_args()
    if not args.reference_dir:
        fail("no reference checkout: pass --reference_dir or set MLPERF_REFERENCE_DIR")

    work = Path(args.work).resolve()
    client = work / "client"
    client.mkdir(parents=True, exist_ok=True)
    commit = copy_client(Path(args.reference_dir).resolve(), client)
    dataset, model, user_conf, prompts = write_inputs(args, work)
    logs = work / "output-logs"
    command = [
        sys.executable, "main.py", "--scenario", "Offline", "--vllm",
        "--api-server", args.api_server.rstrip("/"), "--api-model-name", args.model,
        "--model-path", str(model), "--dataset-path", str(dataset), "--total-sample-count", str(prompts),
        "--user-conf", str(user_conf), "--output-log-dir", str(logs),
    ] + (["--accuracy"] if args.accuracy else [])
    with open(work / "client.log", "wb") as log:
        try:
            r = subprocess.run(command, cwd=client, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            fail(f"the reference client ran past {args.timeout} s; its output: {work / 'client.log'}")
    summary = logs / "mlperf_log_summary.txt"
    if r.returncode != 0 or not summary.is_file():
        tail = (work / "client.log").read_text(errors="replace")[-3000:]
        fail(f"the reference client exited {r.returncode} without a LoadGen summary; the end of {work / 'client.log'}:\n{tail}")

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    print(json.dumps({
        **read_summary(logs),
        "reference_commit": commit,
        "client": f"{CLIENT_DIR}/main.py --vllm (SUT_API.py), Offline",
        "command": " ".join(command),
        "logs": str(logs),
        "python": sys.version.split()[0],
        "packages": versions,
    }))


if __name__ == "__main__":
    main()
