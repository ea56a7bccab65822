"""nnops.torch.nn: GroupNorm computed by nnops (forward and backward), a drop-in for torch.nn.GroupNorm."""

from __future__ import annotations

from typing import Optional

import torch

import nnops

__all__ = ["GroupNorm", "convert_group_norm", "group_norm"]


class _GroupNorm(torch.autograd.Function):
    """Eager autograd for group_norm straight over the array functions: the same operators as
    torch.ops.nnops.group_norm / group_norm_backward (the same bits), without the Python dispatch of
    torch.library (about 0.3 ms of a forward + backward), which dominates for small activations."""

    @staticmethod
    def forward(ctx, x, weight, bias, num_groups, eps):
        out, mean, rstd = nnops.group_norm(x, weight, bias, num_groups, eps, float32_stats=True)
        ctx.save_for_backward(x, weight, mean, rstd)
        ctx.num_groups = num_groups
        ctx.bias_dtype = None if bias is None else bias.dtype
        return out

    @staticmethod
    def backward(ctx, dout):
        x, weight, mean, rstd = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        mask = (bool(need_x), bool(need_w and weight is not None), bool(need_b and ctx.bias_dtype is not None))
        if not any(mask):
            return None, None, None, None, None
        dx, dw, db = nnops.group_norm_backward(dout, x, mean, rstd, weight, ctx.num_groups, mask)
        if db is not None and db.dtype != ctx.bias_dtype:  # without weight, dbias comes in mean's dtype
            db = db.to(ctx.bias_dtype)
        return dx, dw, db, None, None


def group_norm(input: torch.Tensor, num_groups: int, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5) -> torch.Tensor:
    """torch.nn.functional.group_norm, computed by nnops (forward: group_norm, backward: group_norm_backward).

    mean and rstd are kept in float32 for the backward pass whatever the input's dtype. Eagerly on plain CPU
    tensors it calls the operators directly; otherwise (torch.compile, tensor subclasses, other devices) it
    calls torch.ops.nnops.group_norm, whose autograd formula is the same."""
    if (type(input) is torch.Tensor and input.device.type == "cpu" and not torch.compiler.is_compiling()
            and not torch.jit.is_scripting()):
        return _GroupNorm.apply(input, weight, bias, num_groups, eps)
    out, _, _ = torch.ops.nnops.group_norm(input, weight, bias, num_groups, eps, True)
    return out


class GroupNorm(torch.nn.GroupNorm):
    """torch.nn.GroupNorm computed by nnops: the same constructor, parameters (weight, bias), state_dict keys
    and extra_repr, and an instance of torch.nn.GroupNorm. Forward: torch.ops.nnops.group_norm; backward:
    torch.ops.nnops.group_norm_backward (float64 sums in an order fixed by the shape, so gradients are bitwise
    the same for any thread count and for contiguous and channels-last inputs).

    Args: num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None (as torch.nn.GroupNorm)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


def convert_group_norm(module: torch.nn.Module) -> torch.nn.Module:
    """Makes every torch.nn.GroupNorm in `module` (itself included) an nnops GroupNorm, in place: the very
    same module objects, parameters, buffers, hooks and training flags, only computed by nnops. Subclasses of
    torch.nn.GroupNorm with a forward of their own are left alone. Returns `module`."""
    for m in module.modules():
        if type(m) is torch.nn.GroupNorm:
            m.__class__ = GroupNorm
    return module
