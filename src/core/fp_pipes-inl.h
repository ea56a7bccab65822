// Float additions placed on the pipes that have room (per-target include, after hwy/highway.h, inside a
// HWY_TARGET_INCLUDE'd file): AccAdd and AccSub give the bits of Add and Sub on every target.

// Per-target include guard.
#if defined(NNOPS_CORE_FP_PIPES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NNOPS_CORE_FP_PIPES_INL_H_
#undef NNOPS_CORE_FP_PIPES_INL_H_
#else
#define NNOPS_CORE_FP_PIPES_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// NB: why the accumulators add through MulAdd(t, 1, acc) on x86. fma(t, 1, acc) rounds t + acc once: the same
// bits as Add(acc, t), for every input. Zen cores issue float adds on two pipes and multiplies/FMAs on two
// others, and a canonical sum's loop is all adds (the widening, x - K, two accumulations) but for one multiply:
// moving accumulations onto the FMA pipes balances them. Measured on [4096] float32 in L1 (AVX2, Zen 4), per 16
// elements 4 widenings, 4 x - K, 4 squares and 8 accumulations: all on the add pipes 5.69 G elements/s; all 8
// accumulations on the FMA pipes 7.55 (12 FMA-pipe against 8 add-pipe operations); 2 of the 8 on the add pipes
// 8.84 (10 and 10: Pipes::kHalfOfFirst). The 1 is opaque to the compiler, which would otherwise fold
// fma(t, 1, acc) back into an add. Elsewhere (ARM: one pipe kind; x86 without FMA) a plain add.
#undef NNOPS_ACC_ON_FMA
#if HWY_ARCH_X86 && HWY_NATIVE_FMA
#define NNOPS_ACC_ON_FMA 1
#else
#define NNOPS_ACC_ON_FMA 0
#endif
template <class D>
HWY_INLINE hn::Vec<D> AccOne(D d) {
  volatile hn::TFromD<D> one = 1;
  return hn::Set(d, one);
}
template <class V>
HWY_INLINE V AccAdd(V acc, V t, V one) {
#if NNOPS_ACC_ON_FMA
  return hn::MulAdd(t, one, acc);
#else
  (void)one;
  return hn::Add(acc, t);
#endif
}
// Which accumulators of a sum of `accs` accumulators per statistic add on the add pipes (hn::Add); the others go
// through AccAdd. The bits are the same either way; the best split depends on the terms' other operations and on
// the core (docs/performance.md):
//   kFma: none, for terms with more additions than multiplies;
//   kHalfOfFirst: half of the first statistic's, for terms of one subtraction and one multiply (x - K, (x - K)^2);
//   kHalfAndQuarter: half of the first statistic's and a quarter of the second's, for float32 (dy, dy (x - mean))
//     on AMD Zen 2, whose float32 -> float64 conversions (dy and x both widened) take issue slots of the add and
//     the multiply pipes alike (detail::split_sum_pipes).
// Fractions round up to whole accumulators: exact with four (AVX2, where they were measured); with two (AVX-512) a
// quarter is one, and with one accumulator (SVE from 1024 bits) it adds on the add pipes under any split but kFma.
enum class Pipes { kFma, kHalfOfFirst, kHalfAndQuarter };
constexpr bool OnAddPipe(Pipes p, size_t stat, size_t r, size_t accs) {
  switch (p) {
    case Pipes::kFma:
      return false;
    case Pipes::kHalfOfFirst:
      return stat == 0 && 2 * r < accs;
    case Pipes::kHalfAndQuarter:
      return (stat == 0 ? 2 : 4) * r < accs;
  }
  return false;
}
// a - b with AccAdd's pipe choice: fma(-b, 1, a) = NegMulAdd(b, 1, a) rounds a - b once.
template <class V>
HWY_INLINE V AccSub(V a, V b, V one) {
#if NNOPS_ACC_ON_FMA
  return hn::NegMulAdd(b, one, a);
#else
  (void)one;
  return hn::Sub(a, b);
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#endif  // NNOPS_CORE_FP_PIPES_INL_H_
