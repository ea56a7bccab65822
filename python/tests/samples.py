"""Valid sample calls of every operator (by name): the inputs and attributes of one call, as NumPy arrays.

Tests that iterate over every operator (nnops.OPERATORS, from the library's descriptors) take their inputs
from here; an operator without a sample fails those tests, so a new operator gets one."""

from __future__ import annotations

import numpy as np

from conftest import DTYPES, ref_group_norm


def _stats(x, g, dtype):
    _, mean, rstd, _, _ = ref_group_norm(x, None, None, g, 1e-5)
    return mean.astype(dtype), rstd.astype(dtype)


def group_normalization_grad(rng, dtype, shape=(2, 4, 3, 5)):
    t = DTYPES[dtype]
    x = rng.uniform(-2, 2, shape).astype(t)
    n, g = shape[:2]
    mean, rstd = _stats(x, g, np.float32)
    return dict(x=x, dy=rng.uniform(-1, 1, shape).astype(t), gamma=rng.uniform(0.5, 1.5, shape).astype(t),
                mean=mean, rstd=rstd)


def inplace_apply_power_sign(rng, dtype, shape=(1000,)):
    t = DTYPES[dtype]
    return dict(var=rng.uniform(-1, 1, shape).astype(t), m=rng.uniform(-1e-2, 1e-2, shape).astype(t),
                lr=0.01, logbase=0.6931471805599453, sign_decay=0.99, beta=0.9,
                grad=rng.uniform(-1e-2, 1e-2, shape).astype(t), use_locking=False)


def group_norm(rng, dtype, shape=(2, 6, 4, 5), g=3):
    t = DTYPES[dtype]
    c = shape[1]
    x = (rng.uniform(-3, 3, (1, c) + (1,) * (len(shape) - 2)) + rng.uniform(0.1, 3, (1, c) + (1,) * (len(shape) - 2))
         * rng.uniform(-1, 1, shape)).astype(t)
    return dict(x=x, gamma=rng.uniform(-1.5, 1.5, c).astype(t), beta=rng.uniform(-0.5, 0.5, c).astype(t),
                num_groups=g, eps=1e-5)


def group_norm_backward(rng, dtype, shape=(2, 6, 4, 5), g=3):
    t = DTYPES[dtype]
    c = shape[1]
    x = rng.uniform(-2, 2, shape).astype(t)
    mean, rstd = _stats(x, g, np.float32)
    return dict(dy=rng.uniform(-1, 1, shape).astype(t), x=x, mean=mean, rstd=rstd,
                gamma=rng.uniform(-1.5, 1.5, c).astype(t), num_groups=g, output_mask=(True, True, True))


SAMPLES = {f.__name__: f for f in (group_normalization_grad, inplace_apply_power_sign, group_norm, group_norm_backward)}


def sample(name, rng, dtype, **kw):
    if name not in SAMPLES:
        raise AssertionError(f"no sample call for operator {name}: add one to python/tests/samples.py")
    return SAMPLES[name](rng, dtype, **kw)
