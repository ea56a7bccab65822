// Google Benchmark microbenchmarks for quick A/B comparisons of kernel changes (`nnops bench` gives the
// bandwidth ratios): every operator of the descriptor list, every dtype, every bench case, on 1 and 2
// threads. Filter with --benchmark_filter, e.g. 'group_norm/float32/l2'.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "nnops/nnops.hpp"
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

}  // namespace

int main(int argc, char** argv) {
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
