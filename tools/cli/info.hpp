#pragma once
namespace nnops::cli {
/// Prints version, build type, SIMD targets (compiled and selected), threads, cores and caches.
int run_info();
}  // namespace nnops::cli
