// Helpers shared by the nnops subcommands: timing, fast random fills, table printing.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/host_buffer.hpp"

namespace nnops::cli {

using detail::HostBuffer;

/// Seconds since an arbitrary epoch (steady clock).
inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Seconds taken by each of `n` successive calls of f.
template <class F>
std::vector<double> time_calls(int n, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    const double t0 = now_seconds();
    f();
    t.push_back(now_seconds() - t0);
  }
  return t;
}

/// Fills b with uniform values in [lo, hi), rounded to b's dtype; deterministic for a seed, parallel.
void fill_uniform(HostBuffer& b, uint64_t seed, float lo, float hi);

/// mean and rstd ([N, G]) as a forward GroupNorm pass would have saved them for x ([N, G, ...]):
/// per group, the mean and 1/sqrt(variance + 1e-5), computed in float64 and rounded to their dtype.
void fill_group_stats(const HostBuffer& x, HostBuffer& mean, HostBuffer& rstd);

/// "[8, 32, 16, 64, 64]".
std::string shape_string(const std::vector<int64_t>& shape);

/// Median of the samples (sorted copy).
double median(std::vector<double> v);

/// Pretty number of seconds: "12.3 ms", "456 us".
std::string format_time(double seconds);

}  // namespace nnops::cli
