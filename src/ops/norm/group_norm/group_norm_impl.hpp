// GroupNorm internals: check -> plan -> run, and the float64 reference. Shared by the C++ API, the CANN C API,
// the descriptor (CLI, tests, fuzzer, benchmarks).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "nnops/context.hpp"
#include "nnops/dtype.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "src/core/canonical_sum.hpp"
#include "src/core/check.hpp"
#include "src/core/verify.hpp"
#include "src/ops/op_desc.hpp"

namespace nnops::gn {

inline constexpr const char* kOpName = "group_norm";

/// The tensors and attributes in descriptor (and C++ API) order.
enum Tensor : int { kX = 0, kGamma, kBeta, kOut, kMean, kRstd, kNumTensors };
enum Attr : int { kNumGroups = 0, kEps };

/// The two memory layouts the kernels read and write directly: x and out both dense row-major ([N, C, HxW]) or
/// both channels-last ([N, HxW, C]). Any other layout goes through dense copies.
enum class Layout : uint8_t { kNCHW, kNHWC };

/// The shape of a GroupNorm-family call (shared with GroupNormBackward): [N, C, HxW] in `layout`, `groups`
/// groups of C / groups channels.
struct Shape {
  DType dtype = DType::kFloat32;
  Layout layout = Layout::kNCHW;
  int64_t n = 0, c = 0, hw = 0, groups = 0;
  int64_t cpg() const { return groups ? c / groups : 0; }
  int64_t numel() const { return n * c * hw; }
};

/// A validated call as the kernel sees it.
struct Args : Shape {
  const void* x = nullptr;  ///< dense in `layout`
  void* out = nullptr;      ///< dense in `layout`
  double eps = 0;
  /// The small tensors, any strides; gamma/beta may be none (1 and 0). Read and written element by element.
  TensorView gamma, beta, mean, rstd;
};

/// All validation (docs/semantics.md); reads and writes no tensor data. Any strides are accepted; `args`
/// describes the views as given (the layout is decided by prepare).
Status check(const TensorView* t, const ops::Attrs& a, Args* args);

/// How a call is split (plain data: a function of the shape, the layout and the thread count, and for stream_output of
/// the output's address modulo 64).
struct Plan {
  int num_threads = 1;
  /// Work units: NCHW one per group (n, g); NHWC one per sample and chunk of chunk_groups whole groups.
  int64_t units = 0;
  int64_t chunk_groups = 1;  ///< NHWC: groups per chunk (the columns a unit reads, in whole groups)
  /// Scratch per thread (bytes, 64-byte multiples): lane accumulators and per-channel constants.
  uint64_t scratch_bytes = 0;
  /// 2 * C doubles (gamma, beta) + 2 * N * groups doubles (mean, rstd) + num_threads * scratch_bytes
  uint64_t workspace_bytes = 0;
  /// out written with non-temporal stores (row-major, or channels-last chunks of whole rows): larger than the caches
  /// it could stay in (detail::stream_output_min_bytes), so caching it would only cost a read-for-ownership per line
  /// and evict x; not for short row-major rows off their lines (kShortRowBytes).
  bool stream_output = false;
  /// Software prefetch ahead of the row-major statistics passes and of channels-last output passes over whole rows
  /// (detail::software_prefetch; the bits do not depend on it).
  bool prefetch = false;
  /// Channels-last column sums: the order of their steps and their prefetch (detail::column_walk; the bits depend on
  /// neither).
  detail::ColumnWalk column_walk;
  /// Row-major: each group's output written while the next group's statistics pass reads that group in (the
  /// thread's groups in order), so that the stores to memory overlap the loads from it (Units::pipeline; the bits
  /// do not depend on it). Channels-last (streamed float32 chunks of whole rows): a unit's output rows written
  /// beside the next unit's column sums, one block of rows at a time.
  bool pipeline = false;
  /// Row-major pipeline: the output follows the statistics in bursts of this many of their steps
  /// (detail::overlap_burst_steps; the bits do not depend on it).
  int pipeline_burst = 1;
  /// Row-major: the statistics take two channels at once (CanonRowSumsPair) where x fits the writing threads' L2s
  /// (detail::l2_cache_bytes), so is likely still in cache: there they measured faster, from memory slower (the bits
  /// do not depend on it; docs/performance.md, Zen 5).
  bool pair_rows = false;
};

Plan make_plan(const Args& a, const Context& ctx);

/// Groups per channels-last work unit (shared with GroupNormBackward): as many as possible, so that a unit
/// reads whole rows, but no more than 1024 channels (its lane accumulators stay in L2) and few enough that the
/// N samples give every thread a unit; rounded down to a multiple of 16 channels where the group size allows.
/// The results do not depend on it (per-channel canonical sums).
int64_t channels_last_chunk(int64_t n, int64_t cpg, int64_t groups, int threads);

/// The work units of the GroupNorm family (shared with GroupNormBackward): row-major one per group (n, g),
/// channels-last one per sample and chunk of chunk_groups whole groups (channels_last_chunk), `cols` channels wide;
/// `threads` is the Context's count, 1 below the parallel grain. `stream` says whether an output of the x's size is
/// streamed: from detail::stream_output_min_bytes(the threads that write, at most one a unit), and channels-last only
/// for chunks of whole rows (a narrower chunk's rows would leave partial lines to the write-combining buffers; strips
/// of whole lines, 8 of 32 groups, measured slower too: docs/performance.md, "Streamed outputs from the L2 size").
/// `pipeline`: the row-major groups, or a thread's channels-last units, are pipelined (Plan::pipeline): streamed
/// float32 outputs where detail::overlap_passes says it pays for the `inputs` x-sized tensors the statistics pass reads
/// (GroupNorm 1: x; GroupNormBackward 2: x and dy). `prefetched_pipeline`: the same beyond that limit where
/// detail::overlap_prefetched_passes says the overlap pays with the statistics pass's prefetch on (row-major only). The
/// half types' passes are bound by their conversions, and overlapping them measured slower (docs/performance.md,
/// "Overlapped passes").
struct Units {
  int threads = 1;
  int writers = 1;  ///< threads that write the output: min(threads, units), at least 1
  int64_t units = 0, chunk_groups = 1, cols = 0;
  bool stream = false, pipeline = false, prefetched_pipeline = false;
};
/// Not streamed either: row-major rows of at most kShortRowBytes that do not all start on a line (`out`, the output's
/// address, off a line, or rows that are not whole lines). Their first and last lines take ordinary stores beside the
/// streamed ones, and at that length they cost more than streaming saves (AMD Zen 4, one thread, float32: GroupNorm
/// [8, 1280, 8, 8] with the output 16 bytes into its page 796 us streamed, 192 not, [128, 1280, 8, 8] 9.87 -> 4.40 ms;
/// [8, 1280, 7, 7] on a line 430 -> 196 us, [128, 1280, 7, 7] 5.49 -> 3.63 ms; GroupNormBackward [8, 1280, 7, 7] 477 ->
/// 268 us, [128, 1280, 7, 7] 9.73 -> 8.24 ms; docs/performance.md, "Zen 4, a fifth session"). Their passes are then not
/// overlapped either (`pipeline` needs a streamed output); those figures include that, and CPUs other than Zen 4 were
/// not measured. `out` is where the kernel writes (nullptr for a packed output, whose copy is at a 64-byte offset of
/// the workspace).
inline constexpr uint64_t kShortRowBytes = 256;
Units split_units(const Shape& s, const Context& ctx, int inputs, const void* out);

/// A channels-last unit u (shared with GroupNormBackward): sample n, groups [g0, g1), `cols` channels from c0, every
/// HxW row.
struct Chunk {
  int64_t n = 0, g0 = 0, g1 = 0, c0 = 0;
  size_t cols = 0;
};
inline Chunk chunk_of(const Shape& s, int64_t chunk_groups, int64_t u) {
  const int64_t chunks = (s.groups + chunk_groups - 1) / chunk_groups;
  Chunk k;
  k.n = u / chunks;
  k.g0 = (u % chunks) * chunk_groups;
  k.g1 = std::min(s.groups, k.g0 + chunk_groups);
  k.c0 = k.g0 * s.cpg();
  k.cols = static_cast<size_t>((k.g1 - k.g0) * s.cpg());
  return k;
}

/// round up to a multiple of 64 bytes (workspace and scratch pieces start on cache lines)
inline uint64_t round64(uint64_t b) { return (b + 63) / 64 * 64; }

/// The bytes of the channels-last column sums' lane accumulators for units of `cols` channels (shared with
/// GroupNormBackward; detail::canon_column_acc_doubles), the first piece of a thread's scratch.
inline uint64_t acc_bytes(uint64_t cols) {
  return round64(detail::canon_column_acc_doubles(static_cast<size_t>(cols)) * 8);
}

/// A GroupNorm thread's scratch for units of `cols` channels: the lane accumulators (acc_bytes), four per-column
/// doubles (two sums, mean, rstd), then two sets of three float32 constants (a pipelined channels-last unit's and the
/// one before it), each piece 64-byte aligned.
inline uint64_t scratch_bytes(uint64_t cols) { return acc_bytes(cols) + round64(4 * cols * 8) + 6 * round64(cols * 4); }

/// The whole workspace for `threads` threads of `scratch` bytes each (Plan::workspace_bytes).
inline uint64_t workspace_bytes(const Args& a, uint64_t threads, uint64_t scratch) {
  return round64(2 * static_cast<uint64_t>(a.c) * 8) + round64(2 * static_cast<uint64_t>(a.n * a.groups) * 8) +
         threads * scratch;
}

/// One group's mean and variance from the one-pass sums S1 = sum (x - K), S2 = sum (x - K)^2 over its m elements
/// (K: 0 or one of them, see unshifted_sums). ok = false when the variance is not certified within 2^-30 of its value
/// (then the kernel makes the classical second pass over (x - mean)^2); mean is right either way.
struct Moments {
  double mean = 0, var = 0;
  bool ok = false;
};
Moments one_pass_moments(double k, double s1, double s2, double m);

/// Whether every group of m elements takes K = 0 (the sums of x and x^2, exact terms; see group_norm_plan.cpp): where
/// the certificate accepts |mean| up to 16 standard deviations, m <= 174,018.
bool unshifted_sums(double m);

/// For a larger group: whether kShiftSamples of its elements (v, spread over it: group_shift) put F = 1 + mean^2 / var
/// within a quarter of what the certificate accepts for m elements, so that K = 0 is likely certified.
inline constexpr int kShiftSamples = 16;
bool unshifted_sample(double m, const double* v);

/// The shift K of a group of m elements whose element j (in [N, C, HxW] order within the group) is at(j) (a double):
/// 0 where unshifted_sums(m) or unshifted_sample(m, elements (2i + 1) m / 32, i < 16), else at(0). The same elements
/// in every layout, so the same K.
template <class At>
double group_shift(int64_t m, const At& at) {
  if (unshifted_sums(static_cast<double>(m))) return 0.0;
  double v[kShiftSamples];
  for (int i = 0; i < kShiftSamples; ++i) v[i] = at((2 * i + 1) * m / (2 * kShiftSamples));
  return unshifted_sample(static_cast<double>(m), v) ? 0.0 : at(0);
}

/// The descriptor fields GroupNorm and GroupNormBackward share (category, ranks, CLI and test shapes).
void describe_family(ops::OpDesc& o);

/// CANN's scalar shape arguments {N, C, HxW, group} of an [N, C, *] shape.
std::vector<int64_t> acl_shape_ints(const std::vector<int64_t>& x, int64_t groups);

/// HxW of a view: the product of its dims after the first two (1 below rank 3); false when it overflows int64,
/// which a view with a zero dim elsewhere can reach. For the C API's N, C, HxW rules.
bool trailing_product(const TensorView& t, int64_t* hw);

/// Runs the kernel (no validation). `workspace`: plan.workspace_bytes, 64-byte aligned.
void run(const Plan& p, const Args& a, void* workspace);

/// check -> plan -> the kernel closure (ops::PrepareFn).
Status prepare(const TensorView* t, const ops::Attrs& a, const Context& ctx, ops::Prepared* out);

/// Constant c of the bounds (docs/semantics.md): out within ulp_T(ref) + c * 2^-24 * (|xhat * gamma| + |beta|),
/// mean within ulp(ref) + c * 2^-24 * mean(|x|), rstd within ulp(ref) + c * 2^-24 * rstd. The kernel computes
/// out = (x - mean_hi) * a + b in float32 with mean_hi = float(mean), a = float(rstd * gamma) and
/// b = float(beta - (mean - mean_hi) * a): x - mean_hi is exact by Sterbenz's lemma when x is near the mean (and
/// otherwise rounds once relative to |x - mean_hi| ~ |x - mean|), a carries one rounding, the product and the
/// sum one each, and b one relative to |beta| + u32 |mean - mean_hi| |a| (the folded low part, at most u32 of
/// |xhat * gamma|'s scale): at most 4 * u32 relative to the terms; mean and rstd are float64 (their errors are
/// far below u32). c = 8 leaves margin for products near the subnormal range.
inline constexpr double kBoundC = 8.0;

/// Compares after's out, mean and rstd with the float64 reference computed from before's inputs (two passes in
/// float64; every sample-th group and the last one). NaN must meet NaN.
detail::VerifyReport verify(const ops::Problem& before, const ops::Problem& after, int64_t sample);

}  // namespace nnops::gn
