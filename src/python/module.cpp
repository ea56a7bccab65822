// The nanobind extension `nnops._nnops`: a generic front end over the operator descriptors, like the CLI. It
// never names an operator: ops() exposes every descriptor's metadata (names, roles, dtype rules, attributes,
// help), call() runs any operator through the one execution path (ops::run_prepared) with the GIL released,
// and infer() gives output shapes and dtypes. The Python layer (python/nnops/__init__.py) builds one function
// per operator from that metadata, so an operator added in C++ appears in Python and in torch.library
// without Python edits.
//
// Tensors cross the boundary as plain descriptions made by the Python layer from the array itself: (data
// address, dtype name, shape, strides in elements) for a torch tensor (data_ptr/stride), (__array_struct__,
// dtype name, shape, strides in bytes) for a NumPy array, whose data address is read from the capsule here
// (NumPy's __array_interface__ dictionary took 2.7 us an array). That is zero-copy by construction; the Python
// caller holds the arrays for the duration of the call. A scalar argument (TensorSpec::scalar) may instead be a
// Python float, stored here in the call's dtype T with one round-to-nearest-even (store_from_double), as
// inplace_apply_power_sign_foreach rounds its scalars.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/ops/op_desc.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace nnops::python {
namespace {

const char* role_name(ops::Role r) {
  switch (r) {
    case ops::Role::kIn:
      return "in";
    case ops::Role::kOut:
      return "out";
    case ops::Role::kInOut:
      return "inout";
  }
  return "?";
}

const char* kind_name(ops::AttrKind k) {
  switch (k) {
    case ops::AttrKind::kInt:
      return "int";
    case ops::AttrKind::kFloat:
      return "float";
    case ops::AttrKind::kBool:
      return "bool";
    case ops::AttrKind::kMask:
      return "mask";
  }
  return "?";
}

// Errors from the library: its message as a Python exception. Bad values, shapes, dtypes and layouts are
// ValueError (the library's kInvalidArgument, kNullPointer, kUnsupported); its own failures RuntimeError.
[[noreturn]] void raise_status(const Status& s) {
  if (s.code() == StatusCode::kInternal) {
    if (s.message().find("out of memory") != std::string::npos) throw std::bad_alloc();
    throw std::runtime_error(s.message());
  }
  throw nb::value_error(s.message().c_str());
}

const ops::OpDesc& find(const std::string& name) {
  const ops::OpDesc* d = ops::find_op(name);
  if (!d) throw nb::value_error(("nnops: no operator named '" + name + "'").c_str());
  return *d;
}

DType parse(const std::string& name) {
  const auto t = parse_dtype(name);
  if (!t) throw nb::type_error(("nnops: unknown dtype '" + name + "'").c_str());
  return *t;
}

// One tensor argument of a call: a view over the caller's memory, or over `scalar` (a float argument).
struct Arg {
  TensorView view;
  bool is_float = false;
  double value = 0;
  alignas(8) unsigned char scalar[8] = {};
};

// NumPy's PyArrayInterface (numpy/ndarraytypes.h, stable since NumPy 1.0): what an array's __array_struct__
// capsule points to.
struct NumpyArrayInterface {
  int two;  // 2, as a check
  int nd;
  char typekind;
  int itemsize;
  int flags;
  Py_intptr_t* shape;
  Py_intptr_t* strides;
  void* data;
  PyObject* descr;
};

// The data address in a NumPy array's __array_struct__ capsule.
uintptr_t struct_address(nb::handle capsule) {
  const auto* ai = PyCapsule_CheckExact(capsule.ptr())
                       ? static_cast<const NumpyArrayInterface*>(PyCapsule_GetPointer(capsule.ptr(), nullptr))
                       : nullptr;
  if (!ai || ai->two != 2) {
    PyErr_Clear();
    throw nb::type_error("nnops: not a NumPy __array_struct__");
  }
  return reinterpret_cast<uintptr_t>(ai->data);
}

// (data, dtype, shape, strides) -> view. Rank and values are checked by the operator (check_tensor).
TensorView view_of(nb::handle h, const char* what) {
  if (!nb::isinstance<nb::tuple>(h) || nb::len(h) != 4) {
    throw nb::type_error((std::string("nnops: ") + what + ": expected (data, dtype, shape, strides)").c_str());
  }
  nb::tuple t = nb::borrow<nb::tuple>(h);
  const DType dtype = parse(nb::cast<std::string>(t[1]));
  auto shape = nb::cast<std::vector<int64_t>>(t[2]);
  auto strides = nb::cast<std::vector<int64_t>>(t[3]);
  if (shape.size() != strides.size()) {
    throw nb::value_error((std::string("nnops: ") + what + ": shape and strides differ in length").c_str());
  }
  uintptr_t data = 0;
  if (PyCapsule_CheckExact(t[0].ptr())) {  // a NumPy array: strides in bytes (multiples of the element size)
    const auto* ai = static_cast<const NumpyArrayInterface*>(PyCapsule_GetPointer(t[0].ptr(), nullptr));
    if (!ai || ai->two != 2 || ai->itemsize <= 0) {
      PyErr_Clear();
      throw nb::type_error((std::string("nnops: ") + what + ": not a NumPy __array_struct__").c_str());
    }
    data = reinterpret_cast<uintptr_t>(ai->data);
    for (int64_t& s : strides) s /= ai->itemsize;
  } else {
    data = nb::cast<uintptr_t>(t[0]);
  }
  // A rank above kMaxRank gives a view that every operator rejects with its own message.
  const int rank = static_cast<int>(shape.size());
  void* p = reinterpret_cast<void*>(data);
  return TensorView::strided(p, dtype, shape.data(), strides.data(), rank);
}

// The descriptor's tensors from a Python list (None: absent; a float: a scalar argument in T).
std::vector<Arg> tensor_args(const ops::OpDesc& d, const nb::list& tensors) {
  if (nb::len(tensors) != d.tensors.size()) {
    throw nb::value_error(("nnops: " + std::string(d.name) + " takes " + std::to_string(d.tensors.size()) +
                           " tensors; got " + std::to_string(nb::len(tensors)))
                              .c_str());
  }
  std::vector<Arg> args(d.tensors.size());
  for (size_t i = 0; i < d.tensors.size(); ++i) {
    nb::handle h = tensors[i];
    if (h.is_none()) continue;
    if (nb::isinstance<nb::float_>(h) || nb::isinstance<nb::int_>(h)) {
      if (!d.tensors[i].scalar) {
        throw nb::type_error(
            ("nnops: " + std::string(d.name) + ": " + d.tensors[i].name + " must be an array, not a number").c_str());
      }
      args[i].is_float = true;
      args[i].value = nb::cast<double>(h);
      continue;
    }
    args[i].view = view_of(h, d.tensors[i].name);
  }
  // The call's dtype T is the first tensor's (descriptor convention); float scalars are stored in it.
  DType t = DType::kFloat32;
  for (const Arg& a : args) {
    if (!a.is_float && !a.view.is_none()) {
      t = a.view.dtype();
      break;
    }
  }
  for (Arg& a : args) {
    if (!a.is_float) continue;
    store_from_double(a.scalar, t, 0, a.value);
    const int64_t one = 1;
    a.view = TensorView::contiguous(a.scalar, t, &one, 1);
  }
  return args;
}

ops::Attrs attr_values(const ops::OpDesc& d, const nb::list& attrs) {
  if (nb::len(attrs) != d.attrs.size()) {
    throw nb::value_error(("nnops: " + std::string(d.name) + " takes " + std::to_string(d.attrs.size()) +
                           " attributes; got " + std::to_string(nb::len(attrs)))
                              .c_str());
  }
  ops::Attrs a(d.attrs.size());
  for (size_t i = 0; i < d.attrs.size(); ++i) {
    nb::handle h = attrs[i];
    const std::string where = "nnops: " + std::string(d.name) + ": " + d.attrs[i].name;
    try {
      switch (d.attrs[i].kind) {
        case ops::AttrKind::kInt:
          a[i].i = nb::cast<int64_t>(h);
          break;
        case ops::AttrKind::kFloat:
          a[i].f = nb::cast<double>(h);
          break;
        case ops::AttrKind::kBool:
          a[i].b = nb::cast<bool>(h);
          break;
        case ops::AttrKind::kMask:
          for (nb::handle e : h) a[i].mask.push_back(nb::cast<bool>(e));
          break;
      }
    } catch (const nb::cast_error&) {
      throw nb::type_error((where + " must be " + kind_name(d.attrs[i].kind)).c_str());
    }
  }
  return a;
}

std::vector<TensorView> views(const std::vector<Arg>& args) {
  std::vector<TensorView> v;
  v.reserve(args.size());
  for (const Arg& a : args) v.push_back(a.view);
  return v;
}

nb::list op_list() {
  nb::list out;
  for (const ops::OpDesc* d : ops::all_ops()) {
    nb::list tensors, attrs;
    for (const ops::TensorSpec& t : d->tensors) {
      nb::dict e;
      e["name"] = t.name;
      e["role"] = role_name(t.role);
      e["dtype_rule"] = t.dtype == ops::DtypeRule::kT ? "T" : "T_or_float32";
      e["optional"] = t.optional;
      e["scalar"] = t.scalar;
      e["help"] = t.help;
      e["alias_of"] = t.alias_of >= 0 ? nb::object(nb::int_(t.alias_of)) : nb::none();
      tensors.append(e);
    }
    const size_t n_optional = d->optional_outputs().size();
    for (const ops::AttrSpec& a : d->attrs) {
      nb::object def = nb::none();
      if (a.kind == ops::AttrKind::kMask) {
        nb::list m;
        for (size_t k = 0; k < n_optional; ++k) m.append(true);
        def = nb::tuple(m);
      } else if (!std::isnan(a.def)) {
        if (a.kind == ops::AttrKind::kInt) def = nb::int_(static_cast<int64_t>(a.def));
        if (a.kind == ops::AttrKind::kFloat) def = nb::float_(a.def);
        if (a.kind == ops::AttrKind::kBool) def = nb::bool_(a.def != 0);
      }
      nb::dict e;
      e["name"] = a.name;
      e["kind"] = kind_name(a.kind);
      e["default"] = def;
      e["help"] = a.help;
      attrs.append(e);
    }
    nb::list optional_outputs;
    for (int i : d->optional_outputs()) optional_outputs.append(i);
    nb::dict e;
    e["name"] = d->name;
    e["category"] = d->category;
    e["op_type"] = d->op_type;
    e["summary"] = d->summary;
    e["notes"] = d->notes;
    e["tensors"] = tensors;
    e["attrs"] = attrs;
    e["min_rank"] = d->min_rank;
    e["max_rank"] = d->max_rank;
    e["optional_outputs"] = optional_outputs;
    e["aux_option"] = d->run_aux_flag;
    e["aux_help"] = d->run_aux_help;
    out.append(e);
  }
  return out;
}

void call(const std::string& name, const nb::list& tensors, const nb::list& attrs, int num_threads) {
  const ops::OpDesc& d = find(name);
  const std::vector<Arg> args = tensor_args(d, tensors);
  const ops::Attrs a = attr_values(d, attrs);
  const std::vector<TensorView> v = views(args);
  Status s;
  {
    nb::gil_scoped_release release;
    s = ops::run_prepared(d.name, d.prepare, v.data(), a, Context{num_threads});
  }
  if (!s) raise_status(s);
}

nb::list infer(const std::string& name, const nb::list& tensors, const nb::list& attrs, const std::string& aux) {
  const ops::OpDesc& d = find(name);
  const std::vector<Arg> args = tensor_args(d, tensors);
  const ops::Attrs a = attr_values(d, attrs);
  const std::vector<TensorView> v = views(args);
  std::vector<ops::OutputShape> shapes;
  if (Status s = d.infer(v.data(), a, parse(aux), &shapes); !s) raise_status(s);
  nb::list out;
  for (const ops::OutputShape& o : shapes)
    out.append(nb::make_tuple(dtype_name(o.dtype), nb::tuple(nb::cast(o.shape))));
  return out;
}

void power_sign_foreach(const nb::list& vars, const nb::list& ms, const nb::list& grads, double lr, double logbase,
                        double sign_decay, double beta, bool use_locking, int num_threads) {
  const size_t n = nb::len(vars);
  if (nb::len(ms) != n || nb::len(grads) != n) {
    throw nb::value_error(("inplace_apply_power_sign_foreach: vars, ms and grads have " + std::to_string(n) + ", " +
                           std::to_string(nb::len(ms)) + " and " + std::to_string(nb::len(grads)) +
                           " entries; expected the same number")
                              .c_str());
  }
  std::vector<TensorView> v(n), m(n), g(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = view_of(vars[i], "vars");
    m[i] = view_of(ms[i], "ms");
    g[i] = view_of(grads[i], "grads");
  }
  Status s;
  {
    nb::gil_scoped_release release;
    s = inplace_apply_power_sign_foreach(v.data(), m.data(), g.data(), n, lr, logbase, sign_decay, beta, use_locking,
                                         Context{num_threads});
  }
  if (!s) raise_status(s);
}

}  // namespace
}  // namespace nnops::python

NB_MODULE(_nnops, m) {
  using namespace nnops::python;
  m.doc() = "nnops native module: generic access to every operator descriptor (use the nnops package)";
  m.attr("version") = nnops::version();
  m.def("ops", &op_list, "Every operator's descriptor metadata, in the order of src/ops/op_list.inc.");
  m.def("call", &call, "name"_a, "tensors"_a, "attrs"_a, "num_threads"_a = 0,
        "Runs operator `name` on (data, dtype, shape, strides) tensor descriptions (None: absent; a float for a "
        "scalar argument) and attribute values, with the GIL released.");
  m.def("infer", &infer, "name"_a, "tensors"_a, "attrs"_a, "aux"_a = "float32",
        "Output (dtype, shape) of every tensor of a call; `aux`: the dtype of T-or-float32 outputs.");
  m.def("inplace_apply_power_sign_foreach", &power_sign_foreach, "vars"_a, "ms"_a, "grads"_a, "lr"_a, "logbase"_a,
        "sign_decay"_a, "beta"_a, "use_locking"_a = false, "num_threads"_a = 0,
        "One PowerSign step over lists of (data, dtype, shape, strides) descriptions, in one native call.");
  m.def(
      "placed_offset",
      [](nb::handle like, nb::handle buffer) {
        const uintptr_t want = struct_address(like) % 4096 / 64 * 64;
        return static_cast<int>((want - struct_address(buffer) % 4096 + 4096) % 4096);
      },
      "like"_a, "buffer"_a,
      "From __array_struct__ capsules: the offset into `buffer` that sits at `like`'s offset in its 4 KiB page, "
      "rounded down to 64 bytes (_core._placed_like).");
  m.def(
      "default_num_threads", [] { return nnops::resolve_num_threads(nnops::Context{}); },
      "The thread count of a call with num_threads = 0 (NNOPS_NUM_THREADS, else OpenMP's default).");
  m.def("compiled_isas", [] {
    nb::list out;
    for (const nnops::CpuIsa& i : nnops::compiled_isas()) out.append(nb::make_tuple(i.name, i.supported));
    return out;
  });
  m.def("current_isa", &nnops::current_isa);
  m.def("set_max_isa", [](const std::string& name) {
    if (nnops::Status s = nnops::set_max_isa(name); !s) raise_status(s);
  });
}
