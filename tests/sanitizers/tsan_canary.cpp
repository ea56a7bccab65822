// ThreadSanitizer canary (tsan preset only; test ConcurrencyTsanCanary). The concurrency tests passing under
// TSan means something only if TSan sees the threads nnops uses. This program makes one deliberate data
// race inside nnops' own parallel_region (OpenMP threads: seen through LLVM OpenMP's Archer tool) or
// between two std::threads, chosen by argv[1] ("omp" or "thread"); the test passes only when TSan reports it.
// With "omp-clean" the same region is race-free (barrier between the writes), and TSan must stay silent:
// that is the check that OpenMP synchronization is understood and produces no false positives.
#include <cstdio>
#include <cstring>
#include <thread>

#include "src/core/parallel.hpp"

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "omp";
  static long shared = 0;
  if (std::strcmp(mode, "thread") == 0) {
    std::thread a([] { shared += 1; }), b([] { shared += 2; });
    a.join();
    b.join();
  } else {
    const bool clean = std::strcmp(mode, "omp-clean") == 0;
    nnops::detail::parallel_region(2, [&](int tid, int nthreads) {
      if (nthreads < 2) return;
      if (!clean || tid == 0) shared += tid + 1;  // both threads write: a race unless clean
      nnops::detail::barrier();
      if (clean && tid == 1) shared += 2;  // ordered after thread 0's write by the barrier
    });
  }
  std::printf("shared = %ld\n", shared);
  return 0;
}
