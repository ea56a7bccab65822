#pragma once

#include <string>
#include <vector>

namespace nnops::cli {

struct BenchOptions {
  std::vector<std::string> ops;        // empty = all
  std::vector<std::string> dtypes;     // empty = float32, float16, bfloat16
  std::vector<int> threads;            // empty = 1 and all cores
  std::vector<std::string> sizes;      // l2, l3, dram; empty = all three
  std::vector<std::string> layouts;    // huge, offset, adjacent; empty = huge and adjacent
  std::vector<std::string> workloads;  // resnet50, unet: run these instead of the operator cases
  std::string shape;                   // "D0,D1,...": one case of this main shape instead of the size classes
  bool channels_last = false;          // the --shape case with every tensor of rank >= 3 channels-last
  bool sweep = false;                  // 1 thread against more, over sizes (the thread grain)
  int reps = 9;                        // timed repetitions per case (median and spread reported)
  bool json = false;
};

/// Runs the bandwidth-aware benchmark; returns the process exit status.
int run_bench(const BenchOptions& o);

namespace bench_detail {
/// The workloads (tools/cli/bench_workload.cpp). Each prints its rows (unless json) and appends its JSON
/// objects to *json; returns false on an operator error.
struct WorkloadArgs {
  std::vector<int> dtypes;  // DType values
  std::vector<int> threads;
  std::vector<int> layouts;  // Layout values
  int reps;
  bool json;
};
bool run_resnet50(const WorkloadArgs& a, std::vector<std::string>* json);
bool run_unet(const WorkloadArgs& a, std::vector<std::string>* json);
}  // namespace bench_detail

}  // namespace nnops::cli
