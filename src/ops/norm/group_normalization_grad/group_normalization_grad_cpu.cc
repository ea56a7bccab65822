// GroupNormalizationGrad CPU kernels: Highway, one source compiled for every target, picked at run time.
//
// Two passes per group. Pass 1 forms s1 = sum dy*gamma and S = sum dy*gamma*(x - mean) in float64
// from exact products (so cancellation in the sums costs nothing), per block of kBlock elements; blocks
// are added in order. float32 products (24x24 bits) are formed in float64. For the half types the
// product is formed in float32, which is exact there, and only it and x are widened (half the
// conversions): always for float16 (11x11 bits, range [2^-48, 2^32]); for bfloat16 (8x8 bits) unless a
// product can leave float32's normal range, which the block checks (smallest nonzero |dy|, |gamma|
// below 2^-63, or a non-finite s1) and then recomputes with float64 products. Either way s1 and S are
// float64 sums of the same exact products, so the error argument of kBoundC (impl header) is unchanged;
// which path a block takes depends on its data only, never on the thread count. Pass 2 is float32:
//   dx_i = gamma_i * ((rstd*dy_i - k0) - k1*(x_i - mean)),  k0 = rstd*s1/M,  k1 = rstd^3*S/M,
// which is SPEC.md's (rstd/M)*gamma*(M*dy - s1 - xhat*s2) with s2 = rstd*S, regrouped so that each
// element costs one subtraction, two multiplies and one fused multiply-add. bfloat16 vectors are split
// into even and odd elements (one integer operation per float vector each way) in both passes.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "src/core/check.hpp"
#include "src/core/parallel.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/norm/group_normalization_grad/group_normalization_grad_cpu.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {

// Pass 1 over n elements of one block, every product formed in float64: *s1 = sum dy*gamma,
// *s = sum dy*gamma*(x - mean). Used for float32 (24x24-bit products need float64) and as the fallback of
// the half-type blocks below.
template <typename T>
HWY_NOINLINE void GnGradBlockSumsWide(const T* HWY_RESTRICT x, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT gamma,
                                      size_t n, double mean, double* s1, double* s) {
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
  // NB: loading half-width float vectors and widening each straight to double costs one conversion per
  // lane; loading full float vectors and splitting them would add a cross-lane shuffle per half.
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t N = hn::Lanes(dd);
  const auto vmean = hn::Set(dd, mean);
  // Two independent pairs of accumulators hide the add latency.
  auto a1 = hn::Zero(dd), b1 = hn::Zero(dd), as = hn::Zero(dd), bs = hn::Zero(dd);
  auto step = [&](hn::Vec<decltype(df)> vx, hn::Vec<decltype(df)> vdy, hn::Vec<decltype(df)> vg,
                  hn::Vec<decltype(dd)>& acc1, hn::Vec<decltype(dd)>& accs) {
    const auto p = hn::Mul(hn::PromoteTo(dd, vdy), hn::PromoteTo(dd, vg));  // exact: 24x24 bits fit in 53
    acc1 = hn::Add(acc1, p);
    accs = hn::MulAdd(p, hn::Sub(hn::PromoteTo(dd, vx), vmean), accs);
  };
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    step(LoadF32(df, x + i), LoadF32(df, dy + i), LoadF32(df, gamma + i), a1, as);
    step(LoadF32(df, x + i + N), LoadF32(df, dy + i + N), LoadF32(df, gamma + i + N), b1, bs);
  }
  for (; i + N <= n; i += N) step(LoadF32(df, x + i), LoadF32(df, dy + i), LoadF32(df, gamma + i), a1, as);
  // Padding lanes read as zero: dy*gamma = 0 adds nothing to either sum.
  if (i < n) step(LoadF32N(df, x + i, n - i), LoadF32N(df, dy + i, n - i), LoadF32N(df, gamma + i, n - i), a1, as);
  *s1 = hn::GetLane(hn::SumOfLanes(dd, hn::Add(a1, b1)));
  *s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(as, bs)));
#else
  // Targets without float64 vectors (HWY_SCALAR, 32-bit ARM): same sums, one element at a time.
  const hn::ScalableTag<float> df;
  double t1 = 0, t2 = 0;
  for (size_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(hn::GetLane(LoadF32N(df, dy + i, 1))) *
                     static_cast<double>(hn::GetLane(LoadF32N(df, gamma + i, 1)));
    t1 += p;
    t2 += p * (static_cast<double>(hn::GetLane(LoadF32N(df, x + i, 1))) - mean);
  }
  *s1 = t1;
  *s = t2;
#endif
}

#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
// Float64 accumulators of the half-type pass 1: dy*gamma is formed in float32 on full float vectors
// (exact, see GnGradBlockSums) and only the product and x are widened, half a vector at a time. (Plain
// variables, not a struct: SVE vectors are sizeless and cannot be members.)
using GnDD = hn::ScalableTag<double>;
using GnDF = hn::Repartition<float, GnDD>;
using GnDH = hn::Half<GnDF>;
using GnVD = hn::Vec<GnDD>;

HWY_INLINE void GnHalfAdd(hn::Vec<GnDF> p, hn::Vec<GnDH> xlo, hn::Vec<GnDH> xhi, GnVD vmean, GnVD& a1lo, GnVD& a1hi,
                          GnVD& aslo, GnVD& ashi) {
  const GnDD dd;
  const GnDH dh;
  const auto plo = hn::PromoteTo(dd, hn::LowerHalf(dh, p)), phi = hn::PromoteTo(dd, hn::UpperHalf(dh, p));
  a1lo = hn::Add(a1lo, plo);
  a1hi = hn::Add(a1hi, phi);
  aslo = hn::MulAdd(plo, hn::Sub(hn::PromoteTo(dd, xlo), vmean), aslo);
  ashi = hn::MulAdd(phi, hn::Sub(hn::PromoteTo(dd, xhi), vmean), ashi);
}

HWY_INLINE void GnHalfAddFull(hn::Vec<GnDF> p, hn::Vec<GnDF> vx, GnVD vmean, GnVD& a1lo, GnVD& a1hi, GnVD& aslo,
                              GnVD& ashi) {
  const GnDH dh;
  GnHalfAdd(p, hn::LowerHalf(dh, vx), hn::UpperHalf(dh, vx), vmean, a1lo, a1hi, aslo, ashi);
}

HWY_INLINE void GnHalfFinish(GnVD a1lo, GnVD a1hi, GnVD aslo, GnVD ashi, double* s1, double* s) {
  const GnDD dd;
  *s1 = hn::GetLane(hn::SumOfLanes(dd, hn::Add(a1lo, a1hi)));
  *s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(aslo, ashi)));
}
#endif

// Pass 1 over n elements of one block: *s1 = sum dy*gamma, *s = sum dy*gamma*(x - mean), float64.
template <typename T>
HWY_NOINLINE void GnGradBlockSums(const T* HWY_RESTRICT x, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT gamma,
                                  size_t n, double mean, double* s1, double* s) {
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same_v<T, hwy::float16_t>) {
    // float16 has 11-bit significands and exponents in [-24, 15]: dy*gamma has at most 22 significant bits
    // and lies in [2^-48, 2^32] (or is 0), so the float32 product is exact and equals the float64 one.
    // Widening the product instead of both factors halves the conversions.
    const GnDF df;
    const GnDH dh;
    const size_t NF = hn::Lanes(df), NH = hn::Lanes(dh);
    const GnVD vmean = hn::Set(GnDD(), mean);
    GnVD a1lo = hn::Zero(GnDD()), a1hi = a1lo, aslo = a1lo, ashi = a1lo;
    size_t i = 0;
    for (; i + NF <= n; i += NF) {
      const auto p = hn::Mul(LoadF32(df, dy + i), LoadF32(df, gamma + i));
      if constexpr (NNOPS_NATIVE_F16) {  // hardware conversion: one per half
        GnHalfAdd(p, LoadF32(dh, x + i), LoadF32(dh, x + i + NH), vmean, a1lo, a1hi, aslo, ashi);
      } else {  // integer sequence: once per full vector, then split
        GnHalfAddFull(p, LoadF32(df, x + i), vmean, a1lo, a1hi, aslo, ashi);
      }
    }
    // Padding lanes read as zero: dy*gamma = 0 adds nothing to either sum.
    if (i < n) {
      GnHalfAddFull(hn::Mul(LoadF32N(df, dy + i, n - i), LoadF32N(df, gamma + i, n - i)), LoadF32N(df, x + i, n - i),
                    vmean, a1lo, a1hi, aslo, ashi);
    }
    GnHalfFinish(a1lo, a1hi, aslo, ashi, s1, s);
    return;
  } else if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    // bfloat16 has 8-bit significands, so dy*gamma (16 bits) is exact in float32 unless it leaves float32's
    // normal range. Downwards that needs a nonzero |dy| or |gamma| below 2^-63 (the block tracks the
    // smallest nonzero magnitudes); upwards the product becomes Inf, and with Inf/NaN inputs s1 is
    // non-finite. Either way the block is recomputed with float64 products. Zeros, common in dy, stay on
    // the fast path. Both paths sum the same exact products; which one runs depends on the block's data.
    const GnDF df;
    const hn::RebindToUnsigned<decltype(df)> du;
    const hn::Repartition<uint16_t, decltype(df)> du16;
    const size_t N16 = hn::Lanes(du16);
    const GnVD vmean = hn::Set(GnDD(), mean);
    GnVD a1lo = hn::Zero(GnDD()), a1hi = a1lo, aslo = a1lo, ashi = a1lo;
    // min over lanes of 2*|bits| - 1 (wrapping): zero maps to 0xFFFF and never lowers the minimum.
    auto vmin = hn::Set(du16, 0xFFFFu);
    const auto one = hn::Set(du16, 1u);
    auto chunk = [&](const hwy::bfloat16_t* px, const hwy::bfloat16_t* pdy, const hwy::bfloat16_t* pg) {
      const auto rdy = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(pdy));
      const auto rg = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(pg));
      vmin = hn::Min(vmin, hn::Min(hn::Sub(hn::Add(rdy, rdy), one), hn::Sub(hn::Add(rg, rg), one)));
      const auto ux = hn::BitCast(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(px)));
      const auto udy = hn::BitCast(du, rdy), ug = hn::BitCast(du, rg);
      GnHalfAddFull(hn::Mul(Bf16Even(du, udy), Bf16Even(du, ug)), Bf16Even(du, ux), vmean, a1lo, a1hi, aslo, ashi);
      GnHalfAddFull(hn::Mul(Bf16Odd(du, udy), Bf16Odd(du, ug)), Bf16Odd(du, ux), vmean, a1lo, a1hi, aslo, ashi);
    };
    size_t i = 0;
    for (; i + N16 <= n; i += N16) chunk(x + i, dy + i, gamma + i);
    if (i < n) {
      // Zero padding: adds nothing to the sums and is ignored by the range check.
      alignas(64) hwy::bfloat16_t bx[2 * kMaxF32Lanes] = {}, bdy[2 * kMaxF32Lanes] = {}, bg[2 * kMaxF32Lanes] = {};
      std::memcpy(bx, x + i, (n - i) * sizeof(T));
      std::memcpy(bdy, dy + i, (n - i) * sizeof(T));
      std::memcpy(bg, gamma + i, (n - i) * sizeof(T));
      chunk(bx, bdy, bg);
    }
    GnHalfFinish(a1lo, a1hi, aslo, ashi, s1, s);
    alignas(64) uint16_t mins[2 * kMaxF32Lanes];
    hn::Store(vmin, du16, mins);
    uint16_t lo = 0xFFFF;
    for (size_t k = 0; k < N16; ++k) lo = std::min(lo, mins[k]);
    // 2^-63 is bfloat16 0x2000; 2 * 0x2000 - 1 = 0x3FFF.
    if (lo < 0x3FFF || !std::isfinite(*s1)) GnGradBlockSumsWide(x, dy, gamma, n, mean, s1, s);
    return;
  }
#endif
  GnGradBlockSumsWide(x, dy, gamma, n, mean, s1, s);
}

// Pass 2 over n elements. dx may be the same memory as dy (in place), so no restrict on those two.
// `stream`: non-temporal stores for dx (outputs far larger than the cache).
template <typename T>
HWY_NOINLINE void GnGradApply(const T* HWY_RESTRICT x, const T* dy, const T* HWY_RESTRICT gamma, T* dx, size_t n,
                              float mean, float rstd, float k0, float k1, bool stream) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto vmean = hn::Set(df, mean), vrstd = hn::Set(df, rstd), vk0 = hn::Set(df, k0), vk1 = hn::Set(df, k1);
  auto f = [&](size_t i) {
    const auto t = hn::Sub(hn::Mul(vrstd, LoadF32(df, dy + i)), vk0);
    return hn::Mul(LoadF32(df, gamma + i), hn::NegMulAdd(vk1, hn::Sub(LoadF32(df, x + i), vmean), t));
  };
  auto f_partial = [&](size_t i, size_t r) {
    const auto t = hn::Sub(hn::Mul(vrstd, LoadF32N(df, dy + i, r)), vk0);
    StoreF32N(df, hn::Mul(LoadF32N(df, gamma + i, r), hn::NegMulAdd(vk1, hn::Sub(LoadF32N(df, x + i, r), vmean), t)),
              dx + i, r);
  };
  size_t i = 0;
  if (stream) {
    // Peel to the alignment non-temporal stores need.
    const size_t mis = (reinterpret_cast<uintptr_t>(dx) % kStreamAlign) / sizeof(T);
    const size_t head = std::min(n, mis ? (kStreamAlign / sizeof(T) - mis) : 0);
    for (; i < head; i += std::min(N, head - i)) f_partial(i, std::min(N, head - i));
  }
#if HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    // Two float vectors per bfloat16 vector: even elements from the low halves of uint32 pairs, odd ones
    // from the high halves, and back with one blend. Same arithmetic and rounding per element as f().
    const hn::RebindToUnsigned<decltype(df)> du;
    const hn::Repartition<uint16_t, decltype(df)> du16;
    const size_t N16 = hn::Lanes(du16);
    auto g = [&](hn::Vec<decltype(df)> vx, hn::Vec<decltype(df)> vdy, hn::Vec<decltype(df)> vg) {
      const auto t = hn::Sub(hn::Mul(vrstd, vdy), vk0);
      return Bf16RoundedBits(df, hn::Mul(vg, hn::NegMulAdd(vk1, hn::Sub(vx, vmean), t)));
    };
    auto f2 = [&](size_t k) {
      const auto ux = hn::BitCast(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(x + k)));
      const auto udy = hn::BitCast(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(dy + k)));
      const auto ug = hn::BitCast(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(gamma + k)));
      const auto even = g(Bf16Even(du, ux), Bf16Even(du, udy), Bf16Even(du, ug));
      const auto odd = g(Bf16Odd(du, ux), Bf16Odd(du, udy), Bf16Odd(du, ug));
      return Bf16JoinHigh(du16, odd, even);
    };
    uint16_t* out = reinterpret_cast<uint16_t*>(dx);
    if (stream && HWY_TARGET != HWY_EMU128) {
      for (; i + N16 <= n; i += N16) hn::Stream(f2(i), du16, out + i);
    } else {
      for (; i + N16 <= n; i += N16) hn::StoreU(f2(i), du16, out + i);
    }
  }
#endif
  if (stream) {
    for (; i + N <= n; i += N) StreamF32(df, f(i), dx + i);
  } else {
    for (; i + N <= n; i += N) StoreF32(df, f(i), dx + i);
  }
  if (i < n) f_partial(i, n - i);
}

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
  auto apply = [&](int64_t grp, int64_t off, size_t len, double s1, double s) {
    const double mean = load_as_double(a.mean, a.stat_dtype, grp);
    const double rstd = load_as_double(a.rstd, a.stat_dtype, grp);
    const float k0 = static_cast<float>(rstd * s1 / md);
    const float k1 = static_cast<float>(rstd * rstd * rstd * s / md);
    const int64_t base = grp * m + off;
    GnGradApply(x + base, dy + base, gamma + base, dx + base, len, static_cast<float>(mean), static_cast<float>(rstd),
                k0, k1, p.stream_output);
  };

  detail::parallel_region(p.num_threads, [&](int tid, int nt) {
    if (!p.split_groups) {
      const auto [g0, g1] = detail::split_range(p.groups, nt, tid);
      for (int64_t grp = g0; grp < g1; ++grp) {
        const double mean = load_as_double(a.mean, a.stat_dtype, grp);
        double s1 = 0, s = 0;
        for (int64_t b = 0; b < bpg; ++b) {
          double b1, bs;
          const int64_t base = grp * m + b * B;
          GnGradBlockSums(x + base, dy + base, gamma + base, block_len(b), mean, &b1, &bs);
          s1 += b1;
          s += bs;
        }
        apply(grp, 0, static_cast<size_t>(m), s1, s);
      }
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
                      &ws[2 * u], &ws[2 * u + 1]);
    }
    detail::barrier();
    int64_t cur = -1;
    double s1 = 0, s = 0;
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t grp = u / bpg, b = u % bpg;
      if (grp != cur) {  // group totals: the block partials added in block order, as in the other mode
        cur = grp;
        s1 = s = 0;
        for (int64_t k = grp * bpg; k < (grp + 1) * bpg; ++k) {
          s1 += ws[2 * k];
          s += ws[2 * k + 1];
        }
      }
      apply(grp, b * B, block_len(b), s1, s);
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
namespace nnops {
HWY_EXPORT(GnGradRun);

void gn_grad::run(const Plan& plan, const Args& a, void* workspace) {
  detail::init_dispatch();
  HWY_DYNAMIC_DISPATCH(GnGradRun)(plan, a, static_cast<double*>(workspace));
}
}  // namespace nnops
#endif  // HWY_ONCE
