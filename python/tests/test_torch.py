"""nnops.torch: the torch.library operators (from the descriptors), opcheck, torch.compile(fullgraph=True),
autograd of group_norm, and nn.GroupNorm against torch.nn.GroupNorm."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install .[torch])")

import nnops  # noqa: E402
import nnops.torch as nt  # noqa: E402
from conftest import U32, ref_group_norm, ref_group_norm_backward, ulp  # noqa: E402
from samples import sample  # noqa: E402

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
P_BITS = {"float32": 24, "float16": 11, "bfloat16": 8}


def to_torch(v):
    if isinstance(v, np.ndarray):
        if v.dtype.name == "bfloat16":
            return torch.from_numpy(v.view(np.uint16).astype(np.int32) << 16).view(torch.float32).to(torch.bfloat16)
        return torch.from_numpy(v.copy())
    if isinstance(v, tuple):
        return list(v)
    return v


def torch_args(op, rng, dtype="float32", **kw):
    return {k: to_torch(v) for k, v in sample(op, rng, dtype, **kw).items()}


def positional(op, a):
    d = next(d for d in nnops.ops() if d["name"] == op)
    names = [t["name"] for t in d["tensors"] if t["role"] != "out"] + [x["name"] for x in d["attrs"]]
    return tuple(a[n] for n in names)


# ---- registration and opcheck ------------------------------------------------------------------------------

def test_every_descriptor_is_a_torch_op():
    for d in nnops.ops():
        op = getattr(torch.ops.nnops, d["name"])
        assert nt.OPS[d["name"]] is op
        s = str(op.default._schema)
        for t in d["tensors"]:
            if t["role"] != "out":
                assert t["name"] in s
        for a in d["attrs"]:
            assert a["name"] in s
        n_out = sum(t["role"] == "out" for t in d["tensors"])
        assert len(op.default._schema.returns) == n_out
        mutated = {a.name for a in op.default._schema.arguments if a.alias_info is not None and a.alias_info.is_write}
        assert mutated == {t["name"] for t in d["tensors"] if t["role"] == "inout"}


@pytest.mark.parametrize("op", nnops.OPERATORS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_opcheck(rng, op, dtype):
    a = torch_args(op, rng, dtype)
    args = positional(op, a)
    if op == "group_norm":  # with autograd: inputs that require grad
        args = (a["x"].requires_grad_(), a["gamma"].requires_grad_(), a["beta"].requires_grad_()) + args[3:]
    torch.library.opcheck(getattr(torch.ops.nnops, op).default, args)


def test_opcheck_foreach(rng):
    ts = [torch.randn(s) for s in [(10,), (3, 3), (300,)]]
    args = ([t.clone() for t in ts], [t.clone() * 0.1 for t in ts], [torch.randn_like(t) for t in ts],
            0.1, 1.0, 0.5, 0.9)
    torch.library.opcheck(torch.ops.nnops.inplace_apply_power_sign_foreach.default, args)


def test_kernels_are_the_array_functions(rng):
    """torch.ops.nnops.* give the bits of nnops.* on the same data (one execution path)."""
    for op in nnops.OPERATORS:
        base = sample(op, rng, "bfloat16")
        a_np = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in base.items()}
        a_t = {k: to_torch(v) for k, v in base.items()}
        r_np = getattr(nnops, op)(**a_np)
        r_t = getattr(torch.ops.nnops, op)(*positional(op, a_t))
        if r_np is None:
            r_np = [a_np[t["name"]] for t in next(d for d in nnops.ops() if d["name"] == op)["tensors"]
                    if t["role"] == "inout"]
            r_t = [a_t[t["name"]] for t in next(d for d in nnops.ops() if d["name"] == op)["tensors"]
                   if t["role"] == "inout"]
        r_np = r_np if isinstance(r_np, (list, tuple)) else [r_np]
        r_t = r_t if isinstance(r_t, (list, tuple)) else [r_t]
        for x, y in zip(r_np, r_t):
            assert torch.equal(to_torch(x), y), op


# ---- torch.compile ---------------------------------------------------------------------------------------------

def test_torch_compile_fullgraph():
    """GroupNorm forward + backward and both in-place PowerSign steps in one compiled graph (inductor), with the
    bits of eager execution."""
    torch.manual_seed(0)

    def step(x, w, b, c, p, m, g, ps, mss, gs):
        y = nt.nn.group_norm(x, 4, w, b)
        loss = (y * c).sum()  # dy = c exactly, so the gradients are nnops' bits whatever inductor fuses
        torch.ops.nnops.inplace_apply_power_sign(p, m, 0.1, 1.0, 0.5, 0.9, g)
        torch.ops.nnops.inplace_apply_power_sign_foreach(ps, mss, gs, 0.1, 1.0, 0.5, 0.9)
        return loss

    x = torch.randn(2, 8, 6, 6).to(memory_format=torch.channels_last).requires_grad_()
    w, b = torch.randn(8, requires_grad=True), torch.randn(8, requires_grad=True)
    c = torch.randn(2, 8, 6, 6)
    p, m, g = torch.randn(1000), torch.randn(1000) * 0.01, torch.randn(1000)
    ps = [torch.randn(30), torch.randn(4, 4)]
    mss = [torch.zeros(30), torch.zeros(4, 4)]
    gs = [torch.randn(30), torch.randn(4, 4)]
    eager_state = [t.clone() for t in [p, m] + ps + mss]
    compiled = torch.compile(step, fullgraph=True)
    loss = compiled(x, w, b, c, p, m, g, ps, mss, gs)
    loss.backward()
    grads = [x.grad.clone(), w.grad.clone(), b.grad.clone()]
    x.grad = w.grad = b.grad = None
    ep, em, eps_, ems = eager_state[0], eager_state[1], eager_state[2:4], eager_state[4:6]
    loss_e = step(x, w, b, c, ep, em, g, eps_, ems, gs)
    loss_e.backward()
    assert torch.allclose(loss, loss_e, rtol=1e-5)  # inductor may sum in another order
    assert torch.equal(p, ep) and torch.equal(m, em)
    assert all(torch.equal(a, e) for a, e in zip(ps + mss, eps_ + ems))
    for a, e in zip(grads, [x.grad, w.grad, b.grad]):
        assert torch.equal(a, e)


# ---- nn.GroupNorm against torch.nn.GroupNorm --------------------------------------------------------------------

def test_group_norm_module_is_a_drop_in():
    ours, theirs = nt.nn.GroupNorm(4, 12, eps=1e-3, affine=True), torch.nn.GroupNorm(4, 12, eps=1e-3, affine=True)
    assert isinstance(ours, torch.nn.GroupNorm)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "bias"]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours).endswith(repr(theirs).split("(", 1)[1])
    ours.load_state_dict(theirs.state_dict())
    assert nt.nn.GroupNorm(2, 4, affine=False).weight is None
    with pytest.raises(ValueError):
        nt.nn.GroupNorm(5, 12)  # torch's own check: num_channels must be divisible by num_groups


def test_convert_group_norm_keeps_modules_and_weights():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.GroupNorm(2, 8),
                                torch.nn.Sequential(torch.nn.ReLU(), torch.nn.GroupNorm(4, 8, affine=False)))
    torch.nn.init.normal_(model[1].weight)
    gn, weight = model[1], model[1].weight
    before = copy.deepcopy(model)
    x = torch.randn(2, 3, 9, 9)
    assert nt.nn.convert_group_norm(model) is model
    assert type(model[1]) is nt.nn.GroupNorm and type(model[2][1]) is nt.nn.GroupNorm
    assert model[1] is gn and model[1].weight is weight
    y, y0 = model(x), before(x)
    assert (y - y0).abs().max() < 1e-5


def _bound(ref, scale, dtype, terms):
    """|result - ref| bound of a float32 evaluation (any summation order) stored in T: ulp_T(ref) for the final
    rounding, (2 * terms + 8) * u32 * scale for float32 sums of `terms` terms and the few operations around them,
    and 4 * u_T * scale for statistics kept in T (torch keeps mean/rstd in T for half-type inputs)."""
    u_t = 2.0 ** -P_BITS[dtype]
    return ulp(ref, dtype) + ((2 * terms + 8) * U32 + (4 * u_t if dtype != "float32" else 0)) * scale


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_group_norm_matches_torch(dtype, layout):
    """Forward and every gradient of nnops' GroupNorm and torch's, each within its bound of the float64
    reference computed from the same (rounded) inputs, so within the sum of the bounds of each other."""
    torch.manual_seed(1)
    tdt = TORCH_DTYPES[dtype]
    n, c, h, w, g = 3, 12, 7, 5, 3
    theirs = torch.nn.GroupNorm(g, c).to(tdt)
    with torch.no_grad():
        theirs.weight.copy_(torch.randn(c) * 1.5)
        theirs.bias.copy_(torch.randn(c) * 0.5)
    ours = nt.nn.convert_group_norm(copy.deepcopy(theirs))
    x0 = (torch.randn(n, c, h, w) * 2 + torch.randn(1, c, 1, 1) * 3).to(tdt)
    if layout == "channels_last":
        x0 = x0.to(memory_format=torch.channels_last)
    dy = torch.randn(n, c, h, w).to(tdt)
    res = {}
    for name, mod in (("ours", ours), ("theirs", theirs)):
        x = x0.clone().requires_grad_()
        y = mod(x)
        y.backward(dy)
        res[name] = [t.detach().double().numpy() for t in (y, x.grad, mod.weight.grad, mod.bias.grad)]
        if layout == "channels_last" and name == "ours":
            assert y.is_contiguous(memory_format=torch.channels_last)
            assert x.grad.is_contiguous(memory_format=torch.channels_last)
    xd, dyd = x0.double().numpy(), dy.double().numpy()
    wd, bd = theirs.weight.detach().double().numpy(), theirs.bias.detach().double().numpy()
    ro, rmean, rrstd, so, _ = ref_group_norm(xd, wd, bd, g, 1e-5)
    rdx, rdg, rdb, sdx, sdg, sdb = ref_group_norm_backward(dyd, xd, rmean, rrstd, wd, g)
    m = c // g * h * w
    refs = [(ro, so, m), (rdx, sdx, m), (rdg, sdg, n * h * w), (rdb, sdb, n * h * w)]
    for k, (what, (ref, scale, terms)) in enumerate(zip(["out", "dx", "dgamma", "dbeta"], refs)):
        b_ours = ulp(ref, dtype) + 8 * U32 * scale
        b_theirs = _bound(ref, scale, dtype, terms)
        err_ours = np.abs(res["ours"][k] - ref)
        err_theirs = np.abs(res["theirs"][k] - ref)
        assert (err_theirs <= b_theirs).all(), f"torch's {what} out of its bound (the bound is wrong)"
        assert (err_ours <= b_ours).all(), f"nnops {what}: max |err| {err_ours.max():.3g}"
        assert (np.abs(res["ours"][k] - res["theirs"][k]) <= b_ours + b_theirs).all(), what


def test_group_norm_autograd_without_affine_and_partial_grads():
    torch.manual_seed(2)
    x = torch.randn(2, 6, 4, requires_grad=True)
    w = torch.randn(6)  # no grad wanted for the weight
    b = torch.randn(6, requires_grad=True)
    y = nt.nn.group_norm(x, 3, w, b)
    y.sum().backward()
    assert w.grad is None and x.grad is not None and b.grad is not None
    x2 = x.detach().clone().requires_grad_()
    y2 = torch.nn.functional.group_norm(x2, 3, w, b.detach())
    y2.sum().backward()
    assert (x.grad - x2.grad).abs().max() < 1e-5
    x3 = x.detach().clone().requires_grad_()
    nt.nn.group_norm(x3, 2).pow(2).sum().backward()
    x4 = x.detach().clone().requires_grad_()
    torch.nn.functional.group_norm(x4, 2).pow(2).sum().backward()
    assert (x3.grad - x4.grad).abs().max() < 1e-5


def test_default_threads_follow_torch(monkeypatch):
    monkeypatch.delenv("NNOPS_NUM_THREADS", raising=False)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert nnops.default_num_threads() == 1
        torch.set_num_threads(2)
        assert nnops.default_num_threads() == 2
    finally:
        torch.set_num_threads(old)


def test_torch_op_autograd_equals_the_eager_path():
    """torch.ops.nnops.group_norm's registered autograd and nn.group_norm's eager path: the same bits."""
    torch.manual_seed(6)
    x0 = torch.randn(3, 12, 5, 4, dtype=torch.bfloat16)
    w0, b0 = torch.randn(12), torch.randn(12)  # float32 parameters with bfloat16 activations
    dy = torch.randn(3, 12, 5, 4, dtype=torch.bfloat16)
    res = []
    for path in ("op", "eager"):
        x, w, b = (t.clone().requires_grad_() for t in (x0, w0, b0))
        y = torch.ops.nnops.group_norm(x, w, b, 3, 1e-5, True)[0] if path == "op" else nt.nn.group_norm(x, 3, w, b)
        y.backward(dy)
        res.append([y.detach(), x.grad, w.grad, b.grad])
    assert res[0][2].dtype == torch.float32
    for a, e in zip(*res):
        assert torch.equal(a, e)
