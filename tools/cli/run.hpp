// `nnops run <operator>`: one operator call on .npy files.
#pragma once

#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace nnops::cli {

/// A leaf subcommand and what to do when the command line selected it (returns the exit status).
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

/// Adds one `run <operator>` subcommand per operator of src/ops/op_list.inc to `run_cmd`.
void add_run_subcommands(CLI::App* run_cmd, std::vector<Subcommand>* out);

/// Test hook, read from the environment variable NNOPS_TEST_CRASH_AFTER_TEMP: "1" makes `nnops run`
/// _exit(9) after writing and flushing its temporary files and before the first rename; "2" after the
/// first rename (PowerSign: var.npy replaced, m.npy not yet). The tests use it to show that a kill at
/// those moments leaves whole, readable files.
inline constexpr const char* kCrashHookEnv = "NNOPS_TEST_CRASH_AFTER_TEMP";

}  // namespace nnops::cli
