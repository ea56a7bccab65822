// Work split for GroupNormBackward (ops-nn "tiling"): a pure function of the shape, the dtype, the layout and the
// thread count (and of the CPU for the software prefetch and the overlapped passes, and of dx's address modulo 64 for
// the streamed dx (gn::kShortRowBytes), which change no bit). The units
// are GroupNorm's (whole groups), so the per-(n, c) sums are each computed by one thread.
#include <algorithm>

#include "src/core/check.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"

namespace nnops::gn_bwd {

Plan make_plan(const Args& a, const Context& ctx) {
  Plan p;
  const gn::Units u = gn::split_units(a, ctx, 2, a.dx);  // pass 1 reads x and dy
  p.chunk_groups = u.chunk_groups;
  p.units = u.units;
  // The dgamma/dbeta reduction is split by channel, so C channels also feed the threads.
  p.num_threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(u.threads, std::max<int64_t>(p.units, a.c))));
  const int64_t cols = u.cols;
  p.scratch_bytes = scratch_bytes(static_cast<uint64_t>(cols));
  p.workspace_bytes = workspace_bytes(a, static_cast<uint64_t>(p.num_threads), p.scratch_bytes);
  p.stream_output = u.stream;
  // Channels-last units are not pipelined as GroupNorm's are: tried (2026-12-03, Intel Xeon VM, [69, 320, 64, 64]
  // float32), ratio 0.50-0.51 unpipelined against 0.46-0.53, no gain; pass 1's column sums of two arrays are bound by
  // their own work, not by memory (docs/performance.md, "Channels-last samples pipelined").
  p.pipeline = (u.pipeline && a.layout == Layout::kNCHW) || u.prefetched_pipeline;
  // The CPU also enters the plan, here the two prefetch choices, the pipe split and in split_units the stream threshold
  // and the pipeline (the same bits either way).
  p.prefetch = detail::software_prefetch(detail::PrefetchLoop::kGroupStatistics) || u.prefetched_pipeline;
  p.column_walk = detail::column_walk();
  p.split_sum_pipes = a.dtype == DType::kFloat32 && a.layout == Layout::kNCHW && detail::split_sum_pipes();
  p.pipeline_burst = detail::overlap_burst_steps();
  return p;
}

}  // namespace nnops::gn_bwd
