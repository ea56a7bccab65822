"""nnops for PyTorch: every nnops operator as a torch.library custom op, torch.ops.nnops.<name>.

The operators are registered from the library's descriptors (nothing here names one): the schema comes from
the tensor and attribute specs (an in/out tensor is mutated in place, `Tensor(a!)`; a scalar tensor is a
float; an optional one `Tensor?`; outputs are returned), the kernel is nnops' generic call on the tensors'
memory (no copies; torch.get_num_threads() threads, so nnops shares torch's OpenMP pool), and the fake
(meta) implementation derives output shapes and dtypes from the descriptor's infer. So
`torch.compile(fullgraph=True)` traces code that calls them, in-place PowerSign included, and
`torch.library.opcheck` passes. An output that an output mask leaves out is returned as an empty tensor
(shape [0]).

On top, model-level pieces that are specific by nature:
- autograd for torch.ops.nnops.group_norm through torch.ops.nnops.group_norm_backward;
- nnops.torch.nn: GroupNorm (a drop-in for torch.nn.GroupNorm), convert_group_norm, group_norm;
- nnops.torch.optim: the PowerSign optimizer and TensorFlow's sign-decay schedules;
- torch.ops.nnops.inplace_apply_power_sign_foreach, the multi-tensor step the optimizer uses.
"""

from __future__ import annotations

from typing import List

import torch

from .. import _core

NAMESPACE = "nnops"

_ALIASES = "abcdefghijklmnopqrstuvwxyz"


def _default_literal(kind: str, value) -> str:
    if kind == "mask":
        return "[" + ", ".join("True" if v else "False" for v in value) + "]"
    if kind == "bool":
        return "True" if value else "False"
    return repr(value)


def schema(spec: _core.OpSpec) -> str:
    """The torch schema of an operator, from its descriptor."""
    args = []
    alias = iter(_ALIASES)
    for i in spec.inputs:
        t = spec.tensors[i]
        if t["scalar"]:
            args.append(f"float {t['name']}")
        elif t["role"] == "inout":
            args.append(f"Tensor({next(alias)}!) {t['name']}")
        else:
            args.append(("Tensor? " if t["optional"] else "Tensor ") + t["name"])
    for a in spec.attrs:
        typ = {"int": "int", "float": "float", "bool": "bool", "mask": f"bool[{spec.mask_len()}]"}[a["kind"]]
        arg = f"{typ} {a['name']}"
        if a["default"] is not None:
            arg += "=" + _default_literal(a["kind"], a["default"])
        args.append(arg)
    if spec.aux_name:
        args.append(f"bool {spec.aux_name}=False")
    n = len(spec.outputs)
    ret = "()" if n == 0 else "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return "(" + ", ".join(args) + ") -> " + ret


def _arg_names(spec: _core.OpSpec) -> list:
    names = [spec.tensors[i]["name"] for i in spec.inputs] + [a["name"] for a in spec.attrs]
    return names + ([spec.aux_name] if spec.aux_name else [])


def _values(spec, names, args, kwargs) -> dict:
    """The schema's arguments by name; the dispatcher leaves out the trailing ones with defaults."""
    vals = dict(zip(names, args))
    vals.update(kwargs)
    for a in spec.attrs:
        if a["name"] not in vals:
            vals[a["name"]] = a["default"]
        elif a["kind"] == "mask":
            vals[a["name"]] = tuple(vals[a["name"]])
    if spec.aux_name and spec.aux_name not in vals:
        vals[spec.aux_name] = False
    return vals


def _returns(spec, outs, like):
    if not spec.outputs:
        return None
    if len(spec.outputs) == 1:
        outs = (outs,)
    res = tuple(o if o is not None else like.new_empty(0) for o in outs)
    return res[0] if len(res) == 1 else res


def _first_tensor(args):
    return next(a for a in args if isinstance(a, torch.Tensor))


def _make_kernel(spec, names):
    def kernel(*args, **kwargs):
        vals = _values(spec, names, args, kwargs)
        aux = bool(vals.pop(spec.aux_name, False)) if spec.aux_name else False
        _core._state.in_torch_op = True
        try:
            outs = _core.run(spec, vals, aux=aux, num_threads=0)
        finally:
            _core._state.in_torch_op = False
        return _returns(spec, outs, _first_tensor(vals.values()))

    kernel.__name__ = spec.name
    return kernel


def _make_fake(spec, names):
    def fake(*args, **kwargs):
        vals = _values(spec, names, args, kwargs)
        aux = bool(vals.pop(spec.aux_name, False)) if spec.aux_name else False
        descs, arrays = [None] * len(spec.tensors), []
        for i in spec.inputs:
            v = vals[spec.tensors[i]["name"]]
            if isinstance(v, torch.Tensor):
                # Shapes only: infer reads no data. Symbolic sizes are specialized (guarded) here.
                descs[i] = (0, _core._torch_names(torch)[v.dtype], tuple(int(s) for s in v.shape),
                            tuple(int(s) for s in v.stride()))
                arrays.append(v)
            elif v is not None:
                descs[i] = float(v)
        attrs = [_core.attr_value(a, vals[a["name"]], spec.name, spec.mask_len()) for a in spec.attrs]
        wanted = spec.wanted_outputs(attrs)
        shapes = _core.infer_outputs(spec, descs, attrs, aux)
        outs = [_core.new_output(torch, arrays, shape, dt) if w else None for (dt, shape), w in zip(shapes, wanted)]
        return _returns(spec, outs if len(outs) != 1 else outs[0], arrays[0])

    fake.__name__ = spec.name + "_fake"
    return fake


_LIB = torch.library.Library(NAMESPACE, "FRAGMENT")


def _check_no_grad_mutation(op: str, named: list):
    """Refuses to write a tensor that requires grad while autograd records (torch's rule for its own in-place
    ops on leaves); under torch.no_grad(), as in an optimizer step, writing a parameter is fine."""
    if not torch.is_grad_enabled():
        return
    for name, t in named:
        ts = t if isinstance(t, (list, tuple)) else [t]
        for k, x in enumerate(ts):
            if isinstance(x, torch.Tensor) and x.requires_grad:
                label = name if ts is not t else f"{name}[{k}]"
                raise ValueError(f"{op}: {label} requires grad and would be written in place; run the update "
                                 "under torch.no_grad() (as optimizers do) or pass a tensor that does not require grad")


def _guarded_inplace(name: str, schema_str: str, inner, mutated: tuple, arg_names: list):
    """torch.ops.nnops.<name> for an operator that writes its arguments: a CompositeImplicitAutograd kernel
    (it runs where grad mode is still the caller's) that refuses to write a tensor requiring grad under grad
    mode, then calls the custom op `inner` (torch.ops.nnops._<name>: kernel, fake, mutation tracking).
    torch.compile and opcheck see through it to `inner`."""
    torch.library.define(f"{NAMESPACE}::{name}", schema_str, lib=_LIB)

    def guarded(*args, **kwargs):
        vals = dict(zip(arg_names, args))
        vals.update(kwargs)
        _check_no_grad_mutation(name, [(n, vals[n]) for n in mutated if n in vals])
        return inner(*args, **kwargs)

    torch.library.impl(f"{NAMESPACE}::{name}", "CompositeImplicitAutograd", guarded, lib=_LIB)
    return getattr(getattr(torch.ops, NAMESPACE), name)


def _register(spec: _core.OpSpec):
    names = _arg_names(spec)
    mutated = tuple(spec.tensors[i]["name"] for i in spec.inplace)
    sch = schema(spec)
    qual = f"{NAMESPACE}::{'_' if mutated else ''}{spec.name}"
    op = torch.library.custom_op(qual, _make_kernel(spec, names), mutates_args=mutated, schema=sch)
    op.register_fake(_make_fake(spec, names))
    if mutated:
        _guarded_inplace(spec.name, sch, op, mutated, names)
    return op


#: The custom ops by operator name (torch.library CustomOpDef objects; for an operator that writes its
#: arguments, the inner op torch.ops.nnops._<name> behind the guard torch.ops.nnops.<name>).
CUSTOM_OPS = {}
#: The public operators by name: torch.ops.nnops.<name>.
OPS = {}
for _spec in _core.op_specs():
    CUSTOM_OPS[_spec.name] = _register(_spec)
    OPS[_spec.name] = getattr(torch.ops.nnops, _spec.name)
    globals()[_spec.name] = OPS[_spec.name]
del _spec


# ---- the multi-tensor PowerSign step -------------------------------------------------------------------

@torch.library.custom_op(f"{NAMESPACE}::_inplace_apply_power_sign_foreach", mutates_args=("vars", "ms"))
def _inplace_apply_power_sign_foreach(vars: List[torch.Tensor], ms: List[torch.Tensor], grads: List[torch.Tensor],
                                      lr: float, logbase: float, sign_decay: float, beta: float,
                                      use_locking: bool = False) -> None:
    _core._state.in_torch_op = True
    try:
        _core.inplace_apply_power_sign_foreach(vars, ms, grads, lr, logbase, sign_decay, beta, use_locking)
    finally:
        _core._state.in_torch_op = False


@_inplace_apply_power_sign_foreach.register_fake
def _(vars, ms, grads, lr, logbase, sign_decay, beta, use_locking=False):
    return None


#: One PowerSign step over whole tensor lists in one native call (see nnops.inplace_apply_power_sign_foreach).
inplace_apply_power_sign_foreach = _guarded_inplace(
    "inplace_apply_power_sign_foreach",
    "(Tensor(a!)[] vars, Tensor(b!)[] ms, Tensor[] grads, float lr, float logbase, float sign_decay, float beta, "
    "bool use_locking=False) -> ()",
    _inplace_apply_power_sign_foreach, ("vars", "ms"),
    ["vars", "ms", "grads", "lr", "logbase", "sign_decay", "beta", "use_locking"])


# ---- autograd of group_norm ----------------------------------------------------------------------------

def _group_norm_setup_context(ctx, inputs, output):
    x, gamma, beta, num_groups = inputs[:4]
    _, mean, rstd = output
    ctx.save_for_backward(x, gamma, mean, rstd)
    ctx.num_groups = num_groups
    ctx.has_gamma, ctx.has_beta = gamma is not None, beta is not None
    ctx.beta_dtype = beta.dtype if beta is not None else None
    ctx.mark_non_differentiable(mean, rstd)


def _group_norm_backward(ctx, dout, dmean, drstd):
    x, gamma, mean, rstd = ctx.saved_tensors
    need_x, need_gamma, need_beta = ctx.needs_input_grad[:3]
    mask = [bool(need_x), bool(need_gamma and ctx.has_gamma), bool(need_beta and ctx.has_beta)]
    if not any(mask):
        return (None,) * 6
    dx, dgamma, dbeta = torch.ops.nnops.group_norm_backward(dout, x, mean, rstd, gamma, ctx.num_groups, mask)
    if mask[2] and dbeta.dtype != ctx.beta_dtype:  # without gamma, dbeta comes in mean's dtype
        dbeta = dbeta.to(ctx.beta_dtype)
    return (dx if mask[0] else None, dgamma if mask[1] else None, dbeta if mask[2] else None) + (None,) * 3


if "group_norm" in CUSTOM_OPS and "group_norm_backward" in OPS:
    CUSTOM_OPS["group_norm"].register_autograd(_group_norm_backward, setup_context=_group_norm_setup_context)


from . import nn, optim  # noqa: E402  (they use the operators registered above)

__all__ = ["OPS", "CUSTOM_OPS", "NAMESPACE", "schema", "inplace_apply_power_sign_foreach", "nn", "optim"] + list(OPS)
