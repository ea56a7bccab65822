// InplaceApplyPowerSign CPU kernel: Highway, one source compiled for every target, dispatched at run time.
//
// Two paths:
//  - float64 (float32 data everywhere; float16/bfloat16 on targets without fused multiply-add, and for the
//    lanes the float32 path rejects): every output is the float64 reference correctly rounded to T.
//  - float32 with fused multiply-adds (float16/bfloat16 where the target has FMA): within the one ulp of
//  docs/semantics.md
//    of T, certified per lane; see the NB at HalfScalars. About 3x faster for the half types, which the
//    float64 path left compute-bound at a third of memory bandwidth.
//
// NB: the float64 path. docs/semantics.md asks for every output within one ulp of the float64 result even when var and
// lr*e*grad nearly cancel; float32 arithmetic cannot promise that (the product alone carries a float32
// rounding error that the subtraction then exposes), float64 can. float32 data still moves at memory
// bandwidth beyond cache (see the benchmark). The operations and their order are those of reference() (mul,
// mul, add; then mul, sub; the project builds with -ffp-contract=off), except that m_new's multiply and add
// are fused where that is exact (NB at OmbFitsFma), and the coefficient is one of the plan's three values,
// computed by the reference's own expression, so the unrounded float64 results are bit-for-bit the
// reference's.
//
// NB: rounding float64 -> T on the float64 path. float32 is one round-to-nearest-even conversion.
// float16/bfloat16 go through float32 (the storage helpers take float32), and two successive
// round-to-nearest steps can land one ulp off (and even overflow to Inf where the correct result is the
// largest finite value). We avoid that with round-to-odd in the first step: truncating the 29 low mantissa
// bits of the double and OR-ing "any of them set" into the lowest kept bit gives a float32 value from which
// the final round-to-nearest-even yields the correctly rounded T (float32 has >= 2 more bits than T). That
// holds wherever float32 is normal; below 2^-126 float32 loses precision, which only matters for bfloat16
// (float16 flushes that range to zero whatever the intermediate), so bfloat16 rounds |x| < 2^-126 straight
// onto its subnormal grid with the add-and-subtract trick.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>

#include "src/core/check.hpp"
#include "src/core/parallel.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_foreach_impl.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_cpu.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {
namespace power_sign_kernel {

using power_sign::Plan;

// The reference's float64 update of element k, rounded once to T by store_from_double (inputs are exact
// T values). The scalar targets run it for every element, the vector targets for the lanes the half
// types' float32 certificate rejects. NaN results are stored as the default quiet NaN: which input NaN
// an x86 multiply passes on depends on the operand order the compiler picked for this inlined copy, and
// an element's bits must not depend on which copy (full step or tail) handled it.
HWY_INLINE void UpdateOneExact(const Plan& p, double v, double mm, double g, void* var, void* m, size_t k) {
  const double mn = p.beta * mm + p.one_minus_beta * g;
  double coef = p.coef[1];
  if ((mn > 0 && g > 0) || (mn < 0 && g < 0)) coef = p.coef[2];
  if ((mn > 0 && g < 0) || (mn < 0 && g > 0)) coef = p.coef[0];
  if (mn != mn) coef = mn;  // sign(NaN) is NaN
  auto canonical = [](double x) { return x != x ? std::numeric_limits<double>::quiet_NaN() : x; };
  store_from_double(var, p.dtype, k, canonical(v - coef * g));
  store_from_double(m, p.dtype, k, canonical(mn));
}

#if HWY_TARGET == HWY_SCALAR || !HWY_HAVE_FLOAT64

// Targets without float64 vectors (or without vector halves) run the float64 arithmetic one element at a
// time.
void UpdateRange(const Plan& p, void* var, void* m, const void* grad, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const size_t k = static_cast<size_t>(i);
    UpdateOneExact(p, load_as_double(var, p.dtype, k), load_as_double(m, p.dtype, k), load_as_double(grad, p.dtype, k),
                   var, m, k);
  }
}

#else  // float64 vectors

// float64 -> float32 with round-to-nearest-even and IEEE overflow to Inf.
template <class DH, class DD>
HWY_INLINE hn::Vec<DH> DemoteF64(DH dh, DD dd, hn::Vec<DD> v) {
#if HWY_TARGET == HWY_EMU128
  // NB: Highway 1.0.3's emulated DemoteTo clamps +-Inf and overflow to +-FLT_MAX; convert lane by lane.
  constexpr size_t kLanes = HWY_MAX_BYTES / sizeof(double);
  alignas(64) double in[kLanes];
  alignas(64) float out[kLanes];
  hn::StoreU(v, dd, in);
  for (size_t i = 0; i < hn::Lanes(dd); ++i) out[i] = static_cast<float>(in[i]);
  return hn::LoadU(dh, out);
#else
  (void)dd;
  return hn::DemoteTo(dh, v);
#endif
}

// float64 -> the float32 value that StoreF32 then rounds correctly to T (see the NB at the top). kFixTiny:
// also handle bfloat16 results below 2^-126 (only needed when some lane is there; see TinyBf16).
template <typename T, bool kFixTiny, class DH, class DD>
HWY_INLINE hn::Vec<DH> NarrowForStore(DH dh, DD dd, hn::Vec<DD> v) {
  if constexpr (std::is_same_v<T, float>) {
    return DemoteF64(dh, dd, v);
  } else {
    const hn::RebindToUnsigned<DD> du;
    const auto low = hn::Set(du, (uint64_t{1} << 29) - 1);  // mantissa bits float32 drops
    const auto bits = hn::BitCast(du, v);
    // low bits != 0  <=>  (low bits + 2^29 - 1) has bit 29 set: a branch-free sticky bit. Inf stays Inf
    // (its low bits are 0), NaN stays NaN, a value above FLT_MAX becomes FLT_MAX or Inf: both round to Inf
    // in T, as the exact value does.
    const auto sticky = hn::And(hn::Add(hn::And(bits, low), low), hn::Set(du, uint64_t{1} << 29));
    auto odd = hn::BitCast(dd, hn::Or(hn::AndNot(low, bits), sticky));
    if constexpr (kFixTiny) {
      // |v| < 2^-126: adding 1.5 * 2^-81 moves v to a binade whose float64 spacing is 2^-133, the
      // bfloat16 subnormal spacing, so the addition itself rounds to nearest-even on bfloat16's grid;
      // subtracting the constant back is exact. CopySign keeps the sign of a result that rounds to zero.
      const auto a = hn::Abs(v);
      const auto c = hn::Set(dd, 0x1.8p-81);
      odd = hn::IfThenElse(hn::Lt(a, hn::Set(dd, 0x1p-126)), hn::CopySign(hn::Sub(hn::Add(a, c), c), v), odd);
    }
    return DemoteF64(dh, dd, odd);
  }
}

// Lanes of a or b below 2^-126 in magnitude (NaN is not). Step checks this once for all its results and
// takes the bfloat16 fix above only when needed: measured 7% faster than applying it to every vector.
template <class DD>
HWY_INLINE hn::Mask<DD> TinyMask(DD dd, hn::Vec<DD> a, hn::Vec<DD> b) {
  const auto limit = hn::Set(dd, 0x1p-126);
  return hn::Or(hn::Lt(hn::Abs(a), limit), hn::Lt(hn::Abs(b), limit));
}

// The float64 path's constants, as scalars passed by value (as HalfScalars below): read through the Plan
// reference, the compiler reloaded and re-broadcast all five on every step, because the stores to var and m
// might alias the Plan (5 of the 29 instructions of an AVX2 step).
struct WideScalars {
  static WideScalars For(const Plan& p) { return {p.beta, p.one_minus_beta, p.coef[0], p.coef[1], p.coef[2]}; }
  double beta, omb, c0, c1, c2;
};

// NB: m_new in one fused multiply-add (kFused). The reference rounds beta * m, (1 - beta) * grad and their
// sum. beta * m is exact in float64 (at most 24 x 24 significant bits, and every product of two float32-range
// values lies far inside float64's normal range); (1 - beta) * grad is exact as well when 1 - beta has at most
// 29 significant bits (grad has at most 24). Then the reference's sum is the exact value rounded once, which
// is fma(1 - beta, grad, beta * m), bit for bit: the fused product is the same exact product, so zeros get
// the same signs and Inf/NaN the same results. OmbFitsFma checks the 29 bits once per call (every beta in
// [2^-6, 1) and beta = 0 pass; e.g. beta = 0.001f needs 33 bits and takes the unfused path). On targets
// without FMA, MulAdd is a multiply and an add, i.e. the reference's own operations.
HWY_INLINE bool OmbFitsFma(double omb) {
  uint64_t bits;
  std::memcpy(&bits, &omb, sizeof(bits));
  return (bits & ((uint64_t{1} << 24) - 1)) == 0;  // the low 24 of the 52 stored significand bits are zero
}

// NB: the coefficient from the sign of prod = m_new * grad (kFinite: all three coefficients finite, checked
// once per call). IfNegativeThenElse reads only the sign bit (x86 blendv: one instruction), and prod = +-0
// then takes coef[1]: two operations fewer than testing > 0 and < 0 separately. The two differ only where
// prod is NaN and m_new is not (a NaN m_new takes m_new's NaN below either way): with a NaN grad var_new is
// NaN whatever the coefficient; with m_new = +-Inf and grad = +-0 the reference takes coef[1] and this takes
// coef[0] or coef[2], but all three are lr * exp(...) with exp(...) a positive number or +0 (never Inf when
// they are finite), so they have lr's sign and coef * grad is the same signed zero. Without kFinite (e.g. an
// infinite coef[2] would make that product NaN) the two comparisons run, and so they do on targets whose
// IfThenElse needs a whole-lane mask: SSSE3 (where Highway 1.0.3's IfNegativeThenElse for 32/64-bit lanes
// passes the raw vector as the mask, which is wrong), EMU128, and Arm (where the sign test costs as much as
// a comparison).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSE4
#define NNOPS_PS_SIGN_BLEND 1
#else
#define NNOPS_PS_SIGN_BLEND 0
#endif

// The reference's float64 arithmetic on one float64 vector.
template <bool kFused, bool kFinite, class DD>
HWY_INLINE void UpdateF64(DD dd, const WideScalars k, hn::Vec<DD> v, hn::Vec<DD> m, hn::Vec<DD> g, hn::Vec<DD>* v_new,
                          hn::Vec<DD>* m_new) {
  const auto zero = hn::Zero(dd);
  const auto bm = hn::Mul(hn::Set(dd, k.beta), m);
  const auto mn = kFused ? hn::MulAdd(hn::Set(dd, k.omb), g, bm) : hn::Add(bm, hn::Mul(hn::Set(dd, k.omb), g));
  // sign(m_new) * sign(grad) from the sign of the product. It cannot underflow to zero or overflow: the
  // inputs are float32-range values, so a nonzero grad is >= 2^-149 and a nonzero m_new >= 2^-298 (a sum
  // of multiples of 2^-298) in magnitude, both below 2^129, and the product is 0 exactly when a factor is. Where it is
  // NaN (m_new NaN, grad NaN, or m_new = +-Inf with grad = 0) both comparisons fail and the sign_gm = 0 coefficient is
  // taken (the sign path takes another; see the NB above); the NaN cases are settled below.
  const auto prod = hn::Mul(mn, g);
  hn::Vec<DD> coef;
  if constexpr (kFinite && NNOPS_PS_SIGN_BLEND) {
    coef = hn::IfThenElse(hn::Eq(prod, zero), hn::Set(dd, k.c1),
                          hn::IfNegativeThenElse(prod, hn::Set(dd, k.c0), hn::Set(dd, k.c2)));
  } else {
    coef = hn::IfThenElse(hn::Gt(prod, zero), hn::Set(dd, k.c2),
                          hn::IfThenElse(hn::Lt(prod, zero), hn::Set(dd, k.c0), hn::Set(dd, k.c1)));
  }
  // sign(NaN) is NaN, so a NaN m_new gives a NaN coefficient (and var_new), even where grad is 0. A NaN
  // grad needs nothing here: coef * grad is NaN already.
  coef = hn::IfThenElse(hn::IsNaN(mn), mn, coef);
  *v_new = hn::Sub(v, hn::Mul(coef, g));
  *m_new = mn;
}

// NB: how wide to load and store. float32 and (with F16C) float16 convert in one instruction at any width,
// so they load half-width float32 vectors that promote straight to float64. The bfloat16 (and software
// float16) conversions are integer sequences whose cost is per vector, so those load full float32
// vectors and split them into two float64 halves: measured ~40% faster for bfloat16 on AVX-512, while
// splitting costs float32/float16 ~15%.
template <typename T>
constexpr bool kSplitFullVectors = std::is_same_v<T, hwy::bfloat16_t> ||
                                   (std::is_same_v<T, hwy::float16_t> && !NNOPS_NATIVE_F16);

// Narrows the float64 results v0, m0 (and v1, m1 when split) to float32 vectors ready for StoreF32.
template <typename T, bool kFixTiny, class DH, class DD>
HWY_INLINE void Narrow(DH dh, DD dd, hn::Vec<DD> v0, hn::Vec<DD> m0, hn::Vec<DD> v1, hn::Vec<DD> m1,
                       hn::Vec<DH>* v0_out, hn::Vec<DH>* m0_out, hn::Vec<DH>* v1_out, hn::Vec<DH>* m1_out) {
  *v0_out = NarrowForStore<T, kFixTiny>(dh, dd, v0);
  *m0_out = NarrowForStore<T, kFixTiny>(dh, dd, m0);
  if constexpr (kSplitFullVectors<T>) {
    *v1_out = NarrowForStore<T, kFixTiny>(dh, dd, v1);
    *m1_out = NarrowForStore<T, kFixTiny>(dh, dd, m1);
  }
}

// One vector of elements: Lanes(dd) of them, or 2 * Lanes(dd) when split (kTail: only `count`, and no
// memory access past them).
template <typename T, bool kTail, bool kFused, bool kFinite, class DD>
HWY_INLINE void Step(DD dd, const WideScalars k, T* HWY_RESTRICT var, T* HWY_RESTRICT m, const T* HWY_RESTRICT grad,
                     size_t count) {
  using DF = hn::Repartition<float, DD>;
  const hn::Rebind<float, DD> dh;
  using DL = std::conditional_t<kSplitFullVectors<T>, DF, decltype(dh)>;  // the tag loads and stores use
  const DL dl;
  hn::Vec<DL> v, mm, g;
  if constexpr (kTail) {
    v = LoadF32N(dl, var, count);
    mm = LoadF32N(dl, m, count);
    g = LoadF32N(dl, grad, count);
  } else {
    v = LoadF32(dl, var);
    mm = LoadF32(dl, m);
    g = LoadF32(dl, grad);
  }
  // The float64 results: lanes [0, Lanes(dd)) in v0/m0, and when split the upper half in v1/m1.
  hn::Vec<DD> v0, m0, v1, m1;
  if constexpr (kSplitFullVectors<T>) {
    UpdateF64<kFused, kFinite>(dd, k, hn::PromoteTo(dd, hn::LowerHalf(dh, v)), hn::PromoteTo(dd, hn::LowerHalf(dh, mm)),
                               hn::PromoteTo(dd, hn::LowerHalf(dh, g)), &v0, &m0);
    UpdateF64<kFused, kFinite>(dd, k, hn::PromoteTo(dd, hn::UpperHalf(dh, v)), hn::PromoteTo(dd, hn::UpperHalf(dh, mm)),
                               hn::PromoteTo(dd, hn::UpperHalf(dh, g)), &v1, &m1);
  } else {
    UpdateF64<kFused, kFinite>(dd, k, hn::PromoteTo(dd, v), hn::PromoteTo(dd, mm), hn::PromoteTo(dd, g), &v0, &m0);
    v1 = v0;
    m1 = m0;
  }
  hn::Vec<decltype(dh)> v0_out, m0_out, v1_out, m1_out;
  bool fix_tiny = false;
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    fix_tiny = !hn::AllFalse(dd, hn::Or(TinyMask(dd, v0, m0), TinyMask(dd, v1, m1)));
  }
  if (HWY_UNLIKELY(fix_tiny)) {
    Narrow<T, true>(dh, dd, v0, m0, v1, m1, &v0_out, &m0_out, &v1_out, &m1_out);
  } else {
    Narrow<T, false>(dh, dd, v0, m0, v1, m1, &v0_out, &m0_out, &v1_out, &m1_out);
  }
  hn::Vec<DL> v_out, m_out;
  if constexpr (kSplitFullVectors<T>) {
    v_out = hn::Combine(dl, v1_out, v0_out);
    m_out = hn::Combine(dl, m1_out, m0_out);
  } else {
    v_out = v0_out;
    m_out = m0_out;
  }
  if constexpr (kTail) {
    StoreF32N(dl, v_out, var, count);
    StoreF32N(dl, m_out, m, count);
  } else {
    StoreF32(dl, v_out, var);
    StoreF32(dl, m_out, m);
  }
}

#if HWY_NATIVE_FMA
// ---- float16 / bfloat16: float32 evaluation with a per-lane certificate -----------------------------------
// NB: float64 vectors hold half as many lanes and the correctly rounded narrowing costs a dozen integer
// operations per result, which made the half types compute-bound at a third of memory bandwidth. docs/semantics.md
// asks for one ulp of T, and T has 11 (float16) or 8 (bfloat16) significant bits against float32's 24, so
// float32 with fused multiply-adds meets it wherever the lane passes a cheap test; a lane that fails is
// recomputed by the float64 path (UpdateOneExact), so every result is still within one ulp, and each lane's
// result depends on that lane's inputs alone (not on vector width or thread split). Why it holds:
//  - m_new = fma(1 - beta, grad, beta * m). beta * m is exact (11 x 11 or 8 x 8 bits) unless, in bfloat16,
//    it falls below 2^-126 (tiny m or tiny beta; see Bf16Step); 1 - beta is exact (the plan checks it);
//    the fma rounds once. So m_new is the exact value rounded to float32: its sign is exact (a zero
//    m_new from an underflowed beta * m and grad = 0 may be +0 where the reference's rounds to -0), and
//    rounding it on to T (to nearest) is within one ulp of T of the reference (double rounding costs at
//    most that).
//  - var_new = fma(-c, grad, var) with c = coef rounded to float32 (|c - coef| <= 2^-24 |coef|). Its error
//    is <= 2^-24 (|t| + |coef * grad|) and |coef * grad| <= |var| + |var_new|; the test |var| <= 2^10 |t|
//    bounds that by ~2^-14 |t|, less than half an ulp of T (>= 2^-11 |t| for float16). Where var and the
//    update cancel more deeply than that, the lane takes the float64 path.
//  - The test also sends every lane with a non-finite input (HalfCore makes var_new NaN or infinite there,
//    or reproduces the reference's infinities exactly) and every result at or beyond T's largest finite
//    value (where float32 -> T could round across the overflow threshold) to the float64 path.

// The float32 path's constants, as scalars (SVE vectors cannot be struct members); passed by value, so
// the compiler keeps their broadcasts in registers across the loop. `limit`: results at or beyond it take
// the float64 path (float16's largest finite value; for bfloat16 a round figure below its 3.39e38).
struct HalfScalars {
  template <typename T>
  static HalfScalars For(const Plan& p) {
    return {p.beta32,    p.one_minus_beta32, p.coef32[0],
            p.coef32[1], p.coef32[2],        std::is_same_v<T, hwy::float16_t> ? 65504.0f : 3.0e38f};
  }
  float beta, omb, c0, c1, c2, limit;
};

// The float32 update of one vector and its certificate `ok` (see the NB above).
template <class DF>
HWY_INLINE void HalfCore(DF df, const HalfScalars k, hn::Vec<DF> v, hn::Vec<DF> mm, hn::Vec<DF> g, hn::Vec<DF>* t,
                         hn::Vec<DF>* mn, hn::Mask<DF>* ok) {
  const auto zero = hn::Zero(df);
  *mn = hn::MulAdd(hn::Set(df, k.omb), g, hn::Mul(hn::Set(df, k.beta), mm));
  // sign(m_new) * sign(grad) from the product's sign: nonzero factors are >= 2^-71 in magnitude here, so
  // the product cannot underflow to zero (an overflow to Inf keeps the sign).
  const auto prod = hn::Mul(*mn, g);
  // Where the product is NaN (m_new NaN, or +-Inf times a zero grad) prod * 0 + c1 is NaN, and so is t:
  // such lanes fail the test below and get the reference's NaN rules on the float64 path. (An infinite
  // m_new with a nonzero grad has a definite sign_gm, and a finite var_new, as in the reference.)
  const auto c1 = hn::MulAdd(prod, zero, hn::Set(df, k.c1));
#if NNOPS_PS_SIGN_BLEND
  // x86: Ne is the ordered comparison (false for NaN), so NaN lanes take c1 as above, and the others pick
  // c0 or c2 by the sign bit alone (one blendv instead of two comparisons and a blend).
  const auto c =
      hn::IfThenElse(hn::Ne(prod, zero), hn::IfNegativeThenElse(prod, hn::Set(df, k.c0), hn::Set(df, k.c2)), c1);
#else
  const auto c =
      hn::IfThenElse(hn::Gt(prod, zero), hn::Set(df, k.c2), hn::IfThenElse(hn::Lt(prod, zero), hn::Set(df, k.c0), c1));
#endif
  *t = hn::NegMulAdd(c, g, v);
  // NaN fails every comparison, so it lands on the float64 path.
  const auto abs_t = hn::Abs(*t);
  *ok = hn::And(hn::Le(hn::Abs(v), hn::Mul(abs_t, hn::Set(df, 1024.0f))), hn::Lt(abs_t, hn::Set(df, k.limit)));
}

// Recomputes the rejected elements (ok[i] == 0) of a step from their original values orig(i, 0..2) (var, m,
// grad as floats: exact, every T value is a float).
template <class Orig>
HWY_NOINLINE void FixRejected(const Plan& p, const uint8_t* ok, size_t count, const Orig& orig, void* var, void* m) {
  for (size_t i = 0; i < count; ++i) {
    if (!ok[i]) UpdateOneExact(p, orig(i, 0), orig(i, 1), orig(i, 2), var, m, i);
  }
}

// Tail steps load through a zero-filled buffer so that no access goes past the range; padding lanes are
// zeros, which pass the certificate and are never stored.
template <typename T, size_t kLen>
struct TailCopy {
  TailCopy(const T* v, const T* m, const T* g, size_t n) {
    std::memcpy(var, v, n * sizeof(T));
    std::memcpy(mom, m, n * sizeof(T));
    std::memcpy(grad, g, n * sizeof(T));
  }
  alignas(64) T var[kLen] = {};
  alignas(64) T mom[kLen] = {};
  alignas(64) T grad[kLen] = {};
};

// float16: the hardware conversions (F16C) where there are any, else the exact integer sequences. Two float
// vectors (2 * Lanes(df) elements) per step, with one certificate test for both: measured 4.0 -> 3.45
// instructions per element on AVX2 (the loop overhead and the test are paid once per 16 elements).
// Both steps: kFix = false returns false, having written nothing, when some lane fails the certificate;
// kFix = true writes every lane, recomputing the failed ones in float64.
template <bool kTail, bool kFix, class DF>
HWY_INLINE bool F16Step(DF df, const HalfScalars k, const Plan& p, hwy::float16_t* HWY_RESTRICT var,
                        hwy::float16_t* HWY_RESTRICT m, const hwy::float16_t* HWY_RESTRICT grad, size_t count) {
  using T = hwy::float16_t;
  const size_t N = hn::Lanes(df);
  hn::Vec<DF> v0, m0, g0, v1, m1, g1;
  if constexpr (kTail) {
    const TailCopy<T, 2 * kMaxF32Lanes> c(var, m, grad, count);
    v0 = LoadF32(df, c.var);
    m0 = LoadF32(df, c.mom);
    g0 = LoadF32(df, c.grad);
    v1 = LoadF32(df, c.var + N);
    m1 = LoadF32(df, c.mom + N);
    g1 = LoadF32(df, c.grad + N);
  } else {
    v0 = LoadF32(df, var);
    m0 = LoadF32(df, m);
    g0 = LoadF32(df, grad);
    v1 = LoadF32(df, var + N);
    m1 = LoadF32(df, m + N);
    g1 = LoadF32(df, grad + N);
  }
  hn::Vec<DF> t0, mn0, t1, mn1;
  hn::Mask<DF> ok0, ok1;
  HalfCore(df, k, v0, m0, g0, &t0, &mn0, &ok0);
  HalfCore(df, k, v1, m1, g1, &t1, &mn1, &ok1);
  const bool all_ok = hn::AllTrue(df, hn::And(ok0, ok1));
  if (!kFix && !all_ok) return false;
  if constexpr (kTail) {
    const size_t n0 = std::min(count, N);
    StoreF32N(df, t0, var, n0);
    StoreF32N(df, mn0, m, n0);
    if (count > N) {
      StoreF32N(df, t1, var + N, count - N);
      StoreF32N(df, mn1, m + N, count - N);
    }
  } else {
    StoreF32(df, t0, var);
    StoreF32(df, mn0, m);
    StoreF32(df, t1, var + N);
    StoreF32(df, mn1, m + N);
  }
  if (kFix && !all_ok) {
    alignas(64) float orig[3][2 * kMaxF32Lanes], okf[2 * kMaxF32Lanes];
    hn::Store(v0, df, orig[0]);
    hn::Store(m0, df, orig[1]);
    hn::Store(g0, df, orig[2]);
    hn::Store(v1, df, orig[0] + N);
    hn::Store(m1, df, orig[1] + N);
    hn::Store(g1, df, orig[2] + N);
    hn::Store(hn::IfThenElseZero(ok0, hn::Set(df, 1.0f)), df, okf);
    hn::Store(hn::IfThenElseZero(ok1, hn::Set(df, 1.0f)), df, okf + N);
    const size_t n = kTail ? count : 2 * N;
    uint8_t oks[2 * kMaxF32Lanes];
    for (size_t i = 0; i < n; ++i) oks[i] = okf[i] != 0.0f;
    FixRejected(
        p, oks, n, [&](size_t i, int a) { return orig[a][i]; }, var, m);
  }
  return true;
}

// bfloat16: 2 * Lanes(df) elements per step as float32 pairs (Bf16Even/Bf16Odd, simd_convert-inl.h), so
// widening is one shift (even) or one mask (odd) per vector, and narrowing adds half a bfloat16 ulp to the float32 bits
// (a carry into the exponent is the right result) and merges the two high halves back with one blend. That is round to
// nearest with ties away from zero, not to even: the certificate's argument needs only some nearest rounding (an error
// of at most half an ulp), and it saves three integer operations per vector. No NaN handling either: rejected lanes,
// the only ones that can be NaN, are rewritten by FixRejected.
template <bool kTail, bool kFix, class DF>
HWY_INLINE bool Bf16Step(DF df, const HalfScalars k, const Plan& p, hwy::bfloat16_t* HWY_RESTRICT var,
                         hwy::bfloat16_t* HWY_RESTRICT m, const hwy::bfloat16_t* HWY_RESTRICT grad, size_t count) {
  using T = hwy::bfloat16_t;
  const hn::RebindToUnsigned<DF> du;
  const hn::Repartition<uint16_t, DF> du16;
  const hn::Repartition<int16_t, DF> di16;
  using V16 = hn::Vec<decltype(du16)>;
  V16 rv, rm, rg;
  if constexpr (kTail) {
    const TailCopy<T, 2 * kMaxF32Lanes> c(var, m, grad, count);
    rv = hn::Load(du16, reinterpret_cast<const uint16_t*>(c.var));
    rm = hn::Load(du16, reinterpret_cast<const uint16_t*>(c.mom));
    rg = hn::Load(du16, reinterpret_cast<const uint16_t*>(c.grad));
  } else {
    rv = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(var));
    rm = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(m));
    rg = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(grad));
  }
  auto even = [&](V16 r) { return Bf16Even(du, hn::BitCast(du, r)); };
  auto odd = [&](V16 r) { return Bf16Odd(du, hn::BitCast(du, r)); };
  hn::Vec<DF> te, me, to, mo;
  hn::Mask<DF> oke, oko;
  HalfCore(df, k, even(rv), even(rm), even(rg), &te, &me, &oke);
  HalfCore(df, k, odd(rv), odd(rm), odd(rg), &to, &mo, &oko);
  // bfloat16 shares float32's exponent range: a nonzero |grad| below 2^-40 could underflow in the sign
  // product. (|x| + 0x7FFF as int16 is below 0xAB7F exactly for bits 1..0x2B7F, i.e. 0 < |x| < 2^-40, and
  // positive for zero.) A tiny beta * m (tiny m, or a beta as small as the plan allows: down to 2^-133,
  // where 1 - beta is 1 in float64 as well) needs no test: with grad = 0 or |grad| >= 2^-40, m_new is
  // either beta * m rounded to float32 (grad = 0, sign_gm = 0 whatever m_new's sign) or dominated by
  // (1 - beta) * grad >= 2^-48, so the <= 2^-150 error of an underflowing beta * m is far below an ulp.
  const auto mag = hn::Set(du16, 0x7FFFu);
  const auto tiny_lim = hn::Set(di16, static_cast<int16_t>(0xAB7F));
  const auto tiny_g = hn::Lt(hn::BitCast(di16, hn::Add(hn::And(rg, mag), mag)), tiny_lim);
  const bool all_ok = hn::AllTrue(df, hn::And(oke, oko)) && hn::AllFalse(di16, tiny_g);
  if (!kFix && !all_ok) return false;
  auto narrow = [&](hn::Vec<DF> e, hn::Vec<DF> o) {
    const auto half = hn::Set(du, 0x8000u);
    return Bf16JoinHigh(du16, hn::Add(hn::BitCast(du, o), half), hn::Add(hn::BitCast(du, e), half));
  };
  if constexpr (kTail) {
    alignas(64) uint16_t out[2 * kMaxF32Lanes];
    hn::Store(narrow(te, to), du16, out);
    std::memcpy(var, out, count * sizeof(T));
    hn::Store(narrow(me, mo), du16, out);
    std::memcpy(m, out, count * sizeof(T));
  } else {
    hn::StoreU(narrow(te, to), du16, reinterpret_cast<uint16_t*>(var));
    hn::StoreU(narrow(me, mo), du16, reinterpret_cast<uint16_t*>(m));
  }
  if (kFix && !all_ok) {
    alignas(64) uint16_t orig[3][2 * kMaxF32Lanes];
    alignas(64) float okf[2][kMaxF32Lanes];
    hn::Store(rv, du16, orig[0]);
    hn::Store(rm, du16, orig[1]);
    hn::Store(rg, du16, orig[2]);
    hn::Store(hn::IfThenElseZero(oke, hn::Set(df, 1.0f)), df, okf[0]);
    hn::Store(hn::IfThenElseZero(oko, hn::Set(df, 1.0f)), df, okf[1]);
    alignas(64) int16_t tiny[2 * kMaxF32Lanes];  // in element order already
    hn::Store(hn::VecFromMask(di16, tiny_g), di16, tiny);
    auto value = [&](size_t i, int a) { return load_as_double(orig[a], DType::kBFloat16, i); };
    const size_t n = kTail ? count : 2 * hn::Lanes(df);
    uint8_t oks[2 * kMaxF32Lanes];
    for (size_t i = 0; i < n; ++i) oks[i] = okf[i % 2][i / 2] != 0.0f && tiny[i] == 0;
    FixRejected(p, oks, n, value, var, m);
  }
  return true;
}

// One step of either type, with the float64 fix-up (out of line: the hot loop then makes no calls and
// keeps its constants in registers).
template <bool kTail, typename T>
HWY_NOINLINE void HalfStepWithFix(const Plan& p, T* HWY_RESTRICT var, T* HWY_RESTRICT m, const T* HWY_RESTRICT grad,
                                  size_t count) {
  using DF = hn::ScalableTag<float>;
  const DF df;
  if constexpr (std::is_same_v<T, hwy::float16_t>) {
    F16Step<kTail, true>(df, HalfScalars::For<T>(p), p, var, m, grad, count);
  } else {
    Bf16Step<kTail, true>(df, HalfScalars::For<T>(p), p, var, m, grad, count);
  }
}

template <typename T>
void UpdateHalf(const Plan& p, T* HWY_RESTRICT var, T* HWY_RESTRICT m, const T* HWY_RESTRICT grad, size_t n) {
  using DF = hn::ScalableTag<float>;
  const DF df;
  constexpr bool kF16 = std::is_same_v<T, hwy::float16_t>;
  const size_t N = 2 * hn::Lanes(df);  // both step types
  size_t i = 0;
  for (;;) {
    const HalfScalars k = HalfScalars::For<T>(p);
    for (; i + N <= n; i += N) {
      if (p.prefetch) {
        PrefetchStream(var + i, N * sizeof(T));
        PrefetchStream(m + i, N * sizeof(T));
        PrefetchStream(grad + i, N * sizeof(T));
      }
      bool done;
      if constexpr (kF16) {
        done = F16Step<false, false>(df, k, p, var + i, m + i, grad + i, N);
      } else {
        done = Bf16Step<false, false>(df, k, p, var + i, m + i, grad + i, N);
      }
      if (HWY_UNLIKELY(!done)) break;
    }
    if (i + N > n) break;
    HalfStepWithFix<false>(p, var + i, m + i, grad + i, N);
    i += N;
  }
  if (i < n) HalfStepWithFix<true>(p, var + i, m + i, grad + i, n - i);
}
#endif  // HWY_NATIVE_FMA

// The float64 path over n elements, four steps per iteration (loop overhead: 38 -> 37 instructions per 8
// elements on AVX2 compared with two).
template <bool kFused, bool kFinite, typename T>
void UpdateWide(const WideScalars k, T* HWY_RESTRICT var, T* HWY_RESTRICT m, const T* HWY_RESTRICT grad, size_t n,
                bool prefetch) {
  const hn::ScalableTag<double> dd;
  const size_t N = hn::Lanes(dd) * (kSplitFullVectors<T> ? 2 : 1);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    if (prefetch) {
      PrefetchStream(var + i, 4 * N * sizeof(T));
      PrefetchStream(m + i, 4 * N * sizeof(T));
      PrefetchStream(grad + i, 4 * N * sizeof(T));
    }
    Step<T, false, kFused, kFinite>(dd, k, var + i, m + i, grad + i, N);
    Step<T, false, kFused, kFinite>(dd, k, var + i + N, m + i + N, grad + i + N, N);
    Step<T, false, kFused, kFinite>(dd, k, var + i + 2 * N, m + i + 2 * N, grad + i + 2 * N, N);
    Step<T, false, kFused, kFinite>(dd, k, var + i + 3 * N, m + i + 3 * N, grad + i + 3 * N, N);
  }
  if (i + 2 * N <= n) {
    Step<T, false, kFused, kFinite>(dd, k, var + i, m + i, grad + i, N);
    Step<T, false, kFused, kFinite>(dd, k, var + i + N, m + i + N, grad + i + N, N);
    i += 2 * N;
  }
  if (i + N <= n) {
    Step<T, false, kFused, kFinite>(dd, k, var + i, m + i, grad + i, N);
    i += N;
  }
  if (i < n) Step<T, true, kFused, kFinite>(dd, k, var + i, m + i, grad + i, n - i);
}

template <typename T>
void UpdateTyped(const Plan& p, T* HWY_RESTRICT var, T* HWY_RESTRICT m, const T* HWY_RESTRICT grad, size_t n) {
#if HWY_NATIVE_FMA
  if constexpr (!std::is_same_v<T, float>) {
    if (p.half_fast) return UpdateHalf(p, var, m, grad, n);
  }
#endif
  const WideScalars k = WideScalars::For(p);
  const bool finite = NNOPS_PS_SIGN_BLEND && std::isfinite(k.c0) && std::isfinite(k.c1) && std::isfinite(k.c2);
  if (OmbFitsFma(k.omb)) {
    return finite ? UpdateWide<true, true>(k, var, m, grad, n, p.prefetch)
                  : UpdateWide<true, false>(k, var, m, grad, n, p.prefetch);
  }
  return finite ? UpdateWide<false, true>(k, var, m, grad, n, p.prefetch)
                : UpdateWide<false, false>(k, var, m, grad, n, p.prefetch);
}

void UpdateRange(const Plan& p, void* var, void* m, const void* grad, int64_t begin, int64_t end) {
  const size_t b = static_cast<size_t>(begin), n = static_cast<size_t>(end - begin);
  switch (p.dtype) {
    case DType::kFloat32:
      return UpdateTyped(p, static_cast<float*>(var) + b, static_cast<float*>(m) + b,
                         static_cast<const float*>(grad) + b, n);
    case DType::kFloat16:
      return UpdateTyped(p, static_cast<hwy::float16_t*>(var) + b, static_cast<hwy::float16_t*>(m) + b,
                         static_cast<const hwy::float16_t*>(grad) + b, n);
    case DType::kBFloat16:
      return UpdateTyped(p, static_cast<hwy::bfloat16_t*>(var) + b, static_cast<hwy::bfloat16_t*>(m) + b,
                         static_cast<const hwy::bfloat16_t*>(grad) + b, n);
  }
}

#endif  // HWY_TARGET == HWY_SCALAR || !HWY_HAVE_FLOAT64

}  // namespace power_sign_kernel

// Entry point per target: one dynamic dispatch per call, on the caller's thread; the worker threads then
// stay within this target's code.
void RunPowerSign(const power_sign::Plan& p, void* var, void* m, const void* grad) {
  const int64_t blocks = (p.numel + power_sign::kThreadBlock - 1) / power_sign::kThreadBlock;
  detail::parallel_region(p.num_threads, [&](int tid, int nt) HWY_ATTR {
    const auto [b0, b1] = detail::split_range(blocks, nt, tid);
    const int64_t begin = b0 * power_sign::kThreadBlock;
    const int64_t end = std::min(b1 * power_sign::kThreadBlock, p.numel);
    if (begin < end) power_sign_kernel::UpdateRange(p, var, m, grad, begin, end);
  });
}

// Multi-tensor entry (inplace_apply_power_sign_foreach.cpp): one parallel region over the kThreadBlock-element
// blocks of every entry, split into contiguous ranges of the total block sequence. A thread's range covers
// the tail of one entry, whole entries, and the head of another; within an entry ranges start at multiples
// of kThreadBlock, as in RunPowerSign, so every element gets the bits a single call gives it.
void RunPowerSignForeach(const power_sign::ForeachBatch& b) {
  const int64_t total = b.first_block[b.count];
  detail::parallel_region(b.num_threads, [&](int tid, int nt) HWY_ATTR {
    const auto [b0, b1] = detail::split_range(total, nt, tid);
    if (b0 >= b1) return;
    // The last entry whose first block is <= b0 (empty entries have no blocks and are stepped over).
    size_t i =
        static_cast<size_t>(std::upper_bound(b.first_block, b.first_block + b.count + 1, b0) - b.first_block) - 1;
    for (; i < b.count && b.first_block[i] < b1; ++i) {
      const int64_t lo = std::max(b0, b.first_block[i]) - b.first_block[i];
      const int64_t hi = std::min(b1, b.first_block[i + 1]) - b.first_block[i];
      const int64_t begin = lo * power_sign::kThreadBlock;
      const int64_t end = std::min(hi * power_sign::kThreadBlock, b.plans[i].numel);
      if (begin < end) power_sign_kernel::UpdateRange(b.plans[i], b.var[i], b.m[i], b.grad[i], begin, end);
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "src/core/dispatch.hpp"

namespace nnops {
HWY_EXPORT(RunPowerSign);

namespace power_sign {

// use_locking: a process-wide table of mutexes striped by the address of var. Calls on the same var
// buffer (same data pointer) always take the same mutex and so run one after another; unrelated buffers
// that hash to the same stripe are merely serialized too. Only one mutex is ever held, so this cannot
// deadlock. As in TensorFlow, a call with use_locking = false takes no lock at all and may interleave
// with anything, locked or not. Views that overlap var at a different start address are not covered.
std::mutex& var_lock(const void* var) {
  static std::mutex stripes[64];
  const uint64_t h = (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(var)) >> 6) * 0x9E3779B97F4A7C15ull;
  return stripes[h >> 58];
}

void run(const Plan& p, const Args& a) {
  if (p.numel <= 0) return;
  detail::init_dispatch();
  NNOPS_DYNAMIC_DISPATCH(RunPowerSign, p.dtype)(p, a.var, a.m, a.grad);
}

HWY_EXPORT(RunPowerSignForeach);

void run_foreach(const ForeachBatch& b) {
  if (b.count == 0 || b.first_block[b.count] == 0) return;
  detail::init_dispatch();
  // One target for the whole batch: AVX2 for float32 where that is the faster (dispatch.hpp) only when every entry
  // is float32, as a mixed batch's half types run faster on AVX-512 there.
  DType dtype = DType::kFloat32;
  for (size_t i = 0; i < b.count; ++i) {
    if (b.plans[i].dtype != DType::kFloat32) dtype = b.plans[i].dtype;
  }
  NNOPS_DYNAMIC_DISPATCH(RunPowerSignForeach, dtype)(b);
}

}  // namespace power_sign
}  // namespace nnops
#endif  // HWY_ONCE
