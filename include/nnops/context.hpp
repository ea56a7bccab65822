// Per-call execution settings.
#pragma once

namespace nnops {

/// How a call runs. A default Context uses the environment: NNOPS_NUM_THREADS if set, else OpenMP's
/// default thread count. Results never depend on the thread count (bitwise).
struct Context {
  /// Threads to use; 0 = default (see above). Values above the element count are harmless.
  int num_threads = 0;
};

/// The thread count a call with this context will use (>= 1).
int resolve_num_threads(const Context& ctx) noexcept;

}  // namespace nnops
