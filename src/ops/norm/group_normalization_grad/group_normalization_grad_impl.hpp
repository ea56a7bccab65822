// GroupNormalizationGrad internals: check -> plan -> run, plus the float64 reference. Shared by the
// C++ API, the CANN-style C API, the CLI, tests and benchmarks.
#pragma once

#include <cstdint>

#include "nnops/context.hpp"
#include "nnops/dtype.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "src/core/host_buffer.hpp"
#include "src/core/verify.hpp"
#include "src/ops/op_desc.hpp"

namespace nnops::gn_grad {

inline constexpr const char* kOpName = "group_normalization_grad";

/// The tensors in descriptor (and C++ API) order.
enum Tensor : int { kX = 0, kDy, kGamma, kMean, kRstd, kDx, kNumTensors };

/// Elements per reduction block. Sums are formed per block and blocks are added in order, so the
/// summation order depends on the shape alone, never on the thread count. 2048 is a multiple of every
/// vector width and keeps the per-block horizontal reduction cost under 1%.
inline constexpr int64_t kBlock = 2048;

/// Validated arguments, as the kernel sees them: dense row-major data (strided views are copied to dense
/// buffers first; see prepare).
struct Args {
  const void* x = nullptr;
  const void* dy = nullptr;
  const void* gamma = nullptr;
  const void* mean = nullptr;
  const void* rstd = nullptr;
  void* dx = nullptr;
  DType dtype = DType::kFloat32;       // x, dy, gamma, dx
  DType stat_dtype = DType::kFloat32;  // mean, rstd
  int64_t n = 0, g = 0;                // leading dims
  int64_t m = 0;                       // elements per group
  int64_t groups() const { return n * g; }
  int64_t numel() const { return n * g * m; }
};

/// All validation (semantics in README.md); reads and writes no tensor data. Any strides are accepted.
Status check(const TensorView& x, const TensorView& dy, const TensorView& gamma, const TensorView& mean,
             const TensorView& rstd, const TensorView& dx, Args* out);

/// check -> plan -> the kernel closure (ops::PrepareFn). Tensors that are not dense row-major are copied to
/// dense workspace buffers (and dx back), so a strided call gives exactly the bits of a dense one.
Status prepare(const TensorView* t, const ops::Attrs& a, const Context& ctx, ops::Prepared* out);

/// How a call is split across threads; plain data, a function of the shape and thread count only.
struct Plan {
  int64_t groups = 0, m = 0;
  int64_t blocks_per_group = 0;  // ceil(m / kBlock), at least 1 when m > 0
  int num_threads = 1;
  /// false: each thread owns whole groups (both passes on a group back to back, hot in cache).
  /// true: threads share groups; each thread takes a fixed contiguous range of blocks for both passes,
  /// block partial sums go to the workspace, and a barrier separates the passes.
  bool split_groups = false;
  uint64_t workspace_bytes = 0;  // 2 doubles per block when split_groups, else 0
  /// dx is written with non-temporal stores: it is larger than the caches it could stay in (from
  /// detail::stream_output_min_bytes), so caching it would only cost a read-for-ownership per line and evict the
  /// inputs.
  bool stream_output = false;
  /// The first pass prefetches ahead of its three arrays (detail::software_prefetch; the bits do not depend on it).
  bool prefetch = false;
  /// Whole groups per thread: each group's second pass (dx) is written while the next group's first pass reads that
  /// group in, so that the stores to memory overlap the loads from it (PipelineGroups, src/core/row_map-inl.h): float32
  /// with a streamed dx where a group's inputs fit the L2, all of them do not fit the L3, and
  /// detail::overlap_block_sums says the CPU gains. The bits do not depend on it.
  bool pipeline = false;
  /// The pipeline's dx follows the first pass in bursts of this many of its 16-element steps
  /// (detail::overlap_burst_steps; the bits do not depend on it).
  int pipeline_burst = 1;
};

Plan make_plan(const Args& a, const Context& ctx);

/// Runs the kernel. `workspace` holds plan.workspace_bytes (64-byte aligned not required).
void run(const Plan& plan, const Args& a, void* workspace);

/// Constant c of the docs/semantics.md bound |dx - ref| <= ulp_T(ref) + c * 2^-24 * scale. The kernel computes
/// dx_i = gamma_i * ((rstd*dy_i - k0) - k1*(x_i - mean)) in float32 with k0 = rstd*s1/M and
/// k1 = rstd^3 * S/M (S = sum dy*gamma*(x-mean), s2 = rstd*S) rounded once from float64, and s1, S
/// accumulated in float64 from exact float64 products. Each of the three terms picks up at most three
/// float32 roundings (operand rounding, product, the subtraction it enters), and the final product by
/// gamma one more: at most 4 * u32 relative to its own term. c = 8 leaves a factor 2 for the float64
/// sums' own error and the ulp-level slack of float32 products near the subnormal range.
inline constexpr double kBoundC = 8.0;

/// Float64 reference for one group (docs/semantics.md formula); writes ref[i] and scale[i] (docs/semantics.md) for
/// i < m. Inputs are the dtype-rounded values as doubles.
void reference_group(const double* x, const double* dy, const double* gamma, double mean, double rstd, int64_t m,
                     double* ref, double* scale);

/// Checks dx against the reference for groups 0, group_stride, 2*group_stride, ... and the last group
/// (every element of each checked group). Bound: ulp_T(ref) + kBoundC * 2^-24 * scale.
detail::VerifyReport verify(const detail::HostBuffer& x, const detail::HostBuffer& dy, const detail::HostBuffer& gamma,
                            const detail::HostBuffer& mean, const detail::HostBuffer& rstd,
                            const detail::HostBuffer& dx, int64_t group_stride);

}  // namespace nnops::gn_grad
