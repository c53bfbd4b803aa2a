#!/usr/bin/env python3
"""A real llama.cpp HTTP server with a tiny random model, for the harness's opt-in test.

Written for this project (the MLPerf Inference harness): the opt-in test
`a_real_llama_cpp_server_answers_an_offline_run` (tests/harness/llm_real_engine.rs) runs
`mlperf run_harness --serving_engine=external --serving_api=llama.cpp-completion` against
llama.cpp's own server instead of the project's stand-in, so the llama.cpp dialect
(runtime/src/engines/serving/api.rs) is checked against the real thing.

What it does:
  1. Once, into --model-dir, writes `tiny-llama-32k.gguf`: a Llama-architecture model with a
     32,000-token SentencePiece-style ("llama") vocabulary, so every synthetic prompt id the
     harness sends (0..32000) is valid: <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>,
     then filler pieces. 2 layers, embedding 64, 4 heads, context 4096, random f32 weights
     (fixed seed). The output layer's rows for the control and byte tokens are zero, so greedy
     decoding never picks them: the model never stops early (every answer is n_predict tokens
     long) and never emits a byte token. The latter matters because llama.cpp's server holds
     back the streamed event of a token that leaves the text with an incomplete UTF-8 character
     (a byte token such as <0xE3>): that token's id never appears in a stream's `tokens`, though
     `tokens_predicted` counts it, and the harness rejects such a stream as having lost events.
  2. Starts llama.cpp's server (embedded in the `xllamacpp` wheel) on --host/--port with
     --parallel slots and a context of --parallel x --slot-ctx tokens (default 4 x 2304: a
     1024-token prompt plus llama2-70b's 1024-token output limit, with room to spare), and
     serves until killed (SIGTERM / SIGINT).

Needs: Python 3.9+ with `xllamacpp` (llama.cpp's server; tested with 2026.10.11549), `gguf`
(tested with 0.19.0) and `numpy`, e.g.
    python3 -m venv /tmp/llamacpp-venv && /tmp/llamacpp-venv/bin/pip install xllamacpp gguf numpy

Usage:
    python scripts/llamacpp_tiny_server.py --model-dir /tmp/tiny-llama --host 127.0.0.1 --port 8080
"""

import argparse
import os
import signal
import sys
import threading

N_VOCAB = 32000
N_EMBD = 64
N_HEAD = 4
N_LAYER = 2
N_FF = 128
N_CTX_TRAIN = 4096
MODEL_FILE = "tiny-llama-32k.gguf"

# llama.cpp's token types (llama_token_type / gguf.TokenType).
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6


def vocabulary():
    """The 32,000 tokens, their scores and types, SentencePiece-style."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while len(tokens) < N_VOCAB:
        # Unique pieces: "▁a" .. "▁z", "▁ba" ..., alternating with the same pieces without "▁".
        n, piece = i // 2, ""
        while True:
            piece = letters[n % 26] + piece
            n = n // 26 - 1
            if n < 0:
                break
        tokens.append(("\u2581" + piece) if i % 2 == 0 else piece)
        types.append(NORMAL)
        i += 1
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-float(k) for k in range(N_VOCAB - 259)]
    return tokens, scores, types


def write_model(path):
    import numpy as np
    import gguf

    rng = np.random.default_rng(1234)

    def weights(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tiny-random-llama-32k")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(N_VOCAB)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    tokens, scores, types = vocabulary()
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    # numpy shapes are ggml's ne reversed: token_embd is ne {n_embd, n_vocab}.
    w.add_tensor("token_embd.weight", weights(N_VOCAB, N_EMBD, scale=1.0))
    for b in range(N_LAYER):
        w.add_tensor(f"blk.{b}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{b}.{name}.weight", weights(N_EMBD, N_EMBD, scale=0.2))
        w.add_tensor(f"blk.{b}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{b}.ffn_gate.weight", weights(N_FF, N_EMBD, scale=0.2))
        w.add_tensor(f"blk.{b}.ffn_up.weight", weights(N_FF, N_EMBD, scale=0.2))
        w.add_tensor(f"blk.{b}.ffn_down.weight", weights(N_EMBD, N_FF, scale=0.2))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    output = weights(N_VOCAB, N_EMBD, scale=1.0)
    # Logit 0 for <unk>, <s>, </s> and the byte tokens; the best of ~31,700 random logits is
    # far above 0, so greedy decoding never picks them (see the module docstring).
    output[: 3 + 256] = 0.0
    w.add_tensor("output.weight", output)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def ensure_model(model_dir):
    os.makedirs(model_dir, exist_ok=True)
    path = os.path.join(model_dir, MODEL_FILE)
    if not os.path.exists(path):
        tmp = path + f".tmp{os.getpid()}"
        write_model(tmp)
        os.replace(tmp, path)
        print(f"wrote {path}", flush=True)
    return path


def serve(model, host, port, parallel, slot_ctx, threads):
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = model
    params.hostnames = [host]
    params.port = port
    params.n_parallel = parallel
    params.n_ctx = parallel * slot_ctx
    params.n_batch = 2048
    params.n_ubatch = 512
    params.cont_batching = True
    params.warmup = False
    if threads > 0:
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
    server = xlc.Server(params)  # loads the model and starts llama.cpp's HTTP server
    print(f"llama.cpp server (xllamacpp {xlc.__version__}) listening on {server.listening_address}", flush=True)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1.0):
        pass
    # Exit without running llama.cpp's teardown from a signal-interrupted interpreter.
    sys.stdout.flush()
    os._exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True, help="where the GGUF model is written (once) and read")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--parallel", type=int, default=4, help="server slots (requests decoded at once)")
    ap.add_argument("--slot-ctx", type=int, default=2304, help="context tokens per slot")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: llama.cpp's default)")
    ap.add_argument("--model-only", action="store_true", help="write the model and exit")
    args = ap.parse_args()
    model = ensure_model(args.model_dir)
    if args.model_only:
        return
    serve(model, args.host, args.port, args.parallel, args.slot_ctx, args.threads)


if __name__ == "__main__":
    main()
