"""nnops.torch.optim: the PowerSign optimizer (Bello et al. 2017) and TensorFlow's sign-decay schedules.

TensorFlow 2 dropped tf.contrib.opt.PowerSignOptimizer; this is it for PyTorch, on nnops'
InplaceApplyPowerSign kernel (docs/semantics.md, PowerSign optimizer). Per parameter p with gradient g and
state m (zeros at the start, in p's dtype), at step t = 0, 1, ...:

    m = beta * m + (1 - beta) * g
    p = p - lr * exp(ln(base) * sign_decay_fn(t) * sign(m) * sign(g)) * g

with sign_decay_fn(t) = 1 by default. Each parameter group is stepped by one native call
(torch.ops.nnops.inplace_apply_power_sign_foreach: one parallel region over all its parameters).
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import torch

__all__ = ["PowerSign", "linear_sign_decay", "cosine_sign_decay", "restart_sign_decay"]


# ---- sign-decay schedules (TensorFlow's tf.contrib.opt sign_decay.py, docs/semantics.md) -----------------------
# Callable objects rather than closures, so that an optimizer's state_dict (which holds its param groups) can
# be saved with torch.save. They compute in float64; the kernel rounds the value to each parameter's dtype.

def _check_steps(decay_steps):
    if isinstance(decay_steps, bool) or not isinstance(decay_steps, (int, float)) or not decay_steps > 0:
        raise ValueError(f"decay_steps must be a positive number; got {decay_steps!r}")
    return decay_steps


class linear_sign_decay:
    """max(0, (D - t') / D) with t' = min(t, D): from 1 at t = 0 to 0 at t = D."""

    def __init__(self, decay_steps):
        self.decay_steps = _check_steps(decay_steps)

    def __call__(self, t) -> float:
        d = self.decay_steps
        tc = min(t, d)
        return max(0.0, (d - tc) / d)

    def __repr__(self):
        return f"linear_sign_decay({self.decay_steps!r})"


class cosine_sign_decay:
    """0.5 * (1 + cos(pi * 2 * num_periods * t' / D)) with t' = min(t, D), and 0 once
    2 * num_periods * t' / D >= 2 * zero_after (when zero_after is given)."""

    def __init__(self, decay_steps, num_periods=0.5, zero_after=None):
        self.decay_steps = _check_steps(decay_steps)
        self.num_periods = num_periods
        self.zero_after = zero_after

    def __call__(self, t) -> float:
        d = self.decay_steps
        fraction = 2.0 * self.num_periods * (min(t, d) / d)
        if self.zero_after is not None and fraction >= 2 * self.zero_after:
            return 0.0
        return 0.5 * (1.0 + math.cos(math.pi * fraction))

    def __repr__(self):
        return f"cosine_sign_decay({self.decay_steps!r}, num_periods={self.num_periods!r}, zero_after={self.zero_after!r})"


class restart_sign_decay:
    """0.5 * (1 + cos(pi * ((num_periods * t') mod D) / D)) with t' = min(t, D), and 0 once
    num_periods * t' / D >= zero_after (when zero_after is given)."""

    def __init__(self, decay_steps, num_periods=1, zero_after=None):
        self.decay_steps = _check_steps(decay_steps)
        self.num_periods = num_periods
        self.zero_after = zero_after

    def __call__(self, t) -> float:
        d = self.decay_steps
        tc = min(t, d)
        num = math.fmod(self.num_periods * float(tc), d)
        decayed = 0.5 * (1.0 + math.cos(math.pi * (num / d)))
        if self.zero_after is not None and (self.num_periods * tc) / d >= self.zero_after:
            return 0.0
        return decayed

    def __repr__(self):
        return f"restart_sign_decay({self.decay_steps!r}, num_periods={self.num_periods!r}, zero_after={self.zero_after!r})"


# ---- the optimizer -------------------------------------------------------------------------------------------

class PowerSign(torch.optim.Optimizer):
    """PowerSign (TensorFlow's PowerSignOptimizer semantics), one nnops call per parameter group.

    Args:
        params: parameters or parameter groups (dicts), as for any torch.optim.Optimizer.
        lr: learning rate (default 0.1).
        base: the base of the power, > 0 (default e); the kernel takes logbase = ln(base).
        beta: momentum decay in [0, 1) (default 0.9).
        sign_decay_fn: t -> sign_decay, with t the parameter's step count (0 on its first update), e.g.
            cosine_sign_decay(decay_steps); None: the constant 1.
        use_locking: serialize concurrent steps on the same parameter buffer (as TensorFlow's use_locking).

    Every hyper-parameter may be set per group. State per parameter: "step" (int) and "m" (like the
    parameter: dtype and layout). Parameters without a gradient are skipped (their step count does not
    advance). Parameters must be CPU tensors of float32, float16 or bfloat16; one group may mix them.
    """

    def __init__(self, params, lr: float = 0.1, base: float = math.e, beta: float = 0.9,
                 sign_decay_fn: Optional[Callable[[int], float]] = None, use_locking: bool = False):
        _check_hyper(lr, base, beta, sign_decay_fn)
        defaults = dict(lr=lr, base=base, beta=beta, sign_decay_fn=sign_decay_fn, use_locking=use_locking)
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        g = self.param_groups[-1]
        _check_hyper(g["lr"], g["base"], g["beta"], g["sign_decay_fn"])

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient. Returns closure()'s loss when given."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            # One native call per group; parameters whose step counts differ (one was skipped while the
            # others were updated) need different sign_decay values and go in one call per count.
            by_step: dict = {}
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise ValueError("PowerSign: sparse gradients are not supported")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                lists = by_step.setdefault(int(state["step"]), ([], [], [], []))
                lists[0].append(p)
                lists[1].append(state["m"])
                lists[2].append(p.grad)
                lists[3].append(state)
            fn = group["sign_decay_fn"]
            logbase = math.log(group["base"])
            for t, (ps, ms, gs, states) in sorted(by_step.items()):
                sign_decay = 1.0 if fn is None else float(fn(t))
                torch.ops.nnops.inplace_apply_power_sign_foreach(ps, ms, gs, float(group["lr"]), logbase, sign_decay,
                                                                 float(group["beta"]), bool(group["use_locking"]))
                for s in states:
                    s["step"] = t + 1
        return loss


def _check_hyper(lr, base, beta, sign_decay_fn):
    lr, base, beta = float(lr), float(base), float(beta)
    if not (lr >= 0.0 and math.isfinite(lr)):
        raise ValueError(f"PowerSign: lr must be finite and >= 0; got {lr}")
    if not (base > 0.0 and math.isfinite(base)):
        raise ValueError(f"PowerSign: base must be finite and > 0; got {base}")
    if not (0.0 <= beta < 1.0):
        raise ValueError(f"PowerSign: beta must be in [0, 1); got {beta}")
    if sign_decay_fn is not None and not callable(sign_decay_fn):
        raise TypeError(f"PowerSign: sign_decay_fn must be callable or None; got {type(sign_decay_fn).__name__}")
