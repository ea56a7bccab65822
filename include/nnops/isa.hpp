// Control over the SIMD instruction set the kernels dispatch to.
//
// One binary carries kernels for several targets (e.g. AVX-512, AVX2, SSE4, SSSE3 and a portable
// 128-bit emulation on x86-64; NEON/SVE on ARM) and picks the best the CPU supports at run time.
// NNOPS_MAX_CPU_ISA=<name> (e.g. avx2, sse4) in the environment caps that choice at start-up.
#pragma once

#include <string>
#include <vector>

#include "nnops/status.hpp"

namespace nnops {

/// One SIMD target compiled into this build.
struct CpuIsa {
  std::string name;  ///< Lower-case Highway name: "avx3", "avx2", "sse4", "ssse3", "emu128", "neon", ...
  long long bits;    ///< Highway's target bit (internal, stable within a build).
  bool supported;    ///< The running CPU can execute it.
};

/// Every target compiled in, best first.
std::vector<CpuIsa> compiled_isas();

/// Name of the target kernels dispatch to now.
std::string current_isa();

/// Restricts dispatch to targets no better than `name` (as listed by compiled_isas(); "native" or ""
/// lifts the cap). Not thread-safe against concurrent calls: set it before starting work.
Status set_max_isa(const std::string& name);

/// Forces dispatch to exactly one supported target (for tests and benchmarks). `bits` = 0 restores
/// normal dispatch (including the NNOPS_MAX_CPU_ISA cap).
Status force_isa_for_testing(long long bits);

}  // namespace nnops
