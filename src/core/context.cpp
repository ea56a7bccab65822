#include "nnops/context.hpp"

#include <omp.h>

#include <cstdlib>

namespace nnops {

int resolve_num_threads(const Context& ctx) noexcept {
  if (ctx.num_threads > 0) return ctx.num_threads;
  if (const char* env = std::getenv("NNOPS_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0 && n <= 4096) return static_cast<int>(n);
  }
  const int n = omp_get_max_threads();
  return n > 0 ? n : 1;
}

}  // namespace nnops
