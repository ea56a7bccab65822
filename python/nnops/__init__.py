"""nnops: Huawei CANN ops-nn operators on CPUs, computed exactly (docs/semantics.md is the contract).

One function per operator of the C++ library, with the C++ API's argument names, built at import time from
the library's operator descriptors (so every operator the library has is here):

    group_normalization_grad(x, dy, gamma, mean, rstd, out=None) -> dx
    inplace_apply_power_sign(var, m, lr, logbase, sign_decay, beta, grad, use_locking=False) -> None
    group_norm(x, gamma, beta, num_groups, eps=1e-5, out=None, *, float32_stats=False) -> (out, mean, rstd)
    group_norm_backward(dy, x, mean, rstd, gamma, num_groups, output_mask=(True, True, True), out=None)
        -> (dx, dgamma, dbeta)

plus inplace_apply_power_sign_foreach(vars, ms, grads, lr, logbase, sign_decay, beta) for whole tensor
lists in one native call. Arguments are NumPy arrays (float32, float16, ml_dtypes.bfloat16) or torch CPU
tensors, used in place without copies (strided views included); scalars are Python floats or 1-element
arrays. Every function takes a keyword-only num_threads (0: the default) and releases the GIL while its
kernel runs. Results are bitwise those of the C++ API, whatever the thread count.

PyTorch: `import nnops.torch` registers every operator as torch.ops.nnops.* (torch.compile-able) and
provides nnops.torch.nn.GroupNorm and nnops.torch.optim.PowerSign.
"""

from __future__ import annotations

from . import _core, _nnops
from ._core import default_num_threads, inplace_apply_power_sign_foreach

__version__ = _nnops.version

_specs = _core.op_specs()
for _spec in _specs:
    globals()[_spec.name] = _core.make_function(_spec)

#: Names of the operators, in the library's order.
OPERATORS = tuple(s.name for s in _specs)


def ops() -> list:
    """The operator descriptors' metadata (names, tensor and attribute specs, help), as dicts."""
    return _nnops.ops()


def compiled_isas() -> list:
    """(name, runnable on this CPU) of every SIMD target compiled in, best first."""
    return [tuple(x) for x in _nnops.compiled_isas()]


def current_isa() -> str:
    """The SIMD target calls dispatch to now (e.g. 'avx2')."""
    return _nnops.current_isa()


def set_max_isa(name: str) -> None:
    """Caps the SIMD target (like NNOPS_MAX_CPU_ISA), e.g. 'sse4'; results of float32 calls stay bitwise."""
    _nnops.set_max_isa(name)


__all__ = list(OPERATORS) + ["inplace_apply_power_sign_foreach", "ops", "default_num_threads", "OPERATORS",
                             "compiled_isas", "current_isa", "set_max_isa"]
del _spec
