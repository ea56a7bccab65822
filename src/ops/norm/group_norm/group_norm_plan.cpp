// Work split for GroupNorm (ops-nn "tiling"): a pure function of the shape, the layout and the thread count.
#include <algorithm>
#include <numeric>

#include "src/ops/norm/group_norm/group_norm_impl.hpp"

namespace nnops::gn {
namespace {

// Below this many elements a call runs on one thread: starting a parallel region costs more than the work.
constexpr int64_t kMinParallelElements = 1 << 15;
// A channels-last unit's columns aim at a multiple of 16 (a full vector of float32 on every x86 target), but
// not past this footprint, so that its three passes stay in a core's L2.
constexpr uint64_t kChunkBytes = uint64_t{1} << 20;

uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }

}  // namespace

int64_t channels_last_chunk(int64_t cpg, int64_t hw, int64_t groups, DType dtype, int arrays) {
  int64_t k = std::min<int64_t>(groups, 16 / std::gcd<int64_t>(cpg, 16));
  const uint64_t group_bytes = static_cast<uint64_t>(cpg * hw) * dtype_size(dtype) * arrays;
  if (k > 1 && k * group_bytes > kChunkBytes) k = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / group_bytes));
  return std::max<int64_t>(k, 1);
}

// NB: the one-pass variance. mean = K + S1/m and m*var = S2 - S1^2/m. S1 and S2 are canonical float64 sums of m
// terms (each lane adds m/16 of them, then a tree of depth 4): their rounding errors are at most
// g = (m/16 + 4) * 2^-53 times S2 and times sum |x - K| <= sqrt(m S2), so m*var is off by at most about 3 g S2 =
// 3 g F (m var), F = S2 / (m var) = 1 + (mean - K)^2 / var. The result is certified when 3 g F <= 2^-30, six bits
// below the float32 rounding of rstd. Since K is an element of the group, F <= m + 1: groups up to ~2^12 elements
// always pass, larger ones unless K lies far out (an outlier first element, say), and |mean| >> std costs nothing
// (the shift removes it).
Moments one_pass_moments(double k, double s1, double s2, double m) {
  Moments r;
  const double d = s1 / m, var_m = s2 - s1 * d;
  r.mean = k + d;
  r.var = var_m / m;
  const double g = (m / 16 + 4) * 0x1p-53;
  r.ok = s2 == 0 || (var_m > 0 && 3 * g * s2 <= 0x1p-30 * var_m);
  return r;
}

Plan make_plan(const Args& a, const Context& ctx) {
  Plan p;
  const int64_t cpg = a.cpg();
  int64_t cols = cpg;
  if (a.layout == Layout::kNHWC) {
    const int64_t k = channels_last_chunk(cpg, a.hw, a.groups, a.dtype, 1);
    p.chunk_groups = k;
    p.units = a.n * ((a.groups + k - 1) / k);
    cols = k * cpg;
  } else {
    p.units = a.n * a.groups;
  }
  int threads = resolve_num_threads(ctx);
  if (a.numel() < kMinParallelElements) threads = 1;
  p.num_threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, p.units)));
  // Per thread: 2 x 16 lane accumulators per column, four per-column doubles (two sums, mean, rstd) and three
  // float32 constants (room for four).
  const uint64_t c = static_cast<uint64_t>(cols);
  p.scratch_bytes = round64(2 * 16 * c * 8) + round64(4 * c * 8) + round64(4 * c * 4);
  p.workspace_bytes = round64(2 * static_cast<uint64_t>(a.c) * 8) + p.num_threads * p.scratch_bytes;
  p.stream_output =
      a.layout == Layout::kNCHW && static_cast<uint64_t>(a.numel()) * dtype_size(a.dtype) >= kStreamOutputBytes;
  return p;
}

}  // namespace nnops::gn
