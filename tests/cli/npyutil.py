"""Helpers for the end-to-end tests of the nnops command line, in plain Python (no NumPy needed).

- A .npy writer and reader written from the format description, independent of nnops' C++ code (the
  reader parses the header with ast.literal_eval, as NumPy does).
- Rounding of a float64 to float32 / float16 / bfloat16 with round-to-nearest-even (one rounding), and
  the unit in the last place, as docs/semantics.md defines them.
- The float64 references of both operators and their bounds (docs/semantics.md).
"""

import ast
import math
import struct

DTYPES = ("float32", "float16", "bfloat16")
DESCR = {"float32": "f4", "float16": "f2", "bfloat16": "V2"}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
# (significand bits including the implicit one, minimum normal exponent, largest finite value)
_PARAMS = {
    "float32": (24, -126, (2 - 2.0**-23) * 2.0**127),
    "float16": (11, -14, 65504.0),
    "bfloat16": (8, -126, (2 - 2.0**-7) * 2.0**127),
}


def round_to(x, dtype):
    """x rounded to dtype (nearest, ties to even), returned as a Python float."""
    if x != x or math.isinf(x) or x == 0:
        return x
    p, emin, maxv = _PARAMS[dtype]
    _, e = math.frexp(x)  # |x| in [2^(e-1), 2^e)
    q = math.ldexp(1.0, max(e - 1, emin) - (p - 1))  # spacing of dtype values around x
    r = round(x / q) * q  # x / q is exact (power-of-two scaling); round() ties to even
    if abs(r) > maxv:
        return math.copysign(math.inf, x)
    return float(r)


def ulp(v, dtype):
    """Spacing of dtype values at v's binade (the unit in the last place); subnormal spacing at 0."""
    p, emin, _ = _PARAMS[dtype]
    if v != v or math.isinf(v):
        return math.inf
    if v == 0:
        return math.ldexp(1.0, emin - (p - 1))
    _, e = math.frexp(v)
    return math.ldexp(1.0, max(e - 1, emin) - (p - 1))


def _encode(values, dtype, big_endian):
    order = ">" if big_endian else "<"
    if dtype == "float32":
        return struct.pack(order + "%df" % len(values), *values)
    if dtype == "float16":
        return struct.pack(order + "%de" % len(values), *values)
    # bfloat16: the upper half of the float32 bits (values are bfloat16 already, so exact)
    out = bytearray()
    for v in values:
        (bits,) = struct.unpack("<I", struct.pack("<f", v))
        out += struct.pack(order + "H", bits >> 16)
    return bytes(out)


def _decode(data, dtype, big_endian, n):
    order = ">" if big_endian else "<"
    if dtype == "float32":
        return list(struct.unpack(order + "%df" % n, data))
    if dtype == "float16":
        return list(struct.unpack(order + "%de" % n, data))
    halves = struct.unpack(order + "%dH" % n, data)
    return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _c_to_f(values, shape):
    """Values in C order -> the same array's values in Fortran order."""
    n = numel(shape)
    out = [None] * n
    rank = len(shape)
    for c in range(n):
        idx, rem = [], c
        for d in reversed(shape):
            idx.append(rem % d)
            rem //= d
        idx.reverse()
        f, stride = 0, 1
        for k in range(rank):
            f += idx[k] * stride
            stride *= shape[k]
        out[f] = values[c]
    return out


def header_bytes(descr, shape, fortran=False, version=(1, 0), dict_text=None):
    """A .npy preamble with the given dict (or exactly `dict_text`), padded to 64 bytes like NumPy."""
    if dict_text is None:
        dict_text = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, tuple(shape))
    text = dict_text.encode("utf-8" if version[0] == 3 else "latin1")
    fixed = 10 if version[0] == 1 else 12
    hlen = len(text) + 1
    pad = (64 - (fixed + hlen) % 64) % 64
    total = hlen + pad
    length = struct.pack("<H", total) if version[0] == 1 else struct.pack("<I", total)
    return b"\x93NUMPY" + bytes(version) + length + text + b" " * pad + b"\n"


def npy_bytes(values, dtype, shape, big_endian=False, fortran=False, version=(1, 0)):
    """A whole .npy file. `values` are in C order and already representable in dtype."""
    assert len(values) == numel(shape)
    descr = (">" if big_endian else "<") + DESCR[dtype]
    data_values = _c_to_f(values, shape) if fortran else values
    return header_bytes(descr, shape, fortran, version) + _encode(data_values, dtype, big_endian)


def write_npy(path, values, dtype, shape, **kw):
    with open(path, "wb") as f:
        f.write(npy_bytes(values, dtype, shape, **kw))


def read_npy(path):
    """(dtype, shape, values in C order, header dict) of a file nnops wrote (little-endian, C order)."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:6] == b"\x93NUMPY", "bad magic"
    major = raw[6]
    if major == 1:
        (hlen,) = struct.unpack("<H", raw[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", raw[8:12])
        start = 12
    header = ast.literal_eval(raw[start : start + hlen].decode("latin1"))
    descr, shape = header["descr"], tuple(header["shape"])
    dtype = {"f4": "float32", "f2": "float16", "V2": "bfloat16"}[descr[1:]]
    assert not header["fortran_order"]
    n = numel(shape)
    data = raw[start + hlen :]
    assert len(data) == n * ITEMSIZE[dtype], "data size"
    return dtype, shape, _decode(data, dtype, descr[0] == ">", n), header


# ---- operators ---------------------------------------------------------------------------------------


def gn_grad_reference(x, dy, gamma, mean, rstd, shape):
    """(ref, scale) lists for dx (docs/semantics.md), in float64."""
    groups = shape[0] * shape[1]
    m = numel(shape[2:])
    ref, scale = [0.0] * len(x), [0.0] * len(x)
    for g in range(groups):
        mu, rs = mean[g], rstd[g]
        sl = slice(g * m, (g + 1) * m)
        xs, dys, gs = x[sl], dy[sl], gamma[sl]
        xhat = [(xi - mu) * rs for xi in xs]
        s1 = math.fsum(d * gg for d, gg in zip(dys, gs))
        s2 = math.fsum(d * gg * xh for d, gg, xh in zip(dys, gs, xhat))
        for i in range(m):
            ref[g * m + i] = (rs / m) * gs[i] * (m * dys[i] - s1 - xhat[i] * s2)
            scale[g * m + i] = (rs / m) * abs(gs[i]) * (m * abs(dys[i]) + abs(s1) + abs(xhat[i] * s2))
    return ref, scale


GN_BOUND_C = 8.0  # group_normalization_grad_impl.hpp kBoundC, justified there


def gn_grad_within_bound(out, ref, scale, dtype):
    """Index of the first element outside |out - ref| <= ulp_T(ref) + c * 2^-24 * scale, or None."""
    for i, (o, r, s) in enumerate(zip(out, ref, scale)):
        if not abs(o - r) <= ulp(r, dtype) + GN_BOUND_C * 2.0**-24 * s:
            return i
    return None


def _sign(v):
    return (v > 0) - (v < 0)


def power_sign_reference(var, m, grad, lr, logbase, sign_decay, beta):
    """Unrounded float64 (var_new, m_new) lists (docs/semantics.md)."""
    coef = {k: lr * math.exp(logbase * sign_decay * k) for k in (-1, 0, 1)}
    var_new, m_new = [], []
    for v, mm, g in zip(var, m, grad):
        mn = beta * mm + (1 - beta) * g
        var_new.append(v - coef[_sign(mn) * _sign(g)] * g)
        m_new.append(mn)
    return var_new, m_new


def within_one_ulp(out, ref, dtype):
    """Index of the first element that is neither round(ref) nor adjacent to it, or None."""
    for i, (o, r) in enumerate(zip(out, ref)):
        rr = round_to(r, dtype)
        if not (o == rr or abs(o - rr) <= ulp(rr, dtype)):
            return i
    return None


def group_norm_reference(x, gamma, beta, shape, groups, eps=1e-5):
    """(out, scale, mean, rstd) lists of GroupNorm in float64 (docs/semantics.md); x is [N, C, *] row-major."""
    n, c = shape[0], shape[1]
    hw = numel(shape[2:])
    cpg = c // groups
    m = cpg * hw
    out, scale, means, rstds = [0.0] * len(x), [0.0] * len(x), [], []
    for q in range(n * groups):
        vals = x[q * m:(q + 1) * m]
        mu = sum(vals) / m
        var = sum((v - mu) ** 2 for v in vals) / m
        rs = 1 / (var + eps) ** 0.5
        means.append(mu)
        rstds.append(rs)
        for i in range(m):
            ch = (q % groups) * cpg + i // hw
            t = (vals[i] - mu) * rs * gamma[ch]
            out[q * m + i] = t + beta[ch]
            scale[q * m + i] = abs(t) + abs(beta[ch])
    return out, scale, means, rstds


def group_norm_backward_reference(dy, x, mean, rstd, gamma, shape, groups):
    """(dx, dx_scale, dgamma, dbeta) lists of GroupNormBackward in float64 (docs/semantics.md)."""
    n, c = shape[0], shape[1]
    hw = numel(shape[2:])
    cpg = c // groups
    m = cpg * hw
    dx, scale = [0.0] * len(x), [0.0] * len(x)
    dgamma, dbeta = [0.0] * c, [0.0] * c
    for q in range(n * groups):
        a = b = 0.0
        for i in range(m):
            k, ch = q * m + i, (q % groups) * cpg + i // hw
            xhat = (x[k] - mean[q]) * rstd[q]
            a += dy[k] * gamma[ch]
            b += dy[k] * gamma[ch] * xhat
            dgamma[ch] += dy[k] * xhat
            dbeta[ch] += dy[k]
        for i in range(m):
            k, ch = q * m + i, (q % groups) * cpg + i // hw
            xhat = (x[k] - mean[q]) * rstd[q]
            dx[k] = rstd[q] * (gamma[ch] * dy[k] - (a + xhat * b) / m)
            scale[k] = rstd[q] * (abs(gamma[ch] * dy[k]) + abs(a) / m + abs(xhat * b) / m)
    return dx, scale, dgamma, dbeta
