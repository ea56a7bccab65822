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

/// "sign_decay" -> "sign-decay" (the CLI's spelling of a descriptor name).
std::string option_name(const std::string& name);
/// CLI11 names of an option: "--sign-decay,--sign_decay" (both spellings), "--x".
std::string option_names(const std::string& name);

/// "[8, 32, 16, 64, 64]".
std::string shape_string(const std::vector<int64_t>& shape);

/// Median of the samples (sorted copy).
double median(std::vector<double> v);

/// Pretty number of seconds: "12.3 ms", "456 us".
std::string format_time(double seconds);

}  // namespace nnops::cli
