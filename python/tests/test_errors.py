"""Bad input: a TypeError or ValueError carrying the library's message, and nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import nnops
from conftest import BF16
from samples import sample


def _snapshot(arrays):
    return [np.array(a, copy=True) for a in arrays]


def _unchanged(arrays, before):
    return all(np.array_equal(np.asarray(a).view(np.uint8), b.view(np.uint8)) for a, b in zip(arrays, before))


def expect_error(exc, fragment, fn, *args, written=(), **kwargs):
    before = _snapshot(written)
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert fragment in str(info.value), str(info.value)
    assert _unchanged(written, before), "an array was written although the call failed"
    return str(info.value)


def gn_args(rng):
    return sample("group_norm", rng, "float32")


def ps_args(rng, dtype="float32"):
    return sample("inplace_apply_power_sign", rng, dtype)


# ---- dtype -------------------------------------------------------------------------------------------------

def test_unsupported_dtype_is_a_type_error(rng):
    a = gn_args(rng)
    expect_error(TypeError, "group_norm: x has dtype float64; expected float32, float16 or bfloat16", nnops.group_norm,
                 **{**a, "x": a["x"].astype(np.float64)})
    p = ps_args(rng)
    expect_error(TypeError, "inplace_apply_power_sign: var has dtype int32", nnops.inplace_apply_power_sign,
                 **{**p, "var": p["var"].astype(np.int32)}, written=[p["m"]])
    expect_error(TypeError, "in native byte order", nnops.group_norm, **{**a, "x": a["x"].astype(">f4")})


def test_mismatched_dtypes_carry_the_library_message(rng):
    p = ps_args(rng)
    msg = expect_error(ValueError, "inplace_apply_power_sign: m has dtype float16", nnops.inplace_apply_power_sign,
                       **{**p, "m": p["m"].astype(np.float16)}, written=[p["var"]])
    assert "(the dtype of var)" in msg
    a = gn_args(rng)
    out = np.zeros_like(a["x"], dtype=BF16)
    expect_error(ValueError, "group_norm: out has dtype bfloat16", nnops.group_norm, **a,
                 out=(out, np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)), written=[out])


# ---- shape and values ----------------------------------------------------------------------------------------

def test_wrong_shapes(rng):
    a = gn_args(rng)
    expect_error(ValueError, "group_norm: gamma has shape [7]", nnops.group_norm,
                 **{**a, "gamma": np.ones(7, np.float32)})
    expect_error(ValueError, "group_norm: ", nnops.group_norm, **{**a, "num_groups": 4})  # 4 does not divide 6
    p = ps_args(rng)
    expect_error(ValueError, "inplace_apply_power_sign: grad has shape [999]", nnops.inplace_apply_power_sign,
                 **{**p, "grad": p["grad"][:999]}, written=[p["var"], p["m"]])
    g = sample("group_normalization_grad", rng, "float32")
    dx = np.zeros((2, 4, 3, 4), np.float32)
    expect_error(ValueError, "group_normalization_grad: dx has shape [2, 4, 3, 4]", nnops.group_normalization_grad,
                 **g, out=dx, written=[dx])


def test_bad_scalars(rng):
    p = ps_args(rng, "bfloat16")
    w = [p["var"], p["m"]]
    expect_error(ValueError, "inplace_apply_power_sign: beta is 1; expected a value in [0, 1)",
                 nnops.inplace_apply_power_sign, **{**p, "beta": 0.999}, written=w)  # 0.999 is 1 in bfloat16
    expect_error(ValueError, "inplace_apply_power_sign: lr is nan; expected a finite value",
                 nnops.inplace_apply_power_sign, **{**p, "lr": float("nan")}, written=w)
    expect_error(ValueError, "inplace_apply_power_sign: lr has shape [2]; expected [] or [1]",
                 nnops.inplace_apply_power_sign, **{**p, "lr": np.zeros(2, BF16)}, written=w)
    expect_error(TypeError, "inplace_apply_power_sign: lr must be", nnops.inplace_apply_power_sign,
                 **{**p, "lr": "0.1"}, written=w)
    expect_error(TypeError, "got a bool", nnops.inplace_apply_power_sign, **{**p, "sign_decay": True}, written=w)


def test_bad_attributes(rng):
    a = gn_args(rng)
    expect_error(TypeError, "group_norm: num_groups must be an int", nnops.group_norm, **{**a, "num_groups": 2.5})
    expect_error(ValueError, "group_norm: eps", nnops.group_norm, **{**a, "eps": -1.0})
    b = sample("group_norm_backward", rng, "float32")
    expect_error(ValueError, "group_norm_backward: output_mask has 2 entries; expected 3", nnops.group_norm_backward,
                 **{**b, "output_mask": (True, False)})
    p = ps_args(rng)
    expect_error(TypeError, "use_locking must be a bool", nnops.inplace_apply_power_sign, **{**p, "use_locking": 1},
                 written=[p["var"]])
    expect_error(TypeError, "group_norm() missing 1 required positional argument: 'num_groups'", nnops.group_norm, a["x"], None,
                 None)


# ---- memory: aliasing, read-only, not an array -----------------------------------------------------------------

def test_var_aliasing_grad(rng):
    p = ps_args(rng)
    expect_error(ValueError, "inplace_apply_power_sign: var and grad overlap in memory", nnops.inplace_apply_power_sign,
                 **{**p, "grad": p["var"]}, written=[p["var"], p["m"]])
    expect_error(ValueError, "inplace_apply_power_sign: var and m overlap in memory", nnops.inplace_apply_power_sign,
                 **{**p, "m": p["var"][::-1][::-1]}, written=[p["var"]])


def test_read_only_arrays_are_refused_for_outputs(rng):
    p = ps_args(rng)
    p["var"].flags.writeable = False
    expect_error(ValueError, "inplace_apply_power_sign: var is a read-only array", nnops.inplace_apply_power_sign,
                 **p, written=[p["m"]])
    g = sample("group_normalization_grad", rng, "float32")
    dx = np.zeros_like(g["x"])
    dx.flags.writeable = False
    expect_error(ValueError, "group_normalization_grad: dx (out) is a read-only array", nnops.group_normalization_grad,
                 **g, out=dx, written=[dx])
    # a read-only input is fine
    g["x"].flags.writeable = False
    nnops.group_normalization_grad(**g)


def test_strides_that_split_elements_are_refused(rng):
    # A view whose byte strides are not multiples of its element size (numpy's as_strided can make one) has no
    # element strides: refused with the argument's name, nothing written. Such a view is never contiguous, so
    # the check runs even on the fast path that skips it for C-contiguous arrays.
    p = ps_args(rng)
    raw = np.zeros(4 * p["grad"].size + 8, np.uint8)
    odd = np.lib.stride_tricks.as_strided(raw.view(np.float32)[:1], shape=p["grad"].shape, strides=(6,))
    assert not odd.flags.c_contiguous
    expect_error(ValueError, "inplace_apply_power_sign: grad has strides (6,) bytes, not multiples of its element "
                 "size 4", nnops.inplace_apply_power_sign, **{**p, "grad": odd}, written=[p["var"], p["m"]])
    a = gn_args(rng)
    x = a["x"]
    buf = np.full(x.size * 2 + 8, 7.0, np.float32)
    bad_out = np.lib.stride_tricks.as_strided(buf, shape=x.shape, strides=tuple(s + 2 for s in x.strides))
    expect_error(ValueError, "group_norm: out (out[0]) has strides", nnops.group_norm, x, a["gamma"], a["beta"],
                 a["num_groups"], out=(bad_out, None, None), written=[buf])


def test_not_an_array(rng):
    p = ps_args(rng)
    expect_error(TypeError, "inplace_apply_power_sign: grad must be a NumPy array or a torch CPU tensor",
                 nnops.inplace_apply_power_sign, **{**p, "grad": list(p["grad"])}, written=[p["var"], p["m"]])
    expect_error(TypeError, "group_norm: x is required", nnops.group_norm, None, None, None, 3)


class _CudaDLPack:
    """A DLPack producer that says it lives on a CUDA device."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):  # pragma: no cover - never reached
        raise AssertionError("must not be read")


def test_device_is_checked(rng):
    p = ps_args(rng)
    expect_error(TypeError, "inplace_apply_power_sign: grad is on DLPack device (2, 0)", nnops.inplace_apply_power_sign,
                 **{**p, "grad": _CudaDLPack()}, written=[p["var"], p["m"]])
    torch = pytest.importorskip("torch")
    x = torch.empty(2, 6, 4, 5, device="meta")  # not CPU memory (the same check refuses a CUDA tensor)
    expect_error(TypeError, "group_norm: x is on device meta; nnops computes on CPU tensors only", nnops.group_norm,
                 x, None, None, 3)
    if torch.cuda.is_available():  # pragma: no cover - only on a machine with a GPU
        expect_error(TypeError, "is on device cuda", nnops.group_norm, x.to("cuda"), None, None, 3)


# ---- torch: requires_grad, and the same errors through torch.ops.nnops ---------------------------------------

def test_tensor_requiring_grad_in_an_in_place_op(rng):
    torch = pytest.importorskip("torch")
    import nnops.torch  # noqa: F401
    p = ps_args(rng)
    var = torch.from_numpy(p["var"]).requires_grad_()
    m = torch.from_numpy(p["m"])
    with pytest.raises(ValueError, match="var requires grad and would be written in place"):
        nnops.inplace_apply_power_sign(var, m, 0.1, 1.0, 1.0, 0.9, torch.from_numpy(p["grad"]))
    before = p["var"].copy(), p["m"].copy()
    with pytest.raises(ValueError, match="requires grad"):
        torch.ops.nnops.inplace_apply_power_sign(var, m, 0.1, 1.0, 1.0, 0.9, torch.from_numpy(p["grad"]))
    assert np.array_equal(p["var"], before[0]) and np.array_equal(p["m"], before[1])
    with torch.no_grad():  # what optimizers do
        nnops.inplace_apply_power_sign(var, m, 0.1, 1.0, 1.0, 0.9, torch.from_numpy(p["grad"]))
    assert not np.array_equal(p["var"], before[0])


def test_torch_ops_raise_the_same_errors(rng):
    torch = pytest.importorskip("torch")
    import nnops.torch  # noqa: F401

    x = torch.randn(2, 6, 4, 5)
    with pytest.raises(ValueError, match=r"group_norm: gamma has shape \[7\]"):
        torch.ops.nnops.group_norm(x, torch.ones(7), None, 3)
    with pytest.raises(TypeError, match="x has dtype float64"):
        torch.ops.nnops.group_norm(x.double(), None, None, 3)
    v = torch.zeros(10)
    with pytest.raises(ValueError, match="var and grad overlap in memory"):
        torch.ops.nnops.inplace_apply_power_sign(v, torch.zeros(10), 0.1, 1.0, 1.0, 0.9, v)


def test_foreach_errors(rng):
    vs = [np.zeros(300, np.float32), np.zeros(5, BF16)]
    ms = [np.zeros(300, np.float32), np.zeros(5, BF16)]
    gs = [np.ones(300, np.float32), np.ones(5, BF16)]
    expect_error(ValueError, "vars, ms and grads have 2, 1 and 2 entries", nnops.inplace_apply_power_sign_foreach,
                 vs, ms[:1], gs, 0.1, 1.0, 1.0, 0.9, written=vs + ms)
    expect_error(ValueError, "inplace_apply_power_sign_foreach: entry 1 (vars[1], ms[1], grads[1]): beta is 1",
                 nnops.inplace_apply_power_sign_foreach, vs, ms, gs, 0.1, 1.0, 1.0, 0.999, written=vs + ms)
    expect_error(ValueError, "inplace_apply_power_sign_foreach: vars[0] and grads[1] overlap in memory",
                 nnops.inplace_apply_power_sign_foreach, vs, ms, [gs[0], vs[0][:5].view(np.uint16).view(BF16)[:5]],
                 0.1, 1.0, 1.0, 0.9, written=vs + ms)
    ro = np.zeros(5, BF16)
    ro.flags.writeable = False
    expect_error(ValueError, "inplace_apply_power_sign_foreach: ms[1] is a read-only array",
                 nnops.inplace_apply_power_sign_foreach, vs, [ms[0], ro], gs, 0.1, 1.0, 1.0, 0.9, written=vs + ms)
