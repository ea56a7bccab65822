// GroupNorm CPU kernels: Highway, one source compiled for every target, picked at run time.
//
// Two passes over each group: the per-channel canonical sums (src/core/canonical_sum-inl.h) of x - K and
// (x - K)^2 for a shift K (0 where x and x^2, exact terms, are likely certified: gn::group_shift),
// whose sums over the group's channels in channel order give mean and variance (see gn::one_pass_moments:
// certified, with a classical second pass over (x - mean)^2 where it is not); then
// out = (x - mean_hi) * a_c + b_c in float32 (see ChannelConsts). Everything is float64 up to the constants; no
// fused multiply-add but fma(t, 1, acc) (= t + acc exactly; AccAdd) and fma(x, x, acc) (= x * x + acc exactly, the
// square of a stored element being exact in float64; SquareTerms), so every target computes the same bits.
//
// NB: why the results are the same bits in every layout, on every target and for any thread count. The
// per-channel sums are canonical: the row-major kernel sums a channel's contiguous HxW elements with
// CanonRowSums, the channels-last kernel sums each of a chunk's columns over the HxW rows with
// CanonColumnSums, and the two give identical bits by construction; vector width does not enter. The group
// statistics then add the channel sums in channel order, and the output is elementwise. A thread always owns
// whole groups (row-major: one group per unit; channels-last: a chunk of whole groups of one sample).
//
// Row-major groups of a streamed float32 output are pipelined on Intel CPUs (gn::Plan::pipeline): a group's output
// pass runs beside the next group's statistics pass (PipelineGroups, src/core/row_map-inl.h), the same operations.
//
// Channels-last chunks: a unit reads the columns of chunk_groups whole groups (a multiple of 16 channels when
// the group size allows, so that rows are whole vectors) over all HxW rows, twice: the second read finds the
// chunk in L2 only when it is small; the plan prefers whole rows (see gn::channels_last_chunk). A thread's streamed
// float32 units are pipelined where the CPU gains (gn::Plan::pipeline): unit u's output rows beside unit u + 1's
// column sums, one block of rows after another (ChunksNHWC), the same operations.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "src/core/check.hpp"
#include "src/core/layout.hpp"
#include "src/core/parallel.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/norm/group_norm/group_norm_cpu.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/canonical_sum-inl.h"
#include "src/core/row_map-inl.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {
namespace group_norm_kernel {

using gn::Args;
using gn::Layout;
using gn::Plan;

// The float32 constants of the output pass for one channel: out = (x - mean_hi) * a + b, with mean_hi the
// float32 rounding of the float64 mean, a = rstd * gamma rounded to float32, and b = beta - (mean - mean_hi) * a
// (in float64, then rounded): the same as (x - mean) * a + beta with the mean's low part folded into the shift.
// x - mean_hi is exact near the mean (Sterbenz), so |mean| >> std costs no accuracy.
struct ChannelConsts {
  float mean_hi, a, b;
};

ChannelConsts Consts(double mean, double rstd, double gamma, double beta) {
  ChannelConsts k;
  k.mean_hi = static_cast<float>(mean);
  k.a = static_cast<float>(rstd * gamma);
  k.b = static_cast<float>(beta - (mean - static_cast<double>(k.mean_hi)) * static_cast<double>(k.a));
  // NaN constants as the canonical NaN, for Bf16PairMap's rounding (a NaN's payload is left open).
  k.mean_hi = CanonicalNaN(k.mean_hi);
  k.a = CanonicalNaN(k.a);
  k.b = CanonicalNaN(k.b);
  return k;
}

// out = (x - mean_hi) * a + b: the same operations in every form below (the add through AccAdd, the same bits on
// the FMA pipes where that balances the pipes; `one` from AccOne).
template <class DF>
HWY_INLINE hn::Vec<DF> Normalize(DF /*df*/, hn::Vec<DF> v, hn::Vec<DF> mh, hn::Vec<DF> a, hn::Vec<DF> b,
                                 hn::Vec<DF> one) {
  return AccAdd(b, hn::Mul(hn::Sub(v, mh), a), one);
}

// One contiguous row (a channel of the row-major layout) with the channel's constants: MapRow's elementwise form
// (src/core/row_map-inl.h), the constants built inside from the scalars it holds. NaNs here come from bfloat16 x,
// the default NaN, or the constants, whose NaNs Consts made canonical (as Bf16PairMap's rounding needs).
struct NormalizeFn {
  ChannelConsts k;
  template <class DF, class Body>
  HWY_INLINE auto With(DF df, const Body& body) const {
    const auto mh = hn::Set(df, k.mean_hi), a = hn::Set(df, k.a), b = hn::Set(df, k.b), one = AccOne(df);
    return body([&](auto v) HWY_ATTR NNOPS_LAMBDA_INLINE { return Normalize(df, v, mh, a, b, one); });
  }
};

// Columns [from, cols) of a row of a channels-last chunk (those before `from` are written: JoinedRows), each with its
// constants in the three arrays. `stream`: non-temporal stores after a peel to their alignment (the chunk is whole
// rows, so the stores cover whole lines). `pairs_from` (ColumnPairsFrom): bfloat16 pairs from that column, the
// constants in their order there.
template <typename T>
void NormalizeColumns(const T* HWY_RESTRICT x, T* HWY_RESTRICT out, size_t from, size_t cols, const float* mh,
                      const float* a, const float* b, bool stream, bool prefetch, size_t pairs_from) {
  (void)pairs_from;  // bfloat16 only
  const hn::ScalableTag<float> df;
  const auto one = AccOne(df);
  // The head and tail (PartialColumns): r columns from k as vectors, or one column with the vectors' float32
  // operations.
  auto partial = [&](size_t k, size_t r) HWY_ATTR {
    return Normalize(df, LoadF32N(df, x + k, r), LoadF32N(df, mh + k, r), LoadF32N(df, a + k, r),
                     LoadF32N(df, b + k, r), one);
  };
  auto column = [&](size_t c) { FromFloat((static_cast<float>(ToDouble(x + c)) - mh[c]) * a[c] + b[c], out + c); };
  size_t c = PartialColumns(out, from, std::max(from, StreamHead(out, cols, stream)), partial, column);
#if HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    if (c == pairs_from) {
      c = Bf16PairMapAt(
          df, out, c, cols, stream,
          [&](size_t k, auto v) HWY_ATTR NNOPS_LAMBDA_INLINE {
            if (prefetch) PrefetchStream(x + k, hn::Lanes(df) * sizeof(T));
            return Normalize(df, v, hn::LoadU(df, mh + k), hn::LoadU(df, a + k), hn::LoadU(df, b + k), one);
          },
          x);
    }
  }
#endif
  c = F32Map(df, out, c, cols, stream, [&](size_t k) HWY_ATTR {
    if (prefetch) PrefetchStream(x + k, hn::Lanes(df) * sizeof(T));
    return Normalize(df, LoadF32(df, x + k), hn::LoadU(df, mh + k), hn::LoadU(df, a + k), hn::LoadU(df, b + k), one);
  });
  PartialColumns(out, c, cols, partial, column);
}

// A group's sum from its channels' sums, channels in order.
double GroupSum(const double* s, int64_t cpg) {
  double total = 0;
  for (int64_t c = 0; c < cpg; ++c) total += s[c];
  return total;
}

// Group q's statistics into the workspace's mean and rstd arrays (stored to the tensors after the kernel).
void StoreStats(const Args& a, double* stats, int64_t q, double mean, double rstd) {
  stats[q] = mean;
  stats[a.n * a.groups + q] = rstd;
}

// NB: both statistics in one pass, with a certified fallback: see gn::one_pass_moments (group_norm_plan.cpp)
// for the error argument. K is 0 or the group's first element (channel c0, position 0: the same element in every
// layout), by the group's size and, in groups beyond 174,018 elements, 16 of its elements (gn::group_shift); the
// decisions depend on those and on the canonical sums only, so they are the same in every layout, on every target
// and for every thread count.
// The canonical sums of x - K and (x - K)^2 (Sub then Mul, never fused).
struct ShiftedTerms {
  double k;
  template <class D, class V>
  HWY_INLINE void operator()(D d, V x, V, V* s0, V* s1) const {
    const V dv = hn::Sub(x, hn::Set(d, k));
    *s0 = dv;
    *s1 = hn::Mul(dv, dv);
  }
  HWY_INLINE void operator()(double x, double, double* s0, double* s1) const {
    const double dv = x - k;
    *s0 = dv;
    *s1 = dv * dv;
  }
};

// The same terms for K = 0 (gn::group_shift): x and x^2, exact, the square accumulated by one fused multiply-add
// (kSquareOfFirst, src/core/canonical_sum-inl.h); the same bits as ShiftedTerms{0}. For the row sums and, with the
// column index they pass, the column sums.
struct SquareTerms {
  static constexpr bool kSquareOfFirst = true;
  template <class D, class V>
  HWY_INLINE void operator()(D, V x, V, V* s0, V* s1) const {
    *s0 = x;
    *s1 = hn::Mul(x, x);
  }
  HWY_INLINE void operator()(double x, double, double* s0, double* s1) const {
    *s0 = x;
    *s1 = x * x;
  }
  template <class D, class V>
  HWY_INLINE void operator()(D d, V x, V y, size_t, V* s0, V* s1) const {
    (*this)(d, x, y, s0, s1);
  }
  HWY_INLINE void operator()(double x, double y, size_t, double* s0, double* s1) const { (*this)(x, y, s0, s1); }
};

// The statistics' pipe split (CanonRowSums' kPipes): float32 leaves two of the eight accumulations on the add
// pipes; a half type's widening adds an operation there per vector, so all eight go to the FMA pipes (float16
// [1, 64, 1536] 0.317 -> 0.310 ns/element, bfloat16 0.397 -> 0.391).
template <typename T>
constexpr Pipes kStatPipes = std::is_same_v<T, float> ? Pipes::kHalfOfFirst : Pipes::kFma;

// A row-major group's statistics (its mean and rstd, also into the workspace), CanonRowSums' side work of row c
// from side_of(c) (PipelineGroups).
struct GroupStats {
  double mean, rstd;
  int64_t c0;  // the group's first channel
};

template <typename T, class SideOf>
GroupStats GroupNCHWStats(const Args& a, int64_t q, double* stats, double* scratch, bool prefetch, bool pair,
                          const SideOf& side_of) {
  const int64_t cpg = a.cpg();
  const size_t hw = static_cast<size_t>(a.hw);
  const double m = static_cast<double>(cpg * a.hw);
  const T* x = static_cast<const T*>(a.x) + q * cpg * a.hw;
  double* s1 = scratch;
  double* s2 = scratch + cpg;
  const double k = gn::group_shift(cpg * a.hw, [x](int64_t j) { return ToDouble(x + j); });
  auto channel_sums = [&](const auto& terms) {
    int64_t c = 0;
    if constexpr (std::is_same_v<std::decay_t<decltype(side_of(c))>, NoSide>) {
      for (; pair && c + 2 <= cpg; c += 2) {  // two channels at once (the same bits; see GroupsNCHW)
        const T* x0 = x + c * hw;
        const T* x1 = x0 + hw;
        double o0[2], o1[2];
        CanonRowSumsPair<2, kStatPipes<T>>(x0, x0, x1, x1, hw, terms, terms, o0, o1, prefetch);
        s1[c] = o0[0], s2[c] = o0[1], s1[c + 1] = o1[0], s2[c + 1] = o1[1];
      }
    }
    for (; c < cpg; ++c) {
      double o[2];
      CanonRowSums<2, kStatPipes<T>>(x + c * hw, x + c * hw, hw, terms, terms, o, prefetch, side_of(c));
      s1[c] = o[0];
      s2[c] = o[1];
    }
  };
  if (k == 0) {
    channel_sums(SquareTerms{});
  } else {
    channel_sums(ShiftedTerms{k});
  }
  gn::Moments mo = gn::one_pass_moments(k, GroupSum(s1, cpg), GroupSum(s2, cpg), m);
  if (!mo.ok) {  // the second pass of the classical algorithm
    const double mean = mo.mean;
    auto vsq = [mean](auto d, auto v, auto, auto* s0, auto*) HWY_ATTR {
      const auto dv = hn::Sub(v, hn::Set(d, mean));
      *s0 = hn::Mul(dv, dv);
    };
    auto ssq = [mean](double v, double, double* s0, double*) {
      const double dv = v - mean;
      *s0 = dv * dv;
    };
    for (int64_t c = 0; c < cpg; ++c) CanonRowSums<1>(x + c * hw, x + c * hw, hw, vsq, ssq, &s2[c]);
    mo.var = GroupSum(s2, cpg) / m;
  }
  const GroupStats st{mo.mean, 1.0 / std::sqrt(mo.var + a.eps), q % a.groups * cpg};
  StoreStats(a, stats, q, st.mean, st.rstd);
  return st;
}

// A thread's row-major groups [q0, q1) (see PipelineGroups for `pipeline`). `pair` (Plan::pair_rows): a group's
// statistics take two channels at once (CanonRowSumsPair), for x that fits the threads' L2s and so is likely in
// cache: on Zen 5 GroupNorm float32 [1, 64, 1536] 12.0-12.4 -> 11.2-11.3 us, but from memory [103, 320, 64, 64]
// 32-34 -> 24-25 GB/s and float16 29 -> 16 (two rows' streams 16 KiB apart read slower than one), and the UNet
// workload on 2 threads (its layers' x from memory) 17.2-17.7 -> 20.2 ms when paired up to half the L3.
// GroupNormBackward's pass 1 (four streams) measured no faster paired in cache (docs/performance.md).
template <typename T>
void GroupsNCHW(const Args& a, int64_t q0, int64_t q1, const double* gamma, const double* beta, double* stats,
                double* scratch, bool stream, bool prefetch, bool pipeline, size_t burst, bool pair) {
  const int64_t cpg = a.cpg();
  const size_t hw = static_cast<size_t>(a.hw);
  auto group_stats = [&](int64_t q, const auto& side_of) {
    return GroupNCHWStats<T>(a, q, stats, scratch, prefetch, pair, side_of);
  };
  auto row_of = [&](int64_t q, int64_t c, const GroupStats& st) {
    const int64_t ch = st.c0 + c, offset = (q * cpg + c) * a.hw;
    const NormalizeFn f{Consts(st.mean, st.rstd, gamma[ch], beta[ch])};
    return MakeSideRow(static_cast<T*>(a.out) + offset, hw, stream, burst, f, static_cast<const T*>(a.x) + offset);
  };
  PipelineGroups(q0, q1, cpg, pipeline, group_stats, row_of);
}

using gn::Chunk;

// The float32 constants of a unit's columns (mean_hi, a, b; see ChannelConsts), `cmax` floats each, and where its
// rows' bfloat16 pairs start (ColumnPairsFrom: the constants are in their order from there); where its rows are
// joined (JoinHead, else 0), the head they share and the constants of a joining line (JoinConsts: mean_hi, a, b,
// kJoinMax floats each).
struct ColumnConsts {
  float *mh, *a, *b;
  size_t* pairs_from;
  size_t* join;
  float* line;
};

// A unit's output rows: `stream` when the plan streams and the unit is whole rows.
template <typename T>
T* UnitOut(const Args& a, const Chunk& ch) {
  return static_cast<T*>(a.out) + ch.n * a.hw * a.c + ch.c0;
}
HWY_INLINE bool UnitStreams(const Args& a, const Plan& p, const Chunk& ch) {
  return p.stream_output && ch.cols == static_cast<size_t>(a.c);
}

// A unit's statistics (into the workspace's stats and the constants k), its column sums' side work from side(r0, r1)
// (CanonColumnSums: before each block of rows).
template <typename T, class Side>
void ChunkNHWCStats(const Args& a, const Plan& p, const Chunk& ch, const double* gamma, const double* beta,
                    double* stats, unsigned char* scratch, const ColumnConsts& kc, Side&& side) {
  const int64_t cpg = a.cpg(), g0 = ch.g0, g1 = ch.g1, c0 = ch.c0;
  const size_t cols = ch.cols, stride = static_cast<size_t>(a.c);
  const size_t rows = static_cast<size_t>(a.hw);
  const size_t cmax = static_cast<size_t>(p.chunk_groups * cpg);
  const double m = static_cast<double>(cpg * a.hw);
  const T* x = static_cast<const T*>(a.x) + ch.n * a.hw * a.c + c0;
  // Scratch: lane accumulators; per column the two sums, the shift (then the mean) and rstd.
  double* acc = reinterpret_cast<double*>(scratch);
  double* s1 = reinterpret_cast<double*>(scratch + gn::acc_bytes(cmax));
  double *s2 = s1 + cmax, *cmean = s2 + cmax, *crstd = cmean + cmax;

  // The one-pass sums of every column with its group's shift K (see gn::one_pass_moments; gn::group_shift reads the
  // row-major kernel's elements, element j of a group at row j mod HxW of its channel j / HxW). Where every K is 0:
  // x and x^2 (SquareTerms); a column whose K is 0 gives the same bits either way.
  bool unshifted = true;
  for (int64_t g = g0; g < g1; ++g) {
    const T* xg = x + (g - g0) * cpg;  // row 0, the group's first channel
    const int64_t hw = a.hw;
    const double k = gn::group_shift(cpg * hw, [xg, hw, stride](int64_t j) {
      return ToDouble(xg + static_cast<size_t>(j % hw) * stride + static_cast<size_t>(j / hw));
    });
    unshifted = unshifted && k == 0;
    for (int64_t c = 0; c < cpg; ++c) cmean[(g - g0) * cpg + c] = k;
  }
  if (unshifted) {
    CanonColumnSums<2, kStatPipes<T>>(x, x, stride, rows, cols, SquareTerms{}, SquareTerms{}, acc, s1, s2,
                                      p.column_walk, side);
  } else {
    auto vsh = [cmean](auto d, auto v, auto, size_t c, auto* s0, auto* s1v) HWY_ATTR {
      const auto dv = hn::Sub(v, hn::LoadU(d, cmean + c));
      *s0 = dv;
      *s1v = hn::Mul(dv, dv);
    };
    auto ssh = [cmean](double v, double, size_t c, double* s0, double* s1v) {
      const double dv = v - cmean[c];
      *s0 = dv;
      *s1v = dv * dv;
    };
    CanonColumnSums<2, kStatPipes<T>>(x, x, stride, rows, cols, vsh, ssh, acc, s1, s2, p.column_walk, side);
  }
  bool all_ok = true;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t k = (g - g0) * cpg;
    const gn::Moments mo = gn::one_pass_moments(cmean[k], GroupSum(s1 + k, cpg), GroupSum(s2 + k, cpg), m);
    all_ok = all_ok && mo.ok;
    for (int64_t c = 0; c < cpg; ++c) {
      cmean[k + c] = mo.mean;
      crstd[k + c] = mo.ok ? mo.var : -1.0;  // the variance for now; -1: a second pass is needed
    }
  }
  if (!all_ok) {  // the classical second pass, for the groups that need it (sums of the others are not used)
    auto vsq = [cmean](auto d, auto v, auto, size_t c, auto* s0, auto*) HWY_ATTR {
      const auto dv = hn::Sub(v, hn::LoadU(d, cmean + c));
      *s0 = hn::Mul(dv, dv);
    };
    auto ssq = [cmean](double v, double, size_t c, double* s0, double*) {
      const double dv = v - cmean[c];
      *s0 = dv * dv;
    };
    CanonColumnSums<1>(x, x, stride, rows, cols, vsq, ssq, acc, s2, nullptr, p.column_walk);
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t k = (g - g0) * cpg;
      if (crstd[k] >= 0) continue;
      const double var = GroupSum(s2 + k, cpg) / m;
      for (int64_t c = 0; c < cpg; ++c) crstd[k + c] = var;
    }
  }
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t k = (g - g0) * cpg;
    const double rstd = 1.0 / std::sqrt(crstd[k] + a.eps);
    StoreStats(a, stats, ch.n * a.groups + g, cmean[k], rstd);
    for (int64_t c = 0; c < cpg; ++c) crstd[k + c] = rstd;
  }
  for (size_t c = 0; c < cols; ++c) {
    const ChannelConsts k = Consts(cmean[c], crstd[c], gamma[c0 + c], beta[c0 + c]);
    kc.mh[c] = k.mean_hi;
    kc.a[c] = k.a;
    kc.b[c] = k.b;
  }
  const T* out = UnitOut<T>(a, ch);
  const bool streams = UnitStreams(a, p, ch);
  *kc.join = JoinLayout(out, cols, stride, streams, kc.line, kc.mh, kc.a, kc.b);
  *kc.pairs_from = ColumnPairsFrom(out, cols, stride, streams);
  ColumnPairsLayout(*kc.pairs_from, cols, kc.mh, kc.a, kc.b);
}

// Rows [r0, r1) of a unit's output.
template <typename T>
void ChunkNHWCRows(const Args& a, const Plan& p, const Chunk& ch, const ColumnConsts& kc, size_t r0, size_t r1) {
  const size_t stride = static_cast<size_t>(a.c);
  const T* x = static_cast<const T*>(a.x) + ch.n * a.hw * a.c + ch.c0;
  T* out = UnitOut<T>(a, ch);
  const bool stream = UnitStreams(a, p, ch);
  // Whole rows are one stream, which the prefetch runs ahead of (from L3, where the statistics pass left it).
  const bool prefetch = p.prefetch && ch.cols == stride;
  auto row = [&](size_t r, size_t from, size_t to) {
    NormalizeColumns(x + r * stride, out + r * stride, from, to, kc.mh, kc.a, kc.b, stream, prefetch, *kc.pairs_from);
  };
  auto line = [&](size_t r, size_t c) {
    const hn::ScalableTag<float> df;
    const auto one = AccOne(df);
    const T* xl = x + r * stride + c;
    const float* k = kc.line;
    StreamLine(out + r * stride + c, [&](size_t j) HWY_ATTR {
      return Normalize(df, LoadF32(df, xl + j), hn::LoadU(df, k + j), hn::LoadU(df, k + kJoinMax + j),
                       hn::LoadU(df, k + 2 * kJoinMax + j), one);
    });
  };
  JoinedRows<T>(r0, r1, static_cast<size_t>(a.hw), ch.cols, *kc.join, row, line);
}

// A thread's channels-last units [u0, u1), pipelined or not (PipelineChunks, src/core/row_map-inl.h).
template <typename T>
void ChunksNHWC(const Args& a, const Plan& p, int64_t u0, int64_t u1, const double* gamma, const double* beta,
                double* stats, unsigned char* scratch, bool pipeline) {
  const size_t cmax = static_cast<size_t>(p.chunk_groups * a.cpg()), rows = static_cast<size_t>(a.hw);
  // The constants' two sets after the accumulators and the per-column doubles (gn::scratch_bytes).
  float* f = reinterpret_cast<float*>(scratch + gn::acc_bytes(cmax) + gn::round64(4 * cmax * 8));
  const size_t fc = gn::round64(cmax * 4) / 4;
  size_t pairs_from[2] = {kNoPairs, kNoPairs}, join[2] = {0, 0};
  alignas(64) float line[2][3 * kJoinMax];
  const ColumnConsts kc[2] = {{f, f + fc, f + 2 * fc, &pairs_from[0], &join[0], line[0]},
                              {f + 3 * fc, f + 4 * fc, f + 5 * fc, &pairs_from[1], &join[1], line[1]}};
  auto unit_stats = [&](int64_t u, int k, auto&& side) HWY_ATTR {
    ChunkNHWCStats<T>(a, p, gn::chunk_of(a, p.chunk_groups, u), gamma, beta, stats, scratch, kc[k], side);
  };
  auto unit_rows = [&](int64_t u, int k, size_t r0, size_t r1)
                       HWY_ATTR { ChunkNHWCRows<T>(a, p, gn::chunk_of(a, p.chunk_groups, u), kc[k], r0, r1); };
  PipelineChunks(u0, u1, rows, pipeline, unit_stats, unit_rows);
}

template <typename T>
void RunT(const Plan& p, const Args& a, unsigned char* ws) {
  // Workspace: gamma and beta (C doubles each), mean and rstd (N x groups each), then each thread's scratch.
  const uint64_t C = static_cast<uint64_t>(a.c), NG = static_cast<uint64_t>(a.n * a.groups);
  double* gamma = reinterpret_cast<double*>(ws);
  double* beta = gamma + C;
  double* stats = reinterpret_cast<double*>(ws + gn::round64(2 * C * 8));
  detail::load_doubles_or(a.gamma, a.c, 1.0, gamma);
  detail::load_doubles_or(a.beta, a.c, 0.0, beta);
  unsigned char* scratch0 = reinterpret_cast<unsigned char*>(stats) + gn::round64(2 * NG * 8);
  detail::parallel_region(p.num_threads, [&](int tid, int nt) HWY_ATTR {
    unsigned char* scratch = scratch0 + static_cast<uint64_t>(tid) * p.scratch_bytes;
    const auto [u0, u1] = detail::split_range(p.units, nt, tid);
    if (a.layout == Layout::kNCHW) {
      GroupsNCHW<T>(a, u0, u1, gamma, beta, stats, reinterpret_cast<double*>(scratch), p.stream_output, p.prefetch,
                    p.pipeline, static_cast<size_t>(p.pipeline_burst), p.pair_rows);
    } else {
      ChunksNHWC<T>(a, p, u0, u1, gamma, beta, stats, scratch, p.pipeline);
    }
    if (p.stream_output) hwy::FlushStream();  // order this thread's non-temporal stores before the join
  });
  detail::store_doubles(stats, a.mean);
  detail::store_doubles(stats + NG, a.rstd);
}

}  // namespace group_norm_kernel

void GroupNormRun(const gn::Plan& p, const gn::Args& a, unsigned char* ws) {
  switch (a.dtype) {
    case DType::kFloat32:
      return group_norm_kernel::RunT<float>(p, a, ws);
    case DType::kFloat16:
      return group_norm_kernel::RunT<hwy::float16_t>(p, a, ws);
    case DType::kBFloat16:
      return group_norm_kernel::RunT<hwy::bfloat16_t>(p, a, ws);
  }
}
}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nnops {
namespace gn {
HWY_EXPORT(GroupNormRun);

void run(const Plan& p, const Args& a, void* workspace) {
  detail::init_dispatch();
  // Not NNOPS_DYNAMIC_DISPATCH: on AMD Zen 4 this operator stays on AVX-512 for float32 too, where its statistics
  // interleave two rows (CanonRowSumsPair, which needs AVX-512's registers) and the UNet workload measured faster
  // (forward, one thread, 30.5-31.7 ms against 32.8-33.0 on AVX2; docs/performance.md, "AMD Zen 4 with AVX-512").
  HWY_DYNAMIC_DISPATCH(GroupNormRun)(p, a, static_cast<unsigned char*>(workspace));
}
}  // namespace gn
}  // namespace nnops
#endif  // HWY_ONCE
