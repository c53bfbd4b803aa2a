#!/usr/bin/env python3
"""PyTorch comparator for the GPU BERT engine: BERT-Large question answering in fp16 with
PyTorch's fused attention (SDPA), on the same features (tokenized tensors) and, with --onnx, the
same weights as the engine's plan.

Modes (each over the whole feature set, repeated for --seconds):
  padded  batches as MLPerf stores them, every feature padded to 384 tokens (the issue's 1,844)
  sorted  features sorted by length, each batch padded only to its longest feature
  compile padded, through torch.compile (the compile time is printed; skipped with --no-compile)
  linears the 24 layers' linears alone (F.linear, GELU fused by PyTorch where it can) on the batch's
          packed tokens, no padding: the cuBLAS ceiling of a packed engine, not a BERT

Usage: bench_pytorch_bert.py --tensors DIR [--onnx model.onnx] [--batch 256] [--seconds 10]
"""
import argparse
import time

import numpy as np
import torch
from transformers import BertConfig, BertForQuestionAnswering


def onnx_weights(path):
    """The model's constants by name (initializers and Constant nodes)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    out = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    out[node.output[0]] = numpy_helper.to_array(a.t)
    return out


def load_onnx_into(model, path):
    """Copies the synthetic model's weights (Hugging Face names; linears stored [in, out])."""
    weights = onnx_weights(path)
    state = model.state_dict()
    loaded = 0
    for name, tensor in state.items():
        if name not in weights:
            continue
        w = torch.from_numpy(np.ascontiguousarray(weights[name]))
        if w.dim() == 2 and name.endswith(".weight") and "embeddings" not in name:
            w = w.t()
        if tuple(w.shape) != tuple(tensor.shape):
            raise SystemExit(f"{name}: the ONNX model has {tuple(w.shape)}, the PyTorch model {tuple(tensor.shape)}")
        state[name] = w.to(tensor.dtype)
        loaded += 1
    model.load_state_dict(state)
    return loaded, len(state)


def measure(run, batches, seconds):
    """Samples per second over whole passes of `batches`, after one warm-up pass."""
    for b in batches:
        run(b)
    torch.cuda.synchronize()
    samples, start = 0, time.perf_counter()
    while True:
        for b in batches:
            run(b)
            samples += b[0].shape[0]
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return samples / elapsed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tensors", required=True, help="directory with input_ids.npy, segment_ids.npy, input_mask.npy")
    p.add_argument("--onnx", help="take the weights from this ONNX model (the synthetic BERT-Large-shaped one)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--no-compile", action="store_true")
    a = p.parse_args()

    ids = np.load(f"{a.tensors}/input_ids.npy")
    segments = np.load(f"{a.tensors}/segment_ids.npy")
    mask = np.load(f"{a.tensors}/input_mask.npy")
    lengths = mask.sum(axis=1)
    vocab = int(ids.max()) + 1
    config = BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, max_position_embeddings=512, attn_implementation="sdpa")
    torch.manual_seed(0)
    if a.onnx:
        config.vocab_size = onnx_weights(a.onnx)["bert.embeddings.word_embeddings.weight"].shape[0]
    model = BertForQuestionAnswering(config)
    if a.onnx:
        loaded, total = load_onnx_into(model, a.onnx)
        print(f"weights: {loaded} of {total} tensors from {a.onnx}")
    else:
        print(f"weights: seeded random (vocabulary {config.vocab_size} >= the set's {vocab} ids)")
    model = model.half().cuda().eval()
    print(f"{torch.cuda.get_device_name()}, PyTorch {torch.__version__}, {len(ids)} features, mean length {lengths.mean():.1f} tokens, batch {a.batch}")

    to = lambda x: torch.from_numpy(x.astype(np.int64)).cuda()
    padded = [(to(ids[i:i + a.batch]), to(segments[i:i + a.batch]), to(mask[i:i + a.batch])) for i in range(0, len(ids), a.batch)]
    order = np.argsort(lengths, kind="stable")
    sorted_batches = []
    for i in range(0, len(order), a.batch):
        pick = order[i:i + a.batch]
        n = int(lengths[pick].max())
        sorted_batches.append((to(ids[pick, :n]), to(segments[pick, :n]), to(mask[pick, :n])))

    def forward(m):
        def run(b):
            with torch.inference_mode():
                out = m(input_ids=b[0], token_type_ids=b[1], attention_mask=b[2])
            return out.start_logits
        return run

    rows = [("padded to 384", measure(forward(model), padded, a.seconds)), ("sorted, padded per batch", measure(forward(model), sorted_batches, a.seconds))]
    if not a.no_compile:
        started = time.perf_counter()
        compiled = torch.compile(model)
        forward(compiled)(padded[0])
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - started
        full = [b for b in padded if b[0].shape[0] == a.batch]
        rows.append((f"torch.compile, padded to 384 (compiled in {compile_s:.0f} s)", measure(forward(compiled), full, a.seconds)))
    # The linears alone on packed tokens: batches of --batch features, back to back.
    packed_tokens = [int(lengths[i:i + a.batch].sum()) for i in range(0, len(ids), a.batch)]
    layer = model.bert.encoder.layer[0]
    mats = [layer.attention.self.query, layer.attention.output.dense, layer.intermediate.dense, layer.output.dense]
    qkv_w = torch.cat([layer.attention.self.query.weight, layer.attention.self.key.weight, layer.attention.self.value.weight])
    qkv_b = torch.cat([layer.attention.self.query.bias, layer.attention.self.key.bias, layer.attention.self.value.bias])
    x = torch.randn(max(packed_tokens), 1024, device="cuda", dtype=torch.half)
    h = torch.randn(max(packed_tokens), 4096, device="cuda", dtype=torch.half)
    def linears(b):
        t = b[0].shape[0]
        with torch.inference_mode():
            for _ in range(config.num_hidden_layers):
                torch.nn.functional.linear(x[:t], qkv_w, qkv_b)
                mats[1](x[:t])
                torch.nn.functional.gelu(mats[2](x[:t]), approximate="tanh")
                mats[3](h[:t])
    # `measure` counts rows of its batches: here tokens, turned into features at the set's mean length.
    tokens_per_s = measure(linears, [(torch.empty(t, 0),) for t in packed_tokens], a.seconds)
    rows.append(("linears alone on packed tokens (cuBLAS ceiling, not a BERT)", tokens_per_s / lengths.mean()))
    print("| PyTorch fp16 SDPA | samples/s |")
    print("|---|---:|")
    for name, rate in rows:
        print(f"| {name} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
