#!/usr/bin/env python3
"""One optimizer step over ResNet-50's parameter list (torchvision.models.resnet50(): 161 tensors, 25.6 M
floats; random weights and gradients, nothing downloaded): nnops.torch.optim.PowerSign (one native foreach
call), PowerSign as eager torch ops (per parameter), torch.optim.Adam(fused=True) and Adam(foreach=True), on
1 and 2 threads. Prints the median step time of each (and the min), in ms.

usage: python python/benchmarks/optimizer_step.py [--steps 20] [--threads 1,2]
Run it alone (other processes on the machine move the numbers): flock /tmp/nnops-bench.lock python ...
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import torch
import torchvision

from nnops.torch.optim import PowerSign, cosine_sign_decay

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "python"))
from train_digits import EagerPowerSign  # noqa: E402


def params_with_grads():
    torch.manual_seed(0)
    model = torchvision.models.resnet50()
    params = [p for p in model.parameters()]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    return params


def time_steps(opt, steps):
    for _ in range(3):
        opt.step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), 1e3 * min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    params = params_with_grads()
    n = sum(p.numel() for p in params)
    print(f"ResNet-50: {len(params)} tensors, {n / 1e6:.2f} M floats; median (min) of {args.steps} steps")
    makers = {
        "nnops PowerSign (foreach)": lambda ps: PowerSign(ps, lr=1e-3, sign_decay_fn=cosine_sign_decay(10000)),
        "eager PowerSign (torch ops)": lambda ps: EagerPowerSign(ps, lr=1e-3, sign_decay_fn=cosine_sign_decay(10000)),
        "torch Adam(fused=True)": lambda ps: torch.optim.Adam(ps, lr=1e-3, fused=True),
        "torch Adam(foreach=True)": lambda ps: torch.optim.Adam(ps, lr=1e-3, foreach=True),
    }
    print("| optimizer | " + " | ".join(f"{t} thread{'s' if t != '1' else ''}" for t in args.threads.split(","))
          + " |")
    print("|---|" + "---|" * len(args.threads.split(",")))
    for name, make in makers.items():
        cells = []
        for t in args.threads.split(","):
            torch.set_num_threads(int(t))
            med, best = time_steps(make(params), args.steps)
            cells.append(f"{med:.1f} ({best:.1f}) ms")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
