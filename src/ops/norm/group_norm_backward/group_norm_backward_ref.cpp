// Float64 reference for GroupNormBackward and the comparison under its bounds (docs/semantics.md).
#include <cmath>
#include <vector>

#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"

namespace nnops::gn_bwd {
namespace {

void compare(double got, double ref, double bound, detail::VerifyReport* r) { r->compare(got, ref, bound); }

}  // namespace

Reference reference(const double* dy, const double* x, const double* mean, const double* rstd, const double* gamma,
                    int64_t n, int64_t c, int64_t hw, int64_t groups) {
  Reference r;
  const int64_t cpg = c / groups, m = cpg * hw;
  r.dx.resize(n * c * hw);
  r.dx_scale.resize(n * c * hw);
  r.dgamma.assign(c, 0.0);
  r.dgamma_scale.assign(c, 0.0);
  r.dbeta.assign(c, 0.0);
  r.dbeta_scale.assign(c, 0.0);
  auto g_of = [&](int64_t ch) { return gamma ? gamma[ch] : 1.0; };
  for (int64_t ni = 0; ni < n; ++ni) {
    for (int64_t g = 0; g < groups; ++g) {
      const double mu = mean[ni * groups + g], rs = rstd[ni * groups + g];
      const int64_t base = (ni * c + g * cpg) * hw;
      double a = 0, b = 0;
      for (int64_t i = 0; i < m; ++i) {
        const int64_t ch = g * cpg + i / hw;
        const double xhat = (x[base + i] - mu) * rs;
        a += dy[base + i] * g_of(ch);
        b += dy[base + i] * g_of(ch) * xhat;
        r.dgamma[ch] += dy[base + i] * xhat;
        r.dgamma_scale[ch] += std::fabs(dy[base + i] * xhat);
        r.dbeta[ch] += dy[base + i];
        r.dbeta_scale[ch] += std::fabs(dy[base + i]);
      }
      const double md = static_cast<double>(m);
      for (int64_t i = 0; i < m; ++i) {
        const int64_t ch = g * cpg + i / hw;
        const double xhat = (x[base + i] - mu) * rs;
        r.dx[base + i] = rs * (g_of(ch) * dy[base + i] - (a + xhat * b) / md);
        r.dx_scale[base + i] = rs * (std::fabs(g_of(ch) * dy[base + i]) + std::fabs(a) / md + std::fabs(xhat * b) / md);
      }
    }
  }
  return r;
}

detail::VerifyReport verify(const ops::Problem& before, const ops::Problem& after, int64_t sample) {
  detail::VerifyReport r;
  const detail::HostBuffer& x = before.t[kX];
  const std::vector<int64_t>& sh = x.shape();
  const int64_t n = sh[0], c = sh[1], groups = before.attrs[kNumGroups].i;
  const int64_t hw = n && c ? x.numel() / (n * c) : 0;
  const std::vector<bool>& mask = before.attrs[kOutputMask].mask;
  const double u32 = std::ldexp(1.0, -24);
  // Every sample-th sample n feeds the reference of dx; dgamma and dbeta need all of them.
  auto all = [](const detail::HostBuffer& b) {
    std::vector<double> v(b.numel());
    for (int64_t i = 0; i < b.numel(); ++i) v[i] = b.get(i);
    return v;
  };
  const std::vector<double> dy = all(before.t[kDy]), xs = all(x), mean = all(before.t[kMean]),
                            rstd = all(before.t[kRstd]);
  const std::vector<double> gamma = before.present[kGamma] ? all(before.t[kGamma]) : std::vector<double>();
  const Reference ref = reference(dy.data(), xs.data(), mean.data(), rstd.data(),
                                  gamma.empty() ? nullptr : gamma.data(), n, c, hw, groups);
  const DType t = x.dtype();
  if (mask[0]) {
    const int64_t m = groups ? c / groups * hw : 0, total = n * groups, stride = sample < 1 ? 1 : sample;
    auto check_group = [&](int64_t q) {
      for (int64_t i = q * m; i < (q + 1) * m; ++i) {
        compare(after.t[kDx].get(i), ref.dx[i], ulp_of(ref.dx[i], t) + kBoundC * u32 * ref.dx_scale[i], &r);
      }
    };
    for (int64_t q = 0; q < total; q += stride) check_group(q);
    if (total > 0 && (total - 1) % stride != 0) check_group(total - 1);
  }
  for (int k : {1, 2}) {
    if (!mask[k]) continue;
    const detail::HostBuffer& out = after.t[k == 1 ? kDgamma : kDbeta];
    const std::vector<double>& v = k == 1 ? ref.dgamma : ref.dbeta;
    const std::vector<double>& sc = k == 1 ? ref.dgamma_scale : ref.dbeta_scale;
    for (int64_t ch = 0; ch < c; ++ch) {
      compare(out.get(ch), v[ch], ulp_of(v[ch], out.dtype()) + kBoundC * u32 * sc[ch], &r);
    }
  }
  return r;
}

}  // namespace nnops::gn_bwd
