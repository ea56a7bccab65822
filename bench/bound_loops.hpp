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
  kBackwardF32,  // dy and x widened, the sums of dy and dy * (x - mean) (GroupNormBackward's first pass); an element is
  kBackwardF16,  // one dy and one x, from the two halves of the row
  kBackwardBF16,
};

// `reps` passes of `loop` over x[0, n) (elements of the loop's type; n a multiple of 4 float64 vectors of the
// best target, 32 covers every x86 one), on the target the library would pick (call nnops::detail::init_dispatch
// first for NNOPS_MAX_CPU_ISA). Returns a checksum.
double bound_loop(BoundLoop loop, const void* x, size_t n, size_t reps);

}  // namespace nnops_bench
