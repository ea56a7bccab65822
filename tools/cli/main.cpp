// nnops: run, check and benchmark the nnops operators from the command line.
// Exit status: 0 success, 1 operator or data error (or a failed check), 2 usage error.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "nnops/nnops.hpp"
#include "tools/cli/bench.hpp"
#include "tools/cli/demo.hpp"
#include "tools/cli/info.hpp"

int main(int argc, char** argv) {
  CLI::App app{"nnops: CANN ops-nn operators on CPUs (run, check, benchmark)", "nnops"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("nnops ") + nnops::version());

  nnops::cli::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Run both operators in float32/float16/bfloat16 on realistic sizes, verify against the float64 "
              "reference, print one row per case (exit 1 on any FAIL)");
  demo_cmd->add_option("--threads", demo.threads, "Threads (default: NNOPS_NUM_THREADS or all cores)")
      ->check(CLI::Range(0, 4096));
  demo_cmd->add_option("--iters", demo.iters, "Timed calls per case; the median is reported")->check(CLI::Range(1, 1000));
  demo_cmd->add_flag("--quick", demo.quick, "Small shapes (seconds instead of tens of seconds)");

  nnops::cli::BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench", "Time each operator and compare its effective bandwidth with a probe kernel of the same "
               "read/write mix, measured in the same process");
  bench_cmd->add_option("--op", bench.ops, "Operator(s) (default: all)");
  bench_cmd->add_option("--dtype", bench.dtypes, "float32, float16, bfloat16 (default: all)");
  bench_cmd->add_option("--threads", bench.threads, "Thread count(s) (default: 1 and all cores)");
  bench_cmd->add_option("--size", bench.sizes, "l2, l3, dram (default: all)")
      ->check(CLI::IsMember({"l2", "l3", "dram"}));
  bench_cmd->add_option("--reps", bench.reps, "Timed repetitions per case")->check(CLI::Range(3, 1000));
  bench_cmd->add_flag("--json", bench.json, "Machine-readable output (one JSON document)");

  CLI::App* info_cmd = app.add_subcommand("info", "Version, build, SIMD targets, threads, cores and caches");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (*demo_cmd) return nnops::cli::run_demo(demo);
  if (*bench_cmd) return nnops::cli::run_bench(bench);
  if (*info_cmd) return nnops::cli::run_info();
  return 2;
}
