// Work split for GroupNorm (ops-nn "tiling"): a pure function of the shape, the dtype, the layout and the thread
// count (and of the CPU for the software prefetch, the overlapped passes, the streamed outputs and the paired channel
// sums, and of the output's address modulo 64 for the streamed outputs (gn::kShortRowBytes), which change no bit).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "src/core/check.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"

namespace nnops::gn {
namespace {

// Below this many elements a call runs on one thread: starting a parallel region costs more than the work.
constexpr int64_t kMinParallelElements = 1 << 15;
// The most channels a channels-last unit takes: its lane accumulators (2 x 16 doubles a channel, 256 KiB
// here) stay in a core's L2 while the unit streams whole rows.
constexpr int64_t kMaxChunkChannels = 1024;

}  // namespace

// Measured ([2, 320, 64, 64] float32, 1 thread, AVX2): a unit of 1 group (10 of 320 channels a row) took 11 ms,
// 6 groups 2.7 ms, all 32 groups 1.5 ms. Rows read whole are sequential memory; a narrow column strip of each row
// defeats the prefetchers and shares its edge cache lines with the next unit, which costs far more than lane
// accumulators in L2 instead of L1.
int64_t channels_last_chunk(int64_t n, int64_t cpg, int64_t groups, int threads) {
  if (groups <= 0 || cpg <= 0) return 1;
  const int64_t per_thread = n > 0 ? (threads + n - 1) / n : 1;  // chunks a sample needs to feed every thread
  const int64_t cap = std::max<int64_t>(1, kMaxChunkChannels / cpg);
  const int64_t chunks = std::max<int64_t>({int64_t{1}, per_thread, (groups + cap - 1) / cap});
  int64_t k = (groups + chunks - 1) / chunks;
  const int64_t align = 16 / std::gcd<int64_t>(cpg, 16);  // groups for a multiple of 16 channels
  if (k > align) k = k / align * align;
  return std::max<int64_t>(k, 1);
}

// NB: the one-pass variance. mean = K + S1/m and m*var = S2 - S1^2/m. S1 and S2 are canonical float64 sums of m
// terms (each lane adds m/16 of them, then a tree of depth 4): their rounding errors are at most
// g = (m/16 + 4) * 2^-53 times S2 and times sum |x - K| <= sqrt(m S2), so m*var is off by at most about 3 g S2 =
// 3 g F (m var), F = S2 / (m var) = 1 + (mean - K)^2 / var. The result is certified when 3 g F <= 2^-30, six bits
// below the float32 rounding of rstd. Since K is an element of the group, F <= m + 1: groups up to ~2^12 elements
// always pass, larger ones unless K lies far out (an outlier first element, say), and |mean| >> std costs nothing
// (the shift removes it).
//
// NB: K = 0 where it costs little. Unshifted, the terms x and x^2 are exact in float64 (x has at most 24 significant
// bits), so the kernel needs no subtraction and accumulates x^2 with one fused multiply-add, fma(x, x, acc), the same
// bits as adding the exact square on a target without FMA: 12 operations per 16 elements on AVX2 against 20 (GroupNorm
// float32 [2, 320, 64, 64] 442-484 -> 378-386 us, one thread, AMD Zen 4). The certificate is the same, with
// F = 1 + mean^2 / var: accepted while |mean| stays within sqrt(F_max) standard deviations, F_max = 2^-30 / (3 g).
// - Groups of up to 174,018 elements, where F_max >= 257 (|mean| up to 16 standard deviations; every layer of Stable
//   Diffusion 1.5's UNet at 512 x 512, the `unet` workload, has at most 122,880), all take K = 0. One whose mean lies
//   further out (x = 1e4 + N(0, 1), or a constant group other than zeros) is refused and gets the classical second
//   pass over (x - mean)^2: one more pass over x (in channels-last, over its unit's columns), never an unchecked
//   E[x^2] - E[x]^2.
// - A larger group (SD 2's UNet at 768 px: 276,480 elements; SDXL's at 1024: 491,520; a VAE decoder's: millions) has
//   a smaller F_max, and a refused group costs a pass from memory at that size, so there K = 0 only where 16 of its
//   elements, spread over it, put F within F_max / 4 (unshifted_sample); else K is its first element, as before. The
//   sample is the same elements in every layout, so the choice and the bits are too; 16 loads are nothing beside a
//   pass over 174,019 elements or more.
namespace {
// g of the certificate (above): the canonical float64 sums' relative rounding bound for m terms.
double sum_rounding(double m) { return (m / 16 + 4) * 0x1p-53; }
}  // namespace

bool unshifted_sums(double m) { return 3 * sum_rounding(m) * 257 <= 0x1p-30; }

bool unshifted_sample(double m, const double* v) {
  double mean = 0;
  for (int i = 0; i < kShiftSamples; ++i) mean += v[i];
  mean /= kShiftSamples;
  double ss = 0;
  for (int i = 0; i < kShiftSamples; ++i) ss += (v[i] - mean) * (v[i] - mean);
  const double var = ss / (kShiftSamples - 1);
  // F = 1 + mean^2 / var as the sample sees it; a constant sample counts as F = 1 only when it is zeros.
  const double f = var > 0 ? 1 + mean * mean / var : (mean == 0 ? 1.0 : HUGE_VAL);
  const double f_max = 0x1p-30 / (3 * sum_rounding(m));
  return 4 * f <= f_max;  // false for NaN or infinite samples: those keep the shift
}

Moments one_pass_moments(double k, double s1, double s2, double m) {
  Moments r;
  const double d = s1 / m, var_m = s2 - s1 * d;
  r.mean = k + d;
  r.var = var_m / m;
  const double g = sum_rounding(m);
  r.ok = s2 == 0 || (var_m > 0 && 3 * g * s2 <= 0x1p-30 * var_m);
  return r;
}

Units split_units(const Shape& s, const Context& ctx, int inputs, const void* out) {
  Units u;
  const int64_t n = s.n, c = s.c, groups = s.groups, cpg = s.cpg(), numel = s.numel();
  u.threads = numel < kMinParallelElements ? 1 : resolve_num_threads(ctx);
  u.cols = cpg;
  if (s.layout == Layout::kNHWC) {
    u.chunk_groups = channels_last_chunk(n, cpg, groups, u.threads);
    u.units = n * ((groups + u.chunk_groups - 1) / u.chunk_groups);
    u.cols = u.chunk_groups * cpg;
  } else {
    u.units = n * groups;
  }
  u.writers = static_cast<int>(std::min<int64_t>(u.threads, std::max<int64_t>(u.units, 1)));
  const uint64_t bytes = static_cast<uint64_t>(numel) * dtype_size(s.dtype);
  const uint64_t row_bytes = static_cast<uint64_t>(s.hw) * dtype_size(s.dtype);
  const bool short_rows_off_lines = s.layout == Layout::kNCHW && row_bytes <= kShortRowBytes &&
                                    (row_bytes % 64 != 0 || reinterpret_cast<uintptr_t>(out) % 64 != 0);
  u.stream = (s.layout == Layout::kNCHW || u.cols == c) && bytes >= detail::stream_output_min_bytes(u.writers) &&
             !short_rows_off_lines;
  const uint64_t input_bytes = bytes * static_cast<uint64_t>(inputs);
  u.pipeline = u.stream && s.dtype == DType::kFloat32 && detail::overlap_passes(input_bytes);
  u.prefetched_pipeline = u.stream && s.dtype == DType::kFloat32 && s.layout == Layout::kNCHW &&
                          detail::overlap_prefetched_passes(input_bytes);
  return u;
}

Plan make_plan(const Args& a, const Context& ctx) {
  Plan p;
  const Units u = split_units(a, ctx, 1, a.out);
  p.chunk_groups = u.chunk_groups;
  p.units = u.units;
  p.num_threads = u.writers;
  const int64_t cols = u.cols;
  p.scratch_bytes = scratch_bytes(static_cast<uint64_t>(cols));
  p.workspace_bytes = workspace_bytes(a, static_cast<uint64_t>(p.num_threads), p.scratch_bytes);
  p.stream_output = u.stream;
  p.pipeline = u.pipeline || u.prefetched_pipeline;
  p.pair_rows = static_cast<uint64_t>(a.numel()) * dtype_size(a.dtype) <=
                detail::l2_cache_bytes() * static_cast<uint64_t>(u.writers);
  // The CPU also enters the plan, here the two prefetch choices and in split_units the pipeline (the same bits either
  // way).
  p.prefetch = detail::software_prefetch(detail::PrefetchLoop::kGroupStatistics) || u.prefetched_pipeline;
  p.column_walk = detail::column_walk();
  p.pipeline_burst = detail::overlap_burst_steps();
  return p;
}

}  // namespace nnops::gn
