"""nnops.torch.optim: the sign-decay schedules (docs/semantics.md, PowerSign optimizer), PowerSign against a float64
NumPy loop and against TensorFlow's ResourceApplyPowerSign, param groups, state_dict, lr schedulers, skipped
parameters, one native call per group."""

from __future__ import annotations

import io
import math
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install .[torch])")

import nnops._core  # noqa: E402
import nnops.torch  # noqa: E402
from nnops.torch.optim import PowerSign, cosine_sign_decay, linear_sign_decay, restart_sign_decay  # noqa: E402
from conftest import U32, ref_power_sign, round_to, ulp  # noqa: E402

TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def as_np(t):
    """A torch tensor as a NumPy array of its dtype (bfloat16 as ml_dtypes.bfloat16), by bits."""
    import ml_dtypes

    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return t.numpy().copy()


# ---- schedules ----------------------------------------------------------------------------------------------

def test_schedules_are_tensorflows_formulas():
    for d in (10, 7, 100):
        for t in range(0, 2 * d + 3):
            tc = min(t, d)
            assert linear_sign_decay(d)(t) == max(0.0, (d - tc) / d)
            for p in (0.5, 1, 2.5):
                for za in (None, 0.25, 1.0):
                    frac = 2 * p * (tc / d)  # TensorFlow: completed_fraction = t / D first
                    want = 0.0 if za is not None and frac >= 2 * za else 0.5 * (1 + math.cos(math.pi * frac))
                    assert cosine_sign_decay(d, p, za)(t) == pytest.approx(want, abs=1e-15)
                    num = (p * tc) % d
                    want = 0.5 * (1 + math.cos(math.pi * num / d))
                    if za is not None and p * tc / d >= za:
                        want = 0.0
                    assert restart_sign_decay(d, p, za)(t) == pytest.approx(want, abs=1e-15)


def test_schedule_landmarks():
    assert linear_sign_decay(10)(0) == 1.0 and linear_sign_decay(10)(5) == 0.5 and linear_sign_decay(10)(99) == 0.0
    c = cosine_sign_decay(10)
    assert c(0) == 1.0 and c(5) == pytest.approx(0.5) and c(10) == pytest.approx(0.0, abs=1e-15) and c(50) == c(10)
    assert cosine_sign_decay(10, num_periods=1)(10) == pytest.approx(1.0)  # a full period is back at 1
    assert cosine_sign_decay(10, num_periods=1, zero_after=0.5)(5) == 0.0
    r = restart_sign_decay(10, num_periods=2)
    assert r(0) == 1.0 and r(5) == 1.0 and r(4) < r(1)  # restarts every D / num_periods steps
    assert restart_sign_decay(10, num_periods=2, zero_after=1.0)(5) == 0.0
    for s in (linear_sign_decay(3), cosine_sign_decay(3, 2, 1), restart_sign_decay(3)):
        assert pickle.loads(pickle.dumps(s))(2) == s(2)
    with pytest.raises(ValueError):
        linear_sign_decay(0)


# ---- against a float64 NumPy loop --------------------------------------------------------------------------

def _np_step(var, m, grad, lr, base, sign_decay, beta, dtype):
    """One step in float64 from the T values, the scalars rounded to T as the kernel takes them."""
    s = [float(round_to(v, dtype)) for v in (lr, math.log(base), sign_decay, beta)]
    return ref_power_sign(var, m, grad, *s)


def test_matches_a_float64_numpy_loop():
    """Two groups (different hyper-parameters and schedules) of mixed dtypes over several steps. float32:
    every step is the float64 step rounded once, so the whole trajectory equals the NumPy loop bit for bit.
    Half types: every step is within one ulp of T of the float64 step from the same state (docs/semantics.md)."""
    torch.manual_seed(3)
    shapes = [((64, 3, 3, 3), "float32"), ((64,), "bfloat16"), ((10, 7), "float16"), ((33,), "float32")]
    params = [torch.nn.Parameter((torch.randn(s)).to(TORCH[d])) for s, d in shapes]
    groups = [dict(params=params[:2], lr=0.05, sign_decay_fn=cosine_sign_decay(5)),
              dict(params=params[2:], lr=0.01, base=2.0, beta=0.5, sign_decay_fn=restart_sign_decay(4, 2))]
    opt = PowerSign(groups, lr=0.1)
    hyper = [dict(lr=0.05, base=math.e, beta=0.9, fn=cosine_sign_decay(5)),
             dict(lr=0.01, base=2.0, beta=0.5, fn=restart_sign_decay(4, 2))]
    which = [0, 0, 1, 1]
    traj = [as_np(p).astype(np.float64) for p in params]  # the float32 trajectory of the NumPy loop
    traj_m = [np.zeros_like(t) for t in traj]
    for t in range(6):
        before = [(as_np(p), as_np(opt.state[p]["m"]) if p in opt.state else np.zeros(p.shape, as_np(p).dtype))
                  for p in params]
        for p in params:
            p.grad = (torch.randn(p.shape) * 0.1).to(p.dtype)
        opt.step()
        for k, (p, (v0, m0)) in enumerate(zip(params, before)):
            h, dtype = hyper[which[k]], shapes[k][1]
            g = as_np(p.grad)
            rv, rm = _np_step(v0, m0, g, h["lr"], h["base"], h["fn"](t), h["beta"], dtype)
            v1, m1 = as_np(p), as_np(opt.state[p]["m"])
            assert opt.state[p]["step"] == t + 1
            if dtype == "float32":
                tv, tm = _np_step(traj[k], traj_m[k], g, h["lr"], h["base"], h["fn"](t), h["beta"], dtype)
                traj[k], traj_m[k] = tv.astype(np.float32).astype(np.float64), tm.astype(np.float32).astype(np.float64)
                assert np.array_equal(v1, traj[k].astype(np.float32)) and np.array_equal(m1, traj_m[k].astype(np.float32))
            else:
                assert (np.abs(v1.astype(np.float64) - rv) <= ulp(rv, dtype) * 1.0001).all(), (t, k)
                assert (np.abs(m1.astype(np.float64) - rm) <= ulp(rm, dtype) * 1.0001).all(), (t, k)


# ---- against TensorFlow ------------------------------------------------------------------------------------

def test_matches_tensorflow_resource_apply_power_sign(tmp_path):
    """Each of 8 steps of a linear-decay schedule, from the same state, by TensorFlow (float32 arithmetic) and
    by nnops (float64, rounded once): |difference| <= 2 ulp + 8 * u32 * (|var| + |lr * e * grad|) for var and
    2 ulp + 8 * u32 * (|beta * m| + |(1 - beta) * grad|) for m. Elements whose m_new is so close to 0 that
    float32 rounding may flip its sign (and so the coefficient) are excluded; the seed gives none."""
    torch.manual_seed(4)
    steps, n = 8, 5000
    sched = linear_sign_decay(steps)
    p = torch.nn.Parameter(torch.randn(n))
    opt = PowerSign([p], lr=0.1, beta=0.9, sign_decay_fn=sched)
    states = {"var": [], "m": [], "grad": [], "sign_decay": []}
    after_v, after_m = [], []
    for t in range(steps):
        states["var"].append(as_np(p))
        states["m"].append(as_np(opt.state[p]["m"]) if p in opt.state else np.zeros(n, np.float32))
        p.grad = torch.randn(n) * 0.05
        states["grad"].append(as_np(p.grad))
        states["sign_decay"].append(np.float32(sched(t)))
        opt.step()
        after_v.append(as_np(p))
        after_m.append(as_np(opt.state[p]["m"]))
    src = tmp_path / "in.npz"
    np.savez(src, **{k: np.stack(v) for k, v in states.items()}, lr=np.float32(0.1), logbase=np.float32(1.0),
             beta=np.float32(0.9))
    script = Path(__file__).with_name("tf_power_sign.py")
    run = subprocess.run([sys.executable, str(script), str(src), str(tmp_path / "out.npz")], capture_output=True,
                         text=True, timeout=300)
    if run.returncode == 77:
        pytest.skip("tensorflow is not importable here (scripts/install_deps.sh installs tensorflow-cpu): "
                    + run.stderr.strip().splitlines()[-1])
    assert run.returncode == 0, run.stderr
    tf = np.load(tmp_path / "out.npz")
    beta = float(np.float32(0.9))
    for t in range(steps):
        v, m, g = (states[k][t].astype(np.float64) for k in ("var", "m", "grad"))
        coef_max = 0.1 * math.e
        m_ref = beta * m + (1 - beta) * g
        m_scale = np.abs(beta * m) + np.abs((1 - beta) * g)
        sure = np.abs(m_ref) > 4 * U32 * m_scale
        assert sure.all()
        b_m = 2 * ulp(m_ref, "float32") + 8 * U32 * m_scale
        assert (np.abs(tf["m"][t] - after_m[t]) <= b_m).all(), t
        b_v = 2 * ulp(after_v[t], "float32") + 8 * U32 * (np.abs(v) + coef_max * np.abs(g))
        err = np.abs(tf["var"][t].astype(np.float64) - after_v[t])
        assert (err <= b_v).all(), (t, err.max())
        assert np.count_nonzero(tf["var"][t] != states["var"][t]) > n // 2  # TensorFlow really stepped


# ---- the optimizer API --------------------------------------------------------------------------------------

def _model():
    torch.manual_seed(5)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GroupNorm(2, 8), torch.nn.Linear(8, 1))


def _train(model, opt, steps, seed, sched=None):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(16, 6, generator=g)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        if sched is not None:
            sched.step()


def test_state_dict_round_trip():
    a = _model()
    opt_a = PowerSign(a.parameters(), lr=0.02, sign_decay_fn=cosine_sign_decay(10))
    _train(a, opt_a, 3, seed=1)
    buf = io.BytesIO()
    torch.save({"model": a.state_dict(), "opt": opt_a.state_dict()}, buf)
    buf.seek(0)
    saved = torch.load(buf, weights_only=False)
    b = _model()
    b.load_state_dict(saved["model"])
    opt_b = PowerSign(b.parameters(), lr=0.5)  # hyper-parameters come back from the state_dict
    opt_b.load_state_dict(saved["opt"])
    assert opt_b.param_groups[0]["lr"] == 0.02 and repr(opt_b.param_groups[0]["sign_decay_fn"]) == repr(
        cosine_sign_decay(10))
    for p in b.parameters():
        assert opt_b.state[p]["step"] == 3 and opt_b.state[p]["m"].dtype == p.dtype
    _train(a, opt_a, 3, seed=2)
    _train(b, opt_b, 3, seed=2)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)


def test_works_with_lr_schedulers():
    a, b = _model(), _model()
    opt_a = PowerSign(a.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt_a, step_size=1, gamma=0.5)
    _train(a, opt_a, 3, seed=3, sched=sched)
    assert opt_a.param_groups[0]["lr"] == pytest.approx(0.1 / 8)
    # the same steps with the lr set by hand
    opt_b = PowerSign(b.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(3)
    for k in range(3):
        for group in opt_b.param_groups:
            group["lr"] = 0.1 * 0.5 ** k
        x = torch.randn(16, 6, generator=g)
        opt_b.zero_grad()
        b(x).pow(2).mean().backward()
        opt_b.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)


def test_skips_parameters_without_grad_and_one_call_per_group(monkeypatch):
    calls = []
    real = nnops._core._nnops.inplace_apply_power_sign_foreach

    def counting(vars, *args):
        calls.append(len(vars))
        return real(vars, *args)

    monkeypatch.setattr(nnops._core._nnops, "inplace_apply_power_sign_foreach", counting)
    ps = [torch.nn.Parameter(torch.randn(5)) for _ in range(5)]
    opt = PowerSign([{"params": ps[:3]}, {"params": ps[3:], "lr": 0.01}], sign_decay_fn=linear_sign_decay(4))
    for p in ps[:4]:
        p.grad = torch.randn(5)
    frozen = ps[4].detach().clone()
    opt.step()
    assert calls == [3, 1]  # one native call per group, the parameter without grad left out
    assert torch.equal(ps[4], frozen) and ps[4] not in opt.state
    # ps[4] now gets a gradient: its step count (0) differs from the others' (1), so its group needs two calls.
    ps[4].grad = torch.randn(5)
    calls.clear()
    before = ps[4].detach().clone()
    opt.step()
    assert calls == [3, 1, 1]
    assert opt.state[ps[4]]["step"] == 1 and opt.state[ps[3]]["step"] == 2
    v = as_np(before).astype(np.float64)
    rv, _ = ref_power_sign(v, np.zeros(5), as_np(ps[4].grad).astype(np.float64), float(np.float32(0.01)), 1.0,
                           linear_sign_decay(4)(0), float(np.float32(0.9)))
    assert np.array_equal(as_np(ps[4]), rv.astype(np.float32))  # stepped with t = 0


def test_hyper_parameters_are_checked():
    p = [torch.nn.Parameter(torch.randn(3))]
    for kw in (dict(lr=-1.0), dict(base=0.0), dict(beta=1.0), dict(lr=float("nan"))):
        with pytest.raises(ValueError):
            PowerSign(p, **kw)
    with pytest.raises(TypeError):
        PowerSign(p, sign_decay_fn=3)
    opt = PowerSign(p)
    with pytest.raises(ValueError):
        opt.add_param_group({"params": [torch.nn.Parameter(torch.randn(2))], "beta": 2.0})


def test_closure_and_dtype_of_state():
    p = torch.nn.Parameter(torch.randn(4, dtype=torch.bfloat16))
    opt = PowerSign([p])

    def closure():
        opt.zero_grad()
        loss = (p.float() ** 2).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss is not None and opt.state[p]["m"].dtype == torch.bfloat16
