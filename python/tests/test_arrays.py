"""nnops (array level): the functions built from the descriptors, against float64 references under the docs/semantics.md
bounds, bitwise against the C++ library through its command-line tool, thread counts, strided views, torch
tensors without copies, scalars, the GIL."""

from __future__ import annotations

import inspect
import subprocess
import threading
import time

import numpy as np
import pytest

import nnops
from conftest import (BF16, DTYPES, U32, assert_within, cli_path, ref_group_norm, ref_group_norm_backward,
                      ref_group_normalization_grad, ref_power_sign, round_to, ulp)
from samples import sample

ALL = list(DTYPES)
C = 8.0  # the C++ tests' bound constant (kBoundC): |err| <= ulp_T(ref) + C * u32 * scale


# ---- the functions -----------------------------------------------------------------------------------------

def test_every_descriptor_is_a_function():
    names = [d["name"] for d in nnops.ops()]
    assert names and tuple(names) == nnops.OPERATORS
    for d in nnops.ops():
        fn = getattr(nnops, d["name"])
        params = list(inspect.signature(fn).parameters)
        inputs = [t["name"] for t in d["tensors"] if t["role"] != "out"]
        attrs = [a["name"] for a in d["attrs"]]
        assert params[: len(inputs) + len(attrs)] == inputs + attrs
        assert d["summary"] in fn.__doc__
        for t in d["tensors"]:
            assert t["name"] in fn.__doc__
        assert fn.__name__ == d["name"] and fn.__module__ == "nnops"


def test_signatures_of_the_issue():
    E = inspect.Parameter.empty

    def params(fn):
        return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()
                if p.kind == p.POSITIONAL_OR_KEYWORD]

    assert params(nnops.group_normalization_grad) == [("x", E), ("dy", E), ("gamma", E), ("mean", E), ("rstd", E),
                                                      ("out", None)]
    assert params(nnops.inplace_apply_power_sign) == [("var", E), ("m", E), ("lr", E), ("logbase", E),
                                                      ("sign_decay", E), ("beta", E), ("grad", E),
                                                      ("use_locking", False)]
    assert params(nnops.group_norm)[:5] == [("x", E), ("gamma", E), ("beta", E), ("num_groups", E), ("eps", 1e-5)]
    assert params(nnops.group_norm_backward)[:7] == [("dy", E), ("x", E), ("mean", E), ("rstd", E), ("gamma", E),
                                                     ("num_groups", E), ("output_mask", (True, True, True))]
    assert [p for p in inspect.signature(nnops.inplace_apply_power_sign_foreach).parameters][:8] == [
        "vars", "ms", "grads", "lr", "logbase", "sign_decay", "beta", "use_locking"]


# ---- against the float64 references -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("float32_stats", [False, True])
def test_group_norm_reference(rng, dtype, float32_stats):
    a = sample("group_norm", rng, dtype)
    out, mean, rstd = nnops.group_norm(**a, float32_stats=float32_stats)
    st = "float32" if float32_stats else dtype
    assert out.dtype == DTYPES[dtype] and mean.dtype == DTYPES[st] and rstd.dtype == DTYPES[st]
    ro, rm, rr, scale, mean_abs = ref_group_norm(a["x"], a["gamma"], a["beta"], a["num_groups"], a["eps"])
    assert_within(out, ro, ulp(ro, dtype) + C * U32 * scale, "out")
    assert_within(mean, rm, ulp(rm, st) + C * U32 * mean_abs, "mean")
    assert_within(rstd, rr, ulp(rr, st) + C * U32 * rr, "rstd")


def test_group_norm_without_affine(rng):
    a = sample("group_norm", rng, "float32")
    out, _, _ = nnops.group_norm(a["x"], None, None, 3)
    ro, *_ = ref_group_norm(a["x"], None, None, 3, 1e-5)
    assert_within(out, ro, ulp(ro, "float32") + C * U32 * np.abs(ro), "out")


def test_output_shapes_follow_each_call(rng):
    # Output shapes are kept per input shapes and attributes: calls that alternate shapes, dtypes, num_groups
    # and the float32 stats option each get their own.
    cases = [((2, 8, 3), "float32", 4, False), ((1, 6, 5, 5), "float32", 3, False), ((2, 8, 3), "float16", 2, True),
             ((2, 8, 3), "float32", 2, False), ((1, 6, 5, 5), "float16", 3, False)]
    for shape, dt, groups, f32 in cases * 2:
        x = rng.standard_normal(shape).astype(dt)
        out, mean, rstd = nnops.group_norm(x, None, None, num_groups=groups, float32_stats=f32)
        assert out.shape == shape and out.dtype == x.dtype
        assert mean.shape == rstd.shape == (shape[0], groups)
        assert mean.dtype == rstd.dtype == (np.float32 if f32 else x.dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_group_norm_backward_reference(rng, dtype):
    a = sample("group_norm_backward", rng, dtype)
    dx, dgamma, dbeta = nnops.group_norm_backward(**a)
    rdx, rdg, rdb, sdx, sdg, sdb = ref_group_norm_backward(a["dy"], a["x"], a["mean"], a["rstd"], a["gamma"], 3)
    assert dx.dtype == DTYPES[dtype] and dgamma.dtype == DTYPES[dtype]
    assert_within(dx, rdx, ulp(rdx, dtype) + C * U32 * sdx, "dx")
    assert_within(dgamma, rdg, ulp(rdg, dtype) + C * U32 * sdg, "dgamma")
    assert_within(dbeta, rdb, ulp(rdb, dtype) + C * U32 * sdb, "dbeta")


def test_group_norm_backward_mask(rng):
    a = sample("group_norm_backward", rng, "float32")
    full = nnops.group_norm_backward(**a)
    for mask in [(True, False, False), (False, True, True), (False, False, True)]:
        got = nnops.group_norm_backward(**{**a, "output_mask": mask})
        for k in range(3):
            if mask[k]:
                assert np.array_equal(got[k], full[k])
            else:
                assert got[k] is None


@pytest.mark.parametrize("dtype", ALL)
def test_group_normalization_grad_reference_and_in_place(rng, dtype):
    a = sample("group_normalization_grad", rng, dtype)
    dx = nnops.group_normalization_grad(**a)
    ref, scale = ref_group_normalization_grad(a["x"], a["dy"], a["gamma"], a["mean"], a["rstd"])
    assert_within(dx, ref, ulp(ref, dtype) + C * U32 * scale, "dx")
    # dx may be dy's very buffer (the descriptor's alias), with the same bits.
    dy = a["dy"].copy()
    assert nnops.group_normalization_grad(a["x"], dy, a["gamma"], a["mean"], a["rstd"], out=dy) is dy
    assert np.array_equal(dy.view(np.uint16 if dtype != "float32" else np.uint32),
                          dx.view(np.uint16 if dtype != "float32" else np.uint32))


@pytest.mark.parametrize("dtype", ALL)
def test_power_sign_reference(rng, dtype):
    a = sample("inplace_apply_power_sign", rng, dtype)
    v0, m0 = a["var"].copy(), a["m"].copy()
    s = {k: float(round_to(a[k], dtype)) for k in ("lr", "logbase", "sign_decay", "beta")}
    assert nnops.inplace_apply_power_sign(**a) is None
    rv, rm = ref_power_sign(v0, m0, a["grad"], **s)
    if dtype == "float32":  # correctly rounded (docs/semantics.md: float64 update rounded once)
        assert np.array_equal(a["var"], rv.astype(np.float32)) and np.array_equal(a["m"], rm.astype(np.float32))
    # every dtype: round(ref) or one ulp of T from it
    assert_within(a["var"], rv, ulp(rv, dtype) * 1.5, "var")
    assert_within(a["m"], rm, ulp(rm, dtype) * 1.5, "m")


# ---- bitwise: the same bits as the C++ library (its command-line tool) ------------------------------------

def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", nnops.OPERATORS)
def test_bitwise_equal_to_cpp_cli(tmp_path, rng, op, dtype):
    """Every operator through `nnops run` (the C++ API behind the CLI) and through Python: identical bits."""
    cli = cli_path()
    if cli is None:
        pytest.skip("the C++ command-line tool is not built (make build builds build/release/nnops)")
    d = next(d for d in nnops.ops() if d["name"] == op)
    a = sample(op, rng, dtype)
    cmd = [cli, "run", op, "--threads", "2"]
    for t in d["tensors"]:
        opt = "--" + t["name"].replace("_", "-")
        path = tmp_path / f"{t['name']}.npy"
        if t["role"] == "out":
            cmd += [opt, str(path)]
        elif a.get(t["name"]) is not None:
            v = a[t["name"]]
            if isinstance(v, float):
                cmd += [opt, repr(v)]
            else:
                np.save(path, v)
                cmd += [opt, str(path)]
    for at in d["attrs"]:
        v = a.get(at["name"], at["default"])
        if at["kind"] in ("int", "float"):
            cmd += ["--" + at["name"].replace("_", "-"), repr(v)]
        elif at["kind"] == "bool" and v:
            cmd += ["--" + at["name"].replace("_", "-")]
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    res = getattr(nnops, op)(**a, num_threads=3)
    outs = [t for t in d["tensors"] if t["role"] != "in"]
    got = [a[t["name"]] for t in outs if t["role"] == "inout"] + (
        [] if res is None else list(res) if isinstance(res, tuple) else [res])
    assert len(got) == len(outs)
    for t, g in zip(outs, got):
        want = np.load(tmp_path / f"{t['name']}.npy")
        if want.dtype.kind == "V":
            want = want.view(BF16)
        assert want.dtype == g.dtype and want.shape == g.shape, t["name"]
        assert np.array_equal(_bits(want), _bits(g)), f"{op} {dtype}: {t['name']} differs from the C++ result"


# ---- thread counts, strided views, torch tensors -------------------------------------------------------------

@pytest.mark.parametrize("op", nnops.OPERATORS)
def test_thread_count_does_not_change_bits(rng, op):
    big = {"group_norm": dict(shape=(4, 64, 33, 31), g=16), "group_norm_backward": dict(shape=(4, 64, 33, 31), g=16),
           "group_normalization_grad": dict(shape=(4, 16, 65, 33)), "inplace_apply_power_sign": dict(shape=(300001,))}
    for dtype in ("float32", "bfloat16"):
        base = sample(op, rng, dtype, **big[op])
        results = []
        for threads in (1, 2, 3, 5):
            a = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in base.items()}
            r = getattr(nnops, op)(**a, num_threads=threads)
            r = [a["var"], a["m"]] if r is None else list(r) if isinstance(r, tuple) else [r]
            results.append([_bits(x) for x in r])
        for r in results[1:]:
            assert all(np.array_equal(x, y) for x, y in zip(results[0], r)), f"{op} {dtype}"


def test_strided_views_give_dense_bits(rng):
    # group_norm on a channels-last view and on a sliced view: the bits of their dense copies.
    x = rng.uniform(-2, 2, (2, 5, 6, 16)).astype(np.float32)
    cl = np.transpose(x, (0, 3, 1, 2))  # logical [2, 16, 5, 6], channels-last memory
    g, b = rng.uniform(-1, 1, 16).astype(np.float32), rng.uniform(-1, 1, 16).astype(np.float32)
    want = nnops.group_norm(np.ascontiguousarray(cl), g, b, 4)
    got = nnops.group_norm(cl, g, b, 4)
    assert got[0].strides == cl.strides  # the output is laid out like the input
    for w, o in zip(want, got):
        assert np.array_equal(w, o)
    big = rng.uniform(-2, 2, (2, 8, 10, 12)).astype(BF16)
    view = big[:, ::2, 1:9, ::3]
    want = nnops.group_norm(np.ascontiguousarray(view), None, None, 2)
    got = nnops.group_norm(view, None, None, 2)
    for w, o in zip(want, got):
        assert np.array_equal(_bits(w), _bits(o))
    # power sign on every other element of a buffer: those elements updated, the others untouched.
    var = rng.uniform(-1, 1, 2001).astype(np.float16)
    m = rng.uniform(-1, 1, 2001).astype(np.float16)
    grad = rng.uniform(-1, 1, 1001).astype(np.float16)
    dv, dm = var[::2].copy(), m[::2].copy()
    nnops.inplace_apply_power_sign(dv, dm, 0.1, 1.0, 0.5, 0.9, grad)
    v0 = var.copy()
    nnops.inplace_apply_power_sign(var[::2], m[::2], 0.1, 1.0, 0.5, 0.9, grad)
    assert np.array_equal(_bits(var[::2]), _bits(dv)) and np.array_equal(_bits(m[::2]), _bits(dm))
    assert np.array_equal(_bits(var[1::2]), _bits(v0[1::2]))


def test_large_numpy_outputs_are_placed_like_their_input(rng):
    # NumPy outputs of 64 KiB or more start at their input's offset in its 4 KiB page rounded down to 64 bytes,
    # laid out like the input (C order or channels-last), with the bits of an output given by the caller; smaller
    # ones are plain np.empty_like.
    for shape, layout, dtype in [((2, 64, 16, 16), "c", np.float32), ((2, 32, 32, 32), "cl", BF16),
                                 ((2, 16, 48, 48), "c", np.float16), ((1, 8, 4, 4), "c", np.float16)]:
        for skew in (0, 16, 100, 4032):  # the input at these byte offsets from a page
            dense = rng.uniform(-2, 2, shape).astype(dtype)
            src = dense if layout == "c" else np.ascontiguousarray(np.transpose(dense, (0, 2, 3, 1)))
            buf = np.empty(src.nbytes + 8192, np.uint8)
            at = (skew - buf.ctypes.data) % 4096
            x = buf[at:at + src.nbytes].view(dtype).reshape(src.shape)
            x[...] = src
            if layout == "cl":
                x = np.transpose(x, (0, 3, 1, 2))
            assert x.ctypes.data % 4096 == skew
            got = nnops.group_norm(x, None, None, 4)
            want = nnops.group_norm(x, None, None, 4, out=tuple(np.empty_like(o) for o in got))
            assert got[0].strides == x.strides
            if got[0].nbytes >= 1 << 16:
                assert got[0].ctypes.data % 4096 == skew // 64 * 64, (shape, skew)
            for w, o in zip(want, got):
                assert np.array_equal(_bits(w), _bits(o))
            dx = nnops.group_norm_backward(x, x, got[1], got[2], None, 4)[0]
            assert dx.strides == x.strides and (dx.nbytes < 1 << 16 or dx.ctypes.data % 4096 == skew // 64 * 64)


def test_torch_tensors_are_used_in_place():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for dtype, tdt in (("float32", torch.float32), ("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        a = sample("inplace_apply_power_sign", rng, dtype)
        tv = torch.from_numpy(a["var"].astype(np.float32)).to(tdt)
        tm = torch.from_numpy(a["m"].astype(np.float32)).to(tdt)
        tg = torch.from_numpy(a["grad"].astype(np.float32)).to(tdt)
        nv, nm, ng = (t.float().numpy().astype(DTYPES[dtype]) for t in (tv, tm, tg))
        ptr = tv.data_ptr()
        version = tv._version
        nnops.inplace_apply_power_sign(tv, tm, 0.1, 1.0, 0.5, 0.9, tg)
        nnops.inplace_apply_power_sign(nv, nm, 0.1, 1.0, 0.5, 0.9, ng)
        assert tv.data_ptr() == ptr and tv._version > version  # written in place, autograd told
        assert np.array_equal(tv.float().numpy(), nv.astype(np.float32))
        assert np.array_equal(tm.float().numpy(), nm.astype(np.float32))
        # outputs come back as torch tensors, laid out like the input (channels-last stays channels-last)
        x = torch.randn(2, 8, 5, 5, dtype=tdt).to(memory_format=torch.channels_last)
        out, mean, rstd = nnops.group_norm(x, None, None, 4, float32_stats=True)
        assert isinstance(out, torch.Tensor) and out.is_contiguous(memory_format=torch.channels_last)
        assert mean.dtype == torch.float32
        want = nnops.group_norm(x.float().numpy().astype(DTYPES[dtype]), None, None, 4, float32_stats=True)
        assert np.array_equal(out.float().numpy(), want[0].astype(np.float32))


def test_scalars_as_floats_or_one_element_arrays(rng):
    a = sample("inplace_apply_power_sign", rng, "bfloat16")
    runs = []
    for form in ("float", "[]", "[1]"):
        b = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in a.items()}
        for k in ("lr", "logbase", "sign_decay", "beta"):
            if form != "float":
                b[k] = round_to(np.array(a[k]).reshape(() if form == "[]" else (1,)), "bfloat16")
        nnops.inplace_apply_power_sign(**b)
        runs.append((_bits(b["var"]), _bits(b["m"])))
    assert all(np.array_equal(r[0], runs[0][0]) and np.array_equal(r[1], runs[0][1]) for r in runs)


def test_foreach_is_bitwise_single_calls(rng):
    shapes = [(64, 3, 3, 3), (64,), (), (0, 4), (257,), (40001,), (3, 1001)]
    dts = ["float32", "bfloat16", "float16", "float32", "bfloat16", "float32", "float16"]
    vs = [rng.uniform(-1, 1, s).astype(DTYPES[d]) for s, d in zip(shapes, dts)]
    ms = [rng.uniform(-1e-2, 1e-2, s).astype(DTYPES[d]) for s, d in zip(shapes, dts)]
    gs = [rng.uniform(-1e-2, 1e-2, s).astype(DTYPES[d]) for s, d in zip(shapes, dts)]
    v1, m1 = [v.copy() for v in vs], [m.copy() for m in ms]
    hyper = (0.1, 1.0, 0.8414709848078965, 0.9)
    nnops.inplace_apply_power_sign_foreach(vs, ms, gs, *hyper, num_threads=2)
    for v, m, g in zip(v1, m1, gs):
        nnops.inplace_apply_power_sign(v, m, *hyper, g, num_threads=1)
    for a, b in zip(vs + ms, v1 + m1):
        assert np.array_equal(_bits(a), _bits(b))


# ---- the GIL -------------------------------------------------------------------------------------------------

def test_gil_is_released_while_a_kernel_runs():
    """While one thread is inside a kernel, another thread keeps running Python code."""
    # 64 Mi elements: a call takes ~35 ms even on an idle machine (7 bins below); at 16 Mi, 4 calls made too
    # few bins to tell.
    n = 1 << 26
    var, m = np.zeros(n, np.float32), np.zeros(n, np.float32)
    grad = np.full(n, 1e-3, np.float32)
    nnops.inplace_apply_power_sign(var, m, 0.1, 1.0, 1.0, 0.9, grad, num_threads=1)  # pages mapped
    intervals = []
    done = threading.Event()

    def work():
        for _ in range(4):
            t0 = time.perf_counter()
            nnops.inplace_apply_power_sign(var, m, 0.1, 1.0, 1.0, 0.9, grad, num_threads=1)
            intervals.append((t0, time.perf_counter()))
        done.set()

    stamps = []
    th = threading.Thread(target=work)
    th.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
    th.join()
    stamps = np.array(stamps)
    # Split each call into 5 ms bins and count the bins in which the other thread ran. Holding the GIL, the
    # call would leave it only the argument handling at both ends (1 or 2 bins of each call); released, it
    # runs in most bins, even on a loaded machine where it gets a fraction of a core.
    bins = hit = 0
    for t0, t1 in intervals:
        edges = np.arange(t0, t1, 0.005)
        counts = np.histogram(stamps, bins=np.append(edges, t1))[0]
        bins += len(counts)
        hit += int((counts > 0).sum())
    assert bins >= 20, f"kernels too short to tell ({bins} bins)"
    assert hit / bins > 0.3, f"the other thread ran in {hit} of {bins} 5-ms bins of the kernel calls"
