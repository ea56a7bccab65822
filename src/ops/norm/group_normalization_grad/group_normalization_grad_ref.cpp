// Float64 reference for GroupNormalizationGrad and the docs/semantics.md comparison.
#include <cmath>
#include <vector>

#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

namespace nnops::gn_grad {

void reference_group(const double* x, const double* dy, const double* gamma, double mean, double rstd, int64_t m,
                     double* ref, double* scale) {
  double s1 = 0, s2 = 0;
  for (int64_t i = 0; i < m; ++i) {
    const double xhat = (x[i] - mean) * rstd;
    s1 += dy[i] * gamma[i];
    s2 += dy[i] * gamma[i] * xhat;
  }
  const double md = static_cast<double>(m);
  for (int64_t i = 0; i < m; ++i) {
    const double xhat = (x[i] - mean) * rstd;
    ref[i] = (rstd / md) * gamma[i] * (md * dy[i] - s1 - xhat * s2);
    scale[i] = (rstd / md) * std::fabs(gamma[i]) * (md * std::fabs(dy[i]) + std::fabs(s1) + std::fabs(xhat * s2));
  }
}

detail::VerifyReport verify(const detail::HostBuffer& x, const detail::HostBuffer& dy, const detail::HostBuffer& gamma,
                            const detail::HostBuffer& mean, const detail::HostBuffer& rstd,
                            const detail::HostBuffer& dx, int64_t group_stride) {
  detail::VerifyReport r;
  const int64_t groups = mean.numel();
  if (groups == 0 || x.numel() == 0) return r;
  const int64_t m = x.numel() / groups;
  const DType t = dx.dtype();
  std::vector<double> xs(m), dys(m), gs(m), ref(m), scale(m);
  auto check_group = [&](int64_t grp) {
    const int64_t base = grp * m;
    for (int64_t i = 0; i < m; ++i) {
      xs[i] = x.get(base + i);
      dys[i] = dy.get(base + i);
      gs[i] = gamma.get(base + i);
    }
    reference_group(xs.data(), dys.data(), gs.data(), mean.get(grp), rstd.get(grp), m, ref.data(), scale.data());
    for (int64_t i = 0; i < m; ++i) {
      const double out = dx.get(base + i);
      if (std::isnan(ref[i]) || std::isnan(out)) {
        r.add(std::isnan(ref[i]) && std::isnan(out) ? 0.0 : INFINITY, 0.0);
        continue;
      }
      const double bound = ulp_of(ref[i], t) + kBoundC * std::ldexp(1.0, -24) * scale[i];
      r.add(out == ref[i] ? 0.0 : std::fabs(out - ref[i]), bound);
    }
  };
  const int64_t stride = group_stride < 1 ? 1 : group_stride;
  for (int64_t grp = 0; grp < groups; grp += stride) check_group(grp);
  if ((groups - 1) % stride != 0) check_group(groups - 1);
  return r;
}

}  // namespace nnops::gn_grad
