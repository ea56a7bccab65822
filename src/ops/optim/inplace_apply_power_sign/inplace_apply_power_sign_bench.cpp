// Google Benchmark for InplaceApplyPowerSign. Bytes processed = 5 * sizeof(T) * n (read var, m, grad;
// write var, m), so the reported rate compares directly with the machine's memory bandwidth.
// BM_PowerSignStreamBaseline moves the same bytes with the same read/write mix and no arithmetic: the
// ratio of the two is the fraction of attainable bandwidth the kernel reaches.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "src/core/host_buffer.hpp"
#include "src/core/parallel.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace nnops {
namespace {

using detail::HostBuffer;

struct Buffers {
  HostBuffer var, m, grad;
  Buffers(DType t, int64_t n) : var(t, {n}), m(t, {n}), grad(t, {n}) {
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    // Values stay small and finite however many iterations run (lr below is tiny).
    for (int64_t i = 0; i < n; ++i) {
      var.set(i, u(rng));
      m.set(i, u(rng));
      grad.set(i, u(rng));
    }
  }
};

void BM_PowerSign(benchmark::State& state, DType t) {
  const int64_t n = state.range(0);
  Buffers b(t, n);
  power_sign::Args a{b.var.data(), b.m.data(), b.grad.data(), t, n, {1e-6, 0.693, 1.0, 0.9}, false};
  const power_sign::Plan p = power_sign::make_plan(a, Context{});  // the kernel alone: plan once
  for (auto _ : state) {
    power_sign::run(p, a);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 5 * static_cast<int64_t>(dtype_size(t)) * n);
  state.counters["threads"] = p.num_threads;
}

// Same split, same bytes read and written (var, m read-modify-write; grad read), float32 adds only.
void BM_PowerSignStreamBaseline(benchmark::State& state) {
  const int64_t n = state.range(0);
  Buffers b(DType::kFloat32, n);
  power_sign::Args a{b.var.data(), b.m.data(), b.grad.data(), DType::kFloat32, n, {1e-6, 0.693, 1.0, 0.9}, false};
  const power_sign::Plan p = power_sign::make_plan(a, Context{});
  float* var = static_cast<float*>(b.var.data());
  float* m = static_cast<float*>(b.m.data());
  const float* grad = static_cast<const float*>(b.grad.data());
  const int64_t blocks = (n + power_sign::kThreadBlock - 1) / power_sign::kThreadBlock;
  for (auto _ : state) {
    detail::parallel_region(p.num_threads, [&](int tid, int nt) {
      const auto [b0, b1] = detail::split_range(blocks, nt, tid);
      const int64_t end = std::min(b1 * power_sign::kThreadBlock, n);
      for (int64_t i = b0 * power_sign::kThreadBlock; i < end; ++i) {
        var[i] += grad[i];
        m[i] -= grad[i];
      }
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 5 * 4 * n);
  state.counters["threads"] = p.num_threads;
}

// 4 Ki elements (L1/L2), 256 Ki (L2/L3), 1 Mi (L3) and 16 Mi: 96 MiB (bf16/f16) to 192 MiB (f32) of
// var + m + grad, far beyond a 32 MiB L3.
void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {int64_t{1} << 12, int64_t{1} << 18, int64_t{1} << 20, int64_t{1} << 24}) b->Arg(n);
  b->UseRealTime();
}

BENCHMARK_CAPTURE(BM_PowerSign, f32, DType::kFloat32)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_PowerSign, f16, DType::kFloat16)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_PowerSign, bf16, DType::kBFloat16)->Apply(Sizes);
BENCHMARK(BM_PowerSignStreamBaseline)->Apply(Sizes);

}  // namespace
}  // namespace nnops
