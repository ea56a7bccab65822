#include "src/ops/problem_util.hpp"

#include <cmath>

#include "src/core/check.hpp"

namespace nnops::ops {
namespace {

// splitmix64: tiny, fast and good enough for test data.
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

double uniform01(uint64_t seed, uint64_t i) {
  return static_cast<double>(mix(seed * 0x100000001B3ull + i) >> 40) * (1.0 / 16777216.0);
}

void fill_uniform(detail::HostBuffer& b, uint64_t seed, float lo, float hi) {
  const int64_t n = b.numel();
  const DType t = b.dtype();
  void* data = b.data();
  const float span = hi - lo;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = lo + span * static_cast<float>(uniform01(seed, static_cast<uint64_t>(i)));
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

Problem empty_problem(const OpDesc& d, const ProblemSpec& spec) {
  Problem p;
  p.attrs = spec.attrs.empty() ? d.attrs_for(spec.shape) : spec.attrs;
  const std::vector<std::vector<int64_t>> shapes = d.shapes(spec.shape, p.attrs);
  for (std::size_t i = 0; i < d.tensors.size(); ++i) {
    const DType t = d.tensors[i].dtype == DtypeRule::kTOrF32 && !spec.aux_like_t ? DType::kFloat32 : spec.dtype;
    p.t.emplace_back(t, shapes[i]);
    p.present.push_back(true);
  }
  return p;
}

int64_t dims_from(const std::vector<int64_t>& shape, std::size_t from) {
  int64_t p = 1;
  for (std::size_t i = from; i < shape.size(); ++i) p *= shape[i];
  return p;
}

std::vector<int64_t> shape_of(const TensorView& v) {
  return std::vector<int64_t>(v.shape(), v.shape() + (v.rank_ok() ? v.rank() : 0));
}

void fill_group_stats(const detail::HostBuffer& x, detail::HostBuffer& mean, detail::HostBuffer& rstd, double eps) {
  const int64_t groups = mean.numel(), m = groups ? x.numel() / groups : 0;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < m; ++i) s += x.get(g * m + i);
    const double mu = m ? s / m : 0;
    for (int64_t i = 0; i < m; ++i) ss += (x.get(g * m + i) - mu) * (x.get(g * m + i) - mu);
    mean.set(g, mu);
    rstd.set(g, 1.0 / std::sqrt((m ? ss / m : 0) + eps));
  }
}

double bench_l2_bytes() { return 0.75 * static_cast<double>(detail::l2_cache_bytes()); }
double bench_l3_bytes() { return 0.5 * static_cast<double>(detail::l3_cache_bytes()); }

std::vector<BenchCase> group_norm_bench_cases(DType t, int arrays) {
  const double s = static_cast<double>(dtype_size(t)) * arrays;
  const int64_t l2 = static_cast<int64_t>(bench_l2_bytes() / s), l3 = static_cast<int64_t>(bench_l3_bytes() / s);
  const int64_t n = static_cast<int64_t>(std::ceil(1024.0 * 1024 * 1024 / (s * 320 * 64 * 64)));
  return {
      {"l2", {1, 64, l2 / 64}, {}, ""},
      {"l3", {2, 64, l3 / 128}, {}, ""},
      {"dram", {n, 320, 64, 64}, {}, ""},
      {"dram-channels-last", {n, 320, 64, 64}, {}, "channels_last"},
  };
}

double scalar_value(const OpDesc& d, const ProblemSpec& spec, int i) {
  if (static_cast<std::size_t>(i) < spec.scalars.size() && !std::isnan(spec.scalars[i])) return spec.scalars[i];
  return static_cast<std::size_t>(i) < d.scalar_defaults.size() ? d.scalar_defaults[i] : 0.0;
}

}  // namespace nnops::ops
