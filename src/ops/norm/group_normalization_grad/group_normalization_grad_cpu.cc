// GroupNormalizationGrad CPU kernels: Highway, one source compiled for every target, picked at run time.
//
// Two passes per group. Pass 1 forms s1 = sum dy*gamma and S = sum dy*gamma*(x - mean) in float64
// (the products of float32 values are exact in float64, so cancellation in the sums costs nothing),
// per block of kBlock elements; blocks are added in order. Pass 2 is float32:
//   dx_i = gamma_i * ((rstd*dy_i - k0) - k1*(x_i - mean)),  k0 = rstd*s1/M,  k1 = rstd^3*S/M,
// which is SPEC.md's (rstd/M)*gamma*(M*dy - s1 - xhat*s2) with s2 = rstd*S, regrouped so that each
// element costs one subtraction, two multiplies and one fused multiply-add.

#include <cstddef>
#include <cstdint>

#include "src/core/check.hpp"
#include "src/core/parallel.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/norm/group_normalization_grad/group_normalization_grad_cpu.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {

// Pass 1 over n elements of one block: *s1 = sum dy*gamma, *s = sum dy*gamma*(x - mean), float64.
template <typename T>
HWY_NOINLINE void GnGradBlockSums(const T* HWY_RESTRICT x, const T* HWY_RESTRICT dy, const T* HWY_RESTRICT gamma,
                                  size_t n, double mean, double* s1, double* s) {
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  const hn::Half<decltype(df)> dfh;
  const hn::Repartition<double, decltype(df)> dd;
  const size_t N = hn::Lanes(df);
  const auto vmean = hn::Set(dd, mean);
  // Four independent accumulator chains (low/high halves x two sums) hide the add latency.
  auto a1l = hn::Zero(dd), a1h = hn::Zero(dd), asl = hn::Zero(dd), ash = hn::Zero(dd);
  auto step = [&](hn::Vec<decltype(df)> vx, hn::Vec<decltype(df)> vdy, hn::Vec<decltype(df)> vg) {
    const auto pl = hn::Mul(hn::PromoteTo(dd, hn::LowerHalf(dfh, vdy)), hn::PromoteTo(dd, hn::LowerHalf(dfh, vg)));
    const auto ph = hn::Mul(hn::PromoteTo(dd, hn::UpperHalf(dfh, vdy)), hn::PromoteTo(dd, hn::UpperHalf(dfh, vg)));
    a1l = hn::Add(a1l, pl);
    a1h = hn::Add(a1h, ph);
    asl = hn::MulAdd(pl, hn::Sub(hn::PromoteTo(dd, hn::LowerHalf(dfh, vx)), vmean), asl);
    ash = hn::MulAdd(ph, hn::Sub(hn::PromoteTo(dd, hn::UpperHalf(dfh, vx)), vmean), ash);
  };
  size_t i = 0;
  for (; i + N <= n; i += N) step(LoadF32(df, x + i), LoadF32(df, dy + i), LoadF32(df, gamma + i));
  // Padding lanes read as zero: dy*gamma = 0 adds nothing to either sum.
  if (i < n) step(LoadF32N(df, x + i, n - i), LoadF32N(df, dy + i, n - i), LoadF32N(df, gamma + i, n - i));
  *s1 = hn::GetLane(hn::SumOfLanes(dd, hn::Add(a1l, a1h)));
  *s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(asl, ash)));
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
template <typename T>
HWY_NOINLINE void GnGradApply(const T* HWY_RESTRICT x, const T* dy, const T* HWY_RESTRICT gamma, T* dx, size_t n,
                              float mean, float rstd, float k0, float k1) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto vmean = hn::Set(df, mean), vrstd = hn::Set(df, rstd), vk0 = hn::Set(df, k0), vk1 = hn::Set(df, k1);
  auto f = [&](hn::Vec<decltype(df)> vx, hn::Vec<decltype(df)> vdy, hn::Vec<decltype(df)> vg) {
    const auto t = hn::Sub(hn::Mul(vrstd, vdy), vk0);
    return hn::Mul(vg, hn::NegMulAdd(vk1, hn::Sub(vx, vmean), t));
  };
  size_t i = 0;
  for (; i + N <= n; i += N) StoreF32(df, f(LoadF32(df, x + i), LoadF32(df, dy + i), LoadF32(df, gamma + i)), dx + i);
  if (i < n) {
    const size_t r = n - i;
    StoreF32N(df, f(LoadF32N(df, x + i, r), LoadF32N(df, dy + i, r), LoadF32N(df, gamma + i, r)), dx + i, r);
  }
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
                k0, k1);
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
      return;
    }
    // Shared groups: the same contiguous block range for both passes keeps a thread's share in its
    // own cache; partial sums are published through the workspace.
    const auto [u0, u1] = detail::split_range(p.groups * bpg, nt, tid);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t grp = u / bpg, b = u % bpg;
      const int64_t base = grp * m + b * B;
      GnGradBlockSums(x + base, dy + base, gamma + base, block_len(b),
                      load_as_double(a.mean, a.stat_dtype, grp), &ws[2 * u], &ws[2 * u + 1]);
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
