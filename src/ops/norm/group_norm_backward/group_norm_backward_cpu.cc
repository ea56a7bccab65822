// GroupNormBackward CPU kernels: Highway, one source compiled for every target, picked at run time.
//
// Per group (n, g), pass 1 forms the per-channel canonical sums (src/core/canonical_sum-inl.h)
//   B[n, c] = sum dy,   D[n, c] = sum dy * (x - mean)        (float64; Sub then Mul, never fused)
// from which, channels in order, a = sum_c gamma_c * B and b' = sum_c gamma_c * D (so that the formula's
// b = sum dy*gamma*xhat = rstd * b'). Pass 2 writes, in float32,
//   dx = k1_c * dy - k2 - k3 * (x - mean_hi),
//   k1_c = rstd * gamma_c,  k2 = rstd * a / M - k3 * (mean - mean_hi),  k3 = rstd^3 * b' / M,
// which is rstd * (gamma*dy - (a + xhat*b) / M) regrouped. After every group: dgamma[c] = sum over n, in index
// order, of rstd[n, g] * D[n, c], and dbeta[c] = sum over n of B[n, c].
//
// NB: as in GroupNorm, the row-major kernel (CanonRowSums over a channel's HxW elements) and the channels-last
// kernel (CanonColumnSums over the rows of a chunk of whole groups) produce identical per-(n, c) sums, every
// later step is in index order or elementwise, and a thread owns whole groups: the results are the same bits
// in both layouts, on every target and for every thread count. No fused multiply-add but fma(t, +-1, acc) (= acc +- t
// exactly; AccAdd, AccSub).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "src/core/check.hpp"
#include "src/core/layout.hpp"
#include "src/core/parallel.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/norm/group_norm_backward/group_norm_backward_cpu.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/canonical_sum-inl.h"
#include "src/core/row_map-inl.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {
namespace gn_bwd_kernel {

using gn_bwd::Args;
using gn_bwd::Layout;
using gn_bwd::Plan;

// Shared arrays of a call (in the workspace, laid out as gn_bwd::workspace_bytes counts them).
struct Shared {
  const double* gamma;  // C
  const double* mean;   // N*G
  const double* rstd;   // N*G
  double* b_sum;        // N*C: sum dy
  double* d_sum;        // N*C: sum dy * (x - mean)
};

// dx = (k1 * dy - k2) - k3 * (x - mean_hi): the same operations in every form below (the first subtraction
// through AccSub, the same bits on the FMA pipes where that balances the pipes; `one` from AccOne).
template <class V>
HWY_INLINE V Dx(V dy, V x, V mh, V k1, V k2, V k3, V one) {
  return hn::Sub(AccSub(hn::Mul(k1, dy), k2, one), hn::Mul(k3, hn::Sub(x, mh)));
}

// The float32 constants of a group: mean_hi = float(mean), k3 = rstd^3 * b' / M, and k2 = rstd * a / M with the
// mean's low part folded in: k2 - k3 * (mean - mean_hi), so that k3 * (x - mean) = k3 * (x - mean_hi) - k3 *
// (mean - mean_hi). x - mean_hi is exact near the mean (Sterbenz), so |mean| >> std costs no accuracy.
struct GroupConsts {
  float mean_hi, k2, k3;
  double rstd;
};

GroupConsts Consts(double mean, double rstd, double a, double b, double m) {
  GroupConsts k;
  k.mean_hi = static_cast<float>(mean);
  k.k3 = static_cast<float>(rstd * rstd * rstd * b / m);
  k.k2 = static_cast<float>(rstd * a / m - static_cast<double>(k.k3) * (mean - static_cast<double>(k.mean_hi)));
  k.rstd = rstd;
  // NaN constants as the canonical NaN, for Bf16PairMap's rounding (a NaN's payload is left open).
  k.mean_hi = CanonicalNaN(k.mean_hi);
  k.k2 = CanonicalNaN(k.k2);
  k.k3 = CanonicalNaN(k.k3);
  return k;
}

// a and b' of one group from its channels' sums, channels in order.
void GroupSums(const double* gamma, const double* bs, const double* ds, int64_t cpg, double* a, double* b) {
  double sa = 0, sb = 0;
  for (int64_t c = 0; c < cpg; ++c) {
    sa += gamma[c] * bs[c];
    sb += gamma[c] * ds[c];
  }
  *a = sa;
  *b = sb;
}

// dx of one row-major row, MapRow's elementwise form (src/core/row_map-inl.h; dx may be dy, in place: MapRow reads
// each vector before it writes it). NaNs come from dy and x, the default NaN, or the constants, made canonical
// (Consts, above), as Bf16PairMap's rounding needs.
struct DxFn {
  float mean_hi, k1, k2, k3;
  template <class DF, class Body>
  HWY_INLINE auto With(DF df, const Body& body) const {
    const auto mh = hn::Set(df, mean_hi), vk1 = hn::Set(df, k1), vk2 = hn::Set(df, k2), vk3 = hn::Set(df, k3);
    const auto one = AccOne(df);
    return body([&](auto vdy, auto vx) HWY_ATTR NNOPS_LAMBDA_INLINE { return Dx(vdy, vx, mh, vk1, vk2, vk3, one); });
  }
};

// Columns [from, cols) of a row of a channels-last chunk (those before `from` are written: JoinedRows), per-column
// constants in the arrays. `stream`: as in MapRow (the chunk is whole rows, so the stores cover whole lines).
// `pairs_from` (ColumnPairsFrom): bfloat16 pairs from that column, the constants in their order there.
template <typename T>
HWY_INLINE void DxColumns(const T* dy, const T* HWY_RESTRICT x, T* dx, size_t from, size_t cols, const float* mh,
                          const float* k1, const float* k2, const float* k3, bool stream, bool prefetch,
                          size_t pairs_from) {
  (void)pairs_from;  // bfloat16 only
  const hn::ScalableTag<float> df;
  // The head and tail (PartialColumns): r columns from k as vectors, or one column with the vectors' float32
  // operations (dx may be dy: read, then write).
  const auto one = AccOne(df);
  auto partial = [&](size_t k, size_t r) HWY_ATTR {
    return Dx(LoadF32N(df, dy + k, r), LoadF32N(df, x + k, r), LoadF32N(df, mh + k, r), LoadF32N(df, k1 + k, r),
              LoadF32N(df, k2 + k, r), LoadF32N(df, k3 + k, r), one);
  };
  auto column = [&](size_t c) {
    const float d = static_cast<float>(ToDouble(x + c)) - mh[c];
    FromFloat((k1[c] * static_cast<float>(ToDouble(dy + c)) - k2[c]) - k3[c] * d, dx + c);
  };
  auto vec = [&](size_t c) HWY_ATTR {
    if (prefetch) {
      PrefetchStream(dy + c, hn::Lanes(df) * sizeof(T));
      PrefetchStream(x + c, hn::Lanes(df) * sizeof(T));
    }
    return Dx(LoadF32(df, dy + c), LoadF32(df, x + c), hn::LoadU(df, mh + c), hn::LoadU(df, k1 + c),
              hn::LoadU(df, k2 + c), hn::LoadU(df, k3 + c), one);
  };
  size_t c = PartialColumns(dx, from, std::max(from, StreamHead(dx, cols, stream)), partial, column);
#if HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    if (c == pairs_from) {
      c = Bf16PairMapAt(
          df, dx, c, cols, stream,
          [&](size_t k, auto vdy, auto vx) HWY_ATTR NNOPS_LAMBDA_INLINE {
            if (prefetch) {
              PrefetchStream(dy + k, hn::Lanes(df) * sizeof(T));
              PrefetchStream(x + k, hn::Lanes(df) * sizeof(T));
            }
            return Dx(vdy, vx, hn::LoadU(df, mh + k), hn::LoadU(df, k1 + k), hn::LoadU(df, k2 + k),
                      hn::LoadU(df, k3 + k), one);
          },
          dy, x);
    }
  }
#endif
  c = F32Map(df, dx, c, cols, stream, vec);  // reads each vector before writing it, as in-place dx needs
  PartialColumns(dx, c, cols, partial, column);
}

// A row-major group's pass 1 (the (n, c) sums; CanonRowSums' side work of row c from side_of(c), see
// PipelineGroups) and its dx constants.
struct GroupDx {
  GroupConsts k;
  int64_t c0;  // the group's first channel
};

template <typename T, class SideOf>
GroupDx GroupNCHWSums(const Args& a, const Plan& p, const Shared& s, int64_t q, const SideOf& side_of) {
  const int64_t cpg = a.cpg(), n = q / a.groups, g = q % a.groups, c0 = g * cpg;
  const size_t hw = static_cast<size_t>(a.hw);
  const int64_t off = (n * a.c + c0) * a.hw;
  const T* dy = static_cast<const T*>(a.dy) + off;
  const T* x = static_cast<const T*>(a.x) + off;
  const double mean = s.mean[q];
  auto vf = [mean](auto d, auto vdy, auto vx, auto* s0, auto* s1) HWY_ATTR {
    *s0 = vdy;
    *s1 = hn::Mul(vdy, hn::Sub(vx, hn::Set(d, mean)));
  };
  auto sf = [mean](double vdy, double vx, double* s0, double* s1) {
    *s0 = vdy;
    *s1 = vdy * (vx - mean);
  };
  double* bs = s.b_sum + n * a.c + c0;
  double* ds = s.d_sum + n * a.c + c0;
  // The channels' sums, the accumulations on the pipes `pipes` says (a std::integral_constant<Pipes, ...>).
  auto rows = [&](auto pipes) HWY_ATTR {
    for (int64_t c = 0; c < cpg; ++c) {
      double out[2];
      CanonRowSums<2, decltype(pipes)::value>(dy + c * hw, x + c * hw, hw, vf, sf, out, p.prefetch, side_of(c));
      bs[c] = out[0];
      ds[c] = out[1];
    }
  };
  // The split exists only for float32 (detail::split_sum_pipes) and where AccAdd is not an add (x86 with FMA); the
  // other instantiations take kFma in both branches, so they carry one loop.
  constexpr bool kCanSplit = std::is_same_v<T, float> && NNOPS_ACC_ON_FMA;
  if (kCanSplit && p.split_sum_pipes) {
    rows(std::integral_constant < Pipes, kCanSplit ? Pipes::kHalfAndQuarter : Pipes::kFma > {});
  } else {
    rows(std::integral_constant<Pipes, Pipes::kFma>{});
  }
  if (a.dx == nullptr) return {GroupConsts{}, c0};  // only the sums, for dgamma and dbeta
  double sa, sb;
  GroupSums(s.gamma + c0, bs, ds, cpg, &sa, &sb);
  return {Consts(mean, s.rstd[q], sa, sb, static_cast<double>(cpg * a.hw)), c0};
}

// A thread's row-major groups [q0, q1): pass 1, then dx (if asked for; see PipelineGroups for `pipeline`).
template <typename T>
void GroupsNCHW(const Args& a, const Plan& p, const Shared& s, int64_t q0, int64_t q1) {
  const int64_t cpg = a.cpg();
  const size_t hw = static_cast<size_t>(a.hw), burst = static_cast<size_t>(p.pipeline_burst);
  const bool stream = p.stream_output;
  auto sums = [&](int64_t q, const auto& side_of) { return GroupNCHWSums<T>(a, p, s, q, side_of); };
  auto row_of = [&](int64_t q, int64_t c, const GroupDx& g) {
    const GroupConsts& k = g.k;
    const int64_t off = (q * cpg + c) * a.hw;
    const DxFn f{k.mean_hi, CanonicalNaN(static_cast<float>(k.rstd * s.gamma[g.c0 + c])), k.k2, k.k3};
    return MakeSideRow(static_cast<T*>(a.dx) + off, hw, stream, burst, f, static_cast<const T*>(a.dy) + off,
                       static_cast<const T*>(a.x) + off);
  };
  PipelineGroups(q0, q1, a.dx == nullptr ? 0 : cpg, p.pipeline, sums, row_of);
}

template <typename T>
void ChunkNHWC(const Args& a, const Plan& p, const Shared& s, int64_t u, unsigned char* scratch) {
  const gn::Chunk ch = gn::chunk_of(a, p.chunk_groups, u);
  const int64_t cpg = a.cpg(), n = ch.n, g0 = ch.g0, g1 = ch.g1, c0 = ch.c0;
  const size_t cols = ch.cols, stride = static_cast<size_t>(a.c);
  const size_t rows = static_cast<size_t>(a.hw), cmax = static_cast<size_t>(p.chunk_groups * cpg);
  const int64_t off = n * a.hw * a.c + c0;
  const T* dy = static_cast<const T*>(a.dy) + off;
  const T* x = static_cast<const T*>(a.x) + off;
  double* acc = reinterpret_cast<double*>(scratch);
  // The pieces of gn_bwd::scratch_bytes.
  double* cmean = reinterpret_cast<double*>(scratch + gn::acc_bytes(cmax));
  float* mh = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(cmean) + gn::round64(cmax * 8));
  float *k1 = mh + cmax, *k2 = k1 + cmax, *k3 = k2 + cmax;
  for (int64_t g = g0; g < g1; ++g) {
    for (int64_t c = 0; c < cpg; ++c) cmean[(g - g0) * cpg + c] = s.mean[n * a.groups + g];
  }
  auto vf = [cmean](auto d, auto vdy, auto vx, size_t c, auto* s0, auto* s1) HWY_ATTR {
    *s0 = vdy;
    *s1 = hn::Mul(vdy, hn::Sub(vx, hn::LoadU(d, cmean + c)));
  };
  auto sf = [cmean](double vdy, double vx, size_t c, double* s0, double* s1) {
    *s0 = vdy;
    *s1 = vdy * (vx - cmean[c]);
  };
  double* bs = s.b_sum + n * a.c + c0;
  double* ds = s.d_sum + n * a.c + c0;
  CanonColumnSums<2>(dy, x, stride, rows, cols, vf, sf, acc, bs, ds, p.column_walk);
  if (a.dx == nullptr) return;
  for (int64_t g = g0; g < g1; ++g) {
    const int64_t k = (g - g0) * cpg, q = n * a.groups + g;
    double sa, sb;
    GroupSums(s.gamma + g * cpg, bs + k, ds + k, cpg, &sa, &sb);
    const GroupConsts gc = Consts(s.mean[q], s.rstd[q], sa, sb, static_cast<double>(cpg * a.hw));
    for (int64_t c = 0; c < cpg; ++c) {
      mh[k + c] = gc.mean_hi;
      k1[k + c] = CanonicalNaN(static_cast<float>(gc.rstd * s.gamma[g * cpg + c]));  // as the row-major DxFn's
      k2[k + c] = gc.k2;
      k3[k + c] = gc.k3;
    }
  }
  T* dx = static_cast<T*>(a.dx) + off;
  const bool stream = p.stream_output && cols == stride;
  // Whole rows are one stream, which the prefetch runs ahead of (from L3, where the statistics pass left it).
  const bool prefetch = p.prefetch && cols == stride;
  // Rows joined across their ends where they are streamed off their lines (JoinLayout, src/core/row_map-inl.h): the
  // constants of a joining line (mh, k1, k2, k3).
  alignas(64) float line[4 * kJoinMax];
  const size_t join = JoinLayout(dx, cols, stride, stream, line, mh, k1, k2, k3);
  const size_t pairs_from = ColumnPairsFrom(dx, cols, stride, stream);
  ColumnPairsLayout(pairs_from, cols, mh, k1, k2, k3);
  auto row = [&](size_t r, size_t from, size_t to) {
    DxColumns(dy + r * stride, x + r * stride, dx + r * stride, from, to, mh, k1, k2, k3, stream, prefetch, pairs_from);
  };
  auto joining = [&](size_t r, size_t c) {
    const hn::ScalableTag<float> df;
    const auto one = AccOne(df);
    const T* dyl = dy + r * stride + c;
    const T* xl = x + r * stride + c;
    StreamLine(dx + r * stride + c, [&](size_t j) HWY_ATTR {
      return Dx(LoadF32(df, dyl + j), LoadF32(df, xl + j), hn::LoadU(df, line + j), hn::LoadU(df, line + kJoinMax + j),
                hn::LoadU(df, line + 2 * kJoinMax + j), hn::LoadU(df, line + 3 * kJoinMax + j), one);
    });
  };
  JoinedRows<T>(0, rows, rows, cols, join, row, joining);
}

template <typename T>
void RunT(const Plan& p, const Args& a, unsigned char* ws) {
  const uint64_t C = static_cast<uint64_t>(a.c), NG = static_cast<uint64_t>(a.n * a.groups);
  double* gamma = reinterpret_cast<double*>(ws);
  double* mean = reinterpret_cast<double*>(ws + gn::round64(C * 8));
  double* rstd = mean + NG;
  double* b_sum = reinterpret_cast<double*>(reinterpret_cast<unsigned char*>(mean) + gn::round64(2 * NG * 8));
  double* d_sum = b_sum + static_cast<uint64_t>(a.n) * C;
  unsigned char* scratch0 =
      reinterpret_cast<unsigned char*>(b_sum) + gn::round64(2 * static_cast<uint64_t>(a.n) * C * 8);
  detail::load_doubles_or(a.gamma, a.c, 1.0, gamma);
  detail::load_doubles(a.mean, mean);
  detail::load_doubles(a.rstd, rstd);
  const Shared s{gamma, mean, rstd, b_sum, d_sum};
  const int64_t cpg = a.cpg();
  detail::parallel_region(p.num_threads, [&](int tid, int nt) HWY_ATTR {
    unsigned char* scratch = scratch0 + static_cast<uint64_t>(tid) * p.scratch_bytes;
    const auto [u0, u1] = detail::split_range(p.units, nt, tid);
    if (a.layout == Layout::kNCHW) {
      GroupsNCHW<T>(a, p, s, u0, u1);
    } else {
      for (int64_t u = u0; u < u1; ++u) ChunkNHWC<T>(a, p, s, u, scratch);
    }
    if (p.stream_output) hwy::FlushStream();  // order this thread's non-temporal stores before the join
    if (a.dgamma.is_none() && a.dbeta.is_none()) return;
    detail::barrier();  // every (n, c) sum is in place
    const auto [c0, c1] = detail::split_range(a.c, nt, tid);
    for (int64_t c = c0; c < c1; ++c) {
      double dg = 0, db = 0;
      for (int64_t n = 0; n < a.n; ++n) {
        dg += rstd[n * a.groups + c / cpg] * d_sum[n * a.c + c];
        db += b_sum[n * a.c + c];
      }
      d_sum[c] = dg;  // sample 0's entries, read above and by no other thread, hold the results
      b_sum[c] = db;
    }
  });
  if (!a.dgamma.is_none()) detail::store_doubles(d_sum, a.dgamma);
  if (!a.dbeta.is_none()) detail::store_doubles(b_sum, a.dbeta);
}

}  // namespace gn_bwd_kernel

void GroupNormBackwardRun(const gn_bwd::Plan& p, const gn_bwd::Args& a, unsigned char* ws) {
  switch (a.dtype) {
    case DType::kFloat32:
      return gn_bwd_kernel::RunT<float>(p, a, ws);
    case DType::kFloat16:
      return gn_bwd_kernel::RunT<hwy::float16_t>(p, a, ws);
    case DType::kBFloat16:
      return gn_bwd_kernel::RunT<hwy::bfloat16_t>(p, a, ws);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/core/dispatch.hpp"

namespace nnops {
namespace gn_bwd {
HWY_EXPORT(GroupNormBackwardRun);

void run(const Plan& p, const Args& a, void* workspace) {
  detail::init_dispatch();
  NNOPS_DYNAMIC_DISPATCH(GroupNormBackwardRun, a.dtype)(p, a, static_cast<unsigned char*>(workspace));
}
}  // namespace gn_bwd
}  // namespace nnops
#endif  // HWY_ONCE
