// Float64 reference for GroupNorm and the comparison under its bounds (docs/semantics.md).
#include <cmath>
#include <vector>

#include "src/core/layout.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"

namespace nnops::gn {
namespace {

// Group `q` of the reference: out, scale, and the statistics, from dense row-major [N, C, HxW] inputs.
void reference_group(const double* x, const double* gamma, const double* beta, int64_t cpg, int64_t hw, double eps,
                     double* out, double* scale, double* mean, double* rstd, double* mean_abs) {
  const int64_t m = cpg * hw;
  double s = 0, sa = 0;
  for (int64_t i = 0; i < m; ++i) {
    s += x[i];
    sa += std::fabs(x[i]);
  }
  const double mu = s / static_cast<double>(m);
  double ss = 0;
  for (int64_t i = 0; i < m; ++i) ss += (x[i] - mu) * (x[i] - mu);
  const double rs = 1.0 / std::sqrt(ss / static_cast<double>(m) + eps);
  for (int64_t c = 0; c < cpg; ++c) {
    for (int64_t j = 0; j < hw; ++j) {
      const int64_t i = c * hw + j;
      const double t = (x[i] - mu) * rs * gamma[c];
      out[i] = t + beta[c];
      scale[i] = std::fabs(t) + std::fabs(beta[c]);
    }
  }
  *mean = mu;
  *rstd = rs;
  *mean_abs = sa / static_cast<double>(m);
}

void compare(double got, double ref, double bound, detail::VerifyReport* r) { r->compare(got, ref, bound); }

}  // namespace

detail::VerifyReport verify(const ops::Problem& before, const ops::Problem& after, int64_t sample) {
  detail::VerifyReport r;
  const detail::HostBuffer& x = before.t[kX];
  const std::vector<int64_t>& sh = x.shape();
  const int64_t n = sh[0], c = sh[1], groups = before.attrs[kNumGroups].i;
  const int64_t hw = c && n ? x.numel() / (n * c) : 0;
  if (x.numel() == 0) return r;
  const double eps = before.attrs[kEps].f;
  const int64_t cpg = c / groups, m = cpg * hw;
  const DType t = x.dtype();
  const double u32 = std::ldexp(1.0, -24);
  std::vector<double> xs(m), gs(cpg), bs(cpg), ref(m), scale(m);
  auto check_group = [&](int64_t q) {
    const int64_t ni = q / groups, g = q % groups;
    const int64_t base = (ni * c + g * cpg) * hw;
    for (int64_t i = 0; i < m; ++i) xs[i] = x.get(base + i);
    for (int64_t k = 0; k < cpg; ++k) {
      gs[k] = before.present[kGamma] ? before.t[kGamma].get(g * cpg + k) : 1.0;
      bs[k] = before.present[kBeta] ? before.t[kBeta].get(g * cpg + k) : 0.0;
    }
    double mean, rstd, mean_abs;
    reference_group(xs.data(), gs.data(), bs.data(), cpg, hw, eps, ref.data(), scale.data(), &mean, &rstd, &mean_abs);
    for (int64_t i = 0; i < m; ++i) {
      compare(after.t[kOut].get(base + i), ref[i], ulp_of(ref[i], t) + kBoundC * u32 * scale[i], &r);
    }
    const DType st = after.t[kMean].dtype();
    compare(after.t[kMean].get(q), mean, ulp_of(mean, st) + kBoundC * u32 * mean_abs, &r);
    compare(after.t[kRstd].get(q), rstd, ulp_of(rstd, st) + kBoundC * u32 * rstd, &r);
  };
  const int64_t total = n * groups, stride = sample < 1 ? 1 : sample;
  for (int64_t q = 0; q < total; q += stride) check_group(q);
  if ((total - 1) % stride != 0) check_group(total - 1);
  return r;
}

}  // namespace nnops::gn
