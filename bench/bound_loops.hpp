// Loops that measure the throughput floors of the kernels' per-element work (bench/bound_loops.cc).
#pragma once

#include <cstddef>

namespace nnops_bench {

enum class BoundLoop {
  kWidenF32,   // float32 -> float64
  kWidenF16,   // float16 -> float32 -> float64
  kWidenBF16,  // bfloat16 -> float32 -> float64
  kStatsF32,   // the widening and GroupNorm's two statistics: acc += x, acc = fma(x, x, acc)
  kStatsF16,
  kStatsBF16,
  kNarrowF32,    // float64 -> float32
  kBackwardF32,  // dy and x widened, the sums of dy and dy * (x - mean) (GroupNormBackward's first pass); an item is
  kBackwardF16,  // one dy and one x, from the two halves of the row
  kBackwardBF16,
  kBackwardDxF32,  // GroupNormBackward's second pass in float32: dx from dy and x (the row's halves) into a buffer
  kGradSumsF32,    // GroupNormalizationGrad's first pass, float32: dy, gamma, x (the row's first three quarters)
  kGradDxF32,      // its second pass in float32: dx from the same three into a buffer
};

// `reps` passes of `loop` over x[0, n) (elements of the loop's type; n a multiple of 16 float64 vectors of the best
// target, so that the pairs and triples of the row's halves and quarters fill whole steps: 128 covers every x86 one),
// on the target the library would pick (call nnops::detail::init_dispatch first for NNOPS_MAX_CPU_ISA). x has room for
// n + 512 + n / 2 float32 elements: the dx loops write after the input. Returns a checksum (0 on a target without
// float64 vectors, where nothing is measured).
double bound_loop(BoundLoop loop, void* x, size_t n, size_t reps);

// The items one pass of `loop` over n elements takes: n, or the pairs or triples it forms from the row's parts.
size_t bound_loop_items(BoundLoop loop, size_t n);

}  // namespace nnops_bench
