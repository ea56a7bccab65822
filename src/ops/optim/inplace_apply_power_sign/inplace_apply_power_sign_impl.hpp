// InplaceApplyPowerSign internals: the check -> plan -> run pipeline shared by the C++ API, the (future)
// CANN two-phase C API (phase one = check + make_plan, phase two = run), the CLI and the benchmarks,
// plus the float64 reference that defines the result.
#pragma once

#include <cstdint>
#include <mutex>

#include "nnops/context.hpp"
#include "nnops/dtype.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "src/core/host_buffer.hpp"
#include "src/core/verify.hpp"
#include "src/ops/op_desc.hpp"

namespace nnops::power_sign {

inline constexpr const char* kOpName = "inplace_apply_power_sign";

/// The tensors in descriptor (and C++ API) order; the one attribute is use_locking.
enum Tensor : int { kVar = 0, kM, kLr, kLogbase, kSignDecay, kBeta, kGrad, kNumTensors };

/// The four one-element inputs, as read from their T tensors (exact: every T value is a double).
struct Scalars {
  double lr, logbase, sign_decay, beta;
};

/// A validated call: raw pointers, the common dtype, the element count of var/m/grad. The kernel treats var,
/// m and grad as flat arrays of `numel` elements (see prepare for strided views).
struct Args {
  void* var;
  void* m;
  const void* grad;
  DType dtype;
  int64_t numel;
  Scalars s;
  bool use_locking;
};

/// All validation, in this order: per-tensor checks (rank, dims, strides, null data), dtypes (all seven
/// equal var's, which must be a supported dtype), shapes (m and grad equal var's; each scalar [] or [1]),
/// values (beta in [0, 1); lr, logbase, sign_decay finite), overlap of var/m/grad (and var, m each give every
/// element its own address). Reads the four scalar
/// values into out->s. Writes nothing to any tensor; `out` is written only on success.
Status check(const TensorView& var, const TensorView& m, const TensorView& lr, const TensorView& logbase,
             const TensorView& sign_decay, const TensorView& beta, const TensorView& grad, bool use_locking, Args* out);

/// Everything run() needs besides the pointers. coef[k + 1] = lr * exp(logbase * sign_decay * k) for
/// sign_gm = k in {-1, 0, +1}, computed in float64 once per call (the same expression as reference(), so
/// the kernel's coefficient is bit-for-bit the reference's).
struct Plan {
  DType dtype;
  int64_t numel;
  int num_threads;
  double coef[3];
  double beta;
  double one_minus_beta;
  /// float16/bfloat16 only: the float32 evaluation (see inplace_apply_power_sign_cpu.cc) applies, i.e. each
  /// coefficient is 0 or in [2^-60, 2^60] and 1 - beta is exact in float32. Otherwise the float64 path runs.
  bool half_fast;
  float coef32[3];  ///< coef rounded to float32
  float beta32, one_minus_beta32;
  /// Software prefetch ahead of the three streams (detail::software_prefetch; the results do not depend on it).
  bool prefetch;
};

/// Below this many elements per thread, starting threads costs more than it saves.
inline constexpr int64_t kMinElementsPerThread = 16384;
/// Per-thread ranges start at multiples of this many elements: a multiple of any cache line for every
/// dtype, so no two threads write the same cache line, and of every kernel step (up to 128 elements for
/// bfloat16 on 2048-bit SVE), so a thread split never moves an element from a full step into a tail.
inline constexpr int64_t kThreadBlock = 256;

Plan make_plan(const Args& a, const Context& ctx);

/// The kernel: updates var and m. No validation, no lock.
void run(const Plan& p, const Args& a);

/// The mutex that use_locking takes for the var buffer at `var` (see the .cc file).
std::mutex& var_lock(const void* var);

/// check -> plan -> the kernel closure (ops::PrepareFn). var, m and grad in one dense layout (row-major or
/// any permutation of it) are updated in place as flat arrays; other layouts go through dense copies, so
/// the bits are those of a dense call. With use_locking the closure holds var_lock(var) throughout.
Status prepare(const TensorView* t, const ops::Attrs& a, const Context& ctx, ops::Prepared* out);

/// float64 reference for one element; results are unrounded (round with round_to_dtype to compare).
void reference(const Scalars& s, double var, double m, double grad, double* var_new, double* m_new);

/// Compares var_after/m_after with the reference computed from the before-copies on elements
/// i = 0, stride, 2 * stride, ... (stride >= 1). The docs/semantics.md bound: an output passes when it is
/// round_to_dtype(ref) or within one ulp of T of it; NaN must meet NaN and +-Inf must match exactly.
detail::VerifyReport verify(const Scalars& s, const detail::HostBuffer& var_before, const detail::HostBuffer& m_before,
                            const detail::HostBuffer& grad, const detail::HostBuffer& var_after,
                            const detail::HostBuffer& m_after, int64_t stride);

}  // namespace nnops::power_sign
