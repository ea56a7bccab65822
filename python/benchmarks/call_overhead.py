#!/usr/bin/env python3
"""What a Python call costs on top of its kernel: GroupNorm forward on a tiny tensor ([1, 64, 64] float32, 32
groups, outputs allocated by the call) through nnops.group_norm on NumPy arrays and on torch tensors, through
torch.ops.nnops.group_norm, and torch's own torch.ops.aten.native_group_norm for comparison. Prints the best
of 5 rounds of --calls calls, in us per call (the C++ call itself takes about 5 us at this size).

usage: python python/benchmarks/call_overhead.py [--calls 3000]
Run it alone (other processes on the machine move the numbers): flock /tmp/nnops-bench.lock python ...
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np

import nnops


def best_us(f: Callable[[], object], calls: int) -> float:
    """Best of 5 rounds of `calls` calls of f, in us per call (after 200 warm-up calls)."""
    for _ in range(200):
        f()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - t) / calls * 1e6)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=3000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 64, 64), dtype=np.float32)
    g, b = np.ones(64, np.float32), np.zeros(64, np.float32)
    rows = [("nnops.group_norm, NumPy arrays", lambda: nnops.group_norm(x, g, b, num_groups=32))]
    try:
        import torch

        import nnops.torch  # noqa: F401  (registers torch.ops.nnops)

        tx, tg, tb = torch.from_numpy(x), torch.from_numpy(g), torch.from_numpy(b)
        rows += [
            ("nnops.group_norm, torch tensors", lambda: nnops.group_norm(tx, tg, tb, num_groups=32)),
            ("torch.ops.nnops.group_norm", lambda: torch.ops.nnops.group_norm(tx, tg, tb, 32, 1e-5)),
            ("torch.ops.aten.native_group_norm", lambda: torch.ops.aten.native_group_norm(tx, tg, tb, 1, 64, 64, 32,
                                                                                           1e-5)),
        ]
    except ImportError:
        print("torch is not installed: NumPy only")
    for name, f in rows:
        print(f"{name:36s} {best_us(f, args.calls):7.1f} us")


if __name__ == "__main__":
    main()
