// libFuzzer target: the `nnops` command-line parser, in-process.
//
// The input is split at NUL bytes into argv[1..] (argv[0] is "nnops"; at most 64 arguments). Each input
// builds a fresh command line (make_command_line) and parses it (parse_command_line). Nothing is run:
// dispatch() is never called, and the subcommands' entry points that only dispatch() reaches are traps
// here. Checked besides what ASan/UBSan catch:
//   - parsing returns -1 (a subcommand was chosen), 0 (--help/--version, text on `out`) or 2;
//   - a usage error (2) is exactly one line, "nnops: usage error: ...\n", as docs/cli.md promises;
//   - no exception other than CLI11's parse errors escapes (an escape would abort the real program);
//   - when a subcommand was chosen, exactly one leaf (or demo/bench/info) is selected and the options that
//     carry a range check hold values inside it.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli/app.hpp"
#include "tools/cli/info.hpp"

// Reached only through dispatch(); the fuzzer never dispatches.
namespace nnops::cli {
int run_demo(const DemoOptions&) { __builtin_trap(); }
int run_bench(const BenchOptions&) { __builtin_trap(); }
int run_info() { __builtin_trap(); }
}  // namespace nnops::cli

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"nnops"};
  std::string cur;
  for (size_t i = 0; i < size && args.size() <= 64; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty() && args.size() <= 64) args.push_back(cur);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);

  auto cl = nnops::cli::make_command_line();
  std::ostringstream out, err;
  const int rc = nnops::cli::parse_command_line(cl.get(), static_cast<int>(args.size()), argv.data(), out, err);
  require(rc == -1 || rc == 0 || rc == 2);
  const std::string e = err.str();
  if (rc == 2) {
    require(e.rfind("nnops: usage error: ", 0) == 0);
    require(e.find('\n') == e.size() - 1);
    return 0;
  }
  if (rc == 0) return 0;
  require(e.empty());
  int chosen = (*cl->demo_cmd ? 1 : 0) + (*cl->bench_cmd ? 1 : 0) + (*cl->info_cmd ? 1 : 0);
  for (const nnops::cli::Subcommand& leaf : cl->leaves) chosen += *leaf.app ? 1 : 0;
  require(chosen == 1);
  require(cl->demo.threads >= 0 && cl->demo.threads <= 4096);
  require(cl->demo.iters >= 1 && cl->demo.iters <= 1000);
  require(cl->bench.reps >= 3 && cl->bench.reps <= 1000);
  for (const std::string& s : cl->bench.sizes) require(s == "l2" || s == "l3" || s == "dram");
  for (const std::string& s : cl->bench.layouts) require(s == "huge" || s == "offset" || s == "adjacent");
  for (const std::string& s : cl->bench.workloads) require(s == "resnet50" || s == "unet");
  return 0;
}
