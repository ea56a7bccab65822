// Plan ("tiling") for InplaceApplyPowerSign: the three possible update coefficients and the thread count.
#include <algorithm>
#include <cmath>

#include "src/core/check.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace nnops::power_sign {

Plan make_plan(const Args& a, const Context& ctx) {
  Plan p{};
  p.dtype = a.dtype;
  p.numel = a.numel;
  // sign_gm takes only the values -1, 0, +1, so exp() is needed three times per call, never per element.
  // The expression is the reference's, operand for operand, so the coefficients are bitwise its values.
  for (int k = -1; k <= 1; ++k) {
    p.coef[k + 1] = a.s.lr * std::exp(a.s.logbase * a.s.sign_decay * static_cast<double>(k));
  }
  p.beta = a.s.beta;
  p.one_minus_beta = 1.0 - a.s.beta;
  // The float32 evaluation of the half types needs every coefficient's float32 rounding to be normal and
  // its products with a gradient to stay far from overflow, and 1 - beta to be the very float64 value the
  // reference multiplies by (the error argument in inplace_apply_power_sign_cpu.cc rests on both).
  p.half_fast =
      a.dtype != DType::kFloat32 && static_cast<double>(static_cast<float>(p.one_minus_beta)) == p.one_minus_beta;
  for (int k = 0; k < 3; ++k) {
    const double c = std::fabs(p.coef[k]);
    p.half_fast = p.half_fast && (c == 0 || (c >= 0x1p-60 && c <= 0x1p60));
    p.coef32[k] = static_cast<float>(p.coef[k]);
  }
  p.beta32 = static_cast<float>(p.beta);
  p.one_minus_beta32 = static_cast<float>(p.one_minus_beta);
  p.prefetch = detail::software_prefetch(detail::PrefetchLoop::kElementwise);
  const int64_t by_size = std::max<int64_t>(1, a.numel / kMinElementsPerThread);
  p.num_threads = static_cast<int>(std::min<int64_t>(by_size, resolve_num_threads(ctx)));
  return p;
}

}  // namespace nnops::power_sign
