#!/usr/bin/env python3
"""The comparator of `mlperf bench llm`: a client built the way the MLCommons reference LLM SUTs
talk to a serving engine (language/llama2-70b SUT_API.py and friends): a pool of threads, each
posting a streaming completion with `requests` and reading the answer line by line, decoding each
`data:` line with `json`. It keeps `--in_flight` requests going against one endpoint for
`--warm_up` + `--seconds` and prints one JSON object: completed samples and tokens per second over
the measurement, this process's CPU seconds, and (when the server reports its own time to first
token, as the stand-in does in `stand_in_ttft_us`) the TTFT the client adds, p50 and p99 in ms.

Written for this project (no code copied from the reference); needs only `requests`.
"""
import argparse
import json
import threading
import time

import requests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="endpoint base, e.g. http://127.0.0.1:30000/v1")
    ap.add_argument("--in_flight", type=int, default=1000)
    ap.add_argument("--max_tokens", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--warm_up", type=float, default=2.0)
    ap.add_argument("--ramp", type=float, default=None,
                    help="seconds over which the threads' first requests are spread (default: min(1, warm_up / 2))")
    args = ap.parse_args()
    ramp = min(1.0, args.warm_up / 2) if args.ramp is None else args.ramp

    url = args.url.rstrip("/") + "/completions"
    # The clock starts once every thread runs (starting a thousand threads takes a while); until
    # then the window is open-ended and nothing is counted.
    window = {"from": float("inf"), "end": float("inf")}
    go = threading.Event()
    lock = threading.Lock()
    done = {"samples": 0, "tokens": 0, "errors": 0, "added_ttft_ms": []}
    cpu_at = {}

    def worker(k):
        session = requests.Session()
        n = k
        # Every thread first exists, then they begin apart (not a thousand connects at once).
        go.wait()
        time.sleep(k * ramp / args.in_flight)
        while time.monotonic() < window["end"]:
            prompt = [(n * 7919 + i) % 32000 for i in range(128 + n % 896)]
            body = {"model": "stand-in", "prompt": prompt, "max_tokens": args.max_tokens, "temperature": 0.0,
                    "stream": True, "return_token_ids": True}
            sent = time.monotonic()
            ids, first_at, server_ttft_us = [], None, None
            try:
                with session.post(url, json=body, stream=True, timeout=600) as r:
                    r.raise_for_status()
                    for line in r.iter_lines():
                        if not line or not line.startswith(b"data: "):
                            continue
                        data = line[6:]
                        if data == b"[DONE]":
                            break
                        event = json.loads(data)
                        if server_ttft_us is None:
                            server_ttft_us = event.get("stand_in_ttft_us")
                        for choice in event.get("choices", []):
                            new = choice.get("token_ids") or []
                            if new and first_at is None:
                                first_at = time.monotonic()
                            ids.extend(new)
            except Exception:  # the comparator counts failures; it does not stop
                with lock:
                    done["errors"] += 1
                continue
            finished = time.monotonic()
            if window["from"] <= finished < window["end"]:
                with lock:
                    done["samples"] += 1
                    done["tokens"] += len(ids)
                    if server_ttft_us is not None and first_at is not None:
                        done["added_ttft_ms"].append((first_at - sent) * 1e3 - server_ttft_us / 1e3)
            n += args.in_flight

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(args.in_flight)]
    for t in threads:
        t.start()
    go.set()
    time.sleep(args.warm_up)
    measure_from = time.monotonic()
    end = measure_from + args.seconds
    window["from"], window["end"] = measure_from, end
    cpu_at["start"] = time.process_time()
    time.sleep(max(0.0, end - time.monotonic()))
    cpu = time.process_time() - cpu_at["start"]
    with lock:
        added = sorted(done["added_ttft_ms"])
        quantile = lambda q: added[min(len(added) - 1, max(0, int(len(added) * q + 0.999999) - 1))] if added else None
        print(json.dumps({
            "samples_per_s": done["samples"] / args.seconds,
            "tokens_per_s": done["tokens"] / args.seconds,
            "cpu_s": cpu,
            "errors": done["errors"],
            "added_ttft_p50_ms": quantile(0.5),
            "added_ttft_p99_ms": quantile(0.99),
        }), flush=True)


if __name__ == "__main__":
    main()
