// `nnops check <operator>`: random inputs, the operator against its float64 reference (docs/semantics.md).
#pragma once

#include <vector>

#include "tools/cli/run.hpp"

namespace nnops::cli {

/// Adds one `check <operator>` subcommand per operator of src/ops/op_list.inc to `check_cmd`.
void add_check_subcommands(CLI::App* check_cmd, std::vector<Subcommand>* out);

}  // namespace nnops::cli
