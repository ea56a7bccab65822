#include "tools/cli/bench.hpp"

#include <cstdio>

namespace nnops::cli {
int run_bench(const BenchOptions&) {
  std::fprintf(stderr, "nnops bench: not implemented yet\n");
  return 1;
}
}  // namespace nnops::cli
