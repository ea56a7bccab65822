#pragma once

#include <string>
#include <vector>

namespace nnops::cli {

struct BenchOptions {
  std::vector<std::string> ops;     // empty = all
  std::vector<std::string> dtypes;  // empty = float32, float16, bfloat16
  std::vector<int> threads;         // empty = 1 and all cores
  std::vector<std::string> sizes;   // l2, l3, dram; empty = all three
  int reps = 9;                     // timed repetitions per case (median and spread reported)
  bool json = false;
};

/// Runs the bandwidth-aware benchmark; returns the process exit status.
int run_bench(const BenchOptions& o);

}  // namespace nnops::cli
