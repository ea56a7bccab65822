// Shared test helpers: run a body on every SIMD target the CPU supports, random data, sentinels.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "nnops/isa.hpp"
#include "nnops/tensor_view.hpp"
#include "src/core/host_buffer.hpp"
#include "src/core/layout.hpp"

namespace nnops::testing {

using detail::HostBuffer;

/// The compiled targets this CPU can run and NNOPS_MAX_CPU_ISA allows, best first.
std::vector<CpuIsa> runnable_isas();

/// The targets for_each_isa runs: every runnable one, or those named in the environment variable
/// NNOPS_TEST_ISAS (comma- or space-separated, e.g. "sve2,sve"; scripts/run_arm_tests.sh sets it per
/// configuration). A named target that this CPU cannot run is a test failure, so a configuration never
/// passes by running nothing.
std::vector<CpuIsa> test_isas();

/// Runs body once per target of test_isas(), with dispatch forced to it (SCOPED_TRACE names the target),
/// and restores normal dispatch afterwards.
void for_each_isa(const std::function<void(const std::string& isa)>& body);

/// True when the environment variable NNOPS_TEST_QUICK is set to a value other than "" or "0": the few
/// tests too slow for an emulator or a sanitizer (scripts/run_arm_tests.sh runs the aarch64 suite under qemu,
/// .ci/run the ASan suite) then run a documented reduced form, with every size class and tail case but
/// fewer or smaller repetitions of the largest (docs/reliability.md, "Reduced").
bool quick_mode();

/// Fills b with values x * 10^e, x uniform in [-1, 1), e uniform in [lo_exp, hi_exp], rounded to dtype.
void fill_random(HostBuffer& b, std::mt19937_64& rng, double lo_exp = 0, double hi_exp = 0);

/// Fills every byte with 0xA5 (a NaN-free pattern in all three dtypes) to detect unintended writes.
void fill_sentinel(HostBuffer& b);

/// Every byte of `raw` outside [p, p + n) is still `fill` (an output written into raw, which was filled so first:
/// nothing was written before or after it, e.g. by a streamed row's head or tail).
inline bool untouched_around(const std::vector<unsigned char>& raw, const unsigned char* p, size_t n,
                             unsigned char fill) {
  const size_t at = static_cast<size_t>(p - raw.data());
  for (size_t k = 0; k < raw.size(); ++k) {
    if ((k < at || k >= at + n) && raw[k] != fill) return false;
  }
  return true;
}

/// Dense row-major strides of a shape (size-0 dims count as 1).
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape);
/// Channels-last strides of an [N, C, d2, ...] shape (src/core/layout.hpp).
using detail::channels_last_strides;

/// A copy of a dense buffer laid out with other strides in storage of its own, whose every other byte holds a
/// sentinel pattern: for strided calls, and to check that they write nothing outside a view's elements.
class StridedCopy {
 public:
  StridedCopy(const HostBuffer& dense, const std::vector<int64_t>& strides);
  const TensorView& view() const { return view_; }
  /// The elements back in a dense buffer.
  HostBuffer dense_copy() const;
  /// Every storage byte that is not an element of the view still holds what it held at construction.
  bool untouched_outside() const;

 private:
  std::vector<unsigned char> storage_, sentinel_copy_;
  TensorView view_;
};

}  // namespace nnops::testing
