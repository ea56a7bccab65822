// float64 reference for InplaceApplyPowerSign and the docs/semantics.md comparison built on it.
#include <cmath>
#include <limits>

#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace nnops::power_sign {
namespace {

// numpy's sign: NaN for NaN, so a NaN m_new or grad makes the exponent, and var_new, NaN.
double sign_of(double x) {
  if (x > 0) return 1.0;
  if (x < 0) return -1.0;
  if (x == 0) return 0.0;
  return std::numeric_limits<double>::quiet_NaN();
}

// One output against its reference value `ref` (unrounded float64).
void compare(double got, double ref, DType t, detail::VerifyReport* r) {
  const double want = round_to_dtype(ref, t);
  if (std::isnan(want) || std::isnan(got) || std::isinf(want) || std::isinf(got)) {
    // Outside the finite range only the class (and the sign of an infinity) is meaningful: exact match.
    const bool ok = std::isnan(want) ? std::isnan(got) : got == want;
    ++r->checked;
    if (!ok) ++r->failures;
    return;
  }
  // The rounding error of the reference itself plus one ulp of T: the bound admits round_to_dtype(ref)
  // and its neighbours (one ulp either side), nothing further.
  r->add(std::fabs(got - ref), std::fabs(want - ref) + ulp_of(want, t));
}

}  // namespace

void reference(const Scalars& s, double var, double m, double grad, double* var_new, double* m_new) {
  const double mn = s.beta * m + (1.0 - s.beta) * grad;
  const double sign_gm = sign_of(mn) * sign_of(grad);
  *m_new = mn;
  *var_new = var - s.lr * std::exp(s.logbase * s.sign_decay * sign_gm) * grad;
}

detail::VerifyReport verify(const Scalars& s, const detail::HostBuffer& var_before, const detail::HostBuffer& m_before,
                            const detail::HostBuffer& grad, const detail::HostBuffer& var_after,
                            const detail::HostBuffer& m_after, int64_t stride) {
  detail::VerifyReport r;
  const DType t = var_after.dtype();
  if (stride < 1) stride = 1;
  for (int64_t i = 0; i < var_after.numel(); i += stride) {
    double vr, mr;
    reference(s, var_before.get(i), m_before.get(i), grad.get(i), &vr, &mr);
    compare(var_after.get(i), vr, t, &r);
    compare(m_after.get(i), mr, t, &r);
  }
  return r;
}

}  // namespace nnops::power_sign
