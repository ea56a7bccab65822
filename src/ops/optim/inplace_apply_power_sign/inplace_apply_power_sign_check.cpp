// Validation for InplaceApplyPowerSign. Everything that can reject a call is decided here, before the
// kernel touches var or m (docs/semantics.md, errors), in the order of CANN's phase one: null/layout, dtype, shape,
// values, then memory overlap. Any strides are accepted.
#include <cmath>
#include <cstdio>
#include <string>

#include "src/core/check.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace nnops::power_sign {
namespace {

bool supported_dtype(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// Scalars are T values, so 9 significant digits identify any of them (float32 needs the most).
std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

Status check_scalar_shape(const char* name, const TensorView& t) {
  if (t.rank() == 0 || (t.rank() == 1 && t.dim(0) == 1)) return Status::ok();
  return detail::invalid_arg(kOpName, std::string(name) + " has shape " + t.shape_string() + "; expected [] or [1]");
}

Status check_finite(const char* name, double v) {
  if (std::isfinite(v)) return Status::ok();
  return detail::invalid_arg(kOpName, std::string(name) + " is " + format_value(v) + "; expected a finite value");
}

}  // namespace

Status check(const TensorView& var, const TensorView& m, const TensorView& lr, const TensorView& logbase,
             const TensorView& sign_decay, const TensorView& beta, const TensorView& grad, bool use_locking,
             Args* out) {
  struct Named {
    const char* name;
    const TensorView* t;
  };
  const Named all[] = {{"var", &var},   {"m", &m},      {"lr", &lr}, {"logbase", &logbase}, {"sign_decay", &sign_decay},
                       {"beta", &beta}, {"grad", &grad}};

  int64_t numel = 0;
  for (const Named& a : all) {
    int64_t n = 0;
    if (Status st = detail::check_tensor(kOpName, a.name, *a.t, &n); !st) return st;
    if (a.t == &var) numel = n;
  }

  const DType dt = var.dtype();
  if (!supported_dtype(dt)) {
    return detail::invalid_arg(kOpName, "var has dtype code " + std::to_string(static_cast<int>(dt)) +
                                            "; expected float32, float16 or bfloat16");
  }
  for (const Named& a : all) {
    if (a.t == &var) continue;
    if (Status st = detail::check_dtype(kOpName, a.name, *a.t, dt, "(the dtype of var)"); !st) return st;
  }

  if (Status st = detail::check_same_shape(kOpName, "m", m, "var", var); !st) return st;
  if (Status st = detail::check_same_shape(kOpName, "grad", grad, "var", var); !st) return st;
  for (const Named& a : {all[2], all[3], all[4], all[5]}) {
    if (Status st = check_scalar_shape(a.name, *a.t); !st) return st;
  }

  // The scalars now have one element each, of the right dtype, behind a non-null pointer.
  Scalars s;
  s.lr = load_as_double(lr.data(), dt, 0);
  s.logbase = load_as_double(logbase.data(), dt, 0);
  s.sign_decay = load_as_double(sign_decay.data(), dt, 0);
  s.beta = load_as_double(beta.data(), dt, 0);
  if (!(s.beta >= 0.0 && s.beta < 1.0)) {  // also rejects NaN
    return detail::invalid_arg(kOpName, "beta is " + format_value(s.beta) + "; expected a value in [0, 1)");
  }
  if (Status st = check_finite("lr", s.lr); !st) return st;
  if (Status st = check_finite("logbase", s.logbase); !st) return st;
  if (Status st = check_finite("sign_decay", s.sign_decay); !st) return st;

  if (Status st = detail::check_output_layout(kOpName, "var", var); !st) return st;
  if (Status st = detail::check_output_layout(kOpName, "m", m); !st) return st;
  // NB: var and m are written while grad (and the other output) is still being read, element by element
  // across threads; any overlap would make the result depend on the schedule.
  if (detail::overlaps(var, m)) return detail::overlap_error(kOpName, "var", "m");
  if (detail::overlaps(var, grad)) return detail::overlap_error(kOpName, "var", "grad");
  if (detail::overlaps(m, grad)) return detail::overlap_error(kOpName, "m", "grad");

  *out = Args{var.data(), m.data(), grad.data(), dt, numel, s, use_locking};
  return Status::ok();
}

}  // namespace nnops::power_sign
