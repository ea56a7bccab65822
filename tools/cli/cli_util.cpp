#include "tools/cli/cli_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nnops/dtype.hpp"

namespace nnops::cli {

namespace {
// splitmix64: tiny, fast and good enough for test data; one independent stream per 64K chunk keeps
// the fill deterministic whatever the thread count.
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

void fill_uniform(HostBuffer& b, uint64_t seed, float lo, float hi) {
  const int64_t n = b.numel();
  const DType t = b.dtype();
  void* data = b.data();
  const float span = hi - lo;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float u =
        static_cast<float>(mix(seed * 0x100000001B3ull + static_cast<uint64_t>(i)) >> 40) * (1.0f / 16777216.0f);
    const float v = lo + span * u;
    switch (t) {
      case DType::kFloat32:
        static_cast<float*>(data)[i] = v;
        break;
      case DType::kFloat16:
        static_cast<uint16_t*>(data)[i] = float_to_half_bits(v);
        break;
      case DType::kBFloat16:
        static_cast<uint16_t*>(data)[i] = float_to_bf16_bits(v);
        break;
    }
  }
}

void fill_group_stats(const HostBuffer& x, HostBuffer& mean, HostBuffer& rstd) {
  const int64_t groups = mean.numel(), m = groups ? x.numel() / groups : 0;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < m; ++i) s += x.get(g * m + i);
    const double mu = m ? s / m : 0;
    for (int64_t i = 0; i < m; ++i) ss += (x.get(g * m + i) - mu) * (x.get(g * m + i) - mu);
    mean.set(g, mu);
    rstd.set(g, 1.0 / std::sqrt((m ? ss / m : 0) + 1e-5));
  }
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

std::string format_time(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

}  // namespace nnops::cli
