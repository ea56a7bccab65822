// Work split for GroupNormBackward (ops-nn "tiling"): a pure function of the shape, the layout and the thread
// count. The units are GroupNorm's (whole groups), so the per-(n, c) sums are each computed by one thread.
#include <algorithm>

#include "src/ops/norm/group_norm/group_norm_impl.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"

namespace nnops::gn_bwd {
namespace {

constexpr int64_t kMinParallelElements = 1 << 15;

uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }

}  // namespace

Plan make_plan(const Args& a, const Context& ctx) {
  Plan p;
  const int64_t cpg = a.cpg();
  int64_t cols = cpg;
  int threads = resolve_num_threads(ctx);
  if (a.numel() < kMinParallelElements) threads = 1;
  if (a.layout == Layout::kNHWC) {
    p.chunk_groups = gn::channels_last_chunk(a.n, cpg, a.groups, threads);
    p.units = a.n * ((a.groups + p.chunk_groups - 1) / p.chunk_groups);
    cols = p.chunk_groups * cpg;
  } else {
    p.units = a.n * a.groups;
  }
  p.num_threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, std::max<int64_t>(p.units, a.c))));
  // Per thread: 2 x 16 lane accumulators per column, then per column the mean and the three float32 dx
  // constants (mean_hi, mean_lo, k1) and the group constants k2, k3.
  const uint64_t c = static_cast<uint64_t>(cols);
  p.scratch_bytes = round64(2 * 16 * c * 8) + round64(c * 8) + round64(5 * c * 4);
  const uint64_t n = static_cast<uint64_t>(a.n), ch = static_cast<uint64_t>(a.c), g = static_cast<uint64_t>(a.groups);
  p.workspace_bytes =
      round64(ch * 8) + round64(2 * n * g * 8) + round64(2 * n * ch * 8) + p.num_threads * p.scratch_bytes;
  // As GroupNorm's out: channels-last streams only chunks of whole rows, whose stores cover whole lines.
  p.stream_output = (a.layout == Layout::kNCHW || cols == a.c) &&
                    static_cast<uint64_t>(a.numel()) * dtype_size(a.dtype) >= gn::kStreamOutputBytes;
  return p;
}

}  // namespace nnops::gn_bwd
