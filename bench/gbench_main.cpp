// Google Benchmark microbenchmarks for quick A/B comparisons of kernel changes (`nnops bench` gives the
// bandwidth ratios): every operator of the descriptor list, every dtype, every bench case, on 1 and 2
// threads. Filter with --benchmark_filter, e.g. 'group_norm/float32/l2'. The `bound/` cases time the per-element
// floors of bench/bound_loops.cc (items per second on one core: elements, or the (dy, x) pairs and (dy, gamma, x)
// triples of the two- and three-input passes).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bound_loops.hpp"
#include "hwy/aligned_allocator.h"
#include "nnops/nnops.hpp"
#include "src/core/check.hpp"
#include "src/ops/op_desc.hpp"

namespace {

using namespace nnops;

void run_case(benchmark::State& state, const ops::OpDesc* d, DType t, const ops::BenchCase& c) {
  ops::ProblemSpec spec;
  spec.dtype = t;
  spec.shape = c.shape;
  spec.attrs = c.attrs;
  ops::Problem p = d->make_problem(spec);
  const std::vector<TensorView> v = p.views();
  const Context ctx{static_cast<int>(state.range(0))};
  for (auto _ : state) {
    Status s = ops::run_prepared(d->name, d->prepare, v.data(), p.attrs, ctx);
    if (!s) state.SkipWithError(s.message().c_str());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d->bytes(p)));
}

// One bound loop over 2048 elements (8 KiB of float32: in L1), many passes a timing.
void run_bound(benchmark::State& state, nnops_bench::BoundLoop loop) {
  constexpr size_t kN = 2048, kReps = 256;
  // The bits of float32 elements, or pairs of half-type elements, all finite and normal; then room for the dx loops'
  // output (bound_loop). Aligned as the bench's buffers are: a vector load that crosses a line costs more.
  const hwy::AlignedFreeUniquePtr<uint32_t[]> x = hwy::AllocateAligned<uint32_t>(kN + 512 + kN / 2);
  for (size_t i = 0; i < kN; ++i) x[i] = 0x3F803F80u + static_cast<uint32_t>(i % 97) * 0x00010001u;
  double sink = 0;
  for (auto _ : state) {
    sink += nnops_bench::bound_loop(loop, x.get(), kN, kReps);
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * nnops_bench::bound_loop_items(loop, kN) * kReps));
}

}  // namespace

int main(int argc, char** argv) {
  nnops::detail::init_dispatch();  // NNOPS_MAX_CPU_ISA for the bound loops too
  using nnops_bench::BoundLoop;
  const struct {
    const char* name;
    BoundLoop loop;
  } kBounds[] = {{"bound/widen/float32", BoundLoop::kWidenF32},
                 {"bound/widen/float16", BoundLoop::kWidenF16},
                 {"bound/widen/bfloat16", BoundLoop::kWidenBF16},
                 {"bound/stats/float32", BoundLoop::kStatsF32},
                 {"bound/stats/float16", BoundLoop::kStatsF16},
                 {"bound/stats/bfloat16", BoundLoop::kStatsBF16},
                 {"bound/narrow/float32", BoundLoop::kNarrowF32},
                 {"bound/backward/float32", BoundLoop::kBackwardF32},
                 {"bound/backward/float16", BoundLoop::kBackwardF16},
                 {"bound/backward/bfloat16", BoundLoop::kBackwardBF16},
                 {"bound/backward_dx/float32", BoundLoop::kBackwardDxF32},
                 {"bound/grad_sums/float32", BoundLoop::kGradSumsF32},
                 {"bound/grad_dx/float32", BoundLoop::kGradDxF32}};
  for (const auto& b : kBounds) {
    benchmark::RegisterBenchmark(b.name, run_bound, b.loop)->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
  for (const ops::OpDesc* d : ops::all_ops()) {
    for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (const ops::BenchCase& c : d->bench_cases(t)) {
        const std::string name = std::string(d->name) + "/" + dtype_name(t) + "/" + c.size;
        benchmark::RegisterBenchmark(name.c_str(), run_case, d, t, c)
            ->Arg(1)
            ->Arg(2)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
