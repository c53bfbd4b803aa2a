#!/usr/bin/env python3
"""Comparator for `mlperf bench engine --benchmarks=resnet50`: PyTorch ResNet50 v1.5 inference in
fp16 with channels_last, cuDNN autotuning and a CUDA graph, on one GPU, input already on the
device. Prints one line: `pytorch <gpu> batch <b>: <images/s> images/s`.

The model is defined here (the torchvision topology, random weights) so the script needs only
PyTorch; throughput does not depend on the weights' values."""
import argparse
import time

import torch
from torch import nn


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride, downsample):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)  # v1.5: stride on the 3x3
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(width * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        return self.relu(self.bn3(self.conv3(y)) + identity)


def resnet50():
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for blocks, width, stride in [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)]:
        for b in range(blocks):
            s = stride if b == 0 else 1
            down = None
            if b == 0:
                down = nn.Sequential(nn.Conv2d(cin, width * 4, 1, s, bias=False), nn.BatchNorm2d(width * 4))
            layers.append(Bottleneck(cin, width, s, down))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)  # graph capture and cuDNN autotuning use the current device
    model = resnet50().eval().to(dev).half().to(memory_format=torch.channels_last)
    x = torch.randn(a.batch, 3, 224, 224, device=dev).half().contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        s = torch.cuda.Stream(dev)
        s.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(s):
            for _ in range(5):  # autotuning and allocator warm-up before capture
                model(x)
        torch.cuda.current_stream(dev).wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = model(x)
        graph.replay()
        torch.cuda.synchronize(dev)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < a.seconds:
            graph.replay()
            n += 1
            if n % 8 == 0:
                torch.cuda.synchronize(dev)
        torch.cuda.synchronize(dev)
        elapsed = time.perf_counter() - start
    print(f"pytorch {torch.cuda.get_device_name(dev)} batch {a.batch}: {n * a.batch / elapsed:.1f} images/s (torch {torch.__version__}, {out.shape[1]} classes)")


if __name__ == "__main__":
    main()
