// The operator descriptor: everything a front end needs to know about an operator, so that the command line
// (run, check, bench, demo), the generic test sweeps, the concurrency and overflow tests, the fuzzer, the
// microbenchmarks and the Python bindings iterate over the operator list (src/ops/op_list.inc) and never name
// an operator. Each operator folder defines its descriptor in <op>_desc.cpp; registry.cpp collects them.
//
// The one execution path. Every operator provides `prepare`: all validation (check), the work split and
// workspace size (plan), and a closure that runs the kernel. The C++ API runs prepare and then the closure
// (run_prepared); the CANN C API runs prepare in phase one and the closure in phase two (src/acl/adapter.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "nnops/context.hpp"
#include "nnops/dtype.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "src/core/host_buffer.hpp"
#include "src/core/verify.hpp"

namespace nnops::ops {

// ---- arguments -------------------------------------------------------------------------------------------

enum class Role : uint8_t {
  kIn,     ///< read only
  kOut,    ///< written (a new result)
  kInOut,  ///< read and written in place (var and m of an optimizer step)
};

/// How a tensor's dtype relates to the call's dtype T (the dtype of the first tensor).
enum class DtypeRule : uint8_t {
  kT,       ///< always T
  kTOrF32,  ///< T or float32 (statistics and per-channel parameters of the GroupNorm family)
};

struct TensorSpec {
  const char* name;  ///< C++/Python argument name and CLI option (--name), e.g. "dy"
  Role role;
  DtypeRule dtype = DtypeRule::kT;
  bool optional = false;  ///< may be absent: TensorView{} (null data, rank 0), e.g. gamma or a masked output
  bool scalar = false;    ///< holds one element ([] or [1]); the CLI also takes it as a number
  const char* help = "";  ///< the shape and dtype rule, for --help
  /// For an output: the index of the input whose very buffer it may be (dx written over dy), else -1.
  int alias_of = -1;
};

enum class AttrKind : uint8_t {
  kInt,    ///< int64 (num_groups)
  kFloat,  ///< double (eps)
  kBool,   ///< bool (use_locking)
  kMask,   ///< one bool per optional output, in order (output_mask); front ends derive it from which outputs
           ///< they were given
};

struct AttrSpec {
  const char* name;  ///< C++/Python name; CLI option --name with '_' as '-'
  AttrKind kind;
  double def;  ///< default for kInt/kFloat/kBool (NaN: no default, the CLI requires it); a kMask is all true
  const char* help = "";
};

struct AttrValue {
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::vector<bool> mask;
};
/// Attribute values in the order of OpDesc::attrs.
using Attrs = std::vector<AttrValue>;

// ---- execution -------------------------------------------------------------------------------------------

/// A validated, planned call. `run` is empty when there is nothing to compute (empty tensors).
struct Prepared {
  uint64_t workspace_bytes = 0;
  std::function<void(void* workspace)> run;
  /// Indices of the tensors `run` reads or writes (the C API pins their device memory until it has run).
  std::vector<int> touched;
};

/// check -> plan -> closure; writes nothing to any tensor. `t` holds one view per TensorSpec.
using PrepareFn = Status (*)(const TensorView* t, const Attrs& a, const Context& ctx, Prepared* out);

/// Runs prepare and then the closure with a heap workspace (the C++ API's path): the calling thread's kept buffer
/// when the workspace is at most 1 MiB (reused by its next call; a call nested in another's run gets its own), else
/// one allocated for the call. Out of memory for the workspace is a kInternal Status naming `op`.
Status run_prepared(const char* op, PrepareFn prepare, const TensorView* t, const Attrs& a, const Context& ctx);

/// Shape and dtype of one output, as `infer` derives it from the inputs.
struct OutputShape {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
};

// ---- problems: owning tensors for tools, tests and benchmarks ----------------------------------------------

/// What a problem generator is asked for.
struct ProblemSpec {
  DType dtype = DType::kFloat32;
  /// The main shape (the first tensor's); the descriptor derives the others.
  std::vector<int64_t> shape;
  uint64_t seed = 1;
  /// kTOrF32 tensors in T (true) or float32 (false).
  bool aux_like_t = false;
  /// Attribute values (descriptor defaults where empty).
  Attrs attrs;
  /// Values of the scalar tensors, by tensor index (NaN: the descriptor's default).
  std::vector<double> scalars;
};

struct Problem {
  std::vector<detail::HostBuffer> t;  ///< one per TensorSpec (an empty buffer where absent)
  std::vector<bool> present;
  Attrs attrs;
  /// The views of a call: absent tensors as TensorView{}.
  std::vector<TensorView> views() const;
  /// A deep copy.
  Problem clone() const;
};

// ---- the CANN C API binding ---------------------------------------------------------------------------------

/// One C API call in generic form: the tensors in descriptor order (null where absent), and the scalar
/// arguments of the aclnn signature in the binding's own order (documented next to each binding).
struct AclCall {
  std::vector<aclTensor*> t;
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::vector<bool> flags;
  std::vector<bool> bools;  ///< an aclBoolArray argument (outputMask), when the signature has one
  bool bools_null = false;  ///< pass a null aclBoolArray
};

struct AclBinding {
  const char* phase_one_name;  ///< "aclnnGroupNormGetWorkspaceSize"
  const char* phase_two_name;  ///< "aclnnGroupNorm"
  /// Calls the public phase-one function with the call's arguments.
  aclnnStatus (*phase_one)(const AclCall& c, uint64_t* workspace_size, aclOpExecutor** executor);
  /// The public phase-two function.
  aclnnStatus (*phase_two)(void* workspace, uint64_t workspace_size, aclOpExecutor* executor, aclrtStream stream);
  /// The scalar arguments of a valid call with these tensor shapes and attributes.
  void (*defaults)(const std::vector<std::vector<int64_t>>& shapes, const Attrs& a, AclCall* c);
};

// ---- the descriptor ---------------------------------------------------------------------------------------

/// A benchmark case: a size class ("l2", "l3", "dram", or a variant such as "dram-big") and its shape.
struct BenchCase {
  std::string size;
  std::vector<int64_t> shape;
  Attrs attrs;         ///< empty: the defaults
  std::string layout;  ///< "" dense row-major; "channels_last": every tensor of rank >= 3 channels-last
};

/// The read/write mix of the bandwidth probe an operator is compared with: read `reads` arrays and write
/// `writes` arrays of the main tensor's byte size; `in_place`: the writes update the first read arrays.
struct ProbeMix {
  int reads;
  int writes;
  bool in_place;
};

struct OpDesc {
  const char* name;      ///< snake_case, "group_norm"
  const char* category;  ///< ops-nn category, "norm"
  const char* op_type;   ///< CANN OpType, "GroupNorm"
  const char* summary;   ///< one line with the formula (CLI help, Python docstring)
  const char* notes;     ///< more help text (CLI footers), may be ""
  std::vector<TensorSpec> tensors;
  std::vector<AttrSpec> attrs;
  int min_rank, max_rank;  ///< of the main shape

  PrepareFn prepare;
  /// Output shapes and dtypes from the inputs (views of outputs may be absent). `aux`: the dtype of kTOrF32
  /// outputs. One entry per tensor (inputs get their own shape).
  Status (*infer)(const TensorView* t, const Attrs& a, DType aux, std::vector<OutputShape>* out);
  /// Shapes of every tensor of a valid call with this main shape.
  std::vector<std::vector<int64_t>> (*shapes)(const std::vector<int64_t>& main, const Attrs& a);
  /// Attributes that suit this main shape (e.g. a num_groups that divides C), from the defaults.
  Attrs (*attrs_for)(const std::vector<int64_t>& main);
  /// Realistic random inputs (outputs zero-filled).
  Problem (*make_problem)(const ProblemSpec& spec);
  /// Compares `after`'s outputs with the float64 reference computed from `before` under the operator's bound;
  /// `sample` >= 1 checks a subset (every sample-th group or element) for large problems.
  detail::VerifyReport (*verify)(const Problem& before, const Problem& after, int64_t sample);
  /// Bytes a call must move (compulsory traffic), for GB/s.
  double (*bytes)(const Problem& p);
  /// Bytes the algorithm really moves when more than compulsory (e.g. groups too big for the cache read
  /// twice); null: same as bytes.
  double (*model_bytes)(const Problem& p);
  ProbeMix probe;

  std::vector<int64_t> check_shape;  ///< default of `nnops check`
  std::vector<int64_t> demo_shape, demo_quick_shape;
  std::vector<BenchCase> (*bench_cases)(DType t);
  /// Small shapes that cover vector tails and blocking edges, for the generic test sweeps.
  std::vector<std::vector<int64_t>> test_shapes;
  /// Default values of the scalar tensors (by tensor index; unused entries 0).
  std::vector<double> scalar_defaults;
  /// `nnops check` flag that puts kTOrF32 tensors in T, and its help ("" when the operator has none).
  const char* aux_flag;
  const char* aux_help;
  /// `nnops run` flag that writes kTOrF32 outputs in float32 instead of T, and its help ("" when none).
  const char* run_aux_flag = "";
  const char* run_aux_help = "";
  /// Extra lines for the help of `nnops run/check <op>` (examples).
  const char* run_example;
  const char* check_example;

  const AclBinding* acl;

  // Helpers.
  int tensor_index(const char* name) const;
  /// Attributes with every value at its default.
  Attrs default_attrs() const;
  /// Indices of the optional outputs (the entries of a kMask attribute, in order).
  std::vector<int> optional_outputs() const;
};

/// Each operator's descriptor (defined in its folder's <op>_desc.cpp).
#define NNOPS_OP(name, category, op_type) const OpDesc& desc_##name();
#include "src/ops/op_list.inc"
#undef NNOPS_OP

/// Every operator, in the order of src/ops/op_list.inc.
const std::vector<const OpDesc*>& all_ops();
/// The operator called `name`, or null.
const OpDesc* find_op(const std::string& name);

}  // namespace nnops::ops
