"""The generic layer over the native module: array descriptions, and one function per operator descriptor.

Nothing here names an operator. `_nnops.ops()` lists every descriptor of the C++ library (tensor specs with
roles and dtype rules, attribute specs, help texts); `make_function` turns one into a Python function with
its own signature, annotations and docstring, whose calls go through `_nnops.call` (the library's one
execution path, GIL released). nnops.torch builds its torch.library operators from the same `OpSpec`s.

Arrays cross into C++ without a copy: NumPy arrays by their __array_struct__, torch CPU tensors by
data_ptr()/stride(), other DLPack producers through numpy.from_dlpack (a view). An array that the call
writes must be writable and is never replaced by a copy.
"""

from __future__ import annotations

import inspect
import numbers
import operator
import os
import sys
import threading
from typing import Any, Optional, Sequence

import numpy as np

from . import _nnops

try:  # bfloat16 for NumPy
    import ml_dtypes as _ml_dtypes

    BFLOAT16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    BFLOAT16 = None

_NUMPY_NAMES = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}
if BFLOAT16 is not None:
    _NUMPY_NAMES[BFLOAT16] = "bfloat16"
_NUMPY_DTYPES = {v: k for k, v in _NUMPY_NAMES.items()}

ARRAY = "numpy.ndarray | torch.Tensor"  # annotation of tensor arguments


def numpy_dtype(name: str) -> np.dtype:
    return _NUMPY_DTYPES[name]


def _torch():
    """The torch module if this process has imported it (nnops never imports torch itself)."""
    t = sys.modules.get("torch")
    return t if t is not None and hasattr(t, "Tensor") else None


_torch_names_cache: dict = {}


def _torch_names(torch):
    if not _torch_names_cache:
        _torch_names_cache.update({torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"})
    return _torch_names_cache


def torch_dtype(torch, name: str):
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def default_num_threads() -> int:
    """Threads a call uses when num_threads=0: NNOPS_NUM_THREADS when set; else, in a process that has
    imported torch, torch.get_num_threads() (nnops then shares torch's OpenMP thread pool instead of
    competing with it); else OpenMP's default. Returned as 0 where the library should decide."""
    if os.environ.get("NNOPS_NUM_THREADS"):
        return 0
    torch = _torch()
    if torch is not None and hasattr(torch, "get_num_threads"):
        return torch.get_num_threads()
    return 0


# ---- array descriptions ------------------------------------------------------------------------------------

_state = threading.local()  # in_torch_op: True while a torch.library kernel runs (torch bumps versions itself)


_NOT_GIVEN = object()


def describe(obj: Any, op: str, name: str, writable: bool, keep: list, torch=_NOT_GIVEN) -> tuple:
    """The extension's description of an array, without copying it: (data address, dtype name, shape, strides in
    elements) for a torch tensor, (__array_struct__ capsule, dtype name, shape, strides in bytes) for a NumPy array.

    Raises TypeError for what is not a CPU array of a supported dtype, ValueError for an array that cannot be
    written although the call writes it. `keep` receives objects that must outlive the call. `torch`: the
    torch module or None (looked up when not given)."""
    if type(obj) is np.ndarray:
        return _describe_numpy(obj, op, name, writable)
    if torch is _NOT_GIVEN:
        torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        return _describe_torch(torch, obj, op, name, writable)
    if isinstance(obj, np.ndarray):
        return _describe_numpy(obj, op, name, writable)
    if hasattr(obj, "__dlpack__"):
        if hasattr(obj, "__dlpack_device__"):
            dev = obj.__dlpack_device__()
            if int(dev[0]) != 1:  # kDLCPU
                raise TypeError(f"{op}: {name} is on DLPack device {tuple(dev)}; nnops computes on CPU memory only")
        try:
            arr = np.from_dlpack(obj)
        except (BufferError, TypeError, RuntimeError) as e:
            raise TypeError(f"{op}: {name} cannot be viewed as a NumPy array through DLPack: {e}") from None
        keep.append(arr)
        return _describe_numpy(arr, op, name, writable)
    raise TypeError(f"{op}: {name} must be a NumPy array or a torch CPU tensor (or a DLPack producer); "
                    f"got {type(obj).__name__}")


def _describe_numpy(a: np.ndarray, op: str, name: str, writable: bool) -> tuple:
    dt = _NUMPY_NAMES.get(a.dtype)
    if dt is None:
        raise TypeError(f"{op}: {name} has dtype {a.dtype.str if a.dtype.byteorder == '>' else a.dtype}; "
                        "expected float32, float16 or bfloat16 (ml_dtypes.bfloat16) in native byte order")
    if writable and not a.flags.writeable:
        raise ValueError(f"{op}: {name} is a read-only array; it is written in place, so it must be writable")
    strides = a.strides
    if not a.flags.c_contiguous:
        item = a.itemsize
        if any(s % item for s in strides):
            raise ValueError(f"{op}: {name} has strides {strides} bytes, not multiples of its element size {item}")
    # The array's __array_struct__ (its data address; it holds a reference to the array) and its strides in bytes:
    # the extension reads and divides them (__array_interface__ and per-stride Python arithmetic had been most of
    # a small call's time).
    return (a.__array_struct__, dt, a.shape, strides)


def _describe_torch(torch, t, op: str, name: str, writable: bool) -> tuple:
    if not t.is_cpu:
        raise TypeError(f"{op}: {name} is on device {t.device}; nnops computes on CPU tensors only")
    if t.layout != torch.strided:
        raise TypeError(f"{op}: {name} has layout {t.layout}; expected a dense (strided) tensor")
    dt = _torch_names(torch).get(t.dtype)
    if dt is None:
        raise TypeError(f"{op}: {name} has dtype {str(t.dtype).replace('torch.', '')}; "
                        "expected float32, float16 or bfloat16")
    if t.is_neg():
        raise TypeError(f"{op}: {name} is a lazily negated view; call .resolve_neg() first")
    if writable and t.requires_grad and torch.is_grad_enabled():
        raise ValueError(f"{op}: {name} requires grad and would be written in place; "
                         "run the update under torch.no_grad() (as optimizers do) or pass a tensor "
                         "that does not require grad")
    return (t.data_ptr(), dt, t.shape, t.stride())  # torch.Size is a tuple; stride() returns one


def _bump_versions(torch, written):
    """Tell autograd that these torch tensors were written (as its own in-place ops do), so that a use of
    an older value saved for backward is detected. torch.library kernels get this from torch itself."""
    if getattr(_state, "in_torch_op", False):
        return
    tensors = [t for t in written if isinstance(t, torch.Tensor)]
    if tensors:
        torch.autograd.graph.increment_version(tensors)


def _scalar_or_array(v: Any, op: str, name: str, keep: list):
    """A scalar argument: a real number (stored in the call's dtype by the library) or a 1-element array."""
    if type(v) is float or type(v) is int:
        return float(v)
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be a real number or a 1-element array; got a bool")
    if isinstance(v, numbers.Real):
        return float(v)
    return describe(v, op, name, False, keep)


# ---- attribute values --------------------------------------------------------------------------------------

def attr_value(spec: dict, v: Any, op: str, mask_len: int):
    kind = spec["kind"]
    tv = type(v)
    if (tv is int and kind == "int") or (tv is float and kind == "float"):  # the usual values, checked cheaply
        return v
    name = spec["name"]
    if kind == "int":
        if isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{op}: {name} must be an int; got a bool")
        try:
            return operator.index(v)
        except TypeError:
            raise TypeError(f"{op}: {name} must be an int; got {type(v).__name__}") from None
    if kind == "float":
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"{op}: {name} must be a real number; got {type(v).__name__}")
        return float(v)
    if kind == "bool":
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{op}: {name} must be a bool; got {type(v).__name__}")
        return bool(v)
    # mask: one bool per optional output
    if isinstance(v, (str, bytes)) or not isinstance(v, Sequence):
        raise TypeError(f"{op}: {name} must be a sequence of {mask_len} bools; got {type(v).__name__}")
    if len(v) != mask_len:
        raise ValueError(f"{op}: {name} has {len(v)} entries; expected {mask_len}")
    if not all(isinstance(e, (bool, np.bool_)) for e in v):
        raise TypeError(f"{op}: {name} must hold bools; got {list(v)}")
    return tuple(bool(e) for e in v)


# ---- operator specs ----------------------------------------------------------------------------------------

class OpSpec:
    """One operator descriptor, arranged for front ends: inputs (roles in/inout, descriptor order), outputs
    (role out), attributes, the optional outputs a mask attribute selects, the aux option."""

    def __init__(self, d: dict):
        self.d = d
        self.name: str = d["name"]
        self.summary: str = d["summary"]
        self.tensors: list = d["tensors"]
        self.attrs: list = d["attrs"]
        self.inputs = [i for i, t in enumerate(self.tensors) if t["role"] != "out"]
        self.outputs = [i for i, t in enumerate(self.tensors) if t["role"] == "out"]
        self.inplace = [i for i, t in enumerate(self.tensors) if t["role"] == "inout"]
        self.mask_attr = next((k for k, a in enumerate(self.attrs) if a["kind"] == "mask"), None)
        self.optional_outputs = list(d["optional_outputs"])
        # The aux option (GroupNorm's "--float32-stats"): T-or-float32 outputs in float32 instead of T.
        opt = d["aux_option"]
        self.aux_name: Optional[str] = opt.lstrip("-").replace("-", "_") if opt else None
        self.aux_help: str = d["aux_help"]
        taken = {self.tensors[i]["name"] for i in self.inputs} | {a["name"] for a in self.attrs}
        self.out_name = "out" if "out" not in taken else "outputs"

    @property
    def output_names(self):
        return [self.tensors[i]["name"] for i in self.outputs]

    def mask_len(self) -> int:
        return len(self.optional_outputs)

    def wanted_outputs(self, attrs: list) -> list:
        """Per output: whether the call computes it (the mask attribute's entry; True without a mask)."""
        wanted = [True] * len(self.outputs)
        if self.mask_attr is not None:
            for k, ti in enumerate(self.optional_outputs):
                wanted[self.outputs.index(ti)] = attrs[self.mask_attr][k]
        return wanted


def op_specs() -> list:
    return [OpSpec(d) for d in _nnops.ops()]


# ---- the generic call --------------------------------------------------------------------------------------

# NumPy outputs of at least this many bytes are placed by _placed_like.
_PLACED_MIN_BYTES = 1 << 16


def _placed_like(same: np.ndarray, dt: np.dtype) -> np.ndarray:
    """np.empty_like(same, dtype=dt, order="K"), placed where the kernels write it fastest: at `same`'s offset in
    its 4 KiB page rounded down to a 64-byte line.

    np.empty_like puts a large array wherever malloc does. An output that starts a little after its input modulo
    4 KiB makes each store alias a load that follows it (4K aliasing), and the streamed stores of large outputs hold
    those loads up: GroupNorm float32 [2, 320, 64, 64] on one AMD Zen 2 core took 733 us a call with the output 16
    bytes before its input modulo 4 KiB and 2092 with it 48 bytes after (docs/python.md). Starting at most 63 bytes
    before this input's offset, never after it, keeps the output's stores clear of the loads of this input in an
    elementwise pass (not necessarily of the other inputs: group_norm_backward places dx by dy, not by x), and its
    rows on this input's line boundaries. The array does not own its memory (its base is the uint8 buffer).
    """
    nbytes = same.size * dt.itemsize
    buf = np.empty(nbytes + 4096, np.uint8)
    start = _nnops.placed_offset(same.__array_struct__, buf.__array_struct__)
    flat = buf[start:start + nbytes].view(dt)
    if same.flags.c_contiguous:
        return flat.reshape(same.shape)
    # Dense strides in `same`'s axis order, outermost first (what order="K" gives).
    axes = sorted(range(same.ndim), key=lambda a: abs(same.strides[a]), reverse=True)
    strides = [0] * same.ndim
    step = dt.itemsize
    for a in reversed(axes):
        strides[a] = step
        step *= same.shape[a]
    return np.ndarray(same.shape, dtype=dt, buffer=buf, offset=start, strides=tuple(strides))


def new_output(torch, arrays, shape, dtype_name):
    """A new array for an output, of the kind of the first input array (torch tensor or NumPy array): laid
    out like the first input of the same shape (channels-last stays channels-last), else dense. Large NumPy
    outputs laid out like an input are placed by _placed_like (torch's allocator already aligns to 64 bytes)."""
    shape = tuple(shape)
    ref = arrays[0] if arrays else None
    same = next((a for a in arrays if tuple(a.shape) == shape), None)
    if torch is not None and isinstance(ref, torch.Tensor):
        dt = torch_dtype(torch, dtype_name)
        if isinstance(same, torch.Tensor):
            return torch.empty_like(same, dtype=dt)
        return ref.new_empty(shape, dtype=dt)
    dt = numpy_dtype(dtype_name)
    if isinstance(same, np.ndarray):
        if same.size * dt.itemsize >= _PLACED_MIN_BYTES:
            return _placed_like(same, dt)
        return np.empty_like(same, dtype=dt, order="K")
    return np.empty(shape, dtype=dt)


_infer_cache: dict = {}  # (op, input dtypes and shapes, attributes, aux) -> output (dtype, shape)s


def infer_outputs(spec: OpSpec, descs: list, attrs: list, aux: bool) -> list:
    """(dtype name, shape) of every output, from the input descriptions (data may be 0). Output shapes depend
    on the inputs' dtypes and shapes and the attributes only, so a repeated call (a training loop's) reuses
    them; calls the library rejects are not kept, and the call itself checks everything again."""
    key = (spec.name, aux, tuple(attrs),
           tuple((d[1], tuple(d[2])) if isinstance(d, tuple) else (d is None) for d in descs))
    hit = _infer_cache.get(key)
    if hit is not None:
        return hit
    t_dtype = next((d[1] for d in descs if isinstance(d, tuple)), "float32")
    shapes = _nnops.infer(spec.name, descs, attrs, "float32" if aux else t_dtype)
    result = [shapes[i] for i in spec.outputs]
    if len(_infer_cache) >= 1024:
        _infer_cache.clear()
    _infer_cache[key] = result
    return result


def run(spec: OpSpec, args: dict, out=None, aux: bool = False, num_threads: int = 0):
    """Calls operator `spec` with `args` (tensor and attribute values by name), allocating the outputs not
    given in `out`. Returns the outputs (a tuple, one array, or None without outputs)."""
    op = spec.name
    keep: list = []
    torch = _torch()
    descs: list = [None] * len(spec.tensors)
    arrays = []  # the input arrays (not float scalars), in order: outputs are made like them
    written = []
    for i in spec.inputs:
        t = spec.tensors[i]
        v = args[t["name"]]
        if v is None:
            if not t["optional"]:
                raise TypeError(f"{op}: {t['name']} is required; got None")
            continue
        if t["scalar"]:
            descs[i] = _scalar_or_array(v, op, t["name"], keep)
        else:
            descs[i] = describe(v, op, t["name"], t["role"] == "inout", keep, torch)
            if t["role"] == "inout":
                written.append(v)
        if not isinstance(descs[i], float):
            arrays.append(v)
    attrs = [attr_value(a, args[a["name"]], op, spec.mask_len()) for a in spec.attrs]

    outs = _given_outputs(spec, out)
    wanted = spec.wanted_outputs(attrs)
    for k, i in enumerate(spec.outputs):
        if outs[k] is not None:
            name = f"{spec.out_name}[{k}]" if len(spec.outputs) > 1 else spec.out_name
            descs[i] = describe(outs[k], op, f"{spec.tensors[i]['name']} ({name})", True, keep, torch)
            written.append(outs[k])
    missing = [k for k in range(len(spec.outputs)) if outs[k] is None and wanted[k]]
    if missing:
        shapes = infer_outputs(spec, descs, attrs, aux)
        for k in missing:
            dtype_name, shape = shapes[k]
            outs[k] = new_output(torch, arrays, shape, dtype_name)
            descs[spec.outputs[k]] = describe(outs[k], op, spec.tensors[spec.outputs[k]]["name"], True, keep, torch)
    if num_threads == 0:
        num_threads = default_num_threads()
    _nnops.call(op, descs, attrs, int(num_threads))
    if torch is not None and written:
        _bump_versions(torch, written)
    result = [outs[k] if wanted[k] else None for k in range(len(spec.outputs))]
    if not result:
        return None
    return result[0] if len(result) == 1 else tuple(result)


def _given_outputs(spec: OpSpec, out) -> list:
    n = len(spec.outputs)
    if out is None:
        return [None] * n
    if n == 1 and not isinstance(out, (tuple, list)):
        return [out]
    if not isinstance(out, (tuple, list)) or len(out) != n:
        raise TypeError(f"{spec.name}: {spec.out_name} must be a tuple of {n} arrays or None "
                        f"({', '.join(spec.output_names)})")
    return list(out)


# ---- the per-operator functions ----------------------------------------------------------------------------

_KIND_TYPES = {"int": int, "float": float, "bool": bool, "mask": "tuple[bool, ...]"}


def signature(spec: OpSpec) -> inspect.Signature:
    """The function's signature: inputs in descriptor order, then attributes, then `out`; keyword-only the
    aux option and num_threads. An optional input defaults to None when every later positional one has a
    default; attributes take the descriptor's defaults."""
    P = inspect.Parameter
    params = []
    for i in spec.inputs:
        t = spec.tensors[i]
        ann = ("float | " + ARRAY) if t["scalar"] else ARRAY
        if t["optional"]:
            ann += " | None"
        params.append([t["name"], ann, None if t["optional"] else P.empty])
    for a in spec.attrs:
        params.append([a["name"], _KIND_TYPES[a["kind"]], P.empty if a["default"] is None else a["default"]])
    if spec.outputs:
        params.append([spec.out_name, "tuple | " + ARRAY + " | None", None])
    # Defaults only on a suffix: a default before a parameter without one is dropped.
    seen_required = False
    for p in reversed(params):
        if p[2] is P.empty:
            seen_required = True
        elif seen_required:
            p[2] = P.empty
    out = [P(n, P.POSITIONAL_OR_KEYWORD, default=d, annotation=ann) for n, ann, d in params]
    if spec.aux_name:
        out.append(P(spec.aux_name, P.KEYWORD_ONLY, default=False, annotation=bool))
    out.append(P("num_threads", P.KEYWORD_ONLY, default=0, annotation=int))
    n_out = len(spec.outputs)
    ret = "None" if n_out == 0 else ARRAY if n_out == 1 else "tuple[" + ", ".join([ARRAY] * n_out) + "]"
    return inspect.Signature(out, return_annotation=ret)


def _wrap(text: str, indent: str = "    ", width: int = 100) -> str:
    import textwrap

    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent)


def docstring(spec: OpSpec) -> str:
    d = spec.d
    lines = [d["summary"] + ".", "", f"nnops operator `{spec.name}` (CANN {d['op_type']}, category {d['category']})."]
    if d["notes"]:
        lines += ["", d["notes"]]
    if spec.inplace:
        lines += ["", "Updates " + ", ".join(spec.tensors[i]["name"] for i in spec.inplace) +
                  " in place (they must be writable arrays: never copied)."]
    lines += ["", "Parameters", "----------"]
    for i in spec.inputs:
        t = spec.tensors[i]
        kind = "float or 1-element array" if t["scalar"] else "array"
        if t["optional"]:
            kind += " or None"
        rule = "dtype T" if t["dtype_rule"] == "T" else "dtype T or float32"
        lines += [f"{t['name']} : {kind} ({rule})", _wrap(t["help"])]
    for a in spec.attrs:
        default = "" if a["default"] is None else f", default {a['default']!r}"
        lines += [f"{a['name']} : {a['kind']}{default}", _wrap(a["help"])]
    if spec.outputs:
        names = ", ".join(spec.output_names)
        lines += [f"{spec.out_name} : {'array' if len(spec.outputs) == 1 else 'tuple of arrays (' + names + ')'}"
                  ", optional", _wrap("Arrays to write the results into (writable, of the inferred shape and a "
                                      "valid dtype); outputs not given are allocated like the first input "
                                      "(same kind of array; same layout when of its shape).")]
    if spec.aux_name:
        lines += [f"{spec.aux_name} : bool, default False", _wrap(spec.aux_help + " (for allocated outputs).")]
    lines += ["num_threads : int, default 0",
              _wrap("Threads; 0: NNOPS_NUM_THREADS, else torch.get_num_threads() when torch is imported, else "
                    "OpenMP's default. Results do not depend on it (bitwise).")]
    lines += ["", "Returns", "-------"]
    if not spec.outputs:
        lines += ["None"]
    for i in spec.outputs:
        t = spec.tensors[i]
        opt = " (None where the mask leaves it out)" if i in spec.optional_outputs and spec.mask_attr is not None else ""
        lines += [f"{t['name']} : array{opt}", _wrap(t["help"])]
    lines += ["", "dtypes: T is float32, float16 or bfloat16 (NumPy: ml_dtypes.bfloat16). Arrays may be strided "
              "views (non-negative strides); they are used in place, never copied. The GIL is released while the "
              "kernel runs. Bad input raises TypeError or ValueError with the library's message and writes "
              "nothing."]
    return "\n".join(lines)


def make_function(spec: OpSpec, module: str = "nnops"):
    """The Python function of an operator: generated source with the descriptor's signature (so a call binds
    its arguments at the speed of any Python function, and inspect.signature reads it as written)."""
    sig = signature(spec)
    params, values, env = [], [], {"_run": run, "_spec": spec}
    kw_only = False
    for k, p in enumerate(sig.parameters.values()):
        if p.kind == p.KEYWORD_ONLY and not kw_only:
            params.append("*")
            kw_only = True
        if p.default is p.empty:
            params.append(p.name)
        else:
            env[f"_d{k}"] = p.default
            params.append(f"{p.name}=_d{k}")
        values.append(p.name)
    args = ", ".join(f"{n!r}: {n}" for n in values)
    out = spec.out_name if spec.outputs else "None"
    aux = f"bool({spec.aux_name})" if spec.aux_name else "False"
    src = (f"def {spec.name}({', '.join(params)}):\n"
           f"    return _run(_spec, {{{args}}}, out={out}, aux={aux}, num_threads=num_threads)\n")
    exec(compile(src, f"<nnops.{spec.name}>", "exec"), env)
    fn = env[spec.name]
    fn.__module__ = module
    fn.__qualname__ = spec.name
    fn.__doc__ = docstring(spec)
    fn.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()}
    fn.__annotations__["return"] = sig.return_annotation
    fn.nnops_spec = spec
    return fn


# ---- the multi-tensor PowerSign step -----------------------------------------------------------------------

def inplace_apply_power_sign_foreach(vars, ms, grads, lr, logbase, sign_decay, beta, use_locking=False, *,
                                     num_threads=0):
    """One PowerSign step over whole lists of tensors, in ONE native call (one parallel region over the
    total element count): for every i,

        m[i]   = beta * m[i] + (1 - beta) * grad[i]
        var[i] -= lr * exp(logbase * sign_decay * sign(m[i]) * sign(grad[i])) * grad[i]

    vars, ms, grads: sequences of equal length; entry i's var, m and grad share one dtype (float32, float16
    or bfloat16; entries may differ) and shape. lr, logbase, sign_decay, beta: real numbers, rounded to each
    entry's dtype as `inplace_apply_power_sign` rounds a float scalar, so the result is bitwise that of one
    single call per entry. Everything is checked before anything is written; the error names the entry."""
    op = "inplace_apply_power_sign_foreach"
    if not (len(vars) == len(ms) == len(grads)):
        raise ValueError(f"{op}: vars, ms and grads have {len(vars)}, {len(ms)} and {len(grads)} entries; "
                         "expected the same number")
    scalars = []
    for name, v in (("lr", lr), ("logbase", logbase), ("sign_decay", sign_decay), ("beta", beta)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"{op}: {name} must be a real number; got {type(v).__name__}")
        scalars.append(float(v))
    if not isinstance(use_locking, (bool, np.bool_)):
        raise TypeError(f"{op}: use_locking must be a bool; got {type(use_locking).__name__}")
    keep: list = []
    torch = _torch()
    dv = [describe(v, op, f"vars[{i}]", True, keep, torch) for i, v in enumerate(vars)]
    dm = [describe(m, op, f"ms[{i}]", True, keep, torch) for i, m in enumerate(ms)]
    dg = [describe(g, op, f"grads[{i}]", False, keep, torch) for i, g in enumerate(grads)]
    if num_threads == 0:
        num_threads = default_num_threads()
    _nnops.inplace_apply_power_sign_foreach(dv, dm, dg, *scalars, bool(use_locking), int(num_threads))
    if torch is not None:
        _bump_versions(torch, list(vars) + list(ms))
