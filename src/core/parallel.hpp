// The one place nnops starts threads. Everything parallel goes through parallel_region so that the
// threading runtime (OpenMP today) can be swapped without touching kernels.
#pragma once

#include <omp.h>

#include <cstdint>
#include <utility>

namespace nnops::detail {

/// Whether this thread has started an OpenMP team since it last released its pool (see release_thread_pool).
inline thread_local bool t_owns_thread_pool = false;

/// Runs fn(tid, nthreads) once on each of up to `nthreads` threads and waits for all of them. The
/// runtime may grant fewer threads than asked; fn must use the nthreads it is given. nthreads <= 1 runs
/// inline on the caller's thread. fn must not throw.
template <class F>
void parallel_region(int nthreads, F&& fn) {
  if (nthreads <= 1) {
    fn(0, 1);
    return;
  }
  t_owns_thread_pool = true;
#pragma omp parallel num_threads(nthreads)
  { fn(omp_get_thread_num(), omp_get_num_threads()); }
}

/// Lets the idle threads of this thread's OpenMP pool exit (the next parallel_region starts new ones, ~40 us
/// on the 2-core VM). Call outside any parallel_region; a no-op when this thread has no pool.
///
/// NB: why. Each thread that starts OpenMP teams owns a pool of threads, and libgomp counts the threads of every
/// pool, idle ones included. Once they outnumber the CPUs (the host's pool and a stream worker's pool on 2 cores)
/// it stops spinning between parallel regions and sleeps in the kernel instead, so every region of every pool
/// pays a futex wake-up. Measured with plain OpenMP (161 regions over 32 Ki-256 Ki floats, 2 threads): 6.5 ms
/// on a thread of its own, 14.4 ms when the main thread's pool also exists, 4.3 ms once main has released it;
/// ResNet-50's PowerSign step through the C API with a stream lost 1.3-1.6x that way against the C++ API.
/// The stream worker releases its pool when it goes idle, and a launch onto a stream releases the launching
/// thread's pool, so that the pool doing the work is the only one.
inline void release_thread_pool() {
  if (!t_owns_thread_pool) return;
  t_owns_thread_pool = false;
  omp_pause_resource_all(omp_pause_soft);
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
