#!/usr/bin/env python3
"""Where the outputs that nnops allocates for NumPy inputs lie, and what it costs: group_norm and
group_norm_backward on float32 NumPy arrays (malloc'd, so 16 bytes past a page), one thread, outputs allocated by
each call, with them placed at the input's page offset rounded down to 64 bytes (nnops' default, from 64 KiB) and
as plain np.empty_like (placement switched off), alternately for 4 rounds. Prints the range of the rounds' medians
of --calls calls, in us per call. The median, not the best: np.empty_like's arrays come from the heap after the
first call and land at different offsets from call to call, some fast and some slow. Then group_norm into outputs
given at offsets from its input modulo 4 KiB (-16 to 1008 bytes; 4K aliasing where the output is a little after).

usage: python python/benchmarks/placed_outputs.py [--calls 200]
Run it alone (other processes on the machine move the numbers): flock /tmp/nnops-bench.lock python ...
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np

import nnops
from nnops import _core

SHAPES = [(2, 1280, 8, 8), (2, 640, 16, 16), (2, 320, 32, 32), (2, 320, 64, 64)]


def median_us(f: Callable[[], object], calls: int) -> float:
    """Median of `calls` timed calls of f, in us."""
    t = []
    for _ in range(calls):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    t.sort()
    return t[len(t) // 2] * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    placed_min = _core._PLACED_MIN_BYTES
    for shape in SHAPES:
        x = rng.standard_normal(shape, dtype=np.float32)
        dy = rng.standard_normal(shape, dtype=np.float32)
        _, mean, rstd = nnops.group_norm(x, None, None, 32, float32_stats=True)
        calls = {
            "group_norm": lambda: nnops.group_norm(x, None, None, 32, num_threads=1),
            "group_norm_backward": lambda: nnops.group_norm_backward(dy, x, mean, rstd, None, 32, num_threads=1),
        }
        for name, f in calls.items():
            times: dict = {"np.empty_like": [], "placed": []}
            for _ in range(4):
                for kind, limit in (("np.empty_like", 1 << 62), ("placed", placed_min)):
                    _core._PLACED_MIN_BYTES = limit
                    times[kind].append(median_us(f, args.calls))
            _core._PLACED_MIN_BYTES = placed_min
            cells = ", ".join(f"{k} {min(v):.1f}-{max(v):.1f} us" for k, v in times.items())
            print(f"{name:20s} {str(list(shape)):18s} {cells}")

    for shape in [(2, 320, 64, 64), (2, 640, 16, 16)]:
        x = rng.standard_normal(shape, dtype=np.float32)
        _, mean, rstd = nnops.group_norm(x, None, None, 32)
        cells = []
        for d in (-16, 0, 48, 112, 240, 496, 1008):
            buf = np.empty(x.nbytes + 8192, np.uint8)
            at = (x.ctypes.data % 4096 + d - buf.ctypes.data) % 4096
            y = buf[at:at + x.nbytes].view(np.float32).reshape(shape)
            t = median_us(lambda: nnops.group_norm(x, None, None, 32, out=(y, mean, rstd), num_threads=1), args.calls)
            cells.append(f"{d:+d} B: {t:.0f}")
        print(f"group_norm into an output at an offset from x modulo 4 KiB, {list(shape)}: {', '.join(cells)} us")


if __name__ == "__main__":
    main()
