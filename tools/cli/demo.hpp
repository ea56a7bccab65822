#pragma once

namespace nnops::cli {

struct DemoOptions {
  int threads = 0;     // 0 = default
  int iters = 5;       // timed calls per case (median reported)
  bool quick = false;  // small shapes (for tests)
};

/// Runs the demo table; returns the process exit status (0 = every case passed).
int run_demo(const DemoOptions& o);

}  // namespace nnops::cli
