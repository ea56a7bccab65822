// The one place nnops starts threads. Everything parallel goes through parallel_region so that the
// threading runtime (OpenMP today) can be swapped without touching kernels.
#pragma once

#include <omp.h>

#include <cstdint>
#include <utility>

namespace nnops::detail {

/// Runs fn(tid, nthreads) once on each of up to `nthreads` threads and waits for all of them. The
/// runtime may grant fewer threads than asked; fn must use the nthreads it is given. nthreads <= 1 runs
/// inline on the caller's thread. fn must not throw.
template <class F>
void parallel_region(int nthreads, F&& fn) {
  if (nthreads <= 1) {
    fn(0, 1);
    return;
  }
#pragma omp parallel num_threads(nthreads)
  { fn(omp_get_thread_num(), omp_get_num_threads()); }
}

/// Waits for every thread of the enclosing parallel_region (a no-op outside one).
inline void barrier() {
#pragma omp barrier
}

/// Part `p` of `parts` contiguous, nearly equal pieces of [0, total): the first total % parts pieces
/// get one extra item.
inline std::pair<int64_t, int64_t> split_range(int64_t total, int parts, int p) {
  const int64_t q = total / parts, r = total % parts;
  const int64_t begin = p * q + (p < r ? p : r);
  return {begin, begin + q + (p < r ? 1 : 0)};
}

}  // namespace nnops::detail
