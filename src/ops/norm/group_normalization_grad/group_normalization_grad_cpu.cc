// GroupNormalizationGrad CPU kernels: Highway, one source compiled for every target, picked at run time.
//
// Two passes per group. Pass 1 forms s1 = sum dy*gamma and S = sum dy*gamma*(x - mean) in float64
// from exact products (so cancellation in the sums costs nothing), per block of kBlock elements; blocks
// are added in order. Within a block the order is fixed by the element index alone (16 lanes; NB at
// kSumLanes), so the sums are bitwise the same on every vector width. float32 products (24x24 bits) are
// formed in float64. For the half types the product is formed in float32, which is exact there, and only
// it and x are widened (half the conversions): always for float16 (11x11 bits, range [2^-48, 2^32]); for
// bfloat16 (8x8 bits) unless a product can leave float32's normal range, which the block checks (a lane
// with both factors nonzero and one below 2^-63, or a non-finite s1) and then recomputes with float64
// products. Either way s1 and S are float64 sums of the same exact products in the same order, so the
// error argument of kBoundC (impl header) is unchanged and the path a block takes does not change a bit.
// Pass 2 is float32:
//   dx_i = gamma_i * ((rstd*dy_i - k0) + k1*(mean - x_i)),  k0 = rstd*s1/M,  k1 = rstd^3*S/M,
// which is docs/semantics.md's (rstd/M)*gamma*(M*dy - s1 - xhat*s2) with s2 = rstd*S, regrouped so that each
// element costs one subtraction, one multiply and two fused multiply-adds (NB at GnGradFn). bfloat16
// vectors are split into even and odd elements (one integer operation per float vector each way) in both
// passes. Where the plan says so (gn_grad::Plan::pipeline: AMD Zen 2), a thread's whole groups are pipelined: group
// q's pass 2 runs in bursts beside group q + 1's pass 1 (PipelineGroups, src/core/row_map-inl.h), the same operations.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "src/core/check.hpp"
#include "src/core/parallel.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/norm/group_normalization_grad/group_normalization_grad_cpu.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/fp_pipes-inl.h"
#include "src/core/row_map-inl.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {

// ---- pass 1: s1 = sum dy*gamma, S = sum dy*gamma*(x - mean) over one block -------------------------------
// NB: summation order. Element i of a block goes to "virtual lane" i mod 16; each lane adds its elements in
// increasing order (s1: add; S: one fused multiply-add where the target has FMA, else a multiply and an
// add), and the 16 lane totals are added in a fixed tree (lane l + lane l+8, then + 4, + 2, + 1;
// ReduceLanes). A vector of L doubles (L = 2, 4 or 8: SSE4/NEON/SVE-128, AVX2/SVE-256, AVX-512/SVE-512 and
// wider, capped at 8) holds L of the virtual lanes, so a target keeps 16/L accumulators per sum, and the
// elements left after the last full step continue their lanes in scalar code. The float64 sums are
// therefore bitwise the same on every vector width: s1 on every target, S (and dx, whose pass 2 also
// fuses) on all targets with FMA (AVX2, AVX-512, NEON, SVE) and on all without (SSE4, SSSE3, EMU128,
// scalar). The 16 lanes are also 4 + 4 independent accumulators on AVX2 and 2 + 2 on AVX-512 (each taking
// two vectors per step there), enough to hide the add latency. The products dy*gamma are exact in float64
// (24 x 24 bits), so s1 and S are float64 sums of the same exact products on every path below; which
// path a block takes (the bfloat16 range check) depends on its data only and does not change a bit.
constexpr size_t kSumLanes = 16;

// Adds the 16 lane totals in the fixed order of the NB above.
HWY_INLINE double ReduceLanes(double* a) {
  for (size_t l = 0; l < 8; ++l) a[l] += a[l + 8];
  for (size_t l = 0; l < 4; ++l) a[l] += a[l + 4];
  a[0] += a[2];
  a[1] += a[3];
  return a[0] + a[1];
}

// One element of a virtual lane, in scalar code: the same operations as the vector lanes.
HWY_INLINE void AddOne(double dyv, double gv, double xv, double mean, double* a1, double* as) {
  const double p = dyv * gv;  // exact
#if HWY_NATIVE_FMA
  *as = std::fma(p, xv - mean, *as);
#else
  *as = *as + p * (xv - mean);
#endif
  *a1 += p;
}

// One stored element as a double (exact).
template <typename T>
HWY_INLINE double ElemToDouble(const T& v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    return hwy::F32FromBF16(v);
  } else {  // the target's float16 conversion on one lane
    return hn::GetLane(LoadF32(hn::CappedTag<float, 1>(), &v));
  }
}

// Elements [i, n) in scalar code, continuing their virtual lanes; then the two sums. Lane by lane (each lane
// still in element order), so that its two accumulators stay in registers: targets without float64 vectors
// run whole blocks through here.
template <typename T>
HWY_INLINE void FinishBlock(const T* HWY_RESTRICT x, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT gamma, size_t i,
                            size_t n, double mean, double* a1, double* as, double* s1, double* s) {
  for (size_t l = 0; l < kSumLanes && i < n; ++l) {
    double t1 = a1[l], ts = as[l];
    for (size_t j = i + (l + kSumLanes - i % kSumLanes) % kSumLanes; j < n; j += kSumLanes) {
      AddOne(ElemToDouble(dy[j]), ElemToDouble(gamma[j]), ElemToDouble(x[j]), mean, &t1, &ts);
    }
    a1[l] = t1;
    as[l] = ts;
  }
  *s1 = ReduceLanes(a1);
  *s = ReduceLanes(as);
}

#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
// At most 8 float64 lanes: the bfloat16 even/odd split below needs 2 * L <= 16. On SVE the actual count
// (2, 4 or 8) is known at run time; GnGradBlockSums dispatches on it.
using GnDD = hn::CappedTag<double, 8>;
using GnDF = hn::Repartition<float, GnDD>;  // 2 L floats
using GnDH = hn::Rebind<float, GnDD>;       // L floats
using GnVD = hn::Vec<GnDD>;

// Accumulators a0..a7 (s1) and b0..b7 (S) are named variables, not arrays: SVE vectors cannot be array
// elements. (Reaching them through references from generic lambdas made GCC keep some on the stack.)
// NNOPS_GN_ADD(J, p, vx) adds one vector of exact products p and of x to accumulator pair J.
#define NNOPS_GN_ADD(J, p, vx)                          \
  do {                                                  \
    b##J = hn::MulAdd((p), hn::Sub((vx), vmean), b##J); \
    a##J = AccAdd(a##J, (p), acc_one);                  \
  } while (0)
// Runs STEP(J) for J = 0 .. K-1 (J a literal, K a constant expression in scope).
#define NNOPS_GN_FOR_K(STEP) \
  do {                       \
    STEP(0);                 \
    STEP(1);                 \
    if constexpr (K > 2) {   \
      STEP(2);               \
      STEP(3);               \
    }                        \
    if constexpr (K > 4) {   \
      STEP(4);               \
      STEP(5);               \
      STEP(6);               \
      STEP(7);               \
    }                        \
  } while (0)

// PrefetchStream ahead of the three arrays for a step of `count` elements at i.
template <typename T>
HWY_INLINE void PrefetchBlock(const T* x, const T* dy, const T* gamma, size_t i, size_t count) {
  PrefetchStream(x + i, count * sizeof(T));
  PrefetchStream(dy + i, count * sizeof(T));
  PrefetchStream(gamma + i, count * sizeof(T));
}

// Pass 1 over n elements with L float64 lanes per vector (K = 16 / L accumulators per sum). kPath:
//  0: every product in float64 (float32; bfloat16's fallback), L consecutive elements per vector;
//  1: float16, dy*gamma in float32 (exact: 11 x 11 bits within [2^-48, 2^32]) on 2 L lanes, then widened;
//  2: bfloat16 fast path, dy*gamma in float32 on even/odd lane pairs of a 4 L-element vector: accumulator
//     2 b + e, lane d holds virtual lane 2 L b + 2 d + e (e = 0 even, 1 odd). Returns false, leaving *s1
//     and *s unset, if the block needs path 0 (a product could leave float32's normal range).
template <size_t L, int kPath, typename T, class Side>
HWY_INLINE bool BlockSumsL(const T* HWY_RESTRICT x, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT gamma, size_t n,
                           double mean, double* s1, double* s, bool prefetch, Side& side) {
  constexpr size_t K = kSumLanes / L;
  static_assert(K == 2 || K == 4 || K == 8, "2, 4 or 8 lanes");
  const GnDD dd;
  const GnDH dh;
  const GnDF df;
  const GnVD vmean = hn::Set(dd, mean), acc_one = AccOne(dd);
  GnVD a0 = hn::Zero(dd), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  GnVD b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0;
  // Elements per step: 32 with 8 lanes (two passes over the K = 2 accumulators, in element order; path 2:
  // one 32-element vector), else one pass of 16.
  constexpr size_t kStep = L == 8 ? 2 * kSumLanes : kSumLanes;
  size_t i = 0;
  if constexpr (kPath == 0) {
    for (; i + kStep <= n; i += kStep) {
      side(i);
      if (prefetch) PrefetchBlock(x, dy, gamma, i, kStep);
#define NNOPS_GN_WIDE(J)                                                                                               \
  NNOPS_GN_ADD(                                                                                                        \
      J, hn::Mul(hn::PromoteTo(dd, LoadF32(dh, dy + ib + (J)*L)), hn::PromoteTo(dd, LoadF32(dh, gamma + ib + (J)*L))), \
      hn::PromoteTo(dd, LoadF32(dh, x + ib + (J)*L)))
      {
        const size_t ib = i;
        NNOPS_GN_FOR_K(NNOPS_GN_WIDE);
      }
      if constexpr (kStep > kSumLanes) {
        const size_t ib = i + kSumLanes;
        NNOPS_GN_FOR_K(NNOPS_GN_WIDE);
      }
#undef NNOPS_GN_WIDE
    }
  } else if constexpr (kPath == 1) {
    for (; i + kStep <= n; i += kStep) {
      side(i);
      if (prefetch) PrefetchBlock(x, dy, gamma, i, kStep);
        // Float vector q covers accumulators 2q and 2q + 1.
#define NNOPS_GN_F16(J)                                                                          \
  if constexpr ((J) % 2 == 0) {                                                                  \
    const size_t o = ib + (J)*L;                                                                 \
    const auto p = hn::Mul(LoadF32(df, dy + o), LoadF32(df, gamma + o));                         \
    hn::Vec<GnDH> xlo, xhi;                                                                      \
    if constexpr (NNOPS_NATIVE_F16 && hn::MaxLanes(GnDH()) >= 8) {                               \
      /* F16C on AVX-512: a half is 8 float16 (a 128-bit memory operand), one conversion each */ \
      xlo = LoadF32(dh, x + o);                                                                  \
      xhi = LoadF32(dh, x + o + L);                                                              \
    } else {                                                                                     \
      /* once per full vector, then split (AVX2: the 64-bit halves were a load and a conversion  \
         each; without F16C the integer sequence runs once) */                                   \
      const auto vx = LoadF32(df, x + o);                                                        \
      xlo = hn::LowerHalf(dh, vx);                                                               \
      xhi = hn::UpperHalf(dh, vx);                                                               \
    }                                                                                            \
    NNOPS_GN_ADD(J, hn::PromoteTo(dd, hn::LowerHalf(dh, p)), hn::PromoteTo(dd, xlo));            \
    pending_hi = hn::PromoteTo(dd, hn::UpperHalf(dh, p));                                        \
    pending_xhi = hn::PromoteTo(dd, xhi);                                                        \
  } else {                                                                                       \
    NNOPS_GN_ADD(J, pending_hi, pending_xhi);                                                    \
  }
      GnVD pending_hi, pending_xhi;
      {
        const size_t ib = i;
        NNOPS_GN_FOR_K(NNOPS_GN_F16);
      }
      if constexpr (kStep > kSumLanes) {
        const size_t ib = i + kSumLanes;
        NNOPS_GN_FOR_K(NNOPS_GN_F16);
      }
#undef NNOPS_GN_F16
    }
  } else {
    // bfloat16 has 8-bit significands, so dy*gamma (16 bits) is exact in float32 unless it leaves float32's
    // normal range. Downwards that needs both factors nonzero and one of them below 2^-63 in magnitude (the
    // block tracks the smallest such factor); upwards the product becomes Inf, and with Inf/NaN inputs s1 is
    // non-finite. Either way the block is recomputed on path 0 (same sums, as the NB says). Zeros, common
    // in dy, stay here.
    const hn::RebindToUnsigned<GnDF> du;
    const hn::Repartition<uint16_t, GnDF> du16;
    // min over lanes of min(2*|dy bits|, 2*|gamma bits|) - 1 (wrapping): a zero factor (an exact zero
    // product) maps to 0xFFFF and never lowers the minimum.
    auto vmin = hn::Set(du16, 0xFFFFu);
    const auto one = hn::Set(du16, 1u);
    for (; i + kStep <= n; i += kStep) {
      side(i);
      if (prefetch) PrefetchBlock(x, dy, gamma, i, kStep);
        // 16-bit vector v (4 L elements) feeds accumulators 2 b + e; its half h starts at element
        // (4 L v + 2 L h) mod 16 = 2 L b of the step's lanes. With L = 8 both halves are b = 0: the lower is
        // added first, as the element order requires.
#define NNOPS_GN_BF16(V)                                                                                            \
  if constexpr ((V)*4 * L < kStep) {                                                                                \
    const size_t o = i + (V)*4 * L;                                                                                 \
    const auto rdy = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(dy + o));                                    \
    const auto rg = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(gamma + o));                                  \
    vmin = hn::Min(vmin, hn::Sub(hn::Min(hn::Add(rdy, rdy), hn::Add(rg, rg)), one));                                \
    const auto ux = hn::BitCast(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(x + o)));                     \
    const auto udy = hn::BitCast(du, rdy), ug = hn::BitCast(du, rg);                                                \
    const auto pe = hn::Mul(Bf16Even(du, udy), Bf16Even(du, ug));                                                   \
    const auto po = hn::Mul(Bf16Odd(du, udy), Bf16Odd(du, ug));                                                     \
    const auto xe = Bf16Even(du, ux), xo = Bf16Odd(du, ux);                                                         \
    constexpr size_t kLo = (V)*4 * L % kSumLanes / (2 * L);                                                         \
    constexpr size_t kHi = ((V)*4 * L + 2 * L) % kSumLanes / (2 * L);                                               \
    NNOPS_GN_BF16_ADD(2 * kLo, hn::PromoteTo(dd, hn::LowerHalf(dh, pe)), hn::PromoteTo(dd, hn::LowerHalf(dh, xe))); \
    NNOPS_GN_BF16_ADD(2 * kLo + 1, hn::PromoteTo(dd, hn::LowerHalf(dh, po)),                                        \
                      hn::PromoteTo(dd, hn::LowerHalf(dh, xo)));                                                    \
    NNOPS_GN_BF16_ADD(2 * kHi, hn::PromoteTo(dd, hn::UpperHalf(dh, pe)), hn::PromoteTo(dd, hn::UpperHalf(dh, xe))); \
    NNOPS_GN_BF16_ADD(2 * kHi + 1, hn::PromoteTo(dd, hn::UpperHalf(dh, po)),                                        \
                      hn::PromoteTo(dd, hn::UpperHalf(dh, xo)));                                                    \
  }
// Accumulator pair by a constant expression (0..7).
#define NNOPS_GN_BF16_ADD(JX, p, vx)                \
  do {                                              \
    constexpr size_t kJ = (JX);                     \
    const GnVD pp = (p), xx = (vx);                 \
    if constexpr (kJ == 0) NNOPS_GN_ADD(0, pp, xx); \
    if constexpr (kJ == 1) NNOPS_GN_ADD(1, pp, xx); \
    if constexpr (kJ == 2) NNOPS_GN_ADD(2, pp, xx); \
    if constexpr (kJ == 3) NNOPS_GN_ADD(3, pp, xx); \
    if constexpr (kJ == 4) NNOPS_GN_ADD(4, pp, xx); \
    if constexpr (kJ == 5) NNOPS_GN_ADD(5, pp, xx); \
    if constexpr (kJ == 6) NNOPS_GN_ADD(6, pp, xx); \
    if constexpr (kJ == 7) NNOPS_GN_ADD(7, pp, xx); \
  } while (0)
      NNOPS_GN_BF16(0);
      NNOPS_GN_BF16(1);
#undef NNOPS_GN_BF16_ADD
#undef NNOPS_GN_BF16
    }
    alignas(64) uint16_t mins[4 * 8];
    hn::Store(vmin, du16, mins);
    uint16_t lo = 0xFFFF;
    for (size_t k = 0; k < hn::Lanes(du16); ++k) lo = std::min(lo, mins[k]);
    // The elements after the last step go through FinishBlock in float64 and need no check. 2^-63 is
    // bfloat16 0x2000; 2 * 0x2000 - 1 = 0x3FFF.
    if (lo < 0x3FFF) return false;
  }
  // The accumulators' lanes in virtual-lane order: accumulator J lane d is virtual lane J L + d (paths 0
  // and 1) or 2 L (J / 2) + 2 d + J % 2 (path 2).
  alignas(64) double r1[kSumLanes], rs[kSumLanes];
#define NNOPS_GN_PUT(J)            \
  hn::Store(a##J, dd, r1 + (J)*L); \
  hn::Store(b##J, dd, rs + (J)*L)
  NNOPS_GN_FOR_K(NNOPS_GN_PUT);
#undef NNOPS_GN_PUT
  double* v1 = r1;
  double* vs = rs;
  alignas(64) double p1[kSumLanes], ps[kSumLanes];
  if constexpr (kPath == 2) {
    for (size_t q = 0; q < kSumLanes; ++q) {
      const size_t j = q / L, d = q % L, lane = 2 * L * (j / 2) + 2 * d + j % 2;
      p1[lane] = r1[q];
      ps[lane] = rs[q];
    }
    v1 = p1;
    vs = ps;
  }
  FinishBlock(x, dy, gamma, i, n, mean, v1, vs, s1, s);
  if constexpr (kPath == 2) return std::isfinite(*s1);
  return true;
}
#undef NNOPS_GN_FOR_K
#undef NNOPS_GN_ADD

// A bfloat16 block that falls back to path 0 runs its side work there again: a side that has passed an element does
// nothing there (SideRow).
template <size_t L, typename T, class Side>
HWY_INLINE void BlockSumsTyped(const T* HWY_RESTRICT x, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT gamma, size_t n,
                               double mean, double* s1, double* s, bool pf, Side& side) {
  if constexpr (std::is_same_v<T, hwy::float16_t>) {
    BlockSumsL<L, 1>(x, dy, gamma, n, mean, s1, s, pf, side);
  } else if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    if (!BlockSumsL<L, 2>(x, dy, gamma, n, mean, s1, s, pf, side)) {
      BlockSumsL<L, 0>(x, dy, gamma, n, mean, s1, s, false, side);
    }
  } else {
    BlockSumsL<L, 0>(x, dy, gamma, n, mean, s1, s, pf, side);
  }
}
#endif

// Pass 1 over n elements of one block: *s1 = sum dy*gamma, *s = sum dy*gamma*(x - mean), float64, in the
// order of the NB above. `prefetch`: PrefetchStream ahead of the three arrays (the bits do not depend on it).
// `side(i)` runs before each vector step from element i: the pipeline's dx of the previous group (SideRow), which
// touches none of this block's data; targets without float64 vectors leave it to its Finish.
template <typename T, class Side = NoSide>
HWY_NOINLINE void GnGradBlockSums(const T* HWY_RESTRICT x, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT gamma,
                                  size_t n, double mean, double* s1, double* s, bool prefetch, Side&& side = Side()) {
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
  switch (hn::Lanes(GnDD())) {  // a constant except on SVE
    case 2:
      return BlockSumsTyped<2>(x, dy, gamma, n, mean, s1, s, prefetch, side);
    case 4:
      return BlockSumsTyped<4>(x, dy, gamma, n, mean, s1, s, prefetch, side);
    default:
      return BlockSumsTyped<8>(x, dy, gamma, n, mean, s1, s, prefetch, side);
  }
#else
  // Targets without float64 vectors (HWY_SCALAR, 32-bit Arm): the same lanes, one element at a time.
  (void)prefetch, (void)side;
  double a1[kSumLanes] = {}, as[kSumLanes] = {};
  FinishBlock(x, dy, gamma, 0, n, mean, a1, as, s1, s);
#endif
}

// Pass 2's elementwise form (MapRow's F, src/core/row_map-inl.h) for one group's constants. A NaN constant is the
// canonical quiet NaN (its low 16 bits zero), so that every NaN the bfloat16 pairs round has them zero (bfloat16
// inputs, the default NaN, these constants): Bf16PairMap's rounding needs no NaN fix-up.
// NB: gamma * ((rstd*dy - k0) + k1*(mean - x)): rstd*dy - k0 is one fused multiply-subtract and k1*(mean - x) + t one
// fused multiply-add where the target has FMA (elsewhere a multiply and a subtraction or an addition, as before).
// mean - x is -(x - mean) exactly, so the second is bit for bit the former t - k1*(x - mean); the first drops one
// rounding from the term rstd*dy of kBoundC's derivation (impl header), which therefore still bounds the error.
// mean - x also lets x be a memory operand on x86: 5 vector operations per vector instead of 7.
struct GnGradFn {
  float mean, rstd, k0, k1;
  GnGradFn(float mean_, float rstd_, float k0_, float k1_)
      : mean(CanonicalNaN(mean_)), rstd(CanonicalNaN(rstd_)), k0(CanonicalNaN(k0_)), k1(CanonicalNaN(k1_)) {}
  template <class DF, class Body>
  HWY_INLINE auto With(DF df, const Body& body) const {
    const auto vmean = hn::Set(df, mean), vrstd = hn::Set(df, rstd), vk0 = hn::Set(df, k0), vk1 = hn::Set(df, k1);
    return body([&](auto vx, auto vdy, auto vg) HWY_ATTR NNOPS_LAMBDA_INLINE {
      return hn::Mul(vg, hn::MulAdd(vk1, hn::Sub(vmean, vx), hn::MulSub(vrstd, vdy, vk0)));
    });
  }
};

template <typename T>
void GnGradRunT(const gn_grad::Plan& p, const gn_grad::Args& a, double* ws) {
  const T* x = static_cast<const T*>(a.x);
  const T* dy = static_cast<const T*>(a.dy);
  const T* gamma = static_cast<const T*>(a.gamma);
  T* dx = static_cast<T*>(a.dx);
  const int64_t m = p.m, bpg = p.blocks_per_group, B = gn_grad::kBlock;
  const double md = static_cast<double>(m);

  // Block b of group grp covers [grp*m + b*B, grp*m + min((b+1)*B, m)).
  auto block_len = [&](int64_t b) { return static_cast<size_t>(b + 1 < bpg ? B : m - b * B); };
  // Pass 2 of `len` elements of group grp from `off`, as a SideRow (Finish() runs what its side steps left).
  struct Sums {
    double s1 = 0, s = 0;
  };
  auto pass2 = [&](int64_t grp, int64_t off, size_t len, const Sums& t) {
    const double mean = load_as_double(a.mean, a.stat_dtype, grp);
    const double rstd = load_as_double(a.rstd, a.stat_dtype, grp);
    const GnGradFn f(static_cast<float>(mean), static_cast<float>(rstd), static_cast<float>(rstd * t.s1 / md),
                     static_cast<float>(rstd * rstd * rstd * t.s / md));
    const int64_t base = grp * m + off;
    return MakeSideRow(dx + base, len, p.stream_output, static_cast<size_t>(p.pipeline_burst), f, x + base, dy + base,
                       gamma + base);
  };

  detail::parallel_region(p.num_threads, [&](int tid, int nt) {
    if (!p.split_groups) {
      // A group is one row for PipelineGroups: pass 1 its statistics (side_of(0): the previous group's pass 2 beside
      // it, element by element of the group), pass 2 its output row.
      const auto [g0, g1] = detail::split_range(p.groups, nt, tid);
      auto sums = [&](int64_t grp, const auto& side_of) {
        const double mean = load_as_double(a.mean, a.stat_dtype, grp);
        Sums t;
        auto&& side = side_of(int64_t{0});
        for (int64_t b = 0; b < bpg; ++b) {
          double b1, bs;
          const int64_t base = grp * m + b * B;
          GnGradBlockSums(x + base, dy + base, gamma + base, block_len(b), mean, &b1, &bs, p.prefetch,
                          [&, at = static_cast<size_t>(b * B)](size_t i)
                              HWY_ATTR NNOPS_LAMBDA_INLINE { side(at + i); });
          t.s1 += b1;
          t.s += bs;
        }
        return t;
      };
      auto row_of = [&](int64_t grp, int64_t, const Sums& t) { return pass2(grp, 0, static_cast<size_t>(m), t); };
      PipelineGroups(g0, g1, m > 0 ? 1 : 0, p.pipeline, sums, row_of);
      if (p.stream_output) hwy::FlushStream();  // order this thread's non-temporal stores before the join
      return;
    }
    // Shared groups: the same contiguous block range for both passes keeps a thread's share in its
    // own cache; partial sums are published through the workspace.
    const auto [u0, u1] = detail::split_range(p.groups * bpg, nt, tid);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t grp = u / bpg, b = u % bpg;
      const int64_t base = grp * m + b * B;
      GnGradBlockSums(x + base, dy + base, gamma + base, block_len(b), load_as_double(a.mean, a.stat_dtype, grp),
                      &ws[2 * u], &ws[2 * u + 1], p.prefetch);
    }
    detail::barrier();
    int64_t cur = -1;
    Sums t;
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t grp = u / bpg, b = u % bpg;
      if (grp != cur) {  // group totals: the block partials added in block order, as in the other mode
        cur = grp;
        t = Sums();
        for (int64_t k = grp * bpg; k < (grp + 1) * bpg; ++k) {
          t.s1 += ws[2 * k];
          t.s += ws[2 * k + 1];
        }
      }
      pass2(grp, b * B, block_len(b), t).Finish();
    }
    if (p.stream_output) hwy::FlushStream();
  });
}

void GnGradRun(const gn_grad::Plan& p, const gn_grad::Args& a, double* ws) {
  switch (a.dtype) {
    case DType::kFloat32:
      return GnGradRunT<float>(p, a, ws);
    case DType::kFloat16:
      return GnGradRunT<hwy::float16_t>(p, a, ws);
    case DType::kBFloat16:
      return GnGradRunT<hwy::bfloat16_t>(p, a, ws);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/core/dispatch.hpp"

namespace nnops {
HWY_EXPORT(GnGradRun);

void gn_grad::run(const Plan& plan, const Args& a, void* workspace) {
  detail::init_dispatch();
  NNOPS_DYNAMIC_DISPATCH(GnGradRun, a.dtype)(plan, a, static_cast<double*>(workspace));
}
}  // namespace nnops
#endif  // HWY_ONCE
