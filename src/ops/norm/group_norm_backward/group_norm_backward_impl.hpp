// GroupNormBackward internals: check -> plan -> run, and the float64 reference. Shared by the C++ API, the CANN
// C API and the descriptor (CLI, tests, fuzzer, benchmarks).
#pragma once

#include <cstdint>

#include "nnops/context.hpp"
#include "nnops/dtype.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "src/core/check.hpp"
#include "src/core/verify.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"
#include "src/ops/op_desc.hpp"

namespace nnops::gn_bwd {

inline constexpr const char* kOpName = "group_norm_backward";

/// The tensors and attributes in descriptor (and C++ API) order. The mask's entries are dx, dgamma, dbeta.
enum Tensor : int { kDy = 0, kX, kMean, kRstd, kGamma, kDx, kDgamma, kDbeta, kNumTensors };
enum Attr : int { kNumGroups = 0, kOutputMask };

/// dy, x and dx (when computed) both dense row-major ([N, C, HxW]) or all channels-last ([N, HxW, C]).
using gn::Layout;

/// A validated call as the kernel sees it.
struct Args : gn::Shape {
  const void* dy = nullptr;  ///< dense in `layout`
  const void* x = nullptr;   ///< dense in `layout`
  void* dx = nullptr;        ///< dense in `layout`; null when not computed
  /// The small tensors, any strides, read and written element by element in row-major index order. gamma may be
  /// none (all ones); dgamma/dbeta are none when not computed.
  TensorView mean, rstd, gamma, dgamma, dbeta;
};

/// All validation (docs/semantics.md); reads and writes no tensor data. Any strides are accepted.
Status check(const TensorView* t, const ops::Attrs& a, Args* args);

/// How a call is split: the same units as GroupNorm (row-major: one group; channels-last: a chunk of
/// chunk_groups whole groups of one sample), then the dgamma/dbeta reduction over N split by channel.
struct Plan {
  int num_threads = 1;
  int64_t units = 0;
  int64_t chunk_groups = 1;
  uint64_t scratch_bytes = 0;  ///< per thread
  /// gamma (C), mean and rstd (N*G), the per-(n, c) sums of dy and dy*(x - mean) (2*N*C doubles), then the
  /// per-thread scratch.
  uint64_t workspace_bytes = 0;
  /// dx written with non-temporal stores (row-major, or channels-last chunks of whole rows): larger than the caches
  /// it could stay in (detail::stream_output_min_bytes), so caching it would only cost a read-for-ownership per line
  /// and evict dy and x; not for short row-major rows off their lines (gn::kShortRowBytes).
  bool stream_output = false;
  /// Software prefetch ahead of the row-major statistics passes and of channels-last output passes over whole rows
  /// (detail::software_prefetch; the bits do not depend on it).
  bool prefetch = false;
  /// Channels-last column sums: the order of their steps and their prefetch (detail::column_walk; the bits depend on
  /// neither).
  detail::ColumnWalk column_walk;
  /// Row-major float32: pass 1's accumulations split between the add and the FMA pipes (detail::split_sum_pipes; the
  /// bits do not depend on it).
  bool split_sum_pipes = false;
  /// Row-major: each group's dx written while the next group's pass 1 reads that group in (see gn::Plan).
  bool pipeline = false;
  int pipeline_burst = 1;  ///< see gn::Plan
};

/// A thread's scratch for units of `cols` channels: the lane accumulators (gn::acc_bytes), the columns' means, then the
/// four float32 dx constants of each column (mean_hi, k1, k2, k3), each piece 64-byte aligned.
inline uint64_t scratch_bytes(uint64_t cols) {
  return gn::acc_bytes(cols) + gn::round64(cols * 8) + gn::round64(4 * cols * 4);
}

/// The whole workspace for `threads` threads of `scratch` bytes each: gamma as doubles, the (mean, rstd) pairs of the
/// n x groups groups, the per-sample, per-channel partial sums of dgamma and dbeta, then the threads' scratch.
inline uint64_t workspace_bytes(const Args& a, uint64_t threads, uint64_t scratch) {
  const uint64_t n = static_cast<uint64_t>(a.n), ch = static_cast<uint64_t>(a.c), g = static_cast<uint64_t>(a.groups);
  return gn::round64(ch * 8) + gn::round64(2 * n * g * 8) + gn::round64(2 * n * ch * 8) + threads * scratch;
}

Plan make_plan(const Args& a, const Context& ctx);

/// Runs the kernel (no validation). `workspace`: plan.workspace_bytes, 64-byte aligned.
void run(const Plan& p, const Args& a, void* workspace);

/// check -> plan -> the kernel closure (ops::PrepareFn).
Status prepare(const TensorView* t, const ops::Attrs& a, const Context& ctx, ops::Prepared* out);

/// Constant c of the bounds (docs/semantics.md): dx within ulp_T(ref) + c * 2^-24 * scale, scale =
/// rstd * (|gamma * dy| + |a| / M + |xhat * b| / M); dgamma within ulp(ref) + c * 2^-24 * sum |dy * xhat|, dbeta
/// within ulp(ref) + c * 2^-24 * sum |dy|. The kernel forms dx = k1 * dy - k2 - k3 * (x - mean_hi) in float32
/// with k1 = rstd * gamma, k3 = rstd^3 * sum(gamma * D) / M and k2 = rstd * a / M - k3 * (mean - mean_hi)
/// (the mean's low part folded in) rounded once from float64; x - mean_hi is exact near the mean (Sterbenz):
/// each of the three terms picks up at most three float32 roundings and the two subtractions one each: at most
/// 5 * u32 relative to the terms. The sums are float64. c = 8 leaves margin near the subnormal range.
inline constexpr double kBoundC = 8.0;

/// Compares after's selected outputs with the float64 reference computed from before's inputs (every sample-th
/// group for dx; every channel for dgamma and dbeta). NaN must meet NaN.
detail::VerifyReport verify(const ops::Problem& before, const ops::Problem& after, int64_t sample);

/// The float64 reference of a whole call on dense row-major data: dx (x's shape), dgamma and dbeta (C each),
/// and their scales. gamma null: ones.
struct Reference {
  std::vector<double> dx, dx_scale, dgamma, dgamma_scale, dbeta, dbeta_scale;
};
Reference reference(const double* dy, const double* x, const double* mean, const double* rstd, const double* gamma,
                    int64_t n, int64_t c, int64_t hw, int64_t groups);

}  // namespace nnops::gn_bwd
