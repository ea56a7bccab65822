// Canonical float64 sums (per-target include, after hwy/highway.h and simd_convert-inl.h, inside a
// HWY_TARGET_INCLUDE'd file).
//
// NB: what "canonical" means. The sum over i in [0, n) of f(x_i) is defined as: element i is added into lane
// i mod 16, each lane adds its elements in increasing i starting from +0.0, and the 16 lanes are then combined
// by the fixed tree of CanonCombine. That order depends on n alone, so
//   - every SIMD target and vector length gives the same bits (a target with N double lanes keeps 16/N
//     accumulators; a 2048-bit SVE vector uses 16 of its lanes);
//   - a row read contiguously (CanonRowSums) and the same row read as a column of a strided array
//     (CanonColumnSums: one lane per row index mod 16, every column at once) give the same bits, which is how
//     a channels-last kernel reproduces a dense one exactly;
//   - any split of the work across threads that keeps each row's sum in one piece gives the same bits.
// f must be evaluated with the same IEEE operations in its vector form and its scalar form (no fused
// multiply-add in one and not the other; the project builds with -ffp-contract=off). The one fused form is the
// accumulation of an exact square (kSquareOfFirst, below), which rounds as the separate operations do.
// A lane that never receives an element stays +0.0 (and a lane is never -0.0: x + y rounds a zero sum to
// +0.0), so padding and empty lanes change nothing.

#if defined(NNOPS_CORE_CANONICAL_SUM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NNOPS_CORE_CANONICAL_SUM_INL_H_
#undef NNOPS_CORE_CANONICAL_SUM_INL_H_
#else
#define NNOPS_CORE_CANONICAL_SUM_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "nnops/dtype.hpp"
#include "src/core/canonical_sum.hpp"
#include "src/core/check.hpp"
#include "src/core/fp_pipes-inl.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {

constexpr size_t kCanonLanes = 16;

// One stored element as a double (exact for every storage type; the same value the vector widening gives).
HWY_INLINE double ToDouble(const float* p) { return *p; }
HWY_INLINE double ToDouble(const hwy::float16_t* p) {
  uint16_t b;
  std::memcpy(&b, p, 2);
  return half_bits_to_float(b);
}
HWY_INLINE double ToDouble(const hwy::bfloat16_t* p) {
  uint16_t b;
  std::memcpy(&b, p, 2);
  return bf16_bits_to_float(b);
}

// One float rounded to the storage type (round to nearest even; the same bits as StoreF32's vector rounding,
// which simd_convert_test checks): for the scalar tails of elementwise passes.
HWY_INLINE void FromFloat(float v, float* p) { *p = v; }
HWY_INLINE void FromFloat(float v, hwy::float16_t* p) {
  const uint16_t b = float_to_half_bits(v);
  std::memcpy(p, &b, 2);
}
HWY_INLINE void FromFloat(float v, hwy::bfloat16_t* p) {
  const uint16_t b = float_to_bf16_bits(v);
  std::memcpy(p, &b, 2);
}

// No work beside the sums (CanonRowSums' `side`).
struct NoSide {
  HWY_INLINE void operator()(size_t) const {}
  HWY_INLINE void operator()(size_t, size_t) const {}
};

// The fixed combination of the 16 lane sums: pairwise, lane 0 leftmost.
HWY_INLINE double CanonCombine(const double* l) {
  const double a = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  const double b = ((l[8] + l[9]) + (l[10] + l[11])) + ((l[12] + l[13]) + (l[14] + l[15]));
  return a + b;
}

#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
// The float64 tag of the canonical sums: at most 16 lanes.
using CanonD = hn::CappedTag<double, kCanonLanes>;
using CanonF = hn::Rebind<float, CanonD>;

// kR accumulators of Lanes(CanonD) = 16 / kR lanes for each of kK statistics. Sizeless SVE vectors cannot live
// in arrays, so the accumulators are named variables; the unused ones are eliminated by the compiler.
#define NNOPS_CANON_ACC(k)                                                                                            \
  auto k##0 = hn::Zero(d), k##1 = k##0, k##2 = k##0, k##3 = k##0, k##4 = k##0, k##5 = k##0, k##6 = k##0, k##7 = k##0, \
       k##8 = k##0, k##9 = k##0, k##10 = k##0, k##11 = k##0, k##12 = k##0, k##13 = k##0, k##14 = k##0, k##15 = k##0
#define NNOPS_CANON_EACH(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)

// CanonCombine in registers, for 16 lanes held in kR vectors of N = 16 / kR lanes (lane j of v_r is lane r N + j):
// first pairs of lanes at distance 1, 2, ..., N / 2 within each vector (lane j plus lane j ^ dist), then the
// vectors pairwise. Lane 0 of each step adds the lower operand first, as CanonCombine does, so lane 0 of the
// result is its sum bit for bit; the other lanes are not used.
template <size_t kR, class D, class V>
HWY_INLINE double CanonCombineVectors(D d, V v0, V v1, V v2, V v3, V v4, V v5, V v6, V v7, V v8, V v9, V v10, V v11,
                                      V v12, V v13, V v14, V v15) {
  constexpr size_t kN = kCanonLanes / kR;
  const hn::RebindToUnsigned<D> du;
  const auto iota = hn::Iota(du, 0);
  auto within = [&](V v) HWY_ATTR {
    for (size_t dist = 1; dist < kN; dist *= 2) {
      v = hn::Add(v, hn::TableLookupLanes(v, hn::IndicesFromVec(d, hn::Xor(iota, hn::Set(du, dist)))));
    }
    return v;
  };
  if constexpr (kR == 1) {
    return hn::GetLane(within(v0));
  } else if constexpr (kR == 2) {
    return hn::GetLane(hn::Add(within(v0), within(v1)));
  } else {
    const V q0 = hn::Add(hn::Add(within(v0), within(v1)), hn::Add(within(v2), within(v3)));
    if constexpr (kR == 4) return hn::GetLane(q0);
    const V q1 = hn::Add(hn::Add(within(v4), within(v5)), hn::Add(within(v6), within(v7)));
    if constexpr (kR == 8) return hn::GetLane(hn::Add(q0, q1));
    const V q2 = hn::Add(hn::Add(within(v8), within(v9)), hn::Add(within(v10), within(v11)));
    const V q3 = hn::Add(hn::Add(within(v12), within(v13)), hn::Add(within(v14), within(v15)));
    return hn::GetLane(hn::Add(hn::Add(q0, q1), hn::Add(q2, q3)));
  }
}

// CanonCombineVectors for two statistics at once (a in a0.., b in b0.., kR vectors of N = 16 / kR lanes each):
// their 32 lanes, a's then b's, are added in pairs of neighbours, four levels, each pair its lower lane first
// (ConcatEven + ConcatOdd of two vectors: the pair sums of their lanes, in order), which is CanonCombine's tree for
// each statistic; lane 0 of the last level is a's sum and lane 1 b's, bit for bit. 15 permute pairs for both at
// most, against the per-vector lane shuffles of CanonCombineVectors (GroupNorm [2, 1280, 8, 8] float32: rows of 64
// elements, whose combine was half of a row's work).
// One level of CanonCombinePair's tree: the pair sums of neighbouring lanes of lo then hi, each its lower lane first.
template <class D, class V>
HWY_INLINE V PairSums(D d, V lo, V hi) {
  return hn::Add(hn::ConcatEven(d, hi, lo), hn::ConcatOdd(d, hi, lo));
}

template <size_t kR, class D, class V>
HWY_INLINE void CanonCombinePair(D d, V a0, V a1, V a2, V a3, V a4, V a5, V a6, V a7, V b0, V b1, V b2, V b3, V b4,
                                 V b5, V b6, V b7, double* out) {
  auto P = [d](V lo, V hi) HWY_ATTR { return PairSums(d, lo, hi); };
  V s;
  if constexpr (kR == 1) {
    const V p = P(a0, b0), q = P(p, p), r = P(q, q);
    s = P(r, r);
  } else if constexpr (kR == 2) {
    const V q = P(P(a0, a1), P(b0, b1)), r = P(q, q);
    s = P(r, r);
  } else if constexpr (kR == 4) {
    const V r = P(P(P(a0, a1), P(a2, a3)), P(P(b0, b1), P(b2, b3)));
    s = P(r, r);
  } else {
    static_assert(kR == 8, "16 lanes in 1, 2, 4 or 8 vectors");
    s = P(P(P(P(a0, a1), P(a2, a3)), P(P(a4, a5), P(a6, a7))), P(P(P(b0, b1), P(b2, b3)), P(P(b4, b5), P(b6, b7))));
  }
  double lanes[kCanonLanes];
  hn::StoreU(s, d, lanes);
  out[0] = lanes[0];
  out[1] = lanes[1];
}

// NB: a terms functor whose second term is the square of its first, t1 = t0 * t0, exact in float64 (t0 a widened
// float32, float16 or bfloat16 element: 24 significant bits square within 48), may say so with
// `static constexpr bool kSquareOfFirst = true`. The second statistic then accumulates with one fused multiply-add
// of the first term, fma(t0, t0, acc): it rounds t0 * t0 + acc once, as adding the exact t1 does, so the bits are
// the same on every target, with or without FMA, and the multiply no longer takes an issue slot of its own. The
// functor must still produce t1 = t0 * t0: the tails, the add pipes and the targets without FMA add it.
template <class VF, class = void>
struct SquaresFirst : std::false_type {};
template <class VF>
struct SquaresFirst<VF, std::void_t<decltype(VF::kSquareOfFirst)>> : std::bool_constant<VF::kSquareOfFirst> {};

// The second statistic's accumulation through the FMA pipes (AccAdd, or the fused square above).
template <class VF, class V>
HWY_INLINE V AccSecond(V acc, V t0, V t1, V one) {
  if constexpr (SquaresFirst<VF>::value && NNOPS_ACC_ON_FMA) {
    (void)t1;
    (void)one;
    return hn::MulAdd(t0, t0, acc);
  } else {
    (void)t0;
    return AccAdd(acc, t1, one);
  }
}

// Accumulator r of the two statistics (a##r, b##r) takes the terms of the float32 vectors X, Y, widened.
#define NNOPS_CANON_ADD_OF(a, b, r, X, Y)                                                                  \
  {                                                                                                        \
    auto t0 = hn::Zero(d), t1 = hn::Zero(d);                                                               \
    vf(d, hn::PromoteTo(d, X), hn::PromoteTo(d, Y), &t0, &t1);                                             \
    a##r = OnAddPipe(kPipes, 0, r, kR) ? hn::Add(a##r, t0) : AccAdd(a##r, t0, one);                        \
    if (kK > 1) b##r = OnAddPipe(kPipes, 1, r, kR) ? hn::Add(b##r, t1) : AccSecond<VF>(b##r, t0, t1, one); \
  }
// One step (accumulator r: elements i + r N ..) and the tail of the rows x, y into the accumulators a##r, b##r
// (CanonRowSumsR, CanonRowSumsPairR); in scope: d, df, N, i, rem, vf, one, kR, kK, kPipes.
#define NNOPS_CANON_STEP_OF(x, y, a, b, r) \
  if (r < kR) NNOPS_CANON_ADD_OF(a, b, r, (LoadF32(df, x + i + r * N)), (LoadF32(df, y + i + r * N)))
// Steps r and s = r + 1 with their elements loaded as one pair (LoadF32Pair), the same operations in the same order as
// step r then step s; just step r where s is past the accumulators.
#define NNOPS_CANON_STEP2_OF(x, y, a, b, r, s) \
  if (s < kR) {                                \
    hn::Vec<CanonF> xr, xs, yr, ys;            \
    LoadF32Pair(df, x + i + r * N, &xr, &xs);  \
    LoadF32Pair(df, y + i + r * N, &yr, &ys);  \
    NNOPS_CANON_ADD_OF(a, b, r, xr, yr)        \
    NNOPS_CANON_ADD_OF(a, b, s, xs, ys)        \
  } else {                                     \
    NNOPS_CANON_STEP_OF(x, y, a, b, r)         \
  }
#define NNOPS_CANON_TAIL_OF(x, y, a, b, r)                                                                             \
  if (r < kR && r * N < rem) {                                                                                         \
    const size_t cnt = std::min(N, rem - r * N);                                                                       \
    const auto live = hn::FirstN(d, cnt);                                                                              \
    auto t0 = hn::Zero(d), t1 = hn::Zero(d);                                                                           \
    vf(d, hn::PromoteTo(d, LoadF32N(df, x + i + r * N, cnt)), hn::PromoteTo(d, LoadF32N(df, y + i + r * N, cnt)), &t0, \
       &t1);                                                                                                           \
    a##r = hn::Add(a##r, hn::IfThenElseZero(live, t0));                                                                \
    if (kK > 1) b##r = hn::Add(b##r, hn::IfThenElseZero(live, t1));                                                    \
  }

// Row sums of up to two statistics over two parallel rows x, y (y may equal x): for every i, vf(d, X, Y, &s0,
// &s1) returns the terms of both statistics for the float64 vectors X = x[i..], Y = y[i..]; sf(X, Y, &s0, &s1)
// does the same for one element. out[0..kK) receive the canonical sums. kPipes: which accumulators add on the add
// pipes (OnAddPipe in fp_pipes-inl.h; the bits do not depend on it).
// `prefetch`: PrefetchStream ahead of x and y (the bits do not depend on it). `side(i)` runs before each step of
// 16 elements from i: other work interleaved with the sums (a pipelined kernel writes the previous group's output
// while these rows come in from memory); it must not touch the sums' inputs or outputs.
template <size_t kR, size_t kK, Pipes kPipes, typename T, class VF, class SF, class Side>
HWY_INLINE void CanonRowSumsR(const T* HWY_RESTRICT x, const T* HWY_RESTRICT y, size_t n, const VF& vf, const SF& sf,
                              double* out, bool prefetch, Side& side) {
  const CanonD d;
  const CanonF df;
  const size_t N = hn::Lanes(d);
  const auto one = AccOne(d);
  NNOPS_CANON_ACC(a);
  NNOPS_CANON_ACC(b);
  size_t i = 0;
  for (; i + kCanonLanes <= n; i += kCanonLanes) {
    side(i);
    if (prefetch) {
      PrefetchStream(x + i, kCanonLanes * sizeof(T));
      if (y != x) PrefetchStream(y + i, kCanonLanes * sizeof(T));
    }
#define NNOPS_CANON_STEP2(r, s) NNOPS_CANON_STEP2_OF(x, y, a, b, r, s)
    // One step per line; clang-format re-wraps these statements without semicolons differently on every run.
    // clang-format off
    NNOPS_CANON_STEP2(0, 1)
    NNOPS_CANON_STEP2(2, 3)
    NNOPS_CANON_STEP2(4, 5)
    NNOPS_CANON_STEP2(6, 7)
    NNOPS_CANON_STEP2(8, 9)
    NNOPS_CANON_STEP2(10, 11)
    NNOPS_CANON_STEP2(12, 13)
    NNOPS_CANON_STEP2(14, 15)
    // clang-format on
#undef NNOPS_CANON_STEP2
  }
  // The tail: element i + k into lane k (accumulator k / N, its lane k mod N), as the vector steps would have
  // done; the padding lanes add +0.0, which changes no lane (a lane is never -0.0).
  (void)sf;  // the scalar form is the targets' without float64 vectors (below)
  const size_t rem = n - i;
#define NNOPS_CANON_TAIL(r) NNOPS_CANON_TAIL_OF(x, y, a, b, r)
  NNOPS_CANON_EACH(NNOPS_CANON_TAIL)
#undef NNOPS_CANON_TAIL
  if constexpr (kK > 1 && kR <= 8) {
    CanonCombinePair<kR>(d, a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7, out);
  } else {
    out[0] = CanonCombineVectors<kR>(d, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15);
    if (kK > 1)
      out[1] = CanonCombineVectors<kR>(d, b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15);
  }
}

template <size_t kK, Pipes kPipes = Pipes::kFma, typename T, class VF, class SF, class Side = NoSide>
HWY_INLINE void CanonRowSums(const T* x, const T* y, size_t n, const VF& vf, const SF& sf, double* out,
                             bool prefetch = false, Side&& side = Side()) {
  switch (kCanonLanes / hn::Lanes(CanonD())) {
    case 1:
      return CanonRowSumsR<1, kK, kPipes>(x, y, n, vf, sf, out, prefetch, side);
    case 2:
      return CanonRowSumsR<2, kK, kPipes>(x, y, n, vf, sf, out, prefetch, side);
    case 4:
      return CanonRowSumsR<4, kK, kPipes>(x, y, n, vf, sf, out, prefetch, side);
    case 8:
      return CanonRowSumsR<8, kK, kPipes>(x, y, n, vf, sf, out, prefetch, side);
    default:
      return CanonRowSumsR<16, kK, kPipes>(x, y, n, vf, sf, out, prefetch, side);
  }
}
// CanonRowSums of two rows of one length at once, (x0, y0) into out0 and (x1, y1) into out1, each with its own
// accumulators and the same operations in the same order: the same bits as two calls. Why: a row's loop is bound by
// the latency of its accumulations (one step of the 16 lanes' chains per FMA latency; on AMD Zen 5 a stand-alone
// copy of GroupNorm's loop ran 0.25 cycles per element, two rows interleaved 0.216, docs/performance.md), and the
// two rows share the setup and the tails; from memory two rows' streams read slower than one (GroupNorm uses it
// only in cache). Where the accumulators of two rows would not fit the registers (more than two vectors of a
// statistic: AVX2, NEON, SVE below 512 bits) it is the two calls.
template <size_t kR, size_t kK, Pipes kPipes, typename T, class VF>
HWY_INLINE void CanonRowSumsPairR(const T* HWY_RESTRICT x0, const T* HWY_RESTRICT y0, const T* HWY_RESTRICT x1,
                                  const T* HWY_RESTRICT y1, size_t n, const VF& vf, double* out0, double* out1,
                                  bool prefetch) {
  static_assert(kR <= 2, "two rows' accumulators in registers");
  const CanonD d;
  const CanonF df;
  const size_t N = hn::Lanes(d);
  const auto one = AccOne(d);
  auto a0 = hn::Zero(d), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, e0 = a0, e1 = a0;
  size_t i = 0;
  for (; i + kCanonLanes <= n; i += kCanonLanes) {
    if (prefetch) {
      PrefetchStream(x0 + i, kCanonLanes * sizeof(T));
      if (y0 != x0) PrefetchStream(y0 + i, kCanonLanes * sizeof(T));
      PrefetchStream(x1 + i, kCanonLanes * sizeof(T));
      if (y1 != x1) PrefetchStream(y1 + i, kCanonLanes * sizeof(T));
    }
    NNOPS_CANON_STEP_OF(x0, y0, a, b, 0)
    NNOPS_CANON_STEP_OF(x1, y1, c, e, 0)
    NNOPS_CANON_STEP_OF(x0, y0, a, b, 1)
    NNOPS_CANON_STEP_OF(x1, y1, c, e, 1)
  }
  const size_t rem = n - i;  // the tails as CanonRowSumsR's
  NNOPS_CANON_TAIL_OF(x0, y0, a, b, 0)
  NNOPS_CANON_TAIL_OF(x0, y0, a, b, 1)
  NNOPS_CANON_TAIL_OF(x1, y1, c, e, 0)
  NNOPS_CANON_TAIL_OF(x1, y1, c, e, 1)
  const auto z = hn::Zero(d);
  if constexpr (kK > 1) {
    // CanonCombinePair's tree for the four sums at once: after level 2 (kR == 2) or 1 (kR == 1) the four sums'
    // partial lanes are neighbours in two vectors, a's then b's and c's then e's; two levels more leave the sums
    // in lanes 0..3.
    auto P = [d](hn::Vec<CanonD> lo, hn::Vec<CanonD> hi) HWY_ATTR { return PairSums(d, lo, hi); };
    hn::Vec<CanonD> r;
    if constexpr (kR == 2) {
      r = P(P(P(a0, a1), P(b0, b1)), P(P(c0, c1), P(e0, e1)));
    } else {
      const auto q = P(P(a0, b0), P(c0, e0));
      r = P(q, q);
    }
    const auto sums = P(r, r);
    double lanes[kCanonLanes];
    hn::StoreU(sums, d, lanes);
    out0[0] = lanes[0];
    out0[1] = lanes[1];
    out1[0] = lanes[2];
    out1[1] = lanes[3];
  } else {
    out0[0] = CanonCombineVectors<kR>(d, a0, a1, z, z, z, z, z, z, z, z, z, z, z, z, z, z);
    out1[0] = CanonCombineVectors<kR>(d, c0, c1, z, z, z, z, z, z, z, z, z, z, z, z, z, z);
  }
}

template <size_t kK, Pipes kPipes = Pipes::kFma, typename T, class VF, class SF>
HWY_INLINE void CanonRowSumsPair(const T* x0, const T* y0, const T* x1, const T* y1, size_t n, const VF& vf,
                                 const SF& sf, double* out0, double* out1, bool prefetch = false) {
  switch (kCanonLanes / hn::Lanes(CanonD())) {
    case 1:
      return CanonRowSumsPairR<1, kK, kPipes>(x0, y0, x1, y1, n, vf, out0, out1, prefetch);
    case 2:
      return CanonRowSumsPairR<2, kK, kPipes>(x0, y0, x1, y1, n, vf, out0, out1, prefetch);
    default:
      CanonRowSums<kK, kPipes>(x0, y0, n, vf, sf, out0, prefetch);
      CanonRowSums<kK, kPipes>(x1, y1, n, vf, sf, out1, prefetch);
  }
}
#undef NNOPS_CANON_ACC
#undef NNOPS_CANON_EACH
#undef NNOPS_CANON_ADD_OF
#undef NNOPS_CANON_STEP_OF
#undef NNOPS_CANON_STEP2_OF
#undef NNOPS_CANON_TAIL_OF

// Column sums: for each of `cols` columns, the canonical sums of up to two statistics over `rows` rows of the
// row-major arrays x and y (`stride` elements between rows). Row r is added into lane r mod 16 of every column;
// the lanes live in `acc` (detail::canon_column_acc_doubles(cols) doubles, any contents; lanes
// detail::canon_column_lane_stride(cols) apart). vf(d, X, Y, col, &s0, &s1) takes the float64
// vectors of columns col.. (Lanes(ScalableTag<double>) of them); sf(X, Y, col, &s0, &s1) one column. out0 and
// out1 (cols each; out1 may be null when kK == 1) receive the sums. `walk` (detail::column_walk): the order of the
// (lane, strip) steps and whether the next block is prefetched, into L2 or L1; the bits depend on neither. kPipes: as
// for CanonRowSums, with the 4 vectors of a strip of columns as the accumulators (the vectors after the last whole
// strip all through AccAdd). `side(r0, r1)` runs before each block of rows [r0, r1): other work interleaved with the
// sums (a pipelined channels-last kernel writes the previous unit's rows), which must not touch the sums' inputs,
// outputs or acc; the scalar build skips it.
//
// NB: why blocks. Row by row, every element would load and store its lane's accumulator, and 2 x 16 lanes of a
// few hundred columns live in L2, not L1: that traffic, not the arithmetic, set the speed. Rows r and r + 16
// share a lane, so a block of kCanonColumnBlock rows is walked in steps of one lane and one strip (4 vectors of
// columns), the strip's accumulators of that lane held in registers over the block's kCanonColumnBlock / 16 rows
// of the lane. Each (lane, column) still adds its rows in increasing order, in either order of the steps: the same
// bits as row by row.
// - Strip by strip (each strip's 16 lanes, then the next strip), the walk goes down the block 64 bytes at a time and
//   hides the order from the hardware prefetchers, so the next block's lines are prefetched in address order
//   along the way. 64 rows measured best so on [24, 320, 64, 64] channels-last float32 (AVX2, 1 thread; forward 30
//   -> 17 ms with streamed output): longer blocks keep more lines in flight at once and lost, most in the
//   backward pass's two arrays.
// - Lane by lane (each lane's strips, then the next lane), a lane's 4 rows are read from start to end and lane
//   l + 1's rows follow lane l's in memory: 4 sequential streams. AMD Zen 2's hardware prefetchers feed those
//   better alone (harness, 320 columns, the two GroupNorm sums: 0.225 -> 0.206 ns/element in L2, 0.28 -> 0.23-0.24
//   from memory without the software prefetch, GroupNormBackward's two arrays 0.47 -> 0.41; 128-row blocks, 8
//   streams, were within 5% for one array and lost for two, 0.43 -> 0.61); AMD Zen 5's do not (GroupNorm 0.53 ->
//   0.45 of the probe with the prefetch, 0.38 without; docs/performance.md).
constexpr size_t kCanonColumnBlock = 4 * kCanonLanes;

// CanonColumnSums of at most one block of rows (HxW up to 64 in a channels-last tensor: 8x8, 7x7 and smaller): each
// lane is at most 4 rows, so a column vector's 16 lanes are summed and combined in registers, lane after lane, its
// tree built as the lanes arrive (a lane pairs with its neighbour, pairs with pairs: CanonCombine's tree), instead of
// storing every lane of every column to acc and combining them from there, which at 64 rows moved as many bytes as
// x itself (2 x 16 doubles a column against 64 elements; channels-last GroupNorm [64, 1280, 8, 8] ran at a quarter of
// the row-major speed). The same operations in the same order as the blocked walk below, on the same pipes: the same
// bits. acc is not used.
template <size_t kK, Pipes kPipes, typename T, class VF, class SF>
HWY_INLINE void CanonColumnSumsShort(const T* HWY_RESTRICT x, const T* HWY_RESTRICT y, size_t stride, size_t rows,
                                     size_t cols, const VF& vf, const SF& sf, double* HWY_RESTRICT out0,
                                     double* HWY_RESTRICT out1) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const size_t N = hn::Lanes(d);
  const auto one = AccOne(d);
  const size_t strips_end = cols / (4 * N) * 4 * N;  // the blocked walk's strips of 4 vectors end here
  size_t c = 0;
  for (; c + N <= cols; c += N) {
    // A whole strip's vector adds on the pipes it would in the blocked walk (OnAddPipe of its place in the strip); the
    // vectors after the last whole strip all go through AccAdd, as there.
    const bool add_a = c < strips_end && OnAddPipe(kPipes, 0, (c / N) % 4, 4);
    const bool add_b = c < strips_end && OnAddPipe(kPipes, 1, (c / N) % 4, 4);
    auto z = hn::Zero(d);
    auto s0a = z, s0b = z, s1a = z, s1b = z, s2a = z, s2b = z, s3a = z, s3b = z, ta = z, tb = z;
    // Lane l of the column vector (rows l, l + 16, ..., from +0.0) into A and B.
#define NNOPS_CANON_LANE(l, A, B)                                                                                    \
  {                                                                                                                  \
    auto a = hn::Zero(d), b = hn::Zero(d);                                                                           \
    for (size_t r = l; r < rows; r += kCanonLanes) {                                                                 \
      auto t0 = hn::Zero(d), t1 = hn::Zero(d);                                                                       \
      vf(d, hn::PromoteTo(d, LoadF32(df, x + r * stride + c)), hn::PromoteTo(d, LoadF32(df, y + r * stride + c)), c, \
         &t0, &t1);                                                                                                  \
      a = add_a ? hn::Add(a, t0) : AccAdd(a, t0, one);                                                               \
      if (kK > 1) b = add_b ? hn::Add(b, t1) : AccSecond<VF>(b, t0, t1, one);                                        \
    }                                                                                                                \
    A = a, B = b;                                                                                                    \
  }
#define NNOPS_CANON_ADD(A, B) A##a = hn::Add(A##a, B##a), A##b = hn::Add(A##b, B##b)
    NNOPS_CANON_LANE(0, s0a, s0b) NNOPS_CANON_LANE(1, ta, tb) NNOPS_CANON_ADD(s0, t);
    NNOPS_CANON_LANE(2, s1a, s1b) NNOPS_CANON_LANE(3, ta, tb) NNOPS_CANON_ADD(s1, t);
    NNOPS_CANON_ADD(s0, s1);  // (l0 + l1) + (l2 + l3)
    NNOPS_CANON_LANE(4, s1a, s1b) NNOPS_CANON_LANE(5, ta, tb) NNOPS_CANON_ADD(s1, t);
    NNOPS_CANON_LANE(6, s2a, s2b) NNOPS_CANON_LANE(7, ta, tb) NNOPS_CANON_ADD(s2, t);
    NNOPS_CANON_ADD(s1, s2);
    NNOPS_CANON_ADD(s0, s1);  // lanes 0..7
    NNOPS_CANON_LANE(8, s1a, s1b) NNOPS_CANON_LANE(9, ta, tb) NNOPS_CANON_ADD(s1, t);
    NNOPS_CANON_LANE(10, s2a, s2b) NNOPS_CANON_LANE(11, ta, tb) NNOPS_CANON_ADD(s2, t);
    NNOPS_CANON_ADD(s1, s2);
    NNOPS_CANON_LANE(12, s2a, s2b) NNOPS_CANON_LANE(13, ta, tb) NNOPS_CANON_ADD(s2, t);
    NNOPS_CANON_LANE(14, s3a, s3b) NNOPS_CANON_LANE(15, ta, tb) NNOPS_CANON_ADD(s3, t);
    NNOPS_CANON_ADD(s2, s3);
    NNOPS_CANON_ADD(s1, s2);  // lanes 8..15
    NNOPS_CANON_ADD(s0, s1);
#undef NNOPS_CANON_LANE
#undef NNOPS_CANON_ADD
    hn::StoreU(s0a, d, out0 + c);
    if (kK > 1) hn::StoreU(s0b, d, out1 + c);
  }
  for (; c < cols; ++c) {  // the last columns one at a time, as the blocked walk's scalar columns
    double la[kCanonLanes] = {}, lb[kCanonLanes] = {};
    for (size_t r = 0; r < rows; ++r) {
      double s0 = 0, s1 = 0;
      sf(ToDouble(x + r * stride + c), ToDouble(y + r * stride + c), c, &s0, &s1);
      la[r % kCanonLanes] = la[r % kCanonLanes] + s0;
      lb[r % kCanonLanes] = lb[r % kCanonLanes] + s1;
    }
    out0[c] = CanonCombine(la);
    if (kK > 1) out1[c] = CanonCombine(lb);
  }
}

template <size_t kK, Pipes kPipes = Pipes::kFma, typename T, class VF, class SF, class Side = NoSide>
HWY_INLINE void CanonColumnSums(const T* HWY_RESTRICT x, const T* HWY_RESTRICT y, size_t stride, size_t rows,
                                size_t cols, const VF& vf, const SF& sf, double* HWY_RESTRICT acc,
                                double* HWY_RESTRICT out0, double* HWY_RESTRICT out1, detail::ColumnWalk walk,
                                Side&& side = Side()) {
  if (rows <= kCanonColumnBlock) {
    if (rows > 0) side(size_t{0}, rows);
    return CanonColumnSumsShort<kK, kPipes>(x, y, stride, rows, cols, vf, sf, out0, out1);
  }
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const size_t N = hn::Lanes(d);
  const auto one = AccOne(d);
  double* acc0 = acc;
  const size_t ls = detail::canon_column_lane_stride(cols);  // (padded: see there)
  double* acc1 = acc + kCanonLanes * ls;
  // The first block starts every lane it reaches from +0.0 in registers instead of loading it (zeroing the
  // 2 x 16 x cols accumulators had cost 7% of a [2, 1280, 8, 8] call); lanes no row reaches are zeroed here.
  for (size_t l = std::min(rows, kCanonLanes); l < kCanonLanes; ++l) {
    std::memset(acc0 + l * ls, 0, cols * sizeof(double));
    std::memset(acc1 + l * ls, 0, cols * sizeof(double));
  }
  const size_t B = kCanonColumnBlock;
  const size_t seg = cols * sizeof(T), seg_lines = (seg + 63) / 64;
  const size_t strips_end = cols / (4 * N) * 4 * N;  // the strips of 4 vectors of columns end here
  for (size_t r0 = 0; r0 < rows; r0 += B) {
    const size_t r1 = std::min(rows, r0 + B);
    side(r0, r1);
    const bool first = r0 == 0;
    auto load = [&](const double* p) HWY_ATTR { return first ? hn::Zero(d) : hn::LoadU(d, p); };
    // Where the plan prefetches: the next block's lines, in address order, spread evenly over this block's (lane,
    // strip) steps, into L2 (the block is 64 rows of up to 1024 columns, more than L1 holds): prefetcht1 measured
    // faster than t0 on the Intel Xeon VM (GroupNorm channels-last [24, 320, 64, 64] float32 0.72-0.74 -> 0.70
    // ns/element, 1 thread; the statistics pass alone 0.40 -> 0.33), and no different from t0 on AMD Zen 4 in an
    // earlier session; on AMD Zen 5 t0 was the faster (ColumnPrefetch::kL1). All three walked strip by strip.
    const size_t pf_end = std::min(rows, r1 + B);
    const size_t steps = strips_end / (4 * N) * kCanonLanes;
    const size_t per =
        walk.prefetch == detail::ColumnPrefetch::kOff || !steps ? 0 : ((pf_end - r1) * seg_lines + steps - 1) / steps;
    size_t pf_r = r1, pf_o = 0;
    const size_t lanes = std::min(kCanonLanes, r1 - r0);  // the lanes this block's rows reach
    // One step: lane l of the strip of 4 vectors of columns from c, its accumulators held in registers over the
    // block's rows of that lane.
    auto step = [&](size_t l, size_t c) HWY_ATTR NNOPS_LAMBDA_INLINE {
      for (size_t k = 0; k < per && pf_r < pf_end; ++k) {
        const unsigned char* px = reinterpret_cast<const unsigned char*>(x + pf_r * stride) + pf_o;
        const unsigned char* py = reinterpret_cast<const unsigned char*>(y + pf_r * stride) + pf_o;
        if (walk.prefetch == detail::ColumnPrefetch::kL1) {
          __builtin_prefetch(px, 0, 3);
          if (y != x) __builtin_prefetch(py, 0, 3);
        } else {
          __builtin_prefetch(px, 0, 2);
          if (y != x) __builtin_prefetch(py, 0, 2);
        }
        pf_o += 64;
        if (pf_o >= seg) pf_o = 0, ++pf_r;
      }
      double* l0 = acc0 + l * ls + c;
      double* l1 = acc1 + l * ls + c;
      auto a0 = load(l0), a1 = load(l0 + N), a2 = load(l0 + 2 * N), a3 = load(l0 + 3 * N);
      auto b0 = a0, b1 = a1, b2 = a2, b3 = a3;
      if (kK > 1) {
        b0 = load(l1), b1 = load(l1 + N), b2 = load(l1 + 2 * N), b3 = load(l1 + 3 * N);
      }
      for (size_t r = r0 + l; r < r1; r += kCanonLanes) {
        const T* xr = x + r * stride + c;
        const T* yr = y + r * stride + c;
// Vector j of the strip takes the terms of the float32 vectors X, Y; vectors j and k = j + 1 are loaded as one pair
// (LoadF32Pair).
#define NNOPS_CANON_COL_ADD(j, X, Y)                                                                      \
  {                                                                                                       \
    auto t0 = hn::Zero(d), t1 = hn::Zero(d);                                                              \
    vf(d, hn::PromoteTo(d, X), hn::PromoteTo(d, Y), c + j * N, &t0, &t1);                                 \
    a##j = OnAddPipe(kPipes, 0, j, 4) ? hn::Add(a##j, t0) : AccAdd(a##j, t0, one);                        \
    if (kK > 1) b##j = OnAddPipe(kPipes, 1, j, 4) ? hn::Add(b##j, t1) : AccSecond<VF>(b##j, t0, t1, one); \
  }
#define NNOPS_CANON_COL2(j, k)             \
  {                                        \
    hn::Vec<decltype(df)> xj, xk, yj, yk;  \
    LoadF32Pair(df, xr + j * N, &xj, &xk); \
    LoadF32Pair(df, yr + j * N, &yj, &yk); \
    NNOPS_CANON_COL_ADD(j, xj, yj)         \
    NNOPS_CANON_COL_ADD(k, xk, yk)         \
  }
        NNOPS_CANON_COL2(0, 1) NNOPS_CANON_COL2(2, 3)
#undef NNOPS_CANON_COL2
#undef NNOPS_CANON_COL_ADD
      }
      hn::StoreU(a0, d, l0), hn::StoreU(a1, d, l0 + N), hn::StoreU(a2, d, l0 + 2 * N), hn::StoreU(a3, d, l0 + 3 * N);
      if (kK > 1) {
        hn::StoreU(b0, d, l1), hn::StoreU(b1, d, l1 + N), hn::StoreU(b2, d, l1 + 2 * N);
        hn::StoreU(b3, d, l1 + 3 * N);
      }
    };
    if (walk.by_lane) {
      for (size_t l = 0; l < lanes; ++l) {
        for (size_t c = 0; c < strips_end; c += 4 * N) step(l, c);
      }
    } else {
      for (size_t c = 0; c < strips_end; c += 4 * N) {
        for (size_t l = 0; l < lanes; ++l) step(l, c);
      }
    }
    // The last columns: one vector, then one column, at a time, each lane over the block's rows as above.
    size_t c = strips_end;
    for (; c + N <= cols; c += N) {
      for (size_t l = 0; l < lanes; ++l) {
        double* l0 = acc0 + l * ls + c;
        double* l1 = acc1 + l * ls + c;
        auto a0 = load(l0);
        auto b0 = kK > 1 ? load(l1) : a0;
        for (size_t r = r0 + l; r < r1; r += kCanonLanes) {
          auto t0 = hn::Zero(d), t1 = hn::Zero(d);
          vf(d, hn::PromoteTo(d, LoadF32(df, x + r * stride + c)), hn::PromoteTo(d, LoadF32(df, y + r * stride + c)), c,
             &t0, &t1);
          a0 = AccAdd(a0, t0, one);
          if (kK > 1) b0 = AccSecond<VF>(b0, t0, t1, one);
        }
        hn::StoreU(a0, d, l0);
        if (kK > 1) hn::StoreU(b0, d, l1);
      }
    }
    for (; c < cols; ++c) {
      for (size_t r = r0; r < r1; ++r) {
        double s0 = 0, s1 = 0;
        sf(ToDouble(x + r * stride + c), ToDouble(y + r * stride + c), c, &s0, &s1);
        double& e0 = acc0[(r % kCanonLanes) * ls + c];
        double& e1 = acc1[(r % kCanonLanes) * ls + c];
        const bool fresh = first && r < kCanonLanes;  // the lane's first row: it starts from +0.0
        e0 = (fresh ? 0.0 : e0) + s0;
        e1 = (fresh ? 0.0 : e1) + s1;
      }
    }
  }
  // CanonCombine for N columns at once: lane l of every column is one row of acc, so the tree is vertical adds.
  auto combine = [&](const double* a) HWY_ATTR {
    auto L = [&](size_t l) HWY_ATTR { return hn::LoadU(d, a + l * ls); };
    const auto lo =
        hn::Add(hn::Add(hn::Add(L(0), L(1)), hn::Add(L(2), L(3))), hn::Add(hn::Add(L(4), L(5)), hn::Add(L(6), L(7))));
    const auto hi = hn::Add(hn::Add(hn::Add(L(8), L(9)), hn::Add(L(10), L(11))),
                            hn::Add(hn::Add(L(12), L(13)), hn::Add(L(14), L(15))));
    return hn::Add(lo, hi);
  };
  size_t c = 0;
  for (; c + N <= cols; c += N) {
    hn::StoreU(combine(acc0 + c), d, out0 + c);
    if (kK > 1) hn::StoreU(combine(acc1 + c), d, out1 + c);
  }
  alignas(64) double lanes[kCanonLanes];
  for (; c < cols; ++c) {
    for (size_t l = 0; l < kCanonLanes; ++l) lanes[l] = acc0[l * ls + c];
    out0[c] = CanonCombine(lanes);
    if (kK > 1) {
      for (size_t l = 0; l < kCanonLanes; ++l) lanes[l] = acc1[l * ls + c];
      out1[c] = CanonCombine(lanes);
    }
  }
}

#else  // no float64 vectors: the same order, one element at a time

// The side work is left to the caller's finish (it only makes progress; see CanonRowSumsR).
template <size_t kK, Pipes kPipes = Pipes::kFma, typename T, class VF, class SF, class Side = NoSide>
HWY_INLINE void CanonRowSums(const T* x, const T* y, size_t n, const VF&, const SF& sf, double* out, bool = false,
                             Side&& = Side()) {
  double la[kCanonLanes] = {}, lb[kCanonLanes] = {};
  for (size_t i = 0; i < n; ++i) {
    double s0 = 0, s1 = 0;
    sf(ToDouble(x + i), ToDouble(y + i), &s0, &s1);
    la[i % kCanonLanes] += s0;
    lb[i % kCanonLanes] += s1;
  }
  out[0] = CanonCombine(la);
  if (kK > 1) out[1] = CanonCombine(lb);
}

template <size_t kK, Pipes kPipes = Pipes::kFma, typename T, class VF, class SF>
HWY_INLINE void CanonRowSumsPair(const T* x0, const T* y0, const T* x1, const T* y1, size_t n, const VF& vf,
                                 const SF& sf, double* out0, double* out1, bool prefetch = false) {
  CanonRowSums<kK, kPipes>(x0, y0, n, vf, sf, out0, prefetch);
  CanonRowSums<kK, kPipes>(x1, y1, n, vf, sf, out1, prefetch);
}

template <size_t kK, Pipes kPipes = Pipes::kFma, typename T, class VF, class SF, class Side = NoSide>
HWY_INLINE void CanonColumnSums(const T* x, const T* y, size_t stride, size_t rows, size_t cols, const VF&,
                                const SF& sf, double* acc, double* out0, double* out1, detail::ColumnWalk,
                                Side&& = Side()) {
  double* acc0 = acc;
  double* acc1 = acc + kCanonLanes * cols;
  std::memset(acc, 0, 2 * kCanonLanes * cols * sizeof(double));
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      double s0 = 0, s1 = 0;
      sf(ToDouble(x + r * stride + c), ToDouble(y + r * stride + c), c, &s0, &s1);
      acc0[(r % kCanonLanes) * cols + c] += s0;
      acc1[(r % kCanonLanes) * cols + c] += s1;
    }
  }
  double lanes[kCanonLanes];
  for (size_t c = 0; c < cols; ++c) {
    for (size_t l = 0; l < kCanonLanes; ++l) lanes[l] = acc0[l * cols + c];
    out0[c] = CanonCombine(lanes);
    if (kK > 1) {
      for (size_t l = 0; l < kCanonLanes; ++l) lanes[l] = acc1[l * cols + c];
      out1[c] = CanonCombine(lanes);
    }
  }
}

#endif

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#endif  // NNOPS_CORE_CANONICAL_SUM_INL_H_
