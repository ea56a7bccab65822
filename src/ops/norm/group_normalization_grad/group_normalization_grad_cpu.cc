// GroupNormalizationGrad CPU kernels: Highway, one source compiled for every target, picked at run time.
//
// Two passes per group. Pass 1 forms s1 = sum dy*gamma and S = sum dy*gamma*(x - mean) in float64
// (the products of float32 values are exact in float64, so cancellation in the sums costs nothing),
// per block of kBlock elements; blocks are added in order. Pass 2 is float32:
//   dx_i = gamma_i * ((rstd*dy_i - k0) - k1*(x_i - mean)),  k0 = rstd*s1/M,  k1 = rstd^3*S/M,
// which is SPEC.md's (rstd/M)*gamma*(M*dy - s1 - xhat*s2) with s2 = rstd*S, regrouped so that each
// element costs one subtraction, two multiplies and one fused multiply-add.

#include <algorithm>
#include <cstddef>
#include <cstdint>
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

// Storage types whose widening to float32 is an integer sequence (cost per vector, not per lane).
template <typename T>
constexpr bool kWidenPerVector = std::is_same_v<T, hwy::bfloat16_t> ||
                                 (std::is_same_v<T, hwy::float16_t> && !NNOPS_NATIVE_F16);

// Pass 1 over n elements of one block: *s1 = sum dy*gamma, *s = sum dy*gamma*(x - mean), float64.
template <typename T>
HWY_NOINLINE void GnGradBlockSums(const T* HWY_RESTRICT x, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT gamma,
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
  if constexpr (kWidenPerVector<T>) {
    // bfloat16 (and software float16) widen with integer sequences whose cost is per vector: widen a full
    // float32 vector once and split it into two float64 halves.
    const hn::Repartition<float, decltype(dd)> dfull;
    const hn::Half<decltype(dfull)> dhalf;
    auto split_step = [&](hn::Vec<decltype(dfull)> vx, hn::Vec<decltype(dfull)> vdy, hn::Vec<decltype(dfull)> vg) {
      step(hn::LowerHalf(dhalf, vx), hn::LowerHalf(dhalf, vdy), hn::LowerHalf(dhalf, vg), a1, as);
      step(hn::UpperHalf(dhalf, vx), hn::UpperHalf(dhalf, vdy), hn::UpperHalf(dhalf, vg), b1, bs);
    };
    for (; i + 2 * N <= n; i += 2 * N)
      split_step(LoadF32(dfull, x + i), LoadF32(dfull, dy + i), LoadF32(dfull, gamma + i));
    if (i < n)
      split_step(LoadF32N(dfull, x + i, n - i), LoadF32N(dfull, dy + i, n - i), LoadF32N(dfull, gamma + i, n - i));
  } else {
    for (; i + 2 * N <= n; i += 2 * N) {
      step(LoadF32(df, x + i), LoadF32(df, dy + i), LoadF32(df, gamma + i), a1, as);
      step(LoadF32(df, x + i + N), LoadF32(df, dy + i + N), LoadF32(df, gamma + i + N), b1, bs);
    }
    for (; i + N <= n; i += N) step(LoadF32(df, x + i), LoadF32(df, dy + i), LoadF32(df, gamma + i), a1, as);
    // Padding lanes read as zero: dy*gamma = 0 adds nothing to either sum.
    if (i < n) step(LoadF32N(df, x + i, n - i), LoadF32N(df, dy + i, n - i), LoadF32N(df, gamma + i, n - i), a1, as);
  }
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
