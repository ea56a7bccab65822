// Work split for GroupNormalizationGrad (ops-nn "tiling"): a pure function of shape and thread count (and of the CPU
// for the software prefetch, which changes no bit).
#include <algorithm>

#include "src/core/check.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

namespace nnops::gn_grad {

// Below this many elements a call runs on one thread: starting a parallel region costs more than the
// work. Measured with `nnops bench --sweep` (docs/performance.md, "Thread grain"): on an idle 2-core Zen 4
// VM 2 threads win from ~8K elements in float32 (~4-6K in the half types) and by >= 19% in every dtype at
// 16K; under load (a busy second core) they break even at 16K in float32.
constexpr int64_t kMinParallelElements = 1 << 14;

Plan make_plan(const Args& a, const Context& ctx) {
  Plan p;
  p.groups = a.groups();
  p.m = a.m;
  p.blocks_per_group = a.m == 0 ? 0 : (a.m + kBlock - 1) / kBlock;
  const int64_t total = a.numel();
  int threads = resolve_num_threads(ctx);
  if (total < kMinParallelElements) threads = 1;
  p.num_threads = threads;
  // Whole groups per thread balance well once there are several groups per thread (or a group is a
  // single block and cannot be shared). Otherwise threads share groups by block ranges. Both modes
  // add the same block partial sums in the same order, so the choice never changes a bit of dx.
  p.split_groups = threads > 1 && p.blocks_per_group > 1 && p.groups < 4 * static_cast<int64_t>(threads);
  if (p.split_groups) {
    threads = static_cast<int>(std::min<int64_t>(threads, p.groups * p.blocks_per_group));
    p.num_threads = threads;
    p.workspace_bytes = static_cast<uint64_t>(p.groups * p.blocks_per_group) * 2 * sizeof(double);
  } else {
    p.num_threads = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(p.groups, 1)));
  }
  const uint64_t elem = dtype_size(a.dtype);
  p.stream_output = static_cast<uint64_t>(total) * elem >= detail::stream_output_min_bytes(p.num_threads);
  // The one input of the plan that is not the shape: the CPU (the results are the same bits either way).
  p.prefetch = detail::software_prefetch(detail::PrefetchLoop::kBlockSums);
  // Whole groups in a thread's L2 (x, dy, gamma), where the second pass reads them from there, and inputs larger than
  // the L3, so that the first pass reads them from memory: in the L3 the overlap measured no faster on Zen 2
  // ([8, 8, 8192] float32, 1 thread: 250-262 us either way).
  const bool group_in_l2 = 3 * static_cast<uint64_t>(a.m) * elem <= detail::l2_cache_bytes();
  const bool from_memory = 3 * static_cast<uint64_t>(total) * elem > detail::l3_cache_bytes();
  p.pipeline = !p.split_groups && p.stream_output && a.dtype == DType::kFloat32 && group_in_l2 && from_memory &&
               detail::overlap_block_sums();
  // A step here reads three arrays: bursts of a quarter of the GroupNorm family's steps measured best on AMD Zen 2
  // ([256, 32, 8, 32, 32], 1 thread, adjacent buffers: 4 steps 46.5 ms, 16 steps 47.5, 64 steps 52.3).
  p.pipeline_burst = std::max(1, detail::overlap_burst_steps() / 4);
  return p;
}

}  // namespace nnops::gn_grad
