#!/usr/bin/env python3
"""Time nnops side by side with PyTorch and TensorFlow on equal work (issue 3).

For every case `nnops bench` times (the shapes come from its own --json output, so they are the same by
construction), this script times the nearest framework operator on the same element count, dtype and
thread count:

- GroupNormalizationGrad vs PyTorch's CPU GroupNorm backward,
  torch.ops.aten.native_group_norm_backward(..., output_mask=[True, False, False]) (dx only).
  The nnops shape [N, G, d2, ..., dk] is given to torch as x [N, C, HxW] with C = G * d2 channels
  (d2 channels per group, e.g. [256, 32, 8, 32, 32] -> 256 channels, 32 groups, 32x32 pixels) and
  C = G for rank-3 shapes; groups have the same M elements either way.
- InplaceApplyPowerSign vs TensorFlow's tf.raw_ops.ResourceApplyPowerSign (in a tf.function), and vs
  the formula of docs/semantics.md written as PyTorch eager ops (PyTorch has no PowerSign).
- GroupNorm and GroupNormBackward vs torch.ops.aten.native_group_norm and native_group_norm_backward
  (all three outputs) on the same [N, C, ...] shape and 32 groups, channels_last memory for nnops bench's
  dram-channels-last size.

Each framework runs in a fresh subprocess per thread count (TensorFlow fixes its thread pools when it
initialises), with 2 warm-up calls and the median of --reps timed calls, as `nnops bench` does. PyTorch
runs twice, with the stock allocator and with a tuned one (see TUNED), because it allocates its outputs
on every call. A framework that cannot be imported is skipped with a message. Run timing jobs under
`flock /tmp/nnops-bench.lock` so that they do not overlap with other benchmarks on the machine.

Example:
    flock /tmp/nnops-bench.lock python3 bench/compare_frameworks.py --threads 1 2
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OPS = ("group_normalization_grad", "inplace_apply_power_sign", "group_norm", "group_norm_backward")
DTYPES = ("float32", "float16", "bfloat16")
# PyTorch allocates dx (and the eager PowerSign's temporaries) on every call. With the stock glibc
# allocator, tensors above the mmap threshold (dynamic, at most 32 MiB) page-fault fresh 4 KiB pages each
# call, and smaller ones are sometimes trimmed and faulted again (l3 times vary 3x between processes).
# TUNED keeps blocks up to 32 MiB in the heap, never trims it, and turns on PyTorch's opt-in to
# transparent huge pages for the rest. nnops's buffers are allocated once by the caller (`nnops bench`:
# 2 MiB aligned, huge pages requested), so the tuned rows are the fairer comparison.
TUNED = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 40), "THP_MEM_ALLOC_ENABLE": "1"}
# Worker runs: (framework module, label suffix, extra environment).
RUNS = (("torch", "", {}), ("torch", " (tuned alloc)", TUNED), ("tf", "", {}))
SIZES = ("l2", "l3", "dram", "dram-big", "dram-channels-last")  # nnops bench's size names
SKIPPED = 3  # worker exit status: framework not importable


def median_seconds(call, reps):
    """Median wall time of `reps` calls after 2 warm-up calls (the method of `nnops bench`)."""
    for _ in range(2):
        call()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# --- workers: each runs in its own process, for one framework and one thread count -------------------


def torch_cases(cases, threads):
    """Times PyTorch's GroupNorm backward and an eager PowerSign; yields one result per case and reference."""
    import torch

    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)

    def uniform(shape, dtype, lo, hi):
        return torch.empty(shape, dtype=dtype).uniform_(lo, hi, generator=gen)

    for i, case in enumerate(cases):
        dtype = getattr(torch, case["dtype"])
        shape = case["shape"]
        if case["op"] == "group_normalization_grad":
            n, g = shape[0], shape[1]
            c = g * shape[2] if len(shape) >= 4 else g
            hxw = math.prod(shape[2:]) * g // c
            x = uniform((n, c, hxw), dtype, -2, 2)
            dy = uniform((n, c, hxw), dtype, -1, 1)
            gamma = uniform((c,), dtype, 0.5, 1.5)
            mean = torch.zeros((n, g), dtype=dtype)
            rstd = uniform((n, g), dtype, 0.5, 2)
            mask = [True, False, False]

            def call():
                torch.ops.aten.native_group_norm_backward(dy, x, mean, rstd, gamma, n, c, hxw, g, mask)

            yield dict(case=i, framework="torch native_group_norm_backward", framework_shape=[n, c, hxw],
                       median_s=median_seconds(call, case["reps"]), version=torch.__version__)
        elif case["op"] in ("group_norm", "group_norm_backward"):
            # The same [N, C, ...] tensors and 32 groups (the groups nnops bench uses for C >= 64), channels_last
            # memory for the channels-last size; dgamma and dbeta included, as nnops computes them.
            n, c = shape[0], shape[1]
            hxw = math.prod(shape[2:])
            groups = 32
            fmt = torch.channels_last if case["size"].endswith("channels-last") else torch.contiguous_format
            x = uniform(shape, dtype, -2, 2).contiguous(memory_format=fmt)
            gamma = uniform((c,), dtype, 0.5, 1.5)
            beta = uniform((c,), dtype, -0.5, 0.5)
            if case["op"] == "group_norm":
                def call():
                    torch.ops.aten.native_group_norm(x, gamma, beta, n, c, hxw, groups, 1e-5)

                name = "torch native_group_norm"
            else:
                dy = uniform(shape, dtype, -1, 1).contiguous(memory_format=fmt)
                _, mean, rstd = torch.ops.aten.native_group_norm(x, gamma, beta, n, c, hxw, groups, 1e-5)

                def call():
                    torch.ops.aten.native_group_norm_backward(dy, x, mean, rstd, gamma, n, c, hxw, groups,
                                                              [True, True, True])

                name = "torch native_group_norm_backward"
            yield dict(case=i, framework=name, framework_shape=shape, median_s=median_seconds(call, case["reps"]),
                       version=torch.__version__)
        else:
            var = uniform(shape, dtype, -1, 1)
            m = uniform(shape, dtype, -0.01, 0.01)
            grad = uniform(shape, dtype, -0.01, 0.01)
            lr, logbase, sign_decay, beta = 1e-6, 1.0, 0.99, 0.9

            def call():
                m.mul_(beta).add_(grad, alpha=1 - beta)
                scale = torch.sign(m).mul_(torch.sign(grad)).mul_(logbase * sign_decay).exp_()
                var.addcmul_(scale, grad, value=-lr)

            yield dict(case=i, framework="torch eager PowerSign", framework_shape=shape,
                       median_s=median_seconds(call, case["reps"]), version=torch.__version__)


def tf_cases(cases, threads):
    """Times TensorFlow's ResourceApplyPowerSign; yields one result per PowerSign case."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.random.set_seed(0)
    for i, case in enumerate(cases):
        if case["op"] != "inplace_apply_power_sign":
            continue
        dtype = getattr(tf, case["dtype"])
        shape = case["shape"]
        var = tf.Variable(tf.random.uniform(shape, -1, 1, dtype=dtype))
        m = tf.Variable(tf.random.uniform(shape, -0.01, 0.01, dtype=dtype))
        grad = tf.random.uniform(shape, -0.01, 0.01, dtype=dtype)
        lr, logbase, sign_decay, beta = (tf.constant(v, dtype) for v in (1e-6, 1.0, 0.99, 0.9))

        @tf.function
        def step():
            tf.raw_ops.ResourceApplyPowerSign(var=var.handle, m=m.handle, lr=lr, logbase=logbase,
                                              sign_decay=sign_decay, beta=beta, grad=grad, use_locking=False)

        yield dict(case=i, framework="tf ResourceApplyPowerSign", framework_shape=shape,
                   median_s=median_seconds(step, case["reps"]), version=tf.__version__)


def run_worker(module, cases, threads):
    """Worker entry point: prints one JSON line per result; exit status SKIPPED if the framework is missing."""
    try:
        results = (torch_cases if module == "torch" else tf_cases)(cases, threads)
        for r in results:
            print(json.dumps(r), flush=True)
    except ImportError as e:
        print(f"{e}", file=sys.stderr)
        return SKIPPED
    return 0


# --- driver -------------------------------------------------------------------------------------------


def nnops_cases(args, threads):
    """Runs `nnops bench --json` once per operator and size; returns its result rows and its version."""
    rows, version = [], None
    for op in args.op:
        for size in args.size:
            cmd = [args.nnops, "bench", "--json", "--op", op, "--size", size, "--layout", "huge", "--dtype", *args.dtype,
                   "--threads", str(threads), "--reps", str(args.reps_l3 if size == "l3" else args.reps)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            doc = json.loads(out)
            version = f"{doc['nnops_version']} (SIMD target {doc['isa']})"
            for r in doc["results"]:
                if r["error"]:
                    sys.exit(f"nnops bench failed: {r['error']}")
                r["shape"] = json.loads(r["shape"])
                r["reps"] = args.reps_l3 if r["size"] == "l3" else args.reps
                rows.append(r)
    return rows, version


def framework_results(module, extra_env, cases, threads):
    """Runs one worker process; returns its results, or None (with a message) if the framework is missing."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), TF_CPP_MIN_LOG_LEVEL="3", **extra_env)
    cmd = [sys.executable, __file__, "--worker", module, "--threads", str(threads), "--cases", json.dumps(cases)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode == SKIPPED:
        print(f"skipping {module} rows: {p.stderr.strip()}", file=sys.stderr)
        return None
    if p.returncode != 0:
        sys.exit(f"{module} worker failed (exit {p.returncode}):\n{p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def print_table(rows):
    """One row per case and framework; framework shape shown only where it differs from nnops's."""
    head = ("op", "dtype", "shape", "threads", "nnops ms", "framework", "framework shape", "framework ms", "speedup")
    lines = [head]
    for nn, fw in rows:
        fw_shape = str(fw["framework_shape"]) if fw["framework_shape"] != nn["shape"] else "same"
        lines.append((nn["op"], nn["dtype"], str(nn["shape"]), str(nn["threads"]), f"{nn['median_s'] * 1e3:.3f}",
                      fw["framework"], fw_shape, f"{fw['median_s'] * 1e3:.3f}",
                      f"{fw['median_s'] / nn['median_s']:.2f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    left = {0, 1, 2, 5, 6}
    for line in lines:
        print("  ".join(cell.ljust(w) if i in left else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths))))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nnops", default=str(REPO / "build/release/nnops"), help="nnops executable")
    p.add_argument("--op", nargs="+", choices=OPS, default=list(OPS))
    p.add_argument("--dtype", nargs="+", choices=DTYPES, default=list(DTYPES))
    p.add_argument("--size", nargs="+", choices=SIZES[:3], default=["l3", "dram"],
                   help="nnops bench sizes (dram also brings GroupNormalizationGrad's dram-big)")
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--reps", type=int, default=9, help="timed calls per case, l2 and dram sizes")
    p.add_argument("--reps-l3", type=int, default=30, help="timed calls per case, l3 size")
    p.add_argument("--json", metavar="PATH", help="also write every result to this file")
    p.add_argument("--worker", choices=("torch", "tf"), help=argparse.SUPPRESS)
    p.add_argument("--cases", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return run_worker(args.worker, json.loads(args.cases), args.threads[0])

    load_start = os.getloadavg()[0]
    rows, versions, missing = [], {"nnops": None}, set()
    for threads in args.threads:
        cases, versions["nnops"] = nnops_cases(args, threads)
        for module, suffix, extra_env in RUNS:
            if module in missing:
                continue
            results = framework_results(module, extra_env, cases, threads)
            if results is None:
                missing.add(module)
                continue
            for fw in results:
                versions[module] = fw["version"]
                fw["framework"] += suffix
                rows.append((cases[fw.pop("case")], fw))
    rows.sort(key=lambda r: (r[0]["op"], DTYPES.index(r[0]["dtype"]), SIZES.index(r[0]["size"]), r[0]["threads"],
                             r[1]["framework"]))
    print_table(rows)
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v))
    print("speedup = framework ms / nnops ms (> 1: nnops is faster). Medians of separate runs, not interleaved.")
    print(f"load average (1 min): {load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end, {os.cpu_count()} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps([{"nnops": nn, "framework": fw} for nn, fw in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
