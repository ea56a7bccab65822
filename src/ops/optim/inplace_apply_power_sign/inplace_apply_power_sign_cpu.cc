// InplaceApplyPowerSign CPU kernel: Highway, one source compiled for every target, dispatched at run time.
//
// NB: the per-element update is done in float64. SPEC 4 asks for every output within one ulp of the float64
// result even when var and lr*e*grad nearly cancel; float32 arithmetic cannot promise that (the product
// alone carries a float32 rounding error that the subtraction then exposes), float64 can. float32 data
// still moves at memory bandwidth (see the benchmark). The operations and their order are exactly those of
// reference() (mul, mul, add; then mul, sub; no fused multiply-add: the project builds with
// -ffp-contract=off and we never call MulAdd), and the coefficient is one of the plan's three values,
// computed by the reference's own expression, so the unrounded float64 results are bit-for-bit the
// reference's.
//
// NB: rounding float64 -> T. float32 is one round-to-nearest-even conversion. float16/bfloat16 go through
// float32 (the storage helpers take float32), and two successive round-to-nearest steps can land one ulp
// off (and even overflow to Inf where the correct result is the largest finite value). We avoid that with
// round-to-odd in the first step: truncating the 29 low mantissa bits of the double and OR-ing "any of
// them set" into the lowest kept bit gives a float32 value from which the final round-to-nearest-even
// yields the correctly rounded T (float32 has >= 2 more bits than T). That holds wherever float32 is
// normal; below 2^-126 float32 loses precision, which only matters for bfloat16 (float16 flushes that
// range to zero whatever the intermediate), so bfloat16 rounds |x| < 2^-126 straight onto its subnormal
// grid with the add-and-subtract trick. Result: every output is the float64 reference correctly rounded to
// T, for all three dtypes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "src/core/check.hpp"
#include "src/core/parallel.hpp"
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

#if HWY_TARGET == HWY_SCALAR || !HWY_HAVE_FLOAT64

// Targets without float64 vectors (or without vector halves) run the same float64 arithmetic one element
// at a time; store_from_double rounds once, directly to T.
void UpdateRange(const Plan& p, void* var, void* m, const void* grad, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const size_t k = static_cast<size_t>(i);
    const double v = load_as_double(var, p.dtype, k), mm = load_as_double(m, p.dtype, k);
    const double g = load_as_double(grad, p.dtype, k);
    const double mn = p.beta * mm + p.one_minus_beta * g;
    double coef = p.coef[1];
    if ((mn > 0 && g > 0) || (mn < 0 && g < 0)) coef = p.coef[2];
    if ((mn > 0 && g < 0) || (mn < 0 && g > 0)) coef = p.coef[0];
    if (mn != mn) coef = mn;  // sign(NaN) is NaN
    store_from_double(var, p.dtype, k, v - coef * g);
    store_from_double(m, p.dtype, k, mn);
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

// The reference's float64 arithmetic on one float64 vector.
template <class DD>
HWY_INLINE void UpdateF64(DD dd, const Plan& p, hn::Vec<DD> v, hn::Vec<DD> m, hn::Vec<DD> g, hn::Vec<DD>* v_new,
                          hn::Vec<DD>* m_new) {
  const auto zero = hn::Zero(dd);
  const auto mn = hn::Add(hn::Mul(hn::Set(dd, p.beta), m), hn::Mul(hn::Set(dd, p.one_minus_beta), g));
  // sign(m_new) * sign(grad) from the sign of the product. It cannot underflow to zero or overflow: the
  // inputs are float32-range values, so a nonzero grad is >= 2^-149 and a nonzero m_new >= 2^-298 (a sum
  // of multiples of 2^-298) in magnitude, both below 2^129, and the product is 0 exactly when a factor is. Where it is
  // NaN (m_new NaN, grad NaN, or m_new = +-Inf with grad = 0) both tests fail and the sign_gm = 0 coefficient is taken;
  // the NaN cases are settled below.
  const auto prod = hn::Mul(mn, g);
  auto coef = hn::IfThenElse(hn::Gt(prod, zero), hn::Set(dd, p.coef[2]),
                             hn::IfThenElse(hn::Lt(prod, zero), hn::Set(dd, p.coef[0]), hn::Set(dd, p.coef[1])));
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
template <typename T, bool kTail, class DD>
HWY_INLINE void Step(DD dd, const Plan& p, T* HWY_RESTRICT var, T* HWY_RESTRICT m, const T* HWY_RESTRICT grad,
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
    UpdateF64(dd, p, hn::PromoteTo(dd, hn::LowerHalf(dh, v)), hn::PromoteTo(dd, hn::LowerHalf(dh, mm)),
              hn::PromoteTo(dd, hn::LowerHalf(dh, g)), &v0, &m0);
    UpdateF64(dd, p, hn::PromoteTo(dd, hn::UpperHalf(dh, v)), hn::PromoteTo(dd, hn::UpperHalf(dh, mm)),
              hn::PromoteTo(dd, hn::UpperHalf(dh, g)), &v1, &m1);
  } else {
    UpdateF64(dd, p, hn::PromoteTo(dd, v), hn::PromoteTo(dd, mm), hn::PromoteTo(dd, g), &v0, &m0);
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

template <typename T>
void UpdateTyped(const Plan& p, T* HWY_RESTRICT var, T* HWY_RESTRICT m, const T* HWY_RESTRICT grad, size_t n) {
  const hn::ScalableTag<double> dd;
  const size_t N = hn::Lanes(dd) * (kSplitFullVectors<T> ? 2 : 1);
  size_t i = 0;
  for (; i + N <= n; i += N) Step<T, false>(dd, p, var + i, m + i, grad + i, N);
  if (i < n) Step<T, true>(dd, p, var + i, m + i, grad + i, n - i);
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

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nnops {
HWY_EXPORT(RunPowerSign);

namespace power_sign {
namespace {

// use_locking: a process-wide table of mutexes striped by the address of var. Calls on the same var
// buffer (same data pointer) always take the same mutex and so run one after another; unrelated buffers
// that hash to the same stripe are merely serialized too. Only one mutex is ever held, so this cannot
// deadlock. As in TensorFlow, a call with use_locking = false takes no lock at all and may interleave
// with anything, locked or not. Views that overlap var at a different start address are not covered.
std::mutex& lock_for(const void* var) {
  static std::mutex stripes[64];
  const uint64_t h = (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(var)) >> 6) * 0x9E3779B97F4A7C15ull;
  return stripes[h >> 58];
}

}  // namespace

void run(const Plan& p, const Args& a) {
  if (p.numel <= 0) return;
  detail::init_dispatch();
  if (a.use_locking) {
    const std::lock_guard<std::mutex> hold(lock_for(a.var));
    HWY_DYNAMIC_DISPATCH(RunPowerSign)(p, a.var, a.m, a.grad);
  } else {
    HWY_DYNAMIC_DISPATCH(RunPowerSign)(p, a.var, a.m, a.grad);
  }
}

}  // namespace power_sign
}  // namespace nnops
#endif  // HWY_ONCE
