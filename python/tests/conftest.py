"""Shared helpers of the Python tests: float64 references of the operators (NumPy), ulp and bounds, data."""

from __future__ import annotations

import os
import pathlib
import shutil

import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": BF16}
U32 = 2.0 ** -24
REPO = pathlib.Path(__file__).resolve().parents[2]

# (precision in bits, smallest normal exponent)
_FORMAT = {"float32": (24, -126), "float16": (11, -14), "bfloat16": (8, -126)}


def dtype_name(dt) -> str:
    return {v: k for k, v in DTYPES.items()}[np.dtype(dt)]


def ulp(v, dtype) -> np.ndarray:
    """ulp of T at each |v| (the spacing of T's binade of v; the subnormal spacing below the normals)."""
    p, emin = _FORMAT[dtype if isinstance(dtype, str) else dtype_name(dtype)]
    a = np.abs(np.asarray(v, dtype=np.float64))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(e, emin)
    out = np.ldexp(1.0, (e - (p - 1)).astype(np.int64))
    return np.where(np.isfinite(a), out, np.inf)


def assert_within(got, ref, bound, what=""):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    err = np.abs(got - ref)
    bad = ~(err <= bound)
    if bad.any():
        i = np.flatnonzero(bad.ravel())[0]
        raise AssertionError(f"{what}: {bad.sum()} of {bad.size} elements out of bounds; first at flat index {i}: "
                             f"got {got.ravel()[i]!r}, ref {ref.ravel()[i]!r}, |err| {err.ravel()[i]:.3g} > "
                             f"bound {np.broadcast_to(bound, err.shape).ravel()[i]:.3g}")


def rand(rng, shape, dtype, lo=-1.0, hi=1.0) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape).astype(DTYPES[dtype] if isinstance(dtype, str) else dtype)


# ---- float64 references (from the already rounded inputs), with the docs/semantics.md bounds' scales ------

def ref_group_norm(x, gamma, beta, g, eps):
    """out, mean, rstd, scale (|xhat*gamma| + |beta|), mean_abs (sum|x|/M) in float64."""
    x = np.asarray(x, np.float64)
    n, c = x.shape[:2]
    xr = x.reshape(n, g, -1)
    mean = xr.mean(-1)
    var = ((xr - mean[..., None]) ** 2).mean(-1)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = ((xr - mean[..., None]) * rstd[..., None]).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    gm = np.ones(c) if gamma is None else np.asarray(gamma, np.float64)
    bt = np.zeros(c) if beta is None else np.asarray(beta, np.float64)
    t = xhat * gm.reshape(shape)
    out = t + bt.reshape(shape)
    scale = np.abs(t) + np.abs(bt.reshape(shape))
    return out, mean, rstd, scale, np.abs(xr).mean(-1)


def ref_group_norm_backward(dy, x, mean, rstd, gamma, g):
    """dx, dgamma, dbeta and their scales (sums of the terms' magnitudes), float64."""
    dy = np.asarray(dy, np.float64)
    x = np.asarray(x, np.float64)
    n, c = x.shape[:2]
    hw = int(np.prod(x.shape[2:])) if x.ndim > 2 else 1
    mean = np.asarray(mean, np.float64).reshape(n, g)
    rstd = np.asarray(rstd, np.float64).reshape(n, g)
    gm = np.ones(c) if gamma is None else np.asarray(gamma, np.float64)
    cpg = c // g
    m = cpg * hw
    x3 = x.reshape(n, c, hw)
    d3 = dy.reshape(n, c, hw)
    mean_c = np.repeat(mean, cpg, axis=1)[..., None]
    rstd_c = np.repeat(rstd, cpg, axis=1)[..., None]
    xhat = (x3 - mean_c) * rstd_c
    dgamma = (d3 * xhat).sum(axis=(0, 2))
    dbeta = d3.sum(axis=(0, 2))
    dgs = (np.abs(d3 * xhat)).sum(axis=(0, 2))
    dbs = np.abs(d3).sum(axis=(0, 2))
    gd = d3 * gm[None, :, None]
    a = gd.reshape(n, g, m).sum(-1)
    b = (gd * xhat).reshape(n, g, m).sum(-1)
    a_c = np.repeat(a, cpg, axis=1)[..., None]
    b_c = np.repeat(b, cpg, axis=1)[..., None]
    dx = rstd_c * (gd - (a_c + xhat * b_c) / m)
    dxs = rstd_c * (np.abs(gd) + np.abs(a_c) / m + np.abs(xhat * b_c) / m)
    return dx.reshape(x.shape), dgamma, dbeta, dxs.reshape(x.shape), dgs, dbs


def ref_group_normalization_grad(x, dy, gamma, mean, rstd):
    """CANN's formula: dx = (rstd/M) * gamma * (M*dy - s1 - xhat*s2), per group row; and its scale."""
    x = np.asarray(x, np.float64)
    n, g = x.shape[:2]
    xr = x.reshape(n, g, -1)
    dr = np.asarray(dy, np.float64).reshape(n, g, -1)
    gr = np.asarray(gamma, np.float64).reshape(n, g, -1)
    m = xr.shape[-1]
    mean = np.asarray(mean, np.float64)[..., None]
    rstd = np.asarray(rstd, np.float64)[..., None]
    xhat = (xr - mean) * rstd
    s1 = (dr * gr).sum(-1, keepdims=True)
    s2 = (dr * gr * xhat).sum(-1, keepdims=True)
    dx = (rstd / m) * gr * (m * dr - s1 - xhat * s2)
    scale = (rstd / m) * np.abs(gr) * (m * np.abs(dr) + np.abs(s1) + np.abs(xhat * s2))
    return dx.reshape(x.shape), scale.reshape(x.shape)


def ref_power_sign(var, m, grad, lr, logbase, sign_decay, beta):
    """The float64 step of docs/semantics.md (from T values), math.exp as the C++ std::exp (same libm)."""
    import math

    v = np.asarray(var, np.float64)
    mm = np.asarray(m, np.float64)
    g = np.asarray(grad, np.float64)
    coef = {k: lr * math.exp(logbase * sign_decay * k) for k in (-1.0, 0.0, 1.0)}
    m_new = beta * mm + (1.0 - beta) * g
    s = np.sign(m_new) * np.sign(g)
    c = np.where(s > 0, coef[1.0], np.where(s < 0, coef[-1.0], coef[0.0]))
    return v - c * g, m_new


def round_to(v, dtype) -> np.ndarray:
    """float64 -> T, one rounding to nearest even (float16/float32 by NumPy; bfloat16 exactly, by bits)."""
    v = np.asarray(v, np.float64)
    name = dtype if isinstance(dtype, str) else dtype_name(dtype)
    if name != "bfloat16":
        return v.astype(DTYPES[name])
    # Round the float64 to 8 significant bits directly (no double rounding through float32).
    out = np.empty(v.shape, BF16)
    flat = v.ravel()
    res = out.ravel()
    for i, x in enumerate(flat):
        res[i] = _bf16_round(float(x))
    return out


def _bf16_round(x: float):
    import math

    if not math.isfinite(x) or x == 0.0:
        return ml_dtypes.bfloat16(x)
    m, e = math.frexp(abs(x))  # x = m * 2^e, m in [0.5, 1)
    e = max(e, -125)  # below the normals: the subnormal spacing 2^-133
    q = 2.0 ** (e - 8)
    r = round(abs(x) / q) * q  # Python's round: ties to even
    return ml_dtypes.bfloat16(math.copysign(r, x))


def cli_path():
    """The command-line tool of the CMake build, when built (make test builds it)."""
    p = os.environ.get("NNOPS_CLI") or str(REPO / "build" / "release" / "nnops")
    return p if os.path.exists(p) else (shutil.which("nnops") or None)


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)
