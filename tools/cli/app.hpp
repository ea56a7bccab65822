// The nnops command line as an object: built, parsed and dispatched in three separate steps, so that the
// parser can run in-process without running an operator or touching a file (fuzz/fuzz_cli_args.cpp, and
// any test that wants to see what a command line means).
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <memory>
#include <vector>

#include "tools/cli/bench.hpp"
#include "tools/cli/demo.hpp"
#include "tools/cli/run.hpp"

namespace nnops::cli {

struct CommandLine {
  CLI::App app{"nnops: CANN ops-nn operators on CPUs (run, check, benchmark)", "nnops"};
  DemoOptions demo;
  BenchOptions bench;
  CLI::App* demo_cmd = nullptr;
  CLI::App* bench_cmd = nullptr;
  CLI::App* info_cmd = nullptr;
  /// The `run <operator>` and `check <operator>` leaves, with what each one does when selected.
  std::vector<Subcommand> leaves;
};

/// Every subcommand and option of `nnops`. Builds only: nothing runs, no file is opened.
std::unique_ptr<CommandLine> make_command_line();

/// Parses argv into `cl`. Returns -1 when a subcommand was selected and should run (dispatch), otherwise
/// the exit status: 0 after --help or --version (printed to `out`), 2 for a usage error (one line on
/// `err`). Reads nothing but argv; writes nothing but `out` and `err`.
int parse_command_line(CommandLine* cl, int argc, const char* const* argv, std::ostream& out, std::ostream& err);

/// Runs the selected subcommand and returns the process exit status (1 for an error it reports itself,
/// including out of memory).
int dispatch(const CommandLine& cl);

}  // namespace nnops::cli
