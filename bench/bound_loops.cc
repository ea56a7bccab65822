// The per-element floors of the kernels, measured: plain Highway loops over a row that stays in L1, each doing one
// pass's per-element work of a kernel with 4 vectors of accumulators per sum (the kernels' canonical 16 lanes on AVX2,
// twice that on AVX-512), so that nothing but the instructions themselves sets their speed on the selected SIMD target
// (NNOPS_MAX_CPU_ISA caps it as it caps the library). Every canonical float64 sum of the GroupNorm family widens each
// element to float64 once (docs/semantics.md), so `widen/*` is a floor for every pass that sums a stored element;
// `stats/*` adds GroupNorm's two accumulations (x and fma(x, x, acc)), the loop of its statistics pass without memory;
// `backward/*` is GroupNormBackward's first pass so (two arrays widened) and `backward_dx` its second; `grad_sums`
// GroupNormalizationGrad's first pass (three arrays widened) and `grad_dx` its second; `narrow` PowerSign's float32
// narrowing. docs/performance.md ("Zen 4, a fourth session") sets them against the probes in L2 and L3.
#include "bench/bound_loops.hpp"

#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/bound_loops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nnops_bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One float64 vector of the elements at p: the element type's widening (float16 and bfloat16 through float32, as the
// kernels do it).
template <class D>
HWY_INLINE hn::Vec<D> Widen(D d, const float* p) {
  return hn::PromoteTo(d, hn::LoadU(hn::Rebind<float, D>(), p));
}
template <class D>
HWY_INLINE hn::Vec<D> Widen(D d, const hwy::float16_t* p) {
  const hn::Rebind<float, D> df;
  return hn::PromoteTo(d, hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::float16_t, D>(), p)));
}
template <class D>
HWY_INLINE hn::Vec<D> Widen(D d, const hwy::bfloat16_t* p) {
  const hn::Rebind<float, D> df;
  return hn::PromoteTo(d, hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::bfloat16_t, D>(), p)));
}

// `reps` passes over x[0, n) (n a multiple of 4 vectors). kStats: the two sums of GroupNorm's statistics; else the
// widened vectors are only xor'ed together (one cheap bitwise operation each) so that the widening is all that
// is measured. Returns a checksum so that nothing is optimized away.
template <bool kStats, typename T>
double Loop(const T* x, size_t n, size_t reps) {
  const hn::ScalableTag<double> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, q0 = a0, q1 = a0, q2 = a0, q3 = a0;
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 4 * N <= n; i += 4 * N) {
      const auto v0 = Widen(d, x + i), v1 = Widen(d, x + i + N), v2 = Widen(d, x + i + 2 * N),
                 v3 = Widen(d, x + i + 3 * N);
      if constexpr (kStats) {
        a0 = hn::Add(a0, v0), a1 = hn::Add(a1, v1), a2 = hn::Add(a2, v2), a3 = hn::Add(a3, v3);
        q0 = hn::MulAdd(v0, v0, q0), q1 = hn::MulAdd(v1, v1, q1), q2 = hn::MulAdd(v2, v2, q2);
        q3 = hn::MulAdd(v3, v3, q3);
      } else {
        a0 = hn::Xor(a0, v0), a1 = hn::Xor(a1, v1), a2 = hn::Xor(a2, v2), a3 = hn::Xor(a3, v3);
      }
    }
  }
  const auto s = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(q0, q1), hn::Add(q2, q3)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// GroupNormBackward's first pass without memory: dy and x widened (the first and the second half of x[0, n)), and the
// sums of dy and of dy * (x - mean), as its kernel does them on x86: Sub, Mul, and both accumulations as fma(t, 1, acc)
// on the FMA pipes (AccAdd, src/core/fp_pipes-inl.h; `one` is opaque so that they stay FMAs). An element is a pair.
template <typename T>
double BackwardLoop(const T* x, size_t n, size_t reps) {
  const hn::ScalableTag<double> d;
  const size_t N = hn::Lanes(d);
  const T* dy = x;
  const T* xs = x + n / 2;
  const auto mean = hn::Set(d, 1.25);
  volatile double opaque_one = 1;
  const auto one = hn::Set(d, opaque_one);
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, q0 = a0, q1 = a0, q2 = a0, q3 = a0;
  auto add = [&](size_t i, hn::Vec<decltype(d)>& a, hn::Vec<decltype(d)>& q) HWY_ATTR {
    const auto g = Widen(d, dy + i);
    a = hn::MulAdd(g, one, a);
    q = hn::MulAdd(hn::Mul(g, hn::Sub(Widen(d, xs + i), mean)), one, q);
  };
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 4 * N <= n / 2; i += 4 * N) {
      add(i, a0, q0), add(i + N, a1, q1), add(i + 2 * N, a2, q2), add(i + 3 * N, a3, q3);
    }
  }
  const auto s = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(q0, q1), hn::Add(q2, q3)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// GroupNormBackward's second pass without memory, float32: dx = (k1 * dy - k2) - k3 * (x - mean) from the two halves
// of x into out (its kernel's Dx: a Mul, an fma for the first subtraction, Sub, Mul, Sub). An element is a pair.
double BackwardDx(const float* x, size_t n, size_t reps, float* out) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const float* dy = x;
  const float* xs = x + n / 2;
  volatile float opaque_one = 1;
  const auto one = hn::Set(df, opaque_one);
  const auto mh = hn::Set(df, 1.25f), k1 = hn::Set(df, 0.5f), k2 = hn::Set(df, 0.25f), k3 = hn::Set(df, 0.125f);
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 2 * N <= n / 2; i += 2 * N) {
      const auto d0 = hn::Sub(hn::NegMulAdd(k2, one, hn::Mul(k1, hn::LoadU(df, dy + i))),
                              hn::Mul(k3, hn::Sub(hn::LoadU(df, xs + i), mh)));
      const auto d1 = hn::Sub(hn::NegMulAdd(k2, one, hn::Mul(k1, hn::LoadU(df, dy + i + N))),
                              hn::Mul(k3, hn::Sub(hn::LoadU(df, xs + i + N), mh)));
      hn::StoreU(d0, df, out + i);
      hn::StoreU(d1, df, out + i + N);
    }
  }
  return static_cast<double>(out[0]) + static_cast<double>(out[n / 2 - 1]);
}

// GroupNormalizationGrad's first pass without memory, float32 (its float64 path): dy, gamma and x widened (the first
// three of the row's quarters), p = dy * gamma, the sums of p (through fma(p, 1, acc)) and of fma(p, x - mean, acc).
// An element is a triple.
double GradSums(const float* x, size_t n, size_t reps) {
  const hn::ScalableTag<double> d;
  const size_t N = hn::Lanes(d);
  const size_t m = n / 4;
  const float* dy = x;
  const float* gamma = x + m;
  const float* xs = x + 2 * m;
  const auto mean = hn::Set(d, 1.25);
  volatile double opaque_one = 1;
  const auto one = hn::Set(d, opaque_one);
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  auto add = [&](size_t i, hn::Vec<decltype(d)>& a, hn::Vec<decltype(d)>& b) HWY_ATTR {
    const auto p = hn::Mul(Widen(d, dy + i), Widen(d, gamma + i));
    b = hn::MulAdd(p, hn::Sub(Widen(d, xs + i), mean), b);
    a = hn::MulAdd(p, one, a);
  };
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 4 * N <= m; i += 4 * N) {
      add(i, a0, b0), add(i + N, a1, b1), add(i + 2 * N, a2, b2), add(i + 3 * N, a3, b3);
    }
  }
  const auto s = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(b0, b1), hn::Add(b2, b3)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// GroupNormalizationGrad's second pass without memory, float32: dx = gamma * (k1 * (mean - x) + (rstd * dy - k0)) from
// the row's first three quarters (dy, gamma, x) into out (its kernel's GnGradFn: Sub, MulSub, MulAdd, Mul). An
// element is a triple.
double GradDx(const float* x, size_t n, size_t reps, float* out) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const size_t m = n / 4;
  const float* dy = x;
  const float* gamma = x + m;
  const float* xs = x + 2 * m;
  const auto mean = hn::Set(df, 1.25f), rstd = hn::Set(df, 0.5f), k0 = hn::Set(df, 0.25f), k1 = hn::Set(df, 0.125f);
  auto dx = [&](size_t i) HWY_ATTR {
    return hn::Mul(hn::LoadU(df, gamma + i),
                   hn::MulAdd(k1, hn::Sub(mean, hn::LoadU(df, xs + i)), hn::MulSub(rstd, hn::LoadU(df, dy + i), k0)));
  };
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 2 * N <= m; i += 2 * N) {
      const auto d0 = dx(i), d1 = dx(i + N);
      hn::StoreU(d0, df, out + i);
      hn::StoreU(d1, df, out + i + N);
    }
  }
  return static_cast<double>(out[0]) + static_cast<double>(out[m - 1]);
}

// float64 -> float32, as PowerSign's float32 path narrows var and m: 4 vectors of f's first elements, widened once (the
// widenings do not depend on i, so they leave the loop), plus the row index i so that the inputs change, narrowed
// n / N times a pass: an add, a narrowing and an xor a vector.
double NarrowF32(const float* f, size_t n, size_t reps) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(du), a1 = a0, a2 = a0, a3 = a0;
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 4 * N <= n; i += 4 * N) {
      const auto v0 = hn::Add(Widen(d, f), hn::Set(d, static_cast<double>(i)));
      const auto v1 = hn::Add(Widen(d, f + N), hn::Set(d, static_cast<double>(i)));
      const auto v2 = hn::Add(Widen(d, f + 2 * N), hn::Set(d, static_cast<double>(i)));
      const auto v3 = hn::Add(Widen(d, f + 3 * N), hn::Set(d, static_cast<double>(i)));
      a0 = hn::Xor(a0, hn::BitCast(du, hn::DemoteTo(df, v0))), a1 = hn::Xor(a1, hn::BitCast(du, hn::DemoteTo(df, v1)));
      a2 = hn::Xor(a2, hn::BitCast(du, hn::DemoteTo(df, v2))), a3 = hn::Xor(a3, hn::BitCast(du, hn::DemoteTo(df, v3)));
    }
  }
  return static_cast<double>(hn::GetLane(hn::Xor(hn::Xor(a0, a1), hn::Xor(a2, a3))));
}

// The loop `loop` on this target (bound_loop).
double RunLoop(BoundLoop loop, void* x, size_t n, size_t reps) {
  const auto* f32 = static_cast<const float*>(x);
  // The dx loops' output: 16 floats past the input, so that no output line sits a multiple of 4 KiB from an input line
  // the same iteration reads (4K aliasing would time the store buffer's false dependencies, not the loop).
  float* out = static_cast<float*>(x) + n + 16;
  const auto* f16 = static_cast<const hwy::float16_t*>(x);
  const auto* bf16 = static_cast<const hwy::bfloat16_t*>(x);
  switch (loop) {
    case BoundLoop::kWidenF32:
      return Loop<false>(f32, n, reps);
    case BoundLoop::kWidenF16:
      return Loop<false>(f16, n, reps);
    case BoundLoop::kWidenBF16:
      return Loop<false>(bf16, n, reps);
    case BoundLoop::kStatsF32:
      return Loop<true>(f32, n, reps);
    case BoundLoop::kStatsF16:
      return Loop<true>(f16, n, reps);
    case BoundLoop::kStatsBF16:
      return Loop<true>(bf16, n, reps);
    case BoundLoop::kNarrowF32:
      return NarrowF32(f32, n, reps);
    case BoundLoop::kBackwardF32:
      return BackwardLoop(f32, n, reps);
    case BoundLoop::kBackwardF16:
      return BackwardLoop(f16, n, reps);
    case BoundLoop::kBackwardBF16:
      return BackwardLoop(bf16, n, reps);
    case BoundLoop::kBackwardDxF32:
      return BackwardDx(f32, n, reps, out);
    case BoundLoop::kGradSumsF32:
      return GradSums(f32, n, reps);
    case BoundLoop::kGradDxF32:
      return GradDx(f32, n, reps, out);
  }
  return 0;
}

}  // namespace HWY_NAMESPACE
}  // namespace nnops_bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nnops_bench {
HWY_EXPORT(RunLoop);

double bound_loop(BoundLoop loop, void* x, size_t n, size_t reps) {
  return HWY_DYNAMIC_DISPATCH(RunLoop)(loop, x, n, reps);
}

size_t bound_loop_items(BoundLoop loop, size_t n) {
  switch (loop) {
    case BoundLoop::kBackwardF32:
    case BoundLoop::kBackwardF16:
    case BoundLoop::kBackwardBF16:
    case BoundLoop::kBackwardDxF32:
      return n / 2;
    case BoundLoop::kGradSumsF32:
    case BoundLoop::kGradDxF32:
      return n / 4;
    default:
      return n;
  }
}
}  // namespace nnops_bench
#endif  // HWY_ONCE
