// Result of comparing an operator's output with its float64 reference under its bound (docs/semantics.md).
#pragma once

#include <cmath>
#include <cstdint>

namespace nnops::detail {

struct VerifyReport {
  int64_t checked = 0;        ///< Elements compared.
  int64_t failures = 0;       ///< Elements outside their bound (NaN mismatch counts as outside).
  double max_abs_err = 0;     ///< Largest |out - ref| over checked elements with finite values.
  double worst_ratio = 0;     ///< Largest |out - ref| / bound; <= 1 passes.
  double err_at_worst = 0;    ///< |out - ref| where worst_ratio was reached.
  double bound_at_worst = 0;  ///< The bound there.
  bool pass() const { return failures == 0; }

  /// Records one comparison.
  void add(double err, double bound) {
    ++checked;
    if (!(err <= bound)) ++failures;
    if (err > max_abs_err) max_abs_err = err;
    const double ratio = bound > 0 ? err / bound : (err > 0 ? 1e300 : 0);
    if (!(ratio <= worst_ratio)) {
      worst_ratio = ratio;
      err_at_worst = err;
      bound_at_worst = bound;
    }
  }

  /// Records |got - ref| against `bound`; NaN must meet NaN (then the error is 0), NaN against a number fails.
  void compare(double got, double ref, double bound) {
    if (std::isnan(ref) || std::isnan(got)) {
      add(std::isnan(ref) && std::isnan(got) ? 0.0 : INFINITY, 0.0);
      return;
    }
    add(got == ref ? 0.0 : std::fabs(got - ref), bound);
  }
};

}  // namespace nnops::detail
