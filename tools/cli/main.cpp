// nnops: run, check and benchmark the nnops operators from the command line.
// Exit status: 0 success, 1 operator or data error (or a failed check), 2 usage error.
// The command line itself (subcommands, options, parsing, dispatch) is tools/cli/app.cpp.
#include <exception>
#include <iostream>
#include <new>

#include "tools/cli/app.hpp"

int main(int argc, char** argv) {
  std::unique_ptr<nnops::cli::CommandLine> cl;
  try {
    cl = nnops::cli::make_command_line();
  } catch (const std::bad_alloc&) {
    std::cerr << "nnops: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "nnops: error: " << e.what() << "\n";
    return 1;
  }
  const int rc = nnops::cli::parse_command_line(cl.get(), argc, argv, std::cout, std::cerr);
  if (rc >= 0) return rc;
  return nnops::cli::dispatch(*cl);
}
