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
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/bound_loops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/fp_pipes-inl.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops_bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
// The kernels' additions on the pipes they use (fma(t, 1, acc) on x86 with FMA, else a plain add).
using nnops::HWY_NAMESPACE::AccAdd;
using nnops::HWY_NAMESPACE::AccOne;
using nnops::HWY_NAMESPACE::AccSub;
using nnops::HWY_NAMESPACE::LoadF32;

#if HWY_HAVE_FLOAT64

// One float64 vector of the elements at p, widened as the kernels' canonical sums do it (LoadF32: float16 and bfloat16
// through float32, src/core/simd_convert-inl.h; on AVX2 their bfloat16 pairs take LoadF32Pair instead).
template <class D, typename T>
HWY_INLINE hn::Vec<D> Widen(D d, const T* p) {
  return hn::PromoteTo(d, LoadF32(hn::Rebind<float, D>(), p));
}

// `reps` passes over `count` items, 4 vectors a step, each into its own pair of accumulators: add(i, k, &a, &b) adds
// the vector of items at i into accumulator pair k (0-3). Returns a checksum so that nothing is optimized away.
template <class D, class Add>
double TwoSums(D d, size_t count, size_t reps, const Add& add) {
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 4 * N <= count; i += 4 * N) {
      add(i, 0, &a0, &b0), add(i + N, 1, &a1, &b1), add(i + 2 * N, 2, &a2, &b2), add(i + 3 * N, 3, &a3, &b3);
    }
  }
  const auto s = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(b0, b1), hn::Add(b2, b3)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// `reps` passes writing f(i), one float32 vector, to out at every vector of `count` items, two vectors a step.
template <class DF, class F>
double MapLoop(DF df, size_t count, size_t reps, float* out, const F& f) {
  const size_t N = hn::Lanes(df);
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 2 * N <= count; i += 2 * N) {
      const auto v0 = f(i), v1 = f(i + N);
      hn::StoreU(v0, df, out + i);
      hn::StoreU(v1, df, out + i + N);
    }
  }
  return static_cast<double>(out[0]) + static_cast<double>(out[count - 1]);
}

// x[0, n) widened: kStats, the two sums of GroupNorm's statistics on the pipes its kernel puts them (kStatPipes,
// src/ops/norm/group_norm/group_norm_cpu.cc): for float32 half of the first sum's accumulators on the add pipes and the
// rest through AccAdd, for the half types all through AccAdd; the second as fma(x, x, acc) where the target has FMA
// (SquareTerms), else x * x added. Else the widened vectors are only xor'ed together (one cheap bitwise operation
// each) so that the widening is all that is measured.
template <bool kStats, typename T>
double Loop(const T* x, size_t n, size_t reps) {
  const hn::ScalableTag<double> d;
  const auto one = AccOne(d);
  return TwoSums(d, n, reps, [&](size_t i, int k, auto* a, auto* q) HWY_ATTR {
    const auto v = Widen(d, x + i);
    if constexpr (kStats) {
      *a = std::is_same_v<T, float> && k < 2 ? hn::Add(*a, v) : AccAdd(*a, v, one);
      *q = NNOPS_ACC_ON_FMA ? hn::MulAdd(v, v, *q) : hn::Add(*q, hn::Mul(v, v));
    } else {
      *a = hn::Xor(*a, v);
    }
  });
}

// GroupNormBackward's first pass without memory over `m` pairs: dy = x[0, m) and x[m, 2 m) widened, and the
// sums of dy and of dy * (x - mean), as its kernel does them: Sub, Mul, and both accumulations through AccAdd (on
// x86 with FMA, fma(t, 1, acc) on the FMA pipes). An item is a pair.
template <typename T>
double BackwardLoop(const T* x, size_t m, size_t reps) {
  const hn::ScalableTag<double> d;
  const T* dy = x;
  const T* xs = x + m;
  const auto mean = hn::Set(d, 1.25), one = AccOne(d);
  return TwoSums(d, m, reps, [&](size_t i, int, auto* a, auto* q) HWY_ATTR {
    const auto g = Widen(d, dy + i);
    *a = AccAdd(*a, g, one);
    *q = AccAdd(*q, hn::Mul(g, hn::Sub(Widen(d, xs + i), mean)), one);
  });
}

// GroupNormBackward's second pass without memory, float32, over `m` pairs: dx = (k1 * dy - k2) - k3 * (x - mean) from
// dy = x[0, m) and x[m, 2 m) into out (its kernel's Dx: Mul, AccSub, Sub, Mul, Sub).
double BackwardDx(const float* x, size_t m, size_t reps, float* out) {
  const hn::ScalableTag<float> df;
  const float* dy = x;
  const float* xs = x + m;
  const auto one = AccOne(df);
  const auto mh = hn::Set(df, 1.25f), k1 = hn::Set(df, 0.5f), k2 = hn::Set(df, 0.25f), k3 = hn::Set(df, 0.125f);
  return MapLoop(df, m, reps, out, [&](size_t i) HWY_ATTR {
    return hn::Sub(AccSub(hn::Mul(k1, hn::LoadU(df, dy + i)), k2, one),
                   hn::Mul(k3, hn::Sub(hn::LoadU(df, xs + i), mh)));
  });
}

// GroupNormalizationGrad's first pass without memory, float32 (its float64 path), over `m` triples: dy = x[0, m),
// gamma = x[m, 2 m) and x[2 m, 3 m) widened, p = dy * gamma, the sums of p (through AccAdd) and of
// fma(p, x - mean, acc).
double GradSums(const float* x, size_t m, size_t reps) {
  const hn::ScalableTag<double> d;
  const float* dy = x;
  const float* gamma = x + m;
  const float* xs = x + 2 * m;
  const auto mean = hn::Set(d, 1.25), one = AccOne(d);
  return TwoSums(d, m, reps, [&](size_t i, int, auto* a, auto* b) HWY_ATTR {
    const auto p = hn::Mul(Widen(d, dy + i), Widen(d, gamma + i));
    *b = hn::MulAdd(p, hn::Sub(Widen(d, xs + i), mean), *b);
    *a = AccAdd(*a, p, one);
  });
}

// GroupNormalizationGrad's second pass without memory, float32, over `m` triples laid out as GradSums reads them:
// dx = gamma * (k1 * (mean - x) + (rstd * dy - k0)) into out (its kernel's GnGradFn: Sub, MulSub, MulAdd, Mul).
double GradDx(const float* x, size_t m, size_t reps, float* out) {
  const hn::ScalableTag<float> df;
  const float* dy = x;
  const float* gamma = x + m;
  const float* xs = x + 2 * m;
  const auto mean = hn::Set(df, 1.25f), rstd = hn::Set(df, 0.5f), k0 = hn::Set(df, 0.25f), k1 = hn::Set(df, 0.125f);
  return MapLoop(df, m, reps, out, [&](size_t i) HWY_ATTR {
    return hn::Mul(hn::LoadU(df, gamma + i),
                   hn::MulAdd(k1, hn::Sub(mean, hn::LoadU(df, xs + i)), hn::MulSub(rstd, hn::LoadU(df, dy + i), k0)));
  });
}

// float64 -> float32, as PowerSign's float32 path narrows var and m: 4 vectors of f's first elements, widened once (the
// widenings do not depend on i, so they leave the loop), plus a step added each iteration so that the inputs change,
// narrowed n / N times a pass: an add, a narrowing and an xor a vector.
double NarrowF32(const float* f, size_t n, size_t reps) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<float, decltype(d)> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const size_t N = hn::Lanes(d);
  const auto step = hn::Set(d, 0.5);
  auto bump = hn::Zero(d);
  auto a0 = hn::Zero(du), a1 = a0, a2 = a0, a3 = a0;
  for (size_t r = 0; r < reps; ++r) {
    for (size_t i = 0; i + 4 * N <= n; i += 4 * N) {
      bump = hn::Add(bump, step);
      const auto v0 = hn::Add(Widen(d, f), bump), v1 = hn::Add(Widen(d, f + N), bump);
      const auto v2 = hn::Add(Widen(d, f + 2 * N), bump), v3 = hn::Add(Widen(d, f + 3 * N), bump);
      a0 = hn::Xor(a0, hn::BitCast(du, hn::DemoteTo(df, v0))), a1 = hn::Xor(a1, hn::BitCast(du, hn::DemoteTo(df, v1)));
      a2 = hn::Xor(a2, hn::BitCast(du, hn::DemoteTo(df, v2))), a3 = hn::Xor(a3, hn::BitCast(du, hn::DemoteTo(df, v3)));
    }
  }
  return static_cast<double>(hn::GetLane(hn::Xor(hn::Xor(a0, a1), hn::Xor(a2, a3))));
}

#endif  // HWY_HAVE_FLOAT64

// The loop `loop` on this target (bound_loop).
double RunLoop(BoundLoop loop, void* x, size_t n, size_t reps) {
#if HWY_HAVE_FLOAT64
  const auto* f32 = static_cast<const float*>(x);
  // The dx loops' output: half a page (512 floats) past the input, so that an output line shares its address modulo
  // 4 KiB only with input lines 512 elements from the ones the loop reads beside it, loaded long before or after the
  // store (4K aliasing would time the store buffer's false dependencies, not the loop).
  float* out = static_cast<float*>(x) + n + 512;
  const auto* f16 = static_cast<const hwy::float16_t*>(x);
  const auto* bf16 = static_cast<const hwy::bfloat16_t*>(x);
  const size_t items = bound_loop_items(loop, n);  // the pairs' and triples' arrays lie one after the other in x
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
      return BackwardLoop(f32, items, reps);
    case BoundLoop::kBackwardF16:
      return BackwardLoop(f16, items, reps);
    case BoundLoop::kBackwardBF16:
      return BackwardLoop(bf16, items, reps);
    case BoundLoop::kBackwardDxF32:
      return BackwardDx(f32, items, reps, out);
    case BoundLoop::kGradSumsF32:
      return GradSums(f32, items, reps);
    case BoundLoop::kGradDxF32:
      return GradDx(f32, items, reps, out);
  }
  return 0;
#else
  (void)loop, (void)x, (void)n, (void)reps;
  return 0;  // no float64 vectors: nothing to measure
#endif
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
