// The nnops command line: every subcommand and option (make_command_line), parsing (parse_command_line)
// and running the selected subcommand (dispatch). main.cpp chains the three; the fuzzer
// fuzz/fuzz_cli_args.cpp calls only the first two.
#include "tools/cli/app.hpp"

#include <cstdio>
#include <exception>
#include <new>
#include <ostream>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/ops/op_desc.hpp"
#include "tools/cli/check.hpp"
#include "tools/cli/info.hpp"

namespace nnops::cli {
namespace {

// CLI11's default report is two lines (the error, then "Run with --help ..."); nnops reports every error
// as one line on stderr, naming the subcommand whose --help explains it.
std::string one_line_usage_error(const CLI::App* app, const CLI::Error& e) {
  std::string where = app->get_name();
  const CLI::App* leaf = app;
  for (;;) {
    const std::vector<CLI::App*> subs = leaf->get_subcommands();
    if (subs.empty()) break;
    leaf = subs.front();
    where += " " + leaf->get_name();
  }
  std::string what = e.what();
  // CLI11 checks required options before unknown ones, so "--gama g.npy" would be reported as "--gamma is
  // required"; the misspelt option is the real mistake.
  if (const std::vector<std::string> extra = leaf->remaining(); !extra.empty() && e.get_name() == "RequiredError") {
    what = "The following argument was not expected: " + extra.front();
  }
  for (char& c : what) {
    if (c == '\n') c = ' ';
  }
  while (!what.empty() && what.back() == ' ') what.pop_back();
  return "nnops: usage error: " + what + " (see '" + where + " --help')\n";
}

}  // namespace

std::unique_ptr<CommandLine> make_command_line() {
  auto cl = std::make_unique<CommandLine>();
  CLI::App& app = cl->app;
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("nnops ") + version());

  DemoOptions& demo = cl->demo;
  CLI::App* demo_cmd = cl->demo_cmd = app.add_subcommand(
      "demo",
      "Run every operator in float32/float16/bfloat16 on realistic sizes, verify against the float64 "
      "reference, print one row per case (exit 1 on any FAIL)");
  demo_cmd->add_option("--threads", demo.threads, "Threads (default: NNOPS_NUM_THREADS or all cores)")
      ->check(CLI::Range(0, 4096));
  demo_cmd->add_option("--iters", demo.iters, "Timed calls per case; the median is reported")
      ->check(CLI::Range(1, 1000));
  demo_cmd->add_flag("--quick", demo.quick, "Small shapes (seconds instead of tens of seconds)");

  BenchOptions& bench = cl->bench;
  CLI::App* bench_cmd = cl->bench_cmd =
      app.add_subcommand("bench",
                         "Time each operator and compare its effective bandwidth with a probe kernel of the same "
                         "read/write mix, measured in the same process");
  bench_cmd->add_option("--op", bench.ops, "Operator(s) (default: all)");
  bench_cmd->add_option("--dtype", bench.dtypes, "float32, float16, bfloat16 (default: all)");
  bench_cmd->add_option("--threads", bench.threads, "Thread count(s) (default: 1 and all cores)");
  bench_cmd->add_option("--size", bench.sizes, "l2, l3, dram (default: all)")
      ->check(CLI::IsMember({"l2", "l3", "dram"}));
  bench_cmd
      ->add_option("--layout", bench.layouts,
                   "Where the tensors lie: huge (2 MiB-aligned huge-page buffers), offset (malloc-like, 4 KiB pages, "
                   "consecutive buffers 4 KiB + 64 B further apart), adjacent (as aligned_alloc(64) places fresh "
                   "arrays, PyTorch's: each 4 KiB after the last, 64 B into its page), malloc (adjacent, 16 B into "
                   "its page, as plain malloc places them: NumPy's arrays, std::vector) (default: huge and adjacent)")
      ->check(CLI::IsMember({"huge", "offset", "adjacent", "malloc"}));
  bench_cmd->add_option("--shape", bench.shape, "One case of this main shape (D0,D1,...) instead of the size classes");
  bench_cmd->add_flag("--channels-last", bench.channels_last,
                      "With --shape: every tensor of rank >= 3 channels-last (NHWC memory), as PyTorch's "
                      "channels_last models lay out activations");
  bench_cmd
      ->add_option("--workload", bench.workloads,
                   "Run a whole-model workload instead of the operator cases: resnet50 (a PowerSign step over "
                   "ResNet-50's 161 parameters, C++ and C API), unet (GroupNorm forward and backward over Stable "
                   "Diffusion's UNet layers)")
      ->check(CLI::IsMember({"resnet50", "unet"}));
  bench_cmd->add_flag("--sweep", bench.sweep,
                      "Time 1 thread against more (--threads) for sizes from 256 elements to 4 Mi (the thread grain)");
  bench_cmd->add_option("--reps", bench.reps, "Timed repetitions per case")->check(CLI::Range(3, 1000));
  bench_cmd->add_flag("--json", bench.json, "Machine-readable output (one JSON document)");

  cl->info_cmd = app.add_subcommand("info", "Version, build, SIMD targets, threads, cores and caches");

  std::vector<Subcommand>& leaves = cl->leaves;
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Run one operator on .npy files: inputs are read, checked and computed before any file is written");
  run_cmd->require_subcommand(1);
  add_run_subcommands(run_cmd, &leaves);
  std::string run_examples, check_examples;
  for (const ops::OpDesc* d : ops::all_ops()) {
    run_examples += std::string(d->run_example) + "\n";
    check_examples += std::string(d->check_example) + "\n";
  }
  run_cmd->footer("Examples (see 'nnops run <operator> --help' for each operator's options):\n" + run_examples +
                  "Exit status: 0 success, 1 data or operator error, 2 usage error. Nothing is written on error.");

  CLI::App* check_cmd = app.add_subcommand(
      "check", "Run an operator on seeded random inputs and compare it with its float64 reference (PASS/FAIL)");
  check_cmd->require_subcommand(1);
  add_check_subcommands(check_cmd, &leaves);
  check_cmd->footer("Examples:\n" + check_examples + "Exit status: 0 PASS, 1 FAIL or operator error, 2 usage error.");

  // Set last: subcommands copy their parent's footer and failure handler when they are created.
  app.footer("Examples:\n" + run_examples + check_examples + "  nnops info\n" +
             "Exit status: 0 success, 1 operator or data error (or a failed check), 2 usage error.");
  app.failure_message(one_line_usage_error);

  return cl;
}

int parse_command_line(CommandLine* cl, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    cl->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = cl->app.exit(e, out, err);
    return rc == 0 ? 0 : 2;
  }
  return -1;
}

int dispatch(const CommandLine& cl) {
  try {
    if (*cl.demo_cmd) return run_demo(cl.demo);
    if (*cl.bench_cmd) return run_bench(cl.bench);
    if (*cl.info_cmd) return run_info();
    for (const Subcommand& leaf : cl.leaves) {
      if (*leaf.app) return leaf.run();
    }
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "nnops: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nnops: error: %s\n", e.what());
    return 1;
  }
  return 2;
}

}  // namespace nnops::cli
