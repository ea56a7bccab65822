"""nnops.torch.nn: GroupNorm computed by nnops (forward and backward), a drop-in for torch.nn.GroupNorm."""

from __future__ import annotations

from typing import Optional

import torch

__all__ = ["GroupNorm", "convert_group_norm", "group_norm"]


def group_norm(input: torch.Tensor, num_groups: int, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5) -> torch.Tensor:
    """torch.nn.functional.group_norm, computed by nnops (torch.ops.nnops.group_norm, with autograd).

    mean and rstd are kept in float32 for the backward pass whatever the input's dtype."""
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
