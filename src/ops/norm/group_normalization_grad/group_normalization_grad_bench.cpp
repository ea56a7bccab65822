// Google Benchmark microbenchmarks for GroupNormalizationGrad (`nnops bench` gives the bandwidth
// ratios; these are for quick A/B comparisons of kernel changes).
#include <benchmark/benchmark.h>

#include <vector>

#include "nnops/nnops.hpp"
#include "src/core/host_buffer.hpp"

namespace nnops {
namespace {

void BM_GroupNormGrad(benchmark::State& state, DType t, std::vector<int64_t> shape) {
  detail::HostBuffer x(t, shape), dy(t, shape), gamma(t, shape), dx(t, shape);
  detail::HostBuffer mean(DType::kFloat32, {shape[0], shape[1]}), rstd(DType::kFloat32, {shape[0], shape[1]});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.set(i, (i % 17) * 0.1 - 0.8);
    dy.set(i, (i % 13) * 0.01 - 0.06);
    gamma.set(i, 1.0 + (i % 5) * 0.01);
  }
  for (int64_t g = 0; g < mean.numel(); ++g) rstd.set(g, 2.0);
  const Context ctx{static_cast<int>(state.range(0))};
  for (auto _ : state) {
    Status s = group_normalization_grad(x.view(), dy.view(), gamma.view(), mean.view(), rstd.view(), dx.view(), ctx);
    if (!s) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(dx.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 4 * static_cast<int64_t>(x.bytes()));
}

#define NNOPS_GN_BENCH(name, dtype, ...)                                              \
  BENCHMARK_CAPTURE(BM_GroupNormGrad, name, dtype, std::vector<int64_t>{__VA_ARGS__}) \
      ->Arg(1)                                                                        \
      ->Arg(2)                                                                        \
      ->UseRealTime()                                                                 \
      ->Unit(benchmark::kMillisecond)

NNOPS_GN_BENCH(f32_in_l2, DType::kFloat32, 4, 8, 2048);
NNOPS_GN_BENCH(f32_l2_groups, DType::kFloat32, 32, 32, 8, 32, 32);
NNOPS_GN_BENCH(f32_big_groups, DType::kFloat32, 2, 4, 1 << 22);
NNOPS_GN_BENCH(f16_l2_groups, DType::kFloat16, 32, 32, 8, 32, 32);
NNOPS_GN_BENCH(bf16_l2_groups, DType::kBFloat16, 32, 32, 8, 32, 32);

}  // namespace
}  // namespace nnops
