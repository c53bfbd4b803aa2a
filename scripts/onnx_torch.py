#!/usr/bin/env python3
"""PyTorch comparator for our GPU engines of convolutional networks (YOLO, 3D-UNet): runs an ONNX
model's graph with PyTorch ops (fp16, channels-last, cuDNN autotuning, a CUDA graph) on the same
weights and inputs our engine gets, so `mlperf bench` tables can name PyTorch fp16 as comparator
without a hand-written copy of each network.

The ONNX protobuf is decoded here (a few message fields, wire format only) so the script needs only
PyTorch, which the device machines have; `onnx` is not needed. Each ONNX node becomes the torch call
an `nn.Module` of that layer would make (`F.conv2d`/`conv3d`, `F.conv_transpose3d`,
`F.instance_norm`, `F.max_pool2d`, `F.interpolate`, `torch.matmul`, ...), so under a CUDA graph
the work on the GPU is what a PyTorch implementation of the network does.

  onnx_torch.py MODEL.onnx --batch 64 --seconds 10           throughput, batch 64, printed as one line
  onnx_torch.py MODEL.onnx --latency --seconds 10             batch 1: mean, p50, p90 latency
  onnx_torch.py MODEL.onnx --check [--device cpu]             fp32 against onnxruntime (where installed)
"""
import argparse
import struct
import sys
import time

import torch
import torch.nn.functional as F


# --- ONNX protobuf: the fields of ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto and
# ValueInfoProto the networks use (onnx.proto field numbers).

def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of a message: ints for varints, bytes for the rest."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 2:
            ln, i = _varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield field, wire, v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _packed_ints(wire, v):
    if wire == 0:
        return [_signed(v)]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(_signed(x))
    return out


_DTYPES = {1: torch.float32, 6: torch.int32, 7: torch.int64, 10: torch.float16, 11: torch.float64, 9: torch.bool}


def _tensor(buf):
    dims, dtype, raw, floats, ints, name = [], 1, None, [], [], ""
    for f, w, v in _fields(buf):
        if f == 1:
            dims += _packed_ints(w, v)
        elif f == 2:
            dtype = v
        elif f == 4:
            floats += list(struct.unpack(f"<{len(v) // 4}f", v)) if w == 2 else [struct.unpack("<f", v)[0]]
        elif f in (5, 7):
            ints += _packed_ints(w, v)
        elif f == 8:
            name = v.decode()
        elif f == 9:
            raw = bytes(v)
    torch_dtype = _DTYPES[dtype]
    if raw is not None:
        t = torch.frombuffer(bytearray(raw), dtype=torch_dtype) if raw else torch.empty(0, dtype=torch_dtype)
    elif floats:
        t = torch.tensor(floats, dtype=torch_dtype)
    else:
        t = torch.tensor(ints, dtype=torch_dtype)
    return name, t.reshape(dims) if dims else t.reshape(())


def _attribute(buf):
    name, value, floats, ints = "", None, [], []
    for f, w, v in _fields(buf):
        if f == 1:
            name = v.decode()
        elif f == 2:
            value = struct.unpack("<f", v)[0]
        elif f == 3:
            value = _signed(v)
        elif f == 4:
            value = bytes(v).decode()
        elif f == 5:
            value = _tensor(v)[1]
        elif f == 7:
            floats += list(struct.unpack(f"<{len(v) // 4}f", v)) if w == 2 else [struct.unpack("<f", v)[0]]
        elif f == 8:
            ints += _packed_ints(w, v)
    if value is None:
        value = ints if ints else floats
    return name, value


class Node:
    def __init__(self, buf):
        self.inputs, self.outputs, self.name, self.op, self.attrs = [], [], "", "", {}
        for f, _, v in _fields(buf):
            if f == 1:
                self.inputs.append(v.decode())
            elif f == 2:
                self.outputs.append(v.decode())
            elif f == 3:
                self.name = v.decode()
            elif f == 4:
                self.op = v.decode()
            elif f == 5:
                k, a = _attribute(v)
                self.attrs[k] = a


def _value_info(buf):
    name, dims = "", []
    for f, _, v in _fields(buf):
        if f == 1:
            name = v.decode()
        elif f == 2:
            for f2, _, tensor_type in _fields(v):
                if f2 != 1:
                    continue
                for f3, _, shape in _fields(tensor_type):
                    if f3 != 2:
                        continue
                    for f4, _, dim in _fields(shape):
                        if f4 != 1:
                            continue
                        d = None
                        for f5, _, dv in _fields(dim):
                            if f5 == 1:
                                d = dv
                        dims.append(d)
    return name, dims


class Model:
    def __init__(self, path):
        data = open(path, "rb").read()
        graph = next(v for f, _, v in _fields(data) if f == 7)
        self.nodes, self.weights, self.inputs, self.outputs = [], {}, [], []
        for f, _, v in _fields(graph):
            if f == 1:
                self.nodes.append(Node(v))
            elif f == 5:
                name, t = _tensor(v)
                self.weights[name] = t
            elif f == 11:
                self.inputs.append(_value_info(v))
            elif f == 12:
                self.outputs.append(_value_info(v))
        self.inputs = [i for i in self.inputs if i[0] not in self.weights]


# --- Execution: one torch call per node.

def _pads(attrs, spatial):
    pads = attrs.get("pads", [0] * (2 * spatial))
    begin, end = pads[:spatial], pads[spatial:]
    if begin != end:
        raise ValueError(f"asymmetric pads {pads} are not supported")
    return begin


def _conv(x, w, b, a):
    spatial = w.dim() - 2
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[spatial]
    return conv(x, w, b, a.get("strides", [1] * spatial), _pads(a, spatial), a.get("dilations", [1] * spatial), a.get("group", 1))


def _conv_transpose(x, w, b, a):
    spatial = w.dim() - 2
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[spatial]
    return conv(x, w, b, a.get("strides", [1] * spatial), _pads(a, spatial), a.get("output_padding", [0] * spatial), a.get("group", 1), a.get("dilations", [1] * spatial))


def _reshape(x, shape):
    dims = [x.shape[i] if s == 0 else s for i, s in enumerate(shape.tolist())]
    return x.reshape(dims)


def _resize(x, roi, scales, sizes=None, a=None):
    mode = (a or {}).get("mode", "nearest")
    if mode != "nearest":
        raise ValueError(f"Resize mode {mode} is not supported")
    if sizes is not None and sizes.numel():
        return F.interpolate(x, size=[int(s) for s in sizes.tolist()[2:]], mode="nearest")
    return F.interpolate(x, scale_factor=[float(s) for s in scales.tolist()[2:]], mode="nearest")


def _slice(x, starts, ends, axes=None, steps=None):
    axes = list(range(starts.numel())) if axes is None else axes.tolist()
    steps = [1] * len(axes) if steps is None else steps.tolist()
    index = [slice(None)] * x.dim()
    for s, e, ax, st in zip(starts.tolist(), ends.tolist(), axes, steps):
        index[ax] = slice(s, min(e, x.shape[ax]), st)
    return x[tuple(index)]


def _split(x, split, a, n):
    axis = a.get("axis", 0)
    if split is None:
        split = a.get("split") or [x.shape[axis] // n] * n
    else:
        split = split.tolist()
    return list(torch.split(x, split, dim=axis))


def run_node(node, args):
    a = node.attrs
    op = node.op
    if op == "Conv":
        return _conv(args[0], args[1], args[2] if len(args) > 2 else None, a)
    if op == "ConvTranspose":
        return _conv_transpose(args[0], args[1], args[2] if len(args) > 2 else None, a)
    if op == "InstanceNormalization":
        return F.instance_norm(args[0], weight=args[1], bias=args[2], eps=a.get("epsilon", 1e-5))
    if op == "BatchNormalization":
        return F.batch_norm(args[0], args[3], args[4], args[1], args[2], False, 0.0, a.get("epsilon", 1e-5))
    if op == "Relu":
        return F.relu(args[0])
    if op == "Sigmoid":
        return torch.sigmoid(args[0])
    if op == "Div" and not args[0].is_floating_point():
        return torch.div(args[0], args[1], rounding_mode="trunc")  # ONNX divides integers exactly
    if op in ("Add", "Sub", "Mul", "Div"):
        f = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div}[op]
        return f(args[0], args[1])
    if op == "Concat":
        return torch.cat(args, dim=a["axis"])
    if op == "Split":
        return _split(args[0], args[1] if len(args) > 1 else None, a, len(node.outputs))
    if op == "Slice":
        return _slice(*args)
    if op == "MaxPool":
        k = a["kernel_shape"]
        pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[len(k)]
        return pool(args[0], k, a.get("strides", k), _pads(a, len(k)))
    if op == "Resize":
        return _resize(*args, a=a)
    if op == "Reshape":
        return _reshape(args[0], args[1])
    if op == "Transpose":
        return args[0].permute(a["perm"])
    if op == "MatMul":
        return torch.matmul(args[0], args[1])
    if op == "Softmax":
        return torch.softmax(args[0], dim=a.get("axis", -1))
    if op == "GlobalAveragePool":
        return args[0].mean(dim=tuple(range(2, args[0].dim())), keepdim=True)
    if op == "Flatten":
        return args[0].flatten(a.get("axis", 1))
    if op == "Gemm":
        w = args[1].t() if a.get("transB", 0) else args[1]
        return torch.addmm(args[2], args[0], w) if len(args) > 2 else args[0] @ w
    if op == "Identity":
        return args[0]
    if op == "Constant":
        return a["value"]
    if op == "Shape":
        return torch.tensor(args[0].shape, dtype=torch.int64)
    if op == "Gather":
        axis, idx = a.get("axis", 0), args[1]
        out = torch.index_select(args[0], axis, idx.reshape(-1).to(args[0].device))
        return out.reshape(args[0].shape[:axis] + idx.shape + args[0].shape[axis + 1:])
    raise ValueError(f"node {node.name}: ONNX op {op} is not supported by this comparator")


class Runner:
    """The model's nodes over tensors on `device` in `dtype` (integer tensors stay integers and on
    the CPU when they only shape things)."""

    def __init__(self, model, device, dtype, channels_last):
        self.model = model
        self.dtype = dtype

        # Operands that give shapes, scales or split sizes stay on the CPU: reading them back from
        # the GPU would be a copy inside the CUDA graph's capture.
        host = {i for n in model.nodes if n.op in ("Reshape", "Resize", "Slice", "Split", "Gather") for i in n.inputs[1:]}

        def place(name, t):
            if t.is_floating_point() and name not in host:
                t = t.to(device=device, dtype=dtype)
                if channels_last and t.dim() in (4, 5):
                    t = t.contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)
            return t

        self.weights = {k: place(k, v) for k, v in model.weights.items()}
        self.channels_last = channels_last

    def __call__(self, x):
        values = dict(self.weights)
        if self.channels_last and x.dim() in (4, 5):
            x = x.contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
        values[self.model.inputs[0][0]] = x
        for node in self.model.nodes:
            out = run_node(node, [values[i] if i else None for i in node.inputs])
            outs = out if isinstance(out, list) else [out]
            for name, t in zip(node.outputs, outs):
                values[name] = t
        return values[self.model.outputs[0][0]]


def input_shape(model, batch):
    dims = model.inputs[0][1]
    return [batch] + [d for d in dims[1:]]


def check(model, args):
    import numpy as np
    import onnxruntime as ort

    torch.manual_seed(0)
    x = torch.rand(input_shape(model, args.batch))
    ours = Runner(model, args.device, torch.float32, False)(x.to(args.device)).float().cpu().numpy()
    sess = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    theirs = sess.run(None, {model.inputs[0][0]: x.numpy()})[0]
    err = float(np.abs(ours - theirs).max())
    scale = float(np.abs(theirs).max())
    print(f"check {args.model}: shape {list(theirs.shape)}, max |torch - onnxruntime| {err:.3g} (max |output| {scale:.3g})")
    if err > 1e-3 * max(scale, 1.0):
        sys.exit("mismatch")


def timed(runner, x, seconds, graph):
    """Replays (a CUDA graph of) one batch for `seconds`; returns per-batch times in seconds."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            runner(x)
    torch.cuda.current_stream().wait_stream(stream)
    call = lambda: runner(x)  # noqa: E731
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            runner(x)
        call = g.replay
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--latency", action="store_true", help="batch 1, report latency percentiles")
    ap.add_argument("--check", action="store_true", help="fp32 against onnxruntime")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-graph", action="store_true")
    args = ap.parse_args()
    model = Model(args.model)
    if args.check:
        return check(model, args)
    torch.backends.cudnn.benchmark = True
    batch = 1 if args.latency else args.batch
    runner = Runner(model, args.device, torch.float16, True)
    x = torch.rand(input_shape(model, batch), device=args.device, dtype=torch.float16)
    with torch.inference_mode():
        times = timed(runner, x, args.seconds, not args.no_graph)
    gpu = torch.cuda.get_device_name()
    times.sort()
    if args.latency:
        p = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1e3  # noqa: E731
        print(f"pytorch {gpu} batch 1 latency: mean {sum(times) / len(times) * 1e3:.3f} ms, p50 {p(0.5):.3f} ms, p90 {p(0.9):.3f} ms ({len(times)} runs)")
    else:
        rate = batch * len(times) / sum(times)
        print(f"pytorch {gpu} batch {batch}: {rate:.1f} samples/s ({len(times)} batches)")


if __name__ == "__main__":
    main()
