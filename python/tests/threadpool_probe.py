"""Times one nnops call (PowerSign on 4M float32, 2 threads) in a process without torch or right after torch
work in the same process; prints a JSON line. For test_threads.py and docs/python.md.

usage: python threadpool_probe.py plain|after_torch [REPEATS]
"""

import json
import sys
import time

import numpy as np

mode = sys.argv[1]
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 15
if mode == "after_torch":
    import torch

    torch.set_num_threads(2)
    a, b = torch.randn(384, 384), torch.randn(384, 384)
    img = torch.randn(4, 16, 32, 32)
    conv = torch.nn.Conv2d(16, 16, 3, padding=1)

    def other_work():
        with torch.no_grad():
            for _ in range(3):
                a.mm(b)
            conv(img).relu_()
            torch.nn.functional.group_norm(img, 4)
else:
    big = np.random.default_rng(0).standard_normal(1 << 18)

    def other_work():
        for _ in range(3):
            np.sin(big)

import nnops  # noqa: E402

n = 1 << 22
rng = np.random.default_rng(1)
var = rng.standard_normal(n).astype(np.float32)
m = np.zeros(n, np.float32)
grad = (rng.standard_normal(n) * 1e-2).astype(np.float32)
nnops.inplace_apply_power_sign(var, m, 0.01, 1.0, 1.0, 0.9, grad, num_threads=2)  # pages mapped
times = []
for _ in range(repeats):
    other_work()
    t0 = time.perf_counter()
    nnops.inplace_apply_power_sign(var, m, 0.01, 1.0, 1.0, 0.9, grad, num_threads=2)
    times.append(time.perf_counter() - t0)
gomp = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libgomp" in line or "libomp" in line
               or "libiomp" in line})
print(json.dumps({"mode": mode, "median_ms": 1e3 * float(np.median(times)), "min_ms": 1e3 * min(times),
                  "openmp_runtimes": gomp, "default_threads": nnops.default_num_threads()}))
