#!/usr/bin/env python3
"""PyTorch fp16 comparator for the GPU 3D-UNet engine: the same network (MLPerf's KiTS19 topology
as runtime/src/benchmarks/unet3d/model.rs writes it) with the same weights, read from the same ONNX
file, run on batches of 128^3 windows in fp16 with channels_last_3d, cudnn.benchmark and (when it
captures) a CUDA graph. Prints windows/s.

    python3 scripts/bench_pytorch_unet3d.py MODEL.onnx --batch 8 --seconds 10

Reads the ONNX initializers with the `onnx` package when it is installed, else with the few lines
of protobuf decoding below (ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto dims = 1,
data_type = 2, float_data = 4, name = 8, raw_data = 9).
"""
import argparse
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def initializers(path):
    try:
        import onnx
        from onnx import numpy_helper
        model = onnx.load(path)
        return {t.name: numpy_helper.to_array(t).astype(np.float32) for t in model.graph.initializer}
    except ImportError:
        pass
    data = open(path, "rb").read()
    out = {}
    for number, _, graph in fields(data):
        if number != 7:
            continue
        for n, _, tensor in fields(graph):
            if n != 5:
                continue
            dims, name, raw, floats = [], "", b"", []
            for f, wire, v in fields(tensor):
                if f == 1:
                    if wire == 2:
                        j = 0
                        while j < len(v):
                            d, j = varint(v, j)
                            dims.append(d)
                    else:
                        dims.append(v)
                elif f == 8:
                    name = v.decode()
                elif f == 9:
                    raw = v
                elif f == 4:
                    floats = list(struct.unpack(f"<{len(v) // 4}f", v)) if wire == 2 else floats + [struct.unpack("<f", v)[0]]
            values = np.frombuffer(raw, dtype="<f4") if raw else np.array(floats, dtype=np.float32)
            out[name] = values.reshape(dims)
    return out


class UNet3d(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = {k: torch.nn.Parameter(torch.from_numpy(np.array(v)), requires_grad=False) for k, v in w.items()}
        for i, (k, p) in enumerate(self.w.items()):
            self.register_parameter(f"p{i}", p)
        self.levels = 1 + max(int(k[4]) for k in w if k.startswith("down"))

    def block(self, x, name, stride):
        x = F.conv3d(x, self.w[f"{name}.conv.weight"], stride=stride, padding=1)
        x = F.instance_norm(x, weight=self.w[f"{name}.norm.weight"], bias=self.w[f"{name}.norm.bias"], eps=1e-5)
        return F.relu(x)

    def forward(self, x):
        x = self.block(x, "input_block.0", 1)
        x = self.block(x, "input_block.1", 1)
        skips = [x]
        for level in range(1, self.levels):
            x = self.block(x, f"down{level}.0", 2)
            x = self.block(x, f"down{level}.1", 1)
            skips.append(x)
        skips.pop()
        for level in reversed(range(self.levels - 1)):
            x = F.conv_transpose3d(x, self.w[f"up{level}.transpose.weight"], self.w[f"up{level}.transpose.bias"], stride=2)
            x = torch.cat([x, skips[level]], dim=1)
            x = self.block(x, f"up{level}.0", 1)
            x = self.block(x, f"up{level}.1", 1)
        return F.conv3d(x, self.w["output.weight"], self.w["output.bias"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--roi", type=int, default=128)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    net = UNet3d(initializers(args.model)).cuda().half().eval().to(memory_format=torch.channels_last_3d)
    x = torch.randn(args.batch, 1, args.roi, args.roi, args.roi, device="cuda").half().to(memory_format=torch.channels_last_3d)
    with torch.inference_mode():
        for _ in range(3):
            net(x)
        torch.cuda.synchronize()
        run, how = (lambda: net(x)), "eager"
        try:
            graph = torch.cuda.CUDAGraph()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                net(x)
            torch.cuda.current_stream().wait_stream(stream)
            with torch.cuda.graph(graph):
                y = net(x)
            run, how = graph.replay, "CUDA graph"
        except Exception as e:  # noqa: BLE001 - report and time eagerly
            print(f"pytorch: no CUDA graph ({e}); timing eager")
        run()
        torch.cuda.synchronize()
        runs, started = 0, time.perf_counter()
        while time.perf_counter() - started < args.seconds:
            run()
            runs += 1
            if runs % 4 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        secs = time.perf_counter() - started
    print(f"pytorch {torch.__version__} fp16 channels_last_3d cudnn.benchmark {how}: batch {args.batch}, "
          f"{1000 * secs / runs:.2f} ms per batch, {runs * args.batch / secs:.1f} windows/s")


if __name__ == "__main__":
    main()
